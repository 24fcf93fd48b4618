//! Reading CuTe notation: `(3,4):(4,1)`, `((2,3),4):((1,2),6)`, `20:2`, with any
//! whitespace between tokens. Errors carry byte offsets into the text. (Printing is
//! the `Display` of `Layout` and `IntTuple`.) The cursor here is shared with the
//! expression parser (`expr.rs`).

use std::ops::Range;

use crate::error::{TextError, TextErrorKind};
use crate::layout::Layout;
use crate::tuple::IntTuple;

/// How deeply tuples may nest: deeper text is refused rather than risking the stack.
const MAX_DEPTH: usize = 64;

/// Parses a whole text as one layout.
pub fn parse_layout(text: &str) -> Result<Layout, TextError> {
    let mut cursor = Cursor::new(text);
    let layout = cursor.layout()?;
    cursor.end()?;
    Ok(layout)
}

/// Parses a whole text as one hierarchical tuple (a shape, stride or coordinate).
pub fn parse_tuple(text: &str) -> Result<IntTuple, TextError> {
    let mut cursor = Cursor::new(text);
    let (tuple, _) = cursor.tuple()?;
    cursor.end()?;
    Ok(tuple)
}

pub(crate) fn syntax(span: Range<usize>, message: impl Into<String>) -> TextError {
    TextError {
        span,
        kind: TextErrorKind::Syntax,
        message: message.into(),
    }
}

/// A position in a text, skipping whitespace before each token.
#[derive(Debug)]
pub(crate) struct Cursor<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(text: &'a str) -> Cursor<'a> {
        Cursor { text, pos: 0 }
    }

    pub(crate) fn skip_ws(&mut self) {
        let rest = &self.text[self.pos..];
        self.pos += rest.len() - rest.trim_start().len();
    }

    /// The next character after whitespace, not consumed.
    pub(crate) fn peek(&mut self) -> Option<char> {
        self.skip_ws();
        self.text[self.pos..].chars().next()
    }

    /// The span of the next character (empty at the end).
    pub(crate) fn here(&mut self) -> Range<usize> {
        let len = self.peek().map_or(0, char::len_utf8);
        self.pos..self.pos + len
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Consumes `c` if it is next.
    pub(crate) fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    /// An error at the next character: "expected WHAT, found …".
    pub(crate) fn unexpected(&mut self, what: &str) -> TextError {
        let span = self.here();
        let found = match self.peek() {
            Some(c) => format!("`{c}`"),
            None => "the end of the text".to_string(),
        };
        syntax(span, format!("expected {what}, found {found}"))
    }

    pub(crate) fn expect(&mut self, c: char, what: &str) -> Result<(), TextError> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.unexpected(what))
        }
    }

    /// Nothing but whitespace is left.
    pub(crate) fn end(&mut self) -> Result<(), TextError> {
        if self.peek().is_none() {
            Ok(())
        } else {
            Err(self.unexpected("the end of the text"))
        }
    }

    /// An identifier `[A-Za-z_][A-Za-z0-9_]*`, if one is next.
    pub(crate) fn ident(&mut self) -> Option<(&'a str, Range<usize>)> {
        let c = self.peek()?;
        if !(c.is_ascii_alphabetic() || c == '_') {
            return None;
        }
        let start = self.pos;
        let rest = &self.text[start..];
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        self.pos += len;
        Some((&self.text[start..start + len], start..start + len))
    }

    /// An integer: an optional `-` and decimal digits.
    pub(crate) fn int(&mut self) -> Result<(i64, Range<usize>), TextError> {
        self.skip_ws();
        let start = self.pos;
        let bytes = self.text.as_bytes();
        let mut end = start;
        if bytes.get(end) == Some(&b'-') {
            end += 1;
        }
        let digits_start = end;
        while bytes.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
        if end == digits_start {
            return Err(self.unexpected("an integer or `(`"));
        }
        let value = self.text[start..end].parse::<i64>().map_err(|_| {
            syntax(
                start..end,
                format!("`{}` does not fit in 64 bits", &self.text[start..end]),
            )
        })?;
        self.pos = end;
        Ok((value, start..end))
    }

    /// A hierarchical tuple: an integer, or `(` tuples separated by `,` `)`.
    pub(crate) fn tuple(&mut self) -> Result<(IntTuple, Range<usize>), TextError> {
        self.tuple_at(0)
    }

    fn tuple_at(&mut self, depth: usize) -> Result<(IntTuple, Range<usize>), TextError> {
        self.skip_ws();
        let start = self.pos;
        if !self.eat('(') {
            let (v, span) = self.int()?;
            return Ok((IntTuple::Int(v), span));
        }
        if depth >= MAX_DEPTH {
            return Err(syntax(
                start..start + 1,
                format!("tuples nest more than {MAX_DEPTH} deep"),
            ));
        }
        let mut items = vec![self.tuple_at(depth + 1)?.0];
        while self.eat(',') {
            items.push(self.tuple_at(depth + 1)?.0);
        }
        self.expect(')', "`,` or `)`")?;
        Ok((IntTuple::Tuple(items), start..self.pos))
    }

    /// A layout `shape:stride`; a pair that is not a layout is an error over its text.
    pub(crate) fn layout(&mut self) -> Result<Layout, TextError> {
        let (shape, shape_span) = self.tuple()?;
        Ok(self.stride_after(shape, shape_span)?.0)
    }

    /// The rest of a layout whose shape was just read at `shape_span`: `:` and the
    /// stride. Returns the layout and the span of its whole text.
    pub(crate) fn stride_after(
        &mut self,
        shape: IntTuple,
        shape_span: Range<usize>,
    ) -> Result<(Layout, Range<usize>), TextError> {
        self.expect(':', "`:` and the stride after the shape")?;
        let (stride, stride_span) = self.tuple()?;
        let span = shape_span.start..stride_span.end;
        match Layout::new(shape, stride) {
            Ok(layout) => Ok((layout, span)),
            Err(e) => Err(TextError {
                span,
                message: e.message().to_string(),
                kind: TextErrorKind::Layout(e),
            }),
        }
    }
}

//! The loop-IR parser: reads the full textual form that [`crate::print::kernel_to_text`]
//! prints (`atl emit --ir`) back to the [`Kernel`] it was printed from, so that
//! hand-written or edited kernels can be validated (`atl validate --ir`) and run
//! (`atl run --ir`). Printing then parsing gives back an equal kernel (tested on every
//! example kernel and on random mutations).
//!
//! The syntax is the printer's, line for line: a header (`kernel NAME(sizes; inputs) ->
//! out: [shape]`, `requires PRED [as COND]  # kind: "reason"`, `vector_width N` if the
//! kernel has one, `source: EXPR`), then a
//! `{ … }` body of statements. In this form the `#` notes carry meaning (a loop's origin
//! and annotations, an `alloc`'s storage, a precondition's kind and reason) and run to
//! the end of their line. Index arithmetic in the body is the target's (`/` and `%` are
//! C's operators, `floordiv`, `floormod`, `cdiv`, `min`, `max` are calls); shapes,
//! coordinates and `requires` predicates are ATL index expressions (`/` and `%` floor).
//! The `source` line is an ATL expression, read by `atl-lang`'s parser and resolver in
//! a file declaring the kernel's sizes and inputs, with binder names kept as written.
//!
//! Every problem is a diagnostic with a span into the text (E0940 syntax, E0941 a
//! well-formed text that does not describe a kernel, E0942 the source expression);
//! nothing panics on any input.

use atl_lang::diag::Diagnostic;
use atl_lang::functions::ScalarFn;
use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_lang::ir::{BinOp, Expr};
use atl_lang::span::Span;

use crate::ir::Cond;
use crate::ir::{
    BufferDecl, Coord, For, Ix, IxOp, Kernel, Load, LoopOrigin, Precondition, PreconditionKind,
    Stmt, Storage, StoreOp, Val,
};
use crate::print::{plain_cond, precondition_kind_word};

/// Parses the full textual form of a kernel.
pub fn parse_kernel(text: &str) -> Result<Kernel, Vec<Diagnostic>> {
    let tokens = lex(text).map_err(|d| vec![d])?;
    let mut p = Parser {
        text,
        tokens,
        pos: 0,
        scope: Vec::new(),
        depth: 0,
    };
    p.kernel().map_err(|d| vec![d])
}

type R<T> = Result<T, Diagnostic>;

// ---------------------------------------------------------------------------------------
// Lexing
// ---------------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    /// A number as written (integers and literals share the token).
    Num(String),
    Str(String),
    Sym(&'static str),
    /// The text of a `source:` line after the colon, with its offset.
    Source(String, usize),
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    span: Span,
    line: usize,
    /// Whether whitespace precedes it (`-3` is a negative constant, `- 3` is not).
    spaced: bool,
}

const SYMBOLS: &[&str] = &[
    "..", "+=", "==", "!=", "<=", ">=", "&&", "||", "->", "(", ")", "[", "]", "{", "}", ",", ";",
    ":", "?", "@", "#", "+", "-", "*", "/", "%", "=", "<", ">", "!",
];

fn syntax(span: Span, message: impl Into<String>, label: impl Into<String>) -> Diagnostic {
    Diagnostic::error("E0940", message).at(span, label)
}

fn lex(text: &str) -> R<Vec<Token>> {
    let bytes = text.as_bytes();
    let mut tokens: Vec<Token> = Vec::new();
    let mut i = 0;
    let mut line = 0;
    let mut spaced = true;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'\n' {
            line += 1;
            i += 1;
            spaced = true;
            continue;
        }
        if c.is_ascii_whitespace() {
            i += 1;
            spaced = true;
            continue;
        }
        let start = i;
        let tok = if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let word = &text[start..i];
            let first_on_line = tokens.last().is_none_or(|t| t.line != line);
            if word == "source" && first_on_line && bytes.get(i) == Some(&b':') {
                // The rest of the line is an ATL expression, read by atl-lang.
                let from = i + 1;
                let end = text[from..].find('\n').map_or(text.len(), |n| from + n);
                i = end;
                Tok::Source(text[from..end].to_string(), from)
            } else {
                Tok::Ident(word.to_string())
            }
        } else if c.is_ascii_digit() {
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            // `0..n` is a range, `0.5` a literal.
            if i + 1 < bytes.len() && bytes[i] == b'.' && bytes[i + 1].is_ascii_digit() {
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
                let mut j = i + 1;
                if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
                    j += 1;
                }
                if j < bytes.len() && bytes[j].is_ascii_digit() {
                    i = j;
                    while i < bytes.len() && bytes[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            Tok::Num(text[start..i].to_string())
        } else if c == b'"' {
            let (s, end) = lex_string(text, start)?;
            i = end;
            Tok::Str(s)
        } else if let Some(sym) = SYMBOLS.iter().find(|s| text[i..].starts_with(**s)) {
            i += sym.len();
            Tok::Sym(sym)
        } else {
            let ch = text[i..].chars().next().unwrap_or('?');
            return Err(syntax(
                Span::new(i, i + ch.len_utf8()),
                format!("unexpected character `{ch}` in loop-IR text"),
                "not part of the loop IR's syntax",
            ));
        };
        tokens.push(Token {
            tok,
            span: Span::new(start, i),
            line,
            spaced,
        });
        spaced = false;
    }
    Ok(tokens)
}

/// A string literal as Rust's `{:?}` writes it; returns it and the offset after it.
fn lex_string(text: &str, start: usize) -> R<(String, usize)> {
    let mut out = String::new();
    let mut chars = text[start + 1..].char_indices();
    let unterminated = || {
        syntax(
            Span::new(start, start + 1),
            "unterminated string in loop-IR text",
            "this string has no closing `\"` on its line",
        )
    };
    while let Some((k, ch)) = chars.next() {
        let at = start + 1 + k;
        match ch {
            '"' => return Ok((out, at + 1)),
            '\n' => return Err(unterminated()),
            '\\' => {
                let (_, e) = chars.next().ok_or_else(unterminated)?;
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    '0' => out.push('\0'),
                    '\\' | '"' | '\'' => out.push(e),
                    'u' => {
                        let rest = &text[at + 2..];
                        let close = rest.find('}').filter(|_| rest.starts_with('{'));
                        let code = close
                            .and_then(|c| u32::from_str_radix(&rest[1..c], 16).ok())
                            .and_then(char::from_u32);
                        let (Some(c), Some(close)) = (code, close) else {
                            return Err(syntax(
                                Span::new(at, at + 2),
                                "bad `\\u{…}` escape in a string",
                                "expected `\\u{hex}`",
                            ));
                        };
                        out.push(c);
                        for _ in 0..=close {
                            chars.next();
                        }
                    }
                    _ => {
                        return Err(syntax(
                            Span::new(at, at + 1 + e.len_utf8()),
                            format!("unknown escape `\\{e}` in a string"),
                            "unknown escape",
                        ));
                    }
                }
            }
            _ => out.push(ch),
        }
    }
    Err(unterminated())
}

// ---------------------------------------------------------------------------------------
// Shared trees of index arithmetic and conditions
// ---------------------------------------------------------------------------------------

/// Integer arithmetic as written, before it is read as target ([`Ix`]) or ATL
/// ([`IndexExpr`]) arithmetic.
#[derive(Clone, Debug)]
enum Arith {
    Const(i64),
    Var(String),
    Neg(Box<Arith>),
    /// An infix operator (`+ - * / %`) or a call (`floordiv`, `cdiv`, …).
    Op(&'static str, Box<Arith>, Box<Arith>, Span),
    /// An element of an index array, `pos[i + 1]`.
    Load(String, Box<Arith>),
}

const CALLS: &[&str] = &["floordiv", "floormod", "cdiv", "min", "max"];

impl Arith {
    fn to_ix(&self) -> R<Ix> {
        Ok(match self {
            Arith::Const(c) => Ix::Const(*c),
            Arith::Var(v) => Ix::Var(v.clone()),
            Arith::Neg(a) => Ix::Neg(Box::new(a.to_ix()?)),
            Arith::Load(array, a) => Ix::Load(array.clone(), Box::new(a.to_ix()?)),
            Arith::Op(op, a, b, _) => {
                let op = match *op {
                    "+" => IxOp::Add,
                    "-" => IxOp::Sub,
                    "*" => IxOp::Mul,
                    "/" => IxOp::DivNat,
                    "%" => IxOp::ModNat,
                    "floordiv" => IxOp::FloorDiv,
                    "floormod" => IxOp::FloorMod,
                    "cdiv" => IxOp::CeilDiv,
                    "min" => IxOp::Min,
                    _ => IxOp::Max,
                };
                Ix::bin(op, a.to_ix()?, b.to_ix()?)
            }
        })
    }

    fn to_index(&self) -> R<IndexExpr> {
        Ok(match self {
            Arith::Const(c) => IndexExpr::Const(*c),
            Arith::Var(v) => IndexExpr::Var(v.clone()),
            Arith::Neg(a) => IndexExpr::Neg(Box::new(a.to_index()?)),
            Arith::Load(array, a) => IndexExpr::Load(array.clone(), Box::new(a.to_index()?)),
            Arith::Op(op, a, b, span) => {
                let op = match *op {
                    "+" => IndexOp::Add,
                    "-" => IndexOp::Sub,
                    "*" => IndexOp::Mul,
                    "/" => IndexOp::Div,
                    "%" => IndexOp::Mod,
                    "cdiv" => IndexOp::CDiv,
                    "min" => IndexOp::Min,
                    "max" => IndexOp::Max,
                    other => {
                        return Err(Diagnostic::error(
                            "E0941",
                            format!("`{other}` is target arithmetic, not an ATL index expression"),
                        )
                        .at(*span, "not allowed here")
                        .with_help(
                            "shapes, coordinates and `requires` are ATL index expressions, \
                             where `/` and `%` are already floor division and modulo",
                        ));
                    }
                };
                IndexExpr::bin(op, a.to_index()?, b.to_index()?)
            }
        })
    }
}

/// A boolean combination of comparisons as written.
#[derive(Clone, Debug)]
enum Logic {
    Bool(bool),
    Cmp(CmpOp, Arith, Arith),
    And(Box<Logic>, Box<Logic>),
    Or(Box<Logic>, Box<Logic>),
    Not(Box<Logic>),
}

impl Logic {
    fn to_cond(&self) -> R<Cond> {
        Ok(match self {
            Logic::Bool(b) => Cond::Bool(*b),
            Logic::Cmp(op, a, b) => Cond::Cmp(*op, a.to_ix()?, b.to_ix()?),
            Logic::And(a, b) => Cond::And(Box::new(a.to_cond()?), Box::new(b.to_cond()?)),
            Logic::Or(a, b) => Cond::Or(Box::new(a.to_cond()?), Box::new(b.to_cond()?)),
            Logic::Not(a) => Cond::Not(Box::new(a.to_cond()?)),
        })
    }

    fn to_pred(&self) -> R<Pred> {
        Ok(match self {
            Logic::Bool(b) => Pred::Bool(*b),
            Logic::Cmp(op, a, b) => Pred::Cmp(*op, a.to_index()?, b.to_index()?),
            Logic::And(a, b) => Pred::And(Box::new(a.to_pred()?), Box::new(b.to_pred()?)),
            Logic::Or(a, b) => Pred::Or(Box::new(a.to_pred()?), Box::new(b.to_pred()?)),
            Logic::Not(a) => Pred::Not(Box::new(a.to_pred()?)),
        })
    }
}

// ---------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------

/// Nesting deeper than this is refused (a diagnostic, not a stack overflow).
const MAX_DEPTH: usize = 200;

struct Parser<'t> {
    text: &'t str,
    tokens: Vec<Token>,
    pos: usize,
    /// Buffers in scope with their shapes (inputs, output, enclosing allocs).
    scope: Vec<(String, Vec<IndexExpr>)>,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos).map(|t| &t.tok)
    }

    fn peek_at(&self, k: usize) -> Option<&Tok> {
        self.tokens.get(self.pos + k).map(|t| &t.tok)
    }

    fn here(&self) -> Span {
        match self.tokens.get(self.pos) {
            Some(t) => t.span,
            None => Span::new(self.text.len(), self.text.len()),
        }
    }

    fn prev_span(&self) -> Span {
        self.pos
            .checked_sub(1)
            .and_then(|k| self.tokens.get(k))
            .map_or(Span::new(0, 0), |t| t.span)
    }

    fn line_of(&self, k: usize) -> Option<usize> {
        self.tokens.get(k).map(|t| t.line)
    }

    fn describe(&self) -> String {
        match self.peek() {
            None => "the end of the text".to_string(),
            Some(Tok::Ident(w)) => format!("`{w}`"),
            Some(Tok::Num(n)) => format!("`{n}`"),
            Some(Tok::Str(_)) => "a string".to_string(),
            Some(Tok::Sym(s)) => format!("`{s}`"),
            Some(Tok::Source(..)) => "a `source:` line".to_string(),
        }
    }

    fn expected(&self, what: &str) -> Diagnostic {
        syntax(
            self.here(),
            format!("expected {what}, found {}", self.describe()),
            format!("expected {what}"),
        )
    }

    fn is_sym(&self, s: &str) -> bool {
        matches!(self.peek(), Some(Tok::Sym(x)) if *x == s)
    }

    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(x)) if x == w)
    }

    fn eat_sym(&mut self, s: &str) -> bool {
        if self.is_sym(s) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn sym(&mut self, s: &str) -> R<()> {
        if self.eat_sym(s) {
            Ok(())
        } else {
            Err(self.expected(&format!("`{s}`")))
        }
    }

    fn word(&mut self, w: &str) -> R<()> {
        if self.is_word(w) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.expected(&format!("`{w}`")))
        }
    }

    fn ident(&mut self, what: &str) -> R<String> {
        match self.peek() {
            Some(Tok::Ident(w)) => {
                let w = w.clone();
                self.pos += 1;
                Ok(w)
            }
            _ => Err(self.expected(what)),
        }
    }

    fn enter(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(syntax(
                self.here(),
                format!("loop-IR text nested more than {MAX_DEPTH} levels deep"),
                "too deep",
            ));
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    fn shape_of(&self, buf: &str) -> Option<&[IndexExpr]> {
        self.scope
            .iter()
            .rev()
            .find(|(name, _)| name == buf)
            .map(|(_, shape)| shape.as_slice())
    }

    // --- header --------------------------------------------------------------------

    fn kernel(&mut self) -> R<Kernel> {
        self.word("kernel")?;
        let name = self.ident("the kernel's name")?;
        self.sym("(")?;
        let mut sizes = Vec::new();
        while !self.is_sym(";") {
            sizes.push(self.ident("a size name or `;`")?);
            if !self.eat_sym(",") {
                break;
            }
        }
        self.sym(";")?;
        let mut inputs = Vec::new();
        while !self.is_sym(")") {
            inputs.push(self.buffer_decl()?);
            if !self.eat_sym(",") {
                break;
            }
        }
        self.sym(")")?;
        self.sym("->")?;
        // The output is written row-major: a storage order is for inputs only.
        let output_at = self.pos;
        let output = self.buffer_decl()?;
        if output.order.is_some() {
            self.pos = output_at;
            return Err(self.expected("an output without `order` (outputs are row-major)"));
        }
        let mut preconditions = Vec::new();
        while self.is_word("requires") {
            preconditions.push(self.precondition()?);
        }
        let vector_width = if self.is_word("vector_width") {
            self.word("vector_width")?;
            let at = self.here();
            let bits = self.int(false)?;
            match atl_lang::ir::VECTOR_WIDTHS
                .iter()
                .find(|w| i64::from(**w) == bits)
            {
                Some(w) => Some(*w),
                None => {
                    return Err(syntax(
                        at,
                        format!("`vector_width {bits}`: the width is 128, 256 or 512 bits"),
                        "not a vector width",
                    ));
                }
            }
        } else {
            None
        };
        let (source_text, source_at) = match self.peek() {
            Some(Tok::Source(text, at)) => (text.clone(), *at),
            _ => {
                return Err(self.expected("`source: EXPR` (the ATL expression lowered)"));
            }
        };
        let source_span = self.here();
        self.pos += 1;
        let source = resolve_source(&source_text, source_at, source_span, &sizes, &inputs)?;
        for b in inputs.iter().chain(std::iter::once(&output)) {
            self.scope.push((b.name.clone(), b.shape.clone()));
        }
        let body = self.block()?;
        if self.pos < self.tokens.len() {
            return Err(self.expected("the end of the text after the kernel's body"));
        }
        Ok(Kernel {
            name,
            sizes,
            inputs,
            output,
            preconditions,
            vector_width,
            body,
            source,
        })
    }

    fn buffer_decl(&mut self) -> R<BufferDecl> {
        let name = self.ident("a buffer name")?;
        self.sym(":")?;
        let int = matches!(self.peek(), Some(Tok::Ident(w)) if w == "int");
        if int {
            self.pos += 1;
        }
        let shape = self.shape()?;
        let index_array = if int {
            // `int[n + 1] in 0..nnz + 1 sorted`: the declaration of an index array.
            if !matches!(self.peek(), Some(Tok::Ident(w)) if w == "in") {
                return Err(self.expected("`in LO..HI`, the range of the index array's values"));
            }
            self.pos += 1;
            let lo = self.arith()?.to_index()?;
            self.sym("..")?;
            let hi = self.arith()?.to_index()?;
            let sorted = matches!(self.peek(), Some(Tok::Ident(w)) if w == "sorted");
            if sorted {
                self.pos += 1;
            }
            Some(atl_lang::ir::IndexArray { lo, hi, sorted })
        } else {
            None
        };
        // `checked_where_read`: the range is checked at the reads, not on entry.
        let checked_where_read = index_array.is_some()
            && matches!(self.peek(), Some(Tok::Ident(w)) if w == "checked_where_read");
        if checked_where_read {
            self.pos += 1;
        }
        // `order (1, 0)`: an input stored in another order than the program's.
        let order = if index_array.is_none()
            && matches!(self.peek(), Some(Tok::Ident(w)) if w == "order")
        {
            self.pos += 1;
            self.sym("(")?;
            let mut order = Vec::new();
            while !self.is_sym(")") {
                let d = self.arith()?.to_index()?;
                let d = d
                    .as_const()
                    .and_then(|d| usize::try_from(d).ok())
                    .filter(|d| *d < shape.len())
                    .ok_or_else(|| self.expected("a dimension of the buffer"))?;
                order.push(d);
                if !self.is_sym(")") {
                    self.sym(",")?;
                }
            }
            self.sym(")")?;
            let mut sorted = order.clone();
            sorted.sort_unstable();
            if sorted != (0..shape.len()).collect::<Vec<_>>() {
                return Err(self.expected("each dimension of the buffer once in its `order`"));
            }
            Some(order)
        } else {
            None
        };
        Ok(BufferDecl {
            name,
            shape,
            index_array,
            checked_where_read,
            order,
        })
    }

    fn shape(&mut self) -> R<Vec<IndexExpr>> {
        self.sym("[")?;
        let mut dims = Vec::new();
        while !self.is_sym("]") {
            dims.push(self.arith()?.to_index()?);
            if !self.eat_sym(",") {
                break;
            }
        }
        self.sym("]")?;
        Ok(dims)
    }

    fn precondition(&mut self) -> R<Precondition> {
        self.word("requires")?;
        let pred = self.logic()?.to_pred()?;
        let cond = if self.is_word("as") {
            self.pos += 1;
            self.logic()?.to_cond()?
        } else {
            plain_cond(&pred).ok_or_else(|| self.expected("`as COND`"))?
        };
        self.sym("#")?;
        let kind_span = self.here();
        let kind_word = self.ident("the precondition's kind")?;
        let kind = [
            PreconditionKind::Size,
            PreconditionKind::Assume,
            PreconditionKind::Amount,
            PreconditionKind::InputExtent,
            PreconditionKind::IndexRange,
        ]
        .into_iter()
        .find(|k| precondition_kind_word(*k) == kind_word)
        .ok_or_else(|| {
            Diagnostic::error(
                "E0941",
                format!("`{kind_word}` is not a kind of precondition"),
            )
            .at(kind_span, "unknown kind")
            .with_help("the kinds are size, assume, amount, input_extent and index_range")
        })?;
        self.sym(":")?;
        let reason = match self.peek() {
            Some(Tok::Str(s)) => s.clone(),
            _ => return Err(self.expected("the precondition's reason (a string)")),
        };
        self.pos += 1;
        Ok(Precondition {
            pred,
            cond,
            kind,
            reason,
        })
    }

    // --- statements ----------------------------------------------------------------

    fn block(&mut self) -> R<Vec<Stmt>> {
        self.sym("{")?;
        self.enter()?;
        let mut stmts = Vec::new();
        while !self.is_sym("}") {
            if self.peek().is_none() {
                return Err(self.expected("a statement or `}`"));
            }
            stmts.push(self.stmt()?);
        }
        self.sym("}")?;
        self.leave();
        Ok(stmts)
    }

    /// The words of a `#` note, up to the end of its line.
    fn note_line(&mut self) -> R<Vec<(Tok, Span)>> {
        let hash = self.pos;
        self.sym("#")?;
        let line = self.line_of(hash);
        let mut words = Vec::new();
        while self.pos < self.tokens.len() && self.line_of(self.pos) == line {
            let t = &self.tokens[self.pos];
            words.push((t.tok.clone(), t.span));
            self.pos += 1;
        }
        Ok(words)
    }

    fn stmt(&mut self) -> R<Stmt> {
        match self.peek() {
            Some(Tok::Ident(w)) if w == "for" => self.for_loop(),
            Some(Tok::Ident(w)) if w == "if" => self.if_stmt(),
            Some(Tok::Ident(w)) if w == "alloc" => self.alloc(),
            Some(Tok::Ident(w)) if w == "scalar" => {
                self.pos += 1;
                let name = self.ident("a scalar's name")?;
                let init = if self.eat_sym("=") {
                    Some(self.val()?)
                } else {
                    None
                };
                Ok(Stmt::Decl { name, init })
            }
            Some(Tok::Ident(w)) if w == "fill" => {
                self.pos += 1;
                let buf = self.ident("a buffer name")?;
                self.sym("[")?;
                let zero_span = self.here();
                let zero = self.arith()?.to_ix()?;
                if zero != Ix::Const(0) {
                    return Err(syntax(zero_span, "a fill starts at 0", "expected `0`"));
                }
                self.sym("..")?;
                let len = self.arith()?.to_ix()?;
                self.sym("]")?;
                self.sym("=")?;
                let value = self.literal()?;
                Ok(Stmt::Fill { buf, len, value })
            }
            // `fail pos`: a value read from the index array `pos` broke its declaration
            // (`fail` followed by a name; `fail = …` would set a scalar named `fail`).
            Some(Tok::Ident(w))
                if w == "fail"
                    && matches!(self.peek_at(1), Some(Tok::Ident(_)))
                    && self.tokens[self.pos + 1].line == self.tokens[self.pos].line =>
            {
                self.pos += 1;
                let array = self.ident("an index array's name")?;
                Ok(Stmt::Fail { array })
            }
            Some(Tok::Ident(_)) => {
                let name = self.ident("a statement")?;
                if self.eat_sym("[") {
                    let index = self.arith()?.to_ix()?;
                    self.sym("]")?;
                    let op = self.store_op()?;
                    let value = self.val()?;
                    self.sym("@")?;
                    let coords = self.coords(&name)?;
                    Ok(Stmt::Store {
                        buf: name,
                        index,
                        coords,
                        op,
                        value,
                    })
                } else {
                    let op = self.store_op()?;
                    let value = self.val()?;
                    Ok(Stmt::SetScalar { name, op, value })
                }
            }
            _ => Err(self.expected("a statement")),
        }
    }

    fn store_op(&mut self) -> R<StoreOp> {
        if self.eat_sym("=") {
            Ok(StoreOp::Assign)
        } else if self.eat_sym("+=") {
            Ok(StoreOp::Accumulate)
        } else if self.is_word("max") {
            self.pos += 1;
            self.sym("=")?;
            Ok(StoreOp::Max)
        } else {
            Err(self.expected("`=`, `+=` or `max=`"))
        }
    }

    fn for_loop(&mut self) -> R<Stmt> {
        self.word("for")?;
        let var = self.ident("the loop variable")?;
        self.word("in")?;
        let lo = self.arith()?.to_ix()?;
        self.sym("..")?;
        let hi = self.arith()?.to_ix()?;
        let open = self.pos;
        self.sym("{")?;
        // The note on the `{` line: origin, annotations, hoisted buffers.
        if !self.is_sym("#") || self.line_of(self.pos) != self.line_of(open) {
            return Err(self.expected("the loop's note (`# gen`, `# sum` or `# zero`)"));
        }
        let words = self.note_line()?;
        let mut origin = None;
        let (mut parallel, mut vector, mut unroll, mut collapse) = (false, false, false, false);
        let mut hoisted_buffers = Vec::new();
        let mut k = 0;
        let mut in_buffers = false;
        while k < words.len() {
            let (tok, span) = &words[k];
            k += 1;
            match tok {
                Tok::Sym(",") => {}
                Tok::Sym(";") => {
                    // `; buffers: a, b` or `; buffers per thread: a, b`.
                    let mut ws = Vec::new();
                    while k < words.len() && words[k].0 != Tok::Sym(":") {
                        ws.push(words[k].0.clone());
                        k += 1;
                    }
                    let per_thread = [
                        Tok::Ident("buffers".into()),
                        Tok::Ident("per".into()),
                        Tok::Ident("thread".into()),
                    ];
                    if !(ws == per_thread[..1] || ws == per_thread) || k == words.len() {
                        return Err(syntax(
                            *span,
                            "expected `; buffers: …` in a loop's note",
                            "here",
                        ));
                    }
                    k += 1;
                    in_buffers = true;
                }
                Tok::Ident(w) if in_buffers => hoisted_buffers.push(w.clone()),
                Tok::Ident(w) => match w.as_str() {
                    "gen" | "sum" | "max" | "zero" if origin.is_none() => {
                        origin = Some(match w.as_str() {
                            "gen" => LoopOrigin::Gen,
                            "sum" => LoopOrigin::Sum,
                            "max" => LoopOrigin::Max,
                            _ => LoopOrigin::Zero,
                        });
                    }
                    "parallel" => parallel = true,
                    "collapse" => collapse = true,
                    "vector" => vector = true,
                    "unroll" => unroll = true,
                    _ => {
                        return Err(Diagnostic::error(
                            "E0941",
                            format!("`{w}` is not a loop origin or annotation"),
                        )
                        .at(*span, "unknown")
                        .with_help(
                            "a loop's note is its origin (gen, sum or zero), then any of \
                             parallel, collapse, vector, unroll, then `; buffers: …`",
                        ));
                    }
                },
                _ => return Err(syntax(*span, "unexpected token in a loop's note", "here")),
            }
        }
        let origin = origin.ok_or_else(|| {
            Diagnostic::error("E0941", "a loop's note does not say where it comes from")
                .at(self.tokens[open].span, "this loop")
                .with_help("start the note with `# gen`, `# sum` or `# zero`")
        })?;
        self.enter()?;
        let mut body = Vec::new();
        while !self.is_sym("}") {
            if self.peek().is_none() {
                return Err(self.expected("a statement or `}`"));
            }
            body.push(self.stmt()?);
        }
        self.sym("}")?;
        self.leave();
        Ok(Stmt::For(For {
            var,
            lo,
            hi,
            body,
            origin,
            parallel,
            vector,
            unroll,
            collapse,
            hoisted_buffers,
        }))
    }

    fn if_stmt(&mut self) -> R<Stmt> {
        self.word("if")?;
        let cond = self.logic()?.to_cond()?;
        let then_branch = self.block()?;
        let else_branch = if self.is_word("else") {
            self.pos += 1;
            self.block()?
        } else {
            Vec::new()
        };
        Ok(Stmt::If {
            cond,
            then_branch,
            else_branch,
        })
    }

    fn alloc(&mut self) -> R<Stmt> {
        self.word("alloc")?;
        let buf = self.ident("the buffer's name")?;
        let shape = self.shape()?;
        // `fold F`: the first dimension stored modulo F (a positive integer).
        let fold = if self.is_word("fold") {
            self.pos += 1;
            let span = self.here();
            let f = self.int(false)?;
            if f < 1 {
                return Err(syntax(
                    span,
                    format!("a fold of {f} rows"),
                    "a buffer is folded to a positive number of rows",
                ));
            }
            Some(f)
        } else {
            None
        };
        self.sym("=")?;
        let zeroed = if self.is_word("zeros") {
            true
        } else if self.is_word("uninit") {
            false
        } else {
            return Err(self.expected("`zeros` or `uninit`"));
        };
        self.pos += 1;
        self.sym("[")?;
        let len = self.arith()?.to_ix()?;
        self.sym("]")?;
        let open = self.pos;
        self.sym("{")?;
        if !self.is_sym("#") || self.line_of(self.pos) != self.line_of(open) {
            return Err(self.expected("the allocation's storage (`# heap`, `# stack`, …)"));
        }
        let note_span = self.here();
        let words = self.note_line()?;
        let words: Vec<String> = words
            .into_iter()
            .map(|(t, _)| match t {
                Tok::Ident(w) => w,
                Tok::Sym(s) => s.to_string(),
                _ => String::new(),
            })
            .collect();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let storage = match words.as_slice() {
            ["heap"] => Storage::Heap,
            ["stack"] => Storage::Stack,
            ["in", "the", "buffer", "of", "loop", v] => Storage::Hoisted {
                loop_var: v.to_string(),
                per_thread: false,
            },
            ["in", "the", "per", "-", "thread", "buffer", "of", "loop", v] => Storage::Hoisted {
                loop_var: v.to_string(),
                per_thread: true,
            },
            _ => {
                return Err(Diagnostic::error("E0941", "not a storage of an `alloc`")
                    .at(note_span, "unknown storage")
                    .with_help(
                        "write `# heap`, `# stack`, `# in the buffer of loop V` or \
                         `# in the per-thread buffer of loop V`",
                    ));
            }
        };
        self.enter()?;
        self.scope.push((buf.clone(), shape.clone()));
        let mut body = Vec::new();
        while !self.is_sym("}") {
            if self.peek().is_none() {
                return Err(self.expected("a statement or `}`"));
            }
            body.push(self.stmt()?);
        }
        self.sym("}")?;
        self.scope.pop();
        self.leave();
        Ok(Stmt::Alloc {
            buf,
            shape,
            len,
            zeroed,
            storage,
            fold,
            body,
        })
    }

    /// `(i, j)` or `(i : n, j : m)` after an access to `buf`.
    fn coords(&mut self, buf: &str) -> R<Vec<Coord>> {
        let open = self.here();
        self.sym("(")?;
        let mut written = Vec::new();
        while !self.is_sym(")") {
            let index = self.arith()?.to_index()?;
            let extent = if self.eat_sym(":") {
                Some(self.arith()?.to_index()?)
            } else {
                None
            };
            written.push((index, extent));
            if !self.eat_sym(",") {
                break;
            }
        }
        self.sym(")")?;
        let span = open.to(self.prev_span());
        let shape = self.shape_of(buf);
        let explicit = written.iter().filter(|(_, e)| e.is_some()).count();
        if explicit == written.len() {
            let coords: Vec<Coord> = written
                .into_iter()
                .map(|(index, extent)| Coord {
                    index,
                    extent: extent.unwrap_or(IndexExpr::Const(0)),
                })
                .collect();
            // The printer writes extents only when the shape does not give them all.
            if !coords.is_empty() && crate::print::extents_implied(&coords, shape) {
                return Err(Diagnostic::error(
                    "E0941",
                    "these extents are the declared shape of the buffer: leave them out",
                )
                .at(span, "extents written out"));
            }
            return Ok(coords);
        }
        if explicit > 0 {
            return Err(Diagnostic::error(
                "E0941",
                "write the extent of every coordinate of an access, or of none",
            )
            .at(span, "some extents missing"));
        }
        match shape {
            Some(shape) if shape.len() == written.len() => Ok(written
                .into_iter()
                .zip(shape)
                .map(|((index, _), extent)| Coord {
                    index,
                    extent: extent.clone(),
                })
                .collect()),
            Some(shape) => Err(Diagnostic::error(
                "E0941",
                format!(
                    "`{buf}` has {} dimensions but the access has {} coordinates",
                    shape.len(),
                    written.len()
                ),
            )
            .at(span, "give each coordinate's extent (`i : n`)")),
            None => Err(Diagnostic::error(
                "E0941",
                format!("no buffer `{buf}` in scope to take the extents from"),
            )
            .at(span, "give each coordinate's extent (`i : n`)")),
        }
    }

    // --- values --------------------------------------------------------------------

    /// Whether the token `k` ahead is a number (or `inf`, which follows a `-` in the
    /// start value of a max-reduction).
    fn number_at(&self, k: usize) -> bool {
        match self.peek_at(k) {
            Some(Tok::Num(_)) => true,
            Some(Tok::Ident(w)) => w == "inf",
            _ => false,
        }
    }

    fn literal(&mut self) -> R<f64> {
        let negative = self.is_sym("-") && self.number_at(1) && !self.tokens[self.pos + 1].spaced;
        if negative {
            self.pos += 1;
        }
        let value = match self.peek() {
            Some(Tok::Num(n)) => n.parse::<f64>().ok(),
            Some(Tok::Ident(w)) if w == "inf" => Some(f64::INFINITY),
            Some(Tok::Ident(w)) if w == "NaN" => Some(f64::NAN),
            _ => None,
        }
        .ok_or_else(|| self.expected("a number"))?;
        self.pos += 1;
        Ok(if negative { -value } else { value })
    }

    fn val(&mut self) -> R<Val> {
        self.enter()?;
        // `cond ? value : 0`, else arithmetic.
        let start = self.pos;
        let select = match self.logic() {
            Ok(c) if self.is_sym("?") => Some(c),
            _ => None,
        };
        let v = match select {
            Some(c) => {
                self.sym("?")?;
                let value = self.val_add()?;
                self.sym(":")?;
                let zero_span = self.here();
                if !matches!(self.peek(), Some(Tok::Num(n)) if n == "0") {
                    return Err(syntax(
                        zero_span,
                        "a select's else value is 0",
                        "expected `0`",
                    ));
                }
                self.pos += 1;
                Val::Select(c.to_cond()?, Box::new(value))
            }
            None => {
                self.pos = start;
                self.val_add()?
            }
        };
        self.leave();
        Ok(v)
    }

    fn val_add(&mut self) -> R<Val> {
        let mut lhs = self.val_mul()?;
        loop {
            let op = if self.eat_sym("+") {
                BinOp::Add
            } else if self.eat_sym("-") {
                BinOp::Sub
            } else {
                return Ok(lhs);
            };
            let rhs = self.val_mul()?;
            lhs = Val::Bin(op, Box::new(lhs), Box::new(rhs));
        }
    }

    fn val_mul(&mut self) -> R<Val> {
        let mut lhs = self.val_unary()?;
        loop {
            let op = if self.eat_sym("*") {
                BinOp::Mul
            } else if self.eat_sym("/") {
                BinOp::Div
            } else {
                return Ok(lhs);
            };
            let rhs = self.val_unary()?;
            lhs = Val::Bin(op, Box::new(lhs), Box::new(rhs));
        }
    }

    fn val_unary(&mut self) -> R<Val> {
        if self.is_sym("-") {
            if self.number_at(1) && !self.tokens[self.pos + 1].spaced {
                return Ok(Val::Lit(self.literal()?));
            }
            self.pos += 1;
            self.enter()?;
            let a = self.val_unary()?;
            self.leave();
            return Ok(Val::Neg(Box::new(a)));
        }
        self.val_atom()
    }

    fn val_atom(&mut self) -> R<Val> {
        match self.peek() {
            Some(Tok::Num(_)) => Ok(Val::Lit(self.literal()?)),
            Some(Tok::Sym("(")) => {
                self.pos += 1;
                let v = self.val()?;
                self.sym(")")?;
                Ok(v)
            }
            Some(Tok::Ident(w)) if w == "blend" && self.peek_at(1) == Some(&Tok::Sym("(")) => {
                self.pos += 2;
                let c = self.logic()?.to_cond()?;
                self.sym(",")?;
                let v = self.val()?;
                self.sym(")")?;
                Ok(Val::Blend(c, Box::new(v)))
            }
            Some(Tok::Ident(w)) if (w == "inf" || w == "NaN") => Ok(Val::Lit(self.literal()?)),
            // An index's value as a scalar (`float` is a C keyword, never a name here).
            Some(Tok::Ident(w)) if w == "float" && self.peek_at(1) == Some(&Tok::Sym("(")) => {
                self.pos += 2;
                let ix = self.arith()?.to_ix()?;
                self.sym(")")?;
                Ok(Val::Coord(ix))
            }
            // Scalar functions, written as in ATL.
            Some(Tok::Ident(w))
                if (w == "select" || ScalarFn::from_name(w).is_some())
                    && self.peek_at(1) == Some(&Tok::Sym("(")) =>
            {
                let name = w.clone();
                let span = self.here();
                self.pos += 2;
                let mut args = Vec::new();
                let func = if name == "select" {
                    args.push(self.val_add()?);
                    let op = self.comparison()?;
                    args.push(self.val_add()?);
                    self.sym(",")?;
                    ScalarFn::Select(op)
                } else {
                    ScalarFn::from_name(&name).expect("checked above")
                };
                loop {
                    args.push(self.val()?);
                    if !self.eat_sym(",") {
                        break;
                    }
                }
                self.sym(")")?;
                if args.len() != func.arity() {
                    return Err(Diagnostic::error(
                        "E0941",
                        format!(
                            "`{name}` takes {} arguments, not {}",
                            func.arity(),
                            args.len()
                        ),
                    )
                    .at(span, "here"));
                }
                Ok(Val::Call(func, args))
            }
            Some(Tok::Ident(_)) => {
                let name = self.ident("a value")?;
                if !self.eat_sym("[") {
                    return Ok(Val::Scalar(name));
                }
                let index = self.arith()?.to_ix()?;
                self.sym("@")?;
                let coords = self.coords(&name)?;
                self.sym("]")?;
                Ok(Val::Load(Load {
                    buf: name,
                    index,
                    coords,
                }))
            }
            _ => Err(self.expected("a value")),
        }
    }

    // --- arithmetic and conditions -------------------------------------------------

    fn arith(&mut self) -> R<Arith> {
        self.enter()?;
        let mut lhs = self.arith_mul()?;
        loop {
            let span = self.here();
            let op = if self.eat_sym("+") {
                "+"
            } else if self.eat_sym("-") {
                "-"
            } else {
                break;
            };
            let rhs = self.arith_mul()?;
            lhs = Arith::Op(op, Box::new(lhs), Box::new(rhs), span);
        }
        self.leave();
        Ok(lhs)
    }

    fn arith_mul(&mut self) -> R<Arith> {
        let mut lhs = self.arith_unary()?;
        loop {
            let span = self.here();
            let op = if self.eat_sym("*") {
                "*"
            } else if self.eat_sym("/") {
                "/"
            } else if self.eat_sym("%") {
                "%"
            } else {
                return Ok(lhs);
            };
            let rhs = self.arith_unary()?;
            lhs = Arith::Op(op, Box::new(lhs), Box::new(rhs), span);
        }
    }

    fn int(&mut self, negative: bool) -> R<i64> {
        let span = self.here();
        let Some(Tok::Num(n)) = self.peek() else {
            return Err(self.expected("an integer"));
        };
        let text = if negative { format!("-{n}") } else { n.clone() };
        let value = text.parse::<i64>().map_err(|_| {
            syntax(
                span,
                format!("`{text}` is not a 64-bit integer"),
                "index arithmetic is on integers",
            )
        })?;
        self.pos += 1;
        Ok(value)
    }

    fn arith_unary(&mut self) -> R<Arith> {
        if self.is_sym("-") {
            if matches!(self.peek_at(1), Some(Tok::Num(_))) && !self.tokens[self.pos + 1].spaced {
                self.pos += 1;
                return Ok(Arith::Const(self.int(true)?));
            }
            self.pos += 1;
            self.enter()?;
            let a = self.arith_unary()?;
            self.leave();
            return Ok(Arith::Neg(Box::new(a)));
        }
        match self.peek() {
            Some(Tok::Num(_)) => Ok(Arith::Const(self.int(false)?)),
            Some(Tok::Sym("(")) => {
                self.pos += 1;
                let a = self.arith()?;
                self.sym(")")?;
                Ok(a)
            }
            Some(Tok::Ident(w)) => {
                let w = w.clone();
                let span = self.here();
                self.pos += 1;
                if let Some(call) = CALLS.iter().find(|c| **c == w)
                    && self.eat_sym("(")
                {
                    let a = self.arith()?;
                    self.sym(",")?;
                    let b = self.arith()?;
                    self.sym(")")?;
                    return Ok(Arith::Op(call, Box::new(a), Box::new(b), span));
                }
                if self.eat_sym("[") {
                    self.enter()?;
                    let a = self.arith()?;
                    self.leave();
                    self.sym("]")?;
                    return Ok(Arith::Load(w, Box::new(a)));
                }
                Ok(Arith::Var(w))
            }
            _ => Err(self.expected("an index expression")),
        }
    }

    fn logic(&mut self) -> R<Logic> {
        self.enter()?;
        let mut lhs = self.logic_and()?;
        while self.eat_sym("||") {
            let rhs = self.logic_and()?;
            lhs = Logic::Or(Box::new(lhs), Box::new(rhs));
        }
        self.leave();
        Ok(lhs)
    }

    fn logic_and(&mut self) -> R<Logic> {
        let mut lhs = self.logic_not()?;
        while self.eat_sym("&&") {
            let rhs = self.logic_not()?;
            lhs = Logic::And(Box::new(lhs), Box::new(rhs));
        }
        Ok(lhs)
    }

    fn logic_not(&mut self) -> R<Logic> {
        if self.eat_sym("!") {
            self.enter()?;
            let a = self.logic_not()?;
            self.leave();
            return Ok(Logic::Not(Box::new(a)));
        }
        if self.is_word("true") || self.is_word("false") {
            let b = self.is_word("true");
            self.pos += 1;
            return Ok(Logic::Bool(b));
        }
        if self.is_sym("(") {
            // A parenthesized condition, or arithmetic in parentheses that a
            // comparison follows: try the first, fall back to the second.
            let start = self.pos;
            self.pos += 1;
            if let Ok(inner) = self.logic()
                && self.eat_sym(")")
                && !self.is_comparison()
            {
                return Ok(inner);
            }
            self.pos = start;
        }
        let a = self.arith()?;
        let op = self.comparison()?;
        let b = self.arith()?;
        Ok(Logic::Cmp(op, a, b))
    }

    /// A comparison operator (consumed).
    fn comparison(&mut self) -> R<CmpOp> {
        let op = match self.peek() {
            Some(Tok::Sym(s)) => match *s {
                "==" => CmpOp::Eq,
                "!=" => CmpOp::Ne,
                "<" => CmpOp::Lt,
                "<=" => CmpOp::Le,
                ">" => CmpOp::Gt,
                ">=" => CmpOp::Ge,
                _ => return Err(self.expected("a comparison")),
            },
            _ => return Err(self.expected("a comparison")),
        };
        self.pos += 1;
        Ok(op)
    }

    fn is_comparison(&self) -> bool {
        ["==", "!=", "<", "<=", ">", ">="]
            .iter()
            .any(|s| self.is_sym(s))
    }
}

/// Reads the `source:` expression: parsed and resolved by `atl-lang` as the body of a
/// definition in a file that declares the kernel's sizes and inputs (binder names kept
/// as written), so that names resolve as they did in the program lowered. Diagnostics
/// inside the expression are moved to their place in the loop-IR text.
fn resolve_source(
    text: &str,
    at: usize,
    line_span: Span,
    sizes: &[String],
    inputs: &[BufferDecl],
) -> R<Expr> {
    let mut file = String::new();
    if !sizes.is_empty() {
        file.push_str(&format!("size {}\n", sizes.join(", ")));
    }
    for b in inputs {
        // The source reads the input at the program's coordinates.
        let decl = atl_lang::ir::InputDecl {
            name: b.name.clone(),
            shape: b.program_shape(),
            index_array: b.index_array.clone(),
            layout: None,
            span: Span::DUMMY,
        };
        file.push_str(&format!("{decl}\n"));
    }
    let taken = |n: &str| sizes.iter().any(|s| s == n) || inputs.iter().any(|b| b.name == n);
    let mut def_name = "source".to_string();
    while taken(&def_name) {
        def_name.push('x');
    }
    file.push_str(&format!("def {def_name} =\n"));
    let offset = file.len();
    file.push_str(text);
    file.push('\n');
    let relocate = |mut d: Diagnostic| {
        // The code stays the front end's (E02xx, E03xx): it says what is wrong.
        d.message = format!("the kernel's source expression: {}", d.message);
        let inside = |s: Span| s.start >= offset && s.end <= offset + text.len() + 1;
        let place = |s: Span| {
            if inside(s) {
                let start = (s.start - offset + at).min(at + text.len());
                let end = (s.end - offset + at).min(at + text.len());
                Span::new(start, end.max(start))
            } else {
                line_span
            }
        };
        if let Some(label) = d.primary.as_mut() {
            label.span = place(label.span);
        } else {
            d = d.at(line_span, "in this expression");
        }
        for label in &mut d.secondary {
            label.span = place(label.span);
        }
        d
    };
    let (ast, mut diags) = atl_lang::parser::parse_file(&file);
    let program = atl_lang::resolve::resolve_with(&ast, &mut diags, false);
    if let Some(d) = diags
        .into_iter()
        .find(|d| d.severity == atl_lang::diag::Severity::Error)
    {
        return Err(relocate(d));
    }
    match program.def(&def_name) {
        Some(def) => Ok(def.body.clone()),
        None => Err(
            Diagnostic::error("E0942", "the kernel's source expression does not resolve")
                .at(line_span, "here"),
        ),
    }
}

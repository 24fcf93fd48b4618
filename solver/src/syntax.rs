//! A small parser for index expressions and predicates in ATL's surface syntax,
//! extended with rule metavariables (`?x`) and, in rule right-hand sides, `fold(e)`
//! (compute `e` from matched constants at rewrite time).
//!
//! It exists so that the rule file can be read without depending on the program
//! parser, and so that tests and tools can write queries as text:
//! `parse_pred("0 <= i*8 + ii - 1 && i < cdiv(n, 8)")`.

use std::fmt;

use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};

/// A parse failure with the byte offset where it happened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntaxError {
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at offset {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for SyntaxError {}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Int(i64),
    Ident(String),
    Meta(String),
    Sym(&'static str),
}

const SYMBOLS: [&str; 17] = [
    "==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "+", "-", "*", "/", "%", "(", ")", ",",
];

fn lex(src: &str) -> Result<Vec<(Tok, usize)>, SyntaxError> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let err = |offset: usize, message: String| SyntaxError { offset, message };
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c.is_ascii_digit() {
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let v = src[start..i]
                .parse::<i64>()
                .map_err(|_| err(start, format!("integer `{}` out of range", &src[start..i])))?;
            out.push((Tok::Int(v), start));
            continue;
        }
        let ident_char = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        if c == b'?' {
            i += 1;
            while i < bytes.len() && ident_char(bytes[i]) {
                i += 1;
            }
            if i == start + 1 {
                return Err(err(start, "expected a metavariable name after `?`".into()));
            }
            out.push((Tok::Meta(src[start + 1..i].to_string()), start));
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && ident_char(bytes[i]) {
                i += 1;
            }
            out.push((Tok::Ident(src[start..i].to_string()), start));
            continue;
        }
        match SYMBOLS.iter().find(|s| src[i..].starts_with(**s)) {
            Some(s) => {
                out.push((Tok::Sym(s), start));
                i += s.len();
            }
            None => {
                let ch = src[i..].chars().next().unwrap_or('?');
                return Err(err(start, format!("unexpected character `{ch}`")));
            }
        }
    }
    Ok(out)
}

struct Parser<'a> {
    toks: Vec<(Tok, usize)>,
    pos: usize,
    end: usize,
    /// Where `fold(e)` bodies go; `None` when `fold` is not allowed.
    folds: Option<&'a mut Vec<IndexExpr>>,
}

/// The prefix of metavariables that stand for `fold(e)` bodies in a parsed rule
/// right-hand side: `fold(e)` parses as `?#fold<k>` with `e` stored at index `k`.
pub(crate) const FOLD_PREFIX: &str = "#fold";

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|(t, _)| t)
    }

    fn offset(&self) -> usize {
        self.toks.get(self.pos).map_or(self.end, |(_, o)| *o)
    }

    fn err<T>(&self, message: impl Into<String>) -> Result<T, SyntaxError> {
        Err(SyntaxError {
            offset: self.offset(),
            message: message.into(),
        })
    }

    fn eat(&mut self, s: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Sym(t)) if *t == s) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, s: &str) -> Result<(), SyntaxError> {
        if self.eat(s) {
            Ok(())
        } else {
            self.err(format!("expected `{s}`"))
        }
    }

    fn pred(&mut self) -> Result<Pred, SyntaxError> {
        let mut lhs = self.conj()?;
        while self.eat("||") {
            let rhs = self.conj()?;
            lhs = Pred::or(lhs, rhs);
        }
        Ok(lhs)
    }

    fn conj(&mut self) -> Result<Pred, SyntaxError> {
        let mut lhs = self.neg()?;
        while self.eat("&&") {
            let rhs = self.neg()?;
            lhs = Pred::and(lhs, rhs);
        }
        Ok(lhs)
    }

    fn neg(&mut self) -> Result<Pred, SyntaxError> {
        if self.eat("!") {
            return Ok(Pred::not(self.neg()?));
        }
        self.atom_pred()
    }

    fn atom_pred(&mut self) -> Result<Pred, SyntaxError> {
        match self.peek() {
            Some(Tok::Ident(w)) if w == "true" || w == "false" => {
                let b = w == "true";
                self.pos += 1;
                return Ok(Pred::Bool(b));
            }
            _ => {}
        }
        // `(` opens either a parenthesized predicate or an index expression: try the
        // comparison first and fall back.
        let save = self.pos;
        match self.comparison() {
            Ok(p) => Ok(p),
            Err(e) => {
                self.pos = save;
                if self.eat("(") {
                    let p = self.pred()?;
                    self.expect(")")?;
                    Ok(p)
                } else {
                    Err(e)
                }
            }
        }
    }

    fn comparison(&mut self) -> Result<Pred, SyntaxError> {
        let a = self.index()?;
        let op = match self.peek() {
            Some(Tok::Sym("==")) => CmpOp::Eq,
            Some(Tok::Sym("!=")) => CmpOp::Ne,
            Some(Tok::Sym("<")) => CmpOp::Lt,
            Some(Tok::Sym("<=")) => CmpOp::Le,
            Some(Tok::Sym(">")) => CmpOp::Gt,
            Some(Tok::Sym(">=")) => CmpOp::Ge,
            _ => return self.err("expected a comparison (`==`, `!=`, `<`, `<=`, `>`, `>=`)"),
        };
        self.pos += 1;
        let b = self.index()?;
        Ok(Pred::cmp(op, a, b))
    }

    fn index(&mut self) -> Result<IndexExpr, SyntaxError> {
        let mut lhs = self.term()?;
        loop {
            let op = if self.eat("+") {
                IndexOp::Add
            } else if self.eat("-") {
                IndexOp::Sub
            } else {
                return Ok(lhs);
            };
            let rhs = self.term()?;
            lhs = IndexExpr::bin(op, lhs, rhs);
        }
    }

    fn term(&mut self) -> Result<IndexExpr, SyntaxError> {
        let mut lhs = self.unary()?;
        loop {
            let op = if self.eat("*") {
                IndexOp::Mul
            } else if self.eat("/") {
                IndexOp::Div
            } else if self.eat("%") {
                IndexOp::Mod
            } else {
                return Ok(lhs);
            };
            let rhs = self.unary()?;
            lhs = IndexExpr::bin(op, lhs, rhs);
        }
    }

    fn unary(&mut self) -> Result<IndexExpr, SyntaxError> {
        if self.eat("-") {
            return Ok(match self.unary()? {
                IndexExpr::Const(c) if c != i64::MIN => IndexExpr::Const(-c),
                e => IndexExpr::Neg(Box::new(e)),
            });
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<IndexExpr, SyntaxError> {
        let Some(tok) = self.peek().cloned() else {
            return self.err("expected an index expression");
        };
        self.pos += 1;
        match tok {
            Tok::Int(v) => Ok(IndexExpr::Const(v)),
            Tok::Meta(name) => Ok(IndexExpr::Meta(name)),
            Tok::Sym("(") => {
                let e = self.index()?;
                self.expect(")")?;
                Ok(e)
            }
            Tok::Ident(name) => {
                let call = match name.as_str() {
                    "cdiv" => Some(IndexOp::CDiv),
                    "min" => Some(IndexOp::Min),
                    "max" => Some(IndexOp::Max),
                    _ => None,
                };
                if let Some(op) = call {
                    self.expect("(")?;
                    let a = self.index()?;
                    self.expect(",")?;
                    let b = self.index()?;
                    self.expect(")")?;
                    return Ok(IndexExpr::bin(op, a, b));
                }
                if name == "fold" && matches!(self.peek(), Some(Tok::Sym("("))) {
                    self.pos += 1;
                    let body = self.index()?;
                    self.expect(")")?;
                    let Some(folds) = self.folds.as_deref_mut() else {
                        self.pos -= 1;
                        return self.err("`fold(…)` is only allowed in a rule right-hand side");
                    };
                    folds.push(body);
                    return Ok(IndexExpr::Meta(format!("{FOLD_PREFIX}{}", folds.len() - 1)));
                }
                if name == "true" || name == "false" {
                    self.pos -= 1;
                    return self.err("expected an index expression, found a boolean");
                }
                Ok(IndexExpr::Var(name))
            }
            Tok::Sym(s) => {
                self.pos -= 1;
                self.err(format!("expected an index expression, found `{s}`"))
            }
        }
    }

    fn finish(&self) -> Result<(), SyntaxError> {
        if self.pos == self.toks.len() {
            Ok(())
        } else {
            self.err("unexpected trailing input")
        }
    }
}

fn parser<'a>(src: &str, folds: Option<&'a mut Vec<IndexExpr>>) -> Result<Parser<'a>, SyntaxError> {
    Ok(Parser {
        toks: lex(src)?,
        pos: 0,
        end: src.len(),
        folds,
    })
}

/// Parses an index expression, e.g. `(io*8 + ii) / 8` or `cdiv(n, 8) * 8 - n`.
pub fn parse_index(src: &str) -> Result<IndexExpr, SyntaxError> {
    let mut p = parser(src, None)?;
    let e = p.index()?;
    p.finish()?;
    Ok(e)
}

/// Parses a predicate, e.g. `0 <= i*8 + ii - 1 && i < cdiv(n, 8)`.
pub fn parse_pred(src: &str) -> Result<Pred, SyntaxError> {
    let mut p = parser(src, None)?;
    let e = p.pred()?;
    p.finish()?;
    Ok(e)
}

/// Parses a rule right-hand side, where `fold(e)` is allowed; the bodies are returned
/// in order of appearance.
pub(crate) fn parse_template(src: &str) -> Result<(IndexExpr, Vec<IndexExpr>), SyntaxError> {
    let mut folds = Vec::new();
    let mut p = parser(src, Some(&mut folds))?;
    let e = p.index()?;
    p.finish()?;
    Ok((e, folds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_display() {
        for src in [
            "(io * 8 + ii) / 8",
            "cdiv(n, 8) * 8 - n",
            "a - (b - c)",
            "min(x - y, x - z)",
            "-x % 3",
            "?x * ?c0 / ?c1",
        ] {
            let e = parse_index(src).unwrap();
            assert_eq!(parse_index(&e.to_string()).unwrap(), e, "{src}");
        }
        for src in [
            "0 <= i * 8 + ii - 1 && i < cdiv(n, 8)",
            "!(i < n) || (j >= 2 && true)",
            "(i + 1) * 2 < n",
        ] {
            let p = parse_pred(src).unwrap();
            assert_eq!(parse_pred(&p.to_string()).unwrap(), p, "{src}");
        }
    }

    #[test]
    fn reports_errors_with_offsets() {
        let e = parse_index("i + ").unwrap_err();
        assert_eq!(e.offset, 4);
        assert!(parse_pred("i < ").is_err());
        assert!(parse_index("fold(1)").is_err());
        assert!(parse_index("i $ 2").is_err());
    }

    #[test]
    fn fold_is_a_marker_in_templates() {
        let (e, folds) = parse_template("?x * fold(?c0 / ?c1)").unwrap();
        assert_eq!(folds.len(), 1);
        assert_eq!(e.to_string(), "?x * ?#fold0");
    }
}

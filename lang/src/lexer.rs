//! The lexer (logos): source text to tokens with byte spans. Unicode aliases (`⊞ Σ · ≤
//! ≥ ≠`) become the same tokens as their ASCII spellings; `#` starts a comment.

use std::fmt;

use logos::Logos;

use crate::diag::Diagnostic;
use crate::reshape::AmountOp;
use crate::span::Span;

#[derive(Logos, Clone, Debug, PartialEq, Eq, Hash)]
#[logos(skip r"[ \t\r\n\f]+")]
#[logos(skip(r"#[^\n]*", allow_greedy = true))]
pub enum Token {
    // Item keywords.
    #[token("size")]
    Size,
    #[token("assume")]
    Assume,
    #[token("input")]
    Input,
    #[token("def")]
    Def,
    #[token("derive")]
    Derive,
    #[token("from")]
    From,
    // Expression keywords.
    #[token("gen")]
    #[token("⊞")]
    Gen,
    #[token("sum")]
    #[token("Σ")]
    Sum,
    #[token("let")]
    Let,
    #[token("in")]
    In,
    #[token("true")]
    True,
    #[token("false")]
    False,
    #[token("concat")]
    Concat,
    #[token("transpose")]
    Transpose,
    #[token("flatten")]
    Flatten,
    /// An amount operator (`split`, `pad_l`, …): lexed as an identifier and recognized
    /// by its name in the reshape table ([`AmountOp::from_name`]), so that a new
    /// operator needs no token of its own.
    Amount(AmountOp),
    #[token("cdiv")]
    CDiv,
    #[token("min")]
    Min,
    #[token("max")]
    Max,
    /// `rw<-` is one token so that `i<-1` still reads as `i < -1`.
    #[token("rw<-")]
    RwBack,

    #[regex(r"[A-Za-z_][A-Za-z0-9_]*", |lex| lex.slice().to_string())]
    Ident(String),
    /// `stage.var`: a loop named with its stage, in the arguments of a directive.
    #[regex(r"[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*", |lex| lex.slice().to_string())]
    Qualified(String),
    /// `?name` or a bare `?` (an anonymous metavariable) in rule patterns.
    #[regex(r"\?[A-Za-z_][A-Za-z0-9_]*", |lex| lex.slice()[1..].to_string())]
    #[token("?", |_| String::new())]
    Meta(String),
    #[regex(r"[0-9]+", |lex| lex.slice().to_string())]
    Int(String),
    #[regex(r"[0-9]+\.[0-9]+([eE][+-]?[0-9]+)?", |lex| lex.slice().to_string())]
    #[regex(r"[0-9]+[eE][+-]?[0-9]+", |lex| lex.slice().to_string())]
    Float(String),

    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token(",")]
    Comma,
    #[token(":")]
    Colon,
    #[token(";")]
    Semi,
    #[token(":=")]
    ColonEq,
    #[token("=")]
    Eq,
    #[token("..")]
    DotDot,
    #[token("++")]
    PlusPlus,
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    #[token("·")]
    Star,
    #[token("/")]
    Slash,
    #[token("%")]
    Percent,
    #[token("<")]
    Lt,
    #[token("<=")]
    #[token("≤")]
    Le,
    #[token(">")]
    Gt,
    #[token(">=")]
    #[token("≥")]
    Ge,
    #[token("==")]
    EqEq,
    #[token("!=")]
    #[token("≠")]
    Ne,
    #[token("&&")]
    AndAnd,
    #[token("||")]
    OrOr,
    #[token("!")]
    Bang,
}

impl Token {
    /// Whether this token starts a top-level item.
    pub fn starts_item(&self) -> bool {
        matches!(
            self,
            Token::Size | Token::Assume | Token::Input | Token::Def | Token::Derive
        )
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Token::Size => "size",
            Token::Assume => "assume",
            Token::Input => "input",
            Token::Def => "def",
            Token::Derive => "derive",
            Token::From => "from",
            Token::Gen => "gen",
            Token::Sum => "sum",
            Token::Let => "let",
            Token::In => "in",
            Token::True => "true",
            Token::False => "false",
            Token::Concat => "concat",
            Token::Transpose => "transpose",
            Token::Flatten => "flatten",
            Token::Amount(op) => op.name(),
            Token::CDiv => "cdiv",
            Token::Min => "min",
            Token::Max => "max",
            Token::RwBack => "rw<-",
            Token::Ident(s) | Token::Qualified(s) => return write!(f, "{s}"),
            Token::Meta(s) => return write!(f, "?{s}"),
            Token::Int(s) | Token::Float(s) => return write!(f, "{s}"),
            Token::LParen => "(",
            Token::RParen => ")",
            Token::LBracket => "[",
            Token::RBracket => "]",
            Token::LBrace => "{",
            Token::RBrace => "}",
            Token::Comma => ",",
            Token::Colon => ":",
            Token::Semi => ";",
            Token::ColonEq => ":=",
            Token::Eq => "=",
            Token::DotDot => "..",
            Token::PlusPlus => "++",
            Token::Plus => "+",
            Token::Minus => "-",
            Token::Star => "*",
            Token::Slash => "/",
            Token::Percent => "%",
            Token::Lt => "<",
            Token::Le => "<=",
            Token::Gt => ">",
            Token::Ge => ">=",
            Token::EqEq => "==",
            Token::Ne => "!=",
            Token::AndAnd => "&&",
            Token::OrOr => "||",
            Token::Bang => "!",
        };
        write!(f, "{s}")
    }
}

/// Lexes `source`. Unrecognized characters are reported (E0101) and skipped, so that
/// parsing can go on and report further errors.
pub fn lex(source: &str) -> (Vec<(Token, Span)>, Vec<Diagnostic>) {
    let mut tokens = Vec::new();
    let mut diags: Vec<Diagnostic> = Vec::new();
    let mut lexer = Token::lexer(source);
    while let Some(result) = lexer.next() {
        let span = Span::from(lexer.span());
        match result {
            Ok(Token::Ident(name)) => match AmountOp::from_name(&name) {
                Some(op) => tokens.push((Token::Amount(op), span)),
                None => tokens.push((Token::Ident(name), span)),
            },
            Ok(tok) => tokens.push((tok, span)),
            Err(()) => {
                // Merge runs of bad characters into one diagnostic.
                if let Some(last) = diags.last_mut()
                    && last.code == "E0101"
                    && let Some(label) = &mut last.primary
                    && label.span.end == span.start
                {
                    label.span.end = span.end;
                    continue;
                }
                let text = &source[span.range()];
                diags.push(
                    Diagnostic::error("E0101", format!("unexpected character `{}`", text.escape_debug()))
                        .at(span, "not part of ATL's syntax")
                        .with_help("ATL programs use ASCII operators (or the aliases ⊞ Σ · ≤ ≥ ≠); `#` starts a comment"),
                );
            }
        }
    }
    (tokens, diags)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Token> {
        let (toks, diags) = lex(src);
        assert!(diags.is_empty(), "{diags:?}");
        toks.into_iter().map(|(t, _)| t).collect()
    }

    #[test]
    fn ranges_and_floats_are_distinguished() {
        assert_eq!(
            kinds("0..n 1.5 2e3"),
            vec![
                Token::Int("0".into()),
                Token::DotDot,
                Token::Ident("n".into()),
                Token::Float("1.5".into()),
                Token::Float("2e3".into()),
            ]
        );
    }

    #[test]
    fn unicode_aliases_map_to_ascii_tokens() {
        assert_eq!(kinds("⊞ Σ · ≤ ≥ ≠"), kinds("gen sum * <= >= !="));
    }

    #[test]
    fn keywords_are_not_identifier_prefixes() {
        assert_eq!(
            kinds("gen genx"),
            vec![Token::Gen, Token::Ident("genx".into())]
        );
        assert_eq!(
            kinds("rw<- r"),
            vec![Token::RwBack, Token::Ident("r".into())]
        );
        assert_eq!(
            kinds("i<-1"),
            vec![
                Token::Ident("i".into()),
                Token::Lt,
                Token::Minus,
                Token::Int("1".into())
            ]
        );
    }

    #[test]
    fn bad_characters_are_reported_with_spans() {
        let (toks, diags) = lex("a $$ b");
        assert_eq!(toks.len(), 2);
        assert_eq!(diags.len(), 1);
        assert_eq!(
            diags[0].primary.as_ref().map(|l| l.span),
            Some(Span::new(2, 4))
        );
    }
}

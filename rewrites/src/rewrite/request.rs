//! What a rule step asks for: the rule, the [`Direction`] it is used in, the site
//! selector, the `with` values and the step's span.

use atl_lang::ast;
use atl_lang::ir::Expr;
use atl_lang::span::Span;

use crate::rule::Rule;

/// Which way a rule is used: left to right (`rw`) or right to left (`rw<-`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Backward,
}

impl Direction {
    /// `Backward` for a step written `rw<-`.
    pub fn from_backward(backward: bool) -> Direction {
        if backward {
            Direction::Backward
        } else {
            Direction::Forward
        }
    }

    /// The step's command word: `rw` or `rw<-`.
    pub fn command_word(self) -> &'static str {
        match self {
            Direction::Forward => "rw",
            Direction::Backward => "rw<-",
        }
    }

    /// The direction as a certificate records it.
    pub fn record_name(self) -> &'static str {
        match self {
            Direction::Forward => "forward",
            Direction::Backward => "backward",
        }
    }

    /// The rule's side that is matched, and the side that is produced.
    pub fn sides(self, rule: &Rule) -> (&Expr, &Expr) {
        match self {
            Direction::Forward => (&rule.lhs, &rule.rhs),
            Direction::Backward => (&rule.rhs, &rule.lhs),
        }
    }
}

/// One rule step as written: the rule, the direction, where (`at`, `in`, `around`), the
/// `with` values, and the step's span for diagnostics.
#[derive(Clone, Copy, Debug)]
pub struct RewriteRequest<'s> {
    pub rule: &'s ast::Ident,
    pub direction: Direction,
    pub site: &'s ast::SiteSelector,
    pub with: &'s [(ast::Ident, ast::SIndex)],
    pub span: Span,
}

//! Matching: the rule's pattern side against each candidate site, with the matcher of
//! [`crate::matcher`] (matching under binders, with structural scoping).

use atl_lang::ir::Expr;

use crate::context::Site;
use crate::matcher::{self, Bindings};
use crate::rule::Rule;

/// Every candidate the pattern matches, with its bindings, in the candidates' order;
/// and the structural refusals of the matcher at the others (for the message when
/// nothing matches).
pub fn match_candidates<'s, 'e>(
    rule: &Rule,
    pattern: &Expr,
    candidates: Vec<&'s Site<'e>>,
) -> (Vec<(&'s Site<'e>, Bindings)>, Vec<String>) {
    let mut matches = Vec::new();
    let mut refusals = Vec::new();
    for s in candidates {
        match matcher::match_at(rule, pattern, s.expr) {
            Ok(b) => matches.push((s, b)),
            Err(notes) => refusals.extend(notes.scope_refusals),
        }
    }
    (matches, refusals)
}

//! Searching: which sites of the program a rule step may rewrite. The candidates are
//! every node, narrowed by `in [path]` (one node) and `around (pattern)` (the subtree of
//! the first node the pattern matches); after matching, `at N` takes the N-th match in
//! pre-order (the first by default).

use atl_lang::ast;
use atl_lang::diag::Diagnostic;
use atl_lang::index::IndexExpr;
use atl_lang::ir::{Expr, ExprKind};
use atl_lang::poly;

use crate::context::Site;
use crate::matcher::Bindings;
use crate::rewrite::request::{Direction, RewriteRequest};
use crate::rule::Rule;

/// The sites of `all` that the selector allows, in pre-order (E0804 for a path that
/// leads nowhere, E0805 for an `around` pattern that matches nothing).
pub fn candidate_sites<'s, 'e>(
    all: &'s [Site<'e>],
    site_sel: &ast::SiteSelector,
) -> Result<Vec<&'s Site<'e>>, Diagnostic> {
    let mut candidates: Vec<&Site<'_>> = all.iter().collect();
    if let Some((path, span)) = &site_sel.path {
        let path: Vec<usize> = path.iter().map(|p| *p as usize).collect();
        candidates.retain(|s| s.path == path);
        if candidates.is_empty() {
            return Err(Diagnostic::error("E0804", "no subterm at this path")
                .at(*span, "path leads nowhere")
                .with_help("paths are child numbers from the root, starting at 0"));
        }
    }
    if let Some(around) = &site_sel.around {
        let pat = crate::rule::site_pattern(around)?;
        let anchor = all
            .iter()
            .find(|s| site_matches(&pat, s.expr))
            .ok_or_else(|| {
                Diagnostic::error("E0805", "no subterm matches the `around` pattern")
                    .at(around.span, "matches nothing")
            })?;
        let prefix = anchor.path.clone();
        candidates.retain(|s| s.path.starts_with(&prefix));
    }
    Ok(candidates)
}

/// The match the step asks for (`at N`, the first by default), or E0806 saying that
/// the rule matches nowhere (with the first structural refusal, if the matcher refused
/// one) or has too few matches.
pub fn chosen_match<'s, 'e>(
    matches: Vec<(&'s Site<'e>, Bindings)>,
    refusals: &[String],
    rule: &Rule,
    request: &RewriteRequest<'_>,
) -> Result<(&'s Site<'e>, Bindings), Diagnostic> {
    let wanted = request.site.at.map(|(n, _)| n as usize).unwrap_or(1);
    let total = matches.len();
    if let Some(found) = matches.into_iter().nth(wanted - 1) {
        return Ok(found);
    }
    let backward = request.direction == Direction::Backward;
    let mut d = if total == 0 {
        Diagnostic::error("E0806", format!("rule `{}` matches nowhere", rule.name))
            .at(request.span, "no match")
            .with_note(format!(
                "{}: {}",
                if backward { "right side" } else { "left side" },
                if backward {
                    rule.equation.split("=>").nth(1).unwrap_or("").trim()
                } else {
                    rule.equation.split("=>").next().unwrap_or("").trim()
                }
            ))
    } else {
        Diagnostic::error(
            "E0806",
            format!("rule `{}` has only {total} match(es)", rule.name),
        )
        .at(request.span, format!("asked for match {wanted}"))
    };
    if let Some(r) = refusals.first() {
        d = d.with_note(format!("a structural match was refused: {r}"));
    }
    Err(d)
}

/// Whether `e` matches an `around` pattern: metavariables match anything, binder names
/// match any binder, other names must be equal.
fn site_matches(p: &Expr, e: &Expr) -> bool {
    use ExprKind as K;
    match (&p.kind, &e.kind) {
        (K::Meta(_), _) => true,
        (K::Input(n), K::Input(m)) | (K::Input(n), K::DefRef(m)) | (K::Input(n), K::Var(m)) => {
            n == m
        }
        (K::Lit(a), K::Lit(b)) => a == b,
        (
            K::Gen {
                lo: l1,
                hi: h1,
                body: b1,
                ..
            },
            K::Gen {
                lo: l2,
                hi: h2,
                body: b2,
                ..
            },
        )
        | (
            K::Sum {
                lo: l1,
                hi: h1,
                body: b1,
                ..
            },
            K::Sum {
                lo: l2,
                hi: h2,
                body: b2,
                ..
            },
        )
        | (
            K::MaxRed {
                lo: l1,
                hi: h1,
                body: b1,
                ..
            },
            K::MaxRed {
                lo: l2,
                hi: h2,
                body: b2,
                ..
            },
        ) => index_site_matches(l1, l2) && index_site_matches(h1, h2) && site_matches(b1, b2),
        _ => false,
    }
}

fn index_site_matches(p: &IndexExpr, e: &IndexExpr) -> bool {
    match p {
        IndexExpr::Meta(_) => true,
        _ => poly::same(p, e),
    }
}

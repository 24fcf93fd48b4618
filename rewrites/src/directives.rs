//! Halide-style scheduling directives as macros over checked rules. A directive names
//! loops by their binder variables, finds them in the current program, and applies
//! ordinary rule steps at their paths; each expanded step is recorded (and certified)
//! like any other, with the directive as its `origin`.
//!
//! Supported now:
//! - `split i by K into io, ii` (tail strategy `guard`, Halide's GuardWithIf, the
//!   default): `rw<- tile_id with k := K`, `rw split_def` naming the new loops,
//!   `rw get_gen`. Tails are guarded and the padding dropped by `trunc_r`.
//!   `tail round` (RoundUp) and `tail shift` (ShiftInwards) are refused: RoundUp would
//!   compute and store past the end of the output, and ShiftInwards recomputes
//!   overlapping elements, which the guard-based form already avoids; neither has a
//!   sound equivalent here yet.
//! - `tile i, j by A, B`: `split i by A into io, ii` then `split j by B into jo, ji`.
//! - `reorder a, b`: exchanges two directly nested loops `a` and `b` (either order):
//!   `gen_swap` (gen/gen, a transpose keeps the layout), `sum_swap` (sum/sum),
//!   `gen_sum`/`sum_gen` (a gen and a sum).
//!
//! Others (`fuse`, `compute_at`, `parallel`, `vectorize`, `unroll`, …) are reported as
//! not supported yet.

use std::collections::BTreeMap;

use atl_lang::ast::{self, DirectiveArg, SIndex, SIndexKind, SiteSelector, Step, StepKind};
use atl_lang::diag::Diagnostic;
use atl_lang::ir::{Expr, ExprKind};
use atl_lang::shapes::Shape;
use atl_lang::span::Span;

use crate::engine::{Env, StepOutcome, run_step, sites};

fn usage(name: &ast::Ident, text: &str) -> Diagnostic {
    Diagnostic::error("E0820", format!("malformed `{}` directive", name.name))
        .at(name.span, "here")
        .with_help(text.to_string())
}

/// Words and integers of a directive, commas dropped.
fn words(args: &[DirectiveArg]) -> Vec<(String, Span)> {
    args.iter()
        .filter_map(|a| match a {
            DirectiveArg::Word(w) => Some((w.name.clone(), w.span)),
            DirectiveArg::Int(v, s) => Some((v.to_string(), *s)),
            DirectiveArg::Comma(_) => None,
        })
        .collect()
}

fn ident(name: &str, span: Span) -> ast::Ident {
    ast::Ident {
        name: name.to_string(),
        span,
    }
}

fn int(v: i64, span: Span) -> SIndex {
    SIndex {
        kind: SIndexKind::Int(v),
        span,
    }
}

fn name_index(n: &str, span: Span) -> SIndex {
    SIndex {
        kind: SIndexKind::Name(n.to_string()),
        span,
    }
}

/// The path of the `gen`/`sum` binding `var`.
fn loop_path(
    env: &Env<'_>,
    expr: &Expr,
    var: &str,
    span: Span,
) -> Result<(Vec<usize>, bool), Diagnostic> {
    sites(env.shapes, expr)
        .into_iter()
        .find_map(|s| match &s.expr.kind {
            ExprKind::Gen { var: v, .. } if v == var => Some((s.path.clone(), true)),
            ExprKind::Sum { var: v, .. } if v == var => Some((s.path.clone(), false)),
            _ => None,
        })
        .ok_or_else(|| {
            Diagnostic::error("E0821", format!("no loop binds `{var}`"))
                .at(span, "unknown loop")
                .with_help("loops are named by their binder variables as printed by `atl derive --trace` or the REPL")
        })
}

fn rw(rule: &str, backward: bool, path: Vec<usize>, with: Vec<(&str, SIndex)>, span: Span) -> Step {
    Step {
        kind: StepKind::Rewrite {
            backward,
            rule: ident(rule, span),
            site: SiteSelector {
                path: Some((path.into_iter().map(|p| p as u64).collect(), span)),
                ..Default::default()
            },
            with: with.into_iter().map(|(k, v)| (ident(k, span), v)).collect(),
        },
        span,
    }
}

/// Applies `steps` one after the other, recording `origin` on each.
struct Applier<'a, 'e> {
    env: &'a Env<'e>,
    shape: &'a Shape,
    derived: &'a BTreeMap<String, Expr>,
    origin: String,
    expr: Expr,
    outcomes: Vec<StepOutcome>,
}

impl Applier<'_, '_> {
    fn apply(&mut self, step: Step) -> Result<(), Diagnostic> {
        let mut o = run_step(self.env, &self.expr, &step, self.shape, self.derived)
            .map_err(|d| d.with_note(format!("while expanding `{}`", self.origin)))?;
        o.record.origin = Some(self.origin.clone());
        self.expr = o.expr.clone();
        self.outcomes.push(o);
        Ok(())
    }

    /// `split var by k into outer, inner` with guarded tails.
    fn split(
        &mut self,
        var: &str,
        k: i64,
        outer: &str,
        inner: &str,
        span: Span,
    ) -> Result<(), Diagnostic> {
        if k < 1 {
            return Err(Diagnostic::error(
                "E0820",
                format!("a split factor must be at least 1, got {k}"),
            )
            .at(span, "bad factor"));
        }
        let (path, is_gen) = loop_path(self.env, &self.expr, var, span)?;
        if !is_gen {
            return Err(Diagnostic::error(
                "E0822",
                format!("`{var}` is a reduction (`sum`); only `gen` loops are split here"),
            )
            .at(span, "a sum")
            .with_help("split a sum's range with `rw split_sum with k := …`"));
        }
        self.apply(rw(
            "tile_id",
            true,
            path.clone(),
            vec![("k", int(k, span))],
            span,
        ))?;
        let mut split_path = path.clone();
        split_path.extend([0, 0]);
        self.apply(rw(
            "split_def",
            false,
            split_path.clone(),
            vec![
                ("io", name_index(outer, span)),
                ("ii", name_index(inner, span)),
            ],
            span,
        ))?;
        // gen outer: gen inner: [guard] * (gen var: …)[outer * k + inner]
        let mut access = split_path;
        access.extend([0, 0, 0]);
        self.apply(rw("get_gen", false, access, vec![], span))
    }
}

/// Expands and applies a directive; returns one outcome per rule step.
pub fn apply_directive(
    env: &Env<'_>,
    expr: &Expr,
    name: &ast::Ident,
    args: &[DirectiveArg],
    span: Span,
    shape: &Shape,
    derived: &BTreeMap<String, Expr>,
) -> Result<Vec<StepOutcome>, Diagnostic> {
    let mut source_text = name.name.clone();
    for a in args {
        match a {
            DirectiveArg::Word(w) => source_text.push_str(&format!(" {}", w.name)),
            DirectiveArg::Int(v, _) => source_text.push_str(&format!(" {v}")),
            DirectiveArg::Comma(_) => source_text.push(','),
        }
    }
    let w = words(args);
    let text: Vec<&str> = w.iter().map(|(s, _)| s.as_str()).collect();
    let mut applier = Applier {
        env,
        shape,
        derived,
        origin: source_text,
        expr: expr.clone(),
        outcomes: Vec::new(),
    };
    match name.name.as_str() {
        "split" => {
            const HELP: &str = "`split i by 8 into io, ii [tail guard]`";
            let (var, k, outer, inner, rest) = match text.as_slice() {
                [var, "by", k, "into", outer, inner, rest @ ..] => (*var, *k, *outer, *inner, rest),
                _ => return Err(usage(name, HELP)),
            };
            match rest {
                [] | ["tail", "guard"] => {}
                ["tail", "round"] => {
                    return Err(Diagnostic::error("E0823", "tail strategy `round` (RoundUp) is refused")
                        .at(span, "unsound here")
                        .with_note("RoundUp computes the last tile in full; on an output (or any tensor whose extent is not a multiple of the factor) that writes past its end")
                        .with_help("use the default `tail guard`"));
                }
                ["tail", "shift"] => {
                    return Err(Diagnostic::error("E0823", "tail strategy `shift` (ShiftInwards) is not supported")
                        .at(span, "not supported")
                        .with_note("ShiftInwards recomputes overlapping elements and is invalid when the extent may be smaller than the factor")
                        .with_help("use the default `tail guard`"));
                }
                _ => return Err(usage(name, HELP)),
            }
            let k: i64 = k.parse().map_err(|_| usage(name, HELP))?;
            applier.split(var, k, outer, inner, span)?;
        }
        "tile" => {
            const HELP: &str = "`tile i, j by 64, 64` (new loops `io, ii, jo, ji`)";
            let [a, b, "by", ka, kb] = text.as_slice() else {
                return Err(usage(name, HELP));
            };
            let ka: i64 = ka.parse().map_err(|_| usage(name, HELP))?;
            let kb: i64 = kb.parse().map_err(|_| usage(name, HELP))?;
            applier.split(a, ka, &format!("{a}o"), &format!("{a}i"), span)?;
            applier.split(b, kb, &format!("{b}o"), &format!("{b}i"), span)?;
        }
        "reorder" => {
            const HELP: &str = "`reorder a, b` exchanges two directly nested loops";
            let [a, b] = text.as_slice() else {
                return Err(usage(name, HELP));
            };
            let (pa, ga) = loop_path(env, expr, a, span)?;
            let (pb, gb) = loop_path(env, expr, b, span)?;
            let (outer_path, outer_gen, inner_path, inner_gen) =
                if pb.len() == pa.len() + 1 && pb.starts_with(&pa) {
                    (pa, ga, pb, gb)
                } else if pa.len() == pb.len() + 1 && pa.starts_with(&pb) {
                    (pb, gb, pa, ga)
                } else {
                    return Err(Diagnostic::error(
                        "E0824",
                        format!("`{a}` and `{b}` are not directly nested loops"),
                    )
                    .at(span, "cannot exchange")
                    .with_help("exchange adjacent loops one pair at a time"));
                };
            let _ = inner_path;
            let rule = match (outer_gen, inner_gen) {
                (true, true) => "gen_swap",
                (false, false) => "sum_swap",
                (true, false) => "gen_sum",
                (false, true) => "sum_gen",
            };
            applier.apply(rw(rule, false, outer_path, vec![], span))?;
        }
        other => {
            return Err(Diagnostic::error("E0815", format!("`{other}` is not a step this version understands"))
                .at(name.span, "unknown step")
                .with_help("steps are `rw`, `rw<-`, `unfold`, `inline`, `simpl`, `simpl_guard`, `window`, `check`, and the directives `split`, `tile`, `reorder`"));
        }
    }
    Ok(applier.outcomes)
}

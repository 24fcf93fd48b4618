//! Scheduling reductions with directives: `split` of a `sum` loop, `rfactor` (Halide's
//! partial sums over a new pure loop) and the `grade exact` declaration that refuses
//! every reassociation in a derivation.
//!
//! - `split k by Q into ko, ki` on `sum k < n: e`: `rw sum_tile with q := Q` gives
//!   `sum ko < cdiv(n, Q): sum ki < Q: [ko * Q + ki < n] * e[k := ko * Q + ki]`, the
//!   last tile guarded (graded `real`: the terms are added tile by tile). `tail round`
//!   and `tail shift` drop the guard with `guard_elim` when `n` is provably a multiple
//!   of `Q` (otherwise there is a partial tile and they are refused, as for a `gen`);
//!   `tail separate` then applies `rw split_sum with k := n / Q` at `ko` and
//!   `simpl_guard`: the full tiles without a guard, plus the last one.
//! - `rfactor ki into l [as part]` on `sum ko: sum ki < Q: e` (directly nested, `ki`
//!   inside): `rw sum_swap` (`real`), then `rw sum_stage with l := l, y := part`:
//!   `let part = gen l < Q: sum ko: e[ki := l] in sum ki < Q: part[ki]`. The partial
//!   sums are a stage over the pure loop `l`, which `reorder ko, l` (a `gen_sum`) turns
//!   into a vector accumulator that `vectorize l` runs in SIMD lanes, or which
//!   `parallel l` runs on threads.
//! - `split k by Q into ko, ki` on a max-reduction `max k < n: e`: `rw max_tile with
//!   q := Q` gives `max ko < n / Q: max ki < Q: e[k := ko * Q + ki]` (graded `exact`:
//!   the same values in the same order), only when `n` is provably a multiple of `Q`
//!   (whatever the tail strategy): a partial tile cannot be guarded as a sum's is, since
//!   the guard's zeros would take part in the maximum (0 is not the identity of `max`).
//! - `rfactor ki into l [as part]` on `max ko: max ki < Q: e`: `rw max_swap` (`real`:
//!   the same maximum, but of two equal values, +0 and -0, another may be kept), then
//!   `rw max_stage`: `let part = gen l < Q: max ko: e[ki := l] in max ki < Q: part[ki]`,
//!   the partial maxima over the pure loop `l`.
//! - `grade exact`: a declaration (recorded as a `check` step). The derivation driver
//!   refuses any step of such a derivation whose rule is graded `real`
//!   ([`check_declared_exact`]), naming the directive the user wrote and the reduction
//!   it would reassociate.

use atl_lang::ast::{self, Step, StepKind};
use atl_lang::diag::Diagnostic;
use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_lang::ir::{Expr, ExprKind, Program};
use atl_lang::poly;
use atl_lang::span::Span;
use atl_solver::Verdict;

use super::{Applier, Call, find_loop, int, name_index, rw, to_sindex};
use crate::context::{StepOutcome, node_at};
use crate::rule::Grade;

impl Applier<'_, '_> {
    /// `split var by k into outer, inner` on the `sum` at `path` (see the module
    /// documentation), with the tail strategy `tail`.
    pub(super) fn split_reduction(
        &mut self,
        path: Vec<usize>,
        var: &str,
        k: i64,
        (outer, inner): (&str, &str),
        tail: &str,
        span: Span,
    ) -> Result<(), Diagnostic> {
        let Some(ExprKind::Sum { lo, hi, .. }) = self.node(&path).map(|n| n.kind.clone()) else {
            unreachable!("split_reduction is called on a sum")
        };
        if !poly::same(&lo, &IndexExpr::Const(0)) {
            return Err(Diagnostic::error(
                "E0822",
                format!("the reduction `{var}` starts at {lo}, not 0"),
            )
            .at(span, "cannot split this sum")
            .with_help(format!(
                "shift it to start at 0 first (`rw shift_sum with d := -({lo})` at `sum {var}`)"
            )));
        }
        let extent = poly::normalize(&hi);
        if tail == "round" || tail == "shift" {
            self.check_sum_multiple(&path, var, k, &extent, tail, span)?;
        }
        self.apply(rw(
            "sum_tile",
            false,
            path.clone(),
            vec![
                ("q", int(k, span)),
                ("ko", name_index(outer, span)),
                ("ki", name_index(inner, span)),
            ],
            span,
        ))?;
        match tail {
            "round" | "shift" => {
                // sum outer: sum inner: [guard] * …: no partial tile, the guard holds.
                let mut guard = path;
                guard.extend([0, 0]);
                self.apply(rw("guard_elim", false, guard, vec![], span))
            }
            "separate" => {
                let full = IndexExpr::bin(IndexOp::Div, extent, IndexExpr::Const(k));
                self.apply(rw(
                    "split_sum",
                    false,
                    path,
                    vec![("k", to_sindex(&full, span))],
                    span,
                ))?;
                self.apply(Step {
                    kind: StepKind::SimplGuard,
                    span,
                })
            }
            _ => Ok(()),
        }
    }

    /// `split var by k into outer, inner` on the max-reduction at `path` (see the module
    /// documentation): refused unless its extent is provably a multiple of `k`.
    pub(super) fn split_max(
        &mut self,
        path: Vec<usize>,
        var: &str,
        k: i64,
        (outer, inner): (&str, &str),
        span: Span,
    ) -> Result<(), Diagnostic> {
        let Some(ExprKind::MaxRed { lo, hi, .. }) = self.node(&path).map(|n| n.kind.clone()) else {
            unreachable!("split_max is called on a max-reduction")
        };
        if !poly::same(&lo, &IndexExpr::Const(0)) {
            return Err(Diagnostic::error(
                "E0822",
                format!("the max-reduction `{var}` starts at {lo}, not 0"),
            )
            .at(span, "cannot split this max-reduction")
            .with_help(format!(
                "write it to start at 0: `max {var} < {}: …` with the body read at `{var} + {lo}`",
                poly::normalize(&IndexExpr::sub(hi.clone(), lo.clone()))
            )));
        }
        let extent = poly::normalize(&hi);
        let multiple = Pred::cmp(
            CmpOp::Eq,
            IndexExpr::bin(IndexOp::Mod, extent.clone(), IndexExpr::Const(k)),
            IndexExpr::Const(0),
        );
        let why = match self.prove_at(&path, &multiple) {
            Verdict::Proved => None,
            Verdict::Refuted(cex) => Some(format!("counterexample: {cex}")),
            Verdict::Unknown(r) => Some(format!("the solver could not decide it ({r})")),
        };
        if let Some(why) = why {
            return Err(Diagnostic::error(
                "E0823",
                format!(
                    "`split {var} by {k}` is refused: the extent {extent} of the max-reduction `{var}` is not provably a multiple of {k}"
                ),
            )
            .at(span, "would have a partial last tile")
            .with_note(why)
            .with_note(
                "a sum's partial tile is guarded, its missing terms adding 0; the maximum of a partial tile cannot be padded so, since 0 is not the identity of `max` (it would be the maximum of a row of negative values)")
            .with_help(format!(
                "split by a factor that divides {extent}, or state that {k} does with an `assume` (`assume {extent} % {k} == 0`)"
            )));
        }
        self.apply(rw(
            "max_tile",
            false,
            path,
            vec![
                ("q", int(k, span)),
                ("ko", name_index(outer, span)),
                ("ki", name_index(inner, span)),
            ],
            span,
        ))
    }

    /// For `tail round`/`tail shift` of a reduction: its extent must be provably a
    /// multiple of `k`, or there is a partial last tile, which neither strategy can
    /// compute soundly.
    fn check_sum_multiple(
        &self,
        path: &[usize],
        var: &str,
        k: i64,
        extent: &IndexExpr,
        tail: &str,
        span: Span,
    ) -> Result<(), Diagnostic> {
        let multiple = Pred::cmp(
            CmpOp::Eq,
            IndexExpr::bin(IndexOp::Mod, extent.clone(), IndexExpr::Const(k)),
            IndexExpr::Const(0),
        );
        let why = match self.prove_at(path, &multiple) {
            Verdict::Proved => return Ok(()),
            Verdict::Refuted(cex) => format!("counterexample: {cex}"),
            Verdict::Unknown(r) => format!("the solver could not decide it ({r})"),
        };
        let (strategy, note) = if tail == "round" {
            (
                "RoundUp",
                format!(
                    "RoundUp adds the last tile in full, up to cdiv({extent}, {k}) * {k}: terms past the end of `sum {var}`, read out of bounds"
                ),
            )
        } else {
            (
                "ShiftInwards",
                format!(
                    "ShiftInwards starts the last tile at {extent} - {k}: its terms that overlap the previous tile would be added twice"
                ),
            )
        };
        Err(Diagnostic::error(
            "E0823",
            format!(
                "tail strategy `{tail}` ({strategy}) is refused: the extent {extent} of the reduction `{var}` is not provably a multiple of {k}"
            ),
        )
        .at(span, "has a partial last tile")
        .with_note(why)
        .with_note(note)
        .with_help("use the default `tail guard` or `tail separate`, or a factor that divides the extent (an `assume` can state it)"))
    }
}

/// `rfactor ki into l [as part]`: the reduction `sum ko: sum ki < Q: e` becomes the
/// partial sums `let part = gen l < Q: sum ko: e[ki := l]` added afterwards
/// (`sum ki < Q: part[ki]`).
pub(super) fn rfactor_directive(
    applier: &mut Applier<'_, '_>,
    call: &Call<'_>,
) -> Result<(), Diagnostic> {
    let (inner, l, stage) = match call.text.as_slice() {
        [inner, "into", l] => (*inner, *l, "partial"),
        [inner, "into", l, "as", stage] => (*inner, *l, *stage),
        _ => return Err(call.usage()),
    };
    let span = call.span;
    let program = applier.env.program;
    let (path, is_gen) = match find_loop_or_max(program, &applier.expr, inner, span)? {
        Named::Loop(path, is_gen) => (path, is_gen),
        Named::Max(path) => {
            applier.check_fresh(&[l, stage], span)?;
            return rfactor_max(applier, path, inner, (l, stage), span);
        }
    };
    applier.check_fresh(&[l, stage], span)?;
    let refuse = |what: String, help: &str| {
        Diagnostic::error("E0856", what)
            .at(span, "cannot rfactor")
            .with_note("`rfactor ki into l` turns `sum ko: sum ki < Q: e` into the partial sums `gen l < Q: sum ko: e[ki := l]`, added afterwards")
            .with_help(help.to_string())
    };
    if is_gen {
        return Err(refuse(
            format!("`{inner}` is a `gen` loop, not a reduction"),
            "name the inner loop of a split reduction (`split k by 8 into ko, ki`, then `rfactor ki into l`)",
        ));
    }
    let parent = path.split_last().map(|(_, p)| p.to_vec());
    let outer = parent
        .as_ref()
        .and_then(|p| node_at(&applier.expr, p).map(|n| (p.clone(), n)));
    let Some((outer_path, ExprKind::Sum { .. })) = outer.map(|(p, n)| (p, n.kind.clone())) else {
        return Err(refuse(
            format!("the reduction `{inner}` is not directly inside another reduction"),
            "split the reduction first (`split k by 8 into ko, ki`) and rfactor its inner loop; a guard between the two loops can be moved into the inner one with `reorder`",
        ));
    };
    let Some(ExprKind::Sum { lo, .. }) = applier.node(&path).map(|n| &n.kind) else {
        unreachable!("find_loop found a sum")
    };
    if !poly::same(lo, &IndexExpr::Const(0)) {
        return Err(refuse(
            format!("the reduction `{inner}` starts at {lo}, not 0"),
            "rfactor the inner loop of a split, which runs from 0",
        ));
    }
    // sum ko: sum ki: e  =>  sum ki: sum ko: e  (the additions regrouped: `real`)
    applier.apply(rw("sum_swap", false, outer_path.clone(), vec![], span))?;
    // sum ki < Q: E  =>  let part = gen l < Q: E[ki := l] in sum ki < Q: part[ki]
    applier.apply(rw(
        "sum_stage",
        false,
        outer_path,
        vec![("l", name_index(l, span)), ("y", name_index(stage, span))],
        span,
    ))
}

/// `rfactor ki into l as stage` on the max-reduction `ki` at `path`, which must run
/// from 0 directly inside another max-reduction: the partial maxima
/// `let stage = gen l < Q: max ko: e[ki := l]`, combined by `max ki < Q: stage[ki]`.
fn rfactor_max(
    applier: &mut Applier<'_, '_>,
    path: Vec<usize>,
    inner: &str,
    (l, stage): (&str, &str),
    span: Span,
) -> Result<(), Diagnostic> {
    let refuse = |what: String, help: &str| {
        Diagnostic::error("E0856", what)
            .at(span, "cannot rfactor")
            .with_note("`rfactor ki into l` turns `max ko: max ki < Q: e` into the partial maxima `gen l < Q: max ko: e[ki := l]`, combined afterwards")
            .with_help(help.to_string())
    };
    let outer_path = path.split_last().map(|(_, p)| p.to_vec());
    let outer = outer_path
        .as_ref()
        .and_then(|p| applier.node(p))
        .map(|n| n.kind.clone());
    let (Some(outer_path), Some(ExprKind::MaxRed { .. })) = (outer_path, outer) else {
        return Err(refuse(
            format!("the max-reduction `{inner}` is not directly inside another max-reduction"),
            "split the max-reduction first (`split k by 8 into ko, ki`) and rfactor its inner loop",
        ));
    };
    let Some(ExprKind::MaxRed { lo, .. }) = applier.node(&path).map(|n| &n.kind) else {
        unreachable!("find_max_loop found a max-reduction")
    };
    if !poly::same(lo, &IndexExpr::Const(0)) {
        return Err(refuse(
            format!("the max-reduction `{inner}` starts at {lo}, not 0"),
            "rfactor the inner loop of a split, which runs from 0",
        ));
    }
    // max ko: max ki: e  =>  max ki: max ko: e  (the same maximum: `real`)
    applier.apply(rw("max_swap", false, outer_path.clone(), vec![], span))?;
    // max ki < Q: E  =>  let part = gen l < Q: E[ki := l] in max ki < Q: part[ki]
    applier.apply(rw(
        "max_stage",
        false,
        outer_path,
        vec![("l", name_index(l, span)), ("y", name_index(stage, span))],
        span,
    ))
}

/// The loop a `split` or `rfactor` names: a `gen` or `sum` (its path, and whether it is
/// a `gen`), or a max-reduction (its path).
pub(super) enum Named {
    Loop(Vec<usize>, bool),
    Max(Vec<usize>),
}

/// The loop `var` names for `split` and `rfactor`, which also schedule max-reductions:
/// the other directives' loops ([`find_loop`]) and the max-reductions, by their
/// variable or the name the user wrote, as `stage.var` or plain `var`. A name that
/// fits a max-reduction and another loop (softmax's `max k` and `sum k`) is ambiguous
/// (E0832), so that neither is split silently in place of the other.
pub(super) fn find_loop_or_max(
    program: &Program,
    expr: &Expr,
    var: &str,
    span: Span,
) -> Result<Named, Diagnostic> {
    let maxima = max_loops(program, expr, var);
    let found = find_loop(Some(program), expr, var, span);
    match (found, maxima.as_slice()) {
        (Ok((path, is_gen)), []) => Ok(Named::Loop(path, is_gen)),
        (Err(e), []) => Err(e),
        (Err(e), [(path, _)]) if e.code == "E0821" => Ok(Named::Max(path.clone())),
        (Err(e), _) if e.code != "E0821" => Err(e),
        (found, several) => {
            let mut spellings: Vec<String> = several
                .iter()
                .map(|(_, stage)| match stage {
                    Some(stage) => {
                        format!("`{stage}.{var}` (the max-reduction of stage `{stage}`)")
                    }
                    None => format!("the max-reduction `{var}` of the definition"),
                })
                .collect();
            if found.is_ok() {
                let other = crate::loops::loops(expr)
                    .into_iter()
                    .find(|l| l.var == var || program.written_name(&l.var) == var)
                    .and_then(|l| l.stage);
                spellings.push(match other {
                    Some(stage) => format!("`{stage}.{var}` (the loop of stage `{stage}`)"),
                    None => format!("the loop `{var}` of the definition"),
                });
            }
            Err(
                Diagnostic::error("E0832", format!("`{var}` names {} loops", spellings.len()))
                    .at(span, "ambiguous loop")
                    .with_note(format!("it may mean: {}", spellings.join(", ")))
                    .with_help("name one loop as `stage.var`, with the `let` that computes it"),
            )
        }
    }
}

/// The max-reductions `var` names (`stage.name` or `name`, the variable or the name the
/// user wrote), with their paths and stages (the innermost `let` whose value contains
/// them). The exact variable wins over a written name.
fn max_loops(program: &Program, expr: &Expr, var: &str) -> Vec<(Vec<usize>, Option<String>)> {
    fn go(
        e: &Expr,
        stage: Option<&str>,
        path: &mut Vec<usize>,
        out: &mut Vec<(Vec<usize>, String, Option<String>)>,
    ) {
        if let ExprKind::MaxRed { var, .. } = &e.kind {
            out.push((path.clone(), var.clone(), stage.map(str::to_string)));
        }
        for (k, c) in e.children().into_iter().enumerate() {
            let inner = match &e.kind {
                ExprKind::Let { var, .. } if k == 0 => Some(var.as_str()),
                _ => stage,
            };
            path.push(k);
            go(c, inner, path, out);
            path.pop();
        }
    }
    let (stage, name) = match var.split_once('.') {
        Some((stage, name)) => (Some(stage), name),
        None => (None, var),
    };
    let mut all = Vec::new();
    go(expr, None, &mut Vec::new(), &mut all);
    all.retain(|(_, _, s)| stage.is_none_or(|want| s.as_deref() == Some(want)));
    let pick = |exact: bool| -> Vec<(Vec<usize>, Option<String>)> {
        all.iter()
            .filter(|(_, v, _)| {
                if exact {
                    v == name
                } else {
                    program.written_name(v) == name
                }
            })
            .map(|(p, _, s)| (p.clone(), s.clone()))
            .collect()
    };
    let exact = pick(true);
    if exact.is_empty() { pick(false) } else { exact }
}

/// `grade exact`: declares that the derivation reassociates nothing (its result is
/// its specification's bit for bit in the interpreter, wherever the values are finite). Recorded as a `check` step; the driver
/// enforces it with [`check_declared_exact`].
pub(super) fn grade_directive(
    applier: &mut Applier<'_, '_>,
    call: &Call<'_>,
) -> Result<(), Diagnostic> {
    let ["exact"] = call.text.as_slice() else {
        return Err(call.usage());
    };
    applier.apply(Step {
        kind: StepKind::Check,
        span: call.span,
    })
}

/// The `grade exact` declaration among a derivation's steps, if any.
pub fn declared_exact(steps: &[ast::Step]) -> Option<Span> {
    steps.iter().find_map(|s| match &s.kind {
        StepKind::Directive { name, args }
            if name.name == "grade"
                && matches!(args.as_slice(), [ast::DirectiveArg::Word(w)] if w.name == "exact") =>
        {
            Some(s.span)
        }
        _ => None,
    })
}

/// In a derivation declared `grade exact` (at `declaration`), refuses the step `step`
/// whose expansion `outcomes` (starting from `before`) contains a step graded `real`:
/// the message names what the user wrote and the reduction that would be reassociated.
pub fn check_declared_exact(
    program: &Program,
    before: &Expr,
    step: &ast::Step,
    outcomes: &[StepOutcome],
    declaration: Span,
) -> Result<(), Diagnostic> {
    let mut expr = before;
    for o in outcomes {
        if o.record.grade == Grade::Real {
            let written = o.record.origin.clone().unwrap_or(o.record.command.clone());
            let case_split = o
                .record
                .rule
                .as_deref()
                .is_some_and(|r| super::specialize::CASE_SPLIT_RULES.contains(&r));
            let (what, label, why) = match node_at(expr, &o.record.path).map(|n| &n.kind) {
                _ if case_split => (
                    "add the two versions' parts".to_string(),
                    "adds a zero",
                    "writes the program as the sum of its two versions, each zero where its condition fails (in the interpreter, a -0.0 plus that zero is +0.0; the kernel computes one version and adds nothing)",
                ),
                Some(ExprKind::MaxRed { var, .. }) => (
                    format!(
                        "reorder the values of the max-reduction `{}`",
                        program.written_name(var)
                    ),
                    "reorders",
                    "takes the values in another order (the same maximum, but of two equal values, +0 and -0, another may be kept)",
                ),
                Some(ExprKind::Sum { var, .. }) => (
                    format!(
                        "reassociate the additions of the reduction `{}`",
                        program.written_name(var)
                    ),
                    "reassociates",
                    "regroups the terms (equal over the reals, but the floating-point rounding may differ)",
                ),
                _ => (
                    "reassociate additions or products".to_string(),
                    "reassociates",
                    "regroups the terms (equal over the reals, but the floating-point rounding may differ)",
                ),
            };
            return Err(Diagnostic::error(
                "E0855",
                format!("`{written}` would {what}, in a derivation declared `grade exact`"),
            )
            .at(step.span, label)
            .with_secondary(declaration, "declared here")
            .with_note(format!(
                "its step `{}` {why}: an exact derivation gives its specification's results, {}",
                o.record.command,
                atl_lang::steps::GRADE_EXACT_MEANING
            ))
            .with_help(if case_split {
                "drop `grade exact` to accept a result equal over the reals (graded `real`), or do without `specialize`"
            } else {
                "drop `grade exact` to accept a result equal over the reals (graded `real`), or schedule the reduction without splitting, exchanging or partially summing it"
            }));
        }
        expr = &o.expr;
    }
    Ok(())
}

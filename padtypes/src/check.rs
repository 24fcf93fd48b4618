//! Discharging obligations with the solver and turning failures into diagnostics.
//!
//! Every obligation is a quantifier-free query `sizes >= 1, assumes, context => goal`.
//! "Unknown" is a failure like a refutation (never acceptance), reported with its own
//! code so that users can tell "wrong" from "could not prove".

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};

use atl_lang::diag::Diagnostic;
use atl_lang::index::{CmpOp, IndexExpr, Pred};
use atl_lang::ir::{AmountOp, Expr, ExprKind, Program};
use atl_lang::poly::normalize;
use atl_lang::pretty::{Style, expr_to_string};
use atl_lang::reshape;
use atl_lang::span::Span;
use atl_solver::{Counterexample, Facts, Solver, Verdict};

use crate::infer::{Kind, Obligation};
use crate::pred::{binder_base, coord, coord_dim};

/// The longest subterm printed in a diagnostic; longer ones are abbreviated.
const MAX_SHOWN: usize = 160;

/// Counters for one check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckStats {
    pub definitions: usize,
    /// Truncations whose dropped positions were checked.
    pub truncations: usize,
    pub accesses: usize,
    /// Reshape amounts that needed a proof (not visibly valid).
    pub amounts: usize,
    /// Obligations that failed (refuted or unknown).
    pub failed: usize,
}

pub(crate) fn facts_for(program: &Program, shapes_sizes: &[String], ob: &Obligation<'_>) -> Facts {
    let mut facts: Vec<Pred> = program.assumes.iter().map(|a| a.pred.clone()).collect();
    facts.extend(ob.facts.iter().cloned());
    Facts {
        sizes: shapes_sizes.to_vec(),
        facts,
        arrays: atl_solver::IndexArrayFacts::of_program(program),
    }
}

/// Below this many distinct queries, threads cost more than they save.
const PARALLEL_THRESHOLD: usize = 8;

/// Decides every obligation and returns the diagnostics of the failing ones, in the
/// order of `obligations`. Identical queries are asked once; distinct ones are spread
/// over the available cores (verdicts are deterministic, so the result does not
/// depend on the scheduling).
pub(crate) fn discharge_all(
    program: &Program,
    sizes: &[String],
    solver: &Solver,
    obligations: &[Obligation<'_>],
    stats: &mut CheckStats,
) -> Vec<Diagnostic> {
    let queries: Vec<(Facts, &Pred)> = obligations
        .iter()
        .map(|ob| (facts_for(program, sizes, ob), &ob.goal))
        .collect();
    let mut first: HashMap<(&Facts, &Pred), usize> = HashMap::new();
    let mut unique: Vec<usize> = Vec::new();
    let slot: Vec<usize> = queries
        .iter()
        .enumerate()
        .map(|(i, (f, g))| {
            *first.entry((f, *g)).or_insert_with(|| {
                unique.push(i);
                unique.len() - 1
            })
        })
        .collect();
    let verdicts = decide(solver, &queries, &unique);
    let mut out = Vec::new();
    for (i, ob) in obligations.iter().enumerate() {
        match ob.kind {
            Kind::Trunc { .. } => stats.truncations += 1,
            Kind::Access { .. } => stats.accesses += 1,
            Kind::Amount { .. } => stats.amounts += 1,
        }
        let verdict = &verdicts[slot[i]];
        if !verdict.is_proved() {
            stats.failed += 1;
            out.push(diagnose(program, ob, &queries[i].0, verdict));
        }
    }
    out
}

/// The verdicts of `queries[unique[k]]` for every `k`.
fn decide(solver: &Solver, queries: &[(Facts, &Pred)], unique: &[usize]) -> Vec<Verdict> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if threads <= 1 || unique.len() < PARALLEL_THRESHOLD {
        return unique
            .iter()
            .map(|&i| solver.prove(&queries[i].0, queries[i].1))
            .collect();
    }
    let next = AtomicUsize::new(0);
    let mut results: Vec<(usize, Verdict)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&i) = unique.get(k) else { break };
                        mine.push((k, solver.prove(&queries[i].0, queries[i].1)));
                    }
                    mine
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| {
                // A panic in the solver is a bug there; surface it rather than hide it.
                w.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
            })
            .collect()
    });
    results.sort_by_key(|(k, _)| *k);
    results.into_iter().map(|(_, v)| v).collect()
}

/// Prints a subterm on one line, abbreviated in the middle when long.
pub(crate) fn show_expr(e: &Expr) -> String {
    let s = expr_to_string(e, Style::default());
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= MAX_SHOWN {
        return s;
    }
    let head: String = chars[..MAX_SHOWN * 2 / 3].iter().collect();
    let tail: String = chars[chars.len() - MAX_SHOWN / 3..].iter().collect();
    format!("{head} … {tail}")
}

/// The counterexample's program variables (sizes and binders), in a stable order:
/// coordinates and quantified variables are reported separately.
fn show_valuation(cex: &Counterexample, ob: &Obligation<'_>) -> String {
    // Only the variables the obligation is about: z3 also values unrelated sizes.
    let mut relevant = ob.goal.vars();
    for f in &ob.facts {
        f.collect_vars(&mut relevant);
    }
    let vars: Vec<String> = cex
        .values
        .iter()
        .filter(|(k, _)| relevant.contains(*k))
        .filter(|(k, _)| coord_dim(k).is_none() && !k.contains('\''))
        .map(|(k, v)| format!("{k} = {v}"))
        .collect();
    if vars.is_empty() {
        "(no variables)".to_string()
    } else {
        vars.join(", ")
    }
}

/// `[3, 0]` from the coordinate values of a counterexample (`_` for a coordinate the
/// query did not constrain).
fn show_position(cex: &Counterexample, rank: usize) -> String {
    let parts: Vec<String> = (0..rank)
        .map(|d| {
            cex.get(&coord(d))
                .map_or_else(|| "_".to_string(), |v| v.to_string())
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

/// The iterations of sums a counterexample names (`k = 2`): where the position is not
/// padding.
fn show_iterations(cex: &Counterexample) -> Vec<String> {
    let mut seen: BTreeMap<String, i64> = BTreeMap::new();
    for (k, v) in &cex.values {
        if k.contains('\'') {
            seen.entry(binder_base(k).to_string()).or_insert(*v);
        }
    }
    seen.into_iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect()
}

/// Where a diagnostic points: the subterm if it has a source position, else the
/// definition (derived programs are built by rewrites, without positions).
fn locate(program: &Program, ob: &Obligation<'_>) -> (Span, bool) {
    if !ob.expr.span.is_dummy() {
        return (ob.expr.span, true);
    }
    let span = program
        .def(&ob.def)
        .map(|d| {
            if d.name_span.is_dummy() {
                d.span
            } else {
                d.name_span
            }
        })
        .unwrap_or_default();
    (span, false)
}

/// The base of an access chain and the dimension this access indexes: for
/// `img[y][x]` the outer access is dimension 1 of `img`.
fn access_base(e: &Expr) -> (String, usize) {
    let mut dim: usize = 0;
    let mut cur = e;
    while let ExprKind::Access { tensor, .. } = &cur.kind {
        cur = tensor;
        dim += 1;
    }
    // `dim` counted this access too.
    let dim = dim.saturating_sub(1);
    let name = match &cur.kind {
        ExprKind::Input(n) | ExprKind::DefRef(n) | ExprKind::Var(n) => format!("`{n}`"),
        _ => "the tensor".to_string(),
    };
    (name, dim)
}

fn diagnose(
    program: &Program,
    ob: &Obligation<'_>,
    facts: &Facts,
    verdict: &Verdict,
) -> Diagnostic {
    let (span, positioned) = locate(program, ob);
    let derived = program.derive(&ob.def).is_some();
    let shown = show_expr(ob.expr);
    let valuation = verdict
        .counterexample()
        .map(|cex| show_valuation(cex, ob))
        .unwrap_or_default();
    let (mut d, label) = match &ob.kind {
        Kind::Trunc {
            op,
            amount,
            extent,
            rank,
        } => {
            let (mut d, label) = trunc_diag(*op, amount, extent, *rank, verdict, &valuation);
            if let Some(hint) = computing_operator(ob.expr) {
                d = d.with_note(hint);
            }
            (d, label)
        }
        Kind::Access { index, extent } => access_diag(ob.expr, index, extent, verdict, &valuation),
        Kind::Amount { op, amount, extent } => {
            amount_diag(*op, amount, extent, verdict, &valuation)
        }
    };
    d = if positioned {
        d.at(span, label)
    } else {
        d.at(span, format!("in `{}`: {label}", ob.def))
            .with_note(format!("the subterm (definition `{}`): {shown}", ob.def))
    };
    if derived
        && positioned
        && let Some(dv) = program.derive(&ob.def)
    {
        d = d.with_secondary(dv.name_span, format!("in derivation `{}`", ob.def));
    }
    if let Verdict::Unknown(reason) = verdict {
        let ctx: Vec<String> = facts.facts.iter().map(|p| p.to_string()).collect();
        d = d
            .with_note(format!("the solver could not decide it: {reason}"))
            .with_note(format!(
                "goal: {}; context: {}",
                ob.goal,
                if ctx.is_empty() {
                    "(none)".to_string()
                } else {
                    ctx.join(", ")
                }
            ));
    }
    d
}

/// A note when the truncated argument is an operator that writes every position (so
/// padding inside it does not survive): the usual surprise.
fn computing_operator(trunc: &Expr) -> Option<String> {
    let ExprKind::Amount { arg, .. } = &trunc.kind else {
        return None;
    };
    let op = match &arg.kind {
        ExprKind::Neg(_) => "negation `-e`",
        ExprKind::Binary {
            op: atl_lang::ir::BinOp::Sub,
            ..
        } => "subtraction `a - b`",
        _ => return None,
    };
    Some(format!(
        "the argument is a {op}, which computes (and stores) a value at every position, so the padding inside it is not padding of the result; apply the operator inside the truncation instead"
    ))
}

fn trunc_diag(
    op: AmountOp,
    amount: &IndexExpr,
    extent: &IndexExpr,
    rank: usize,
    verdict: &Verdict,
    valuation: &str,
) -> (Diagnostic, String) {
    let side = if op == AmountOp::TruncL {
        "first"
    } else {
        "last"
    };
    let pad = if op == AmountOp::TruncL {
        "pad_l"
    } else {
        "pad_r"
    };
    let guard = if op == AmountOp::TruncL {
        format!("[{amount} <= i] * …")
    } else {
        format!(
            "[i < {}] * …",
            normalize(&IndexExpr::sub(extent.clone(), amount.clone()))
        )
    };
    let help = format!(
        "truncate only what an adjoint pair put there: write `{op}({amount}, {pad}({amount}, e))`, \
         or make the dropped positions padding with a guard in the argument, e.g. \
         `gen i < {extent}: {guard}`",
        op = op.name()
    );
    let why = "a truncation may only drop padding (thesis §5.5): positions that a `pad`, a \
               false guard or an empty `sum` leave unwritten; dropping a computed element \
               makes the lowered code write outside the smaller buffer";
    match verdict {
        Verdict::Refuted(cex) => {
            let pos = show_position(cex, rank);
            let label = format!(
                "drops the {side} {amount} of {extent} elements; position {pos} of its argument is computed"
            );
            let mut d = Diagnostic::error(
                "E0901",
                format!("`{}` drops a position that is not padding", op.name()),
            )
            .with_note(format!(
                "counterexample: {}; dropped position {pos}",
                valuation
            ));
            let its = show_iterations(cex);
            if !its.is_empty() {
                d = d.with_note(format!(
                    "a sum keeps a position as padding only if every iteration leaves it unwritten; it is written in the iteration {}",
                    its.join(", ")
                ));
            }
            (d.with_note(why).with_help(help), label)
        }
        _ => (
            Diagnostic::error(
                "E0902",
                format!("cannot prove that `{}` drops only padding", op.name()),
            )
            .with_note(why)
            .with_help(help),
            format!("drops the {side} {amount} of {extent} elements, not provably padding"),
        ),
    }
}

fn access_diag(
    e: &Expr,
    index: &IndexExpr,
    extent: &IndexExpr,
    verdict: &Verdict,
    valuation: &str,
) -> (Diagnostic, String) {
    let (base, dim) = access_base(e);
    let why = "ATL reads an out-of-range element as 0, but the lowered code would read outside \
               the buffer (thesis §4.3.1), so lowering requires every access to be in bounds";
    match verdict {
        Verdict::Refuted(cex) => {
            let env = |name: &str| cex.get(name);
            let value = index.eval(&env).ok();
            let below = value.is_some_and(|v| v < 0);
            let shown_value = value.map_or_else(|| "out of range".to_string(), |v| v.to_string());
            let extent_value = extent
                .eval(&env)
                .map_or_else(|_| String::new(), |v| format!(" = {v}"));
            let guard = if below {
                Pred::cmp(CmpOp::Le, IndexExpr::Const(0), index.clone())
            } else {
                Pred::cmp(CmpOp::Lt, index.clone(), extent.clone())
            };
            let fix = if below { "pad_l" } else { "pad_r" };
            let label = format!("`{index}` = {shown_value} here, outside 0..{extent}{extent_value}");
            let d = Diagnostic::error(
                "E0903",
                format!(
                    "index `{index}` of dimension {dim} of {base} can be {}",
                    if below { "negative" } else { "past the end" }
                ),
            )
            .with_note(format!("counterexample: {}", valuation))
            .with_note(why)
            .with_help(format!(
                "guard the access (`[{guard}] * …`), or read from a tensor padded with `{fix}` so the index stays in range"
            ));
            (d, label)
        }
        _ => (
            Diagnostic::error(
                "E0904",
                format!("cannot prove that index `{index}` of dimension {dim} of {base} is in bounds"),
            )
            .with_note(why)
            .with_help(format!(
                "guard the access with `[0 <= {index} && {index} < {extent}] * …`, or add an `assume` that makes the bound provable"
            )),
            format!("`{index}` must be in 0..{extent}"),
        ),
    }
}

fn amount_diag(
    op: AmountOp,
    amount: &IndexExpr,
    extent: &IndexExpr,
    verdict: &Verdict,
    valuation: &str,
) -> (Diagnostic, String) {
    // The requirement in words, from the reshape table.
    let min = reshape::min_amount(op);
    let need = if reshape::amount_at_most_extent(op) {
        format!("in {min}..={extent}")
    } else if min == 0 {
        "non-negative".to_string()
    } else {
        format!("at least {min}")
    };
    match verdict {
        Verdict::Refuted(cex) => {
            let env = |name: &str| cex.get(name);
            let value = amount
                .eval(&env)
                .map_or_else(|_| "invalid".to_string(), |v| v.to_string());
            let d = Diagnostic::error(
                "E0905",
                format!("the amount `{amount}` of `{}` must be {need}", op.name()),
            )
            .with_note(format!("counterexample: {}", valuation))
            .with_help(
                "add an `assume` about the sizes that keeps the amount valid, or change the amount",
            );
            (d, format!("the amount is {value} here"))
        }
        _ => (
            Diagnostic::error(
                "E0906",
                format!(
                    "cannot prove that the amount `{amount}` of `{}` is {need}",
                    op.name()
                ),
            )
            .with_help("add an `assume` about the sizes that makes it provable"),
            format!("must be {need}"),
        ),
    }
}

//! `store_root x` and `store_at x at yo`: Halide's storage placement apart from the
//! computation, whose point is the sliding window. A stage computed inside a loop
//! (`compute_at x at y`) gets a fresh buffer at every iteration of `y`, filled with the
//! window of rows that iteration reads; when consecutive windows overlap, the rows they
//! share are computed again. Stored at the root (or once per iteration of `yo`, the loop
//! around `y`), the buffer outlives the iterations of `y`, and each computes only the
//! rows the earlier ones did not.
//!
//! That is a memory transformation, not a value one: the program is unchanged (one
//! `check` step carrying the request, like `vector_width`), lowering applies it to the
//! kernel (`lower/src/sliding.rs`) and the translation validator proves the result
//! (each row read is the one an earlier iteration wrote). What is checked here is what
//! the program alone can say: the stage exists, is computed inside exactly one loop
//! below the storage level (the loop it slides along), and `yo` is the loop around it.

use atl_lang::ast::{Step, StepKind};
use atl_lang::diag::Diagnostic;
use atl_lang::ir::{Expr, ExprKind, StorageHint, StorageRequest};

use super::{Applier, Call, find_loop, let_path};
use crate::context::node_at;

pub(super) fn storage_directive(
    applier: &mut Applier<'_, '_>,
    call: &Call<'_>,
) -> Result<(), Diagnostic> {
    let (stage, at) = match (call.name.name.as_str(), call.text.as_slice()) {
        ("store_root", [x]) => (*x, None),
        ("store_at", [x, "at", l]) => (*x, Some(*l)),
        ("fold_storage", [x, "by", f]) => return fold_storage(applier, call, x, f),
        _ => return Err(call.usage()),
    };
    let let_p = let_path(&applier.expr, stage, call.span)?;
    // The loops around the stage, outermost first, by path.
    let around: Vec<Vec<usize>> = (0..let_p.len())
        .map(|k| let_p[..k].to_vec())
        .filter(|p| is_loop(node_at(&applier.expr, p)))
        .collect();
    let below: Vec<&Vec<usize>> = match at {
        None => around.iter().collect(),
        Some(l) => {
            let (loop_p, _) = find_loop(Some(applier.env.program), &applier.expr, l, call.span)?;
            if !let_p.starts_with(&loop_p) {
                return Err(misplaced(
                    call,
                    format!("loop `{l}` does not enclose stage `{stage}`"),
                    format!(
                        "compute `{stage}` inside `{l}` first (`compute_at {stage} at …` at a loop inside `{l}`)"
                    ),
                ));
            }
            around.iter().filter(|p| p.len() > loop_p.len()).collect()
        }
    };
    let level = match at {
        None => "the root".to_string(),
        Some(l) => format!("loop `{l}`"),
    };
    match below.as_slice() {
        [_] => {}
        [] => {
            return Err(misplaced(
                call,
                format!("stage `{stage}` is not computed inside a loop below {level}"),
                format!(
                    "the buffer is already stored where it is computed: compute it inside a loop first (`compute_at {stage} at …`), then store it around that loop"
                ),
            ));
        }
        several => {
            let names: Vec<String> = several
                .iter()
                .filter_map(|p| loop_var(node_at(&applier.expr, p)))
                .map(|v| format!("`{v}`"))
                .collect();
            let inner = names.last().cloned().unwrap_or_default();
            let outer = names
                .get(names.len().saturating_sub(2))
                .cloned()
                .unwrap_or_default();
            return Err(misplaced(
                call,
                format!(
                    "stage `{stage}` is computed {} loops below {level} ({})",
                    several.len(),
                    names.join(", ")
                ),
                format!(
                    "the window slides along one loop: store the stage at the loop around the one that computes it (`store_at {stage} at {}`, sliding along {inner})",
                    outer.trim_matches('`')
                ),
            ));
        }
    }
    let request = match at {
        None => StorageRequest::Root,
        Some(l) => StorageRequest::At(l.to_string()),
    };
    record(applier, call, stage, request)
}

/// The directive's one step: a `check` carrying the request for lowering.
fn record(
    applier: &mut Applier<'_, '_>,
    call: &Call<'_>,
    stage: &str,
    request: StorageRequest,
) -> Result<(), Diagnostic> {
    applier.apply(Step {
        kind: StepKind::Check,
        span: call.span,
    })?;
    if let Some(last) = applier.outcomes.last_mut() {
        last.record.storage = Some(StorageHint {
            stage: stage.to_string(),
            request,
            span: call.span,
        });
    }
    Ok(())
}

/// `fold_storage x by F`: a `check` step carrying the fold; lowering applies it to the
/// buffer a `store_root`/`store_at` of the stage placed (E0914 without one).
fn fold_storage(
    applier: &mut Applier<'_, '_>,
    call: &Call<'_>,
    stage: &str,
    rows: &str,
) -> Result<(), Diagnostic> {
    let rows = call.int(rows)?;
    if rows < 1 {
        return Err(call.usage());
    }
    let_path(&applier.expr, stage, call.span)?;
    record(applier, call, stage, StorageRequest::Fold(rows))
}

fn is_loop(e: Option<&Expr>) -> bool {
    matches!(
        e.map(|e| &e.kind),
        Some(ExprKind::Gen { .. } | ExprKind::Sum { .. })
    )
}

fn loop_var(e: Option<&Expr>) -> Option<&str> {
    match &e?.kind {
        ExprKind::Gen { var, .. } | ExprKind::Sum { var, .. } => Some(var),
        _ => None,
    }
}

/// E0858: a `store_root`/`store_at` that does not describe a sliding window.
fn misplaced(call: &Call<'_>, message: String, help: String) -> Diagnostic {
    Diagnostic::error("E0858", message)
        .at(call.span, "no window to slide")
        .with_help(help)
}

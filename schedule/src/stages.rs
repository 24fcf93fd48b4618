//! Stages before the search: a specification with `let` stages is searched as the one
//! nest its stages inline into (`compute_inline` of each, Halide's default of a stage
//! with no schedule), when inlining leaves one. That is the fused schedule of a stencil
//! pipeline (the blur's two stages read as nine taps of the input), whose tiles then run
//! without a buffer; stages whose inlining leaves a loop in the body (a reduction such as
//! a softmax's row sum, recomputed per element) are refused with the reason, as before.
//!
//! The `compute_inline` steps become the prefix of every candidate's directives
//! ([`Nest::prefix`]): the search never changes the specification itself.

use std::collections::BTreeMap;

use atl_lang::ir::{Expr, ExprKind, Program};
use atl_rewrites::{Env, Library, run_derivations};

use crate::nest::{Nest, analyze};
use crate::search::without_derivations;

/// The `let` stages of `def`'s body, outermost first.
pub fn stage_names(program: &Program, def: &str) -> Vec<String> {
    let mut names = Vec::new();
    if let Some(d) = program.def(def) {
        d.body.walk(&mut |e: &Expr| {
            if let ExprKind::Let { var, .. } = &e.kind
                && !names.contains(var)
            {
                names.push(var.clone());
            }
        });
    }
    names
}

/// The nest of `def` at `sizes`: its own, or, if it has stages, the one `compute_inline`
/// of every stage leaves (with those steps as its prefix). The error is why neither is
/// a nest the search handles.
pub fn nest_of(
    source: &str,
    program: &Program,
    def: &str,
    sizes: &BTreeMap<String, i64>,
) -> Result<Nest, String> {
    let why = match analyze(program, def, sizes) {
        Ok(nest) => return Ok(nest),
        Err(why) => why,
    };
    let stages = stage_names(program, def);
    if stages.is_empty() {
        return Err(why);
    }
    let prefix: Vec<String> = stages
        .iter()
        .map(|s| format!("compute_inline {s}"))
        .collect();
    let inlined = inline(source, def, &prefix).map_err(|e| {
        format!("{why}; its stages could not be inlined into one nest either ({e})")
    })?;
    let mut nest = analyze(&inlined.0, &inlined.1, sizes).map_err(|e| {
        format!(
            "{why}; with its stages inlined ({}) it is not one nest either: {e}",
            prefix.join(", ")
        )
    })?;
    nest.def = def.to_string();
    nest.prefix = prefix;
    Ok(nest)
}

/// The program with `derive NAME from def { steps }` replayed, and `NAME`.
fn inline(source: &str, def: &str, steps: &[String]) -> Result<(Program, String), String> {
    let mut name = format!("{def}_inlined");
    while source.contains(&name) {
        name.push('_');
    }
    let text = format!(
        "{}\nderive {name} from {def} {{\n  {}\n}}\n",
        without_derivations(source),
        steps.join("\n  ")
    );
    let (checked, diags) = atl_lang::check_source(&text);
    let checked = checked.ok_or_else(|| first(&diags))?;
    let (library, diags) = Library::standard();
    if let Some((_, d)) = diags.first() {
        return Err(first(std::slice::from_ref(d)));
    }
    let solver = atl_solver::Solver::new();
    let env = Env {
        program: &checked.program,
        shapes: &checked.shapes,
        library: &library,
        solver: &solver,
    };
    let (derivations, diags) = run_derivations(&env);
    if !diags.is_empty() {
        return Err(first(&diags));
    }
    let (program, _) = atl_rewrites::with_derived(&checked.program, &checked.shapes, &derivations);
    Ok((program, name))
}

fn first(diags: &[atl_lang::diag::Diagnostic]) -> String {
    diags.first().map_or_else(
        || "refused".to_string(),
        |d| format!("{} {}", d.code, d.message),
    )
}

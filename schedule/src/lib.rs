//! `atl-schedule`: the autoscheduler behind `atl schedule`. Given a specification and
//! the sizes it will run at, it finds a fast schedule on the machine at hand and writes
//! it as an ordinary `derive` block of directives, which `atl check` replays and `atl
//! verify` checks: the search itself is never trusted, and never needed to rebuild the
//! kernel.
//!
//! - [`nest`]: the specification's loop nest (gens around sums around a scalar body);
//!   [`stages`]: the nest a specification's stages inline into.
//! - [`machine`]: vector width, vector registers, caches and cores, detected at run time.
//! - [`candidate`]: a point of the space (register tile, copies, loop order, parallel)
//!   and the directives that write it.
//! - [`space`]: the loop orders of a candidate as an e-graph (egg), extracted by
//!   [`cost`], the machine cost model; [`variants`]: every candidate, ranked.
//! - [`search`]: derive, check, validate, compile (in parallel), check against the
//!   interpreter and time the candidates in the model's order within a time budget.
//!
//! It prints nothing; progress goes to the observer's monitor.

pub mod candidate;
pub mod cost;
pub mod machine;
pub mod nest;
pub mod search;
pub mod space;
pub mod stages;
pub mod variants;

use std::path::Path;

use atl_driver::{Failure, Observer};
use atl_lang::diag::Diagnostic;

pub use search::{Options, Outcome, Tried, Verdict};

/// Loads `file` (checked, its derivations replayed), picks the specification and
/// searches its schedules.
pub fn schedule(
    observer: &mut dyn Observer,
    file: &Path,
    options: &Options,
) -> Result<Outcome, Failure> {
    let loaded = atl_driver::load::load_derived(observer, file)?;
    let def = atl_driver::load::pick_loaded_def(&loaded, file, options.def.as_deref())?;
    if let Err(d) = atl_lang::interp::check_sizes(&loaded.program, &options.sizes) {
        return Err(Failure::diagnostics(vec![d], file, &loaded.source));
    }
    let written = loaded
        .program
        .defs
        .iter()
        .find(|d| d.name == def)
        .map(|d| d.name_span);
    let machine = machine::Machine::detect();
    let lanes = machine.lanes(search::element_bytes(options.dtype)) as i64;
    let plan = stages::plan(
        &loaded.source,
        &loaded.program,
        &def,
        &options.sizes,
        lanes,
        options.threads.max(1),
    )
    .map_err(|why| {
        // A definition that reads a sparse tensor, or its arrays: the search's space
        // is dense loop nests (tiles, orders, vectors), not iteration over stored
        // positions, which a derivation reaches by rewrites.
        let reads_def = |name: &str| {
            let mut reads = false;
            if let Some(d) = loaded.program.def(&def) {
                d.body.walk(&mut |e| {
                    reads |= matches!(&e.kind, atl_lang::ir::ExprKind::DefRef(n) if n == name)
                });
            }
            reads
        };
        let loaded_arrays = loaded
            .program
            .def(&def)
            .map(|d| d.body.loaded_arrays())
            .unwrap_or_default();
        let kind = |s: &atl_lang::ir::SparseDecl| {
            if s.shape.len() == 2 { "matrix" } else { "tensor" }
        };
        let help = if let Some(s) = loaded.program.sparse.iter().find(|s| reads_def(&s.name)) {
            format!(
                "`{def}` reads the sparse {} `{}` as a dense one: derive it over the stored values with rewrites first (`unfold {}`, then the steps of examples/spmv), then schedule it by hand with directives (docs/directives.md)",
                kind(s),
                s.name,
                s.name
            )
        } else if let Some(s) = loaded
            .program
            .sparse
            .iter()
            .find(|s| s.arrays.iter().any(|a| loaded_arrays.contains(a)))
        {
            format!(
                "`{def}` iterates over the stored values of the sparse {} `{}`, and the search schedules dense loop nests: schedule it by hand with directives (docs/directives.md)",
                kind(s),
                s.name
            )
        } else {
            "schedule it by hand with directives (docs/directives.md), or schedule a one-stage definition".to_string()
        };
        let mut d = Diagnostic::error(
            "E0960",
            format!("`atl schedule` cannot search schedules of `{def}`: {why}"),
        )
        .with_help(help);
        if let Some(span) = written {
            d = d.at(span, "this definition");
        }
        Failure::diagnostics(vec![d], file, &loaded.source)
    })?;
    match plan {
        stages::Plan::One(nest) => search::search(
            observer,
            &loaded.source,
            &loaded.program,
            &nest,
            machine,
            options,
        ),
        stages::Plan::Stages { stages, preamble } => search::search_stages(
            observer,
            &loaded.source,
            &loaded.program,
            &stages,
            &preamble,
            machine,
            options,
        ),
    }
}

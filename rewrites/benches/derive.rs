//! Benchmark: the median time of one rewrite step, and the whole tiled-blur derivation
//! (targets: median step under 5 ms, tiled blur under 1 s in release mode). Each run
//! uses a fresh solver, so the solver's cache does not carry over between runs.
//! Run with `cargo bench -p atl-rewrites --bench derive`.

// A benchmark reports on stdout.
#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use atl_rewrites::engine::run_step;
use atl_rewrites::{Env, Library};
use atl_solver::Solver;

fn main() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/blur/blur.atl");
    let source = std::fs::read_to_string(path).expect("blur example");
    let (checked, diags) = atl_lang::check_source(&source);
    let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
    let (lib, _) = Library::standard();
    let mut step_times: Vec<Duration> = Vec::new();
    let mut totals = Vec::new();
    for _ in 0..5 {
        let solver = Solver::new();
        let env = Env {
            program: &checked.program,
            shapes: &checked.shapes,
            library: &lib,
            solver: &solver,
        };
        let start = Instant::now();
        // Replay fused, then tiled (which derives from fused), timing each step.
        let mut derived = std::collections::BTreeMap::new();
        for name in ["fused", "tiled"] {
            let d = checked.program.derive(name).expect("derivation exists");
            let mut expr = derived
                .get(&d.from)
                .cloned()
                .unwrap_or_else(|| checked.program.def(&d.from).expect("base").body.clone());
            let shape = atl_lang::shapes::infer(&checked.shapes, &expr).expect("shape");
            for step in &d.steps {
                let t = Instant::now();
                let out = run_step(&env, &expr, step, &shape, &derived).expect("step applies");
                step_times.push(t.elapsed());
                expr = out.expr;
            }
            derived.insert(d.name.clone(), expr);
        }
        totals.push(start.elapsed());
    }
    step_times.sort();
    totals.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "rewrite steps: median {:.3} ms, max {:.3} ms over {} steps",
        ms(step_times[step_times.len() / 2]),
        ms(*step_times.last().expect("steps")),
        step_times.len()
    );
    println!(
        "tiled blur derivation (fused + tiled, {} steps): median {:.1} ms over {} runs",
        step_times.len() / totals.len(),
        ms(totals[totals.len() / 2]),
        totals.len()
    );
}

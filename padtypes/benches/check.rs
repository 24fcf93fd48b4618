//! Benchmark: the pad-type and access-safety gate on the largest derived example (by
//! node count; the target is the tiled+tails+staged blur, under 200 ms) and on
//! every example file. Each figure is the median of several runs with a fresh solver
//! (cold cache: what `atl check` pays), plus one warm run.
//! Run with `cargo bench -p atl-padtypes --bench check`.

// A benchmark reports on stdout.
#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use atl_lang::ir::Program;
use atl_lang::shapes::ShapeEnv;
use atl_solver::Solver;

const RUNS: usize = 7;

fn examples() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .join("examples");
    let mut out = Vec::new();
    for dir in std::fs::read_dir(root).expect("examples/").flatten() {
        for f in std::fs::read_dir(dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if f.path().extension().is_some_and(|e| e == "atl") {
                out.push(f.path());
            }
        }
    }
    out.sort();
    out
}

fn load(source: &str) -> Option<(Program, ShapeEnv)> {
    let (checked, _) = atl_lang::check_source(source);
    let checked = checked?;
    let (library, _) = atl_rewrites::Library::standard();
    let solver = Solver::new();
    let env = atl_rewrites::Env {
        program: &checked.program,
        shapes: &checked.shapes,
        library: &library,
        solver: &solver,
    };
    let (derivations, _) = atl_rewrites::run_derivations(&env);
    Some(atl_rewrites::with_derived(
        &checked.program,
        &checked.shapes,
        &derivations,
    ))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let mut largest: Option<(usize, String, String, Program, ShapeEnv)> = None;
    println!("pad types + access safety, whole files (median of {RUNS}, cold solver):");
    for path in examples() {
        let source = std::fs::read_to_string(&path).expect("readable");
        let Some((program, shapes)) = load(&source) else {
            continue;
        };
        let mut times = Vec::new();
        let mut stats = None;
        for _ in 0..RUNS {
            let solver = Solver::new();
            let start = Instant::now();
            let (diags, s) = atl_padtypes::check_program_with_stats(&program, &shapes, &solver);
            times.push(start.elapsed());
            assert!(diags.is_empty(), "{} fails the gate", path.display());
            stats = Some(s);
        }
        let s = stats.expect("at least one run");
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        println!(
            "  {name:<22} {:>9}  ({} defs, {} truncations, {} accesses, {} amounts)",
            ms(median(times)),
            s.definitions,
            s.truncations,
            s.accesses,
            s.amounts
        );
        for d in &program.defs {
            if program.derive(&d.name).is_none() {
                continue;
            }
            let times = (0..3)
                .map(|_| {
                    let solver = Solver::new();
                    let start = Instant::now();
                    let _ = atl_padtypes::check_definition(&program, &shapes, &solver, &d.name);
                    start.elapsed()
                })
                .collect();
            println!("      derived `{}`: {}", d.name, ms(median(times)));
            let size = d.body.size();
            if largest.as_ref().is_none_or(|(s, ..)| size > *s) {
                largest = Some((
                    size,
                    name.clone(),
                    d.name.clone(),
                    program.clone(),
                    shapes.clone(),
                ));
            }
        }
    }
    let Some((size, file, def, program, shapes)) = largest else {
        println!("no derived definition found");
        return;
    };
    let mut cold = Vec::new();
    let mut stats = None;
    for _ in 0..RUNS {
        let solver = Solver::new();
        let start = Instant::now();
        let diags = atl_padtypes::check_definition(&program, &shapes, &solver, &def);
        cold.push(start.elapsed());
        assert!(diags.is_empty());
        stats = Some(solver.stats());
    }
    let stats = stats.expect("at least one run");
    let solver = Solver::new();
    let _ = atl_padtypes::check_definition(&program, &shapes, &solver, &def);
    let start = Instant::now();
    let _ = atl_padtypes::check_definition(&program, &shapes, &solver, &def);
    let warm = start.elapsed();
    println!(
        "largest derived definition: `{def}` in {file} ({size} nodes; {} solver queries: \
         {} cached, {} fast path, {} z3)",
        stats.queries, stats.cache_hits, stats.fast_path_hits, stats.z3_calls
    );
    println!(
        "  check_definition: {} cold (median of {RUNS}), {} warm (target: < 200 ms)",
        ms(median(cold)),
        ms(warm)
    );
}

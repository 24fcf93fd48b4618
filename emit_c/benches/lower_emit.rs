//! Benchmark: lowering + C emission time of every definition and derivation of the
//! examples (issue target: under 100 ms for the tiled, tail-split, staged blur,
//! `strips_staged_tails` in examples/blur/blur.atl). Derivations are run first and not
//! timed. Prints the median of several runs per definition, and the largest.
//! Run with `cargo bench -p atl-emit-c --bench lower_emit`.

// A benchmark reports on stdout.
#![allow(clippy::print_stdout)]

use std::path::Path;
use std::time::{Duration, Instant};

use atl_emit_c::{Dtype, EmitOptions};

const RUNS: usize = 7;
const TARGET: (&str, &str) = ("blur", "strips_staged_tails");

fn main() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut dirs: Vec<_> = std::fs::read_dir(&examples)
        .expect("examples/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let (library, _) = atl_rewrites::Library::standard();
    let solver = atl_solver::Solver::new();
    let mut worst: (Duration, String) = (Duration::ZERO, String::new());
    let mut target: Option<Duration> = None;
    println!("lowering + C emission, median of {RUNS} runs:");
    for dir in dirs {
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        let file = dir.join(format!("{name}.atl"));
        let Ok(source) = std::fs::read_to_string(&file) else {
            continue;
        };
        let (Some(checked), _) = atl_lang::check_source(&source) else {
            println!("  {name}: does not check, skipped");
            continue;
        };
        let env = atl_rewrites::Env {
            program: &checked.program,
            shapes: &checked.shapes,
            library: &library,
            solver: &solver,
        };
        let (derivations, _) = atl_rewrites::run_derivations(&env);
        let (program, shapes) =
            atl_rewrites::with_derived(&checked.program, &checked.shapes, &derivations);
        for def in &program.defs {
            let mut times = Vec::new();
            for _ in 0..RUNS {
                let start = Instant::now();
                let kernel =
                    atl_lower::lower_def(&program, &shapes, &def.name, &Default::default())
                        .expect("every example lowers");
                let code = atl_emit_c::emit(
                    &kernel,
                    &EmitOptions {
                        dtype: Dtype::F32,
                        symbol: None,
                        fp: atl_emit_c::Fp::Fast,
                    },
                )
                .expect("every example emits");
                times.push(start.elapsed());
                std::hint::black_box(code);
            }
            times.sort();
            let median = times[RUNS / 2];
            let label = format!("{name}/{}", def.name);
            println!("  {label:<34} {:8.2} ms", median.as_secs_f64() * 1e3);
            if median > worst.0 {
                worst = (median, format!("{name}/{}", def.name));
            }
            if (name.as_str(), def.name.as_str()) == TARGET {
                target = Some(median);
            }
        }
    }
    println!(
        "slowest: {} at {:.2} ms",
        worst.1,
        worst.0.as_secs_f64() * 1e3
    );
    match target {
        Some(t) => println!(
            "target {}/{}: {:.2} ms (budget 100 ms)",
            TARGET.0,
            TARGET.1,
            t.as_secs_f64() * 1e3
        ),
        None => println!("target {}/{} not found", TARGET.0, TARGET.1),
    }
}

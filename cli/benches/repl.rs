//! Benchmark: how long a REPL step takes to answer (target: under 50 ms) — every step of
//! every derivation in `examples/`, typed into a session focused on its base program,
//! including printing the resulting program. Run with `cargo bench -p atl-cli --bench repl`.

// A benchmark reports on stdout.
#![allow(clippy::print_stdout)]

use std::path::Path;
use std::time::{Duration, Instant};

use atl_cli::repl::Session;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut times: Vec<(Duration, String)> = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&root)
        .expect("examples/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    files.sort();
    for dir in files {
        let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let file = dir.join(format!("{name}.atl"));
        let Ok(source) = std::fs::read_to_string(&file) else {
            continue;
        };
        let (checked, _) = atl_lang::check_source(&source);
        let Some(checked) = checked else { continue };
        for d in &checked.program.derives {
            let mut session = Session::new(false).expect("library");
            let mut sink = Vec::new();
            session.load(&file, &mut sink);
            session.handle(&format!(":focus {}", d.from), &mut sink);
            for step in &d.steps {
                let text = source.get(step.span.range()).unwrap_or("").to_string();
                let start = Instant::now();
                session.handle(&text, &mut sink);
                times.push((start.elapsed(), format!("{name}/{}: {text}", d.name)));
            }
        }
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (slowest, what) = times.last().expect("steps").clone();
    println!(
        "REPL steps over the examples' derivations: {} steps, median {:.2} ms, max {:.2} ms ({what})",
        times.len(),
        ms(times[times.len() / 2].0),
        ms(slowest)
    );
}

//! Benchmark: parse + resolve + shape-check a generated 10,000-line program (issue
//! target: under one second in release mode). Prints the median of several runs.
//! Run with `cargo bench -p atl-lang --bench front_end`.

// A benchmark reports on stdout.
#![allow(clippy::print_stdout)]

use std::fmt::Write as _;
use std::time::Instant;

/// A program of `lines` lines: declarations, then definitions of 5 lines each mixing
/// every construct, each using an earlier one (`d{k/2}`, so chains stay within the
/// nesting limit once definitions are inlined, E0211).
fn generate(lines: usize) -> String {
    let mut s = String::from("size n, m\nassume n >= 2\ninput f : [n, m]\ninput g : [m, n]\n");
    let mut k = 0;
    while s.lines().count() + 5 <= lines {
        let prev = if k == 0 {
            "f".to_string()
        } else {
            format!("d{}", k / 2)
        };
        let _ = write!(
            s,
            "def d{k} =\n  let a = gen i < n, j < m: [0 <= i - 1] * {prev}[i - 1, j] + {prev}[i, j] in\n  let b = transpose(g) + a in\n  gen i < n, j < m: sum r < 3: [j + r < m] * b[i, j + r] * 0.5\n  + trunc_r(2, pad_r(2, b))[i, j]\n"
        );
        k += 1;
    }
    s
}

fn main() {
    let source = generate(10_000);
    let lines = source.lines().count();
    let mut times = Vec::new();
    for _ in 0..7 {
        let start = Instant::now();
        let (checked, diags) = atl_lang::check_source(&source);
        let elapsed = start.elapsed();
        assert!(
            checked.is_some(),
            "generated program must check: {:?}",
            diags.first()
        );
        times.push(elapsed);
    }
    times.sort();
    // Where the time goes, one run each.
    let t = Instant::now();
    let (file, mut diags) = atl_lang::parser::parse_file(&source);
    let parse = t.elapsed();
    let t = Instant::now();
    let program = atl_lang::resolve::resolve(&file, &mut diags);
    let resolve = t.elapsed();
    let t = Instant::now();
    let _ = atl_lang::shapes::check_program(&program);
    let shapes = t.elapsed();
    println!(
        "  of which: parse {:.1} ms, resolve {:.1} ms, shapes {:.1} ms",
        parse.as_secs_f64() * 1e3,
        resolve.as_secs_f64() * 1e3,
        shapes.as_secs_f64() * 1e3
    );
    let median = times[times.len() / 2];
    println!(
        "front end (parse + resolve + shapes), {lines} lines, {} bytes: median {:.1} ms over {} runs (min {:.1} ms)",
        source.len(),
        median.as_secs_f64() * 1e3,
        times.len(),
        times[0].as_secs_f64() * 1e3
    );
}

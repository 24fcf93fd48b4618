//! Prover benchmark (`cargo bench -p atl-solver`): median time of one query on a
//! realistic mix of derivation side conditions, separately for queries the fast
//! path proves, queries that go to z3, and cache hits. Targets: fast path < 50 µs,
//! z3 < 5 ms.
// A benchmark's output is its report.
#![allow(clippy::print_stdout)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use atl_lang::index::Pred;
use atl_solver::{Facts, Solver, SolverConfig};

fn pred(src: &str) -> Pred {
    atl_lang::parser::parse_pred_str(src).unwrap_or_else(|d| panic!("bad predicate `{src}`: {d:?}"))
}

fn facts(sizes: &[&str], hyps: &[&str]) -> Facts {
    Facts {
        sizes: sizes.iter().map(|s| s.to_string()).collect(),
        facts: hyps.iter().map(|h| pred(h)).collect(),
        arrays: Vec::new(),
    }
}

const TILE: &[&str] = &["0 <= io && io < cdiv(n, 8)", "0 <= ii && ii < 8"];
const TILE_GUARD: &[&str] = &[
    "0 <= io && io < cdiv(n, 8)",
    "0 <= ii && ii < 8",
    "io * 8 + ii < n",
];
const MATRIX: &[&str] = &["0 <= i && i < n", "0 <= j && j < m", "0 <= k && k < p"];

/// Side conditions of the kind a tiling / fusion derivation produces, which the
/// fast path proves: (sizes, facts, goal).
const FAST: &[(&[&str], &[&str], &str)] = &[
    (&["n"], TILE, "0 <= io * 8 + ii"),
    (&["n"], TILE, "io * 8 + ii < cdiv(n, 8) * 8"),
    (&["n"], TILE, "(io * 8 + ii) / 8 == io"),
    (&["n"], TILE, "(io * 8 + ii) % 8 == ii"),
    (&["n"], TILE_GUARD, "0 <= io * 8 + ii && io * 8 + ii < n"),
    (&["n"], &[], "cdiv(n, 8) * 8 - n < 8"),
    (&["n"], TILE, "io * 8 + min(8, n - io * 8) <= n"),
    (
        &["n", "m", "p"],
        MATRIX,
        "0 <= i && i < n && 0 <= k && k < p",
    ),
    (
        &["n"],
        &["0 <= i && i < n", "1 <= i"],
        "0 <= i - 1 && i - 1 < n",
    ),
    (
        &["n", "m"],
        &["0 <= i && i < n + m", "i >= n"],
        "0 <= i - n && i - n < m",
    ),
];

/// Queries the fast path leaves to z3: refutations (missing tail guards, off-by-one
/// accesses), disjunctive and non-linear facts.
const Z3: &[(&[&str], &[&str], &str)] = &[
    (&["n"], TILE, "io * 8 + ii < n"),
    (&["n"], &["0 <= i && i < n + 2"], "i < n"),
    (
        &["n", "m"],
        &["0 <= i && i < n", "0 <= j && j < m"],
        "i * m + j < n * m",
    ),
    (&["n"], &["0 <= i && i < n", "i < 4 || i >= 8"], "i != 5"),
    (&["n"], &[], "n % 8 == 0 || cdiv(n, 8) * 8 > n"),
    (&["n"], TILE, "(io * 8 + ii + 3) / 8 <= io + 1"),
    (&["n"], &["0 <= i && i < n"], "max(i - 1, 0) == i - 1"),
    (&[], &[], "min(x - y, x - z) == x - min(y, z)"),
];

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time_queries(solver: &Solver, queries: &[(Facts, Pred)], rounds: usize) -> Vec<Duration> {
    let mut samples = Vec::new();
    for _ in 0..rounds {
        for (f, g) in queries {
            let t = Instant::now();
            black_box(solver.prove(black_box(f), black_box(g)));
            samples.push(t.elapsed());
        }
    }
    samples
}

fn build(set: &[(&[&str], &[&str], &str)]) -> Vec<(Facts, Pred)> {
    set.iter().map(|(s, h, g)| (facts(s, h), pred(g))).collect()
}

/// Whether the fast path answers `q` (otherwise it goes to z3).
fn hits_fast_path(q: &(Facts, Pred)) -> bool {
    let s = Solver::with_config(SolverConfig {
        cache: false,
        ..SolverConfig::default()
    });
    s.prove(&q.0, &q.1);
    s.stats().fast_path_hits == 1
}

fn main() {
    // Classify by what actually happens, not by the table a query came from.
    let all: Vec<(Facts, Pred)> = build(FAST).into_iter().chain(build(Z3)).collect();
    let (fast, z3): (Vec<_>, Vec<_>) = all.iter().cloned().partition(hits_fast_path);
    // Without the cache every call does the full work.
    let uncached = Solver::with_config(SolverConfig {
        cache: false,
        ..SolverConfig::default()
    });
    // Warm up (z3 initialization, allocator).
    time_queries(&uncached, &all, 1);

    let fast_samples = time_queries(&uncached, &fast, 200);
    let z3_samples = time_queries(&uncached, &z3, 10);
    let cached = Solver::new();
    time_queries(&cached, &all, 1);
    let cache_samples = time_queries(&cached, &all, 200);

    println!("atl-solver prove benchmark (median per query; cache off unless noted)");
    println!(
        "  fast path hit : {:>9.1} µs  ({} queries x 200, target < 50 µs)",
        median(fast_samples).as_secs_f64() * 1e6,
        fast.len()
    );
    println!(
        "  z3 call       : {:>9.3} ms  ({} queries x 10, target < 5 ms)",
        median(z3_samples.clone()).as_secs_f64() * 1e3,
        z3.len()
    );
    println!(
        "  cache hit     : {:>9.1} µs  ({} queries x 200)",
        median(cache_samples).as_secs_f64() * 1e6,
        all.len()
    );
    println!("  per z3 query (median of 10):");
    for (i, (_, g)) in z3.iter().enumerate() {
        let per: Vec<Duration> = z3_samples
            .iter()
            .skip(i)
            .step_by(z3.len())
            .copied()
            .collect();
        let verdict = uncached.prove(&z3[i].0, g);
        println!(
            "    {:>8.3} ms  {g}  [{verdict}]",
            median(per).as_secs_f64() * 1e3
        );
    }
}

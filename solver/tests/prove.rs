//! Prover tests: the z3 encoding of floor division against the interpreter's
//! arithmetic, a corpus of valid side conditions (proved) and invalid ones (refuted
//! with a counterexample checked by evaluation), including the wrong Halide rules of
//! the TRS paper, plus verdict display, caching, statistics and thread safety.

use atl_lang::index::{IndexExpr, IndexOp, Pred, ceil_div, floor_div, floor_mod};
use atl_solver::{Facts, Solver, SolverConfig, Verdict};

/// Parses a predicate with the front end's parser (names are free variables).
fn pred(src: &str) -> Pred {
    atl_lang::parser::parse_pred_str(src)
        .unwrap_or_else(|d| panic!("bad test predicate `{src}`: {d:?}"))
}

fn facts(sizes: &[&str], hyps: &[&str]) -> Facts {
    Facts {
        sizes: sizes.iter().map(|s| s.to_string()).collect(),
        facts: hyps.iter().map(|h| pred(h)).collect(),
        arrays: Vec::new(),
    }
}

/// Facts of a loop tiled by 8: `io` over tiles, `ii` inside a tile.
const TILE8: &[&str] = &["0 <= io && io < cdiv(n, 8)", "0 <= ii && ii < 8"];

fn z3_only() -> Solver {
    Solver::with_config(SolverConfig {
        fast_path: false,
        cache: false,
        ..SolverConfig::default()
    })
}

#[test]
fn z3_encoding_matches_floor_division_on_a_grid() {
    // Symbolic divisors exercise the ite encoding (sign and zero cases); literal ones
    // the constant shortcuts. Both must agree with the interpreter's arithmetic,
    // including negative divisors and the zero conventions a/0 = 0, a%0 = a.
    let solver = z3_only();
    type Reference = fn(i64, i64) -> Option<i64>;
    let ops: [(IndexOp, Reference); 3] = [
        (IndexOp::Div, floor_div),
        (IndexOp::Mod, floor_mod),
        (IndexOp::CDiv, ceil_div),
    ];
    for (op, reference) in ops {
        for a in -7i64..=7 {
            for b in -4i64..=4 {
                let expected = reference(a, b).unwrap();
                let env = facts(&[], &[&format!("a == {a}"), &format!("b == {b}")]);
                let symbolic = IndexExpr::bin(op, IndexExpr::var("a"), IndexExpr::var("b"));
                let literal = IndexExpr::bin(op, IndexExpr::var("a"), IndexExpr::Const(b));
                for e in [symbolic, literal] {
                    let goal = Pred::cmp(
                        atl_lang::index::CmpOp::Eq,
                        e.clone(),
                        IndexExpr::Const(expected),
                    );
                    assert_eq!(
                        solver.prove(&env, &goal),
                        Verdict::Proved,
                        "{e} == {expected} for a={a}, b={b}"
                    );
                    let wrong = Pred::cmp(
                        atl_lang::index::CmpOp::Eq,
                        e.clone(),
                        IndexExpr::Const(expected + 1),
                    );
                    assert!(
                        solver.prove(&env, &wrong).is_refuted(),
                        "{e} != {} for a={a}, b={b}",
                        expected + 1
                    );
                }
            }
        }
    }
}

/// Valid side conditions: (sizes, facts, goal).
const VALID: &[(&[&str], &[&str], &str)] = &[
    // Tiling by a constant.
    (&["n"], TILE8, "0 <= io * 8 + ii"),
    (&["n"], TILE8, "io * 8 + ii < cdiv(n, 8) * 8"),
    (&["n"], TILE8, "(io * 8 + ii) / 8 == io"),
    (&["n"], TILE8, "(io * 8 + ii) % 8 == ii"),
    (&["n"], TILE8, "(io * 8 + ii) / 4 == io * 2 + ii / 4"),
    (&["n"], TILE8, "io * 8 < n"),
    (&["n"], TILE8, "(io * 8 + ii + 16) / 8 == io + 2"),
    (
        &["n"],
        &[
            "0 <= io && io < cdiv(n, 8)",
            "0 <= ii && ii < 8",
            "io * 8 + ii < n",
        ],
        "0 <= io * 8 + ii && io * 8 + ii < n",
    ),
    (
        &["n"],
        &[
            "0 <= io && io < cdiv(n, 8)",
            "0 <= ii && ii < 8",
            "io * 8 + ii < n",
        ],
        "io * 8 + ii - 1 < n",
    ),
    (
        &["n"],
        &["0 <= io && io < n / 8", "0 <= ii && ii < 8"],
        "io * 8 + ii < n",
    ),
    // Tails and ceiling division.
    (&["n"], &[], "cdiv(n, 8) * 8 - n < 8"),
    (&["n"], &[], "cdiv(n, 8) * 8 >= n"),
    (&["n"], &[], "cdiv(n, 8) == (n + 7) / 8"),
    (&["n"], &[], "cdiv(n, 8) - n / 8 <= 1"),
    (&["n"], &[], "n % 8 == n - n / 8 * 8"),
    (&["n"], &[], "0 <= n % 8 && n % 8 < 8"),
    (&["n"], &[], "n - n / 8 * 8 < 8 && n / 8 * 8 <= n"),
    (&["n"], &["n >= 8"], "n / 8 >= 1"),
    (
        &["n"],
        &["0 <= i && i < n - n / 8 * 8"],
        "n / 8 * 8 + i < n",
    ),
    (&["n"], TILE8, "min(8, n - io * 8) >= 1"),
    (&["n"], TILE8, "io * 8 + min(8, n - io * 8) <= n"),
    // Flatten / split / reshape index algebra.
    (
        &["n"],
        &["0 <= i && i < n", "0 <= j && j < 5"],
        "(i * 5 + j) / 5 == i && (i * 5 + j) % 5 == j",
    ),
    (
        &["n", "m"],
        &["0 <= i && i < n", "0 <= j && j < m"],
        "0 <= i * m + j",
    ),
    (
        &["n", "m"],
        &["0 <= i && i < n", "0 <= j && j < m"],
        "i * m + j < n * m",
    ),
    (
        &["n", "m"],
        &["0 <= i && i < n", "0 <= j && j < m"],
        "(i * m + j) / m == i",
    ),
    (&["n"], &["0 <= k && k < n * 8"], "k / 8 < n && 0 <= k / 8"),
    (&[], &[], "k % 8 + k / 8 * 8 == k"),
    (&["n"], &["0 <= i && i < n - 3"], "i + 3 < n"),
    (
        &["n", "m"],
        &["0 <= i && i < n + m", "i >= n"],
        "0 <= i - n && i - n < m",
    ),
    (
        &["n"],
        &["0 <= i && i < n + 2", "2 <= i"],
        "0 <= i - 2 && i - 2 < n",
    ),
    // min / max.
    (&["n"], &[], "min(i, n) <= n && max(i, 0) >= 0"),
    (&[], &[], "min(x - y, x - z) == x - max(y, z)"),
    (&[], &[], "max(x - y, x - z) == x - min(y, z)"),
    (&[], &[], "min(a, b) + max(a, b) == a + b"),
    (&[], &[], "min(a, min(b, c)) == min(min(a, b), c)"),
    (&[], &[], "max(a, b) >= min(a, b)"),
    (&[], &[], "min(x + 3, x + 5) == x + 3"),
    (
        &["n"],
        &["0 <= i && i < n"],
        "max(i - 1, 0) < n && min(i + 1, n - 1) >= 0",
    ),
    // Division conventions (DESIGN §3.2).
    (&[], &[], "x / 2 / 4 == x / 8"),
    (&[], &[], "x / -2 == -x / 2"),
    (&[], &[], "x % -3 <= 0 && x % -3 > -3"),
    (&[], &[], "x / 0 == 0 && x % 0 == x && cdiv(x, 0) == 0"),
    (&[], &[], "cdiv(x, 4) == -(-x / 4)"),
    (&[], &[], "x * 6 / 3 == x * 2"),
    // The TRS paper's `x*c0/c1 -> x/(c1/c0)` with c0 = 2, c1 = 4, and with its
    // counterexample constants c0 = -1, c1 = 2: both valid with floor division.
    (&[], &[], "x * 2 / 4 == x / (4 / 2)"),
    (&[], &[], "x * -1 / 2 == x / (2 / -1)"),
    // Its corrected `((x + c0) / c1) * c1 - x -> -x % c1` with c0 = 2, c1 = 3.
    (&[], &[], "(x + 2) / 3 * 3 - x == -x % 3"),
    (&[], &[], "x - (x + 2) / 3 * 3 == (x + 2) % 3 - 2"),
    // Logic.
    (&["n"], &["i < n || i >= n"], "true"),
    (&[], &["x < 0", "x > 0"], "false"),
    (&["n"], &[], "n >= 1 && !(n < 1)"),
];

#[test]
fn valid_facts_are_proved() {
    assert!(VALID.len() >= 40);
    let solver = Solver::new();
    for (sizes, hyps, goal) in VALID {
        let f = facts(sizes, hyps);
        let v = solver.prove(&f, &pred(goal));
        assert_eq!(v, Verdict::Proved, "`{goal}` under {hyps:?}");
    }
    // Most of them never reach z3.
    let stats = solver.stats();
    assert!(stats.fast_path_hits >= 25, "{stats:?}");
}

/// Invalid side conditions: (sizes, facts, goal).
const INVALID: &[(&[&str], &[&str], &str)] = &[
    // A tiled loop without its tail guard reads past the end.
    (&["n"], TILE8, "io * 8 + ii < n"),
    (&["n"], &[], "cdiv(n, 8) * 8 - n < 7"),
    (&["n"], &["0 <= io", "0 <= ii"], "(io * 8 + ii) / 8 == io"),
    (&["n"], &[], "n / 8 * 8 == n"),
    (&["n"], &[], "n % 8 < 7"),
    (&["n"], &[], "cdiv(n, 8) == n / 8 + 1"),
    (
        &["n", "m"],
        &["0 <= i && i < n", "0 <= j"],
        "i * m + j < n * m",
    ),
    (
        &["n", "m"],
        &["0 <= i && i < n", "0 <= j && j <= m"],
        "(i * m + j) / m == i",
    ),
    (&["n"], &["0 <= i && i < n + 2"], "i < n"),
    (&["n"], &["0 <= i"], "min(i, n) == i"),
    (&[], &[], "max(a, b) == a"),
    // Floor is not truncation.
    (&[], &[], "x / -2 == -(x / 2)"),
    // Wrong Halide rules (TRS paper, chapter 3), with concrete constants:
    // min(x - y, x - z) -> x - min(y, z)
    (&[], &[], "min(x - y, x - z) == x - min(y, z)"),
    // ((x + c0) / c1) * c1 - x -> x % c1   (c0 = 2, c1 = 3; the paper's x = -5)
    (&[], &[], "(x + 2) / 3 * 3 - x == x % 3"),
    // x - ((x + c0) / c1) * c1 -> -(x % c1)
    (&[], &[], "x - (x + 2) / 3 * 3 == -(x % 3)"),
    // x*c0/c1 -> x/(c1/c0) under Euclidean division, c0 = -1, c1 = 2: Euclidean
    // x div -2 is -(x div 2) = -(x / 2), so the rule claims (x * -1) / 2 == -(x / 2).
    (&[], &[], "x * -1 / 2 == -(x / 2)"),
    // ... and without its divisibility guard, c0 = 2, c1 = 3.
    (&[], &[], "x * 2 / 3 == x / (3 / 2)"),
    // Rules broken by a / 0 = 0 (TRS paper, section 3.2).
    (&[], &[], "(x + y) / x == y / x + 1"),
    (&[], &[], "x < 0 && -1 / x == 1 || x >= 0 && -1 / x == -1"),
];

#[test]
fn invalid_facts_are_refuted_with_checked_counterexamples() {
    assert!(INVALID.len() >= 15);
    let solver = Solver::new();
    for (sizes, hyps, goal) in INVALID {
        let f = facts(sizes, hyps);
        let g = pred(goal);
        match solver.prove(&f, &g) {
            Verdict::Refuted(cex) => {
                // Re-check independently: the facts hold and the goal fails.
                let env = |name: &str| cex.get(name);
                assert!(
                    f.holds(&env),
                    "`{goal}`: counterexample {cex} violates the facts"
                );
                assert_eq!(
                    g.eval(&env),
                    Ok(false),
                    "`{goal}`: counterexample {cex} satisfies the goal"
                );
                for s in *sizes {
                    assert!(cex.get(s).is_some_and(|v| v >= 1), "size {s} in {cex}");
                }
            }
            other => panic!("`{goal}` under {hyps:?}: expected a refutation, got {other}"),
        }
    }
}

#[test]
fn counterexamples_are_small_and_complete() {
    let solver = Solver::new();
    let f = facts(&["n"], TILE8);
    let v = solver.prove(&f, &pred("io * 8 + ii < n"));
    let cex = v.counterexample().expect("refuted");
    for name in ["io", "ii", "n"] {
        let value = cex.get(name).expect("every variable has a value");
        assert!(value.abs() <= 32, "{cex}");
    }
}

#[test]
fn verdicts_display_for_diagnostics() {
    assert_eq!(Verdict::Proved.to_string(), "proved");
    let cex = atl_solver::Counterexample {
        values: [("i".to_string(), 2), ("n".to_string(), 3)]
            .into_iter()
            .collect(),
    };
    assert_eq!(Verdict::Refuted(cex).to_string(), "refuted: i=2, n=3");
    assert_eq!(
        Verdict::Unknown("z3 gave up".into()).to_string(),
        "unknown: z3 gave up"
    );
    let solver = Solver::new();
    let v = solver.prove(&facts(&["n"], &[]), &pred("n < 1"));
    assert_eq!(v.to_string(), "refuted: n=1");
}

#[test]
fn unknown_is_never_proved() {
    // A true but non-linear fact that z3 cannot settle with almost no resources.
    let starved = Solver::with_config(SolverConfig {
        rlimit: 1,
        fast_path: false,
        ..SolverConfig::default()
    });
    let f = facts(&["n", "m"], &["0 <= i && i < n", "0 <= j && j < m"]);
    let v = starved.prove(&f, &pred("(i * m + j) / m == i"));
    assert!(matches!(v, Verdict::Unknown(_)), "{v}");
    // Without z3, whatever the fast path cannot prove is unknown, even if false.
    let no_z3 = Solver::with_config(SolverConfig {
        use_z3: false,
        ..SolverConfig::default()
    });
    assert!(matches!(
        no_z3.prove(&f, &pred("i < 0")),
        Verdict::Unknown(_)
    ));
    assert_eq!(no_z3.prove(&f, &pred("0 <= i * 4 + j")), Verdict::Proved);
}

#[test]
fn cache_and_statistics() {
    let solver = Solver::new();
    let f = facts(&["n"], TILE8);
    let fast_goal = pred("0 <= io * 8 + ii");
    let z3_goal = pred("io * 8 + ii < n");
    let a = solver.prove(&f, &fast_goal);
    let b = solver.prove(&f, &z3_goal);
    let s1 = solver.stats();
    assert_eq!(
        (s1.queries, s1.fast_path_hits, s1.z3_calls, s1.cache_hits),
        (2, 1, 1, 0)
    );
    assert_eq!(s1.z3_refuted, 1);
    assert_eq!(solver.prove(&f, &fast_goal), a);
    assert_eq!(solver.prove(&f, &z3_goal), b);
    let s2 = solver.stats();
    assert_eq!((s2.queries, s2.cache_hits, s2.z3_calls), (4, 2, 1));
    solver.clear_cache();
    assert_eq!(solver.prove(&f, &z3_goal), b);
    assert_eq!(solver.stats().z3_calls, 2);
}

#[test]
fn verdicts_are_deterministic() {
    // Fresh solvers, same query: the same verdict and the same counterexample.
    let f = facts(&["n", "m"], &["0 <= i && i < n", "0 <= j && j <= m"]);
    let g = pred("(i * m + j) / m == i");
    let first = z3_only().prove(&f, &g);
    for _ in 0..3 {
        assert_eq!(z3_only().prove(&f, &g), first);
    }
}

#[test]
fn solver_is_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Solver>();
    let solver = Solver::new();
    let f = facts(&["n"], TILE8);
    std::thread::scope(|s| {
        for t in 0..4 {
            let solver = &solver;
            let f = &f;
            s.spawn(move || {
                for k in 0..5 {
                    let goal = pred(&format!("io * 8 + ii + {k} < cdiv(n, 8) * 8 + {k} + {t}"));
                    assert_eq!(solver.prove(f, &goal), Verdict::Proved);
                }
            });
        }
    });
    assert_eq!(solver.stats().queries, 20);
}

#[test]
fn metavariables_are_universally_quantified() {
    // Rule side conditions mention metavariables; they are proved like variables and
    // show up as `?k` in counterexamples.
    let solver = Solver::new();
    let k = IndexExpr::Meta("k".into());
    let holds = Pred::cmp(
        atl_lang::index::CmpOp::Le,
        IndexExpr::Const(0),
        IndexExpr::bin(IndexOp::Mod, k.clone(), IndexExpr::Const(4)),
    );
    assert_eq!(solver.prove(&Facts::new(), &holds), Verdict::Proved);
    let fails = Pred::cmp(atl_lang::index::CmpOp::Lt, k, IndexExpr::Const(0));
    let v = solver.prove(&Facts::new(), &fails);
    assert!(
        v.counterexample()
            .is_some_and(|c| c.get("?k").is_some_and(|x| x >= 0)),
        "{v}"
    );
}

#[test]
fn inconsistent_facts_prove_anything() {
    let solver = Solver::new();
    let f = facts(&["n"], &["n < 1"]);
    assert_eq!(solver.prove(&f, &pred("n == 12345")), Verdict::Proved);
}

//! The fast path's divisibility facts (issue 28): `a % b` and `a / b` where the divisor
//! is one monomial (`n`, `2*n`, `n*m`) dividing some terms of `a`. The independent
//! checker asks the solver `n * x % n == 0` after a `simpl` step that the engine did by
//! a rule; z3 alone times out on it. Every goal here is also evaluated on a grid that
//! includes zero and negative divisors (DESIGN §3.2: `a / 0 = 0`, `a % 0 = a`), so the
//! lists of valid and invalid goals are checked independently of the prover.

use atl_lang::index::Pred;
use atl_solver::{Facts, Solver, SolverConfig, Verdict};

fn pred(src: &str) -> Pred {
    atl_lang::parser::parse_pred_str(src)
        .unwrap_or_else(|d| panic!("bad test predicate `{src}`: {d:?}"))
}

fn fast_only() -> Solver {
    Solver::with_config(SolverConfig {
        use_z3: false,
        cache: false,
        ..SolverConfig::default()
    })
}

const VARS: [&str; 4] = ["n", "m", "x", "k"];

/// Whether `facts => goal` holds at every point of `-4..=4` for the variables (sizes
/// at `1..=4`); `Some(point)` is a counterexample.
fn grid_counterexample(sizes: &[&str], facts: &[&str], goal: &str) -> Option<[i64; 4]> {
    let facts: Vec<Pred> = facts.iter().map(|f| pred(f)).collect();
    let goal = pred(goal);
    let range = |v: &str| if sizes.contains(&v) { 1..=4 } else { -4..=4 };
    for a in range("n") {
        for b in range("m") {
            for c in range("x") {
                for d in range("k") {
                    let p = [a, b, c, d];
                    let env = |name: &str| VARS.iter().position(|v| *v == name).map(|i| p[i]);
                    if facts.iter().all(|f| f.eval(&env) == Ok(true))
                        && goal.eval(&env) == Ok(false)
                    {
                        return Some(p);
                    }
                }
            }
        }
    }
    None
}

fn facts(sizes: &[&str], hyps: &[&str]) -> Facts {
    Facts {
        sizes: sizes.iter().map(|s| s.to_string()).collect(),
        facts: hyps.iter().map(|h| pred(h)).collect(),
        arrays: Vec::new(),
    }
}

/// Valid goals the fast path must prove: (sizes, facts, goal).
const VALID: &[(&[&str], &[&str], &str)] = &[
    // The checker's goal in fuzzer cases 361, 663, 1123, 1576 and 1968 (seed 7).
    (&["n", "x"], &["0 <= k && k < 1"], "n * x % n == 0"),
    // Valid for every integer n, 0 included (0 % 0 = 0): no size needed.
    (&[], &[], "n * x % n == 0"),
    (&[], &[], "x * n % n == 0"),
    (&[], &[], "(2 * n * x + 3 * n * k) % n == 0"),
    (&[], &[], "6 * n * x % (3 * n) == 0"),
    (&[], &[], "n * m * x % (n * m) == 0"),
    (&[], &[], "n * m * x % (m * n) == 0"),
    (&[], &[], "(n * x + k) % n == k % n"),
    (&[], &[], "(k + x * n - 1) % n == (k - 1) % n"),
    (&[], &[], "n * x % -n == 0"),
    // With n >= 2, the remainder of 1 is 1.
    (&["n"], &["n >= 2"], "(n * x + 1) % n == 1"),
    (&["n"], &[], "(n * x + k) % n < n"),
    // Division needs a divisor that is not 0.
    (&["n"], &[], "n * x / n == x"),
    (&["n"], &[], "(n * x + k) / n == x + k / n"),
    (
        &[],
        &["n >= 1"],
        "(4 * n * m * x + 2 * n) / (2 * n) == 2 * m * x + 1",
    ),
];

/// Invalid goals (a counterexample on the grid) the fast path must not prove.
const INVALID: &[(&[&str], &[&str], &str)] = &[
    // The divisor is not a monomial dividing the term.
    (&["n", "x"], &[], "n * x % (n + 1) == 0"),
    (&["n", "x"], &[], "2 * n * x % (4 * n) == 0"),
    (&["n", "x"], &[], "n * x % (2 * n) == 0"),
    (&["n", "x"], &[], "3 * n * x % (2 * n) == 0"),
    (&["n", "x"], &[], "n * x % m == 0"),
    (&["n", "x"], &[], "(n * x + 1) % n == 1"),
    (&["n", "x"], &[], "(n * x + k) % n == k"),
    // `n * x / n == x` fails at n = 0 (n * x / 0 = 0).
    (&[], &[], "n * x / n == x"),
    (&[], &[], "(n * x + k) / n == x + k / n"),
    (&["n", "x"], &[], "(n * x + k) / n == x"),
    (&["n", "x"], &[], "n * x / (n + 1) == x"),
    (&["n", "x"], &[], "n * x % n == 1"),
    (&["n", "x"], &[], "n * x % n != 0"),
];

#[test]
fn divisibility_by_a_monomial_is_proved_by_the_fast_path() {
    let solver = fast_only();
    for (sizes, hyps, goal) in VALID {
        assert_eq!(
            grid_counterexample(sizes, hyps, goal),
            None,
            "the test's goal `{goal}` is not valid"
        );
        let v = solver.prove(&facts(sizes, hyps), &pred(goal));
        assert_eq!(
            v,
            Verdict::Proved,
            "`{goal}` under {hyps:?}, sizes {sizes:?}"
        );
    }
}

#[test]
fn invalid_divisibility_claims_are_not_proved() {
    let fast = fast_only();
    let full = Solver::with_config(SolverConfig {
        cache: false,
        ..SolverConfig::default()
    });
    for (sizes, hyps, goal) in INVALID {
        assert!(
            grid_counterexample(sizes, hyps, goal).is_some(),
            "the test's goal `{goal}` has no counterexample on the grid"
        );
        let f = facts(sizes, hyps);
        let g = pred(goal);
        assert!(!fast.prove(&f, &g).is_proved(), "fast path proved `{goal}`");
        // The full solver must not prove it either (z3 may refute or give up).
        assert!(!full.prove(&f, &g).is_proved(), "solver proved `{goal}`");
    }
}

/// The checker's query of fuzzer case 361 answers at once with the default solver
/// (before the fix: z3 hit its resource limit after seconds, and the step was refused).
#[test]
fn the_checker_query_is_answered_without_z3() {
    let solver = Solver::new();
    let f = facts(&["n", "x"], &["0 <= k && k < 1"]);
    assert_eq!(solver.prove(&f, &pred("n * x % n == 0")), Verdict::Proved);
    let stats = solver.stats();
    assert_eq!((stats.fast_path_hits, stats.z3_calls), (1, 0), "{stats:?}");
}

/// A seeded random check: numerators `Σ cᵢ·monomialᵢ + c`, divisors `c·monomial`
/// (possibly negative, possibly 0 at a point), goals `a % b == e` and `a / b == e` for
/// right and wrong `e`; every fast-path "proved" must hold at every grid point that
/// satisfies the facts (sizes `1..=4`, other variables `-4..=4`).
#[test]
fn random_divisibility_answers_hold_on_the_grid() {
    let mut state = 0x5eed_2828_u64;
    let mut next = move |n: u64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) % n
    };
    let var = |i: u64| VARS[i as usize];
    let mut proved = 0;
    for case in 0..1000 {
        let monomial = |next: &mut dyn FnMut(u64) -> u64| {
            let len = 1 + next(2);
            (0..len)
                .map(|_| var(next(4)))
                .collect::<Vec<_>>()
                .join(" * ")
        };
        let coef = |next: &mut dyn FnMut(u64) -> u64| [1, 2, 3, -1, -2, 6][next(6) as usize];
        let divisor = format!("{} * {}", coef(&mut next), monomial(&mut next));
        let mut terms = Vec::new();
        for _ in 0..1 + next(3) {
            let m = if next(2) == 0 {
                format!("{divisor} * {}", monomial(&mut next))
            } else {
                monomial(&mut next)
            };
            terms.push(format!("{} * {m}", coef(&mut next)));
        }
        terms.push(format!("{}", next(5) as i64 - 2));
        let a = terms.join(" + ");
        let rhs = [
            "0".to_string(),
            "1".to_string(),
            "k".to_string(),
            format!("{} % ({divisor})", terms.last().unwrap()),
            format!("({}) % ({divisor})", terms[1..].join(" + ")),
            format!("{} + {} / ({divisor})", var(next(4)), terms.last().unwrap()),
            format!("({}) / ({divisor})", terms[1..].join(" + ")),
        ];
        let op = if next(2) == 0 { "%" } else { "/" };
        let goal = format!("({a}) {op} ({divisor}) == {}", rhs[next(7) as usize]);
        let sizes: &[&str] = [&["n"][..], &["n", "m"], &[]][next(3) as usize];
        let hyps: &[&str] = [&[][..], &["k >= 0"], &["n >= 2"]][next(3) as usize];
        if fast_only()
            .prove(&facts(sizes, hyps), &pred(&goal))
            .is_proved()
        {
            proved += 1;
            assert_eq!(
                grid_counterexample(sizes, hyps, &goal),
                None,
                "case {case}: fast path proved `{goal}` (sizes {sizes:?}, facts {hyps:?})"
            );
        }
    }
    // The generator must reach the new facts, or this checks nothing.
    assert!(proved >= 60, "only {proved} proved");
}

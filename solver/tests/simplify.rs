//! Simplifier tests: the tiling clean-ups it exists for, guard elimination,
//! determinism, and a property test over thousands of random expressions checking
//! that it terminates and never changes a value where the facts hold.

use atl_lang::index::{IndexExpr, IndexOp, Pred};
use atl_solver::{Facts, Solver, SolverConfig, simplify_index, simplify_pred};
use proptest::prelude::*;

fn pred(src: &str) -> Pred {
    atl_lang::parser::parse_pred_str(src)
        .unwrap_or_else(|d| panic!("bad test predicate `{src}`: {d:?}"))
}

fn index(src: &str) -> IndexExpr {
    atl_lang::parser::parse_index_str(src)
        .unwrap_or_else(|d| panic!("bad test expression `{src}`: {d:?}"))
}

fn facts(sizes: &[&str], hyps: &[&str]) -> Facts {
    Facts {
        sizes: sizes.iter().map(|s| s.to_string()).collect(),
        facts: hyps.iter().map(|h| pred(h)).collect(),
        arrays: Vec::new(),
    }
}

fn tiled() -> Facts {
    facts(
        &["n", "m"],
        &[
            "0 <= io && io < cdiv(n, 8)",
            "0 <= ii && ii < 8",
            "0 <= i && i < n",
            "0 <= j && j < m",
        ],
    )
}

#[test]
fn simplifies_tiling_index_arithmetic() {
    let solver = Solver::new();
    let f = tiled();
    let cases = [
        ("(io*8 + ii) / 8", "io"),
        ("(io*8 + ii) % 8", "ii"),
        ("(ii + 8*io + 16) / 8", "io + 2"),
        ("(io*8 + ii) / 4", "2 * io + ii / 4"),
        ("cdiv(io*8 + ii + 1, 8)", "io + 1"),
        ("(i*m + j) / m", "i"),
        ("(i*m + j) % m", "j"),
        ("8*(i/8) + i%8 + 3", "i + 3"),
        ("i - 8*(i/8)", "i % 8"),
        ("(i/2)/4", "i / 8"),
        ("max(i, 0)", "i"),
        ("min(i, n)", "i"),
        ("min(n, n + 3)", "n"),
        ("min(n - 8*io, n - 4*j)", "n - max(4 * j, 8 * io)"),
        ("min(8, n - io*8)", "min(8, n - 8 * io)"),
        ("(i + 1) - 1", "i"),
        ("min(i, j) + max(i, j)", "i + j"),
    ];
    for (input, expected) in cases {
        let got = simplify_index(&index(input), &f, &solver);
        assert_eq!(
            got,
            index(expected),
            "{input} simplified to {got}, expected {expected}"
        );
    }
}

#[test]
fn simplifies_the_index_of_a_load() {
    // A block row's blocks, `pos[i / 4]` after the rows are split by 4: the load's
    // index is simplified like any other, at any depth.
    let solver = Solver::new();
    let f = tiled();
    let load = |i: IndexExpr| IndexExpr::Load("pos".to_string(), Box::new(i));
    let got = simplify_index(
        &IndexExpr::add(load(index("(io*8 + ii) / 8")), IndexExpr::Const(1)),
        &f,
        &solver,
    );
    assert_eq!(got, IndexExpr::add(load(index("io")), IndexExpr::Const(1)));
    let got = simplify_index(&load(load(index("(io*8 + ii) % 8 + 0"))), &f, &solver);
    assert_eq!(got, load(load(index("ii"))));
}

#[test]
fn facts_matter() {
    // Without `ii < 8` the quotient cannot drop `ii / 8`.
    let solver = Solver::new();
    let f = facts(&["n"], &["0 <= io", "0 <= ii"]);
    let got = simplify_index(&index("(io*8 + ii) / 8"), &f, &solver);
    assert_eq!(got, index("io + ii / 8"));
}

#[test]
fn eliminates_provable_guards() {
    let solver = Solver::new();
    let f = tiled();
    let cases = [
        ("io * 8 + ii < cdiv(n, 8) * 8", "true"),
        ("cdiv(n, 8) * 8 - n < 8", "true"),
        ("0 <= io * 8 + ii && io * 8 + ii < n", "ii + 8 * io < n"),
        ("i < n && j < m && 0 <= i * m + j", "true"),
        ("ii >= 8 || i < 0", "false"),
        ("!(io < 0) && (io * 8 + ii) / 8 == io", "true"),
        ("i + 1 <= n && i + 1 < n", "i + 1 < n"),
        ("i < 3 || i >= 3", "true"),
        ("i < 3 || i < 5", "i < 5"),
    ];
    for (input, expected) in cases {
        let got = simplify_pred(&pred(input), &f, &solver);
        assert_eq!(
            got,
            pred(expected),
            "{input} simplified to {got}, expected {expected}"
        );
    }
}

#[test]
fn simplification_is_deterministic() {
    let f = tiled();
    let inputs = [
        "min(n - 8*io, n - 4*j) + (io*8 + ii) / 8",
        "max(i, 0) * ((i*m + j) % m)",
    ];
    for input in inputs {
        let a = simplify_index(&index(input), &f, &Solver::new());
        let b = simplify_index(&index(input), &f, &Solver::new());
        assert_eq!(a, b);
    }
}

// ---- property test ------------------------------------------------------------------

const VARS: [&str; 3] = ["i", "j", "n"];

fn arb_leaf() -> impl Strategy<Value = IndexExpr> {
    prop_oneof![
        (-9i64..=9).prop_map(IndexExpr::Const),
        prop::sample::select(VARS.to_vec()).prop_map(IndexExpr::var),
        // Scaled variables make tiling shapes like `i*8 + j` common.
        (
            prop::sample::select(vec![2i64, 4, 8, -4]),
            prop::sample::select(VARS.to_vec())
        )
            .prop_map(|(k, v)| IndexExpr::mul(IndexExpr::var(v), IndexExpr::Const(k))),
    ]
}

fn arb_expr() -> impl Strategy<Value = IndexExpr> {
    arb_leaf().prop_recursive(4, 24, 2, |inner| {
        let divisor = prop_oneof![
            4 => prop::sample::select(vec![1i64, 2, 3, 4, 8, -2, -3, 0]).prop_map(IndexExpr::Const),
            1 => inner.clone(),
        ];
        prop_oneof![
            3 => (prop::sample::select(vec![IndexOp::Add, IndexOp::Sub, IndexOp::Mul, IndexOp::Min, IndexOp::Max]), inner.clone(), inner.clone())
                .prop_map(|(op, a, b)| IndexExpr::bin(op, a, b)),
            2 => (prop::sample::select(vec![IndexOp::Div, IndexOp::Mod, IndexOp::CDiv]), inner.clone(), divisor)
                .prop_map(|(op, a, b)| IndexExpr::bin(op, a, b)),
            1 => inner.prop_map(|a| IndexExpr::Neg(Box::new(a))),
        ]
    })
}

/// Fact sets the random expressions are simplified under.
fn fact_sets() -> Vec<Facts> {
    vec![
        facts(&["n"], &[]),
        facts(&["n"], &["0 <= i && i < 8", "0 <= j && j < n"]),
        facts(&["n"], &["0 <= i && i < cdiv(n, 8)", "0 <= j && j < 8"]),
        facts(&[], &["i <= j", "-5 <= n && n <= 5"]),
        facts(&["n"], &["0 <= j && j < n", "i == j / 4"]),
    ]
}

/// Assignments satisfying `f`, by rejection sampling from a seeded generator (half of
/// the values small and non-negative, where loop indices live).
fn models(f: &Facts, seed: u64) -> Vec<[i64; 3]> {
    let mut out = Vec::new();
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x >> 33
    };
    for _ in 0..3000 {
        let mut v = [0i64; 3];
        for slot in &mut v {
            let r = next();
            *slot = if r % 2 == 0 {
                ((r >> 1) % 24) as i64
            } else {
                ((r >> 1) % 41) as i64 - 20
            };
        }
        let env = |name: &str| VARS.iter().position(|n| *n == name).map(|k| v[k]);
        if f.holds(&env) {
            out.push(v);
            if out.len() == 12 {
                break;
            }
        }
    }
    out
}

fn check_value_preserved(
    e: &IndexExpr,
    fi: usize,
    seed: u64,
    solver: &Solver,
) -> Result<(), TestCaseError> {
    let f = &fact_sets()[fi];
    let s = simplify_index(e, f, solver);
    for v in models(f, seed) {
        let env = |name: &str| VARS.iter().position(|n| *n == name).map(|k| v[k]);
        if let (Ok(a), Ok(b)) = (e.eval(&env), s.eval(&env)) {
            prop_assert_eq!(
                a,
                b,
                "{} -> {} at i={}, j={}, n={} under {:?}",
                e,
                s,
                v[0],
                v[1],
                v[2],
                f.facts
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    /// Fast path only (no z3): thousands of expressions.
    #[test]
    fn simplifier_terminates_and_preserves_values(e in arb_expr(), fi in 0usize..5, seed in any::<u64>()) {
        let solver = Solver::with_config(SolverConfig { use_z3: false, ..SolverConfig::default() });
        check_value_preserved(&e, fi, seed, &solver)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// With z3 deciding the conditions the fast path leaves open.
    #[test]
    fn simplifier_with_z3_preserves_values(e in arb_expr(), fi in 0usize..5, seed in any::<u64>()) {
        let solver = Solver::new();
        check_value_preserved(&e, fi, seed, &solver)?;
    }

    /// Predicates: guard elimination never changes the truth value where facts hold.
    #[test]
    fn pred_simplifier_preserves_truth(
        a in arb_expr(), b in arb_expr(), c in arb_expr(),
        ops in (0usize..6, 0usize..6), conj in any::<bool>(), fi in 0usize..5, seed in any::<u64>(),
    ) {
        use atl_lang::index::CmpOp::*;
        let cmp = [Eq, Ne, Lt, Le, Gt, Ge];
        let p1 = Pred::cmp(cmp[ops.0], a, b.clone());
        let p2 = Pred::cmp(cmp[ops.1], b, c);
        let p = if conj { Pred::and(p1, p2) } else { Pred::or(p1, Pred::not(p2)) };
        let f = &fact_sets()[fi];
        let solver = Solver::with_config(SolverConfig { rlimit: 200_000, ..SolverConfig::default() });
        let s = simplify_pred(&p, f, &solver);
        for v in models(f, seed) {
            let env = |name: &str| VARS.iter().position(|n| *n == name).map(|k| v[k]);
            if let (Ok(x), Ok(y)) = (p.eval(&env), s.eval(&env)) {
                prop_assert_eq!(x, y, "{} -> {} at i={}, j={}, n={}", p, s, v[0], v[1], v[2]);
            }
        }
    }
}

//! Checks of the prover's answers (issue 17): the fast path's overflow hole, a seeded
//! random test in which every fast-path "proved" is re-asked to z3 and tested at
//! random points, and every "refuted" is re-evaluated, and the bound on a hopeless
//! non-linear query.

use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
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

fn z3_only() -> Solver {
    Solver::with_config(SolverConfig {
        fast_path: false,
        cache: false,
        ..SolverConfig::default()
    })
}

/// z3 with a small `rlimit`, for re-checking many random goals quickly: an unknown
/// answer is fine there, only a refutation of a proved goal is a failure.
fn z3_quick() -> Solver {
    Solver::with_config(SolverConfig {
        fast_path: false,
        cache: false,
        rlimit: 50_000,
        ..SolverConfig::default()
    })
}

/// The reproducer of issue 17, hole 7: huge interval bounds on tiny values made the
/// fast path's bound propagation wrap around, the facts looked contradictory, and
/// `n >= 100` was "proved" although `n = x = y = z = w = 1` satisfies every fact.
#[test]
fn huge_bounds_do_not_make_consistent_facts_contradictory() {
    let facts = Facts {
        sizes: ["n", "x", "y", "z", "w"].map(String::from).to_vec(),
        facts: vec![
            pred(
                "x <= 4611686018427387904 && y <= 4611686018427387904 && \
                 z <= 4611686018427387904 && w <= 4611686018427387904",
            ),
            pred("4*x*y + 4*z*w >= n"),
        ],
        arrays: Vec::new(),
    };
    let goal = pred("n >= 100");
    let ones = |_: &str| Some(1);
    assert!(facts.holds(&ones) && goal.eval(&ones) == Ok(false));
    assert!(matches!(
        fast_only().prove(&facts, &goal),
        Verdict::Unknown(_)
    ));
    let v = Solver::new().prove(&facts, &goal);
    let cex = v.counterexample().unwrap_or_else(|| panic!("{v}"));
    assert!(cex.refutes(&facts, &goal), "{cex}");
    // Coefficients near the i64 limit on both sides of a fact.
    let facts = Facts {
        sizes: ["n", "x", "y"].map(String::from).to_vec(),
        facts: vec![
            pred("x <= 9223372036854775807 && y <= 9223372036854775807"),
            pred("9223372036854775807*x*y - 9223372036854775807*y*y >= n - 9223372036854775807"),
        ],
        arrays: Vec::new(),
    };
    assert!(!fast_only().prove(&facts, &goal).is_proved());
}

/// A tiny deterministic generator (the test must not depend on a crate's seeding).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

const VARS: &[&str] = &["n", "m", "i", "j"];
const SIZES: &[&str] = &["n", "m"];
/// Constants: small ones, and huge ones whose products and sums leave i64 (and, in
/// products of bounds, i128).
const CONSTS: &[i64] = &[
    0,
    1,
    2,
    3,
    4,
    -1,
    -3,
    8,
    100,
    4_611_686_018_427_387_904,
    4_611_686_018_427_387_903,
    9_223_372_036_854_775_807,
    -9_223_372_036_854_775_807,
    3_037_000_499,
    1 << 40,
];

fn gen_expr(r: &mut Rng, depth: u32) -> IndexExpr {
    if depth == 0 || r.below(3) == 0 {
        return if r.below(2) == 0 {
            IndexExpr::var(*r.pick(VARS))
        } else {
            IndexExpr::Const(*r.pick(CONSTS))
        };
    }
    let op = *r.pick(&[
        IndexOp::Add,
        IndexOp::Sub,
        IndexOp::Mul,
        IndexOp::Mul,
        IndexOp::Div,
        IndexOp::Mod,
        IndexOp::CDiv,
        IndexOp::Min,
        IndexOp::Max,
    ]);
    let a = gen_expr(r, depth - 1);
    let b = match op {
        // Mostly constant divisors, as in programs.
        IndexOp::Div | IndexOp::Mod | IndexOp::CDiv if r.below(3) != 0 => {
            IndexExpr::Const(*r.pick(&[2, 3, 8, -2, 4_611_686_018_427_387_904]))
        }
        _ => gen_expr(r, depth - 1),
    };
    IndexExpr::bin(op, a, b)
}

fn gen_cmp(r: &mut Rng, depth: u32) -> Pred {
    let op = *r.pick(&[
        CmpOp::Le,
        CmpOp::Lt,
        CmpOp::Ge,
        CmpOp::Gt,
        CmpOp::Eq,
        CmpOp::Ne,
    ]);
    Pred::cmp(op, gen_expr(r, depth), gen_expr(r, depth))
}

/// Facts in the shapes that stress bound propagation: huge upper bounds on variables
/// that may be small, sums of scaled products, binder ranges; plus random ones.
fn gen_fact(r: &mut Rng) -> Pred {
    let v = IndexExpr::var(*r.pick(VARS));
    let w = IndexExpr::var(*r.pick(VARS));
    let big = IndexExpr::Const(*r.pick(&CONSTS[9..]));
    match r.below(5) {
        0 => Pred::cmp(CmpOp::Le, v, big),
        1 => {
            let k = IndexExpr::Const(*r.pick(&[1, 2, 4, 8, 3_037_000_499]));
            let prod = |a: IndexExpr, b: IndexExpr| IndexExpr::mul(k.clone(), IndexExpr::mul(a, b));
            let x = IndexExpr::var(*r.pick(VARS));
            let y = IndexExpr::var(*r.pick(VARS));
            Pred::cmp(
                CmpOp::Ge,
                IndexExpr::add(prod(v, w), prod(x, y)),
                IndexExpr::var(*r.pick(VARS)),
            )
        }
        2 => Pred::and(
            Pred::cmp(CmpOp::Le, IndexExpr::Const(0), v.clone()),
            Pred::cmp(CmpOp::Lt, v, gen_expr(r, 1)),
        ),
        _ => gen_cmp(r, 2),
    }
}

/// The shape of the reproducer, with its constants varied: every variable a
/// size bounded by one huge constant, and a sum of two scaled products bounding a
/// variable. The sums of the products' upper bounds land near `i128::MAX`.
fn gen_stress(r: &mut Rng) -> Facts {
    let bound = IndexExpr::Const(*r.pick(&[
        4_611_686_018_427_387_904,
        4_611_686_018_427_387_903,
        9_223_372_036_854_775_807,
    ]));
    let all_bounded = VARS
        .iter()
        .map(|v| Pred::cmp(CmpOp::Le, IndexExpr::var(*v), bound.clone()))
        .reduce(Pred::and)
        .unwrap_or(Pred::Bool(true));
    let product = |r: &mut Rng| {
        let k = IndexExpr::Const(*r.pick(&[2, 4, 8]));
        let (a, b) = (IndexExpr::var(*r.pick(VARS)), IndexExpr::var(*r.pick(VARS)));
        IndexExpr::mul(k, IndexExpr::mul(a, b))
    };
    let sum = IndexExpr::add(product(r), product(r));
    Facts {
        sizes: VARS.iter().map(|s| s.to_string()).collect(),
        facts: vec![
            all_bounded,
            Pred::cmp(CmpOp::Ge, sum, IndexExpr::var(*r.pick(VARS))),
        ],
        arrays: Vec::new(),
    }
}

/// Random assignments, small values first (the ones that satisfy huge bounds).
fn points(r: &mut Rng, count: usize) -> Vec<[i64; 4]> {
    (0..count)
        .map(|_| {
            let mut p = [0i64; 4];
            for (k, x) in p.iter_mut().enumerate() {
                let v = match r.below(8) {
                    0 => *r.pick(CONSTS),
                    _ => r.below(13) as i64 - 3,
                };
                // Sizes are >= 1 (in stress cases, every variable is a size).
                *x = if k < SIZES.len() && v < 1 { 1 } else { v };
            }
            p
        })
        .collect()
}

fn env(p: &[i64; 4]) -> impl Fn(&str) -> Option<i64> + '_ {
    move |name: &str| VARS.iter().position(|v| *v == name).map(|k| p[k])
}

/// Every fast-path "proved" must survive z3 (no refutation, whose counterexample is
/// checked by evaluation) and random points (facts true implies goal true); every
/// "refuted" of the full solver must carry a counterexample that re-evaluates as one.
/// With the overflow fix reverted (`total - u` unchecked in `fast.rs`'s `propagate`),
/// this test fails.
#[test]
fn random_answers_are_checked() {
    let mut r = Rng(0x0a71_5017_dead_beef);
    let fast = fast_only();
    let z3 = z3_quick();
    let full = Solver::with_config(SolverConfig {
        cache: false,
        ..SolverConfig::default()
    });
    let mut proved = 0;
    let mut refuted = 0;
    let mut z3_asked = 0;
    for case in 0..1200 {
        let facts = if r.below(4) == 0 {
            gen_stress(&mut r)
        } else {
            Facts {
                sizes: SIZES.iter().map(|s| s.to_string()).collect(),
                facts: (0..1 + r.below(3)).map(|_| gen_fact(&mut r)).collect(),
                arrays: Vec::new(),
            }
        };
        let goal = gen_cmp(&mut r, 2);
        let pts = points(&mut r, 200);
        if fast.prove(&facts, &goal).is_proved() {
            proved += 1;
            for p in &pts {
                let e = env(p);
                if facts.holds(&e) {
                    // An overflowing evaluation of the goal is not a counterexample:
                    // the prover reasons over unbounded integers.
                    assert_ne!(
                        goal.eval(&e),
                        Ok(false),
                        "case {case}: fast path proved `{goal}` under {:?}, false at {p:?}",
                        facts.facts.iter().map(Pred::to_string).collect::<Vec<_>>()
                    );
                }
            }
            // z3 on a sample (it costs milliseconds each; the non-linear ones more).
            if case % 6 == 0 {
                z3_asked += 1;
                let v = z3.prove(&facts, &goal);
                assert!(
                    !v.is_refuted(),
                    "case {case}: fast path proved `{goal}`, z3 refutes: {v}"
                );
            }
        } else if case % 10 == 1
            && let Verdict::Refuted(cex) = full.prove(&facts, &goal)
        {
            refuted += 1;
            // In exact (128-bit) arithmetic: a counterexample may need values whose
            // products leave 64 bits (the prover reasons over unbounded integers).
            let e = |name: &str| cex.get(name);
            assert!(
                facts.sizes.iter().all(|s| e(s).is_some_and(|v| v >= 1))
                    && facts.facts.iter().all(|f| f.eval_wide(&e) == Ok(true)),
                "case {case}: {cex} violates the facts"
            );
            assert_eq!(goal.eval_wide(&e), Ok(false), "case {case}: {cex}");
        }
    }
    // The generator must exercise both answers, or the test checks nothing.
    assert!(proved >= 100, "only {proved} fast-path proofs");
    assert!(refuted >= 20, "only {refuted} refutations");
    assert!(z3_asked >= 40, "{z3_asked}");
}

/// Issue 17, hole 6: `[n*n*n + m*m*m == k*k*k] * f[i + 1]` made the access-safety
/// query `n³ + m³ == k³ ⇒ i + 1 < n` (true: Fermat, exponent 3) run for minutes,
/// because z3's `smt` tactic does not count its non-linear work against `rlimit`. It
/// must now end, as "unknown" (a refusal) or a correct answer: about 9 s (the `smt`
/// tactic's wall-clock bound, then `QF_NIA` until its `rlimit`).
#[test]
fn hopeless_nonlinear_queries_are_bounded() {
    let solver = z3_only();
    let facts = Facts {
        sizes: ["n", "m", "k"].map(String::from).to_vec(),
        facts: vec![pred("0 <= i && i < n"), pred("n*n*n + m*m*m == k*k*k")],
        arrays: Vec::new(),
    };
    let start = std::time::Instant::now();
    let v = solver.prove(&facts, &pred("i + 1 < n"));
    let took = start.elapsed();
    assert!(matches!(v, Verdict::Unknown(_) | Verdict::Proved), "{v}");
    assert!(took.as_secs() < 30, "{took:?}");
}

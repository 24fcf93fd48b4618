//! Soundness properties of the pad types and of the gate, against the
//! padding-marking evaluator (`atl_padtypes::marked`, thesis §5.5.1):
//!
//! 1. *Pad-type soundness* (thesis Theorem 1): for random programs, at small sizes,
//!    every position the inferred pad predicate claims is padding evaluates to a pad.
//! 2. *Gate soundness*: whenever `check_program` accepts a program, running it never
//!    truncates a computed element and never reads out of bounds.
//! 3. The marked evaluator agrees with the reference interpreter on values.
//!
//! Programs come from two sources: a generator that composes every construct (with the
//! adjoint pairs of thesis Figure 4.6 — `trunc_r(k, pad_r(k, e))`, the tiling identity,
//! double transposition, `split(m, flatten(e))` — and their unsafe near-misses), and
//! derivations that apply random rules of the standard library (adjoint pairs
//! introduced with `rw<-`, then unfolded and simplified) to generated programs.

use std::collections::BTreeMap;

use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_lang::interp::{EvalOptions, Tensor, eval_def};
use atl_lang::ir::{AmountOp, BinOp, Expr, ExprKind, Program};
use atl_lang::pretty::{Style, body_to_string};
use atl_lang::shapes::{self, Shape, ShapeEnv};
use atl_padtypes::marked::{Cell, eval_marked_checked};
use atl_solver::Solver;
use proptest::prelude::*;

mod common;

// The shared splitmix64 generator, driven by proptest's seed.
use atl_lang::rng::SplitMix64 as Rng;

const HEADER: &str = "size n, m\ninput f : [n]\ninput g : [n, m]\n";

fn v(name: &str) -> IndexExpr {
    IndexExpr::var(name)
}

fn k(c: i64) -> IndexExpr {
    IndexExpr::Const(c)
}

fn amount(e: Expr, op: AmountOp, a: IndexExpr) -> Expr {
    Expr::synth(ExprKind::Amount {
        op,
        amount: a,
        arg: Box::new(e),
    })
}

struct Gen<'a> {
    rng: Rng,
    env: &'a ShapeEnv,
    fresh: usize,
    /// Index binders in scope with their extents.
    binders: Vec<(String, IndexExpr)>,
    /// Let variables in scope with their shapes.
    lets: Vec<(String, Shape)>,
}

impl Gen<'_> {
    fn name(&mut self, base: &str) -> String {
        self.fresh += 1;
        format!("{base}{}", self.fresh)
    }

    fn shape(&self, e: &Expr) -> Shape {
        let mut lets = self.lets.clone();
        shapes::infer_with_lets(self.env, &mut lets, e).expect("generated programs are well-shaped")
    }

    /// A random index expression over the binders in scope: mostly in range.
    fn index(&mut self) -> IndexExpr {
        if self.binders.is_empty() || self.rng.chance(15) {
            return k(self.rng.below(3) as i64);
        }
        let (b, _) = self.binders[self.rng.below(self.binders.len())].clone();
        match self.rng.below(4) {
            0 => IndexExpr::add(v(&b), k(1)),
            1 => IndexExpr::sub(v(&b), k(1)),
            _ => v(&b),
        }
    }

    /// A random guard predicate over the binders in scope.
    fn pred(&mut self) -> Pred {
        let a = self.index();
        let ops = [CmpOp::Lt, CmpOp::Le, CmpOp::Ge, CmpOp::Ne, CmpOp::Eq];
        let op = ops[self.rng.below(ops.len())];
        let b = match self.rng.below(3) {
            0 => v("n"),
            1 => IndexExpr::sub(v("m"), k(1)),
            _ => k(self.rng.below(3) as i64),
        };
        let p = Pred::cmp(op, a, b);
        if self.rng.chance(20) {
            Pred::or(p, self.pred())
        } else {
            p
        }
    }

    /// Indexes `e` (of shape `shape`) down to a scalar with in-range binders where
    /// possible: `gen`s over the remaining dimensions are opened by the caller.
    fn scalar(&mut self, depth: usize) -> Expr {
        let choice = if depth == 0 {
            self.rng.below(3)
        } else {
            self.rng.below(9)
        };
        match choice {
            0 => Expr::lit([1.0, -2.0, 0.5][self.rng.below(3)]),
            1 => Expr::access(Expr::input("f"), self.index()),
            2 => Expr::access(Expr::access(Expr::input("g"), self.index()), self.index()),
            3 => Expr::binary(BinOp::Add, self.scalar(depth - 1), self.scalar(depth - 1)),
            4 => Expr::binary(BinOp::Mul, self.scalar(depth - 1), self.scalar(depth - 1)),
            5 => Expr::guard(self.pred(), self.scalar(depth - 1)),
            6 => {
                let b = self.name("s");
                self.binders.push((b.clone(), k(2)));
                let body = self.scalar(depth - 1);
                self.binders.pop();
                Expr::sum(b, k(0), k(2), body)
            }
            7 => {
                // Index a random tensor all the way down.
                let t = self.tensor(depth - 1);
                let rank = self.shape(&t).len();
                let mut e = t;
                for _ in 0..rank {
                    e = Expr::access(e, self.index());
                }
                e
            }
            _ => Expr::synth(ExprKind::Neg(Box::new(self.scalar(depth - 1)))),
        }
    }

    /// `gen c0 < d0, …: [p] * x[c0, …]` over `x`'s whole shape: a same-shaped variant
    /// of a let-bound tensor, in bounds by construction.
    fn variant(&mut self, x: &str, shape: &Shape) -> Expr {
        let names: Vec<String> = shape.iter().map(|_| self.name("c")).collect();
        for (n, d) in names.iter().zip(shape) {
            self.binders.push((n.clone(), d.clone()));
        }
        let mut body = Expr::var(x);
        for n in &names {
            body = Expr::access(body, v(n));
        }
        if self.rng.chance(60) {
            body = Expr::guard(self.pred(), body);
        }
        for _ in &names {
            self.binders.pop();
        }
        for (n, d) in names.iter().zip(shape).rev() {
            body = Expr::gen_(n.clone(), k(0), d.clone(), body);
        }
        body
    }

    /// Binds `t` to a fresh let variable and builds a body from it.
    fn with_let(&mut self, t: Expr, body: impl FnOnce(&mut Self, &str, &Shape) -> Expr) -> Expr {
        let shape = self.shape(&t);
        let x = self.name("x");
        self.lets.push((x.clone(), shape.clone()));
        let b = body(self, &x, &shape);
        self.lets.pop();
        Expr::let_(x, t, b)
    }

    /// A random tensor of rank >= 1.
    fn tensor(&mut self, depth: usize) -> Expr {
        if depth == 0 {
            return match self.rng.below(4) {
                0 => Expr::input("f"),
                1 => Expr::input("g"),
                _ => {
                    let b = self.name("i");
                    self.binders.push((b.clone(), v("n")));
                    let body = if self.rng.chance(50) {
                        Expr::guard(self.pred(), self.scalar(1))
                    } else {
                        self.scalar(1)
                    };
                    self.binders.pop();
                    Expr::gen_(b, k(0), v("n"), body)
                }
            };
        }
        let d = depth - 1;
        match self.rng.below(22) {
            0 => {
                let b = self.name("i");
                let hi = if self.rng.chance(50) { v("m") } else { k(2) };
                self.binders.push((b.clone(), hi.clone()));
                let body = if self.rng.chance(50) {
                    self.tensor(d)
                } else {
                    self.scalar(d)
                };
                self.binders.pop();
                Expr::gen_(b, k(0), hi, body)
            }
            1 => Expr::guard(self.pred(), self.tensor(d)),
            2 => {
                let b = self.name("r");
                self.binders.push((b.clone(), k(3)));
                let body = self.tensor(d);
                self.binders.pop();
                Expr::sum(b, k(0), k(3), body)
            }
            3 => {
                let t = self.tensor(d);
                self.with_let(t, |g, x, s| {
                    let other = g.variant(x, s);
                    let op = if g.rng.chance(80) {
                        BinOp::Add
                    } else {
                        BinOp::Sub
                    };
                    Expr::binary(op, Expr::var(x), other)
                })
            }
            4 => Expr::synth(ExprKind::Neg(Box::new(self.tensor(d)))),
            5 | 6 => {
                let op = if self.rng.chance(50) {
                    AmountOp::PadL
                } else {
                    AmountOp::PadR
                };
                let a = [k(0), k(1), k(2), v("n")][self.rng.below(4)].clone();
                amount(self.tensor(d), op, a)
            }
            7 => {
                let op = if self.rng.chance(50) {
                    AmountOp::TruncL
                } else {
                    AmountOp::TruncR
                };
                amount(self.tensor(d), op, k(1 + self.rng.below(2) as i64))
            }
            8 => amount(
                self.tensor(d),
                AmountOp::Split,
                k(1 + self.rng.below(3) as i64),
            ),
            9 | 10 => {
                let t = self.tensor(d);
                if self.shape(&t).len() >= 2 {
                    if self.rng.chance(50) {
                        Expr::synth(ExprKind::Flatten(Box::new(t)))
                    } else {
                        Expr::synth(ExprKind::Transpose(Box::new(t)))
                    }
                } else {
                    amount(t, AmountOp::Split, k(2))
                }
            }
            11 => {
                let t = self.tensor(d);
                self.with_let(t, |g, x, s| {
                    let other = g.variant(x, s);
                    let other = if g.rng.chance(50) {
                        amount(other, AmountOp::TruncL, k(1))
                    } else {
                        amount(other, AmountOp::PadR, k(1))
                    };
                    Expr::synth(ExprKind::Concat(Box::new(Expr::var(x)), Box::new(other)))
                })
            }
            // The adjoint pairs of thesis Figure 4.6, and near misses.
            12 | 13 => {
                let (pad, trunc) = if self.rng.chance(50) {
                    (AmountOp::PadR, AmountOp::TruncR)
                } else {
                    (AmountOp::PadL, AmountOp::TruncL)
                };
                let a = [k(1), k(2), v("n")][self.rng.below(3)].clone();
                let t = amount(self.tensor(d), pad, a.clone());
                let t = if self.rng.chance(30) {
                    Expr::guard(self.pred(), t)
                } else {
                    t
                };
                amount(t, trunc, a)
            }
            14 | 15 => {
                let t = self.tensor(d);
                let n0 = self.shape(&t)[0].clone();
                let c = k(1 + self.rng.below(3) as i64);
                let tail = IndexExpr::sub(
                    IndexExpr::mul(
                        IndexExpr::bin(IndexOp::CDiv, n0.clone(), c.clone()),
                        c.clone(),
                    ),
                    n0,
                );
                let flat = Expr::synth(ExprKind::Flatten(Box::new(amount(t, AmountOp::Split, c))));
                amount(flat, AmountOp::TruncR, tail)
            }
            16 => {
                let t = self.tensor(d);
                if self.shape(&t).len() >= 2 {
                    let inner = Expr::synth(ExprKind::Transpose(Box::new(t)));
                    Expr::synth(ExprKind::Transpose(Box::new(inner)))
                } else {
                    t
                }
            }
            17 => {
                let t = self.tensor(d);
                let s = self.shape(&t);
                if s.len() >= 2 {
                    let flat = Expr::synth(ExprKind::Flatten(Box::new(t)));
                    amount(flat, AmountOp::Split, s[1].clone())
                } else {
                    t
                }
            }
            18 => {
                let t = self.tensor(d);
                if self.shape(&t).len() >= 2 {
                    Expr::access(t, self.index())
                } else {
                    t
                }
            }
            19 => {
                let t = self.tensor(d);
                self.with_let(t, |g, x, s| {
                    if g.rng.chance(50) {
                        g.variant(x, s)
                    } else {
                        Expr::var(x)
                    }
                })
            }
            _ => {
                // A generator over the rows of a random tensor, guarding the tail.
                let t = self.tensor(d);
                self.with_let(t, |g, x, s| {
                    let b = g.name("i");
                    let hi = IndexExpr::add(s[0].clone(), k(g.rng.below(2) as i64));
                    g.binders.push((b.clone(), hi.clone()));
                    let mut body = Expr::access(Expr::var(x), v(&b));
                    if g.rng.chance(70) {
                        body = Expr::guard(Pred::cmp(CmpOp::Lt, v(&b), s[0].clone()), body);
                    }
                    g.binders.pop();
                    Expr::gen_(b, k(0), hi, body)
                })
            }
        }
    }
}

/// A random program: a first definition and a second one that may use it.
fn random_program(seed: u64, depth: usize) -> String {
    let (checked, _) = atl_lang::check_source(HEADER);
    let base = checked.expect("the header checks");
    let mut g = Gen {
        rng: Rng::new(seed),
        env: &base.shapes,
        fresh: 0,
        binders: Vec::new(),
        lets: Vec::new(),
    };
    let a = g.tensor(depth);
    let mut env = base.shapes.clone();
    let a_shape = g.shape(&a);
    env.globals.insert("a".to_string(), a_shape.clone());
    let mut g2 = Gen {
        rng: Rng::new(seed ^ 0x5555),
        env: &env,
        fresh: g.fresh,
        binders: Vec::new(),
        lets: Vec::new(),
    };
    let use_a = Expr::synth(ExprKind::DefRef("a".to_string()));
    // `trunc_r(1, a)` needs a first extent of at least 1: a constant extent of 0 (for
    // example `trunc_l(2, gen i < 2: …)`) is rejected by the front end, so it takes
    // another branch.
    let empty = matches!(
        atl_lang::poly::normalize(&a_shape[0]),
        IndexExpr::Const(c) if c < 1
    );
    let choice = match g2.rng.below(3) {
        0 if empty => 1,
        c => c,
    };
    let b = match choice {
        0 => amount(use_a, AmountOp::TruncR, k(1)),
        1 => g2.with_let(use_a, |gg, x, s| {
            let other = gg.variant(x, s);
            Expr::binary(BinOp::Add, other, Expr::var(x))
        }),
        _ => {
            let n0 = a_shape[0].clone();
            let tail = IndexExpr::sub(
                IndexExpr::mul(IndexExpr::bin(IndexOp::CDiv, n0.clone(), k(2)), k(2)),
                n0,
            );
            let flat = Expr::synth(ExprKind::Flatten(Box::new(amount(
                use_a,
                AmountOp::Split,
                k(2),
            ))));
            amount(flat, AmountOp::TruncR, tail)
        }
    };
    let style = Style::default();
    format!(
        "{HEADER}\ndef a =\n{}\n\ndef b =\n{}\n",
        body_to_string(&a, style, "  "),
        body_to_string(&b, style, "  ")
    )
}

const SIZES: [(i64, i64); 4] = [(1, 1), (2, 3), (3, 2), (5, 4)];

/// What one program contributed (to check that the properties are not vacuous).
#[derive(Default, Debug)]
struct Tally {
    claimed: usize,
    pads: usize,
    accepted: usize,
    derived: usize,
}

fn inputs(sizes: &BTreeMap<String, i64>, seed: u64) -> BTreeMap<String, Tensor> {
    let n = sizes["n"] as usize;
    let m = sizes["m"] as usize;
    BTreeMap::from([
        ("f".to_string(), Tensor::random(vec![n], seed)),
        ("g".to_string(), Tensor::random(vec![n, m], seed + 1)),
    ])
}

/// Checks the three properties on every definition of a program.
fn check_program(program: &Program, shapes: &ShapeEnv, solver: &Solver, source: &str) -> Tally {
    let mut tally = Tally::default();
    let accepted = atl_padtypes::check_program(program, shapes, solver).is_empty();
    tally.accepted += usize::from(accepted);
    for def in &program.defs {
        let Some(ty) = atl_padtypes::def_pad_type(program, shapes, &def.name) else {
            panic!("no pad type for `{}`:\n{source}", def.name);
        };
        for (n, m) in SIZES {
            let sizes = BTreeMap::from([("n".to_string(), n), ("m".to_string(), m)]);
            let inputs = inputs(&sizes, 7);
            let Ok((marked, violations)) =
                eval_marked_checked(program, shapes, &sizes, &inputs, &def.body)
            else {
                // Invalid amounts at these sizes; the gate must have said so.
                assert!(
                    !accepted,
                    "the gate accepts a program that fails at n={n}, m={m}:\n{source}"
                );
                continue;
            };
            assert!(
                !accepted || violations.is_empty(),
                "the gate accepts `{}`, but at n={n}, m={m} it does {violations:?}:\n{source}",
                def.name
            );
            if let Ok(reference) =
                eval_def(program, &def.name, &sizes, &inputs, &EvalOptions::default())
            {
                assert_eq!(
                    reference.shape, marked.shape,
                    "shape of `{}`:\n{source}",
                    def.name
                );
                assert_eq!(
                    reference.data,
                    marked.values(),
                    "values of `{}`:\n{source}",
                    def.name
                );
            }
            let env = |name: &str| sizes.get(name).copied();
            let mut pos = vec![0i64; marked.shape.len()];
            for (flat, cell) in marked.cells.iter().enumerate() {
                let mut rest = flat;
                for d in (0..pos.len()).rev() {
                    pos[d] = (rest % marked.shape[d]) as i64;
                    rest /= marked.shape[d];
                }
                tally.pads += usize::from(cell.is_pad());
                let claimed = ty.is_padding_at(&env, &pos);
                assert!(
                    claimed.is_some(),
                    "the pad predicate of `{}` cannot be evaluated: {}",
                    def.name,
                    ty.pred
                );
                if claimed == Some(true) {
                    tally.claimed += 1;
                    assert_eq!(
                        *cell,
                        Cell::Pad,
                        "`{}` at n={n}, m={m}, position {pos:?} is claimed padding by {} but is {cell:?}:\n{source}",
                        def.name,
                        ty
                    );
                }
            }
        }
    }
    tally
}

fn run_generated(seed: u64, solver: &Solver) -> Tally {
    let source = random_program(seed, 3);
    let loaded = common::load(&source, solver)
        .unwrap_or_else(|| panic!("generated program fails the front end:\n{source}"));
    check_program(&loaded.program, &loaded.shapes, solver, &source)
}

/// Steps that introduce adjoint pairs and unfold them, or move code around.
const STEPS: &[&str] = &[
    "rw<- tile_id with k := 2",
    "rw<- tile_id with k := 3",
    "rw<- trunc_pad_r with k := 1",
    "rw<- trunc_pad_l with k := 2",
    "rw<- transpose_transpose",
    "rw split_def",
    "rw pad_r_def",
    "rw pad_l_def",
    "rw trunc_r_def",
    "rw trunc_l_def",
    "rw flatten_def",
    "rw transpose_def",
    "rw concat_def",
    "rw flatten_split",
    "rw get_gen",
    "rw get_gen_guard",
    "rw get_split",
    "rw get_flatten",
    "rw get_pad_r",
    "rw get_pad_l",
    "rw get_trunc_r",
    "rw get_trunc_l",
    "rw unfold_let",
    "rw guard_lift_gen",
    "rw sum_gen",
    "rw gen_swap",
    "simpl",
    "simpl_guard",
];

/// One `rw` step text with an optional `at N` (before `with`, which must come last).
fn step_text(rng: &mut Rng) -> String {
    let step = STEPS[rng.below(STEPS.len())];
    let at = if step.starts_with("rw") && rng.chance(30) {
        format!(" at {}", 1 + rng.below(3))
    } else {
        String::new()
    };
    match step.split_once(" with ") {
        Some((head, with)) => format!("{head}{at} with {with}"),
        None => format!("{step}{at}"),
    }
}

fn with_derivations(base: &str, derivations: &[(&str, &str, Vec<String>)]) -> String {
    let mut source = base.to_string();
    for (name, from, steps) in derivations {
        source.push_str(&format!("\nderive {name} from {from} {{\n"));
        for step in steps {
            source.push_str(&format!("  {step}\n"));
        }
        source.push_str("}\n");
    }
    source
}

/// Random derivations from both definitions, grown one step at a time: a step that
/// fails (no match, unprovable side condition) is dropped, so that the derived programs
/// are long chains of rule applications rather than mostly failures.
fn run_derived(seed: u64, solver: &Solver) -> Tally {
    let mut rng = Rng::new(seed.wrapping_mul(31).wrapping_add(17));
    let base = random_program(seed, 2);
    let mut derivations: Vec<(&str, &str, Vec<String>)> =
        vec![("d1", "a", Vec::new()), ("d2", "b", Vec::new())];
    for which in 0..derivations.len() {
        for _ in 0..6 {
            let step = step_text(&mut rng);
            let mut candidate = derivations.clone();
            candidate[which].2.push(step);
            let source = with_derivations(&base, &candidate[..=which]);
            let Some(loaded) = common::load(&source, solver) else {
                panic!("generated program fails the front end:\n{source}");
            };
            if loaded.program.def(candidate[which].0).is_some() {
                derivations = candidate;
            }
        }
    }
    let source = with_derivations(&base, &derivations);
    let loaded = common::load(&source, solver)
        .unwrap_or_else(|| panic!("generated program fails the front end:\n{source}"));
    let mut tally = check_program(&loaded.program, &loaded.shapes, solver, &source);
    tally.derived = derivations.iter().map(|d| d.2.len()).sum();
    tally
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    #[test]
    fn pad_types_are_sound_on_generated_programs(seed in any::<u64>()) {
        let solver = Solver::new();
        run_generated(seed, &solver);
    }
}

proptest! {
    // Each case runs a dozen derivation attempts: fewer cases.
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    #[test]
    fn pad_types_are_sound_on_derived_programs(seed in any::<u64>()) {
        let solver = Solver::new();
        run_derived(seed, &solver);
    }
}

/// The properties above are not vacuous: over a fixed set of seeds the checker claims
/// many padding positions, and accepts a fair share of the programs.
#[test]
fn the_properties_are_exercised() {
    let solver = Solver::new();
    let mut total = Tally::default();
    for seed in 0..40 {
        let t = run_generated(seed, &solver);
        total.claimed += t.claimed;
        total.pads += t.pads;
        total.accepted += t.accepted;
    }
    for seed in 0..12 {
        total.derived += run_derived(seed, &solver).derived;
    }
    assert!(total.claimed >= 150, "{total:?}");
    // Successful rule applications in the derived programs.
    assert!(total.derived >= 25, "{total:?}");
    assert!(total.accepted >= 10, "{total:?}");
    // Precision is not soundness, but a checker that claims almost nothing would pass
    // the properties trivially.
    assert!(total.claimed * 4 >= total.pads, "{total:?}");
}

//! The z3 backend: encodes index expressions and predicates into z3's integer
//! arithmetic and decides a query, with deterministic resource limits.
//!
//! Division: z3's `div`/`mod` on `Int` are Euclidean (the remainder is always
//! non-negative), while ATL's `/` is floor division with `a / 0 = 0` and `a % 0 = a`
//! (DESIGN §3.2). The two agree when the divisor is positive, so the encoding reduces
//! every case to a positive divisor:
//!
//! ```text
//! a / b  =  ite(b = 0, 0, ite(b > 0, a div b, (-a) div (-b)))
//! a % b  =  ite(b = 0, a, ite(b > 0, a mod b, -((-a) mod (-b))))
//! cdiv(a, b) = -((-a) / b)
//! ```
//!
//! (`floor(a/b) = floor((-a)/(-b))`, and `a - b*floor((-a)/(-b)) = -((-a) mod (-b))`.)
//! A constant divisor selects its branch at encoding time, so the common queries stay
//! in linear arithmetic with z3's native constant division.
//!
//! Determinism: every query gets a fresh z3 context and solver, so its outcome cannot
//! depend on earlier queries (z3's term ids and learned state would otherwise leak
//! between queries, and rayon decides which thread ran what before). Effort is bounded
//! by z3's `rlimit` (a count of internal operations, independent of machine load)
//! wherever z3 honours it.
//!
//! Bounded queries (issue 17). z3 4.8.12's `smt` tactic does not count the work of
//! its non-linear arithmetic (the nlsat calls of the arithmetic solver) against
//! `rlimit`: on `n³ + m³ == k³ ⇒ i + 1 < n` it ran for minutes with an `rlimit` count
//! below 20,000, and no parameter we tried bounds it deterministically (`max_conflicts`
//! counts other conflicts; `arith.nl.nra = false` makes it count, but loses the
//! symbolic-divisor proofs the index rules need, and `nlsat.max_conflicts` makes nlsat
//! report wrong models). So:
//!
//! - a linear query goes to the `smt` tactic, bounded by `rlimit`;
//! - a non-linear query goes to the `smt` tactic bounded by `rlimit` *and* by a
//!   wall-clock limit ([`NONLINEAR_SMT_TIMEOUT_MS`]), then, if that gave up, to z3's
//!   `QF_NIA` strategy, which honours `rlimit` (≈3 s at `DEFAULT_RLIMIT`);
//! - every check also carries a wall-clock backstop ([`TIMEOUT_BACKSTOP_MS`]) for any
//!   other path that ignores `rlimit`.
//!
//! A time limit that is reached gives `Unknown` (a refusal), never "proved". The only
//! answers that can depend on machine load are non-linear queries the `smt` tactic
//! needs more than [`NONLINEAR_SMT_TIMEOUT_MS`] for and `QF_NIA` cannot decide: those
//! are refused under load and decided otherwise, both sound; the cache keeps an
//! answer stable within a process.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use z3::ast::{Ast, Bool, Int};
use z3::{Config, Context, Params, SatResult, Tactic};

use crate::query::{Counterexample, Facts, Verdict};

/// Variables of a counterexample are first searched in `[-SMALL_MODEL, SMALL_MODEL]`
/// so that diagnostics show small numbers when small numbers exist.
const SMALL_MODEL: i64 = 32;

/// z3's wall-clock limit per check, in milliseconds: a backstop behind `rlimit`, for
/// z3 code that does not count its work. Reaching it gives `Unknown`.
pub(crate) const TIMEOUT_BACKSTOP_MS: u32 = 10_000;

/// Wall-clock limit of the `smt` tactic on a non-linear query (it ignores `rlimit`
/// there; see the module documentation). The slowest non-linear proofs of the tests
/// (symbolic-divisor index rules) take about 2 s on a loaded machine; `QF_NIA` gets
/// its own, `rlimit`-bounded, attempt afterwards.
pub(crate) const NONLINEAR_SMT_TIMEOUT_MS: u32 = 6_000;

/// Encodes ATL index expressions over one z3 context.
pub(crate) struct Encoder<'c> {
    ctx: &'c Context,
    vars: BTreeMap<String, Int<'c>>,
    /// Signs of variables that the hypotheses fix (sizes are positive, a case split
    /// says `y < 0`, …). A division by such a variable is encoded with the one branch
    /// that applies, instead of the three-way `ite`: equivalent under the hypotheses,
    /// and much easier for z3's non-linear reasoning.
    signs: BTreeMap<String, Ordering>,
}

impl<'c> Encoder<'c> {
    pub(crate) fn new(ctx: &'c Context) -> Encoder<'c> {
        Encoder {
            ctx,
            vars: BTreeMap::new(),
            signs: BTreeMap::new(),
        }
    }

    /// The sign of a divisor: its value if constant, or a sign fixed by the facts.
    fn divisor_sign(&self, b: &IndexExpr) -> Option<Ordering> {
        match b {
            IndexExpr::Const(c) => Some(c.cmp(&0)),
            IndexExpr::Var(name) => self.signs.get(name).copied(),
            IndexExpr::Meta(name) => self.signs.get(&format!("?{name}")).copied(),
            IndexExpr::Neg(a) => self.divisor_sign(a).map(Ordering::reverse),
            IndexExpr::Bin(IndexOp::Mul, x, y) => {
                let (sx, sy) = (self.divisor_sign(x)?, self.divisor_sign(y)?);
                Some(match (sx, sy) {
                    (Ordering::Equal, _) | (_, Ordering::Equal) => Ordering::Equal,
                    _ if sx == sy => Ordering::Greater,
                    _ => Ordering::Less,
                })
            }
            _ => b.as_const().map(|c| c.cmp(&0)),
        }
    }

    fn constant(&self, c: i64) -> Int<'c> {
        Int::from_i64(self.ctx, c)
    }

    pub(crate) fn var(&mut self, name: &str) -> Int<'c> {
        if let Some(v) = self.vars.get(name) {
            return v.clone();
        }
        let v = Int::new_const(self.ctx, name);
        self.vars.insert(name.to_string(), v.clone());
        v
    }

    /// The z3 variables created so far, by name.
    pub(crate) fn vars(&self) -> &BTreeMap<String, Int<'c>> {
        &self.vars
    }

    pub(crate) fn index(&mut self, e: &IndexExpr) -> Int<'c> {
        match e {
            IndexExpr::Const(c) => self.constant(*c),
            IndexExpr::Var(name) => self.var(name),
            // Metavariables are universally quantified like variables; `?` keeps them
            // apart from program names.
            IndexExpr::Meta(name) => self.var(&format!("?{name}")),
            // The prover replaces loads by variables with their facts before z3
            // (`crate::arrays`); one that gets here is an unconstrained integer named
            // by its text (sound: nothing is assumed of it).
            IndexExpr::Load(..) => self.var(&e.to_string()),
            IndexExpr::Neg(a) => self.index(a).unary_minus(),
            IndexExpr::Bin(op, a, b) => {
                let x = self.index(a);
                let y = self.index(b);
                match op {
                    IndexOp::Add => Int::add(self.ctx, &[&x, &y]),
                    IndexOp::Sub => Int::sub(self.ctx, &[&x, &y]),
                    IndexOp::Mul => Int::mul(self.ctx, &[&x, &y]),
                    IndexOp::Div => self.floor_div(&x, &y, self.divisor_sign(b)),
                    IndexOp::Mod => self.floor_mod(&x, &y, self.divisor_sign(b)),
                    IndexOp::CDiv => self
                        .floor_div(&x.unary_minus(), &y, self.divisor_sign(b))
                        .unary_minus(),
                    IndexOp::Min => x.le(&y).ite(&x, &y),
                    IndexOp::Max => x.ge(&y).ite(&x, &y),
                }
            }
        }
    }

    /// Floor division with `a / 0 = 0`, built from Euclidean `div` on a positive
    /// divisor. `sign` is the divisor's sign when it is known.
    pub(crate) fn floor_div(&self, a: &Int<'c>, b: &Int<'c>, sign: Option<Ordering>) -> Int<'c> {
        match sign {
            Some(Ordering::Equal) => self.constant(0),
            Some(Ordering::Greater) => a.div(b),
            Some(Ordering::Less) => a.unary_minus().div(&b.unary_minus()),
            None => {
                let zero = self.constant(0);
                let positive = a.div(b);
                let negative = a.unary_minus().div(&b.unary_minus());
                b._eq(&zero)
                    .ite(&zero, &b.gt(&zero).ite(&positive, &negative))
            }
        }
    }

    /// Floor modulo with `a % 0 = a` (the sign follows the divisor).
    pub(crate) fn floor_mod(&self, a: &Int<'c>, b: &Int<'c>, sign: Option<Ordering>) -> Int<'c> {
        match sign {
            Some(Ordering::Equal) => a.clone(),
            Some(Ordering::Greater) => a.modulo(b),
            Some(Ordering::Less) => a.unary_minus().modulo(&b.unary_minus()).unary_minus(),
            None => {
                let zero = self.constant(0);
                let positive = a.modulo(b);
                let negative = a.unary_minus().modulo(&b.unary_minus()).unary_minus();
                b._eq(&zero).ite(a, &b.gt(&zero).ite(&positive, &negative))
            }
        }
    }

    pub(crate) fn pred(&mut self, p: &Pred) -> Bool<'c> {
        match p {
            Pred::Bool(b) => Bool::from_bool(self.ctx, *b),
            Pred::Cmp(op, a, b) => {
                let x = self.index(a);
                let y = self.index(b);
                match op {
                    CmpOp::Eq => x._eq(&y),
                    CmpOp::Ne => x._eq(&y).not(),
                    CmpOp::Lt => x.lt(&y),
                    CmpOp::Le => x.le(&y),
                    CmpOp::Gt => x.gt(&y),
                    CmpOp::Ge => x.ge(&y),
                }
            }
            Pred::And(a, b) => {
                let x = self.pred(a);
                let y = self.pred(b);
                Bool::and(self.ctx, &[&x, &y])
            }
            Pred::Or(a, b) => {
                let x = self.pred(a);
                let y = self.pred(b);
                Bool::or(self.ctx, &[&x, &y])
            }
            Pred::Not(a) => self.pred(a).not(),
        }
    }
}

/// Signs of variables fixed by the hypotheses: sizes are positive, and top-level
/// facts `v > c`, `v >= c`, `v < c`, `v <= c`, `v == c` (either way round) with a
/// constant that settles the sign.
fn known_signs(facts: &Facts) -> BTreeMap<String, Ordering> {
    fn note(p: &Pred, out: &mut BTreeMap<String, Ordering>) {
        match p {
            Pred::And(a, b) => {
                note(a, out);
                note(b, out);
            }
            Pred::Cmp(op, a, b) => {
                let (name, op, c) = match (a, b) {
                    (IndexExpr::Var(v), IndexExpr::Const(c)) => (v, *op, *c),
                    (IndexExpr::Const(c), IndexExpr::Var(v)) => {
                        let flipped = match op {
                            CmpOp::Lt => CmpOp::Gt,
                            CmpOp::Le => CmpOp::Ge,
                            CmpOp::Gt => CmpOp::Lt,
                            CmpOp::Ge => CmpOp::Le,
                            other => *other,
                        };
                        (v, flipped, *c)
                    }
                    _ => return,
                };
                let sign = match op {
                    CmpOp::Gt if c >= 0 => Ordering::Greater,
                    CmpOp::Ge if c >= 1 => Ordering::Greater,
                    CmpOp::Lt if c <= 0 => Ordering::Less,
                    CmpOp::Le if c <= -1 => Ordering::Less,
                    CmpOp::Eq => c.cmp(&0),
                    _ => return,
                };
                out.insert(name.clone(), sign);
            }
            _ => {}
        }
    }
    let mut out = BTreeMap::new();
    for s in &facts.sizes {
        out.insert(s.clone(), Ordering::Greater);
    }
    for f in &facts.facts {
        note(f, &mut out);
    }
    out
}

/// Outcome of one satisfiability check of "facts and not goal".
enum Check {
    Unsat,
    /// A model, with small values when a small model exists.
    Sat(BTreeMap<String, i64>),
    /// Satisfiable, but no model with 64-bit values was found.
    SatHuge,
    Unknown(String),
}

/// The z3 configurations. The plain `smt` tactic is fast for the linear queries that
/// dominate; on non-linear ones it needs a wall-clock bound (`NonlinearSmt`). z3's
/// `QF_NIA` strategy (with nlsat) is slower to set up but decides more non-linear
/// queries, and honours `rlimit`.
#[derive(Clone, Copy)]
enum Strategy {
    Smt,
    NonlinearSmt,
    Nia,
}

fn model_values(solver: &z3::Solver<'_>, enc: &Encoder<'_>) -> Option<BTreeMap<String, i64>> {
    let model = solver.get_model()?;
    let mut values = BTreeMap::new();
    for (name, var) in enc.vars() {
        values.insert(name.clone(), model.eval(var, true)?.as_i64()?);
    }
    Some(values)
}

fn check(facts: &Facts, goal: &Pred, rlimit: u32, strategy: Strategy) -> Check {
    // No process may be forked while z3 runs (its timers and a fork handler of z3
    // 4.8.12 corrupt the heap otherwise: `atl_lang::fork_guard`). Taken before the
    // context, so that it is released after the context is dropped.
    let _no_fork = atl_lang::fork_guard::solving();
    let ctx = Context::new(&Config::new());
    let solver = match strategy {
        Strategy::Smt | Strategy::NonlinearSmt => Tactic::new(&ctx, "smt").solver(),
        Strategy::Nia => match z3::Solver::new_for_logic(&ctx, "QF_NIA") {
            Some(s) => s,
            None => z3::Solver::new(&ctx),
        },
    };
    let mut params = Params::new(&ctx);
    params.set_u32("rlimit", rlimit);
    let limit_ms = match strategy {
        Strategy::NonlinearSmt => NONLINEAR_SMT_TIMEOUT_MS,
        Strategy::Smt | Strategy::Nia => TIMEOUT_BACKSTOP_MS,
    };
    params.set_u32("timeout", limit_ms);
    solver.set_params(&params);

    let mut enc = Encoder::new(&ctx);
    enc.signs = known_signs(facts);
    let one = Int::from_i64(&ctx, 1);
    for size in &facts.sizes {
        solver.assert(&enc.var(size).ge(&one));
    }
    for fact in &facts.facts {
        solver.assert(&enc.pred(fact));
    }
    solver.assert(&enc.pred(goal).not());
    match crate::watchdog::check_within(&ctx, &solver, limit_ms) {
        SatResult::Unsat => Check::Unsat,
        SatResult::Unknown => Check::Unknown(
            solver
                .get_reason_unknown()
                .unwrap_or_else(|| "no reason given".to_string()),
        ),
        SatResult::Sat => {
            let first = model_values(&solver, &enc);
            if first
                .as_ref()
                .is_some_and(|v| v.values().all(|x| x.abs() <= SMALL_MODEL))
            {
                return Check::Sat(first.unwrap_or_default());
            }
            // Look for a counterexample with small values (it reads better in a
            // diagnostic, and a model with huge values may not fit in 64 bits).
            solver.push();
            let lo = Int::from_i64(&ctx, -SMALL_MODEL);
            let hi = Int::from_i64(&ctx, SMALL_MODEL);
            for v in enc.vars().values() {
                solver.assert(&v.ge(&lo));
                solver.assert(&v.le(&hi));
            }
            let small = match crate::watchdog::check_within(&ctx, &solver, limit_ms) {
                SatResult::Sat => model_values(&solver, &enc),
                _ => None,
            };
            solver.pop(1);
            match small.or(first) {
                Some(values) => Check::Sat(values),
                None => Check::SatHuge,
            }
        }
    }
}

/// Decides `facts => goal` with z3. `Proved` only on `unsat` of "facts and not goal";
/// `Refuted` only with a model that checks out by evaluation.
pub(crate) fn decide(facts: &Facts, goal: &Pred, rlimit: u32) -> Verdict {
    let mut reasons = Vec::new();
    // For linear queries (division only by constants) the `smt` tactic is a decision
    // procedure in practice; the non-linear strategy would only double the cost of
    // the rare resource-limit failure.
    let strategies: &[Strategy] = if is_linear(facts, goal) {
        &[Strategy::Smt]
    } else {
        &[Strategy::NonlinearSmt, Strategy::Nia]
    };
    for &strategy in strategies {
        match check(facts, goal, rlimit, strategy) {
            Check::Unsat => return Verdict::Proved,
            Check::Sat(values) => return checked(facts, goal, values),
            Check::SatHuge => {
                return Verdict::Unknown(
                    "z3 found a counterexample whose values do not fit in 64 bits".to_string(),
                );
            }
            Check::Unknown(reason) => reasons.push(reason),
        }
    }
    reasons.dedup();
    Verdict::Unknown(format!("z3 gave up ({})", reasons.join("; ")))
}

fn linear_index(e: &IndexExpr) -> bool {
    match e {
        IndexExpr::Const(_) | IndexExpr::Var(_) | IndexExpr::Meta(_) => true,
        IndexExpr::Neg(a) | IndexExpr::Load(_, a) => linear_index(a),
        IndexExpr::Bin(op, a, b) => {
            let constant_side = match op {
                IndexOp::Mul => a.as_const().is_some() || b.as_const().is_some(),
                IndexOp::Div | IndexOp::Mod | IndexOp::CDiv => b.as_const().is_some(),
                _ => true,
            };
            constant_side && linear_index(a) && linear_index(b)
        }
    }
}

fn linear_pred(p: &Pred) -> bool {
    match p {
        Pred::Bool(_) => true,
        Pred::Cmp(_, a, b) => linear_index(a) && linear_index(b),
        Pred::And(a, b) | Pred::Or(a, b) => linear_pred(a) && linear_pred(b),
        Pred::Not(a) => linear_pred(a),
    }
}

/// Whether every product has a constant factor and every divisor is a constant.
pub(crate) fn is_linear(facts: &Facts, goal: &Pred) -> bool {
    linear_pred(goal) && facts.facts.iter().all(linear_pred)
}

/// Returns the counterexample only if evaluation confirms it: facts true, goal false.
fn checked(facts: &Facts, goal: &Pred, values: BTreeMap<String, i64>) -> Verdict {
    let cex = Counterexample { values };
    if cex.refutes(facts, goal) {
        Verdict::Refuted(cex)
    } else {
        Verdict::Unknown(format!(
            "z3's model ({cex}) does not falsify the goal when evaluated (overflow or an encoding mismatch)"
        ))
    }
}

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
//! by z3's `rlimit` (a count of internal operations), never by wall-clock time.

use std::collections::BTreeMap;

use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use z3::ast::{Ast, Bool, Int};
use z3::{Config, Context, Params, SatResult, Tactic};

use crate::query::{Counterexample, Facts, Verdict};

/// Variables of a counterexample are first searched in `[-SMALL_MODEL, SMALL_MODEL]`
/// so that diagnostics show small numbers when small numbers exist.
const SMALL_MODEL: i64 = 32;

/// Encodes ATL index expressions over one z3 context.
pub(crate) struct Encoder<'c> {
    ctx: &'c Context,
    vars: BTreeMap<String, Int<'c>>,
}

impl<'c> Encoder<'c> {
    pub(crate) fn new(ctx: &'c Context) -> Encoder<'c> {
        Encoder {
            ctx,
            vars: BTreeMap::new(),
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
            IndexExpr::Neg(a) => self.index(a).unary_minus(),
            IndexExpr::Bin(op, a, b) => {
                let x = self.index(a);
                let y = self.index(b);
                match op {
                    IndexOp::Add => Int::add(self.ctx, &[&x, &y]),
                    IndexOp::Sub => Int::sub(self.ctx, &[&x, &y]),
                    IndexOp::Mul => Int::mul(self.ctx, &[&x, &y]),
                    IndexOp::Div => self.floor_div(&x, &y, b.as_const()),
                    IndexOp::Mod => self.floor_mod(&x, &y, b.as_const()),
                    IndexOp::CDiv => self
                        .floor_div(&x.unary_minus(), &y, b.as_const())
                        .unary_minus(),
                    IndexOp::Min => x.le(&y).ite(&x, &y),
                    IndexOp::Max => x.ge(&y).ite(&x, &y),
                }
            }
        }
    }

    /// Floor division with `a / 0 = 0`, built from Euclidean `div` on a positive
    /// divisor. `known` is the divisor's value when it is a constant.
    pub(crate) fn floor_div(&self, a: &Int<'c>, b: &Int<'c>, known: Option<i64>) -> Int<'c> {
        match known {
            Some(0) => self.constant(0),
            Some(k) if k > 0 => a.div(b),
            Some(_) => a.unary_minus().div(&b.unary_minus()),
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
    pub(crate) fn floor_mod(&self, a: &Int<'c>, b: &Int<'c>, known: Option<i64>) -> Int<'c> {
        match known {
            Some(0) => a.clone(),
            Some(k) if k > 0 => a.modulo(b),
            Some(_) => a.unary_minus().modulo(&b.unary_minus()).unary_minus(),
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

/// Outcome of one satisfiability check of "facts and not goal".
enum Check {
    Unsat,
    Sat(BTreeMap<String, i64>),
    /// Satisfiable, but a model value does not fit in 64 bits.
    SatHuge,
    Unknown(String),
}

/// The two z3 configurations tried in order. The plain `smt` tactic is fast for the
/// linear queries that dominate; z3's `QF_NIA` strategy (with nlsat) is slower to set
/// up but decides more non-linear queries.
#[derive(Clone, Copy)]
enum Strategy {
    Smt,
    Nia,
}

fn check(
    facts: &Facts,
    goal: &Pred,
    rlimit: u32,
    strategy: Strategy,
    small_bound: Option<i64>,
) -> Check {
    let ctx = Context::new(&Config::new());
    let solver = match strategy {
        Strategy::Smt => Tactic::new(&ctx, "smt").solver(),
        Strategy::Nia => match z3::Solver::new_for_logic(&ctx, "QF_NIA") {
            Some(s) => s,
            None => z3::Solver::new(&ctx),
        },
    };
    let mut params = Params::new(&ctx);
    params.set_u32("rlimit", rlimit);
    solver.set_params(&params);

    let mut enc = Encoder::new(&ctx);
    let one = Int::from_i64(&ctx, 1);
    for size in &facts.sizes {
        solver.assert(&enc.var(size).ge(&one));
    }
    for fact in &facts.facts {
        solver.assert(&enc.pred(fact));
    }
    solver.assert(&enc.pred(goal).not());
    if let Some(bound) = small_bound {
        let lo = Int::from_i64(&ctx, -bound);
        let hi = Int::from_i64(&ctx, bound);
        let vars: Vec<Int> = enc.vars().values().cloned().collect();
        for v in vars {
            solver.assert(&v.ge(&lo));
            solver.assert(&v.le(&hi));
        }
    }
    match solver.check() {
        SatResult::Unsat => Check::Unsat,
        SatResult::Unknown => Check::Unknown(
            solver
                .get_reason_unknown()
                .unwrap_or_else(|| "no reason given".to_string()),
        ),
        SatResult::Sat => {
            let Some(model) = solver.get_model() else {
                return Check::Unknown("z3 reported sat without a model".to_string());
            };
            let mut values = BTreeMap::new();
            for (name, var) in enc.vars() {
                match model.eval(var, true).and_then(|v| v.as_i64()) {
                    Some(v) => {
                        values.insert(name.clone(), v);
                    }
                    None => return Check::SatHuge,
                }
            }
            Check::Sat(values)
        }
    }
}

/// Decides `facts => goal` with z3. `Proved` only on `unsat` of "facts and not goal";
/// `Refuted` only with a model that checks out by evaluation.
pub(crate) fn decide(facts: &Facts, goal: &Pred, rlimit: u32) -> Verdict {
    let mut reasons = Vec::new();
    for strategy in [Strategy::Smt, Strategy::Nia] {
        match check(facts, goal, rlimit, strategy, None) {
            Check::Unsat => return Verdict::Proved,
            Check::Sat(values) => return refutation(facts, goal, rlimit, strategy, values),
            Check::SatHuge => {
                // A small model may still exist; otherwise this is not reportable.
                return match check(facts, goal, rlimit, strategy, Some(SMALL_MODEL)) {
                    Check::Sat(values) => checked(facts, goal, values),
                    _ => Verdict::Unknown(
                        "z3 found a counterexample whose values do not fit in 64 bits".to_string(),
                    ),
                };
            }
            Check::Unknown(reason) => reasons.push(reason),
        }
    }
    reasons.dedup();
    Verdict::Unknown(format!("z3 gave up ({})", reasons.join("; ")))
}

fn refutation(
    facts: &Facts,
    goal: &Pred,
    rlimit: u32,
    strategy: Strategy,
    values: BTreeMap<String, i64>,
) -> Verdict {
    // Prefer a counterexample with small values: it reads better in a diagnostic.
    if values.values().any(|v| v.abs() > SMALL_MODEL)
        && let Check::Sat(small) = check(facts, goal, rlimit, strategy, Some(SMALL_MODEL))
        && let Verdict::Refuted(c) = checked(facts, goal, small)
    {
        return Verdict::Refuted(c);
    }
    checked(facts, goal, values)
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

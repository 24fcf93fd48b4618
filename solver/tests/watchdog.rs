//! The solver's own time limit (`atl_solver::watchdog`): a check that z3's timer does
//! not end — here because no `timeout` is set at all, the situation of a timer that
//! missed its check — is interrupted a grace period after the limit and ends
//! `unknown`; a quick check is not disturbed.

use std::time::Instant;

use atl_solver::watchdog::{GRACE_MS, check_within};
use z3::ast::{Ast, Int};
use z3::{Config, Context, SatResult, Tactic};

/// `x³ + y³ = z³` with positive integers: z3's `smt` tactic searches it for minutes.
fn fermat(ctx: &Context) -> z3::Solver<'_> {
    let solver = Tactic::new(ctx, "smt").solver();
    let (x, y, z) = (
        Int::new_const(ctx, "x"),
        Int::new_const(ctx, "y"),
        Int::new_const(ctx, "z"),
    );
    let (x3, y3, z3) = (
        Int::mul(ctx, &[&x, &x, &x]),
        Int::mul(ctx, &[&y, &y, &y]),
        Int::mul(ctx, &[&z, &z, &z]),
    );
    solver.assert(&Int::add(ctx, &[&x3, &y3])._eq(&z3));
    let one = Int::from_i64(ctx, 1);
    for v in [&x, &y, &z] {
        solver.assert(&v.ge(&one));
    }
    solver
}

#[test]
fn a_check_z3_does_not_end_is_interrupted_after_the_grace_period() {
    let ctx = Context::new(&Config::new());
    let solver = fermat(&ctx);
    let start = Instant::now();
    let result = check_within(&ctx, &solver, 100);
    let took = start.elapsed().as_millis() as u64;
    assert_eq!(result, SatResult::Unknown);
    assert!(
        took >= 100 + GRACE_MS,
        "ended after {took} ms, before the watchdog"
    );
    assert!(took < 100 + GRACE_MS + 20_000, "ended after {took} ms");
}

#[test]
fn a_quick_check_is_not_disturbed() {
    let ctx = Context::new(&Config::new());
    let solver = z3::Solver::new(&ctx);
    let x = Int::new_const(&ctx, "x");
    solver.assert(&x.gt(&Int::from_i64(&ctx, 3)));
    let start = Instant::now();
    assert_eq!(check_within(&ctx, &solver, 10_000), SatResult::Sat);
    assert!(start.elapsed().as_millis() < 2_000);
    let model = solver.get_model().expect("a model");
    assert!(
        model
            .eval(&x, true)
            .and_then(|v| v.as_i64())
            .is_some_and(|v| v > 3)
    );
}

//! z3 4.8.12 corrupts the heap when a process forks while a check ends at its time
//! limit (`atl_lang::fork_guard` explains it). This is that pattern — one thread runs
//! checks with limits of a few milliseconds on a query z3 cannot decide in time, the
//! other starts processes the way the `cc` crate does (a bare program name with `PATH`
//! set in its environment, which makes Rust `fork`) — with both sides behind the guard,
//! as the solver and every spawn of the compiler are. With `ATL_FORK_GUARD_OFF=1` the
//! test bypasses the guard: on z3 4.8.12 it then crashes (`free(): corrupted unsorted
//! chunks`, SIGSEGV) or hangs in most runs, which shows what the guard prevents.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

use atl_lang::fork_guard;
use z3::ast::{Ast, Int};
use z3::{Config, Context, Params, Tactic};

fn check_with_a_tiny_limit(limit_ms: u32) {
    let ctx = Context::new(&Config::new());
    let solver = Tactic::new(&ctx, "smt").solver();
    let mut params = Params::new(&ctx);
    params.set_u32("timeout", limit_ms);
    solver.set_params(&params);
    let x = Int::new_const(&ctx, "x");
    let y = Int::new_const(&ctx, "y");
    let z = Int::new_const(&ctx, "z");
    let one = Int::from_i64(&ctx, 1);
    let (x3, y3, z3) = (
        Int::mul(&ctx, &[&x, &x, &x]),
        Int::mul(&ctx, &[&y, &y, &y]),
        Int::mul(&ctx, &[&z, &z, &z]),
    );
    solver.assert(&Int::add(&ctx, &[&x3, &y3])._eq(&z3));
    for v in [&x, &y, &z] {
        solver.assert(&v.ge(&one));
    }
    // Through the solver's watchdog, as every check of the solver: z3 4.8.12's own
    // timer can miss a check, which then never ends (`atl_solver::watchdog`).
    let _ = atl_solver::watchdog::check_within(&ctx, &solver, limit_ms);
}

#[test]
fn checks_and_forks_behind_the_guard_do_not_corrupt_the_heap() {
    let unguarded = std::env::var_os("ATL_FORK_GUARD_OFF").is_some();
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for i in 0..300 {
                let guard = (!unguarded).then(fork_guard::solving);
                check_with_a_tiny_limit(2 + (i % 5));
                drop(guard);
            }
            done.store(true, Ordering::SeqCst);
        });
        let mut forks = 0;
        while !done.load(Ordering::SeqCst) {
            // A bare name with `PATH` set in the command's environment: Rust cannot
            // use `posix_spawn` then and forks (the `cc` crate's commands are so).
            let mut cmd = Command::new("true");
            cmd.env("PATH", std::env::var_os("PATH").unwrap_or_default());
            let status = if unguarded {
                cmd.status().map(|s| s.success())
            } else {
                fork_guard::output(&mut cmd).map(|o| o.status.success())
            };
            assert!(status.expect("`true` runs"));
            forks += 1;
        }
        assert!(forks > 0);
    });
}

//! A wall-clock limit on a z3 check that does not depend on z3's own timer.
//!
//! z3 4.8.12 (the `libz3` the solver links) runs its `timeout` on a pool of timer
//! threads, and a timer can miss its check: in a `.ci/run` under load, the fork-guard
//! test's checks (time limits of a few milliseconds on `x³ + y³ = z³`) stopped ending,
//! one check running for 25 minutes while z3's only timer thread waited, idle, for work
//! (seen with gdb). The solver's non-linear queries are bounded by that timer alone
//! (`smt.rs`: z3's `smt` tactic ignores `rlimit` there), so a missed timer would hang
//! `atl`. [`check_within`] runs the check with a watchdog thread of our own that
//! interrupts the context a grace period after z3's limit: the check then ends
//! `unknown`, as at the limit — never a wrong answer, since `unknown` is a refusal and
//! a model is checked by evaluation before it refutes anything.

use std::sync::{Condvar, Mutex, PoisonError};
use std::time::Duration;

use z3::{Context, SatResult};

/// How long after z3's own limit the watchdog interrupts a check that is still running.
pub const GRACE_MS: u64 = 2_000;

/// `solver.check()`, interrupted through `ctx` if it is still running `limit_ms +
/// GRACE_MS` milliseconds after it started.
pub fn check_within(ctx: &Context, solver: &z3::Solver, limit_ms: u32) -> SatResult {
    let handle = ctx.handle();
    let finished = (Mutex::new(false), Condvar::new());
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let (lock, ended) = &finished;
            let deadline = Duration::from_millis(u64::from(limit_ms) + GRACE_MS);
            let done = lock.lock().unwrap_or_else(PoisonError::into_inner);
            let (done, _) = ended
                .wait_timeout_while(done, deadline, |done| !*done)
                .unwrap_or_else(PoisonError::into_inner);
            // Decided under the lock: the check has not reported its end.
            if !*done {
                handle.interrupt();
            }
        });
        let result = solver.check();
        let (lock, ended) = &finished;
        *lock.lock().unwrap_or_else(PoisonError::into_inner) = true;
        ended.notify_one();
        result
    })
}

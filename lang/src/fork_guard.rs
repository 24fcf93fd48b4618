//! Process spawns and solver checks must not overlap, because of a bug of z3 4.8.12
//! (Debian bookworm's `libz3`, which the solver links). z3 registers a handler that
//! runs in every `fork()`, and it frees z3's idle timer threads. When a check ends at
//! its time limit, the timer thread marks itself idle while the checking thread still
//! holds a lock inside it; a fork in that window frees the timer, and the checking
//! thread then unlocks freed memory: heap corruption (`free(): corrupted unsorted
//! chunks`, SIGSEGV), found in the test binaries that check with z3 on some threads
//! while others start the C compiler. Fixed upstream after 4.8.12 (z3 PRs #5371,
//! #5990, #6102, #7618); reproduced outside the project with a C program under
//! valgrind (an invalid write in `pthread_mutex_unlock` on a block freed by
//! `__run_prefork_handlers`).
//!
//! Rust's `Command` forks when it cannot use `posix_spawn` (which runs no fork
//! handlers), e.g. when the environment is changed, as the `cc` crate does. So every
//! solver check holds [`solving`] (shared) for as long as z3 runs, and every process
//! spawn in a process that may run checks holds [`spawning`] (exclusive) while it
//! starts the child — not while the child runs.

use std::io;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

static LOCK: RwLock<()> = RwLock::new(());

/// Held (shared) for the duration of a solver check. Never take it twice on one thread
/// (a waiting spawn would deadlock the second acquisition).
pub fn solving() -> RwLockReadGuard<'static, ()> {
    LOCK.read().unwrap_or_else(PoisonError::into_inner)
}

/// Held (exclusive) while a child process is started.
pub fn spawning() -> RwLockWriteGuard<'static, ()> {
    LOCK.write().unwrap_or_else(PoisonError::into_inner)
}

/// `cmd.spawn()` with no solver check running.
pub fn spawn(cmd: &mut Command) -> io::Result<Child> {
    let _guard = spawning();
    cmd.spawn()
}

/// `cmd.output()` with no solver check running while the child starts: standard
/// output and error captured, standard input empty (as `Command::output`).
pub fn output(cmd: &mut Command) -> io::Result<Output> {
    let child = {
        let _guard = spawning();
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?
    };
    child.wait_with_output()
}

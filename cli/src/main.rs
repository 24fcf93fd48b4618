//! The `atl` binary: forwards to [`atl_cli::run`] with the process's arguments and
//! standard streams, and exits with its status.
//!
//! The work runs on a thread with a large stack. The front end bounds the nesting of
//! every term (`atl_lang::parser::MAX_NESTING`) so that each stage's recursion fits in
//! the default 8 MB main-thread stack; the larger stack is a safety margin on top of
//! that, for debug builds (larger frames) and for terms that derivation steps deepen.
//! Only the pages actually touched are committed, so the reservation costs nothing.

use std::io::IsTerminal;

/// Stack of the thread that runs the command.
const STACK_BYTES: usize = 256 << 20;

fn main() {
    let work = || {
        let terminal = std::io::stderr().is_terminal();
        let color = terminal && std::env::var_os("NO_COLOR").is_none();
        let stdout = std::io::stdout();
        let stderr = std::io::stderr();
        atl_cli::run_with_progress(
            std::env::args_os(),
            &mut stdout.lock(),
            &mut stderr.lock(),
            color,
            terminal,
        )
    };
    let code = match std::thread::Builder::new()
        .name("atl".to_string())
        .stack_size(STACK_BYTES)
        .spawn(work)
    {
        // A panic in the worker has already been reported by the panic hook; exit
        // with the status Rust uses for panics.
        Ok(handle) => handle.join().unwrap_or(101),
        // No thread (address space exhausted): run on the main thread's stack, which
        // the nesting limit is sized for.
        Err(_) => work(),
    };
    std::process::exit(code);
}

//! The `atl` binary: forwards to [`atl_cli::run`] with the process's arguments and
//! standard streams, and exits with its status.

use std::io::IsTerminal;

fn main() {
    let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let code = atl_cli::run(
        std::env::args_os(),
        &mut stdout.lock(),
        &mut stderr.lock(),
        color,
    );
    std::process::exit(code);
}

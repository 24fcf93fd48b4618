//! The real `atl repl` binary in a pseudo-terminal (`rexpect`), as a user meets it:
//! Ctrl-C during a long `:eval` and during `:bench` stops the command and keeps the
//! session with its steps; Ctrl-D with unsaved steps warns instead of leaving; a byte
//! that is not UTF-8 does not end the session.
//!
//! Timeouts are generous and the long commands are sized to run for minutes, so that
//! the test holds on a loaded two-core machine: each Ctrl-C is sent a few seconds after
//! the command starts, and the command must then stop within a minute.

use std::io::Write;
use std::process::Command;
use std::time::Duration;

use rexpect::session::{PtySession, spawn_command};

/// How long any expected output may take.
const TIMEOUT_MS: u64 = 120_000;

fn matmul() -> String {
    format!(
        "{}/../examples/matmul/matmul.atl",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn start(history: &std::path::Path) -> PtySession {
    let mut command = Command::new(env!("CARGO_BIN_EXE_atl"));
    command
        .arg("repl")
        .arg(matmul())
        .env("ATL_HISTORY", history)
        .env("NO_COLOR", "1");
    let mut p = spawn_command(command, Some(TIMEOUT_MS)).expect("atl repl starts in a pty");
    p.exp_string("matmul> ").expect("the prompt");
    p
}

/// Sends Ctrl-C once the command has had time to start.
fn interrupt_after(p: &mut PtySession, delay: Duration) {
    std::thread::sleep(delay);
    p.send_control('c').expect("Ctrl-C");
}

#[test]
fn ctrl_c_stops_a_command_and_keeps_the_session() {
    let dir = std::env::temp_dir().join(format!("atl-repl-pty-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut p = start(&dir.join("history"));
    p.send_line("rw gen_sum").expect("a step");
    p.exp_string("1 line marked +").expect("the step's effect");
    p.exp_string("matmul> ").expect("prompt");

    // The interpreter at 1000^3 (a billion multiply-adds) runs for minutes.
    p.send_line(":eval M=1000,N=1000,K=1000").expect(":eval");
    // On a terminal a progress line counts the outermost loop's iterations.
    p.exp_regex(r"evaluating  \d+/1000")
        .expect("the progress line");
    interrupt_after(&mut p, Duration::from_secs(2));
    p.exp_string("interrupted; the session and its 1 step are kept")
        .expect("the evaluation stops and the session says so");
    p.exp_string("matmul> ")
        .expect("prompt after the interrupted :eval");
    p.send_line(":history").expect(":history");
    p.exp_string("1. rw gen_sum").expect("the step is kept");
    p.exp_string("matmul> ").expect("prompt");

    // Timing at 512 with a thousand runs per kernel takes minutes; Ctrl-C stops it
    // between calls (or kills the compiler, if it comes that early).
    p.send_line(":bench M=512,N=512,K=512 --runs 1000")
        .expect(":bench");
    interrupt_after(&mut p, Duration::from_secs(5));
    p.exp_string("interrupted; the session and its 1 step are kept")
        .expect("the benchmark stops and the session says so");
    p.exp_string("matmul> ")
        .expect("prompt after the interrupted :bench");
    p.send_line(":show").expect(":show");
    p.exp_string("gen i < M: sum k < K: gen j < N: A[i, k] * B[k, j]")
        .expect("the program after the step is kept");
    p.exp_string("matmul> ").expect("prompt");

    // A byte that is not UTF-8: reported, the session goes on.
    let mut tty = p.process().get_file_handle().expect("the pty");
    tty.write_all(&[0xff]).expect("a raw byte");
    tty.flush().expect("flush");
    p.exp_string("not UTF-8").expect("the byte is reported");
    p.send_line(":history").expect(":history");
    p.exp_string("1. rw gen_sum")
        .expect("still alive, with the step");
    p.exp_string("matmul> ").expect("prompt");

    // Ctrl-D with an unsaved step warns; the second leaves.
    p.send_control('d').expect("Ctrl-D");
    p.exp_string("1 step on `matmul` not saved")
        .expect("the unsaved step is mentioned");
    p.exp_string(":save NAME FILE").expect("how to keep it");
    p.exp_string("matmul> ").expect("the session goes on");
    p.send_control('d').expect("Ctrl-D again");
    p.exp_eof().expect("the second Ctrl-D leaves");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `atl bench` on a terminal shows what it is doing (validating, compiling, timing)
/// instead of nothing for seconds, and erases the line before its report.
#[test]
fn atl_bench_on_a_terminal_shows_its_progress() {
    let mut command = Command::new(env!("CARGO_BIN_EXE_atl"));
    command
        .arg("bench")
        .arg(matmul())
        .args([
            "--def",
            "fast",
            "--sizes",
            "M=256,N=256,K=256",
            "--runs",
            "3",
        ])
        .env("NO_COLOR", "1");
    let mut p = spawn_command(command, Some(TIMEOUT_MS)).expect("atl bench starts in a pty");
    // Validating and compiling take seconds in a debug build: the line names the stage.
    p.exp_regex(r"\x1b\[2K[^ ]+ (validating|compiling|checking) `fast`")
        .expect("the progress line while validating or compiling");
    p.exp_regex(r"\x1b\[2Ksizes K=256,M=256,N=256")
        .expect("the line is erased before the report");
    p.exp_string("median").expect("the report");
    p.exp_eof().expect("atl bench ends");
}

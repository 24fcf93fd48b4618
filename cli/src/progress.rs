//! A one-line progress display for long work (evaluating at large sizes, validating,
//! compiling, timing): a thread polls a [`Monitor`] every [`TICK`] and, once the work
//! has lasted [`DELAY`], draws `⠋ stage  done/total` (or the stage and a spinner when
//! the total is unknown) on one line, redrawn in place and erased when the work ends.
//!
//! ```ignore
//! let _progress = progress::on_stderr(&monitor); // drawn only if stderr is a terminal
//! long_work(&monitor);
//! // dropping the guard stops the thread and clears the line
//! ```
//!
//! Nothing is drawn when the display is disabled (stderr piped or redirected), so plain
//! output is unchanged. The display writes to its own handle on the terminal (a
//! duplicate of file descriptor 2), never through `std::io::stderr()`, whose lock the
//! `atl` binary holds for the whole command. Callers drop the guard before printing
//! their results, so the line never mixes with them.

use std::io::{IsTerminal, Write};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use atl_lang::monitor::{Monitor, Progress};

/// How often the display polls the monitor.
pub const TICK: Duration = Duration::from_millis(100);
/// How long work runs before anything is drawn (short commands show nothing).
pub const DELAY: Duration = Duration::from_millis(500);

const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// The running display; dropping it stops the thread and erases the line.
#[derive(Debug)]
pub struct Guard {
    running: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some((stop, thread)) = self.running.take() {
            stop.store(true, Ordering::Relaxed);
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

/// Shows the progress of the work `monitor` watches on `sink` while the returned guard
/// lives, if `enabled` (the caller passes whether the sink is a terminal); otherwise
/// does nothing.
pub fn show<W: Write + Send + 'static>(monitor: &Arc<Monitor>, enabled: bool, sink: W) -> Guard {
    show_labelled(monitor, "working", enabled, sink)
}

/// [`show`], with `label` shown while the monitor names no stage (the interpreter
/// counts its outermost loop without naming it).
pub fn show_labelled<W: Write + Send + 'static>(
    monitor: &Arc<Monitor>,
    label: &str,
    enabled: bool,
    sink: W,
) -> Guard {
    if !enabled {
        return Guard { running: None };
    }
    let stop = Arc::new(AtomicBool::new(false));
    let monitor = Arc::clone(monitor);
    let flag = Arc::clone(&stop);
    let mut sink = sink;
    let label = label.to_string();
    let spawned = std::thread::Builder::new()
        .name("atl-progress".to_string())
        .spawn(move || draw_until(&monitor, &label, &flag, &mut sink));
    Guard {
        running: spawned.ok().map(|t| (stop, t)),
    }
}

/// [`show`] on the process's standard error, enabled when it is a terminal.
pub fn on_stderr(monitor: &Arc<Monitor>) -> Guard {
    on_stderr_labelled(monitor, "working")
}

/// [`show_labelled`] on the process's standard error, enabled when it is a terminal.
pub fn on_stderr_labelled(monitor: &Arc<Monitor>, label: &str) -> Guard {
    let stderr = std::io::stderr();
    if !stderr.is_terminal() {
        return Guard { running: None };
    }
    match stderr.as_fd().try_clone_to_owned() {
        Ok(fd) => show_labelled(monitor, label, true, std::fs::File::from(fd)),
        Err(_) => Guard { running: None },
    }
}

/// The display's loop: wait [`DELAY`], then redraw every [`TICK`] until `stop`.
fn draw_until(monitor: &Monitor, label: &str, stop: &AtomicBool, sink: &mut dyn Write) {
    let start = Instant::now();
    let mut drawn = false;
    let mut frame = 0usize;
    while !stop.load(Ordering::Relaxed) {
        std::thread::park_timeout(TICK);
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if start.elapsed() < DELAY {
            continue;
        }
        let line = render(&monitor.progress(), label, SPINNER[frame % SPINNER.len()]);
        frame += 1;
        // `\r` and "erase line" redraw in place.
        let _ = write!(sink, "\r\x1b[2K{line}");
        let _ = sink.flush();
        drawn = true;
    }
    if drawn {
        let _ = write!(sink, "\r\x1b[2K");
        let _ = sink.flush();
    }
}

/// The text of one frame: the spinner, the stage (or `label` when it has no name) and,
/// when the total is known, `done/total`.
pub fn render(progress: &Progress, label: &str, spinner: char) -> String {
    let stage = if progress.stage.is_empty() {
        label
    } else {
        progress.stage.as_str()
    };
    // Long stage names are cut so that the line never wraps on a narrow terminal.
    let stage: String = stage.chars().take(60).collect();
    if progress.total > 0 {
        format!(
            "{spinner} {stage}  {}/{}",
            progress.done.min(progress.total),
            progress.total
        )
    } else {
        format!("{spinner} {stage}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A sink the test can read back while the display holds it.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_frame_shows_the_stage_and_the_count() {
        let p = Progress {
            stage: "timing".into(),
            done: 3,
            total: 22,
        };
        assert_eq!(render(&p, "working", '*'), "* timing  3/22");
        let unknown = Progress {
            stage: String::new(),
            done: 0,
            total: 0,
        };
        assert_eq!(render(&unknown, "evaluating", '*'), "* evaluating");
    }

    #[test]
    fn long_work_is_drawn_then_erased_and_short_work_draws_nothing() {
        let monitor = Arc::new(Monitor::new());
        monitor.begin("evaluating", 10);
        monitor.advance(4);
        let sink = Shared::default();
        let guard = show(&monitor, true, sink.clone());
        std::thread::sleep(DELAY + 4 * TICK);
        drop(guard);
        let text = String::from_utf8(sink.0.lock().expect("lock").clone()).expect("UTF-8");
        assert!(text.contains("evaluating  4/10"), "{text:?}");
        assert!(text.ends_with("\r\x1b[2K"), "the line is erased: {text:?}");

        let quick = Shared::default();
        drop(show(&monitor, true, quick.clone()));
        assert!(quick.0.lock().expect("lock").is_empty());
        // Disabled (not a terminal): nothing, however long.
        let piped = Shared::default();
        let guard = show(&monitor, false, piped.clone());
        std::thread::sleep(DELAY + 2 * TICK);
        drop(guard);
        assert!(piped.0.lock().expect("lock").is_empty());
    }
}

//! [`Monitor`]: how a long computation is watched and stopped from outside. It holds a
//! cancellation flag (set by a Ctrl-C handler or another thread, checked by the
//! interpreter's loops, the translation validator between obligations and the pipeline
//! between its stages) and a progress counter (a stage's name, the work done and the
//! total), which a progress display polls from its own thread.
//!
//! Polling keeps the computing code free of callbacks: it only loads and bumps
//! atomics, so a computation without a monitor pays one branch per loop iteration.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// A cancellation flag and a progress counter shared between a computation and the
/// code watching it (see the module documentation).
#[derive(Debug, Default)]
pub struct Monitor {
    /// An `Arc` so that a signal handler (which needs one) can set it directly.
    cancel: Arc<AtomicBool>,
    done: AtomicU64,
    total: AtomicU64,
    stage: Mutex<String>,
}

/// What a progress display shows: the stage and how far it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress {
    pub stage: String,
    pub done: u64,
    /// Zero when the amount of work is not known in advance.
    pub total: u64,
}

impl Monitor {
    pub fn new() -> Monitor {
        Monitor::default()
    }

    /// The flag itself, for a signal handler (`signal_hook::flag::register`).
    pub fn cancel_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.cancel)
    }

    /// Asks the computation to stop; it does so at its next check.
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// Forgets an earlier cancellation (before the next command of a session).
    pub fn clear_cancel(&self) {
        self.cancel.store(false, Ordering::Relaxed);
    }

    /// Starts a stage of `total` units of work (0: unknown).
    pub fn begin(&self, stage: impl Into<String>, total: u64) {
        *self.stage.lock().unwrap_or_else(PoisonError::into_inner) = stage.into();
        self.done.store(0, Ordering::Relaxed);
        self.total.store(total, Ordering::Relaxed);
    }

    /// Restarts the count of the current stage at 0 of `total`, keeping its name (the
    /// interpreter counts its outermost loop inside whatever stage its caller began).
    pub fn restart_count(&self, total: u64) {
        self.done.store(0, Ordering::Relaxed);
        self.total.store(total, Ordering::Relaxed);
    }

    /// Records `units` more units of work done in the current stage.
    pub fn advance(&self, units: u64) {
        self.done.fetch_add(units, Ordering::Relaxed);
    }

    /// The current stage and its progress.
    pub fn progress(&self) -> Progress {
        Progress {
            stage: self
                .stage
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
            done: self.done.load(Ordering::Relaxed),
            total: self.total.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancellation_is_seen_through_the_flag_and_cleared() {
        let m = Monitor::new();
        assert!(!m.is_cancelled());
        m.cancel_flag().store(true, Ordering::Relaxed);
        assert!(m.is_cancelled());
        m.clear_cancel();
        assert!(!m.is_cancelled());
    }

    #[test]
    fn a_stage_restarts_the_count() {
        let m = Monitor::new();
        m.begin("a", 10);
        m.advance(3);
        m.advance(4);
        assert_eq!(
            m.progress(),
            Progress {
                stage: "a".into(),
                done: 7,
                total: 10
            }
        );
        m.begin("b", 0);
        assert_eq!(m.progress().done, 0);
        assert_eq!(m.progress().stage, "b");
        m.advance(2);
        m.restart_count(5);
        assert_eq!(
            m.progress(),
            Progress {
                stage: "b".into(),
                done: 0,
                total: 5
            }
        );
    }
}

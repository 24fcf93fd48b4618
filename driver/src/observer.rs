//! [`Observer`]: what the pipeline tells its caller while it works, and how the caller
//! stops it. The CLI renders warnings on standard error and draws progress on a
//! terminal; the REPL also sets the monitor's flag on Ctrl-C; `atl-build` collects the
//! warnings ([`Collect`]) to print them as Cargo warnings.

use std::sync::Arc;

use atl_lang::monitor::Monitor;

use crate::failure::{Failure, Located};

/// The pipeline's listener (see the module documentation).
pub trait Observer {
    /// Diagnostics that do not stop the pipeline (warnings), as they arise, so that
    /// they can be shown before anything reported later.
    fn warn(&mut self, located: Located);

    /// A report the caller asked for (the validator's report under `--explain`).
    fn explain(&mut self, text: &str) {
        let _ = text;
    }

    /// The monitor the long stages check for cancellation and report progress to.
    fn monitor(&self) -> Option<&Arc<Monitor>> {
        None
    }
}

/// Starts a stage of `total` units of work (0: unknown) on the observer's monitor, after
/// checking that the work was not cancelled.
pub fn begin(observer: &dyn Observer, stage: &str, total: u64) -> Result<(), Failure> {
    check_cancel(observer)?;
    if let Some(m) = observer.monitor() {
        m.begin(stage, total);
    }
    Ok(())
}

/// [`Failure::interrupted`] once the observer's monitor was cancelled.
pub fn check_cancel(observer: &dyn Observer) -> Result<(), Failure> {
    match observer.monitor() {
        Some(m) if m.is_cancelled() => Err(Failure::interrupted()),
        _ => Ok(()),
    }
}

/// An observer that keeps the warnings (and explanations) for later, with an optional
/// monitor.
#[derive(Debug, Default)]
pub struct Collect {
    pub warnings: Vec<Located>,
    pub explanations: Vec<String>,
    pub monitor: Option<Arc<Monitor>>,
}

impl Observer for Collect {
    fn warn(&mut self, located: Located) {
        self.warnings.push(located);
    }

    fn explain(&mut self, text: &str) {
        self.explanations.push(text.to_string());
    }

    fn monitor(&self) -> Option<&Arc<Monitor>> {
        self.monitor.as_ref()
    }
}

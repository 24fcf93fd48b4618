//! [`Ctx`]: what every command is given besides its arguments — the output streams,
//! whether diagnostics are coloured, and the monitor the pipeline's long stages report
//! to. Commands write their results to `stdout` as they go; the pipeline's warnings
//! reach `stderr` through [`Ctx`]'s [`Observer`] implementation; what stops a command
//! is returned as a [`atl_driver::Failure`] instead.

use std::io::Write;
use std::sync::Arc;

use atl_driver::failure::Located;
use atl_driver::{Monitor, Observer};

/// The streams and settings a command runs with.
pub struct Ctx<'a> {
    pub stdout: &'a mut dyn Write,
    pub stderr: &'a mut dyn Write,
    /// Coloured diagnostics (the binary sets it when stderr is a terminal).
    pub color: bool,
    /// Watches the pipeline's long stages (a progress display polls it).
    pub monitor: Option<Arc<Monitor>>,
}

impl std::fmt::Debug for Ctx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("color", &self.color)
            .finish_non_exhaustive()
    }
}

impl Ctx<'_> {
    /// A progress line for the long work that follows, drawn while the returned guard
    /// lives (only when the command runs with a monitor: stderr is a terminal).
    pub fn progress(&self, label: &str) -> Option<crate::progress::Guard> {
        self.monitor
            .as_ref()
            .map(|m| crate::progress::on_stderr_labelled(m, label))
    }

    /// Renders diagnostics that do not stop the command (warnings) on stderr now, so
    /// that they come before anything the command reports later.
    pub fn warn_located(&mut self, located: &Located) {
        located.render(self.color, self.stderr);
    }
}

impl Observer for Ctx<'_> {
    fn warn(&mut self, located: Located) {
        self.warn_located(&located);
    }

    fn explain(&mut self, text: &str) {
        let _ = writeln!(self.stderr, "{text}");
    }

    fn monitor(&self) -> Option<&Arc<Monitor>> {
        self.monitor.as_ref()
    }
}

//! [`Ctx`]: what every command is given besides its arguments — the output streams and
//! whether diagnostics are coloured. Commands write their results to `stdout` and
//! non-fatal diagnostics (warnings) to `stderr` as they go; what stops a command is
//! returned as a [`crate::Failure`] instead.

use std::io::Write;
use std::path::Path;

use atl_lang::diag::Diagnostic;

use crate::failure::Located;

/// The streams and settings a command runs with.
pub struct Ctx<'a> {
    pub stdout: &'a mut dyn Write,
    pub stderr: &'a mut dyn Write,
    /// Coloured diagnostics (the binary sets it when stderr is a terminal).
    pub color: bool,
}

impl std::fmt::Debug for Ctx<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("color", &self.color)
            .finish_non_exhaustive()
    }
}

impl Ctx<'_> {
    /// Renders diagnostics that do not stop the command (warnings) on stderr now, so
    /// that they come before anything the command reports later.
    pub fn warn(&mut self, diagnostics: &[Diagnostic], file: &Path, source: &str) {
        self.warn_located(&Located::new(diagnostics.to_vec(), file, source));
    }

    /// [`Ctx::warn`] for diagnostics that already carry their file and source.
    pub fn warn_located(&mut self, located: &Located) {
        located.render(self.color, self.stderr);
    }
}

//! `:save NAME [FILE]`: the steps of the focus as `derive NAME from FOCUS { steps }`,
//! written only where the user says. With FILE, a new file holding the loaded program
//! and the derivation (an existing file is refused unless `:save! NAME FILE`); without
//! FILE, appending to the loaded file must be asked for with `:save! NAME` — the file
//! is never changed silently. Before anything is written, the new text is checked and
//! its derivations replayed, so a saved file always passes `atl check`.

use std::io::Write;
use std::path::Path;

use atl_rewrites::rule::Grade;

use super::{Control, Session, plural};

impl Session {
    pub(super) fn cmd_save(&mut self, args: &str, out: &mut dyn Write) -> Control {
        let (Some(file), Some(focus)) = (self.file.clone(), self.focus.clone()) else {
            let _ = writeln!(
                out,
                "nothing to save: load a file and focus a definition first"
            );
            return Control::Continue;
        };
        let mut words = args.split_whitespace();
        let (name, target) = (words.next().unwrap_or(""), words.next());
        let valid_name = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if !valid_name || words.next().is_some() {
            let _ = writeln!(
                out,
                "usage: :save NAME FILE (a new file), or :save! NAME (append to {})",
                file.display()
            );
            return Control::Continue;
        }
        if self.derived.contains_key(name) {
            let _ = writeln!(
                out,
                "`{name}` already exists in the file; pick another name"
            );
            return Control::Continue;
        }
        let target = match target {
            Some(t) => Path::new(t).to_path_buf(),
            None if self.forced => file.clone(),
            None => {
                let _ = writeln!(
                    out,
                    "not saved: `:save {name} FILE` writes the program and the derivation to a \
                     new file; `:save! {name}` appends the derivation to {}",
                    file.display()
                );
                return Control::Continue;
            }
        };
        let appending = target == file;
        if !appending && target.exists() && !self.forced {
            let _ = writeln!(
                out,
                "not saved: {} exists; `:save! {name} {}` overwrites it",
                target.display(),
                target.display()
            );
            return Control::Continue;
        }
        let mut new_source = self.source.clone();
        if !new_source.ends_with('\n') {
            new_source.push('\n');
        }
        if !new_source.ends_with("\n\n") {
            new_source.push('\n');
        }
        new_source.push_str(&format!("derive {name} from {focus} {{\n"));
        for taken in &self.steps {
            new_source.push_str(&format!("  {}\n", taken.text));
        }
        new_source.push_str("}\n");
        // Check that the file with the block replays before writing it.
        let (checked, diags) = atl_lang::check_source(&new_source);
        let replays = checked.is_some_and(|c| {
            atl_rewrites::run_derivations(&self.env_for(&c))
                .1
                .is_empty()
        });
        if !replays || !diags.is_empty() {
            let _ = writeln!(
                out,
                "the derivation does not replay from the file; not saved"
            );
            return Control::Continue;
        }
        if let Err(e) = std::fs::write(&target, &new_source) {
            let _ = writeln!(out, "cannot write `{}`: {e}", target.display());
            return Control::Continue;
        }
        let _ = writeln!(
            out,
            "saved `derive {name} from {focus}` ({}) to {}{}",
            plural(self.steps.len(), "step"),
            target.display(),
            if appending {
                ""
            } else {
                " (with the loaded program)"
            }
        );
        self.unsaved = false;
        self.quit_warned = false;
        if !appending {
            // The session goes on with the loaded file, which is unchanged.
            return Control::Continue;
        }
        let current = self.current().cloned();
        self.source = new_source;
        if let Some(e) = current {
            self.derived.insert(name.to_string(), e);
        }
        // The saved derivation is graded `real` if a step of it is, or its base is.
        let reassociates = self
            .steps
            .iter()
            .flat_map(|t| &t.outcomes)
            .any(|o| o.record.grade == Grade::Real);
        let base = if reassociates {
            Some(name.to_string())
        } else {
            self.real_bases.get(&focus).cloned()
        };
        if let Some(base) = base {
            self.real_bases.insert(name.to_string(), base);
        }
        Control::Continue
    }
}

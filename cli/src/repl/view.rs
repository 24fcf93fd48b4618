//! How the session shows the program: `:show` (the program and its loop annotations),
//! the effect of a step (the program with the lines the step changed marked, and the
//! annotations it added), `:loops` (each loop with its annotations), and the `:help`
//! table's entries, which never run past [`HELP_WIDTH`] columns.

use std::io::Write;

use atl_lang::ir::{Expr, LoopHint};
use atl_lang::pretty::body_to_string;

use super::{Control, Session, Taken};

/// The widest `:help` lays its entries out for (narrower on a narrower terminal):
/// entries that do not fit on one line get their text on the following lines, indented
/// and wrapped, instead of wrapping at the terminal's edge.
pub const HELP_WIDTH: usize = 100;

/// The narrowest layout (a narrower terminal wraps what does not fit).
pub const MIN_WIDTH: usize = 60;

/// One `:help` entry for a `width`-column layout: `head` padded to `column`, then the
/// text; when the head is wider than the column or the line would pass `width`, the
/// text goes below it, wrapped at word boundaries.
pub fn help_entry(head: &str, column: usize, text: &str, width: usize, out: &mut dyn Write) {
    let head_width = head.chars().count();
    if head_width < column && 2 + column + 1 + text.chars().count() <= width {
        let _ = writeln!(out, "  {head:<column$} {text}");
        return;
    }
    let _ = writeln!(out, "  {head}");
    for line in wrap(text, width - 6) {
        let _ = writeln!(out, "      {line}");
    }
}

/// `text` cut into lines of at most `width` characters at spaces (a longer word is
/// left whole on its own line).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// For each line of `new`, whether it is not among the lines a longest common
/// subsequence of `old` and `new` keeps (a line the step added or changed); and how
/// many lines of `old` are not kept.
fn changed_lines(old: &[&str], new: &[&str]) -> (Vec<bool>, usize) {
    let (n, m) = (old.len(), new.len());
    // lcs[i][j]: the longest common subsequence of old[i..] and new[j..].
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if old[i] == new[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut changed = vec![true; m];
    let (mut i, mut j) = (0, 0);
    while i < n && j < m {
        if old[i] == new[j] {
            changed[j] = false;
            i += 1;
            j += 1;
        } else if lcs[i + 1][j] >= lcs[i][j + 1] {
            i += 1;
        } else {
            j += 1;
        }
    }
    (changed, n - lcs[0][0])
}

impl Session {
    /// The loop annotations of the steps taken, in order.
    pub(super) fn hints(&self) -> Vec<LoopHint> {
        Taken::hints(&self.steps)
    }

    /// The SIMD width a `vector_width` step taken asks for.
    pub(super) fn vector_width(&self) -> Option<u32> {
        self.steps
            .iter()
            .flat_map(|t| &t.outcomes)
            .find_map(|o| o.record.vector_width)
    }

    /// The stages the steps taken store apart from their computation.
    pub(super) fn storage(&self) -> Vec<atl_lang::ir::StorageHint> {
        self.steps
            .iter()
            .flat_map(|t| &t.outcomes)
            .filter_map(|o| o.record.storage.clone())
            .collect()
    }

    /// `parallel io, vectorize ji`: annotations as the directives that ask for them,
    /// with the loop names the user wrote.
    fn describe_hints(&self, hints: &[LoopHint]) -> String {
        let program = self.checked.as_ref().map(|c| &c.program);
        hints
            .iter()
            .map(|h| {
                let var = program.map_or(h.var.as_str(), |p| p.written_name(&h.var));
                format!("{} {var}", h.kind.directive())
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The focus's name and the current program, then its loop annotations if any.
    pub(super) fn print_program(&self, out: &mut dyn Write) {
        match (self.current(), &self.focus) {
            (Some(e), Some(name)) => {
                let _ = writeln!(out, "{name} =\n{}", body_to_string(e, self.style, "  "));
                let hints = self.hints();
                if !hints.is_empty() {
                    let _ = writeln!(out, "  loop annotations: {}", self.describe_hints(&hints));
                }
                if let Some(bits) = self.vector_width() {
                    let _ = writeln!(out, "  vector width: {bits} bits");
                }
            }
            _ => {
                let _ = writeln!(out, "no program in focus: `:load FILE`, then `:focus NAME`");
            }
        }
    }

    /// What the steps just taken did: the program with the lines they changed marked
    /// `+` in the margin and a count of the lines they removed, or, when the program's
    /// text is unchanged, the annotations they added.
    pub(super) fn print_step_effect(
        &self,
        before: Option<&Expr>,
        hints_before: &[LoopHint],
        out: &mut dyn Write,
    ) {
        let (Some(after), Some(name), Some(before)) = (self.current(), &self.focus, before) else {
            self.print_program(out);
            return;
        };
        let old_text = body_to_string(before, self.style, "  ");
        let new_text = body_to_string(after, self.style, "  ");
        let hints = self.hints();
        let new_hints: Vec<LoopHint> = hints
            .iter()
            .filter(|h| !hints_before.contains(h))
            .cloned()
            .collect();
        if old_text == new_text {
            let _ = writeln!(out, "{name} =\n{new_text}");
            let added = if new_hints.is_empty() {
                String::new()
            } else {
                format!(
                    "; loop annotations added: {}",
                    self.describe_hints(&new_hints)
                )
            };
            let _ = writeln!(out, "  (the program's text is unchanged{added})");
            if !hints.is_empty() {
                let _ = writeln!(out, "  loop annotations: {}", self.describe_hints(&hints));
            }
            if let Some(bits) = self.vector_width() {
                let _ = writeln!(
                    out,
                    "  vector width: {bits} bits (the kernel's C asks the compiler for it)"
                );
            }
            return;
        }
        let old: Vec<&str> = old_text.lines().collect();
        let new: Vec<&str> = new_text.lines().collect();
        let (changed, removed) = changed_lines(&old, &new);
        let _ = writeln!(out, "{name} =");
        for (line, changed) in new.iter().zip(&changed) {
            // The mark takes the first column of the indentation.
            match (changed, line.strip_prefix(' ')) {
                (true, Some(rest)) => {
                    let _ = writeln!(out, "+{rest}");
                }
                (true, None) => {
                    let _ = writeln!(out, "+{line}");
                }
                (false, _) => {
                    let _ = writeln!(out, "{line}");
                }
            }
        }
        let added = changed.iter().filter(|c| **c).count();
        let _ = writeln!(
            out,
            "  ({} marked +; {} of the previous program replaced or removed)",
            super::plural(added, "line"),
            super::plural(removed, "line"),
        );
        if !hints.is_empty() {
            let _ = writeln!(out, "  loop annotations: {}", self.describe_hints(&hints));
        }
    }

    /// `:loops`: every loop with its stage and range, and the annotations taken on it.
    pub(super) fn cmd_loops(&mut self, _: &str, out: &mut dyn Write) -> Control {
        let Some(e) = self.current() else {
            let _ = writeln!(out, "no program in focus");
            return Control::Continue;
        };
        let program = self.checked.as_ref().map(|c| &c.program);
        let loops = atl_rewrites::loops::loops(e);
        if loops.is_empty() {
            let _ = writeln!(out, "the program has no loops");
            return Control::Continue;
        }
        let hints = self.hints();
        let _ = writeln!(out, "the loops of the program:");
        for l in &loops {
            let mut line = l.to_string();
            if let Some(w) = program.map(|p| p.written_name(&l.var))
                && w != l.var
            {
                line.push_str(&format!("  (written `{w}`)"));
            }
            let marks: Vec<&str> = hints
                .iter()
                .filter(|h| h.var == l.var)
                .map(|h| h.kind.directive())
                .collect();
            if !marks.is_empty() {
                line.push_str(&format!("  {{{}}}", marks.join(", ")));
            }
            let _ = writeln!(out, "{line}");
        }
        Control::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_lines_follow_a_longest_common_subsequence() {
        let old = ["a", "b", "c", "d"];
        let new = ["a", "x", "c", "d", "e"];
        let (changed, removed) = changed_lines(&old, &new);
        assert_eq!(changed, [false, true, false, false, true]);
        assert_eq!(removed, 1);
        let (changed, removed) = changed_lines(&old, &old);
        assert!(changed.iter().all(|c| !c));
        assert_eq!(removed, 0);
    }

    #[test]
    fn help_entries_fit_the_width() {
        let mut out = Vec::new();
        help_entry(":x", 10, "short", HELP_WIDTH, &mut out);
        help_entry(
            ":save NAME [FILE]",
            10,
            &"word ".repeat(60),
            HELP_WIDTH,
            &mut out,
        );
        let text = String::from_utf8(out).expect("UTF-8");
        assert!(text.starts_with("  :x         short\n"), "{text:?}");
        assert!(
            text.lines().all(|l| l.chars().count() <= HELP_WIDTH),
            "{text}"
        );
        assert!(
            text.contains("\n  :save NAME [FILE]\n      word word"),
            "{text}"
        );
    }
}

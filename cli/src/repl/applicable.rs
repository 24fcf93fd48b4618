//! `:applicable`: the rules whose step succeeds somewhere in the current program (with
//! their sites) and those that need a `with`; the directives that apply as typed (each
//! tried on a copy of the session), and templates for the parameterized ones.

use std::io::Write;

use atl_lang::ir::LoopHint;
use atl_rewrites::directives::hints::check_hints;
use atl_rewrites::engine::{list_sites, run_step_expanded};

use super::{Control, Session, Taken};

impl Session {
    /// What applies here: every rule of the library (left to right) with the places
    /// where its step would succeed, then the rules that match but need a `with`.
    /// The rules whose step succeeds somewhere in the current program (with their
    /// sites), then those that match but need a `with`; `None` without a program.
    pub(super) fn applicable_rules(&self) -> Option<(Vec<String>, Vec<String>)> {
        let (Some(env), Some(current)) = (self.env(), self.current()) else {
            return None;
        };
        let mut applies = Vec::new();
        let mut needs_with = Vec::new();
        for rule in self.library.rules() {
            let Ok(sites) = list_sites(&env, current, &rule.name, false) else {
                continue;
            };
            let ok: Vec<String> = sites
                .iter()
                .filter(|s| s.outcome.is_ok())
                .map(|s| {
                    let path: Vec<String> = s.path.iter().map(usize::to_string).collect();
                    format!("[{}]", path.join(", "))
                })
                .collect();
            // The doc comment starts with the rule's name (and its parameters).
            let doc = rule
                .doc
                .split_once(": ")
                .filter(|(head, _)| head.starts_with(&rule.name))
                .map_or(rule.doc.as_str(), |(_, rest)| rest);
            if !ok.is_empty() {
                let shown = if ok.len() > 4 {
                    format!("{} … ({} sites)", ok[..4].join(" "), ok.len())
                } else {
                    ok.join(" ")
                };
                applies.push(format!("  {:<20} at {shown}  — {doc}", rule.name));
            } else if sites.iter().any(|s| {
                s.outcome.as_ref().is_err_and(|d| {
                    d.message.contains("with")
                        || d.help.as_deref().is_some_and(|h| h.contains("with"))
                })
            }) {
                needs_with.push(format!("  {:<20} — {doc}", rule.name));
            }
        }
        Some((applies, needs_with))
    }

    pub(super) fn print_applicable_rules(&self, out: &mut dyn Write) -> bool {
        let Some((applies, needs_with)) = self.applicable_rules() else {
            let _ = writeln!(out, "no program in focus");
            return false;
        };
        if applies.is_empty() {
            let _ = writeln!(out, "no rule applies as it stands");
        } else {
            let _ = writeln!(
                out,
                "rules that apply (`rw RULE in [PATH]`):\n{}",
                applies.join("\n")
            );
        }
        if !needs_with.is_empty() {
            let _ = writeln!(
                out,
                "rules that match but need `with` (`:sites RULE` shows where):\n{}",
                needs_with.join("\n")
            );
        }
        true
    }

    /// Whether `text` (one step or directive) succeeds on the current program, and
    /// into how many primitive steps it expands; the session is not changed.
    pub(super) fn try_step(&self, text: &str) -> Option<usize> {
        let env = self.env()?;
        let current = self.current()?;
        let (steps, diags) = atl_lang::parser::parse_steps(text);
        let [step] = steps.as_slice() else {
            return None;
        };
        if !diags.is_empty() {
            return None;
        }
        let shape = self.original_shape()?;
        let outcomes = run_step_expanded(&env, current, step, &shape, &self.derived).ok()?;
        // Refused as typed too: a reassociation after `grade exact`, a conflicting hint.
        let step_text = text.get(step.span.range()).unwrap_or(text).trim();
        self.check_exact(&[], step_text, &outcomes).ok()?;
        let mut hints: Vec<LoopHint> = Taken::hints(&self.steps);
        for o in &outcomes {
            if atl_rewrites::record::add_hints(&mut hints, &o.record) {
                check_hints(env.shapes, &o.expr, &hints).ok()?;
            }
        }
        Some(outcomes.len())
    }

    /// The directives, as the user would type them, that succeed on the current
    /// program (each tried on a copy), and the parameterized ones with templates.
    pub(super) fn applicable_directives(&self) -> (Vec<String>, Vec<String>) {
        let Some(current) = self.current() else {
            return (Vec::new(), Vec::new());
        };
        let program = self.checked.as_ref().map(|c| &c.program);
        let all = atl_rewrites::loops::loops(current);
        let names: Vec<String> = all
            .iter()
            .map(|l| atl_rewrites::loops::user_name(l, &all, program))
            .collect();
        let mut candidates: Vec<String> = Vec::new();
        for (k, l) in all.iter().enumerate() {
            let name = &names[k];
            if l.is_gen {
                candidates.push(format!("parallel {name}"));
                candidates.push(format!("vectorize {name}"));
                candidates.push(format!("partition {name}"));
            }
            // The loop directly inside this one (the next in pre-order, one deeper).
            if all.get(k + 1).is_some_and(|m| m.depth == l.depth + 1) {
                candidates.push(format!("reorder {}, {name}", names[k + 1]));
            }
        }
        let stages = atl_rewrites::loops::stages(current);
        for s in &stages {
            candidates.push(format!("compute_root {s}"));
            candidates.push(format!("compute_inline {s}"));
            for name in &names {
                candidates.push(format!("compute_at {s} at {name}"));
            }
        }
        let mut found = Vec::new();
        for c in candidates {
            if let Some(n) = self.try_step(&c) {
                let what = if n == 1 {
                    "1 step".to_string()
                } else {
                    format!("{n} steps")
                };
                found.push(format!("  {c:<36} ({what})"));
            }
        }
        let mut templates = Vec::new();
        if let Some((k, l)) = all.iter().enumerate().find(|(_, l)| l.is_gen) {
            // New loop names are plain words (no `stage.`).
            let plain = |n: &str| n.rsplit('.').next().unwrap_or(n).to_string();
            let n = &names[k];
            let b = plain(n);
            templates.push(format!("  split {n} by K into {b}o, {b}i [tail separate]"));
            if all
                .get(k + 1)
                .is_some_and(|m| m.is_gen && m.depth == l.depth + 1)
            {
                let m = &names[k + 1];
                let c = plain(m);
                templates.push(format!(
                    "  tile {n}, {m} by A, B into {b}o, {c}o, {b}i, {c}i"
                ));
            }
        }
        templates.push("  pack X by Q into XP   (X a matrix input or stage)".to_string());
        (found, templates)
    }

    pub(super) fn cmd_applicable(&mut self, _: &str, out: &mut dyn Write) -> Control {
        if !self.print_applicable_rules(out) {
            return Control::Continue;
        }
        let (found, templates) = self.applicable_directives();
        if found.is_empty() {
            let _ = writeln!(out, "no directive without parameters applies as it stands");
        } else {
            let _ = writeln!(
                out,
                "directives that apply (each tried on a copy):\n{}",
                found.join("\n")
            );
        }
        let _ = writeln!(
            out,
            "directives with parameters (`:help` has them all; `:loops` lists the loops):\n{}",
            templates.join("\n")
        );
        Control::Continue
    }
}

//! The rule library: every `library/*.rules` file of this crate, embedded at build time
//! so that the binary carries exactly the rules its tests checked.

use std::collections::HashMap;

use atl_lang::diag::Diagnostic;
use atl_lang::suggest::closest;

use crate::rule::{Rule, load_rules};

/// The library's rule files: (file name, contents).
pub const RULE_FILES: &[(&str, &str)] = &[
    ("let.rules", include_str!("../library/let.rules")),
    ("access.rules", include_str!("../library/access.rules")),
    ("guard.rules", include_str!("../library/guard.rules")),
    ("loops.rules", include_str!("../library/loops.rules")),
    ("algebra.rules", include_str!("../library/algebra.rules")),
    ("reshape.rules", include_str!("../library/reshape.rules")),
    ("layout.rules", include_str!("../library/layout.rules")),
    (
        "abstraction.rules",
        include_str!("../library/abstraction.rules"),
    ),
];

/// A set of rules by name.
#[derive(Clone, Debug, Default)]
pub struct Library {
    rules: Vec<Rule>,
    by_name: HashMap<String, usize>,
    /// User rules (from a program's `rule` items): name → the rule in rule-file syntax,
    /// which certificates record because no rule file of the library holds it.
    user_sources: HashMap<String, String>,
}

impl Library {
    /// Loads the embedded standard library. Diagnostics name the file they point into.
    pub fn standard() -> (Library, Vec<(String, Diagnostic)>) {
        Library::from_sources(
            RULE_FILES
                .iter()
                .map(|(n, s)| (n.to_string(), s.to_string())),
        )
    }

    /// Loads rules from (file name, text) pairs.
    pub fn from_sources(
        files: impl IntoIterator<Item = (String, String)>,
    ) -> (Library, Vec<(String, Diagnostic)>) {
        let mut lib = Library::default();
        let mut diags = Vec::new();
        for (name, text) in files {
            let (rules, ds) = load_rules(&text, &name);
            diags.extend(ds.into_iter().map(|d| (name.clone(), d)));
            for r in rules {
                if lib.by_name.contains_key(&r.name) {
                    diags.push((
                        name.clone(),
                        Diagnostic::error(
                            "E0704",
                            format!("rule `{}` is defined in two files", r.name),
                        ),
                    ));
                    continue;
                }
                lib.by_name.insert(r.name.clone(), lib.rules.len());
                lib.rules.push(r);
            }
        }
        (lib, diags)
    }

    /// A library of already loaded rules (later duplicates of a name are dropped).
    pub fn from_rules(rules: impl IntoIterator<Item = Rule>) -> Library {
        let mut lib = Library::default();
        for r in rules {
            if !lib.by_name.contains_key(&r.name) {
                lib.by_name.insert(r.name.clone(), lib.rules.len());
                lib.rules.push(r);
            }
        }
        lib
    }

    /// Adds a user rule with its text in rule-file syntax; `false` (and nothing added)
    /// if the name is taken.
    pub fn add_user_rule(&mut self, rule: Rule, source: String) -> bool {
        if self.by_name.contains_key(&rule.name) {
            return false;
        }
        self.user_sources.insert(rule.name.clone(), source);
        self.by_name.insert(rule.name.clone(), self.rules.len());
        self.rules.push(rule);
        true
    }

    /// The rule-file text of a user rule; `None` for library rules.
    pub fn user_source(&self, name: &str) -> Option<&str> {
        self.user_sources.get(name).map(String::as_str)
    }

    pub fn get(&self, name: &str) -> Option<&Rule> {
        self.by_name.get(name).map(|k| &self.rules[*k])
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The closest rule name, for "did you mean".
    pub fn suggest(&self, name: &str) -> Option<&str> {
        closest(
            name,
            self.rules.iter().map(|r| r.name.as_str()),
            2.max(name.len() / 3),
        )
    }
}

//! The record of one derivation step (and of each side condition it proved): what a
//! certificate lists per step. Kept apart from [`crate::cert`] so that the steps, which
//! produce records, sit below the certificate, which is built from whole derivations.

use std::collections::BTreeMap;

use atl_lang::index::Pred;
use atl_lang::ir::{LoopHint, StorageHint};
use atl_solver::{Facts, Verdict};
use serde::Serialize;

use crate::rule::Grade;

/// One side condition: the goal, the facts it was proved under, and the verdict.
#[derive(Clone, Debug, Serialize)]
pub struct ConditionRecord {
    pub name: String,
    pub goal: String,
    pub context: Vec<String>,
    pub verdict: String,
}

impl ConditionRecord {
    pub fn new(name: &str, goal: &Pred, facts: &Facts, verdict: &Verdict) -> ConditionRecord {
        let mut context: Vec<String> = facts.sizes.iter().map(|s| format!("{s} >= 1")).collect();
        context.extend(facts.facts.iter().map(|p| p.to_string()));
        ConditionRecord {
            name: name.to_string(),
            goal: goal.to_string(),
            context,
            verdict: verdict.to_string(),
        }
    }
}

/// One step of a derivation.
#[derive(Clone, Debug, Serialize)]
pub struct StepRecord {
    /// The step as written (`rw get_gen`, `unfold a`, `simpl`, …).
    pub command: String,
    pub rule: Option<String>,
    /// The rule's statement when the step was made (equation, conditions, grade), so a
    /// checker can refuse a certificate whose rule has changed since.
    pub rule_statement: Option<String>,
    pub direction: Option<String>,
    /// Child indices from the root to the rewritten subterm.
    pub path: Vec<usize>,
    /// Metavariable → its value (ATL text).
    pub instantiation: BTreeMap<String, String>,
    pub conditions: Vec<ConditionRecord>,
    pub grade: Grade,
    /// The subterm before and after (for rule steps), and the whole program after.
    pub before: String,
    pub after_site: String,
    pub after: String,
    /// The scheduling directive this step was expanded from (`split i by 8 into io, ii`),
    /// if any; the step itself is an ordinary rule application.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// The loop hint an annotation step (`parallel x`, `vectorize x`, `unroll x`)
    /// requests. Not serialized: the command names it, and a checker only needs to see
    /// that the step leaves the program unchanged.
    #[serde(skip)]
    pub hint: Option<LoopHint>,
    /// The SIMD width a `vector_width N` step asks the C compiler to prefer, in bits.
    /// Not serialized, for the reason `hint` is not.
    #[serde(skip)]
    pub vector_width: Option<u32>,
    /// The storage placement a `store_root x` or `store_at x at yo` step asks lowering
    /// for. Not serialized, for the reason `hint` is not.
    #[serde(skip)]
    pub storage: Option<StorageHint>,
    /// Binders this step copied, as (original, copy) pairs: `specialize`'s case split
    /// copies the program, and a loop hint given before it holds of both copies of its
    /// loop ([`add_hints`]). Not serialized, for the reason `hint` is not.
    #[serde(skip)]
    pub copies: Vec<(String, String)>,
}

/// Adds the loop hint `record` requests (if any) to `hints`, and the hints its copied
/// binders inherit; returns whether anything was added.
pub fn add_hints(hints: &mut Vec<LoopHint>, record: &StepRecord) -> bool {
    let before = hints.len();
    hints.extend(record.hint.clone());
    for (original, copy) in &record.copies {
        let inherited: Vec<LoopHint> = hints
            .iter()
            .filter(|h| &h.var == original)
            .map(|h| LoopHint {
                var: copy.clone(),
                ..h.clone()
            })
            .collect();
        hints.extend(inherited);
    }
    hints.len() > before
}

/// The loop hints of a sequence of steps, in order (see [`add_hints`]).
pub fn hints_of<'r>(records: impl IntoIterator<Item = &'r StepRecord>) -> Vec<LoopHint> {
    let mut hints = Vec::new();
    for r in records {
        add_hints(&mut hints, r);
    }
    hints
}

impl StepRecord {
    /// A record for a tactic that is not a single rule application.
    pub fn tactic(command: String, path: Vec<usize>, before: String, after: String) -> StepRecord {
        StepRecord {
            command,
            rule: None,
            rule_statement: None,
            direction: None,
            path,
            instantiation: BTreeMap::new(),
            conditions: Vec::new(),
            grade: Grade::Exact,
            before,
            after_site: after.clone(),
            after,
            origin: None,
            hint: None,
            vector_width: None,
            storage: None,
            copies: Vec::new(),
        }
    }
}

//! Derivation certificates: what each step did and why it was allowed, as JSON.
//!
//! The format is documented in `docs/certificates.md`. Programs are stored as ATL text
//! (the pretty printer's output, which parses back to the same IR), so a checker needs
//! only the front end, the rule files and a solver.

use std::collections::BTreeSet;

use atl_lang::ir::{Expr, ExprKind, Program};
use atl_lang::pretty::{Style, expr_to_string};
use serde::Serialize;

use crate::derivation::Derivation;
use crate::library::Library;
use crate::rule::Grade;

pub use crate::record::{ConditionRecord, StepRecord};

/// A definition the programs of a certificate refer to: its name and body (ATL text).
#[derive(Clone, Debug, Serialize)]
pub struct DefinitionRecord {
    pub name: String,
    pub body: String,
    /// For a sparse matrix (`sparse A : [n, m] as csr(pos, crd, vals)`), the item after
    /// its keyword: `body` is then the matrix the arrays encode, which a checker
    /// re-derives from the format.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sparse: Option<String>,
}

/// A user rule (a `rule` item of the program file) that a step used: no rule file of
/// the library holds it, so its text travels with the certificate.
#[derive(Clone, Debug, Serialize)]
pub struct UserRuleRecord {
    pub name: String,
    /// The rule in rule-file syntax (equation comment, header, indented lines).
    pub source: String,
    /// How the rule was checked: bounded testing, not a proof.
    pub checked: String,
}

/// The definition a derivation starts from, when it is not a derivation whose
/// certificate is nested (`base`): its name and body, which `initial` must be.
#[derive(Clone, Debug, Serialize)]
pub struct FromRecord {
    pub name: String,
    pub body: String,
    /// `from` is a derivation whose certificate could not be nested (the certificate
    /// was made by [`Certificate::new`] without the other derivations): `body` is that
    /// derivation's result, which a checker cannot vouch for.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub derived: bool,
}

/// A whole certificate.
#[derive(Clone, Debug, Serialize)]
pub struct Certificate {
    pub format: &'static str,
    pub derivation: String,
    pub from: String,
    /// The body of `from` when it is a written definition (`initial` must be it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from_definition: Option<FromRecord>,
    /// The declarations the programs live in (sizes, assumes, inputs), as ATL text.
    pub declarations: String,
    /// The definitions the programs refer to, each after those it refers to.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub definitions: Vec<DefinitionRecord>,
    /// The user rules the steps use.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub user_rules: Vec<UserRuleRecord>,
    pub initial: String,
    pub steps: Vec<StepRecord>,
    pub result: String,
    pub grade: Grade,
    /// The certificate of `from` when it is a derivation (`initial` must be its
    /// `result`); certificates of chains nest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<Box<Certificate>>,
}

impl Certificate {
    /// The certificate of `d` without the certificates of other derivations: when `d`
    /// is derived from a derivation, its base is recorded only by its result
    /// ([`FromRecord::derived`]), which a checker cannot verify. Prefer
    /// [`Certificate::chained`].
    pub fn new(d: &Derivation, program: &Program, library: &Library) -> Certificate {
        Certificate::chained(d, &[], program, library)
    }

    /// The certificate of `d`, with the certificate of its base nested when `from` is
    /// one of `derivations` (recursively, so a chain of derivations is one certificate).
    /// `program` is the program with every earlier derivation added as a definition
    /// (`with_derived`): a derivation's name stands for its result, as in `unfold`.
    /// `library` is the one the derivations ran with.
    pub fn chained(
        d: &Derivation,
        derivations: &[Derivation],
        program: &Program,
        library: &Library,
    ) -> Certificate {
        // Only derivations before `d` can be its base, so the recursion ends.
        let earlier = &derivations[..derivations
            .iter()
            .position(|x| x.name == d.name)
            .unwrap_or(derivations.len())];
        let base = earlier
            .iter()
            .find(|b| b.name == d.from)
            .map(|b| Box::new(Certificate::chained(b, earlier, program, library)));
        let show = |e: &Expr| expr_to_string(e, Style::default());
        let mut user_rules: Vec<UserRuleRecord> = Vec::new();
        for step in &d.steps {
            if let Some(name) = &step.rule
                && let Some(source) = library.user_source(name)
                && !user_rules.iter().any(|r| &r.name == name)
            {
                user_rules.push(UserRuleRecord {
                    name: name.clone(),
                    source: source.to_string(),
                    checked: format!(
                        "bounded: examples and {} random instances (not proved)",
                        crate::user_rules::USER_RULE_ATTEMPTS
                    ),
                });
            }
        }
        Certificate {
            format: "atl-certificate/1",
            derivation: d.name.clone(),
            from: d.from.clone(),
            from_definition: match &base {
                Some(_) => None,
                None => program.def(&d.from).map(|def| FromRecord {
                    name: d.from.clone(),
                    body: show(&def.body),
                    derived: program.derive(&d.from).is_some(),
                }),
            },
            base,
            declarations: declarations_text(program),
            definitions: definitions_used(program, &d.initial)
                .into_iter()
                .map(|(name, body)| DefinitionRecord {
                    sparse: program.sparse_item(&name),
                    name,
                    body: show(body),
                })
                .collect(),
            user_rules,
            initial: show(&d.initial),
            steps: d.steps.clone(),
            result: show(&d.result),
            grade: d.grade(),
        }
    }
}

/// The sizes, assumptions and inputs of a program as ATL text.
pub fn declarations_text(p: &Program) -> String {
    let mut s = String::new();
    if !p.sizes.is_empty() {
        let names: Vec<&str> = p.sizes.iter().map(|x| x.name.as_str()).collect();
        s.push_str(&format!("size {}\n", names.join(", ")));
    }
    for a in &p.assumes {
        s.push_str(&format!("assume {}\n", a.pred));
    }
    for i in &p.inputs {
        s.push_str(&format!("{i}\n"));
    }
    s
}

/// The definitions `e` refers to, directly or through other definitions, each after
/// the ones its body refers to. Rules never introduce a reference, and `unfold`
/// replaces one by a body that is itself in this list, so these are all the
/// definitions any program of a derivation from `e` mentions.
pub fn definitions_used<'p>(program: &'p Program, e: &Expr) -> Vec<(String, &'p Expr)> {
    fn refs(e: &Expr) -> Vec<String> {
        let mut out = Vec::new();
        e.walk(&mut |n| {
            if let ExprKind::DefRef(r) = &n.kind
                && !out.contains(r)
            {
                out.push(r.clone());
            }
        });
        out
    }
    fn visit<'p>(
        program: &'p Program,
        name: &str,
        done: &mut BTreeSet<String>,
        out: &mut Vec<(String, &'p Expr)>,
    ) {
        if !done.insert(name.to_string()) {
            return;
        }
        let Some(def) = program.def(name) else {
            return;
        };
        for r in refs(&def.body) {
            visit(program, &r, done, out);
        }
        out.push((name.to_string(), &def.body));
    }
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for r in refs(e) {
        visit(program, &r, &mut done, &mut out);
    }
    out
}

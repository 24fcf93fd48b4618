//! User rules: the `rule NAME: …` items of a program file, in the syntax of the
//! library's rule files (`docs/rules.md`).
//!
//! A user rule is admitted into the library a derivation uses only after it passed the
//! checks every library rule passes in this crate's tests: it loads (diagnostics point
//! into the program file), it does not take a library rule's name, each of its examples
//! applies and preserves the meaning of its start, and the bounded semantic check
//! ([`crate::check::check_rule`]) finds no counterexample among random instances and
//! accepts at least one. That is testing, not proof: certificates record the rule's
//! text so that `atl verify` can replay its steps, and say that the rule is assumed.

use std::collections::{BTreeMap, HashMap};

use atl_lang::ast::RuleItem;
use atl_lang::diag::Diagnostic;
use atl_lang::interp::{EvalOptions, Tensor, eval_def, input_shapes};
use atl_lang::ir::{Program, alpha_eq};
use atl_lang::span::Span;
use atl_solver::Solver;

use crate::check::{RuleCheck, check_rule};
use crate::context::Env;
use crate::derivation::{run_derivations, with_derived};
use crate::library::Library;
use crate::rule::{EXAMPLE_PRELUDE, Example, Grade, Rule, load_one};

/// Random instances tried per user rule (the default of `atl rules --check`).
pub const USER_RULE_ATTEMPTS: usize = 200;

/// The seed of the bounded check: fixed, so that a file is accepted or refused the same
/// way every time.
pub const USER_RULE_SEED: u64 = 0;

/// One line of a rule item: (1-based line number in the file, byte offset, text).
type Line<'a> = (usize, usize, &'a str);

/// The lines of a rule item with their positions in the program file; blank lines and
/// comment lines inside the item are left out (as in rule files).
fn item_lines(item: &RuleItem) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut offset = item.text_offset;
    for (n, line) in item.text.split_inclusive('\n').enumerate() {
        let text = line.trim_end_matches(['\n', '\r']);
        if n == 0 || !(text.trim().is_empty() || text.trim_start().starts_with('#')) {
            out.push((item.line + n, offset, text));
        }
        offset += line.len();
    }
    out
}

/// The rule in rule-file syntax: its equation comment, the header, and every other line
/// indented by two spaces. Certificates record this text; `load_rules` reads it back.
pub fn rule_file_text(item: &RuleItem) -> String {
    let mut s = String::new();
    if let Some(doc) = &item.doc {
        s.push_str(doc);
        s.push('\n');
    }
    for (k, (_, _, text)) in item_lines(item).into_iter().enumerate() {
        if k > 0 {
            s.push_str("  ");
        }
        s.push_str(text.trim());
        s.push('\n');
    }
    s
}

/// Loads one rule item with the rule-file loader; diagnostics point into the program
/// file.
pub fn load_user_rule(item: &RuleItem, file_name: &str) -> Result<Rule, Diagnostic> {
    let lines = item_lines(item);
    let doc = item
        .doc
        .as_ref()
        .map(|d| d.trim_start_matches('#').trim().to_string());
    load_one(lines[0], &lines[1..], doc, file_name)
}

/// Applies `rule` to an example's start (first match, as a one-step derivation in the
/// example environment) and checks that it gives the example's result up to
/// alpha-equivalence and the same values under the interpreter (bit for bit for `exact`
/// rules). `library` must hold the rule. The error says what went wrong.
pub fn run_example(
    rule: &Rule,
    ex: &Example,
    library: &Library,
    solver: &Solver,
) -> Result<(), String> {
    let with = if ex.with.is_empty() {
        String::new()
    } else {
        let parts: Vec<String> = ex.with.iter().map(|(k, v)| format!("{k} := {v}")).collect();
        format!(" with {}", parts.join(", "))
    };
    let source = format!(
        "{EXAMPLE_PRELUDE}def start = {}\ndef expected = {}\nderive applied from start {{\n  rw {}{with}\n}}\n",
        ex.start, ex.result, rule.name
    );
    let first = |ds: &[Diagnostic]| ds.first().map_or(String::new(), |d| d.message.clone());
    let (checked, diags) = atl_lang::check_source(&source);
    let Some(c) = checked else {
        return Err(format!(
            "the example does not check in the example environment: {}",
            first(&diags)
        ));
    };
    let env = Env {
        program: &c.program,
        shapes: &c.shapes,
        library,
        solver,
    };
    let (derivations, diags) = run_derivations(&env);
    let Some(applied) = derivations.first() else {
        return Err(format!(
            "the rule does not apply to the example's start: {}",
            first(&diags)
        ));
    };
    let expected = c
        .program
        .def("expected")
        .map(|d| d.body.clone())
        .ok_or("the example has no result")?;
    if !alpha_eq(&applied.result, &expected) {
        return Err(format!(
            "applying the rule gives `{}`, not the example's result `{}`",
            atl_lang::pretty::expr_to_string(&applied.result, Default::default()),
            ex.result
        ));
    }
    let (program, _) = with_derived(&c.program, &c.shapes, &derivations);
    let options = EvalOptions::default();
    for (n, m) in [(1, 1), (2, 3), (5, 4), (8, 2)] {
        let sizes: BTreeMap<String, i64> = [("n".to_string(), n), ("m".to_string(), m)].into();
        let shapes = input_shapes(&program, &sizes, &options).map_err(|d| d.message)?;
        let inputs: BTreeMap<String, Tensor> = shapes
            .into_iter()
            .enumerate()
            .map(|(k, (name, s))| {
                (
                    name.clone(),
                    atl_lang::interp::random_input_named(
                        &program,
                        &name,
                        s,
                        &sizes,
                        (n * 10 + m) as u64 * 31 + k as u64,
                    ),
                )
            })
            .collect();
        let a = eval_def(&program, "start", &sizes, &inputs, &options);
        let b = eval_def(&program, "applied", &sizes, &inputs, &options);
        let same = match (&a, &b) {
            (Ok(a), Ok(b)) => {
                a.shape == b.shape
                    && a.data.iter().zip(&b.data).all(|(x, y)| match rule.grade {
                        Grade::Exact => x.to_bits() == y.to_bits(),
                        Grade::Real => (x - y).abs() <= 1e-9 * (1.0 + x.abs().max(y.abs())),
                    })
            }
            (Err(x), Err(y)) => x.code == y.code,
            _ => false,
        };
        if !same {
            return Err(format!(
                "the example's start and result differ at n={n}, m={m}"
            ));
        }
    }
    Ok(())
}

/// The span of line `line` of a rule item (for diagnostics about an example).
fn line_span(item: &RuleItem, line: usize) -> Option<Span> {
    item_lines(item)
        .into_iter()
        .find(|(n, _, _)| *n == line)
        .map(|(_, off, text)| {
            let lead = text.len() - text.trim_start().len();
            Span::new(off + lead, off + text.len())
        })
}

/// The library a program's derivations use: `standard` plus every user rule of the
/// program that loads and passes its checks. Each refused rule gives an error
/// diagnostic pointing into the program file (`file_name` names it in rule origins);
/// the caller must not run derivations when there is one.
pub fn library_with_user_rules(
    standard: &Library,
    program: &Program,
    file_name: &str,
    solver: &Solver,
) -> (Library, Vec<Diagnostic>) {
    let mut library = standard.clone();
    let mut diags = Vec::new();
    let mut seen: HashMap<&str, Span> = HashMap::new();
    for item in &program.rules {
        let rule = match load_user_rule(item, file_name) {
            Ok(r) => r,
            Err(d) => {
                diags.push(d);
                continue;
            }
        };
        if let Some(lib_rule) = standard.get(&rule.name) {
            diags.push(
                Diagnostic::error(
                    "E0715",
                    format!("user rule `{}` has the name of a library rule", rule.name),
                )
                .at(item.name.span, "this name is taken by the library")
                .with_note(format!("library rule: {}", lib_rule.statement()))
                .with_help("give your rule another name (`atl rules` lists the library)"),
            );
            continue;
        }
        if let Some(first) = seen.get(rule.name.as_str()) {
            diags.push(
                Diagnostic::error("E0704", format!("rule `{}` is defined twice", rule.name))
                    .at(item.name.span, "second definition")
                    .with_secondary(*first, "first defined here"),
            );
            continue;
        }
        seen.insert(&item.name.name, item.name.span);
        if let Some(d) = check_user_rule(item, &rule, solver) {
            diags.push(d);
            continue;
        }
        library.add_user_rule(rule, rule_file_text(item));
    }
    (library, diags)
}

/// Runs a user rule's examples and its bounded semantic check; the diagnostic says why
/// the rule is refused.
pub fn check_user_rule(item: &RuleItem, rule: &Rule, solver: &Solver) -> Option<Diagnostic> {
    // The rule is applied from a library of its own: a user rule may not rely on the
    // other user rules to pass its checks.
    let own = Library::from_rules([rule.clone()]);
    for ex in &rule.examples {
        if let Err(why) = run_example(rule, ex, &own, solver) {
            let at = line_span(item, ex.line).unwrap_or(item.span);
            return Some(
                Diagnostic::error(
                    "E0716",
                    format!("an example of user rule `{}` fails", rule.name),
                )
                .at(at, "this example")
                .with_secondary(item.name.span, "in this rule")
                .with_note(why)
                .with_help(
                    "an example is `START => RESULT`: applying the rule at its first match in START gives RESULT (docs/rules.md)",
                ),
            );
        }
    }
    match check_rule(rule, &own, solver, USER_RULE_ATTEMPTS, USER_RULE_SEED) {
        RuleCheck::Passed { .. } => None,
        RuleCheck::Failed {
            lhs,
            rhs,
            sizes,
            detail,
        } => Some(
            Diagnostic::error(
                "E0717",
                format!(
                    "user rule `{}` is wrong: a random instance has sides that differ",
                    rule.name
                ),
            )
            .at(item.span, "refuted by the bounded check")
            .with_note(format!("instance: {lhs}"))
            .with_note(format!("rewrites to: {rhs}"))
            .with_note(format!("at sizes {sizes}: {detail}"))
            .with_help(
                "fix the equation, or add the side condition (`if NAME: …`) that excludes this instance",
            ),
        ),
        RuleCheck::NoInstance { tried } => Some(
            Diagnostic::error(
                "E0718",
                format!("user rule `{}` could not be checked", rule.name),
            )
            .at(item.span, "no random instance applied")
            .with_note(format!(
                "none of {tried} random instances of its left side was accepted (a match with provable side conditions), so nothing was compared"
            ))
            .with_help(
                "a rule is only admitted after random instances agreed; loosen the pattern's shape or the side conditions",
            ),
        ),
    }
}

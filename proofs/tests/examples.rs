//! Every derivation of every example produces a certificate that the checker accepts.

mod common;

#[test]
fn every_example_derivation_verifies() {
    let mut checked = 0;
    let mut failures = Vec::new();
    for file in common::example_files() {
        let source = std::fs::read_to_string(&file).expect("readable");
        for (name, cert) in common::certificates_of_source(&source) {
            match atl_proofs::verify(&cert) {
                Ok(report) => {
                    assert_eq!(report.derivation, name);
                    assert_eq!(report.steps, report.rule_steps + report.tactic_steps);
                    checked += 1;
                }
                Err(e) => failures.push(format!("{} / {name}: {e}", file.display())),
            }
        }
    }
    assert!(failures.is_empty(), "rejected:\n{}", failures.join("\n"));
    assert!(checked >= 13, "only {checked} derivations found");
}

/// Every example of every rule, as a one-step derivation (forward; and backward where
/// the engine accepts it), gives a certificate the checker accepts: the checker's own
/// matcher agrees with the engine's on the whole library.
#[test]
fn every_rule_example_verifies_both_ways() {
    use atl_rewrites::rule::EXAMPLE_PRELUDE;
    let (library, _) = atl_rewrites::Library::standard();
    let mut failures = Vec::new();
    let (mut forward, mut backward) = (0, 0);
    for rule in library.rules() {
        for ex in &rule.examples {
            let with: Vec<String> = ex.with.iter().map(|(k, v)| format!("{k} := {v}")).collect();
            let with = if with.is_empty() {
                String::new()
            } else {
                format!(" with {}", with.join(", "))
            };
            let source = format!(
                "{EXAMPLE_PRELUDE}def start = {}\nderive applied from start {{\n  rw {}{with}\n}}\n",
                ex.start, rule.name
            );
            for (_, cert) in common::certificates_of_source(&source) {
                forward += 1;
                if let Err(e) = atl_proofs::verify(&cert) {
                    failures.push(format!("{} forward: {e}", rule.name));
                }
            }
            // Backward, from the result; the engine may refuse (another first match,
            // a parameter it cannot know), then there is nothing to check.
            let source = format!(
                "{EXAMPLE_PRELUDE}def start = {}\nderive applied from start {{\n  rw<- {}\n}}\n",
                ex.result, rule.name
            );
            let Some(certs) = common::try_certificates_of_source(&source) else {
                continue;
            };
            for (_, cert) in certs {
                backward += 1;
                if let Err(e) = atl_proofs::verify(&cert) {
                    failures.push(format!("{} backward: {e}", rule.name));
                }
            }
        }
    }
    assert!(failures.is_empty(), "rejected:\n{}", failures.join("\n"));
    assert!(
        forward >= 80 && backward >= 60,
        "{forward} forward, {backward} backward"
    );
}

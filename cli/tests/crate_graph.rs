//! The independence rules of the workspace, enforced by the crate graph rather than left
//! to comments: the two independent checkers must not link the code they check.
//!
//! - `atl-proofs`, the certificate checker, must not reach the rewrite engine
//!   (`atl-rewrites`) or anything built on it: a checker that shares the engine's
//!   matcher or tactics would only repeat the engine's mistakes. It may use the front
//!   end, the solver and the rule loader (`atl-rules`), which `TRUSTED.md` lists.
//! - `atl-validate`, the translation validator, must not reach the lowering it checks
//!   (`atl-lower`: lowering, normalization, annotation, placement) or anything built on
//!   it or on the engine. It may use the front end, the solver and the loop IR's data
//!   types (`atl-loopir`).
//!
//! - `atl-driver`, the pipeline library, and `atl-build`, which compiles kernels in
//!   other people's builds, must not reach the command line (`atl-cli`, its argument
//!   parser and line editor) or the autoscheduler (`atl-schedule`, egg): a build script
//!   pays for every crate it depends on, and the search is never needed to rebuild a
//!   kernel. The autoscheduler itself is a library under the command line.
//!
//! Only normal dependencies count: their tests may use the engine or the lowering (as
//! dev-dependencies) to build what they check, which does not link it into the checker.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// One rule: `checker` reaches every crate of `uses` (so the walk is known to work) and
/// none of `forbidden`; `advice` says what to do instead.
struct Rule {
    checker: &'static str,
    uses: &'static [&'static str],
    forbidden: &'static [&'static str],
    advice: &'static str,
}

const RULES: &[Rule] = &[
    Rule {
        checker: "atl-proofs",
        uses: &["atl-lang", "atl-solver", "atl-rules"],
        forbidden: &[
            "atl-rewrites",
            "atl-padtypes",
            "atl-lower",
            "atl-loopir",
            "atl-emit-c",
            "atl-validate",
            "atl-driver",
            "atl-cli",
        ],
        advice: "the checker must not depend on the rewrite engine or its users; move what it needs into atl-rules or atl-lang",
    },
    Rule {
        checker: "atl-validate",
        uses: &["atl-lang", "atl-solver", "atl-loopir"],
        forbidden: &[
            "atl-lower",
            "atl-emit-c",
            "atl-rewrites",
            "atl-padtypes",
            "atl-proofs",
            "atl-driver",
            "atl-cli",
        ],
        advice: "the validator must not depend on the lowering it checks; move the data types it needs into atl-loopir",
    },
    Rule {
        checker: "atl-driver",
        uses: &[
            "atl-lang",
            "atl-rewrites",
            "atl-lower",
            "atl-validate",
            "atl-emit-c",
            "atl-proofs",
        ],
        forbidden: &["atl-cli", "clap", "rustyline", "atl-schedule", "egg"],
        advice: "the pipeline library must not depend on the command line or the autoscheduler built on it; keep argument parsing and printing in atl-cli, the search in atl-schedule",
    },
    Rule {
        checker: "atl-build",
        uses: &["atl-driver", "atl-emit-c", "cc"],
        forbidden: &["atl-cli", "clap", "rustyline", "atl-schedule", "egg"],
        advice: "atl-build calls the pipeline through atl-driver; what it needs of the CLI belongs in the driver, and a build never searches schedules",
    },
    Rule {
        checker: "atl-schedule",
        uses: &["atl-driver", "egg", "rayon"],
        forbidden: &["atl-cli", "clap", "rustyline"],
        advice: "the autoscheduler is a library the CLI calls; keep argument parsing and printing in atl-cli",
    },
];

/// The workspace's `cargo metadata`, with the full resolve graph.
fn metadata() -> Value {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let output = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--manifest-path"])
        .arg(&manifest)
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON")
}

/// A package's name from its id, through the metadata's package list.
fn package_names(meta: &Value) -> BTreeMap<String, String> {
    meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| {
            (
                p["id"].as_str().expect("package id").to_string(),
                p["name"].as_str().expect("package name").to_string(),
            )
        })
        .collect()
}

/// The ids of the packages a resolve node depends on through at least one normal
/// (non-dev, non-build) dependency edge. A dependency's `dep_kinds` lists every way it
/// is depended on; `kind: null` is a normal dependency.
fn normal_dependencies(node: &Value) -> Vec<String> {
    node["deps"]
        .as_array()
        .expect("deps")
        .iter()
        .filter(|dep| {
            dep["dep_kinds"]
                .as_array()
                .expect("dep_kinds")
                .iter()
                .any(|k| k["kind"].is_null())
        })
        .map(|dep| dep["pkg"].as_str().expect("dep pkg").to_string())
        .collect()
}

/// Every package `root` reaches by normal dependencies, by name, each with the chain of
/// crates that leads to it from `root`.
fn reachable_from(meta: &Value, root_name: &str) -> BTreeMap<String, Vec<String>> {
    let names = package_names(meta);
    let nodes: BTreeMap<String, &Value> = meta["resolve"]["nodes"]
        .as_array()
        .expect("resolve nodes (cargo metadata without --no-deps)")
        .iter()
        .map(|n| (n["id"].as_str().expect("node id").to_string(), n))
        .collect();
    let root = names
        .iter()
        .find(|(_, name)| name.as_str() == root_name)
        .map(|(id, _)| id.clone())
        .unwrap_or_else(|| panic!("{root_name} is a workspace package"));
    let mut seen: BTreeSet<String> = BTreeSet::from([root.clone()]);
    let mut paths: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut stack = vec![(root, vec![root_name.to_string()])];
    while let Some((id, path)) = stack.pop() {
        for dep in normal_dependencies(nodes[&id]) {
            if seen.insert(dep.clone()) {
                let mut dep_path = path.clone();
                dep_path.push(names[&dep].clone());
                paths.insert(names[&dep].clone(), dep_path.clone());
                stack.push((dep, dep_path));
            }
        }
    }
    paths
}

#[test]
fn the_crate_graph_keeps_its_independence_rules() {
    let meta = metadata();
    let mut violations = Vec::new();
    for rule in RULES {
        let reachable = reachable_from(&meta, rule.checker);
        for expected in rule.uses {
            assert!(
                reachable.contains_key(*expected),
                "{} should depend on {expected}; reachable: {:?}",
                rule.checker,
                reachable.keys().collect::<Vec<_>>()
            );
        }
        for name in rule.forbidden {
            if let Some(path) = reachable.get(*name) {
                violations.push(format!("{} ({})", path.join(" -> "), rule.advice));
            }
        }
    }
    assert!(
        violations.is_empty(),
        "independence broken: {}",
        violations.join("; ")
    );
}

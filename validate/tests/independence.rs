//! The validator's independence, enforced by the crate graph (the pattern of
//! `proofs/tests/independence.rs`): `atl-validate` must not depend, directly or through
//! another crate, on the lowering it checks (`atl-lower`: lowering, normalization,
//! annotation, placement) or on anything built on it or on the rewrite engine. A kernel
//! validated by code that shares the lowering's reindexers or index helpers would only
//! repeat the lowering's mistakes, so this is checked here rather than left to a
//! comment. It may use `atl-lang`, `atl-solver` and the loop IR's data types
//! (`atl-loopir`).
//!
//! Only normal dependencies count: the tests may use the lowering (as a dev-dependency)
//! to build the kernels they validate, which does not link it into the validator.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Crates the validator must never reach: the lowering, the C printer, the rewrite
/// engine, the gate and the binary.
const FORBIDDEN: &[&str] = &[
    "atl-lower",
    "atl-emit-c",
    "atl-rewrites",
    "atl-padtypes",
    "atl-cli",
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

/// Every package `atl-validate` reaches by normal dependencies, by name, each with the
/// chain of crates that leads to it from `atl-validate`.
fn reachable_from_validate(meta: &Value) -> BTreeMap<String, Vec<String>> {
    let names = package_names(meta);
    let nodes: BTreeMap<String, &Value> = meta["resolve"]["nodes"]
        .as_array()
        .expect("resolve nodes (cargo metadata without --no-deps)")
        .iter()
        .map(|n| (n["id"].as_str().expect("node id").to_string(), n))
        .collect();
    let root = names
        .iter()
        .find(|(_, name)| name.as_str() == "atl-validate")
        .map(|(id, _)| id.clone())
        .expect("atl-validate is a workspace package");
    let mut seen: BTreeSet<String> = BTreeSet::from([root.clone()]);
    let mut paths: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut stack = vec![(root, vec!["atl-validate".to_string()])];
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
fn the_validator_does_not_depend_on_the_lowering() {
    let reachable = reachable_from_validate(&metadata());
    // The walk found the graph: the crates the validator does use are there.
    for expected in ["atl-lang", "atl-solver", "atl-loopir"] {
        assert!(
            reachable.contains_key(expected),
            "atl-validate should depend on {expected}; reachable: {:?}",
            reachable.keys().collect::<Vec<_>>()
        );
    }
    let violations: Vec<String> = FORBIDDEN
        .iter()
        .filter_map(|name| reachable.get(*name))
        .map(|path| path.join(" -> "))
        .collect();
    assert!(
        violations.is_empty(),
        "the validator must not depend on the lowering it checks or its users \
         (move what it needs into atl-loopir, atl-solver or atl-lang instead): {}",
        violations.join("; ")
    );
}

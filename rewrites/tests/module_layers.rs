//! The modules of `atl-rewrites` form no cycle: the derivation driver sits above the
//! directives, which sit above the primitive steps, which sit above rule application and
//! the contexts. Read from the sources: every `crate::a` (and `crate::rewrite::b`) path
//! in a module's code (not its comments) is an edge to that module; the lib root's re-exports (`crate::Library`)
//! count as edges to the module they come from; the `engine` facade is left out (it
//! only re-exports, and nothing inside the crate uses it).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The module a `crate::…` path names, given what follows `crate::`.
fn target(rest: &str) -> Option<String> {
    let mut segments = rest.split("::").map(|s| {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect::<String>()
    });
    let first = segments.next()?;
    if first.is_empty() {
        return None;
    }
    if first == "Library" {
        return Some("library".to_string());
    }
    if first.starts_with(char::is_uppercase) {
        return None;
    }
    if first == "rewrite"
        && let Some(second) = segments.next()
        && !second.is_empty()
        && second.starts_with(char::is_lowercase)
        && second != "rewrite"
    {
        return Some(format!("rewrite::{second}"));
    }
    Some(first)
}

/// Module name -> the modules it uses.
fn edges() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            for inner in std::fs::read_dir(&path).unwrap() {
                files.push(inner.unwrap().path());
            }
        } else {
            files.push(path);
        }
    }
    let mut out = BTreeMap::new();
    for path in files {
        let rel = path.strip_prefix(&src).unwrap().with_extension("");
        let name = rel
            .to_string_lossy()
            .replace('/', "::")
            .trim_end_matches("::mod")
            .to_string();
        if name == "lib" || name == "engine" {
            continue;
        }
        // Comments (doc links included) are not uses.
        let text: String = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut uses = BTreeSet::new();
        for (k, _) in text.match_indices("crate::") {
            let rest = &text[k + "crate::".len()..];
            if let Some(t) = target(rest)
                && t != name
                && !name.starts_with(&format!("{t}::"))
            {
                uses.insert(t);
            }
        }
        out.insert(name, uses);
    }
    out
}

#[test]
fn the_modules_of_the_engine_form_no_cycle() {
    let graph = edges();
    assert!(graph.contains_key("derivation") && graph.contains_key("rewrite::search"));
    // Depth-first search for a back edge.
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) {
        if done.contains(node) {
            return;
        }
        if let Some(k) = stack.iter().position(|n| n == node) {
            panic!("module cycle: {} -> {node}", stack[k..].join(" -> "));
        }
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            visit(next, graph, stack, done);
        }
        stack.pop();
        done.insert(node.to_string());
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        visit(node, &graph, &mut Vec::new(), &mut done);
    }
}

#[test]
fn directives_use_the_primitive_steps_not_the_driver() {
    let graph = edges();
    for low in [
        "context",
        "rewrite",
        "tactics",
        "window",
        "step",
        "directives",
    ] {
        assert!(
            !graph[low].contains("derivation"),
            "`{low}` uses the derivation driver: {:?}",
            graph[low]
        );
    }
}

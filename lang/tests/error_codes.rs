//! The error-code registry (`atl_lang::codes`) against the rest of the repository:
//!
//! - `docs/errors.md` is exactly the document the registry renders (run with
//!   `ATL_BLESS=1` to regenerate it after changing the registry);
//! - every code literal in a `.rs` file of the workspace is registered and not retired,
//!   and every registered code that is not retired is raised by code outside `tests/`
//!   and `benches/`, so that the registry cannot rot in either direction;
//! - the registry itself is well formed, and `lookup`/`explain` find its entries.
//!
//! The scan is deliberately regex-free and simple: a code literal is `"E` followed by
//! four digits and `"`. This file and the registry are left out of the scan, since they
//! name codes without raising them.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use atl_lang::codes::{CODES, GROUPS, errors_markdown, explain, lookup};

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate lives inside the workspace")
        .to_path_buf()
}

/// Files that name codes without raising them: the registry and this test.
fn is_registry_file(relative: &Path) -> bool {
    relative == Path::new("lang/src/codes.rs") || relative == Path::new("lang/tests/error_codes.rs")
}

/// Every `.rs` file under `dir`, as paths relative to `root`, skipping build output and
/// version-control directories.
fn collect_rust_files(root: &Path, dir: &Path, files: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if name != "target" && name != ".git" {
                collect_rust_files(root, &path, files);
            }
        } else if name.ends_with(".rs") {
            files.push(
                path.strip_prefix(root)
                    .expect("under the root")
                    .to_path_buf(),
            );
        }
    }
}

/// The code literals of `text`: `"E` followed by four digits and `"`, with their lines.
fn code_literals(text: &str) -> Vec<(String, usize)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    for start in 0..bytes.len() {
        let candidate = &bytes[start..];
        if candidate.len() >= 7
            && candidate[0] == b'"'
            && candidate[1] == b'E'
            && candidate[2..6].iter().all(u8::is_ascii_digit)
            && candidate[6] == b'"'
        {
            let code = String::from_utf8(candidate[1..6].to_vec()).expect("ASCII");
            let line = 1 + bytes[..start].iter().filter(|&&b| b == b'\n').count();
            found.push((code, line));
        }
    }
    found
}

/// Where each code literal occurs in the workspace: code → places (`path:line`), and the
/// codes that occur outside `tests/` and `benches/` directories.
struct Scan {
    places: BTreeMap<String, Vec<String>>,
    raised: BTreeSet<String>,
}

fn scan_workspace() -> Scan {
    let root = workspace_root();
    let mut files = Vec::new();
    collect_rust_files(&root, &root, &mut files);
    assert!(
        files.len() > 50,
        "the scan found only {} .rs files under {}: is the root right?",
        files.len(),
        root.display()
    );
    let mut scan = Scan {
        places: BTreeMap::new(),
        raised: BTreeSet::new(),
    };
    for relative in files {
        if is_registry_file(&relative) {
            continue;
        }
        let text = fs::read_to_string(root.join(&relative))
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", relative.display()));
        let in_tests = relative
            .components()
            .any(|c| c.as_os_str() == "tests" || c.as_os_str() == "benches");
        for (code, line) in code_literals(&text) {
            if !in_tests {
                scan.raised.insert(code.clone());
            }
            scan.places
                .entry(code)
                .or_default()
                .push(format!("{}:{line}", relative.display()));
        }
    }
    scan
}

#[test]
fn docs_errors_md_is_rendered_from_the_registry() {
    let path = workspace_root().join("docs/errors.md");
    let expected = errors_markdown();
    if std::env::var_os("ATL_BLESS").is_some_and(|v| v == "1") {
        fs::write(&path, &expected).expect("write docs/errors.md");
        return;
    }
    let actual = fs::read_to_string(&path).expect("read docs/errors.md");
    if actual != expected {
        let first_difference = actual
            .lines()
            .zip(expected.lines())
            .position(|(a, e)| a != e)
            .unwrap_or(actual.lines().count().min(expected.lines().count()));
        panic!(
            "docs/errors.md differs from the registry (lang/src/codes.rs) from line {}; \
             edit the registry, not the file, and regenerate it with \
             `ATL_BLESS=1 cargo test -p atl-lang --test error_codes`",
            first_difference + 1
        );
    }
}

#[test]
fn every_code_in_the_sources_is_registered_and_not_retired() {
    let scan = scan_workspace();
    let mut problems = Vec::new();
    for (code, places) in &scan.places {
        match lookup(code) {
            None => problems.push(format!(
                "{code} is not in the registry (lang/src/codes.rs); used at {}",
                places.join(", ")
            )),
            Some(entry) if entry.retired => problems.push(format!(
                "{code} is retired in the registry but used at {}",
                places.join(", ")
            )),
            Some(_) => {}
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn every_registered_code_is_raised_or_retired() {
    let scan = scan_workspace();
    let unused: Vec<_> = CODES
        .iter()
        .filter(|entry| !entry.retired && !scan.raised.contains(entry.code))
        .map(|entry| entry.code)
        .collect();
    assert!(
        unused.is_empty(),
        "registered codes no code outside tests/ and benches/ raises (raise them, or mark \
         them retired): {unused:?}"
    );
}

#[test]
fn the_registry_is_well_formed() {
    // Increasing order keeps the table easy to search and rules out duplicates.
    for pair in CODES.windows(2) {
        assert!(
            pair[0].code < pair[1].code,
            "the registry is not in increasing order (or repeats a code): {} before {}",
            pair[0].code,
            pair[1].code
        );
    }
    for group in GROUPS {
        assert!(
            CODES.iter().any(|entry| entry.group() == group),
            "group {} has no codes",
            group.pattern()
        );
    }
    let mut seen = BTreeSet::new();
    for entry in CODES {
        let bytes = entry.code.as_bytes();
        assert!(
            bytes.len() == 5 && bytes[0] == b'E' && bytes[1..].iter().all(u8::is_ascii_digit),
            "malformed code {:?}",
            entry.code
        );
        assert!(
            seen.insert(entry.code),
            "{} is registered twice",
            entry.code
        );
        assert!(!entry.title.is_empty(), "{} has no title", entry.code);
        for text in [entry.title, entry.help] {
            // The document is a Markdown table: a cell cannot hold a line break or a
            // column separator.
            assert!(
                !text.contains('\n') && !text.contains(" | "),
                "{}: {text:?} would break the table",
                entry.code
            );
            assert_eq!(text, text.trim(), "{}: stray white space", entry.code);
        }
        assert!(
            GROUPS
                .iter()
                .any(|group| entry.code.starts_with(group.prefix)),
            "{} belongs to no group",
            entry.code
        );
    }
}

#[test]
fn lookup_and_explain_find_registered_codes() {
    let entry = lookup("E0903").expect("E0903 is registered");
    assert_eq!(entry.code, "E0903");
    assert_eq!(lookup("e0903"), Some(entry));
    assert_eq!(lookup(" E0903\n"), Some(entry));
    assert_eq!(lookup("E9999"), None);
    assert_eq!(lookup("0903"), None);
    assert_eq!(lookup(""), None);
    assert_eq!(explain("E9999"), None);

    let text = explain("e0903").expect("E0903 is registered");
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.starts_with(&format!("E0903: {}", entry.title)),
        "{text}"
    );
    assert!(
        flat.contains(&format!("What to do: {}", entry.help)),
        "{text}"
    );
    assert!(
        flat.contains("Group E090x: pad types and access safety"),
        "{text}"
    );
    assert!(
        text.lines().all(|line| line.chars().count() <= 80),
        "explain wraps its lines: {text}"
    );

    let retired = explain("E0607").expect("retired codes keep their entry");
    assert!(retired.contains("retired"), "{retired}");
    assert!(!retired.contains("What to do"), "{retired}");
}

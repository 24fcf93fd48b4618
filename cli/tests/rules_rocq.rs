//! `atl rules` and the Rocq development: each rule's proof status is shown, and
//! `--export-rocq` writes exactly the committed statements of `proofs/rocq`.

mod common;

use std::path::Path;

use atl_cli::{EXIT_ARGS, EXIT_OK};
use common::atl;

#[test]
fn rules_show_their_proof_status() {
    let (code, out, _) = atl(&["rules", "get_gen"]);
    assert_eq!(code, EXIT_OK);
    assert!(out.contains("get_gen  [exact, proved]"), "{out}");
}

#[test]
fn export_rocq_writes_the_committed_statements() {
    let dir = std::env::temp_dir().join(format!("atl-export-rocq-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let dir_s = dir.display().to_string();
    let (code, out, err) = atl(&["rules", "--export-rocq", &dir_s]);
    assert_eq!(code, EXIT_OK, "{err}");
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../proofs/rocq");
    // One statement file per rule file of the library, and `All.v`.
    let rule_files =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../rules/library"))
            .expect("rules dir")
            .filter(|e| {
                e.as_ref()
                    .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "rules"))
            })
            .count();
    assert!(
        out.contains(&format!("wrote {} files", rule_files + 1)),
        "{out}"
    );
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .expect("written dir")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    names.sort();
    assert!(names.iter().any(|n| n == "All.v") && names.iter().any(|n| n == "Rules_let.v"));
    for name in &names {
        let written = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        let on_disk = std::fs::read_to_string(committed.join(name)).unwrap_or_default();
        assert!(!written.is_empty(), "{name} not written");
        assert_eq!(written, on_disk, "{name} differs from proofs/rocq/{name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn export_rocq_exports_the_whole_library_only() {
    let (code, _, err) = atl(&["rules", "get", "--export-rocq", "/tmp/unused"]);
    assert_eq!(code, EXIT_ARGS, "{err}");
}

/// The documents that state how many rules the library has and that all are proved
/// say the number `atl rules` lists (they said 100 and 126 when there were 145).
#[test]
fn the_documents_count_the_rules_of_the_library() {
    let (code, out, _) = atl(&["rules"]);
    assert_eq!(code, EXIT_OK);
    // One header line per rule: `name  [grade, status]  equation`.
    let listed = out
        .lines()
        .filter(|l| !l.starts_with(' ') && l.contains("  [") && l.contains(", proved]"))
        .count();
    let all = out
        .lines()
        .filter(|l| !l.starts_with(' ') && l.contains("  ["))
        .count();
    assert_eq!(listed, all, "every library rule is proved");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (file, phrase) in [
        ("README.md", format!("{all} rules in `rules/library/`")),
        ("docs/rules.md", format!("all {all} are proved")),
        (
            "proofs/rocq/README.md",
            format!("All {all} rules are `status: proved`"),
        ),
        ("TRUSTED.md", format!("all {all} `status: proved`")),
    ] {
        let text = std::fs::read_to_string(root.join(file)).expect(file);
        assert!(text.contains(&phrase), "{file} should say `{phrase}`");
    }
}

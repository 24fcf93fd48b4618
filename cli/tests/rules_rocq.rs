//! `atl rules` and the Rocq development: each rule's proof status is shown, and
//! `--export-rocq` writes exactly the committed statements of `proofs/rocq`.

use std::path::Path;

use atl_cli::{EXIT_ARGS, EXIT_OK, run};

fn atl(args: &[&str]) -> (i32, String, String) {
    let mut out = Vec::new();
    let mut err = Vec::new();
    let mut all = vec!["atl"];
    all.extend_from_slice(args);
    let code = run(all, &mut out, &mut err, false);
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

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
    assert!(out.contains("wrote 7 files"), "{out}");
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../proofs/rocq");
    for name in [
        "Rules_let.v",
        "Rules_access.v",
        "Rules_guard.v",
        "Rules_loops.v",
        "Rules_algebra.v",
        "Rules_reshape.v",
        "All.v",
    ] {
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

//! `cli/src/verify_cmd.rs` (the body of `atl verify`) compiled and run here, so that its
//! exit statuses and output are tested before the CLI wires it into its argument parser.

#[path = "../../cli/src/verify_cmd.rs"]
mod verify_cmd;

mod common;

use std::path::Path;

fn run(path: &Path) -> (i32, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = verify_cmd::verify_file(path, &mut out, &mut err, false);
    let text = |b: Vec<u8>| String::from_utf8(b).expect("UTF-8");
    (code, text(out), text(err))
}

#[test]
fn exit_statuses_and_output() {
    let dir = std::env::temp_dir().join(format!("atl-verify-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let good = common::example_certificate("pipeline", "tiled");
    let path = dir.join("good.json");
    std::fs::write(&path, &good).expect("write");
    let (code, out, err) = run(&path);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("certificate accepted: `tiled` from `fused`, 3 step(s)"),
        "{out}"
    );
    // The grade with what it means (`atl_lang::steps::GRADE_EXACT_MEANING`).
    assert!(
        out.contains(
            "grade exact (bit for bit in the interpreter wherever the values computed are finite; compiled kernels may differ by fused multiply-adds unless compiled with `--fp strict`)"
        ),
        "{out}"
    );
    // The declarations the claim holds under, and the chain it rests on.
    assert!(
        out.contains("holds for every size with `n` >= 1, under `assume n >= 2`"),
        "{out}"
    );
    assert!(
        out.contains(
            "`fused` verified from its nested certificate: from `pipeline`, 3 step(s), grade exact (bit for bit in the interpreter"
        ),
        "{out}"
    );
    assert!(
        out.contains("the chain starts from the recorded body of `pipeline`"),
        "{out}"
    );

    let bad = good.replacen("\"8\"", "\"4\"", 1);
    let path = dir.join("bad.json");
    std::fs::write(&path, bad).expect("write");
    let (code, out, err) = run(&path);
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert!(
        err.starts_with("error[E1007]: step 1 (`rw<- tile_id`)"),
        "{err}"
    );

    let path = dir.join("junk.json");
    std::fs::write(&path, "not json").expect("write");
    assert_eq!(run(&path).0, 2);
    assert_eq!(run(&dir.join("missing.json")).0, 2);
    let _ = std::fs::remove_dir_all(&dir);
}

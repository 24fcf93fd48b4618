//! `atl bench`: a real (small) timing run that checks, times and compares two
//! definitions, and its refusals.

mod common;

use std::path::{Path, PathBuf};

use atl_cli::{EXIT_ARGS, EXIT_OK, EXIT_USER};
use atl_driver::timing as bench_cmd;
use common::atl;

fn path(rel: &str) -> String {
    let root: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    root.join(rel).display().to_string()
}

#[test]
fn bench_checks_times_and_compares_two_definitions() {
    let blur = path("examples/blur/blur.atl");
    let (code, out, err) = atl(&[
        "bench",
        &blur,
        "--def",
        "fast",
        "--vs",
        "fused",
        "--sizes",
        "H=37,W=45",
        "--runs",
        "3",
        "--threads",
        "2",
    ]);
    assert_eq!(code, EXIT_OK, "{out}\n{err}");
    assert!(out.contains("sizes H=37,W=45 (float, 2 threads)"), "{out}");
    assert!(
        out.contains("checked against the interpreter at H=19,W=19"),
        "{out}"
    );
    let runs = out.matches("(3 runs;").count();
    assert_eq!(runs, 2, "both kernels timed 3 times: {out}");
    let ratio: f64 = out
        .lines()
        .find_map(|l| l.strip_prefix("ratio fused / fast = "))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no ratio line: {out}"));
    assert!(ratio.is_finite() && ratio > 0.0, "{ratio}");
}

#[test]
fn bench_refuses_bad_requests() {
    let blur = path("examples/blur/blur.atl");
    // An unknown `--vs` definition is the user's error, with a diagnostic.
    let (code, _, err) = atl(&[
        "bench", &blur, "--def", "fast", "--vs", "nope", "--sizes", "H=4,W=4",
    ]);
    assert_eq!(code, EXIT_USER, "{err}");
    assert!(err.contains("nope"), "{err}");
    // Check sizes that break a size precondition.
    let (code, _, err) = atl(&[
        "bench",
        &blur,
        "--def",
        "fast",
        "--sizes",
        "H=4,W=4",
        "--check-sizes",
        "H=0,W=3",
    ]);
    assert_eq!(code, EXIT_USER, "{err}");
    assert!(err.contains("--check-sizes"), "{err}");
    // Zero runs is an argument error.
    let (code, _, err) = atl(&[
        "bench", &blur, "--def", "fast", "--sizes", "H=4,W=4", "--runs", "0",
    ]);
    assert_eq!(code, EXIT_ARGS, "{err}");
}

#[test]
fn median_is_the_lower_middle() {
    use std::time::Duration;
    let ms = |v: &[u64]| {
        v.iter()
            .map(|&x| Duration::from_millis(x))
            .collect::<Vec<_>>()
    };
    assert_eq!(bench_cmd::median(&ms(&[5, 1, 3])), Duration::from_millis(3));
    assert_eq!(
        bench_cmd::median(&ms(&[4, 1, 3, 2])),
        Duration::from_millis(2)
    );
    assert_eq!(bench_cmd::median(&ms(&[7])), Duration::from_millis(7));
}

/// Default check sizes that break an `assume` are replaced by the nearest ones that
/// satisfy every `assume` (softmax_rows16: `m % 16 == 0`, so m = 16, and n stays 19).
#[test]
fn default_check_sizes_satisfy_the_assumes() {
    let file = path("examples/softmax/softmax_rows16.atl");
    let (code, out, err) = atl(&[
        "bench",
        &file,
        "--def",
        "fast_max",
        "--sizes",
        "n=40,m=64",
        "--runs",
        "1",
    ]);
    assert_eq!(code, EXIT_OK, "{out}\n{err}");
    assert!(
        out.contains("checked against the interpreter at m=16,n=19"),
        "{out}"
    );
    // Sizes the `assume`s admit nowhere near: the clamps, refused with the help.
    let dir = std::env::temp_dir().join(format!("atl-bench-assume-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let odd = dir.join("odd.atl");
    std::fs::write(
        &odd,
        "size n\nassume n % 1000 == 999\ninput f : [n]\ndef d = gen i < n: f[i] * 2\n",
    )
    .expect("write");
    let (code, _, err) = atl(&[
        "bench",
        &odd.display().to_string(),
        "--def",
        "d",
        "--sizes",
        "n=1999",
        "--runs",
        "1",
    ]);
    assert_eq!(code, EXIT_USER, "{err}");
    assert!(err.contains("--check-sizes"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `atl bench --fp strict` compiles its kernels with `-ffp-contract=off` (and the
/// default `--fp fast` with `-ffp-contract=fast`), seen from the outside: the `atl`
/// executable runs with `CC` pointing at a wrapper that records the compiler's
/// arguments and then runs the real `cc`. On a derivation graded `exact` (one multiply
/// and one add per element, where a fused multiply-add would round once), the strict
/// kernel checks at an error of exactly 0 against the interpreter in f64. A value
/// other than `fast` or `strict` is an argument error.
#[test]
fn bench_fp_strict_compiles_without_contraction_and_refuses_bad_values() {
    let dir = std::env::temp_dir().join(format!("atl-bench-fp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let program = dir.join("fused.atl");
    std::fs::write(
        &program,
        "size n\ninput f : [n]\ninput g : [n]\ninput h : [n]\n\
         def fused = gen i < n: f[i] * g[i] + h[i]\n\
         derive exact from fused {\n  grade exact\n}\n",
    )
    .expect("write");
    let program = program.display().to_string();
    let wrapper = dir.join("cc-wrapper.sh");
    std::fs::write(
        &wrapper,
        "#!/bin/sh\nprintf '%s\\n' \"$*\" >> \"$ATL_TEST_CC_LOG\"\nexec cc \"$@\"\n",
    )
    .expect("write");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let bench = |fp: &str| {
        let log = dir.join(format!("cc-{fp}.log"));
        let _ = std::fs::remove_file(&log);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_atl"))
            .args([
                "bench",
                &program,
                "--def",
                "exact",
                "--sizes",
                "n=64",
                "--runs",
                "1",
                "--threads",
                "1",
                "--dtype",
                "f64",
                "--fp",
                fp,
            ])
            .env("CC", &wrapper)
            .env("ATL_TEST_CC_LOG", &log)
            .output()
            .expect("atl runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let compiles: Vec<String> = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("-shared"))
            .map(String::from)
            .collect();
        (out.status.code(), stdout, stderr, compiles)
    };

    let (code, out, err, compiles) = bench("strict");
    assert_eq!(code, Some(EXIT_OK), "{out}\n{err}");
    assert_eq!(
        compiles.len(),
        1,
        "one kernel compiled through the wrapper: {compiles:?}"
    );
    let line = &compiles[0];
    assert!(line.contains("-ffp-contract=off"), "{line}");
    assert!(!line.contains("-ffp-contract=fast"), "{line}");
    assert!(out.contains("check error 0.0e0"), "{out}");

    let (code, out, err, compiles) = bench("fast");
    assert_eq!(code, Some(EXIT_OK), "{out}\n{err}");
    assert_eq!(compiles.len(), 1, "{compiles:?}");
    assert!(
        compiles[0].contains("-ffp-contract=fast"),
        "{}",
        compiles[0]
    );
    assert!(
        !compiles[0].contains("-ffp-contract=off"),
        "{}",
        compiles[0]
    );

    for bad in ["exact", "STRICT", ""] {
        let (code, out, err, compiles) = bench(bad);
        assert_eq!(code, Some(EXIT_ARGS), "`--fp {bad}`: {out}\n{err}");
        assert!(err.contains("expected `fast` or `strict`"), "{err}");
        assert!(compiles.is_empty(), "nothing is compiled: {compiles:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

//! The split and rfactor of a max-reduction (`split k by 16 into ko, ki`, `rfactor ki
//! into l`, rules `max_tile`, `max_swap`, `max_stage`) pass `atl derive`, whose
//! independent checker re-verifies every step, and `atl verify` of the certificate; a
//! split whose extent is not provably a multiple of the factor is refused. The partial
//! maxima vectorized (`vectorize l`: each lane folds its own maximum over `ko`) compile
//! and agree with the interpreter (`atl run`).

mod common;

use atl_cli::EXIT_OK;
use common::atl;

const SOURCE: &str = "size n
size m
assume m % 16 == 0
input x : [n, m]
def rowmax = gen i < n: max k < m: x[i, k]
derive partial from rowmax {
  split k by 16 into ko, ki
  rfactor ki into l as part
}
derive vectorized from partial {
  vectorize l
  parallel i
}
";

#[test]
fn the_partial_maxima_pass_the_independent_checker() {
    let dir = std::env::temp_dir().join(format!("atl-max-schedule-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("rowmax.atl");
    std::fs::write(&file, SOURCE).expect("write");
    let cert = dir.join("partial.json");
    let (code, out, err) = atl(&[
        "derive",
        &file.display().to_string(),
        "--def",
        "partial",
        "--cert",
        &cert.display().to_string(),
    ]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert!(
        out.contains(
            "let part = gen l < 16: max ko < m / 16: x[i, ko * 16 + l] in max ki < 16: part[ki]"
        ),
        "{out}"
    );
    let (code, out, err) = atl(&["verify", &cert.display().to_string()]);
    assert_eq!(code, EXIT_OK, "{out}{err}");
    assert!(
        out.contains("3 rule application(s)") && out.contains("grade real"),
        "{out}"
    );

    // Without the `assume`, the split is refused, and says how to state the fact.
    let file = dir.join("rowmax_any.atl");
    std::fs::write(&file, SOURCE.replace("assume m % 16 == 0\n", "")).expect("write");
    let (code, out, err) = atl(&["derive", &file.display().to_string()]);
    assert_ne!(code, EXIT_OK, "{out}");
    assert!(
        err.contains("E0823") && err.contains("assume m % 16 == 0"),
        "{err}"
    );
}

#[test]
fn the_vectorized_partial_maxima_run_and_agree_with_the_interpreter() {
    let dir = std::env::temp_dir().join(format!("atl-max-vector-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("rowmax.atl");
    std::fs::write(&file, SOURCE).expect("write");
    let file = file.display().to_string();
    // The SIMD loop is `l`, around each lane's own fold over `ko`.
    let (code, c, err) = atl(&["emit", &file, "--def", "vectorized"]);
    assert_eq!(code, EXIT_OK, "{err}");
    let simd = c.find("ATL__SIMD\n").expect("a simd loop");
    let after = &c[simd..];
    let l = after
        .find("for (int64_t l = 0; l < 16; ++l)")
        .expect("the l loop");
    let ko = after
        .find("for (int64_t ko = 0; ko < m / 16; ++ko)")
        .expect("the ko loop");
    assert!(l < ko, "{c}");
    for (sizes, dtype) in [
        ("n=5,m=64", "f64"),
        ("n=3,m=16", "f64"),
        ("n=4,m=128", "f32"),
    ] {
        let (code, out, err) = atl(&[
            "run",
            &file,
            "--def",
            "vectorized",
            "--sizes",
            sizes,
            "--dtype",
            dtype,
        ]);
        assert_eq!(code, EXIT_OK, "{sizes}: {out}{err}");
    }
}

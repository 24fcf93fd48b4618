//! The split and rfactor of a max-reduction (`split k by 16 into ko, ki`, `rfactor ki
//! into l`, rules `max_tile`, `max_swap`, `max_stage`) pass `atl derive`, whose
//! independent checker re-verifies every step, and `atl verify` of the certificate; a
//! split whose extent is not provably a multiple of the factor is refused.

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

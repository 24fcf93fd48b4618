//! The corpus of unsafe programs (`test_data/err/*.atl`): each one passes the front end
//! (and its derivations run) but fails the gate. The rendered diagnostics are
//! snapshot-tested.

use atl_lang::diag::render_to_string;
use atl_solver::Solver;

mod common;

#[test]
fn unsafe_programs_are_rejected() {
    insta::glob!("../test_data/err", "*.atl", |path| {
        let source = std::fs::read_to_string(path).expect("readable corpus file");
        let solver = Solver::new();
        let loaded = common::load(&source, &solver).expect("the front end accepts the program");
        assert!(
            loaded.diags.is_empty(),
            "{}: the program must fail only the gate, not the front end or a derivation:\n{}",
            path.display(),
            render_to_string(&loaded.diags, "input.atl", &source)
        );
        let diags = atl_padtypes::check_program(&loaded.program, &loaded.shapes, &solver);
        assert!(!diags.is_empty(), "{} is accepted", path.display());
        assert!(
            diags.iter().all(|d| d.code.starts_with("E09")),
            "{}: unexpected codes",
            path.display()
        );
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        insta::assert_snapshot!(render_to_string(&diags, &name, &source));
    });
}

//! Data-driven front-end tests over `lang/test_data/`:
//! - `err/*.atl`: malformed programs; each must be rejected, and the rendered
//!   diagnostics (code, message, line:column, labels) are snapshot-tested with insta.
//! - `ok/*.atl`: valid programs; each must check, and the formatter's output (ASCII and
//!   Unicode) must check again, be alpha-equivalent and be a fixed point.

use atl_lang::diag::render_to_string;
use atl_lang::ir::{Program, alpha_eq};
use atl_lang::pretty::{Style, format_source};
use atl_lang::{check_source, parser, resolve};

fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).expect("fixture is readable UTF-8")
}

#[test]
fn malformed_programs_are_rejected_with_diagnostics() {
    insta::glob!("../test_data/err", "*.atl", |path| {
        let source = read(path);
        let (checked, diags) = check_source(&source);
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("?");
        assert!(checked.is_none(), "{name} was accepted");
        assert!(
            diags.iter().all(|d| d.primary.is_some()),
            "{name}: every front-end diagnostic has a position"
        );
        insta::assert_snapshot!(render_to_string(&diags, name, &source));
    });
}

/// Structural equality of two programs up to renaming of bound variables.
pub fn programs_alpha_eq(a: &Program, b: &Program) -> bool {
    let names = |p: &Program| p.sizes.iter().map(|s| s.name.clone()).collect::<Vec<_>>();
    names(a) == names(b)
        && a.assumes
            .iter()
            .map(|x| &x.pred)
            .eq(b.assumes.iter().map(|x| &x.pred))
        && a.inputs
            .iter()
            .map(|x| (&x.name, &x.shape))
            .eq(b.inputs.iter().map(|x| (&x.name, &x.shape)))
        && a.defs.len() == b.defs.len()
        && a.defs
            .iter()
            .zip(&b.defs)
            .all(|(x, y)| x.name == y.name && alpha_eq(&x.body, &y.body))
        && a.derives.len() == b.derives.len()
}

fn resolved(source: &str) -> Program {
    let (file, mut diags) = parser::parse_file(source);
    let p = resolve::resolve(&file, &mut diags);
    assert!(
        diags.is_empty(),
        "{}",
        render_to_string(&diags, "x.atl", source)
    );
    p
}

#[test]
fn valid_programs_check_and_round_trip_through_the_formatter() {
    insta::glob!("../test_data/ok", "*.atl", |path| {
        let source = read(path);
        let (checked, diags) = check_source(&source);
        assert!(
            checked.is_some(),
            "{}",
            render_to_string(&diags, "ok.atl", &source)
        );
        let original = resolved(&source);
        for unicode in [false, true] {
            let style = Style { unicode };
            let once = format_source(&source, style).expect("formats");
            let (again, diags) = check_source(&once);
            assert!(
                again.is_some(),
                "formatted text fails to check:\n{once}\n{}",
                render_to_string(&diags, "fmt.atl", &once)
            );
            assert!(
                programs_alpha_eq(&original, &resolved(&once)),
                "not alpha-equivalent after formatting:\n{once}"
            );
            let twice = format_source(&once, style).expect("formats again");
            assert_eq!(once, twice, "formatting is not idempotent");
        }
    });
}

//! Pad types through scalar functions: a function of padding is padding only when it
//! maps zeros to zero (`sqrt`, `abs`, `max`, `min`, `select` of two padding values),
//! so truncating a padded tail through `sqrt` is accepted and through `exp` refused.

fn gate(source: &str, def: &str) -> Vec<String> {
    let (checked, diags) = atl_lang::check_source(source);
    let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
    let solver = atl_solver::Solver::new();
    atl_padtypes::check_definition(&checked.program, &checked.shapes, &solver, def)
        .into_iter()
        .filter(|d| d.severity == atl_lang::diag::Severity::Error)
        .map(|d| d.code.to_string())
        .collect()
}

const PROGRAM: &str = "size n
input f : [n]
def via_sqrt = trunc_r(2, gen i < n + 2: sqrt([i < n] * f[i]))
def via_abs_max = trunc_r(2, gen i < n + 2: max(abs([i < n] * f[i]), [i < n] * f[i]))
def via_max_literal = trunc_r(2, gen i < n + 2: max([i < n] * f[i], 0))
def via_select = trunc_r(2, gen i < n + 2: select(f[0] > 1, [i < n] * f[i], [i < n] * f[0]))
def via_exp = trunc_r(2, gen i < n + 2: exp([i < n] * f[i]))
def via_log = trunc_r(2, gen i < n + 2: log([i < n] * f[i]))
def via_select_one = trunc_r(2, gen i < n + 2: select(f[0] > 1, [i < n] * f[i], 1))
";

#[test]
fn functions_that_map_zero_to_zero_keep_padding() {
    for def in ["via_sqrt", "via_abs_max", "via_select"] {
        assert_eq!(gate(PROGRAM, def), Vec::<String>::new(), "{def}");
    }
}

#[test]
fn functions_that_do_not_map_zero_to_zero_do_not() {
    // A literal zero is a value, not padding (padding is what is never written).
    for def in ["via_exp", "via_log", "via_select_one", "via_max_literal"] {
        assert!(gate(PROGRAM, def).contains(&"E0901".to_string()), "{def}");
    }
}

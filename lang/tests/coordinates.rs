//! Coordinates and sizes as values (`x * x`, `float(i + 1)`, `1.0 / n`): parsing,
//! resolution, the canonical form, alpha-equivalence and the interpreter's values,
//! against values computed here by hand.

use std::collections::BTreeMap;

use atl_lang::interp::{EvalOptions, eval_def};
use atl_lang::ir::{ExprKind, alpha_eq};
use atl_lang::{Tensor, check_source};

const PROGRAM: &str = "size n
input a : [n]
def squares = gen x < n: x * x
def halide = let g = gen x < n + 1: x * x in gen x1 < n: g[x1] + g[x1 + 1]
def shifted = gen i < n: float(2 * i + 1) - a[i]
def mean = (sum i < n: a[i]) / n
def table = gen i < n, j < 3: float(i) * 10 + j
";

fn eval(def: &str, n: i64, a: &[f64]) -> Vec<f64> {
    let (checked, diags) = check_source(PROGRAM);
    let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
    let sizes: BTreeMap<String, i64> = [("n".to_string(), n)].into();
    let inputs: BTreeMap<String, Tensor> = [(
        "a".to_string(),
        Tensor::new(vec![n as usize], a.to_vec()).expect("a tensor"),
    )]
    .into();
    eval_def(
        &checked.program,
        def,
        &sizes,
        &inputs,
        &EvalOptions::default(),
    )
    .unwrap_or_else(|d| panic!("{def}: {d:?}"))
    .data
}

#[test]
fn coordinates_and_sizes_evaluate_to_their_integers() {
    let a = [0.5, -1.0, 2.0, 4.0];
    assert_eq!(eval("squares", 4, &a), [0.0, 1.0, 4.0, 9.0]);
    // The formal-semantics paper's f(x) = g(x) + g(x + 1), g(x) = x * x.
    assert_eq!(eval("halide", 4, &a), [1.0, 5.0, 13.0, 25.0]);
    assert_eq!(eval("shifted", 4, &a), [0.5, 4.0, 3.0, 3.0]);
    assert_eq!(eval("mean", 4, &a), [5.5 / 4.0]);
    assert_eq!(eval("table", 2, &a[..2]), [0.0, 1.0, 2.0, 10.0, 11.0, 12.0]);
}

#[test]
fn a_bare_coordinate_is_the_explicit_one_and_prints_as_it() {
    let (checked, diags) = check_source(PROGRAM);
    let program = checked.unwrap_or_else(|| panic!("{diags:?}")).program;
    let body = &program.def("squares").expect("squares").body;
    let ExprKind::Gen { body: value, .. } = &body.kind else {
        panic!("a gen: {body:?}")
    };
    let ExprKind::Binary { lhs, .. } = &value.kind else {
        panic!("a product: {value:?}")
    };
    assert!(matches!(lhs.kind, ExprKind::Coord(_)), "{lhs:?}");
    let printed = atl_lang::pretty::format_source(PROGRAM, atl_lang::pretty::Style::default())
        .unwrap_or_else(|d| panic!("{d:?}"));
    assert!(
        printed.contains("gen x < n: float(x) * float(x)"),
        "{printed}"
    );
    // The canonical form reads back to the same program.
    let (again, diags) = check_source(&printed);
    let again = again
        .unwrap_or_else(|| panic!("{diags:?}\n{printed}"))
        .program;
    for def in &program.defs {
        let other = &again.def(&def.name).expect("same definitions").body;
        assert!(alpha_eq(&def.body, other), "{}", def.name);
    }
}

#[test]
fn coordinates_of_different_indices_are_not_alpha_equal() {
    let source = "size n
def one = gen i < n, j < n: float(i)
def two = gen i < n, j < n: float(j)
def three = gen k < n, l < n: float(k)
";
    let (checked, diags) = check_source(source);
    let program = checked.unwrap_or_else(|| panic!("{diags:?}")).program;
    let body = |d: &str| &program.def(d).expect("def").body;
    assert!(!alpha_eq(body("one"), body("two")));
    assert!(alpha_eq(body("one"), body("three")));
    // A coordinate mentions its variables: they are free in it.
    let ExprKind::Gen { body: inner, .. } = &body("one").kind else {
        panic!()
    };
    assert!(inner.free_index_vars().contains("i"));
}

#[test]
fn an_index_arrays_element_is_not_a_value() {
    let source = "size n, nnz
input crd : int[nnz] in 0..n
def bad = gen p < nnz: float(crd[p])
";
    let (checked, diags) = check_source(source);
    assert!(checked.is_none());
    let d = diags
        .iter()
        .find(|d| d.code == "E0312")
        .unwrap_or_else(|| panic!("{diags:?}"));
    assert!(d.message.contains("crd"), "{}", d.message);
}

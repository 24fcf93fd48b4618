//! `compute_root x` of a stage that reads the variable of a loop from 0 around it: the
//! stage is hoisted out of that loop as the generator of its values (`let_hoist_gen`,
//! `let_hoist_sum`), its per-iteration alias unfolded, and it keeps the user's name —
//! Halide's `compute_root` of a function every iteration evaluates at its own point.
//! A matmul's reduction under a bias (`(sum k: …) + c[j]`) becomes a stage of its own,
//! the matmul, and an element-wise epilogue. Each result is compared with its
//! specification by the interpreter; a loop that does not start at 0 is still refused
//! (E0838, `test_data/err/directive_compute_root_dependent.atl`).

mod common;

use std::collections::BTreeMap;

use atl_lang::interp::{EvalOptions, Tensor, eval_expr};
use atl_lang::pretty::{Style, expr_to_string};

/// Derives `name` in `source` and checks its value against `spec` at `sizes`, with
/// random inputs of the given shapes; returns the derived program's text.
fn derived(
    source: &str,
    name: &str,
    spec: &str,
    sizes: &[(&str, i64)],
    inputs: &[(&str, &[usize])],
) -> String {
    let (checked, derivations, diags) = common::derive(source);
    assert!(diags.is_empty(), "{diags:?}");
    let d = derivations
        .iter()
        .find(|d| d.name == name)
        .expect("the derivation");
    let sizes: BTreeMap<String, i64> = sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let inputs: BTreeMap<String, Tensor> = inputs
        .iter()
        .enumerate()
        .map(|(k, (n, shape))| (n.to_string(), Tensor::random(shape.to_vec(), k as u64 + 7)))
        .collect();
    let options = EvalOptions::default();
    let want = eval_expr(
        &checked.program,
        &checked.program.def(spec).expect("spec").body,
        &sizes,
        &inputs,
        &options,
    )
    .expect("the specification evaluates");
    let got = eval_expr(&checked.program, &d.result, &sizes, &inputs, &options)
        .expect("the derived program evaluates");
    assert_eq!(got, want);
    expr_to_string(&d.result, Style::default())
}

#[test]
fn a_reduction_under_a_bias_becomes_a_stage_of_its_own() {
    let source = "size M, N, K
input A : [M, K]
input B : [K, N]
input c : [N]
def mmb = gen i < M, j < N: (sum k < K: A[i, k] * B[k, j]) + c[j]
derive staged from mmb {
  rw let_intro around (sum k < K: ?) with x := acc
  compute_root acc
}
";
    let text = derived(
        source,
        "staged",
        "mmb",
        &[("M", 3), ("N", 5), ("K", 4)],
        &[("A", &[3, 4]), ("B", &[4, 5]), ("c", &[5])],
    );
    assert_eq!(
        text,
        "let acc = gen i < M, j < N: sum k < K: A[i, k] * B[k, j] in gen i1 < M, j1 < N: acc[i1, j1] + c[j1]"
    );
}

#[test]
fn a_stage_per_row_becomes_the_rows_of_one_stage() {
    let source = "size n
input g : [n, n]
def a =
  gen i < n:
    let row = gen j < n: g[i, j] * 2 in
    gen k < n: row[k] + row[n - 1 - k]
derive s from a {
  compute_root row
}
";
    let text = derived(source, "s", "a", &[("n", 4)], &[("g", &[4, 4])]);
    assert!(
        text.starts_with("let row = gen i < n, j < n: g[i, j] * 2 in"),
        "{text}"
    );
}

#[test]
fn a_stage_per_term_of_a_sum_is_hoisted_out_of_the_sum_and_the_loops_around() {
    let source = "size n
input f : [n]
input g : [n]
def a = gen i < n: sum k < n: let t = f[k] * g[i] in t * t
derive s from a {
  compute_root t
}
";
    let text = derived(source, "s", "a", &[("n", 5)], &[("f", &[5]), ("g", &[5])]);
    assert!(text.starts_with("let t = gen "), "{text}");
    assert!(!text.contains("let t = f"), "{text}");
}

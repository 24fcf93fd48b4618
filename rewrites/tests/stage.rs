//! The `stage X into XT order 1, 0` directive and the scale `reorder` moves into a sum:
//! the examples that need them (attention, TTM) are scheduled with directives only and
//! compute what plain Rust loops compute; two reads of one matrix share one copy; a
//! scaled sum in a `grade exact` derivation is not regrouped. The refusals are snapshots
//! in `test_data/err/directive_stage_*.atl`.

mod common;

use std::collections::BTreeMap;

use atl_lang::interp::{EvalOptions, Tensor, eval_expr};
use atl_lang::ir::{Expr, ExprKind};
use atl_rewrites::Derivation;

fn example(file: &str) -> String {
    let path = format!("{}/../examples/{file}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Inputs whose values are multiples of 1/8 (exact in any order of additions).
fn eighths(shape: Vec<usize>, seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let data = (0..n as u64)
        .map(|i| {
            let h = (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ seed.wrapping_mul(0xD1B5_4A32);
            ((h >> 40) % 33) as f64 / 8.0 - 2.0
        })
        .collect();
    Tensor { shape, data }
}

/// The `let`s of `e`, outermost first, with the extents of the `gen`s of their values.
fn lets(e: &Expr) -> Vec<String> {
    let mut out = Vec::new();
    e.walk(&mut |n| {
        if let ExprKind::Let { var, .. } = &n.kind {
            out.push(var.clone());
        }
    });
    out
}

fn rule_level_steps(d: &Derivation) -> usize {
    d.steps
        .iter()
        .filter(|s| s.rule.is_some() && s.origin.is_none())
        .count()
}

fn sizes(pairs: &[(&str, usize)]) -> BTreeMap<String, i64> {
    pairs
        .iter()
        .map(|(n, v)| (n.to_string(), *v as i64))
        .collect()
}

/// out[i][e] = Σ_j softmax_j(S[i][·])[j] V[j][e], S[i][j] = Σ_d Q[i][d] K[j][d] / sqrt(D).
fn attention_loops(n: usize, d: usize, q: &[f64], k: &[f64], v: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; n * d];
    for i in 0..n {
        let s: Vec<f64> = (0..n)
            .map(|j| (0..d).map(|c| q[i * d + c] * k[j * d + c]).sum::<f64>() / (d as f64).sqrt())
            .collect();
        let mx = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let total: f64 = s.iter().map(|x| (x - mx).exp()).sum();
        for j in 0..n {
            let p = (s[j] - mx).exp() / total;
            for e in 0..d {
                out[i * d + e] += p * v[j * d + e];
            }
        }
    }
    out
}

#[test]
fn attention_is_scheduled_with_directives_only_and_computes_attention() {
    let source = example("attention/attention.atl");
    let (checked, derivations, diags) = common::derive(&source);
    assert!(diags.is_empty(), "{diags:?}");
    let fast = derivations.iter().find(|d| d.name == "fast").expect("fast");
    assert_eq!(rule_level_steps(fast), 0);
    // The scale `1 / sqrt(D)` is computed once, first; the transposed copy of K is the
    // first stage, and the scores read it along j.
    assert_eq!(
        lets(&fast.result)
            .iter()
            .take(2)
            .map(String::as_str)
            .collect::<Vec<_>>(),
        ["scale", "KT"]
    );
    let shown = atl_lang::pretty::expr_to_string(&fast.result, Default::default());
    assert!(shown.contains("KT[d, jt * 32 + jr]"), "{shown}");
    // The scale moved onto the factor the register tile's loops do not read.
    assert!(shown.contains("Q[it * 6 + ir, d] * scale * KT"), "{shown}");
    let options = EvalOptions::default();
    for (n, d) in [(16, 1), (16, 5), (32, 7), (48, 64)] {
        let q = eighths(vec![n, d], 1);
        let k = eighths(vec![n, d], 2);
        let v = eighths(vec![n, d], 3);
        let want = attention_loops(n, d, &q.data, &k.data, &v.data);
        let inputs: BTreeMap<String, Tensor> = [("Q", q), ("K", k), ("V", v)]
            .into_iter()
            .map(|(s, t)| (s.to_string(), t))
            .collect();
        let got = eval_expr(
            &checked.program,
            &fast.result,
            &sizes(&[("N", n), ("D", d)]),
            &inputs,
            &options,
        )
        .unwrap();
        assert_eq!(got.shape, vec![n, d]);
        for (g, w) in got.data.iter().zip(&want) {
            assert!(
                (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
                "N={n}, D={d}: {g} vs {w}"
            );
        }
    }
}

#[test]
fn ttm_is_scheduled_with_directives_only_and_contracts_the_last_mode() {
    let source = example("ttm/ttm.atl");
    let (checked, derivations, diags) = common::derive(&source);
    assert!(diags.is_empty(), "{diags:?}");
    let fast = derivations.iter().find(|d| d.name == "fast").expect("fast");
    assert_eq!(rule_level_steps(fast), 0);
    assert_eq!(lets(&fast.result), ["UT"]);
    let options = EvalOptions::default();
    for (i, j, k, r) in [(1, 1, 1, 1), (2, 9, 5, 33), (3, 17, 4, 32), (1, 8, 3, 70)] {
        let t = eighths(vec![i, j, k], 4);
        let u = eighths(vec![r, k], 5);
        let mut want = vec![0.0; i * j * r];
        for a in 0..i {
            for b in 0..j {
                for c in 0..r {
                    want[(a * j + b) * r + c] = (0..k)
                        .map(|x| t.data[(a * j + b) * k + x] * u.data[c * k + x])
                        .sum();
                }
            }
        }
        let inputs: BTreeMap<String, Tensor> = [("T".to_string(), t), ("U".to_string(), u)].into();
        let got = eval_expr(
            &checked.program,
            &fast.result,
            &sizes(&[("I", i), ("J", j), ("K", k), ("R", r)]),
            &inputs,
            &options,
        )
        .unwrap();
        assert_eq!(got.shape, vec![i, j, r]);
        // Multiples of 1/8 with small sums: exact, whatever the order of additions.
        assert_eq!(got.data, want, "I={i}, J={j}, K={k}, R={r}");
    }
}

#[test]
fn two_reads_of_a_matrix_share_one_transposed_copy() {
    let source = "\
size n, m
input A : [n, m]
input B : [m, n]
def t = gen i < m, j < n: A[j, i] * B[i, j] + A[n - 1 - j, i]
derive staged from t {
  stage A into AT order 1, 0
}
derive copied from t {
  stage A into AC order 0, 1
}
";
    let (checked, derivations, diags) = common::derive(source);
    assert!(diags.is_empty(), "{diags:?}");
    let get = |n: &str| derivations.iter().find(|d| d.name == n).expect(n);
    let staged = atl_lang::pretty::expr_to_string(&get("staged").result, Default::default());
    assert_eq!(lets(&get("staged").result), ["AT"], "{staged}");
    assert!(
        staged.contains("AT[i, j]") && staged.contains("AT[i, n - 1 - j]"),
        "{staged}"
    );
    // The only read of `A` left is the copy's.
    assert_eq!(staged.matches("A[").count(), 1, "{staged}");
    assert_eq!(lets(&get("copied").result), ["AC"]);
    let spec = &checked.program.def("t").expect("t").body;
    let options = EvalOptions::default();
    for (n, m) in [(1, 1), (3, 5), (8, 2)] {
        let inputs: BTreeMap<String, Tensor> = [
            ("A".to_string(), eighths(vec![n, m], 6)),
            ("B".to_string(), eighths(vec![m, n], 7)),
        ]
        .into();
        let s = sizes(&[("n", n), ("m", m)]);
        let want = eval_expr(&checked.program, spec, &s, &inputs, &options).unwrap();
        for name in ["staged", "copied"] {
            let got =
                eval_expr(&checked.program, &get(name).result, &s, &inputs, &options).unwrap();
            assert_eq!(got, want, "`{name}` at n={n}, m={m}");
        }
    }
}

#[test]
fn a_scaled_sum_is_not_regrouped_in_an_exact_derivation() {
    let source = "\
size n, m, k
input A : [n, k]
input B : [k, m]
def t = gen i < n, j < m: (sum c < k: A[i, c] * B[c, j]) * 0.5
derive moved from t {
  reorder c, j
}
derive exact from t {
  grade exact
  reorder c, j
}
";
    let (_, derivations, diags) = common::derive(source);
    assert_eq!(derivations.len(), 1, "{diags:?}");
    let shown = atl_lang::pretty::expr_to_string(&derivations[0].result, Default::default());
    assert!(shown.contains("A[i, c] * 0.5 * B[c, j]"), "{shown}");
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].code, "E0855", "{:?}", diags[0]);
}

#[test]
fn a_stage_computed_per_iteration_gets_its_copy_next_to_it() {
    let source = "\
size n, m
input A : [n, m]
def t = gen i < n:
  let r = gen a < m, b < m: A[i, a] * A[i, b] * A[i, b] in
  sum a < m: r[a, 0] * 2
derive staged from t {
  stage r into rt order 1, 0
}
";
    let (checked, derivations, diags) = common::derive(source);
    assert!(diags.is_empty(), "{diags:?}");
    let staged = &derivations[0].result;
    let shown = atl_lang::pretty::expr_to_string(staged, Default::default());
    // Inside the loop over `i`, right after `r`, which it copies.
    assert_eq!(lets(staged), ["r", "rt"], "{shown}");
    assert!(shown.contains("rt[0, a"), "{shown}");
    let spec = &checked.program.def("t").expect("t").body;
    let options = EvalOptions::default();
    for (n, m) in [(1, 1), (3, 5), (2, 8)] {
        let inputs: BTreeMap<String, Tensor> = [("A".to_string(), eighths(vec![n, m], 8))].into();
        let s = sizes(&[("n", n), ("m", m)]);
        let want = eval_expr(&checked.program, spec, &s, &inputs, &options).unwrap();
        let got = eval_expr(&checked.program, staged, &s, &inputs, &options).unwrap();
        assert_eq!(got, want, "n={n}, m={m}");
    }
}

//! The `boundary X into XP` directive: the staged copy has the halo the reads need, the
//! guarded read becomes an unguarded read of it, and the schedules built on it compute
//! the convolution (checked against plain Rust loops, not against the interpreter's
//! reading of the specification alone). The refusals are snapshots in
//! `test_data/err/directive_boundary_*.atl`.

mod common;

use std::collections::BTreeMap;

use atl_lang::interp::{EvalOptions, Tensor, eval_expr};
use atl_lang::ir::{Expr, ExprKind};
use atl_lang::poly;
use atl_rewrites::rule::Grade;

fn example(file: &str) -> String {
    let path = format!("{}/../examples/{file}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The extents of the `gen`s that make the value of `let name` in `e`.
fn stage_extents(e: &Expr, name: &str) -> Vec<String> {
    let mut out = None;
    e.walk(&mut |n| {
        if let ExprKind::Let { var, value, .. } = &n.kind
            && var == name
            && out.is_none()
        {
            let mut dims = Vec::new();
            let mut cur = &**value;
            while let ExprKind::Gen { lo, hi, body, .. } = &cur.kind {
                dims.push(poly::normalize(&atl_lang::index::IndexExpr::sub(
                    hi.clone(),
                    lo.clone(),
                )));
                cur = body;
            }
            out = Some(dims.iter().map(|d| d.to_string()).collect());
        }
    });
    out.unwrap_or_else(|| panic!("no `let {name}`"))
}

/// The guards that test a reduction variable: the border guards of the convolutions
/// (`[0 <= y + ry - 1 && …]`, `[p + r < W]`), as opposed to the tail guards of tiles
/// (`[ki + 8 * ko < K]`), which test output positions only.
fn border_guards(e: &Expr) -> usize {
    fn go(e: &Expr, sums: &mut Vec<String>, n: &mut usize) {
        if let ExprKind::Guard { pred, .. } = &e.kind
            && pred.vars().iter().any(|v| sums.contains(v))
        {
            *n += 1;
        }
        let sum = match &e.kind {
            ExprKind::Sum { var, .. } => Some(var.clone()),
            _ => None,
        };
        if let Some(v) = &sum {
            sums.push(v.clone());
        }
        for c in e.children() {
            go(c, sums, n);
        }
        if sum.is_some() {
            sums.pop();
        }
    }
    let mut n = 0;
    go(e, &mut Vec::new(), &mut n);
    n
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

/// out[k][y][x] = Σ w[k][c][ry][rx] inp[c][y + ry - 1][x + rx - 1], taps outside skipped.
fn conv2d_loops(c: usize, k: usize, h: usize, w: usize, inp: &[f64], wt: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; k * h * w];
    for kk in 0..k {
        for y in 0..h {
            for x in 0..w {
                let mut s = 0.0;
                for cc in 0..c {
                    for ry in 0..3 {
                        for rx in 0..3 {
                            let (yy, xx) = (y + ry, x + rx);
                            if (1..=h).contains(&yy) && (1..=w).contains(&xx) {
                                s += wt[((kk * c + cc) * 3 + ry) * 3 + rx]
                                    * inp[(cc * h + yy - 1) * w + xx - 1];
                            }
                        }
                    }
                }
                out[(kk * h + y) * w + x] = s;
            }
        }
    }
    out
}

#[test]
fn conv2d_schedules_compute_the_bordered_convolution() {
    let source = example("conv2d/conv2d.atl");
    let (checked, derivations, diags) = common::derive(&source);
    assert!(diags.is_empty(), "{diags:?}");
    let get = |n: &str| derivations.iter().find(|d| d.name == n).expect(n);
    // One element of zeros on each side of the rows and columns, none around the
    // channels; no guard is left on a read of the copy.
    let bordered = get("bordered");
    assert_eq!(
        stage_extents(&bordered.result, "inp_b"),
        ["C", "H + 2", "W + 2"]
    );
    let spec = &checked
        .program
        .def("conv2d")
        .expect("the specification")
        .body;
    assert_eq!(border_guards(spec), 1);
    for name in ["bordered", "fast"] {
        let d = get(name);
        assert_eq!(border_guards(&d.result), 0, "{name}");
        assert_eq!(d.grade(), Grade::Exact, "{name}");
        // No rule-level step: every rule applied is a directive's expansion.
        assert!(
            d.steps
                .iter()
                .all(|s| s.rule.is_none() || s.origin.is_some()),
            "{name}"
        );
    }
    let options = EvalOptions::default();
    for (c, k, h, w) in [(1, 1, 1, 1), (2, 3, 4, 5), (3, 9, 2, 17), (2, 10, 5, 33)] {
        let sizes: BTreeMap<String, i64> = [("C", c), ("K", k), ("H", h), ("W", w)]
            .iter()
            .map(|(n, v)| (n.to_string(), *v as i64))
            .collect();
        let inp = eighths(vec![c, h, w], 1);
        let wt = eighths(vec![k, c, 3, 3], 2);
        let want = conv2d_loops(c, k, h, w, &inp.data, &wt.data);
        let inputs: BTreeMap<String, Tensor> =
            [("inp".to_string(), inp), ("w".to_string(), wt)].into();
        for name in ["bordered", "fast"] {
            let got = eval_expr(
                &checked.program,
                &get(name).result,
                &sizes,
                &inputs,
                &options,
            )
            .unwrap();
            assert_eq!(got.shape, vec![k, h, w]);
            assert_eq!(got.data, want, "`{name}` at C={c}, K={k}, H={h}, W={w}");
        }
    }
}

#[test]
fn conv1d_kit_directive_and_rule_schedules_agree() {
    let source = example("conv1d_kit/conv1d_kit.atl");
    let (checked, derivations, diags) = common::derive(&source);
    assert!(diags.is_empty(), "{diags:?}");
    let get = |n: &str| derivations.iter().find(|d| d.name == n).expect(n);
    let (rules, directives) = (get("fast_rules"), get("fast"));
    let rule_level = |d: &atl_rewrites::Derivation| {
        d.steps
            .iter()
            .filter(|s| s.rule.is_some() && s.origin.is_none())
            .count()
    };
    assert_eq!(rule_level(directives), 0);
    assert!(rule_level(rules) > 40);
    // The directive's halo is what the reads x[n, c, p + r] reach past W, R - 1, and
    // the 16 more zeros of `pad 16`.
    assert_eq!(
        stage_extents(&directives.result, "xp"),
        ["B", "C", "R + W + 15"]
    );
    assert_eq!(border_guards(&directives.result), 0);
    let options = EvalOptions::default();
    for (b, c, k, w, r) in [
        (1, 1, 1, 1, 1),
        (1, 2, 9, 17, 3),
        (2, 3, 17, 33, 4),
        (1, 1, 6, 5, 7),
    ] {
        let sizes: BTreeMap<String, i64> = [("B", b), ("C", c), ("K", k), ("W", w), ("R", r)]
            .iter()
            .map(|(n, v)| (n.to_string(), *v as i64))
            .collect();
        let x = eighths(vec![b, c, w], 3);
        let wt = eighths(vec![k, c, r], 4);
        // The convolution as plain loops.
        let mut want = vec![0.0; b * k * w];
        for n in 0..b {
            for kk in 0..k {
                for p in 0..w {
                    let mut s = 0.0;
                    for cc in 0..c {
                        for rr in 0..r {
                            if p + rr < w {
                                s += wt.data[(kk * c + cc) * r + rr]
                                    * x.data[(n * c + cc) * w + p + rr];
                            }
                        }
                    }
                    want[(n * k + kk) * w + p] = s;
                }
            }
        }
        let inputs: BTreeMap<String, Tensor> = [("x".to_string(), x), ("w".to_string(), wt)].into();
        let eval = |e: &Expr| eval_expr(&checked.program, e, &sizes, &inputs, &options).unwrap();
        let (a, d) = (eval(&rules.result), eval(&directives.result));
        // Multiples of 1/8: every order of the additions gives the same value.
        assert_eq!(a.data, want, "fast_rules at {sizes:?}");
        assert_eq!(d.data, a.data, "fast and fast_rules at {sizes:?}");
    }
}

#[test]
fn an_unguarded_read_gets_a_copy_without_halo_where_the_loops_stay_inside() {
    let source = "size n, m\ninput g : [n, m]\ndef d = gen i < n, j < m: g[i, j]\n\
                  derive b from d {\n  boundary g into gp\n}\n";
    let (_, derivations, diags) = common::derive(source);
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(stage_extents(&derivations[0].result, "gp"), ["n", "m"]);
}

#[test]
fn the_halo_follows_the_reads_on_both_sides() {
    // Reads from i - 2 to i + 3 (sum over t < 6 of f[i + t - 2]): two zeros before and
    // three after.
    let source = "size n\ninput f : [n]\n\
                  def d = gen i < n: sum t < 6: [0 <= i + t - 2 && i + t - 2 < n] * f[i + t - 2]\n\
                  derive b from d {\n  boundary f into fp\n}\n";
    let (checked, derivations, diags) = common::derive(source);
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(stage_extents(&derivations[0].result, "fp"), ["n + 5"]);
    let options = EvalOptions::default();
    for n in [1usize, 2, 7] {
        let f = eighths(vec![n], 5);
        let want: Vec<f64> = (0..n as i64)
            .map(|i| {
                (0..6)
                    .map(|t| i + t - 2)
                    .filter(|&q| (0..n as i64).contains(&q))
                    .map(|q| f.data[q as usize])
                    .sum()
            })
            .collect();
        let sizes: BTreeMap<String, i64> = [("n".to_string(), n as i64)].into();
        let inputs: BTreeMap<String, Tensor> = [("f".to_string(), f)].into();
        let got = eval_expr(
            &checked.program,
            &derivations[0].result,
            &sizes,
            &inputs,
            &options,
        )
        .unwrap();
        assert_eq!(got.data, want, "n={n}");
    }
}

#[test]
fn a_guard_stronger_than_the_bounds_is_refused() {
    // `[0 <= i - 1 && i < n - 1]` also drops the read at i = n - 1, which is in bounds.
    let source = "size n\ninput f : [n]\n\
                  def d = gen i < n: [0 <= i - 1 && i < n - 1] * f[i - 1]\n\
                  derive b from d {\n  boundary f into fp\n}\n";
    let (_, _, diags) = common::derive(source);
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!(diags[0].code, "E0833");
    assert!(
        diags[0].message.contains("`[0 <= i - 1 && i < n - 1]`")
            && diags[0].message.contains("`f[i - 1]`"),
        "{}",
        diags[0].message
    );
}

#[test]
fn the_blurs_reads_share_one_copy_per_stage() {
    let source = example("blur/blur.atl");
    let (_, derivations, diags) = common::derive(&source);
    assert!(diags.is_empty(), "{diags:?}");
    let d = derivations
        .iter()
        .find(|d| d.name == "bordered_directive")
        .expect("bordered_directive");
    // One copy of each, with one zero column on each side of `img` and one zero row
    // above and below `bx`; the three reads of each go to the copy, unguarded.
    let mut lets = Vec::new();
    d.result.walk(&mut |n| {
        if let ExprKind::Let { var, .. } = &n.kind {
            lets.push(var.clone());
        }
    });
    assert_eq!(lets, ["img_b", "bx", "bx_b"]);
    assert_eq!(stage_extents(&d.result, "img_b"), ["H", "W + 2"]);
    assert_eq!(stage_extents(&d.result, "bx_b"), ["H + 2", "W"]);
    let mut guards = 0;
    d.result.walk(&mut |n| {
        if let ExprKind::Guard { .. } = &n.kind {
            guards += 1;
        }
    });
    assert_eq!(guards, 2, "only the guards inside the two copies");
    let rules: Vec<String> = d.steps.iter().filter_map(|s| s.rule.clone()).collect();
    assert_eq!(
        rules.iter().filter(|r| *r == "let_share").count(),
        4,
        "{rules:?}"
    );
}

#[test]
fn pad_adds_zeros_at_the_end_of_the_innermost_dimension_only() {
    let program = "size n, m
input f : [n, m]
def g = gen i < n, j < m: [0 <= j - 1] * f[i, j - 1] + f[i, j]
";
    for (extra, extent) in [("", "m + 1"), (" pad 0", "m + 1"), (" pad 7", "m + 8")] {
        let source = format!("{program}derive s from g {{\n  boundary f into fp{extra}\n}}\n");
        let (_, derivations, diags) = common::derive(&source);
        assert!(diags.is_empty(), "{extra}: {diags:?}");
        assert_eq!(
            stage_extents(&derivations[0].result, "fp"),
            ["n", extent],
            "{extra}"
        );
    }
    for bad in [" pad many", " pad 5000", " pad"] {
        let source = format!("{program}derive s from g {{\n  boundary f into fp{bad}\n}}\n");
        let (_, derivations, diags) = common::derive(&source);
        assert!(derivations.is_empty(), "{bad}");
        assert_eq!(diags[0].code, "E0820", "{bad}: {diags:?}");
    }
}

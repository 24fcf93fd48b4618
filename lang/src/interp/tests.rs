//! Unit tests of the reference interpreter against hand-computed values.

use super::*;
use crate::index::IndexExpr as I;
use crate::ir::{Assume, Def, InputDecl, SizeDecl};

// ---- builders -------------------------------------------------------------------

fn c(v: i64) -> I {
    I::Const(v)
}

fn v(name: &str) -> I {
    I::var(name)
}

fn ibin(op: IndexOp, a: I, b: I) -> I {
    I::bin(op, a, b)
}

fn inp(name: &str) -> Expr {
    Expr::input(name)
}

fn get(t: Expr, i: I) -> Expr {
    Expr::access(t, i)
}

fn get2(t: Expr, i: I, j: I) -> Expr {
    get(get(t, i), j)
}

fn gen_(var: &str, n: I, body: Expr) -> Expr {
    Expr::gen_(var, c(0), n, body)
}

fn sum_(var: &str, n: I, body: Expr) -> Expr {
    Expr::sum(var, c(0), n, body)
}

fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
    Expr::binary(op, a, b)
}

fn neg(a: Expr) -> Expr {
    Expr::synth(ExprKind::Neg(Box::new(a)))
}

fn amount(op: AmountOp, k: I, arg: Expr) -> Expr {
    Expr::synth(ExprKind::Amount {
        op,
        amount: k,
        arg: Box::new(arg),
    })
}

fn concat(a: Expr, b: Expr) -> Expr {
    Expr::synth(ExprKind::Concat(Box::new(a), Box::new(b)))
}

fn transpose(a: Expr) -> Expr {
    Expr::synth(ExprKind::Transpose(Box::new(a)))
}

fn flatten(a: Expr) -> Expr {
    Expr::synth(ExprKind::Flatten(Box::new(a)))
}

fn def_ref(name: &str) -> Expr {
    Expr::synth(ExprKind::DefRef(name.to_string()))
}

fn cmp(op: CmpOp, a: I, b: I) -> Pred {
    Pred::cmp(op, a, b)
}

fn with_span(mut e: Expr, start: usize, end: usize) -> Expr {
    e.span = Span::new(start, end);
    e
}

fn def(name: &str, body: Expr) -> Def {
    Def {
        name: name.to_string(),
        name_span: Span::DUMMY,
        body,
        span: Span::DUMMY,
        hints: Vec::new(),
        vector_width: None,
        storage: Vec::new(),
    }
}

/// `size n, m; input f: [n]; input A: [n, m]; input B: [m, n]; input s: []`.
fn program() -> Program {
    let size = |name: &str, at: usize| SizeDecl {
        name: name.to_string(),
        span: Span::new(at, at + 6),
    };
    let input = |name: &str, shape: Vec<I>, at: usize| InputDecl {
        name: name.to_string(),
        shape,
        index_array: None,
        layout: None,
        span: Span::new(at, at + 10),
    };
    Program {
        sizes: vec![size("n", 0), size("m", 10)],
        inputs: vec![
            input("f", vec![v("n")], 20),
            input("A", vec![v("n"), v("m")], 40),
            input("B", vec![v("m"), v("n")], 60),
            input("s", vec![], 80),
        ],
        ..Program::default()
    }
}

fn sizes(n: i64, m: i64) -> BTreeMap<String, i64> {
    BTreeMap::from([("n".to_string(), n), ("m".to_string(), m)])
}

/// n = 5, m = 3; f = [1, 2, 3, 4, 5]; A[i][j] = 10 i + j; B random; s = 7.
fn inputs() -> BTreeMap<String, Tensor> {
    inputs_at(5, 3)
}

fn inputs_at(n: usize, m: usize) -> BTreeMap<String, Tensor> {
    let f = Tensor::new(vec![n], (1..=n).map(|x| x as f64).collect()).unwrap();
    let a_data = (0..n * m).map(|k| (10 * (k / m) + k % m) as f64).collect();
    let a = Tensor::new(vec![n, m], a_data).unwrap();
    BTreeMap::from([
        ("f".to_string(), f),
        ("A".to_string(), a),
        ("B".to_string(), Tensor::random(vec![m, n], 9)),
        ("s".to_string(), Tensor::scalar(7.0)),
    ])
}

fn seq() -> EvalOptions {
    EvalOptions {
        parallel: false,
        ..EvalOptions::default()
    }
}

fn eval(e: &Expr) -> Tensor {
    eval_with(&program(), e, &sizes(5, 3), &inputs())
}

fn eval_with(
    p: &Program,
    e: &Expr,
    sizes: &BTreeMap<String, i64>,
    inputs: &BTreeMap<String, Tensor>,
) -> Tensor {
    match eval_expr(p, e, sizes, inputs, &EvalOptions::default()) {
        Ok(t) => t,
        Err(d) => panic!("evaluation failed: {d:?}"),
    }
}

fn eval_err(e: &Expr) -> Diagnostic {
    match eval_expr(
        &program(),
        e,
        &sizes(5, 3),
        &inputs(),
        &EvalOptions::default(),
    ) {
        Ok(t) => panic!("expected an error, got {t:?}"),
        Err(d) => d,
    }
}

fn t(shape: Vec<usize>, data: Vec<f64>) -> Tensor {
    Tensor::new(shape, data).expect("consistent tensor")
}

fn a_at(i: i64, j: i64) -> f64 {
    (10 * i + j) as f64
}

/// Checks every single and double access `e[i]`, `e[i][j]` (including out-of-bounds
/// ones) against slices of the fully evaluated `e`: the lazy access paths must agree
/// with materialization.
fn assert_accesses_agree(e: &Expr) {
    let full = eval(e);
    let Some(&n) = full.shape.first() else {
        return;
    };
    let row = full.shape[1..].iter().product::<usize>();
    for i in -2..n as i64 + 2 {
        let got = eval(&get(e.clone(), c(i)));
        let want: Vec<f64> = if (0..n as i64).contains(&i) {
            full.data[i as usize * row..(i as usize + 1) * row].to_vec()
        } else {
            vec![0.0; row]
        };
        assert_eq!(got.shape, full.shape[1..].to_vec(), "shape of e[{i}]");
        assert_eq!(got.data, want, "e[{i}] of {e:?}");
        if let Some(&m) = full.shape.get(1) {
            let inner = full.shape[2..].iter().product::<usize>();
            for j in -2..m as i64 + 2 {
                let got = eval(&get2(e.clone(), c(i), c(j)));
                let want: Vec<f64> = if (0..m as i64).contains(&j) {
                    want[j as usize * inner..(j as usize + 1) * inner].to_vec()
                } else {
                    vec![0.0; inner]
                };
                assert_eq!(got.data, want, "e[{i}][{j}] of {e:?}");
            }
        }
    }
}

// ---- constructs -------------------------------------------------------------------

#[test]
fn scalar_arithmetic_inputs_and_negation() {
    // f[2] * 2 + s / 2 - (-1) = 6 + 3.5 + 1
    let e = bin(
        BinOp::Sub,
        bin(
            BinOp::Add,
            bin(BinOp::Mul, get(inp("f"), c(2)), Expr::lit(2.0)),
            bin(BinOp::Div, inp("s"), Expr::lit(2.0)),
        ),
        neg(Expr::lit(1.0)),
    );
    assert_eq!(eval(&e), Tensor::scalar(10.5));
    assert_eq!(
        eval(&neg(inp("f"))),
        t(vec![5], vec![-1.0, -2.0, -3.0, -4.0, -5.0])
    );
    assert_eq!(eval(&inp("s")), Tensor::scalar(7.0));
}

#[test]
fn gen_stacks_the_body_over_its_range() {
    let sq = |i: &str| bin(BinOp::Mul, get(inp("f"), v(i)), get(inp("f"), v(i)));
    let e = Expr::gen_("i", c(2), v("n"), sq("i"));
    assert_eq!(eval(&e), t(vec![3], vec![9.0, 16.0, 25.0]));
    // Pointwise tensor `-` on matrix rows, nested gens.
    let e = gen_(
        "i",
        v("n"),
        gen_(
            "j",
            v("m"),
            bin(
                BinOp::Sub,
                get2(inp("A"), v("i"), v("j")),
                get(inp("f"), v("i")),
            ),
        ),
    );
    let mut want = Vec::new();
    for i in 0..5 {
        for j in 0..3 {
            want.push(a_at(i, j) - (i + 1) as f64);
        }
    }
    assert_eq!(eval(&e), t(vec![5, 3], want));
}

#[test]
fn sum_adds_scalars_and_tensors() {
    assert_eq!(
        eval(&sum_("k", v("n"), get(inp("f"), v("k")))),
        Tensor::scalar(15.0)
    );
    // Column sums of A, summing whole rows (tensor +).
    let want: Vec<f64> = (0..3).map(|j| (0..5).map(|i| a_at(i, j)).sum()).collect();
    assert_eq!(
        eval(&sum_("i", v("n"), get(inp("A"), v("i")))),
        t(vec![3], want)
    );
    // A sum with a nonzero lower bound.
    assert_eq!(
        eval(&Expr::sum("k", c(3), c(5), get(inp("f"), v("k")))),
        Tensor::scalar(9.0)
    );
}

#[test]
fn matmul_matches_plain_loops_bitwise() {
    let mut p = program();
    p.inputs.push(InputDecl {
        name: "C".into(),
        shape: vec![v("n"), v("m")],
        index_array: None,
        layout: None,
        span: Span::DUMMY,
    });
    let (n, m) = (6usize, 4usize);
    let mut ins = inputs_at(n, m);
    let a = Tensor::random(vec![n, m], 1);
    ins.insert("C".into(), a.clone());
    let b = ins["B"].clone();
    // gen i < n: gen j < n: sum k < m: C[i][k] * B[k][j]
    let e = gen_(
        "i",
        v("n"),
        gen_(
            "j",
            v("n"),
            sum_(
                "k",
                v("m"),
                bin(
                    BinOp::Mul,
                    get2(inp("C"), v("i"), v("k")),
                    get2(inp("B"), v("k"), v("j")),
                ),
            ),
        ),
    );
    let got = eval_with(&p, &e, &sizes(n as i64, m as i64), &ins);
    let mut want = Vec::new();
    for i in 0..n {
        for j in 0..n {
            let mut acc = 0.0;
            for k in 0..m {
                acc += a.data[i * m + k] * b.data[k * n + j];
            }
            want.push(acc);
        }
    }
    assert_eq!(got.shape, vec![n, n]);
    let bits = |d: &[f64]| d.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&got.data), bits(&want));
}

#[test]
fn empty_gens_keep_their_element_shape() {
    // A backwards range is a negative extent (E0508), not an empty one: the shape
    // discipline (ARCHITECTURE.md) never clamps extents.
    let e = Expr::gen_("i", c(3), c(1), get(inp("A"), v("i")));
    assert_eq!(eval_err(&e).code, "E0508");
    let e = Expr::gen_("i", c(3), c(3), get(inp("A"), v("i")));
    assert_eq!(eval(&e), t(vec![0, 3], vec![]));
    let e = Expr::gen_("i", c(0), c(0), gen_("j", v("m"), get(inp("f"), v("j"))));
    assert_eq!(eval(&e), t(vec![0, 3], vec![]));
    let e = gen_(
        "i",
        c(2),
        Expr::gen_("j", c(4), c(4), get(inp("f"), v("j"))),
    );
    assert_eq!(eval(&e), t(vec![2, 0], vec![]));
}

#[test]
fn empty_sums_are_zeros_of_the_body_shape() {
    let e = Expr::sum("k", c(2), c(2), get(inp("A"), v("k")));
    assert_eq!(eval(&e), Tensor::zeros(vec![3]));
    let e = Expr::sum("k", c(5), c(1), gen_("j", c(2), get(inp("f"), v("j"))));
    assert_eq!(eval(&e), Tensor::zeros(vec![2]));
    let e = Expr::sum("k", c(5), c(1), get(inp("f"), v("k")));
    assert_eq!(eval(&e), Tensor::scalar(0.0));
}

#[test]
fn false_guards_of_tensors_give_zero_rows() {
    // gen i < n: [i == 1 || i >= 4] * A[i]
    let p = Pred::or(cmp(CmpOp::Eq, v("i"), c(1)), cmp(CmpOp::Ge, v("i"), c(4)));
    let e = gen_("i", v("n"), Expr::guard(p, get(inp("A"), v("i"))));
    let mut want = Vec::new();
    for i in 0..5 {
        for j in 0..3 {
            want.push(if i == 1 || i == 4 { a_at(i, j) } else { 0.0 });
        }
    }
    assert_eq!(eval(&e), t(vec![5, 3], want));
    let e = Expr::guard(Pred::Bool(false), inp("A"));
    assert_eq!(eval(&e), Tensor::zeros(vec![5, 3]));
}

#[test]
fn out_of_bounds_rows_are_zero_rows() {
    assert_eq!(eval(&get(inp("A"), c(-1))), Tensor::zeros(vec![3]));
    assert_eq!(eval(&get(inp("A"), c(5))), Tensor::zeros(vec![3]));
    assert_eq!(
        eval(&get(inp("A"), c(4))),
        t(vec![3], vec![40.0, 41.0, 42.0])
    );
    assert_eq!(eval(&get2(inp("A"), c(2), c(3))), Tensor::scalar(0.0));
    // gen i in -1..n+1: A[i][0]
    let e = Expr::gen_(
        "i",
        c(-1),
        I::add(v("n"), c(1)),
        get2(inp("A"), v("i"), c(0)),
    );
    assert_eq!(
        eval(&e),
        t(vec![7], vec![0.0, 0.0, 10.0, 20.0, 30.0, 40.0, 0.0])
    );
}

#[test]
fn index_division_floors_negative_numerators() {
    // gen i < 8: f[(i - 3) / 2 + 2], f[(i - 3) % 4], f[cdiv(i - 3, 2) + 1]
    let num = || I::sub(v("i"), c(3));
    let div = gen_(
        "i",
        c(8),
        get(inp("f"), I::add(ibin(IndexOp::Div, num(), c(2)), c(2))),
    );
    let modulo = gen_("i", c(8), get(inp("f"), ibin(IndexOp::Mod, num(), c(4))));
    let cdiv = gen_(
        "i",
        c(8),
        get(inp("f"), I::add(ibin(IndexOp::CDiv, num(), c(2)), c(1))),
    );
    let f = |k: i64| {
        if (0..5).contains(&k) {
            (k + 1) as f64
        } else {
            0.0
        }
    };
    // For positive divisors, floor division is Euclidean division.
    let want_div: Vec<f64> = (0..8).map(|i| f((i - 3i64).div_euclid(2) + 2)).collect();
    let want_mod: Vec<f64> = (0..8).map(|i| f((i - 3i64).rem_euclid(4))).collect();
    let want_cdiv: Vec<f64> = (0..8)
        .map(|i| f(-(-(i - 3i64)).div_euclid(2) + 1))
        .collect();
    assert_eq!(want_div[0], f(0), "(-3) / 2 = -2, so i = 0 reads f[0]");
    assert_eq!(eval(&div).data, want_div);
    assert_eq!(eval(&modulo).data, want_mod);
    assert_eq!(eval(&cdiv).data, want_cdiv);
}

// ---- reshape operators ------------------------------------------------------------

#[test]
fn split_pads_a_non_divisible_extent_with_zeros() {
    let e = amount(AmountOp::Split, c(2), inp("f"));
    assert_eq!(eval(&e), t(vec![3, 2], vec![1.0, 2.0, 3.0, 4.0, 5.0, 0.0]));
    assert_eq!(eval(&get(e.clone(), c(2))), t(vec![2], vec![5.0, 0.0]));
    assert_eq!(eval(&get2(e.clone(), c(1), c(0))), Tensor::scalar(3.0));
    assert_eq!(eval(&get2(e.clone(), c(2), c(1))), Tensor::scalar(0.0));
    // j outside 0..k must not wrap into the next row.
    assert_eq!(eval(&get2(e.clone(), c(1), c(2))), Tensor::scalar(0.0));
    assert_eq!(eval(&get2(e.clone(), c(1), c(-1))), Tensor::scalar(0.0));
    assert_accesses_agree(&e);
    // k larger than the extent: one row with a zero tail.
    let e = amount(AmountOp::Split, c(7), inp("f"));
    assert_eq!(
        eval(&e),
        t(vec![1, 7], vec![1.0, 2.0, 3.0, 4.0, 5.0, 0.0, 0.0])
    );
    // Splitting a matrix splits its rows.
    let e = amount(AmountOp::Split, c(2), inp("A"));
    let got = eval(&e);
    assert_eq!(got.shape, vec![3, 2, 3]);
    assert_eq!(got.get(&[1, 1, 2]), a_at(3, 2));
    assert_eq!(got.get(&[2, 1, 0]), 0.0);
    assert_accesses_agree(&e);
}

#[test]
fn tiling_identity_holds_for_every_tile_size() {
    // f = trunc_r(cdiv(n, k) * k - n, flatten(split(k, f)))
    for k in 1..=7 {
        let pad = I::sub(I::mul(ibin(IndexOp::CDiv, v("n"), c(k)), c(k)), v("n"));
        let e = amount(
            AmountOp::TruncR,
            pad,
            flatten(amount(AmountOp::Split, c(k), inp("f"))),
        );
        assert_eq!(eval(&e), inputs()["f"], "k = {k}");
        // Accessed element by element (the lazy path through all three operators).
        let e = gen_("i", v("n"), get(e, v("i")));
        assert_eq!(eval(&e), inputs()["f"], "k = {k}, accessed");
    }
}

#[test]
fn pad_and_trunc_add_and_drop_elements() {
    let f = |op, k| amount(op, c(k), inp("f"));
    assert_eq!(
        eval(&f(AmountOp::PadR, 2)),
        t(vec![7], vec![1.0, 2.0, 3.0, 4.0, 5.0, 0.0, 0.0])
    );
    assert_eq!(
        eval(&f(AmountOp::PadL, 2)),
        t(vec![7], vec![0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    );
    assert_eq!(
        eval(&f(AmountOp::TruncR, 2)),
        t(vec![3], vec![1.0, 2.0, 3.0])
    );
    assert_eq!(
        eval(&f(AmountOp::TruncL, 2)),
        t(vec![3], vec![3.0, 4.0, 5.0])
    );
    assert_eq!(eval(&f(AmountOp::TruncL, 5)), t(vec![0], vec![]));
    assert_eq!(eval(&f(AmountOp::PadL, 0)), inputs()["f"]);
    for op in [
        AmountOp::PadL,
        AmountOp::PadR,
        AmountOp::TruncL,
        AmountOp::TruncR,
    ] {
        assert_accesses_agree(&f(op, 2));
        assert_accesses_agree(&amount(op, c(1), inp("A")));
    }
    // The adjoint pairs.
    for k in 0..4 {
        let r = amount(
            AmountOp::TruncR,
            c(k),
            amount(AmountOp::PadR, c(k), inp("A")),
        );
        let l = amount(
            AmountOp::TruncL,
            c(k),
            amount(AmountOp::PadL, c(k), inp("A")),
        );
        assert_eq!(eval(&r), inputs()["A"]);
        assert_eq!(eval(&l), inputs()["A"]);
    }
    // Padding a matrix adds zero rows.
    let got = eval(&amount(AmountOp::PadR, c(1), inp("A")));
    assert_eq!(got.shape, vec![6, 3]);
    assert_eq!(&got.data[15..], &[0.0, 0.0, 0.0]);
}

#[test]
fn concat_transpose_and_flatten() {
    let e = concat(inp("f"), amount(AmountOp::TruncR, c(2), inp("f")));
    assert_eq!(
        eval(&e),
        t(vec![8], vec![1.0, 2.0, 3.0, 4.0, 5.0, 1.0, 2.0, 3.0])
    );
    assert_accesses_agree(&e);
    assert_accesses_agree(&concat(inp("A"), inp("A")));

    let tr = eval(&transpose(inp("A")));
    assert_eq!(tr.shape, vec![3, 5]);
    for i in 0..5 {
        for j in 0..3 {
            assert_eq!(tr.get(&[j, i]), a_at(i as i64, j as i64));
        }
    }
    assert_eq!(
        eval(&get(transpose(inp("A")), c(1))),
        t(vec![5], (0..5).map(|i| a_at(i, 1)).collect())
    );
    assert_accesses_agree(&transpose(inp("A")));
    // Transposing a rank-3 tensor keeps the inner dimension in place.
    let e = transpose(amount(AmountOp::Split, c(2), inp("A")));
    let got = eval(&e);
    assert_eq!(got.shape, vec![2, 3, 3]);
    assert_eq!(got.get(&[1, 0, 2]), a_at(1, 2));
    assert_accesses_agree(&e);

    let fl = flatten(inp("A"));
    assert_eq!(eval(&fl).data, inputs()["A"].data);
    assert_eq!(eval(&fl).shape, vec![15]);
    assert_eq!(eval(&get(fl.clone(), c(7))), Tensor::scalar(a_at(2, 1)));
    assert_accesses_agree(&fl);
    assert_accesses_agree(&flatten(amount(AmountOp::Split, c(2), inp("A"))));
}

// ---- names --------------------------------------------------------------------------

#[test]
fn definitions_are_evaluated_and_referenced() {
    let mut p = program();
    let sq = gen_(
        "i",
        v("n"),
        bin(BinOp::Mul, get(inp("f"), v("i")), get(inp("f"), v("i"))),
    );
    p.defs.push(def("sq", sq));
    let twice = gen_(
        "i",
        v("n"),
        bin(
            BinOp::Add,
            get(def_ref("sq"), v("i")),
            get(def_ref("sq"), v("i")),
        ),
    );
    p.defs.push(def("twice", twice));
    let want = t(vec![5], vec![2.0, 8.0, 18.0, 32.0, 50.0]);
    let got = eval_def(&p, "twice", &sizes(5, 3), &inputs(), &seq()).unwrap();
    assert_eq!(got, want);
    // Expressions in program scope may reference any definition.
    let e = bin(BinOp::Sub, def_ref("twice"), def_ref("sq"));
    assert_eq!(
        eval_with(&p, &e, &sizes(5, 3), &inputs()),
        t(vec![5], vec![1.0, 4.0, 9.0, 16.0, 25.0])
    );
    // A definition may not refer to itself or a later one.
    p.defs.push(def("bad", def_ref("later")));
    p.defs.push(def("later", Expr::lit(1.0)));
    let err = eval_def(&p, "bad", &sizes(5, 3), &inputs(), &seq()).unwrap_err();
    assert_eq!(err.code, "E0506");
    assert!(
        err.message.contains("before it is defined"),
        "{}",
        err.message
    );
}

#[test]
fn inner_binders_shadow_outer_ones() {
    // let x = f in let x = gen i < n: x[i] * 2 in x
    let e = Expr::let_(
        "x",
        inp("f"),
        Expr::let_(
            "x",
            gen_(
                "i",
                v("n"),
                bin(BinOp::Mul, get(Expr::var("x"), v("i")), Expr::lit(2.0)),
            ),
            Expr::var("x"),
        ),
    );
    assert_eq!(eval(&e), t(vec![5], vec![2.0, 4.0, 6.0, 8.0, 10.0]));
    // gen i < 2: gen i < 3: f[i]
    let e = gen_("i", c(2), gen_("i", c(3), get(inp("f"), v("i"))));
    assert_eq!(eval(&e), t(vec![2, 3], vec![1.0, 2.0, 3.0, 1.0, 2.0, 3.0]));
    // A let inside a gen sees the binder: gen i < 3: let y = gen j < 2: f[i + j] in y[1]
    let e = gen_(
        "i",
        c(3),
        Expr::let_(
            "y",
            gen_("j", c(2), get(inp("f"), I::add(v("i"), v("j")))),
            get(Expr::var("y"), c(1)),
        ),
    );
    assert_eq!(eval(&e), t(vec![3], vec![2.0, 3.0, 4.0]));
}

#[test]
fn loop_invariant_let_values_are_cached_and_correct() {
    // gen i < n: let x = gen j < n: f[j] * 2 in x[n - 1 - i]   (x does not use i)
    let value = gen_(
        "j",
        v("n"),
        bin(BinOp::Mul, get(inp("f"), v("j")), Expr::lit(2.0)),
    );
    let e = gen_(
        "i",
        v("n"),
        Expr::let_(
            "x",
            value.clone(),
            get(Expr::var("x"), I::sub(I::sub(v("n"), c(1)), v("i"))),
        ),
    );
    assert_eq!(eval(&e), t(vec![5], vec![10.0, 8.0, 6.0, 4.0, 2.0]));
    let p = program();
    let sz = validate_sizes(&p, &sizes(5, 3)).unwrap();
    let mut comp = Compiler::new(&p, &sz, usize::MAX, 0);
    let node = comp.compile(&e).unwrap();
    let Kind::Gen { body, .. } = &node.kind else {
        panic!("expected a gen")
    };
    assert!(matches!(&body.kind, Kind::Let { cache: Some(_), .. }));
    // A value that uses the binder is not cached.
    let e = gen_(
        "i",
        v("n"),
        Expr::let_("x", get(inp("f"), v("i")), Expr::var("x")),
    );
    let node = comp.compile(&e).unwrap();
    let Kind::Gen { body, .. } = &node.kind else {
        panic!("expected a gen")
    };
    assert!(matches!(&body.kind, Kind::Let { cache: None, .. }));
    assert_eq!(eval(&e), inputs()["f"]);
}

#[test]
fn the_pipeline_example_from_the_design() {
    // let buf = gen j < n: f[j] in gen i < n: [0 <= i - 1] * buf[i - 1] + buf[i]
    let buf = || Expr::var("buf");
    let e = Expr::let_(
        "buf",
        gen_("j", v("n"), get(inp("f"), v("j"))),
        gen_(
            "i",
            v("n"),
            bin(
                BinOp::Add,
                Expr::guard(
                    cmp(CmpOp::Le, c(0), I::sub(v("i"), c(1))),
                    get(buf(), I::sub(v("i"), c(1))),
                ),
                get(buf(), v("i")),
            ),
        ),
    );
    assert_eq!(eval(&e), t(vec![5], vec![1.0, 3.0, 5.0, 7.0, 9.0]));
    // Without the guard, buf[-1] is out of bounds and reads 0: the same result.
    let inline = gen_(
        "i",
        v("n"),
        bin(
            BinOp::Add,
            get(
                gen_("j", v("n"), get(inp("f"), v("j"))),
                I::sub(v("i"), c(1)),
            ),
            get(gen_("j", v("n"), get(inp("f"), v("j"))), v("i")),
        ),
    );
    assert_eq!(eval(&inline), eval(&e));
}

#[test]
fn out_of_bounds_negation_reads_positive_zero() {
    let got = eval(&get(neg(inp("f")), c(7)));
    assert_eq!(got.data[0].to_bits(), 0.0f64.to_bits());
    let got = eval(&get(neg(inp("f")), c(1)));
    assert_eq!(got, Tensor::scalar(-2.0));
}

// ---- parallelism --------------------------------------------------------------------

#[test]
fn parallel_and_sequential_results_are_bit_identical() {
    let (n, m) = (128usize, 40usize);
    let p = program();
    let ins = inputs_at(n, m);
    let mut ins = ins;
    ins.insert("A".into(), Tensor::random(vec![n, m], 5));
    // gen i < n: gen j < n: sum k < m: A[i][k] * B[k][j]  (16384 outputs: parallel)
    let e = gen_(
        "i",
        v("n"),
        gen_(
            "j",
            v("n"),
            sum_(
                "k",
                v("m"),
                bin(
                    BinOp::Mul,
                    get2(inp("A"), v("i"), v("k")),
                    get2(inp("B"), v("k"), v("j")),
                ),
            ),
        ),
    );
    let sz = sizes(n as i64, m as i64);
    let par = eval_expr(&p, &e, &sz, &ins, &EvalOptions::default()).unwrap();
    let sq = eval_expr(&p, &e, &sz, &ins, &seq()).unwrap();
    let bits = |d: &[f64]| d.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&par.data), bits(&sq.data));
    let (a, b) = (&ins["A"].data, &ins["B"].data);
    let mut want = Vec::new();
    for i in 0..n {
        for j in 0..n {
            let mut acc = 0.0;
            for k in 0..m {
                acc += a[i * m + k] * b[k * n + j];
            }
            want.push(acc);
        }
    }
    assert_eq!(bits(&par.data), bits(&want));
}

#[test]
fn blur_with_boundary_guards_matches_loops_in_parallel() {
    let (n, m) = (90usize, 70usize);
    let mut ins = inputs_at(n, m);
    ins.insert("A".into(), Tensor::random(vec![n, m], 11));
    let in_range_pred =
        |x: I, ext: &str| Pred::and(cmp(CmpOp::Le, c(0), x.clone()), cmp(CmpOp::Lt, x, v(ext)));
    // gen i < n: gen j < m: sum di < 3: sum dj < 3:
    //   [0 <= i+di-1 < n && 0 <= j+dj-1 < m] * A[i+di-1][j+dj-1] / 9
    let x = I::sub(I::add(v("i"), v("di")), c(1));
    let y = I::sub(I::add(v("j"), v("dj")), c(1));
    let body = Expr::guard(
        Pred::and(in_range_pred(x.clone(), "n"), in_range_pred(y.clone(), "m")),
        bin(BinOp::Div, get2(inp("A"), x, y), Expr::lit(9.0)),
    );
    let e = gen_(
        "i",
        v("n"),
        gen_("j", v("m"), sum_("di", c(3), sum_("dj", c(3), body))),
    );
    let sz = sizes(n as i64, m as i64);
    let par = eval_expr(&program(), &e, &sz, &ins, &EvalOptions::default()).unwrap();
    let sq = eval_expr(&program(), &e, &sz, &ins, &seq()).unwrap();
    let a = &ins["A"].data;
    let mut want = Vec::new();
    for i in 0..n as i64 {
        for j in 0..m as i64 {
            let mut outer = 0.0;
            for di in 0..3 {
                let mut inner = 0.0;
                for dj in 0..3 {
                    let (x, y) = (i + di - 1, j + dj - 1);
                    inner += if (0..n as i64).contains(&x) && (0..m as i64).contains(&y) {
                        a[x as usize * m + y as usize] / 9.0
                    } else {
                        0.0
                    };
                }
                outer += inner;
            }
            want.push(outer);
        }
    }
    let bits = |d: &[f64]| d.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&par.data), bits(&sq.data));
    assert_eq!(bits(&par.data), bits(&want));
}

#[test]
fn parallel_errors_are_the_first_in_iteration_order() {
    // gen i < 8192: 1 / (f[i] - f[i]) fails at every i; the span is the division's.
    let mut p = program();
    p.inputs[0].shape = vec![c(8192)];
    let mut ins = inputs();
    ins.insert("f".into(), Tensor::random(vec![8192], 3));
    let div = with_span(
        bin(
            BinOp::Div,
            Expr::lit(1.0),
            bin(BinOp::Sub, get(inp("f"), v("i")), get(inp("f"), v("i"))),
        ),
        100,
        120,
    );
    let e = gen_("i", c(8192), div);
    let par = eval_expr(&p, &e, &sizes(5, 3), &ins, &EvalOptions::default()).unwrap_err();
    let sq = eval_expr(&p, &e, &sizes(5, 3), &ins, &seq()).unwrap_err();
    assert_eq!(par, sq);
    assert_eq!(par.code, "E0501");
}

// ---- errors -------------------------------------------------------------------------

#[test]
fn division_by_zero_points_at_the_division() {
    let e = with_span(
        bin(
            BinOp::Div,
            inp("s"),
            bin(BinOp::Sub, get(inp("f"), c(0)), Expr::lit(1.0)),
        ),
        30,
        45,
    );
    let d = eval_err(&e);
    assert_eq!(d.code, "E0501");
    assert_eq!(d.primary.map(|l| l.span), Some(Span::new(30, 45)));
    // A false guard skips the division.
    let e = Expr::guard(
        Pred::Bool(false),
        bin(BinOp::Div, Expr::lit(1.0), Expr::lit(0.0)),
    );
    assert_eq!(eval(&e), Tensor::scalar(0.0));
}

#[test]
fn index_overflow_is_reported() {
    let e = with_span(get(inp("f"), I::add(c(i64::MAX), c(1))), 5, 9);
    let d = eval_err(&e);
    assert_eq!(d.code, "E0502");
    assert_eq!(d.primary.map(|l| l.span), Some(Span::new(5, 9)));
    let e = gen_("i", I::mul(v("n"), v("n")), Expr::lit(1.0));
    let err = eval_expr(&program(), &e, &sizes(i64::MAX / 2, 3), &inputs(), &seq()).unwrap_err();
    assert_eq!(err.code, "E0502");
}

#[test]
fn too_large_tensors_are_refused_before_allocation() {
    let e = gen_("i", v("n"), gen_("j", v("n"), Expr::lit(1.0)));
    let err = eval_expr(
        &program(),
        &e,
        &sizes(1_000_000_000, 3),
        &inputs(),
        &EvalOptions::default(),
    )
    .unwrap_err();
    assert_eq!(err.code, "E0503");
    let small = EvalOptions {
        max_elements: 10,
        parallel: true,
        ..EvalOptions::default()
    };
    let e = gen_("i", c(4), gen_("j", c(3), Expr::lit(1.0)));
    let err = eval_expr(&program(), &e, &sizes(5, 3), &inputs(), &small).unwrap_err();
    assert_eq!(err.code, "E0503");
    // Input shapes are checked too, so a CLI can build inputs safely.
    let err = input_shapes(&program(), &sizes(1 << 40, 3), &EvalOptions::default()).unwrap_err();
    assert_eq!(err.code, "E0503");
    let shapes = input_shapes(&program(), &sizes(5, 3), &EvalOptions::default()).unwrap();
    assert_eq!(shapes["A"], vec![5, 3]);
    assert_eq!(shapes["s"], Vec::<usize>::new());
    // But the shape alone can be asked for.
    let shape = concrete_shape(&program(), &e, &sizes(5, 3)).unwrap();
    assert_eq!(shape, vec![4, 3]);
    let e = gen_("i", v("n"), gen_("j", v("n"), Expr::lit(1.0)));
    let shape = concrete_shape(&program(), &e, &sizes(1_000_000_000, 3)).unwrap();
    assert_eq!(shape, vec![1_000_000_000, 1_000_000_000]);
}

#[test]
fn runaway_loops_are_refused_before_they_start() {
    // gen i < 8: sum j < 2^40: 1 (a split by 2^40 makes such sums): 2^43 iterations
    // counted with the gen around the sum, refused at once, also in parallel.
    let huge = gen_("i", c(8), sum_("j", c(1 << 40), Expr::lit(1.0)));
    for parallel in [false, true] {
        let options = EvalOptions {
            parallel,
            ..EvalOptions::default()
        };
        let err = eval_expr(&program(), &huge, &sizes(5, 3), &inputs(), &options).unwrap_err();
        assert_eq!(err.code, "E0509");
        assert!(
            err.message.contains("8796093022208 iterations"),
            "{}",
            err.message
        );
    }
    // The count is the product of the trip counts: 8 * 5 = 40 runs at a limit of
    // 40 and is refused at 39; a max-reduction counts the same way.
    let limit = |max_iterations| EvalOptions {
        max_iterations,
        parallel: false,
        ..EvalOptions::default()
    };
    let sum = gen_("i", c(8), sum_("j", c(5), Expr::lit(1.0)));
    let max = gen_("i", c(8), Expr::max_red("j", c(0), c(5), Expr::lit(1.0)));
    for e in [&sum, &max] {
        let ok = eval_expr(&program(), e, &sizes(5, 3), &inputs(), &limit(40)).unwrap();
        assert_eq!(ok.data.len(), 8);
        let err = eval_expr(&program(), e, &sizes(5, 3), &inputs(), &limit(39)).unwrap_err();
        assert_eq!(err.code, "E0509");
    }
    // A loop-invariant `let` value is computed once: its 5 * 5 iterations are not
    // multiplied by the 8 of the gen it sits in (8 + 25 + 8 * 1 reads).
    let value = gen_("k", c(5), sum_("l", c(5), Expr::lit(1.0)));
    let e = gen_("i", c(8), Expr::let_("x", value, get(Expr::var("x"), c(0))));
    let r = eval_expr(&program(), &e, &sizes(5, 3), &inputs(), &limit(25)).unwrap();
    assert_eq!(r.data, vec![5.0; 8]);
    // An empty or negative range costs nothing.
    let e = gen_("i", c(8), sum_("j", I::sub(c(0), c(5)), Expr::lit(1.0)));
    let r = eval_expr(&program(), &e, &sizes(5, 3), &inputs(), &limit(8)).unwrap();
    assert_eq!(r.data, vec![0.0; 8]);
}

#[test]
fn invalid_reshape_amounts_are_errors() {
    for (op, k) in [
        (AmountOp::TruncR, 6),
        (AmountOp::TruncL, 6),
        (AmountOp::Split, 0),
        (AmountOp::Split, -2),
        (AmountOp::PadL, -1),
        (AmountOp::PadR, -1),
        (AmountOp::TruncL, -1),
    ] {
        let e = with_span(amount(op, c(k), inp("f")), 3, 8);
        let d = eval_err(&e);
        assert_eq!(d.code, "E0504", "{op:?} {k}");
        assert_eq!(d.primary.map(|l| l.span), Some(Span::new(3, 8)));
    }
}

#[test]
fn ill_shaped_programs_are_errors_not_panics() {
    let cases = [
        bin(BinOp::Add, inp("f"), get(inp("A"), c(0))),
        get2(inp("f"), c(0), c(1)),
        bin(BinOp::Mul, inp("f"), inp("f")),
        transpose(inp("f")),
        flatten(inp("s")),
        concat(inp("f"), inp("A")),
        amount(AmountOp::Split, c(2), inp("s")),
        // Jagged: gen i < 3: gen j in 0..i+1: 1
        gen_("i", c(3), gen_("j", I::add(v("i"), c(1)), Expr::lit(1.0))),
        // Jagged with an empty representative row: gen i < 3: gen j < i: 1
        gen_("i", c(3), gen_("j", v("i"), Expr::lit(1.0))),
        // Jagged through an amount: gen i < 3: pad_r(i, f)
        gen_("i", c(3), amount(AmountOp::PadR, v("i"), inp("f"))),
    ];
    for e in cases {
        assert_eq!(eval_err(&e).code, "E0505", "{e:?}");
    }
}

/// The comparison with the static shape reports a difference (E0507) and a negative
/// extent (E0508); the interpreter and shape inference agree on every program the
/// other tests evaluate, so the difference is fed in directly here.
#[test]
fn static_shape_differences_are_reported() {
    let p = program();
    let size_env = validate_sizes(&p, &sizes(5, 3)).expect("sizes");
    let compiler = Compiler::new(&p, &size_env, usize::MAX, 0);
    let e = with_span(inp("A"), 3, 8);
    let stat = vec![v("n"), v("m")];
    assert!(compiler.check_static(&e, &stat, &[5, 3]).is_ok());
    for wrong in [vec![5, 4], vec![5], vec![5, 3, 1], vec![3, 5]] {
        let d = compiler
            .check_static(&e, &stat, &wrong)
            .expect_err("differs");
        assert_eq!(d.code, "E0507", "{wrong:?}");
        assert_eq!(d.primary.map(|l| l.span), Some(Span::new(3, 8)));
    }
    let negative = vec![I::sub(v("m"), v("n"))];
    let d = compiler
        .check_static(&e, &negative, &[0])
        .expect_err("negative");
    assert_eq!(d.code, "E0508");
    assert!(d.message.contains("-2"), "{}", d.message);
    // The static shape of every node is computed: a node whose concrete shape
    // came out of the clamp is caught (gen i in 4..2 at any sizes).
    let e = gen_("i", c(0), Expr::lit(1.0));
    assert_eq!(eval(&e).shape, vec![0]);
    let backwards = Expr::gen_("i", c(4), c(2), Expr::lit(1.0));
    assert_eq!(eval_err(&backwards).code, "E0508");
}

#[test]
fn unbound_names_are_errors() {
    let cases = [
        get(inp("f"), v("nope")),
        Expr::var("x"),
        inp("g"),
        def_ref("nothing"),
        Expr::synth(ExprKind::Meta("e".into())),
        get(inp("f"), I::Meta("k".into())),
    ];
    for e in cases {
        assert_eq!(eval_err(&e).code, "E0506", "{e:?}");
    }
}

#[test]
fn sizes_and_assumptions_are_validated() {
    let e = Expr::lit(1.0);
    let mut only_n = BTreeMap::new();
    only_n.insert("n".to_string(), 5);
    let d = eval_expr(&program(), &e, &only_n, &inputs(), &seq()).unwrap_err();
    assert_eq!(d.code, "E0601");
    assert!(d.message.contains("`m`"), "{}", d.message);
    assert!(d.help.unwrap_or_default().contains("--sizes"));
    let d = eval_expr(&program(), &e, &sizes(0, 3), &inputs(), &seq()).unwrap_err();
    assert_eq!(d.code, "E0602");
    let mut p = program();
    p.assumes.push(Assume {
        pred: cmp(CmpOp::Ge, v("n"), c(10)),
        span: Span::new(100, 115),
    });
    let d = eval_expr(&p, &e, &sizes(5, 3), &inputs(), &seq()).unwrap_err();
    assert_eq!(d.code, "E0603");
    assert_eq!(d.primary.map(|l| l.span), Some(Span::new(100, 115)));
    assert!(d.message.contains("n = 5"), "{}", d.message);
    assert!(eval_expr(&p, &e, &sizes(10, 3), &inputs(), &seq()).is_ok());
    assert_eq!(check_sizes(&p, &sizes(5, 3)).unwrap_err().code, "E0603");
    assert!(concrete_shape(&p, &e, &sizes(5, 3)).is_err());
}

#[test]
fn inputs_are_validated() {
    let mut ins = inputs();
    ins.remove("A");
    // Inputs that are not referenced need no value.
    assert!(eval_expr(&program(), &inp("f"), &sizes(5, 3), &ins, &seq()).is_ok());
    let d = eval_expr(&program(), &inp("A"), &sizes(5, 3), &ins, &seq()).unwrap_err();
    assert_eq!(d.code, "E0604");
    ins.insert("A".into(), Tensor::zeros(vec![3, 5]));
    let d = eval_expr(&program(), &inp("A"), &sizes(5, 3), &ins, &seq()).unwrap_err();
    assert_eq!(d.code, "E0605");
    assert!(
        d.message.contains("[3, 5]") && d.message.contains("[5, 3]"),
        "{}",
        d.message
    );
    ins.insert(
        "A".into(),
        Tensor {
            shape: vec![5, 3],
            data: vec![0.0; 4],
        },
    );
    let d = eval_expr(&program(), &inp("A"), &sizes(5, 3), &ins, &seq()).unwrap_err();
    assert_eq!(d.code, "E0605");
}

#[test]
fn unknown_definitions_are_reported() {
    let mut p = program();
    p.defs.push(def("main", Expr::lit(1.0)));
    let d = eval_def(&p, "mian", &sizes(5, 3), &inputs(), &seq()).unwrap_err();
    assert_eq!(d.code, "E0606");
    assert!(d.help.unwrap_or_default().contains("main"));
    assert_eq!(
        eval_def(&p, "main", &sizes(5, 3), &inputs(), &seq()).unwrap(),
        Tensor::scalar(1.0)
    );
}

// ---- tensors ------------------------------------------------------------------------

#[test]
fn random_tensors_are_deterministic_and_in_range() {
    let a = Tensor::random(vec![10, 100], 42);
    assert_eq!(a, Tensor::random(vec![10, 100], 42));
    assert_ne!(a, Tensor::random(vec![10, 100], 43));
    assert_eq!(a.data.len(), 1000);
    assert!(a.data.iter().all(|x| (-1.0..1.0).contains(x)));
    assert!(a.data.iter().any(|&x| x < -0.5) && a.data.iter().any(|&x| x > 0.5));
    // The first splitmix64 output for seed 0 is 0xE220A8397B1DCDAF.
    let first = (0xE220_A839_7B1D_CDAFu64 >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
    assert_eq!(Tensor::random(vec![], 0).data, vec![first]);
    // Row-major filling: a prefix of the stream does not depend on the shape.
    assert_eq!(
        Tensor::random(vec![3], 7).data,
        Tensor::random(vec![2, 2], 7).data[..3]
    );
}

#[test]
fn linear_index_expressions_are_collected() {
    let p = program();
    let sz = validate_sizes(&p, &sizes(5, 3)).unwrap();
    let mut comp = Compiler::new(&p, &sz, usize::MAX, 0);
    comp.idx_names = vec!["i", "j"];
    comp.idx_rep = vec![0, 0];
    let compile = |e: I| comp.index(&e, Span::DUMMY).unwrap();
    // (i + n) * 2 - (j - 1) - i  =  i - j + 11  (n = 5)
    let e = I::sub(
        I::sub(I::mul(I::add(v("i"), v("n")), c(2)), I::sub(v("j"), c(1))),
        v("i"),
    );
    assert_eq!(
        compile(e),
        CIdx::Affine(11, vec![(0, 1), (1, -1)].into_boxed_slice())
    );
    assert_eq!(
        compile(I::mul(c(3), v("j"))),
        CIdx::Affine(0, vec![(1, 3)].into())
    );
    assert_eq!(
        compile(I::sub(I::add(v("j"), v("i")), v("i"))),
        CIdx::Slot(1)
    );
    assert_eq!(compile(I::mul(v("m"), v("n"))), CIdx::Const(15));
    // Non-linear parts stay trees over linear leaves; their values are unchanged.
    let e = compile(ibin(IndexOp::Div, I::sub(v("i"), c(3)), c(2)));
    assert!(matches!(e, CIdx::Bin(IndexOp::Div, _, _)), "{e:?}");
    assert_eq!(e.eval(&[0, 0], &[]), Some(-2));
    assert!(matches!(
        compile(I::mul(v("i"), v("j"))),
        CIdx::Bin(IndexOp::Mul, _, _)
    ));
    // Folding that would overflow is left for evaluation to report.
    assert_eq!(compile(I::Neg(Box::new(c(i64::MIN)))).eval(&[], &[]), None);
    assert_eq!(
        compile(I::mul(v("i"), c(i64::MAX))).eval(&[2, 0], &[]),
        None
    );
}

#[test]
fn tensor_helpers() {
    let a = t(vec![2, 3], vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(a.get(&[1, 2]), 5.0);
    assert_eq!(a.try_get(&[2, 0]), None);
    assert_eq!(a.get(&[2, 0]), 0.0);
    assert_eq!(a.try_get(&[1]), None);
    assert!(Tensor::new(vec![2, 2], vec![1.0]).is_none());
    assert_eq!(Tensor::zeros(vec![2, 0]).data.len(), 0);
    assert_eq!(Tensor::scalar(3.0).get(&[]), 3.0);
    assert_eq!(shape_numel(&[0, usize::MAX, 2]), Some(0));
    assert_eq!(shape_numel(&[usize::MAX, 2]), None);
}

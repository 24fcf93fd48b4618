//! The checks around the generated code catch what they are meant to catch: a
//! kernel that writes out of range or leaves an output element unwritten is reported
//! by the loop-IR interpreter (and, under `ATL_SANITIZE=1`, by AddressSanitizer in
//! the compiled harness); calls with invalid sizes are refused before any C runs;
//! bad symbols are refused; names that clash with C are renamed.

use std::collections::BTreeMap;

use atl_emit_c::{Backend, CompileOptions, Dtype, EmitOptions, compile, emit};
use atl_lang::interp::Tensor;
use atl_lower::ir::{Cond, Ix, IxOp, Stmt};

fn lowered(source: &str, def: &str) -> (atl_lang::Checked, atl_lower::Kernel) {
    let (checked, diags) = atl_lang::check_source(source);
    let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
    let kernel = atl_lower::lower_def(&checked.program, &checked.shapes, def, &Default::default())
        .expect("lowers");
    (checked, kernel)
}

const COPY: &str = "size n\ninput f : [n]\ndef copy = gen i < n: f[i] * 2\n";

fn sizes(n: i64) -> BTreeMap<String, i64> {
    BTreeMap::from([("n".to_string(), n)])
}

fn inputs(n: usize) -> BTreeMap<String, Tensor> {
    BTreeMap::from([("f".to_string(), Tensor::random(vec![n], 3))])
}

/// Applies `f` to the one store of the `copy` kernel.
fn mutate_store(kernel: &mut atl_lower::Kernel, f: impl FnOnce(&mut Stmt)) {
    let Stmt::For(l) = &mut kernel.body[0] else {
        panic!("expected the loop: {:?}", kernel.body);
    };
    f(&mut l.body[0]);
}

fn sanitize() -> bool {
    std::env::var_os("ATL_SANITIZE").is_some_and(|v| !v.is_empty() && v != "0")
}

#[test]
fn an_out_of_range_store_is_caught() {
    let (_, mut kernel) = lowered(COPY, "copy");
    mutate_store(&mut kernel, |s| {
        let Stmt::Store { index, .. } = s else {
            panic!("expected a store")
        };
        *index = Ix::bin(IxOp::Add, index.clone(), Ix::Const(1));
    });
    let err = atl_lower::run_kernel(&kernel, &sizes(5), &inputs(5)).expect_err("caught");
    assert_eq!(err.code, "E0924", "{err:?}");
    if sanitize() {
        let options = CompileOptions {
            backend: Backend::Harness,
            sanitize: true,
            ..CompileOptions::default()
        };
        let compiled = compile(&kernel, &EmitOptions::default(), &options).expect("compiles");
        let err = compiled
            .run(&sizes(5), &inputs(5))
            .expect_err("ASan reports it");
        let report = err.notes.join("\n");
        assert!(report.contains("AddressSanitizer"), "{report}");
    }
}

#[test]
fn an_unwritten_output_element_is_caught() {
    let (_, mut kernel) = lowered(COPY, "copy");
    mutate_store(&mut kernel, |s| {
        let store = s.clone();
        *s = Stmt::If {
            cond: Cond::Cmp(
                atl_lang::index::CmpOp::Gt,
                Ix::Var("i".into()),
                Ix::Const(0),
            ),
            then_branch: vec![store],
            else_branch: Vec::new(),
        };
    });
    let err = atl_lower::run_kernel(&kernel, &sizes(4), &inputs(4)).expect_err("caught");
    assert_eq!(err.code, "E0923", "{err:?}");
    // The runner pre-fills the output with NaN, so the hole shows in the result.
    let compiled =
        compile(&kernel, &EmitOptions::default(), &CompileOptions::default()).expect("compiles");
    let out = compiled.run(&sizes(4), &inputs(4)).expect("runs").output;
    assert!(out.data[0].is_nan() && out.data[1..].iter().all(|x| x.is_finite()));
}

#[test]
fn invalid_calls_are_refused_before_running() {
    let source = "size n\nassume n >= 2\ninput f : [n]\ndef t = trunc_r(2, f)\n";
    let (_, kernel) = lowered(source, "t");
    let compiled =
        compile(&kernel, &EmitOptions::default(), &CompileOptions::default()).expect("compiles");
    for (n, code) in [(0, "E0602"), (1, "E0603")] {
        let err = compiled
            .run(&sizes(n), &inputs(n.max(0) as usize))
            .expect_err("refused");
        assert_eq!(err.code, code, "n = {n}: {err:?}");
        let err = atl_lower::run_kernel(&kernel, &sizes(n), &inputs(n.max(0) as usize))
            .expect_err("refused");
        assert_eq!(err.code, code);
    }
    // Missing size, missing input, wrong input shape.
    assert_eq!(
        compiled.run(&BTreeMap::new(), &inputs(3)).unwrap_err().code,
        "E0601"
    );
    assert_eq!(
        compiled.run(&sizes(3), &BTreeMap::new()).unwrap_err().code,
        "E0604"
    );
    assert_eq!(
        compiled.run(&sizes(3), &inputs(4)).unwrap_err().code,
        "E0605"
    );
    // A valid call: n - 2 elements.
    let out = compiled.run(&sizes(5), &inputs(5)).expect("runs").output;
    assert_eq!(out.shape, vec![3]);
    assert_eq!(
        out.data,
        inputs(5)["f"].data[..3]
            .iter()
            .map(|&x| f64::from(x as f32))
            .collect::<Vec<_>>()
    );
}

#[test]
fn symbols_must_be_usable_c_identifiers() {
    let (_, kernel) = lowered(COPY, "copy");
    for bad in [
        "int",
        "atl__copy",
        "ATL__copy",
        "__x",
        "1abc",
        "a-b",
        "_Upper",
        "malloc",
        "sqrtf",
        "omp_copy",
    ] {
        let options = EmitOptions {
            symbol: Some(bad.to_string()),
            ..EmitOptions::default()
        };
        assert_eq!(emit(&kernel, &options).unwrap_err().code, "E0931", "{bad}");
    }
    let options = EmitOptions {
        symbol: Some("scale_by_two".to_string()),
        dtype: Dtype::F64,
        fp: atl_emit_c::Fp::Fast,
    };
    let compiled = compile(&kernel, &options, &CompileOptions::default()).expect("compiles");
    assert!(
        compiled
            .code()
            .header
            .contains("int scale_by_two(int64_t n,")
    );
    let out = compiled.run(&sizes(3), &inputs(3)).expect("runs").output;
    let want: Vec<f64> = inputs(3)["f"].data.iter().map(|x| x * 2.0).collect();
    assert_eq!(out.data, want);
}

#[test]
fn names_that_clash_with_c_are_renamed() {
    // Inputs called `out`, `restrict` and `float`, binders called `int` and `for`.
    let source = "size n\ninput out : [n]\ninput restrict : [n]\ninput float : []\n\
                  def k = gen int < n: sum for < n: out[int] * restrict[for] * float\n";
    let (checked, kernel) = lowered(source, "k");
    let options = EmitOptions::default();
    let code = emit(&kernel, &options).expect("emits");
    assert!(!code.source.contains("int64_t int "), "{}", code.source);
    let compiled = compile(&kernel, &options, &CompileOptions::default()).expect("compiles");
    assert!(
        compiled.compiler_messages().trim().is_empty(),
        "{}",
        compiled.compiler_messages()
    );
    let sizes = sizes(4);
    let inputs: BTreeMap<String, Tensor> = [
        ("out", Tensor::random(vec![4], 1)),
        ("restrict", Tensor::random(vec![4], 2)),
        ("float", Tensor::scalar(0.5)),
    ]
    .into_iter()
    .map(|(n, t)| (n.to_string(), t))
    .collect();
    let got = compiled.run(&sizes, &inputs).expect("runs").output;
    let want =
        atl_lang::interp::eval_def(&checked.program, "k", &sizes, &inputs, &Default::default())
            .expect("evaluates");
    for (g, w) in got.data.iter().zip(&want.data) {
        assert!((g - w).abs() <= 1e-5 * (1.0 + w.abs()), "{g} vs {w}");
    }
}

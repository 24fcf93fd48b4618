//! Under `--fp strict` a kernel rounds as its definition is written: lowering gives
//! every nested sum its own accumulator (`LowerOptions::group_sums_as_written`), so the
//! kernel of a specification or of an `exact` derivation computes, in `f64`, the very
//! bits the reference interpreter computes (a nested sum of tensors too: it is computed
//! in a buffer of its own, then added). Checked here on the loop IR's own
//! evaluation (which the compiled C matches bit for bit under `-ffp-contract=off`,
//! `cli/tests/run_fp.rs`) for every definition of every example, on random inputs; and
//! on a sum built so that grouping decides the answer (2^53 + 1 + 1 - 2^53).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use atl_driver::Collect;
use atl_driver::load::load_derived;
use atl_driver::lowering::{gate, lower_options};
use atl_driver::timing::{default_check_sizes, random_inputs};
use atl_emit_c::Fp;
use atl_lang::interp::{EvalOptions, Tensor};
use atl_rewrites::rule::Grade;

fn example_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut files = Vec::new();
    for dir in std::fs::read_dir(&root).expect("examples/") {
        let dir = dir.expect("entry").path();
        if dir.is_dir() && !dir.ends_with("integration") {
            for f in std::fs::read_dir(&dir).expect("example dir") {
                let f = f.expect("entry").path();
                if f.extension().is_some_and(|e| e == "atl") {
                    files.push(f);
                }
            }
        }
    }
    files.sort();
    assert!(files.len() >= 10, "found only {files:?}");
    files
}

/// Whether two outputs agree bit for bit (a NaN with a NaN; `+0` and `-0` alike, as
/// the interpreter's empty sums and the kernel's zero fills may differ in sign only).
fn same_bits(a: &Tensor, b: &Tensor) -> bool {
    a.shape == b.shape
        && a.data.len() == b.data.len()
        && a.data
            .iter()
            .zip(&b.data)
            .all(|(x, y)| x == y || (x.is_nan() && y.is_nan()))
}

/// The definitions of `file` whose kernel must be bit-identical under strict: the
/// written ones and the `exact` derivations.
fn exact_definitions(file: &Path) -> Option<(atl_driver::load::Loaded, Vec<String>)> {
    let loaded = load_derived(&mut Collect::default(), file).ok()?;
    let derived: BTreeMap<&str, Grade> = loaded
        .derivations
        .iter()
        .map(|d| (d.name.as_str(), d.grade()))
        .collect();
    let names = loaded
        .program
        .defs
        .iter()
        .map(|d| d.name.clone())
        .filter(|n| derived.get(n.as_str()).is_none_or(|g| *g == Grade::Exact))
        .collect();
    Some((loaded, names))
}

/// The definitions whose loop IR, lowered for `fp`, does not give the interpreter's
/// bits at sizes of at most 9, and how many were compared.
fn disagreements(fp: Fp) -> (Vec<String>, usize) {
    let solver = atl_solver::Solver::new();
    let mut wrong = Vec::new();
    let mut compared = 0;
    for file in example_files() {
        let Some((loaded, names)) = exact_definitions(&file) else {
            continue;
        };
        let program = &loaded.program;
        let nine: BTreeMap<String, i64> =
            program.sizes.iter().map(|s| (s.name.clone(), 9)).collect();
        let sizes = default_check_sizes(program, &nine);
        let Ok(inputs) = random_inputs(program, &sizes) else {
            continue;
        };
        for name in names {
            let Ok((gated, _)) = gate(program, &loaded.shapes, &name, &solver) else {
                continue;
            };
            let Ok(kernel) = gated.lower_for(fp) else {
                continue;
            };
            let Ok(want) = atl_lang::interp::eval_def(
                program,
                &name,
                &sizes,
                &inputs,
                &EvalOptions::default(),
            ) else {
                continue;
            };
            let got = atl_lower::run_kernel(&kernel, &sizes, &inputs).expect("the kernel runs");
            compared += 1;
            if !same_bits(&got, &want) {
                wrong.push(format!("{}: {name}", file.display()));
            }
        }
    }
    (wrong, compared)
}

#[test]
fn strict_kernels_of_exact_definitions_compute_the_interpreters_bits() {
    let (strict, compared) = disagreements(Fp::Strict);
    assert!(compared >= 40, "only {compared} definitions compared");
    assert!(
        strict.is_empty(),
        "definitions not bit-identical to the interpreter under strict: {strict:#?}"
    );
    // The grouping is what makes the difference: lowered for fast, more of them differ.
    let (fast, _) = disagreements(Fp::Fast);
    assert!(
        fast.len() > strict.len(),
        "fast: {fast:#?}, strict: {strict:#?}"
    );
}

#[test]
fn grouping_decides_an_adversarial_sum() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("g.atl");
    std::fs::write(
        &file,
        "size n\nsize m\ninput f : [n, m]\ndef a = sum i < n: sum j < m: f[i][j]\n",
    )
    .expect("write");
    let loaded = load_derived(&mut Collect::default(), &file).expect("loads");
    let sizes: BTreeMap<String, i64> = [("n".to_string(), 2), ("m".to_string(), 2)].into();
    let big = 2f64.powi(53);
    let inputs: BTreeMap<String, Tensor> = [(
        "f".to_string(),
        Tensor {
            shape: vec![2, 2],
            data: vec![big, 1.0, 1.0, -big],
        },
    )]
    .into();
    let want = atl_lang::interp::eval_def(
        &loaded.program,
        "a",
        &sizes,
        &inputs,
        &EvalOptions::default(),
    )
    .expect("evaluates");
    // The interpreter adds each row's sum into the total: (2^53 + 1) + (1 - 2^53) = 1
    // (2^53 + 1 rounds to 2^53, 1 - 2^53 is exact).
    assert_eq!(want.data, vec![1.0]);
    let solver = atl_solver::Solver::new();
    let run = |fp: Fp| {
        let (gated, _) = gate(&loaded.program, &loaded.shapes, "a", &solver).expect("gate");
        let kernel = gated.lower_for(fp).expect("lowers");
        atl_lower::run_kernel(&kernel, &sizes, &inputs)
            .expect("runs")
            .data
    };
    assert_eq!(run(Fp::Strict), want.data, "strict groups as written");
    // One accumulator adds 2^53, 1, 1, -2^53 in turn: the ones are lost.
    assert_eq!(run(Fp::Fast), vec![0.0]);
    assert!(lower_options(Fp::Strict).group_sums_as_written);
    assert!(!lower_options(Fp::Fast).group_sums_as_written);
}

//! Shared by the differential tests of `atl-lower` and `atl-emit-c` (included with
//! `#[path]`): loads every example program with its derivations, and produces the
//! size assignments and random inputs each definition is run at.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use atl_lang::interp::{EvalOptions, Tensor};
use atl_lang::ir::Program;
use atl_lang::shapes::ShapeEnv;

/// Every kernel of one example file, lowered as `atl emit` lowers them (`Solver::new()`,
/// the default options): (definition, kernel). Panics if a derivation failed or a
/// definition does not lower.
pub fn kernels_of(path: &Path) -> Vec<(String, atl_lower::Kernel)> {
    let ex = load(path);
    assert!(
        ex.failed_derivations.is_empty(),
        "{}: derivations failed: {:?}",
        path.display(),
        ex.failed_derivations
    );
    ex.defs
        .iter()
        .map(|def| {
            let kernel = atl_lower::lower_def_with(
                &ex.program,
                &ex.shapes,
                def,
                &atl_solver::Solver::new(),
                &atl_lower::LowerOptions::default(),
            )
            .unwrap_or_else(|d| panic!("{}: `{def}` does not lower: {d:?}", path.display()));
            (def.clone(), kernel)
        })
        .collect()
}

/// An example file, checked, with every derivation added as a definition.
pub struct Example {
    pub path: PathBuf,
    pub program: Program,
    pub shapes: ShapeEnv,
    /// Definitions and derivations, in file order.
    pub defs: Vec<String>,
    /// Derivations that failed (reported by the tests, not silently skipped).
    pub failed_derivations: Vec<String>,
}

pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

/// Every `examples/*/*.atl`, sorted by path, then the construct-coverage program and
/// the index-array kernels next to this file.
pub fn example_files() -> Vec<PathBuf> {
    let mut out = atl_examples();
    out.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../lower/tests/support/constructs.atl"));
    out.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("../lower/tests/support/index_arrays.atl"));
    out
}

/// Every `examples/*/*.atl`, sorted by path.
pub fn atl_examples() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in std::fs::read_dir(examples_dir()).expect("examples/ exists") {
        let dir = dir.expect("readable entry").path();
        if !dir.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&dir).expect("readable example dir") {
            let f = f.expect("readable entry").path();
            if f.extension().is_some_and(|e| e == "atl") {
                out.push(f);
            }
        }
    }
    out.sort();
    out
}

pub fn load(path: &Path) -> Example {
    let source = std::fs::read_to_string(path).expect("readable example");
    let (checked, diags) = atl_lang::check_source(&source);
    let checked = checked.unwrap_or_else(|| panic!("{} does not check: {diags:?}", path.display()));
    let (standard, _) = atl_rewrites::Library::standard();
    let solver = atl_solver::Solver::new();
    // The file's own rules, admitted as `atl check` admits them.
    let (library, rule_diags) = atl_rewrites::user_rules::library_with_user_rules(
        &standard,
        &checked.program,
        &path.display().to_string(),
        &solver,
    );
    assert!(
        rule_diags.is_empty(),
        "{}: user rules refused: {rule_diags:?}",
        path.display()
    );
    let env = atl_rewrites::Env {
        program: &checked.program,
        shapes: &checked.shapes,
        library: &library,
        solver: &solver,
    };
    let (derivations, failures) = atl_rewrites::run_derivations(&env);
    let (program, shapes) =
        atl_rewrites::with_derived(&checked.program, &checked.shapes, &derivations);
    let defs = program.defs.iter().map(|d| d.name.clone()).collect();
    Example {
        path: path.to_path_buf(),
        program,
        shapes,
        defs,
        failed_derivations: failures.into_iter().map(|d| d.message).collect(),
    }
}

/// Size patterns, assigned to a program's sizes in declaration order (cycling):
/// all ones, small, non-multiples of the tile sizes 8 and 64 on either side, and
/// exact multiples.
const PATTERNS: &[&[i64]] = &[
    &[1],
    &[2],
    &[3, 5, 2, 4, 3],
    &[9, 17, 4, 13, 2],
    &[8, 16, 3, 8, 5],
    &[67, 70, 2, 3, 2],
    // A second size that is a multiple of 16 (`assume m % 16 == 0`), with others that
    // are not.
    &[3, 32, 5, 16, 2],
    &[5, 48, 2, 16, 3],
    // A first size that is a multiple of 16 (attention's `assume N % 16 == 0`).
    &[16, 3, 5, 2, 4],
    &[32, 7, 2, 3, 2],
    &[48, 2, 3, 5, 7],
];

/// The size assignments a definition is tested at: those of [`PATTERNS`] that
/// satisfy the program's `assume`s and keep tensors small.
pub fn size_assignments(program: &Program) -> Vec<BTreeMap<String, i64>> {
    let mut out = Vec::new();
    for pattern in PATTERNS {
        let sizes: BTreeMap<String, i64> = program
            .sizes
            .iter()
            .enumerate()
            .map(|(k, s)| (s.name.clone(), pattern[k % pattern.len()]))
            .collect();
        // Keep the loop-IR interpreter quick: skip patterns with huge products.
        let product: i64 = sizes.values().product();
        if product > 20_000 {
            continue;
        }
        if atl_lang::interp::check_sizes(program, &sizes).is_ok() {
            out.push(sizes);
        }
    }
    out
}

/// Deterministic random inputs for every input of the program.
pub fn inputs(
    program: &Program,
    sizes: &BTreeMap<String, i64>,
    seed: u64,
) -> BTreeMap<String, Tensor> {
    let shapes = atl_lang::interp::input_shapes(program, sizes, &EvalOptions::default())
        .expect("input shapes at valid sizes");
    shapes
        .into_iter()
        .enumerate()
        .map(|(k, (name, shape))| {
            let t = atl_lang::interp::random_input_named(
                program,
                &name,
                shape,
                sizes,
                seed.wrapping_mul(31).wrapping_add(k as u64),
            );
            (name, t)
        })
        .collect()
}

/// The program of `source` with its derivations run and added as definitions (with
/// their loop hints), and its shapes. Panics if the source does not check or a
/// derivation fails.
pub fn derived_program(source: &str) -> (Program, ShapeEnv) {
    let (checked, diags) = atl_lang::check_source(source);
    let checked = checked.unwrap_or_else(|| panic!("does not check: {diags:?}"));
    let (library, _) = atl_rewrites::Library::standard();
    let solver = atl_solver::Solver::new();
    let env = atl_rewrites::Env {
        program: &checked.program,
        shapes: &checked.shapes,
        library: &library,
        solver: &solver,
    };
    let (derivations, failures) = atl_rewrites::run_derivations(&env);
    assert!(failures.is_empty(), "derivations fail: {failures:?}");
    atl_rewrites::with_derived(&checked.program, &checked.shapes, &derivations)
}

/// [`derived_program`], and the kernel of `def` lowered as `atl emit` lowers it
/// (default options), with the kernel's text.
pub fn derived_kernel(source: &str, def: &str) -> (Program, atl_lower::Kernel, String) {
    let (program, shapes) = derived_program(source);
    let kernel = atl_lower::lower_def(&program, &shapes, def, &Default::default()).expect("lowers");
    let text = atl_loopir::kernel_to_string(&kernel);
    (program, kernel, text)
}

/// The reference result.
pub fn reference(
    program: &Program,
    def: &str,
    sizes: &BTreeMap<String, i64>,
    inputs: &BTreeMap<String, Tensor>,
) -> Tensor {
    atl_lang::interp::eval_def(
        program,
        def,
        sizes,
        inputs,
        &EvalOptions {
            parallel: false,
            ..EvalOptions::default()
        },
    )
    .unwrap_or_else(|d| panic!("reference interpreter failed on `{def}` at {sizes:?}: {d:?}"))
}

/// The largest error of `got` against `want`, relative to `1 + |want|` elementwise.
pub fn max_error(got: &Tensor, want: &Tensor) -> f64 {
    assert_eq!(got.shape, want.shape, "shapes differ");
    got.data
        .iter()
        .zip(&want.data)
        .map(|(g, w)| {
            if g.is_nan() || w.is_nan() {
                if g.is_nan() && w.is_nan() {
                    0.0
                } else {
                    f64::INFINITY
                }
            } else {
                (g - w).abs() / (1.0 + w.abs())
            }
        })
        .fold(0.0, f64::max)
}

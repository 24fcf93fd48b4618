//! Index arrays in the reference interpreter: a compressed-row product agrees with the
//! dense product of the matrix it encodes (computed here without the interpreter),
//! and an array that breaks its declaration is refused with E0610 before anything is
//! evaluated.

use std::collections::BTreeMap;

use atl_lang::interp::{EvalOptions, eval_def};
use atl_lang::{Checked, Tensor, check_source};

const SPMV: &str = "size n, m, nnz
input pos : int[n + 1] in 0..nnz + 1 sorted
input crd : int[nnz] in 0..m
input vals : [nnz]
input v : [m]
def spmv = gen i < n: sum p in pos[i]..pos[i + 1]: vals[p] * v[crd[p]]
";

fn checked(source: &str) -> Checked {
    let (checked, diags) = check_source(source);
    checked.unwrap_or_else(|| panic!("{diags:?}"))
}

fn vector(values: &[f64]) -> Tensor {
    Tensor::new(vec![values.len()], values.to_vec()).expect("a vector")
}

/// A small deterministic generator (no dependency): xorshift.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random sparse `n x m` matrix as dense rows, including empty rows and columns.
fn random_matrix(rng: &mut Rng, n: usize, m: usize) -> Vec<Vec<f64>> {
    (0..n)
        .map(|_| {
            (0..m)
                .map(|_| {
                    if rng.below(3) == 0 {
                        (rng.below(19) as f64) - 9.0
                    } else {
                        0.0
                    }
                })
                .collect()
        })
        .collect()
}

/// Compressed rows of a dense matrix: (pos, crd, vals), zeros dropped.
fn compress_rows(a: &[Vec<f64>]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (mut pos, mut crd, mut vals) = (vec![0.0], Vec::new(), Vec::new());
    for row in a {
        for (j, &x) in row.iter().enumerate() {
            if x != 0.0 {
                crd.push(j as f64);
                vals.push(x);
            }
        }
        pos.push(crd.len() as f64);
    }
    (pos, crd, vals)
}

fn run(
    checked: &Checked,
    sizes: &[(&str, i64)],
    inputs: Vec<(&str, Tensor)>,
) -> Result<Tensor, atl_lang::diag::Diagnostic> {
    let sizes: BTreeMap<String, i64> = sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let inputs: BTreeMap<String, Tensor> = inputs
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    eval_def(
        &checked.program,
        "spmv",
        &sizes,
        &inputs,
        &EvalOptions::default(),
    )
}

#[test]
fn compressed_rows_times_a_vector_is_the_dense_product() {
    let checked = checked(SPMV);
    let mut rng = Rng(0x5eed);
    for case in 0..40 {
        let (n, m) = (1 + rng.below(6) as usize, 1 + rng.below(6) as usize);
        let a = random_matrix(&mut rng, n, m);
        let (pos, crd, vals) = compress_rows(&a);
        let nnz = vals.len();
        if nnz == 0 {
            // nnz is a size (>= 1): store one explicit zero instead.
            continue;
        }
        let v: Vec<f64> = (0..m).map(|j| (j as f64) * 1.5 - 2.0).collect();
        let expected: Vec<f64> = a
            .iter()
            .map(|row| row.iter().zip(&v).map(|(x, y)| x * y).sum())
            .collect();
        let got = run(
            &checked,
            &[("n", n as i64), ("m", m as i64), ("nnz", nnz as i64)],
            vec![
                ("pos", vector(&pos)),
                ("crd", vector(&crd)),
                ("vals", vector(&vals)),
                ("v", vector(&v)),
            ],
        )
        .unwrap_or_else(|d| panic!("case {case}: {d:?}"));
        assert_eq!(got.data, expected, "case {case}: {a:?}");
    }
}

#[test]
fn arrays_that_break_their_declaration_are_refused() {
    let checked = checked(SPMV);
    let sizes = [("n", 2), ("m", 3), ("nnz", 3)];
    let good = |pos: &[f64], crd: &[f64]| {
        vec![
            ("pos", vector(pos)),
            ("crd", vector(crd)),
            ("vals", vector(&[1.0, 2.0, 3.0])),
            ("v", vector(&[1.0, 10.0, 100.0])),
        ]
    };
    let ok = run(&checked, &sizes, good(&[0.0, 2.0, 3.0], &[0.0, 2.0, 1.0])).expect("valid");
    assert_eq!(ok.data, vec![201.0, 30.0]);
    for (pos, crd, what) in [
        (&[0.0, 2.0, 3.0][..], &[0.0, 3.0, 1.0][..], "outside 0..3"),
        (&[0.0, 2.0, 4.0][..], &[0.0, 2.0, 1.0][..], "outside 0..4"),
        (
            &[0.0, 2.0, 1.0][..],
            &[0.0, 2.0, 1.0][..],
            "less than element 1",
        ),
        (
            &[0.0, 1.5, 3.0][..],
            &[0.0, 2.0, 1.0][..],
            "not a 32-bit integer",
        ),
        (&[0.0, 2.0, 3.0][..], &[0.0, -1.0, 1.0][..], "outside 0..3"),
        (
            &[0.0, 2.0, 3.0][..],
            &[0.0, 4e9, 1.0][..],
            "not a 32-bit integer",
        ),
    ] {
        let err = run(&checked, &sizes, good(pos, crd)).expect_err(what);
        assert_eq!(err.code, "E0610", "{what}: {err:?}");
        assert!(err.message.contains(what), "{what}: {}", err.message);
    }
    // A missing index array is a missing input.
    let mut inputs = good(&[0.0, 2.0, 3.0], &[0.0, 2.0, 1.0]);
    inputs.retain(|(name, _)| *name != "crd");
    let err = run(&checked, &sizes, inputs).expect_err("crd missing");
    assert_eq!(err.code, "E0604");
    // An array of the wrong length is a shape error.
    let err = run(&checked, &sizes, good(&[0.0, 2.0], &[0.0, 2.0, 1.0])).expect_err("short");
    assert_eq!(err.code, "E0605");
}

#[test]
fn an_unsorted_array_may_describe_rows_in_any_order() {
    // Without `sorted`, rows may be stored in any order and positions skipped.
    let source = SPMV.replace(" sorted", "");
    let checked = checked(&source);
    let got = run(
        &checked,
        &[("n", 2), ("m", 3), ("nnz", 4)],
        vec![
            // Row 0 is stored at 2..4, row 1 at 0..1; position 1 belongs to no row.
            ("pos", vector(&[2.0, 4.0, 0.0])),
            ("crd", vector(&[1.0, 2.0, 0.0, 2.0])),
            ("vals", vector(&[3.0, 7.0, 1.0, 2.0])),
            ("v", vector(&[1.0, 10.0, 100.0])),
        ],
    );
    // pos[1] = 4 > pos[2] = 0: row 1 is the empty range 4..0.
    assert_eq!(got.expect("valid").data, vec![201.0, 0.0]);
}

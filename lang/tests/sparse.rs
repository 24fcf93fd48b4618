//! Sparse matrices (`sparse A : [n, m] as FORMAT(…)`): for every format, the
//! definition of `A` evaluated on the arrays `atl_lang::sparse::compress` makes of a
//! random matrix is that matrix (`decompress (compress A) = A`, the law that lets a file
//! given for `A` serve the specification and every derived kernel), entries stored
//! twice add up as in scipy, the arrays satisfy the declarations the format asks for,
//! and malformed declarations are E0314 with the declaration to write.

use std::collections::BTreeMap;

use atl_lang::index::IndexExpr;
use atl_lang::interp::{EvalOptions, eval_def};
use atl_lang::sparse::{SPARSE_FORMATS, SparseFormat, compress, declarations};
use atl_lang::{Tensor, check_source};

/// A small deterministic generator (no dependency): xorshift.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// The program declaring `A` in `format` with the arrays the format asks for (the
/// declarations `atl_lang::sparse::declarations` suggests in its help).
fn program(format: &SparseFormat) -> String {
    let arrays: Vec<String> = format.arrays.iter().map(|(r, _)| r.to_string()).collect();
    let decls = declarations(
        format,
        &arrays,
        &IndexExpr::var("n"),
        &IndexExpr::var("m"),
        "nnz",
    );
    format!(
        "size n, m, nnz\n{}\nsparse A : [n, m] as {}({})\n",
        decls.join("\n"),
        format.name,
        arrays.join(", ")
    )
}

/// Evaluates `A` on `arrays` for an `n x m` matrix.
fn decompressed(format: &SparseFormat, n: usize, m: usize, arrays: &[Vec<f64>]) -> Vec<f64> {
    let source = program(format);
    let (checked, diags) = check_source(&source);
    let checked = checked.unwrap_or_else(|| panic!("{source}\n{diags:?}"));
    let sizes = BTreeMap::from([
        ("n".to_string(), n as i64),
        ("m".to_string(), m as i64),
        ("nnz".to_string(), arrays[2].len() as i64),
    ]);
    let inputs: BTreeMap<String, Tensor> = format
        .arrays
        .iter()
        .zip(arrays)
        .map(|((name, _), data)| {
            (
                name.to_string(),
                Tensor::new(vec![data.len()], data.clone()).expect("a vector"),
            )
        })
        .collect();
    eval_def(
        &checked.program,
        "A",
        &sizes,
        &inputs,
        &EvalOptions::default(),
    )
    .unwrap_or_else(|d| panic!("{}: {d:?}", format.name))
    .data
}

#[test]
fn the_definition_of_a_compressed_random_matrix_is_the_matrix() {
    let mut rng = Rng(0x5eed);
    for format in SPARSE_FORMATS {
        for (n, m) in [(1, 1), (3, 4), (5, 2), (6, 7)] {
            for _ in 0..10 {
                let mut dense = vec![0.0; n * m];
                let mut entries = Vec::new();
                for (k, x) in dense.iter_mut().enumerate() {
                    if rng.below(3) == 0 {
                        *x = rng.below(17) as f64 - 8.0;
                        entries.push((k / m, k % m, *x));
                    }
                }
                // Sizes are at least 1, so a matrix stores at least one value.
                if entries.is_empty() {
                    dense[n * m - 1] = 1.0;
                    entries.push((n - 1, m - 1, 1.0));
                }
                // The file's order is not the format's.
                entries.reverse();
                let arrays = compress(format, n, m, &entries).expect("compresses");
                assert_eq!(
                    decompressed(format, n, m, &arrays),
                    dense,
                    "{} of {n} x {m}: {arrays:?}",
                    format.name
                );
            }
        }
    }
}

#[test]
fn csr_arrays_are_scipys_and_duplicates_add_up() {
    let csr = atl_lang::sparse::format_named("csr").expect("csr");
    // [[0 2 0] [0 0 0] [1 0 3]], with (2, 2) stored as 1 + 2 and a stored zero.
    let entries = [
        (2, 2, 1.0),
        (0, 1, 2.0),
        (2, 0, 1.0),
        (2, 2, 2.0),
        (1, 1, 0.0),
    ];
    let arrays = compress(csr, 3, 3, &entries).expect("compresses");
    assert_eq!(
        arrays,
        vec![
            vec![0.0, 1.0, 1.0, 3.0],
            vec![1.0, 0.0, 2.0],
            vec![2.0, 1.0, 3.0]
        ]
    );
    let coo = atl_lang::sparse::format_named("coo").expect("coo");
    let arrays = compress(coo, 3, 3, &entries).expect("compresses");
    assert_eq!(
        arrays,
        vec![
            vec![0.0, 2.0, 2.0],
            vec![1.0, 0.0, 2.0],
            vec![2.0, 1.0, 3.0]
        ]
    );
    let csc = atl_lang::sparse::format_named("csc").expect("csc");
    let arrays = compress(csc, 3, 3, &entries).expect("compresses");
    assert_eq!(
        arrays,
        vec![
            vec![0.0, 1.0, 2.0, 3.0],
            vec![2.0, 0.0, 2.0],
            vec![1.0, 2.0, 3.0]
        ]
    );
    // An entry outside the matrix is refused.
    let err = compress(csr, 3, 3, &[(3, 0, 1.0)]).expect_err("refused");
    assert!(err.contains("outside the 3 x 3 matrix"), "{err}");
    // Entries stored twice in the arrays add up in the definition too.
    assert_eq!(
        decompressed(csr, 1, 2, &[vec![0.0, 2.0], vec![1.0, 1.0], vec![2.0, 5.0]]),
        vec![0.0, 7.0]
    );
}

fn error_of(source: &str) -> atl_lang::diag::Diagnostic {
    let (checked, diags) = check_source(source);
    assert!(checked.is_none(), "accepted: {source}");
    diags
        .into_iter()
        .find(|d| d.code == "E0314")
        .unwrap_or_else(|| panic!("no E0314 for {source}"))
}

#[test]
fn malformed_sparse_declarations_are_refused_with_the_declaration_to_write() {
    let arrays = "size n, m, nnz\ninput pos : int[n + 1] in 0..nnz + 1 sorted\n\
                  input crd : int[nnz] in 0..m\ninput vals : [nnz]\n";
    let d = error_of(&format!(
        "{arrays}sparse A : [n, m] as bsr(pos, crd, vals)\n"
    ));
    assert!(d.message.contains("unknown storage format `bsr`"), "{d:?}");
    assert!(
        d.help
            .as_deref()
            .is_some_and(|h| h.contains("`csr`, `csc`, `coo`")),
        "{d:?}"
    );
    let d = error_of(&format!("{arrays}sparse A : [n] as csr(pos, crd, vals)\n"));
    assert!(d.message.contains("two dimensions, not 1"), "{d:?}");
    let d = error_of(&format!("{arrays}sparse A : [n, m] as csr(pos, crd)\n"));
    assert!(d.message.contains("in 3 arrays, and 2 are given"), "{d:?}");
    // `vals` in the place of an index array, an undeclared array, an array below.
    let d = error_of(&format!(
        "{arrays}sparse A : [n, m] as csr(pos, vals, vals)\n"
    ));
    assert!(d.message.contains("`vals` is not an index array"), "{d:?}");
    assert_eq!(
        d.help.as_deref(),
        Some("declare it above this line as `input vals : int[nnz] in 0..m`")
    );
    let d = error_of(&format!(
        "{arrays}sparse A : [n, m] as csr(pos, idx, vals)\n"
    ));
    assert!(d.message.contains("`idx` is not declared"), "{d:?}");
    let d = error_of(
        "size n, m, nnz\ninput pos : int[n + 1] in 0..nnz + 1 sorted\n\
         input crd : int[nnz] in 0..m\nsparse A : [n, m] as csr(pos, crd, vals)\n\
         input vals : [nnz]\n",
    );
    assert!(
        d.message.contains("`vals` is not an input declared above"),
        "{d:?}"
    );
}

#[test]
fn sparse_declarations_are_formatted_as_written() {
    let source = "size n, m, nnz\ninput pos : int[n + 1] in 0..nnz + 1 sorted\n\
                  input crd : int[nnz] in 0..m\ninput vals : [nnz]\n\
                  sparse   A:[n,m]   as csr( pos,crd , vals )\n";
    let formatted = atl_lang::pretty::format_source(source, Default::default()).expect("formats");
    assert!(
        formatted.contains("\nsparse A : [n, m] as csr(pos, crd, vals)\n"),
        "{formatted}"
    );
    // A binder may still be called `sparse`: it starts an item only at a line's start.
    let (checked, diags) = check_source(&format!(
        "{source}def s = gen sparse < n: sum j < m: A[sparse, j]\n"
    ));
    assert!(checked.is_some(), "{diags:?}");
}

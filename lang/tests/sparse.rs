//! Sparse tensors (`sparse A : [n, m] as FORMAT(…)`): for every format, the
//! definition of `A` evaluated on the arrays `atl_lang::sparse::compress` makes of a
//! random tensor is that tensor (`decompress (compress A) = A`, the law that lets a file
//! given for `A` serve the specification and every derived kernel), entries stored
//! twice add up as in scipy, the arrays satisfy the declarations the format asks for,
//! and malformed declarations are E0314 with the declaration to write.

use std::collections::BTreeMap;

use atl_lang::formats::Level;
use atl_lang::index::IndexExpr;
use atl_lang::interp::{EvalOptions, eval_def};
use atl_lang::sparse::{ArrayRole, SPARSE_FORMATS, SparseFormat, Storage, compress, declarations};
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

/// The extents' size names of a tensor of `rank` dimensions.
fn dim_names(rank: usize) -> Vec<&'static str> {
    ["n", "m", "l"][..rank].to_vec()
}

/// The size names of the stored counts of `format`'s compressed levels (the last is
/// the number of values; COO has that one only).
fn stored_names(format: &SparseFormat) -> Vec<String> {
    let compressed = match format.storage {
        Storage::Levels { levels, .. } => {
            levels.iter().filter(|l| **l == Level::Compressed).count()
        }
        Storage::Coordinates | Storage::Blocks => 1,
    };
    (1..=compressed)
        .map(|k| {
            if k == compressed {
                "nnz".to_string()
            } else {
                format!("nnz{k}")
            }
        })
        .collect()
}

/// The block extents a blocked format is tested with: not square, and dividing
/// neither extent of most shapes (edge blocks hold zeros past the matrix).
const BLOCK: [usize; 2] = [2, 3];

fn block_of(format: &SparseFormat) -> &'static [usize] {
    if format.storage == Storage::Blocks {
        &BLOCK
    } else {
        &[]
    }
}

/// The program declaring `A` in `format` with the arrays the format asks for (the
/// declarations `atl_lang::sparse::declarations` suggests in its help).
fn program(format: &SparseFormat) -> String {
    let arrays: Vec<String> = format.arrays.iter().map(|(r, _)| r.to_string()).collect();
    let dims = dim_names(format.rank());
    let stored = stored_names(format);
    let decls = declarations(
        format,
        &arrays,
        &dims.iter().map(|d| IndexExpr::var(*d)).collect::<Vec<_>>(),
        &stored
            .iter()
            .map(|d| IndexExpr::var(d.clone()))
            .collect::<Vec<_>>(),
        &block_of(format)
            .iter()
            .map(|&b| b as i64)
            .collect::<Vec<_>>(),
    );
    let mut sizes: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
    sizes.extend(stored);
    format!(
        "size {}\n{}\nsparse A : [{}] as {}({})\n",
        sizes.join(", "),
        decls.join("\n"),
        dims.join(", "),
        format.name,
        arrays.join(", ")
    )
}

/// Evaluates `A` on `arrays` for a tensor of extents `shape`.
fn decompressed(format: &SparseFormat, shape: &[usize], arrays: &[Vec<f64>]) -> Vec<f64> {
    let source = program(format);
    let (checked, diags) = check_source(&source);
    let checked = checked.unwrap_or_else(|| panic!("{source}\n{diags:?}"));
    let mut sizes: BTreeMap<String, i64> = dim_names(shape.len())
        .iter()
        .zip(shape)
        .map(|(d, n)| (d.to_string(), *n as i64))
        .collect();
    // Each stored count is the length of its level's `crd` (every second index
    // array; COO's the values').
    let index_arrays = &arrays[..arrays.len() - 1];
    let counts: Vec<usize> = match format.storage {
        Storage::Levels { .. } => index_arrays
            .iter()
            .skip(1)
            .step_by(2)
            .map(Vec::len)
            .collect(),
        Storage::Coordinates => vec![arrays[arrays.len() - 1].len()],
        Storage::Blocks => vec![arrays[arrays.len() - 1].len() / (BLOCK[0] * BLOCK[1])],
    };
    for (name, count) in stored_names(format).into_iter().zip(counts) {
        sizes.insert(name, count as i64);
    }
    let inputs: BTreeMap<String, Tensor> = format
        .arrays
        .iter()
        .zip(arrays)
        .enumerate()
        .map(|(k, ((name, _), data))| {
            let mut shape = vec![data.len()];
            if k + 1 == arrays.len() && !block_of(format).is_empty() {
                shape = vec![data.len() / (BLOCK[0] * BLOCK[1]), BLOCK[0], BLOCK[1]];
            }
            (
                name.to_string(),
                Tensor::new(shape, data.clone()).expect("a tensor of its shape"),
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
fn the_definition_of_a_compressed_random_tensor_is_the_tensor() {
    let mut rng = Rng(0x5eed);
    for format in SPARSE_FORMATS {
        let shapes: &[&[usize]] = match format.rank() {
            2 => &[&[1, 1], &[3, 4], &[5, 2], &[6, 7]],
            _ => &[&[1, 1, 1], &[2, 3, 4], &[4, 1, 3]],
        };
        for shape in shapes {
            for _ in 0..10 {
                let len: usize = shape.iter().product();
                let mut dense = vec![0.0; len];
                let mut entries = Vec::new();
                for (k, x) in dense.iter_mut().enumerate() {
                    // Sparse enough that some rows (slices) store nothing.
                    if rng.below(4) == 0 {
                        *x = rng.below(17) as f64 - 8.0;
                        let mut c = vec![0; shape.len()];
                        let mut rest = k;
                        for d in (0..shape.len()).rev() {
                            c[d] = rest % shape[d];
                            rest /= shape[d];
                        }
                        entries.push((c, *x));
                    }
                }
                // Sizes are at least 1, so a tensor stores at least one value.
                if entries.iter().all(|(_, x)| *x == 0.0) {
                    dense[len - 1] = 1.0;
                    entries.push((shape.iter().map(|d| d - 1).collect(), 1.0));
                }
                // The file's order is not the format's.
                entries.reverse();
                let arrays =
                    compress(format, shape, block_of(format), &entries).expect("compresses");
                assert_eq!(
                    decompressed(format, shape, &arrays),
                    dense,
                    "{} of {shape:?}: {arrays:?}",
                    format.name
                );
            }
        }
    }
}

#[test]
fn the_table_lists_two_arrays_per_compressed_level_and_the_values_last() {
    for format in SPARSE_FORMATS {
        let (last, index) = format.arrays.split_last().expect("arrays");
        assert_eq!(last.1, ArrayRole::Values, "{}", format.name);
        assert!(
            index.iter().all(|(_, r)| *r == ArrayRole::Index),
            "{}",
            format.name
        );
        let want = match format.storage {
            Storage::Levels { levels, modes } => {
                let mut sorted = modes.to_vec();
                sorted.sort();
                assert_eq!(
                    sorted,
                    (0..levels.len()).collect::<Vec<_>>(),
                    "{}",
                    format.name
                );
                2 * levels.iter().filter(|l| **l == Level::Compressed).count()
            }
            Storage::Coordinates => format.rank(),
            Storage::Blocks => 2,
        };
        assert_eq!(index.len(), want, "{}", format.name);
    }
}

#[test]
fn csr_arrays_are_scipys_and_duplicates_add_up() {
    let csr = atl_lang::sparse::format_named("csr").expect("csr");
    // [[0 2 0] [0 0 0] [1 0 3]], with (2, 2) stored as 1 + 2 and a stored zero.
    let entries: Vec<(Vec<usize>, f64)> = [
        (2, 2, 1.0),
        (0, 1, 2.0),
        (2, 0, 1.0),
        (2, 2, 2.0),
        (1, 1, 0.0),
    ]
    .iter()
    .map(|&(r, c, v)| (vec![r, c], v))
    .collect();
    let arrays = compress(csr, &[3, 3], &[], &entries).expect("compresses");
    assert_eq!(
        arrays,
        vec![
            vec![0.0, 1.0, 1.0, 3.0],
            vec![1.0, 0.0, 2.0],
            vec![2.0, 1.0, 3.0]
        ]
    );
    let coo = atl_lang::sparse::format_named("coo").expect("coo");
    let arrays = compress(coo, &[3, 3], &[], &entries).expect("compresses");
    assert_eq!(
        arrays,
        vec![
            vec![0.0, 2.0, 2.0],
            vec![1.0, 0.0, 2.0],
            vec![2.0, 1.0, 3.0]
        ]
    );
    let csc = atl_lang::sparse::format_named("csc").expect("csc");
    let arrays = compress(csc, &[3, 3], &[], &entries).expect("compresses");
    assert_eq!(
        arrays,
        vec![
            vec![0.0, 1.0, 2.0, 3.0],
            vec![2.0, 0.0, 2.0],
            vec![1.0, 2.0, 3.0]
        ]
    );
    // An entry outside the matrix is refused.
    let err = compress(csr, &[3, 3], &[], &[(vec![3, 0], 1.0)]).expect_err("refused");
    assert!(err.contains("outside the 3 x 3 tensor"), "{err}");
    // DCSR stores the rows that hold a value only: rows 0 and 2.
    let dcsr = atl_lang::sparse::format_named("dcsr").expect("dcsr");
    let arrays = compress(dcsr, &[3, 3], &[], &entries).expect("compresses");
    assert_eq!(
        arrays,
        vec![
            vec![0.0, 2.0],
            vec![0.0, 2.0],
            vec![0.0, 1.0, 3.0],
            vec![1.0, 0.0, 2.0],
            vec![2.0, 1.0, 3.0]
        ]
    );
    // Entries stored twice in the arrays add up in the definition too.
    assert_eq!(
        decompressed(
            csr,
            &[1, 2],
            &[vec![0.0, 2.0], vec![1.0, 1.0], vec![2.0, 5.0]]
        ),
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
            .is_some_and(|h| h.contains("`csr`, `csc`, `dcsr`, `dcsc`, `csf`, `bcsr`, `coo`")),
        "{d:?}"
    );
    // BCSR's values are blocks of constant extents; a vector or a block of a size's
    // extent is refused with the declaration to write.
    for vals in ["[nnz]", "[nnz, m, 2]"] {
        let d = error_of(&format!(
            "{}sparse A : [n, m] as bcsr(pos, crd, vals)\n",
            arrays.replace("[nnz]\n", &format!("{vals}\n"))
        ));
        assert!(d.message.contains("R and C are constants"), "{vals}: {d:?}");
        assert!(
            d.help
                .as_deref()
                .is_some_and(|h| h.contains("input vals : [nnz, 4, 4]")),
            "{vals}: {d:?}"
        );
    }
    let d = error_of(&format!("{arrays}sparse A : [n] as csr(pos, crd, vals)\n"));
    assert!(d.message.contains("which has 2 dimensions, not 1"), "{d:?}");
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

/// A tensor with no non-zero value is stored as one explicit zero at the origin (a
/// size is at least 1, so no array may be empty), and its definition is all zeros.
#[test]
fn an_all_zero_tensor_is_one_stored_zero() {
    for format in SPARSE_FORMATS {
        let shape: &[usize] = if format.rank() == 2 {
            &[3, 5]
        } else {
            &[2, 3, 4]
        };
        let entries = [
            (vec![1; shape.len()], 0.0),
            (vec![0; shape.len()], 2.0),
            (vec![0; shape.len()], -2.0),
        ];
        let arrays = compress(format, shape, block_of(format), &entries).expect("compresses");
        let vals = arrays.last().expect("values");
        let block: usize = block_of(format).iter().product::<usize>().max(1);
        assert_eq!(
            vals.len(),
            block,
            "{}: one stored value (block): {arrays:?}",
            format.name
        );
        assert!(
            vals.iter().all(|v| *v == 0.0),
            "{}: {arrays:?}",
            format.name
        );
        assert!(
            arrays.iter().all(|a| !a.is_empty()),
            "{}: {arrays:?}",
            format.name
        );
        let len: usize = shape.iter().product();
        assert_eq!(
            decompressed(format, shape, &arrays),
            vec![0.0; len],
            "{}",
            format.name
        );
    }
}

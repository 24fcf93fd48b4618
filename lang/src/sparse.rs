//! Sparse matrices named by their storage (`sparse A : [n, m] as csr(pos, crd, vals)`,
//! thesis ch. 7): the one table of the storage formats a program may name, the dense
//! matrix each format's arrays encode as an ATL expression (the thesis's
//! `decompress`, which becomes the definition of `A`), and the other direction, the
//! arrays of a matrix given by its entries (`compress`, which `atl eval`/`run`/`bench`
//! apply to a file given for `A`).
//!
//! A program's specification reads the dense `A`; a derivation starts with `unfold A`
//! and rewrites the reads of `A[i, j]` into reads of the arrays. Its certificate
//! records `A`'s definition, so the equality it claims is the specification at the
//! matrix the arrays encode. Files are converted by [`compress`], and a kernel then
//! computes the specification at `decompress (compress A)`, which is `A` (tested in
//! `lang/tests/sparse.rs` by evaluating the definition on compressed random
//! matrices): that law is what makes one command line serve the specification and
//! every derived kernel.

use crate::formats::{FormatError, Level, LevelIndex, from_entries};
use crate::index::{CmpOp, IndexExpr, Pred};
use crate::ir::{Expr, ExprKind};
use crate::span::Span;

/// What an array of a storage format holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrayRole {
    /// An index array (`input pos : int[…] in lo..hi`).
    Index,
    /// The stored values (`input vals : [nnz]`).
    Values,
}

/// One storage format of a sparse matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SparseFormat {
    pub name: &'static str,
    /// The arrays, in the order the `as NAME(…)` list gives them: a conventional name
    /// (used in messages) and what it holds.
    pub arrays: &'static [(&'static str, ArrayRole)],
    /// One line saying how the arrays encode the matrix.
    pub help: &'static str,
}

/// Every storage format `sparse … as FORMAT(…)` accepts.
pub const SPARSE_FORMATS: &[SparseFormat] = &[
    SparseFormat {
        name: "csr",
        arrays: &[
            ("pos", ArrayRole::Index),
            ("crd", ArrayRole::Index),
            ("vals", ArrayRole::Values),
        ],
        help: "compressed rows (scipy's csr_matrix: indptr, indices, data): row i's values are vals[pos[i]..pos[i + 1]], in the columns crd[pos[i]..pos[i + 1]]",
    },
    SparseFormat {
        name: "csc",
        arrays: &[
            ("pos", ArrayRole::Index),
            ("crd", ArrayRole::Index),
            ("vals", ArrayRole::Values),
        ],
        help: "compressed columns (scipy's csc_matrix: indptr, indices, data): column j's values are vals[pos[j]..pos[j + 1]], in the rows crd[pos[j]..pos[j + 1]]",
    },
    SparseFormat {
        name: "coo",
        arrays: &[
            ("row", ArrayRole::Index),
            ("col", ArrayRole::Index),
            ("vals", ArrayRole::Values),
        ],
        help: "coordinates (scipy's coo_matrix: row, col, data): vals[p] is at (row[p], col[p])",
    },
];

/// The format named `name`.
pub fn format_named(name: &str) -> Option<&'static SparseFormat> {
    SPARSE_FORMATS.iter().find(|f| f.name == name)
}

/// The names of every format, for messages: `csr`, `csc`, `coo`.
pub fn format_names() -> String {
    SPARSE_FORMATS
        .iter()
        .map(|f| format!("`{}`", f.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The declarations a format's arrays need for a `rows` x `cols` matrix with `nnz`
/// stored values, as ATL text, in the order of its arrays (the help of a declaration
/// that does not fit).
pub fn declarations(
    format: &SparseFormat,
    arrays: &[String],
    rows: &IndexExpr,
    cols: &IndexExpr,
    nnz: &str,
) -> Vec<String> {
    let plus_one = |e: &IndexExpr| IndexExpr::add(e.clone(), IndexExpr::Const(1));
    let values = format!("input {} : [{nnz}]", arrays[2]);
    match format.name {
        "csr" | "csc" => {
            let (outer, inner) = if format.name == "csr" {
                (rows, cols)
            } else {
                (cols, rows)
            };
            vec![
                format!(
                    "input {} : int[{}] in 0..{nnz} + 1 sorted",
                    arrays[0],
                    plus_one(outer)
                ),
                format!("input {} : int[{nnz}] in 0..{inner}", arrays[1]),
                values,
            ]
        }
        _ => vec![
            format!("input {} : int[{nnz}] in 0..{rows}", arrays[0]),
            format!("input {} : int[{nnz}] in 0..{cols}", arrays[1]),
            values,
        ],
    }
}

/// The dense `rows` x `cols` matrix that `arrays` encode in `format` (the definition
/// of the sparse matrix): `gen i < rows, j < cols:` the sum of the stored values at
/// `(i, j)` (an entry stored twice adds up, as scipy adds it). `nnz` is the extent of
/// the values (COO sums over all of them); `fresh` gives binder names that no
/// declaration takes.
pub fn decompression(
    format: &SparseFormat,
    arrays: &[String],
    rows: &IndexExpr,
    cols: &IndexExpr,
    nnz: &IndexExpr,
    fresh: &mut dyn FnMut(&str) -> String,
    span: Span,
) -> Expr {
    let (i, j, p) = (fresh("i"), fresh("j"), fresh("p"));
    let node = |kind| Expr::new(kind, span);
    let var = |v: &String| IndexExpr::var(v.clone());
    let load = |a: &String, at: IndexExpr| IndexExpr::Load(a.clone(), Box::new(at));
    let value = node(ExprKind::Access {
        tensor: Box::new(node(ExprKind::Input(arrays[2].clone()))),
        index: var(&p),
    });
    let (lo, hi, pred) = match format.name {
        "csr" | "csc" => {
            let (outer, inner) = if format.name == "csr" {
                (&i, &j)
            } else {
                (&j, &i)
            };
            (
                load(&arrays[0], var(outer)),
                load(&arrays[0], IndexExpr::add(var(outer), IndexExpr::Const(1))),
                Pred::cmp(CmpOp::Eq, load(&arrays[1], var(&p)), var(inner)),
            )
        }
        _ => (
            IndexExpr::Const(0),
            nnz.clone(),
            Pred::and(
                Pred::cmp(CmpOp::Eq, load(&arrays[0], var(&p)), var(&i)),
                Pred::cmp(CmpOp::Eq, load(&arrays[1], var(&p)), var(&j)),
            ),
        ),
    };
    let sum = node(ExprKind::Sum {
        var: p,
        lo,
        hi,
        body: Box::new(node(ExprKind::Guard {
            pred,
            body: Box::new(value),
        })),
    });
    let generator = |var: String, hi: &IndexExpr, body: Expr| {
        node(ExprKind::Gen {
            var,
            lo: IndexExpr::Const(0),
            hi: hi.clone(),
            body: Box::new(body),
        })
    };
    generator(i, rows, generator(j, cols, sum))
}

/// A matrix's arrays in a format, in the format's order: integer arrays hold their
/// integers (as `f64`, the interpreter's element type).
pub type Arrays = Vec<Vec<f64>>;

/// The arrays of the `rows` x `cols` matrix whose stored entries are `entries`
/// (`(row, column, value)`, any order; duplicates add up and zero sums are not
/// stored, as [`from_entries`] does), in `format`: sorted rows (columns for CSC) with
/// increasing coordinates, so `decompression` of them is the matrix. Fails when an
/// entry is outside the matrix.
pub fn compress(
    format: &SparseFormat,
    rows: usize,
    cols: usize,
    entries: &[(usize, usize, f64)],
) -> Result<Arrays, String> {
    let transposed = format.name == "csc";
    let (shape, entries): ([usize; 2], Vec<_>) = if transposed {
        (
            [cols, rows],
            entries.iter().map(|&(r, c, v)| (vec![c, r], v)).collect(),
        )
    } else {
        (
            [rows, cols],
            entries.iter().map(|&(r, c, v)| (vec![r, c], v)).collect(),
        )
    };
    let c = from_entries(&[Level::Dense, Level::Compressed], &shape, &entries).map_err(
        |e| match e {
            FormatError::OutOfRange { entry } => {
                format!("entry {entry} is outside the {rows} x {cols} matrix")
            }
            FormatError::RankMismatch { .. } => "not a matrix".to_string(),
        },
    )?;
    let LevelIndex::Compressed { pos, crd, .. } = &c.levels[1] else {
        return Err("the compressed level is missing".into());
    };
    let ints = |v: &[usize]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
    Ok(match format.name {
        "coo" => {
            let mut row = Vec::with_capacity(crd.len());
            for (r, w) in pos.windows(2).enumerate() {
                row.extend(std::iter::repeat_n(r as f64, w[1] - w[0]));
            }
            vec![row, ints(crd), c.vals]
        }
        _ => vec![ints(pos), ints(crd), c.vals],
    })
}

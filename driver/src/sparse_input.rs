//! A file given for a sparse matrix (`--input A=m.npz` where the program says `sparse A
//! : [n, m] as csr(pos, crd, vals)`): the matrix is read (a `.mtx` or `.npz` sparse
//! file, or a dense `.npy`), stored in the declaration's format
//! (`atl_lang::sparse::compress`), and given to the arrays. So one command line serves
//! the specification, which reads `A` (defined by its arrays), and every kernel
//! derived from it, which reads the arrays. Sizes the file fixes (the matrix's extents
//! and the number of stored values, when the declarations name them by a size alone)
//! are taken from it unless `--sizes` gives them, in which case they must agree.

use std::collections::BTreeMap;
use std::path::Path;

use atl_lang::index::IndexExpr;
use atl_lang::interp::Tensor;
use atl_lang::ir::{Program, SparseDecl};

use crate::npy;
use crate::sparse_file;

/// Reads the matrix in `path` and returns its arrays in `decl`'s format, in the
/// format's order, completing `sizes` with the sizes the file fixes. An error is the
/// message (the caller names the input and the file).
pub fn convert(
    program: &Program,
    decl: &SparseDecl,
    path: &Path,
    sizes: &mut BTreeMap<String, i64>,
) -> Result<Vec<Tensor>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read it: {e}"))?;
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let matrix = if extension == "npy" {
        let a = npy::parse(&bytes)?;
        let [rows, cols] = a.shape[..] else {
            return Err(format!(
                "it holds an array of {} dimension(s), and a sparse matrix has two",
                a.shape.len()
            ));
        };
        let entries = a
            .data
            .iter()
            .enumerate()
            .filter(|(_, v)| **v != 0.0)
            .map(|(k, v)| (k / cols.max(1), k % cols.max(1), *v))
            .collect();
        sparse_file::SparseMatrix {
            rows,
            cols,
            entries,
        }
    } else {
        sparse_file::read(extension, &bytes)?
    };
    for (extent, actual, what) in [
        (&decl.shape[0], matrix.rows, "rows"),
        (&decl.shape[1], matrix.cols, "columns"),
    ] {
        fix_size(extent, actual, sizes).map_err(|declared| {
            format!(
                "the file holds a {} x {} matrix, and `{}` has {declared} {what} at these sizes",
                matrix.rows, matrix.cols, decl.name
            )
        })?;
    }
    let arrays =
        atl_lang::sparse::compress(decl.format, matrix.rows, matrix.cols, &matrix.entries)?;
    // The number of stored values: the extent of the values array.
    let stored = arrays.last().map_or(0, Vec::len);
    let values = decl.arrays.last().and_then(|v| program.input(v));
    if let Some(extent) = values.and_then(|v| v.shape.first()) {
        fix_size(extent, stored, sizes).map_err(|declared| {
            format!(
                "the matrix has {stored} stored value(s) in {}, and `{}` has {declared} at these sizes",
                decl.format.name,
                decl.arrays.last().map_or("", String::as_str)
            )
        })?;
    }
    Ok(arrays
        .into_iter()
        .map(|data| Tensor {
            shape: vec![data.len()],
            data,
        })
        .collect())
}

/// Makes `extent` equal `actual`: a lone size not yet given is set to it; otherwise
/// the extent at `sizes` must be `actual` (the error is the extent's value, or a word
/// saying it is unknown).
fn fix_size(
    extent: &IndexExpr,
    actual: usize,
    sizes: &mut BTreeMap<String, i64>,
) -> Result<(), String> {
    if let IndexExpr::Var(name) = extent
        && !sizes.contains_key(name)
    {
        sizes.insert(name.clone(), actual as i64);
        return Ok(());
    }
    match extent.eval(&|n| sizes.get(n).copied()) {
        Ok(v) if v == actual as i64 => Ok(()),
        Ok(v) => Err(v.to_string()),
        Err(_) => Err(format!("`{extent}` (not known: give `--sizes`)")),
    }
}

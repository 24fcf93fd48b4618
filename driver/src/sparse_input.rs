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
    let (shape, entries): (Vec<usize>, Vec<(Vec<usize>, f64)>) = if extension == "npy" {
        let a = npy::parse(&bytes)?;
        let mut entries = Vec::new();
        for (k, v) in a.data.iter().enumerate().filter(|(_, v)| **v != 0.0) {
            // Row-major: the last coordinate varies fastest.
            let mut rest = k;
            let mut c = vec![0; a.shape.len()];
            for (d, extent) in a.shape.iter().enumerate().rev() {
                c[d] = rest % extent.max(&1);
                rest /= extent.max(&1);
            }
            entries.push((c, *v));
        }
        (a.shape.clone(), entries)
    } else {
        let m = sparse_file::read(extension, &bytes)?;
        let entries = m.entries.iter().map(|&(r, c, v)| (vec![r, c], v)).collect();
        (vec![m.rows, m.cols], entries)
    };
    let extents = |v: &[usize]| {
        v.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(" x ")
    };
    if shape.len() != decl.shape.len() {
        return Err(format!(
            "it holds a tensor of {} dimension(s) ({}), and `{}` has {}",
            shape.len(),
            extents(&shape),
            decl.name,
            decl.shape.len()
        ));
    }
    for (d, (extent, actual)) in decl.shape.iter().zip(&shape).enumerate() {
        fix_size(extent, *actual, sizes).map_err(|declared| {
            format!(
                "the file holds a {} tensor, and dimension {d} of `{}` has the extent {declared} at these sizes",
                extents(&shape),
                decl.name
            )
        })?;
    }
    let arrays = atl_lang::sparse::compress(decl.format, &shape, &decl.block, &entries)?;
    // Each array's shape: a vector, but the blocks of a blocked format, `[nb, R, C]`.
    let block: usize = decl.block.iter().product();
    let shape_of = |k: usize, data: &Vec<f64>| {
        if k + 1 == arrays.len() && !decl.block.is_empty() {
            let mut s = vec![data.len() / block.max(1)];
            s.extend(&decl.block);
            s
        } else {
            vec![data.len()]
        }
    };
    // The sizes the arrays fix (the number of stored values, and of stored rows of a
    // doubly compressed format): extents that are a size alone first, then the
    // others are checked at the sizes known.
    let declared: Vec<(&String, Option<&IndexExpr>, usize)> = decl
        .arrays
        .iter()
        .zip(&arrays)
        .enumerate()
        .map(|(k, (a, data))| {
            let extent = program.input(a).and_then(|v| v.shape.first());
            (a, extent, shape_of(k, data)[0])
        })
        .collect();
    let lone = |e: &IndexExpr| matches!(e, IndexExpr::Var(_));
    for first in [true, false] {
        for (array, extent, length) in &declared {
            let Some(extent) = extent.filter(|e| lone(e) == first) else {
                continue;
            };
            fix_size(extent, *length, sizes).map_err(|declared| {
                format!(
                    "stored in {}, its array `{array}` holds {length} element(s), and its declaration gives it {declared} at these sizes",
                    decl.format.name
                )
            })?;
        }
    }
    Ok(arrays
        .iter()
        .enumerate()
        .map(|(k, data)| Tensor {
            shape: shape_of(k, data),
            data: data.clone(),
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

//! Sparse tensors named by their storage (`sparse A : [n, m] as csr(pos, crd, vals)`,
//! thesis ch. 7): the one table of the storage formats a program may name (CSR, CSC,
//! their doubly compressed variants, CSF for 3-dimensional tensors: lists of the level
//! formats of `crate::formats`; and COO), the dense tensor each format's arrays encode
//! as an ATL expression (the thesis's `decompress`, which becomes the definition of
//! `A`), and the other direction, the arrays of a tensor given by its entries
//! (`compress`, which `atl eval`/`run`/`bench` apply to a file given for `A`).
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
use crate::index::{CmpOp, IndexExpr, IndexOp, Pred};
use crate::ir::{Expr, ExprKind};
use crate::poly::normalize;
use crate::span::Span;

/// What an array of a storage format holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrayRole {
    /// An index array (`input pos : int[…] in lo..hi`).
    Index,
    /// The stored values (`input vals : [nnz]`).
    Values,
}

/// How a format stores a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    /// A list of level formats (`crate::formats`), outermost first, over the
    /// tensor's dimensions in the order `modes` gives (CSC's is `[1, 0]`: columns
    /// outside). Each `Compressed` level has two arrays, `pos` and `crd`; a `Dense`
    /// level none (its extent is the dimension's). The values come last.
    Levels {
        levels: &'static [Level],
        modes: &'static [usize],
    },
    /// One coordinate array per dimension and the values (COO): stored value `p` is
    /// at `(row[p], col[p])`.
    Coordinates,
    /// Compressed rows of dense `R x C` blocks (BCSR, thesis §7.6): the matrix
    /// `[M, N]` seen as the blocked tensor `[cdiv(M, R), cdiv(N, C), R, C]` stored
    /// with the levels dense, compressed, dense, dense. `R` and `C` are the values'
    /// trailing extents (`vals : [nb, R, C]`, constants): block `p` is `vals[p]`, at
    /// block row `b` for `p` in `pos[b]..pos[b + 1]` and block column `crd[p]`. The
    /// blocks past the matrix's edge hold zeros there.
    Blocks,
}

/// One storage format of a sparse tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SparseFormat {
    pub name: &'static str,
    /// The arrays, in the order the `as NAME(…)` list gives them: a conventional name
    /// (used in messages) and what it holds. For [`Storage::Levels`], the `pos` and
    /// `crd` of each `Compressed` level, outermost first, then the values (a test
    /// checks that they agree).
    pub arrays: &'static [(&'static str, ArrayRole)],
    pub storage: Storage,
    /// One line saying how the arrays encode the tensor.
    pub help: &'static str,
}

impl SparseFormat {
    /// The number of dimensions of the tensors the format stores.
    pub fn rank(&self) -> usize {
        match self.storage {
            Storage::Levels { levels, .. } => levels.len(),
            Storage::Coordinates => self.arrays.len() - 1,
            Storage::Blocks => 2,
        }
    }
}

const POS_CRD_VALS: &[(&str, ArrayRole)] = &[
    ("pos", ArrayRole::Index),
    ("crd", ArrayRole::Index),
    ("vals", ArrayRole::Values),
];

const TWO_COMPRESSED: &[(&str, ArrayRole)] = &[
    ("pos1", ArrayRole::Index),
    ("crd1", ArrayRole::Index),
    ("pos2", ArrayRole::Index),
    ("crd2", ArrayRole::Index),
    ("vals", ArrayRole::Values),
];

/// Every storage format `sparse … as FORMAT(…)` accepts.
pub const SPARSE_FORMATS: &[SparseFormat] = &[
    SparseFormat {
        name: "csr",
        arrays: POS_CRD_VALS,
        storage: Storage::Levels {
            levels: &[Level::Dense, Level::Compressed],
            modes: &[0, 1],
        },
        help: "compressed rows (scipy's csr_matrix: indptr, indices, data): row i's values are vals[pos[i]..pos[i + 1]], in the columns crd[pos[i]..pos[i + 1]]",
    },
    SparseFormat {
        name: "csc",
        arrays: POS_CRD_VALS,
        storage: Storage::Levels {
            levels: &[Level::Dense, Level::Compressed],
            modes: &[1, 0],
        },
        help: "compressed columns (scipy's csc_matrix: indptr, indices, data): column j's values are vals[pos[j]..pos[j + 1]], in the rows crd[pos[j]..pos[j + 1]]",
    },
    SparseFormat {
        name: "dcsr",
        arrays: TWO_COMPRESSED,
        storage: Storage::Levels {
            levels: &[Level::Compressed, Level::Compressed],
            modes: &[0, 1],
        },
        help: "doubly compressed rows: only the rows that store a value, crd1[q] for q in pos1[0]..pos1[1]; stored row q's values are vals[pos2[q]..pos2[q + 1]], in the columns crd2[pos2[q]..pos2[q + 1]]",
    },
    SparseFormat {
        name: "dcsc",
        arrays: TWO_COMPRESSED,
        storage: Storage::Levels {
            levels: &[Level::Compressed, Level::Compressed],
            modes: &[1, 0],
        },
        help: "doubly compressed columns: only the columns that store a value, crd1[q] for q in pos1[0]..pos1[1]; stored column q's values are vals[pos2[q]..pos2[q + 1]], in the rows crd2[pos2[q]..pos2[q + 1]]",
    },
    SparseFormat {
        name: "csf",
        arrays: &[
            ("pos1", ArrayRole::Index),
            ("crd1", ArrayRole::Index),
            ("pos2", ArrayRole::Index),
            ("crd2", ArrayRole::Index),
            ("pos3", ArrayRole::Index),
            ("crd3", ArrayRole::Index),
            ("vals", ArrayRole::Values),
        ],
        storage: Storage::Levels {
            levels: &[Level::Compressed, Level::Compressed, Level::Compressed],
            modes: &[0, 1, 2],
        },
        help: "compressed sparse fibers of a 3-dimensional tensor: the stored slices i = crd1[q1] for q1 in pos1[0]..pos1[1], in each the stored rows j = crd2[q2] for q2 in pos2[q1]..pos2[q1 + 1], in each the values vals[q3] at k = crd3[q3] for q3 in pos3[q2]..pos3[q2 + 1]",
    },
    SparseFormat {
        name: "bcsr",
        arrays: POS_CRD_VALS,
        storage: Storage::Blocks,
        help: "compressed rows of R x C blocks (scipy's bsr_matrix: indptr, indices, data): block row b's blocks are vals[p] for p in pos[b]..pos[b + 1], at the block columns crd[p]; A[i, j] is vals[p][i % R][j % C] for the block at (i / R, j / C); `vals : [nb, R, C]` gives the block's extents",
    },
    SparseFormat {
        name: "coo",
        arrays: &[
            ("row", ArrayRole::Index),
            ("col", ArrayRole::Index),
            ("vals", ArrayRole::Values),
        ],
        storage: Storage::Coordinates,
        help: "coordinates (scipy's coo_matrix: row, col, data): vals[p] is at (row[p], col[p])",
    },
];

/// The format named `name`.
pub fn format_named(name: &str) -> Option<&'static SparseFormat> {
    SPARSE_FORMATS.iter().find(|f| f.name == name)
}

/// The names of every format, for messages: `csr`, `csc`, ….
pub fn format_names() -> String {
    SPARSE_FORMATS
        .iter()
        .map(|f| format!("`{}`", f.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The number of positions below each level of a [`Storage::Levels`] format: 1 above
/// the first, `count` of the level before times the extent below a `Dense` level, and
/// below a `Compressed` level the number it stores, `stored[k]` for the `k`-th
/// compressed level (the extent of its `crd`).
fn position_counts(
    levels: &[Level],
    modes: &[usize],
    dims: &[IndexExpr],
    stored: &[IndexExpr],
) -> Vec<IndexExpr> {
    let mut counts = vec![IndexExpr::Const(1)];
    let mut compressed = stored.iter();
    for (level, mode) in levels.iter().zip(modes) {
        let above = counts.last().cloned().unwrap_or(IndexExpr::Const(1));
        counts.push(match level {
            Level::Compressed => compressed.next().cloned().unwrap_or(IndexExpr::Const(0)),
            _ => normalize(&IndexExpr::bin(IndexOp::Mul, above, dims[*mode].clone())),
        });
    }
    counts
}

/// The declarations a format's arrays need for a tensor of extents `dims`, as ATL
/// text, in the order of its arrays (the help of a declaration that does not fit).
/// `stored[k]` is the number of positions the `k`-th compressed level stores (the
/// values' extent for the last; COO's one entry is the number of values).
pub fn declarations(
    format: &SparseFormat,
    arrays: &[String],
    dims: &[IndexExpr],
    stored: &[IndexExpr],
    block: &[i64],
) -> Vec<String> {
    let plus_one = |e: &IndexExpr| normalize(&IndexExpr::add(e.clone(), IndexExpr::Const(1)));
    match format.storage {
        Storage::Blocks => {
            let name =
                |k: usize, default: &str| arrays.get(k).map_or(default.to_string(), String::clone);
            let nb = stored.first().cloned().unwrap_or(IndexExpr::var("nb"));
            let (r, c) = match block {
                [r, c] => (r.to_string(), c.to_string()),
                _ => ("4".to_string(), "4".to_string()),
            };
            let blocks_of = |d: &IndexExpr, e: &str| match e.parse::<i64>() {
                Ok(e) => normalize(&IndexExpr::bin(
                    IndexOp::CDiv,
                    d.clone(),
                    IndexExpr::Const(e),
                ))
                .to_string(),
                Err(_) => format!("cdiv({d}, {e})"),
            };
            vec![
                format!(
                    "input {} : int[{} + 1] in 0..{} sorted",
                    name(0, "pos"),
                    blocks_of(&dims[0], &r),
                    plus_one(&nb)
                ),
                format!(
                    "input {} : int[{nb}] in 0..{}",
                    name(1, "crd"),
                    blocks_of(&dims[1], &c)
                ),
                format!("input {} : [{nb}, {r}, {c}]", name(2, "vals")),
            ]
        }
        Storage::Levels { levels, modes } => {
            let counts = position_counts(levels, modes, dims, stored);
            let mut out = Vec::new();
            let mut names = arrays.iter();
            for (l, (level, mode)) in levels.iter().zip(modes).enumerate() {
                if *level != Level::Compressed {
                    continue;
                }
                let (pos, crd) = (names.next(), names.next());
                out.push(format!(
                    "input {} : int[{}] in 0..{} sorted",
                    pos.map_or("pos", String::as_str),
                    plus_one(&counts[l]),
                    plus_one(&counts[l + 1])
                ));
                out.push(format!(
                    "input {} : int[{}] in 0..{}",
                    crd.map_or("crd", String::as_str),
                    counts[l + 1],
                    dims[*mode]
                ));
            }
            out.push(format!(
                "input {} : [{}]",
                names.next().map_or("vals", String::as_str),
                counts.last().cloned().unwrap_or(IndexExpr::Const(0))
            ));
            out
        }
        Storage::Coordinates => {
            let nnz = stored.first().cloned().unwrap_or(IndexExpr::var("nnz"));
            let mut out: Vec<String> = arrays
                .iter()
                .zip(dims)
                .map(|(a, d)| format!("input {a} : int[{nnz}] in 0..{d}"))
                .collect();
            out.push(format!(
                "input {} : [{nnz}]",
                arrays.last().map_or("vals", String::as_str)
            ));
            out
        }
    }
}

/// The dense tensor of extents `dims` that `arrays` encode in `format` (the
/// definition of the sparse tensor): `gen i < dims[0], j < dims[1], …:` the sum of
/// the stored values at `(i, j, …)` (an entry stored twice adds up, as scipy adds
/// it). For a list of levels, each `Compressed` level is a sum over its parent's
/// positions guarded by its coordinate, `sum p in pos[q]..pos[q + 1]: [crd[p] == i]
/// * …`, and a `Dense` level the position `q * extent + i`; COO sums over all `nnz`
/// values. `fresh` gives binder names that no declaration takes.
pub fn decompression(
    format: &SparseFormat,
    arrays: &[String],
    dims: &[IndexExpr],
    nnz: &IndexExpr,
    block: &[i64],
    fresh: &mut dyn FnMut(&str) -> String,
    span: Span,
) -> Expr {
    let node = |kind| Expr::new(kind, span);
    let var = |v: &String| IndexExpr::var(v.clone());
    let load = |a: &String, at: IndexExpr| IndexExpr::Load(a.clone(), Box::new(at));
    let base = ["i", "j", "k", "l"];
    let coords: Vec<String> = (0..dims.len())
        .map(|d| fresh(base.get(d).copied().unwrap_or("i")))
        .collect();
    let value_at = |p: IndexExpr| {
        node(ExprKind::Access {
            tensor: Box::new(node(ExprKind::Input(arrays[arrays.len() - 1].clone()))),
            index: p,
        })
    };
    let guarded = |pred: Pred, body: Expr| {
        node(ExprKind::Guard {
            pred,
            body: Box::new(body),
        })
    };
    let sum = |p: String, lo: IndexExpr, hi: IndexExpr, body: Expr| {
        node(ExprKind::Sum {
            var: p,
            lo,
            hi,
            body: Box::new(body),
        })
    };
    let body = match format.storage {
        Storage::Blocks => {
            // `sum p in pos[i / R]..pos[i / R + 1]: [crd[p] == j / C] *
            // vals[p][i % R][j % C]`.
            let (r, c) = match block {
                [r, c] => (*r, *c),
                _ => (1, 1),
            };
            let of = |op, v: &String, e| IndexExpr::bin(op, var(v), IndexExpr::Const(e));
            let p = fresh("p");
            let block_row = of(IndexOp::Div, &coords[0], r);
            let lo = load(&arrays[0], block_row.clone());
            let hi = load(&arrays[0], IndexExpr::add(block_row, IndexExpr::Const(1)));
            let pred = Pred::cmp(
                CmpOp::Eq,
                load(&arrays[1], var(&p)),
                of(IndexOp::Div, &coords[1], c),
            );
            let mut value = node(ExprKind::Input(arrays[2].clone()));
            for index in [
                var(&p),
                of(IndexOp::Mod, &coords[0], r),
                of(IndexOp::Mod, &coords[1], c),
            ] {
                value = node(ExprKind::Access {
                    tensor: Box::new(value),
                    index,
                });
            }
            sum(p, lo, hi, guarded(pred, value))
        }
        Storage::Levels { levels, modes } => {
            // From the outside in: each level's parent position, and its own
            // position: a sum variable for a compressed level, `parent * extent + i`
            // for a dense one (no format of the table has a bitmask level).
            let mut chain = Vec::new();
            let mut parent = IndexExpr::Const(0);
            for (level, &mode) in levels.iter().zip(modes) {
                let (own, name) = if *level == Level::Compressed {
                    let p = fresh("p");
                    (var(&p), Some(p))
                } else if parent == IndexExpr::Const(0) {
                    (var(&coords[mode]), None)
                } else {
                    let scaled = IndexExpr::bin(IndexOp::Mul, parent.clone(), dims[mode].clone());
                    (normalize(&IndexExpr::add(scaled, var(&coords[mode]))), None)
                };
                chain.push((parent, name, mode));
                parent = own;
            }
            // Then from the inside out: the value at the last position, in the sums
            // of the compressed levels.
            let mut body = value_at(parent);
            let mut index_arrays = arrays[..arrays.len() - 1].chunks(2).rev();
            for (above, name, mode) in chain.into_iter().rev() {
                let Some(p) = name else {
                    continue;
                };
                let Some([pos, crd]) = index_arrays.next() else {
                    continue;
                };
                let lo = load(pos, above.clone());
                let hi = load(pos, normalize(&IndexExpr::add(above, IndexExpr::Const(1))));
                let pred = Pred::cmp(CmpOp::Eq, load(crd, var(&p)), var(&coords[mode]));
                body = sum(p, lo, hi, guarded(pred, body));
            }
            body
        }
        Storage::Coordinates => {
            let p = fresh("p");
            let pred = arrays[..arrays.len() - 1]
                .iter()
                .zip(&coords)
                .map(|(a, c)| Pred::cmp(CmpOp::Eq, load(a, var(&p)), var(c)))
                .reduce(Pred::and)
                .unwrap_or(Pred::Bool(true));
            let value = value_at(var(&p));
            sum(p, IndexExpr::Const(0), nnz.clone(), guarded(pred, value))
        }
    };
    coords.iter().zip(dims).rev().fold(body, |body, (i, hi)| {
        node(ExprKind::Gen {
            var: i.clone(),
            lo: IndexExpr::Const(0),
            hi: hi.clone(),
            body: Box::new(body),
        })
    })
}

/// A matrix's arrays in a format, in the format's order: integer arrays hold their
/// integers (as `f64`, the interpreter's element type).
pub type Arrays = Vec<Vec<f64>>;

/// The arrays of the tensor of extents `shape` whose stored entries are `entries`
/// (coordinates and value, any order; duplicates add up and zero sums are not stored,
/// as [`from_entries`] does), in `format`: its levels' structures, sorted, with
/// increasing coordinates under each parent (COO: sorted by row), so
/// `decompression` of them is the tensor. A tensor with no non-zero entry is stored
/// as one explicit zero at the origin: every size is at least 1, so a format's arrays
/// cannot be empty. Fails when an entry is outside the tensor or of another rank.
pub fn compress(
    format: &SparseFormat,
    shape: &[usize],
    block: &[usize],
    entries: &[(Vec<usize>, f64)],
) -> Result<Arrays, String> {
    let mut arrays = compress_nonzero(format, shape, block, entries)?;
    if arrays.last().is_some_and(Vec::is_empty) && shape.iter().all(|&d| d > 0) {
        arrays = compress_nonzero(format, shape, block, &[(vec![0; shape.len()], 1.0)])?;
        if let Some(vals) = arrays.last_mut() {
            vals.fill(0.0);
        }
    }
    Ok(arrays)
}

/// [`compress`] of the non-zero entries only (no array of values when there are
/// none).
fn compress_nonzero(
    format: &SparseFormat,
    shape: &[usize],
    block: &[usize],
    entries: &[(Vec<usize>, f64)],
) -> Result<Arrays, String> {
    if format.storage == Storage::Blocks {
        return compress_blocks(shape, block, entries);
    }
    let extents = shape
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(" x ");
    let ints = |v: &[usize]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
    let error = |e: FormatError| match e {
        FormatError::OutOfRange { entry } => {
            format!("entry {entry} is outside the {extents} tensor")
        }
        FormatError::RankMismatch { formats, rank } => {
            format!("a tensor of {rank} dimension(s) given for a format of {formats}")
        }
    };
    // A list of levels over the dimensions in `modes` order; COO is stored as the
    // rows of CSR (sorted), each value's coordinates written out.
    let (levels, modes): (&[Level], Vec<usize>) = match format.storage {
        Storage::Levels { levels, modes } => (levels, modes.to_vec()),
        Storage::Coordinates | Storage::Blocks => (
            &[Level::Dense, Level::Compressed],
            (0..shape.len()).collect(),
        ),
    };
    if modes.len() != shape.len() {
        return Err(error(FormatError::RankMismatch {
            formats: modes.len(),
            rank: shape.len(),
        }));
    }
    let permuted_shape: Vec<usize> = modes.iter().map(|&m| shape[m]).collect();
    let permuted: Vec<(Vec<usize>, f64)> = entries
        .iter()
        .map(|(c, v)| {
            (
                modes
                    .iter()
                    .map(|&m| c.get(m).copied().unwrap_or(usize::MAX))
                    .collect(),
                *v,
            )
        })
        .collect();
    let c = from_entries(levels, &permuted_shape, &permuted).map_err(error)?;
    if format.storage == Storage::Coordinates {
        let LevelIndex::Compressed { pos, crd, .. } = &c.levels[1] else {
            return Err("the compressed level is missing".into());
        };
        let mut row = Vec::with_capacity(crd.len());
        for (r, w) in pos.windows(2).enumerate() {
            row.extend(std::iter::repeat_n(r as f64, w[1] - w[0]));
        }
        return Ok(vec![row, ints(crd), c.vals]);
    }
    let mut arrays = Vec::new();
    for level in &c.levels {
        if let LevelIndex::Compressed { pos, crd, .. } = level {
            arrays.push(ints(pos));
            arrays.push(ints(crd));
        }
    }
    arrays.push(c.vals);
    Ok(arrays)
}

/// BCSR's arrays (`pos`, `crd`, the blocks' values row-major, `vals[p][r][c]` at `(p *
/// R + r) * C + c`) of the matrix of extents `shape`: the blocked tensor `[cdiv(M, R),
/// cdiv(N, C), R, C]` stored with the levels dense, compressed, dense, dense, so a
/// block is stored when it holds a non-zero entry, whole.
fn compress_blocks(
    shape: &[usize],
    block: &[usize],
    entries: &[(Vec<usize>, f64)],
) -> Result<Arrays, String> {
    let (&[m, n], &[r, c]) = (shape, block) else {
        return Err(format!(
            "a matrix with R x C blocks, not a tensor of {} dimension(s) with {} block extent(s)",
            shape.len(),
            block.len()
        ));
    };
    if r == 0 || c == 0 {
        return Err("a block has at least one row and one column".into());
    }
    if let Some(entry) = entries
        .iter()
        .position(|(x, _)| x.len() != 2 || x[0] >= m || x[1] >= n)
    {
        return Err(format!("entry {entry} is outside the {m} x {n} matrix"));
    }
    let blocked: Vec<(Vec<usize>, f64)> = entries
        .iter()
        .map(|(x, v)| (vec![x[0] / r, x[1] / c, x[0] % r, x[1] % c], *v))
        .collect();
    let levels = [Level::Dense, Level::Compressed, Level::Dense, Level::Dense];
    let stored = from_entries(&levels, &[m.div_ceil(r), n.div_ceil(c), r, c], &blocked)
        .map_err(|e| format!("{e:?}"))?;
    let LevelIndex::Compressed { pos, crd, .. } = &stored.levels[1] else {
        return Err("the compressed level is missing".into());
    };
    let ints = |v: &[usize]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
    Ok(vec![ints(pos), ints(crd), stored.vals])
}

//! Sparse level formats as data (thesis §7.3–7.5): how one dimension of a tensor is
//! stored, and the multidimensional `compress`/`decompress` pair built from a list of
//! them, format-agnostically. A level format encodes a dimension into a metadata-index
//! structure ([`LevelIndex`]); the structures of the rows of a dimension are joined by
//! `append`, a monoid with an identity per format; navigation goes through
//! `pos_bounds` (the positions of one parent position), `pos_crd` (a position's
//! coordinate), `crd_pos` (a coordinate's position, if stored), `pos_pos` (the parent
//! position of the next level) and `valid` (whether a position holds an element).
//!
//! The formats: `Dense` (every coordinate, the metadata is the extent), `Compressed`
//! (the coordinates of the nonzero sub-tensors, `pos`/`crd` arrays: CSR's columns),
//! `Bitmask` (every coordinate, with a bit saying which are nonzero). A format is a
//! list of levels, one per dimension, the values (`vals`, the thesis's scalar level)
//! below the last: CSR is `[Dense, Compressed]`, DCSR `[Compressed, Compressed]`, CSF
//! all `Compressed`; CSC and DCSC are those of the transpose, and COO a `Compressed`
//! level of the flattened matrix (each stored coordinate `i * N + j` is the pair
//! `(i, j)`: the thesis's augmented compressed level, its coordinate function the
//! split of the flattening).
//!
//! The thesis writes the compressed append as `p1 ++ map (+ last p1) (remove_last
//! p2)`; it is `remove_last p1 ++ map (+ last p1) p2` with identity `([0], [])` (the
//! positions of the second structure are offset by the first's count, and the first's
//! last entry is the second's first). The laws each instance must satisfy (the monoid,
//! `decompress (compress F t) = t`, the translations inverse to each other, bounds)
//! are property tests below; the Rocq statements come with the rules that use them.

use crate::tensor::Tensor;

/// One level format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    Dense,
    Compressed,
    Bitmask,
}

/// The metadata-index structure of one level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LevelIndex {
    /// The extent of the dimension.
    Dense { dim: usize },
    /// Parent position `q` owns the positions `pos[q]..pos[q + 1]`, whose coordinates
    /// are `crd[p]` (increasing within a parent: ordered and unique).
    Compressed {
        dim: usize,
        pos: Vec<usize>,
        crd: Vec<usize>,
    },
    /// Parent position `q` owns the positions `q * dim .. (q + 1) * dim`; `mask[p]`
    /// says whether position `p` holds a nonzero sub-tensor.
    Bitmask { dim: usize, mask: Vec<bool> },
}

/// A tensor compressed by a list of level formats: one metadata-index structure per
/// dimension and the values of the leaf positions.
#[derive(Clone, Debug, PartialEq)]
pub struct Compressed {
    pub shape: Vec<usize>,
    pub levels: Vec<LevelIndex>,
    pub vals: Vec<f64>,
}

impl Level {
    /// The identity of `append` (the thesis's ϕ) for a dimension of extent `dim`.
    pub fn empty(self, dim: usize) -> LevelIndex {
        match self {
            Level::Dense => LevelIndex::Dense { dim },
            Level::Compressed => LevelIndex::Compressed {
                dim,
                pos: vec![0],
                crd: Vec::new(),
            },
            Level::Bitmask => LevelIndex::Bitmask {
                dim,
                mask: Vec::new(),
            },
        }
    }

    /// Encodes one dimension: its metadata for one parent position, and the indices of
    /// the sub-tensors kept (every one, or the nonzero ones), with `nonzero[c]` saying
    /// whether sub-tensor `c` has a nonzero element.
    fn encode(self, nonzero: &[bool]) -> (LevelIndex, Vec<usize>) {
        let dim = nonzero.len();
        match self {
            Level::Dense => (LevelIndex::Dense { dim }, (0..dim).collect()),
            Level::Compressed => {
                let kept: Vec<usize> = (0..dim).filter(|c| nonzero[*c]).collect();
                (
                    LevelIndex::Compressed {
                        dim,
                        pos: vec![0, kept.len()],
                        crd: kept.clone(),
                    },
                    kept,
                )
            }
            Level::Bitmask => (
                LevelIndex::Bitmask {
                    dim,
                    mask: nonzero.to_vec(),
                },
                (0..dim).collect(),
            ),
        }
    }
}

impl LevelIndex {
    pub fn level(&self) -> Level {
        match self {
            LevelIndex::Dense { .. } => Level::Dense,
            LevelIndex::Compressed { .. } => Level::Compressed,
            LevelIndex::Bitmask { .. } => Level::Bitmask,
        }
    }

    pub fn dim(&self) -> usize {
        match self {
            LevelIndex::Dense { dim }
            | LevelIndex::Compressed { dim, .. }
            | LevelIndex::Bitmask { dim, .. } => *dim,
        }
    }

    /// Joins the structures of two consecutive runs of parent positions (the thesis's
    /// `append_F`); both must be of one format and extent.
    pub fn append(&self, other: &LevelIndex) -> Option<LevelIndex> {
        let mut out = self.clone();
        out.append_in_place(other).then_some(out)
    }

    /// [`LevelIndex::append`] into `self`, in time linear in `other` (compressing a
    /// matrix appends one row's structure at a time: copying the whole structure at
    /// each made it quadratic). `false`, leaving `self` unchanged, when the two are not
    /// of one format and extent.
    pub fn append_in_place(&mut self, other: &LevelIndex) -> bool {
        match (self, other) {
            (LevelIndex::Dense { dim: a }, LevelIndex::Dense { dim: b }) => a == b,
            (
                LevelIndex::Compressed {
                    dim,
                    pos: p1,
                    crd: c1,
                },
                LevelIndex::Compressed {
                    dim: d2,
                    pos: p2,
                    crd: c2,
                },
            ) if dim == d2 => {
                let Some(last) = p1.pop() else {
                    return false;
                };
                p1.extend(p2.iter().map(|p| p + last));
                c1.extend(c2);
                true
            }
            (LevelIndex::Bitmask { dim, mask: m1 }, LevelIndex::Bitmask { dim: d2, mask: m2 })
                if dim == d2 =>
            {
                m1.extend(m2);
                true
            }
            _ => false,
        }
    }

    /// The positions parent position `parent` owns.
    pub fn pos_bounds(&self, parent: usize) -> (usize, usize) {
        match self {
            LevelIndex::Dense { dim } | LevelIndex::Bitmask { dim, .. } => {
                (parent * dim, (parent + 1) * dim)
            }
            LevelIndex::Compressed { pos, .. } => (pos[parent], pos[parent + 1]),
        }
    }

    /// The coordinate stored at position `p` (of parent `parent`).
    pub fn pos_crd(&self, parent: usize, p: usize) -> usize {
        match self {
            LevelIndex::Dense { dim } | LevelIndex::Bitmask { dim, .. } => p - parent * dim,
            LevelIndex::Compressed { crd, .. } => crd[p],
        }
    }

    /// The position of coordinate `c` under parent `parent`, if it is stored.
    pub fn crd_pos(&self, parent: usize, c: usize) -> Option<usize> {
        if c >= self.dim() {
            return None;
        }
        match self {
            LevelIndex::Dense { dim } => Some(parent * dim + c),
            LevelIndex::Bitmask { dim, mask } => {
                let p = parent * dim + c;
                mask[p].then_some(p)
            }
            LevelIndex::Compressed { pos, crd, .. } => {
                let (lo, hi) = (pos[parent], pos[parent + 1]);
                crd[lo..hi].binary_search(&c).ok().map(|k| lo + k)
            }
        }
    }

    /// Whether position `p` holds an element (a bitmask's unset bits do not).
    pub fn valid(&self, p: usize) -> bool {
        match self {
            LevelIndex::Bitmask { mask, .. } => mask[p],
            _ => true,
        }
    }

    /// How many positions the structure has (the parent positions of the next level).
    pub fn positions(&self, parents: usize) -> usize {
        match self {
            LevelIndex::Dense { dim } | LevelIndex::Bitmask { dim, .. } => parents * dim,
            LevelIndex::Compressed { crd, .. } => crd.len(),
        }
    }

    /// Whether the structure is well-formed for `parents` parent positions, and why
    /// not: the facts a kernel reading it relies on (`pos` from 0, non-decreasing, up to
    /// the number of coordinates; coordinates in range, increasing within a parent; a
    /// mask of one bit per position).
    pub fn well_formed(&self, parents: usize) -> Result<(), String> {
        match self {
            LevelIndex::Dense { .. } => Ok(()),
            LevelIndex::Bitmask { dim, mask } => {
                let want = parents.checked_mul(*dim).ok_or("the mask is too large")?;
                if mask.len() == want {
                    Ok(())
                } else {
                    Err(format!(
                        "the mask has {} bits, {parents} parent positions of extent {dim} need {want}",
                        mask.len()
                    ))
                }
            }
            LevelIndex::Compressed { dim, pos, crd } => {
                if pos.len() != parents + 1 {
                    return Err(format!(
                        "`pos` has {} entries, {parents} parent positions need {}",
                        pos.len(),
                        parents + 1
                    ));
                }
                if pos[0] != 0 || pos[parents] != crd.len() {
                    return Err(format!(
                        "`pos` must run from 0 to the number of coordinates ({}), it runs from {} to {}",
                        crd.len(),
                        pos[0],
                        pos[parents]
                    ));
                }
                for q in 0..parents {
                    let (lo, hi) = (pos[q], pos[q + 1]);
                    if hi < lo {
                        return Err(format!("`pos` decreases at {q}: {lo} then {hi}"));
                    }
                    for p in lo..hi {
                        if crd[p] >= *dim {
                            return Err(format!("`crd[{p}]` is {}, outside 0..{dim}", crd[p]));
                        }
                        if p > lo && crd[p] <= crd[p - 1] {
                            return Err(format!(
                                "`crd` is not increasing within parent {q}: {} then {} at {p}",
                                crd[p - 1],
                                crd[p]
                            ));
                        }
                    }
                }
                Ok(())
            }
        }
    }
}

/// One element of a sparse tensor: its coordinates and its value.
pub type Entry = (Vec<usize>, f64);

/// Why a tensor cannot be compressed with a list of formats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FormatError {
    /// One level per dimension.
    RankMismatch { formats: usize, rank: usize },
    /// An entry's coordinates are not those of an element of the shape.
    OutOfRange { entry: usize },
}

/// Compresses the tensor of `shape` whose nonzero elements are `entries` (coordinates
/// and value, in any order; duplicates add up, as `decompress` and scipy add them;
/// entries whose sum is zero are not stored), without making it dense: the same
/// structures as [`compress`] of the dense tensor, in time linear in the entries and
/// in the positions of the `Dense` and `Bitmask` levels (a sparse file read straight
/// into the format a kernel reads).
pub fn from_entries(
    formats: &[Level],
    shape: &[usize],
    entries: &[Entry],
) -> Result<Compressed, FormatError> {
    if formats.len() != shape.len() {
        return Err(FormatError::RankMismatch {
            formats: formats.len(),
            rank: shape.len(),
        });
    }
    if let Some(entry) = entries
        .iter()
        .position(|(c, _)| c.len() != shape.len() || c.iter().zip(shape).any(|(c, d)| c >= d))
    {
        return Err(FormatError::OutOfRange { entry });
    }
    let mut sorted: Vec<Entry> = entries.to_vec();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut summed: Vec<Entry> = Vec::with_capacity(sorted.len());
    for (c, v) in sorted {
        match summed.last_mut() {
            Some((last, sum)) if *last == c => *sum += v,
            _ => summed.push((c, v)),
        }
    }
    summed.retain(|(_, v)| *v != 0.0);
    let mut levels: Vec<LevelIndex> = formats
        .iter()
        .zip(shape)
        .map(|(f, d)| f.empty(*d))
        .collect();
    let mut vals = Vec::new();
    entries_into(formats, shape, 0, &summed, &mut levels, &mut vals);
    Ok(Compressed {
        shape: shape.to_vec(),
        levels,
        vals,
    })
}

/// Appends the encoding of the sub-tensor whose nonzero entries are `entries` (sorted,
/// sharing their first `depth` coordinates) to `levels` and `vals`.
fn entries_into(
    formats: &[Level],
    shape: &[usize],
    depth: usize,
    entries: &[Entry],
    levels: &mut [LevelIndex],
    vals: &mut Vec<f64>,
) {
    let Some((format, inner_formats)) = formats.split_first() else {
        vals.push(entries.first().map_or(0.0, |(_, v)| *v));
        return;
    };
    let dim = shape[0];
    // The runs of entries with one coordinate at this depth, in increasing order.
    let mut groups: Vec<(usize, &[Entry])> = Vec::new();
    let mut start = 0;
    while start < entries.len() {
        let c = entries[start].0[depth];
        let len = entries[start..]
            .iter()
            .take_while(|(k, _)| k[depth] == c)
            .count();
        groups.push((c, &entries[start..start + len]));
        start += len;
    }
    let index = match format {
        Level::Dense => LevelIndex::Dense { dim },
        Level::Compressed => LevelIndex::Compressed {
            dim,
            pos: vec![0, groups.len()],
            crd: groups.iter().map(|(c, _)| *c).collect(),
        },
        Level::Bitmask => {
            let mut mask = vec![false; dim];
            for (c, _) in &groups {
                mask[*c] = true;
            }
            LevelIndex::Bitmask { dim, mask }
        }
    };
    let (first, inner_levels) = levels.split_first_mut().expect("one level per format");
    assert!(
        first.append_in_place(&index),
        "one format and extent per level"
    );
    let mut next = groups.iter().peekable();
    let kept: Vec<usize> = match format {
        Level::Compressed => groups.iter().map(|(c, _)| *c).collect(),
        Level::Dense | Level::Bitmask => (0..dim).collect(),
    };
    for c in kept {
        let sub: &[Entry] = match next.peek() {
            Some((k, run)) if *k == c => {
                next.next();
                run
            }
            _ => &[],
        };
        entries_into(
            inner_formats,
            &shape[1..],
            depth + 1,
            sub,
            inner_levels,
            vals,
        );
    }
}

/// Compresses `t` with one level format per dimension, outermost first (the thesis's
/// `compress`): the top dimension is encoded, then every sub-tensor it keeps, each
/// level's structures joined by `append` from the format's identity.
pub fn compress(formats: &[Level], t: &Tensor) -> Result<Compressed, FormatError> {
    if formats.len() != t.shape.len() {
        return Err(FormatError::RankMismatch {
            formats: formats.len(),
            rank: t.shape.len(),
        });
    }
    let mut levels: Vec<LevelIndex> = formats
        .iter()
        .zip(&t.shape)
        .map(|(f, d)| f.empty(*d))
        .collect();
    let mut vals = Vec::new();
    compress_into(formats, &t.shape, &t.data, &mut levels, &mut vals);
    Ok(Compressed {
        shape: t.shape.clone(),
        levels,
        vals,
    })
}

/// Appends the encoding of the sub-tensor `data` (of `shape`) to `levels` and `vals`.
fn compress_into(
    formats: &[Level],
    shape: &[usize],
    data: &[f64],
    levels: &mut [LevelIndex],
    vals: &mut Vec<f64>,
) {
    let Some((format, inner_formats)) = formats.split_first() else {
        vals.push(data[0]);
        return;
    };
    let dim = shape[0];
    let row = data.len().checked_div(dim).unwrap_or(0);
    let nonzero: Vec<bool> = (0..dim)
        .map(|c| data[c * row..(c + 1) * row].iter().any(|v| *v != 0.0))
        .collect();
    let (index, kept) = format.encode(&nonzero);
    let (first, inner_levels) = levels.split_first_mut().expect("one level per format");
    assert!(
        first.append_in_place(&index),
        "one format and extent per level"
    );
    for c in kept {
        compress_into(
            inner_formats,
            &shape[1..],
            &data[c * row..(c + 1) * row],
            inner_levels,
            vals,
        );
    }
}

/// The dense tensor of a compressed one (the thesis's `decompress`, from parent
/// position 0): every valid position scattered to its coordinate, recursively; an
/// element stored twice (never by `compress`) adds up.
pub fn decompress(c: &Compressed) -> Tensor {
    let mut out = Tensor::zeros(c.shape.clone());
    decompress_into(&c.levels, &c.vals, 0, 0, &mut out.data, &c.shape);
    out
}

fn decompress_into(
    levels: &[LevelIndex],
    vals: &[f64],
    parent: usize,
    offset: usize,
    out: &mut [f64],
    shape: &[usize],
) {
    let Some((level, inner)) = levels.split_first() else {
        out[offset] += vals[parent];
        return;
    };
    let row: usize = shape[1..].iter().product();
    let (lo, hi) = level.pos_bounds(parent);
    for p in lo..hi {
        if level.valid(p) {
            let c = level.pos_crd(parent, p);
            decompress_into(inner, vals, p, offset + c * row, out, &shape[1..]);
        }
    }
}

impl Compressed {
    /// Whether every level is well-formed for the positions of the level above it and
    /// the values fill the last level's positions: the checks a kernel reading user
    /// arrays makes on entry.
    pub fn well_formed(&self) -> Result<(), String> {
        if self.levels.len() != self.shape.len() {
            return Err(format!(
                "{} levels for a tensor of rank {}",
                self.levels.len(),
                self.shape.len()
            ));
        }
        let mut parents = 1usize;
        for (k, (level, dim)) in self.levels.iter().zip(&self.shape).enumerate() {
            if level.dim() != *dim {
                return Err(format!(
                    "level {k} has extent {}, the tensor's dimension {dim}",
                    level.dim()
                ));
            }
            level
                .well_formed(parents)
                .map_err(|m| format!("level {k}: {m}"))?;
            parents = level.positions(parents);
        }
        if self.vals.len() != parents {
            return Err(format!(
                "{} values for {parents} positions of the last level",
                self.vals.len()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn matrix(rows: usize, cols: usize, data: &[f64]) -> Tensor {
        Tensor::new(vec![rows, cols], data.to_vec()).expect("shape")
    }

    /// The thesis's Figure 7.1 kind of example, by hand: CSR of a 3 x 4 matrix.
    #[test]
    fn csr_of_a_matrix_is_its_row_pointers_columns_and_values() {
        let m = matrix(3, 4, &[1., 0., 2., 0., 0., 0., 0., 0., 4., 5., 0., 6.]);
        let c = compress(&[Level::Dense, Level::Compressed], &m).expect("rank 2");
        assert_eq!(c.levels[0], LevelIndex::Dense { dim: 3 });
        assert_eq!(
            c.levels[1],
            LevelIndex::Compressed {
                dim: 4,
                pos: vec![0, 2, 2, 5],
                crd: vec![0, 2, 0, 1, 3],
            }
        );
        assert_eq!(c.vals, [1., 2., 4., 5., 6.]);
        assert_eq!(decompress(&c), m);
        // DCSR keeps only the nonempty rows.
        let d = compress(&[Level::Compressed, Level::Compressed], &m).expect("rank 2");
        assert_eq!(
            d.levels[0],
            LevelIndex::Compressed {
                dim: 3,
                pos: vec![0, 2],
                crd: vec![0, 2],
            }
        );
        assert_eq!(
            d.levels[1],
            LevelIndex::Compressed {
                dim: 4,
                pos: vec![0, 2, 5],
                crd: vec![0, 2, 0, 1, 3],
            }
        );
        assert_eq!(decompress(&d), m);
    }

    #[test]
    fn coo_is_a_compressed_level_of_the_flattened_matrix() {
        let m = matrix(2, 3, &[0., 7., 0., 8., 0., 9.]);
        let flat = Tensor::new(vec![6], m.data.clone()).expect("shape");
        let c = compress(&[Level::Compressed], &flat).expect("rank 1");
        let LevelIndex::Compressed { crd, .. } = &c.levels[0] else {
            panic!("compressed");
        };
        let pairs: Vec<(usize, usize)> = crd.iter().map(|k| (k / 3, k % 3)).collect();
        assert_eq!(pairs, [(0, 1), (1, 0), (1, 2)]);
        assert_eq!(c.vals, [7., 8., 9.]);
    }

    #[test]
    fn a_bitmask_keeps_every_row_and_marks_the_nonzero_ones() {
        let m = matrix(3, 2, &[0., 0., 1., 0., 0., 2.]);
        let c = compress(&[Level::Bitmask, Level::Dense], &m).expect("rank 2");
        assert_eq!(
            c.levels[0],
            LevelIndex::Bitmask {
                dim: 3,
                mask: vec![false, true, true],
            }
        );
        assert_eq!(c.vals.len(), 6);
        assert_eq!(decompress(&c), m);
        assert_eq!(c.levels[0].crd_pos(0, 0), None);
        assert_eq!(c.levels[0].crd_pos(0, 2), Some(2));
    }

    #[test]
    fn the_compressed_append_offsets_the_second_positions() {
        let a = LevelIndex::Compressed {
            dim: 5,
            pos: vec![0, 2],
            crd: vec![1, 3],
        };
        let b = LevelIndex::Compressed {
            dim: 5,
            pos: vec![0, 3],
            crd: vec![0, 1, 4],
        };
        assert_eq!(
            a.append(&b),
            Some(LevelIndex::Compressed {
                dim: 5,
                pos: vec![0, 2, 5],
                crd: vec![1, 3, 0, 1, 4],
            })
        );
        // Another extent or format is no append.
        assert_eq!(a.append(&Level::Compressed.empty(4)), None);
        assert_eq!(a.append(&Level::Dense.empty(5)), None);
    }

    #[test]
    fn malformed_structures_say_what_is_wrong() {
        let m = matrix(2, 3, &[1., 0., 2., 0., 3., 0.]);
        let good = compress(&[Level::Dense, Level::Compressed], &m).expect("rank 2");
        assert_eq!(good.well_formed(), Ok(()));
        let with = |pos: Vec<usize>, crd: Vec<usize>, vals: Vec<f64>| Compressed {
            shape: vec![2, 3],
            levels: vec![
                LevelIndex::Dense { dim: 2 },
                LevelIndex::Compressed { dim: 3, pos, crd },
            ],
            vals,
        };
        for (c, says) in [
            (
                with(vec![0, 2, 3], vec![0, 3, 1], vec![1., 2., 3.]),
                "`crd[1]` is 3",
            ),
            (
                with(vec![0, 2, 3], vec![2, 0, 1], vec![1., 2., 3.]),
                "not increasing",
            ),
            (
                with(vec![0, 2, 3], vec![0, 0, 1], vec![1., 2., 3.]),
                "not increasing",
            ),
            (
                with(vec![0, 3, 2], vec![0, 1, 2], vec![1., 2., 3.]),
                "runs from 0 to 2",
            ),
            (
                with(vec![1, 2, 3], vec![0, 2, 1], vec![1., 2., 3.]),
                "runs from 1",
            ),
            (
                with(vec![0, 2], vec![0, 2], vec![1., 2.]),
                "`pos` has 2 entries",
            ),
            (
                with(vec![0, 2, 3], vec![0, 2, 1], vec![1., 2.]),
                "2 values for 3 positions",
            ),
        ] {
            let err = c.well_formed().expect_err(says);
            assert!(err.contains(says), "expected `{says}`: {err}");
        }
        let decreasing = Compressed {
            shape: vec![3, 3],
            levels: vec![
                LevelIndex::Dense { dim: 3 },
                LevelIndex::Compressed {
                    dim: 3,
                    pos: vec![0, 2, 1, 2],
                    crd: vec![0, 1],
                },
            ],
            vals: vec![1., 2.],
        };
        let err = decreasing.well_formed().expect_err("decreasing");
        assert!(err.contains("`pos` decreases at 1"), "{err}");
    }

    /// A tensor of rank 1 to 3, extents 0 to 4, about half its elements zero.
    fn sparse_tensor() -> impl Strategy<Value = Tensor> {
        prop::collection::vec(0usize..5, 1..4).prop_flat_map(|shape| {
            let n: usize = shape.iter().product();
            prop::collection::vec(prop_oneof![Just(0.0), -4.0..4.0f64], n)
                .prop_map(move |data| Tensor::new(shape.clone(), data).expect("numel"))
        })
    }

    fn with_formats() -> impl Strategy<Value = (Tensor, Vec<Level>)> {
        sparse_tensor().prop_flat_map(|t| {
            let rank = t.shape.len();
            let level = prop_oneof![
                Just(Level::Dense),
                Just(Level::Compressed),
                Just(Level::Bitmask)
            ];
            (Just(t), prop::collection::vec(level, rank))
        })
    }

    /// The nonzero elements of `t` as entries, some split into two that add up (a
    /// duplicate) and some explicit zeros added, shuffled by `seed`.
    fn entries_of(t: &Tensor, seed: u64) -> Vec<Entry> {
        let mut rng = crate::rng::SplitMix64::new(seed);
        let mut out = Vec::new();
        for (k, v) in t.data.iter().enumerate() {
            let mut coords = vec![0; t.shape.len()];
            let mut rest = k;
            for (d, extent) in t.shape.iter().enumerate().rev() {
                coords[d] = rest % extent;
                rest /= extent;
            }
            if *v != 0.0 && rng.chance(30) {
                out.push((coords.clone(), *v - 1.0));
                out.push((coords, 1.0));
            } else if *v != 0.0 || rng.chance(20) {
                out.push((coords, *v));
            }
        }
        for k in (1..out.len()).rev() {
            let j = rng.below(k + 1);
            out.swap(k, j);
        }
        out
    }

    proptest! {
        /// Built from entries, without the dense tensor, a format's structures are
        /// those of `compress` (up to the rounding of a split value's two parts).
        #[test]
        fn entries_compress_as_the_dense_tensor_does((t, formats) in with_formats(), seed in 0u64..1000) {
            let t = Tensor::new(t.shape.clone(), t.data.iter().map(|v| v.round()).collect()).expect("numel");
            let built = from_entries(&formats, &t.shape, &entries_of(&t, seed)).expect("in range");
            prop_assert_eq!(built, compress(&formats, &t).expect("rank"));
        }

        /// DECOMPRESSCOMPRESS, and ENCODEWELLFORMED for the whole stack.
        #[test]
        fn decompress_undoes_compress((t, formats) in with_formats()) {
            let c = compress(&formats, &t).expect("one level per dimension");
            prop_assert_eq!(c.well_formed(), Ok(()));
            prop_assert_eq!(decompress(&c), t);
        }

        /// The translations are inverse on valid positions (CRDPOSINV, POSCRDINV), a
        /// coordinate with no position is zero in the tensor (CRDPOSNONEGET) and no
        /// position of its parent maps to it (CRDPOSNONE), and positions stay within
        /// their parent's bounds (POSBOUND, CRDBOUND).
        #[test]
        fn positions_and_coordinates_translate_both_ways((t, formats) in with_formats()) {
            let c = compress(&formats, &t).expect("one level per dimension");
            let mut parents = 1usize;
            for level in &c.levels {
                for q in 0..parents {
                    let (lo, hi) = level.pos_bounds(q);
                    for p in lo..hi {
                        if level.valid(p) {
                            let crd = level.pos_crd(q, p);
                            prop_assert!(crd < level.dim());
                            prop_assert_eq!(level.crd_pos(q, crd), Some(p));
                        }
                    }
                    for crd in 0..level.dim() {
                        match level.crd_pos(q, crd) {
                            Some(p) => {
                                prop_assert!(lo <= p && p < hi);
                                prop_assert_eq!(level.pos_crd(q, p), crd);
                            }
                            None => prop_assert!(
                                (lo..hi).all(|p| !level.valid(p) || level.pos_crd(q, p) != crd)
                            ),
                        }
                    }
                }
                parents = level.positions(parents);
            }
        }

        /// MONOIDSTRUCT: `append` is associative with the format's empty structure as
        /// identity, on structures `compress` makes.
        #[test]
        fn append_is_a_monoid(
            (a, b, c) in (1usize..4, 0usize..5).prop_flat_map(|(rows, dim)| {
                let row = prop::collection::vec(prop_oneof![Just(0.0), Just(1.0)], rows * dim);
                (row.clone(), row.clone(), row).prop_map(move |(x, y, z)| {
                    let m = |d: Vec<f64>| Tensor::new(vec![rows, dim], d).expect("numel");
                    (m(x), m(y), m(z))
                })
            }),
            level in prop_oneof![Just(Level::Dense), Just(Level::Compressed), Just(Level::Bitmask)],
        ) {
            let index = |t: &Tensor| compress(&[Level::Dense, level], t).expect("rank 2").levels[1].clone();
            let (x, y, z) = (index(&a), index(&b), index(&c));
            let left = x.append(&y).and_then(|xy| xy.append(&z));
            let right = y.append(&z).and_then(|yz| x.append(&yz));
            prop_assert!(left.is_some());
            prop_assert_eq!(left, right);
            let empty = level.empty(x.dim());
            prop_assert_eq!(empty.append(&x), Some(x.clone()));
            prop_assert_eq!(x.append(&empty), Some(x.clone()));
        }
    }

    #[test]
    fn entries_outside_the_shape_are_refused() {
        let formats = [Level::Dense, Level::Compressed];
        assert_eq!(
            from_entries(&formats, &[2, 3], &[(vec![0, 1], 1.0), (vec![2, 0], 1.0)]),
            Err(FormatError::OutOfRange { entry: 1 })
        );
        assert_eq!(
            from_entries(&formats, &[2, 3], &[(vec![0], 1.0)]),
            Err(FormatError::OutOfRange { entry: 0 })
        );
    }

    #[test]
    fn a_format_list_of_another_rank_is_refused() {
        let m = matrix(2, 2, &[1., 0., 0., 1.]);
        assert_eq!(
            compress(&[Level::Dense], &m),
            Err(FormatError::RankMismatch {
                formats: 1,
                rank: 2
            })
        );
    }
}

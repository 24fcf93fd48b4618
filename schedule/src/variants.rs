//! The candidates of a nest on a machine: every register tile the machine's vector
//! registers can hold (the columns a multiple of the vector width, up to four vectors;
//! the rows from 1 to 16 where the accumulators fit), with and without a packed copy of
//! the column operand and a zero-bordered copy of a guarded read, both orders of the
//! tile loops, with and without the tiles partitioned at the guards (a stencil's
//! guard-free interior), each with its cheapest loop order from the e-graph
//! (`space.rs`); for an element-wise nest also the untiled loops, rows vectorized
//! whole (the loops as written timed first); the rest ranked by the cost model. The list is deterministic: equal estimates keep the order in
//! which they were generated.

use crate::candidate::{Candidate, Slot, Tile};
use crate::cost::{Model, estimate};
use crate::machine::Machine;
use crate::nest::Nest;
use crate::space::{SlotKind, Space};

/// The copies of a candidate's inputs: packed, bordered, transposed, copied row-major
/// ([`Candidate::pack`], `boundary`, `stage`, `relaid`).
type Copies = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// A candidate with its estimate.
#[derive(Clone, Debug)]
pub struct Ranked {
    pub candidate: Candidate,
    /// Estimated cycles (the model's unit; only the order matters).
    pub estimate: f64,
}

/// Counts of the space explored, for the report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpaceSize {
    /// Tile, copy and tile-order choices.
    pub variants: usize,
    /// Loop orders in the e-graphs, summed over the variants.
    pub orders: usize,
    /// E-graph nodes, summed.
    pub egraph_nodes: usize,
}

/// Every candidate of `nest`, cheapest first.
pub fn ranked(
    nest: &Nest,
    machine: &Machine,
    element_bytes: usize,
    threads: usize,
) -> (Vec<Ranked>, SpaceSize) {
    let Some(col) = nest.gens.last() else {
        return (Vec::new(), SpaceSize::default());
    };
    let lanes = machine.lanes(element_bytes) as i64;
    let reduction = !nest.sums.is_empty();
    let col_widths: Vec<i64> = if reduction {
        (1..=4).map(|k| k * lanes).collect()
    } else {
        [1, 2, 4, 8].iter().map(|k| k * lanes).collect()
    };
    let mut col_widths: Vec<i64> = col_widths
        .into_iter()
        .filter(|c| *c <= col.extent.max(1))
        .collect();
    if col_widths.is_empty() {
        col_widths.push(col.extent.max(1));
    }
    let row_heights: &[i64] = if reduction {
        &[1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16]
    } else {
        &[1, 4, 8, 16, 32]
    };
    let others: Vec<&str> = nest
        .gens
        .iter()
        .map(|g| g.name.as_str())
        .filter(|n| *n != col.name)
        .collect();
    let mut rows: Vec<Option<&str>> = vec![None];
    rows.extend(others.iter().rev().map(|r| Some(*r)));
    let packs: Vec<Option<String>> = std::iter::once(None)
        .chain(
            nest.reads
                .iter()
                .filter(|r| reduction && packable(nest, r, &col.name))
                .map(|r| Some(r.input.clone())),
        )
        .collect();
    let stages: Vec<Option<String>> = nest
        .reads
        .iter()
        .filter(|r| stageable(nest, r, &col.name))
        .map(|r| Some(r.input.clone()))
        .collect();
    let borders: Vec<Option<String>> = std::iter::once(None)
        .chain(
            nest.reads
                .iter()
                .filter(|r| {
                    r.guarded && nest.reads.iter().filter(|o| o.input == r.input).count() == 1
                })
                .map(|r| Some(r.input.clone())),
        )
        .collect();
    // At most one copy per candidate: packed, bordered or transposed; and, of an
    // input declared with another storage order, with or without a row-major copy of
    // it (made from the input, so with any of the others of another input).
    let relaid: Vec<Option<String>> = std::iter::once(None)
        .chain(nest.layouts.keys().map(|x| Some(x.clone())))
        .collect();
    let copies: Vec<Copies> = packs
        .iter()
        .flat_map(|p| borders.iter().map(move |b| (p.clone(), b.clone(), None)))
        .filter(|(p, b, _)| p.is_none() || b.is_none())
        .chain(stages.iter().map(|s| (None, None, s.clone())))
        .flat_map(|(p, b, s)| {
            relaid
                .iter()
                .filter(|r| r.is_none() || ![&p, &b, &s].contains(r))
                .map(|r| (p.clone(), b.clone(), s.clone(), r.clone()))
                .collect::<Vec<_>>()
        })
        .collect();
    let mut out = Vec::new();
    let mut size = SpaceSize::default();
    for row in &rows {
        for &rows_n in row_heights {
            if row.is_none() != (rows_n == 1) {
                continue;
            }
            if let Some(r) = row
                && nest.find(r).is_some_and(|l| rows_n > l.extent)
            {
                continue;
            }
            for &cols in &col_widths {
                let accumulators = rows_n * ((cols + lanes - 1) / lanes);
                if reduction && accumulators + 2 > machine.vector_registers as i64 {
                    continue;
                }
                for (pack, border, stage, relaid) in &copies {
                    {
                        let orders: &[bool] = if row.is_some() {
                            &[false, true]
                        } else {
                            &[false]
                        };
                        // The guard-free interior is worth trying where a tiled loop's
                        // variable is in a guard and no bordered copy removed it.
                        let tiled_guard = nest.guard_vars.contains(&col.name)
                            || row.is_some_and(|r| nest.guard_vars.contains(r));
                        let partitions: &[bool] = if tiled_guard && border.is_none() {
                            &[false, true]
                        } else {
                            &[false]
                        };
                        for (&col_outer, &partition_guards) in orders
                            .iter()
                            .flat_map(|o| partitions.iter().map(move |p| (o, p)))
                        {
                            let mut candidate = Candidate {
                                tile: Tile {
                                    row: row.map(str::to_string),
                                    rows: rows_n,
                                    col: col.name.clone(),
                                    cols,
                                    col_outer,
                                    whole: false,
                                },
                                pack: pack.clone(),
                                boundary: border.clone(),
                                local_copy: false,
                                stage: stage.clone(),
                                relaid: relaid.clone(),
                                partial_sums: None,
                                rolled: Vec::new(),
                                vector_width: None,
                                fixed: None,
                                order: Vec::new(),
                                parallel: false,
                                partition_guards,
                            };
                            if unrolled_code(nest, &candidate.tile, lanes, partition_guards)
                                > UNROLLED_CODE_MAX
                            {
                                continue;
                            }
                            let slots = slots_of(nest, row.as_deref());
                            let model = Model::new(nest, machine, &candidate, element_bytes);
                            let space = Space::new(&slots, &model, col_outer);
                            size.variants += 1;
                            size.orders += space.orders(100_000).len();
                            size.egraph_nodes += space.egraph.total_number_of_nodes();
                            let (_, order) = space.best(&model, col_outer);
                            candidate.parallel =
                                threads > 1 && order.first().is_some_and(|s| !is_sum(nest, s));
                            candidate.order = order;
                            let local = local_copy_applies(nest, &candidate);
                            let estimate =
                                estimate(nest, machine, &candidate, element_bytes, threads);
                            if local {
                                let mut twin = candidate.clone();
                                twin.local_copy = true;
                                let estimate = crate::cost::estimate(
                                    nest,
                                    machine,
                                    &twin,
                                    element_bytes,
                                    threads,
                                );
                                size.variants += 1;
                                out.push(Ranked {
                                    candidate: twin,
                                    estimate,
                                });
                            }
                            out.push(Ranked {
                                candidate,
                                estimate,
                            });
                        }
                    }
                }
            }
        }
    }
    let mut as_written = Vec::new();
    if !reduction {
        let mut whole = whole_rows(nest, machine, element_bytes, threads, &mut size);
        // The loops as written (rows vectorized whole, no partition) are timed first,
        // whatever their estimate: an element-wise map is memory-bound, where the
        // model's tile estimates are least reliable, and a search that tiles a 3-D
        // stencil must at least match the specification (on a 7-point Laplacian at
        // 128³, one thread, Zen 4, six candidates fit in 25 s and the best of them
        // was 0.89x the specification before this).
        if !whole.is_empty() {
            as_written.push(whole.remove(0));
        }
        out.extend(whole);
    }
    out.sort_by(|a, b| a.estimate.total_cmp(&b.estimate));
    as_written.extend(out);
    let out = as_written;
    // The partial sums come first whatever their estimate: the tile model does not
    // describe them, and they are few.
    let mut partial = partial_sums(nest, machine, element_bytes, threads, &mut size);
    partial.extend(out);
    (partial, size)
}

/// Where every read that moves with the output's last `gen` has it in another index
/// than the last (a register tile over it would gather) and a read has the innermost
/// `sum` as its last index (a contiguous row: a matrix-vector product's `A[i, j]`),
/// that sum vectorized as 1, 2 and 4 vectors of partial sums. Estimated as one
/// multiply-add per vector of each partial-sum step plus every input line read once
/// from memory (and each read's row of the sum from L1 per output element): a rough
/// figure, reported, not used to rank them among the tiles.
fn partial_sums(
    nest: &Nest,
    machine: &Machine,
    element_bytes: usize,
    threads: usize,
    size: &mut SpaceSize,
) -> Vec<Ranked> {
    use atl_lang::index::IndexExpr;
    let (Some(col), Some(k)) = (nest.gens.last(), nest.sums.last()) else {
        return Vec::new();
    };
    let lanes = machine.lanes(element_bytes) as i64;
    let last_is = |r: &crate::nest::Read, v: &str| r.indices.last() == Some(&IndexExpr::var(v));
    let gathers = nest
        .reads
        .iter()
        .all(|r| !r.indices.last().is_some_and(|i| i.mentions(&col.name)));
    let contiguous = nest.reads.iter().any(|r| last_is(r, &k.name));
    if !gathers || !contiguous || k.extent < 2 * lanes {
        return Vec::new();
    }
    let outputs: f64 = nest.gens.iter().map(|g| g.extent.max(1) as f64).product();
    let input_lines: f64 = nest
        .input_shapes
        .iter()
        .map(|(_, s)| s.iter().product::<i64>() as f64 * element_bytes as f64 / 64.0)
        .sum();
    let row_lines = nest.reads.len() as f64 * k.extent as f64 * element_bytes as f64 / 64.0;
    let parallel = threads > 1 && nest.gens.first().is_some_and(|g| g.extent > 1);
    [1, 2, 4]
        .iter()
        .map(|&vectors| vectors * lanes)
        .filter(|&w| w <= k.extent)
        .map(|width| {
            size.variants += 1;
            let steps = (k.extent as f64 / width as f64).ceil() * (width / lanes) as f64;
            let cycles = outputs * (steps + width as f64 + row_lines * 2.0) + input_lines * 16.0;
            let divide = if parallel {
                (threads as f64).min(nest.gens[0].extent as f64)
            } else {
                1.0
            };
            Ranked {
                candidate: Candidate {
                    tile: Tile {
                        row: None,
                        rows: 1,
                        col: col.name.clone(),
                        cols: 1,
                        col_outer: false,
                        whole: false,
                    },
                    pack: None,
                    boundary: None,
                    local_copy: false,
                    stage: None,
                    relaid: None,
                    order: vec![Slot::Loop(k.name.clone())],
                    parallel,
                    partition_guards: false,
                    partial_sums: Some(width),
                    rolled: Vec::new(),
                    vector_width: None,
                    fixed: None,
                },
                estimate: cycles / divide,
            }
        })
        .collect()
}

/// The untiled candidates of an element-wise nest: the loops as written, the rows
/// vectorized whole, the outermost loop in parallel (Halide's `parallel`/`vectorize`
/// without a split), with and without the guards' loops partitioned.
fn whole_rows(
    nest: &Nest,
    machine: &Machine,
    element_bytes: usize,
    threads: usize,
    size: &mut SpaceSize,
) -> Vec<Ranked> {
    let Some(col) = nest.gens.last() else {
        return Vec::new();
    };
    let mut order: Vec<Slot> = nest.gens[..nest.gens.len() - 1]
        .iter()
        .map(|g| Slot::Loop(g.name.clone()))
        .collect();
    order.push(Slot::Tiles);
    let partitions: &[bool] = if nest.guard_vars.is_empty() {
        &[false]
    } else {
        &[false, true]
    };
    partitions
        .iter()
        .map(|&partition_guards| {
            let candidate = Candidate {
                tile: Tile {
                    row: None,
                    rows: 1,
                    col: col.name.clone(),
                    cols: col.extent.max(1),
                    col_outer: false,
                    whole: true,
                },
                pack: None,
                boundary: None,
                local_copy: false,
                stage: None,
                relaid: None,
                partial_sums: None,
                rolled: Vec::new(),
                vector_width: None,
                fixed: None,
                order: order.clone(),
                parallel: threads > 1 && nest.gens.len() > 1,
                partition_guards,
            };
            size.variants += 1;
            size.orders += 1;
            let estimate = estimate(nest, machine, &candidate, element_bytes, threads);
            Ranked {
                candidate,
                estimate,
            }
        })
        .collect()
}

/// The slots outside the tile in a legal starting order: the untiled gens, the tile
/// loops, the sums as written.
pub fn slots_of(nest: &Nest, row: Option<&str>) -> Vec<(Slot, SlotKind)> {
    let col = nest.gens.last().map(|g| g.name.as_str());
    let mut slots: Vec<(Slot, SlotKind)> = nest
        .gens
        .iter()
        .filter(|g| Some(g.name.as_str()) != col && Some(g.name.as_str()) != row)
        .map(|g| (Slot::Loop(g.name.clone()), SlotKind::Gen))
        .collect();
    slots.push((Slot::Tiles, SlotKind::Tiles));
    slots.extend(
        nest.sums
            .iter()
            .map(|s| (Slot::Loop(s.name.clone()), SlotKind::Sum)),
    );
    slots
}

/// The most straight-line code (see [`unrolled_code`]) a candidate may have. Measured
/// with gcc 12 at -O2 on a Zen 4, for the 3 x 3 depthwise convolution's 2 x 16 tile
/// partitioned at its borders in both loops (6 x 1 x 36 = 216): 2.4 s; with every tap
/// unrolled too (648, before lowering capped unrolling), 6 s alone and past the 10 s a
/// candidate's compile gets when two compiles shared the two cores, as in the search.
const UNROLLED_CODE_MAX: i64 = 400;

/// The vector statements the C compiler sees once it has unrolled a tile: the copies
/// of the tile's statement that lowering's unrolling makes (the row loop, then the
/// short sums around it from the innermost out while the product stays within the 16
/// copies lowering allows, as `atl_lower`'s annotations do), times the vectors of a
/// row, times the copies of the tile the partitions make (each tiled loop split into
/// full tiles and the last one, and, `at_guards`, those of a loop a guard mentions
/// into three parts).
fn unrolled_code(nest: &Nest, tile: &Tile, lanes: i64, at_guards: bool) -> i64 {
    use atl_lower::UNROLLED_COPIES_MAX;
    let rows = if tile.row.is_some() { tile.rows } else { 1 };
    let mut unrolled = rows;
    for sum in nest.sums.iter().rev() {
        if (2..=UNROLLED_COPIES_MAX).contains(&sum.extent)
            && unrolled * sum.extent <= UNROLLED_COPIES_MAX
        {
            unrolled *= sum.extent;
        }
    }
    let vectors = (tile.cols + lanes - 1) / lanes;
    let copies: i64 = tile
        .row
        .iter()
        .chain([&tile.col])
        .map(|v| {
            if at_guards && nest.guard_vars.contains(v) {
                2 * 3
            } else {
                2
            }
        })
        .product();
    unrolled * vectors * copies
}

/// Whether a candidate's bordered copy can be made per column tile instead
/// ([`Candidate::local_copy`]): the columns' tile loop is outside the rows' (or there
/// are no rows), no `sum` is outside the tiles (the window would be one of its
/// iterations), and the bordered read moves with the columns but not with the rows (a
/// window computed once serves every row tile), and so does every loop outside the
/// tiles (a loop it does not move with would compute the same window again at each of
/// its iterations).
fn local_copy_applies(nest: &Nest, candidate: &Candidate) -> bool {
    let Some(x) = &candidate.boundary else {
        return false;
    };
    let t = &candidate.tile;
    let Some(read) = nest.reads.iter().find(|r| &r.input == x) else {
        return false;
    };
    let moves_with = |v: &str| read.indices.iter().any(|i| i.mentions(v));
    (t.row.is_none() || t.col_outer)
        && !t.whole
        && moves_with(&t.col)
        && !t.row.as_deref().is_some_and(moves_with)
        && candidate
            .order
            .iter()
            .take_while(|s| **s != Slot::Tiles)
            .all(|s| matches!(s, Slot::Loop(n) if !is_sum(nest, s) && moves_with(n)))
}

fn is_sum(nest: &Nest, slot: &Slot) -> bool {
    matches!(slot, Slot::Loop(n) if nest.find(n).is_some_and(|l| l.reduction))
}

/// A matrix read `X[e, col]` whose row index does not move with the columns: `pack`
/// makes its tile's columns contiguous.
fn packable(nest: &Nest, read: &crate::nest::Read, col: &str) -> bool {
    use atl_lang::index::IndexExpr;
    // A matrix `X[k, col]`, or a batch of them `X[b, k, col]` with `b` a `gen` of the
    // nest (packed one batch at a time, at `b`).
    let matrix = match read.indices.as_slice() {
        [_, _] => &read.indices[..],
        [IndexExpr::Var(b), ..] if b != col && nest.gens.iter().any(|g| &g.name == b) => {
            &read.indices[1..]
        }
        _ => return false,
    };
    matrix[1] == IndexExpr::var(col)
        && !matrix[0].mentions(col)
        && nest.reads.iter().filter(|r| r.input == read.input).count() == 1
        && !read.guarded
}

/// A matrix read `X[col, e]` whose second index does not move with the columns: the
/// columns walk its first dimension, a strided gather, which `stage` (a transposed copy,
/// read `XT[e, col]`) makes contiguous.
fn stageable(nest: &Nest, read: &crate::nest::Read, col: &str) -> bool {
    read.indices.len() == 2
        && read.indices[0] == atl_lang::index::IndexExpr::var(col)
        && !read.indices[1].mentions(col)
        && nest.reads.iter().filter(|r| r.input == read.input).count() == 1
        && !read.guarded
}

//! The cost model: an estimate, in cycles, of a candidate's run time on the machine.
//!
//! It is compositional over the loop nest, from the register tile outwards, so the
//! e-graph's extraction can use it (`space.rs`): a loop `l` around a nest `child` costs
//! `trips(l) × child` plus the cache misses the loop adds. The pieces:
//! - the **register tile** (one iteration of every loop outside it): its vector
//!   multiply-adds (two per cycle), its loads (a row operand is broadcast, a column
//!   operand loaded a vector at a time), and, unless a `sum` loop sits directly around
//!   it (then the accumulators stay in registers across that loop), loading and storing
//!   its accumulators; more live vectors than the machine has registers spill;
//! - **cache misses** at each level: a loop whose whole footprint (the distinct lines
//!   its reads and writes touch) fits in a cache level loads each line once there;
//!   otherwise every iteration misses what its body misses.
//!
//! The model ranks; the measurements decide. Its order is compared with the measured
//! order in every search (the report's rank correlation).

use std::collections::BTreeSet;

use atl_lang::index::IndexExpr;

use crate::candidate::{Candidate, Slot};
use crate::machine::Machine;
use crate::nest::Nest;

/// Cycles a line costs when it comes from L2, L3 and memory (one core's share).
const LINE_CYCLES: [f64; 3] = [2.0, 6.0, 16.0];
const LINE_BYTES: f64 = 64.0;
/// The factor on last-level misses of a loop that walks memory against the written
/// order (see [`Model::around`]).
const AGAINST_ORDER: f64 = 1.5;
/// Vector multiply-adds of straight-line code in an unrolled tile before it costs.
const CODE_LIMIT: f64 = 160.0;
/// How many times a line missed by a read whose rows are a page (4 KiB) or more apart
/// costs what a prefetched line does: each row is a new page, where the prefetchers
/// stop, so the line's latency is paid, not its share of the bandwidth (a matmul's
/// unpacked `B` at 1024 columns, rows 4 KiB apart, measured 10 to 30 times slower than
/// packed on Zen 4).
const UNPREFETCHED: f64 = 4.0;
const PAGE_BYTES: f64 = 4096.0;
/// Loads a gathered lane costs (a vector whose lanes come from elements a row apart:
/// a scalar load and an insert per lane, or a gather instruction no faster). At one
/// load per lane the model ranked attention's score tiles reading `K[j, d]` along `j`
/// first; they measured 3.5 to 5.2 ms at N = 512, D = 64 (Zen 4, one thread) where the
/// same tiles reading the transposed copy took 0.5 to 1.0 ms, 7 to 10 times less.
const GATHER_LANE_LOADS: f64 = 6.0;
/// Cycles one entry into a loop costs (its set-up, its exit branch, the registers the
/// compiler reloads around it). Of two orders of the same loops, the one whose inner
/// loop is entered more often is slower: on conv1d (Zen 4, one thread, 5 x 32 tile,
/// `atl bench`), `sum c < 64` around `sum r < R` against `r` around `c` cost between 3
/// and 16 cycles more per entry into the short loop in two runs. With it, larger tiles
/// (fewer entries per multiply-add) rank higher, as they measure.
const LOOP_ENTRY: f64 = 8.0;

/// An estimate: cycles of computation and line misses per cache level.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cost {
    pub cycles: f64,
    /// Lines missed in L1, L2, L3 (each served by the next level).
    pub misses: [f64; 3],
    /// Of those, the lines of reads whose rows are a page or more apart: the hardware
    /// prefetchers stop at page boundaries, so each such line is waited for.
    pub paged: [f64; 3],
    /// The accumulator traffic one tile execution pays (kept to cancel it under a sum).
    pub accumulators: f64,
}

impl Cost {
    pub fn total(&self) -> f64 {
        self.cycles
            + self
                .misses
                .iter()
                .zip(&self.paged)
                .zip(LINE_CYCLES)
                .map(|((m, p), c)| m * c + p * c * (UNPREFETCHED - 1.0))
                .sum::<f64>()
    }
}

impl PartialOrd for Cost {
    fn partial_cmp(&self, other: &Cost) -> Option<std::cmp::Ordering> {
        self.total().partial_cmp(&other.total())
    }
}

/// A loop of the tiled nest, outside the register tile.
#[derive(Clone, Debug, PartialEq)]
pub struct TiledLoop {
    pub name: String,
    pub trips: f64,
    pub reduction: bool,
    /// Unrolled by lowering (see [`crate::nest::Loop::unrolled`]): entering it is free.
    pub unrolled: bool,
}

/// The model of one candidate's tile and copies; the order is what varies.
#[derive(Clone, Debug)]
pub struct Model<'n> {
    nest: &'n Nest,
    candidate_tile: (Option<String>, f64, String, f64),
    lanes: f64,
    registers: f64,
    element_bytes: f64,
    caches: [f64; 3],
    /// Reads the candidate copies (packed or zero-bordered): contiguous per tile.
    copied: BTreeSet<String>,
    /// The bordered copy is made per column tile ([`Candidate::local_copy`]): its
    /// writes stay in L1, only its reads of the input come from memory.
    local_copy: bool,
    /// A matrix the candidate reads through a transposed copy (`stage`): its indices
    /// are exchanged, its rows are as long as its first dimension.
    staged: Option<String>,
    /// The inputs read in another order than row-major (declared with a `layout`, and
    /// not copied row-major by the candidate, [`Candidate::relaid`]): their reads are
    /// modelled in storage order.
    storage_orders: std::collections::BTreeMap<String, Vec<usize>>,
    /// The input the candidate copies row-major ([`Candidate::relaid`]).
    relaid: Option<String>,
    /// The tiles partitioned at the guards: the interior (nearly all tiles) selects
    /// nothing.
    partitioned: bool,
    /// Each input's elements per row (its last dimension) and in all, at the sizes.
    input_rows: Vec<(String, f64)>,
    input_sizes: Vec<(String, f64)>,
}

impl<'n> Model<'n> {
    pub fn new(
        nest: &'n Nest,
        machine: &Machine,
        candidate: &Candidate,
        element_bytes: usize,
    ) -> Model<'n> {
        let t = &candidate.tile;
        let shape = |x: &str| {
            nest.input_shapes
                .iter()
                .find(|(n, _)| n == x)
                .map(|(_, s)| s.clone())
                .unwrap_or_default()
        };
        let inputs: Vec<&str> = nest.reads.iter().map(|r| r.input.as_str()).collect();
        Model {
            nest,
            candidate_tile: (
                t.row.clone(),
                t.rows.max(1) as f64,
                t.col.clone(),
                t.cols.max(1) as f64,
            ),
            lanes: machine.lanes(element_bytes) as f64,
            registers: machine.vector_registers as f64,
            element_bytes: element_bytes as f64,
            caches: [machine.l1d as f64, machine.l2 as f64, machine.l3 as f64],
            copied: candidate
                .pack
                .iter()
                .chain(&candidate.boundary)
                .cloned()
                .collect(),
            partitioned: candidate.partition_guards,
            local_copy: candidate.local_copy && candidate.boundary.is_some(),
            staged: candidate.stage.clone(),
            storage_orders: nest
                .layouts
                .iter()
                .filter(|(x, _)| candidate.relaid.as_ref() != Some(*x))
                .map(|(x, order)| (x.clone(), order.clone()))
                .collect(),
            relaid: candidate.relaid.clone(),
            input_rows: inputs
                .iter()
                .map(|x| {
                    let s = shape(x);
                    let stored_last = nest
                        .layouts
                        .get(*x)
                        .filter(|_| candidate.relaid.as_deref() != Some(*x))
                        .and_then(|order| order.last());
                    let row = if candidate.stage.as_deref() == Some(*x) {
                        s.first()
                    } else if let Some(&d) = stored_last {
                        s.get(d)
                    } else {
                        s.last()
                    };
                    (x.to_string(), row.copied().unwrap_or(1) as f64)
                })
                .collect(),
            input_sizes: inputs
                .iter()
                .map(|x| (x.to_string(), shape(x).iter().product::<i64>() as f64))
                .collect(),
        }
    }

    /// The loops a slot stands for, outermost first.
    pub fn slot_loops(&self, slot: &Slot, col_outer: bool) -> Vec<TiledLoop> {
        let (row, rows, col, cols) = &self.candidate_tile;
        let extent = |n: &str| self.nest.find(n).map_or(1.0, |l| l.extent as f64);
        match slot {
            Slot::Loop(n) => vec![TiledLoop {
                name: n.clone(),
                trips: extent(n),
                reduction: self.nest.find(n).is_some_and(|l| l.reduction),
                unrolled: self.nest.find(n).is_some_and(|l| l.unrolled),
            }],
            Slot::Tiles => {
                let c = TiledLoop {
                    name: format!("{col}/tiles"),
                    trips: (extent(col) / cols).ceil(),
                    reduction: false,
                    unrolled: false,
                };
                match row {
                    None => vec![c],
                    Some(r) => {
                        let r = TiledLoop {
                            name: format!("{r}/tiles"),
                            trips: (extent(r) / rows).ceil(),
                            reduction: false,
                            unrolled: false,
                        };
                        if col_outer { vec![c, r] } else { vec![r, c] }
                    }
                }
            }
        }
    }

    /// How far index `name` of the original nest spans when the tiled loops `inside`
    /// (names as [`TiledLoop::name`]) run: the tile's own extent for the tiled loops,
    /// times their tile loop's trips when it is inside too.
    fn span(&self, var: &str, inside: &BTreeSet<String>) -> f64 {
        let (row, rows, col, cols) = &self.candidate_tile;
        let extent = |n: &str| self.nest.find(n).map_or(1.0, |l| l.extent as f64);
        let tiled = |tile: f64| {
            let trips = (extent(var) / tile).ceil();
            if inside.contains(&format!("{var}/tiles")) {
                (tile * trips).min(extent(var))
            } else {
                tile.min(extent(var))
            }
        };
        if row.as_deref() == Some(var) {
            tiled(*rows)
        } else if col == var {
            tiled(*cols)
        } else if inside.contains(var) {
            extent(var)
        } else {
            1.0
        }
    }

    /// The range of values one index takes (linear indices: the sum of each variable's
    /// coefficient times its span).
    fn range(&self, index: &IndexExpr, inside: &BTreeSet<String>) -> f64 {
        let vars = index.vars();
        let at = |assign: &dyn Fn(&str) -> i64| {
            index
                .eval(&|n: &str| {
                    if vars.contains(n) {
                        Some(assign(n))
                    } else {
                        None
                    }
                })
                .unwrap_or(0)
        };
        let base = at(&|_| 0);
        let mut range = 1.0;
        for v in &vars {
            if self.nest.find(v).is_none() {
                continue; // a size
            }
            let coefficient = (at(&|n| i64::from(n == v.as_str())) - base).abs() as f64;
            range += coefficient * (self.span(v, inside) - 1.0);
        }
        range
    }

    /// Lines one access touches while the loops `inside` run, and how many of them a
    /// cache level of `ways`-way sets, `way_bytes` per way, can hold at once: a read
    /// whose rows are a power-of-two stride apart maps them to few sets (a matmul's
    /// `B[k, j]` with 4 KiB rows lands every row in the same L1 set), where a packed or
    /// bordered copy, laid out so that a tile's reads are contiguous, uses them all.
    fn lines(&self, indices: &[IndexExpr], inside: &BTreeSet<String>, copied: bool) -> (f64, f64) {
        let Some((last, outer)) = indices.split_last() else {
            return (1.0, f64::INFINITY);
        };
        let rows: f64 = outer.iter().map(|i| self.range(i, inside)).product();
        let row_elements = self.range(last, inside);
        if copied {
            let lines = (rows * row_elements * self.element_bytes / LINE_BYTES).ceil();
            return (lines.max(1.0), f64::INFINITY);
        }
        let per_row = (row_elements * self.element_bytes / LINE_BYTES)
            .ceil()
            .max(1.0);
        (rows * per_row, rows)
    }

    /// Whether the lines of every access within `inside` fit in a cache of `cap` bytes
    /// (8-way sets), how many lines they are, and how many of those are reads a
    /// reduction walks a page apart.
    fn fits(&self, inside: &BTreeSet<String>, cap: f64) -> (bool, f64, f64) {
        let ways = 8.0;
        let sets = (cap / ways / LINE_BYTES).max(1.0);
        let mut total = 0.0;
        let mut paged = 0.0;
        let mut fits = true;
        let accesses = self.accesses();
        let reads = accesses.len() - 1;
        for (k, (indices, stride, copied)) in accesses.into_iter().enumerate() {
            let (lines, rows) = self.lines(&indices, inside, copied);
            total += lines;
            if k < reads && self.page_walked(&indices, stride, copied) {
                paged += lines;
            }
            if rows > 1.0 && rows.is_finite() {
                // Rows `stride` bytes apart use sets / gcd(stride in lines, sets) sets.
                let step = (stride / LINE_BYTES).round().max(1.0) as u64;
                let sets_n = sets as u64;
                let reachable = (sets_n / gcd(step % sets_n, sets_n).max(1)).max(1) as f64;
                let per_row = lines / rows;
                if lines > reachable * per_row * ways {
                    fits = false;
                }
            }
        }
        (fits && total * LINE_BYTES <= cap, total, paged)
    }

    /// A read whose rows are a page or more apart, not copied, and chosen by a
    /// reduction (`B[k, j]` under `sum k`: each step of the reduction reads a new row,
    /// a new page; `A[i, k]` walks along its rows and is prefetched).
    fn page_walked(&self, indices: &[IndexExpr], stride: f64, copied: bool) -> bool {
        let Some((_, outer)) = indices.split_last() else {
            return false;
        };
        !copied
            && stride >= PAGE_BYTES
            && outer
                .iter()
                .any(|i| self.nest.sums.iter().any(|s| i.mentions(&s.name)))
    }

    /// The indices of a read as the candidate performs it: exchanged for the staged
    /// matrix, which is read through its transposed copy; in storage order for an input
    /// declared with a layout that the candidate reads in place.
    fn read_indices(&self, r: &crate::nest::Read) -> Vec<IndexExpr> {
        if self.staged.as_deref() == Some(r.input.as_str()) {
            r.indices.iter().rev().cloned().collect()
        } else if let Some(order) = self.storage_orders.get(&r.input) {
            order
                .iter()
                .filter_map(|&d| r.indices.get(d).cloned())
                .collect()
        } else {
            r.indices.clone()
        }
    }

    /// Every access (the reads and the output's write) with its row stride in bytes
    /// at the sizes searched for and whether it reads a copy.
    fn accesses(&self) -> Vec<(Vec<IndexExpr>, f64, bool)> {
        let last_extent = |input: Option<&str>| -> f64 {
            match input {
                Some(x) => self.input_row_elements(x),
                None => self.nest.gens.last().map_or(1.0, |g| g.extent as f64),
            }
        };
        let mut out: Vec<(Vec<IndexExpr>, f64, bool)> = self
            .nest
            .reads
            .iter()
            .map(|r| {
                (
                    self.read_indices(r),
                    last_extent(Some(&r.input)) * self.element_bytes,
                    self.copied.contains(&r.input),
                )
            })
            .collect();
        let write: Vec<IndexExpr> = self
            .nest
            .gens
            .iter()
            .map(|g| IndexExpr::var(g.name.clone()))
            .collect();
        out.push((write, last_extent(None) * self.element_bytes, false));
        out
    }

    /// Elements in one row (the last dimension) of input `x`.
    fn input_row_elements(&self, x: &str) -> f64 {
        self.input_rows
            .iter()
            .find(|(n, _)| n == x)
            .map_or(1.0, |(_, e)| *e)
    }

    /// Lines of the output's write within `inside`.
    fn write_lines(&self, inside: &BTreeSet<String>) -> f64 {
        self.accesses().last().map_or(0.0, |(indices, _, copied)| {
            self.lines(indices, inside, *copied).0
        })
    }

    /// The loops inside the register tile, by the names [`Model::span`] knows.
    pub fn tile_loops(&self) -> BTreeSet<String> {
        let (row, _, col, _) = &self.candidate_tile;
        row.iter().chain([col]).cloned().collect()
    }

    /// One execution of the register tile.
    pub fn tile(&self) -> Cost {
        let (row, rows, col, cols) = &self.candidate_tile;
        let rows = if row.is_some() { *rows } else { 1.0 };
        let vectors_per_row = (cols / self.lanes).ceil();
        let accumulators = rows * vectors_per_row;
        let reduction = !self.nest.sums.is_empty();
        // A guarded read that is not bordered is a select per element.
        let selects = self
            .nest
            .reads
            .iter()
            .filter(|r| r.guarded && !self.partitioned && !self.copied.contains(&r.input))
            .count() as f64;
        let ops = self.nest.ops as f64 + 2.0 * selects;
        let compute = accumulators * ops / 2.0;
        let mut loads = 0.0;
        for r in &self.nest.reads {
            let indices = self.read_indices(r);
            let by_row = row
                .as_deref()
                .is_some_and(|rw| indices.iter().any(|i| i.mentions(rw)));
            let by_col = indices.iter().any(|i| i.mentions(col));
            // The columns in another index than the last: a strided gather, one load
            // per lane.
            let gathered = by_col && !indices.last().is_some_and(|i| i.mentions(col));
            let per_vector = if gathered {
                GATHER_LANE_LOADS * self.lanes
            } else {
                1.0
            };
            loads += if by_row { rows } else { 1.0 }
                * if by_col {
                    vectors_per_row * per_vector
                } else {
                    1.0
                };
        }
        // The column operand can be a memory operand of the multiply-add and the row
        // operand a broadcast: the accumulators and one temporary are live.
        let live = accumulators + 1.0;
        let spill = if live > self.registers {
            1.0 + 4.0 * (live - self.registers) / self.registers
        } else {
            1.0
        };
        let accumulator_traffic = if reduction {
            2.0 * accumulators
        } else {
            accumulators
        };
        let (misses, paged) = self.misses_of(&self.tile_loops());
        // Sums of a few iterations (a 3 x 3 window) are unrolled by the compiler
        // around the whole tile: past a few hundred multiply-adds of straight-line
        // code, GCC takes tens of seconds and schedules it worse.
        let unrolled: f64 = self
            .nest
            .sums
            .iter()
            .filter(|l| l.extent <= 4)
            .map(|l| l.extent as f64)
            .product();
        let code = accumulators * unrolled;
        let bloat = if code > CODE_LIMIT {
            code / CODE_LIMIT
        } else {
            1.0
        };
        Cost {
            cycles: compute.max(loads / 2.0) * spill * bloat + accumulator_traffic,
            misses,
            paged,
            accumulators: if reduction { accumulator_traffic } else { 0.0 },
        }
    }

    /// The lines of every access within `inside`, at each level, and the paged ones.
    fn misses_of(&self, inside: &BTreeSet<String>) -> ([f64; 3], [f64; 3]) {
        let (_, lines, paged) = self.fits(inside, f64::INFINITY);
        ([lines; 3], [paged; 3])
    }

    /// Lines a copy (`pack`, `boundary`, `stage`) reads and writes once, before the nest
    /// (a local copy: reads, its writes stay in L1).
    pub fn copies(&self) -> f64 {
        let passes = if self.local_copy { 1.0 } else { 2.0 };
        self.copied
            .iter()
            .chain(&self.staged)
            .chain(&self.relaid)
            .map(|x| {
                let elements: f64 = self
                    .input_sizes
                    .iter()
                    .find(|(n, _)| n == x)
                    .map_or(0.0, |(_, e)| *e);
                passes * elements * self.element_bytes / LINE_BYTES
            })
            .sum()
    }

    /// A loop `l` around a nest that costs `child`; `inside` are the loops of the child
    /// (by [`TiledLoop::name`], the tile's own loops included); `child_is_tile`: the
    /// child is the register tile itself.
    pub fn around(
        &self,
        l: &TiledLoop,
        inside: &BTreeSet<String>,
        child: &Cost,
        child_is_tile: bool,
    ) -> Cost {
        let mut cycles = l.trips * child.cycles;
        if !l.unrolled {
            cycles += LOOP_ENTRY;
        }
        let mut accumulators = 0.0;
        if l.reduction && child_is_tile {
            // The accumulators stay in registers across the reduction.
            cycles -= (l.trips - 1.0).max(0.0) * child.accumulators;
        } else {
            accumulators = child.accumulators;
        }
        let mut with_l = inside.clone();
        with_l.insert(l.name.clone());
        // A loop around one written inside it walks memory against the written
        // (row-major) order: where its footprint does not fit in the last level, the
        // hardware prefetchers lose the stream at each of its steps, so what it
        // misses there costs more (and of two orders that miss alike, the written one
        // wins).
        let against = self.against_written_order(&l.name, inside);
        // Under the reduction directly around the tile, the output is written once,
        // after it (the accumulators hold it meanwhile): only the reads miss at each
        // step.
        let written_once = if l.reduction && child_is_tile {
            self.write_lines(inside)
        } else {
            0.0
        };
        let mut misses = [0.0; 3];
        let mut paged = [0.0; 3];
        for (level, cap) in self.caches.iter().enumerate() {
            let (fits, lines, paged_lines) = self.fits(&with_l, *cap);
            let per_step = (child.misses[level] - written_once).max(0.0);
            let factor = if level == 2 && against {
                AGAINST_ORDER
            } else {
                1.0
            };
            (misses[level], paged[level]) = if fits {
                (lines, paged_lines)
            } else {
                (
                    factor * l.trips * per_step + written_once,
                    factor * l.trips * child.paged[level],
                )
            };
        }
        Cost {
            cycles,
            misses,
            paged,
            accumulators,
        }
    }

    /// Whether the loop `name` placed around the loops `inside` (by
    /// [`TiledLoop::name`]) has a `gen` written inside it among them.
    fn against_written_order(&self, name: &str, inside: &BTreeSet<String>) -> bool {
        let var = |n: &str| n.strip_suffix("/tiles").unwrap_or(n).to_string();
        let position = |n: &str| self.nest.gens.iter().position(|g| g.name == var(n));
        let Some(here) = position(name) else {
            return false;
        };
        inside.iter().any(|n| position(n).is_some_and(|p| p < here))
    }

    /// The cost of a whole order (outermost first), folded from the tile outwards.
    pub fn estimate(&self, order: &[Slot], col_outer: bool) -> Cost {
        let mut inside = self.tile_loops();
        let mut cost = self.tile();
        let mut child_is_tile = true;
        for slot in order.iter().rev() {
            for l in self.slot_loops(slot, col_outer).iter().rev() {
                cost = self.around(l, &inside, &cost, child_is_tile);
                inside.insert(l.name.clone());
                child_is_tile = false;
            }
        }
        cost
    }
}

/// The estimated time of a candidate, in cycles, with its outermost loop in parallel
/// over `threads` when it says so.
pub fn estimate(
    nest: &Nest,
    machine: &Machine,
    candidate: &Candidate,
    element_bytes: usize,
    threads: usize,
) -> f64 {
    let model = Model::new(nest, machine, candidate, element_bytes);
    let total = model
        .estimate(&candidate.order, candidate.tile.col_outer)
        .total()
        + model.copies() * LINE_CYCLES[2];
    let outer_trips = candidate
        .order
        .first()
        .map(|s| model.slot_loops(s, candidate.tile.col_outer))
        .and_then(|ls| ls.first().map(|l| l.trips))
        .unwrap_or(1.0);
    if candidate.parallel {
        total / (threads as f64).min(outer_trips).max(1.0)
    } else {
        total
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

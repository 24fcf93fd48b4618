//! A candidate schedule and the directives that write it. A candidate is a register
//! tile (a `gen` loop `row`, optional, by `rows`, and the unit-stride `gen` loop `col` by
//! `cols`, the tile's loops innermost), an optional packed copy of one operand
//! (`pack`), transposed copy (`stage`) or zero-bordered copy (`boundary`), the order of the loops outside the
//! tile, and whether the outermost loop runs in parallel. [`Candidate::steps`] renders it
//! as ordinary directives, which the derivation engine expands into checked rule steps:
//! the search is never trusted, whatever it proposes is checked like a user's schedule.

use std::collections::BTreeSet;

use crate::nest::Nest;

/// A loop outside the register tile, in the order the candidate places them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Slot {
    /// A loop of the specification that is not tiled (a `gen` or a `sum`).
    Loop(String),
    /// The tile loops of `row` and `col`, adjacent (a split leaves them so).
    Tiles,
}

/// The register tile.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Tile {
    /// The second tiled `gen` (rows of the tile), if any.
    pub row: Option<String>,
    pub rows: i64,
    /// The output's unit-stride `gen` (columns of the tile, the vector lanes).
    pub col: String,
    pub cols: i64,
    /// The tile loop of `col` outside that of `row`.
    pub col_outer: bool,
    /// No tile at all: `col` is not split (an element-wise map vectorized along its
    /// whole rows); `row` is then `None` and `cols` the extent searched for.
    pub whole: bool,
}

/// One point of the search space.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Candidate {
    pub tile: Tile,
    /// `pack X by cols into XP`: the packed copy of the operand read with the columns.
    pub pack: Option<String>,
    /// `boundary X into XB`: the zero-bordered copy of a guarded read.
    pub boundary: Option<String>,
    /// The bordered copy computed per column tile (`compute_at XB at` the columns' tile
    /// loop, outside the rows' one): a window of the input, written and read in L1,
    /// rather than the whole input bordered before the nest (Halide's Adams2019 does
    /// this to the convolution's input).
    pub local_copy: bool,
    /// `stage X into XT order 1, 0`: the transposed copy of a matrix read with the
    /// columns in its first index (`U[r, k]` in TTM), so that it is read along them.
    pub stage: Option<String>,
    /// `stage X into XR order 0, 1, …`: a row-major copy (in the program's order of
    /// dimensions) of an input declared with another storage order (a column-major
    /// matrix), made once, so that the tile reads it as it reads a row-major input.
    pub relaid: Option<String>,
    /// The loops outside the tile, outermost first.
    pub order: Vec<Slot>,
    pub parallel: bool,
    /// `partition` of the tile loops at the guards (boundary conditions): the interior
    /// tiles run without them, the border tiles keep them.
    pub partition_guards: bool,
    /// No tile: the innermost `sum` vectorized as this many partial sums (`split`,
    /// `rfactor`, `reorder`, `vectorize`: dot products along contiguous rows, a matrix-
    /// vector product's), each output element one at a time. The other fields but
    /// `parallel` are then unused.
    pub partial_sums: Option<i64>,
    /// Loops kept rolled (`unroll x off`, after the other directives: the names are
    /// those of the derived program, copies included): a convolution's short taps whose
    /// unrolling around the tile took the C compiler too long.
    pub rolled: Vec<String>,
    /// `vector_width N`: the SIMD width the kernel asks the C compiler to prefer, when
    /// it is not left to the compiler's default (a twin of the best candidate, timed
    /// with each width the machine has: gcc's default differs between CPUs).
    pub vector_width: Option<u32>,
    /// A stage that is not one nest (a softmax's rows, with stages computed per row):
    /// a schedule written out, `(summary, directives)`. The other fields are unused.
    pub fixed: Option<(String, Vec<String>)>,
}

/// `base`, or `base2`, `base3`, … if it is in `used` or reserved in C (`d` + `o` is
/// `do`); the name chosen is then used.
pub(crate) fn fresh_in(used: &mut BTreeSet<String>, base: String) -> String {
    let mut name = base.clone();
    let mut k = 2;
    while used.contains(&name) || atl_loopir::cnames::reserved(&name).is_some() {
        name = format!("{base}{k}");
        k += 1;
    }
    used.insert(name.clone());
    name
}

/// The names a candidate's directives introduce, fresh in the program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Names {
    pub row_tiles: String,
    pub row_in: String,
    pub col_tiles: String,
    pub col_in: String,
    pub packed: String,
    pub bordered: String,
    pub staged: String,
    pub relaid: String,
}

impl Names {
    /// Fresh names for the tile loops of `row`/`col` and the copies, avoiding every name
    /// of the nest and the loop names `pack` itself introduces.
    pub fn fresh(
        nest: &Nest,
        row: &str,
        col: &str,
        packed_input: &str,
        relaid_input: Option<&str>,
    ) -> Names {
        let mut used: BTreeSet<String> = nest.names().map(str::to_string).collect();
        used.extend(["io", "ii", "jo", "ji", "k1"].map(str::to_string));
        let mut take = |base: String| fresh_in(&mut used, base);
        Names {
            row_tiles: take(format!("{row}t")),
            row_in: take(format!("{row}r")),
            col_tiles: take(format!("{col}t")),
            col_in: take(format!("{col}r")),
            packed: take(format!("{packed_input}p")),
            bordered: take(format!("{packed_input}b")),
            staged: take(format!("{packed_input}t")),
            relaid: take(format!("{}r", relaid_input.unwrap_or(packed_input))),
        }
    }
}

impl Candidate {
    /// A schedule written out ([`Candidate::fixed`]).
    pub fn written(summary: &str, steps: &[String]) -> Candidate {
        Candidate {
            tile: Tile {
                row: None,
                rows: 1,
                col: String::new(),
                cols: 1,
                col_outer: false,
                whole: true,
            },
            pack: None,
            boundary: None,
            local_copy: false,
            stage: None,
            relaid: None,
            order: Vec::new(),
            parallel: false,
            partition_guards: false,
            partial_sums: None,
            rolled: Vec::new(),
            vector_width: None,
            fixed: Some((summary.to_string(), steps.to_vec())),
        }
    }

    /// The directives of the candidate, one per line (the body of a `derive` block):
    /// the nest's prefix (its stages inlined, or the stages before it scheduled), the
    /// candidate's own, the nest's suffix (the stages after it scheduled).
    pub fn steps(&self, nest: &Nest) -> Vec<String> {
        let mut steps = nest.prefix.clone();
        let own = match (&self.fixed, self.partial_sums) {
            (Some((_, fixed)), _) => fixed.clone(),
            (None, Some(width)) => self.partial_sum_steps(nest, width),
            (None, None) => self.tile_steps(nest),
        };
        steps.extend(own.iter().map(|s| nest.spell(s)));
        steps.extend(self.rolled.iter().map(|l| format!("unroll {l} off")));
        if let Some(bits) = self.vector_width {
            steps.push(format!("vector_width {bits}"));
        }
        steps.extend(nest.suffix.iter().cloned());
        steps
    }

    /// The register tile's directives.
    fn tile_steps(&self, nest: &Nest) -> Vec<String> {
        let t = &self.tile;
        let row = t.row.as_deref().unwrap_or("");
        let copied = self
            .pack
            .as_deref()
            .or(self.boundary.as_deref())
            .or(self.stage.as_deref())
            .unwrap_or("x");
        let names = Names::fresh(nest, row, &t.col, copied, self.relaid.as_deref());
        let mut steps = Vec::new();
        if let Some(x) = &self.relaid {
            let rank = nest.layouts.get(x).map_or(0, Vec::len);
            let order: Vec<String> = (0..rank).map(|d| d.to_string()).collect();
            steps.push(format!(
                "stage {x} into {} order {}",
                names.relaid,
                order.join(", ")
            ));
        }
        if let Some(x) = &self.boundary {
            steps.push(format!("boundary {x} into {}", names.bordered));
        }
        if let Some(x) = &self.pack {
            steps.push(format!("pack {x} by {} into {}", t.cols, names.packed));
        }
        if let Some(x) = &self.stage {
            steps.push(format!("stage {x} into {} order 1, 0", names.staged));
        }
        // Before tiling, the loops that end outside the tile loops (the untiled gens,
        // and the sums placed there) in their order, then the tiled pair adjacent and
        // in the tile's order: after `tile`, no loop crosses the tile loops.
        let pair: Vec<&str> = match (&t.row, t.col_outer) {
            (None, _) => vec![t.col.as_str()],
            (Some(r), false) => vec![r.as_str(), t.col.as_str()],
            (Some(r), true) => vec![t.col.as_str(), r.as_str()],
        };
        let mut wanted: Vec<&str> = self
            .order
            .iter()
            .take_while(|s| **s != Slot::Tiles)
            .filter_map(|s| match s {
                Slot::Loop(n) => Some(n.as_str()),
                Slot::Tiles => None,
            })
            .collect();
        wanted.extend(&pair);
        let written: Vec<&str> = nest.loops().map(|l| l.name.as_str()).collect();
        let in_place = written
            .iter()
            .filter(|n| wanted.contains(n))
            .copied()
            .collect::<Vec<&str>>()
            == wanted;
        if !in_place {
            steps.push(format!("reorder {}", wanted.join(", ")));
        }
        if t.whole {
            // No split: the guards' loops partitioned innermost first (each partition
            // copies the loops inside it, whose first copy keeps the name), then the
            // outermost loop in parallel and the rows vectorized.
            if self.partition_guards {
                for l in wanted.iter().rev() {
                    if nest.guard_vars.contains(*l) {
                        steps.push(format!("partition {l}"));
                    }
                }
            }
            if self.parallel
                && let Some(first) = wanted.first()
            {
                steps.push(format!("parallel {first}"));
            }
            if nest.sums.is_empty() {
                steps.push(format!("vectorize {}", t.col));
            }
            return steps;
        }
        match (&t.row, t.col_outer) {
            (None, _) => steps.push(format!(
                "split {} by {} into {}, {}",
                t.col, t.cols, names.col_tiles, names.col_in
            )),
            (Some(r), false) => steps.push(format!(
                "tile {r}, {} by {}, {} into {}, {}, {}, {}",
                t.col, t.rows, t.cols, names.row_tiles, names.col_tiles, names.row_in, names.col_in
            )),
            (Some(r), true) => steps.push(format!(
                "tile {}, {r} by {}, {} into {}, {}, {}, {}",
                t.col, t.cols, t.rows, names.col_tiles, names.row_tiles, names.col_in, names.row_in
            )),
        }
        steps.push("simpl".to_string());
        let tiles: Vec<&str> = match (&t.row, t.col_outer) {
            (None, _) => vec![names.col_tiles.as_str()],
            (Some(_), false) => vec![names.row_tiles.as_str(), names.col_tiles.as_str()],
            (Some(_), true) => vec![names.col_tiles.as_str(), names.row_tiles.as_str()],
        };
        let mut order: Vec<&str> = Vec::new();
        for s in &self.order {
            match s {
                Slot::Loop(n) => order.push(n),
                Slot::Tiles => order.extend(&tiles),
            }
        }
        if t.row.is_some() {
            order.push(&names.row_in);
        }
        order.push(&names.col_in);
        steps.push(format!("reorder {}", order.join(", ")));
        if self.local_copy && self.boundary.is_some() {
            steps.push(format!(
                "compute_at {} at {}",
                names.bordered, names.col_tiles
            ));
        }
        // The full tiles apart from the last one, whatever the sizes searched for: the
        // kernel is for every size, and a tail guard left in the steady state costs
        // as much on sizes that are multiples as on others.
        if t.row.is_some() {
            steps.push(format!("partition {}", names.row_tiles));
        }
        steps.push(format!("partition {}", names.col_tiles));
        // Then the guard-free interior: the full tiles partitioned again at the guards,
        // the inner tile loop first (its first copy, in the full tiles of the outer
        // one, keeps the name), then the outer.
        if self.partition_guards {
            for (var, tile_loop) in pair.iter().zip(&tiles).rev() {
                if nest.guard_vars.contains(*var) {
                    steps.push(format!("partition {tile_loop}"));
                }
            }
        }
        if self.parallel
            && let Some(first) = order.first()
        {
            steps.push(format!("parallel {first}"));
        }
        if nest.sums.is_empty() {
            steps.push(format!("vectorize {}", names.col_in));
        }
        steps
    }

    /// `split k by W`, `rfactor` of the inner loop into `W` partial sums, which the
    /// vector lanes hold (`reorder ko, l`, `vectorize l`), then `parallel` on the
    /// outermost `gen`.
    fn partial_sum_steps(&self, nest: &Nest, width: i64) -> Vec<String> {
        let Some(k) = nest.sums.last() else {
            return Vec::new();
        };
        let mut used: BTreeSet<String> = nest.names().map(str::to_string).collect();
        let mut take = |base: String| fresh_in(&mut used, base);
        let (outer, inner) = (take(format!("{}o", k.name)), take(format!("{}i", k.name)));
        let (lane, part) = (take("l".to_string()), take("part".to_string()));
        let mut steps = vec![
            format!("split {} by {width} into {outer}, {inner}", k.name),
            format!("rfactor {inner} into {lane} as {part}"),
            format!("reorder {outer}, {lane}"),
            format!("vectorize {lane}"),
        ];
        if self.parallel
            && let Some(first) = nest.gens.first()
        {
            steps.push(format!("parallel {}", first.name));
        }
        steps
    }

    /// A one-line summary (`tile j x i 16 x 6, pack B, order jt, it, k, parallel`).
    pub fn summary(&self) -> String {
        let mut s = self.schedule_summary();
        if let Some(bits) = self.vector_width {
            s.push_str(&format!(", {bits}-bit vectors"));
        }
        s
    }

    /// The summary of the schedule's own directives.
    fn schedule_summary(&self) -> String {
        if let Some((summary, _)) = &self.fixed {
            return summary.clone();
        }
        if let Some(width) = self.partial_sums {
            let k = self
                .order
                .first()
                .map_or("the reduction".to_string(), |s| match s {
                    Slot::Loop(n) => n.clone(),
                    Slot::Tiles => "the reduction".to_string(),
                });
            return format!(
                "{width} partial sums of {k} in the vector lanes{}",
                if self.parallel { ", parallel" } else { "" }
            );
        }
        let t = &self.tile;
        let mut s = match &t.row {
            None if t.whole => format!("rows of {} whole", t.col),
            Some(r) if t.col_outer => format!(
                "tile {r} x {} by {} x {} ({} tiles outside)",
                t.col, t.rows, t.cols, t.col
            ),
            Some(r) => format!("tile {r} x {} by {} x {}", t.col, t.rows, t.cols),
            None => format!("split {} by {}", t.col, t.cols),
        };
        if let Some(x) = &self.pack {
            s.push_str(&format!(", pack {x}"));
        }
        if let Some(x) = &self.boundary {
            s.push_str(&format!(", boundary {x}"));
            if self.local_copy {
                s.push_str(&format!(" per {} tile", t.col));
            }
        }
        if let Some(x) = &self.stage {
            s.push_str(&format!(", stage {x} transposed"));
        }
        if let Some(x) = &self.relaid {
            s.push_str(&format!(", {x} copied row-major"));
        }
        if self.partition_guards {
            s.push_str(", partitioned at the guards");
        }
        let order: Vec<String> = self
            .order
            .iter()
            .map(|o| match o {
                Slot::Loop(n) => n.clone(),
                Slot::Tiles => "tiles".to_string(),
            })
            .collect();
        s.push_str(&format!(", order {}", order.join(" ")));
        if self.parallel {
            s.push_str(", parallel");
        }
        if !self.rolled.is_empty() {
            s.push_str(&format!(", {} kept rolled", self.rolled.join(" ")));
        }
        s
    }
}

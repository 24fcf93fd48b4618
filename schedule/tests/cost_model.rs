//! What the cost model must get right, each a fact measured on real kernels (the
//! numbers are from `atl schedule` on an AMD Zen 4, AVX-512, one thread):
//! - a matmul whose `B` rows are 4 KiB apart runs 10 to 30 times slower unpacked than
//!   packed (600 to 1500 ms against 22 to 60 ms at 1024³): the model ranks `pack B`
//!   first;
//! - a register tile needs its accumulators in registers: more than the machine has
//!   spill;
//! - the reduction directly around the tile keeps the accumulators in registers; a
//!   reduction outside the tile loops loads and stores them at every step.
//!
//! And the directives a candidate writes, for a matmul, as a user would write them.

mod common;

use atl_schedule::candidate::{Candidate, Slot, Tile};
use atl_schedule::cost::estimate;
use atl_schedule::machine::Machine;
use atl_schedule::nest::{Loop, Nest, Read};

fn machine() -> Machine {
    common::avx512_machine()
}

fn index(text: &str) -> atl_lang::index::IndexExpr {
    atl_lang::parser::parse_index_str(text).expect("index")
}

/// `gen i < n, j < n: sum k < n: A[i, k] * B[k, j]`.
fn matmul(n: i64) -> Nest {
    let lp = |name: &str, reduction| Loop {
        name: name.into(),
        reduction,
        extent: n,
        unrolled: false,
    };
    common::nest(
        "matmul",
        vec![lp("i", false), lp("j", false)],
        vec![lp("k", true)],
        vec![
            Read {
                input: "A".into(),
                indices: vec![index("i"), index("k")],
                guarded: false,
            },
            Read {
                input: "B".into(),
                indices: vec![index("k"), index("j")],
                guarded: false,
            },
        ],
        vec![("A".into(), vec![n, n]), ("B".into(), vec![n, n])],
    )
}

fn tile(rows: i64, cols: i64, pack: bool, order: Vec<Slot>) -> Candidate {
    Candidate {
        tile: Tile {
            row: Some("i".into()),
            rows,
            col: "j".into(),
            cols,
            col_outer: false,
            whole: false,
        },
        pack: pack.then(|| "B".to_string()),
        stage: None,
        relaid: None,
        partial_sums: None,
        rolled: Vec::new(),
        vector_width: None,
        fixed: None,
        boundary: None,
        local_copy: false,
        order,
        parallel: false,
        partition_guards: false,
    }
}

fn tiles_then_k() -> Vec<Slot> {
    vec![Slot::Tiles, Slot::Loop("k".into())]
}

#[test]
fn packing_a_4k_strided_operand_wins() {
    let nest = matmul(1024);
    let m = machine();
    let packed = estimate(&nest, &m, &tile(6, 32, true, tiles_then_k()), 4, 1);
    let unpacked = estimate(&nest, &m, &tile(6, 32, false, tiles_then_k()), 4, 1);
    assert!(
        packed * 2.0 < unpacked,
        "packed {packed}, unpacked {unpacked}"
    );
}

#[test]
fn accumulators_beyond_the_registers_cost() {
    let nest = matmul(1024);
    let m = machine();
    // 6 x 64 is 24 accumulators (of 32 registers); 16 x 64 is 64.
    let fits = estimate(&nest, &m, &tile(6, 64, true, tiles_then_k()), 4, 1);
    let spills = estimate(&nest, &m, &tile(16, 64, true, tiles_then_k()), 4, 1);
    assert!(fits < spills, "fits {fits}, spills {spills}");
    // On an AVX2 machine (16 registers, 8 lanes), 6 x 16 (12 accumulators) fits and
    // 6 x 32 (24) does not.
    let avx2 = Machine {
        isa: "avx2".into(),
        vector_bytes: 32,
        vector_registers: 16,
        ..m
    };
    let small = estimate(&nest, &avx2, &tile(6, 16, true, tiles_then_k()), 4, 1);
    let large = estimate(&nest, &avx2, &tile(6, 32, true, tiles_then_k()), 4, 1);
    assert!(small < large, "6x16 {small}, 6x32 {large}");
}

#[test]
fn the_reduction_belongs_directly_around_the_tile() {
    let nest = matmul(512);
    let m = machine();
    let inside = estimate(&nest, &m, &tile(6, 32, true, tiles_then_k()), 4, 1);
    let outside = estimate(
        &nest,
        &m,
        &tile(6, 32, true, vec![Slot::Loop("k".into()), Slot::Tiles]),
        4,
        1,
    );
    assert!(inside < outside, "k inside {inside}, k outside {outside}");
}

#[test]
fn a_parallel_outer_loop_divides_the_estimate_by_the_threads_it_can_use() {
    let nest = matmul(512);
    let m = machine();
    let mut c = tile(6, 32, true, tiles_then_k());
    let one = estimate(&nest, &m, &c, 4, 2);
    c.parallel = true;
    let two = estimate(&nest, &m, &c, 4, 2);
    assert!((one / two - 2.0).abs() < 1e-9, "{one} / {two}");
}

#[test]
fn a_candidate_is_written_as_the_directives_a_user_would_write() {
    let nest = matmul(1024);
    let mut c = tile(6, 32, true, tiles_then_k());
    assert_eq!(
        c.steps(&nest),
        [
            "pack B by 32 into Bp",
            "tile i, j by 6, 32 into it, jt, ir, jr",
            "simpl",
            "reorder it, jt, k, ir, jr",
            "partition it",
            "partition jt",
        ]
    );
    // The columns' tile loop outside, in parallel: the pair is ordered before tiling.
    c.tile.col_outer = true;
    c.parallel = true;
    assert_eq!(
        c.steps(&nest),
        [
            "pack B by 32 into Bp",
            "reorder j, i",
            "tile j, i by 32, 6 into jt, it, jr, ir",
            "simpl",
            "reorder jt, it, k, ir, jr",
            "partition it",
            "partition jt",
            "parallel jt",
        ]
    );
    // A reduction outside the tile loops is moved there before tiling.
    let c = tile(6, 32, false, vec![Slot::Loop("k".into()), Slot::Tiles]);
    assert_eq!(
        c.steps(&nest),
        [
            "reorder k, i, j",
            "tile i, j by 6, 32 into it, jt, ir, jr",
            "simpl",
            "reorder k, it, jt, ir, jr",
            "partition it",
            "partition jt",
        ]
    );
}

/// `gen n < 8, k < 64, p < 1024: sum c < 64, r < R: w[k, c, r] * x[n, c, p + r]`, with
/// `r`'s extent a size (a loop in the C) or, `unrolled`, the number 3.
fn conv1d(unrolled: bool) -> Nest {
    let lp = |name: &str, reduction, extent| Loop {
        name: name.into(),
        reduction,
        extent,
        unrolled: false,
    };
    let mut r = lp("r", true, 3);
    r.unrolled = unrolled;
    common::nest(
        "conv",
        vec![lp("n", false, 8), lp("k", false, 64), lp("p", false, 1024)],
        vec![lp("c", true, 64), r],
        vec![
            Read {
                input: "w".into(),
                indices: vec![index("k"), index("c"), index("r")],
                guarded: false,
            },
            Read {
                input: "x".into(),
                indices: vec![index("n"), index("c"), index("p + r")],
                guarded: false,
            },
        ],
        vec![
            ("w".into(), vec![64, 64, 3]),
            ("x".into(), vec![8, 64, 1026]),
        ],
    )
}

#[test]
fn a_short_loop_entered_at_every_step_of_a_long_one_costs_its_entries() {
    let m = machine();
    let order = |a: &str, b: &str| {
        vec![
            Slot::Loop("n".into()),
            Slot::Tiles,
            Slot::Loop(a.into()),
            Slot::Loop(b.into()),
        ]
    };
    let conv_tile = |order| Candidate {
        tile: Tile {
            row: Some("k".into()),
            rows: 5,
            col: "p".into(),
            cols: 32,
            col_outer: false,
            whole: false,
        },
        // Read through a bordered copy: contiguous, no rows 4 KiB apart in one set.
        boundary: Some("x".into()),
        ..tile(5, 32, false, order)
    };
    // `r < R` inside `c < 64` is entered 64 times per tile, `c` inside `r` three times;
    // what they miss differs too, the entries are what unrolling takes away.
    let difference = |unrolled: bool| {
        let nest = conv1d(unrolled);
        let short_inside = estimate(&nest, &m, &conv_tile(order("c", "r")), 4, 1);
        let long_inside = estimate(&nest, &m, &conv_tile(order("r", "c")), 4, 1);
        short_inside - long_inside
    };
    let looped = difference(false);
    assert!(
        looped > 0.0,
        "r inside c costs {looped} less than c inside r"
    );
    // Unrolled by lowering (`r < 3` written as a number), `r` is no loop to enter: the
    // orders differ only by what they miss.
    let unrolled = difference(true);
    assert!(
        unrolled < looped,
        "unrolled: r inside c costs {unrolled} more, looped: {looped} more"
    );
}

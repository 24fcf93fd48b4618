//! The e-graph of loop orders holds exactly the legal orders (checked against brute
//! force over all permutations), and its extraction finds the cheapest of them under
//! the cost model.

mod common;

use std::collections::BTreeSet;

use atl_schedule::candidate::{Candidate, Slot, Tile};
use atl_schedule::cost::Model;
use atl_schedule::machine::Machine;
use atl_schedule::nest::{Loop, Nest, Read};
use atl_schedule::space::{SlotKind, Space, exchangeable};
use atl_schedule::variants::slots_of;

fn machine() -> Machine {
    common::avx512_machine()
}

fn lp(name: &str, reduction: bool, extent: i64) -> Loop {
    Loop {
        name: name.into(),
        reduction,
        extent,
        unrolled: false,
    }
}

fn read(input: &str, indices: &[&str]) -> Read {
    Read {
        input: input.into(),
        indices: indices
            .iter()
            .map(|i| atl_lang::parser::parse_index_str(i).expect("index"))
            .collect(),
        guarded: false,
    }
}

/// `gen b, c, i, j: sum s, t: X[b, c, i, s] * Y[t, s, j]`: two untiled gens, a tile of
/// `i` by `j`, two sums.
fn nest() -> Nest {
    common::nest(
        "f",
        vec![
            lp("b", false, 4),
            lp("c", false, 8),
            lp("i", false, 64),
            lp("j", false, 128),
        ],
        vec![lp("s", true, 32), lp("t", true, 3)],
        vec![
            read("X", &["b", "c", "i", "s"]),
            read("Y", &["t", "s", "j"]),
        ],
        vec![
            ("X".into(), vec![4, 8, 64, 32]),
            ("Y".into(), vec![3, 32, 128]),
        ],
    )
}

fn candidate(rows: i64, cols: i64) -> Candidate {
    Candidate {
        tile: Tile {
            row: Some("i".into()),
            rows,
            col: "j".into(),
            cols,
            col_outer: false,
            whole: false,
        },
        pack: None,
        stage: None,
        relaid: None,
        partial_sums: None,
        rolled: Vec::new(),
        vector_width: None,
        fixed: None,
        boundary: None,
        local_copy: false,
        order: Vec::new(),
        parallel: false,
        partition_guards: false,
    }
}

fn kind(nest: &Nest, s: &Slot) -> SlotKind {
    match s {
        Slot::Tiles => SlotKind::Tiles,
        Slot::Loop(n) if nest.find(n).is_some_and(|l| l.reduction) => SlotKind::Sum,
        Slot::Loop(_) => SlotKind::Gen,
    }
}

/// Every permutation of `items`.
fn permutations(items: &[Slot]) -> Vec<Vec<Slot>> {
    if items.is_empty() {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for k in 0..items.len() {
        let mut rest = items.to_vec();
        let first = rest.remove(k);
        for mut p in permutations(&rest) {
            p.insert(0, first.clone());
            out.push(p);
        }
    }
    out
}

/// Legal by the rules stated independently of the exchange rule: the sums keep their
/// written order, and every untiled gen stays outside the tile loops.
fn legal(nest: &Nest, order: &[Slot]) -> bool {
    let sums: Vec<&Slot> = order
        .iter()
        .filter(|s| kind(nest, s) == SlotKind::Sum)
        .collect();
    let written: Vec<Slot> = nest
        .sums
        .iter()
        .map(|s| Slot::Loop(s.name.clone()))
        .collect();
    let tiles = order.iter().position(|s| *s == Slot::Tiles).expect("tiles");
    sums.into_iter().cloned().collect::<Vec<_>>() == written
        && order[tiles..]
            .iter()
            .all(|s| kind(nest, s) != SlotKind::Gen)
}

#[test]
fn the_egraph_holds_exactly_the_legal_orders() {
    let nest = nest();
    let m = machine();
    let c = candidate(6, 32);
    let model = Model::new(&nest, &m, &c, 4);
    let slots = slots_of(&nest, Some("i"));
    let space = Space::new(&slots, &model, false);
    let found: BTreeSet<Vec<Slot>> = space.orders(1_000_000).into_iter().collect();
    let items: Vec<Slot> = slots.iter().map(|(s, _)| s.clone()).collect();
    let expected: BTreeSet<Vec<Slot>> = permutations(&items)
        .into_iter()
        .filter(|o| legal(&nest, o))
        .collect();
    // b, c, tiles, s, t: the gens in either order before the tiles (2), the tiles
    // among the two sums in order (3 places), the gens also among the sums above the
    // tiles: counted by brute force, not by hand.
    assert!(expected.len() > 6, "{}", expected.len());
    assert_eq!(found, expected);
}

#[test]
fn the_exchange_rule_is_symmetric() {
    let kinds = [SlotKind::Gen, SlotKind::Sum, SlotKind::Tiles];
    for a in kinds {
        for b in kinds {
            assert_eq!(exchangeable(a, b), exchangeable(b, a), "{a:?} {b:?}");
        }
    }
    assert!(!exchangeable(SlotKind::Sum, SlotKind::Sum));
    assert!(exchangeable(SlotKind::Gen, SlotKind::Sum));
    assert!(exchangeable(SlotKind::Gen, SlotKind::Gen));
    assert!(!exchangeable(SlotKind::Gen, SlotKind::Tiles));
}

#[test]
fn extraction_finds_the_cheapest_order_under_the_model() {
    let nest = nest();
    let m = machine();
    for (rows, cols) in [(6, 32), (8, 16), (2, 64), (14, 32)] {
        for col_outer in [false, true] {
            let mut c = candidate(rows, cols);
            c.tile.col_outer = col_outer;
            let model = Model::new(&nest, &m, &c, 4);
            let slots = slots_of(&nest, Some("i"));
            let space = Space::new(&slots, &model, col_outer);
            let (cost, order) = space.best(&model, col_outer);
            let brute = space
                .orders(1_000_000)
                .iter()
                .map(|o| model.estimate(o, col_outer).total())
                .fold(f64::INFINITY, f64::min);
            let extracted = model.estimate(&order, col_outer).total();
            assert!(
                (extracted - cost.total()).abs() <= 1e-9 * extracted,
                "the extractor's cost is the model's estimate of its order"
            );
            assert!(
                extracted <= brute * 1.000_001,
                "{rows}x{cols}: extracted {extracted} > cheapest {brute}"
            );
        }
    }
}

//! The space of loop orders as an e-graph (egg). A candidate's loops outside its
//! register tile are a chain `(nest s1 (nest s2 … (nest sn tile)))`; one rewrite
//! exchanges two neighbours where the directives can (`reorder`): two `gen` loops, or a
//! `gen` and a `sum` — never two `sum`s (that reassociates, graded `real`), and never
//! the tile loops outside an untiled `gen`. Saturating gives every
//! legal order; an e-class holds all orders of one set of loops, so the `n!` orders
//! share `2^n` classes, and the extraction picks the cheapest order under the cost
//! model (`cost.rs`, compositional from the tile outwards), class by class.
//!
//! There are no binders here: the rewrites act on schedule terms, not on the
//! program, so equality saturation is sound by construction; what the extracted order
//! means is decided by the derivation engine when the directives are checked.

use std::collections::{BTreeMap, BTreeSet};

use egg::{
    Analysis, CostFunction, DidMerge, EGraph, Extractor, Id, RecExpr, Rewrite, Runner, Symbol,
    define_language, rewrite,
};

use crate::candidate::Slot;
use crate::cost::{Cost, Model};

define_language! {
    /// Schedule terms: a chain of loops around the register tile.
    pub enum OrderTerm {
        "nest" = Nest([Id; 2]),
        "tile" = Tile,
        Slot(Symbol),
    }
}

/// The loops (as the cost model names them) below each e-class, and what each slot
/// symbol stands for.
#[derive(Debug, Default)]
pub struct Loops {
    /// Slot symbol → the cost model's loop names, outermost first.
    slots: BTreeMap<Symbol, Vec<String>>,
}

impl Analysis<OrderTerm> for Loops {
    type Data = BTreeSet<String>;

    fn make(egraph: &mut EGraph<OrderTerm, Self>, enode: &OrderTerm) -> Self::Data {
        match enode {
            OrderTerm::Tile => BTreeSet::new(),
            OrderTerm::Slot(s) => egraph
                .analysis
                .slots
                .get(s)
                .map(|ls| ls.iter().cloned().collect())
                .unwrap_or_default(),
            OrderTerm::Nest([a, b]) => egraph[*a].data.union(&egraph[*b].data).cloned().collect(),
        }
    }

    fn merge(&mut self, a: &mut Self::Data, b: Self::Data) -> DidMerge {
        // Exchanges keep the set of loops: merged classes have the same data.
        debug_assert_eq!(*a, b);
        DidMerge(false, false)
    }
}

/// What a slot is, for the exchange rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotKind {
    Gen,
    Sum,
    Tiles,
}

/// The symbol of a slot in schedule terms.
pub fn symbol(slot: &Slot) -> Symbol {
    match slot {
        Slot::Loop(n) => Symbol::from(format!("loop:{n}")),
        Slot::Tiles => Symbol::from("tiles"),
    }
}

fn slot_of(symbol: Symbol) -> Slot {
    match symbol.as_str().strip_prefix("loop:") {
        Some(n) => Slot::Loop(n.to_string()),
        None => Slot::Tiles,
    }
}

/// Whether `outer` directly around `inner` may be exchanged. Not two sums (graded
/// `real`), and the tile loops do not go outside an untiled `gen` (the candidate's
/// directives put the untiled gens outside before tiling). A sum may go outside the
/// tile loops: the directives move it there before tiling (`tile` leaves its two loops
/// under the reshape that keeps the storage layout, which no exchange crosses later).
pub fn exchangeable(outer: SlotKind, inner: SlotKind) -> bool {
    !matches!(
        (outer, inner),
        (SlotKind::Sum, SlotKind::Sum)
            | (SlotKind::Gen, SlotKind::Tiles)
            | (SlotKind::Tiles, SlotKind::Gen)
    )
}

fn slot_symbol(egraph: &EGraph<OrderTerm, Loops>, id: Id) -> Option<Symbol> {
    egraph[id].nodes.iter().find_map(|n| match n {
        OrderTerm::Slot(s) => Some(*s),
        _ => None,
    })
}

/// The exchange rule, with `kinds` saying what each slot is.
fn exchange(kinds: BTreeMap<Symbol, SlotKind>) -> Rewrite<OrderTerm, Loops> {
    let legal = move |egraph: &mut EGraph<OrderTerm, Loops>, _: Id, subst: &egg::Subst| {
        let a: egg::Var = "?a".parse().expect("var");
        let b: egg::Var = "?b".parse().expect("var");
        let kind = |id| slot_symbol(egraph, id).and_then(|s| kinds.get(&s).copied());
        match (kind(subst[a]), kind(subst[b])) {
            (Some(outer), Some(inner)) => exchangeable(outer, inner),
            _ => false,
        }
    };
    rewrite!("exchange"; "(nest ?a (nest ?b ?r))" => "(nest ?b (nest ?a ?r))" if legal)
}

/// The saturated e-graph of every legal order of `slots` (given outermost first, as a
/// legal starting order), and its root.
#[derive(Debug)]
pub struct Space {
    pub egraph: EGraph<OrderTerm, Loops>,
    pub root: Id,
}

impl Space {
    pub fn new(slots: &[(Slot, SlotKind)], model: &Model<'_>, col_outer: bool) -> Space {
        let mut analysis = Loops::default();
        let mut kinds = BTreeMap::new();
        for (slot, kind) in slots {
            let names = model
                .slot_loops(slot, col_outer)
                .into_iter()
                .map(|l| l.name)
                .collect();
            analysis.slots.insert(symbol(slot), names);
            kinds.insert(symbol(slot), *kind);
        }
        let mut term: RecExpr<OrderTerm> = RecExpr::default();
        let mut inner = term.add(OrderTerm::Tile);
        for (slot, _) in slots.iter().rev() {
            let s = term.add(OrderTerm::Slot(symbol(slot)));
            inner = term.add(OrderTerm::Nest([s, inner]));
        }
        let runner = Runner::default()
            .with_egraph(EGraph::new(analysis))
            .with_expr(&term)
            .with_node_limit(200_000)
            .with_iter_limit(64)
            .run(&[exchange(kinds)]);
        let root = runner.roots[0];
        Space {
            egraph: runner.egraph,
            root,
        }
    }

    /// The cheapest order under the model.
    pub fn best(&self, model: &Model<'_>, col_outer: bool) -> (Cost, Vec<Slot>) {
        let extractor = Extractor::new(
            &self.egraph,
            OrderCost {
                egraph: &self.egraph,
                model,
                col_outer,
            },
        );
        let (cost, term) = extractor.find_best(self.root);
        (cost, order_of(&term))
    }

    /// Every order in the e-graph, up to `limit` of them.
    pub fn orders(&self, limit: usize) -> Vec<Vec<Slot>> {
        let mut out = Vec::new();
        self.collect(self.root, &mut Vec::new(), &mut out, limit);
        out
    }

    fn collect(&self, class: Id, prefix: &mut Vec<Slot>, out: &mut Vec<Vec<Slot>>, limit: usize) {
        for node in &self.egraph[class].nodes {
            if out.len() >= limit {
                return;
            }
            match node {
                OrderTerm::Tile => out.push(prefix.clone()),
                OrderTerm::Nest([a, b]) => {
                    if let Some(s) = slot_symbol(&self.egraph, *a) {
                        prefix.push(slot_of(s));
                        self.collect(*b, prefix, out, limit);
                        prefix.pop();
                    }
                }
                OrderTerm::Slot(_) => {}
            }
        }
    }
}

/// The order a chain term stands for, outermost first.
fn order_of(term: &RecExpr<OrderTerm>) -> Vec<Slot> {
    let nodes = term.as_ref();
    let mut order = Vec::new();
    let Some(mut cur) = nodes.last() else {
        return order;
    };
    while let OrderTerm::Nest([a, b]) = cur {
        if let OrderTerm::Slot(s) = &nodes[usize::from(*a)] {
            order.push(slot_of(*s));
        }
        cur = &nodes[usize::from(*b)];
    }
    order
}

/// The model as an egg cost function: a `nest` node folds its slot's loops around the
/// child's cost, knowing the child's loops from the e-class analysis.
struct OrderCost<'a, 'n> {
    egraph: &'a EGraph<OrderTerm, Loops>,
    model: &'a Model<'n>,
    col_outer: bool,
}

impl CostFunction<OrderTerm> for OrderCost<'_, '_> {
    type Cost = Cost;

    fn cost<C>(&mut self, enode: &OrderTerm, mut costs: C) -> Cost
    where
        C: FnMut(Id) -> Cost,
    {
        match enode {
            OrderTerm::Tile => self.model.tile(),
            OrderTerm::Slot(_) => Cost {
                cycles: 0.0,
                misses: [0.0; 3],
                paged: [0.0; 3],
                accumulators: 0.0,
            },
            OrderTerm::Nest([a, b]) => {
                let child_is_tile = self.egraph[*b]
                    .nodes
                    .iter()
                    .any(|n| matches!(n, OrderTerm::Tile));
                let mut inside = self.egraph[*b].data.clone();
                inside.extend(self.model.tile_loops());
                let mut cost = costs(*b);
                let Some(s) = slot_symbol(self.egraph, *a) else {
                    return cost;
                };
                let mut first = child_is_tile;
                for l in self
                    .model
                    .slot_loops(&slot_of(s), self.col_outer)
                    .iter()
                    .rev()
                {
                    cost = self.model.around(l, &inside, &cost, first);
                    inside.insert(l.name.clone());
                    first = false;
                }
                cost
            }
        }
    }
}

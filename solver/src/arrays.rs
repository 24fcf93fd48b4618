//! Loads from index arrays (`pos[i + 1]`) in queries: each distinct load becomes a
//! fresh integer variable, constrained by facts that are true of every array the
//! declaration admits (Ackermann's reduction of uninterpreted functions to
//! arithmetic, plus the declared facts instantiated at the loads of the query):
//!
//! - *congruence*: for two loads `a[e1]`, `a[e2]` of one array, `e1 == e2` implies
//!   that they are equal (a load is a function of its index);
//! - *range*: a load at an index inside the array (`0 <= e < len`) has
//!   `lo <= a[e] < hi`; one outside it is 0 (the semantics of an out-of-range load);
//! - *order*, for a `sorted` array: `0 <= e1 <= e2 < len` implies `a[e1] <= a[e2]`.
//!
//! Every added fact holds for every array that satisfies its declaration, so a goal
//! proved after the reduction holds of the original query (soundness); the
//! reduction is also complete for congruence, but the declared facts are only
//! instantiated at the loads the query mentions, so a proof that needs them at
//! another index is not found (a refusal, never a wrong answer).
//!
//! The variable of a load is named by the load's normalized text (`pos[i + 1]`),
//! which no program name can spell, so a counterexample reads naturally.

use std::collections::BTreeMap;

use atl_lang::index::{CmpOp, IndexExpr, Pred};
use atl_lang::poly::normalize;

use crate::query::Facts;

/// What a program declares about one index array (`input pos : int[n + 1] in 0..nnz + 1
/// sorted`), for the prover: its length and the range and order of its values.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IndexArrayFacts {
    pub name: String,
    pub len: IndexExpr,
    pub lo: IndexExpr,
    pub hi: IndexExpr,
    pub sorted: bool,
}

impl IndexArrayFacts {
    /// The declarations of a program's index arrays.
    pub fn of_program(program: &atl_lang::ir::Program) -> Vec<IndexArrayFacts> {
        program
            .inputs
            .iter()
            .filter_map(|input| {
                let facts = input.index_array.as_ref()?;
                Some(IndexArrayFacts {
                    name: input.name.clone(),
                    len: input.shape.first()?.clone(),
                    lo: facts.lo.clone(),
                    hi: facts.hi.clone(),
                    sorted: facts.sorted,
                })
            })
            .collect()
    }
}

/// The loads of a query, by array: (the load's variable, its index), in first-seen
/// order.
type Loads = BTreeMap<String, Vec<(String, IndexExpr)>>;

/// Replaces every load by its variable (innermost first), recording it in `loads`.
fn atomize_index(e: &IndexExpr, loads: &mut Loads) -> IndexExpr {
    match e {
        IndexExpr::Const(_) | IndexExpr::Var(_) | IndexExpr::Meta(_) => e.clone(),
        IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(atomize_index(a, loads))),
        IndexExpr::Bin(op, a, b) => {
            IndexExpr::bin(*op, atomize_index(a, loads), atomize_index(b, loads))
        }
        IndexExpr::Load(array, a) => {
            let index = normalize(&atomize_index(a, loads));
            let name = IndexExpr::Load(array.clone(), Box::new(index.clone())).to_string();
            let seen = loads.entry(array.clone()).or_default();
            if !seen.iter().any(|(n, _)| n == &name) {
                seen.push((name.clone(), index));
            }
            IndexExpr::Var(name)
        }
    }
}

fn atomize_pred(p: &Pred, loads: &mut Loads) -> Pred {
    p.map_index(&mut |e| atomize_index(e, loads))
}

fn implies(a: Pred, b: Pred) -> Pred {
    Pred::or(Pred::not(a), b)
}

fn within(index: &IndexExpr, len: &IndexExpr) -> Pred {
    Pred::and(
        Pred::cmp(CmpOp::Le, IndexExpr::Const(0), index.clone()),
        Pred::cmp(CmpOp::Lt, index.clone(), len.clone()),
    )
}

/// The query without loads, or `None` when it has none.
pub(crate) fn atomize(facts: &Facts, goal: &Pred) -> Option<(Facts, Pred)> {
    if !goal.has_load() && !facts.facts.iter().any(Pred::has_load) {
        return None;
    }
    let mut loads = Loads::new();
    let mut out: Vec<Pred> = facts
        .facts
        .iter()
        .map(|f| atomize_pred(f, &mut loads))
        .collect();
    let goal = atomize_pred(goal, &mut loads);
    for (array, seen) in &loads {
        let decl = facts.arrays.iter().find(|a| &a.name == array);
        for (k, (var, index)) in seen.iter().enumerate() {
            let v = IndexExpr::var(var.clone());
            for (other, other_index) in &seen[..k] {
                let w = IndexExpr::var(other.clone());
                out.push(implies(
                    Pred::cmp(CmpOp::Eq, index.clone(), other_index.clone()),
                    Pred::cmp(CmpOp::Eq, v.clone(), w.clone()),
                ));
                if let Some(decl) = decl.filter(|d| d.sorted) {
                    for (a, b, x, y) in [(index, other_index, &v, &w), (other_index, index, &w, &v)]
                    {
                        out.push(implies(
                            Pred::and(
                                Pred::and(
                                    Pred::cmp(CmpOp::Le, IndexExpr::Const(0), a.clone()),
                                    Pred::cmp(CmpOp::Le, a.clone(), b.clone()),
                                ),
                                Pred::cmp(CmpOp::Lt, b.clone(), decl.len.clone()),
                            ),
                            Pred::cmp(CmpOp::Le, x.clone(), y.clone()),
                        ));
                    }
                }
            }
            if let Some(decl) = decl {
                out.push(implies(
                    within(index, &decl.len),
                    Pred::and(
                        Pred::cmp(CmpOp::Le, decl.lo.clone(), v.clone()),
                        Pred::cmp(CmpOp::Lt, v.clone(), decl.hi.clone()),
                    ),
                ));
                out.push(Pred::or(
                    within(index, &decl.len),
                    Pred::cmp(CmpOp::Eq, v.clone(), IndexExpr::Const(0)),
                ));
            }
        }
    }
    Some((
        Facts {
            sizes: facts.sizes.clone(),
            facts: out,
            arrays: Vec::new(),
        },
        goal,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Solver;

    fn v(name: &str) -> IndexExpr {
        IndexExpr::var(name)
    }

    fn load(array: &str, at: IndexExpr) -> IndexExpr {
        IndexExpr::Load(array.to_string(), Box::new(at))
    }

    fn csr_facts() -> Facts {
        // size n, nnz; input pos : int[n + 1] in 0..nnz + 1 sorted; input crd :
        // int[nnz] in 0..m; a row i of the matrix and a position p of it.
        let i = v("i");
        let p = v("p");
        Facts {
            sizes: vec!["n".into(), "m".into(), "nnz".into()],
            facts: vec![
                Pred::cmp(CmpOp::Le, IndexExpr::Const(0), i.clone()),
                Pred::cmp(CmpOp::Lt, i.clone(), v("n")),
                Pred::cmp(CmpOp::Le, load("pos", i.clone()), p.clone()),
                Pred::cmp(
                    CmpOp::Lt,
                    p.clone(),
                    load("pos", IndexExpr::add(i, IndexExpr::Const(1))),
                ),
            ],
            arrays: vec![
                IndexArrayFacts {
                    name: "pos".into(),
                    len: IndexExpr::add(v("n"), IndexExpr::Const(1)),
                    lo: IndexExpr::Const(0),
                    hi: IndexExpr::add(v("nnz"), IndexExpr::Const(1)),
                    sorted: true,
                },
                IndexArrayFacts {
                    name: "crd".into(),
                    len: v("nnz"),
                    lo: IndexExpr::Const(0),
                    hi: v("m"),
                    sorted: false,
                },
            ],
        }
    }

    #[test]
    fn a_position_of_a_row_is_inside_the_values() {
        let solver = Solver::new();
        let facts = csr_facts();
        let p = v("p");
        let inside = Pred::and(
            Pred::cmp(CmpOp::Le, IndexExpr::Const(0), p.clone()),
            Pred::cmp(CmpOp::Lt, p, v("nnz")),
        );
        assert!(solver.prove(&facts, &inside).is_proved());
        // The coordinate stored there is a column.
        let col = load("crd", v("p"));
        let column = Pred::and(
            Pred::cmp(CmpOp::Le, IndexExpr::Const(0), col.clone()),
            Pred::cmp(CmpOp::Lt, col, v("m")),
        );
        assert!(solver.prove(&facts, &column).is_proved());
    }

    #[test]
    fn nothing_is_proved_without_the_declarations() {
        let solver = Solver::new();
        let mut facts = csr_facts();
        facts.arrays.clear();
        let goal = Pred::cmp(CmpOp::Lt, v("p"), v("nnz"));
        assert!(!solver.prove(&facts, &goal).is_proved());
        // Unsorted `pos`: a row may end before it starts (the order of two rows is
        // not known once no position `p` of row `i` is assumed).
        let mut facts = csr_facts();
        facts.facts.truncate(2);
        facts.arrays[0].sorted = false;
        let order = Pred::cmp(
            CmpOp::Le,
            load("pos", v("i")),
            load("pos", IndexExpr::add(v("i"), IndexExpr::Const(1))),
        );
        assert!(!solver.prove(&facts, &order).is_proved());
        facts.arrays[0].sorted = true;
        assert!(solver.prove(&facts, &order).is_proved());
    }

    #[test]
    fn congruence_equal_indices_equal_loads() {
        let solver = Solver::new();
        let facts = Facts {
            sizes: vec!["n".into()],
            facts: vec![Pred::cmp(
                CmpOp::Eq,
                v("a"),
                IndexExpr::add(v("b"), IndexExpr::Const(1)),
            )],
            arrays: Vec::new(),
        };
        let goal = Pred::cmp(
            CmpOp::Eq,
            load("crd", v("a")),
            load("crd", IndexExpr::add(IndexExpr::Const(1), v("b"))),
        );
        assert!(solver.prove(&facts, &goal).is_proved());
        let other = Pred::cmp(CmpOp::Eq, load("crd", v("a")), load("crd", v("b")));
        assert!(!solver.prove(&facts, &other).is_proved());
        // Two arrays are unrelated.
        let arrays = Pred::cmp(CmpOp::Eq, load("crd", v("a")), load("pos", v("a")));
        assert!(!solver.prove(&facts, &arrays).is_proved());
    }

    #[test]
    fn out_of_range_loads_are_zero_not_in_the_declared_range() {
        // `pos` declared in 1..5 over 4 elements: pos[7] is 0, outside 1..5.
        let solver = Solver::new();
        let facts = Facts {
            sizes: Vec::new(),
            facts: Vec::new(),
            arrays: vec![IndexArrayFacts {
                name: "pos".into(),
                len: IndexExpr::Const(4),
                lo: IndexExpr::Const(1),
                hi: IndexExpr::Const(5),
                sorted: false,
            }],
        };
        let at7 = load("pos", IndexExpr::Const(7));
        assert!(
            solver
                .prove(
                    &facts,
                    &Pred::cmp(CmpOp::Eq, at7.clone(), IndexExpr::Const(0))
                )
                .is_proved()
        );
        assert!(
            !solver
                .prove(&facts, &Pred::cmp(CmpOp::Ge, at7, IndexExpr::Const(1)))
                .is_proved()
        );
        let at2 = load("pos", IndexExpr::Const(2));
        assert!(
            solver
                .prove(&facts, &Pred::cmp(CmpOp::Ge, at2, IndexExpr::Const(1)))
                .is_proved()
        );
    }
}

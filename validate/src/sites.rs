//! What the walk of a kernel records for the obligations that relate two memory
//! operations (races, double writes) or quantify over all of them (coverage): every
//! access ([`Site`]) with its coordinates and full context, the loops around it
//! ([`LoopRef`]), and every buffer or scalar binding it names ([`Binding`]).
//!
//! Everything is in the solver's names (`crate::translate::Scope`): loop variables are
//! unique within one loop nest, but two sibling nests may reuse a name, so an
//! obligation that puts two sites in one query renames their private loop variables
//! apart ([`rename_index`], [`rename_pred`]).

use std::collections::{BTreeMap, BTreeSet};

use atl_lang::index::{CmpOp, IndexExpr, Pred};
use atl_loopir::ir::{LoopOrigin, Storage, StoreOp};

use crate::obligations::Access;
use crate::term::Term;

/// A loop around a site.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopRef {
    /// Unique per loop statement of the kernel (its rank in a depth-first walk).
    pub id: usize,
    /// The variable's name in the kernel (what [`Storage::Hoisted`] names).
    pub kernel_var: String,
    /// The variable's name in the solver.
    pub var: String,
    pub lo: IndexExpr,
    pub hi: IndexExpr,
    pub origin: LoopOrigin,
    pub parallel: bool,
    pub vector: bool,
    /// The inner loop of a `collapse`d parallel loop (the loop just around it): its
    /// iterations are shared among that loop's threads (and `parallel` is set).
    pub collapsed_inner: bool,
}

/// Who a binding is.
#[derive(Clone, Debug, PartialEq)]
pub enum BindingRole {
    Input,
    Output,
    /// A buffer of an `alloc`, with where its memory comes from.
    Temporary(Storage),
    /// A scalar temporary (`Decl`): a buffer of rank 0 for the race obligations.
    Scalar,
}

/// A buffer or scalar in scope somewhere in the kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Binding {
    pub name: String,
    pub role: BindingRole,
    /// The declared shape in the solver's names (empty for a scalar).
    pub shape: Vec<IndexExpr>,
    /// The loops around the `alloc` or `Decl` (empty for inputs and the output).
    pub loops: Vec<LoopRef>,
    /// Whether every element holds zero when the lifetime starts (a zeroed `alloc`);
    /// `false` for the output (the caller's memory) and for scalars.
    pub zeroed: bool,
    /// A folded temporary's fold (`alloc … fold F`): its first coordinate is stored
    /// modulo `F`. The sites keep the coordinates; [`Binding::physical`] gives the
    /// stored ones.
    pub fold: Option<i64>,
}

impl Binding {
    /// The coordinates an element is stored at: the first one modulo the fold, for a
    /// folded buffer (whose coordinates are non-negative: its bounds are obligations).
    pub fn physical(&self, coords: &[IndexExpr]) -> Vec<IndexExpr> {
        let mut out = coords.to_vec();
        if let (Some(f), Some(first)) = (self.fold, out.first_mut()) {
            *first = IndexExpr::bin(
                atl_lang::index::IndexOp::Mod,
                first.clone(),
                IndexExpr::Const(f),
            );
        }
        out
    }
}

/// Where a statement is in program order: per enclosing block, outermost first, the
/// block (unique per block of the kernel: a loop body, a branch of an `if`, an
/// `alloc` body, the kernel body) and the statement's index in it.
pub type Path = Vec<(usize, usize)>;

/// One memory operation of the kernel, well formed (its buffer is in scope and it has
/// one coordinate per dimension).
#[derive(Clone, Debug, PartialEq)]
pub struct Site {
    pub access: Access,
    /// `None` for a read, the store's operator for a write.
    pub op: Option<StoreOp>,
    /// Index into [`Walk::bindings`](crate::obligations::Walk::bindings).
    pub binding: usize,
    /// The coordinates in the solver's names.
    pub coords: Vec<IndexExpr>,
    /// The full context under which the operation executes: preconditions, enclosing
    /// loop ranges and `if` conditions, `select` conditions of a guarded read.
    pub facts: Vec<Pred>,
    /// The enclosing loops, outermost first.
    pub loops: Vec<LoopRef>,
    pub location: String,
    /// The statement it belongs to (the loads of a store share the store's path).
    pub path: Path,
    /// A load in a `blend`: evaluated whatever the blend's condition, its value
    /// discarded when the condition is false.
    pub discarded: bool,
    /// For a write, the value it stores, in the solver's names (reads of temporaries,
    /// scalars and the output are [`Term::Read`]s of their sites).
    pub value: Option<Term>,
}

impl Site {
    pub fn is_write(&self) -> bool {
        self.op.is_some()
    }
}

/// `e` with the variables named in `map` renamed.
pub fn rename_index(e: &IndexExpr, map: &BTreeMap<String, String>) -> IndexExpr {
    match e {
        IndexExpr::Var(v) => match map.get(v) {
            Some(to) => IndexExpr::Var(to.clone()),
            None => e.clone(),
        },
        IndexExpr::Const(_) | IndexExpr::Meta(_) => e.clone(),
        IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(rename_index(a, map))),
        IndexExpr::Load(array, a) => IndexExpr::Load(array.clone(), Box::new(rename_index(a, map))),
        IndexExpr::Bin(op, a, b) => IndexExpr::bin(*op, rename_index(a, map), rename_index(b, map)),
    }
}

/// `e` with every variable named in `map` replaced by its value, all at once: a value
/// is never substituted into again (so `{i ↦ j, j ↦ i}` swaps `i` and `j`, where one
/// substitution after the other would capture).
pub fn substitute(e: &IndexExpr, map: &BTreeMap<String, IndexExpr>) -> IndexExpr {
    match e {
        IndexExpr::Var(v) => match map.get(v) {
            Some(value) => value.clone(),
            None => e.clone(),
        },
        IndexExpr::Const(_) | IndexExpr::Meta(_) => e.clone(),
        IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(substitute(a, map))),
        IndexExpr::Load(array, a) => IndexExpr::Load(array.clone(), Box::new(substitute(a, map))),
        IndexExpr::Bin(op, a, b) => IndexExpr::bin(*op, substitute(a, map), substitute(b, map)),
    }
}

/// [`substitute`] in a predicate.
pub fn substitute_pred(p: &Pred, map: &BTreeMap<String, IndexExpr>) -> Pred {
    if map.is_empty() {
        return p.clone();
    }
    p.map_index(&mut |e| substitute(e, map))
}

/// `p` with the variables named in `map` renamed.
pub fn rename_pred(p: &Pred, map: &BTreeMap<String, String>) -> Pred {
    if map.is_empty() {
        return p.clone();
    }
    p.map_index(&mut |e| rename_index(e, map))
}

/// The renaming of `loops`' variables to `var#copy`: `#` occurs in no kernel name, so
/// the copies of two sites never clash with each other or with a shared variable.
pub fn copy_names(loops: &[LoopRef], copy: usize) -> BTreeMap<String, String> {
    loops
        .iter()
        .map(|l| (l.var.clone(), format!("{}#{copy}", l.var)))
        .collect()
}

/// Pushes `p` unless it is already there or is `true`.
pub fn push_fact(facts: &mut Vec<Pred>, p: Pred) {
    if p != Pred::Bool(true) && !facts.contains(&p) {
        facts.push(p);
    }
}

/// Where a memory operation is in the kernel, for the order of two of them.
pub(crate) struct Position<'w> {
    pub path: &'w Path,
    pub loops: &'w [LoopRef],
    /// What the operation's loop variables stand for.
    pub subst: &'w BTreeMap<String, IndexExpr>,
}

/// "`x` (at `x.subst`) runs before `at`" in program order, for operations in one
/// lifetime of a buffer whose declaration is inside the loops `outside` (those keep
/// one iteration): lexicographically over the loops both are in, then by the order of
/// their statements where their paths part.
pub(crate) fn runs_before(x: &Position<'_>, at: &Position<'_>, outside: &BTreeSet<usize>) -> Pred {
    // The statements' order where their paths part.
    let mut statement_first = Pred::Bool(false);
    for (a, b) in x.path.iter().zip(at.path.iter()) {
        if a != b {
            if a.0 == b.0 && a.1 < b.1 {
                statement_first = Pred::Bool(true);
            }
            break;
        }
    }
    // Then lexicographically over the loops both are in (inside the lifetime).
    let common: Vec<&LoopRef> = x
        .loops
        .iter()
        .filter(|l| !outside.contains(&l.id) && at.loops.iter().any(|m| m.id == l.id))
        .collect();
    let mut result = statement_first;
    for l in common.iter().rev() {
        let v = IndexExpr::var(l.var.clone());
        let (xv, av) = (substitute(&v, x.subst), substitute(&v, at.subst));
        let eq = Pred::cmp(CmpOp::Eq, xv.clone(), av.clone());
        let later = match result {
            Pred::Bool(false) => Pred::Bool(false),
            Pred::Bool(true) => eq,
            r => Pred::and(eq, r),
        };
        let lt = Pred::cmp(CmpOp::Lt, xv, av);
        result = match later {
            Pred::Bool(false) => lt,
            later => Pred::or(lt, later),
        };
    }
    result
}

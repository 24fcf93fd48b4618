//! Index arrays whose range is checked where the kernel reads them (issue 31).
//!
//! A kernel checks every index array's declaration on entry: one pass over the array
//! before the body. For a sparse matrix-vector product that pass reads `crd` a second
//! time, and `crd` is a third of the bytes the product moves (measured on a 200000²
//! CSR matrix with 10 values per row: about 11% of the call). For an array that is not
//! `sorted` (so its declaration is a range alone), the check can move to the reads:
//!
//! ```text
//! acc += vals[p] * x[crd[p]]
//! ```
//! becomes
//! ```text
//! if (0 <= crd[p] && crd[p] < N) acc += vals[p] * x[crd[p]]; else fail crd
//! ```
//!
//! where `fail crd` records the array's status, which the kernel returns at the end
//! (the value is in cache when it is checked: no extra pass). Lowering proved the
//! body safe assuming the declaration; the validator proves it again without
//! assuming the range of such an array, from the checks alone, and proves that every
//! value used from it is checked (`atl-validate`).
//!
//! An array qualifies when every load of it is in a statement that evaluates it
//! unconditionally: a store's index or value, a scalar's update, outside any
//! `select` (whose loads are guarded) and outside every condition (`&&` and `||`
//! short-circuit: `p + 1 < nnz && crd[p + 1] == i`), loop bounds, lengths and
//! declarations; not nested in the index of
//! another qualifying array's load; and in no `vector` loop (the check's branch and
//! its status write do not belong in a SIMD loop). Anything else keeps the
//! entry check: the choice changes speed, never meaning.

use std::collections::BTreeSet;

use atl_lang::index::CmpOp;

use crate::ir::{BufferDecl, Cond, For, Ix, Kernel, Stmt, Val};
use crate::print::plain_ix;

/// Moves the range checks of the qualifying index arrays of `kernel` to their reads
/// (see the module documentation).
pub(crate) fn check_where_read(kernel: &mut Kernel) {
    let mut candidates: BTreeSet<String> = kernel
        .inputs
        .iter()
        .filter(|b| range_of(b).is_some())
        .map(|b| b.name.clone())
        .collect();
    // Disqualifying one array can disqualify another (a load nested in its index).
    loop {
        let mut bad = BTreeSet::new();
        let mut read = BTreeSet::new();
        for s in &kernel.body {
            scan(s, &candidates, false, &mut bad, &mut read);
        }
        let before = candidates.len();
        candidates.retain(|a| !bad.contains(a) && read.contains(a));
        if candidates.len() == before {
            break;
        }
    }
    if candidates.is_empty() {
        return;
    }
    let ranges: Vec<(String, Ix, Ix)> = kernel
        .inputs
        .iter()
        .filter(|b| candidates.contains(&b.name))
        .filter_map(|b| {
            let (lo, hi) = range_of(b)?;
            Some((b.name.clone(), lo, hi))
        })
        .collect();
    let body = std::mem::take(&mut kernel.body);
    kernel.body = body.into_iter().map(|s| wrap(s, &ranges)).collect();
    for b in &mut kernel.inputs {
        if candidates.contains(&b.name) {
            b.checked_where_read = true;
        }
    }
}

/// The declared range of an index array that may be checked where read: not
/// `sorted`, with bounds the target can evaluate.
fn range_of(b: &BufferDecl) -> Option<(Ix, Ix)> {
    let a = b.index_array.as_ref().filter(|a| !a.sorted)?;
    Some((plain_ix(&a.lo)?, plain_ix(&a.hi)?))
}

/// Records in `bad` the candidates loaded where a check at the statement cannot
/// cover the load, and in `read` those loaded at all.
fn scan(
    s: &Stmt,
    candidates: &BTreeSet<String>,
    in_vector: bool,
    bad: &mut BTreeSet<String>,
    read: &mut BTreeSet<String>,
) {
    let anywhere = |ix: &Ix, bad: &mut BTreeSet<String>, read: &mut BTreeSet<String>| {
        loads_in_ix(ix, candidates, &mut |a, _| {
            bad.insert(a.to_string());
            read.insert(a.to_string());
        })
    };
    match s {
        Stmt::For(l) => {
            anywhere(&l.lo, bad, read);
            anywhere(&l.hi, bad, read);
            for t in &l.body {
                scan(t, candidates, in_vector || l.vector, bad, read);
            }
        }
        Stmt::If {
            cond,
            then_branch,
            else_branch,
        } => {
            cond.visit_ix(&mut |ix| anywhere(ix, bad, read));
            for t in then_branch.iter().chain(else_branch) {
                scan(t, candidates, in_vector, bad, read);
            }
        }
        Stmt::Alloc { len, body, .. } => {
            anywhere(len, bad, read);
            for t in body {
                scan(t, candidates, in_vector, bad, read);
            }
        }
        Stmt::Fill { len, .. } => anywhere(len, bad, read),
        Stmt::Decl { init, .. } => {
            if let Some(v) = init {
                val_loads(v, &mut |ix| anywhere(ix, bad, read));
            }
        }
        Stmt::Store { index, value, .. } => {
            own_loads(candidates, in_vector, bad, read, index, value);
        }
        Stmt::SetScalar { value, .. } => {
            own_loads(candidates, in_vector, bad, read, &Ix::Const(0), value);
        }
        Stmt::Fail { .. } => {}
    }
}

/// The loads of a store or scalar update: covered by a check at the statement unless
/// they sit in a `select`, in a vector loop, or nested in another candidate's index.
fn own_loads(
    candidates: &BTreeSet<String>,
    in_vector: bool,
    bad: &mut BTreeSet<String>,
    read: &mut BTreeSet<String>,
    index: &Ix,
    value: &Val,
) {
    let mut visit = |ix: &Ix, guarded: bool| {
        loads_in_ix(ix, candidates, &mut |a, nested| {
            read.insert(a.to_string());
            if guarded || in_vector || nested {
                bad.insert(a.to_string());
            }
        })
    };
    visit(index, false);
    unconditional_ixs(value, false, &mut visit);
}

/// Visits the index expressions of `v` with whether a `select` guards them.
fn unconditional_ixs(v: &Val, guarded: bool, f: &mut dyn FnMut(&Ix, bool)) {
    match v {
        Val::Lit(_) | Val::Scalar(_) => {}
        Val::Load(l) => f(&l.index, guarded),
        Val::Coord(ix) => f(ix, guarded),
        Val::Neg(a) => unconditional_ixs(a, guarded, f),
        Val::Bin(_, a, b) => {
            unconditional_ixs(a, guarded, f);
            unconditional_ixs(b, guarded, f);
        }
        Val::Call(_, args) => args.iter().for_each(|a| unconditional_ixs(a, guarded, f)),
        // A select evaluates its value only when the condition holds, and its
        // condition may short-circuit: every load in it is conditional.
        Val::Select(c, a) => {
            c.visit_ix(&mut |ix| f(ix, true));
            unconditional_ixs(a, true, f);
        }
        // A blend evaluates its value whatever the condition, but the condition
        // itself short-circuits (`p + 1 < nnz && crd[p + 1] == i`).
        Val::Blend(c, a) => {
            c.visit_ix(&mut |ix| f(ix, true));
            unconditional_ixs(a, guarded, f);
        }
    }
}

fn val_loads(v: &Val, f: &mut dyn FnMut(&Ix)) {
    unconditional_ixs(v, false, &mut |ix, _| f(ix));
}

/// Calls `f(array, nested)` for every load of a candidate in `ix`; `nested`: the load
/// sits in the index of another candidate's load.
fn loads_in_ix(ix: &Ix, candidates: &BTreeSet<String>, f: &mut dyn FnMut(&str, bool)) {
    fn go(ix: &Ix, c: &BTreeSet<String>, inside: bool, f: &mut dyn FnMut(&str, bool)) {
        match ix {
            Ix::Const(_) | Ix::Var(_) => {}
            Ix::Neg(a) => go(a, c, inside, f),
            Ix::Bin(_, a, b) => {
                go(a, c, inside, f);
                go(b, c, inside, f);
            }
            Ix::Load(array, a) => {
                let candidate = c.contains(array);
                if candidate {
                    f(array, inside);
                }
                go(a, c, inside || candidate, f);
                // A candidate whose index holds a candidate's load is nested too.
                if candidate && has_candidate_load(a, c) {
                    f(array, true);
                }
            }
        }
    }
    go(ix, candidates, false, f)
}

fn has_candidate_load(ix: &Ix, c: &BTreeSet<String>) -> bool {
    match ix {
        Ix::Const(_) | Ix::Var(_) => false,
        Ix::Neg(a) => has_candidate_load(a, c),
        Ix::Bin(_, a, b) => has_candidate_load(a, c) || has_candidate_load(b, c),
        Ix::Load(array, a) => c.contains(array) || has_candidate_load(a, c),
    }
}

/// `s` with every store and scalar update that loads a checked array wrapped in one
/// check per array (in the order of the first load), the `else` recording the failure.
fn wrap(s: Stmt, ranges: &[(String, Ix, Ix)]) -> Stmt {
    match s {
        Stmt::For(l) => Stmt::For(For {
            body: l.body.into_iter().map(|t| wrap(t, ranges)).collect(),
            ..l
        }),
        Stmt::If {
            cond,
            then_branch,
            else_branch,
        } => Stmt::If {
            cond,
            then_branch: then_branch.into_iter().map(|t| wrap(t, ranges)).collect(),
            else_branch: else_branch.into_iter().map(|t| wrap(t, ranges)).collect(),
        },
        Stmt::Alloc {
            buf,
            shape,
            len,
            zeroed,
            storage,
            fold,
            body,
        } => Stmt::Alloc {
            buf,
            shape,
            len,
            zeroed,
            storage,
            fold,
            body: body.into_iter().map(|t| wrap(t, ranges)).collect(),
        },
        Stmt::Store { .. } | Stmt::SetScalar { .. } => {
            let mut loads: Vec<(String, Ix)> = Vec::new();
            let mut note = |ix: &Ix| collect_loads(ix, ranges, &mut loads);
            if let Stmt::Store { index, .. } = &s {
                note(index);
            }
            if let Stmt::Store { value, .. } | Stmt::SetScalar { value, .. } = &s {
                val_loads(value, &mut note);
            }
            let mut arrays: Vec<&str> = Vec::new();
            for (a, _) in &loads {
                if !arrays.contains(&a.as_str()) {
                    arrays.push(a);
                }
            }
            let mut out = s.clone();
            for array in arrays.into_iter().rev() {
                let Some((_, lo, hi)) = ranges.iter().find(|(a, _, _)| a == array) else {
                    continue;
                };
                let cond = Cond::all(
                    loads
                        .iter()
                        .filter(|(a, _)| a == array)
                        .flat_map(|(_, load)| {
                            [
                                Cond::Cmp(CmpOp::Le, lo.clone(), load.clone()),
                                Cond::Cmp(CmpOp::Lt, load.clone(), hi.clone()),
                            ]
                        })
                        .collect(),
                );
                out = Stmt::If {
                    cond,
                    then_branch: vec![out],
                    else_branch: vec![Stmt::Fail {
                        array: array.to_string(),
                    }],
                };
            }
            out
        }
        other => other,
    }
}

/// The distinct loads of checked arrays in `ix`, in order.
fn collect_loads(ix: &Ix, ranges: &[(String, Ix, Ix)], out: &mut Vec<(String, Ix)>) {
    match ix {
        Ix::Const(_) | Ix::Var(_) => {}
        Ix::Neg(a) => collect_loads(a, ranges, out),
        Ix::Bin(_, a, b) => {
            collect_loads(a, ranges, out);
            collect_loads(b, ranges, out);
        }
        Ix::Load(array, a) => {
            collect_loads(a, ranges, out);
            if ranges.iter().any(|(r, _, _)| r == array) {
                let entry = (array.clone(), ix.clone());
                if !out.contains(&entry) {
                    out.push(entry);
                }
            }
        }
    }
}

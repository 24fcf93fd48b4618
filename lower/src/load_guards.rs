//! Conditions that read index arrays at indices not proved inside them.
//!
//! ATL reads an index array as 0 outside it (`atl_lang::index::IndexExpr::Load`), and
//! access safety lets a guard read one anywhere: `[crd[p + 1] == i] * …` is a
//! well-defined program whose last term compares 0 with `i`. A kernel must not read
//! past the array, so [`guard_loads`] rewrites each comparison that reads `arr[e]`
//! with `e` not proved inside into the two cases, `(0 <= e && e < len && P) || (!(0 <=
//! e && e < len) && P[arr[e] := 0])`: C's `&&` evaluates left to right, so `arr[e]`
//! is read only where it is inside. Before, lowering emitted the read as it was and
//! the translation validator refused the kernel (E0951, "read `crd[p + 1]` inside its
//! index array").

use std::collections::HashMap;

use atl_lang::index::{CmpOp, IndexExpr, Pred};

/// `pred` with every comparison that reads an index array at an index not proved
/// inside it split into the cases inside and outside (the module documentation).
/// `lengths` gives each index array's length, `proves` decides a fact in the context
/// of the condition.
pub(crate) fn guard_loads(
    pred: &Pred,
    lengths: &HashMap<String, IndexExpr>,
    proves: &dyn Fn(&Pred) -> bool,
) -> Pred {
    let mut known = Vec::new();
    walk(pred, lengths, proves, &mut known)
}

fn walk(
    pred: &Pred,
    lengths: &HashMap<String, IndexExpr>,
    proves: &dyn Fn(&Pred) -> bool,
    known: &mut Vec<IndexExpr>,
) -> Pred {
    match pred {
        Pred::Bool(_) => pred.clone(),
        Pred::And(a, b) => Pred::and(
            walk(a, lengths, proves, known),
            walk(b, lengths, proves, known),
        ),
        Pred::Or(a, b) => Pred::or(
            walk(a, lengths, proves, known),
            walk(b, lengths, proves, known),
        ),
        Pred::Not(a) => Pred::not(walk(a, lengths, proves, known)),
        Pred::Cmp(..) => split(pred, lengths, proves, known),
    }
}

/// A comparison, split on its innermost load not known or proved inside its array.
fn split(
    cmp: &Pred,
    lengths: &HashMap<String, IndexExpr>,
    proves: &dyn Fn(&Pred) -> bool,
    known: &mut Vec<IndexExpr>,
) -> Pred {
    let Pred::Cmp(_, a, b) = cmp else {
        return cmp.clone();
    };
    let unsafe_load = first_read_outside([a, b], lengths, proves, known);
    let Some((load, inside)) = unsafe_load else {
        return cmp.clone();
    };
    known.push(load.clone());
    let read = split(cmp, lengths, proves, known);
    known.pop();
    let zero = cmp.map_index(&mut |e| replace(e, &load, &IndexExpr::Const(0)));
    let outside = walk(&zero, lengths, proves, known);
    Pred::or(
        Pred::and(inside.clone(), read),
        Pred::and(Pred::not(inside), outside),
    )
}

/// The first index-array read of `indices` (innermost first) that is not in `skip`
/// and whose index is not proved inside its array, with the bounds not proved (a read
/// at `p + 1` of a loop from 0 needs only the upper one). The one place that decides
/// which reads a kernel must not make unguarded: conditions ([`guard_loads`]),
/// coordinates and one-hot targets (lowering) all ask it.
pub(crate) fn first_read_outside<'e>(
    indices: impl IntoIterator<Item = &'e IndexExpr>,
    lengths: &HashMap<String, IndexExpr>,
    proves: &dyn Fn(&Pred) -> bool,
    skip: &[IndexExpr],
) -> Option<(IndexExpr, Pred)> {
    indices
        .into_iter()
        .flat_map(nested_loads)
        .find_map(|(array, at)| {
            let len = lengths.get(&array)?;
            let read = IndexExpr::Load(array, Box::new(at.clone()));
            if skip.contains(&read) {
                return None;
            }
            let inside = [
                Pred::cmp(CmpOp::Le, IndexExpr::Const(0), at.clone()),
                Pred::cmp(CmpOp::Lt, at, len.clone()),
            ]
            .into_iter()
            .filter(|bound| !proves(bound))
            .reduce(Pred::and)?;
            Some((read, inside))
        })
}

/// The index-array reads of `e` as (array, index) pairs, each after the reads in its
/// index (so a read's index has no read outside its array once those are split).
pub(crate) fn nested_loads(e: &IndexExpr) -> Vec<(String, IndexExpr)> {
    fn walk(e: &IndexExpr, out: &mut Vec<(String, IndexExpr)>) {
        match e {
            IndexExpr::Const(_) | IndexExpr::Var(_) | IndexExpr::Meta(_) => {}
            IndexExpr::Neg(a) => walk(a, out),
            IndexExpr::Bin(_, a, b) => {
                walk(a, out);
                walk(b, out);
            }
            IndexExpr::Load(array, a) => {
                walk(a, out);
                out.push((array.clone(), (**a).clone()));
            }
        }
    }
    let mut out = Vec::new();
    walk(e, &mut out);
    out
}

/// `e` with every occurrence of `from` replaced by `to`.
pub(crate) fn replace(e: &IndexExpr, from: &IndexExpr, to: &IndexExpr) -> IndexExpr {
    if e == from {
        return to.clone();
    }
    match e {
        IndexExpr::Const(_) | IndexExpr::Var(_) | IndexExpr::Meta(_) => e.clone(),
        IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(replace(a, from, to))),
        IndexExpr::Bin(op, a, b) => IndexExpr::bin(*op, replace(a, from, to), replace(b, from, to)),
        IndexExpr::Load(array, at) => {
            IndexExpr::Load(array.clone(), Box::new(replace(at, from, to)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(a: &str, at: IndexExpr) -> IndexExpr {
        IndexExpr::Load(a.into(), Box::new(at))
    }

    #[test]
    fn a_read_proved_inside_is_kept_and_another_is_split() {
        let lengths = HashMap::from([("crd".to_string(), IndexExpr::var("nnz"))]);
        let p = IndexExpr::var("p");
        let next = IndexExpr::add(p.clone(), IndexExpr::Const(1));
        let eq = |at: IndexExpr| Pred::cmp(CmpOp::Eq, load("crd", at), IndexExpr::var("i"));
        // Everything proved: unchanged.
        assert_eq!(
            guard_loads(&eq(p.clone()), &lengths, &|_| true),
            eq(p.clone())
        );
        // Nothing proved: crd[p + 1] == i becomes the two cases.
        let inside = Pred::and(
            Pred::cmp(CmpOp::Le, IndexExpr::Const(0), next.clone()),
            Pred::cmp(CmpOp::Lt, next.clone(), IndexExpr::var("nnz")),
        );
        let want = Pred::or(
            Pred::and(inside.clone(), eq(next.clone())),
            Pred::and(
                Pred::not(inside),
                Pred::cmp(CmpOp::Eq, IndexExpr::Const(0), IndexExpr::var("i")),
            ),
        );
        assert_eq!(guard_loads(&eq(next), &lengths, &|_| false), want);
    }

    #[test]
    fn a_nested_read_is_split_inside_out_and_every_case_evaluates_as_atl() {
        // crd[crd[p]] == i with crd of length 3 = [2, 5, 1]: ATL reads 0 outside.
        let lengths = HashMap::from([("crd".to_string(), IndexExpr::Const(3))]);
        let pred = Pred::cmp(
            CmpOp::Eq,
            load("crd", load("crd", IndexExpr::var("p"))),
            IndexExpr::var("i"),
        );
        let split = guard_loads(&pred, &lengths, &|_| false);
        let crd = [2i64, 5, 1];
        // An evaluation that fails on a read outside: only the split form avoids it.
        for p in -1..5 {
            for i in -1..7 {
                let env = |v: &str| match v {
                    "p" => Some(p),
                    "i" => Some(i),
                    _ => None,
                };
                let atl = |_: &str, k: i64| {
                    Some(if (0..3).contains(&k) {
                        crd[k as usize]
                    } else {
                        0
                    })
                };
                let strict = |_: &str, k: i64| (0..3).contains(&k).then(|| crd[k as usize]);
                assert_eq!(
                    split.eval_with(&env, &strict).ok(),
                    pred.eval_with(&env, &atl).ok(),
                    "p = {p}, i = {i}: {split}"
                );
            }
        }
    }
}

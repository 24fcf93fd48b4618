//! Substitution of a loop variable in loop-IR statements (every bound, condition,
//! index, coordinate and extent), and the conversion of target index arithmetic back
//! to index expressions. Used by the passes that move or copy loops after lowering:
//! the merge of partitioned parallel loops (a renaming) and the sliding window (a
//! shift of a producer's rows, and its first iteration's copy).

use atl_lang::index::{IndexExpr, IndexOp};
use atl_lang::poly::normalize;

use crate::ir::{Cond, Coord, Ix, IxOp, Load, Stmt, Val};

/// An [`Ix`] as the index expression it computes (`None` for none: every operator has
/// a counterpart; C's `/` and `%` are used only where they are floor division).
pub(crate) fn index_of(ix: &Ix) -> Option<IndexExpr> {
    Some(match ix {
        Ix::Const(c) => IndexExpr::Const(*c),
        Ix::Var(v) => IndexExpr::Var(v.clone()),
        Ix::Neg(a) => IndexExpr::Neg(Box::new(index_of(a)?)),
        Ix::Load(array, a) => IndexExpr::Load(array.clone(), Box::new(index_of(a)?)),
        Ix::Bin(op, a, b) => {
            let op = match op {
                IxOp::Add => IndexOp::Add,
                IxOp::Sub => IndexOp::Sub,
                IxOp::Mul => IndexOp::Mul,
                IxOp::DivNat | IxOp::FloorDiv => IndexOp::Div,
                IxOp::ModNat | IxOp::FloorMod => IndexOp::Mod,
                IxOp::CeilDiv => IndexOp::CDiv,
                IxOp::Min => IndexOp::Min,
                IxOp::Max => IndexOp::Max,
            };
            IndexExpr::bin(op, index_of(a)?, index_of(b)?)
        }
    })
}

/// A rewrite of every index of a statement: `ix` for target arithmetic, `index` for
/// coordinates, extents and shapes.
struct Replacement<'r> {
    ix: &'r dyn Fn(&Ix) -> Option<Ix>,
    index: &'r dyn Fn(&IndexExpr) -> Option<IndexExpr>,
}

/// Replaces the variable `var` by `ix` (in target arithmetic) and `index` (in
/// coordinates and extents, which must denote the same value) throughout `block`.
pub(crate) fn substitute_block(block: &mut [Stmt], var: &str, ix: &Ix, index: &IndexExpr) {
    let r = Replacement {
        ix: &|x| match x {
            Ix::Var(v) if v == var => Some(ix.clone()),
            _ => None,
        },
        index: &|e| e.mentions(var).then(|| normalize(&e.subst(var, index))),
    };
    for s in block {
        r.stmt(s);
    }
}

/// Rewrites every index expression in target arithmetic of `block` (loop bounds,
/// conditions, flat indices, lengths, coordinates as values) by `f`, where it says
/// something (`f` sees each node before its operands).
pub(crate) fn map_ix_block(block: &mut [Stmt], f: &dyn Fn(&Ix) -> Option<Ix>) {
    let r = Replacement {
        ix: f,
        index: &|_| None,
    };
    for s in block {
        r.stmt(s);
    }
}

impl Replacement<'_> {
    fn stmt(&self, s: &mut Stmt) {
        match s {
            Stmt::For(l) => {
                self.ix(&mut l.lo);
                self.ix(&mut l.hi);
                l.body.iter_mut().for_each(|s| self.stmt(s));
            }
            Stmt::If {
                cond,
                then_branch,
                else_branch,
            } => {
                self.cond(cond);
                then_branch.iter_mut().for_each(|s| self.stmt(s));
                else_branch.iter_mut().for_each(|s| self.stmt(s));
            }
            Stmt::Alloc {
                shape, len, body, ..
            } => {
                for d in shape.iter_mut() {
                    *d = self.index(d);
                }
                self.ix(len);
                body.iter_mut().for_each(|s| self.stmt(s));
            }
            Stmt::Decl { init, .. } => {
                if let Some(v) = init {
                    self.val(v);
                }
            }
            Stmt::SetScalar { value, .. } => self.val(value),
            Stmt::Store {
                index,
                coords,
                value,
                ..
            } => {
                self.ix(index);
                self.coords(coords);
                self.val(value);
            }
            Stmt::Fill { len, .. } => self.ix(len),
            Stmt::Fail { .. } => {}
        }
    }

    fn index(&self, e: &IndexExpr) -> IndexExpr {
        (self.index)(e).unwrap_or_else(|| e.clone())
    }

    fn coords(&self, coords: &mut [Coord]) {
        for c in coords {
            c.index = self.index(&c.index);
            c.extent = self.index(&c.extent);
        }
    }

    fn val(&self, v: &mut Val) {
        match v {
            Val::Lit(_) | Val::Scalar(_) => {}
            Val::Coord(ix) => self.ix(ix),
            Val::Load(Load { index, coords, .. }) => {
                self.ix(index);
                self.coords(coords);
            }
            Val::Neg(a) => self.val(a),
            Val::Bin(_, a, b) => {
                self.val(a);
                self.val(b);
            }
            Val::Call(_, args) => args.iter_mut().for_each(|a| self.val(a)),
            Val::Select(c, a) | Val::Blend(c, a) => {
                self.cond(c);
                self.val(a);
            }
        }
    }

    fn cond(&self, c: &mut Cond) {
        match c {
            Cond::Bool(_) => {}
            Cond::Cmp(_, a, b) => {
                self.ix(a);
                self.ix(b);
            }
            Cond::And(a, b) | Cond::Or(a, b) => {
                self.cond(a);
                self.cond(b);
            }
            Cond::Not(a) => self.cond(a),
        }
    }

    fn ix(&self, ix: &mut Ix) {
        if let Some(new) = (self.ix)(ix) {
            *ix = new;
            return;
        }
        match ix {
            Ix::Const(_) | Ix::Var(_) => {}
            Ix::Neg(a) | Ix::Load(_, a) => self.ix(a),
            Ix::Bin(_, a, b) => {
                self.ix(a);
                self.ix(b);
            }
        }
    }
}

//! The source side of the value check: the element of an ATL definition at symbolic
//! coordinates, as a [`Term`] over the input tensors, following the semantics of
//! DESIGN §3.2 (what `atl_lang::interp` computes) — written here, from the definition
//! as derived, and not from the normalized expression lowering records, so that the
//! validator shares nothing with lowering's normalization.
//!
//! Every construct reads the element it is asked for: a `gen` checks its index is in
//! range and binds its variable, an access pushes an index, `let`s and definitions
//! are inlined at the element they are read at, reshape operators move indices (with
//! the read-side maps of `atl_lang::reshape`, the ones the interpreter uses), and an
//! input element outside the input's shape is zero. The result is exact: the term is
//! the element for every size and every input.

use std::collections::BTreeMap;
use std::rc::Rc;

use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_lang::ir::{Expr, ExprKind, Program};
use atl_lang::reshape::{self, AmountOp, SymbolicIndex};
use atl_lang::shapes::{self, Shape, ShapeEnv};

use crate::term::Term;

/// A `let` in scope: its value with the scope it was bound in.
struct LetBinding {
    name: String,
    value: Expr,
    scope: Scope,
    shape: Shape,
}

/// What names mean where an expression is evaluated: index variables (`gen`/`sum`
/// binders, already replaced by what they stand for) and `let`s, innermost last.
#[derive(Clone, Default)]
struct Scope {
    binders: BTreeMap<String, IndexExpr>,
    lets: Vec<Rc<LetBinding>>,
}

impl Scope {
    fn index(&self, e: &IndexExpr) -> IndexExpr {
        // All at once: a binder's value may mention another binder's name.
        crate::sites::substitute(e, &self.binders)
    }

    fn pred(&self, p: &Pred) -> Pred {
        p.map_index(&mut |e| self.index(e))
    }

    fn let_shapes(&self) -> Vec<(String, Shape)> {
        self.lets
            .iter()
            .map(|l| (l.name.clone(), l.shape.clone()))
            .collect()
    }
}

/// Evaluates elements of a program's definitions symbolically.
#[derive(Debug)]
pub struct SourceEval<'a> {
    program: &'a Program,
    shapes: &'a ShapeEnv,
    fresh: usize,
}

/// Why an element could not be expressed (a construct out of reach, an ill-shaped
/// program): the value check is then unknown, never passed.
pub type SourceError = String;

fn le(a: IndexExpr, b: IndexExpr) -> Pred {
    Pred::cmp(CmpOp::Le, a, b)
}

fn lt(a: IndexExpr, b: IndexExpr) -> Pred {
    Pred::cmp(CmpOp::Lt, a, b)
}

/// `0 <= i < n`.
pub(crate) fn in_range(i: &IndexExpr, n: &IndexExpr) -> Pred {
    Pred::and(le(IndexExpr::Const(0), i.clone()), lt(i.clone(), n.clone()))
}

impl<'a> SourceEval<'a> {
    pub fn new(program: &'a Program, shapes: &'a ShapeEnv) -> SourceEval<'a> {
        SourceEval {
            program,
            shapes,
            fresh: 0,
        }
    }

    /// The element of definition `def` at `coords` (one per dimension, outermost
    /// first).
    pub fn element_of_def(&mut self, def: &str, coords: &[IndexExpr]) -> Result<Term, SourceError> {
        let body = &self
            .program
            .def(def)
            .ok_or_else(|| format!("no definition named `{def}`"))?
            .body;
        self.element(body, coords, &Scope::default())
    }

    fn shape(&self, e: &Expr, scope: &Scope) -> Result<Shape, SourceError> {
        let mut lets = scope.let_shapes();
        shapes::infer_with_lets(self.shapes, &mut lets, e).map_err(|d| d.message.clone())
    }

    fn fresh(&mut self, var: &str) -> String {
        self.fresh += 1;
        format!("{var}#s{}", self.fresh)
    }

    fn element(&mut self, e: &Expr, idx: &[IndexExpr], scope: &Scope) -> Result<Term, SourceError> {
        match &e.kind {
            ExprKind::Lit(v) => match idx {
                [] => Ok(Term::Lit(*v)),
                _ => Err("a scalar literal indexed like a tensor".into()),
            },
            ExprKind::Coord(index) => match idx {
                [] => Ok(Term::Coord(scope.index(index))),
                _ => Err("a coordinate used as a value, indexed like a tensor".into()),
            },
            ExprKind::Input(name) => {
                let shape = self
                    .shapes
                    .globals
                    .get(name)
                    .ok_or_else(|| format!("no input named `{name}`"))?;
                if shape.len() != idx.len() {
                    return Err(format!(
                        "input `{name}` of rank {} read with {} indices",
                        shape.len(),
                        idx.len()
                    ));
                }
                let range = idx
                    .iter()
                    .zip(shape)
                    .map(|(i, n)| in_range(i, n))
                    .reduce(Pred::and)
                    .unwrap_or(Pred::Bool(true));
                Ok(Term::guarded(
                    range,
                    Term::Input {
                        name: name.clone(),
                        coords: idx.to_vec(),
                    },
                ))
            }
            ExprKind::DefRef(name) => {
                let body = &self
                    .program
                    .def(name)
                    .ok_or_else(|| format!("no definition named `{name}`"))?
                    .body;
                self.element(body, idx, &Scope::default())
            }
            ExprKind::Var(name) => {
                let binding = scope
                    .lets
                    .iter()
                    .rev()
                    .find(|l| &l.name == name)
                    .cloned()
                    .ok_or_else(|| format!("`{name}` is bound by nothing"))?;
                self.element(&binding.value, idx, &binding.scope)
            }
            ExprKind::Meta(m) => Err(format!("a rule metavariable `?{m}` in a program")),
            ExprKind::Gen { var, lo, hi, body } => {
                let (k, rest) = idx
                    .split_first()
                    .ok_or("a tensor (`gen`) where a scalar is expected")?;
                let (lo, hi) = (scope.index(lo), scope.index(hi));
                let extent = IndexExpr::sub(hi, lo.clone());
                let mut inner = scope.clone();
                inner
                    .binders
                    .insert(var.clone(), IndexExpr::add(lo, k.clone()));
                let value = self.element(body, rest, &inner)?;
                Ok(Term::guarded(in_range(k, &extent), value))
            }
            ExprKind::Sum { var, lo, hi, body } => {
                let fresh = self.fresh(var);
                let mut inner = scope.clone();
                inner
                    .binders
                    .insert(var.clone(), IndexExpr::var(fresh.clone()));
                let value = self.element(body, idx, &inner)?;
                Ok(Term::Sum {
                    var: fresh,
                    lo: scope.index(lo),
                    hi: scope.index(hi),
                    body: Box::new(value),
                })
            }
            ExprKind::MaxRed { var, lo, hi, body } => {
                if !idx.is_empty() {
                    return Err("an element of the scalar `max` is requested".into());
                }
                let fresh = self.fresh(var);
                let mut inner = scope.clone();
                inner
                    .binders
                    .insert(var.clone(), IndexExpr::var(fresh.clone()));
                let value = self.element(body, idx, &inner)?;
                Ok(Term::Max {
                    var: fresh,
                    lo: scope.index(lo),
                    hi: scope.index(hi),
                    body: Box::new(value),
                })
            }
            ExprKind::Guard { pred, body } => {
                let value = self.element(body, idx, scope)?;
                Ok(Term::guarded(scope.pred(pred), value))
            }
            ExprKind::Let { var, value, body } => {
                let shape = self.shape(value, scope)?;
                let mut inner = scope.clone();
                inner.lets.push(Rc::new(LetBinding {
                    name: var.clone(),
                    value: (**value).clone(),
                    scope: scope.clone(),
                    shape,
                }));
                self.element(body, idx, &inner)
            }
            ExprKind::Access { tensor, index } => {
                let mut inner_idx = Vec::with_capacity(idx.len() + 1);
                inner_idx.push(scope.index(index));
                inner_idx.extend_from_slice(idx);
                self.element(tensor, &inner_idx, scope)
            }
            ExprKind::Neg(a) => Ok(Term::Neg(Box::new(self.element(a, idx, scope)?))),
            ExprKind::Call { func, args } => {
                if !idx.is_empty() {
                    return Err(format!("`{func}` (a scalar) indexed like a tensor"));
                }
                let args = args
                    .iter()
                    .map(|a| self.element(a, &[], scope))
                    .collect::<Result<Vec<Term>, SourceError>>()?;
                Ok(Term::Call(*func, args))
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let a = self.element(lhs, idx, scope)?;
                let b = self.element(rhs, idx, scope)?;
                Ok(Term::bin(*op, a, b))
            }
            ExprKind::Concat(a, b) => {
                let (k, rest) = idx
                    .split_first()
                    .ok_or("a tensor (`++`) where a scalar is expected")?;
                let na = self
                    .shape(a, scope)?
                    .first()
                    .cloned()
                    .ok_or("`++` of a scalar")?;
                let left = self.element(a, idx, scope)?;
                let mut right_idx = vec![IndexExpr::sub(k.clone(), na.clone())];
                right_idx.extend_from_slice(rest);
                let right = self.element(b, &right_idx, scope)?;
                Ok(Term::Select(
                    lt(k.clone(), na),
                    Box::new(left),
                    Box::new(right),
                ))
            }
            ExprKind::Transpose(a) => match idx {
                [i, j, rest @ ..] => {
                    let mut inner = vec![j.clone(), i.clone()];
                    inner.extend_from_slice(rest);
                    self.element(a, &inner, scope)
                }
                _ => Err("`transpose` read with fewer than two indices".into()),
            },
            ExprKind::Flatten(a) => {
                let (k, rest) = idx
                    .split_first()
                    .ok_or("a tensor (`flatten`) where a scalar is expected")?;
                let shape = self.shape(a, scope)?;
                let [n, m, ..] = shape.as_slice() else {
                    return Err("`flatten` of a tensor of rank below 2".into());
                };
                let mut inner = vec![
                    IndexExpr::bin(IndexOp::Div, k.clone(), m.clone()),
                    IndexExpr::bin(IndexOp::Mod, k.clone(), m.clone()),
                ];
                inner.extend_from_slice(rest);
                let value = self.element(a, &inner, scope)?;
                let total = IndexExpr::mul(n.clone(), m.clone());
                Ok(Term::guarded(in_range(k, &total), value))
            }
            ExprKind::Amount { op, amount, arg } => {
                let k = scope.index(amount);
                let n = self
                    .shape(arg, scope)?
                    .first()
                    .cloned()
                    .ok_or("a reshape of a scalar")?;
                let (outer, inner, rest) = if reshape::adds_inner_dim(*op) {
                    match idx {
                        [i, j, rest @ ..] => (i, Some(j), rest),
                        _ => return Err("`split` read with fewer than two indices".into()),
                    }
                } else {
                    match idx {
                        [i, rest @ ..] => (i, None, rest),
                        _ => return Err("a reshape read with no index".into()),
                    }
                };
                let read = reshape::amount_read(&SymbolicIndex, *op, &k, Some(&n), outer, inner);
                let mut guard = read.guard.unwrap_or(Pred::Bool(true));
                if *op == AmountOp::Split {
                    // The interpreter also checks the row and the position in the row.
                    let rows = IndexExpr::bin(IndexOp::CDiv, n.clone(), k.clone());
                    let j = inner.expect("split has an inner index");
                    guard = Pred::and(Pred::and(in_range(outer, &rows), in_range(j, &k)), guard);
                }
                let mut inner_idx = vec![read.index];
                inner_idx.extend_from_slice(rest);
                let value = self.element(arg, &inner_idx, scope)?;
                Ok(Term::guarded(guard, value))
            }
        }
    }
}

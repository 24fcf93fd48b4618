//! Normalization before lowering (thesis §4.3.2).
//!
//! Lowering (Figure 4.1) handles `gen`, `sum`, guards, `let`, `concat` and the
//! reshape operators structurally, and stores *scalars*. Normalization rewrites a
//! definition, by equivalences that hold for every program the interpreter accepts,
//! into a form where
//!
//! 1. every definition the expression uses is bound by a `let` around it, in program
//!    order (the interpreter also computes each used definition once per call);
//! 2. every node of non-scalar shape is one of those structural constructs: a tensor
//!    leaf `v` of shape `n :: _` (an input, a `let` variable, a partial access) becomes
//!    `gen i < n: v[i]`, and tensor `+`, `-` and negation become a `gen` of the
//!    scalar operation (the thesis's `tensor_add` lemma; together this is its
//!    dimension specialization);
//! 3. every access `e[k]` reads an input or a `let` variable: an access into any other
//!    construct is pushed inside it (the `get_gen`-style identities below, exact
//!    including out-of-range indices, which read zeros);
//! 4. every binder has a name unique in the whole expression and distinct from sizes,
//!    inputs and the output buffer.
//!
//! The access identities (`|e|` is the clamped extent of `e`'s first dimension):
//!
//! | access | equals |
//! |---|---|
//! | `(gen i in lo..hi: e)[k]` | `[0 <= k && k < hi - lo] * e[i := k + lo]` |
//! | `(sum i in lo..hi: e)[k]` | `sum i in lo..hi: e[k]` (`i` renamed if `k` mentions it) |
//! | `([p] * e)[k]`, `(let x = v in e)[k]` | `[p] * e[k]`, `let x = v in e[k]` |
//! | `(a ± b)[k]`, `(-a)[k]` | `a[k] ± b[k]`, `-(a[k])` |
//! | `concat(a, b)[k]` | `[k < |a|] * a[k] + [|a| <= k] * b[k - |a|]` |
//! | `transpose(e)[k]` | `gen j < |e|: e[j][k]` |
//! | `flatten(e)[k]` | `e[k / m][k % m]`, `m` the second extent (`k` out of range ⇔ `k / m` out of range) |
//! | `split(c, e)[k]` | `gen j < c: [k*c + j < |e|] * e[k*c + j]` |
//! | `pad_l(c, e)[k]`, `pad_r(c, e)[k]` | `e[k - c]`, `e[k]` (padding reads out of range: zero) |
//! | `trunc_l(c, e)[k]`, `trunc_r(c, e)[k]` | `[0 <= k] * e[k + c]`, `[k < |e| - c] * e[k]` |

use std::collections::HashSet;

use atl_lang::diag::Diagnostic;
use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_lang::ir::{
    BinOp, Expr, ExprKind, NameSupply, Program, all_names, rename_index, rename_tensor, subst_index,
};
use atl_lang::poly::normalize;
use atl_lang::reshape::{self, SymbolicIndex};
use atl_lang::shapes::{Shape, ShapeEnv};

use crate::prove::Prover;

/// Diagnostic for an internal inconsistency (a bug, or a program that bypassed the
/// checker).
pub(crate) fn internal(message: impl Into<String>) -> Diagnostic {
    Diagnostic::error(
        "E0912",
        format!("internal lowering error: {}", message.into()),
    )
    .with_help("this is a bug in the lowering; please report it with the program")
}

/// The definitions `expr` uses, directly or through other definitions, in program
/// order.
pub(crate) fn used_defs(program: &Program, expr: &Expr) -> Vec<String> {
    let mut needed: HashSet<String> = HashSet::new();
    let mut work = vec![expr];
    while let Some(e) = work.pop() {
        e.walk(&mut |n| {
            if let ExprKind::DefRef(d) = &n.kind
                && needed.insert(d.clone())
                && let Some(def) = program.def(d)
            {
                work.push(&def.body);
            }
        });
    }
    program
        .defs
        .iter()
        .filter(|d| needed.contains(&d.name))
        .map(|d| d.name.clone())
        .collect()
}

/// Replaces every `DefRef(d)` by `Var(d)`.
fn defs_to_vars(e: &Expr) -> Expr {
    let mut out = e.clone();
    fn rec(e: &mut Expr) {
        if let ExprKind::DefRef(d) = &e.kind {
            e.kind = ExprKind::Var(d.clone());
            return;
        }
        for c in e.children_mut() {
            rec(c);
        }
    }
    rec(&mut out);
    out
}

/// Normalizes the definition `def` of `program` (see the module documentation).
/// Returns the normalized expression and its shape.
pub fn normalize_def(
    program: &Program,
    shapes: &ShapeEnv,
    def: &str,
    prover: &Prover<'_>,
    reserved: &[String],
) -> Result<(Expr, Shape), Diagnostic> {
    let Some(main) = program.def(def) else {
        let names: Vec<&str> = program.defs.iter().map(|d| d.name.as_str()).collect();
        return Err(
            Diagnostic::error("E0606", format!("no definition named `{def}`"))
                .with_help(format!("definitions: {}", names.join(", "))),
        );
    };
    // 1. Used definitions become lets around the body, innermost last.
    let mut expr = defs_to_vars(&main.body);
    for d in used_defs(program, &main.body).iter().rev() {
        let body = &program
            .def(d)
            .ok_or_else(|| internal(format!("definition `{d}` vanished")))?
            .body;
        expr = Expr::let_(d.clone(), defs_to_vars(body), expr);
    }
    let mut used: HashSet<String> = all_names(&expr);
    used.extend(program.sizes.iter().map(|s| s.name.clone()));
    used.extend(program.inputs.iter().map(|s| s.name.clone()));
    used.extend(program.defs.iter().map(|s| s.name.clone()));
    used.extend(reserved.iter().cloned());
    let mut n = Normalizer {
        shapes,
        prover,
        lets: Vec::new(),
        supply: NameSupply::new(used),
    };
    let shape = n.shape(&expr)?;
    let normalized = n.norm(&expr)?;
    // 4. Unique binders.
    let mut taken: HashSet<String> = program.sizes.iter().map(|s| s.name.clone()).collect();
    taken.extend(program.inputs.iter().map(|s| s.name.clone()));
    taken.extend(reserved.iter().cloned());
    let unique = uniquify(&normalized, &mut taken, &mut n.supply);
    Ok((unique, shape))
}

struct Normalizer<'a, 'p> {
    shapes: &'a ShapeEnv,
    prover: &'a Prover<'p>,
    /// Shapes of the enclosing lets (innermost last).
    lets: Vec<(String, Shape)>,
    supply: NameSupply,
}

/// Whether `e` is an input, a `let` variable or a definition, possibly accessed.
pub(crate) fn is_leaf_chain(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Input(_) | ExprKind::Var(_) | ExprKind::DefRef(_) => true,
        ExprKind::Access { tensor, .. } => is_leaf_chain(tensor),
        _ => false,
    }
}

fn cmp(op: CmpOp, a: IndexExpr, b: IndexExpr) -> Pred {
    Pred::cmp(op, a, b)
}

impl Normalizer<'_, '_> {
    fn shape(&mut self, e: &Expr) -> Result<Shape, Diagnostic> {
        crate::shape::cshape(e, self.shapes, &mut self.lets, self.prover)
    }

    /// The clamped first extent of `e`.
    fn extent(&mut self, e: &Expr, dim: usize) -> Result<IndexExpr, Diagnostic> {
        let s = self.shape(e)?;
        let d = s
            .get(dim)
            .ok_or_else(|| internal("extent of a dimension that does not exist"))?;
        Ok(self.prover.clamp(d))
    }

    fn fresh(&mut self, base: &str) -> String {
        self.supply.fresh(base)
    }

    /// `gen v < n: e[v]` for `e` of shape `n :: _`, normalized.
    fn expand(&mut self, e: &Expr) -> Result<Expr, Diagnostic> {
        let n = self.extent(e, 0)?;
        let v = self.fresh("e");
        let body = self.norm(&Expr::access(e.clone(), IndexExpr::var(v.clone())))?;
        Ok(Expr::gen_(v, IndexExpr::Const(0), n, body))
    }

    fn norm(&mut self, e: &Expr) -> Result<Expr, Diagnostic> {
        let span = e.span;
        let with = |kind| Expr::new(kind, span);
        match &e.kind {
            ExprKind::Lit(_) => Ok(e.clone()),
            ExprKind::Coord(index) => Ok(with(ExprKind::Coord(normalize(index)))),
            ExprKind::Meta(m) => Err(Diagnostic::error(
                "E0911",
                format!("cannot lower the metavariable `?{m}`"),
            )
            .at(span, "a pattern, not a program")),
            ExprKind::Input(_) | ExprKind::Var(_) | ExprKind::DefRef(_) => {
                if self.shape(e)?.is_empty() {
                    Ok(e.clone())
                } else {
                    self.expand(e)
                }
            }
            ExprKind::Access { tensor, index } => {
                if is_leaf_chain(e) {
                    if self.shape(e)?.is_empty() {
                        Ok(e.clone())
                    } else {
                        self.expand(e)
                    }
                } else {
                    let pushed = self.push(tensor, index)?;
                    self.norm(&pushed)
                }
            }
            ExprKind::Gen { var, lo, hi, body } => Ok(with(ExprKind::Gen {
                var: var.clone(),
                lo: lo.clone(),
                hi: hi.clone(),
                body: Box::new(self.norm(body)?),
            })),
            ExprKind::Sum { var, lo, hi, body } => Ok(with(ExprKind::Sum {
                var: var.clone(),
                lo: lo.clone(),
                hi: hi.clone(),
                body: Box::new(self.norm(body)?),
            })),
            // Scalar bodies only (E0416).
            ExprKind::MaxRed { var, lo, hi, body } => Ok(with(ExprKind::MaxRed {
                var: var.clone(),
                lo: lo.clone(),
                hi: hi.clone(),
                body: Box::new(self.norm(body)?),
            })),
            ExprKind::Guard { pred, body } => Ok(with(ExprKind::Guard {
                pred: pred.clone(),
                body: Box::new(self.norm(body)?),
            })),
            ExprKind::Let { var, value, body } => {
                let value_shape = self.shape(value)?;
                let value = self.norm(value)?;
                self.lets.push((var.clone(), value_shape));
                let body = self.norm(body);
                self.lets.pop();
                Ok(with(ExprKind::Let {
                    var: var.clone(),
                    value: Box::new(value),
                    body: Box::new(body?),
                }))
            }
            ExprKind::Neg(a) => {
                if self.shape(e)?.is_empty() {
                    Ok(with(ExprKind::Neg(Box::new(self.norm(a)?))))
                } else {
                    self.expand(e)
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                // `specialize`'s case split stays one: lowering computes one part or
                // the other, not both added element by element.
                if let Some((pred, a, b)) = e.as_case_split() {
                    return Ok(with(ExprKind::Binary {
                        op: *op,
                        lhs: Box::new(Expr::guard(pred.clone(), self.norm(a)?)),
                        rhs: Box::new(Expr::guard(Pred::not(pred.clone()), self.norm(b)?)),
                    }));
                }
                if self.shape(e)?.is_empty() {
                    Ok(with(ExprKind::Binary {
                        op: *op,
                        lhs: Box::new(self.norm(lhs)?),
                        rhs: Box::new(self.norm(rhs)?),
                    }))
                } else {
                    self.expand(e)
                }
            }
            ExprKind::Concat(a, b) => Ok(with(ExprKind::Concat(
                Box::new(self.norm(a)?),
                Box::new(self.norm(b)?),
            ))),
            ExprKind::Transpose(a) => Ok(with(ExprKind::Transpose(Box::new(self.norm(a)?)))),
            ExprKind::Flatten(a) => Ok(with(ExprKind::Flatten(Box::new(self.norm(a)?)))),
            ExprKind::Amount { op, amount, arg } => Ok(with(ExprKind::Amount {
                op: *op,
                amount: normalize(amount),
                arg: Box::new(self.norm(arg)?),
            })),
            // Scalar functions have scalar arguments (shape inference says so).
            ExprKind::Call { func, args } => Ok(with(ExprKind::Call {
                func: *func,
                args: args
                    .iter()
                    .map(|a| self.norm(a))
                    .collect::<Result<Vec<Expr>, Diagnostic>>()?,
            })),
        }
    }

    /// `t[k]` with the access moved one construct inwards (not yet normalized).
    fn push(&mut self, t: &Expr, k: &IndexExpr) -> Result<Expr, Diagnostic> {
        let access = |e: &Expr, k: IndexExpr| Expr::access(e.clone(), k);
        let k = normalize(k);
        Ok(match &t.kind {
            _ if is_leaf_chain(t) => access(t, k),
            ExprKind::Gen { var, lo, hi, body } => {
                let pos = normalize(&IndexExpr::add(k.clone(), lo.clone()));
                let ext = normalize(&IndexExpr::sub(hi.clone(), lo.clone()));
                let inside = Pred::and(
                    cmp(CmpOp::Le, IndexExpr::Const(0), k.clone()),
                    cmp(CmpOp::Lt, k, ext),
                );
                Expr::guard(inside, subst_index(body, var, &pos))
            }
            ExprKind::Sum { var, lo, hi, body } => {
                let (var, body) = if k.mentions(var) {
                    let fresh = self.fresh(var);
                    let renamed = rename_index(body, var, &fresh);
                    (fresh, renamed)
                } else {
                    (var.clone(), (**body).clone())
                };
                Expr::sum(var, lo.clone(), hi.clone(), access(&body, k))
            }
            ExprKind::Guard { pred, body } => Expr::guard(pred.clone(), access(body, k)),
            ExprKind::Let { var, value, body } => {
                Expr::let_(var.clone(), (**value).clone(), access(body, k))
            }
            ExprKind::Access { tensor, index } => {
                let inner = self.push(tensor, index)?;
                access(&inner, k)
            }
            ExprKind::Neg(a) => Expr::synth(ExprKind::Neg(Box::new(access(a, k)))),
            ExprKind::Call { func, .. } => {
                return Err(internal(format!(
                    "access into the scalar `{}(…)`",
                    func.name()
                )));
            }
            ExprKind::MaxRed { var, .. } => {
                return Err(internal(format!("access into the scalar `max {var}`")));
            }
            ExprKind::Binary { op, lhs, rhs } => {
                if matches!(op, BinOp::Mul | BinOp::Div) {
                    return Err(internal("access into a scalar product"));
                }
                Expr::binary(*op, access(lhs, k.clone()), access(rhs, k))
            }
            ExprKind::Concat(a, b) => {
                let na = self.extent(a, 0)?;
                let left = Expr::guard(cmp(CmpOp::Lt, k.clone(), na.clone()), access(a, k.clone()));
                let right = Expr::guard(
                    cmp(CmpOp::Le, na.clone(), k.clone()),
                    access(b, normalize(&IndexExpr::sub(k, na))),
                );
                Expr::binary(BinOp::Add, left, right)
            }
            ExprKind::Transpose(a) => {
                let n0 = self.extent(a, 0)?;
                let v = self.fresh("t");
                Expr::gen_(
                    v.clone(),
                    IndexExpr::Const(0),
                    n0,
                    access(&access(a, IndexExpr::var(v)), k),
                )
            }
            ExprKind::Flatten(a) => {
                let m = self.extent(a, 1)?;
                let outer = IndexExpr::bin(IndexOp::Div, k.clone(), m.clone());
                let inner = IndexExpr::bin(IndexOp::Mod, k, m);
                access(&access(a, normalize(&outer)), normalize(&inner))
            }
            ExprKind::Amount { op, amount, arg } => {
                // The operator's read-side index map, from the reshape table.
                let c = normalize(amount);
                let n = if reshape::read_needs_extent(*op) {
                    Some(self.extent(arg, 0)?)
                } else {
                    None
                };
                let read_at = |inner: Option<&IndexExpr>| {
                    let read = reshape::amount_read(&SymbolicIndex, *op, &c, n.as_ref(), &k, inner);
                    match read.guard {
                        Some(guard) => Expr::guard(guard, access(arg, read.index)),
                        None => access(arg, read.index),
                    }
                };
                if reshape::adds_inner_dim(*op) {
                    let v = self.fresh("s");
                    let body = read_at(Some(&IndexExpr::var(v.clone())));
                    Expr::gen_(v, IndexExpr::Const(0), c, body)
                } else {
                    read_at(None)
                }
            }
            ExprKind::Lit(_)
            | ExprKind::Coord(_)
            | ExprKind::Meta(_)
            | ExprKind::Input(_)
            | ExprKind::Var(_)
            | ExprKind::DefRef(_) => access(t, k),
        })
    }
}

/// Renames binders so that every `gen`/`sum`/`let` binder of `e` is distinct from
/// every other and from `taken`.
fn uniquify(e: &Expr, taken: &mut HashSet<String>, supply: &mut NameSupply) -> Expr {
    let mut out = e.clone();
    if let Some((var, kind)) = e.binder() {
        let var = var.to_string();
        if taken.contains(&var) {
            let fresh = supply.fresh_avoiding(&var, &|n| taken.contains(n));
            match &mut out.kind {
                ExprKind::Gen { var: v, body, .. }
                | ExprKind::Sum { var: v, body, .. }
                | ExprKind::MaxRed { var: v, body, .. } => {
                    **body = rename_index(body, &var, &fresh);
                    *v = fresh.clone();
                }
                ExprKind::Let { var: v, body, .. } => {
                    **body = rename_tensor(body, &var, &fresh);
                    *v = fresh.clone();
                }
                _ => {}
            }
            let _ = kind;
            taken.insert(fresh);
        } else {
            taken.insert(var);
        }
    }
    for c in out.children_mut() {
        *c = uniquify(c, taken, supply);
    }
    out
}

//! Shape inference (thesis §3.4): every expression gets a static shape, a list of index
//! expressions over the sizes in polynomial normal form.
//!
//! Shapes may mention sizes only; a `gen` whose extent depends on a binder (a jagged
//! tensor) is rejected. Equality of symbolic extents is equality of normal forms
//! (`poly`): sound (equal normal forms are equal everywhere) but incomplete, so a
//! program whose shapes agree only under facts the normal form cannot see is rejected
//! with a diagnostic that shows both shapes.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::diag::Diagnostic;
use crate::index::{CmpOp, IndexExpr, Pred};
use crate::ir::{AmountOp, BinOp, Expr, ExprKind, Program};
use crate::poly::{normalize, same};
use crate::reshape::{self, ReshapeOp, Symbolic};
use crate::span::Span;

/// A static shape: extents, outermost first, normalized.
pub type Shape = Vec<IndexExpr>;

/// Formats a shape as `[n, m]`.
pub fn show_shape(shape: &[IndexExpr]) -> String {
    let mut s = String::from("[");
    for (k, d) in shape.iter().enumerate() {
        if k > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "{d}");
    }
    s.push(']');
    s
}

fn shapes_equal(a: &[IndexExpr], b: &[IndexExpr]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
}

/// The shapes of a program's inputs and definitions.
#[derive(Clone, Debug, Default)]
pub struct ShapeEnv {
    pub sizes: Vec<String>,
    pub globals: HashMap<String, Shape>,
}

impl ShapeEnv {
    /// The environment of a program's declarations (inputs only; definitions are added
    /// by [`check_program`]).
    pub fn of_program(program: &Program) -> ShapeEnv {
        let mut env = ShapeEnv {
            sizes: program.sizes.iter().map(|s| s.name.clone()).collect(),
            globals: HashMap::new(),
        };
        for input in &program.inputs {
            env.globals.insert(
                input.name.clone(),
                input.shape.iter().map(normalize).collect(),
            );
        }
        env
    }

    fn is_size(&self, name: &str) -> bool {
        self.sizes.iter().any(|s| s == name)
    }
}

/// Infers the shape of `expr` in `env`. `lets` gives the shapes of enclosing `let`s.
pub fn infer(env: &ShapeEnv, expr: &Expr) -> Result<Shape, Diagnostic> {
    let mut lets = Vec::new();
    infer_in(env, &mut lets, expr)
}

/// The binder variables of an extent that are not sizes (what makes a tensor jagged).
fn non_size_vars(env: &ShapeEnv, e: &IndexExpr) -> Vec<String> {
    e.vars().into_iter().filter(|v| !env.is_size(v)).collect()
}

fn check_amount(
    env: &ShapeEnv,
    op: AmountOp,
    amount: &IndexExpr,
    span: Span,
) -> Result<IndexExpr, Diagnostic> {
    let k = normalize(amount);
    if k.has_load() {
        return Err(Diagnostic::error(
            "E0417",
            format!("the amount of `{}` reads an index array", op.name()),
        )
        .at(span, "depends on an index array's values")
        .with_help("reshape amounts must be built from sizes and constants"));
    }
    let bad = non_size_vars(env, &k);
    if !bad.is_empty() {
        return Err(Diagnostic::error(
            "E0408",
            format!(
                "the amount of `{}` depends on the binder `{}`",
                op.name(),
                bad[0]
            ),
        )
        .at(span, "the result would be jagged")
        .with_help("reshape amounts must be built from sizes and constants"));
    }
    if let Some(c) = k.as_const() {
        let min = reshape::min_amount(op);
        if c < min {
            let need = if min > 0 { "positive" } else { "non-negative" };
            return Err(Diagnostic::error(
                "E0409",
                format!("`{}` needs a {need} amount, got {c}", op.name()),
            )
            .at(span, "invalid amount"));
        }
    }
    Ok(k)
}

/// A fact about the sizes that must hold for a term to be well-shaped (ARCHITECTURE.md,
/// "The shape discipline"): a `gen` range length, a reshape amount or an input extent
/// that the normal form alone cannot show to be in range. Obligations mention sizes
/// only, so they are proved under the declarations (sizes >= 1 and the `assume`s) and
/// never under a guard's or a binder's facts: a shape is observed everywhere.
#[derive(Clone, Debug)]
pub struct ShapeObligation {
    pub pred: Pred,
    /// The node (or input declaration) whose shape needs it.
    pub span: Span,
    /// What is required, in the user's terms, e.g. "the length `n - 5` of the range
    /// of `gen i`"; the predicate says which bound.
    pub what: String,
}

fn amount_obligations(
    op: AmountOp,
    k: &IndexExpr,
    n: &IndexExpr,
    span: Span,
    obl: &mut Vec<ShapeObligation>,
) {
    let mut push = |pred: Pred, what: String| {
        // Constant facts were decided by `check_amount` and the trunc check.
        if let Pred::Cmp(_, a, b) = &pred
            && normalize(&IndexExpr::sub(a.clone(), b.clone()))
                .as_const()
                .is_some()
        {
            return;
        }
        obl.push(ShapeObligation { pred, span, what });
    };
    for (pred, what) in reshape::amount_requirements(op, k, n) {
        push(pred, what);
    }
}

/// Infers the shape of `e` (enclosing `let` shapes given, innermost last) and collects
/// the facts about the sizes its well-shapedness needs ([`ShapeObligation`]).
pub fn infer_with_obligations(
    env: &ShapeEnv,
    lets: &mut Vec<(String, Shape)>,
    e: &Expr,
) -> Result<(Shape, Vec<ShapeObligation>), Diagnostic> {
    let mut obl = Vec::new();
    let shape = infer_obl(env, lets, e, &mut obl)?;
    Ok((shape, obl))
}

/// The obligations of the declared inputs: every extent is at least 0.
pub fn input_obligations(program: &Program) -> Vec<ShapeObligation> {
    let mut out = Vec::new();
    for input in &program.inputs {
        for d in &input.shape {
            let d = normalize(d);
            if d.as_const().is_none() {
                out.push(ShapeObligation {
                    pred: Pred::cmp(CmpOp::Ge, d.clone(), IndexExpr::Const(0)),
                    span: input.span,
                    what: format!("the extent `{d}` of input `{}`", input.name),
                });
            }
        }
    }
    out
}

/// Infers the shape of `e` with the shapes of enclosing `let`s given (innermost last).
pub fn infer_with_lets(
    env: &ShapeEnv,
    lets: &mut Vec<(String, Shape)>,
    e: &Expr,
) -> Result<Shape, Diagnostic> {
    infer_in(env, lets, e)
}

fn infer_in(
    env: &ShapeEnv,
    lets: &mut Vec<(String, Shape)>,
    e: &Expr,
) -> Result<Shape, Diagnostic> {
    infer_obl(env, lets, e, &mut Vec::new())
}

fn infer_obl(
    env: &ShapeEnv,
    lets: &mut Vec<(String, Shape)>,
    e: &Expr,
    obl: &mut Vec<ShapeObligation>,
) -> Result<Shape, Diagnostic> {
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::Coord(_) => Ok(vec![]),
        ExprKind::Input(name) | ExprKind::DefRef(name) => {
            env.globals.get(name).cloned().ok_or_else(|| {
                Diagnostic::error("E0411", format!("no shape known for `{name}`"))
                    .at(e.span, "here")
            })
        }
        ExprKind::Var(name) => lets
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, s)| s.clone())
            .ok_or_else(|| {
                Diagnostic::error("E0411", format!("no shape known for `{name}`"))
                    .at(e.span, "here")
            }),
        ExprKind::Meta(m) => Err(Diagnostic::error(
            "E0308",
            format!("metavariable `?{m}` outside a rule"),
        )
        .at(e.span, "here")),
        ExprKind::Gen { var, lo, hi, body } => {
            if lo.has_load() || hi.has_load() {
                return Err(Diagnostic::error(
                    "E0417",
                    format!("the range of `gen {var}` reads an index array"),
                )
                .at(e.span, format!("`{lo}..{hi}` depends on an index array's values"))
                .with_help("a `gen` range is built from sizes and binders; iterate over stored positions with `sum p in pos[i]..pos[i + 1]: …`"));
            }
            let extent = normalize(&IndexExpr::sub(hi.clone(), lo.clone()));
            let bad = non_size_vars(env, &extent);
            if !bad.is_empty() {
                return Err(Diagnostic::error(
                    "E0401",
                    format!("jagged tensor: the extent of `gen {var}` depends on `{}`", bad[0]),
                )
                .at(e.span, format!("extent `{extent}` is not fixed by the sizes"))
                .with_help("every row of a tensor must have the same length; make the range length a function of the sizes"));
            }
            if let Some(c) = extent.as_const()
                && c < 0
            {
                return Err(Diagnostic::error(
                    "E0402",
                    format!("the range of `gen {var}` has negative length {c}"),
                )
                .at(e.span, format!("`{lo}..{hi}` is backwards"))
                .with_help("write the range as `lo..hi` with `lo <= hi`"));
            }
            if extent.as_const().is_none() {
                obl.push(ShapeObligation {
                    pred: Pred::cmp(CmpOp::Ge, extent.clone(), IndexExpr::Const(0)),
                    span: e.span,
                    what: format!("the length `{extent}` of the range of `gen {var}`"),
                });
            }
            let mut shape = vec![extent];
            shape.extend(infer_obl(env, lets, body, obl)?);
            Ok(shape)
        }
        ExprKind::Sum { body, .. } => infer_obl(env, lets, body, obl),
        ExprKind::MaxRed { var, body, .. } => {
            // Scalar bodies only: a tensor-valued max would be elementwise, which
            // lowering and the validator would need a tile of accumulators for.
            let shape = infer_obl(env, lets, body, obl)?;
            if !shape.is_empty() {
                return Err(Diagnostic::error(
                    "E0416",
                    format!(
                        "`max {var}` takes the largest of scalars, and its body has shape {}",
                        show_shape(&shape)
                    ),
                )
                .at(body.span, "a tensor")
                .with_help(format!(
                    "write the `gen` outside, as in `gen i < n: max {var} < m: x[i, {var}]`"
                )));
            }
            Ok(vec![])
        }
        ExprKind::Guard { body, .. } => infer_obl(env, lets, body, obl),
        ExprKind::Let { var, value, body } => {
            let vs = infer_obl(env, lets, value, obl)?;
            lets.push((var.clone(), vs));
            let out = infer_obl(env, lets, body, obl);
            lets.pop();
            out
        }
        ExprKind::Access { tensor, .. } => {
            let ts = infer_obl(env, lets, tensor, obl)?;
            if ts.is_empty() {
                return Err(
                    Diagnostic::error("E0403", "too many indices: this is a scalar")
                        .at(e.span, "indexed here")
                        .with_secondary(tensor.span, "this has shape []")
                        .with_help("remove an index; a tensor of rank r takes at most r indices"),
                );
            }
            Ok(ts[1..].to_vec())
        }
        ExprKind::Neg(a) => infer_obl(env, lets, a, obl),
        ExprKind::Call { func, args } => {
            for a in args {
                let shape = infer_obl(env, lets, a, obl)?;
                if !shape.is_empty() {
                    return Err(Diagnostic::error(
                        "E0415",
                        format!(
                            "`{}` applies to scalars, and this argument has shape {}",
                            func.name(),
                            show_shape(&shape)
                        ),
                    )
                    .at(a.span, "a tensor")
                    .with_help(format!(
                        "write the `gen`, as in `gen i < n: {}(x[i])`",
                        func.name()
                    )));
                }
            }
            Ok(vec![])
        }
        ExprKind::Binary { op, lhs, rhs } => {
            let ls = infer_obl(env, lets, lhs, obl)?;
            let rs = infer_obl(env, lets, rhs, obl)?;
            match op {
                BinOp::Add | BinOp::Sub => {
                    if !shapes_equal(&ls, &rs) {
                        return Err(Diagnostic::error(
                            "E0404",
                            format!(
                                "shape mismatch in `{}`: {} vs {}",
                                op.symbol(),
                                show_shape(&ls),
                                show_shape(&rs)
                            ),
                        )
                        .at(rhs.span, format!("this has shape {}", show_shape(&rs)))
                        .with_secondary(lhs.span, format!("this has shape {}", show_shape(&ls)))
                        .with_help("operands of a pointwise `+` or `-` must have equal shapes"));
                    }
                    Ok(ls)
                }
                BinOp::Mul | BinOp::Div => {
                    for (side, s, sp) in [("left", &ls, lhs.span), ("right", &rs, rhs.span)] {
                        if !s.is_empty() {
                            return Err(Diagnostic::error(
                                "E0405",
                                format!("`{}` works on scalars, but its {side} operand has shape {}", op.symbol(), show_shape(s)),
                            )
                            .at(sp, format!("shape {}", show_shape(s)))
                            .with_help("index the operand down to a scalar, or write the pointwise product as a `gen`"));
                        }
                    }
                    Ok(vec![])
                }
            }
        }
        ExprKind::Concat(a, b) => {
            let sa = infer_obl(env, lets, a, obl)?;
            let sb = infer_obl(env, lets, b, obl)?;
            for (s, x) in [(&sa, a), (&sb, b)] {
                if s.is_empty() {
                    return Err(
                        Diagnostic::error("E0406", "`concat` needs tensors, not scalars")
                            .at(x.span, "this is a scalar"),
                    );
                }
            }
            if !shapes_equal(&sa[1..], &sb[1..]) {
                return Err(Diagnostic::error(
                    "E0406",
                    format!(
                        "`concat` needs equal element shapes: {} vs {}",
                        show_shape(&sa[1..]),
                        show_shape(&sb[1..])
                    ),
                )
                .at(e.span, "elements differ")
                .with_secondary(a.span, format!("shape {}", show_shape(&sa)))
                .with_secondary(b.span, format!("shape {}", show_shape(&sb))));
            }
            Ok(symbolic_shape(ReshapeOp::Concat, &[&sa, &sb], None))
        }
        ExprKind::Transpose(a) | ExprKind::Flatten(a) => {
            let s = infer_obl(env, lets, a, obl)?;
            let name = if matches!(e.kind, ExprKind::Transpose(_)) {
                "transpose"
            } else {
                "flatten"
            };
            if s.len() < 2 {
                return Err(Diagnostic::error(
                    "E0407",
                    format!(
                        "`{name}` needs a tensor of rank at least 2, got shape {}",
                        show_shape(&s)
                    ),
                )
                .at(a.span, format!("shape {}", show_shape(&s))));
            }
            let op = if matches!(e.kind, ExprKind::Transpose(_)) {
                ReshapeOp::Transpose
            } else {
                ReshapeOp::Flatten
            };
            Ok(symbolic_shape(op, &[&s], None))
        }
        ExprKind::Amount { op, amount, arg } => {
            let s = infer_obl(env, lets, arg, obl)?;
            if s.is_empty() {
                return Err(Diagnostic::error(
                    "E0407",
                    format!("`{}` needs a tensor, not a scalar", op.name()),
                )
                .at(arg.span, "this is a scalar"));
            }
            let k = check_amount(env, *op, amount, e.span)?;
            let n = s[0].clone();
            amount_obligations(*op, &k, &n, e.span, obl);
            reshape::result_shape(&Symbolic, ReshapeOp::Amount(*op), &[&s], Some(&k)).ok_or_else(
                || {
                    // Only a truncation's difference can be a negative constant.
                    Diagnostic::error(
                        "E0410",
                        format!("`{}` drops {k} elements from a dimension of {n}", op.name()),
                    )
                    .at(e.span, "more than there are")
                },
            )
        }
    }
}

/// The shape of a reshape operator whose symbolic rule cannot fail (everything but a
/// truncation).
fn symbolic_shape(op: ReshapeOp, operands: &[&[IndexExpr]], amount: Option<&IndexExpr>) -> Shape {
    reshape::result_shape(&Symbolic, op, operands, amount)
        .expect("symbolic sums, products and quotients always exist")
}

/// Infers the shapes of every definition; returns the environment with their shapes
/// and the diagnostics (one per failing definition: the first problem found in it).
pub fn check_program(program: &Program) -> (ShapeEnv, Vec<Diagnostic>) {
    let mut env = ShapeEnv::of_program(program);
    let mut diags = Vec::new();
    for input in &program.inputs {
        for d in &input.shape {
            if let Some(c) = normalize(d).as_const()
                && c < 0
            {
                diags.push(
                    Diagnostic::error(
                        "E0412",
                        format!("input `{}` has a negative extent {c}", input.name),
                    )
                    .at(input.span, "invalid shape"),
                );
            }
        }
    }
    let mut broken: Vec<&str> = Vec::new();
    for def in &program.defs {
        // A definition that uses a failed one is not reported again.
        let mut uses_broken = false;
        def.body.walk(&mut |n| {
            if let ExprKind::DefRef(r) = &n.kind {
                uses_broken |= broken.contains(&r.as_str());
            }
        });
        if uses_broken {
            broken.push(&def.name);
            continue;
        }
        match infer(&env, &def.body) {
            Ok(shape) => {
                env.globals.insert(def.name.clone(), shape);
            }
            Err(d) => {
                broken.push(&def.name);
                diags.push(d);
            }
        }
    }
    (env, diags)
}

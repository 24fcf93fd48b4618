//! The interpreter's compilation: IR to a tree of `Node`s with concrete shapes,
//! sizes folded to constants and binders as slots (step 2 of `super`'s overview).

use super::*;

// ---------------------------------------------------------------------------------------
// Compiled form
// ---------------------------------------------------------------------------------------

/// An index expression with sizes folded to constants and binders as slots.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum CIdx {
    Const(i64),
    /// Position in the environment of `gen`/`sum` binder values (outermost first).
    Slot(usize),
    /// `c + Σ coeff * slot`: the linear parts of index expressions (nearly all of them)
    /// are collected at compile time, because walking boxed trees dominated the run
    /// time of stencils. Like the unbounded integers of DESIGN §3.2, the linear form
    /// has no intermediate results that could overflow where the final value does not.
    Affine(i64, Box<[(usize, i64)]>),
    Neg(Box<CIdx>),
    Bin(IndexOp, Box<CIdx>, Box<CIdx>),
    /// An element of the index array that is input `pos` (0 out of range, as in the
    /// semantics; the values were checked to be integers on entry).
    Load(usize, Box<CIdx>),
}

/// A linear form under construction: constant and (slot, coefficient) terms, sorted by
/// slot, without zero coefficients.
pub(super) type Linear = (i64, Vec<(usize, i64)>);

impl CIdx {
    /// `None` on overflow (the slot always exists by construction). `arrays` holds the
    /// inputs' values by position; with none (shape computation at compile time, where
    /// no value may matter) a load stands for 0.
    #[inline]
    pub(super) fn eval(&self, env: &[i64], arrays: &[&[f64]]) -> Option<i64> {
        match self {
            CIdx::Const(c) => Some(*c),
            CIdx::Slot(s) => env.get(*s).copied(),
            CIdx::Affine(c, terms) => terms.iter().try_fold(*c, |acc, &(s, k)| {
                acc.checked_add(env.get(s)?.checked_mul(k)?)
            }),
            CIdx::Neg(a) => a.eval(env, arrays)?.checked_neg(),
            CIdx::Bin(op, a, b) => apply_index_op(*op, a.eval(env, arrays)?, b.eval(env, arrays)?),
            CIdx::Load(pos, a) => {
                let at = a.eval(env, arrays)?;
                let values = arrays.get(*pos).copied().unwrap_or(&[]);
                // Integral and within `int32_t` (checked on entry), so exact.
                Some(
                    usize::try_from(at)
                        .ok()
                        .and_then(|k| values.get(k))
                        .map_or(0, |v| *v as i64),
                )
            }
        }
    }

    pub(super) fn is_const(&self) -> bool {
        matches!(self, CIdx::Const(_))
    }

    /// The linear form, if the expression is linear in the binders (and folding the
    /// coefficients does not overflow).
    pub(super) fn linear(&self) -> Option<Linear> {
        match self {
            CIdx::Const(c) => Some((*c, Vec::new())),
            CIdx::Slot(s) => Some((0, vec![(*s, 1)])),
            CIdx::Affine(c, terms) => Some((*c, terms.to_vec())),
            CIdx::Neg(a) => scale_linear(a.linear()?, -1),
            CIdx::Bin(IndexOp::Add, a, b) => add_linear(a.linear()?, b.linear()?),
            CIdx::Bin(IndexOp::Sub, a, b) => {
                add_linear(a.linear()?, scale_linear(b.linear()?, -1)?)
            }
            CIdx::Bin(IndexOp::Mul, a, b) => match (a.linear()?, b.linear()?) {
                ((k, t), other) | (other, (k, t)) if t.is_empty() => scale_linear(other, k),
                _ => None,
            },
            CIdx::Bin(..) | CIdx::Load(..) => None,
        }
    }

    /// The cheapest equivalent form: linear expressions become `Const`, `Slot` or
    /// `Affine`; anything else is kept as it is.
    pub(super) fn simplify(self) -> CIdx {
        let Some((c, terms)) = self.linear() else {
            return self;
        };
        match terms.as_slice() {
            [] => CIdx::Const(c),
            [(s, 1)] if c == 0 => CIdx::Slot(*s),
            _ => CIdx::Affine(c, terms.into_boxed_slice()),
        }
    }
}

pub(super) fn scale_linear((c, terms): Linear, k: i64) -> Option<Linear> {
    let c = c.checked_mul(k)?;
    let mut out = Vec::with_capacity(terms.len());
    for (s, x) in terms {
        let x = x.checked_mul(k)?;
        if x != 0 {
            out.push((s, x));
        }
    }
    Some((c, out))
}

pub(super) fn add_linear((c1, t1): Linear, (c2, t2): Linear) -> Option<Linear> {
    let mut terms: BTreeMap<usize, i64> = t1.into_iter().collect();
    for (s, x) in t2 {
        let e = terms.entry(s).or_insert(0);
        *e = e.checked_add(x)?;
    }
    let terms = terms.into_iter().filter(|&(_, x)| x != 0).collect();
    Some((c1.checked_add(c2)?, terms))
}

#[derive(Clone, Debug)]
pub(super) enum CPred {
    Bool(bool),
    Cmp(CmpOp, CIdx, CIdx),
    And(Box<CPred>, Box<CPred>),
    Or(Box<CPred>, Box<CPred>),
    Not(Box<CPred>),
}

impl CPred {
    /// Short-circuits like `Pred::eval`. `None` on overflow.
    pub(super) fn eval(&self, env: &[i64], arrays: &[&[f64]]) -> Option<bool> {
        match self {
            CPred::Bool(b) => Some(*b),
            CPred::Cmp(op, a, b) => Some(op.holds(a.eval(env, arrays)?, b.eval(env, arrays)?)),
            CPred::And(a, b) => Some(a.eval(env, arrays)? && b.eval(env, arrays)?),
            CPred::Or(a, b) => Some(a.eval(env, arrays)? || b.eval(env, arrays)?),
            CPred::Not(a) => Some(!a.eval(env, arrays)?),
        }
    }
}

/// Where a stored tensor lives at run time.
#[derive(Clone, Copy, Debug)]
pub(super) enum Src {
    /// Position in `Program::inputs`.
    Input(usize),
    /// Position in `Program::defs`.
    Def(usize),
    /// Position in the environment of `let` values (outermost first).
    Let(usize),
}

#[derive(Debug)]
pub(super) struct Node {
    pub(super) kind: Kind,
    pub(super) shape: Vec<usize>,
    /// `suffix[d]` = number of elements of `shape[d..]`; `suffix[rank] = 1`.
    pub(super) suffix: Vec<usize>,
    /// Whether this node or one below has a run-time shape check (a `gen` bound or a
    /// reshape amount that mentions a binder). Such nodes are evaluated even when their
    /// output is empty, so that `gen i < 3: gen j < i: …` (jagged, but with an empty
    /// representative row) is reported instead of evaluating to an empty tensor.
    pub(super) checks: bool,
    /// The static shape of the node's expression (shape inference, `shapes.rs`, one
    /// node at a time), `None` where it has none (an ill-shaped program, which the
    /// run-time checks report instead).
    pub(super) stat: Option<Shape>,
    pub(super) span: Span,
}

impl Node {
    pub(super) fn numel(&self) -> usize {
        self.suffix.first().copied().unwrap_or(0)
    }

    /// Extent of dimension `d` (0 for a dimension that does not exist, which the
    /// compiler rules out).
    pub(super) fn dim(&self, d: usize) -> usize {
        self.shape.get(d).copied().unwrap_or(0)
    }

    /// Elements of the sub-tensor below dimension `d`.
    pub(super) fn stride(&self, d: usize) -> usize {
        self.suffix.get(d).copied().unwrap_or(0)
    }
}

#[derive(Debug)]
pub(super) enum Kind {
    Lit(f64),
    Load(Src),
    /// The extent is `shape[0]`.
    Gen {
        lo: CIdx,
        hi: CIdx,
        body: Box<Node>,
        /// For a one-hot generator ([`crate::scatter`]), the one binder value where
        /// the body may be non-zero (compiled outside the binder): the generator is
        /// evaluated there only, and a sum of such generators adds each in place.
        one_hot: Option<CIdx>,
    },
    Sum {
        lo: CIdx,
        hi: CIdx,
        body: Box<Node>,
    },
    /// A max-reduction of a scalar body.
    MaxRed {
        lo: CIdx,
        hi: CIdx,
        body: Box<Node>,
    },
    Guard {
        pred: CPred,
        body: Box<Node>,
    },
    Let {
        value: Box<Node>,
        body: Box<Node>,
        /// For a value that mentions no enclosing binder or `let` variable: its value,
        /// computed the first time the `let` is evaluated (values are pure, so this only
        /// saves recomputing it in every iteration of an enclosing `gen`/`sum`).
        cache: Option<OnceLock<Arc<Vec<f64>>>>,
    },
    Access {
        tensor: Box<Node>,
        index: CIdx,
    },
    Neg(Box<Node>),
    /// A scalar function of scalar arguments.
    Call {
        func: crate::functions::ScalarFn,
        args: Vec<Node>,
    },
    Binary {
        op: BinOp,
        lhs: Box<Node>,
        rhs: Box<Node>,
    },
    Concat(Box<Node>, Box<Node>),
    Transpose(Box<Node>),
    Flatten(Box<Node>),
    /// An index expression's value as a scalar (`float(i + 1)`).
    Coord(CIdx),
    Amount {
        op: AmountOp,
        amount: CIdx,
        /// The amount at compile time (validated); a run-time value that differs means
        /// the amount depends on a binder, which makes the tensor jagged.
        k: usize,
        arg: Box<Node>,
    },
}

/// Turns IR into `Node`s, computing concrete shapes.
pub(super) struct Compiler<'a> {
    pub(super) program: &'a Program,
    pub(super) sizes: &'a HashMap<String, i64>,
    pub(super) limit: usize,
    /// `gen`/`sum` binders in scope, outermost first, with their representative value
    /// (the lower bound) used to compute shapes.
    pub(super) idx_names: Vec<&'a str>,
    pub(super) idx_rep: Vec<i64>,
    /// `let` variables in scope, outermost first, with the shape of their value.
    pub(super) lets: Vec<(&'a str, Vec<usize>)>,
    /// The static shapes of the `let` values in scope, parallel to `lets`.
    pub(super) lets_static: Vec<Option<Shape>>,
    /// Shape inference's environment (sizes, input shapes) for the static shapes.
    pub(super) shape_env: ShapeEnv,
    /// References may only name definitions at positions below this (earlier ones),
    /// which also rules out cycles.
    pub(super) def_limit: usize,
    /// Compiled definitions reachable from the compiled expression, by position.
    pub(super) defs: Vec<Option<Node>>,
    /// Definitions whose compilation failed, by position (reported when reached).
    pub(super) def_errors: Vec<Option<Diagnostic>>,
    /// Declared shapes of referenced inputs, by position.
    pub(super) inputs: Vec<Option<Vec<usize>>>,
    /// The index arrays read by the compiled index expressions, by position (marked
    /// from `index`, which only borrows the compiler).
    pub(super) arrays_read: std::cell::RefCell<Vec<bool>>,
}

impl<'a> Compiler<'a> {
    pub(super) fn new(
        program: &'a Program,
        sizes: &'a HashMap<String, i64>,
        limit: usize,
        def_limit: usize,
    ) -> Compiler<'a> {
        Compiler {
            program,
            sizes,
            limit,
            idx_names: Vec::new(),
            idx_rep: Vec::new(),
            lets: Vec::new(),
            lets_static: Vec::new(),
            shape_env: ShapeEnv::of_program(program),
            def_limit,
            defs: (0..program.defs.len()).map(|_| None).collect(),
            def_errors: vec![None; program.defs.len()],
            inputs: vec![None; program.inputs.len()],
            arrays_read: std::cell::RefCell::new(vec![false; program.inputs.len()]),
        }
    }

    pub(super) fn node(
        &self,
        kind: Kind,
        shape: Vec<usize>,
        span: Span,
    ) -> Result<Node, Diagnostic> {
        let mut suffix = vec![1usize; shape.len() + 1];
        for d in (0..shape.len()).rev() {
            suffix[d] = shape[d]
                .checked_mul(suffix[d + 1])
                .filter(|&n| n <= self.limit)
                .ok_or_else(|| too_big(span, &shape, self.limit))?;
        }
        let checks = match &kind {
            Kind::Lit(_) | Kind::Load(_) => false,
            Kind::Coord(index) => !index.is_const(),
            Kind::Gen { lo, hi, body, .. } => !lo.is_const() || !hi.is_const() || body.checks,
            Kind::Amount { amount, arg, .. } => !amount.is_const() || arg.checks,
            Kind::Sum { body, .. } | Kind::MaxRed { body, .. } | Kind::Guard { body, .. } => {
                body.checks
            }
            Kind::Access { tensor: a, .. }
            | Kind::Neg(a)
            | Kind::Transpose(a)
            | Kind::Flatten(a) => a.checks,
            Kind::Let {
                value: a, body: b, ..
            }
            | Kind::Binary { lhs: a, rhs: b, .. }
            | Kind::Concat(a, b) => a.checks || b.checks,
            Kind::Call { args, .. } => args.iter().any(|a| a.checks),
        };
        Ok(Node {
            kind,
            shape,
            suffix,
            checks,
            stat: None,
            span,
        })
    }

    pub(super) fn index(&self, e: &IndexExpr, span: Span) -> Result<CIdx, Diagnostic> {
        Ok(match e {
            IndexExpr::Const(c) => CIdx::Const(*c),
            IndexExpr::Var(name) => {
                if let Some(slot) = self.idx_names.iter().rposition(|n| n == name) {
                    CIdx::Slot(slot)
                } else if let Some(v) = self.sizes.get(name) {
                    CIdx::Const(*v)
                } else {
                    return Err(unbound(
                        span,
                        format!("index variable `{name}` is neither a size nor a binder in scope"),
                    ));
                }
            }
            IndexExpr::Meta(name) => {
                return Err(unbound(
                    span,
                    format!("metavariable `?{name}` cannot be evaluated"),
                ));
            }
            IndexExpr::Load(array, a) => {
                let Some(pos) = self
                    .program
                    .inputs
                    .iter()
                    .position(|i| &i.name == array && i.index_array.is_some())
                else {
                    return Err(unbound(
                        span,
                        format!("there is no index array named `{array}`"),
                    ));
                };
                self.arrays_read.borrow_mut()[pos] = true;
                CIdx::Load(pos, Box::new(self.index(a, span)?))
            }
            // An overflowing fold stays unfolded (`linear` gives up on it), so it is
            // reported only if it is ever evaluated.
            IndexExpr::Neg(a) => CIdx::Neg(Box::new(self.index(a, span)?)).simplify(),
            IndexExpr::Bin(op, a, b) => {
                let a = self.index(a, span)?;
                let b = self.index(b, span)?;
                match (&a, &b) {
                    (CIdx::Const(x), CIdx::Const(y)) => match apply_index_op(*op, *x, *y) {
                        Some(v) => CIdx::Const(v),
                        None => CIdx::Bin(*op, Box::new(a), Box::new(b)),
                    },
                    _ => CIdx::Bin(*op, Box::new(a), Box::new(b)).simplify(),
                }
            }
        })
    }

    pub(super) fn pred(&self, p: &Pred, span: Span) -> Result<CPred, Diagnostic> {
        Ok(match p {
            Pred::Bool(b) => CPred::Bool(*b),
            Pred::Cmp(op, a, b) => match (self.index(a, span)?, self.index(b, span)?) {
                (CIdx::Const(x), CIdx::Const(y)) => CPred::Bool(op.holds(x, y)),
                (a, b) => CPred::Cmp(*op, a, b),
            },
            // Folding only on the left keeps the evaluation order (and so which overflow
            // is reported) the same as `Pred::eval`.
            Pred::And(a, b) => match self.pred(a, span)? {
                CPred::Bool(false) => CPred::Bool(false),
                CPred::Bool(true) => self.pred(b, span)?,
                a => CPred::And(Box::new(a), Box::new(self.pred(b, span)?)),
            },
            Pred::Or(a, b) => match self.pred(a, span)? {
                CPred::Bool(true) => CPred::Bool(true),
                CPred::Bool(false) => self.pred(b, span)?,
                a => CPred::Or(Box::new(a), Box::new(self.pred(b, span)?)),
            },
            Pred::Not(a) => match self.pred(a, span)? {
                CPred::Bool(b) => CPred::Bool(!b),
                a => CPred::Not(Box::new(a)),
            },
        })
    }

    /// Value of an index at the representative binder values (for shapes).
    pub(super) fn rep(&self, c: &CIdx, span: Span) -> Result<i64, Diagnostic> {
        c.eval(&self.idx_rep, &[]).ok_or_else(|| overflow(span))
    }

    /// Compiles both bounds of a `gen`/`sum` and returns them with the representative
    /// lower bound and extent.
    pub(super) fn range(
        &self,
        lo: &IndexExpr,
        hi: &IndexExpr,
        span: Span,
    ) -> Result<(CIdx, CIdx, i64, usize), Diagnostic> {
        let lo = self.index(lo, span)?;
        let hi = self.index(hi, span)?;
        let lo_r = self.rep(&lo, span)?;
        let hi_r = self.rep(&hi, span)?;
        let extent = if hi_r > lo_r {
            hi_r.checked_sub(lo_r).ok_or_else(|| overflow(span))?
        } else {
            0
        };
        let extent = usize::try_from(extent).map_err(|_| too_big(span, &[], self.limit))?;
        Ok((lo, hi, lo_r, extent))
    }

    pub(super) fn input_shape(&self, pos: usize) -> Result<Vec<usize>, Diagnostic> {
        let decl = &self.program.inputs[pos];
        let mut shape = Vec::with_capacity(decl.shape.len());
        for dim in &decl.shape {
            let v = dim
                .eval(&|name| self.sizes.get(name).copied())
                .map_err(|e| match e {
                    IndexEvalError::Overflow => overflow(decl.span),
                    e => unbound(
                        decl.span,
                        format!("cannot compute the shape of input `{}`: {e}", decl.name),
                    ),
                })?;
            let v = usize::try_from(v).map_err(|_| {
                at(
                    Diagnostic::error(
                        "E0605",
                        format!(
                            "input `{}` is declared with shape {}, which has the negative extent {v} at these sizes",
                            decl.name,
                            fmt_index_shape(&decl.shape)
                        ),
                    ),
                    decl.span,
                    "declared here",
                )
                .with_help("choose sizes for which every input extent is non-negative")
            })?;
            shape.push(v);
        }
        if shape.iter().any(|&n| n > self.limit)
            || shape_numel(&shape).is_none_or(|n| n > self.limit)
        {
            return Err(too_big(decl.span, &shape, self.limit));
        }
        Ok(shape)
    }

    /// Compiles `e` and checks its concrete shape against its static shape at these
    /// sizes (E0507, E0508). Every node is checked, also those that are never
    /// evaluated (the bodies of empty `gen`s and `sum`s, of false guards, values only
    /// read out of bounds), because their shapes are observed all the same.
    pub(super) fn compile(&mut self, e: &'a Expr) -> Result<Node, Diagnostic> {
        let mut node = self.compile_node(e)?;
        let stat = self.static_shape(e, &node);
        if let Some(stat) = &stat {
            self.check_static(e, stat, &node.shape)?;
        }
        node.stat = stat;
        Ok(node)
    }

    /// The static shape of `e`, from shape inference (`shapes::infer_with_lets`) applied
    /// to `e` alone, with its children replaced by variables that have the children's
    /// static shapes: the same rules as for the whole program, at one node's cost.
    pub(super) fn static_shape(&self, e: &Expr, node: &Node) -> Option<Shape> {
        let children: Vec<&Node> = match &node.kind {
            Kind::Lit(_) | Kind::Coord(_) => return Some(Vec::new()),
            Kind::Load(Src::Input(pos)) => {
                return self
                    .shape_env
                    .globals
                    .get(&self.program.inputs.get(*pos)?.name)
                    .cloned();
            }
            Kind::Load(Src::Def(pos)) => {
                return self.defs.get(*pos)?.as_ref()?.stat.clone();
            }
            Kind::Load(Src::Let(slot)) => return self.lets_static.get(*slot)?.clone(),
            Kind::Gen { body, .. }
            | Kind::Sum { body, .. }
            | Kind::MaxRed { body, .. }
            | Kind::Guard { body, .. } => {
                vec![body]
            }
            Kind::Let { value, body, .. } => vec![value, body],
            Kind::Access { tensor: a, .. }
            | Kind::Neg(a)
            | Kind::Transpose(a)
            | Kind::Flatten(a)
            | Kind::Amount { arg: a, .. } => vec![a],
            Kind::Binary { lhs: a, rhs: b, .. } | Kind::Concat(a, b) => vec![a, b],
            Kind::Call { args, .. } => args.iter().collect(),
        };
        // Placeholder names cannot clash with program names (they contain a control
        // character).
        let names: Vec<String> = (0..children.len()).map(|k| format!("\u{1}{k}")).collect();
        let mut lets: Vec<(String, Shape)> = Vec::with_capacity(children.len());
        for (name, child) in names.iter().zip(&children) {
            lets.push((name.clone(), child.stat.clone()?));
        }
        let hole = |k: usize| Box::new(Expr::var(names[k].clone()));
        let kind = match &e.kind {
            ExprKind::Gen { var, lo, hi, .. } => ExprKind::Gen {
                var: var.clone(),
                lo: lo.clone(),
                hi: hi.clone(),
                body: hole(0),
            },
            ExprKind::Sum { var, lo, hi, .. } => ExprKind::Sum {
                var: var.clone(),
                lo: lo.clone(),
                hi: hi.clone(),
                body: hole(0),
            },
            ExprKind::MaxRed { var, lo, hi, .. } => ExprKind::MaxRed {
                var: var.clone(),
                lo: lo.clone(),
                hi: hi.clone(),
                body: hole(0),
            },
            ExprKind::Guard { pred, .. } => ExprKind::Guard {
                pred: pred.clone(),
                body: hole(0),
            },
            ExprKind::Let { var, .. } => ExprKind::Let {
                var: var.clone(),
                value: hole(0),
                body: hole(1),
            },
            ExprKind::Access { index, .. } => ExprKind::Access {
                tensor: hole(0),
                index: index.clone(),
            },
            ExprKind::Neg(_) => ExprKind::Neg(hole(0)),
            ExprKind::Transpose(_) => ExprKind::Transpose(hole(0)),
            ExprKind::Flatten(_) => ExprKind::Flatten(hole(0)),
            ExprKind::Amount { op, amount, .. } => ExprKind::Amount {
                op: *op,
                amount: amount.clone(),
                arg: hole(0),
            },
            ExprKind::Binary { op, .. } => ExprKind::Binary {
                op: *op,
                lhs: hole(0),
                rhs: hole(1),
            },
            ExprKind::Concat(..) => ExprKind::Concat(hole(0), hole(1)),
            ExprKind::Call { func, args } => ExprKind::Call {
                func: *func,
                args: (0..args.len()).map(|k| *hole(k)).collect(),
            },
            // Leaves were handled above; a mismatch of node and expression is a bug
            // that the shape comparison cannot judge.
            _ => return None,
        };
        infer_with_lets(&self.shape_env, &mut lets, &Expr::new(kind, e.span)).ok()
    }

    /// `n = 2, m = 3` for the sizes the expressions mention ("all sizes" if none).
    pub(super) fn size_values<'e>(&self, exprs: impl Iterator<Item = &'e IndexExpr>) -> String {
        let mut names = std::collections::BTreeSet::new();
        for e in exprs {
            names.extend(e.vars());
        }
        let parts: Vec<String> = names
            .iter()
            .filter_map(|n| self.sizes.get(n).map(|v| format!("{n} = {v}")))
            .collect();
        if parts.is_empty() {
            "all sizes".to_string()
        } else {
            parts.join(", ")
        }
    }

    /// Compares a node's concrete shape with its static shape evaluated at the sizes:
    /// a negative static extent is E0508 (the interpreter does not clamp it to an
    /// empty range), any other difference E0507.
    pub(super) fn check_static(
        &self,
        e: &Expr,
        stat: &[IndexExpr],
        concrete: &[usize],
    ) -> Result<(), Diagnostic> {
        let sizes = |name: &str| self.sizes.get(name).copied();
        let mut values = Vec::with_capacity(stat.len());
        for extent in stat {
            match extent.eval(&sizes) {
                Ok(v) => values.push(v),
                Err(IndexEvalError::Overflow) => return Err(overflow(e.span)),
                // Static shapes mention only sizes; anything else has no value to
                // compare with.
                Err(_) => return Ok(()),
            }
        }
        let at_sizes = || self.size_values(stat.iter());
        if let Some(d) = values.iter().position(|&v| v < 0) {
            let message = match &e.kind {
                ExprKind::Gen { var, lo, hi, .. } if d == 0 => format!(
                    "the range `{lo}..{hi}` of `gen {var}` has the negative length {} at {}",
                    values[0],
                    at_sizes()
                ),
                _ => format!(
                    "this expression has the static shape {}, with the negative extent {} at {}",
                    show_shape(stat),
                    values[d],
                    at_sizes()
                ),
            };
            return Err(at(
                Diagnostic::error("E0508", message),
                e.span,
                "negative extent",
            )
            .with_note("an extent is never clamped to 0: the shape of a value is observed even where the value is not (an empty `gen`, a false guard)")
            .with_help("choose sizes where every extent is non-negative, or add an `assume` that rules these sizes out"));
        }
        let same = values.len() == concrete.len()
            && values
                .iter()
                .zip(concrete)
                .all(|(&v, &c)| u64::try_from(v).ok() == u64::try_from(c).ok());
        if !same {
            return Err(at(
                Diagnostic::error(
                    "E0507",
                    format!(
                        "the interpreter computed the shape {} where the static shape {} is {} at {}",
                        fmt_shape(concrete),
                        show_shape(stat),
                        fmt_shape(&values.iter().map(|&v| v as usize).collect::<Vec<_>>()),
                        at_sizes()
                    ),
                ),
                e.span,
                "in this expression",
            )
            .with_note("the interpreter and shape inference disagree; this is a bug in one of them")
            .with_help("report it with this program and these sizes"));
        }
        Ok(())
    }

    pub(super) fn compile_node(&mut self, e: &'a Expr) -> Result<Node, Diagnostic> {
        let span = e.span;
        match &e.kind {
            ExprKind::Lit(v) => self.node(Kind::Lit(*v), Vec::new(), span),
            ExprKind::Coord(index) => {
                let index = self.index(index, span)?;
                self.node(Kind::Coord(index), Vec::new(), span)
            }
            ExprKind::Input(name) => {
                let Some(pos) = self.program.inputs.iter().position(|i| &i.name == name) else {
                    return Err(unbound(span, format!("there is no input named `{name}`")));
                };
                let shape = match &self.inputs[pos] {
                    Some(shape) => shape.clone(),
                    None => {
                        let shape = self.input_shape(pos)?;
                        self.inputs[pos] = Some(shape.clone());
                        shape
                    }
                };
                self.node(Kind::Load(Src::Input(pos)), shape, span)
            }
            ExprKind::DefRef(name) => {
                let earlier = &self.program.defs[..self.def_limit.min(self.program.defs.len())];
                let Some(pos) = earlier.iter().rposition(|d| &d.name == name) else {
                    let message = if self.program.def(name).is_some() {
                        format!("definition `{name}` is used before it is defined")
                    } else {
                        format!("there is no definition named `{name}`")
                    };
                    return Err(unbound(span, message));
                };
                if self.defs[pos].is_none() {
                    if let Some(d) = &self.def_errors[pos] {
                        return Err(d.clone());
                    }
                    self.compile_def(pos)?;
                }
                let shape = match &self.defs[pos] {
                    Some(def) => def.shape.clone(),
                    None => return Err(internal(span, "definition not compiled")),
                };
                self.node(Kind::Load(Src::Def(pos)), shape, span)
            }
            ExprKind::Var(name) => {
                let Some(slot) = self.lets.iter().rposition(|(n, _)| n == name) else {
                    return Err(unbound(
                        span,
                        format!("variable `{name}` is not bound by an enclosing `let`"),
                    ));
                };
                let shape = self.lets[slot].1.clone();
                self.node(Kind::Load(Src::Let(slot)), shape, span)
            }
            ExprKind::Meta(name) => Err(unbound(
                span,
                format!("metavariable `?{name}` cannot be evaluated"),
            )),
            ExprKind::Gen { var, lo, hi, body }
            | ExprKind::Sum { var, lo, hi, body }
            | ExprKind::MaxRed { var, lo, hi, body } => {
                let (lo, hi, lo_r, extent) = self.range(lo, hi, span)?;
                // A backwards `gen` range is a negative extent, never an empty one (a
                // backwards `sum` range is an empty sum: no extent is involved). This
                // also covers ranges without a static shape (constant ones like `4..2`
                // are refused by shape inference, E0402).
                if let ExprKind::Gen {
                    var, lo: l, hi: h, ..
                } = &e.kind
                    && extent == 0
                    && self.rep(&hi, span)? < lo_r
                {
                    let length = i128::from(self.rep(&hi, span)?) - i128::from(lo_r);
                    return Err(at(
                        Diagnostic::error(
                            "E0508",
                            format!(
                                "the range `{l}..{h}` of `gen {var}` has the negative length {length} at {}",
                                self.size_values([l, h].into_iter())
                            ),
                        ),
                        span,
                        "negative extent",
                    )
                    .with_note("an extent is never clamped to 0: the shape of a value is observed even where the value is not (an empty `gen`, a false guard)")
                    .with_help("choose sizes where every extent is non-negative, or add an `assume` that rules these sizes out"));
                }
                let one_hot = match &e.kind {
                    ExprKind::Gen { var, body, .. } => crate::scatter::one_hot(var, body)
                        .map(|hot| self.index(&hot.target, span))
                        .transpose()?,
                    _ => None,
                };
                // Shapes are computed with the binder at its lower bound, also when the
                // range is empty: that is where an empty gen/sum gets its element shape.
                self.idx_names.push(var);
                self.idx_rep.push(lo_r);
                let body = self.compile(body);
                self.idx_names.pop();
                self.idx_rep.pop();
                let body = Box::new(body?);
                match e.kind {
                    ExprKind::Gen { .. } => {
                        let mut shape = vec![extent];
                        shape.extend_from_slice(&body.shape);
                        self.node(
                            Kind::Gen {
                                lo,
                                hi,
                                body,
                                one_hot,
                            },
                            shape,
                            span,
                        )
                    }
                    ExprKind::Sum { .. } => {
                        let shape = body.shape.clone();
                        self.node(Kind::Sum { lo, hi, body }, shape, span)
                    }
                    _ => {
                        // Shape inference refuses a tensor body (E0416).
                        let shape = body.shape.clone();
                        self.node(Kind::MaxRed { lo, hi, body }, shape, span)
                    }
                }
            }
            ExprKind::Guard { pred, body } => {
                let pred = self.pred(pred, span)?;
                let body = Box::new(self.compile(body)?);
                let shape = body.shape.clone();
                self.node(Kind::Guard { pred, body }, shape, span)
            }
            ExprKind::Let { var, value, body } => {
                let closed = value.free_tensor_vars().is_empty()
                    && value
                        .free_index_vars()
                        .iter()
                        .all(|name| !self.idx_names.contains(&name.as_str()));
                let cache = closed.then(OnceLock::new);
                let value = Box::new(self.compile(value)?);
                self.lets.push((var, value.shape.clone()));
                self.lets_static.push(value.stat.clone());
                let body = self.compile(body);
                self.lets.pop();
                self.lets_static.pop();
                let body = Box::new(body?);
                let shape = body.shape.clone();
                self.node(Kind::Let { value, body, cache }, shape, span)
            }
            ExprKind::Access { tensor, index } => {
                let tensor = Box::new(self.compile(tensor)?);
                if tensor.shape.is_empty() {
                    return Err(mismatch(span, "cannot index a scalar"));
                }
                let index = self.index(index, span)?;
                let shape = tensor.shape[1..].to_vec();
                self.node(Kind::Access { tensor, index }, shape, span)
            }
            ExprKind::Neg(a) => {
                let a = Box::new(self.compile(a)?);
                let shape = a.shape.clone();
                self.node(Kind::Neg(a), shape, span)
            }
            ExprKind::Call { func, args } => {
                let args = args
                    .iter()
                    .map(|a| self.compile(a))
                    .collect::<Result<Vec<Node>, Diagnostic>>()?;
                if args.iter().any(|a| !a.shape.is_empty()) {
                    return Err(mismatch(
                        span,
                        format!("`{}` applies to scalars", func.name()),
                    ));
                }
                self.node(Kind::Call { func: *func, args }, Vec::new(), span)
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let lhs = Box::new(self.compile(lhs)?);
                let rhs = Box::new(self.compile(rhs)?);
                let shape = match op {
                    BinOp::Add | BinOp::Sub => {
                        if lhs.shape != rhs.shape {
                            return Err(mismatch(
                                span,
                                format!(
                                    "the operands of `{}` have shapes {} and {}",
                                    op.symbol(),
                                    fmt_shape(&lhs.shape),
                                    fmt_shape(&rhs.shape)
                                ),
                            ));
                        }
                        lhs.shape.clone()
                    }
                    BinOp::Mul | BinOp::Div => {
                        if !lhs.shape.is_empty() || !rhs.shape.is_empty() {
                            return Err(mismatch(
                                span,
                                format!(
                                    "`{}` applies to scalars, but the operands have shapes {} and {}",
                                    op.symbol(),
                                    fmt_shape(&lhs.shape),
                                    fmt_shape(&rhs.shape)
                                ),
                            ));
                        }
                        Vec::new()
                    }
                };
                self.node(Kind::Binary { op: *op, lhs, rhs }, shape, span)
            }
            ExprKind::Concat(a, b) => {
                let a = Box::new(self.compile(a)?);
                let b = Box::new(self.compile(b)?);
                let (Some((_, ra)), Some((_, rb))) = (a.shape.split_first(), b.shape.split_first())
                else {
                    return Err(mismatch(span, "`concat` needs two tensors, not scalars"));
                };
                if ra != rb {
                    return Err(mismatch(
                        span,
                        format!(
                            "`concat` needs equal element shapes, got {} and {}",
                            fmt_shape(ra),
                            fmt_shape(rb)
                        ),
                    ));
                }
                let shape = reshape::result_shape(
                    &Concrete,
                    ReshapeOp::Concat,
                    &[&a.shape, &b.shape],
                    None,
                )
                .ok_or_else(|| too_big(span, &[], self.limit))?;
                self.node(Kind::Concat(a, b), shape, span)
            }
            ExprKind::Transpose(a) => {
                let a = Box::new(self.compile(a)?);
                if a.shape.len() < 2 {
                    return Err(mismatch(
                        span,
                        format!(
                            "`transpose` needs two dimensions, got shape {}",
                            fmt_shape(&a.shape)
                        ),
                    ));
                }
                let shape =
                    reshape::result_shape(&Concrete, ReshapeOp::Transpose, &[&a.shape], None)
                        .ok_or_else(|| internal(span, "a transposition"))?;
                self.node(Kind::Transpose(a), shape, span)
            }
            ExprKind::Flatten(a) => {
                let a = Box::new(self.compile(a)?);
                let [_, _, ..] = a.shape.as_slice() else {
                    return Err(mismatch(
                        span,
                        format!(
                            "`flatten` needs two dimensions, got shape {}",
                            fmt_shape(&a.shape)
                        ),
                    ));
                };
                let shape = reshape::result_shape(&Concrete, ReshapeOp::Flatten, &[&a.shape], None)
                    .ok_or_else(|| too_big(span, &a.shape, self.limit))?;
                self.node(Kind::Flatten(a), shape, span)
            }
            ExprKind::Amount { op, amount, arg } => self.compile_amount(*op, amount, arg, span),
        }
    }

    /// Compiles definition `pos`. A definition is closed: it is compiled in empty
    /// scopes, allowing only references to definitions before it.
    pub(super) fn compile_def(&mut self, pos: usize) -> Result<(), Diagnostic> {
        let program = self.program;
        let body = &program.defs[pos].body;
        let saved = (
            std::mem::take(&mut self.idx_names),
            std::mem::take(&mut self.idx_rep),
            std::mem::take(&mut self.lets),
            std::mem::take(&mut self.lets_static),
            self.def_limit,
        );
        self.def_limit = pos;
        let compiled = self.compile(body);
        (
            self.idx_names,
            self.idx_rep,
            self.lets,
            self.lets_static,
            self.def_limit,
        ) = saved;
        self.defs[pos] = Some(compiled?);
        Ok(())
    }

    /// Compiles the definitions `root` reaches, in program order, before `root`
    /// itself, keeping their errors for the reference that reaches them first. Each
    /// definition then finds the ones it uses already compiled, so a chain of
    /// definitions does not nest the compiler's recursion: its depth is that of one
    /// body, which the front end bounds.
    pub(super) fn precompile_defs(&mut self, root: &'a Expr) {
        let program = self.program;
        let mut reached = vec![false; program.defs.len()];
        let mut work: Vec<(&'a Expr, usize)> = vec![(root, self.def_limit)];
        while let Some((e, limit)) = work.pop() {
            e.walk(&mut |n| {
                if let ExprKind::DefRef(name) = &n.kind
                    && let Some(pos) = program.defs[..limit.min(program.defs.len())]
                        .iter()
                        .rposition(|d| &d.name == name)
                    && !reached[pos]
                {
                    reached[pos] = true;
                    work.push((&program.defs[pos].body, pos));
                }
            });
        }
        for (pos, reached) in reached.into_iter().enumerate() {
            if reached
                && self.defs[pos].is_none()
                && self.def_errors[pos].is_none()
                && let Err(d) = self.compile_def(pos)
            {
                self.def_errors[pos] = Some(d);
            }
        }
    }

    pub(super) fn compile_amount(
        &mut self,
        op: AmountOp,
        amount: &IndexExpr,
        arg: &'a Expr,
        span: Span,
    ) -> Result<Node, Diagnostic> {
        let arg = Box::new(self.compile(arg)?);
        let Some(&n) = arg.shape.first() else {
            return Err(mismatch(
                span,
                format!("`{}` needs a tensor, not a scalar", op.name()),
            ));
        };
        let amount = self.index(amount, span)?;
        let k = self.rep(&amount, span)?;
        let Ok(k) = usize::try_from(k) else {
            return Err(bad_amount(
                span,
                format!(
                    "the amount of `{}` must not be negative, got {k}",
                    op.name()
                ),
            ));
        };
        if op == AmountOp::Split && k == 0 {
            return Err(bad_amount(
                span,
                "`split` needs a row length of at least 1, got 0",
            ));
        }
        let shape =
            reshape::result_shape(&Concrete, ReshapeOp::Amount(op), &[&arg.shape], Some(&k))
                .ok_or_else(|| match op {
                    AmountOp::TruncL | AmountOp::TruncR => bad_amount(
                        span,
                        format!(
                            "`{}` cannot drop {k} elements from an extent of {n}",
                            op.name()
                        ),
                    ),
                    // Otherwise the extent overflowed (a pad; a `split` by a positive
                    // length always has a shape).
                    _ => too_big(span, &arg.shape, self.limit),
                })?;
        self.node(Kind::Amount { op, amount, k, arg }, shape, span)
    }
}

//! The core IR: resolved ATL programs with unique binder names.
//!
//! The parser produces a surface AST (`ast`), name resolution lowers it to this IR
//! (`resolve`): multi-binder generators are nested, `i < n` ranges become `0..n`,
//! `e[i, j]` becomes `e[i][j]`, and every `gen`/`sum`/`let` binder gets a name that is
//! unique in its definition and distinct from sizes, inputs and definitions (`i`, `i1`,
//! `i2`, …). Later stages (shapes, interpreter, rewrites, lowering) work on this IR.
//!
//! Spans point into the source for diagnostics; they are ignored by equality. Rewrites
//! build nodes with [`Span::DUMMY`].

use std::collections::{BTreeSet, HashSet};

use crate::index::{IndexExpr, Pred};
use crate::span::Span;

/// A scalar binary operator (applied pointwise by `+`/`-` to tensors of equal shape).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
        }
    }
}

/// The amount operators live with the other reshape operators' rules.
pub use crate::reshape::AmountOp;

/// An ATL expression with its source span.
#[derive(Clone, Debug)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

/// Equality is structural and ignores spans; it does not identify alpha-equivalent
/// terms (use [`alpha_eq`] for that).
impl PartialEq for Expr {
    fn eq(&self, other: &Expr) -> bool {
        self.kind == other.kind
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// A scalar literal.
    Lit(f64),
    /// An input tensor declared with `input`.
    Input(String),
    /// A reference to an earlier `def` (or derived definition); `unfold` inlines it.
    DefRef(String),
    /// A `let`-bound variable.
    Var(String),
    /// A rule metavariable `?e`; never present in a program.
    Meta(String),
    /// `gen var in lo..hi: body`.
    Gen {
        var: String,
        lo: IndexExpr,
        hi: IndexExpr,
        body: Box<Expr>,
    },
    /// `sum var in lo..hi: body`.
    Sum {
        var: String,
        lo: IndexExpr,
        hi: IndexExpr,
        body: Box<Expr>,
    },
    /// `max var in lo..hi: body`, the max-reduction: the largest value of a scalar
    /// body, folded left to right from `-inf` with the scalar `max` (`a > b ? a : b`),
    /// so `-inf` over an empty range (docs/language.md).
    MaxRed {
        var: String,
        lo: IndexExpr,
        hi: IndexExpr,
        body: Box<Expr>,
    },
    /// `[pred] * body`.
    Guard {
        pred: Pred,
        body: Box<Expr>,
    },
    /// `let var = value in body`.
    Let {
        var: String,
        value: Box<Expr>,
        body: Box<Expr>,
    },
    /// `tensor[index]` (one dimension; `e[i, j]` is `e[i][j]`).
    Access {
        tensor: Box<Expr>,
        index: IndexExpr,
    },
    /// Scalar negation `-e` (pointwise on tensors).
    Neg(Box<Expr>),
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// A scalar function of scalars (`crate::functions`): `args` has the function's
    /// arity.
    Call {
        func: crate::functions::ScalarFn,
        args: Vec<Expr>,
    },
    /// `concat(a, b)`, also written `a ++ b`.
    Concat(Box<Expr>, Box<Expr>),
    Transpose(Box<Expr>),
    Flatten(Box<Expr>),
    /// `split`, `pad_l`, `pad_r`, `trunc_l`, `trunc_r` with their amount.
    Amount {
        op: AmountOp,
        amount: IndexExpr,
        arg: Box<Expr>,
    },
    /// An index expression's value as a scalar: `float(i + 1)`, or an index variable or
    /// a size written where a scalar is expected (`x * x`, `1.0 / n`). Its value is the
    /// integer's, exactly, over the reals (a coordinate is not padding: it is zero only
    /// where the index is). It reads no index array (`resolve` refuses `float(crd[p])`).
    Coord(IndexExpr),
}

impl Expr {
    pub fn new(kind: ExprKind, span: Span) -> Expr {
        Expr { kind, span }
    }

    /// A node without a source position (built by rewrites).
    pub fn synth(kind: ExprKind) -> Expr {
        Expr::new(kind, Span::DUMMY)
    }

    pub fn lit(value: f64) -> Expr {
        Expr::synth(ExprKind::Lit(value))
    }

    pub fn gen_(var: impl Into<String>, lo: IndexExpr, hi: IndexExpr, body: Expr) -> Expr {
        Expr::synth(ExprKind::Gen {
            var: var.into(),
            lo,
            hi,
            body: Box::new(body),
        })
    }

    pub fn sum(var: impl Into<String>, lo: IndexExpr, hi: IndexExpr, body: Expr) -> Expr {
        Expr::synth(ExprKind::Sum {
            var: var.into(),
            lo,
            hi,
            body: Box::new(body),
        })
    }

    pub fn max_red(var: impl Into<String>, lo: IndexExpr, hi: IndexExpr, body: Expr) -> Expr {
        Expr::synth(ExprKind::MaxRed {
            var: var.into(),
            lo,
            hi,
            body: Box::new(body),
        })
    }

    pub fn guard(pred: Pred, body: Expr) -> Expr {
        Expr::synth(ExprKind::Guard {
            pred,
            body: Box::new(body),
        })
    }

    pub fn let_(var: impl Into<String>, value: Expr, body: Expr) -> Expr {
        Expr::synth(ExprKind::Let {
            var: var.into(),
            value: Box::new(value),
            body: Box::new(body),
        })
    }

    pub fn access(tensor: Expr, index: IndexExpr) -> Expr {
        Expr::synth(ExprKind::Access {
            tensor: Box::new(tensor),
            index,
        })
    }

    pub fn binary(op: BinOp, lhs: Expr, rhs: Expr) -> Expr {
        Expr::synth(ExprKind::Binary {
            op,
            lhs: Box::new(lhs),
            rhs: Box::new(rhs),
        })
    }

    pub fn input(name: impl Into<String>) -> Expr {
        Expr::synth(ExprKind::Input(name.into()))
    }

    pub fn var(name: impl Into<String>) -> Expr {
        Expr::synth(ExprKind::Var(name.into()))
    }

    /// The direct subexpressions, left to right (the order of pre-order traversal).
    pub fn children(&self) -> Vec<&Expr> {
        match &self.kind {
            ExprKind::Lit(_)
            | ExprKind::Input(_)
            | ExprKind::DefRef(_)
            | ExprKind::Var(_)
            | ExprKind::Meta(_)
            | ExprKind::Coord(_) => vec![],
            ExprKind::Gen { body, .. }
            | ExprKind::Sum { body, .. }
            | ExprKind::MaxRed { body, .. } => {
                vec![body]
            }
            ExprKind::Guard { body, .. } => vec![body],
            ExprKind::Let { value, body, .. } => vec![value, body],
            ExprKind::Access { tensor, .. } => vec![tensor],
            ExprKind::Neg(e) | ExprKind::Transpose(e) | ExprKind::Flatten(e) => vec![e],
            ExprKind::Amount { arg, .. } => vec![arg],
            ExprKind::Binary { lhs, rhs, .. } => vec![lhs, rhs],
            ExprKind::Concat(a, b) => vec![a, b],
            ExprKind::Call { args, .. } => args.iter().collect(),
        }
    }

    /// Mutable direct subexpressions, in the same order as [`Expr::children`].
    pub fn children_mut(&mut self) -> Vec<&mut Expr> {
        match &mut self.kind {
            ExprKind::Lit(_)
            | ExprKind::Input(_)
            | ExprKind::DefRef(_)
            | ExprKind::Var(_)
            | ExprKind::Meta(_)
            | ExprKind::Coord(_) => vec![],
            ExprKind::Gen { body, .. }
            | ExprKind::Sum { body, .. }
            | ExprKind::MaxRed { body, .. } => {
                vec![body]
            }
            ExprKind::Guard { body, .. } => vec![body],
            ExprKind::Let { value, body, .. } => vec![value, body],
            ExprKind::Access { tensor, .. } => vec![tensor],
            ExprKind::Neg(e) | ExprKind::Transpose(e) | ExprKind::Flatten(e) => vec![e],
            ExprKind::Amount { arg, .. } => vec![arg],
            ExprKind::Binary { lhs, rhs, .. } => vec![lhs, rhs],
            ExprKind::Concat(a, b) => vec![a, b],
            ExprKind::Call { args, .. } => args.iter_mut().collect(),
        }
    }

    /// A copy of this node with every direct child replaced by `f(child)`, called in the
    /// order of [`Expr::children`]; the node's own data (names, ranges, indices,
    /// predicates) and span are kept. Only the node itself is copied, never its children
    /// (cloning the subtree first would make every recursive rebuild quadratic in depth).
    pub fn map_children(&self, mut f: impl FnMut(&Expr) -> Expr) -> Expr {
        use ExprKind as K;
        let mut child = |e: &Expr| Box::new(f(e));
        let kind = match &self.kind {
            K::Lit(_) | K::Input(_) | K::DefRef(_) | K::Var(_) | K::Meta(_) | K::Coord(_) => {
                self.kind.clone()
            }
            K::Gen { var, lo, hi, body } => K::Gen {
                var: var.clone(),
                lo: lo.clone(),
                hi: hi.clone(),
                body: child(body),
            },
            K::Sum { var, lo, hi, body } => K::Sum {
                var: var.clone(),
                lo: lo.clone(),
                hi: hi.clone(),
                body: child(body),
            },
            K::MaxRed { var, lo, hi, body } => K::MaxRed {
                var: var.clone(),
                lo: lo.clone(),
                hi: hi.clone(),
                body: child(body),
            },
            K::Guard { pred, body } => K::Guard {
                pred: pred.clone(),
                body: child(body),
            },
            K::Let { var, value, body } => {
                let value = child(value);
                let body = child(body);
                K::Let {
                    var: var.clone(),
                    value,
                    body,
                }
            }
            K::Access { tensor, index } => K::Access {
                tensor: child(tensor),
                index: index.clone(),
            },
            K::Neg(e) => K::Neg(child(e)),
            K::Transpose(e) => K::Transpose(child(e)),
            K::Flatten(e) => K::Flatten(child(e)),
            K::Amount { op, amount, arg } => K::Amount {
                op: *op,
                amount: amount.clone(),
                arg: child(arg),
            },
            K::Binary { op, lhs, rhs } => {
                let lhs = child(lhs);
                let rhs = child(rhs);
                K::Binary { op: *op, lhs, rhs }
            }
            K::Concat(a, b) => {
                let a = child(a);
                let b = child(b);
                K::Concat(a, b)
            }
            K::Call { func, args } => K::Call {
                func: *func,
                args: args.iter().map(|a| *child(a)).collect(),
            },
        };
        Expr {
            kind,
            span: self.span,
        }
    }

    /// Whether two nodes have the same head: the same construct and, for `Binary`,
    /// `Amount` and `Call`, the same operator (and number of arguments). Nothing else is compared: leaves' names and values,
    /// binder names, ranges, index expressions and predicates mean different things to
    /// alpha-equivalence, matching and checking, so each structural walk compares them
    /// itself and then recurses into [`Expr::zip_children`].
    pub fn same_head(&self, other: &Expr) -> bool {
        use ExprKind as K;
        match (&self.kind, &other.kind) {
            (K::Binary { op: a, .. }, K::Binary { op: b, .. }) => a == b,
            (K::Amount { op: a, .. }, K::Amount { op: b, .. }) => a == b,
            (K::Call { func: a, args: x }, K::Call { func: b, args: y }) => {
                a == b && x.len() == y.len()
            }
            (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
        }
    }

    /// The pairs of corresponding direct children of two nodes with the same head (see
    /// [`Expr::same_head`]), in the order of [`Expr::children`]; `None` when the heads
    /// differ. Child `k` of a pair is in the scope of the nodes' binders exactly when
    /// [`Expr::binds_in_child`] says so.
    pub fn zip_children<'a>(&'a self, other: &'a Expr) -> Option<Vec<(&'a Expr, &'a Expr)>> {
        self.same_head(other)
            .then(|| self.children().into_iter().zip(other.children()).collect())
    }

    /// Whether child `k` (numbered as in [`Expr::children`]) is in the scope of the name
    /// this node binds: the body of a `gen`, `sum` or `let`, not a `let`'s value.
    pub fn binds_in_child(&self, k: usize) -> bool {
        match &self.kind {
            ExprKind::Gen { .. } | ExprKind::Sum { .. } | ExprKind::MaxRed { .. } => k == 0,
            ExprKind::Let { .. } => k == 1,
            _ => false,
        }
    }

    /// `[p] * a + [!p] * b`, the case split `specialize` makes (rules `spec_lt`, …):
    /// the condition and the two parts. Lowering computes one part or the other.
    pub fn as_case_split(&self) -> Option<(&Pred, &Expr, &Expr)> {
        let ExprKind::Binary {
            op: BinOp::Add,
            lhs,
            rhs,
        } = &self.kind
        else {
            return None;
        };
        match (&lhs.kind, &rhs.kind) {
            (
                ExprKind::Guard { pred, body: a },
                ExprKind::Guard {
                    pred: Pred::Not(negated),
                    body: b,
                },
            ) if **negated == *pred => Some((pred, a, b)),
            _ => None,
        }
    }

    /// The name this node binds, and which child indices it scopes over.
    /// `gen`/`sum` bind an index variable over their body; `let` binds a tensor variable
    /// over its body (child 1) but not its value (child 0).
    pub fn binder(&self) -> Option<(&str, BinderKind)> {
        match &self.kind {
            ExprKind::Gen { var, .. } => Some((var, BinderKind::Gen)),
            ExprKind::Sum { var, .. } => Some((var, BinderKind::Sum)),
            ExprKind::MaxRed { var, .. } => Some((var, BinderKind::Max)),
            ExprKind::Let { var, .. } => Some((var, BinderKind::Let)),
            _ => None,
        }
    }

    /// Number of nodes (expression nodes only).
    pub fn size(&self) -> usize {
        1 + self.children().iter().map(|c| c.size()).sum::<usize>()
    }

    /// Visits every node in pre-order.
    pub fn walk(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        for c in self.children() {
            c.walk(f);
        }
    }

    /// Free index variables (sizes and binders bound outside this expression).
    pub fn free_index_vars(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        collect_free_index_vars(self, &mut Vec::new(), &mut out);
        out
    }

    /// Free `let` variables.
    pub fn free_tensor_vars(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        collect_free_tensor_vars(self, &mut Vec::new(), &mut out);
        out
    }

    /// Every name bound anywhere inside (gen/sum/let binders).
    pub fn bound_names(&self, out: &mut HashSet<String>) {
        if let Some((v, _)) = self.binder() {
            out.insert(v.to_string());
        }
        for c in self.children() {
            c.bound_names(out);
        }
    }

    /// Whether the expression contains a metavariable (in expression or index position).
    pub fn has_meta(&self) -> bool {
        let mut found = false;
        self.walk(&mut |e| {
            found |= match &e.kind {
                ExprKind::Meta(_) => true,
                ExprKind::Gen { lo, hi, .. }
                | ExprKind::Sum { lo, hi, .. }
                | ExprKind::MaxRed { lo, hi, .. } => lo.has_meta() || hi.has_meta(),
                ExprKind::Guard { pred, .. } => pred.has_meta(),
                ExprKind::Access { index, .. } | ExprKind::Coord(index) => index.has_meta(),
                ExprKind::Amount { amount, .. } => amount.has_meta(),
                _ => false,
            }
        });
        found
    }

    /// The index arrays that index expressions anywhere inside read.
    pub fn loaded_arrays(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        self.walk(&mut |e| match &e.kind {
            ExprKind::Gen { lo, hi, .. }
            | ExprKind::Sum { lo, hi, .. }
            | ExprKind::MaxRed { lo, hi, .. } => {
                lo.collect_loads(&mut out);
                hi.collect_loads(&mut out);
            }
            ExprKind::Guard { pred, .. } => pred.collect_loads(&mut out),
            ExprKind::Access { index, .. } | ExprKind::Coord(index) => {
                index.collect_loads(&mut out)
            }
            ExprKind::Amount { amount, .. } => amount.collect_loads(&mut out),
            _ => {}
        });
        out
    }

    /// Whether an index expression anywhere inside reads an index array (`pos[i]`).
    pub fn has_load(&self) -> bool {
        let mut found = false;
        self.walk(&mut |e| {
            found |= match &e.kind {
                ExprKind::Gen { lo, hi, .. }
                | ExprKind::Sum { lo, hi, .. }
                | ExprKind::MaxRed { lo, hi, .. } => lo.has_load() || hi.has_load(),
                ExprKind::Guard { pred, .. } => pred.has_load(),
                ExprKind::Access { index, .. } | ExprKind::Coord(index) => index.has_load(),
                ExprKind::Amount { amount, .. } => amount.has_load(),
                _ => false,
            }
        });
        found
    }

    /// Applies `f` to every index expression directly held by this node (bounds,
    /// access indices, amounts) and every predicate's index expressions.
    pub fn map_own_index(&mut self, f: &mut dyn FnMut(&IndexExpr) -> IndexExpr) {
        match &mut self.kind {
            ExprKind::Gen { lo, hi, .. }
            | ExprKind::Sum { lo, hi, .. }
            | ExprKind::MaxRed { lo, hi, .. } => {
                *lo = f(lo);
                *hi = f(hi);
            }
            ExprKind::Guard { pred, .. } => *pred = pred.map_index(f),
            ExprKind::Access { index, .. } | ExprKind::Coord(index) => *index = f(index),
            ExprKind::Amount { amount, .. } => *amount = f(amount),
            _ => {}
        }
    }
}

/// What kind of name a binder introduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinderKind {
    Gen,
    Sum,
    Max,
    Let,
}

fn own_index_vars(e: &Expr, out: &mut BTreeSet<String>) {
    match &e.kind {
        ExprKind::Gen { lo, hi, .. }
        | ExprKind::Sum { lo, hi, .. }
        | ExprKind::MaxRed { lo, hi, .. } => {
            lo.collect_vars(out);
            hi.collect_vars(out);
        }
        ExprKind::Guard { pred, .. } => pred.collect_vars(out),
        ExprKind::Access { index, .. } | ExprKind::Coord(index) => index.collect_vars(out),
        ExprKind::Amount { amount, .. } => amount.collect_vars(out),
        _ => {}
    }
}

fn collect_free_index_vars(e: &Expr, bound: &mut Vec<String>, out: &mut BTreeSet<String>) {
    let mut own = BTreeSet::new();
    own_index_vars(e, &mut own);
    for v in own {
        if !bound.contains(&v) {
            out.insert(v);
        }
    }
    match &e.kind {
        ExprKind::Gen { var, body, .. }
        | ExprKind::Sum { var, body, .. }
        | ExprKind::MaxRed { var, body, .. } => {
            bound.push(var.clone());
            collect_free_index_vars(body, bound, out);
            bound.pop();
        }
        _ => {
            for c in e.children() {
                collect_free_index_vars(c, bound, out);
            }
        }
    }
}

fn collect_free_tensor_vars(e: &Expr, bound: &mut Vec<String>, out: &mut BTreeSet<String>) {
    match &e.kind {
        ExprKind::Var(v) => {
            if !bound.contains(v) {
                out.insert(v.clone());
            }
        }
        ExprKind::Let { var, value, body } => {
            collect_free_tensor_vars(value, bound, out);
            bound.push(var.clone());
            collect_free_tensor_vars(body, bound, out);
            bound.pop();
        }
        _ => {
            for c in e.children() {
                collect_free_tensor_vars(c, bound, out);
            }
        }
    }
}

/// Produces names not in a given set: `base`, then `base1`, `base2`, … (DESIGN §3.2).
#[derive(Clone, Debug, Default)]
pub struct NameSupply {
    used: HashSet<String>,
    /// Per stem, a `k` such that `stem1` … `stem(k-1)` are all in `used` (which only
    /// grows), so the search for a fresh name does not rescan them: without it, naming
    /// thousands of binders is quadratic. The names chosen are the same.
    next_free: std::collections::HashMap<String, usize>,
}

/// Whether `name` is one [`NameSupply::fresh`] can give for `base`: `base`'s stem (its
/// trailing digits stripped) alone or followed by digits (`x`, `x1`, `x12` for `x`).
/// The copies of a loop that a rewrite renamed apart are named so.
pub fn is_fresh_of(name: &str, base: &str) -> bool {
    let stem = base.trim_end_matches(|c: char| c.is_ascii_digit());
    let stem = if stem.is_empty() { "v" } else { stem };
    name.strip_prefix(stem)
        .is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_digit()))
}

impl NameSupply {
    pub fn new(used: impl IntoIterator<Item = String>) -> NameSupply {
        NameSupply {
            used: used.into_iter().collect(),
            next_free: Default::default(),
        }
    }

    /// Marks a name as taken.
    pub fn reserve(&mut self, name: &str) {
        self.used.insert(name.to_string());
    }

    pub fn is_used(&self, name: &str) -> bool {
        self.used.contains(name)
    }

    /// `base` itself if free, else a fresh name derived from `base` with its trailing
    /// digits stripped (`i3` → `i`, `i1`, …); reserved.
    pub fn fresh(&mut self, base: &str) -> String {
        self.fresh_avoiding(base, &|_| false)
    }

    /// Like [`NameSupply::fresh`], also avoiding every name for which `taken` holds.
    pub fn fresh_avoiding(&mut self, base: &str, taken: &dyn Fn(&str) -> bool) -> String {
        if !base.is_empty() && !self.used.contains(base) && !taken(base) {
            self.used.insert(base.to_string());
            return base.to_string();
        }
        let stem = base.trim_end_matches(|c: char| c.is_ascii_digit());
        let stem = if stem.is_empty() { "v" } else { stem };
        if !self.used.contains(stem) && !taken(stem) {
            self.used.insert(stem.to_string());
            return stem.to_string();
        }
        let mut k = self.next_free.get(stem).copied().unwrap_or(1);
        let mut all_used_so_far = true;
        loop {
            let candidate = format!("{stem}{k}");
            let used = self.used.contains(&candidate);
            if !used && !taken(&candidate) {
                self.used.insert(candidate.clone());
                return candidate;
            }
            k += 1;
            all_used_so_far &= used;
            if all_used_so_far {
                self.next_free.insert(stem.to_string(), k);
            }
        }
    }
}

/// Every name occurring in `e`, free or bound, index or tensor: what a fresh name must
/// avoid.
pub fn all_names(e: &Expr) -> HashSet<String> {
    let mut out = HashSet::new();
    e.walk(&mut |n| {
        let mut own = BTreeSet::new();
        own_index_vars(n, &mut own);
        out.extend(own);
        match &n.kind {
            ExprKind::Var(v) | ExprKind::Input(v) | ExprKind::DefRef(v) => {
                out.insert(v.clone());
            }
            _ => {}
        }
        if let Some((v, _)) = n.binder() {
            out.insert(v.to_string());
        }
    });
    out
}

/// Capture-avoiding substitution of index variable `name` by `value` in `e`.
///
/// A binder that would capture a free variable of `value` is renamed to a name fresh
/// for both `e` and `value`; a binder that shadows `name` stops the substitution.
pub fn subst_index(e: &Expr, name: &str, value: &IndexExpr) -> Expr {
    let value_vars = value.vars();
    let mut supply = NameSupply::new(all_names(e).into_iter().chain(value_vars.iter().cloned()));
    subst_index_rec(e, name, value, &value_vars, &mut supply)
}

fn subst_index_rec(
    e: &Expr,
    name: &str,
    value: &IndexExpr,
    value_vars: &BTreeSet<String>,
    supply: &mut NameSupply,
) -> Expr {
    let sub = |x: &IndexExpr| x.subst(name, value);
    let span = e.span;
    let kind = match &e.kind {
        ExprKind::Gen { var, lo, hi, body }
        | ExprKind::Sum { var, lo, hi, body }
        | ExprKind::MaxRed { var, lo, hi, body } => {
            let lo = sub(lo);
            let hi = sub(hi);
            let (var, body) = if var == name {
                (var.clone(), (**body).clone())
            } else if value_vars.contains(var) {
                let fresh = supply.fresh(var);
                let renamed = rename_index(body, var, &fresh);
                (
                    fresh,
                    subst_index_rec(&renamed, name, value, value_vars, supply),
                )
            } else {
                (
                    var.clone(),
                    subst_index_rec(body, name, value, value_vars, supply),
                )
            };
            let body = Box::new(body);
            match e.kind {
                ExprKind::Gen { .. } => ExprKind::Gen { var, lo, hi, body },
                ExprKind::Sum { .. } => ExprKind::Sum { var, lo, hi, body },
                _ => ExprKind::MaxRed { var, lo, hi, body },
            }
        }
        _ => {
            let mut out = e.map_children(|c| subst_index_rec(c, name, value, value_vars, supply));
            out.map_own_index(&mut |x| sub(x));
            return out;
        }
    };
    Expr::new(kind, span)
}

/// Renames free occurrences of index variable `from` to `to` (`to` must be fresh).
pub fn rename_index(e: &Expr, from: &str, to: &str) -> Expr {
    subst_index(e, from, &IndexExpr::Var(to.to_string()))
}

/// Capture-avoiding substitution of `let` variable `name` by expression `value`.
pub fn subst_tensor(e: &Expr, name: &str, value: &Expr) -> Expr {
    let value_tensor_vars = value.free_tensor_vars();
    let value_index_vars = value.free_index_vars();
    let mut supply = NameSupply::new(all_names(e).into_iter().chain(all_names(value)));
    subst_tensor_rec(
        e,
        name,
        value,
        &value_tensor_vars,
        &value_index_vars,
        &mut supply,
    )
}

fn subst_tensor_rec(
    e: &Expr,
    name: &str,
    value: &Expr,
    value_tensor_vars: &BTreeSet<String>,
    value_index_vars: &BTreeSet<String>,
    supply: &mut NameSupply,
) -> Expr {
    let rec = |x: &Expr, supply: &mut NameSupply| {
        subst_tensor_rec(x, name, value, value_tensor_vars, value_index_vars, supply)
    };
    match &e.kind {
        ExprKind::Var(v) if v == name => value.clone(),
        ExprKind::Let {
            var,
            value: bound,
            body,
        } => {
            let bound = rec(bound, supply);
            let (var, body) = if var == name {
                (var.clone(), (**body).clone())
            } else if value_tensor_vars.contains(var) {
                let fresh = supply.fresh(var);
                let renamed = rename_tensor(body, var, &fresh);
                (fresh, rec(&renamed, supply))
            } else {
                (var.clone(), rec(body, supply))
            };
            Expr::new(
                ExprKind::Let {
                    var,
                    value: Box::new(bound),
                    body: Box::new(body),
                },
                e.span,
            )
        }
        ExprKind::Gen { var, body, .. }
        | ExprKind::Sum { var, body, .. }
        | ExprKind::MaxRed { var, body, .. }
            if value_index_vars.contains(var) =>
        {
            // The value mentions an index variable that this binder would capture.
            let fresh = supply.fresh(var);
            let mut out = e.clone();
            let new_body = rename_index(body, var, &fresh);
            match &mut out.kind {
                ExprKind::Gen {
                    var: v, body: b, ..
                }
                | ExprKind::Sum {
                    var: v, body: b, ..
                }
                | ExprKind::MaxRed {
                    var: v, body: b, ..
                } => {
                    *v = fresh;
                    **b = rec(&new_body, supply);
                }
                _ => unreachable!("matched gen or sum above"),
            }
            out
        }
        _ => e.map_children(|c| rec(c, supply)),
    }
}

/// Renames free occurrences of `let` variable `from` to `to` (`to` must be fresh).
pub fn rename_tensor(e: &Expr, from: &str, to: &str) -> Expr {
    subst_tensor(
        e,
        from,
        &Expr::new(ExprKind::Var(to.to_string()), Span::DUMMY),
    )
}

/// Alpha-equivalence: equal up to consistent renaming of bound variables (index and
/// tensor binders alike). Spans are ignored; literals compare by bits so that `-0.0`
/// and `0.0` differ and `NaN` equals itself.
pub fn alpha_eq(a: &Expr, b: &Expr) -> bool {
    alpha_rec(a, b, &mut Vec::new())
}

fn index_alpha(a: &IndexExpr, b: &IndexExpr, env: &[(String, String)]) -> bool {
    use IndexExpr as I;
    match (a, b) {
        (I::Const(x), I::Const(y)) => x == y,
        (I::Var(x), I::Var(y)) => var_alpha(x, y, env),
        (I::Meta(x), I::Meta(y)) => x == y,
        (I::Neg(x), I::Neg(y)) => index_alpha(x, y, env),
        (I::Load(a1, x), I::Load(a2, y)) => a1 == a2 && index_alpha(x, y, env),
        (I::Bin(o1, x1, y1), I::Bin(o2, x2, y2)) => {
            o1 == o2 && index_alpha(x1, x2, env) && index_alpha(y1, y2, env)
        }
        _ => false,
    }
}

/// Looks up the innermost binding of either name; free names must be identical.
fn var_alpha(x: &str, y: &str, env: &[(String, String)]) -> bool {
    for (l, r) in env.iter().rev() {
        if l == x || r == y {
            return l == x && r == y;
        }
    }
    x == y
}

fn pred_alpha(a: &Pred, b: &Pred, env: &[(String, String)]) -> bool {
    match (a, b) {
        (Pred::Bool(x), Pred::Bool(y)) => x == y,
        (Pred::Cmp(o1, a1, b1), Pred::Cmp(o2, a2, b2)) => {
            o1 == o2 && index_alpha(a1, a2, env) && index_alpha(b1, b2, env)
        }
        (Pred::And(a1, b1), Pred::And(a2, b2)) | (Pred::Or(a1, b1), Pred::Or(a2, b2)) => {
            pred_alpha(a1, a2, env) && pred_alpha(b1, b2, env)
        }
        (Pred::Not(x), Pred::Not(y)) => pred_alpha(x, y, env),
        _ => false,
    }
}

fn alpha_rec(a: &Expr, b: &Expr, env: &mut Vec<(String, String)>) -> bool {
    let Some(pairs) = a.zip_children(b) else {
        return false;
    };
    if !own_alpha(a, b, env) {
        return false;
    }
    let binders = a.binder().zip(b.binder());
    pairs
        .into_iter()
        .enumerate()
        .all(|(k, (x, y))| match binders {
            Some(((v1, _), (v2, _))) if a.binds_in_child(k) => {
                env.push((v1.to_string(), v2.to_string()));
                let ok = alpha_rec(x, y, env);
                env.pop();
                ok
            }
            _ => alpha_rec(x, y, env),
        })
}

/// The data two nodes with the same head hold themselves (leaves, ranges, indices,
/// predicates), compared up to the binder renaming `env`.
fn own_alpha(a: &Expr, b: &Expr, env: &[(String, String)]) -> bool {
    use ExprKind as K;
    match (&a.kind, &b.kind) {
        (K::Lit(x), K::Lit(y)) => x.to_bits() == y.to_bits(),
        (K::Input(x), K::Input(y)) | (K::DefRef(x), K::DefRef(y)) | (K::Meta(x), K::Meta(y)) => {
            x == y
        }
        (K::Var(x), K::Var(y)) => var_alpha(x, y, env),
        (K::Gen { lo: l1, hi: h1, .. }, K::Gen { lo: l2, hi: h2, .. })
        | (K::Sum { lo: l1, hi: h1, .. }, K::Sum { lo: l2, hi: h2, .. })
        | (K::MaxRed { lo: l1, hi: h1, .. }, K::MaxRed { lo: l2, hi: h2, .. }) => {
            index_alpha(l1, l2, env) && index_alpha(h1, h2, env)
        }
        (K::Guard { pred: p1, .. }, K::Guard { pred: p2, .. }) => pred_alpha(p1, p2, env),
        (K::Access { index: i1, .. }, K::Access { index: i2, .. })
        | (K::Amount { amount: i1, .. }, K::Amount { amount: i2, .. })
        | (K::Coord(i1), K::Coord(i2)) => index_alpha(i1, i2, env),
        _ => true,
    }
}

/// A `size` declaration: a symbolic integer >= 1.
#[derive(Clone, Debug, PartialEq)]
pub struct SizeDecl {
    pub name: String,
    pub span: Span,
}

/// An `assume` fact over the sizes.
#[derive(Clone, Debug, PartialEq)]
pub struct Assume {
    pub pred: Pred,
    pub span: Span,
}

/// An `input` tensor with its shape over the sizes (empty shape: a scalar).
#[derive(Clone, Debug, PartialEq)]
pub struct InputDecl {
    pub name: String,
    pub shape: Vec<IndexExpr>,
    /// `Some` for an index array (`input pos : int[n + 1] in 0..nnz + 1 sorted`): its
    /// elements are integers read in index expressions, never reals.
    pub index_array: Option<IndexArray>,
    /// `Some` when the input is not stored row-major (`layout (M, K):(1, M)`).
    pub layout: Option<InputLayout>,
    pub span: Span,
}

/// An input's storage layout: a dense permutation of its dimensions (CuTe's
/// `(e0, e1, …):(s0, s1, …)` where, ordered by decreasing stride, each stride is the
/// product of the extents after it). The kernel receives the input as the row-major
/// array of its dimensions in that order; the program reads it at its own coordinates.
#[derive(Clone, Debug, PartialEq)]
pub struct InputLayout {
    /// The stride of each dimension, as declared.
    pub strides: Vec<IndexExpr>,
    /// The storage order: `order[p]` is the dimension stored at position `p`
    /// (outermost first; the last has stride 1).
    pub order: Vec<usize>,
}

impl InputDecl {
    /// The shape of the array the kernel receives: the dimensions in storage order.
    pub fn storage_shape(&self) -> Vec<IndexExpr> {
        match &self.layout {
            None => self.shape.clone(),
            Some(l) => l.order.iter().map(|&d| self.shape[d].clone()).collect(),
        }
    }
}

impl std::fmt::Display for InputDecl {
    /// The declaration as written in a file: `input A : [n, m]`, or for an index array
    /// `input pos : int[n + 1] in 0..nnz + 1 sorted`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let dims: Vec<String> = self.shape.iter().map(|d| d.to_string()).collect();
        match &self.index_array {
            None => {
                write!(f, "input {} : [{}]", self.name, dims.join(", "))?;
                if let Some(l) = &self.layout {
                    let strides: Vec<String> = l.strides.iter().map(|d| d.to_string()).collect();
                    write!(f, " layout ({}):({})", dims.join(", "), strides.join(", "))?;
                }
                Ok(())
            }
            Some(facts) => {
                write!(
                    f,
                    "input {} : int[{}] in {}..{}",
                    self.name,
                    dims.join(", "),
                    facts.lo,
                    facts.hi
                )?;
                if facts.sorted {
                    write!(f, " sorted")?;
                }
                Ok(())
            }
        }
    }
}

/// The declared facts of an index array, checked on entry by the interpreter and by
/// every kernel, and assumed by the prover: every element `v` has `lo <= v < hi`, and
/// with `sorted`, `a[p] <= a[p + 1]`.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexArray {
    pub lo: IndexExpr,
    pub hi: IndexExpr,
    pub sorted: bool,
}

/// A `def NAME = expr`.
#[derive(Clone, Debug, PartialEq)]
pub struct Def {
    pub name: String,
    pub name_span: Span,
    pub body: Expr,
    pub span: Span,
    /// Loop annotations requested by the derivation that produced this definition
    /// (`parallel x`, `vectorize x`, `unroll x`); empty for a written `def`. They are
    /// not part of the value: lowering reads them, nothing else does.
    pub hints: Vec<LoopHint>,
    /// The SIMD width in bits (one of [`VECTOR_WIDTHS`]) that the derivation asks the C
    /// compiler to prefer (`vector_width 256`); `None`: the compiler's default for the
    /// target. Like the hints, not part of the value.
    pub vector_width: Option<u32>,
    /// Stages whose buffers the derivation stores apart from where they are computed
    /// (`store_root x`, `store_at x at yo`). Like the hints, not part of the value:
    /// lowering reads them (the sliding window), nothing else does.
    pub storage: Vec<StorageHint>,
}

/// The widths `vector_width N` accepts, in bits: SSE, AVX2 and AVX-512 registers.
pub const VECTOR_WIDTHS: &[u32] = &[128, 256, 512];

/// Where a stage's buffer is stored, apart from the loop that computes it (Halide's
/// `store_root`/`store_at`), or how it is folded (`fold_storage`): lowering keeps the
/// buffer across the iterations of that loop and computes in each only the rows the
/// earlier ones did not (the sliding window), and stores rows a fold apart in one
/// place. It never changes what the program computes; the translation validator
/// proves the kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorageHint {
    /// The stage (a `let` name of the program).
    pub stage: String,
    pub request: StorageRequest,
    /// The directive, for diagnostics.
    pub span: Span,
}

/// What a [`StorageHint`] asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StorageRequest {
    /// `store_root x`: one buffer for the whole kernel.
    Root,
    /// `store_at x at yo`: one buffer per iteration of loop `yo`.
    At(String),
    /// `fold_storage x by F`: the buffer's rows stored modulo `F`.
    Fold(i64),
}

impl StorageHint {
    /// The directive as written.
    pub fn step_text(&self) -> String {
        match &self.request {
            StorageRequest::Root => format!("store_root {}", self.stage),
            StorageRequest::At(l) => format!("store_at {} at {l}", self.stage),
            StorageRequest::Fold(f) => format!("fold_storage {} by {f}", self.stage),
        }
    }
}

/// What a loop hint asks lowering for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HintKind {
    /// `parallel x`: iterations on several threads (`omp parallel for`).
    Parallel,
    /// `vectorize x`: iterations in SIMD lanes (`omp simd`).
    Vector,
    /// `unroll x`: the loop unrolled (`GCC unroll N`).
    Unroll,
    /// `unroll x off`: the loop not unrolled, whatever lowering would choose (its other
    /// annotations stay automatic).
    UnrollOff,
}

impl HintKind {
    /// The directive that requests it.
    pub fn directive(self) -> &'static str {
        match self {
            HintKind::Parallel => "parallel",
            HintKind::Vector => "vectorize",
            HintKind::Unroll | HintKind::UnrollOff => "unroll",
        }
    }

    /// The step as written: `unroll x off` for [`HintKind::UnrollOff`], else the
    /// directive and the loop.
    pub fn step_text(self, var: &str) -> String {
        match self {
            HintKind::UnrollOff => format!("unroll {var} off"),
            _ => format!("{} {var}", self.directive()),
        }
    }
}

/// A loop annotation requested by a directive: the loop is named by its binder, which
/// lowering keeps as the loop variable. It never changes what the program computes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopHint {
    pub var: String,
    pub kind: HintKind,
    /// The directive, for diagnostics.
    pub span: Span,
}

/// A `derive NAME from BASE { steps }` block; the steps are executed by the rewrite
/// engine.
#[derive(Clone, Debug, PartialEq)]
pub struct Derive {
    pub name: String,
    pub name_span: Span,
    pub from: String,
    pub from_span: Span,
    pub steps: Vec<crate::ast::Step>,
    pub span: Span,
}

/// One storage of `sparse A : [n, m] as FORMAT(arrays…), …`, resolved. The first
/// storage defines `A` (in [`Program::defs`]) as the matrix its arrays encode; a
/// later one is another way to give the same matrix, which `unfold A as FORMAT`
/// reads (`body`).
#[derive(Clone, Debug, PartialEq)]
pub struct SparseDecl {
    pub name: String,
    /// A format of [`crate::sparse::SPARSE_FORMATS`].
    pub format: &'static crate::sparse::SparseFormat,
    /// Its extents, `[rows, cols]`.
    pub shape: Vec<IndexExpr>,
    /// The arrays, in the format's order (declared inputs).
    pub arrays: Vec<String>,
    /// A blocked format's block extents `[R, C]` (the values' trailing extents);
    /// empty for the others.
    pub block: Vec<usize>,
    /// The matrix the arrays encode (`crate::sparse::decompression`).
    pub body: Expr,
    pub span: Span,
}

impl std::fmt::Display for SparseDecl {
    /// The item after its keyword, as written in a file: `A : [n, m] as csr(pos, crd,
    /// vals)` (certificates record it so).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let dims: Vec<String> = self.shape.iter().map(|d| d.to_string()).collect();
        write!(
            f,
            "{} : [{}] as {}({})",
            self.name,
            dims.join(", "),
            self.format.name,
            self.arrays.join(", ")
        )
    }
}

/// A resolved program. Items keep their source order within each list; definitions may
/// only refer to earlier definitions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Program {
    pub sizes: Vec<SizeDecl>,
    pub assumes: Vec<Assume>,
    pub inputs: Vec<InputDecl>,
    pub defs: Vec<Def>,
    pub derives: Vec<Derive>,
    /// User rules (`rule NAME: …` items) as written; `atl-rewrites` loads and checks
    /// them before a derivation may use them.
    pub rules: Vec<crate::ast::RuleItem>,
    /// Sparse matrices (`sparse A : [n, m] as csr(pos, crd, vals)`): each is also a
    /// definition in `defs` (the matrix its arrays encode); this says how its arrays
    /// are made from a matrix given in a file.
    pub sparse: Vec<SparseDecl>,
    /// Binders that name resolution renamed (`x` written in two stages of a
    /// definition becomes `x` and `x1`): the resolved name and the name written, so
    /// that messages and directives can use the user's names.
    pub written_names: Vec<(String, String)>,
}

impl Program {
    /// The names its declarations take (sizes, inputs, definitions): a name a step
    /// introduces must avoid them as well as the program's binders.
    pub fn declared_names(&self) -> impl Iterator<Item = &str> {
        self.sizes
            .iter()
            .map(|s| s.name.as_str())
            .chain(self.inputs.iter().map(|i| i.name.as_str()))
            .chain(self.defs.iter().map(|d| d.name.as_str()))
    }

    /// The name a binder was written with (itself unless resolution renamed it).
    pub fn written_name<'a>(&'a self, resolved: &'a str) -> &'a str {
        self.written_names
            .iter()
            .find(|(r, _)| r == resolved)
            .map_or(resolved, |(_, w)| w.as_str())
    }

    pub fn def(&self, name: &str) -> Option<&Def> {
        self.defs.iter().find(|d| d.name == name)
    }

    /// The sparse matrix declaration of `name`, if it is one: its first storage, the
    /// one that defines it.
    pub fn sparse(&self, name: &str) -> Option<&SparseDecl> {
        self.sparse.iter().find(|s| s.name == name)
    }

    /// Every storage of the sparse matrix `name`, the defining one first.
    pub fn storages<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a SparseDecl> {
        self.sparse.iter().filter(move |s| s.name == name)
    }

    /// The inputs `e` reads, in tensor position or as index arrays, through the
    /// definitions it refers to as well.
    pub fn inputs_read(&self, e: &Expr) -> BTreeSet<String> {
        let mut out = e.loaded_arrays();
        let mut seen = BTreeSet::new();
        let mut todo = vec![e];
        while let Some(x) = todo.pop() {
            x.walk(&mut |n| match &n.kind {
                ExprKind::Input(i) => {
                    out.insert(i.clone());
                }
                ExprKind::DefRef(d) if seen.insert(d.clone()) => {
                    if let Some(def) = self.def(d) {
                        out.extend(def.body.loaded_arrays());
                        todo.push(&def.body);
                    }
                }
                _ => {}
            });
        }
        out
    }

    /// The storages of the sparse matrix `name` whose arrays `e` reads (through the
    /// definitions it refers to, so a reference to `name` reads its first storage).
    pub fn storages_read<'a>(&'a self, name: &'a str, e: &Expr) -> Vec<&'a SparseDecl> {
        let read = self.inputs_read(e);
        self.storages(name)
            .filter(|s| s.arrays.iter().any(|a| read.contains(a)))
            .collect()
    }

    /// The sparse matrix `name`'s item after its keyword, as written in a file, with
    /// every storage: `A : [n, m] as csr(pos, crd, vals), csc(…)` (certificates record
    /// it so).
    pub fn sparse_item(&self, name: &str) -> Option<String> {
        let mut storages = self.storages(name);
        let first = storages.next()?;
        let mut item = first.to_string();
        for s in storages {
            item.push_str(&format!(", {}({})", s.format.name, s.arrays.join(", ")));
        }
        Some(item)
    }

    pub fn input(&self, name: &str) -> Option<&InputDecl> {
        self.inputs.iter().find(|i| i.name == name)
    }

    pub fn is_size(&self, name: &str) -> bool {
        self.sizes.iter().any(|s| s.name == name)
    }

    pub fn derive(&self, name: &str) -> Option<&Derive> {
        self.derives.iter().find(|d| d.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::IndexExpr as I;

    fn f_at(i: &str) -> Expr {
        Expr::access(Expr::input("f"), I::var(i))
    }

    #[test]
    fn the_names_fresh_gives_for_a_base_are_recognised_and_no_others() {
        let mut supply = NameSupply::new(["x".to_string(), "k1".to_string()]);
        for base in ["x", "x", "k1", "k1"] {
            let name = supply.fresh(base);
            assert!(is_fresh_of(&name, base), "{name} of {base}");
        }
        assert!(is_fresh_of("x", "x") && is_fresh_of("x12", "x"));
        assert!(!is_fresh_of("xx", "x") && !is_fresh_of("y1", "x") && !is_fresh_of("x1a", "x"));
    }

    #[test]
    fn alpha_eq_identifies_renamed_binders_only() {
        let a = Expr::gen_("i", I::Const(0), I::var("n"), f_at("i"));
        let b = Expr::gen_("j", I::Const(0), I::var("n"), f_at("j"));
        let c = Expr::gen_("j", I::Const(0), I::var("n"), f_at("i"));
        assert!(alpha_eq(&a, &b));
        assert!(!alpha_eq(&a, &c), "free i must not match bound j");
    }

    #[test]
    fn alpha_eq_respects_binder_structure() {
        // gen i: gen j: f[i]  vs  gen j: gen i: f[i] (inner var referenced) are different.
        let a = Expr::gen_(
            "i",
            I::Const(0),
            I::var("n"),
            Expr::gen_("j", I::Const(0), I::var("n"), f_at("i")),
        );
        let b = Expr::gen_(
            "j",
            I::Const(0),
            I::var("n"),
            Expr::gen_("i", I::Const(0), I::var("n"), f_at("i")),
        );
        assert!(!alpha_eq(&a, &b));
    }

    #[test]
    fn subst_avoids_capture() {
        // (sum j < 3: f[i + j])[i := j]  must not become  sum j < 3: f[j + j].
        let body = Expr::access(Expr::input("f"), I::add(I::var("i"), I::var("j")));
        let e = Expr::sum("j", I::Const(0), I::Const(3), body);
        let out = subst_index(&e, "i", &I::var("j"));
        let ExprKind::Sum { var, body, .. } = &out.kind else {
            panic!("expected a sum, got {out:?}");
        };
        assert_ne!(var, "j");
        let expected = Expr::access(Expr::input("f"), I::add(I::var("j"), I::var(var.clone())));
        assert_eq!(**body, expected);
    }

    #[test]
    fn subst_stops_at_shadowing_binder() {
        let e = Expr::gen_("i", I::Const(0), I::var("i"), f_at("i"));
        let out = subst_index(&e, "i", &I::Const(7));
        // The bound is outside the binder's scope and is substituted; the body is not.
        let expected = Expr::gen_("i", I::Const(0), I::Const(7), f_at("i"));
        assert_eq!(out, expected);
    }

    #[test]
    fn tensor_subst_avoids_index_capture() {
        // let x = ... in gen i: x  with x := f[i] (free i) must rename the gen binder.
        let e = Expr::gen_("i", I::Const(0), I::var("n"), Expr::var("x"));
        let out = subst_tensor(&e, "x", &f_at("i"));
        let ExprKind::Gen { var, body, .. } = &out.kind else {
            panic!("expected gen");
        };
        assert_ne!(var, "i");
        assert_eq!(**body, f_at("i"));
    }

    #[test]
    fn name_supply_numbers_names() {
        let mut s = NameSupply::new(["i".to_string(), "i1".to_string()]);
        assert_eq!(s.fresh("i"), "i2");
        assert_eq!(s.fresh("i3"), "i3");
        assert_eq!(s.fresh("j"), "j");
        assert_eq!(s.fresh("j"), "j1");
    }
}

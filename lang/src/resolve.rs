//! Name resolution: surface AST to core IR.
//!
//! Checks every name against its scope and sort (sizes and binders are integers; inputs,
//! definitions and `let`s are tensors), nests multi-binder heads, desugars `i < n` and
//! `e[i, j]`, and renames binders so that each is unique within its definition and
//! distinct from every declared name. All problems are reported, not only the first;
//! a definition with errors is left out of the IR, and definitions that use it are left
//! out silently (their only problem is the one already reported).

use std::collections::{HashMap, HashSet};

use crate::ast::{self, File, Item, SExpr, SExprKind, SIndex, SIndexKind, SPred, SPredKind};
use crate::diag::Diagnostic;
use crate::index::{IndexExpr, Pred};
use crate::ir::{
    Assume, Def, Derive, Expr, ExprKind, IndexArray, InputDecl, NameSupply, Program, SizeDecl,
    SparseDecl,
};
use crate::span::Span;

/// What a global name denotes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Global {
    Size,
    Input,
    /// An `int` input: its elements are read in index expressions (`pos[i]`).
    IndexArray,
    Def,
    Derive,
}

impl Global {
    fn describe(self) -> &'static str {
        match self {
            Global::Size => "a size",
            Global::Input => "an input tensor",
            Global::IndexArray => "an index array",
            Global::Def => "a definition",
            Global::Derive => "a derived definition",
        }
    }
}

#[derive(Clone, Debug)]
enum Local {
    /// A gen/sum binder, with its resolved (unique) name.
    Index(String),
    /// A let binder, with its resolved name.
    Tensor(String),
}

struct Resolver<'a> {
    /// Rename binders to unique names (off for the formatter, which keeps names as
    /// written).
    rename: bool,
    globals: HashMap<String, (Global, Span)>,
    /// Definitions that failed (to parse or resolve): references are not re-reported.
    broken: HashSet<String>,
    /// Definitions resolved so far, in order (a def may use only earlier ones).
    defined: HashSet<String>,
    diags: &'a mut Vec<Diagnostic>,
    /// Binders renamed: (resolved, written).
    renamed: Vec<(String, String)>,
}

fn suggestion<'n>(name: &str, candidates: impl Iterator<Item = &'n str>) -> Option<String> {
    // One-letter names are usually index variables: any other letter is "close", and
    // suggesting it would be noise.
    let len = name.chars().count();
    if len < 2 {
        return None;
    }
    let limit = (len + 1) / 3;
    crate::suggest::closest(name, candidates.filter(|c| c.chars().count() >= 2), limit)
        .map(|c| format!("did you mean `{c}`?"))
}

/// Converts an index expression whose names are all free variables (command-line
/// facts, standalone predicates). Metavariables are rejected.
pub fn lower_index_free(e: &SIndex) -> Result<IndexExpr, Diagnostic> {
    lower_index_with(e, &mut free_name, false)
}

/// Converts a predicate whose names are all free variables.
pub fn lower_pred_free(p: &SPred) -> Result<Pred, Diagnostic> {
    lower_pred_with(p, &mut free_name, false)
}

/// A name of a standalone index expression: a free variable; no index array has
/// values there.
fn free_name(name: &str, span: Span, at: Option<IndexExpr>) -> Result<IndexExpr, Diagnostic> {
    match at {
        None => Ok(IndexExpr::Var(name.to_string())),
        Some(_) => Err(Diagnostic::error(
            "E0312",
            format!("`{name}[…]` reads an index array, which has no values here"),
        )
        .at(span, "an element of an index array")
        .with_help("facts and conditions here are about sizes only")),
    }
}

/// Resolves a name of an index expression: `at` is `Some(index)` for an element of an
/// index array, `name[index]`.
type NameFn<'f> = dyn FnMut(&str, Span, Option<IndexExpr>) -> Result<IndexExpr, Diagnostic> + 'f;

fn lower_index_with(
    e: &SIndex,
    name: &mut NameFn<'_>,
    allow_meta: bool,
) -> Result<IndexExpr, Diagnostic> {
    Ok(match &e.kind {
        SIndexKind::Int(v) => IndexExpr::Const(*v),
        SIndexKind::Name(n) => name(n, e.span, None)?,
        SIndexKind::Load(array, at) => {
            let at = lower_index_with(at, name, allow_meta)?;
            name(&array.name, array.span, Some(at))?
        }
        SIndexKind::Meta(m) => {
            if !allow_meta {
                return Err(meta_error(m, e.span));
            }
            IndexExpr::Meta(m.clone())
        }
        SIndexKind::Paren(inner) => lower_index_with(inner, name, allow_meta)?,
        SIndexKind::Neg(inner) => match &inner.kind {
            // `-3` is the constant -3 (but `-(3)` is a negation, kept as written).
            SIndexKind::Int(v) => IndexExpr::Const(v.checked_neg().ok_or_else(|| {
                Diagnostic::error("E0203", "integer does not fit in 64 bits")
                    .at(e.span, "too large")
            })?),
            _ => IndexExpr::Neg(Box::new(lower_index_with(inner, name, allow_meta)?)),
        },
        SIndexKind::Bin(op, a, b) => {
            let a = lower_index_with(a, name, allow_meta)?;
            let b = lower_index_with(b, name, allow_meta)?;
            IndexExpr::bin(*op, a, b)
        }
    })
}

fn lower_pred_with(p: &SPred, name: &mut NameFn<'_>, allow_meta: bool) -> Result<Pred, Diagnostic> {
    Ok(match &p.kind {
        SPredKind::Bool(b) => Pred::Bool(*b),
        SPredKind::Cmp(op, a, b) => Pred::Cmp(
            *op,
            lower_index_with(a, name, allow_meta)?,
            lower_index_with(b, name, allow_meta)?,
        ),
        SPredKind::And(a, b) => Pred::and(
            lower_pred_with(a, name, allow_meta)?,
            lower_pred_with(b, name, allow_meta)?,
        ),
        SPredKind::Or(a, b) => Pred::or(
            lower_pred_with(a, name, allow_meta)?,
            lower_pred_with(b, name, allow_meta)?,
        ),
        SPredKind::Not(a) => Pred::not(lower_pred_with(a, name, allow_meta)?),
        SPredKind::Meta(m) => return Err(meta_error(m, p.span)),
    })
}

fn meta_error(name: &str, span: Span) -> Diagnostic {
    let shown = if name.is_empty() {
        "?".to_string()
    } else {
        format!("?{name}")
    };
    Diagnostic::error("E0308", format!("metavariable `{shown}` outside a rule"))
        .at(span, "metavariables only appear in rule patterns")
}

/// Errors collected while resolving one expression; resolution continues after an
/// error so that all of them are reported.
struct ExprCtx {
    supply: NameSupply,
    scope: Vec<(String, Local)>,
    failed: bool,
    /// Set when the expression uses a broken definition (no new diagnostic).
    tainted: bool,
}

impl Resolver<'_> {
    fn report(&mut self, ctx: &mut ExprCtx, d: Diagnostic) {
        ctx.failed = true;
        self.diags.push(d);
    }

    fn lookup_local<'c>(ctx: &'c ExprCtx, name: &str) -> Option<&'c Local> {
        ctx.scope
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, l)| l)
    }

    fn unknown(&self, name: &str, span: Span, scope: &[(String, Local)]) -> Diagnostic {
        let mut d =
            Diagnostic::error("E0305", format!("unknown name `{name}`")).at(span, "not declared");
        let candidates = self
            .globals
            .keys()
            .map(String::as_str)
            .chain(scope.iter().map(|(n, _)| n.as_str()));
        if let Some(s) = suggestion(name, candidates) {
            d = d.with_help(s);
        } else {
            d = d.with_help(
                "declare it with `size`, `input` or `def`, or bind it with `gen`, `sum` or `let`",
            );
        }
        d
    }

    /// Resolves a name in index position, or with `at`, an element `name[at]` of an
    /// index array.
    fn index_name(
        &mut self,
        ctx: &mut ExprCtx,
        name: &str,
        span: Span,
        at: Option<IndexExpr>,
    ) -> IndexExpr {
        if let Some(at) = at {
            return self.load(ctx, name, span, at);
        }
        if let Some((Global::IndexArray, decl)) = self.globals.get(name).copied()
            && Self::lookup_local(ctx, name).is_none()
        {
            let d = Diagnostic::error("E0303", format!("`{name}` is an index array, not an index"))
                .at(span, "used as an index here")
                .with_secondary(decl, "declared here")
                .with_help(format!("read one of its elements: `{name}[i]`"));
            self.report(ctx, d);
            return IndexExpr::Const(0);
        }
        match Self::lookup_local(ctx, name) {
            Some(Local::Index(r)) => return IndexExpr::Var(r.clone()),
            Some(Local::Tensor(_)) => {
                let d = Diagnostic::error("E0303", format!("`{name}` is a tensor, not an index"))
                    .at(span, "used as an index here")
                    .with_help(
                        "indices are integers built from sizes, binder variables and constants",
                    );
                self.report(ctx, d);
                return IndexExpr::Const(0);
            }
            None => {}
        }
        match self.globals.get(name) {
            Some((Global::Size, _)) => IndexExpr::Var(name.to_string()),
            Some((g, decl)) => {
                let d = Diagnostic::error(
                    "E0303",
                    format!("`{name}` is {}, not an index", g.describe()),
                )
                .at(span, "used as an index here")
                .with_secondary(*decl, "declared here")
                .with_help("indices are integers built from sizes, binder variables and constants");
                self.report(ctx, d);
                IndexExpr::Const(0)
            }
            None => {
                let d = self.unknown(name, span, &ctx.scope);
                self.report(ctx, d);
                IndexExpr::Const(0)
            }
        }
    }

    /// Resolves `name[at]`: `name` must be an index array (an `int` input).
    fn load(&mut self, ctx: &mut ExprCtx, name: &str, span: Span, at: IndexExpr) -> IndexExpr {
        let what = match Self::lookup_local(ctx, name) {
            Some(Local::Index(_)) => Some("an index variable".to_string()),
            Some(Local::Tensor(_)) => Some("a `let`-bound tensor".to_string()),
            None => match self.globals.get(name).copied() {
                Some((Global::IndexArray, _)) => None,
                Some((g, _)) => Some(g.describe().to_string()),
                None => {
                    let d = self.unknown(name, span, &ctx.scope);
                    self.report(ctx, d);
                    return IndexExpr::Const(0);
                }
            },
        };
        match what {
            None => IndexExpr::Load(name.to_string(), Box::new(at)),
            Some(what) => {
                let d = Diagnostic::error(
                    "E0312",
                    format!("`{name}` is {what}: only an index array can be read in an index"),
                )
                .at(span, "read as an index array here")
                .with_help("declare the array as `input NAME : int[EXTENT] in LO..HI`; a tensor's elements are reals, read them in an expression");
                self.report(ctx, d);
                IndexExpr::Const(0)
            }
        }
    }

    fn index(&mut self, ctx: &mut ExprCtx, e: &SIndex) -> IndexExpr {
        let result = {
            let mut f = |name: &str, span: Span, at: Option<IndexExpr>| {
                Ok(self.index_name(ctx, name, span, at))
            };
            lower_index_with(e, &mut f, false)
        };
        match result {
            Ok(v) => v,
            Err(d) => {
                self.report(ctx, d);
                IndexExpr::Const(0)
            }
        }
    }

    fn pred(&mut self, ctx: &mut ExprCtx, p: &SPred) -> Pred {
        let result = {
            let mut f = |name: &str, span: Span, at: Option<IndexExpr>| {
                Ok(self.index_name(ctx, name, span, at))
            };
            lower_pred_with(p, &mut f, false)
        };
        match result {
            Ok(v) => v,
            Err(d) => {
                self.report(ctx, d);
                Pred::Bool(true)
            }
        }
    }

    /// Declares a binder; reports clashes with sizes and tensors.
    fn bind(&mut self, ctx: &mut ExprCtx, var: &ast::Ident, local_index: bool) -> String {
        if let Some(meta) = var.name.strip_prefix('?') {
            let d = meta_error(meta, var.span);
            self.report(ctx, d);
        }
        if let Some((g, decl)) = self.globals.get(&var.name).copied() {
            let (code, what) = if g == Global::Size {
                ("E0306", "a size cannot be used as a binder")
            } else {
                ("E0307", "a binder cannot reuse the name of a declaration")
            };
            let d = Diagnostic::error(
                code,
                format!("`{}` is {} and cannot be rebound", var.name, g.describe()),
            )
            .at(var.span, what)
            .with_secondary(decl, "declared here")
            .with_help("pick another name for the binder");
            self.report(ctx, d);
        }
        let resolved = if self.rename {
            // Fresh for this definition and every global name (checked by lookup, not
            // by copying the globals into each definition's name supply).
            let globals = &self.globals;
            let fresh = ctx
                .supply
                .fresh_avoiding(&var.name, &|n| globals.contains_key(n));
            if fresh != var.name && !self.renamed.iter().any(|(r, _)| *r == fresh) {
                self.renamed.push((fresh.clone(), var.name.clone()));
            }
            fresh
        } else {
            var.name.clone()
        };
        let local = if local_index {
            Local::Index(resolved.clone())
        } else {
            Local::Tensor(resolved.clone())
        };
        ctx.scope.push((var.name.clone(), local));
        resolved
    }

    fn expr(&mut self, ctx: &mut ExprCtx, e: &SExpr) -> Expr {
        let span = e.span;
        let kind = match &e.kind {
            SExprKind::Num(v) => ExprKind::Lit(*v),
            SExprKind::Paren(inner) => return self.expr(ctx, inner),
            SExprKind::Meta(m) => {
                let d = meta_error(m, span);
                self.report(ctx, d);
                ExprKind::Lit(0.0)
            }
            SExprKind::Subst { var, .. } => {
                let d = Diagnostic::error(
                    "E0308",
                    format!("substitution `[{} := …]` outside a rule", var.name),
                )
                .at(
                    span,
                    "substitutions only appear on the right of rule patterns",
                );
                self.report(ctx, d);
                ExprKind::Lit(0.0)
            }
            SExprKind::Error => {
                ctx.failed = true;
                ExprKind::Lit(0.0)
            }
            SExprKind::Name(name) => self.tensor_name(ctx, name, span),
            SExprKind::Coord(index) => {
                let index = self.index(ctx, index);
                let mut arrays = std::collections::BTreeSet::new();
                index.collect_loads(&mut arrays);
                if let Some(array) = arrays.iter().next() {
                    let d = Diagnostic::error(
                        "E0312",
                        format!("`float(…)` reads the index array `{array}`"),
                    )
                    .at(span, "an index array's element used as a value")
                    .with_help(
                        "a value may be computed from sizes, binders and constants only; read index arrays in indices, bounds and guards",
                    );
                    self.report(ctx, d);
                    ExprKind::Lit(0.0)
                } else {
                    ExprKind::Coord(index)
                }
            }
            SExprKind::Bind {
                quantifier,
                binders,
                body,
            } => {
                // `gen i < n, j < m: e` is `gen i < n: gen j < m: e`.
                let depth = ctx.scope.len();
                let mut heads = Vec::new();
                for b in binders {
                    let (lo, hi) = match &b.range {
                        ast::SRange::Below(hi) => (IndexExpr::Const(0), self.index(ctx, hi)),
                        ast::SRange::Between(lo, hi) => (self.index(ctx, lo), self.index(ctx, hi)),
                    };
                    let var = self.bind(ctx, &b.var, true);
                    heads.push((var, lo, hi, b.span));
                }
                let mut out = self.expr(ctx, body);
                ctx.scope.truncate(depth);
                for (k, (var, lo, hi, bspan)) in heads.into_iter().enumerate().rev() {
                    let kind = match quantifier {
                        ast::Quantifier::Gen => ExprKind::Gen {
                            var,
                            lo,
                            hi,
                            body: Box::new(out),
                        },
                        ast::Quantifier::Sum => ExprKind::Sum {
                            var,
                            lo,
                            hi,
                            body: Box::new(out),
                        },
                        ast::Quantifier::Max => ExprKind::MaxRed {
                            var,
                            lo,
                            hi,
                            body: Box::new(out),
                        },
                    };
                    let node_span = if k == 0 {
                        span
                    } else {
                        bspan.to(Span::new(span.end, span.end))
                    };
                    out = Expr::new(kind, node_span);
                }
                return out;
            }
            SExprKind::Guard { pred, body } => {
                let pred = self.pred(ctx, pred);
                ExprKind::Guard {
                    pred,
                    body: Box::new(self.expr(ctx, body)),
                }
            }
            SExprKind::Let { var, value, body } => {
                let value = self.expr(ctx, value);
                let depth = ctx.scope.len();
                let name = self.bind(ctx, var, false);
                let body = self.expr(ctx, body);
                ctx.scope.truncate(depth);
                ExprKind::Let {
                    var: name,
                    value: Box::new(value),
                    body: Box::new(body),
                }
            }
            SExprKind::Access { tensor, indices } => {
                let mut out = self.expr(ctx, tensor);
                for i in indices {
                    let index = self.index(ctx, i);
                    let s = out.span.to(i.span);
                    out = Expr::new(
                        ExprKind::Access {
                            tensor: Box::new(out),
                            index,
                        },
                        s,
                    );
                }
                // The outermost access covers the closing bracket too.
                out.span = span;
                return out;
            }
            SExprKind::Neg(inner) => match &inner.kind {
                // `-1` is the literal -1; `-(1)` stays a negation.
                SExprKind::Num(v) => ExprKind::Lit(-v),
                _ => ExprKind::Neg(Box::new(self.expr(ctx, inner))),
            },
            SExprKind::Binary { op, lhs, rhs } => ExprKind::Binary {
                op: *op,
                lhs: Box::new(self.expr(ctx, lhs)),
                rhs: Box::new(self.expr(ctx, rhs)),
            },
            SExprKind::Concat(a, b) => {
                ExprKind::Concat(Box::new(self.expr(ctx, a)), Box::new(self.expr(ctx, b)))
            }
            SExprKind::Call { name, cmp, args } => {
                let func = match cmp {
                    Some(op) => Some(crate::functions::ScalarFn::Select(*op)),
                    None => crate::functions::ScalarFn::from_name(&name.name),
                };
                let args: Vec<Expr> = args.iter().map(|a| self.expr(ctx, a)).collect();
                match func {
                    Some(func) if func.arity() == args.len() => ExprKind::Call { func, args },
                    Some(func) => {
                        let d = Diagnostic::error(
                            "E0311",
                            format!(
                                "`{}` takes {} argument{}, not {}",
                                func.name(),
                                func.arity(),
                                if func.arity() == 1 { "" } else { "s" },
                                args.len()
                            ),
                        )
                        .at(name.span, "called here");
                        self.report(ctx, d);
                        ExprKind::Lit(0.0)
                    }
                    None => {
                        let names: Vec<&str> = crate::functions::ScalarFn::named()
                            .map(|f| f.name())
                            .chain(["select"])
                            .collect();
                        let mut d = Diagnostic::error(
                            "E0311",
                            format!("`{}` is not a scalar function", name.name),
                        )
                        .at(name.span, "called here");
                        d = match suggestion(&name.name, names.iter().copied()) {
                            Some(s) => d.with_help(s),
                            None => d.with_help(format!(
                                "the scalar functions are {}, and select(a > b, x, y)",
                                names[..names.len() - 1].join(", ")
                            )),
                        };
                        self.report(ctx, d);
                        ExprKind::Lit(0.0)
                    }
                }
            }
            SExprKind::Transpose(a) => ExprKind::Transpose(Box::new(self.expr(ctx, a))),
            SExprKind::Flatten(a) => ExprKind::Flatten(Box::new(self.expr(ctx, a))),
            SExprKind::Amount { op, amount, arg } => ExprKind::Amount {
                op: *op,
                amount: self.index(ctx, amount),
                arg: Box::new(self.expr(ctx, arg)),
            },
        };
        Expr::new(kind, span)
    }

    fn tensor_name(&mut self, ctx: &mut ExprCtx, name: &str, span: Span) -> ExprKind {
        match Self::lookup_local(ctx, name) {
            Some(Local::Tensor(r)) => return ExprKind::Var(r.clone()),
            // A coordinate written where a scalar is expected is its value (`x * x`).
            Some(Local::Index(_)) => {
                return ExprKind::Coord(self.index_name(ctx, name, span, None));
            }
            None => {}
        }
        match self.globals.get(name).copied() {
            Some((Global::Input, _)) => ExprKind::Input(name.to_string()),
            Some((Global::IndexArray, decl)) => {
                let d = Diagnostic::error(
                    "E0312",
                    format!("`{name}` is an index array, used here as a tensor"),
                )
                .at(span, "its elements are integers, not reals")
                .with_secondary(decl, "declared here")
                .with_help(format!(
                    "read its elements in indices, bounds and guards: `v[{name}[p]]`, `sum p in {name}[i]..{name}[i + 1]: …`"
                ));
                self.report(ctx, d);
                ExprKind::Lit(0.0)
            }
            Some((Global::Def, decl)) | Some((Global::Derive, decl)) => {
                if self.broken.contains(name) {
                    ctx.tainted = true;
                    return ExprKind::Lit(0.0);
                }
                if !self.defined.contains(name) {
                    let d = Diagnostic::error(
                        "E0309",
                        format!("`{name}` is used before its definition"),
                    )
                    .at(span, "used here")
                    .with_secondary(decl, "defined here")
                    .with_help("a definition may only use definitions above it (no recursion)");
                    self.report(ctx, d);
                    return ExprKind::Lit(0.0);
                }
                ExprKind::DefRef(name.to_string())
            }
            // So is a size (`1.0 / n`).
            Some((Global::Size, _)) => ExprKind::Coord(self.index_name(ctx, name, span, None)),
            None => {
                if self.broken.contains(name) {
                    ctx.tainted = true;
                    return ExprKind::Lit(0.0);
                }
                let d = self.unknown(name, span, &ctx.scope);
                self.report(ctx, d);
                ExprKind::Lit(0.0)
            }
        }
    }

    fn new_ctx(&self) -> ExprCtx {
        ExprCtx {
            supply: NameSupply::default(),
            scope: Vec::new(),
            failed: false,
            tainted: false,
        }
    }

    /// The facts of an `int` input (`int[n + 1] in 0..nnz + 1 sorted`): one dimension,
    /// the `int` keyword, a range of values over the sizes (what makes its elements
    /// usable as indices: the prover and the access checks rely on it).
    /// The layout of input `name` of shape `dims`: each dimension one mode with its
    /// declared extent, and the strides a dense permutation (E0315 otherwise). The
    /// storage order is found from the innermost out: the dimension of stride 1, then
    /// the one whose stride is the extent times stride of the last found, and so on,
    /// strides compared as polynomials over the sizes.
    fn input_layout(
        &mut self,
        name: &ast::Ident,
        dims: &[IndexExpr],
        index_array: Option<&Option<IndexArray>>,
        decl: &ast::LayoutAst,
    ) -> Option<crate::ir::InputLayout> {
        let usage = "give one mode per dimension with the declared extents, and strides that are the products of the extents stored after each: `layout (M, K):(1, M)` stores `A : [M, K]` column-major";
        let problem = |message: String| {
            Diagnostic::error("E0315", message)
                .at(decl.span, "this layout")
                .with_help(usage.to_string())
        };
        if matches!(index_array, Some(Some(_))) {
            self.diags.push(problem(format!(
                "the index array `{}` has a layout; index arrays are stored as they are declared",
                name.name
            )));
            return None;
        }
        let rank = dims.len();
        if decl.extents.len() != rank || decl.strides.len() != rank {
            self.diags.push(problem(format!(
                "the layout of `{}` has {} extents and {} strides; `{}` has {rank} dimensions: one mode each",
                name.name,
                decl.extents.len(),
                decl.strides.len(),
                name.name
            )));
            return None;
        }
        let mut strides = Vec::new();
        for (d, (extent, stride)) in decl.extents.iter().zip(&decl.strides).enumerate() {
            let (extent, stride) = (self.size_index(extent)?, self.size_index(stride)?);
            if crate::poly::normalize(&extent) != crate::poly::normalize(&dims[d]) {
                self.diags.push(problem(format!(
                    "the layout gives dimension {d} of `{}` the extent `{extent}`; it is declared `{}`",
                    name.name, dims[d]
                )));
                return None;
            }
            strides.push(stride);
        }
        let mut order: Vec<usize> = Vec::new();
        let mut expected = IndexExpr::Const(1);
        while order.len() < rank {
            let next = (0..rank).find(|d| {
                !order.contains(d)
                    && crate::poly::normalize(&strides[*d]) == crate::poly::normalize(&expected)
            });
            let Some(d) = next else {
                self.diags.push(problem(format!(
                    "the layout of `{}` is not dense: no dimension has the stride `{}` (the extents times strides of the dimensions stored inside it)",
                    name.name,
                    crate::poly::normalize(&expected)
                )));
                return None;
            };
            expected = IndexExpr::mul(expected, dims[d].clone());
            order.push(d);
        }
        order.reverse();
        Some(crate::ir::InputLayout { strides, order })
    }

    fn index_array(
        &mut self,
        name: &ast::Ident,
        rank: usize,
        decl: &ast::IndexArrayAst,
    ) -> Option<IndexArray> {
        let problem = |message: String, span: Span, help: &str| {
            Diagnostic::error("E0313", message)
                .at(span, "in this declaration")
                .with_help(help.to_string())
        };
        let usage = "declare an index array as `input pos : int[n + 1] in 0..nnz + 1`, adding `sorted` when its values never decrease";
        if decl.int_span == name.span {
            self.diags.push(problem(
                format!(
                    "`{}` has a range of values or `sorted` but is not an `int` array",
                    name.name
                ),
                name.span,
                usage,
            ));
            return None;
        }
        if rank != 1 {
            self.diags.push(problem(
                format!(
                    "the index array `{}` has {rank} dimensions; index arrays have one",
                    name.name
                ),
                decl.int_span,
                usage,
            ));
            return None;
        }
        let Some((lo, hi)) = &decl.range else {
            self.diags.push(problem(
                format!(
                    "the index array `{}` declares no range for its values",
                    name.name
                ),
                decl.int_span,
                usage,
            ));
            return None;
        };
        let lo = self.size_index(lo)?;
        let hi = self.size_index(hi)?;
        Some(IndexArray {
            lo,
            hi,
            sorted: decl.sorted.is_some(),
        })
    }

    /// Index expressions at top level (assumes, input shapes) may mention sizes only.
    /// `sparse A : [rows, cols] as FORMAT(arrays…)`: checks the format and that each
    /// array is an input declared above, of the kind the format needs, and defines
    /// `A` as the matrix they encode (`crate::sparse::decompression`). Errors are
    /// E0314.
    fn sparse(
        &mut self,
        program: &Program,
        name: &ast::Ident,
        shape: &[SIndex],
        format: &ast::Ident,
        arrays: &[ast::Ident],
        span: Span,
    ) -> Option<(Def, SparseDecl)> {
        let dims: Vec<Option<IndexExpr>> = shape.iter().map(|d| self.size_index(d)).collect();
        let Some(fmt) = crate::sparse::format_named(&format.name) else {
            self.diags.push(
                Diagnostic::error("E0314", format!("unknown storage format `{}`", format.name))
                    .at(format.span, "not a format")
                    .with_help(format!(
                        "the formats: {} (e.g. `sparse A : [n, m] as csr(pos, crd, vals)`)",
                        crate::sparse::format_names()
                    )),
            );
            return None;
        };
        let dims: Vec<IndexExpr> = dims.into_iter().collect::<Option<_>>()?;
        if dims.len() != fmt.rank() {
            let extents: Vec<&str> = ["ROWS", "COLS", "DEPTH"][..fmt.rank().min(3)].to_vec();
            self.diags.push(
                Diagnostic::error(
                    "E0314",
                    format!(
                        "`{}` is stored as `{}`, which has {} dimensions, not {}",
                        name.name,
                        fmt.name,
                        fmt.rank(),
                        dims.len()
                    ),
                )
                .at(name.span, "declared here")
                .with_help({
                    let others: Vec<String> = crate::sparse::SPARSE_FORMATS
                        .iter()
                        .filter(|f| f.rank() == dims.len())
                        .map(|f| format!("`{}`", f.name))
                        .collect();
                    let declare = format!(
                        "declare it as `sparse {} : [{}] as {}(…)`",
                        name.name,
                        extents.join(", "),
                        fmt.name
                    );
                    if others.is_empty() {
                        declare
                    } else {
                        format!(
                            "{declare}, or store it in a format of {} dimensions: {}",
                            dims.len(),
                            others.join(", ")
                        )
                    }
                }),
            );
            return None;
        }
        let usage = || {
            let roles: Vec<&str> = fmt.arrays.iter().map(|(r, _)| *r).collect();
            format!("`{}({})`: {}", fmt.name, roles.join(", "), fmt.help)
        };
        if arrays.len() != fmt.arrays.len() {
            self.diags.push(
                Diagnostic::error(
                    "E0314",
                    format!(
                        "the format `{}` stores a tensor in {} arrays, and {} are given",
                        fmt.name,
                        fmt.arrays.len(),
                        arrays.len()
                    ),
                )
                .at(format.span, "this format")
                .with_help(usage()),
            );
            return None;
        }
        // The number of positions each compressed level stores (the extent of its
        // `crd`, every second index array; COO's the values' extent): the
        // declarations a help suggests, and the values COO sums over.
        let names: Vec<String> = arrays.iter().map(|a| a.name.clone()).collect();
        let extent_of = |a: &String| program.input(a).and_then(|v| v.shape.first().cloned());
        let nnz = extent_of(&names[names.len() - 1]);
        let stored: Vec<IndexExpr> = match fmt.storage {
            crate::sparse::Storage::Levels { .. } => {
                let crds: Vec<&String> =
                    names[..names.len() - 1].iter().skip(1).step_by(2).collect();
                crds.iter()
                    .enumerate()
                    .map(|(k, a)| {
                        extent_of(a).unwrap_or_else(|| {
                            IndexExpr::var(if k + 1 == crds.len() {
                                "nnz".to_string()
                            } else {
                                format!("nnz{}", k + 1)
                            })
                        })
                    })
                    .collect()
            }
            crate::sparse::Storage::Coordinates => {
                vec![nnz.clone().unwrap_or(IndexExpr::var("nnz"))]
            }
            crate::sparse::Storage::Blocks => {
                vec![nnz.clone().unwrap_or(IndexExpr::var("nb"))]
            }
        };
        // A blocked format's block extents: the values' trailing extents, constants.
        let blocked = fmt.storage == crate::sparse::Storage::Blocks;
        let block: Vec<i64> = match program.input(&names[names.len() - 1]) {
            Some(v) if blocked => v
                .shape
                .iter()
                .skip(1)
                .filter_map(IndexExpr::as_const)
                .collect(),
            _ => Vec::new(),
        };
        let expected = crate::sparse::declarations(fmt, &names, &dims, &stored, &block);
        let mut ok = true;
        for ((array, (role_name, role)), expected) in arrays.iter().zip(fmt.arrays).zip(&expected) {
            let decl = program.input(&array.name);
            let fits = match (decl, role) {
                (Some(d), crate::sparse::ArrayRole::Index) => {
                    d.index_array.is_some() && d.shape.len() == 1
                }
                (Some(d), crate::sparse::ArrayRole::Values) if blocked => {
                    d.index_array.is_none()
                        && d.shape.len() == 3
                        && block.len() == 2
                        && block.iter().all(|b| (1..=1 << 16).contains(b))
                }
                (Some(d), crate::sparse::ArrayRole::Values) => {
                    d.index_array.is_none() && d.shape.len() == 1
                }
                (None, _) => false,
            };
            if fits {
                continue;
            }
            ok = false;
            let what = match role {
                crate::sparse::ArrayRole::Index => "an index array",
                crate::sparse::ArrayRole::Values if blocked => {
                    "an input tensor `[nb, R, C]` whose block extents R and C are constants (1 to 65536)"
                }
                crate::sparse::ArrayRole::Values => "a one-dimensional input tensor",
            };
            let why = match (decl, self.globals.get(&array.name)) {
                (Some(_), _) => format!("`{}` is not {what}", array.name),
                (None, Some(_)) => format!("`{}` is not an input declared above", array.name),
                (None, None) => format!("`{}` is not declared", array.name),
            };
            self.diags.push(
                Diagnostic::error(
                    "E0314",
                    format!(
                        "{why}: the {role_name} array of a `{}` matrix is {what}",
                        fmt.name
                    ),
                )
                .at(array.span, "given here")
                .with_help(format!("declare it above this line as `{expected}`"))
                .with_note(usage()),
            );
        }
        if !ok {
            return None;
        }
        // Binders no declaration takes (the body mentions sizes and the arrays).
        let mut supply = NameSupply::new(self.globals.keys().cloned());
        let mut fresh = |base: &str| supply.fresh(base);
        let body = crate::sparse::decompression(
            fmt,
            &names,
            &dims,
            &nnz.unwrap_or(IndexExpr::Const(0)),
            &block,
            &mut fresh,
            span,
        );
        Some((
            Def {
                name: name.name.clone(),
                name_span: name.span,
                body: body.clone(),
                span,
                hints: Vec::new(),
                vector_width: None,
                storage: Vec::new(),
            },
            SparseDecl {
                name: name.name.clone(),
                format: fmt,
                shape: dims,
                arrays: names,
                block: block.iter().map(|&b| b as usize).collect(),
                body,
                span,
            },
        ))
    }

    /// The storages of one sparse matrix must differ in format (`unfold A as csc`
    /// names one) and in arrays (a file given for the matrix fills each storage's
    /// arrays; one array cannot hold two formats' contents). E0314 otherwise.
    fn distinct_storages(&mut self, name: &ast::Ident, storages: &[ast::SparseStorage]) -> bool {
        let mut ok = true;
        for (k, s) in storages.iter().enumerate() {
            let earlier = &storages[..k];
            if earlier.iter().any(|e| e.format.name == s.format.name) {
                ok = false;
                self.diags.push(
                    Diagnostic::error(
                        "E0314",
                        format!("`{}` is stored as `{}` twice", name.name, s.format.name),
                    )
                    .at(s.format.span, "a second storage in this format")
                    .with_help("each storage of a matrix has a format of its own: remove one"),
                );
            }
            for (j, a) in s.arrays.iter().enumerate() {
                let shared = earlier
                    .iter()
                    .any(|e| e.arrays.iter().any(|b| b.name == a.name))
                    || s.arrays[..j].iter().any(|b| b.name == a.name);
                if shared {
                    ok = false;
                    self.diags.push(
                        Diagnostic::error(
                            "E0314",
                            format!(
                                "the array `{}` is given twice in the storages of `{}`",
                                a.name, name.name
                            ),
                        )
                        .at(a.span, "given again here")
                        .with_help(
                            "each array holds one part of one storage: declare another input for this one",
                        ),
                    );
                    break;
                }
            }
        }
        ok
    }

    fn size_index(&mut self, e: &SIndex) -> Option<IndexExpr> {
        let mut ctx = self.new_ctx();
        let v = self.index(&mut ctx, e);
        if !ctx.failed && v.has_load() {
            self.diags.push(
                Diagnostic::error(
                    "E0312",
                    "an element of an index array where only sizes may appear",
                )
                .at(e.span, "depends on an index array's values")
                .with_help("shapes, value ranges and `assume`s are built from sizes and constants"),
            );
            return None;
        }
        (!ctx.failed).then_some(v)
    }
}

/// Resolves a parsed file into a program, appending diagnostics.
pub fn resolve(file: &File, diags: &mut Vec<Diagnostic>) -> Program {
    resolve_with(file, diags, true)
}

/// [`resolve`], optionally keeping binder names as written (`rename = false`: the
/// result may shadow names; only the formatter uses it).
pub fn resolve_with(file: &File, diags: &mut Vec<Diagnostic>, rename: bool) -> Program {
    let mut r = Resolver {
        rename,
        globals: HashMap::new(),
        broken: file.broken.iter().cloned().collect(),
        defined: HashSet::new(),
        diags,
        renamed: Vec::new(),
    };
    // Declarations first, so that misuse of a later-declared name gets a precise message.
    for item in &file.items {
        let names: Vec<(&ast::Ident, Global)> = match item {
            Item::Size(names, _) => names.iter().map(|n| (n, Global::Size)).collect(),
            Item::Input {
                name,
                index_array: None,
                ..
            } => vec![(name, Global::Input)],
            Item::Input { name, .. } => vec![(name, Global::IndexArray)],
            Item::Def { name, .. } | Item::Sparse { name, .. } => vec![(name, Global::Def)],
            Item::Derive { name, .. } => vec![(name, Global::Derive)],
            // Rule names live in their own namespace (the rule library's).
            Item::Assume(..) | Item::Rule(..) => vec![],
        };
        for (ident, g) in names {
            if let Some((prev, prev_span)) = r.globals.get(&ident.name).copied() {
                r.diags.push(
                    Diagnostic::error("E0301", format!("`{}` is declared twice", ident.name))
                        .at(ident.span, "declared again here")
                        .with_secondary(
                            prev_span,
                            format!("first declared here as {}", prev.describe()),
                        )
                        .with_help(
                            "every size, input, definition and derivation needs its own name",
                        ),
                );
                if matches!(g, Global::Def | Global::Derive) {
                    r.broken.insert(ident.name.clone());
                }
                continue;
            }
            r.globals.insert(ident.name.clone(), (g, ident.span));
        }
    }

    let mut program = Program::default();
    for item in &file.items {
        match item {
            Item::Size(names, _) => {
                for n in names {
                    if r.globals.get(&n.name).map(|(_, s)| *s) == Some(n.span) {
                        program.sizes.push(SizeDecl {
                            name: n.name.clone(),
                            span: n.span,
                        });
                    }
                }
            }
            Item::Assume(p, span) => {
                let mut ctx = r.new_ctx();
                let pred = r.pred(&mut ctx, p);
                if !ctx.failed {
                    program.assumes.push(Assume { pred, span: *span });
                }
            }
            Item::Input {
                name,
                shape,
                index_array,
                layout,
                span,
            } => {
                let dims: Vec<Option<IndexExpr>> = shape.iter().map(|d| r.size_index(d)).collect();
                let index_array = match index_array {
                    None => Some(None),
                    Some(decl) => r.index_array(name, shape.len(), decl).map(Some),
                };
                let layout = match (layout, dims.iter().all(Option::is_some)) {
                    (None, _) => Some(None),
                    (Some(l), true) => {
                        let dims: Vec<IndexExpr> = dims.iter().flatten().cloned().collect();
                        r.input_layout(name, &dims, index_array.as_ref(), l)
                            .map(Some)
                    }
                    (Some(_), false) => None,
                };
                if dims.iter().all(Option::is_some)
                    && let Some(index_array) = index_array
                    && let Some(layout) = layout
                    && r.globals.get(&name.name).map(|(_, s)| *s) == Some(name.span)
                {
                    program.inputs.push(InputDecl {
                        name: name.name.clone(),
                        shape: dims.into_iter().flatten().collect(),
                        index_array,
                        layout,
                        span: *span,
                    });
                }
            }
            Item::Def { name, body, span } => {
                let duplicate = r.globals.get(&name.name).map(|(_, s)| *s) != Some(name.span);
                let mut ctx = r.new_ctx();
                let ir = r.expr(&mut ctx, body);
                if ctx.failed || ctx.tainted || duplicate {
                    if !duplicate {
                        r.broken.insert(name.name.clone());
                    }
                    continue;
                }
                r.defined.insert(name.name.clone());
                program.defs.push(Def {
                    name: name.name.clone(),
                    name_span: name.span,
                    body: ir,
                    span: *span,
                    hints: Vec::new(),
                    vector_width: None,
                    storage: Vec::new(),
                });
            }
            Item::Derive {
                name,
                from,
                steps,
                span,
            } => {
                let duplicate = r.globals.get(&name.name).map(|(_, s)| *s) != Some(name.span);
                if duplicate {
                    continue;
                }
                let base_ok = match r.globals.get(&from.name).copied() {
                    Some((Global::Def | Global::Derive, decl)) => {
                        if r.broken.contains(&from.name) {
                            false
                        } else if r.defined.contains(&from.name) {
                            true
                        } else {
                            r.diags.push(
                                Diagnostic::error(
                                    "E0309",
                                    format!("`{}` is used before its definition", from.name),
                                )
                                .at(from.span, "derived from here")
                                .with_secondary(decl, "defined here")
                                .with_help(
                                    "a derivation may only start from a definition above it",
                                ),
                            );
                            false
                        }
                    }
                    Some((g, decl)) => {
                        r.diags.push(
                            Diagnostic::error(
                                "E0310",
                                format!(
                                    "cannot derive from `{}`: it is {}",
                                    from.name,
                                    g.describe()
                                ),
                            )
                            .at(from.span, "not a definition")
                            .with_secondary(decl, "declared here")
                            .with_help(
                                "`derive NAME from BASE` starts from a `def` or another derivation",
                            ),
                        );
                        false
                    }
                    None => {
                        if !r.broken.contains(&from.name) {
                            let d = r.unknown(&from.name, from.span, &[]);
                            r.diags.push(d);
                        }
                        false
                    }
                };
                if !base_ok {
                    r.broken.insert(name.name.clone());
                    continue;
                }
                r.defined.insert(name.name.clone());
                program.derives.push(Derive {
                    name: name.name.clone(),
                    name_span: name.span,
                    from: from.name.clone(),
                    from_span: from.span,
                    steps: steps.clone(),
                    span: *span,
                });
            }
            Item::Rule(rule) => program.rules.push(rule.clone()),
            Item::Sparse {
                name,
                shape,
                storages,
                span,
            } => {
                let duplicate = r.globals.get(&name.name).map(|(_, s)| *s) != Some(name.span);
                let resolved: Vec<Option<(Def, SparseDecl)>> = storages
                    .iter()
                    .map(|s| r.sparse(&program, name, shape, &s.format, &s.arrays, *span))
                    .collect();
                let distinct = r.distinct_storages(name, storages);
                match resolved.into_iter().collect::<Option<Vec<_>>>() {
                    Some(decls) if !duplicate && distinct => {
                        r.defined.insert(name.name.clone());
                        let mut decls = decls.into_iter();
                        if let Some((def, decl)) = decls.next() {
                            program.defs.push(def);
                            program.sparse.push(decl);
                        }
                        program.sparse.extend(decls.map(|(_, decl)| decl));
                    }
                    Some(_) if duplicate => {}
                    _ => {
                        if !duplicate {
                            r.broken.insert(name.name.clone());
                        }
                    }
                }
            }
        }
    }
    program.written_names = std::mem::take(&mut r.renamed);
    program
}

//! Export of rules (and of small concrete programs) as Rocq terms over the shallow
//! embedding of `proofs/rocq/Semantics.v`: `atl rules --export-rocq DIR`.
//!
//! Each rule becomes `Definition NAME_stmt : Prop := forall …, HYPS -> LHS == RHS`:
//!
//! - index metavariables are `Z`, predicate metavariables `bool`, expression
//!   metavariables tensors `T`; a metavariable whose scope (computed by the loader)
//!   contains binders is a function of those binders, in the scope's (sorted) order;
//! - every expression metavariable has a shape `sh_NAME : list Z` and is well-shaped
//!   (`WS`), because every subterm of a checked program is; a `shape(?v) = [?n, ..]`
//!   condition refines that shape to `n :: sh_v`;
//! - the left side's own well-formedness (operand shapes equal, ranks, amounts in
//!   range), which the interpreter's shape check guarantees of every matched program,
//!   and the rule's side conditions are hypotheses; nothing else is.
//!
//! Statements are generated, never written by hand, so that they cannot drift from the
//! rule files; the proofs beside them are hand-written.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use atl_lang::functions::{ScalarFn, comparison_ident};
use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_lang::ir::{AmountOp, BinOp, Expr, ExprKind};

use crate::rule::{Condition, Rule, Status, SubstValue, as_pred_meta};

/// Why a rule or program has no Rocq rendering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportError(pub String);

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

type R<T> = Result<T, ExportError>;

fn fail<T>(msg: impl Into<String>) -> R<T> {
    Err(ExportError(msg.into()))
}

/// Names of `Semantics.v`, the Rocq standard library and Rocq keywords that a
/// metavariable or binder must not shadow; such a name gets a trailing `_`.
const RESERVED: &[&str] = &[
    "T",
    "ix",
    "ext",
    "in_range",
    "inl",
    "inr",
    "cdiv",
    "dim0",
    "dim1",
    "shd",
    "stl",
    "scons",
    "sumn",
    "teq",
    "inb",
    "agree",
    "WS",
    "tl",
    "hd",
    "nth",
    "length",
    "firstn",
    "s_",
    "Z",
    "nat",
    "bool",
    "true",
    "false",
    "Prop",
    "Type",
    "Set",
    "as",
    "at",
    "cofix",
    "else",
    "end",
    "exists",
    "fix",
    "for",
    "forall",
    "fun",
    "if",
    "in",
    "is",
    "let",
    "match",
    "mod",
    "return",
    "then",
    "with",
    "of",
    "by",
    "using",
    "where",
    "struct",
    "Lit",
    "Add",
    "Sub",
    "Mul",
    "Neg",
    "Gen",
    "Sum",
    "Guard",
    "Acc",
    "Transpose",
    "Flatten",
    "Concat",
    "Split",
    "PadR",
    "PadL",
    "TruncR",
    "TruncL",
    "szero",
    "sone",
    "sadd",
    "smul",
    "ssub",
    "sopp",
    "sofz",
    "max",
    "min",
    "id",
    "S",
    "O",
    "nil",
    "cons",
    "list",
];

fn ident(name: &str) -> String {
    let base: String = name
        .trim_start_matches('?')
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if base.is_empty() || RESERVED.contains(&base.as_str()) || base.starts_with("sh_") {
        format!("{base}_")
    } else {
        base
    }
}

/// What a binder binds: an index (gen/sum) or a tensor (let).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum BinderKind {
    Index,
    Tensor,
}

/// What kind of thing a metavariable stands for.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum MetaKind {
    Index,
    Pred,
    Expr,
}

/// Translation state: how names render, and what is known of shapes.
struct Tr<'a> {
    /// Binder (with `?` for rules) → its Rocq term, while translating under it or
    /// inside a substitution that replaces it.
    env: HashMap<String, String>,
    /// Metavariable → the binders (with `?`) it is a function of, in order.
    scopes: HashMap<String, Vec<String>>,
    /// Expression metavariable → its shape term.
    meta_shape: HashMap<String, String>,
    /// Let binder / program input → the shape term of what it names.
    var_shape: HashMap<String, String>,
    substs: Option<&'a HashMap<String, crate::rule::SubstSpec>>,
    /// Size name → value (concrete programs only).
    sizes: &'a BTreeMap<String, i64>,
    /// Binders currently in scope (with `?` for rules).
    bound: Vec<String>,
    /// Well-formedness hypotheses collected while translating a left side.
    wf: Vec<String>,
    collect_wf: bool,
    /// Rule statements only: scalar division is an arbitrary binary function `sdiv`,
    /// and each scalar function an arbitrary function of its arity (see
    /// [`scalar_function`]), quantified in the statement (a rule that holds for every
    /// function holds for division, whatever it does at zero, and for `sqrt` whatever
    /// it does below zero). `None` for concrete programs, which have no ring semantics
    /// for them.
    functions: Option<BTreeSet<String>>,
    /// Rule statements only: a max-reduction occurs, so the statement quantifies over
    /// its function `smax` and start `sbot` and assumes what every max-reduction rule
    /// relies on (see [`MAX_REDUCTION_HYPOTHESES`]).
    max_reduction: bool,
}

/// What a rule statement with a max-reduction assumes of `MaxRed smax sbot` (Semantics.v):
/// `smax` is associative and commutative with `sbot` its identity, as the interpreter's
/// `max` (`a > b ? a : b`) is over the reals with `-inf` (bit for bit up to which of two
/// equal values, `+0` or `-0`, is kept). `smax` is also the value function `max` of a
/// rule that mentions both (the interpreter's max-reduction steps with it,
/// `atl_lang::functions::max_step`). `Refutations.v` shows the hypotheses satisfiable
/// (`sadd` and `szero` in any ring).
const MAX_REDUCTION_HYPOTHESES: [&str; 3] = [
    "(forall x y z : scalar, smax x (smax y z) = smax (smax x y) z)",
    "(forall x y : scalar, smax x y = smax y x)",
    "(forall x : scalar, smax sbot x = x)",
];

fn int(c: i64) -> String {
    if c < 0 {
        format!("({c})")
    } else {
        c.to_string()
    }
}

impl Tr<'_> {
    fn binder_term(&self, b: &str) -> String {
        self.env.get(b).cloned().unwrap_or_else(|| ident(b))
    }

    fn meta_app(&self, m: &str) -> String {
        let args = self.scopes.get(m).cloned().unwrap_or_default();
        let name = ident(m.strip_prefix("pred:").unwrap_or(m));
        if args.is_empty() {
            name
        } else {
            let args: Vec<String> = args.iter().map(|b| self.binder_term(b)).collect();
            format!("({name} {})", args.join(" "))
        }
    }

    fn index(&self, e: &IndexExpr) -> R<String> {
        Ok(match e {
            IndexExpr::Const(c) => int(*c),
            IndexExpr::Var(v) => match self.sizes.get(v) {
                Some(c) if !self.env.contains_key(v) => int(*c),
                _ => self.binder_term(v),
            },
            IndexExpr::Meta(m) => self.meta_app(m),
            IndexExpr::Load(array, _) => {
                return fail(format!(
                    "the index array `{array}` has no Rocq counterpart yet (concrete programs with loads are not exported)"
                ));
            }
            IndexExpr::Neg(a) => format!("(- {})", self.index(a)?),
            IndexExpr::Bin(op, a, b) => {
                let (a, b) = (self.index(a)?, self.index(b)?);
                match op {
                    IndexOp::Add => format!("({a} + {b})"),
                    IndexOp::Sub => format!("({a} - {b})"),
                    IndexOp::Mul => format!("({a} * {b})"),
                    IndexOp::Div => format!("({a} / {b})"),
                    IndexOp::Mod => format!("({a} mod {b})"),
                    IndexOp::CDiv => format!("(cdiv {a} {b})"),
                    IndexOp::Min => format!("(Z.min {a} {b})"),
                    IndexOp::Max => format!("(Z.max {a} {b})"),
                }
            }
        })
    }

    /// A predicate as a `bool` (inside guards).
    fn pred_bool(&self, p: &Pred) -> R<String> {
        if let Some(m) = as_pred_meta(p) {
            return Ok(self.meta_app(&format!("pred:{m}")));
        }
        Ok(match p {
            Pred::Bool(b) => b.to_string(),
            Pred::Cmp(op, a, b) => {
                let (a, b) = (self.index(a)?, self.index(b)?);
                match op {
                    CmpOp::Eq => format!("({a} =? {b})"),
                    CmpOp::Ne => format!("(negb ({a} =? {b}))"),
                    CmpOp::Lt => format!("({a} <? {b})"),
                    CmpOp::Le => format!("({a} <=? {b})"),
                    CmpOp::Gt => format!("({a} >? {b})"),
                    CmpOp::Ge => format!("({a} >=? {b})"),
                }
            }
            Pred::And(a, b) => format!("({} && {})", self.pred_bool(a)?, self.pred_bool(b)?),
            Pred::Or(a, b) => format!("({} || {})", self.pred_bool(a)?, self.pred_bool(b)?),
            Pred::Not(a) => format!("(negb {})", self.pred_bool(a)?),
        })
    }

    /// A predicate as a `Prop` (side conditions).
    fn pred_prop(&self, p: &Pred) -> R<String> {
        if let Some(m) = as_pred_meta(p) {
            return Ok(format!("{} = true", self.meta_app(&format!("pred:{m}"))));
        }
        Ok(match p {
            Pred::Bool(true) => "True".into(),
            Pred::Bool(false) => "False".into(),
            Pred::Cmp(op, a, b) => {
                let (a, b) = (self.index(a)?, self.index(b)?);
                let op = match op {
                    CmpOp::Eq => "=",
                    CmpOp::Ne => "<>",
                    CmpOp::Lt => "<",
                    CmpOp::Le => "<=",
                    CmpOp::Gt => ">",
                    CmpOp::Ge => ">=",
                };
                format!("{a} {op} {b}")
            }
            Pred::And(a, b) => format!("({}) /\\ ({})", self.pred_prop(a)?, self.pred_prop(b)?),
            Pred::Or(a, b) => format!("({}) \\/ ({})", self.pred_prop(a)?, self.pred_prop(b)?),
            Pred::Not(a) => format!("~ ({})", self.pred_prop(a)?),
        })
    }

    /// The base metavariable of a (possibly chained) substitution placeholder, with the
    /// binder terms the substitutions put in place.
    fn resolve_subst(&self, m: &str) -> R<(String, HashMap<String, String>)> {
        let Some(spec) = self.substs.and_then(|s| s.get(m)) else {
            return Ok((m.to_string(), HashMap::new()));
        };
        let value = match &spec.value {
            SubstValue::Index(k) => self.index(k)?,
            SubstValue::Expr(v) => self.meta_app(v),
        };
        let (base, mut map) = self.resolve_subst(&spec.meta)?;
        map.entry(spec.var.clone()).or_insert(value);
        Ok((base, map))
    }

    fn meta_expr(&self, m: &str) -> R<String> {
        let (base, map) = self.resolve_subst(m)?;
        let args = self.scopes.get(&base).cloned().unwrap_or_default();
        if args.is_empty() {
            return Ok(ident(&base));
        }
        let args: Vec<String> = args
            .iter()
            .map(|b| map.get(b).cloned().unwrap_or_else(|| self.binder_term(b)))
            .collect();
        Ok(format!("({} {})", ident(&base), args.join(" ")))
    }

    fn shape(&self, e: &Expr) -> R<String> {
        Ok(match &e.kind {
            ExprKind::Lit(_) | ExprKind::Coord(_) => "[]".into(),
            ExprKind::Input(n) | ExprKind::Var(n) => match self.var_shape.get(n) {
                Some(s) => s.clone(),
                None => return fail(format!("no shape known for `{n}`")),
            },
            ExprKind::DefRef(n) => return fail(format!("definition reference `{n}`")),
            ExprKind::Meta(m) => {
                let (base, _) = self.resolve_subst(m)?;
                match self.meta_shape.get(&base) {
                    Some(s) => s.clone(),
                    None => return fail(format!("no shape known for `?{base}`")),
                }
            }
            ExprKind::Gen { lo, hi, body, .. } => format!(
                "(ext {} {} :: {})",
                self.index(lo)?,
                self.index(hi)?,
                self.shape(body)?
            ),
            ExprKind::Sum { body, .. }
            | ExprKind::Guard { body, .. }
            | ExprKind::Let { body, .. } => self.shape(body)?,
            ExprKind::Access { tensor, .. } => format!("(tl {})", self.shape(tensor)?),
            ExprKind::Neg(a) => self.shape(a)?,
            ExprKind::Call { .. } | ExprKind::MaxRed { .. } => "[]".into(),
            ExprKind::Binary { op, lhs, .. } => match op {
                BinOp::Add | BinOp::Sub => self.shape(lhs)?,
                BinOp::Mul | BinOp::Div => "[]".into(),
            },
            ExprKind::Concat(a, b) => format!("(sh_concat {} {})", self.shape(a)?, self.shape(b)?),
            ExprKind::Transpose(a) => format!("(sh_swap {})", self.shape(a)?),
            ExprKind::Flatten(a) => format!("(sh_flat {})", self.shape(a)?),
            ExprKind::Amount { op, amount, arg } => {
                let f = match op {
                    AmountOp::Split => "sh_split",
                    AmountOp::PadL | AmountOp::PadR => "sh_pad",
                    AmountOp::TruncL | AmountOp::TruncR => "sh_trunc",
                };
                format!("({f} {} {})", self.index(amount)?, self.shape(arg)?)
            }
        })
    }

    fn hyp(&mut self, h: String) -> R<()> {
        if !self.collect_wf {
            return Ok(());
        }
        let toks = tokens(&h);
        if let Some(b) = self.bound.iter().find(|b| toks.contains(&ident(b))) {
            return fail(format!(
                "the well-formedness fact `{h}` depends on the binder `{b}`"
            ));
        }
        if !self.wf.contains(&h) {
            self.wf.push(h);
        }
        Ok(())
    }

    fn under<T>(&mut self, var: &str, f: impl FnOnce(&mut Self) -> R<T>) -> R<T> {
        let saved = self.env.remove(var);
        self.bound.push(var.to_string());
        let out = f(self);
        self.bound.pop();
        if let Some(s) = saved {
            self.env.insert(var.to_string(), s);
        }
        out
    }

    fn expr(&mut self, e: &Expr) -> R<String> {
        Ok(match &e.kind {
            ExprKind::Lit(v) => {
                if v.fract() != 0.0 || v.abs() > 1e9 {
                    return fail(format!("the literal {v} is not a small integer"));
                }
                match *v as i64 {
                    0 => "(Lit szero)".into(),
                    1 => "(Lit sone)".into(),
                    c => format!("(Lit (sofz {}))", int(c)),
                }
            }
            // The integer's value as a scalar (`sofz`, as for integer literals).
            ExprKind::Coord(index) => format!("(Lit (sofz {}))", self.index(index)?),
            ExprKind::Input(n) => format!("in_{}", ident(n)),
            ExprKind::Var(n) => self.binder_term(n),
            ExprKind::DefRef(n) => return fail(format!("definition reference `{n}`")),
            ExprKind::Meta(m) => self.meta_expr(m)?,
            ExprKind::Gen { var, lo, hi, body } | ExprKind::Sum { var, lo, hi, body } => {
                let (lo, hi) = (self.index(lo)?, self.index(hi)?);
                let body = self.under(var, |t| t.expr(body))?;
                let head = if matches!(e.kind, ExprKind::Gen { .. }) {
                    "Gen"
                } else {
                    "Sum"
                };
                format!("({head} {lo} {hi} (fun {} : Z => {body}))", ident(var))
            }
            ExprKind::Guard { pred, body } => {
                format!("(Guard {} {})", self.pred_bool(pred)?, self.expr(body)?)
            }
            ExprKind::Let { var, value, body } => {
                let v = self.expr(value)?;
                let sh = self.shape(value)?;
                self.var_shape.insert(var.clone(), sh);
                let b = self.under(var, |t| t.expr(body))?;
                format!("(let {} := {v} in {b})", ident(var))
            }
            ExprKind::Access { tensor, index } => {
                let sh = self.shape(tensor)?;
                self.hyp(format!("(1 <= length {sh})%nat"))?;
                format!("(Acc {} {})", self.expr(tensor)?, self.index(index)?)
            }
            ExprKind::Neg(a) => format!("(Neg {})", self.expr(a)?),
            // Like division: no ring operation, so an arbitrary function of the
            // function's arity, quantified in the statement. Rules that do not mention
            // scalar functions hold whatever a metavariable stands for, calls included.
            ExprKind::Call { func, args } => {
                let Some(functions) = &mut self.functions else {
                    return fail(format!(
                        "the scalar function `{func}` has no ring semantics"
                    ));
                };
                let (name, quantifier, head) = scalar_function(*func);
                functions.insert(quantifier);
                let mut terms = Vec::with_capacity(args.len());
                for a in args {
                    let sh = self.shape(a)?;
                    if sh != "[]" {
                        self.hyp(format!("{sh} = []"))?;
                    }
                    terms.push(self.expr(a)?);
                }
                format!("({head} {name} {})", terms.join(" "))
            }
            // `MaxRed` of Semantics.v takes the max function and the empty value as
            // arguments: arbitrary ones, quantified in the statement with the
            // hypotheses every max-reduction rule needs (MAX_REDUCTION_HYPOTHESES).
            ExprKind::MaxRed { var, lo, hi, body } => {
                let Some(functions) = &mut self.functions else {
                    return fail(format!(
                        "the max-reduction `max {var}` has no ring semantics"
                    ));
                };
                functions.insert("(smax : scalar -> scalar -> scalar)".to_string());
                functions.insert("(sbot : scalar)".to_string());
                self.max_reduction = true;
                let (lo, hi) = (self.index(lo)?, self.index(hi)?);
                let sh = self.under(var, |t| t.shape(body))?;
                if sh != "[]" {
                    self.under(var, |t| t.hyp(format!("{sh} = []")))?;
                }
                let body = self.under(var, |t| t.expr(body))?;
                format!(
                    "(MaxRed smax sbot {lo} {hi} (fun {} : Z => {body}))",
                    ident(var)
                )
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let (sa, sb) = (self.shape(lhs)?, self.shape(rhs)?);
                let head = match op {
                    BinOp::Add | BinOp::Sub => {
                        if sa != sb {
                            self.hyp(format!("{sa} = {sb}"))?;
                        }
                        if *op == BinOp::Add { "Add" } else { "Sub" }
                    }
                    BinOp::Mul => {
                        for s in [&sa, &sb] {
                            if s != "[]" {
                                self.hyp(format!("{s} = []"))?;
                            }
                        }
                        "Mul"
                    }
                    BinOp::Div => {
                        let Some(functions) = &mut self.functions else {
                            return fail("scalar division has no ring semantics");
                        };
                        functions.insert("(sdiv : scalar -> scalar -> scalar)".to_string());
                        for s in [&sa, &sb] {
                            if s != "[]" {
                                self.hyp(format!("{s} = []"))?;
                            }
                        }
                        "Fun2 sdiv"
                    }
                };
                format!("({head} {} {})", self.expr(lhs)?, self.expr(rhs)?)
            }
            ExprKind::Concat(a, b) => {
                let (sa, sb) = (self.shape(a)?, self.shape(b)?);
                self.hyp(format!("(1 <= length {sa})%nat"))?;
                self.hyp(format!("(1 <= length {sb})%nat"))?;
                self.hyp(format!("tl {sa} = tl {sb}"))?;
                format!("(Concat {sa} {sb} {} {})", self.expr(a)?, self.expr(b)?)
            }
            ExprKind::Transpose(a) | ExprKind::Flatten(a) => {
                let sa = self.shape(a)?;
                self.hyp(format!("(2 <= length {sa})%nat"))?;
                let head = if matches!(e.kind, ExprKind::Transpose(_)) {
                    "Transpose"
                } else {
                    "Flatten"
                };
                format!("({head} {sa} {})", self.expr(a)?)
            }
            ExprKind::Amount { op, amount, arg } => {
                let sa = self.shape(arg)?;
                let k = self.index(amount)?;
                self.hyp(format!("(1 <= length {sa})%nat"))?;
                self.hyp(format!("0 <= {k}"))?;
                let head = match op {
                    AmountOp::Split => {
                        self.hyp(format!("1 <= {k}"))?;
                        "Split"
                    }
                    AmountOp::PadL => "PadL",
                    AmountOp::PadR => "PadR",
                    AmountOp::TruncL | AmountOp::TruncR => {
                        self.hyp(format!("{k} <= dim0 {sa}"))?;
                        if *op == AmountOp::TruncL {
                            "TruncL"
                        } else {
                            "TruncR"
                        }
                    }
                };
                format!("({head} {sa} {k} {})", self.expr(arg)?)
            }
        })
    }
}

/// A scalar function in a rule statement: the name of the arbitrary function that
/// stands for it, its quantifier, and the Semantics.v head that applies it pointwise
/// (`Fun1`, `Fun2`, or `Choose` with a boolean function for `select`'s comparison).
fn scalar_function(func: ScalarFn) -> (String, String, &'static str) {
    match func {
        ScalarFn::Select(op) => {
            let name = format!("scmp_{}", comparison_ident(op));
            let quantifier = format!("({name} : scalar -> scalar -> bool)");
            (name, quantifier, "Choose")
        }
        f => {
            let name = format!("s{}", f.name());
            let (ty, head) = match f.arity() {
                1 => ("scalar -> scalar", "Fun1"),
                _ => ("scalar -> scalar -> scalar", "Fun2"),
            };
            let quantifier = format!("({name} : {ty})");
            (name, quantifier, head)
        }
    }
}

/// The identifier-like tokens of a Rocq term (to see which binders it mentions).
fn tokens(s: &str) -> BTreeSet<String> {
    s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

/// Kinds of binders and metavariables of a rule.
fn classify(rule: &Rule) -> (BTreeMap<String, BinderKind>, BTreeMap<String, MetaKind>) {
    let mut binders = BTreeMap::new();
    let mut metas = BTreeMap::new();
    fn idx(i: &IndexExpr, metas: &mut BTreeMap<String, MetaKind>) {
        match i {
            IndexExpr::Meta(m) => {
                metas.entry(m.clone()).or_insert(MetaKind::Index);
            }
            IndexExpr::Neg(a) => idx(a, metas),
            IndexExpr::Bin(_, a, b) => {
                idx(a, metas);
                idx(b, metas);
            }
            _ => {}
        }
    }
    fn pred(p: &Pred, metas: &mut BTreeMap<String, MetaKind>) {
        if let Some(m) = as_pred_meta(p) {
            metas.insert(m.to_string(), MetaKind::Pred);
            return;
        }
        match p {
            Pred::Cmp(_, a, b) => {
                idx(a, metas);
                idx(b, metas);
            }
            Pred::And(a, b) | Pred::Or(a, b) => {
                pred(a, metas);
                pred(b, metas);
            }
            Pred::Not(a) => pred(a, metas),
            Pred::Bool(_) => {}
        }
    }
    for side in [&rule.lhs, &rule.rhs] {
        side.walk(&mut |n| match &n.kind {
            ExprKind::Meta(m) if !rule.substs.contains_key(m) => {
                metas.insert(m.clone(), MetaKind::Expr);
            }
            ExprKind::Gen { var, lo, hi, .. }
            | ExprKind::Sum { var, lo, hi, .. }
            | ExprKind::MaxRed { var, lo, hi, .. } => {
                binders.insert(var.clone(), BinderKind::Index);
                idx(lo, &mut metas);
                idx(hi, &mut metas);
            }
            ExprKind::Let { var, .. } => {
                binders.insert(var.clone(), BinderKind::Tensor);
            }
            ExprKind::Guard { pred: p, .. } => pred(p, &mut metas),
            ExprKind::Access { index, .. } | ExprKind::Coord(index) => idx(index, &mut metas),
            ExprKind::Amount { amount, .. } => idx(amount, &mut metas),
            _ => {}
        });
    }
    for spec in rule.substs.values() {
        metas.insert(spec.meta.clone(), MetaKind::Expr);
        match &spec.value {
            SubstValue::Index(k) => idx(k, &mut metas),
            SubstValue::Expr(v) => {
                metas.insert(v.clone(), MetaKind::Expr);
            }
        }
    }
    // Placeholders chain to other placeholders; only real metavariables remain.
    metas.retain(|m, _| !rule.substs.contains_key(m));
    for c in &rule.conditions {
        match c {
            Condition::Pred { pred: p, .. } => pred(p, &mut metas),
            Condition::Shape { dims, .. } => {
                for d in dims {
                    idx(d, &mut metas);
                }
            }
        }
    }
    (binders, metas)
}

/// Escapes text for a Rocq comment.
fn comment(s: &str) -> String {
    s.replace("(*", "( *").replace("*)", "* )")
}

/// The Rocq statement of one rule: `Definition NAME_stmt : Prop := …`.
pub fn rule_statement(rule: &Rule) -> R<String> {
    let (binders, metas) = classify(rule);
    let no_sizes = BTreeMap::new();
    let scopes: HashMap<String, Vec<String>> = metas
        .iter()
        .map(|(m, kind)| {
            let key = match kind {
                MetaKind::Pred => format!("pred:{m}"),
                _ => m.clone(),
            };
            let scope: Vec<String> = rule
                .scopes
                .get(&key)
                .map(|s| s.iter().cloned().collect())
                .unwrap_or_default();
            (key, scope)
        })
        .collect();
    // A metavariable bound by a shape condition is a dimension of a matched tensor's
    // shape, which no binder can occur in, whatever its occurrences under binders on
    // the right say; a side condition is a fact at the rule's site, so a metavariable
    // it mentions must not depend on the rule's binders.
    let mut scopes = scopes;
    for c in &rule.conditions {
        let mut ms = BTreeMap::new();
        match c {
            Condition::Shape { dims, .. } => {
                for d in dims {
                    let mut found = BTreeSet::new();
                    crate::rule::metas_of(&Expr::access(Expr::input("_"), d.clone()), &mut found);
                    for m in found {
                        scopes.insert(m, Vec::new());
                    }
                }
            }
            Condition::Pred { pred, .. } => {
                let dummy = Expr::guard(pred.clone(), Expr::lit(0.0));
                let mut found = BTreeSet::new();
                crate::rule::metas_of(&dummy, &mut found);
                for m in found {
                    if scopes.get(&m).is_some_and(|s| !s.is_empty()) {
                        ms.insert(m, ());
                    }
                }
            }
        }
        if let Some(m) = ms.keys().next() {
            return fail(format!(
                "condition `{}` mentions `?{}`, which may depend on the rule's binders",
                c.name(),
                m.trim_start_matches("pred:")
            ));
        }
    }
    let mut tr = Tr {
        env: HashMap::new(),
        scopes,
        meta_shape: HashMap::new(),
        var_shape: HashMap::new(),
        substs: Some(&rule.substs),
        sizes: &no_sizes,
        bound: Vec::new(),
        wf: Vec::new(),
        collect_wf: false,
        functions: Some(BTreeSet::new()),
        max_reduction: false,
    };

    // Shapes of expression metavariables: refined by the first shape condition on them.
    let mut shape_vars = Vec::new();
    let mut shape_hyps = Vec::new();
    for (m, kind) in &metas {
        if *kind != MetaKind::Expr {
            continue;
        }
        let conds: Vec<(&Vec<IndexExpr>, bool)> = rule
            .conditions
            .iter()
            .filter_map(|c| match c {
                Condition::Shape {
                    meta, dims, open, ..
                } if meta == m => Some((dims, *open)),
                _ => None,
            })
            .collect();
        let var = format!("sh_{}", ident(m));
        let render = |dims: &Vec<IndexExpr>, open: bool, tail: &str| -> R<String> {
            let mut parts = Vec::new();
            for d in dims {
                parts.push(tr.index(d)?);
            }
            Ok(if open {
                parts.push(tail.to_string());
                format!("({})", parts.join(" :: "))
            } else {
                format!("[{}]", parts.join("; "))
            })
        };
        let shape = match conds.first() {
            Some((dims, open)) => {
                if *open {
                    shape_vars.push(var.clone());
                }
                render(dims, *open, &var)?
            }
            None => {
                shape_vars.push(var.clone());
                var.clone()
            }
        };
        for (dims, open) in conds.iter().skip(1) {
            let n = dims.len();
            let want = render(dims, false, "")?;
            shape_hyps.push(if *open {
                format!("firstn {n} {shape} = {want}")
            } else {
                format!("{shape} = {want}")
            });
        }
        tr.meta_shape.insert(m.clone(), shape);
    }

    // Let binders: the shape of their value (from the left side, else the right).
    for side in [&rule.rhs, &rule.lhs] {
        let mut lets = Vec::new();
        side.walk(&mut |n| {
            if let ExprKind::Let { var, value, .. } = &n.kind {
                lets.push((var.clone(), (**value).clone()));
            }
        });
        for (var, value) in lets {
            let sh = tr.shape(&value)?;
            tr.var_shape.insert(var, sh);
        }
    }

    // Quantified variables.
    let binder_ty = |b: &str| match binders.get(b) {
        Some(BinderKind::Tensor) => "T",
        _ => "Z",
    };
    let mut quants = Vec::new();
    let mut ws = Vec::new();
    for (m, kind) in &metas {
        let key = if *kind == MetaKind::Pred {
            format!("pred:{m}")
        } else {
            m.clone()
        };
        let scope = tr.scopes.get(&key).cloned().unwrap_or_default();
        let result = match kind {
            MetaKind::Index => "Z",
            MetaKind::Pred => "bool",
            MetaKind::Expr => "T",
        };
        let mut ty: Vec<&str> = scope.iter().map(|b| binder_ty(b)).collect();
        ty.push(result);
        quants.push(format!("({} : {})", ident(m), ty.join(" -> ")));
        if *kind == MetaKind::Expr {
            let Some(sh) = tr.meta_shape.get(m) else {
                return fail(format!("no shape known for `?{m}`"));
            };
            let app = tr.meta_app(m);
            if scope.is_empty() {
                ws.push(format!("WS {sh} {app}"));
            } else {
                let mut head = String::from("forall");
                let mut premises = Vec::new();
                for b in &scope {
                    head.push_str(&format!(" ({} : {})", ident(b), binder_ty(b)));
                    if binder_ty(b) == "T" {
                        match tr.var_shape.get(b) {
                            Some(vs) => premises.push(format!("WS {vs} {}", ident(b))),
                            None => return fail(format!("no shape known for `{b}`")),
                        }
                    }
                }
                premises.push(format!("WS {sh} {app}"));
                ws.push(format!("({head}, {})", premises.join(" -> ")));
            }
        }
    }
    for v in &shape_vars {
        quants.push(format!("({v} : list Z)"));
    }

    tr.collect_wf = true;
    let lhs = tr.expr(&rule.lhs)?;
    tr.collect_wf = false;
    let rhs = tr.expr(&rule.rhs)?;
    let wf = std::mem::take(&mut tr.wf);
    quants.extend(tr.functions.iter().flatten().map(|f| f.to_string()));

    let mut conds = Vec::new();
    for c in &rule.conditions {
        if let Condition::Pred { pred, .. } = c {
            conds.push(tr.pred_prop(pred)?);
        }
    }

    let mut out = String::new();
    out.push_str(&format!(
        "(** {}\n    [{}] *)\n",
        comment(&rule.doc),
        comment(&rule.statement())
    ));
    out.push_str(&format!("Definition {}_stmt : Prop :=\n", rule.name));
    if !quants.is_empty() {
        out.push_str(&format!("  forall {},\n", quants.join(" ")));
    }
    // Grouped and labelled, so that a reader sees where each hypothesis comes from.
    let max_hyps: Vec<String> = if tr.max_reduction {
        MAX_REDUCTION_HYPOTHESES
            .iter()
            .map(|h| h.to_string())
            .collect()
    } else {
        Vec::new()
    };
    let groups: [(&str, Vec<&String>); 4] = [
        (
            "the max-reduction's function: associative, commutative, sbot its identity",
            max_hyps.iter().collect(),
        ),
        (
            "well-shaped metavariables",
            ws.iter().chain(&shape_hyps).collect(),
        ),
        ("the left side is well-formed", wf.iter().collect()),
        ("side conditions", conds.iter().collect()),
    ];
    for (label, hyps) in groups {
        if hyps.is_empty() {
            continue;
        }
        out.push_str(&format!("  (* {label} *)\n"));
        for h in hyps {
            out.push_str(&format!("  {h} ->\n"));
        }
    }
    out.push_str(&format!("  {lhs} ==\n  {rhs}.\n"));
    Ok(out)
}

/// The Rocq module name of the statements of a rule file (`guard.rules` → `Rules_guard`).
pub fn statements_module(file: &str) -> String {
    format!("Rules_{}", module_part(file))
}

/// The Rocq module name of the hand-written proofs of a rule file.
pub fn proofs_module(file: &str) -> String {
    format!("Proofs_{}", module_part(file))
}

fn module_part(file: &str) -> String {
    file.trim_end_matches(".rules")
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// One generated file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportFile {
    pub name: String,
    pub contents: String,
}

const HEADER: &str = "(* Generated by `atl rules --export-rocq proofs/rocq` from the rule files. Do not edit: *)\n(* regenerate, and CI checks that the committed copy is current. *)\n";

/// The header of the statements of the refuted rules of `rewrites/test_data/wrong.rules`.
pub const WRONG_HEADER: &str = "(* Generated from rewrites/test_data/wrong.rules by rewrites/tests/rocq.rs. Do not edit: *)\n(* ATL_UPDATE_ROCQ=1 cargo test -p atl-rewrites --test rocq regenerates it. *)\n";

/// The statements of the rules of one rule file (`Rules_NAME.v`), with `header` and
/// the file's path `source` in comments.
pub fn statements_file(header: &str, source: &str, rules: &[&Rule]) -> R<ExportFile> {
    let file = source.rsplit('/').next().unwrap_or(source);
    let mut text = format!(
        "{header}(* Statements of {source}. *)\n\nFrom Coq Require Import ZArith List Bool.\nFrom ATL Require Import Semantics.\nImport ListNotations.\nOpen Scope Z_scope.\nOpen Scope tensor_scope.\n\nSection Statements.\nContext {{K : Scalar}}.\n"
    );
    for r in rules {
        let stmt = rule_statement(r)
            .map_err(|e| ExportError(format!("rule `{}` ({}): {e}", r.name, r.origin)))?;
        text.push('\n');
        text.push_str(&stmt);
    }
    text.push_str("\nEnd Statements.\n");
    Ok(ExportFile {
        name: format!("{}.v", statements_module(file)),
        contents: text,
    })
}

/// The statements of every rule, one file per rule file, and `All.v`, which collects the
/// theorems of the rules marked `status: proved` (so a missing proof fails to compile)
/// and prints their assumptions.
pub fn export(files: &[(String, Vec<&Rule>)]) -> R<Vec<ExportFile>> {
    let mut out = Vec::new();
    let mut proved = Vec::new();
    let mut imports = Vec::new();
    for (file, rules) in files {
        out.push(statements_file(
            HEADER,
            &format!("rules/library/{file}"),
            rules,
        )?);
        proved.extend(
            rules
                .iter()
                .filter(|r| r.status == Status::Proved)
                .map(|r| r.name.clone()),
        );
        imports.push(proofs_module(file));
    }
    let mut all = format!(
        "{HEADER}(* Every rule marked `status: proved`, for every commutative ring and at the reals. *)\n\nFrom ATL Require Import Semantics Instances.\nFrom ATL Require {}.\n",
        imports.join(" ")
    );
    let qualified = |name: &str| -> String {
        let file = files
            .iter()
            .find(|(_, rs)| rs.iter().any(|r| r.name == name))
            .map(|(f, _)| f.as_str())
            .unwrap_or_default();
        format!("{}.{name}", proofs_module(file))
    };
    let stmt_of = |name: &str, k: &str| -> String {
        let file = files
            .iter()
            .find(|(_, rs)| rs.iter().any(|r| r.name == name))
            .map(|(f, _)| f.as_str())
            .unwrap_or_default();
        format!("@{}.{name}_stmt {k}", statements_module(file))
    };
    if proved.is_empty() {
        all.push_str("\nDefinition proved_rules (K : Scalar) : Prop := True.\nTheorem proved_rules_hold : forall K : Scalar, proved_rules K.\nProof. intros; exact I. Qed.\n");
    } else {
        all.push_str(&format!(
            "From ATL Require {}.\n\n(* {} rules. *)\nDefinition proved_rules (K : Scalar) : Prop :=\n",
            files
                .iter()
                .map(|(f, _)| statements_module(f))
                .collect::<Vec<_>>()
                .join(" "),
            proved.len()
        ));
        let conj: Vec<String> = proved
            .iter()
            .map(|n| format!("  ({})", stmt_of(n, "K")))
            .collect();
        all.push_str(&conj.join(" /\\\n"));
        all.push_str(".\n\nTheorem proved_rules_hold : forall K : Scalar, proved_rules K.\nProof.\n  intros K. unfold proved_rules.\n");
        for (k, n) in proved.iter().enumerate() {
            if k + 1 < proved.len() {
                all.push_str(&format!("  split; [exact (@{} K) |].\n", qualified(n)));
            } else {
                all.push_str(&format!("  exact (@{} K).\n", qualified(n)));
            }
        }
        all.push_str("Qed.\n");
    }
    all.push_str("\nTheorem proved_rules_real : proved_rules RScalar.\nProof. exact (proved_rules_hold RScalar). Qed.\n\nPrint Assumptions proved_rules_hold.\nPrint Assumptions proved_rules_real.\n");
    out.push(ExportFile {
        name: "All.v".into(),
        contents: all,
    });
    Ok(out)
}

/// [`export`] of a library, grouped by the standard library's rule files (a rule's
/// origin is `FILE:LINE`).
pub fn export_library(lib: &crate::Library) -> R<Vec<ExportFile>> {
    let files: Vec<(String, Vec<&Rule>)> = crate::library::RULE_FILES
        .iter()
        .map(|(file, _)| {
            let prefix = format!("{file}:");
            let rules = lib
                .rules()
                .iter()
                .filter(|r| r.origin.starts_with(&prefix))
                .collect();
            (file.to_string(), rules)
        })
        .collect();
    export(&files)
}

/// A concrete program's definition body as a Rocq tensor term, with the sizes
/// substituted and each input `NAME` referring to a Rocq definition `in_NAME` of the
/// given shape. Used by the semantic agreement test.
pub fn program_term(
    body: &Expr,
    sizes: &BTreeMap<String, i64>,
    inputs: &BTreeMap<String, Vec<i64>>,
) -> R<String> {
    let mut tr = Tr {
        env: HashMap::new(),
        scopes: HashMap::new(),
        meta_shape: HashMap::new(),
        var_shape: inputs
            .iter()
            .map(|(n, sh)| {
                let dims: Vec<String> = sh.iter().map(|d| int(*d)).collect();
                (n.clone(), format!("[{}]", dims.join("; ")))
            })
            .collect(),
        substs: None,
        sizes,
        bound: Vec::new(),
        wf: Vec::new(),
        collect_wf: false,
        functions: None,
        max_reduction: false,
    };
    tr.expr(body)
}

/// The Rocq identifier a program input is bound to by [`program_term`].
pub fn input_ident(name: &str) -> String {
    format!("in_{}", ident(name))
}

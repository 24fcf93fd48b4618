//! Rules as data: loading `*.rules` files into checked [`Rule`]s.
//!
//! A rule file is a sequence of rules, each introduced by its one-line equation comment:
//!
//! ```text
//! # get_gen: an in-bounds access into a generator is its body at that index.
//! get_gen: (gen ?i in ?lo..?hi: ?e)[?k] => ?e[?i := ?k]
//!   if lower: ?lo <= ?k
//!   if upper: ?k < ?hi
//!   grade: exact
//!   example: gen j < 3: (gen i < 4: f[i] * 2)[j + 1] => gen j < 3: f[j + 1] * 2
//! ```
//!
//! - The header is `NAME: LHS => RHS` or `NAME(?k, …): LHS => RHS`; the parenthesized
//!   metavariables are *parameters*: they occur on one side only and are supplied by
//!   `with k := …` when that side is the result.
//! - Patterns are ATL with metavariables: `?e` in expression position, `?k` in index
//!   position, `?i` in binder position (`gen ?i < ?n: …`, `let ?x = …`), and on the
//!   right `?e[?i := ?k]` (capture-avoiding substitution).
//! - `if NAME: PRED` side conditions (index predicates over the metavariables) are proved
//!   by the solver under the context of the site; `if NAME: shape(?v) = [?n, ?m, ..]`
//!   binds or checks dimensions of a matched expression.
//! - `grade: exact` (the same floating-point result) or `real` (equal over the reals).
//! - `example: START => RESULT`: applying the rule (first match) to START gives RESULT,
//!   in the example environment of [`EXAMPLE_PRELUDE`].
//!
//! Scoping is structural (DESIGN §4.1): a metavariable may mention only the binders in
//! scope at every one of its occurrences, on both sides; the matcher enforces it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use atl_lang::ast::{SExpr, SExprKind, SIndex, SIndexKind, SPred, SPredKind};
use atl_lang::diag::Diagnostic;
use atl_lang::index::{IndexExpr, Pred};
use atl_lang::ir::{Expr, ExprKind};
use atl_lang::span::Span;

/// Declarations every rule example is checked in.
pub const EXAMPLE_PRELUDE: &str = "size n, m\ninput f : [n]\ninput v : [n]\ninput g : [n, m]\ninput h : [m, n]\ninput u : [m]\ninput t : [n, m, 3]\ninput s : []\n";

/// Whether a rule preserves floating-point results exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Grade {
    /// Same floating-point result (loop interchange of gens, let inlining, …).
    Exact,
    /// Equal over the reals; may change rounding (reassociating a sum, distributivity).
    Real,
}

/// How a rule's soundness is established (shown by `atl rules`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// `status: proved`: a Rocq theorem about its exported statement exists in
    /// `proofs/rocq` (a test holds the library to it).
    Proved,
    /// `status: checked -- REASON`, or no status line: only the examples and bounded
    /// semantic testing vouch for the rule; the reason says why there is no proof.
    Checked(Option<String>),
}

/// A side condition of a rule.
#[derive(Clone, Debug)]
pub enum Condition {
    /// An index predicate over metavariables, proved under the site's context.
    Pred { name: String, pred: Pred },
    /// `shape(?v) = [d0, d1, ..]`: each listed dimension of the matched `?v` is bound
    /// (if the dimension is an unbound index metavariable) or checked equal.
    Shape {
        name: String,
        meta: String,
        dims: Vec<IndexExpr>,
        /// `..` at the end: more dimensions may follow.
        open: bool,
    },
}

impl Condition {
    /// The condition as written in a rule file, without its name: a predicate,
    /// `?p`, or `shape(?v) = [?n, ..]`.
    pub fn text(&self) -> String {
        match self {
            Condition::Pred { pred, .. } => match as_pred_meta(pred) {
                Some(m) => format!("?{m}"),
                None => {
                    // A predicate metavariable inside a compound condition prints as
                    // written (`?p`), not as its encoding.
                    let mut text = pred.to_string();
                    let mut metas = BTreeSet::new();
                    metas_of(&Expr::guard(pred.clone(), Expr::lit(0.0)), &mut metas);
                    for m in metas.iter().filter_map(|m| m.strip_prefix("pred:")) {
                        text = text.replace(&format!("?pred:{m} == ?pred:{m}"), &format!("?{m}"));
                    }
                    text
                }
            },
            Condition::Shape {
                meta, dims, open, ..
            } => {
                let mut parts: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
                if *open {
                    parts.push("..".into());
                }
                format!("shape(?{meta}) = [{}]", parts.join(", "))
            }
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Condition::Pred { name, .. } | Condition::Shape { name, .. } => name,
        }
    }
}

/// Predicate metavariables (`[?p] * ?e`) are encoded inside `Pred` as the comparison
/// `?p == ?p` on a reserved index metavariable name, so that the language's predicate
/// type needs no pattern-only variant. Only this crate builds and reads the encoding.
pub fn pred_meta(name: &str) -> Pred {
    let m = IndexExpr::Meta(format!("pred:{name}"));
    Pred::Cmp(atl_lang::index::CmpOp::Eq, m.clone(), m)
}

/// The name of an encoded predicate metavariable.
pub fn as_pred_meta(p: &Pred) -> Option<&str> {
    match p {
        Pred::Cmp(atl_lang::index::CmpOp::Eq, IndexExpr::Meta(a), IndexExpr::Meta(b)) if a == b => {
            a.strip_prefix("pred:")
        }
        _ => None,
    }
}

/// What a substitution puts in place of the variable.
#[derive(Clone, Debug)]
pub enum SubstValue {
    /// `?e[?i := k]` for an index binder.
    Index(IndexExpr),
    /// `?b[?x := ?v]` for a `let` binder: the expression metavariable `?v`.
    Expr(String),
}

/// A substitution occurrence on a rule side: `?e[?i := k]`, stored out of line and
/// referred to by a placeholder metavariable in the pattern.
#[derive(Clone, Debug)]
pub struct SubstSpec {
    pub meta: String,
    /// The binder metavariable (with its `?`), as it appears as a variable in patterns.
    pub var: String,
    pub value: SubstValue,
}

#[derive(Clone, Debug)]
pub struct Example {
    pub start: String,
    pub result: String,
    /// `with NAME := VALUE` instantiations for the rule's parameters.
    pub with: Vec<(String, String)>,
    pub line: usize,
}

/// A loaded, validated rule.
#[derive(Clone, Debug)]
pub struct Rule {
    pub name: String,
    /// The one-line equation comment.
    pub doc: String,
    /// The header as written (`LHS => RHS`), for display.
    pub equation: String,
    pub lhs: Expr,
    pub rhs: Expr,
    pub params: Vec<String>,
    pub conditions: Vec<Condition>,
    pub substs: HashMap<String, SubstSpec>,
    pub grade: Grade,
    pub status: Status,
    pub examples: Vec<Example>,
    /// For each expression or index metavariable, the binder metavariables it may
    /// mention (those in scope at every occurrence).
    pub scopes: HashMap<String, BTreeSet<String>>,
    /// File and line, for messages.
    pub origin: String,
}

impl Rule {
    /// The rule's statement as one line: equation, side conditions and grade. Two rules
    /// with the same statement mean the same thing.
    pub fn statement(&self) -> String {
        let mut s = format!(
            "{}{}: {}",
            self.name,
            if self.params.is_empty() {
                String::new()
            } else {
                format!(
                    "({})",
                    self.params
                        .iter()
                        .map(|p| format!("?{p}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            },
            self.equation
        );
        for c in &self.conditions {
            s.push_str(&format!(" if {}: {}", c.name(), c.text()));
        }
        s.push_str(match self.grade {
            Grade::Exact => " grade: exact",
            Grade::Real => " grade: real",
        });
        s
    }
}

/// Converts a rule-side pattern from the surface AST. Binder metavariables become IR
/// variables spelled with their `?`, so that substitution and renaming treat them as
/// ordinary bound variables; expression metavariables become `ExprKind::Meta`, index
/// metavariables `IndexExpr::Meta`.
struct PatternBuilder<'a> {
    substs: &'a mut HashMap<String, SubstSpec>,
    next_subst: &'a mut usize,
    /// Binder metavariables in scope (with `?`).
    scope: Vec<String>,
    /// Every metavariable occurrence: name → scopes seen.
    occurrences: &'a mut BTreeMap<String, Vec<BTreeSet<String>>>,
    binders: &'a mut BTreeSet<String>,
    /// Binder metavariables bound by `let` (the others are index binders).
    let_binders: &'a mut BTreeSet<String>,
}

fn err(span: Span, msg: impl Into<String>) -> Diagnostic {
    Diagnostic::error("E0701", msg).at(span, "in this pattern")
}

impl PatternBuilder<'_> {
    fn note(&mut self, meta: &str) {
        let scope: BTreeSet<String> = self.scope.iter().cloned().collect();
        self.occurrences
            .entry(meta.to_string())
            .or_default()
            .push(scope);
    }

    fn index(&mut self, e: &SIndex) -> Result<IndexExpr, Diagnostic> {
        Ok(match &e.kind {
            SIndexKind::Int(v) => IndexExpr::Const(*v),
            SIndexKind::Name(n) => {
                return Err(err(
                    e.span,
                    format!("`{n}`: names in rule patterns are metavariables, written `?{n}`"),
                ));
            }
            SIndexKind::Meta(m) => {
                let binder = format!("?{m}");
                if self.scope.contains(&binder) {
                    IndexExpr::Var(binder)
                } else if m.is_empty() {
                    return Err(err(
                        e.span,
                        "anonymous `?` is only allowed in `around` patterns",
                    ));
                } else {
                    self.note(m);
                    IndexExpr::Meta(m.clone())
                }
            }
            SIndexKind::Load(array, _) => {
                return Err(err(
                    e.span,
                    format!(
                        "`{}[…]`: rule patterns cannot name an index array; a metavariable `?i` matches any index, loads included",
                        array.name
                    ),
                ));
            }
            SIndexKind::Paren(inner) => self.index(inner)?,
            SIndexKind::Neg(inner) => match &inner.kind {
                SIndexKind::Int(v) => IndexExpr::Const(-v),
                _ => IndexExpr::Neg(Box::new(self.index(inner)?)),
            },
            SIndexKind::Bin(op, a, b) => IndexExpr::bin(*op, self.index(a)?, self.index(b)?),
        })
    }

    fn pred(&mut self, p: &SPred) -> Result<Pred, Diagnostic> {
        Ok(match &p.kind {
            SPredKind::Bool(b) => Pred::Bool(*b),
            SPredKind::Cmp(op, a, b) => Pred::Cmp(*op, self.index(a)?, self.index(b)?),
            SPredKind::And(a, b) => Pred::and(self.pred(a)?, self.pred(b)?),
            SPredKind::Or(a, b) => Pred::or(self.pred(a)?, self.pred(b)?),
            SPredKind::Not(a) => Pred::not(self.pred(a)?),
            SPredKind::Meta(m) => {
                self.note(&format!("pred:{m}"));
                pred_meta(m)
            }
        })
    }

    fn binder(&mut self, name: &str, span: Span) -> Result<String, Diagnostic> {
        if !name.starts_with('?') || name.len() < 2 {
            return Err(err(
                span,
                format!("binder `{name}` in a rule pattern must be a metavariable like `?i`"),
            ));
        }
        self.binders.insert(name.to_string());
        Ok(name.to_string())
    }

    fn expr(&mut self, e: &SExpr) -> Result<Expr, Diagnostic> {
        let kind = match &e.kind {
            SExprKind::Num(v) => ExprKind::Lit(*v),
            SExprKind::Paren(inner) => return self.expr(inner),
            SExprKind::Name(n) => {
                return Err(err(
                    e.span,
                    format!("`{n}`: names in rule patterns are metavariables, written `?{n}`"),
                ));
            }
            SExprKind::Meta(m) => {
                let binder = format!("?{m}");
                if self.scope.contains(&binder) {
                    // A let-bound metavariable used in the let's body.
                    ExprKind::Var(binder)
                } else if m.is_empty() {
                    return Err(err(
                        e.span,
                        "anonymous `?` is only allowed in `around` patterns",
                    ));
                } else {
                    self.note(m);
                    ExprKind::Meta(m.clone())
                }
            }
            SExprKind::Bind {
                quantifier,
                binders,
                body,
            } => {
                let depth = self.scope.len();
                let mut heads = Vec::new();
                for b in binders {
                    let (lo, hi) = match &b.range {
                        atl_lang::ast::SRange::Below(hi) => (IndexExpr::Const(0), self.index(hi)?),
                        atl_lang::ast::SRange::Between(lo, hi) => {
                            (self.index(lo)?, self.index(hi)?)
                        }
                    };
                    let var = self.binder(&b.var.name, b.var.span)?;
                    self.scope.push(var.clone());
                    heads.push((var, lo, hi));
                }
                let mut out = self.expr(body)?;
                self.scope.truncate(depth);
                for (var, lo, hi) in heads.into_iter().rev() {
                    out = match quantifier {
                        atl_lang::ast::Quantifier::Gen => Expr::gen_(var, lo, hi, out),
                        atl_lang::ast::Quantifier::Sum => Expr::sum(var, lo, hi, out),
                        atl_lang::ast::Quantifier::Max => Expr::max_red(var, lo, hi, out),
                    };
                }
                return Ok(out);
            }
            SExprKind::Guard { pred, body } => ExprKind::Guard {
                pred: self.pred(pred)?,
                body: Box::new(self.expr(body)?),
            },
            SExprKind::Let { var, value, body } => {
                let value = self.expr(value)?;
                let name =
                    self.binder(&format!("?{}", var.name.trim_start_matches('?')), var.span)?;
                if !var.name.starts_with('?') {
                    return Err(err(
                        var.span,
                        "a `let` in a rule pattern binds a metavariable like `?x`",
                    ));
                }
                self.let_binders.insert(name.clone());
                self.scope.push(name.clone());
                let body = self.expr(body)?;
                self.scope.pop();
                ExprKind::Let {
                    var: name,
                    value: Box::new(value),
                    body: Box::new(body),
                }
            }
            SExprKind::Access { tensor, indices } => {
                let mut out = self.expr(tensor)?;
                for i in indices {
                    out = Expr::access(out, self.index(i)?);
                }
                return Ok(out);
            }
            SExprKind::Neg(inner) => match &inner.kind {
                SExprKind::Num(v) => ExprKind::Lit(-v),
                _ => ExprKind::Neg(Box::new(self.expr(inner)?)),
            },
            SExprKind::Binary { op, lhs, rhs } => ExprKind::Binary {
                op: *op,
                lhs: Box::new(self.expr(lhs)?),
                rhs: Box::new(self.expr(rhs)?),
            },
            SExprKind::Concat(a, b) => {
                ExprKind::Concat(Box::new(self.expr(a)?), Box::new(self.expr(b)?))
            }
            SExprKind::Call { name, cmp, args } => {
                let func = match cmp {
                    Some(op) => atl_lang::functions::ScalarFn::Select(*op),
                    None => {
                        atl_lang::functions::ScalarFn::from_name(&name.name).ok_or_else(|| {
                            err(
                                name.span,
                                format!("`{}` is not a scalar function", name.name),
                            )
                        })?
                    }
                };
                if func.arity() != args.len() {
                    return Err(err(
                        name.span,
                        format!("`{}` takes {} arguments", func.name(), func.arity()),
                    ));
                }
                ExprKind::Call {
                    func,
                    args: args
                        .iter()
                        .map(|a| self.expr(a))
                        .collect::<Result<_, _>>()?,
                }
            }
            SExprKind::Transpose(a) => ExprKind::Transpose(Box::new(self.expr(a)?)),
            SExprKind::Flatten(a) => ExprKind::Flatten(Box::new(self.expr(a)?)),
            SExprKind::Coord(index) => ExprKind::Coord(self.index(index)?),
            SExprKind::Amount { op, amount, arg } => ExprKind::Amount {
                op: *op,
                amount: self.index(amount)?,
                arg: Box::new(self.expr(arg)?),
            },
            SExprKind::Subst { body, var, value } => {
                if !self.binders.contains(&var.name) {
                    return Err(err(
                        var.span,
                        format!("`{}` is not a binder metavariable of this rule", var.name),
                    ));
                }
                // The substituted variable is in scope inside the substituted term.
                self.scope.push(var.name.clone());
                let meta = match &body.kind {
                    SExprKind::Meta(meta) if !meta.is_empty() => {
                        self.note(meta);
                        meta.clone()
                    }
                    // Chained substitutions `?e[?i := a][?j := b]`.
                    SExprKind::Subst { .. } => match self.expr(body)?.kind {
                        ExprKind::Meta(placeholder) => placeholder,
                        _ => unreachable!("a substitution converts to a placeholder"),
                    },
                    _ => {
                        self.scope.pop();
                        return Err(err(
                            e.span,
                            "substitution applies to a metavariable: `?e[?i := k]`",
                        ));
                    }
                };
                self.scope.pop();
                let value = if self.let_binders.contains(&var.name) {
                    match &value.kind {
                        SIndexKind::Meta(v) if !v.is_empty() => {
                            self.note(v);
                            SubstValue::Expr(v.clone())
                        }
                        _ => {
                            return Err(err(
                                value.span,
                                "a `let` variable is replaced by an expression metavariable: `?b[?x := ?v]`",
                            ));
                        }
                    }
                } else {
                    SubstValue::Index(self.index(value)?)
                };
                let placeholder = format!("subst{}", *self.next_subst);
                *self.next_subst += 1;
                self.substs.insert(
                    placeholder.clone(),
                    SubstSpec {
                        meta,
                        var: var.name.clone(),
                        value,
                    },
                );
                return Ok(Expr::new(ExprKind::Meta(placeholder), e.span));
            }
            SExprKind::Error => return Err(err(e.span, "malformed pattern")),
        };
        Ok(Expr::new(kind, e.span))
    }
}

/// A pattern used to select a site (`around (PATTERN)`): metavariables and `?` match
/// anything; other names must be those of the program (inputs, definitions, sizes) or
/// binder names, which match any binder.
pub fn site_pattern(e: &SExpr) -> Result<Expr, Diagnostic> {
    fn conv(e: &SExpr) -> Result<Expr, Diagnostic> {
        let kind = match &e.kind {
            SExprKind::Num(v) => ExprKind::Lit(*v),
            SExprKind::Paren(inner) => return conv(inner),
            SExprKind::Name(n) => ExprKind::Input(n.clone()),
            SExprKind::Meta(m) => ExprKind::Meta(if m.is_empty() {
                "_".to_string()
            } else {
                m.clone()
            }),
            SExprKind::Bind {
                quantifier,
                binders,
                body,
            } => {
                let mut out = conv(body)?;
                for b in binders.iter().rev() {
                    let idx = |x: &SIndex| atl_lang::resolve::lower_index_free(x);
                    let (lo, hi) = match &b.range {
                        atl_lang::ast::SRange::Below(hi) => (IndexExpr::Const(0), idx(hi)?),
                        atl_lang::ast::SRange::Between(lo, hi) => (idx(lo)?, idx(hi)?),
                    };
                    out = match quantifier {
                        atl_lang::ast::Quantifier::Gen => {
                            Expr::gen_(b.var.name.clone(), lo, hi, out)
                        }
                        atl_lang::ast::Quantifier::Sum => {
                            Expr::sum(b.var.name.clone(), lo, hi, out)
                        }
                        atl_lang::ast::Quantifier::Max => {
                            Expr::max_red(b.var.name.clone(), lo, hi, out)
                        }
                    };
                }
                return Ok(out);
            }
            _ => {
                return Err(Diagnostic::error(
                    "E0702",
                    "an `around` pattern is a name, a `gen`/`sum` head or a metavariable",
                )
                .at(e.span, "unsupported in `around`")
                .with_help("for example `around (gen i < n: ?)`"));
            }
        };
        Ok(Expr::new(kind, e.span))
    }
    conv(e)
}

/// Metavariable names (without `?`) of a pattern, in expression and index positions.
pub fn metas_of(e: &Expr, out: &mut BTreeSet<String>) {
    fn idx(i: &IndexExpr, out: &mut BTreeSet<String>) {
        match i {
            IndexExpr::Meta(m) => {
                out.insert(m.clone());
            }
            IndexExpr::Neg(a) => idx(a, out),
            IndexExpr::Bin(_, a, b) => {
                idx(a, out);
                idx(b, out);
            }
            _ => {}
        }
    }
    fn pred(p: &Pred, out: &mut BTreeSet<String>) {
        match p {
            Pred::Cmp(_, a, b) => {
                idx(a, out);
                idx(b, out);
            }
            Pred::And(a, b) | Pred::Or(a, b) => {
                pred(a, out);
                pred(b, out);
            }
            Pred::Not(a) => pred(a, out),
            Pred::Bool(_) => {}
        }
    }
    e.walk(&mut |n| match &n.kind {
        ExprKind::Meta(m) => {
            out.insert(m.clone());
        }
        ExprKind::Gen { lo, hi, .. }
        | ExprKind::Sum { lo, hi, .. }
        | ExprKind::MaxRed { lo, hi, .. } => {
            idx(lo, out);
            idx(hi, out);
        }
        ExprKind::Guard { pred: p, .. } => pred(p, out),
        ExprKind::Access { index, .. } | ExprKind::Coord(index) => idx(index, out),
        ExprKind::Amount { amount, .. } => idx(amount, out),
        _ => {}
    });
}

/// The position of `=>` at bracket depth 0.
fn split_arrow(text: &str) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut depth = 0i32;
    for k in 0..bytes.len().saturating_sub(1) {
        match bytes[k] {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b'=' if depth == 0
                && bytes[k + 1] == b'>'
                && (k == 0
                    || bytes[k - 1] != b'>'
                        && bytes[k - 1] != b'<'
                        && bytes[k - 1] != b'='
                        && bytes[k - 1] != b'!') =>
            {
                return Some((k, k + 2));
            }
            _ => {}
        }
    }
    None
}

/// Parses a pattern snippet located at `offset` in the rule file, shifting spans.
fn parse_snippet(text: &str, offset: usize) -> Result<SExpr, Diagnostic> {
    atl_lang::parser::parse_expr_str(text).map_err(|ds| {
        shift(
            ds.into_iter()
                .next()
                .unwrap_or_else(|| Diagnostic::error("E0701", "cannot parse")),
            offset,
        )
    })
}

/// Maps the spans of a diagnostic about `text.replace('?', "META_")` back to `text`
/// (each `?` became five bytes), so that it points at what was written.
fn unmeta_spans(mut d: Diagnostic, text: &str) -> Diagnostic {
    let back = |pos: usize| {
        let mut replaced = 0;
        for (k, c) in text.char_indices() {
            if replaced >= pos {
                return k;
            }
            replaced += if c == '?' { 5 } else { c.len_utf8() };
        }
        text.len()
    };
    for l in d.primary.iter_mut().chain(d.secondary.iter_mut()) {
        l.span = Span::new(back(l.span.start), back(l.span.end));
    }
    d
}

fn shift(mut d: Diagnostic, offset: usize) -> Diagnostic {
    if let Some(l) = &mut d.primary {
        l.span = Span::new(l.span.start + offset, l.span.end + offset);
    }
    for l in &mut d.secondary {
        l.span = Span::new(l.span.start + offset, l.span.end + offset);
    }
    d
}

/// Loads every rule of one file. Diagnostics point into `source`; a malformed rule is
/// reported and left out, the others load.
pub fn load_rules(source: &str, file_name: &str) -> (Vec<Rule>, Vec<Diagnostic>) {
    let mut rules = Vec::new();
    let mut diags = Vec::new();
    // Split into blocks: a header line starts at column 0 and is not a comment.
    let mut offset = 0;
    let mut lines: Vec<(usize, usize, &str)> = Vec::new(); // (line number, offset, text)
    for (n, line) in source.split_inclusive('\n').enumerate() {
        lines.push((n + 1, offset, line.trim_end_matches(['\n', '\r'])));
        offset += line.len();
    }
    let mut k = 0;
    let mut last_comment: Option<(usize, &str)> = None;
    while k < lines.len() {
        let (line_no, off, text) = lines[k];
        if text.trim().is_empty() {
            k += 1;
            continue;
        }
        if text.starts_with('#') {
            last_comment = Some((line_no, text));
            k += 1;
            continue;
        }
        if text.starts_with([' ', '\t']) {
            diags.push(
                Diagnostic::error("E0703", "indented line outside a rule")
                    .at(Span::new(off, off + text.len()), "not part of any rule")
                    .with_help("a rule starts with `NAME: LHS => RHS` at the start of a line"),
            );
            k += 1;
            continue;
        }
        let mut body = Vec::new();
        let mut j = k + 1;
        while j < lines.len()
            && (lines[j].2.starts_with([' ', '\t']) || lines[j].2.trim().is_empty())
        {
            if !lines[j].2.trim().is_empty() {
                body.push(lines[j]);
            }
            j += 1;
        }
        let doc = match last_comment {
            Some((n, c)) if n + 1 == line_no => Some(c.trim_start_matches('#').trim().to_string()),
            _ => None,
        };
        match load_one(lines[k], &body, doc, file_name) {
            Ok(rule) => {
                if rules.iter().any(|r: &Rule| r.name == rule.name) {
                    diags.push(
                        Diagnostic::error(
                            "E0704",
                            format!("rule `{}` is defined twice", rule.name),
                        )
                        .at(Span::new(off, off + text.len()), "second definition"),
                    );
                } else {
                    rules.push(rule);
                }
            }
            Err(d) => diags.push(d),
        }
        last_comment = None;
        k = j;
    }
    (rules, diags)
}

/// Loads one rule from its header line and indented body lines, each given as (line
/// number, byte offset in the file, text); `doc` is its equation comment. Used by
/// [`load_rules`] and by the rewrite engine for the `rule` items of a program file.
pub fn load_one(
    header: (usize, usize, &str),
    body: &[(usize, usize, &str)],
    doc: Option<String>,
    file_name: &str,
) -> Result<Rule, Diagnostic> {
    let (line_no, off, text) = header;
    let whole = Span::new(off, off + text.len());
    let colon = text.find(':').ok_or_else(|| {
        Diagnostic::error("E0705", "a rule header is `NAME: LHS => RHS`")
            .at(whole, "no `:` after the rule name")
    })?;
    let head = text[..colon].trim();
    let (name, params) = match head.find('(') {
        Some(p) if head.ends_with(')') => {
            let params: Vec<String> = head[p + 1..head.len() - 1]
                .split(',')
                .map(|x| x.trim().trim_start_matches('?').to_string())
                .filter(|x| !x.is_empty())
                .collect();
            (head[..p].trim().to_string(), params)
        }
        _ => (head.to_string(), Vec::new()),
    };
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(
            Diagnostic::error("E0705", format!("`{name}` is not a rule name"))
                .at(whole, "rule names are letters, digits and `_`"),
        );
    }
    let doc = doc.ok_or_else(|| {
        Diagnostic::error("E0706", format!("rule `{name}` has no equation comment"))
            .at(whole, "expected a `# …` line just above")
            .with_help(format!(
                "write `# {name}: what the equation says` on the line before"
            ))
    })?;
    let equation_text = &text[colon + 1..];
    let eq_off = off + colon + 1;
    let (arrow_start, arrow_end) = split_arrow(equation_text).ok_or_else(|| {
        Diagnostic::error("E0705", "a rule header is `NAME: LHS => RHS`").at(whole, "no `=>`")
    })?;
    let lhs_s = parse_snippet(&equation_text[..arrow_start], eq_off)?;
    let rhs_s = parse_snippet(&equation_text[arrow_end..], eq_off + arrow_end)?;

    let mut substs = HashMap::new();
    let mut next_subst = 0;
    let mut occurrences = BTreeMap::new();
    let mut binders = BTreeSet::new();
    let mut let_binders = BTreeSet::new();
    let mut builder = PatternBuilder {
        substs: &mut substs,
        next_subst: &mut next_subst,
        scope: Vec::new(),
        occurrences: &mut occurrences,
        binders: &mut binders,
        let_binders: &mut let_binders,
    };
    // The snippets' spans are relative to the snippets: shift them into the file.
    let (lhs_off, rhs_off) = (eq_off, eq_off + arrow_end);
    let lhs = builder.expr(&lhs_s).map_err(|d| shift(d, lhs_off))?;
    if !builder.substs.is_empty() {
        return Err(shift(
            Diagnostic::error(
                "E0707",
                "substitution `?e[?i := k]` may only appear on the right",
            )
            .at(lhs_s.span, "left side"),
            lhs_off,
        ));
    }
    let rhs = builder.expr(&rhs_s).map_err(|d| shift(d, rhs_off))?;

    let mut lhs_metas = BTreeSet::new();
    metas_of(&lhs, &mut lhs_metas);
    let mut rhs_metas = BTreeSet::new();
    metas_of(&rhs, &mut rhs_metas);
    // Placeholders stand for their substitution's metavariable and value.
    while let Some(p) = rhs_metas.iter().find(|m| substs.contains_key(*m)).cloned() {
        rhs_metas.remove(&p);
        let spec = &substs[&p];
        rhs_metas.insert(spec.meta.clone());
        match &spec.value {
            SubstValue::Index(v) => {
                let mut inner = BTreeSet::new();
                metas_of(&Expr::access(Expr::input("_"), v.clone()), &mut inner);
                rhs_metas.extend(inner);
            }
            SubstValue::Expr(m) => {
                rhs_metas.insert(m.clone());
            }
        }
    }

    // Conditions and the other lines.
    let mut conditions = Vec::new();
    let mut grade = None;
    let mut status = None;
    let mut examples = Vec::new();
    let mut shape_bound = BTreeSet::new();
    for (n, (lno, loff, ltext)) in body.iter().enumerate() {
        let trimmed = ltext.trim_start();
        let lead = ltext.len() - trimmed.len();
        let lspan = Span::new(loff + lead, loff + ltext.len());
        if let Some(rest) = trimmed.strip_prefix("if ") {
            let (cname, ctext, coff) = match rest.find(':') {
                Some(c)
                    if rest[..c]
                        .trim()
                        .chars()
                        .all(|x| x.is_ascii_alphanumeric() || x == '_')
                        && !rest[..c].trim().is_empty() =>
                {
                    (
                        rest[..c].trim().to_string(),
                        &rest[c + 1..],
                        loff + lead + 3 + c + 1,
                    )
                }
                _ => (format!("c{}", n + 1), rest, loff + lead + 3),
            };
            let ctrim = ctext.trim_start();
            let coff = coff + (ctext.len() - ctrim.len());
            if let Some(shape) = ctrim.strip_prefix("shape(") {
                let close = shape.find(')').ok_or_else(|| {
                    Diagnostic::error("E0708", "malformed shape condition")
                        .at(lspan, "expected `shape(?v) = [..]`")
                })?;
                let meta = shape[..close].trim().trim_start_matches('?').to_string();
                let rest = shape[close + 1..].trim();
                let list = rest
                    .strip_prefix('=')
                    .map(str::trim)
                    .and_then(|r| r.strip_prefix('['))
                    .and_then(|r| r.strip_suffix(']'))
                    .ok_or_else(|| {
                        Diagnostic::error("E0708", "malformed shape condition")
                            .at(lspan, "expected `shape(?v) = [?n, ..]`")
                    })?;
                let mut dims = Vec::new();
                let mut open = false;
                for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    if part == ".." {
                        open = true;
                        continue;
                    }
                    let i = atl_lang::parser::parse_index_str(&part.replace('?', "META_"))
                        .map_err(|_| {
                            Diagnostic::error("E0708", format!("malformed dimension `{part}`"))
                                .at(lspan, "here")
                        })?;
                    let i = demeta(&i);
                    let mut ms = BTreeSet::new();
                    metas_of(&Expr::access(Expr::input("_"), i.clone()), &mut ms);
                    shape_bound.extend(ms);
                    dims.push(i);
                }
                if !lhs_metas.contains(&meta) && !rhs_metas.contains(&meta) {
                    return Err(Diagnostic::error(
                        "E0709",
                        format!("shape condition on `?{meta}`, which the rule does not mention"),
                    )
                    .at(lspan, "here"));
                }
                conditions.push(Condition::Shape {
                    name: cname,
                    meta,
                    dims,
                    open,
                });
            } else if let Some(m) = ctrim.trim().strip_prefix('?').filter(|m| {
                m.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !m.is_empty()
            }) {
                conditions.push(Condition::Pred {
                    name: cname,
                    pred: pred_meta(m),
                });
            } else {
                // A predicate metavariable of the equation (`[?p] * ?e`) inside a
                // compound condition (`!(0 <= ?i) || ?p`) is spelled as its encoding
                // (`?p == ?p` on the reserved name, see `pred_meta`) before parsing.
                let spelled = spell_pred_metas(ctrim, &lhs_metas, &rhs_metas);
                let p = atl_lang::parser::parse_pred_str(&spelled.replace('?', "META_")).map_err(
                    |ds| {
                        let d = ds
                            .into_iter()
                            .next()
                            .unwrap_or_else(|| Diagnostic::error("E0708", "cannot parse"));
                        shift(unmeta_spans(d, ctrim), coff)
                    },
                )?;
                conditions.push(Condition::Pred {
                    name: cname,
                    pred: demeta_pred(&p),
                });
            }
        } else if let Some(rest) = trimmed.strip_prefix("grade:") {
            grade = Some(match rest.trim() {
                "exact" => Grade::Exact,
                "real" => Grade::Real,
                other => {
                    return Err(
                        Diagnostic::error("E0710", format!("unknown grade `{other}`"))
                            .at(lspan, "expected `exact` or `real`"),
                    );
                }
            });
        } else if let Some(rest) = trimmed.strip_prefix("status:") {
            let rest = rest.trim();
            let parsed = if rest == "proved" {
                Some(Status::Proved)
            } else {
                rest.strip_prefix("checked")
                    .map(str::trim)
                    .and_then(|r| r.strip_prefix("--"))
                    .map(str::trim)
                    .filter(|reason| !reason.is_empty())
                    .map(|reason| Status::Checked(Some(reason.to_string())))
            };
            let Some(parsed) = parsed else {
                return Err(
                    Diagnostic::error("E0719", format!("malformed status `{rest}`"))
                        .at(
                            lspan,
                            "expected `status: proved` or `status: checked -- REASON`",
                        )
                        .with_help(
                            "a rule without a proof says why: `status: checked -- the reason`",
                        ),
                );
            };
            if status.is_some() {
                return Err(Diagnostic::error("E0719", "a second status line")
                    .at(lspan, "a rule has at most one status"));
            }
            status = Some(parsed);
        } else if let Some(rest) = trimmed.strip_prefix("example:") {
            let (a, b) = split_arrow(rest).ok_or_else(|| {
                Diagnostic::error("E0711", "an example is `START => RESULT`").at(lspan, "no `=>`")
            })?;
            let result_text = &rest[b..];
            let (result, with) = match result_text.rfind(" with ") {
                Some(w) => {
                    let mut pairs = Vec::new();
                    for part in result_text[w + 6..].split(',') {
                        let (k, v) = part.split_once(":=").ok_or_else(|| {
                            Diagnostic::error(
                                "E0711",
                                "an example's `with` takes `name := value` pairs",
                            )
                            .at(lspan, "here")
                        })?;
                        pairs.push((
                            k.trim().trim_start_matches('?').to_string(),
                            v.trim().to_string(),
                        ));
                    }
                    (result_text[..w].trim().to_string(), pairs)
                }
                None => (result_text.trim().to_string(), Vec::new()),
            };
            examples.push(Example {
                start: rest[..a].trim().to_string(),
                result,
                with,
                line: *lno,
            });
        } else {
            return Err(Diagnostic::error("E0712", "unknown line in a rule").at(
                lspan,
                "expected `if NAME: …`, `grade: …`, `status: …` or `example: …`",
            ));
        }
    }
    let grade = grade.ok_or_else(|| {
        Diagnostic::error("E0710", format!("rule `{name}` has no grade"))
            .at(whole, "add `grade: exact` or `grade: real`")
    })?;
    if examples.is_empty() {
        return Err(
            Diagnostic::error("E0711", format!("rule `{name}` has no example"))
                .at(whole, "add `example: START => RESULT`"),
        );
    }

    // Every metavariable of the right side must be bound: by the left side, by a shape
    // condition, or declared as a parameter.
    let known: BTreeSet<String> = lhs_metas
        .iter()
        .chain(shape_bound.iter())
        .chain(params.iter())
        .cloned()
        .collect();
    for m in &rhs_metas {
        if !known.contains(m) {
            return Err(Diagnostic::error("E0713", format!("`?{m}` on the right side is bound nowhere"))
                .at(Span::new(rhs_s.span.start + rhs_off, rhs_s.span.end + rhs_off), "uses an unbound metavariable")
                .with_help(format!("match it on the left, bind it with `if shape(?v) = [?{m}, ..]`, or declare it as a parameter `{name}(?{m})`")));
        }
    }
    let both: BTreeSet<String> = lhs_metas.union(&rhs_metas).cloned().collect();
    for p in &params {
        if lhs_metas.contains(p) && rhs_metas.contains(p) {
            return Err(Diagnostic::error(
                "E0714",
                format!("parameter `?{p}` occurs on both sides"),
            )
            .at(whole, "parameters occur on one side only"));
        }
        if !both.contains(p) && !shape_bound.contains(p) {
            return Err(Diagnostic::error(
                "E0714",
                format!("parameter `?{p}` does not occur in the rule"),
            )
            .at(whole, "unused parameter"));
        }
    }
    for c in &conditions {
        if let Condition::Pred { pred, .. } = c {
            let mut ms = BTreeSet::new();
            let dummy = Expr::guard(pred.clone(), Expr::lit(0.0));
            metas_of(&dummy, &mut ms);
            for m in ms {
                if !both.contains(&m) && !shape_bound.contains(&m) {
                    return Err(Diagnostic::error(
                        "E0713",
                        format!(
                            "condition `{}` uses `?{m}`, which the rule does not bind",
                            c.name()
                        ),
                    )
                    .at(whole, "in this rule"));
                }
            }
        }
    }

    // Scopes: intersection over occurrences. A parameter occurs on one side only: where
    // that side is produced, its value is given with `with` in the site's scope, which
    // the rule's (fresh) binders are not in; so where that side is matched, it may not
    // mention them either, and the rule stays one equation with the parameter constant.
    let mut scopes: HashMap<String, BTreeSet<String>> = occurrences
        .into_iter()
        .map(|(m, sets)| {
            let mut it = sets.into_iter();
            let first = it.next().unwrap_or_default();
            let inter = it.fold(first, |acc, s| acc.intersection(&s).cloned().collect());
            (m, inter)
        })
        .collect();
    for p in &params {
        if let Some(s) = scopes.get_mut(p) {
            s.clear();
        }
    }

    Ok(Rule {
        name,
        doc,
        equation: equation_text.trim().to_string(),
        lhs,
        rhs,
        params,
        conditions,
        substs,
        grade,
        status: status.unwrap_or(Status::Checked(None)),
        examples,
        scopes,
        origin: format!("{file_name}:{line_no}"),
    })
}

/// `?p` spelled `(?PREDMETA_p == ?PREDMETA_p)` for every predicate metavariable `p` of
/// the equation, where it stands as a whole word (not `?p2`, not `?pq`); `demeta` turns
/// the reserved name back into the encoding of `pred_meta`.
fn spell_pred_metas(text: &str, lhs: &BTreeSet<String>, rhs: &BTreeSet<String>) -> String {
    let mut out = text.to_string();
    for m in lhs.iter().chain(rhs) {
        let Some(name) = m.strip_prefix("pred:") else {
            continue;
        };
        // A name that is also an index or expression metavariable stays as written:
        // the condition means that one where it compares it.
        if lhs.contains(name) || rhs.contains(name) {
            continue;
        }
        let pat = format!("?{name}");
        let mut result = String::new();
        let mut rest = out.as_str();
        while let Some(k) = rest.find(&pat) {
            let after = &rest[k + pat.len()..];
            let whole = !after
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
            result.push_str(&rest[..k]);
            if whole {
                result.push_str(&format!("(?PREDMETA_{name} == ?PREDMETA_{name})"));
            } else {
                result.push_str(&pat);
            }
            rest = after;
        }
        result.push_str(rest);
        out = result;
    }
    out
}

/// Condition texts are parsed as ordinary predicates with `?k` spelled `META_k`; this
/// turns those variables back into metavariables.
fn demeta(e: &IndexExpr) -> IndexExpr {
    match e {
        IndexExpr::Var(v) => match v.strip_prefix("META_") {
            Some(m) => match m.strip_prefix("PREDMETA_") {
                Some(p) => IndexExpr::Meta(format!("pred:{p}")),
                None => IndexExpr::Meta(m.to_string()),
            },
            None => e.clone(),
        },
        IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(demeta(a))),
        IndexExpr::Bin(op, a, b) => IndexExpr::bin(*op, demeta(a), demeta(b)),
        _ => e.clone(),
    }
}

fn demeta_pred(p: &Pred) -> Pred {
    p.map_index(&mut |i| demeta(i))
}

//! The pretty printer: core IR expressions and whole source files back to ATL text,
//! in ASCII or with the Unicode aliases (`⊞ Σ ·`).
//!
//! Output parses back to an alpha-equivalent program (tested on every example and by a
//! property test). Parentheses are inserted only where the grammar needs them:
//! binder forms (`gen`, `sum`, `let`) extend as far right as possible, so they are
//! parenthesized unless nothing follows them; a guard `[p] * e` takes a unary operand.

use std::fmt::Write as _;

use crate::ast::{self, DirectiveArg, File, Item, StepKind};
use crate::diag::Diagnostic;
use crate::index::IndexExpr;
use crate::ir::{Expr, ExprKind};
use crate::span::Span;

/// Printing options.
#[derive(Clone, Copy, Debug, Default)]
pub struct Style {
    /// Use `⊞`, `Σ` and `·` instead of `gen`, `sum` and `*`.
    pub unicode: bool,
}

// Precedence levels of the expression grammar.
const P_CONCAT: u8 = 1;
const P_ADD: u8 = 2;
const P_MUL: u8 = 3;
const P_UNARY: u8 = 4;
const P_POSTFIX: u8 = 5;
const P_ATOM: u8 = 6;

fn prec(e: &Expr) -> u8 {
    match &e.kind {
        ExprKind::Concat(..) => P_CONCAT,
        ExprKind::Binary { op, .. } => match op {
            crate::ir::BinOp::Add | crate::ir::BinOp::Sub => P_ADD,
            crate::ir::BinOp::Mul | crate::ir::BinOp::Div => P_MUL,
        },
        ExprKind::Neg(_) | ExprKind::Guard { .. } => P_UNARY,
        ExprKind::Lit(v) if v.is_sign_negative() => P_UNARY,
        ExprKind::Access { .. } => P_POSTFIX,
        _ => P_ATOM,
    }
}

fn right_open(e: &Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::Gen { .. }
            | ExprKind::Sum { .. }
            | ExprKind::MaxRed { .. }
            | ExprKind::Let { .. }
    )
}

/// Formats a scalar literal so that it lexes back to the same `f64`.
pub fn format_lit(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v.abs())
    } else if v.is_finite() {
        // `{:?}` is the shortest round-tripping form and may use an exponent (`1e-7`).
        format!("{:?}", v.abs())
    } else {
        // Not expressible in ATL; only reachable from hand-built IR.
        format!("{v}")
    }
}

struct Printer {
    style: Style,
    out: String,
}

impl Printer {
    fn kw_gen(&self) -> &'static str {
        if self.style.unicode { "⊞" } else { "gen" }
    }

    fn kw_sum(&self) -> &'static str {
        if self.style.unicode { "Σ" } else { "sum" }
    }

    /// `max` in both styles: the Unicode form stays ASCII so it reads back.
    fn kw_max(&self) -> &'static str {
        "max"
    }

    fn star(&self) -> &'static str {
        if self.style.unicode { "·" } else { "*" }
    }

    /// The head of a `gen`/`sum` with directly nested binders of the same kind merged
    /// (`gen i < n, j < m`), and the innermost body.
    fn binder_head<'e>(&self, e: &'e Expr) -> (String, &'e Expr) {
        let kind = std::mem::discriminant(&e.kind);
        let mut head = Printer {
            style: self.style,
            out: String::new(),
        };
        head.out.push_str(match e.kind {
            ExprKind::Gen { .. } => self.kw_gen(),
            ExprKind::Sum { .. } => self.kw_sum(),
            _ => self.kw_max(),
        });
        head.out.push(' ');
        let mut cur = e;
        let mut first = true;
        loop {
            match &cur.kind {
                ExprKind::Gen { var, lo, hi, body }
                | ExprKind::Sum { var, lo, hi, body }
                | ExprKind::MaxRed { var, lo, hi, body }
                    if std::mem::discriminant(&cur.kind) == kind =>
                {
                    if !first {
                        head.out.push_str(", ");
                    }
                    first = false;
                    head.range(var, lo, hi);
                    cur = body;
                }
                _ => break,
            }
        }
        (head.out, cur)
    }

    fn range(&mut self, var: &str, lo: &IndexExpr, hi: &IndexExpr) {
        if *lo == IndexExpr::Const(0) {
            let _ = write!(self.out, "{var} < {hi}");
        } else {
            let _ = write!(self.out, "{var} in {lo}..{hi}");
        }
    }

    /// Prints `e` where the context requires precedence `min` and something follows
    /// unless `rightmost`.
    fn expr(&mut self, e: &Expr, min: u8, rightmost: bool) {
        let parens = prec(e) < min || (right_open(e) && !rightmost);
        if parens {
            self.out.push('(');
            self.expr_bare(e, true);
            self.out.push(')');
        } else {
            self.expr_bare(e, rightmost);
        }
    }

    fn expr_bare(&mut self, e: &Expr, rightmost: bool) {
        match &e.kind {
            ExprKind::Lit(v) => {
                if v.is_sign_negative() {
                    self.out.push('-');
                }
                let s = format_lit(*v);
                self.out.push_str(&s);
            }
            ExprKind::Input(n) | ExprKind::DefRef(n) | ExprKind::Var(n) => self.out.push_str(n),
            ExprKind::Meta(m) => {
                self.out.push('?');
                self.out.push_str(m);
            }
            ExprKind::Gen { .. } | ExprKind::Sum { .. } | ExprKind::MaxRed { .. } => {
                let (head, body) = self.binder_head(e);
                self.out.push_str(&head);
                self.out.push_str(": ");
                self.expr(body, 0, rightmost);
            }
            ExprKind::Guard { pred, body } => {
                let _ = write!(self.out, "[{pred}] {} ", self.star());
                self.expr(body, P_UNARY, rightmost);
            }
            ExprKind::Let { var, value, body } => {
                let _ = write!(self.out, "let {var} = ");
                self.expr(value, 0, true);
                self.out.push_str(" in ");
                self.expr(body, 0, rightmost);
            }
            ExprKind::Access { .. } => {
                // Collect `e[i][j]` into `e[i, j]`.
                let mut indices = Vec::new();
                let mut cur = e;
                while let ExprKind::Access { tensor, index } = &cur.kind {
                    indices.push(index);
                    cur = tensor;
                }
                indices.reverse();
                self.expr(cur, P_POSTFIX, false);
                self.out.push('[');
                for (k, i) in indices.iter().enumerate() {
                    if k > 0 {
                        self.out.push_str(", ");
                    }
                    let _ = write!(self.out, "{i}");
                }
                self.out.push(']');
            }
            ExprKind::Neg(a) => {
                self.out.push('-');
                // The negation of a literal is written `-(1)`: `-1` reads back as the
                // literal -1, a different term.
                let min = if matches!(a.kind, ExprKind::Lit(_)) {
                    P_ATOM + 1
                } else {
                    P_UNARY
                };
                self.expr(a, min, rightmost);
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let p = prec(e);
                self.expr(lhs, p, false);
                let sym = if *op == crate::ir::BinOp::Mul {
                    self.star()
                } else {
                    op.symbol()
                };
                let _ = write!(self.out, " {sym} ");
                self.expr(rhs, p + 1, rightmost);
            }
            ExprKind::Concat(a, b) => {
                self.expr(a, P_CONCAT, false);
                self.out.push_str(" ++ ");
                self.expr(b, P_CONCAT + 1, rightmost);
            }
            ExprKind::Transpose(a) | ExprKind::Flatten(a) => {
                let name = if matches!(e.kind, ExprKind::Transpose(_)) {
                    "transpose"
                } else {
                    "flatten"
                };
                let _ = write!(self.out, "{name}(");
                self.expr(a, 0, true);
                self.out.push(')');
            }
            ExprKind::Coord(index) => {
                let _ = write!(self.out, "float({index})");
            }
            ExprKind::Amount { op, amount, arg } => {
                let _ = write!(self.out, "{}({amount}, ", op.name());
                self.expr(arg, 0, true);
                self.out.push(')');
            }
            ExprKind::Call { func, args } => {
                let _ = write!(self.out, "{}(", func.name());
                for (k, a) in args.iter().enumerate() {
                    let last = k + 1 == args.len();
                    self.expr(a, 0, last);
                    match func {
                        crate::functions::ScalarFn::Select(op) if k == 0 => {
                            let _ = write!(self.out, " {} ", op.symbol());
                        }
                        _ if !last => self.out.push_str(", "),
                        _ => {}
                    }
                }
                self.out.push(')');
            }
        }
    }

    /// Prints the body of a definition: `let`s one per line, the rest on one line.
    fn body(&mut self, e: &Expr, indent: &str) {
        let mut cur = e;
        while let ExprKind::Let { var, value, body } = &cur.kind {
            let head = format!("{indent}let {var} =");
            let one_line = self.one_line(value, 0, true);
            if head.chars().count() + 1 + one_line.chars().count() + 3 <= LINE_WIDTH {
                let _ = writeln!(self.out, "{head} {one_line} in");
            } else {
                let _ = writeln!(self.out, "{head}");
                self.block(value, &format!("{indent}    "), 0, true);
                self.out.push_str(" in\n");
            }
            cur = body;
        }
        self.block(cur, indent, 0, true);
    }

    fn one_line(&self, e: &Expr, min: u8, rightmost: bool) -> String {
        let mut p = Printer {
            style: self.style,
            out: String::new(),
        };
        p.expr(e, min, rightmost);
        p.out
    }

    /// Prints `e` starting at `indent`, breaking lines that would exceed
    /// [`LINE_WIDTH`]: after the `:` of a binder head, and before each operand of a
    /// top-level `+`/`-` chain. Line breaks are whitespace to the parser, so this never
    /// changes the meaning.
    fn block(&mut self, e: &Expr, indent: &str, min: u8, rightmost: bool) {
        let one_line = self.one_line(e, min, rightmost);
        if indent.chars().count() + one_line.chars().count() <= LINE_WIDTH {
            self.out.push_str(indent);
            self.out.push_str(&one_line);
            return;
        }
        let parenthesized = prec(e) < min || (right_open(e) && !rightmost);
        match &e.kind {
            _ if parenthesized => {
                let _ = writeln!(self.out, "{indent}(");
                self.block(e, &format!("{indent}  "), 0, true);
                self.out.push(')');
            }
            ExprKind::Gen { .. } | ExprKind::Sum { .. } | ExprKind::MaxRed { .. } => {
                // Print the merged head, then the body on the next lines.
                let (head, body) = self.binder_head(e);
                let _ = writeln!(self.out, "{indent}{head}:");
                self.block(body, &format!("{indent}  "), 0, rightmost);
            }
            ExprKind::Binary {
                op: crate::ir::BinOp::Add | crate::ir::BinOp::Sub,
                ..
            } => {
                // Flatten the left-associated chain `((a + b) - c) + d`.
                let mut operands = Vec::new();
                let mut cur = e;
                while let ExprKind::Binary { op, lhs, rhs } = &cur.kind
                    && matches!(op, crate::ir::BinOp::Add | crate::ir::BinOp::Sub)
                    && prec(cur) >= min
                {
                    operands.push((Some(*op), &**rhs));
                    cur = lhs;
                    if prec(cur) != P_ADD {
                        break;
                    }
                }
                operands.push((None, cur));
                operands.reverse();
                let last = operands.len() - 1;
                for (k, (op, operand)) in operands.into_iter().enumerate() {
                    let is_last = k == last;
                    // The first operand sits left of a `+` (same precedence allowed);
                    // later ones are right operands (strictly higher precedence).
                    let need = if k == 0 { P_ADD } else { P_ADD + 1 };
                    let text = self.one_line(operand, need, is_last && rightmost);
                    match op {
                        None => {
                            self.out.push_str(indent);
                            self.out.push_str(&text);
                        }
                        Some(op) => {
                            let _ = write!(self.out, "\n{indent}{} {text}", op.symbol());
                        }
                    }
                }
            }
            ExprKind::Let { var, value, body } => {
                let _ = writeln!(self.out, "{indent}let {var} =");
                self.block(value, &format!("{indent}    "), 0, true);
                self.out.push_str(" in\n");
                self.block(body, indent, 0, rightmost);
            }
            ExprKind::Amount { op, amount, arg } => {
                let _ = writeln!(self.out, "{indent}{}({amount},", op.name());
                self.block(arg, &format!("{indent}  "), 0, true);
                self.out.push(')');
            }
            ExprKind::Transpose(arg) | ExprKind::Flatten(arg) => {
                let name = if matches!(e.kind, ExprKind::Transpose(_)) {
                    "transpose"
                } else {
                    "flatten"
                };
                let _ = writeln!(self.out, "{indent}{name}(");
                self.block(arg, &format!("{indent}  "), 0, true);
                self.out.push(')');
            }
            ExprKind::Concat(a, b) => {
                // `a ++ b` is left-associative: the left operand may be a concat itself.
                self.block(a, indent, P_CONCAT, false);
                let _ = writeln!(self.out);
                let _ = writeln!(self.out, "{indent}++");
                self.block(b, indent, P_CONCAT + 1, rightmost);
            }
            ExprKind::Guard { pred, body } => {
                let _ = writeln!(self.out, "{indent}[{pred}] {}", self.star());
                self.block(body, &format!("{indent}  "), P_UNARY, rightmost);
            }
            _ => {
                self.out.push_str(indent);
                self.out.push_str(&one_line);
            }
        }
    }
}

/// Lines longer than this are broken by the formatter where the grammar allows.
pub const LINE_WIDTH: usize = 88;

/// Prints an expression on one line.
pub fn expr_to_string(e: &Expr, style: Style) -> String {
    let mut p = Printer {
        style,
        out: String::new(),
    };
    p.expr(e, 0, true);
    p.out
}

/// Prints a definition body, `let`s on their own lines, each line starting with
/// `indent`.
pub fn body_to_string(e: &Expr, style: Style, indent: &str) -> String {
    let mut p = Printer {
        style,
        out: String::new(),
    };
    p.body(e, indent);
    p.out
}

/// Comments (`# …` to the end of the line) with their byte offsets. ATL has no string
/// literals, so every `#` starts a comment.
fn comments(source: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut offset = 0;
    for line in source.split_inclusive('\n') {
        if let Some(k) = line.find('#') {
            out.push((offset + k, line[k..].trim_end()));
        }
        offset += line.len();
    }
    out
}

fn item_span(item: &Item) -> Span {
    match item {
        Item::Size(_, s) | Item::Assume(_, s) => *s,
        Item::Input { span, .. }
        | Item::Def { span, .. }
        | Item::Sparse { span, .. }
        | Item::Derive { span, .. } => *span,
        Item::Rule(r) => r.span,
    }
}

fn step_to_string(step: &ast::Step, source: &str) -> Result<String, Diagnostic> {
    let mut s = String::new();
    match &step.kind {
        StepKind::Rewrite {
            backward,
            rule,
            site,
            with,
        } => {
            let _ = write!(s, "{} {}", if *backward { "rw<-" } else { "rw" }, rule.name);
            if let Some((n, _)) = site.at {
                let _ = write!(s, " at {n}");
            }
            if let Some(pattern) = &site.around {
                // Patterns are kept exactly as written.
                let text = source.get(pattern.span.range()).unwrap_or("?");
                let _ = write!(s, " around ({text})");
            }
            if let Some((path, _)) = &site.path {
                let parts: Vec<String> = path.iter().map(u64::to_string).collect();
                let _ = write!(s, " in [{}]", parts.join(", "));
            }
            if !with.is_empty() {
                let mut parts = Vec::new();
                for (name, value) in with {
                    let v = crate::resolve::lower_index_free(value)?;
                    parts.push(format!("{} := {v}", name.name));
                }
                let _ = write!(s, " with {}", parts.join(", "));
            }
        }
        StepKind::Unfold { name, storage } => {
            let _ = write!(s, "unfold {}", name.name);
            if let Some(f) = storage {
                let _ = write!(s, " as {}", f.name);
            }
        }
        StepKind::Inline(n) => {
            let _ = write!(s, "inline {}", n.name);
        }
        StepKind::Simpl => s.push_str("simpl"),
        StepKind::SimplGuard => s.push_str("simpl_guard"),
        StepKind::Check => s.push_str("check"),
        StepKind::Window { var, dims } => {
            let _ = write!(s, "window {} in ", var.name);
            for (k, (lo, hi)) in dims.iter().enumerate() {
                let lo = crate::resolve::lower_index_free(lo)?;
                let hi = crate::resolve::lower_index_free(hi)?;
                let sep = if k == 0 { "" } else { ", " };
                let _ = write!(s, "{sep}{lo}..{hi}");
            }
        }
        StepKind::Specialize { cond, steps } => {
            let cond = crate::resolve::lower_pred_free(cond)?;
            let inner: Vec<String> = steps
                .iter()
                .map(|step| step_to_string(step, source))
                .collect::<Result<_, _>>()?;
            // Its block one step per line, inside the derivation's indentation.
            let _ = write!(s, "specialize {cond} {{");
            for step in inner {
                let _ = write!(s, "\n    {step}");
            }
            s.push_str("\n  }");
        }
        StepKind::Directive { name, args } => {
            s.push_str(&name.name);
            for a in args {
                match a {
                    DirectiveArg::Word(w) => {
                        let _ = write!(s, " {}", w.name);
                    }
                    DirectiveArg::Int(v, _) => {
                        let _ = write!(s, " {v}");
                    }
                    DirectiveArg::Comma(_) => s.push(','),
                }
            }
        }
    }
    Ok(s)
}

/// Formats a whole source file: one item per paragraph, canonical spacing, binder
/// names as written. Comments between items stay in place; comments inside an item
/// move to just before it. Fails (with diagnostics) on programs that do not parse or
/// resolve: a formatter must not guess.
pub fn format_source(source: &str, style: Style) -> Result<String, Vec<Diagnostic>> {
    let (file, mut diags) = crate::parser::parse_file(source);
    if crate::diag::has_errors(&diags) {
        return Err(diags);
    }
    let program = crate::resolve::resolve_with(&file, &mut diags, false);
    if crate::diag::has_errors(&diags) {
        return Err(diags);
    }
    format_items(&file, &program, source, style).map_err(|d| vec![d])
}

fn format_items(
    file: &File,
    program: &crate::ir::Program,
    source: &str,
    style: Style,
) -> Result<String, Diagnostic> {
    let mut out = String::new();
    let all_comments = comments(source);
    let mut next_comment = 0;
    let mut previous_kind: Option<&'static str> = None;
    for item in &file.items {
        let span = item_span(item);
        let kind = match item {
            Item::Size(..) => "size",
            Item::Assume(..) => "assume",
            Item::Input { .. } => "input",
            Item::Sparse { .. } => "sparse",
            Item::Def { .. } => "def",
            Item::Derive { .. } => "derive",
            Item::Rule(..) => "rule",
        };
        // Blank line between groups and around multi-line items.
        if let Some(prev) = previous_kind
            && (matches!(kind, "def" | "derive" | "rule")
                || matches!(prev, "def" | "derive" | "rule"))
        {
            out.push('\n');
        }
        previous_kind = Some(kind);
        // A rule is kept verbatim, comments inside it included.
        let moved_until = match item {
            Item::Rule(..) => span.start,
            _ => span.end,
        };
        while next_comment < all_comments.len() && all_comments[next_comment].0 < moved_until {
            out.push_str(all_comments[next_comment].1);
            out.push('\n');
            next_comment += 1;
        }
        match item {
            Item::Size(names, _) => {
                let names: Vec<&str> = names.iter().map(|n| n.name.as_str()).collect();
                let _ = writeln!(out, "size {}", names.join(", "));
            }
            Item::Assume(p, _) => {
                let p = crate::resolve::lower_pred_free(p)?;
                let _ = writeln!(out, "assume {p}");
            }
            Item::Input {
                name,
                shape,
                index_array,
                layout,
                span,
            } => {
                let mut dims = Vec::new();
                for d in shape {
                    dims.push(crate::resolve::lower_index_free(d)?);
                }
                let index_array = match index_array.as_ref().map(|a| (&a.range, a.sorted)) {
                    Some((Some((lo, hi)), sorted)) => Some(crate::ir::IndexArray {
                        lo: crate::resolve::lower_index_free(lo)?,
                        hi: crate::resolve::lower_index_free(hi)?,
                        sorted: sorted.is_some(),
                    }),
                    // A malformed declaration is refused by resolution, never formatted.
                    Some((None, _)) | None => None,
                };
                let decl = crate::ir::InputDecl {
                    name: name.name.clone(),
                    shape: dims,
                    index_array,
                    layout: None,
                    span: *span,
                };
                let _ = write!(out, "{decl}");
                if let Some(l) = layout {
                    let mut tuples = Vec::new();
                    for modes in [&l.extents, &l.strides] {
                        let mut parts = Vec::new();
                        for m in modes {
                            parts.push(crate::resolve::lower_index_free(m)?.to_string());
                        }
                        tuples.push(format!("({})", parts.join(", ")));
                    }
                    let _ = write!(out, " layout {}", tuples.join(":"));
                }
                let _ = writeln!(out);
            }
            Item::Sparse {
                name,
                shape,
                storages,
                ..
            } => {
                let mut dims = Vec::new();
                for d in shape {
                    dims.push(crate::resolve::lower_index_free(d)?.to_string());
                }
                let storages: Vec<String> = storages
                    .iter()
                    .map(|s| {
                        let arrays: Vec<&str> = s.arrays.iter().map(|a| a.name.as_str()).collect();
                        format!("{}({})", s.format.name, arrays.join(", "))
                    })
                    .collect();
                let _ = writeln!(
                    out,
                    "sparse {} : [{}] as {}",
                    name.name,
                    dims.join(", "),
                    storages.join(", ")
                );
            }
            Item::Def { name, .. } => {
                let def = program.def(&name.name).ok_or_else(|| {
                    Diagnostic::error("E0301", format!("`{}` could not be formatted", name.name))
                        .at(name.span, "here")
                })?;
                let _ = writeln!(out, "def {} =", name.name);
                out.push_str(&body_to_string(&def.body, style, "  "));
                out.push('\n');
            }
            Item::Derive {
                name, from, steps, ..
            } => {
                let _ = writeln!(out, "derive {} from {} {{", name.name, from.name);
                for step in steps {
                    let _ = writeln!(out, "  {}", step_to_string(step, source)?);
                }
                out.push_str("}\n");
            }
            Item::Rule(..) => {
                // Rule syntax is the rule files' and its layout (indented lines) is part
                // of it: the text stays exactly as written.
                out.push_str(source.get(span.range()).unwrap_or_default());
                out.push('\n');
                while next_comment < all_comments.len() && all_comments[next_comment].0 < span.end {
                    next_comment += 1;
                }
            }
        }
    }
    if next_comment < all_comments.len() {
        if !out.is_empty() {
            out.push('\n');
        }
        for (_, c) in &all_comments[next_comment..] {
            out.push_str(c);
            out.push('\n');
        }
    }
    Ok(out)
}

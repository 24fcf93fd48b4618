//! The loops of a program, as a user names them: every `gen` and `sum` with its stage
//! (the `let` whose value it is in, or the definition itself), its variable, its range
//! and how deep it is. Directives address loops by variable and refuse an unknown one
//! with this list (and a did-you-mean); the REPL's `:loops` prints it.

use std::fmt;

use atl_lang::index::IndexExpr;
use atl_lang::ir::{Expr, ExprKind, Program};

/// One loop of a program.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopInfo {
    /// The stage it computes: the innermost `let` whose value contains it, or `None`
    /// for the definition's own body.
    pub stage: Option<String>,
    pub var: String,
    pub lo: IndexExpr,
    pub hi: IndexExpr,
    /// `gen` (true) or `sum` (false).
    pub is_gen: bool,
    /// How many loops enclose it.
    pub depth: usize,
}

impl LoopInfo {
    /// `stage.var`, or `var` in the definition's body.
    pub fn qualified(&self) -> String {
        match &self.stage {
            Some(s) => format!("{s}.{}", self.var),
            None => self.var.clone(),
        }
    }
}

impl fmt::Display for LoopInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.is_gen { "gen" } else { "sum" };
        let range = if self.lo == IndexExpr::Const(0) {
            format!("< {}", self.hi)
        } else {
            format!("in {}..{}", self.lo, self.hi)
        };
        let stage = self.stage.as_deref().unwrap_or("(the definition)");
        write!(
            f,
            "{}{kind} {} {range}  [stage {stage}]",
            "  ".repeat(self.depth),
            self.var
        )
    }
}

/// Every loop of `expr`, in pre-order (outer loops before the loops they contain).
pub fn loops(expr: &Expr) -> Vec<LoopInfo> {
    fn go(e: &Expr, stage: Option<&str>, depth: usize, out: &mut Vec<LoopInfo>) {
        match &e.kind {
            ExprKind::Gen { var, lo, hi, body } | ExprKind::Sum { var, lo, hi, body } => {
                out.push(LoopInfo {
                    stage: stage.map(str::to_string),
                    var: var.clone(),
                    lo: lo.clone(),
                    hi: hi.clone(),
                    is_gen: matches!(e.kind, ExprKind::Gen { .. }),
                    depth,
                });
                go(body, stage, depth + 1, out);
            }
            ExprKind::Let { var, value, body } => {
                go(value, Some(var), depth, out);
                go(body, stage, depth, out);
            }
            _ => {
                for c in e.children() {
                    go(c, stage, depth, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    go(expr, None, 0, &mut out);
    out
}

/// The list of `loops` as the notes of a diagnostic: one line per loop, indented by
/// depth.
pub fn listing(loops: &[LoopInfo]) -> String {
    listing_written(loops, None)
}

/// [`listing`], with the name the user wrote for a binder that name resolution
/// renamed (`x1 … (written x)`), from the program's `written_names`.
pub fn listing_written(loops: &[LoopInfo], program: Option<&Program>) -> String {
    if loops.is_empty() {
        return "the program has no loops".to_string();
    }
    let lines: Vec<String> = loops
        .iter()
        .map(|l| match program.map(|p| p.written_name(&l.var)) {
            Some(w) if w != l.var => format!("{l}  (written `{w}`)"),
            _ => l.to_string(),
        })
        .collect();
    format!("the loops of the program:\n{}", lines.join("\n"))
}

/// The shortest name a directive can give `l` by (what `find_loop` accepts): the name
/// the user wrote when no other loop was written so, else `stage.written` for a
/// stage's loop, else the printed variable.
pub fn user_name(l: &LoopInfo, all: &[LoopInfo], program: Option<&Program>) -> String {
    let written = |v: &str| program.map_or(v, |p| p.written_name(v)).to_string();
    let w = written(&l.var);
    let shared = all
        .iter()
        .filter(|m| m.var == w || written(&m.var) == w)
        .count();
    if shared <= 1 {
        w
    } else if let Some(stage) = &l.stage {
        format!("{stage}.{w}")
    } else {
        l.var.clone()
    }
}

/// The names of the `let` stages of `expr`, in pre-order.
pub fn stages(expr: &Expr) -> Vec<String> {
    let mut out = Vec::new();
    expr.walk(&mut |e| {
        if let ExprKind::Let { var, .. } = &e.kind
            && !out.contains(var)
        {
            out.push(var.clone());
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loops_are_listed_with_their_stage_and_depth() {
        let (checked, diags) = atl_lang::check_source(
            "size n\ninput f : [n]\ndef d = gen i < n: let t = gen x < 4: f[x] in sum k < 4: t[k]\n",
        );
        let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
        let body = &checked.program.def("d").unwrap().body;
        let got: Vec<(String, usize, bool)> = loops(body)
            .iter()
            .map(|l| (l.qualified(), l.depth, l.is_gen))
            .collect();
        assert_eq!(
            got,
            vec![
                ("i".to_string(), 0, true),
                ("t.x".to_string(), 1, true),
                ("k".to_string(), 1, false),
            ]
        );
    }
}

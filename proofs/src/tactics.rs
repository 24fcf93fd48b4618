//! Tactic steps, checked without the engine's tactics.
//!
//! - `simpl`: the programs must agree node for node except for index expressions, and
//!   each changed index expression must be proved equal to the old one under the
//!   context at its node; a node whose index expressions changed must also keep its
//!   shape under the declarations alone (a `gen` bound or reshape amount proved equal
//!   only under a guard or a range would change a shape that is observed outside).
//! - `simpl_guard`: re-run bottom-up (a guard is dropped if its predicate is proved in
//!   its context; a scalar guarded term becomes `0` if the negation is), the result
//!   compared with the recorded program and the removals with the recorded conditions.
//! - `window`: rebuilt from its definition (every read of the buffer inside the window,
//!   the window's length fixed by the sizes), with its obligations re-proved.
//! - `inline x`: `let x = v in b` becomes `b[x := v]`; `check` changes nothing.
//! - `parallel x`, `vectorize x`, `unroll x` (loop annotations): the program text is
//!   unchanged and loop `x` exists (a `gen` unless `unroll`).
//! - `unfold NAME`: the recorded path leads to the first reference to NAME, the
//!   recorded body (`after_site`) is the certificate's definition of NAME, and every
//!   reference is replaced by it (definitions mention no binder, so nothing is
//!   captured).
//! - Any other step is unknown and rejected.

use atl_lang::index::{CmpOp, IndexExpr, Pred};
use atl_lang::ir::{Expr, ExprKind, NameSupply, all_names, alpha_eq, subst_tensor};
use atl_lang::poly;
use atl_lang::shapes::{Shape, infer_with_lets};
// The names of the loop annotations come from the front end's step table (the front
// end is part of the checker's trusted base); the checks of each step are this file's.
use atl_lang::steps::is_loop_hint;

use crate::{
    Checker, Ctx, Obligation, Res, StepIn, VerifyError, compare_conditions, replace_at, show,
};

/// Checks one tactic step; returns the program after it and its shape.
pub(crate) fn check(ch: &Checker, prog: &Expr, step: &StepIn) -> Res<(Expr, Shape)> {
    if step.rule_statement.is_some()
        || step.direction.is_some()
        || !step.instantiation.is_empty()
        || step.grade != "exact"
    {
        return Err(VerifyError::new(
            "E1010",
            "a tactic step records a rule's statement, direction, instantiation or grade",
        ));
    }
    if let Some(why) = uncheckable(&step.command) {
        return Err(not_checkable(why));
    }
    let words: Vec<&str> = step.command.split_whitespace().collect();
    if words[0] == "window" {
        return window(ch, prog, step);
    }
    if words[0] == "unfold" {
        return unfold(ch, prog, step, words[1], words.get(3).copied());
    }
    // These steps record the whole program as `before` and `after_site`.
    let (before, _) = ch.parse_program(&step.before)?;
    if !alpha_eq(&before, prog) {
        return Err(VerifyError::new(
            "E1004",
            "`before` is not the program before the step",
        ));
    }
    if step.after_site != step.after {
        return Err(VerifyError::new(
            "E1008",
            "`after_site` differs from `after`",
        ));
    }
    if words[0] == "inline" {
        let (_, node) = ch.locate(prog, &step.path)?;
        let ExprKind::Let { var, value, body } = &node.kind else {
            return Err(VerifyError::new("E1004", "no `let` at the recorded path"));
        };
        if var != words[1] {
            return Err(VerifyError::new(
                "E1004",
                format!("the `let` at the path binds `{var}`"),
            ));
        }
        compare_conditions(&[], &step.conditions)?;
        return ch.expect_after(
            &replace_at(prog, &step.path, subst_tensor(body, var, value)),
            step,
        );
    }
    if !step.path.is_empty() {
        return Err(VerifyError::new("E1004", "this step applies at the root"));
    }
    if is_loop_hint(words[0]) {
        return annotation(ch, prog, step, &words);
    }
    let after = ch
        .parse_program(&step.after)
        .map_err(|e| e.note("in `after`"))?;
    if words[0] == "simpl_guard" {
        let mut found = Vec::new();
        let mine = simpl_guard(ch, prog, &Ctx::default(), &mut found);
        if !alpha_eq(&mine, &after.0) {
            return Err(VerifyError::new(
                "E1008",
                "`simpl_guard` does not give the recorded program",
            )
            .note(format!("recorded: {}", step.after))
            .note(format!("re-run:   {}", show(&mine))));
        }
        compare_conditions(&found, &step.conditions)?;
        return Ok(after);
    }
    let mut w = Walk {
        ch,
        simpl: words[0] == "simpl",
        ren: Vec::new(),
        lets_b: Vec::new(),
    };
    w.walk(prog, &after.0, &Ctx::default())?;
    compare_conditions(&[], &step.conditions)?;
    Ok(after)
}

/// `simpl_guard` re-run bottom-up: a guard proved true in its context is dropped; a
/// scalar guarded term whose guard is proved false becomes `0`. Every removal is an
/// obligation the certificate must list.
fn simpl_guard(ch: &Checker, e: &Expr, ctx: &Ctx, found: &mut Vec<Obligation>) -> Expr {
    let mut out = e.clone();
    for (k, c) in out.children_mut().into_iter().enumerate() {
        *c = simpl_guard(ch, c, &ch.enter(ctx, e, k), found);
    }
    let ExprKind::Guard { pred, body } = &out.kind else {
        return out;
    };
    let facts = ch.facts(ctx);
    let holds = Obligation {
        name: "guard_true".into(),
        goal: pred.clone(),
        facts: facts.clone(),
    };
    if ch.prove(&holds).is_ok() {
        found.push(holds);
        return (**body).clone();
    }
    let fails = Obligation {
        name: "guard_false".into(),
        goal: Pred::not(pred.clone()),
        facts,
    };
    let scalar =
        infer_with_lets(&ch.shapes, &mut ctx.lets.clone(), body).is_ok_and(|s| s.is_empty());
    if scalar && ch.prove(&fails).is_ok() {
        found.push(fails);
        return Expr::lit(0.0);
    }
    out
}

/// Why a tactic step cannot be checked, if it cannot.
pub(crate) fn uncheckable(command: &str) -> Option<&'static str> {
    let words: Vec<&str> = command.split_whitespace().collect();
    match words.as_slice() {
        ["window", ..]
        | ["simpl"]
        | ["simpl_guard"]
        | ["check"]
        | ["inline", _]
        | ["unfold", _]
        | ["unfold", _, "as", _] => None,
        [hint, _] if is_loop_hint(hint) => None,
        ["unroll", _, "off"] => None,
        _ => Some("this checker does not know the step"),
    }
}

/// `parallel x`, `vectorize x`, `unroll x`, `unroll x off`: a loop annotation for
/// lowering, which must
/// leave the program exactly as it was (the same text, so not even a binder is
/// renamed: the annotation names the loop by its binder), and name a loop of it: a
/// `gen` for `parallel` and `vectorize`. Whether the annotation suits the loop is
/// lowering's business; it cannot change the value.
fn annotation(ch: &Checker, prog: &Expr, step: &StepIn, words: &[&str]) -> Res<(Expr, Shape)> {
    if step.after != step.before {
        return Err(VerifyError::new(
            "E1008",
            "an annotation step must leave the program unchanged",
        )
        .note(format!("before: {}", step.before))
        .note(format!("after:  {}", step.after)));
    }
    let (directive, var) = match words {
        [directive, var] => (directive, var),
        ["unroll", var, "off"] => (&"unroll", var),
        _ => {
            return Err(VerifyError::new(
                "E1004",
                "an annotation names exactly one loop (`unroll` may add `off`)",
            ));
        }
    };
    let mut kind = None;
    prog.walk(&mut |n| match &n.kind {
        ExprKind::Gen { var: v, .. } if v == var => kind = Some(true),
        ExprKind::Sum { var: v, .. } if v == var => kind = Some(false),
        _ => {}
    });
    match kind {
        None => {
            return Err(VerifyError::new(
                "E1004",
                format!("no loop of the program binds `{var}`"),
            ));
        }
        Some(false) if *directive != "unroll" => {
            return Err(VerifyError::new(
                "E1004",
                format!("`{directive} {var}` names a `sum`"),
            ));
        }
        Some(_) => {}
    }
    compare_conditions(&[], &step.conditions)?;
    ch.parse_program(&step.after)
        .map_err(|e| e.note("in `after`"))
}

/// `unfold NAME`: every reference to definition NAME is replaced by its body;
/// `unfold A as FORMAT`: by the matrix A's storage in FORMAT encodes (the front end's
/// own reading of the recorded `sparse` item). Either is refused where the result
/// reads two storages of one matrix: the claim would then rest on their agreement,
/// which no kernel checks.
fn unfold(
    ch: &Checker,
    prog: &Expr,
    step: &StepIn,
    name: &str,
    format: Option<&str>,
) -> Res<(Expr, Shape)> {
    let body = match format {
        None => ch.definitions.get(name),
        Some(f) => ch
            .storages
            .iter()
            .find(|s| s.name == name && s.format == f)
            .map(|s| &s.body),
    };
    let Some(body) = body else {
        return Err(not_checkable(&match format {
            None => format!("the certificate does not record the definition of `{name}`"),
            Some(f) => format!("the certificate does not record a storage of `{name}` as `{f}`"),
        }));
    };
    // The recorded body must be the definition, read in the root scope (a definition
    // mentions only sizes, inputs and other definitions).
    if !ch.same_in(&[], &step.after_site, body)? {
        return Err(VerifyError::new(
            "E1008",
            format!("the recorded body is not the certificate's definition of `{name}`"),
        )
        .note(format!("recorded:   {}", step.after_site))
        .note(format!("definition: {}", show(body))));
    }
    // The path leads to the first reference in pre-order, as the record says.
    let mut refs = Vec::new();
    references(prog, name, &mut Vec::new(), &mut refs);
    if refs.first() != Some(&step.path) {
        let (_, node) = ch.locate(prog, &step.path)?;
        return Err(VerifyError::new(
            "E1004",
            format!(
                "the path {:?} does not lead to the first reference to `{name}`",
                step.path
            ),
        )
        .note(format!("found: {}", show(node)))
        .note(match refs.first() {
            Some(p) => format!("first reference at {p:?}"),
            None => format!("the program does not mention `{name}`"),
        }));
    }
    if step.before != name {
        return Err(VerifyError::new(
            "E1004",
            format!("the recorded subterm is `{}`, not `{name}`", step.before),
        ));
    }
    compare_conditions(&[], &step.conditions)?;
    let mut replaced = prog.clone();
    for path in &refs {
        replaced = replace_at(&replaced, path, body.clone());
    }
    let read = storages_read(ch, name, &replaced);
    if read.len() > 1 {
        return Err(VerifyError::new(
            "E1004",
            format!(
                "after the step the program reads `{name}` stored as {}",
                read.join(" and ")
            ),
        )
        .note("one program reads one storage of a matrix: their agreement is not checked"));
    }
    ch.expect_after(&replaced, step)
}

/// The formats of the storages of sparse matrix `name` whose arrays `e` reads,
/// through the recorded definitions it refers to as well.
fn storages_read(ch: &Checker, name: &str, e: &Expr) -> Vec<String> {
    let mut read = e.loaded_arrays();
    let mut seen = std::collections::BTreeSet::new();
    let mut todo = vec![e];
    while let Some(x) = todo.pop() {
        x.walk(&mut |n| match &n.kind {
            ExprKind::Input(i) => {
                read.insert(i.clone());
            }
            ExprKind::DefRef(d) if seen.insert(d.clone()) => {
                if let Some(body) = ch.definitions.get(d) {
                    read.extend(body.loaded_arrays());
                    todo.push(body);
                }
            }
            _ => {}
        });
    }
    ch.storages
        .iter()
        .filter(|s| s.name == name && s.arrays.iter().any(|a| read.contains(a)))
        .map(|s| format!("`{}`", s.format))
        .collect()
}

/// Paths of the references to definition `name`, in pre-order.
fn references(e: &Expr, name: &str, path: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    if matches!(&e.kind, ExprKind::DefRef(r) if r == name) {
        out.push(path.clone());
        return;
    }
    for (k, c) in e.children().into_iter().enumerate() {
        path.push(k);
        references(c, name, path, out);
        path.pop();
    }
}

pub(crate) fn not_checkable(why: &str) -> VerifyError {
    VerifyError::new("E1009", format!("this step is not checkable: {why}"))
        .note("a step that cannot be checked rejects the certificate")
}

/// A parallel walk over the program before (`a`) and after (`b`) a step.
struct Walk<'c, 'a> {
    ch: &'c Checker<'a>,
    /// Whether index expressions may change (`simpl`) or not (`check`).
    simpl: bool,
    /// Binders of `b` to those of `a`, innermost last.
    ren: Vec<(String, String)>,
    /// Shapes of the `let`s of `b` around the current node (those of `a` are in the
    /// context), innermost last.
    lets_b: Vec<(String, Shape)>,
}

/// The index expressions a node holds itself, in a fixed order.
fn own(e: &Expr) -> Vec<IndexExpr> {
    match &e.kind {
        ExprKind::Gen { lo, hi, .. }
        | ExprKind::Sum { lo, hi, .. }
        | ExprKind::MaxRed { lo, hi, .. } => vec![lo.clone(), hi.clone()],
        ExprKind::Access { index: i, .. }
        | ExprKind::Amount { amount: i, .. }
        | ExprKind::Coord(i) => vec![i.clone()],
        ExprKind::Guard { pred, .. } => {
            let mut out = Vec::new();
            pred.map_index(&mut |i| {
                out.push(i.clone());
                i.clone()
            });
            out
        }
        _ => Vec::new(),
    }
}

impl Walk<'_, '_> {
    fn rename(&self, i: &IndexExpr) -> IndexExpr {
        match i {
            IndexExpr::Var(v) => IndexExpr::Var(self.name(v)),
            IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(self.rename(a))),
            IndexExpr::Bin(op, a, b) => IndexExpr::bin(*op, self.rename(a), self.rename(b)),
            _ => i.clone(),
        }
    }

    fn name(&self, v: &str) -> String {
        let found = self.ren.iter().rev().find(|(b, _)| b == v);
        found.map_or(v, |(_, a)| a).to_string()
    }

    /// Same construct with the same non-index data (operators, names, literals).
    fn same_head(&self, a: &Expr, b: &Expr) -> bool {
        use ExprKind as K;
        let skeleton = |p: &Pred| p.map_index(&mut |_| IndexExpr::Const(0));
        match (&a.kind, &b.kind) {
            (K::Lit(x), K::Lit(y)) => x.to_bits() == y.to_bits(),
            (K::Input(x), K::Input(y)) | (K::DefRef(x), K::DefRef(y)) => x == y,
            (K::Var(x), K::Var(y)) => *x == self.name(y),
            (K::Guard { pred: p, .. }, K::Guard { pred: q, .. }) => skeleton(p) == skeleton(q),
            // A program holds no metavariables.
            (K::Meta(_), _) => false,
            // The rest: same construct and operator (the IR's own head comparison).
            _ => a.same_head(b),
        }
    }

    fn walk(&mut self, a: &Expr, b: &Expr, ctx: &Ctx) -> Res<()> {
        let differs = || {
            VerifyError::new("E1008", "the step changed the program where it may not")
                .note(format!("before: {}", show(a)))
                .note(format!("after:  {}", show(b)))
        };
        let (ia, ib) = (own(a), own(b));
        if !self.same_head(a, b) || ia.len() != ib.len() {
            return Err(differs());
        }
        let mut changed = false;
        for (x, y) in ia.iter().zip(&ib) {
            let y = self.rename(y);
            if *x == y {
                continue;
            }
            if !self.simpl {
                return Err(differs());
            }
            changed = true;
            let ob = Obligation {
                name: "simpl".into(),
                goal: Pred::cmp(CmpOp::Eq, x.clone(), y.clone()),
                facts: self.ch.facts(ctx),
            };
            self.ch
                .prove(&ob)
                .map_err(|e| e.note(format!("`simpl` rewrote `{x}` into `{y}`")))?;
        }
        if changed {
            self.ch.keeps_shape(&ctx.lets, &self.lets_b, a, b)?;
        }
        for (k, (x, y)) in a.children().into_iter().zip(b.children()).enumerate() {
            let inner = self.ch.enter(ctx, a, k);
            // The heads are the same, so both bind the same kind of name over child `k`.
            let binds = a
                .binder()
                .zip(b.binder())
                .filter(|_| a.binds_in_child(k))
                .map(|((va, _), (vb, _))| (vb.to_string(), va.to_string()));
            let renames = binds.is_some();
            self.ren.extend(binds);
            let let_b = match &b.kind {
                ExprKind::Let { var, value, .. } if k == 1 => {
                    infer_with_lets(&self.ch.shapes, &mut self.lets_b.clone(), value)
                        .ok()
                        .map(|s| (var.clone(), s))
                }
                _ => None,
            };
            let pushed = let_b.is_some();
            self.lets_b.extend(let_b);
            let r = self.walk(x, y, &inner);
            if pushed {
                self.lets_b.pop();
            }
            if renames {
                self.ren.pop();
            }
            r?;
        }
        Ok(())
    }
}

/// `window x in LO..HI`: `let x = v in b` becomes
/// `let x = gen w < HI - LO: [0 <= w + LO && w + LO < |v|] * v[w + LO] in b'`, where
/// `b'` reads `x[i - LO]` for every read `x[i]` of `b`. Sound when every read lies in
/// the window (so `i - LO` is inside the new buffer, and rows outside `v` stay zero).
/// With d ranges (`window x in LO1..HI1, LO2..HI2`) the buffer is d nested gens guarded
/// by every dimension's range, and every use of `x` must be a read of (at least) d
/// indices, each inside its range.
fn window(ch: &Checker, prog: &Expr, step: &StepIn) -> Res<(Expr, Shape)> {
    let bad = |m: String| VerifyError::new("E1006", m);
    let malformed = || VerifyError::new("E1010", "malformed `window NAME in LO..HI`");
    let rest = step.command.strip_prefix("window ").ok_or_else(malformed)?;
    let (name, ranges) = rest.split_once(" in ").ok_or_else(malformed)?;
    let parse = |t: &str| atl_lang::parser::parse_index_str(t.trim()).map_err(|_| malformed());
    // Ranges are separated by `, ` outside parentheses (`max(a, b)` has a comma too).
    let mut bounds = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    let bytes: Vec<char> = ranges.chars().collect();
    let mut pieces = Vec::new();
    for (k, c) in bytes.iter().enumerate() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                pieces.push(bytes[start..k].iter().collect::<String>());
                start = k + 1;
            }
            _ => {}
        }
    }
    pieces.push(bytes[start..].iter().collect::<String>());
    for piece in &pieces {
        let (lo, hi) = split_range(piece).ok_or_else(malformed)?;
        bounds.push((parse(&lo)?, parse(&hi)?));
    }
    let (ctx, node) = ch.locate(prog, &step.path)?;
    let ExprKind::Let { var, value, body } = &node.kind else {
        return Err(VerifyError::new("E1004", "no `let` at the recorded path"));
    };
    if var != name.trim() || !ch.same_in(&ctx.heads, &step.before, node)? {
        return Err(VerifyError::new(
            "E1004",
            format!(
                "the subterm at the path is not the recorded `let {}`",
                name.trim()
            ),
        ));
    }
    let vars = bounds
        .iter()
        .flat_map(|(lo, hi)| lo.vars().into_iter().chain(hi.vars()));
    if let Some(v) = vars
        .into_iter()
        .find(|v| !ch.is_size(v) && !ctx.bound.contains(v))
    {
        return Err(bad(format!(
            "the window mentions `{v}`, not in scope at the let"
        )));
    }
    let mut extents = Vec::new();
    for (lo, hi) in &bounds {
        let extent = poly::normalize(&IndexExpr::sub(hi.clone(), lo.clone()));
        if let Some(v) = extent.vars().into_iter().find(|v| !ch.is_size(v)) {
            return Err(bad(format!(
                "the window's length `{extent}` depends on `{v}`"
            )));
        }
        extents.push(extent);
    }
    let shape = infer_with_lets(&ch.shapes, &mut ctx.lets.clone(), value)
        .ok()
        .filter(|s| s.len() >= bounds.len())
        .ok_or_else(|| bad(format!("`{var}` has fewer dimensions than the window")))?;
    let mut obs: Vec<Obligation> = bounds
        .iter()
        .map(|(lo, hi)| Obligation {
            name: "window_order".into(),
            goal: Pred::cmp(CmpOp::Le, lo.clone(), hi.clone()),
            facts: ch.facts(&ctx),
        })
        .collect();
    reads(ch, body, &ch.enter(&ctx, node, 1), var, &bounds, &mut obs)?;
    for ob in &obs {
        ch.prove(ob)?;
    }
    compare_conditions(&obs, &step.conditions)?;

    let mut supply = NameSupply::new(
        all_names(prog)
            .into_iter()
            .chain(bounds.iter().flat_map(|(lo, _)| lo.vars())),
    );
    ch.shapes.sizes.iter().for_each(|s| supply.reserve(s));
    let ws: Vec<String> = bounds.iter().map(|_| supply.fresh("w")).collect();
    let shifted: Vec<IndexExpr> = ws
        .iter()
        .zip(&bounds)
        .map(|(w, (lo, _))| IndexExpr::add(IndexExpr::var(w.clone()), lo.clone()))
        .collect();
    // `((0 <= s1 && s1 < n1) && 0 <= s2) && s2 < n2 …`, left-nested.
    let mut in_range: Option<Pred> = None;
    for (s, n) in shifted.iter().zip(&shape) {
        for atom in [
            Pred::cmp(CmpOp::Le, IndexExpr::Const(0), s.clone()),
            Pred::cmp(CmpOp::Lt, s.clone(), n.clone()),
        ] {
            in_range = Some(match in_range {
                None => atom,
                Some(q) => Pred::and(q, atom),
            });
        }
    }
    let mut element = (**value).clone();
    for s in &shifted {
        element = Expr::access(element, s.clone());
    }
    let mut new_value = Expr::guard(in_range.unwrap_or(Pred::Bool(true)), element);
    for (w, extent) in ws.iter().zip(&extents).rev() {
        new_value = Expr::gen_(w.clone(), IndexExpr::Const(0), extent.clone(), new_value);
    }
    let los: Vec<IndexExpr> = bounds.iter().map(|(lo, _)| lo.clone()).collect();
    let new_let = Expr::let_(var.clone(), new_value, shift_reads(body, var, &los));
    if !ch.same_in(&ctx.heads, &step.after_site, &new_let)? {
        return Err(
            VerifyError::new("E1008", "the recorded `after_site` is not the windowed let")
                .note(format!("recorded: {}", step.after_site))
                .note(format!("rebuilt:  {}", show(&new_let))),
        );
    }
    ch.expect_after(&replace_at(prog, &step.path, new_let), step)
}

/// `LO..HI` split at its top-level `..`.
fn split_range(t: &str) -> Option<(String, String)> {
    let chars: Vec<char> = t.chars().collect();
    let mut depth = 0i32;
    for k in 0..chars.len().saturating_sub(1) {
        match chars[k] {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            '.' if depth == 0 && chars[k + 1] == '.' => {
                return Some((chars[..k].iter().collect(), chars[k + 2..].iter().collect()));
            }
            _ => {}
        }
    }
    None
}

/// The indices of a read `x[i1]…[id]` at `e` (outermost access), if `e` is one.
fn read_indices<'e>(e: &'e Expr, x: &str, d: usize) -> Option<Vec<&'e IndexExpr>> {
    let mut out = Vec::new();
    let mut cur = e;
    for _ in 0..d {
        let ExprKind::Access { tensor, index } = &cur.kind else {
            return None;
        };
        out.push(index);
        cur = tensor;
    }
    matches!(&cur.kind, ExprKind::Var(v) if v == x).then(|| {
        out.reverse();
        out
    })
}

/// Collects the obligations `LOk <= ik < HIk` of every read `x[i1]…[id]`; any other use
/// of `x` needs (part of) the tensor as a whole and refuses the window.
fn reads(
    ch: &Checker,
    e: &Expr,
    ctx: &Ctx,
    x: &str,
    bounds: &[(IndexExpr, IndexExpr)],
    out: &mut Vec<Obligation>,
) -> Res<()> {
    if let Some(indices) = read_indices(e, x, bounds.len()) {
        for ((lo, hi), index) in bounds.iter().zip(indices) {
            out.push(Obligation {
                name: "read_in_window".into(),
                goal: Pred::and(
                    Pred::cmp(CmpOp::Le, lo.clone(), index.clone()),
                    Pred::cmp(CmpOp::Lt, index.clone(), hi.clone()),
                ),
                facts: ch.facts(ctx),
            });
        }
        return Ok(());
    }
    if matches!(&e.kind, ExprKind::Var(v) if v == x) {
        return Err(VerifyError::new(
            "E1006",
            format!(
                "`{x}` is used other than by a read of every windowed dimension, so it cannot be windowed"
            ),
        ));
    }
    for (k, c) in e.children().into_iter().enumerate() {
        reads(ch, c, &ch.enter(ctx, e, k), x, bounds, out)?;
    }
    Ok(())
}

/// Re-indexes every read `x[i1]…[id]` as `x[i1 - LO1]…[id - LOd]`.
fn shift_reads(e: &Expr, x: &str, los: &[IndexExpr]) -> Expr {
    if read_indices(e, x, los.len()).is_some() {
        fn rebuild(e: &Expr, los: &[IndexExpr]) -> Expr {
            let (Some((lo, rest)), ExprKind::Access { tensor, index }) =
                (los.split_last(), &e.kind)
            else {
                return e.clone();
            };
            Expr::access(
                rebuild(tensor, rest),
                IndexExpr::sub(index.clone(), lo.clone()),
            )
        }
        return rebuild(e, los);
    }
    let mut out = e.clone();
    for c in out.children_mut() {
        *c = shift_reads(c, x, los);
    }
    out
}

#[cfg(test)]
mod tests {
    use atl_lang::steps::{STEPS, StepClass};

    /// Every tactic and loop annotation of the front end's step table is a step this
    /// checker checks (rule steps are checked by the rule checker; directives are
    /// recorded as the steps they expand to).
    #[test]
    fn every_tactic_and_loop_annotation_of_the_step_table_is_checked() {
        for s in STEPS {
            if matches!(s.class, StepClass::Tactic | StepClass::LoopHint) {
                // An optional word (`unroll x [off]`): the step without it and with it.
                let without = s.synopsis.split(" [").next().unwrap_or(s.synopsis);
                let with = s.synopsis.replace(['[', ']'], "");
                for form in [without, with.as_str()] {
                    assert_eq!(super::uncheckable(form), None, "`{form}`");
                }
            }
        }
    }
}

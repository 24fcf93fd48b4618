//! Random derivation steps for the soundness fuzzer: rule applications (`rw`, `rw<-`,
//! with random `at N` / `in PATH` and `with` values that include huge constants, zero,
//! negative numbers and the names of binders already in the program, to provoke
//! capture), the tactics `simpl`, `simpl_guard`, `check`, `window`, and the Halide-style
//! directives of `docs/directives.md` (`split`, `tile`, `reorder`, `fuse`, `stage`,
//! `compute_*`, `bound`, `specialize` with a block of such steps, the loop annotations).
//!
//! Steps are chosen from the program as it is after the previous accepted steps (its
//! sites, binders and lets), so that a good share of them apply; whether one is sound is
//! for the engine and the checker to say, and for the interpreter to confirm.

use atl_lang::ir::{Expr, ExprKind};
use atl_lang::shapes::ShapeEnv;
use atl_rewrites::Library;

use super::program::HUGE;
use super::rng::Rng;

/// Names in `e`: loop binders (`gen`/`sum`) and `let` variables.
pub fn names(e: &Expr) -> (Vec<String>, Vec<String>) {
    let (mut loops, mut lets) = (Vec::new(), Vec::new());
    e.walk(&mut |x| match &x.kind {
        ExprKind::Gen { var, .. } | ExprKind::Sum { var, .. } => loops.push(var.clone()),
        ExprKind::Let { var, .. } => lets.push(var.clone()),
        _ => {}
    });
    (loops, lets)
}

/// The inputs `e` reads, each once, in the order first read.
fn inputs(e: &Expr) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    e.walk(&mut |x| {
        if let ExprKind::Input(name) = &x.kind
            && !out.contains(name)
        {
            out.push(name.clone());
        }
    });
    out
}

/// Pairs of loops (outer, inner) with the inner the first loop under the outer one.
fn nested_pairs(e: &Expr) -> Vec<(String, String)> {
    fn first_loop(e: &Expr) -> Option<String> {
        match &e.kind {
            ExprKind::Gen { var, .. } | ExprKind::Sum { var, .. } => Some(var.clone()),
            _ => e.children().into_iter().find_map(first_loop),
        }
    }
    let mut out = Vec::new();
    e.walk(&mut |x| {
        if let ExprKind::Gen { var, body, .. } | ExprKind::Sum { var, body, .. } = &x.kind
            && let Some(inner) = first_loop(body)
        {
            out.push((var.clone(), inner));
        }
    });
    out
}

/// The metavariable names a rule's equation mentions (what `with` may set).
fn metavars(equation: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let bytes: Vec<char> = equation.chars().collect();
    let mut k = 0;
    while k < bytes.len() {
        if bytes[k] == '?' {
            let mut j = k + 1;
            while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == '_') {
                j += 1;
            }
            let name: String = bytes[k + 1..j].iter().collect();
            if !name.is_empty() && !out.contains(&name) {
                out.push(name);
            }
            k = j;
        } else {
            k += 1;
        }
    }
    out
}

enum Sort {
    Binder,
    Pred,
    Expr,
    Index,
}

/// What kind of metavariable `?m` is, from how the rule text uses it.
fn meta_sort(side: &str, m: &str) -> Sort {
    let tok = format!("?{m}");
    for kw in ["gen ", "sum ", "let "] {
        if side.contains(&format!("{kw}{tok}")) {
            return Sort::Binder;
        }
    }
    // `[?p]` or `[?p && …]`, not `[?r <= ?i]` (an index metavariable in a guard).
    if side.contains(&format!("[{tok}]"))
        || side.contains(&format!("[{tok} &&"))
        || side.contains(&format!("&& {tok}"))
    {
        return Sort::Pred;
    }
    if ["e", "v", "a", "b", "w"].contains(&m) {
        return Sort::Expr;
    }
    Sort::Index
}

fn pred_value(rng: &mut Rng, sizes: &[String], loops: &[String]) -> String {
    let n = rng.pick(sizes).clone();
    match rng.below(4) {
        0 => format!("{n} <= {}", rng.range(1, 5)),
        1 => format!("{n} >= {}", rng.range(1, 5)),
        2 if !loops.is_empty() => format!("{} < {}", rng.pick(loops), rng.range(1, 3)),
        _ => "true".to_string(),
    }
}

/// A cheap necessary condition for `pattern` to match `e`: the same constructors down
/// to depth 2 (metavariables match anything). Keeps most rule steps from being
/// "matches nowhere" without running the engine's matcher.
fn may_match(pattern: &Expr, e: &Expr, depth: u32) -> bool {
    if matches!(pattern.kind, ExprKind::Meta(_)) {
        return true;
    }
    if std::mem::discriminant(&pattern.kind) != std::mem::discriminant(&e.kind) {
        return false;
    }
    if let (ExprKind::Binary { op: a, .. }, ExprKind::Binary { op: b, .. }) =
        (&pattern.kind, &e.kind)
        && a != b
    {
        return false;
    }
    if let (ExprKind::Call { func: a, .. }, ExprKind::Call { func: b, .. }) =
        (&pattern.kind, &e.kind)
        && a != b
    {
        return false;
    }
    if depth == 0 {
        return true;
    }
    let (pc, ec) = (pattern.children(), e.children());
    pc.len() == ec.len() && pc.iter().zip(&ec).all(|(p, x)| may_match(p, x, depth - 1))
}

/// A value for a rule parameter or a `with`: small, zero, negative, huge, a size
/// expression, or a binder of the program (capture).
fn with_value(rng: &mut Rng, sizes: &[String], loops: &[String]) -> String {
    let n = rng.pick(sizes).clone();
    match rng.below(16) {
        0..=3 => rng.range(1, 5).to_string(),
        4 => "0".to_string(),
        5 => format!("-{}", rng.range(1, 3)),
        6 => rng.pick(&HUGE).to_string(),
        7 => n,
        8 => format!("{n} - 1"),
        9 => format!("min({n}, {})", rng.range(2, 5)),
        10 => format!("{n} / 2"),
        11 => format!("{n} + {}", rng.range(1, 5)),
        12 => format!("{n} - {}", rng.range(2, 6)),
        _ if !loops.is_empty() => rng.pick(loops).clone(),
        _ => rng.range(1, 5).to_string(),
    }
}

/// A binder name for a `with` on a binder metavariable or a directive's new loop:
/// fresh, or one already bound (capture).
fn binder_name(rng: &mut Rng, loops: &[String], taken: &[String], fresh: &str) -> String {
    if !loops.is_empty() && rng.chance(35) {
        rng.pick(loops).clone()
    } else {
        // Fresh for real: an earlier step of the derivation may have used `fresh`.
        let mut name = fresh.to_string();
        let mut k = 2;
        while taken.contains(&name) {
            name = format!("{fresh}{k}");
            k += 1;
        }
        name
    }
}

fn factor(rng: &mut Rng) -> String {
    match rng.below(10) {
        0..=5 => rng.range(2, 4).to_string(),
        6 => "1".to_string(),
        7 => "0".to_string(),
        8 => "-2".to_string(),
        _ => rng.pick(&HUGE).to_string(),
    }
}

/// One random step for the program whose current (derived so far) body is `e`.
pub fn step(
    rng: &mut Rng,
    lib: &Library,
    shapes: &ShapeEnv,
    e: &Expr,
    sizes: &[String],
    defs: &[String],
) -> String {
    let (loops, lets) = names(e);
    let taken: Vec<String> = loops.iter().chain(&lets).cloned().collect();
    // Now and then `specialize` on a random condition (sizes against huge, zero and
    // negative values, a conjunction; a loop variable or `||`, refused), its block of
    // one or two random steps; every step after it is refused (E0857).
    if rng.chance(5) && !sizes.is_empty() {
        let comparison = |rng: &mut Rng| -> String {
            let left = if !loops.is_empty() && rng.chance(5) {
                rng.pick(&loops).clone()
            } else {
                rng.pick(sizes).clone()
            };
            match rng.below(7) {
                0 | 1 => format!("{left} % {} == 0", factor(rng)),
                2 => format!("{left} <= {}", with_value(rng, sizes, &[])),
                3 => format!("{left} > {}", with_value(rng, sizes, &[])),
                4 => format!("{left} != {}", with_value(rng, sizes, &[])),
                5 => format!("{left} >= {}", with_value(rng, sizes, &[])),
                _ => format!("!({left} < {})", with_value(rng, sizes, &[])),
            }
        };
        let mut cond = comparison(rng);
        if rng.chance(30) {
            let join = if rng.chance(85) { "&&" } else { "||" };
            cond = format!("{cond} {join} {}", comparison(rng));
        }
        let inner: Vec<String> = (0..rng.range(1, 2))
            .map(|_| step(rng, lib, shapes, e, sizes, defs))
            .map(|s| {
                if s.starts_with("specialize") {
                    "simpl".to_string()
                } else {
                    s
                }
            })
            .collect();
        return format!("specialize {cond} {{ {} }}", inner.join("; "));
    }
    // Now and then a stage computed in a loop with its storage placed apart (the
    // sliding window), which the other branches reach too seldom to compile.
    if !lets.is_empty() && !loops.is_empty() && rng.chance(4) {
        return storage_step(rng, e, &loops, &lets);
    }
    let k = rng.below(100);
    if k < 55 {
        return rule_step(rng, lib, shapes, e, sizes, &loops);
    }
    if k < 72 {
        return match rng.below(6) {
            0 | 1 => "simpl".to_string(),
            2 => "simpl_guard".to_string(),
            3 => "check".to_string(),
            4 if !lets.is_empty() => {
                let x = rng.pick(&lets).clone();
                let lo = if loops.is_empty() || rng.chance(40) {
                    rng.range(-1, 1).to_string()
                } else {
                    rng.pick(&loops).clone()
                };
                let hi = format!("{lo} + {}", with_value(rng, sizes, &loops));
                format!("window {x} in {lo}..{hi}")
            }
            _ if !defs.is_empty() => format!("unfold {}", rng.pick(defs)),
            _ => "simpl".to_string(),
        };
    }
    if loops.is_empty() {
        return "simpl".to_string();
    }
    let v = rng.pick(&loops).clone();
    let pairs = nested_pairs(e);
    let (v2, w) = if !pairs.is_empty() && rng.chance(80) {
        let (a, b) = rng.pick(&pairs).clone();
        if rng.chance(50) { (a, b) } else { (b, a) }
    } else {
        (v.clone(), rng.pick(&loops).clone())
    };
    match rng.below(13) {
        // A staged copy of an input or a stage, transposed or as it is (refused with
        // E0834 unless it is a matrix read by index).
        11 => {
            let mut tensors = inputs(e);
            tensors.extend(lets.iter().cloned());
            if tensors.is_empty() {
                return "simpl".to_string();
            }
            let order = if rng.chance(75) { "1, 0" } else { "0, 1" };
            format!(
                "stage {} into {} order {order}",
                rng.pick(&tensors),
                binder_name(rng, &loops, &taken, "st")
            )
        }
        0..=2 => {
            let tail = match rng.below(5) {
                0 => " tail round",
                1 => " tail shift",
                2 => " tail guard",
                _ => "",
            };
            format!(
                "split {v} by {} into {}, {}{tail}",
                factor(rng),
                binder_name(rng, &loops, &taken, "fo"),
                binder_name(rng, &loops, &taken, "fi")
            )
        }
        3 => format!("tile {v2}, {w} by {}, {}", factor(rng), factor(rng)),
        4 | 5 => format!("reorder {v2}, {w}"),
        6 => format!(
            "fuse {v2}, {w} into {}",
            binder_name(rng, &loops, &taken, "ff")
        ),
        7 if !lets.is_empty() => format!("compute_root {}", rng.pick(&lets)),
        8 if !lets.is_empty() => format!("compute_inline {}", rng.pick(&lets)),
        9 if !lets.is_empty() => {
            if rng.chance(40) {
                return storage_step(rng, e, &loops, &lets);
            }
            format!("compute_at {} at {v}", rng.pick(&lets))
        }
        10 => format!("bound {v} to {}", with_value(rng, sizes, &[])),
        // A loop's full tiles apart from its last, or an input packed into column
        // panels (refused unless it is a matrix read with the columns): with a tile,
        // the last column tile's lanes past the extent read the panels' zeros, and
        // lowering sums them without their guard (its copy never stores them).
        12 if rng.chance(60) => {
            let tensors = inputs(e);
            if tensors.is_empty() || rng.chance(50) {
                format!("partition {v}")
            } else {
                format!(
                    "pack {} by {} into {}",
                    rng.pick(&tensors),
                    factor(rng),
                    binder_name(rng, &loops, &taken, "pk")
                )
            }
        }
        // Now and then the kernel's vector width (a second one in a derivation is
        // refused, E0849; the pragma goes into the C the fuzzer compiles).
        _ if rng.chance(15) => format!("vector_width {}", rng.pick(&["128", "256", "512"])),
        _ => {
            let kind = rng.pick(&["parallel", "vectorize", "unroll"]);
            format!("{kind} {v}")
        }
    }
}

/// A site of the kind issue 17's holes were found at: a `++` or a read of one (its
/// operands' extents become offsets: holes 1 and 3), a guard (`guard_elim` under facts
/// that only look true: hole 7), or any term under a guard on the sizes alone, whose
/// fact does not hold where the term's shape is observed (hole 2).
fn hot_site(site: &atl_rewrites::engine::Site<'_>, sizes: &[String]) -> bool {
    let under_size_guard = site.ctx.facts.iter().any(|f| {
        let vars = f.vars();
        !vars.is_empty() && vars.iter().all(|v| sizes.contains(v))
    });
    match &site.expr.kind {
        ExprKind::Concat(..) | ExprKind::Guard { .. } => true,
        ExprKind::Access { tensor, .. } => matches!(tensor.kind, ExprKind::Concat(..)),
        ExprKind::Gen { .. } | ExprKind::Sum { .. } => under_size_guard,
        _ => false,
    }
}

fn rule_step(
    rng: &mut Rng,
    lib: &Library,
    shapes: &ShapeEnv,
    e: &Expr,
    sizes: &[String],
    loops: &[String],
) -> String {
    let sites = atl_rewrites::engine::sites(shapes, e);
    // Names a fresh binder must avoid: loop binders and `let` variables.
    let taken: Vec<String> = {
        let (mut all, lets) = names(e);
        all.extend(lets);
        all
    };
    // Half of the time a site of the holes' kind, if there is one.
    let hot: Vec<usize> = (0..sites.len())
        .filter(|&k| hot_site(&sites[k], sizes))
        .collect();
    let site = if !hot.is_empty() && rng.chance(50) {
        &sites[*rng.pick(&hot)]
    } else {
        &sites[rng.below(sites.len())]
    };
    let forward = rng.chance(75);
    let fitting: Vec<&atl_rewrites::rule::Rule> = lib
        .rules()
        .iter()
        .filter(|r| may_match(if forward { &r.lhs } else { &r.rhs }, site.expr, 2))
        .collect();
    // Rules whose side is a bare metavariable (`let_intro`, `guard_dup`, …) fit every
    // site; prefer the ones that say something about this site.
    let specific: Vec<&atl_rewrites::rule::Rule> = fitting
        .iter()
        .copied()
        .filter(|r| {
            !matches!(
                (if forward { &r.lhs } else { &r.rhs }).kind,
                ExprKind::Meta(_)
            )
        })
        .collect();
    // At a site of a hole's kind, often the rule of that hole (the others are tried
    // there too, through `specific`).
    let favourite = match &site.expr.kind {
        ExprKind::Concat(..) if forward => Some("concat_def"),
        ExprKind::Access { tensor, .. }
            if forward && matches!(tensor.kind, ExprKind::Concat(..)) =>
        {
            Some(*rng.pick(&["get_concat_r", "get_concat_l"]))
        }
        ExprKind::Guard { .. } if forward => Some("guard_elim"),
        _ => None,
    }
    .and_then(|name| lib.rules().iter().find(|r| r.name == name));
    let rule = if let Some(r) = favourite.filter(|_| rng.chance(50)) {
        r
    } else if fitting.is_empty() || rng.chance(8) {
        &lib.rules()[rng.below(lib.rules().len())]
    } else if !specific.is_empty() && rng.chance(85) {
        specific[rng.below(specific.len())]
    } else {
        fitting[rng.below(fitting.len())]
    };
    let mut s = format!("{} {}", if forward { "rw" } else { "rw<-" }, rule.name);
    match rng.below(20) {
        0..=11 => {
            let p: Vec<String> = site.path.iter().map(usize::to_string).collect();
            s.push_str(&format!(" in [{}]", p.join(", ")));
        }
        12..=14 => s.push_str(&format!(" at {}", rng.range(1, 3))),
        _ => {}
    }
    let mut withs: Vec<String> = Vec::new();
    for p in &rule.params {
        withs.push(format!("{p} := {}", with_value(rng, sizes, loops)));
    }
    // Metavariables only the target side has (the binders a forward step names,
    // what a backward step must be told): usually given, with values that may capture.
    let (lhs, rhs) = rule
        .equation
        .split_once("=>")
        .unwrap_or((&rule.equation, ""));
    let (from_side, to_side) = if forward { (lhs, rhs) } else { (rhs, lhs) };
    let known = metavars(from_side);
    // Metavariables a `shape(?v) = [?r, ..]` condition binds from the match: a value
    // given for them is only checked, so they are given now and then.
    let shape_bound: Vec<String> = rule
        .conditions
        .iter()
        .filter_map(|c| match c {
            atl_rewrites::rule::Condition::Shape { dims, .. } => Some(dims),
            _ => None,
        })
        .flatten()
        .filter_map(|d| match d {
            atl_lang::index::IndexExpr::Meta(m) => Some(m.clone()),
            _ => None,
        })
        .collect();
    for m in metavars(to_side) {
        if known.contains(&m) || rule.params.contains(&m) || !rng.chance(60) {
            continue;
        }
        if shape_bound.contains(&m) && !rng.chance(15) {
            continue;
        }
        let value = match meta_sort(to_side, &m) {
            Sort::Binder => binder_name(rng, loops, &taken, &format!("fz{}", withs.len() + 1)),
            Sort::Pred => pred_value(rng, sizes, loops),
            Sort::Expr => rng.pick(&["f[0]", "1.0", "0.0"]).to_string(),
            Sort::Index => with_value(rng, sizes, loops),
        };
        withs.push(format!("{m} := {value}"));
    }
    // Now and then a `with` on a metavariable the match already fixes.
    if rng.chance(4) && !known.is_empty() {
        let m = rng.pick(&known).clone();
        withs.push(format!("{m} := {}", with_value(rng, sizes, loops)));
    }
    if !withs.is_empty() {
        s.push_str(&format!(" with {}", withs.join(", ")));
    }
    s
}

/// `compute_at x at v` followed by a `store_at` (at the loop around `v`, or any loop)
/// or a `store_root` of `x`, and two times in five a `fold_storage` of it by 1 to 6
/// rows (the sliding window and folding, which only lowering applies).
fn storage_step(rng: &mut Rng, e: &Expr, loops: &[String], lets: &[String]) -> String {
    let x = rng.pick(lets).clone();
    let v = rng.pick(loops).clone();
    let pairs = nested_pairs(e);
    let around: Vec<&String> = pairs
        .iter()
        .filter(|(_, inner)| *inner == v)
        .map(|(outer, _)| outer)
        .collect();
    let store = match rng.below(4) {
        0 | 1 if !around.is_empty() => format!("store_at {x} at {}", rng.pick(&around)),
        2 => format!("store_at {x} at {}", rng.pick(loops)),
        _ => format!("store_root {x}"),
    };
    let mut text = format!("compute_at {x} at {v}\n  {store}");
    if rng.chance(40) {
        text.push_str(&format!("\n  fold_storage {x} by {}", rng.range(1, 6)));
    }
    text
}

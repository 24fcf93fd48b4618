//! Stages before the search: a specification with `let` stages is searched as the one
//! nest its stages inline into (`compute_inline` of each, Halide's default of a stage
//! with no schedule), when inlining leaves one. That is the fused schedule of a stencil
//! pipeline (the blur's two stages read as nine taps of the input), whose tiles then run
//! without a buffer; stages whose inlining leaves a loop in the body (a reduction such as
//! a softmax's row sum, recomputed per element) are refused with the reason, as before.
//!
//! The `compute_inline` steps become the prefix of every candidate's directives
//! ([`Nest::prefix`]): the search never changes the specification itself.
//!
//! Otherwise ([`Plan::Stages`]) the stages stay where the specification computes
//! them (Halide's `compute_root` of each), and each is scheduled in turn:
//! - a stage that is one nest (attention's scores `S = gen i, j: sum d: …`, its output
//!   `gen i, e: sum j: P[i, j] * V[j, e]`, reading the stages before it like inputs) is
//!   searched as any nest;
//! - a stage that is not (a softmax's rows: `gen i, j: let mx = max k: … in let s =
//!   sum k: … in …`) gets a few schedules written out ([`rows_variants`]): its inner
//!   stages computed once per row (`compute_at mx at i`, at the innermost loop their
//!   values depend on), optionally their reductions as vector partial results
//!   (`split`, `rfactor`, `vectorize`), its rows vectorized and its outer loop parallel.
//!
//! The stages written out go first (as written, a softmax's per-element row maximum
//! costs a factor of the row length and would drown every other choice), then the
//! nests in program order, each searched with the schedule found so far as its prefix.

use std::collections::{BTreeMap, BTreeSet};

use atl_lang::index::IndexExpr;
use atl_lang::ir::{Expr, ExprKind, Program};

use crate::candidate::fresh_in;
use crate::nest::{Loop, Nest, analyze, analyze_expr};
use crate::search::{first_message, without_derivations};

/// The `let` stages of `def`'s body, outermost first.
pub fn stage_names(program: &Program, def: &str) -> Vec<String> {
    let mut names = Vec::new();
    if let Some(d) = program.def(def) {
        d.body.walk(&mut |e: &Expr| {
            if let ExprKind::Let { var, .. } = &e.kind
                && !names.contains(var)
            {
                names.push(var.clone());
            }
        });
    }
    names
}

/// What the search schedules.
#[derive(Clone, Debug)]
pub enum Plan {
    /// One nest (the specification's, or the one its stages inline into).
    One(Box<Nest>),
    /// Stages scheduled one after the other, after `preamble`: the steps that made them
    /// stages (a reduction under an epilogue staged, [`epilogue_staging`]), which every
    /// candidate's directives start with; empty when the specification has its stages.
    Stages {
        stages: Vec<Stage>,
        preamble: Vec<String>,
    },
}

/// One stage of a [`Plan::Stages`].
#[derive(Clone, Debug)]
pub enum Stage {
    /// A nest, searched.
    Nest(Nest),
    /// Not a nest: schedules written out, `(summary, directives)`; `nest` holds its
    /// name and loops (no reads: the cost model does not rank these).
    Fixed {
        nest: Nest,
        variants: Vec<(String, Vec<String>)>,
    },
}

impl Stage {
    pub fn nest(&self) -> &Nest {
        match self {
            Stage::Nest(n) | Stage::Fixed { nest: n, .. } => n,
        }
    }
}

/// How `def` is searched at `sizes` on a machine with `lanes` vector lanes, or why it
/// cannot be.
pub fn plan(
    source: &str,
    program: &Program,
    def: &str,
    sizes: &BTreeMap<String, i64>,
    lanes: i64,
    threads: usize,
) -> Result<Plan, String> {
    let why = match nest_of(source, program, def, sizes) {
        Ok(nest) => return Ok(Plan::One(Box::new(nest))),
        Err(why) => why,
    };
    let Some(d) = program.def(def) else {
        return Err(why);
    };
    // A reduction under an epilogue (`(sum k: …) + c[j]`) is first made a stage of its
    // own; the specification's stages are searched as they are.
    let staged = match epilogue_staging(program, &d.body) {
        Some(preamble) => {
            let (staged, name) = inline(source, def, &preamble)
                .map_err(|e| format!("{why}; its reduction could not be staged ({e})"))?;
            Some((staged, name, preamble))
        }
        None => None,
    };
    let (program, preamble, body) = match &staged {
        Some((staged, name, preamble)) => match staged.def(name) {
            Some(d) => (staged, preamble.clone(), &d.body),
            None => return Err(why),
        },
        None => (program, Vec::new(), &d.body),
    };
    // The stages computed at the root (`let X = V in …` chains at the top), then the
    // definition's own value.
    let mut chain: Vec<(String, &Expr)> = Vec::new();
    let whole = body;
    let mut body = body;
    while let ExprKind::Let {
        var,
        value,
        body: rest,
    } = &body.kind
    {
        chain.push((var.clone(), value));
        body = rest;
    }
    chain.push((def.to_string(), body));
    // Every name of the program, which the names the variants make up avoid.
    let mut bound = std::collections::HashSet::new();
    whole.bound_names(&mut bound);
    let taken: BTreeSet<String> = bound
        .into_iter()
        .chain(program.declared_names().map(str::to_string))
        .collect();
    // A loop whose name is also the written name of another (renamed) loop is spelled
    // with its stage (`S.i`: `i` alone would name attention's three `i` loops).
    let mut loops: Vec<String> = Vec::new();
    whole.walk(&mut |e: &Expr| {
        if let ExprKind::Gen { var, .. }
        | ExprKind::Sum { var, .. }
        | ExprKind::MaxRed { var, .. } = &e.kind
        {
            loops.push(var.clone());
        }
    });
    let spellings = |stage: &str, nest: &Nest| -> BTreeMap<String, String> {
        nest.loops()
            .filter(|l| {
                loops
                    .iter()
                    .any(|other| other != &l.name && program.written_name(other) == l.name)
            })
            .map(|l| (l.name.clone(), format!("{stage}.{}", l.name)))
            .collect()
    };
    let env = |name: &str| sizes.get(name).copied();
    let mut shapes: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    let mut fixed = Vec::new();
    let mut nests = Vec::new();
    for (name, value) in &chain {
        let gens = gen_chain(value);
        let extents: Option<Vec<i64>> = gens
            .iter()
            .map(|(_, lo, hi)| {
                (lo.as_const() == Some(0))
                    .then(|| hi.eval(&env).ok())
                    .flatten()
            })
            .collect();
        match analyze_expr(program, value, def, sizes, &shapes) {
            Ok(mut nest) => {
                nest.spellings = spellings(name, &nest);
                nest.reserved = taken.clone();
                nests.push(Stage::Nest(nest));
            }
            Err(_) => {
                let variants = rows_variants(value, lanes, threads, &taken);
                if let (false, Some(extents)) = (variants.is_empty(), &extents) {
                    let nest = Nest {
                        def: def.to_string(),
                        gens: gens
                            .iter()
                            .zip(extents)
                            .map(|((v, _, _), e)| Loop {
                                name: v.clone(),
                                reduction: false,
                                extent: *e,
                                unrolled: false,
                            })
                            .collect(),
                        sums: Vec::new(),
                        reads: Vec::new(),
                        input_shapes: Vec::new(),
                        layouts: BTreeMap::new(),
                        ops: 1,
                        guard_vars: Default::default(),
                        prefix: Vec::new(),
                        suffix: Vec::new(),
                        spellings: BTreeMap::new(),
                        reserved: taken.clone(),
                    };
                    let nest = Nest {
                        spellings: spellings(name, &nest),
                        ..nest
                    };
                    fixed.push(Stage::Fixed { nest, variants });
                }
            }
        }
        if let Some(extents) = extents {
            shapes.insert(name.clone(), extents);
        }
    }
    if nests.is_empty() && fixed.is_empty() {
        return Err(format!(
            "{why}; and none of its stages is a nest or rows the search can schedule"
        ));
    }
    fixed.extend(nests);
    Ok(Plan::Stages {
        stages: fixed,
        preamble,
    })
}

/// The steps that make the one reduction of an element-wise expression a stage of its
/// own, where the body under the `gen` loops is a scalar expression around exactly one
/// `sum` (a matmul under a bias, `(sum k < K: A[i, k] * B[k, j]) + c[j]`, or a scaled
/// one): `rw let_intro around (sum k < K: ?) with x := acc`, then `compute_root acc`,
/// which hoists it out of the loops as `let acc = gen i, j: sum k: …` before the
/// element-wise rest (Halide's update step computed at root before the output).
pub fn epilogue_staging(program: &Program, body: &Expr) -> Option<Vec<String>> {
    let mut inner = body;
    while let ExprKind::Gen { body, .. } = &inner.kind {
        inner = body;
    }
    if matches!(
        inner.kind,
        ExprKind::Sum { .. } | ExprKind::MaxRed { .. } | ExprKind::Let { .. }
    ) || std::ptr::eq(inner, body)
    {
        return None;
    }
    // The loops (and lets) of the scalar body: exactly one, a sum from 0 (so its own
    // body has none).
    let mut loops = 0;
    let mut sum = None;
    inner.walk(&mut |e: &Expr| match &e.kind {
        ExprKind::Sum { var, lo, hi, .. } => {
            loops += 1;
            sum = Some((var.clone(), lo.clone(), hi.clone()));
        }
        ExprKind::Gen { .. } | ExprKind::MaxRed { .. } | ExprKind::Let { .. } => loops += 1,
        _ => {}
    });
    let (Some((var, lo, hi)), 1) = (sum, loops) else {
        return None;
    };
    if lo.as_const() != Some(0) {
        return None;
    }
    // Fresh in the whole definition: its `gen` loops are binders too.
    let mut used: BTreeSet<String> = atl_lang::ir::all_names(body)
        .into_iter()
        .chain(program.declared_names().map(str::to_string))
        .collect();
    let name = fresh_in(&mut used, "acc".to_string());
    Some(vec![
        format!(
            "rw let_intro around (sum {} < {hi}: ?) with x := {name}",
            program.written_name(&var)
        ),
        format!("compute_root {name}"),
    ])
}

/// The `gen` loops at the head of `e`, outermost first: `(var, lo, hi)`.
fn gen_chain(e: &Expr) -> Vec<(String, IndexExpr, IndexExpr)> {
    let mut out = Vec::new();
    let mut cur = e;
    while let ExprKind::Gen { var, lo, hi, body } = &cur.kind {
        out.push((var.clone(), lo.clone(), hi.clone()));
        cur = body;
    }
    out
}

/// Schedules of a stage `gen g1, …, gm: …` whose body computes stages of its own (`let
/// mx = max k: x[i, k] in …`): each inner stage computed at the innermost of the gens
/// its value depends on (once per row, instead of once per element), then, in the
/// variants, their one-loop reductions as `lanes` partial results held in a vector
/// (sums only, then maxima too: a maximum's split needs the row length to be a
/// multiple, which only an `assume` gives), the innermost gen vectorized and, with
/// more than one thread, the outermost parallel. Empty when the stage has no inner
/// stage to place.
pub fn rows_variants(
    value: &Expr,
    lanes: i64,
    threads: usize,
    taken: &BTreeSet<String>,
) -> Vec<(String, Vec<String>)> {
    let gens = gen_chain(value);
    let Some((innermost, _, _)) = gens.last() else {
        return Vec::new();
    };
    let mut lets: Vec<(String, Expr)> = Vec::new();
    value.walk(&mut |e: &Expr| {
        if let ExprKind::Let { var, value, .. } = &e.kind {
            lets.push((var.clone(), (**value).clone()));
        }
    });
    if lets.is_empty() {
        return Vec::new();
    }
    let mut used = taken.clone();
    let mut placed = Vec::new();
    let mut reductions: Vec<(String, String, bool)> = Vec::new();
    for (name, v) in &lets {
        let free = v.free_index_vars();
        // A value that reads the innermost gen is computed per element already.
        let Some((at, _, _)) = gens.iter().rev().find(|(g, _, _)| free.contains(g)) else {
            continue;
        };
        if at == innermost && gens.len() > 1 {
            continue;
        }
        placed.push(format!("compute_at {name} at {at}"));
        // The reduction's loop spelled with its stage (`mx.k`): a softmax's two row
        // reductions were both written `k`.
        match &v.kind {
            ExprKind::Sum { var, body, .. } if !has_loop(body) => {
                reductions.push((var.clone(), format!("{name}.{var}"), true))
            }
            ExprKind::MaxRed { var, body, .. } if !has_loop(body) => {
                reductions.push((var.clone(), format!("{name}.{var}"), false))
            }
            _ => {}
        }
    }
    if placed.is_empty() {
        return Vec::new();
    }
    let mut tail = Vec::new();
    if threads > 1 {
        tail.push(format!("parallel {}", gens[0].0));
    }
    tail.push(format!("vectorize {innermost}"));
    let mut partials = |maxima: bool| -> Vec<String> {
        let mut steps = Vec::new();
        for (k, spelled, is_sum) in &reductions {
            if !is_sum && !maxima {
                continue;
            }
            let mut take = |base: String| fresh_in(&mut used, base);
            let (outer, inner) = (take(format!("{k}o")), take(format!("{k}i")));
            let (lane, part) = (take(format!("{k}l")), take(format!("{k}part")));
            steps.push(format!("split {spelled} by {lanes} into {outer}, {inner}"));
            steps.push(format!("rfactor {inner} into {lane} as {part}"));
            if *is_sum {
                steps.push(format!("reorder {outer}, {lane}"));
            }
            steps.push(format!("vectorize {lane}"));
        }
        steps
    };
    let sums = partials(false);
    let all = partials(true);
    let mut variants = vec![(
        format!("{} per row", placed.len()),
        [placed.clone(), tail.clone()].concat(),
    )];
    if !sums.is_empty() {
        variants.push((
            format!("{} per row, sums in {lanes} partial sums", placed.len()),
            [placed.clone(), sums.clone(), tail.clone()].concat(),
        ));
    }
    if all.len() > sums.len() {
        variants.push((
            format!(
                "{} per row, reductions in {lanes} partial results",
                placed.len()
            ),
            [placed, all, tail].concat(),
        ));
    }
    // Name the stage's rows in the summaries.
    let rows = &gens[0].0;
    variants
        .into_iter()
        .map(|(s, steps)| (format!("stages of the rows of `{rows}`: {s}"), steps))
        .collect()
}

/// Whether `e` contains a loop.
fn has_loop(e: &Expr) -> bool {
    let mut found = false;
    e.walk(&mut |n| {
        found |= matches!(
            n.kind,
            ExprKind::Gen { .. } | ExprKind::Sum { .. } | ExprKind::MaxRed { .. }
        )
    });
    found
}

/// The nest of `def` at `sizes`: its own, or, if it has stages, the one `compute_inline`
/// of every stage leaves (with those steps as its prefix). The error is why neither is
/// a nest the search handles.
pub fn nest_of(
    source: &str,
    program: &Program,
    def: &str,
    sizes: &BTreeMap<String, i64>,
) -> Result<Nest, String> {
    let why = match analyze(program, def, sizes) {
        Ok(nest) => return Ok(nest),
        Err(why) => why,
    };
    let stages = stage_names(program, def);
    if stages.is_empty() {
        return Err(why);
    }
    let prefix: Vec<String> = stages
        .iter()
        .map(|s| format!("compute_inline {s}"))
        .collect();
    let inlined = inline(source, def, &prefix).map_err(|e| {
        format!("{why}; its stages could not be inlined into one nest either ({e})")
    })?;
    let (inlined_program, inlined_name) = inlined;
    let body = &inlined_program
        .def(&inlined_name)
        .ok_or_else(|| "the inlined definition is missing".to_string())?
        .body;
    // Named as the user's definition in the messages.
    let mut nest =
        analyze_expr(&inlined_program, body, def, sizes, &BTreeMap::new()).map_err(|e| {
            format!(
                "{why}; with its stages inlined ({}) it is not one nest either: {e}",
                prefix.join(", ")
            )
        })?;
    nest.def = def.to_string();
    nest.prefix = prefix;
    Ok(nest)
}

/// The program with `derive NAME from def { steps }` replayed, and `NAME`: the file
/// loaded as `atl check` loads it (the search's candidates are loaded the same way).
fn inline(source: &str, def: &str, steps: &[String]) -> Result<(Program, String), String> {
    let mut name = format!("{def}_inlined");
    while source.contains(&name) {
        name.push('_');
    }
    let text = format!(
        "{}\nderive {name} from {def} {{\n  {}\n}}\n",
        without_derivations(source),
        steps.join("\n  ")
    );
    let scratch = tempfile::Builder::new()
        .prefix("atl-schedule-inline")
        .suffix(".atl")
        .tempfile()
        .map_err(|e| format!("cannot write a scratch file: {e}"))?;
    std::fs::write(scratch.path(), text)
        .map_err(|e| format!("cannot write a scratch file: {e}"))?;
    let loaded =
        atl_driver::load::load_derived(&mut atl_driver::Collect::default(), scratch.path())
            .map_err(|f| first_message(&f))?;
    Ok((loaded.program, name))
}

//! The shape of a specification the search schedules: a perfect nest of `gen` loops
//! over a nest of `sum` loops around a scalar body (`gen i, j: sum k: A[i, k] * B[k, j]`,
//! a convolution, an element-wise map), with the extents at the sizes searched for and
//! the inputs the body reads. Anything else (stages, lets, max-reductions, loops inside
//! the body) is refused with the reason: the search does not cover it yet.

use std::collections::{BTreeMap, BTreeSet};

use atl_lang::index::IndexExpr;
use atl_lang::ir::{Expr, ExprKind, Program};

/// One loop of the nest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loop {
    pub name: String,
    /// A `sum` (its iterations add into the same elements) rather than a `gen`.
    pub reduction: bool,
    /// The trip count at the sizes searched for.
    pub extent: i64,
    /// The extent is a number in the program, small enough for lowering to unroll the
    /// loop (`sum ry < 3`): no loop is left in the C, entering it costs nothing.
    pub unrolled: bool,
}

/// A read of an input: `A[i, k]` is `A` with the indices `i`, `k`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Read {
    pub input: String,
    pub indices: Vec<IndexExpr>,
    /// Read under a guard (`[0 <= y + ry - 1 && …] * inp[…]`): a boundary condition the
    /// `boundary` directive can turn into a zero-bordered copy.
    pub guarded: bool,
}

/// A specification the search can schedule.
#[derive(Clone, Debug, PartialEq)]
pub struct Nest {
    pub def: String,
    /// The `gen` loops, outermost first; the last is the output's unit-stride dimension.
    pub gens: Vec<Loop>,
    /// The `sum` loops, outermost first, all inside the gens.
    pub sums: Vec<Loop>,
    pub reads: Vec<Read>,
    /// The shape of every input read, at the sizes searched for.
    pub input_shapes: Vec<(String, Vec<i64>)>,
    /// The storage order of each input read that is declared with a `layout` other
    /// than row-major (`order[p]`: the dimension stored at position `p`).
    pub layouts: BTreeMap<String, Vec<usize>>,
    /// Scalar operations per innermost iteration (`*`, `+`, functions).
    pub ops: usize,
    /// The loop variables the body's guards mention: the loops `partition` can split
    /// into a guard-free steady state and its boundary iterations.
    pub guard_vars: BTreeSet<String>,
    /// Directives every candidate starts with (`compute_inline` of the specification's
    /// stages, [`crate::stages`]); the loops above are those of the program they leave.
    pub prefix: Vec<String>,
    /// Directives every candidate ends with (the schedules of the stages after this
    /// one, [`crate::search::search_stages`]).
    pub suffix: Vec<String>,
    /// How the candidate's directives spell a loop whose name alone is ambiguous (a
    /// stage's `i` when another stage's loop was also written `i`): `S.i`.
    pub spellings: BTreeMap<String, String>,
    /// Further names the program uses (other stages' loops), which made-up names avoid.
    pub reserved: BTreeSet<String>,
}

impl Nest {
    pub fn loops(&self) -> impl Iterator<Item = &Loop> {
        self.gens.iter().chain(&self.sums)
    }

    pub fn find(&self, name: &str) -> Option<&Loop> {
        self.loops().find(|l| l.name == name)
    }

    /// Every name the program may already use for a loop or a stage.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.loops()
            .map(|l| l.name.as_str())
            .chain(self.reads.iter().map(|r| r.input.as_str()))
            .chain(self.reserved.iter().map(String::as_str))
    }

    /// A directive with the loops whose names are ambiguous spelled as `stage.var`.
    pub fn spell(&self, step: &str) -> String {
        if self.spellings.is_empty() {
            return step.to_string();
        }
        let mut out = String::new();
        let mut word = String::new();
        let flush = |word: &mut String, out: &mut String| {
            out.push_str(self.spellings.get(word.as_str()).unwrap_or(word));
            word.clear();
        };
        for c in step.chars() {
            if c.is_alphanumeric() || c == '_' || (c == '.' && !word.is_empty()) {
                word.push(c);
            } else {
                flush(&mut word, &mut out);
                out.push(c);
            }
        }
        flush(&mut word, &mut out);
        out
    }
}

/// The nest of definition `def` at `sizes`, or why the search cannot schedule it.
pub fn analyze(
    program: &Program,
    def: &str,
    sizes: &BTreeMap<String, i64>,
) -> Result<Nest, String> {
    let d = program
        .def(def)
        .ok_or_else(|| format!("no definition `{def}`"))?;
    analyze_expr(program, &d.body, def, sizes, &BTreeMap::new())
}

/// The nest of the expression `e` (a definition's body, or the value of one of its
/// stages) at `sizes`; `stages` are the shapes of the stages it may read like inputs
/// (`S[i, k]` of a `let S` computed before it). `def` names the definition.
pub fn analyze_expr(
    program: &Program,
    e: &Expr,
    def: &str,
    sizes: &BTreeMap<String, i64>,
    stages: &BTreeMap<String, Vec<i64>>,
) -> Result<Nest, String> {
    let env = |name: &str| sizes.get(name).copied();
    let extent = |lo: &IndexExpr, hi: &IndexExpr, var: &str| -> Result<i64, String> {
        if lo.as_const() != Some(0) {
            return Err(format!(
                "the loop `{var}` does not start at 0 (the search handles loops from 0)"
            ));
        }
        hi.eval(&env)
            .map_err(|e| format!("the extent of `{var}` at these sizes: {e}"))
    };
    let mut gens = Vec::new();
    let mut sums = Vec::new();
    let mut body: &Expr = e;
    // A scale of the reduction (`(sum d: …) * 0.125`), which `reorder` moves into the
    // sum (`scale_into_sum`): one more operation per element.
    let mut scale_ops = 0;
    loop {
        match &body.kind {
            ExprKind::Gen {
                var,
                lo,
                hi,
                body: b,
            } if sums.is_empty() => {
                gens.push(Loop {
                    name: var.clone(),
                    reduction: false,
                    extent: extent(lo, hi, var)?,
                    unrolled: unrolled(hi),
                });
                body = b;
            }
            ExprKind::Sum {
                var,
                lo,
                hi,
                body: b,
            } => {
                sums.push(Loop {
                    name: var.clone(),
                    reduction: true,
                    extent: extent(lo, hi, var)?,
                    unrolled: unrolled(hi),
                });
                body = b;
            }
            ExprKind::Binary {
                op: atl_lang::ir::BinOp::Mul,
                lhs,
                rhs,
            } if sums.is_empty() && !gens.is_empty() && scale_ops == 0 => {
                let (sum, scale) = match (&lhs.kind, &rhs.kind) {
                    (ExprKind::Sum { .. }, _) => (lhs, rhs),
                    (_, ExprKind::Sum { .. }) => (rhs, lhs),
                    _ => break,
                };
                if !matches!(scale.kind, ExprKind::Lit(_)) {
                    break;
                }
                scale_ops = 1;
                body = sum;
            }
            _ => break,
        }
    }
    if gens.is_empty() {
        return Err(format!(
            "`{def}` is not a `gen` nest (the search schedules tensors computed by `gen` loops)"
        ));
    }
    let mut found = Scan {
        stages: stages.keys().cloned().collect(),
        ..Scan::default()
    };
    scan(body, false, &mut found)?;
    let Scan {
        reads,
        ops,
        guard_vars,
        ..
    } = found;
    let ops = ops + scale_ops;
    let mut input_shapes = Vec::new();
    let mut layouts = BTreeMap::new();
    for input in &program.inputs {
        if reads.iter().any(|r| r.input == input.name) {
            if let Some(l) = &input.layout
                && l.order.iter().enumerate().any(|(p, &d)| p != d)
            {
                layouts.insert(input.name.clone(), l.order.clone());
            }
            let dims = input
                .shape
                .iter()
                .map(|d| d.eval(&env))
                .collect::<Result<Vec<i64>, _>>()
                .map_err(|e| format!("the shape of `{}` at these sizes: {e}", input.name))?;
            input_shapes.push((input.name.clone(), dims));
        }
    }
    for (stage, dims) in stages {
        if reads.iter().any(|r| &r.input == stage) {
            input_shapes.push((stage.clone(), dims.clone()));
        }
    }
    Ok(Nest {
        def: def.to_string(),
        gens,
        sums,
        reads,
        input_shapes,
        layouts,
        ops: ops.max(1),
        guard_vars,
        prefix: Vec::new(),
        suffix: Vec::new(),
        spellings: BTreeMap::new(),
        reserved: BTreeSet::new(),
    })
}

/// What [`scan`] collects from the scalar body.
#[derive(Default)]
struct Scan {
    /// The stages computed before the nest, read like inputs.
    stages: BTreeSet<String>,
    reads: Vec<Read>,
    ops: usize,
    guard_vars: BTreeSet<String>,
}

/// Collects the reads of the scalar body, counts its operations and notes the
/// variables its guards mention; refuses the constructs the search does not handle.
fn scan(e: &Expr, guarded: bool, found: &mut Scan) -> Result<(), String> {
    match &e.kind {
        ExprKind::Lit(_) => Ok(()),
        // A coordinate used as a value: one conversion, no read.
        ExprKind::Coord(_) => {
            found.ops += 1;
            Ok(())
        }
        ExprKind::Access { .. } => {
            let mut indices = Vec::new();
            let mut cur = e;
            while let ExprKind::Access { tensor, index } = &cur.kind {
                indices.push(index.clone());
                cur = tensor;
            }
            indices.reverse();
            match &cur.kind {
                ExprKind::Input(name) | ExprKind::Var(name)
                    if matches!(cur.kind, ExprKind::Input(_)) || found.stages.contains(name) =>
                {
                    found.reads.push(Read {
                        input: name.clone(),
                        indices,
                        guarded,
                    });
                    Ok(())
                }
                _ => Err("the body reads something other than an input (a stage or a definition): the search handles one-stage nests".to_string()),
            }
        }
        ExprKind::Guard { pred, body } => {
            pred.collect_vars(&mut found.guard_vars);
            scan(body, true, found)
        }
        ExprKind::Neg(a) => {
            found.ops += 1;
            scan(a, guarded, found)
        }
        ExprKind::Binary { lhs, rhs, .. } => {
            found.ops += 1;
            scan(lhs, guarded, found)?;
            scan(rhs, guarded, found)
        }
        ExprKind::Call { args, .. } => {
            found.ops += 1;
            for a in args {
                scan(a, guarded, found)?;
            }
            Ok(())
        }
        ExprKind::Gen { .. } | ExprKind::Sum { .. } | ExprKind::MaxRed { .. } => Err(
            "a loop inside the body, below a reduction (the search handles `gen` loops around `sum` loops around a scalar)".to_string(),
        ),
        ExprKind::Let { .. } => {
            Err("a `let` stage (the search does not place stages yet)".to_string())
        }
        _ => Err("a construct the search does not handle yet (stages, reshapes, definitions)".to_string()),
    }
}

/// Whether lowering unrolls a loop of extent `hi` (a number up to its copy limit).
fn unrolled(hi: &IndexExpr) -> bool {
    hi.as_const()
        .is_some_and(|n| (2..=atl_lower::UNROLLED_COPIES_MAX).contains(&n))
}

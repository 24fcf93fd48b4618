//! `atl-validate`: translation validation of loop-IR kernels (issue 19, DESIGN §6) —
//! proving, per kernel and for every size its preconditions allow, that the code we
//! emit does what the ATL program says, instead of trusting the lowering that built it.
//!
//! Independence: this crate depends on `atl-lang`, `atl-solver` and the loop IR's data
//! types (`atl-loopir`) only — never on `atl-lower`'s lowering, normalization,
//! annotation or placement passes, so that it cannot share their mistakes. Its own
//! translation of the target's index language ([`translate`]) is written here for the
//! same reason. `cli/tests/crate_graph.rs` checks the crate graph.
//!
//! What it checks ([`obligations`]), each obligation proved by the solver
//! for all sizes (`atl_solver::Solver::prove`; "unknown" is never "proved"):
//!
//! - (a) bounds: every coordinate of every load and store is in `[0, extent)` of the
//!   buffer's declared shape, under its context (preconditions, enclosing loop ranges,
//!   `if` and `select` conditions);
//! - (b) flattening: the flat index of every access is the row-major position of its
//!   coordinates in the declared shape;
//! - and what makes those meaningful: the extents an access records are the declared
//!   ones, every C `/` and `%` has a numerator `>= 0` and a divisor `>= 1` (so it is the
//!   floor operation it is reasoned about as), every `alloc` has the length of its
//!   shape, every fill stays in its buffer, every name is bound, every access names a
//!   buffer in scope with one coordinate per dimension, no store writes an input.
//!
//! - (c) no race ([`interference::races`]): two iterations of a `parallel` or `vector`
//!   loop never write the same element of memory they share (the output, a buffer or
//!   scalar allocated outside the loop, a buffer hoisted around it that is not per
//!   thread), nor does one read what another writes;
//! - (d) no double write ([`interference::double_writes`]): two executions of
//!   assignment stores never write one element within one lifetime of the buffer;
//! - (e) coverage of the output ([`coverage`]): every element is written by an
//!   assignment store or a fill, proved with witnesses solved from the coordinates
//!   (unknown, never refuted, when the witnesses do not reach an element that may be
//!   written otherwise).
//! - (f) reads after writes ([`reads`]): every read of a temporary, of the output or
//!   of a scalar, and every `+=` into one, follows an assignment (`=`, a fill, a
//!   scalar's declaration with a value; for a scalar `+=`, in the same iteration of
//!   the non-`sum` loops around it) of the element it touches, earlier in program
//!   order within the same lifetime; zeroed `alloc`s need nothing. Proved by a
//!   sufficient rule with coverage's witnesses (an assignment that precedes the access
//!   in their common block writes its element), unknown where the rule does not
//!   reach, refuted only when no assignment that may run before it writes the element.
//!
//! - (g) shapes: the kernel's inputs have the shapes the program declares and its
//!   output the definition's shape;
//! - (h) values ([`values`]): every element of the output ends with the source
//!   definition's element (computed from the definition as derived, [`source`]),
//!   equal over the reals for all inputs, each sum accumulating the source's terms
//!   exactly once, in the source's order within each accumulating statement (see
//!   [`values`] for separate `+=` statements into one element). Temporaries are checked through the
//!   values: a read of a temporary stands for what the kernel wrote there (the last
//!   assignment before the read and the `+=`s after it), so a temporary holding
//!   anything but what the output needs is found where it is used.
//! - (i) names ([`names`]): every name of the kernel is a C identifier C does not
//!   reserve, and no two declarations of one name are visible together in the C the
//!   printer writes (C has one namespace, the loop IR several), whatever their kinds.
//! - (j) 64-bit arithmetic ([`int64`]): every `int64_t` value the C computes (entry
//!   checks, loop bounds, conditions, lengths, the flat index of every load and store —
//!   a blend's loads included, which run whatever the blend's condition — and every
//!   intermediate result) fits, so the C's arithmetic is the unbounded arithmetic the
//!   other obligations reason in;
//! - (k) preconditions: each precondition's statement (what the header and the
//!   bindings check) is equivalent to the condition the C checks, and, given the
//!   source, each one holds wherever the program is defined (an index-range one
//!   bounds a size by at least `atl_loopir::int64::min_index_range_bound`).
//!
//! A kernel is [`KernelVerdict::Validated`] when every obligation is proved, and only
//! then. A refuted obligation rejects the kernel ([`KernelVerdict::Rejected`]) with
//! the solver's counterexample (sizes and loop variables), which the solver has
//! checked by evaluation and which satisfies the obligation's context, i.e. is a point
//! the kernel reaches. When something is not proved, the kernel and the source are
//! also run at small sizes ([`concrete`]): a wrong result there rejects the kernel
//! with the sizes, the element, the expected and the computed value; otherwise it is
//! [`KernelVerdict::NotValidated`], with the obligations not decided.
//!
//! Assumptions: the caller's arrays exist with the shapes the header documents (so
//! each one's element count is at most `PTRDIFF_MAX / 4`, which (j) uses); values are
//! real numbers, inputs finite (floating-point rounding is not modelled: the order of
//! summation is checked, not the rounding of each operation; identities that fail for
//! non-finite values are used only where the value is proved finite, [`values`]).
//!
//! Library code never prints.

pub mod concrete;
pub mod coverage;
pub mod folding;
pub mod int64;
pub mod interference;
pub mod names;
pub mod obligations;
pub mod reads;
pub mod sites;
pub mod source;
pub mod term;
pub mod translate;
pub mod values;

use std::fmt;
use std::time::{Duration, Instant};

use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_lang::ir::Program;
use atl_lang::monitor::Monitor;
use atl_lang::shapes::ShapeEnv;
use atl_loopir::int64::min_index_range_bound;
use atl_loopir::ir::Kernel;
use atl_solver::{Counterexample, Facts, Solver, Verdict};

pub use obligations::{Access, AccessKind, Lemma, Obligation, ObligationKind, Walk, collect, walk};

/// How an obligation was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// Both sides of an equality have the same polynomial normal form.
    Identity,
    /// `Solver::prove` (its fast path, then z3).
    Solver,
    /// The obligation's [`Lemma`], proved by `Solver::prove`.
    Lemma,
    /// Coverage by counting ([`coverage`]): given the bounds and double-write
    /// obligations, as many distinct in-bounds writes as elements.
    Counting,
    /// The interval and magnitude analysis of `atl_loopir::int64` ([`int64`]).
    Magnitude,
}

/// An obligation with its verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckedObligation {
    pub obligation: Obligation,
    pub verdict: Verdict,
    pub method: Method,
}

/// A refuted obligation and the assignment that refutes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Refutation {
    pub obligation: Obligation,
    pub counterexample: Counterexample,
}

/// The verdict on a kernel.
#[derive(Clone, Debug, PartialEq)]
pub enum KernelVerdict {
    /// Every obligation holds: the kernel computes the source definition.
    Validated,
    /// Some obligation is false at a reachable point, or a run at small sizes computed
    /// a wrong result ([`concrete`]): the kernel is wrong.
    Rejected {
        refuted: Vec<Refutation>,
        disagreement: Option<concrete::Disagreement>,
    },
    /// Nothing was refuted, but something was not proved: the obligations the solver
    /// could not decide, and what is not checked at all.
    NotValidated { reasons: Vec<String> },
}

/// Everything the validator found on one kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub kernel: String,
    pub obligations: Vec<CheckedObligation>,
    pub verdict: KernelVerdict,
    pub elapsed: Duration,
}

impl Report {
    /// How many obligations were proved, refuted and left unknown.
    pub fn counts(&self) -> (usize, usize, usize) {
        let mut counts = (0, 0, 0);
        for c in &self.obligations {
            match c.verdict {
                Verdict::Proved => counts.0 += 1,
                Verdict::Refuted(_) => counts.1 += 1,
                Verdict::Unknown(_) => counts.2 += 1,
            }
        }
        counts
    }

    pub fn is_rejected(&self) -> bool {
        matches!(self.verdict, KernelVerdict::Rejected { .. })
    }
}

/// `e` with every `a % b` written `a - b * (a / b)`, and every `cdiv(a, c)` by a
/// constant `c >= 0` written `(a + c - 1) / c`: identities for all integers under
/// ATL's floor conventions (also for a zero divisor: `a % 0 = a`, `a / 0 = 0`,
/// `cdiv(a, 0) = 0`; not for a negative one, which is left alone). They let
/// polynomial normal forms see that `(a / b) * b + a % b` is `a`, and that an
/// allocation of `16 * (K * ((N + 15) / 16))` elements is `cdiv(N, 16) * K * 16`.
fn without_modulo(e: &IndexExpr) -> IndexExpr {
    match e {
        IndexExpr::Const(_) | IndexExpr::Var(_) | IndexExpr::Meta(_) => e.clone(),
        IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(without_modulo(a))),
        IndexExpr::Load(array, a) => IndexExpr::Load(array.clone(), Box::new(without_modulo(a))),
        IndexExpr::Bin(IndexOp::Mod, a, b) => {
            let (a, b) = (without_modulo(a), without_modulo(b));
            IndexExpr::sub(
                a.clone(),
                IndexExpr::mul(b.clone(), IndexExpr::bin(IndexOp::Div, a, b)),
            )
        }
        IndexExpr::Bin(IndexOp::CDiv, a, b) => match **b {
            IndexExpr::Const(c) if c >= 0 => IndexExpr::bin(
                IndexOp::Div,
                IndexExpr::add(without_modulo(a), IndexExpr::Const(c - 1)),
                IndexExpr::Const(c),
            ),
            _ => IndexExpr::bin(IndexOp::CDiv, without_modulo(a), without_modulo(b)),
        },
        IndexExpr::Bin(op, a, b) => IndexExpr::bin(*op, without_modulo(a), without_modulo(b)),
    }
}

/// Whether `a == b` for all integers, by polynomial normal forms (after
/// [`without_modulo`]).
fn identical(a: &IndexExpr, b: &IndexExpr) -> bool {
    atl_lang::poly::same(a, b) || atl_lang::poly::same(&without_modulo(a), &without_modulo(b))
}

/// Decides one obligation: an equality whose sides are the same polynomial (modulo
/// `a % b = a - b * (a / b)`) is proved on the spot, anything else goes to the solver.
pub fn discharge(obligation: Obligation, solver: &Solver) -> CheckedObligation {
    if let Pred::Cmp(CmpOp::Eq, a, b) = &obligation.goal
        && identical(a, b)
    {
        return CheckedObligation {
            obligation,
            verdict: Verdict::Proved,
            method: Method::Identity,
        };
    }
    if let Some(lemma) = &obligation.lemma
        && !solver.prove_fast(&obligation.context, &obligation.goal)
        && solver.prove(&lemma.context, &lemma.goal).is_proved()
    {
        return CheckedObligation {
            obligation,
            verdict: Verdict::Proved,
            method: Method::Lemma,
        };
    }
    let verdict = solver.prove(&obligation.context, &obligation.goal);
    CheckedObligation {
        obligation,
        verdict,
        method: Method::Solver,
    }
}

/// The source program a kernel must compute: the definition `def` of `program` (as
/// derived: a derived definition is one of the program's definitions), with the
/// program's shapes.
#[derive(Clone, Copy, Debug)]
pub struct Source<'a> {
    pub program: &'a Program,
    pub shapes: &'a ShapeEnv,
    pub def: &'a str,
}

/// The reason a kernel validated without a [`Source`] is, at best, not validated.
pub const NO_SOURCE: &str =
    "the values are not checked: no source program was given to compare the kernel with";

/// Collects and decides every obligation of `kernel`: those of single operations
/// ([`collect`], [`discharge`]), coverage, reads after writes and, given the source it
/// was lowered from, the values ([`values`]). Validated when every obligation is
/// proved; rejected when one is refuted or, when something is not proved, when a run
/// at small sizes finds a wrong result ([`concrete`]); otherwise not validated.
pub fn validate(kernel: &Kernel, source: Option<&Source<'_>>, solver: &Solver) -> Report {
    validate_monitored(kernel, source, solver, None)
}

/// The reason of a validation stopped through its monitor.
pub const INTERRUPTED: &str = "the validation was interrupted before every obligation was decided";

/// [`validate`], watched by `monitor`: progress is the number of obligations decided
/// (of the single operations, then one per later phase), and a cancellation stops the
/// validation between two obligations with the verdict *not validated* ([`INTERRUPTED`]).
pub fn validate_monitored(
    kernel: &Kernel,
    source: Option<&Source<'_>>,
    solver: &Solver,
    monitor: Option<&Monitor>,
) -> Report {
    let start = Instant::now();
    let cancelled = || monitor.is_some_and(Monitor::is_cancelled);
    let interrupted = |checked: Vec<CheckedObligation>| Report {
        kernel: kernel.name.clone(),
        obligations: checked,
        verdict: KernelVerdict::NotValidated {
            reasons: vec![INTERRUPTED.to_string()],
        },
        elapsed: start.elapsed(),
    };
    // The names first: every other analysis reads a name as the one thing it declares,
    // and a clash makes them meaningless (a temporary named as an input turns the
    // input's reads inside its own definition into reads of itself, and the last-writer
    // analysis chased them until memory ran out: the mutation fuzzer, seed 31, case
    // 1761). A kernel whose names clash is rejected on them alone.
    let name_checks = names::check(kernel, solver);
    let clashes = refutations(&name_checks);
    if !clashes.is_empty() {
        return Report {
            kernel: kernel.name.clone(),
            obligations: name_checks,
            verdict: KernelVerdict::Rejected {
                refuted: clashes,
                disagreement: None,
            },
            elapsed: start.elapsed(),
        };
    }
    let walked = walk(kernel);
    let single: Vec<Obligation> = walked
        .obligations
        .iter()
        .cloned()
        .chain(interference::races(&walked))
        .chain(interference::double_writes(&walked))
        .chain(folding::obligations(&walked))
        .collect();
    // The phases after the single operations' obligations, one unit of progress each.
    const PHASES: u64 = 8;
    if let Some(m) = monitor {
        m.begin(
            format!("validating `{}`", kernel.name),
            single.len() as u64 + PHASES,
        );
    }
    let mut checked = name_checks;
    checked.reserve(single.len());
    for o in single {
        if cancelled() {
            return interrupted(checked);
        }
        checked.push(discharge(o, solver));
        if let Some(m) = monitor {
            m.advance(1);
        }
    }
    let phases: [&dyn Fn() -> Vec<CheckedObligation>; 4] = [
        &|| int64::check(&walked, solver),
        &|| precondition_texts(kernel, &walked, solver),
        &|| vec![coverage::check(&walked, solver)],
        &|| reads::check(&walked, solver),
    ];
    for phase in phases {
        if cancelled() {
            return interrupted(checked);
        }
        checked.extend(phase());
        if let Some(m) = monitor {
            m.advance(1);
        }
    }
    if let Some(src) = source {
        if cancelled() {
            return interrupted(checked);
        }
        checked.extend(shape_obligations(kernel, src, solver));
        checked.extend(precondition_obligations(kernel, &walked, src, solver));
        if let Some(m) = monitor {
            m.advance(2);
        }
        if cancelled() {
            return interrupted(checked);
        }
        let mut eval = source::SourceEval::new(src.program, src.shapes);
        checked.extend(values::check(
            &walked, &mut eval, src.def, solver, &cancelled,
        ));
    }
    if let Some(m) = monitor {
        m.advance(2);
    }
    if cancelled() {
        return interrupted(checked);
    }
    let refuted = refutations(&checked);
    let mut reasons: Vec<String> = checked
        .iter()
        .filter_map(|c| match &c.verdict {
            Verdict::Unknown(why) => Some(format!("not decided: {} ({why})", c.obligation)),
            _ => None,
        })
        .collect();
    if source.is_none() {
        reasons.push(NO_SOURCE.to_string());
    }
    let disagreement = match source {
        Some(src) if refuted.is_empty() && !reasons.is_empty() => {
            concrete::find_disagreement(kernel, src.program, src.def)
        }
        _ => None,
    };
    let verdict = if !refuted.is_empty() || disagreement.is_some() {
        KernelVerdict::Rejected {
            refuted,
            disagreement,
        }
    } else if reasons.is_empty() {
        KernelVerdict::Validated
    } else {
        KernelVerdict::NotValidated { reasons }
    };
    Report {
        kernel: kernel.name.clone(),
        obligations: checked,
        verdict,
        elapsed: start.elapsed(),
    }
}

/// The refuted obligations among `checked`, with their counterexamples.
fn refutations(checked: &[CheckedObligation]) -> Vec<Refutation> {
    checked
        .iter()
        .filter_map(|c| match &c.verdict {
            Verdict::Refuted(cex) => Some(Refutation {
                obligation: c.obligation.clone(),
                counterexample: cex.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// Each precondition's statement (what `atl emit --ir` prints, what the header, the
/// Python module and the Rust bindings check and show) is the condition the C checks:
/// equivalent for all sizes, under the preconditions before it.
fn precondition_texts(kernel: &Kernel, walked: &Walk, solver: &Solver) -> Vec<CheckedObligation> {
    kernel
        .preconditions
        .iter()
        .zip(&walked.preconditions)
        .enumerate()
        .map(|(k, (pre, translated))| {
            let goal = Pred::and(
                Pred::or(Pred::not(pre.pred.clone()), translated.clone()),
                Pred::or(Pred::not(translated.clone()), pre.pred.clone()),
            );
            let obligation = Obligation {
                kind: ObligationKind::PreconditionText {
                    pred: pre.pred.to_string(),
                    cond: atl_loopir::print::cond_to_string(&pre.cond),
                },
                location: String::new(),
                context: Facts {
                    sizes: kernel.sizes.clone(),
                    facts: walked.preconditions[..k].to_vec(),
                    arrays: crate::obligations::index_arrays(kernel),
                },
                goal,
                lemma: None,
            };
            discharge(obligation, solver)
        })
        .collect()
}

/// The kernel's preconditions hold at every size the program allows (its sizes `>= 1`
/// and its `assume`s), so a validated kernel runs wherever the definition is defined —
/// except its index-range preconditions, which must read `size <= bound` with a bound
/// of at least [`min_index_range_bound`].
fn precondition_obligations(
    kernel: &Kernel,
    walked: &Walk,
    src: &Source<'_>,
    solver: &Solver,
) -> Vec<CheckedObligation> {
    let declarations = Facts {
        sizes: src.program.sizes.iter().map(|s| s.name.clone()).collect(),
        facts: src.program.assumes.iter().map(|a| a.pred.clone()).collect(),
        arrays: atl_solver::IndexArrayFacts::of_program(src.program),
    };
    kernel
        .preconditions
        .iter()
        .zip(&walked.preconditions)
        .map(|(pre, translated)| {
            let text = atl_loopir::print::cond_to_string(&pre.cond);
            let goal = if pre.kind == atl_loopir::ir::PreconditionKind::IndexRange {
                let least = min_index_range_bound(kernel.sizes.len());
                let ok = matches!(translated,
                    Pred::Cmp(CmpOp::Le, IndexExpr::Var(v), IndexExpr::Const(c))
                        if kernel.sizes.contains(v) && *c >= least);
                Pred::Bool(ok)
            } else {
                translated.clone()
            };
            let obligation = Obligation {
                kind: ObligationKind::Precondition {
                    text,
                    index_range: (pre.kind == atl_loopir::ir::PreconditionKind::IndexRange)
                        .then(|| min_index_range_bound(kernel.sizes.len())),
                },
                location: String::new(),
                context: declarations.clone(),
                goal,
                lemma: None,
            };
            discharge(obligation, solver)
        })
        .collect()
}

/// The kernel's input and output shapes are the source's: every input has the shape
/// the program declares, the output the definition's shape (the value check reads the
/// inputs, and names the output's elements, through them).
fn shape_obligations(kernel: &Kernel, src: &Source<'_>, solver: &Solver) -> Vec<CheckedObligation> {
    // Under the kernel's preconditions, which it checks on entry (as every other
    // obligation is): a size the kernel refuses has no shape to agree on. Lowering may
    // fold an extent with an `assume` (`min(n, 3)` is 3 under `assume n >= 3`).
    let sizes = Facts {
        sizes: kernel.sizes.clone(),
        facts: kernel
            .preconditions
            .iter()
            .map(|p| p.pred.clone())
            .collect(),
        arrays: crate::obligations::index_arrays(kernel),
    };
    let mut pairs: Vec<(String, Vec<IndexExpr>, Option<Vec<IndexExpr>>)> = Vec::new();
    for decl in &kernel.inputs {
        // As stored: an input declared with a layout is received in its storage order.
        let declared = src.program.input(&decl.name).map(|i| i.storage_shape());
        pairs.push((
            format!("the shape of input `{}`", decl.name),
            decl.shape.clone(),
            declared,
        ));
    }
    let expected = src
        .program
        .def(src.def)
        .and_then(|d| atl_lang::shapes::infer(src.shapes, &d.body).ok());
    pairs.push((
        format!("the shape of output `{}`", kernel.output.name),
        kernel.output.shape.clone(),
        expected,
    ));
    // An index array's declaration is what the kernel checks on entry and what the
    // solver assumes of its loads: it must be the program's, and a buffer is an index
    // array exactly when the program's input is one.
    let mut declarations = Vec::new();
    // An input's storage order is the program's layout: the value check reads the
    // program's element at the coordinates it puts back in the program's order, and
    // the C ABI documents the order the program declares.
    for decl in &kernel.inputs {
        let declared = src
            .program
            .input(&decl.name)
            .map(|i| i.layout.as_ref().map(|l| l.order.clone()));
        if decl.order.is_some() || declared.as_ref().is_some_and(Option::is_some) {
            declarations.push(discharge(
                Obligation {
                    kind: ObligationKind::SourceShape {
                        what: format!("the storage order of `{}`", decl.name),
                    },
                    location: String::new(),
                    context: sizes.clone(),
                    goal: Pred::Bool(declared.as_ref() == Some(&decl.order)),
                    lemma: None,
                },
                solver,
            ));
        }
    }
    for decl in &kernel.inputs {
        let declared = src.program.input(&decl.name).map(|i| &i.index_array);
        if decl.index_array.is_some() || declared.is_some_and(Option::is_some) {
            let same = declared == Some(&decl.index_array);
            declarations.push(discharge(
                Obligation {
                    kind: ObligationKind::SourceShape {
                        what: format!("the index array declaration of `{}`", decl.name),
                    },
                    location: String::new(),
                    context: sizes.clone(),
                    goal: Pred::Bool(same),
                    lemma: None,
                },
                solver,
            ));
        }
    }
    pairs
        .into_iter()
        .map(|(what, have, want)| {
            let goal = match &want {
                Some(want) if want.len() == have.len() => have
                    .iter()
                    .zip(want)
                    .map(|(a, b)| Pred::cmp(CmpOp::Eq, a.clone(), b.clone()))
                    .reduce(Pred::and)
                    .unwrap_or(Pred::Bool(true)),
                _ => Pred::Bool(false),
            };
            let obligation = Obligation {
                kind: ObligationKind::SourceShape { what },
                location: String::new(),
                context: sizes.clone(),
                goal,
                lemma: None,
            };
            discharge(obligation, solver)
        })
        .chain(declarations)
        .collect()
}

impl fmt::Display for KernelVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelVerdict::Validated => write!(f, "validated"),
            KernelVerdict::Rejected {
                refuted,
                disagreement,
            } => {
                write!(f, "rejected")?;
                for r in refuted {
                    write!(
                        f,
                        "\n  {}\n    counterexample: {}",
                        r.obligation, r.counterexample
                    )?;
                }
                if let Some(d) = disagreement {
                    write!(f, "\n  a wrong result {d}")?;
                }
                Ok(())
            }
            KernelVerdict::NotValidated { reasons } => {
                write!(f, "not validated")?;
                for r in reasons {
                    write!(f, "\n  {r}")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (proved, refuted, unknown) = self.counts();
        writeln!(
            f,
            "kernel {}: {} obligations, {proved} proved, {refuted} refuted, {unknown} unknown",
            self.kernel,
            self.obligations.len()
        )?;
        for c in &self.obligations {
            writeln!(f, "  {:<8} {}", c.verdict.to_string(), c.obligation)?;
        }
        write!(f, "verdict: {}", self.verdict)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use atl_lang::index::apply_index_op;

    fn c(v: i64) -> IndexExpr {
        IndexExpr::Const(v)
    }

    #[test]
    fn a_rounded_up_allocation_is_identical_to_its_recorded_length() {
        let (n, k) = (IndexExpr::var("N"), IndexExpr::var("K"));
        let allocated = IndexExpr::mul(
            c(16),
            IndexExpr::mul(
                k.clone(),
                IndexExpr::bin(IndexOp::Div, IndexExpr::add(n.clone(), c(15)), c(16)),
            ),
        );
        let recorded = IndexExpr::mul(
            IndexExpr::mul(IndexExpr::bin(IndexOp::CDiv, n.clone(), c(16)), k),
            c(16),
        );
        assert!(identical(&allocated, &recorded));
        // A negative divisor is not rewritten: cdiv(1, -1) = -1, (1 - 2) / -1 = 1.
        let by_minus_one = IndexExpr::bin(IndexOp::CDiv, n.clone(), c(-1));
        let wrong = IndexExpr::bin(IndexOp::Div, IndexExpr::add(n, c(-2)), c(-1));
        assert!(!identical(&by_minus_one, &wrong));
    }

    /// The rewrite is an identity for every divisor it applies to (0 included) and
    /// every numerator, by the language's own evaluation.
    #[test]
    fn ceiling_division_by_a_natural_constant_is_a_floor_division() {
        for d in 0..=9 {
            for a in -40..=40 {
                let want = apply_index_op(IndexOp::CDiv, a, d);
                let got = apply_index_op(IndexOp::Div, a + d - 1, d);
                assert_eq!(got, want, "cdiv({a}, {d})");
            }
        }
    }
}

//! The judges of the soundness fuzzer. A case is a complete `.atl` text ending with one
//! derivation; it goes through the same library calls as `atl check` / `atl derive`
//! (`check_source`, `run_derivations`, `with_derived`, `Certificate::new`) and as
//! `atl verify` (`atl_proofs::verify_with`), and what either accepts is compared, by the
//! reference interpreter, with its source at every size assignment in `1..=9` that
//! satisfies the `assume`s (a capped number for many sizes, smallest first). Accepted
//! certificates are also mutated a little and whatever the checker still accepts is
//! evaluated the same way; a few derivations are compiled to C and run.
//!
//! Nothing here trusts the engine: the interpreter is the specification.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

use atl_lang::interp::{
    EvalOptions, Tensor, check_sizes, eval_def, input_shapes, random_input_named,
};
use atl_lang::ir::Program;
use atl_lang::shapes::ShapeEnv;
use atl_rewrites::Library;
use atl_rewrites::rule::Grade;
use serde_json::Value;

use super::program::DERIVED;
use super::rng::Rng;

/// What went wrong. Ordered by how bad it is; the minimizer keeps the kind fixed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// The engine accepted, the checker certified, and the values differ.
    CertifiedUnsound,
    /// The engine accepted (the checker refused) and the values differ.
    EngineUnsound,
    /// A mutated certificate was accepted by the checker and its programs differ.
    CheckerUnsound,
    /// The compiled kernel of an accepted derivation disagrees with the interpreter.
    CMismatch,
    /// The compiled kernel of an accepted derivation, which lowering and the validator
    /// let through, is unsafe: a sanitizer report (out-of-bounds access, signed
    /// overflow), a crash, a hang, or output written at sizes its entry checks refuse.
    CUnsafe,
    /// An accepted derivation's C does not compile or run (the gate passed).
    CError,
    /// The validator refuted a kernel lowering made (E0951): a lowering bug that the
    /// validator stops (`atl emit` refuses the kernel), not an unsound result.
    LoweringWrong,
    /// The source evaluates, the accepted derivation does not (or has another shape).
    EvalError,
    /// The engine accepted a derivation from a program that the interpreter finds
    /// ill-shaped at a size the declarations allow (a negative extent, a value whose
    /// actual shape is not its static one: E0507, E0508), which the shape discipline
    /// should have refused (issue 17, hole 3).
    IllShaped,
    /// A panic anywhere.
    Panic,
    /// The engine accepted, the checker refused, the values agree (the softer class).
    CheckerRefused,
}

impl Kind {
    pub fn describe(self) -> &'static str {
        match self {
            Kind::CertifiedUnsound => {
                "engine accepted, checker certified, values differ (certified false equivalence)"
            }
            Kind::EngineUnsound => {
                "engine accepted (checker refused), values differ (false equivalence)"
            }
            Kind::CheckerUnsound => "checker accepted a mutated certificate whose programs differ",
            Kind::CMismatch => "compiled kernel differs from the interpreter",
            Kind::CUnsafe => {
                "compiled kernel is unsafe (sanitizer report, crash, hang, or output written \
                 where its entry checks refuse)"
            }
            Kind::CError => "compiling or running an accepted, gated derivation failed",
            Kind::LoweringWrong => {
                "the validator refuted the kernel lowering made (E0951): a lowering bug"
            }
            Kind::EvalError => {
                "source evaluates but the accepted derivation does not (or its shape differs)"
            }
            Kind::IllShaped => {
                "engine accepted a derivation whose source is ill-shaped at an allowed size"
            }
            Kind::Panic => "panic",
            Kind::CheckerRefused => "engine accepted, checker refused (values agree)",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Failure {
    pub kind: Kind,
    pub detail: String,
}

impl Failure {
    /// What the minimizer keeps: the kind, and the first diagnostic code of the
    /// detail if it has one (so that a checker refusal is not minimized into a
    /// different refusal).
    pub fn signature(&self) -> (Kind, Option<String>) {
        if self.kind == Kind::CUnsafe {
            // An unsafe kernel is not minimized into another kind of unsafety.
            let what = if self.detail.contains("exit status: 86") {
                "AddressSanitizer"
            } else if self.detail.contains("exit status: 87") {
                "UndefinedBehaviorSanitizer"
            } else if self.detail.contains("hangs") {
                "hang"
            } else {
                "entry"
            };
            return (self.kind, Some(what.to_string()));
        }
        let code = self.detail.find("[E").and_then(|k| {
            let rest = &self.detail[k + 1..];
            rest.find(']').map(|e| rest[..e].to_string())
        });
        (self.kind, code)
    }
}

/// What one case did; counters feed the final report.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    pub front_end_ok: bool,
    /// The CLI would refuse the program before the engine runs: a definition other
    /// than the derivation's starting point is ill-shaped (E0413).
    pub caller_refused: bool,
    pub engine_accepted: bool,
    /// The engine's diagnostic when it refused (for the step search).
    pub engine_error: Option<String>,
    /// The derived body when accepted.
    pub result: Option<atl_lang::ir::Expr>,
    pub checker_accepted: bool,
    pub evaluated_sizes: usize,
    /// Size assignments where the derived program's index arithmetic overflowed 64
    /// bits (E0502) though the source evaluated: not judged (see `compare`).
    pub overflowed_sizes: usize,
    pub mutants: usize,
    pub mutants_accepted: usize,
    pub compiled: usize,
    /// Compiled kernels built with the sanitizers.
    pub sanitized: usize,
    /// Kernels the translation validator validated.
    pub validated: usize,
    /// Derivations to compile that the pad-type and access-safety gate refused (as
    /// `atl emit` would): not lowered.
    pub gate_refused: usize,
    /// The gate's first error when it refused (for `ATL_FUZZ_VERBOSE`).
    pub gate_error: Option<String>,
    /// Kernels lowering refused for 64-bit overflow (E0938).
    pub lowering_refused: usize,
    /// Lowering's first error when it refused (E0938 or another, e.g. E0913 for a
    /// directive whose loop lowering removed).
    pub lowering_error: Option<String>,
    /// Kernels the validator refused (E0951, E0938, E0944): not run.
    pub validator_refused: usize,
    /// The validator's refusal (for `ATL_FUZZ_VERBOSE`).
    pub validator_error: Option<String>,
    /// Runs at a free size's entry bound or one past it.
    pub near_bound_runs: usize,
    /// Runs at small sizes compared with the interpreter.
    pub small_runs: usize,
    pub failure: Option<Failure>,
}

/// Knobs of a case.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Mutate the certificate this many times (0: not at all).
    pub mutants: usize,
    /// Compile the derivation to C and run it.
    pub compile: bool,
    /// Build the kernel with `-fsanitize=address,undefined`.
    pub sanitize: bool,
    /// Seeds the inputs and the mutations.
    pub seed: u64,
    /// At most this many size assignments are evaluated.
    pub max_assignments: usize,
}

pub struct Judges {
    pub lib: Library,
    pub solver: atl_solver::Solver,
}

impl Judges {
    pub fn new() -> Judges {
        let (lib, diags) = Library::standard();
        assert!(diags.is_empty(), "the standard library loads");
        Judges {
            lib,
            solver: atl_solver::Solver::new(),
        }
    }
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_string()
    }
}

/// Runs one case; a panic anywhere becomes a failure.
pub fn run_case(j: &Judges, text: &str, opts: &Options) -> Outcome {
    let mut out = Outcome::default();
    let r = catch_unwind(AssertUnwindSafe(|| run_case_inner(j, text, opts, &mut out)));
    if let Err(p) = r {
        out.failure = Some(Failure {
            kind: Kind::Panic,
            detail: panic_text(p),
        });
    }
    out
}

fn run_case_inner(j: &Judges, text: &str, opts: &Options, out: &mut Outcome) {
    let (checked, _) = atl_lang::check_source(text);
    let Some(checked) = checked else { return };
    out.front_end_ok = true;
    // `atl check` / `atl derive` check every written definition against the shape
    // discipline (E0413) before the engine runs; the engine checks a derivation's
    // starting point itself (that check is under test here). The other definitions a
    // derivation may refer to are the caller's duty: a program whose other definitions
    // the CLI would refuse is not judged.
    let mut others = checked.program.clone();
    let starts: Vec<String> = others.derives.iter().map(|d| d.from.clone()).collect();
    others.defs.retain(|d| !starts.contains(&d.name));
    if !atl_rewrites::well_shaped::check_program(&others, &checked.shapes, &j.solver).is_empty() {
        out.caller_refused = true;
        return;
    }
    // The CLI also refuses contradictory `assume`s (E0414). That check asks the
    // solver, which is under test (issue 17, hole 7: a wrapped bound made consistent
    // facts look contradictory); the fuzzer decides by itself instead: declarations
    // that no sizes in `1..=9` satisfy are not judged (there would be nothing to
    // evaluate, and the checker rightly refuses them when they are contradictory).
    if assignments(&checked.program, 1).is_empty() {
        out.caller_refused = true;
        return;
    }
    let env = atl_rewrites::Env {
        program: &checked.program,
        shapes: &checked.shapes,
        library: &j.lib,
        solver: &j.solver,
    };
    let (derivations, diags) = atl_rewrites::run_derivations(&env);
    if !diags.is_empty() {
        out.engine_error = Some(format!("[{}] {}", diags[0].code, diags[0].message));
        return;
    }
    let Some(d) = derivations.iter().find(|d| d.name == DERIVED) else {
        return;
    };
    out.engine_accepted = true;
    out.result = Some(d.result.clone());
    let (program, shapes) =
        atl_rewrites::with_derived(&checked.program, &checked.shapes, &derivations);
    let cert = atl_rewrites::cert::Certificate::new(d, &program, &j.lib);
    let json = serde_json::to_string(&cert).expect("certificates serialize");
    let verdict = atl_proofs::verify_with(&json, &j.lib, &j.solver);
    out.checker_accepted = verdict.is_ok();
    let exact = d.grade() == Grade::Exact;
    let from = d.from.clone();
    let cmp = compare(&program, &from, DERIVED, exact, opts);
    out.evaluated_sizes = cmp.evaluated;
    out.overflowed_sizes = cmp.overflowed;
    if let Some(detail) = cmp.differs {
        let kind = if out.checker_accepted {
            Kind::CertifiedUnsound
        } else {
            Kind::EngineUnsound
        };
        out.failure = Some(Failure { kind, detail });
        return;
    }
    if let Some(detail) = cmp.ill_shaped {
        out.failure = Some(Failure {
            kind: Kind::IllShaped,
            detail,
        });
        return;
    }
    if let Some(detail) = cmp.eval_error {
        out.failure = Some(Failure {
            kind: Kind::EvalError,
            detail,
        });
        return;
    }
    if let Err(e) = &verdict {
        out.failure = Some(Failure {
            kind: Kind::CheckerRefused,
            detail: e.to_string(),
        });
        // Still exercise the rest: a refused certificate has nothing to mutate, and C
        // of a program the checker refuses is what `atl emit` would compile today.
    }
    if opts.compile
        && let Some(f) = compile_and_run(&program, &shapes, &from, opts, out)
    {
        out.failure = Some(f);
        return;
    }
    if out.checker_accepted {
        let mut rng = Rng::new(opts.seed ^ 0x5EED);
        for _ in 0..opts.mutants {
            let Some(m) = mutate(&json, &mut rng) else {
                continue;
            };
            out.mutants += 1;
            if let Some(f) = judge_mutant(j, &m, opts, out) {
                out.failure = Some(f);
                return;
            }
        }
    }
}

struct Comparison {
    evaluated: usize,
    overflowed: usize,
    differs: Option<String>,
    eval_error: Option<String>,
    /// The source failed a shape check of the interpreter at an allowed size.
    ill_shaped: Option<String>,
}

/// The interpreter's shape-discipline errors: a negative static extent (E0508), an
/// actual shape that is not the static one (E0507).
fn is_shape_error(code: &str) -> bool {
    matches!(code, "E0507" | "E0508")
}

/// Size assignments tried (against the `assume`s) before giving up.
const MAX_TRIED_ASSIGNMENTS: usize = 20_000;

/// Size assignments in `1..=9`, smallest maximum first (so that all-small corners such
/// as `n = 3, x = y = z = w = 1` come early even with many sizes).
fn assignments(program: &Program, cap: usize) -> Vec<BTreeMap<String, i64>> {
    let names: Vec<String> = program.sizes.iter().map(|s| s.name.clone()).collect();
    let mut out = Vec::new();
    let mut tried = 0usize;
    for top in 1..=9i64 {
        // Every assignment in 1..=top with at least one coordinate equal to top.
        let mut cur = vec![1i64; names.len()];
        loop {
            if cur.contains(&top) || names.is_empty() {
                let sizes: BTreeMap<String, i64> =
                    names.iter().cloned().zip(cur.iter().copied()).collect();
                tried += 1;
                if check_sizes(program, &sizes).is_ok() {
                    out.push(sizes);
                    if out.len() >= cap {
                        return out;
                    }
                }
                // Checking an assignment is cheap; the bound only keeps programs with
                // many sizes and high lower bounds (`n >= 6` with five sizes) finite.
                if tried > MAX_TRIED_ASSIGNMENTS {
                    return out;
                }
            }
            // Next in 1..=top (odometer).
            let mut k = 0;
            while k < cur.len() {
                cur[k] += 1;
                if cur[k] <= top {
                    break;
                }
                cur[k] = 1;
                k += 1;
            }
            if k == cur.len() {
                break;
            }
        }
        if names.is_empty() {
            break;
        }
    }
    out
}

fn inputs_for(
    program: &Program,
    sizes: &BTreeMap<String, i64>,
    seed: u64,
) -> Option<BTreeMap<String, Tensor>> {
    let opts = eval_options();
    let shapes = input_shapes(program, sizes, &opts).ok()?;
    // `random_input_named` is `Tensor::random` for a tensor input; an index array gets
    // valid values (integers in its range, in order when `sorted`), as `random:SEED`
    // inputs do: `Tensor::random` would be refused on entry (E0610).
    Some(
        shapes
            .into_iter()
            .enumerate()
            .map(|(k, (name, shape))| {
                let seed = seed.wrapping_add(k as u64 * 7919);
                let t = random_input_named(program, &name, shape, sizes, seed);
                (name, t)
            })
            .collect(),
    )
}

fn eval_options() -> EvalOptions {
    EvalOptions {
        max_elements: 1 << 18,
        // Sizes are at most 9: only a huge constant (a split of a `sum` by 2^40)
        // makes more work than this, which is a resource refusal like E0503.
        max_iterations: 1 << 24,
        parallel: false,
        monitor: None,
    }
}

/// Bit-exact (up to the sign of zero) for `exact`; a small tolerance for `real`.
pub fn same_values(a: &Tensor, b: &Tensor, exact: bool) -> Result<(), String> {
    if a.shape != b.shape {
        return Err(format!("shapes {:?} vs {:?}", a.shape, b.shape));
    }
    for (k, (x, y)) in a.data.iter().zip(&b.data).enumerate() {
        let ok = if exact {
            x == y || (x.is_nan() && y.is_nan())
        } else {
            (x - y).abs() <= 1e-9 * (1.0 + x.abs().max(y.abs())) || (x.is_nan() && y.is_nan())
        };
        if !ok {
            return Err(format!("element {k}: {x:?} vs {y:?}"));
        }
    }
    Ok(())
}

fn show(t: &Tensor) -> String {
    let vals: Vec<String> = t.data.iter().take(12).map(|v| format!("{v:.4}")).collect();
    format!(
        "{:?} [{}{}]",
        t.shape,
        vals.join(", "),
        if t.data.len() > 12 { ", …" } else { "" }
    )
}

fn compare(program: &Program, src: &str, der: &str, exact: bool, opts: &Options) -> Comparison {
    let mut c = Comparison {
        evaluated: 0,
        overflowed: 0,
        differs: None,
        eval_error: None,
        ill_shaped: None,
    };
    for (k, sizes) in assignments(program, opts.max_assignments)
        .into_iter()
        .enumerate()
    {
        let Some(inputs) = inputs_for(program, &sizes, opts.seed.wrapping_add(k as u64)) else {
            continue;
        };
        let want = match eval_def(program, src, &sizes, &inputs, &eval_options()) {
            Ok(w) => w,
            Err(d) => {
                if is_shape_error(d.code) && c.ill_shaped.is_none() {
                    c.ill_shaped = Some(format!(
                        "at {sizes:?}: `{src}` is ill-shaped: [{}] {}",
                        d.code, d.message
                    ));
                }
                // Otherwise the source itself does not evaluate here (overflow, too
                // large): nothing to compare against.
                continue;
            }
        };
        c.evaluated += 1;
        match eval_def(program, der, &sizes, &inputs, &eval_options()) {
            Ok(got) => {
                if let Err(why) = same_values(&want, &got, exact) {
                    c.differs = Some(format!(
                        "at {sizes:?} (inputs random, seed {}): {why}\n  {src} = {}\n  {der} = {}",
                        opts.seed.wrapping_add(k as u64),
                        show(&want),
                        show(&got)
                    ));
                    return c;
                }
            }
            // The interpreter's element limit (a split by 2^40 makes a huge
            // intermediate): a resource refusal, not a wrong value. Likewise 64-bit
            // overflow of index arithmetic (E0502, e.g. `shift_gen with d :=
            // 9223372036854775807`): the semantics is over unbounded integers, where
            // the step is right; evaluation fails loudly and lowering refuses such a
            // kernel (E0938). Counted, and shown in the summary.
            Err(d) if d.code == "E0503" || d.code == "E0509" => {}
            Err(d) if d.code == "E0502" => c.overflowed += 1,
            Err(d) => {
                if c.eval_error.is_none() {
                    c.eval_error = Some(format!(
                        "at {sizes:?}: `{src}` evaluates, `{der}` fails: [{}] {}",
                        d.code, d.message
                    ));
                }
            }
        }
    }
    c
}

type Sizes = BTreeMap<String, i64>;

/// Validator refusals that settle a kernel as not emitted (`atl emit` refuses it): the
/// validator rejects it (E0951), finds 64-bit overflow (E0938) or a reserved name
/// (E0944). A kernel only *not validated* (E0950: nothing refuted) is still run and
/// judged, as every lowered kernel was before validation existed.
fn validator_refuses(code: &str) -> bool {
    matches!(code, "E0951" | "E0938" | "E0944")
}

/// Compiles `DERIVED` (when it passes the gate, lowers and the validator does not
/// refuse it) and runs it, calling the C directly (`fuzz_support::kernel`), under
/// AddressSanitizer and UndefinedBehaviorSanitizer when `opts.sanitize`:
///
/// - at two small size assignments, compared with the interpreter of the source;
/// - for each size no buffer extent, allocation or loop bound mentions (so it may be
///   huge without memory or time), at its entry bound `B` (`size <= B`, E0937;
///   `i64::MAX` when the kernel has none): the kernel must run clean, and when the
///   Rust-side call check accepts the sizes, write the whole output (equal to the
///   interpreter's where it evaluates), otherwise write nothing; at `B + 1` the call
///   check must refuse with E0937 and the kernel must return on entry, writing nothing.
///
/// A sanitizer report, a crash, a hang, or an output written when it should not be is
/// [`Kind::CUnsafe`]; a wrong value is [`Kind::CMismatch`].
fn compile_and_run(
    program: &Program,
    shapes: &ShapeEnv,
    src: &str,
    opts: &Options,
    out: &mut Outcome,
) -> Option<Failure> {
    let solver = atl_solver::Solver::new();
    let gate = atl_padtypes::check_definition(program, shapes, &solver, DERIVED);
    if atl_lang::diag::has_errors(&gate) {
        out.gate_refused += 1;
        out.gate_error = gate
            .iter()
            .find(|d| d.severity == atl_lang::diag::Severity::Error)
            .map(|d| format!("[{}] {}", d.code, d.message));
        return None;
    }
    let kernel = match atl_driver::lowering::lower_ungated(program, shapes, DERIVED) {
        Ok(k) => k,
        Err(d) => {
            out.lowering_refused += d.iter().any(|d| d.code == "E0938") as usize;
            out.lowering_error = d.first().map(|d| format!("[{}] {}", d.code, d.message));
            return None;
        }
    };
    match atl_driver::lowering::validate_kernel(program, shapes, DERIVED, &kernel) {
        Ok(_) => out.validated += 1,
        Err((_, d)) if validator_refuses(d.code) => {
            out.validator_refused += 1;
            let detail = format!(
                "[{}] {}{}",
                d.code,
                d.message,
                d.notes
                    .first()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            );
            out.validator_error = Some(detail.clone());
            // A refutation is a lowering bug (a kernel that reads out of bounds or
            // computes another value), caught: a failure of its own class.
            return (d.code == "E0951").then_some(Failure {
                kind: Kind::LoweringWrong,
                detail,
            });
        }
        Err(_) => {}
    }
    let harness = match super::kernel::compile(&kernel, opts.sanitize) {
        Ok(h) => h,
        Err(e) => {
            return Some(Failure {
                kind: Kind::CError,
                detail: format!("compile: {e}"),
            });
        }
    };
    out.compiled += 1;
    out.sanitized += harness.sanitized as usize;
    let all = assignments(program, 9);
    // Sanitized kernels also run at the largest assignment the interpreter judged:
    // index arithmetic such as `i * 2^62` overflows only from `i = 2` on.
    let wide = if opts.sanitize {
        assignments(program, opts.max_assignments)
    } else {
        Vec::new()
    };
    let picks: Vec<&BTreeMap<String, i64>> = [all.get(2), all.last(), wide.last()]
        .into_iter()
        .flatten()
        .collect();
    // The first small call the kernel accepts: the base of the runs at huge sizes.
    let mut base: Option<(Sizes, BTreeMap<String, Tensor>, usize)> = None;
    for (k, sizes) in picks.into_iter().enumerate() {
        let inputs = inputs_for(program, sizes, opts.seed.wrapping_add(100 + k as u64))?;
        let Ok(want) = eval_def(program, src, sizes, &inputs, &eval_options()) else {
            continue;
        };
        // The interpreter's limits on the derived definition bound the kernel's work
        // (a split of a `sum` by 2^40 is right, and far too long to run).
        if eval_def(program, DERIVED, sizes, &inputs, &eval_options()).is_err() {
            continue;
        }
        let Ok(call) = atl_lower::check_call(&kernel, sizes, &inputs) else {
            continue;
        };
        let len = atl_lang::interp::shape_numel(&call.output)?;
        let got = match run_kernel(&harness, &kernel, &call.sizes, &inputs, len) {
            Ok(g) => g,
            Err(why) => {
                return Some(Failure {
                    kind: Kind::CUnsafe,
                    detail: format!("run at {sizes:?}: {why}"),
                });
            }
        };
        let got = Tensor::new(call.output.clone(), got)?;
        // Within rounding, whatever the grade: the kernel may associate a sum
        // differently from the interpreter (the C back end is tested against it with a
        // tolerance, `emit_c/tests/differential.rs`); bit-exact `exact` grades are
        // judged by the interpreter above.
        out.small_runs += 1;
        if let Err(why) = same_values(&want, &got, false) {
            return Some(Failure {
                kind: Kind::CMismatch,
                detail: format!(
                    "at {sizes:?}: {why}\n  interpreter `{src}` = {}\n  kernel `{DERIVED}` = {}",
                    show(&want),
                    show(&got)
                ),
            });
        }
        if base.is_none() {
            base = Some((sizes.clone(), inputs, len));
        }
    }
    let (sizes, inputs, len) = base?;
    for size in super::kernel::free_sizes(&kernel).into_iter().take(2) {
        let bound = super::kernel::index_range_bound(&kernel, &size);
        let mut at = vec![bound.unwrap_or(i64::MAX)];
        if let Some(b) = bound.filter(|&b| b < i64::MAX) {
            at.push(b + 1);
        }
        for (k, value) in at.into_iter().enumerate() {
            let mut huge = sizes.clone();
            huge.insert(size.clone(), value);
            out.near_bound_runs += 1;
            if let Some(f) = judge_huge(&harness, &kernel, program, src, &huge, &inputs, len, k > 0)
            {
                return Some(f);
            }
        }
    }
    None
}

/// Calls the kernel below the Rust-side check; the output, or why the run failed.
fn run_kernel(
    harness: &super::kernel::Harness,
    kernel: &atl_lower::Kernel,
    sizes: &[i64],
    inputs: &BTreeMap<String, Tensor>,
    len: usize,
) -> Result<Vec<f64>, String> {
    // Each input as the kernel receives it (in storage order where it has a layout).
    let mut stored: Vec<Vec<f64>> = Vec::new();
    for d in &kernel.inputs {
        stored.push(match inputs.get(&d.name) {
            None => Vec::new(),
            Some(t) => atl_lower::interp::stored_input(d, t)
                .map_err(|e| e.message.clone())?
                .data
                .clone(),
        });
    }
    let bufs: Vec<&[f64]> = stored.iter().map(Vec::as_slice).collect();
    match harness.run(sizes, &bufs, len) {
        super::kernel::Ran::Clean(v) => Ok(v),
        super::kernel::Ran::Failed(why) => Err(why),
    }
}

/// One run at a huge value of a free size (see [`compile_and_run`]); `beyond`: the
/// value is one past the kernel's entry bound.
#[allow(clippy::too_many_arguments)]
fn judge_huge(
    harness: &super::kernel::Harness,
    kernel: &atl_lower::Kernel,
    program: &Program,
    src: &str,
    sizes: &BTreeMap<String, i64>,
    inputs: &BTreeMap<String, Tensor>,
    len: usize,
    beyond: bool,
) -> Option<Failure> {
    let unsafe_run = |detail: String| {
        Some(Failure {
            kind: Kind::CUnsafe,
            detail,
        })
    };
    let check = atl_lower::check_call(kernel, sizes, inputs);
    if beyond && check.is_ok() {
        return unsafe_run(format!(
            "at {sizes:?}, one past the entry bound: the call check accepts the sizes"
        ));
    }
    if let Err(d) = &check
        && beyond
        && d.code != "E0937"
    {
        return unsafe_run(format!(
            "at {sizes:?}, one past the entry bound: the call check refuses with [{}] {}, not E0937",
            d.code, d.message
        ));
    }
    let abi: Vec<i64> = kernel
        .sizes
        .iter()
        .map(|s| sizes.get(s).copied().unwrap_or(1))
        .collect();
    let got = match run_kernel(harness, kernel, &abi, inputs, len) {
        Ok(g) => g,
        Err(why) => return unsafe_run(format!("run at {sizes:?}: {why}")),
    };
    let touched = got
        .iter()
        .filter(|x| !super::kernel::untouched(**x))
        .count();
    let Ok(call) = check else {
        // Refused on entry: nothing written.
        if touched > 0 {
            return unsafe_run(format!(
                "at {sizes:?}: the call check refuses the sizes, but the kernel wrote {touched} \
                 of {len} output elements"
            ));
        }
        return None;
    };
    if touched < len {
        return unsafe_run(format!(
            "at {sizes:?}: the kernel accepted the sizes but left {} of {len} output elements \
             unwritten",
            len - touched
        ));
    }
    let Ok(want) = eval_def(program, src, sizes, inputs, &eval_options()) else {
        return None;
    };
    let got = Tensor::new(call.output, got)?;
    if let Err(why) = same_values(&want, &got, false) {
        return Some(Failure {
            kind: Kind::CMismatch,
            detail: format!(
                "at {sizes:?}: {why}\n  interpreter `{src}` = {}\n  kernel `{DERIVED}` = {}",
                show(&want),
                show(&got)
            ),
        });
    }
    None
}

// ---------------------------------------------------------------------------------------
// Certificate mutations
// ---------------------------------------------------------------------------------------

/// Every program text of a certificate (so a consistent edit can touch them all).
fn texts_mut(v: &mut Value) -> Vec<&mut Value> {
    let mut out: Vec<&mut Value> = Vec::new();
    let Value::Object(map) = v else { return out };
    for (k, x) in map.iter_mut() {
        match k.as_str() {
            "initial" | "result" => out.push(x),
            "steps" => {
                if let Value::Array(steps) = x {
                    for s in steps {
                        if let Value::Object(sm) = s {
                            for (sk, sx) in sm.iter_mut() {
                                match sk.as_str() {
                                    "before" | "after_site" | "after" | "command" => out.push(sx),
                                    "instantiation" => {
                                        if let Value::Object(inst) = sx {
                                            out.extend(inst.values_mut());
                                        }
                                    }
                                    _ => {}
                                }
                            }
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Replaces whole number tokens `from` by `to` in `s`.
fn replace_number(s: &str, from: &str, to: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::new();
    let mut k = 0;
    while k < b.len() {
        if b[k].is_ascii_digit()
            && (k == 0
                || !(b[k - 1].is_ascii_alphanumeric() || b[k - 1] == b'_' || b[k - 1] == b'.'))
        {
            let mut e = k;
            while e < b.len() && (b[e].is_ascii_digit() || b[e] == b'.') {
                e += 1;
            }
            let tok = &s[k..e];
            let boundary = e >= b.len() || !(b[e].is_ascii_alphanumeric() || b[e] == b'_');
            out.push_str(if tok == from && boundary { to } else { tok });
            k = e;
        } else {
            out.push(b[k] as char);
            k += 1;
        }
    }
    out
}

fn numbers(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_ident = false;
    for ch in s.chars() {
        if ch.is_ascii_digit() && (!prev_ident || !cur.is_empty()) {
            cur.push(ch);
        } else {
            if !cur.is_empty() && ch != '.' {
                out.push(std::mem::take(&mut cur));
            } else {
                cur.clear();
            }
            prev_ident = ch.is_ascii_alphanumeric() || ch == '_';
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// One small edit of a certificate: a `with`/instantiation value, a path, the result
/// text, a step dropped or swapped, a grade, an `assume` dropped, or a number changed
/// consistently everywhere. `None` when the chosen edit does not apply.
pub fn mutate(json: &str, rng: &mut Rng) -> Option<String> {
    let mut v: Value = serde_json::from_str(json).ok()?;
    let nsteps = v["steps"].as_array().map_or(0, Vec::len);
    match rng.below(9) {
        0 => {
            // An instantiation value changed, alone or in every later text.
            if nsteps == 0 {
                return None;
            }
            let s = rng.below(nsteps);
            let inst = v["steps"][s]["instantiation"].as_object_mut()?;
            if inst.is_empty() {
                return None;
            }
            let keys: Vec<String> = inst.keys().cloned().collect();
            let key = rng.pick(&keys).clone();
            let old = inst[&key].as_str()?.to_string();
            let new = rng
                .pick(&[
                    "0",
                    "1",
                    "2",
                    "n",
                    "n - 1",
                    "4611686018427387904",
                    "i",
                    "-1",
                ])
                .to_string();
            inst.insert(key, Value::String(new.clone()));
            if rng.chance(50) && numbers(&old).len() == 1 && old.chars().all(|c| c.is_ascii_digit())
            {
                for t in texts_mut(&mut v) {
                    if let Some(s) = t.as_str() {
                        *t = Value::String(replace_number(s, &old, &new));
                    }
                }
            }
        }
        1 => {
            if nsteps == 0 {
                return None;
            }
            let s = rng.below(nsteps);
            let path = v["steps"][s]["path"].as_array_mut()?;
            match rng.below(3) {
                0 if !path.is_empty() => {
                    path.pop();
                }
                1 => path.push(Value::from(rng.below(2))),
                _ if !path.is_empty() => {
                    let k = rng.below(path.len());
                    let x = path[k].as_u64().unwrap_or(0);
                    path[k] = Value::from(if x == 0 { 1 } else { x - 1 });
                }
                _ => return None,
            }
        }
        2 => {
            // The result (and the last step's program) replaced by another program of
            // the certificate.
            let mut progs = vec![v["initial"].clone()];
            for s in 0..nsteps {
                progs.push(v["steps"][s]["after"].clone());
            }
            let p = rng.pick(&progs).clone();
            v["result"] = p.clone();
            if nsteps > 0 {
                v["steps"][nsteps - 1]["after"] = p;
            }
        }
        3 => {
            if nsteps == 0 {
                return None;
            }
            let s = rng.below(nsteps);
            v["steps"].as_array_mut()?.remove(s);
        }
        4 => {
            if nsteps < 2 {
                return None;
            }
            let s = rng.below(nsteps - 1);
            v["steps"].as_array_mut()?.swap(s, s + 1);
        }
        5 => {
            v["grade"] = Value::String("exact".to_string());
            for s in 0..nsteps {
                v["steps"][s]["grade"] = Value::String("exact".to_string());
            }
        }
        6 => {
            let decl = v["declarations"].as_str()?.to_string();
            let lines: Vec<&str> = decl.lines().collect();
            let assumes: Vec<usize> = (0..lines.len())
                .filter(|&k| lines[k].trim_start().starts_with("assume"))
                .collect();
            if assumes.is_empty() {
                return None;
            }
            let drop = *rng.pick(&assumes);
            let kept: Vec<&str> = lines
                .iter()
                .enumerate()
                .filter(|(k, _)| *k != drop)
                .map(|(_, l)| *l)
                .collect();
            v["declarations"] = Value::String(kept.join("\n"));
        }
        7 => {
            // A number changed everywhere at once: a consistent certificate of a
            // different derivation (often of a different initial program).
            let all: Vec<String> = texts_mut(&mut v)
                .iter()
                .filter_map(|t| t.as_str().map(numbers))
                .flatten()
                .collect();
            if all.is_empty() {
                return None;
            }
            let old = rng.pick(&all).clone();
            let n: i64 = old.parse().ok()?;
            let new = match rng.below(3) {
                0 => n.saturating_add(1),
                1 => (n - 1).max(0),
                _ => 4_611_686_018_427_387_904,
            }
            .to_string();
            for t in texts_mut(&mut v) {
                if let Some(s) = t.as_str() {
                    *t = Value::String(replace_number(s, &old, &new));
                }
            }
        }
        _ => {
            // A condition's recorded verdict and goal rewritten (the checker must
            // ignore recorded verdicts).
            if nsteps == 0 {
                return None;
            }
            let s = rng.below(nsteps);
            let conds = v["steps"][s]["conditions"].as_array_mut()?;
            if conds.is_empty() {
                return None;
            }
            let k = rng.below(conds.len());
            conds[k]["verdict"] = Value::String("proved".to_string());
            conds[k]["goal"] = Value::String("true".to_string());
        }
    }
    let text = serde_json::to_string(&v).ok()?;
    (text != json).then_some(text)
}

/// If the checker accepts the mutant, its `initial` and `result` must evaluate equal.
fn judge_mutant(j: &Judges, m: &str, opts: &Options, out: &mut Outcome) -> Option<Failure> {
    let Ok(report) = atl_proofs::verify_with(m, &j.lib, &j.solver) else {
        return None;
    };
    out.mutants_accepted += 1;
    let v: Value = serde_json::from_str(m).ok()?;
    let text = certificate_program(&v)?;
    let (checked, _) = atl_lang::check_source(&text);
    let checked = checked?;
    let exact = report.grade == "exact";
    let cmp = compare(&checked.program, "zinit", "zresult", exact, opts);
    out.evaluated_sizes += cmp.evaluated;
    cmp.differs.map(|detail| Failure {
        kind: Kind::CheckerUnsound,
        detail: format!("{detail}\nmutated certificate:\n{m}"),
    })
}

/// The programs of a certificate as one `.atl` file: its declarations, recorded
/// definitions, and `zinit` / `zresult` for `initial` and `result`.
pub fn certificate_program(v: &Value) -> Option<String> {
    let mut text = v["declarations"].as_str()?.to_string();
    text.push('\n');
    if let Some(defs) = v["definitions"].as_array() {
        for d in defs {
            text.push_str(&format!(
                "def {} = {}\n",
                d["name"].as_str()?,
                d["body"].as_str()?
            ));
        }
    }
    text.push_str(&format!("def zinit = {}\n", v["initial"].as_str()?));
    text.push_str(&format!("def zresult = {}\n", v["result"].as_str()?));
    Some(text)
}

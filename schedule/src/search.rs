//! The search: candidates in the cost model's order, each written as directives, checked
//! by the derivation engine and the independent checker (as `atl check` replays a
//! file), gated, lowered, validated, compiled (a batch at a time, in parallel), checked
//! against the interpreter at small sizes, and timed at the sizes asked for; then the
//! best few timed again, interleaved, and the fastest kept. After each new best, its
//! neighbours (the same schedule with the next tile height or width) are tried next.
//! Everything runs within the budget; the time a candidate takes is never wasted on a
//! kernel that is not validated.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use atl_driver::lowering::{gate, validate_kernel_monitored};
use atl_driver::timing::{check, compile_within, default_check_sizes, median, random_inputs};
use atl_driver::{Collect, Failure, Monitor, Observer};
use atl_emit_c::{Compiled, Dtype, Fp};
use atl_lang::diag::Diagnostic;
use atl_lang::ir::Program;
use atl_lower::Kernel;

use crate::candidate::Candidate;
use crate::machine::Machine;
use crate::nest::Nest;
use crate::stages::Stage;
use crate::variants::{Ranked, SpaceSize, ranked};

/// The compile time a candidate gets: a fast tile compiles in a second or two, while
/// fully unrolled guarded code can take GCC half a minute.
const COMPILE_LIMIT: Duration = Duration::from_secs(10);

/// What `atl schedule` is asked.
#[derive(Clone, Debug)]
pub struct Options {
    /// The specification to schedule (default: the file's last definition).
    pub def: Option<String>,
    pub sizes: BTreeMap<String, i64>,
    pub threads: usize,
    pub budget: Duration,
    /// Seeds the inputs the kernels are timed on.
    pub seed: u64,
    pub dtype: Dtype,
}

/// How one candidate did.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Checked, validated, agreeing with the interpreter, timed.
    Timed {
        median: Duration,
        compile: Duration,
        check_error: f64,
    },
    /// The derivation engine (or the independent checker) refused a directive.
    Refused(String),
    /// The kernel was not validated, or failed to compile, run or agree.
    Failed(String),
    /// Not reached within the budget.
    Skipped,
}

/// A candidate and what became of it.
#[derive(Clone, Debug)]
pub struct Tried {
    pub candidate: Candidate,
    pub steps: Vec<String>,
    pub estimate: f64,
    pub verdict: Verdict,
}

impl Tried {
    pub fn median(&self) -> Option<Duration> {
        match &self.verdict {
            Verdict::Timed { median, .. } => Some(*median),
            _ => None,
        }
    }
}

/// What the search found.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub machine: Machine,
    pub def: String,
    /// The name of the derivation written.
    pub name: String,
    pub sizes: BTreeMap<String, i64>,
    pub threads: usize,
    pub dtype: Dtype,
    /// Every candidate tried, in the order tried.
    pub tried: Vec<Tried>,
    /// Index in `tried` of the fastest.
    pub best: usize,
    pub space: SpaceSize,
    pub candidates: usize,
    /// Spearman's rank correlation of the model's estimates with the measured medians,
    /// over the timed candidates (None below three).
    pub rank_correlation: Option<f64>,
    /// The leaders timed again interleaved at the end: `(index in tried, median)`
    /// (empty with fewer than two timed candidates). The best is the fastest of them.
    pub rematch: Vec<(usize, Duration)>,
    pub elapsed: Duration,
    /// Stages of a pipeline no candidate of which was timed, left as written (their
    /// search's E0961 message and first reasons).
    pub unscheduled: Vec<String>,
}

impl Outcome {
    /// This search followed by `next` (a later stage's, whose best includes this one's
    /// schedule): every candidate of both, `next`'s best and rematch.
    fn then(mut self, next: Outcome) -> Outcome {
        let offset = self.tried.len();
        self.tried.extend(next.tried);
        self.best = offset + next.best;
        self.rematch = next
            .rematch
            .into_iter()
            .map(|(k, m)| (offset + k, m))
            .collect();
        self.candidates += next.candidates;
        self.space.variants += next.space.variants;
        self.space.orders += next.space.orders;
        self.space.egraph_nodes += next.space.egraph_nodes;
        self.rank_correlation = next.rank_correlation.or(self.rank_correlation);
        self.unscheduled.extend(next.unscheduled);
        self
    }

    pub fn best(&self) -> &Tried {
        &self.tried[self.best]
    }

    /// The best's median: from the interleaved rematch when there was one.
    pub fn best_median(&self) -> Option<Duration> {
        self.rematch
            .iter()
            .find(|(k, _)| *k == self.best)
            .map(|(_, m)| *m)
            .or_else(|| self.best().median())
    }

    /// What the search chose for the vector width, and what it timed to choose it.
    pub fn width_note(&self) -> String {
        let mut timed: Vec<u32> = self
            .tried
            .iter()
            .filter(|t| t.median().is_some())
            .filter_map(|t| t.candidate.vector_width)
            .collect();
        timed.sort_unstable();
        timed.dedup();
        let timed_text = timed
            .iter()
            .map(|b| b.to_string())
            .collect::<Vec<_>>()
            .join(" and ");
        match (self.best().candidate.vector_width, timed.is_empty()) {
            (Some(bits), _) => format!(
                "{bits} bits (`vector_width {bits}`), the fastest of the C compiler's default and {timed_text} bits"
            ),
            (None, false) => {
                format!("the C compiler's default, the fastest of it and {timed_text} bits")
            }
            (None, true) => "the C compiler's default".to_string(),
        }
    }

    /// The `derive` block, with comments saying where and how it was found.
    pub fn derive_text(&self) -> String {
        let best = self.best();
        let sizes: Vec<String> = self.sizes.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let mut out = String::new();
        out.push_str(&format!(
            "# Found by `atl schedule` on {}\n# for sizes {}, {} thread(s), {}: {} median ({}).\n",
            self.machine.describe(),
            sizes.join(","),
            self.threads,
            dtype_name(self.dtype),
            // The rematch's median where there was one (what the report prints as
            // the best), else the candidate's own timing.
            self.best_median()
                .map_or("not timed".to_string(), |m| format!(
                    "{:.3} ms",
                    m.as_secs_f64() * 1e3
                )),
            best.candidate.summary()
        ));
        out.push_str(&format!("# Vector width: {}.\n", self.width_note()));
        out.push_str(&format!("derive {} from {} {{\n", self.name, self.def));
        for s in &best.steps {
            out.push_str(&format!("  {s}\n"));
        }
        out.push_str("}\n");
        out
    }
}

pub fn dtype_name(dtype: Dtype) -> &'static str {
    match dtype {
        Dtype::F32 => "f32",
        Dtype::F64 => "f64",
    }
}

/// The file's text without its `derive` blocks (the search adds its own; the others
/// would only be replayed again for every candidate).
pub fn without_derivations(source: &str) -> String {
    let (file, _) = atl_lang::parser::parse_file(source);
    let mut spans: Vec<std::ops::Range<usize>> = file
        .items
        .iter()
        .filter_map(|item| match item {
            atl_lang::ast::Item::Derive { span, .. } => Some(span.range()),
            _ => None,
        })
        .collect();
    spans.sort_by_key(|r| r.start);
    let mut out = String::new();
    let mut at = 0;
    for r in spans {
        if r.start >= at && r.end <= source.len() {
            out.push_str(&source[at..r.start]);
            at = r.end;
        }
    }
    out.push_str(&source[at..]);
    out
}

/// A name for the derivation, fresh in the program.
fn fresh_name(program: &Program, def: &str) -> String {
    let base = format!("{def}_scheduled");
    let mut name = base.clone();
    let mut k = 2;
    while program.def(&name).is_some() {
        name = format!("{base}{k}");
        k += 1;
    }
    name
}

/// A compiled kernel with the compiler's time, or why it did not compile.
type CompileResult = Result<(Compiled, Duration), Vec<Diagnostic>>;

/// A candidate derived, checked, lowered and validated: ready to compile.
struct Prepared {
    kernel: Kernel,
    program: Program,
    name: String,
}

/// Runs the candidate's directives on `base` (the file without its derivations) and
/// takes the kernel through the gate and the validator.
fn prepare(
    base: &str,
    scratch: &Path,
    index: usize,
    def: &str,
    name: &str,
    steps: &[String],
    monitor: Option<&Arc<Monitor>>,
) -> Result<Prepared, Verdict> {
    let mut text = base.to_string();
    text.push_str(&format!("\nderive {name} from {def} {{\n"));
    for s in steps {
        text.push_str(&format!("  {s}\n"));
    }
    text.push_str("}\n");
    let file: PathBuf = scratch.join(format!("candidate{index}.atl"));
    std::fs::write(&file, &text).map_err(|e| Verdict::Failed(e.to_string()))?;
    let mut quiet = Collect::default();
    let loaded = atl_driver::load::load_derived(&mut quiet, &file)
        .map_err(|f| Verdict::Refused(first_message(&f)))?;
    let solver = atl_solver::Solver::new();
    let (gated, _) = gate(&loaded.program, &loaded.shapes, name, &solver)
        .map_err(|d| Verdict::Failed(messages(&d)))?;
    let kernel = gated
        .lower_for(Fp::Fast)
        .map_err(|d| Verdict::Failed(messages(&d)))?;
    validate_within(&loaded.program, &loaded.shapes, name, &kernel, monitor)?;
    Ok(Prepared {
        kernel,
        program: loaded.program,
        name: name.to_string(),
    })
}

/// The time a candidate's validation gets: most take a few seconds; one whose value
/// check drags on (tens of thousands of solver questions, ending unknown) would eat the
/// budget, and a kernel validated that slowly is not worth waiting for.
const VALIDATE_LIMIT: Duration = Duration::from_secs(60);

/// [`validate_kernel_monitored`] stopped after [`VALIDATE_LIMIT`] (or when the search is
/// cancelled): a stopped validation leaves the kernel not validated.
fn validate_within(
    program: &Program,
    shapes: &atl_lang::shapes::ShapeEnv,
    name: &str,
    kernel: &Kernel,
    monitor: Option<&Arc<Monitor>>,
) -> Result<(), Verdict> {
    let local = Monitor::new();
    let finished = AtomicBool::new(false);
    let timed_out = AtomicBool::new(false);
    let result = std::thread::scope(|scope| {
        scope.spawn(|| {
            let begun = Instant::now();
            while !finished.load(Ordering::Relaxed) {
                if monitor.is_some_and(|m| m.is_cancelled()) {
                    local.cancel();
                    return;
                }
                if begun.elapsed() >= VALIDATE_LIMIT {
                    timed_out.store(true, Ordering::Relaxed);
                    local.cancel();
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let result = validate_kernel_monitored(program, shapes, name, kernel, Some(&local));
        finished.store(true, Ordering::Relaxed);
        result
    });
    match result {
        Ok(_) => Ok(()),
        Err(_) if timed_out.load(Ordering::Relaxed) => Err(Verdict::Failed(format!(
            "its validation was stopped after {} s",
            VALIDATE_LIMIT.as_secs()
        ))),
        Err((_, d)) => Err(Verdict::Failed(d.message.clone())),
    }
}

fn messages(diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .first()
        .map_or_else(String::new, |d| format!("{} {}", d.code, d.message))
}

/// `ranked` with every loop the kernel unrolls that is a short `sum` of the nest, or a
/// copy of one (`ry`, and `ry1` … that `partition` made), kept rolled (`unroll ry off`
/// after the candidate's own directives); None if there is none or it already is.
fn rolled_twin(nest: &Nest, ranked: &Ranked, kernel: &Kernel) -> Option<Ranked> {
    if !ranked.candidate.rolled.is_empty() {
        return None;
    }
    let taps: Vec<&str> = nest
        .sums
        .iter()
        .filter(|s| s.unrolled)
        .map(|s| s.name.as_str())
        .collect();
    let is_tap = |var: &str| taps.iter().any(|t| atl_lang::ir::is_fresh_of(var, t));
    let mut rolled: Vec<String> = Vec::new();
    kernel.walk(&mut |stmt| {
        if let atl_loopir::ir::Stmt::For(l) = stmt
            && l.unroll
            && l.origin == atl_loopir::ir::LoopOrigin::Sum
            && is_tap(&l.var)
            && !rolled.contains(&l.var)
        {
            rolled.push(l.var.clone());
        }
    });
    if rolled.is_empty() {
        return None;
    }
    let mut twin = ranked.clone();
    twin.candidate.rolled = rolled;
    Some(twin)
}

/// The first error of a failure, as `CODE message`.
pub(crate) fn first_message(failure: &Failure) -> String {
    failure
        .reports
        .iter()
        .find_map(|r| match r {
            atl_driver::Report::Diagnostics(located) => located
                .diagnostics
                .iter()
                .find(|d| d.is_error())
                .map(|d| format!("{} {}", d.code, d.message)),
            atl_driver::Report::Line(line) => Some(line.clone()),
        })
        .unwrap_or_else(|| "refused".to_string())
}

/// Times one compiled kernel: warm-up, then calls until about `slice` has passed (at
/// least 3, at most 15); the median. A kernel whose warm-up call takes more than twice
/// the best median so far is not timed further: that call is its time (it cannot win,
/// and a slow candidate would eat the budget).
fn time(
    compiled: &mut Compiled,
    sizes: &BTreeMap<String, i64>,
    inputs: &BTreeMap<String, atl_lang::interp::Tensor>,
    threads: usize,
    slice: Duration,
    best: Option<Duration>,
) -> Result<Duration, Diagnostic> {
    compiled.set_threads(threads)?;
    let mut calls = Vec::new();
    for _ in 0..buffer_sets(inputs) {
        calls.push(compiled.prepare(sizes, inputs)?);
    }
    let first = calls[0].call()?;
    if best.is_some_and(|b| first > 2 * b) {
        return Ok(first);
    }
    if first < Duration::from_millis(200) {
        for call in &mut calls {
            call.call()?;
        }
    }
    let mut times = Vec::new();
    let start = Instant::now();
    while times.len() < 3 || (times.len() < 15 && start.elapsed() < slice) {
        let set = times.len() % calls.len();
        times.push(calls[set].call()?);
    }
    Ok(median(&times))
}

/// How many sets of buffers a kernel is timed with, in turn, each allocated afresh:
/// where rows a power of two apart share cache sets, a kernel's speed depends on the
/// physical pages its buffers got (the searched conv1d moved by 21% between processes,
/// Adams2019's copy per tile by 9%), and one set would rank candidates by that luck.
/// One set where the inputs are large.
fn buffer_sets(inputs: &BTreeMap<String, atl_lang::interp::Tensor>) -> usize {
    let bytes: usize = inputs.values().map(|t| t.data.len() * 8).sum();
    if bytes <= 256 << 20 { 3 } else { 1 }
}

pub(crate) fn element_bytes(dtype: Dtype) -> usize {
    match dtype {
        Dtype::F32 => 4,
        Dtype::F64 => 8,
    }
}

/// Searches schedules of the nest of `def` in `program` (loaded from `source`).
pub fn search(
    observer: &mut dyn Observer,
    source: &str,
    program: &Program,
    nest: &Nest,
    machine: Machine,
    options: &Options,
) -> Result<Outcome, Failure> {
    let threads = options.threads.max(1);
    let (ranked, space) = ranked(nest, &machine, element_bytes(options.dtype), threads);
    search_ranked(
        observer,
        source,
        program,
        nest,
        ranked,
        space,
        machine,
        options,
        10 * REMATCH_TIME,
        Duration::ZERO,
    )
}

/// How long past its share a stage's first search may go on until a candidate is timed.
const STAGE_OVERTIME: Duration = Duration::from_secs(60);

/// Searches the stages of a [`Plan::Stages`](crate::stages::Plan) one at a time, each
/// with the schedules chosen so far for the others around it (the stages before it
/// as its prefix, those after it as its suffix), within a share of the budget left.
/// Two rounds: every stage in order (60% of the budget when there are several nests),
/// then every nest but the last again, now timed with the later stages scheduled (in
/// the first round they ran as written, whose time drowned the differences between
/// an earlier stage's candidates). A stage for which no candidate was timed stays as
/// chosen before (as written, at first). The outcome lists every candidate; its best
/// is the last search's, which holds every stage's schedule.
pub fn search_stages(
    observer: &mut dyn Observer,
    source: &str,
    program: &Program,
    stages: &[Stage],
    preamble: &[String],
    machine: Machine,
    options: &Options,
) -> Result<Outcome, Failure> {
    let start = Instant::now();
    let threads = options.threads.max(1);
    let nests: Vec<usize> = (0..stages.len())
        .filter(|&k| matches!(stages[k], Stage::Nest(_)))
        .collect();
    let mut rounds: Vec<(Duration, Vec<usize>)> =
        vec![(options.budget, (0..stages.len()).collect())];
    if nests.len() > 1 {
        rounds[0].0 = options.budget.mul_f64(0.6);
        rounds.push((options.budget, nests[..nests.len() - 1].to_vec()));
    }
    let mut chosen: Vec<Vec<String>> = vec![Vec::new(); stages.len()];
    // The rows of each stage's chosen register tile, if it has rows.
    let mut chosen_rows: Vec<Option<i64>> = vec![None; stages.len()];
    let mut merged: Option<Outcome> = None;
    let mut last_failure = None;
    let mut unscheduled: Vec<String> = Vec::new();
    for (round, (deadline, order)) in rounds.iter().enumerate() {
        for (n, &k) in order.iter().enumerate() {
            let left = deadline.saturating_sub(start.elapsed());
            let share = left / (order.len() - n) as u32;
            let mut nest = stages[k].nest().clone();
            nest.prefix = [preamble.to_vec(), chosen[..k].concat()].concat();
            nest.suffix = chosen[k + 1..].concat();
            // The names the other stages' schedules introduce (their tile loops, copies)
            // are taken: this stage's candidates make up others.
            nest.reserved.extend(
                nest.prefix
                    .iter()
                    .chain(&nest.suffix)
                    .flat_map(|step| words(step))
                    .map(str::to_string),
            );
            let (ranked, space) = match &stages[k] {
                Stage::Nest(_) => {
                    let (mut list, space) =
                        ranked(&nest, &machine, element_bytes(options.dtype), threads);
                    let others: Vec<i64> = (0..stages.len())
                        .filter(|&o| o != k)
                        .filter_map(|o| chosen_rows[o])
                        .collect();
                    aligned_first(&mut list, &others);
                    (list, space)
                }
                Stage::Fixed { variants, .. } => (
                    variants
                        .iter()
                        .map(|(summary, steps)| Ranked {
                            candidate: Candidate::written(summary, steps),
                            estimate: 0.0,
                        })
                        .collect(),
                    SpaceSize {
                        variants: variants.len(),
                        ..SpaceSize::default()
                    },
                ),
            };
            let stage_options = Options {
                budget: share,
                ..options.clone()
            };
            // The budget a stage leaves goes to the next ones rather than to a long
            // rematch; the last search's rematch may take what is left, as one nest's.
            let last = round + 1 == rounds.len() && n + 1 == order.len();
            let rematch_max = if last {
                10 * REMATCH_TIME
            } else {
                REMATCH_TIME
            };
            match search_ranked(
                observer,
                source,
                program,
                &nest,
                ranked,
                space,
                machine.clone(),
                &stage_options,
                rematch_max,
                // Each stage is timed at least once in the first round, even when the
                // stages before it overran their shares: a stage left as written
                // would leave the pipeline as slow as its specification.
                if round == 0 {
                    STAGE_OVERTIME
                } else {
                    Duration::ZERO
                },
            ) {
                Ok(outcome) => {
                    let steps = &outcome.best().steps;
                    chosen[k] = steps[nest.prefix.len()..steps.len() - nest.suffix.len()].to_vec();
                    let tile = &outcome.best().candidate.tile;
                    chosen_rows[k] = tile.row.as_ref().map(|_| tile.rows);
                    merged = Some(match merged {
                        None => outcome,
                        Some(before) => before.then(outcome),
                    });
                }
                Err(failure) if nothing_timed(&failure) => {
                    // A stage with a schedule from the first round keeps it; one
                    // without is left as written, which the report says.
                    if chosen[k].is_empty() {
                        let loops: Vec<&str> = nest.gens.iter().map(|g| g.name.as_str()).collect();
                        unscheduled.push(format!(
                            "the stage of `{}` over {}: {}",
                            nest.def,
                            loops.join(", "),
                            failure_text(&failure)
                        ));
                    }
                    last_failure = Some(failure);
                }
                Err(failure) => return Err(failure),
            }
        }
    }
    match merged {
        Some(mut outcome) => {
            outcome.elapsed = start.elapsed();
            outcome.unscheduled = unscheduled;
            Ok(outcome)
        }
        None => Err(last_failure.unwrap_or_else(|| Failure::message("error: no stage to search"))),
    }
}

/// Moves the candidates whose row tile divides, or is a multiple of, the row tiles the
/// other stages chose (or that have no rows) before the others, each part in its
/// order. The translation validator proves a pipeline whose tiles are so aligned in a
/// few seconds, where others make it compare elements across tiles of unaligned heights
/// (`(14 * ot + t) % 6`): on attention (N = 512) with the scores tiled 6 rows high, the
/// output tiled 3 or 12 rows high validated in about 21 s, 5, 8 or 14 rows high not
/// within 55 to 127 s (the validator's question budget ran out).
fn aligned_first(list: &mut [Ranked], others: &[i64]) {
    if others.is_empty() {
        return;
    }
    let aligned = |r: &Ranked| {
        let t = &r.candidate.tile;
        t.row.is_none()
            || r.candidate.fixed.is_some()
            || r.candidate.partial_sums.is_some()
            || others.iter().all(|&o| o % t.rows == 0 || t.rows % o == 0)
    };
    // A stable sort: each part keeps its order.
    list.sort_by_key(|r| !aligned(r));
}

/// The identifiers of a directive (`tile S.i, S.j by 6, 32 into it, jt, ir, jr`: `tile`,
/// `S`, `i`, …, `jr`).
fn words(step: &str) -> impl Iterator<Item = &str> {
    step.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
}

/// A failure's diagnostics as one line each (message, then notes).
fn failure_text(failure: &Failure) -> String {
    let mut parts: Vec<String> = Vec::new();
    for report in &failure.reports {
        if let atl_driver::Report::Diagnostics(located) = report {
            for d in &located.diagnostics {
                parts.push(format!("[{}] {}", d.code, d.message));
                parts.extend(d.notes.iter().cloned());
            }
        }
    }
    parts.join("; ")
}

/// Whether the search failed only because no candidate was timed (E0961).
fn nothing_timed(failure: &Failure) -> bool {
    failure.reports.iter().any(|r| {
        matches!(r, atl_driver::Report::Diagnostics(located)
            if located.diagnostics.iter().any(|d| d.code == "E0961"))
    })
}

/// Searches `ranked`, the candidates of `nest`, in their order.
#[allow(clippy::too_many_arguments)]
fn search_ranked(
    observer: &mut dyn Observer,
    source: &str,
    program: &Program,
    nest: &Nest,
    ranked: Vec<Ranked>,
    space: SpaceSize,
    machine: Machine,
    options: &Options,
    rematch_max: Duration,
    overtime: Duration,
) -> Result<Outcome, Failure> {
    let start = Instant::now();
    let threads = options.threads.max(1);
    let candidates = ranked.len();
    let name = fresh_name(program, &nest.def);
    let base = without_derivations(source);
    let scratch = tempfile::Builder::new()
        .prefix("atl-schedule")
        .tempdir()
        .map_err(|e| Failure::message(format!("error: cannot create a scratch directory: {e}")))?;
    let check_sizes = default_check_sizes(program, &options.sizes);
    let mut timing_inputs = random_inputs(program, &options.sizes)
        .map_err(|d| Failure::message(format!("error[{}]: {}", d.code, d.message)))?;
    for (k, t) in timing_inputs.values_mut().enumerate() {
        *t = atl_lang::interp::Tensor::random(t.shape.clone(), options.seed.wrapping_add(k as u64));
    }
    let monitor = observer.monitor().cloned();
    let mut queue: Vec<Ranked> = ranked;
    let mut tried: Vec<Tried> = Vec::new();
    let mut best: Option<(Duration, usize)> = None;
    let mut leaders = Leaders::default();
    let batch = machine.cores.clamp(1, 4);
    let slice = Duration::from_millis(600);
    // The vector widths the best candidate is tried again with, once: when three
    // quarters of the budget are gone, or when nothing else is left to try.
    let mut widths_pending = width_choices(nest, &machine);
    loop {
        if !widths_pending.is_empty()
            && let Some((_, k)) = best
            && (queue.is_empty() || start.elapsed() >= options.budget.mul_f64(0.75))
        {
            let twins = widths_pending.drain(..).map(|bits| {
                let mut twin = tried[k].candidate.clone();
                twin.vector_width = Some(bits);
                Ranked {
                    candidate: twin,
                    estimate: tried[k].estimate,
                }
            });
            queue.splice(0..0, twins.collect::<Vec<_>>());
        }
        if queue.is_empty() {
            break;
        }
        atl_driver::observer::check_cancel(observer)?;
        // Past the budget, a search that has timed nothing yet goes on for `overtime`
        // (a stage of a pipeline, whose share an earlier stage's last batch ate).
        let limit = if best.is_none() {
            options.budget + overtime
        } else {
            options.budget
        };
        if start.elapsed() >= limit {
            break;
        }
        if let Some(m) = &monitor {
            let best_text = best.map_or("none yet".to_string(), |(t, _)| {
                format!("{:.3} ms", t.as_secs_f64() * 1e3)
            });
            let left = options.budget.saturating_sub(start.elapsed()).as_secs();
            m.begin(
                format!(
                    "candidate {} of {candidates}, best {best_text}, {left} s left",
                    tried.len() + 1
                ),
                0,
            );
        }
        // A batch of candidates, each derived, checked, validated and compiled on a
        // thread of its own (every stage makes its own solver).
        let mut batch_of: Vec<(usize, Ranked, Vec<String>)> = Vec::new();
        while batch_of.len() < batch && !queue.is_empty() {
            let next = queue.remove(0);
            let steps = next.candidate.steps(nest);
            batch_of.push((tried.len() + batch_of.len(), next, steps));
        }
        let results: Vec<Result<(Prepared, CompileResult), Verdict>> = batch_of
            .par_iter()
            .map(|(index, _, steps)| {
                let prepared = prepare(
                    &base,
                    scratch.path(),
                    *index,
                    &nest.def,
                    &name,
                    steps,
                    monitor.as_ref(),
                )?;
                let compiled = compile_within(
                    &prepared.kernel,
                    options.dtype,
                    Fp::Fast,
                    Some(COMPILE_LIMIT),
                );
                Ok((prepared, compiled))
            })
            .collect();
        let mut ready = Vec::new();
        for ((_, next, steps), result) in batch_of.into_iter().zip(results) {
            match result {
                Ok((prepared, compiled)) => ready.push(((next, steps, prepared), compiled)),
                Err(verdict) => tried.push(Tried {
                    candidate: next.candidate,
                    steps,
                    estimate: next.estimate,
                    verdict,
                }),
            }
        }
        for ((next, steps, prepared), result) in ready {
            atl_driver::observer::check_cancel(observer)?;
            let mut kept: Option<Compiled> = None;
            let verdict = match result {
                Err(d) => {
                    // A compile that took too long, with short reductions unrolled
                    // around the tile (a convolution's taps: gcc's unroll pragmas around
                    // vector loops, 27 s against 0.9 s rolled on a 3 x 3 conv2d's 2 x
                    // 64 tile): the same candidate with those loops rolled goes next.
                    if d.iter().any(|d| d.code == "E0930")
                        && let Some(twin) = rolled_twin(nest, &next, &prepared.kernel)
                    {
                        queue.insert(0, twin);
                    }
                    Verdict::Failed(messages(&d))
                }
                Ok((mut c, compile_time)) => {
                    match check(
                        monitor.as_ref(),
                        &prepared.program,
                        &prepared.name,
                        &c,
                        &check_sizes,
                        options.dtype,
                    )
                    .and_then(|err| {
                        time(
                            &mut c,
                            &options.sizes,
                            &timing_inputs,
                            threads,
                            slice,
                            best.map(|(b, _)| b),
                        )
                        .map(|m| (m, err))
                    }) {
                        Ok((median, check_error)) => {
                            kept = Some(c);
                            Verdict::Timed {
                                median,
                                compile: compile_time,
                                check_error,
                            }
                        }
                        Err(d) => Verdict::Failed(format!("{} {}", d.code, d.message)),
                    }
                }
            };
            if let (Verdict::Timed { median, .. }, Some(c)) = (&verdict, kept) {
                leaders.offer(*median, tried.len(), c);
            }
            if let Verdict::Timed { median, .. } = &verdict
                && best.is_none_or(|(b, _)| *median < b)
            {
                best = Some((*median, tried.len()));
                promote_neighbours(&mut queue, &next.candidate);
            }
            tried.push(Tried {
                candidate: next.candidate,
                steps,
                estimate: next.estimate,
                verdict,
            });
        }
    }
    let Some((_, best_index)) = best else {
        let mut reasons: Vec<String> = Vec::new();
        for t in &tried {
            if let Verdict::Refused(r) | Verdict::Failed(r) = &t.verdict
                && !reasons.iter().any(|seen| seen.starts_with(r.as_str()))
                && reasons.len() < 3
            {
                reasons.push(format!("{r} (in `{}`)", t.steps.join("; ")));
            }
        }
        let d = Diagnostic::error(
            "E0961",
            format!(
                "no schedule of `{}` was checked, validated and timed within the budget ({} of {candidates} candidates tried)",
                nest.def,
                tried.len()
            ),
        )
        .with_note(if reasons.is_empty() {
            "the budget ran out before the first candidate was timed".to_string()
        } else {
            format!("the first reasons: {}", reasons.join("; "))
        })
        .with_help("give a larger `--budget`, or smaller `--sizes` (each candidate is timed at them)");
        return Err(Failure::diagnostics(vec![d], Path::new("<schedule>"), ""));
    };
    // The leaders, each timed alone in its own slice, are timed again interleaved
    // call by call (as `atl bench` compares two kernels): the machine's drift during
    // the search then cannot pick the winner. The budget left (when every candidate
    // was tried early) buys more rounds, up to 20 s: memory-bound kernels at two
    // threads vary by a third from call to call.
    let rematch_time = options
        .budget
        .saturating_sub(start.elapsed())
        .clamp(REMATCH_TIME, rematch_max);
    let (best_index, rematch) =
        match leaders.rematch(&options.sizes, &timing_inputs, threads, rematch_time) {
            Ok(Some((k, times))) => (k, times),
            Ok(None) => (best_index, Vec::new()),
            Err(d) => {
                return Err(Failure::message(format!(
                    "error[{}]: timing the best candidates again: {}",
                    d.code, d.message
                )));
            }
        };
    let rank_correlation = spearman(
        &tried
            .iter()
            .filter_map(|t| t.median().map(|m| (t.estimate, m.as_secs_f64())))
            .collect::<Vec<_>>(),
    );
    for rest in queue {
        let steps = rest.candidate.steps(nest);
        tried.push(Tried {
            candidate: rest.candidate,
            steps,
            estimate: rest.estimate,
            verdict: Verdict::Skipped,
        });
    }
    Ok(Outcome {
        machine,
        def: nest.def.clone(),
        name,
        sizes: options.sizes.clone(),
        threads,
        dtype: options.dtype,
        tried,
        best: best_index,
        space,
        candidates,
        rank_correlation,
        rematch,
        elapsed: start.elapsed(),
        unscheduled: Vec::new(),
    })
}

/// The vector widths a nest's best candidate is also timed with (`vector_width N`): on
/// a machine with 512-bit vectors, 256 and 512 bits, since which one gcc prefers by
/// default depends on the CPU it tunes for (gcc 12 emits 256-bit code on a Zen 5 and
/// 512-bit code on a Zen 4 with `-march=native`), and a register tile sized for one
/// width spills at the other. None where another stage's steps already chose one (a
/// kernel has one width) or the machine has one width only.
fn width_choices(nest: &Nest, machine: &Machine) -> Vec<u32> {
    let chosen = nest
        .prefix
        .iter()
        .chain(&nest.suffix)
        .any(|s| s.split_whitespace().next() == Some("vector_width"));
    if chosen || machine.vector_bytes < 64 {
        return Vec::new();
    }
    vec![256, 512]
}

/// The leaders' medians when timed again: `(index in tried, median)`.
type Rematch = Vec<(usize, Duration)>;

/// How many of the fastest candidates are timed again at the end.
const LEADERS: usize = 3;

/// The least time the leaders are timed again for (more when budget is left).
const REMATCH_TIME: Duration = Duration::from_secs(2);

/// The fastest candidates so far, compiled and kept loaded.
#[derive(Default)]
struct Leaders {
    kept: Vec<(Duration, usize, Compiled)>,
}

impl Leaders {
    fn offer(&mut self, median: Duration, index: usize, compiled: Compiled) {
        self.kept.push((median, index, compiled));
        self.kept.sort_by_key(|(m, k, _)| (*m, *k));
        self.kept.truncate(LEADERS);
    }

    /// Times the leaders interleaved, round-robin with a rotating start; the index of
    /// the fastest by median and every leader's medians (`(index, median)`), or None
    /// with fewer than two leaders.
    fn rematch(
        &mut self,
        sizes: &BTreeMap<String, i64>,
        inputs: &BTreeMap<String, atl_lang::interp::Tensor>,
        threads: usize,
        time: Duration,
    ) -> Result<Option<(usize, Rematch)>, Diagnostic> {
        if self.kept.len() < 2 {
            return Ok(None);
        }
        for (_, _, c) in &mut self.kept {
            c.set_threads(threads)?;
        }
        // Each leader is timed with its buffer sets in turn (see `buffer_sets`).
        let sets = buffer_sets(inputs);
        let mut calls: Vec<Vec<_>> = Vec::new();
        for (_, _, c) in &self.kept {
            let mut kernel_sets = Vec::new();
            for _ in 0..sets {
                kernel_sets.push(c.prepare(sizes, inputs)?);
            }
            calls.push(kernel_sets);
        }
        for call in calls.iter_mut().flatten() {
            call.call()?;
        }
        let slowest = self
            .kept
            .iter()
            .map(|(m, _, _)| *m)
            .max()
            .unwrap_or_default();
        // About `time` in all, at least 5 and at most 201 rounds.
        let rounds = (time.as_secs_f64() / (slowest.as_secs_f64() * calls.len() as f64).max(1e-9))
            .clamp(5.0, 201.0) as usize;
        let mut times: Vec<Vec<Duration>> = vec![Vec::new(); calls.len()];
        for round in 0..rounds {
            for k in 0..calls.len() {
                let which = (round + k) % calls.len();
                times[which].push(calls[which][round % sets].call()?);
            }
        }
        let medians: Vec<(usize, Duration)> = self
            .kept
            .iter()
            .zip(&times)
            .map(|((_, index, _), t)| (*index, median(t)))
            .collect();
        let best = medians
            .iter()
            .min_by_key(|(k, m)| (*m, *k))
            .map(|(k, _)| *k)
            .unwrap_or(self.kept[0].1);
        Ok(Some((best, medians)))
    }
}

/// Moves to the front of the queue the unmeasured candidates around a new best: first
/// up to three siblings (the same tile, order and vectorization with the operands'
/// copies made another way: the bordered copy whole or per column tile, the tiles
/// partitioned at the guards or not), then up to four whose tile differs by one step of
/// height or width (everything else equal). The rest keep their order behind them.
/// Which copy is fastest depends on the machine's caches and on how the C compiler
/// allocates the tile's registers, which the cost model does not see, so the variants
/// of a tile that times well are timed while the budget lasts rather than where the
/// model ranks them.
fn promote_neighbours(queue: &mut Vec<Ranked>, best: &Candidate) {
    let sibling = |c: &Candidate| {
        c != best
            && c.tile == best.tile
            && c.order == best.order
            && c.pack == best.pack
            && c.stage == best.stage
            && c.parallel == best.parallel
            && c.partial_sums == best.partial_sums
            && c.fixed.is_none()
    };
    let near = |c: &Candidate| {
        let (a, b) = (&c.tile, &best.tile);
        a.row == b.row
            && a.col_outer == b.col_outer
            && c.pack == best.pack
            && c.boundary == best.boundary
            && c.relaid == best.relaid
            && ((a.rows == b.rows) != (a.cols == b.cols))
    };
    let mut siblings = Vec::new();
    let mut near_ones = Vec::new();
    let mut rest = Vec::new();
    for ranked in queue.drain(..) {
        if siblings.len() < 3 && sibling(&ranked.candidate) {
            siblings.push(ranked);
        } else if near_ones.len() < 4 && near(&ranked.candidate) {
            near_ones.push(ranked);
        } else {
            rest.push(ranked);
        }
    }
    siblings.append(&mut near_ones);
    siblings.append(&mut rest);
    *queue = siblings;
}

/// Spearman's rank correlation of pairs (ties get their mean rank); None below three.
pub fn spearman(pairs: &[(f64, f64)]) -> Option<f64> {
    if pairs.len() < 3 {
        return None;
    }
    let ranks = |values: Vec<f64>| -> Vec<f64> {
        let mut idx: Vec<usize> = (0..values.len()).collect();
        idx.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
        let mut r = vec![0.0; values.len()];
        let mut k = 0;
        while k < idx.len() {
            let mut e = k;
            while e + 1 < idx.len() && values[idx[e + 1]] == values[idx[k]] {
                e += 1;
            }
            let mean = (k + e) as f64 / 2.0 + 1.0;
            for &i in &idx[k..=e] {
                r[i] = mean;
            }
            k = e + 1;
        }
        r
    };
    let a = ranks(pairs.iter().map(|p| p.0).collect());
    let b = ranks(pairs.iter().map(|p| p.1).collect());
    let n = a.len() as f64;
    let mean = (n + 1.0) / 2.0;
    let cov: f64 = a.iter().zip(&b).map(|(x, y)| (x - mean) * (y - mean)).sum();
    let var_a: f64 = a.iter().map(|x| (x - mean).powi(2)).sum();
    let var_b: f64 = b.iter().map(|y| (y - mean).powi(2)).sum();
    (var_a > 0.0 && var_b > 0.0).then(|| cov / (var_a * var_b).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_of_agreeing_reversed_and_tied_orders() {
        let same = [(1.0, 10.0), (2.0, 20.0), (3.0, 35.0), (4.0, 36.0)];
        assert!((spearman(&same).expect("4 pairs") - 1.0).abs() < 1e-12);
        let reversed = [(1.0, 4.0), (2.0, 3.0), (3.0, 2.0), (4.0, 1.0)];
        assert!((spearman(&reversed).expect("4 pairs") + 1.0).abs() < 1e-12);
        // Hand-computed: ranks (1, 2, 3) against (2, 1, 3): 1 - 6·2/(3·8) = 0.5.
        let swapped = [(1.0, 2.0), (2.0, 1.0), (3.0, 3.0)];
        assert!((spearman(&swapped).expect("3 pairs") - 0.5).abs() < 1e-12);
        assert_eq!(spearman(&[(1.0, 1.0), (2.0, 2.0)]), None);
        assert_eq!(spearman(&[(1.0, 1.0), (1.0, 2.0), (1.0, 3.0)]), None);
    }

    #[test]
    fn a_candidate_whose_taps_are_unrolled_has_a_twin_with_them_rolled_in_every_copy() {
        let source = "size K, C, H, W
input x : [C, H, W]
input w : [K, C, 3, 3]
def conv = gen k < K, y < H, xx < W: sum c < C, ry < 3, rx < 3: w[k, c, ry, rx] * [y + ry < H && xx + rx < W] * x[c, y + ry, xx + rx]
";
        let (checked, diags) = atl_lang::check_source(source);
        let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
        let sizes: BTreeMap<String, i64> = [("K", 32), ("C", 32), ("H", 64), ("W", 64)]
            .into_iter()
            .map(|(n, v)| (n.to_string(), v))
            .collect();
        let nest = crate::nest::analyze(&checked.program, "conv", &sizes).expect("a nest");
        let mut steps: Vec<String> = [
            "reorder y, c, xx, k",
            "tile xx, k by 64, 2 into xxt, kt, xxr, kr",
            "simpl",
            "reorder y, c, xxt, kt, ry, rx, kr, xxr",
            "partition kt",
            "partition xxt",
            "partition xxt",
        ]
        .map(str::to_string)
        .to_vec();
        // The candidate conv2d's search tried first (27 s in gcc, over its limit).
        let ranked = Ranked {
            candidate: Candidate::written("", &steps),
            estimate: 0.0,
        };
        let scratch = tempfile::tempdir().expect("scratch");
        let prepared = prepare(source, scratch.path(), 0, "conv", "scheduled", &steps, None)
            .unwrap_or_else(|v| panic!("{v:?}"));
        let unrolled_taps = |k: &Kernel| {
            let mut n = 0;
            k.walk(&mut |s| {
                if let atl_loopir::ir::Stmt::For(l) = s
                    && l.unroll
                    && l.origin == atl_loopir::ir::LoopOrigin::Sum
                {
                    n += 1;
                }
            });
            n
        };
        assert!(unrolled_taps(&prepared.kernel) > 1);
        let twin = rolled_twin(&nest, &ranked, &prepared.kernel).expect("a twin");
        // `partition` copied the taps: their copies are rolled too, by their names.
        assert!(twin.candidate.rolled.iter().any(|l| l != "ry" && l != "rx"));
        steps.extend(
            twin.candidate
                .rolled
                .iter()
                .map(|l| format!("unroll {l} off")),
        );
        assert_eq!(twin.candidate.steps(&nest), steps);
        let rolled = prepare(source, scratch.path(), 1, "conv", "scheduled", &steps, None)
            .unwrap_or_else(|v| panic!("{v:?}"));
        assert_eq!(unrolled_taps(&rolled.kernel), 0);
        // Rolled once is enough.
        assert!(rolled_twin(&nest, &twin, &rolled.kernel).is_none());
    }

    #[test]
    fn tiles_aligned_with_the_other_stages_tiles_come_first_in_their_order() {
        let tile = |rows: i64| {
            let mut c = Candidate::written("", &[]);
            c.fixed = None;
            c.tile.row = (rows > 1).then(|| "i".to_string());
            c.tile.rows = rows;
            Ranked {
                candidate: c,
                estimate: 0.0,
            }
        };
        let mut list: Vec<Ranked> = [14, 12, 5, 1, 3, 8, 6].into_iter().map(tile).collect();
        aligned_first(&mut list, &[6]);
        let rows: Vec<i64> = list.iter().map(|r| r.candidate.tile.rows).collect();
        assert_eq!(rows, [12, 1, 3, 6, 14, 5, 8]);
        // Nothing chosen elsewhere: the order is kept.
        aligned_first(&mut list, &[]);
        let again: Vec<i64> = list.iter().map(|r| r.candidate.tile.rows).collect();
        assert_eq!(again, rows);
    }

    #[test]
    fn a_new_best_brings_its_copy_variants_then_its_tile_neighbours_forward() {
        // (rows, cols, bordered per column tile, partitioned at the guards)
        let make = |rows: i64, cols: i64, local: bool, partition: bool| {
            let mut c = Candidate::written("", &[]);
            c.fixed = None;
            c.tile.row = Some("k".to_string());
            c.tile.rows = rows;
            c.tile.col = "p".to_string();
            c.tile.cols = cols;
            c.boundary = Some("x".to_string());
            c.local_copy = local;
            c.partition_guards = partition;
            Ranked {
                candidate: c,
                estimate: 0.0,
            }
        };
        let best = make(4, 48, false, false).candidate;
        let mut queue = vec![
            make(8, 32, false, false),
            make(4, 32, false, false),
            make(12, 16, true, false),
            make(4, 64, true, false),
            make(4, 48, true, true),
            make(6, 48, false, false),
            make(4, 48, true, false),
        ];
        promote_neighbours(&mut queue, &best);
        let got: Vec<(i64, i64, bool, bool)> = queue
            .iter()
            .map(|r| {
                let c = &r.candidate;
                (c.tile.rows, c.tile.cols, c.local_copy, c.partition_guards)
            })
            .collect();
        assert_eq!(
            got,
            [
                // the same tile, its copies made per column tile (and partitioned)
                (4, 48, true, true),
                (4, 48, true, false),
                // one step of width or height away, bordered as the best
                (4, 32, false, false),
                (4, 64, true, false),
                (6, 48, false, false),
                // the rest, in their order
                (8, 32, false, false),
                (12, 16, true, false),
            ]
        );
    }

    #[test]
    fn the_vector_widths_are_tried_where_the_machine_has_two_and_no_stage_chose() {
        let source = "size M, N\ninput A : [M, N]\ndef twice = gen i < M, j < N: 2 * A[i, j]\n";
        let (checked, diags) = atl_lang::check_source(source);
        let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
        let sizes: BTreeMap<String, i64> = [("M".to_string(), 64), ("N".to_string(), 64)].into();
        let mut nest = crate::nest::analyze(&checked.program, "twice", &sizes).expect("a nest");
        let machine = |vector_bytes| Machine {
            isa: String::new(),
            vector_bytes,
            vector_registers: 32,
            l1d: 32 << 10,
            l2: 1 << 20,
            l3: 32 << 20,
            cores: 2,
        };
        assert_eq!(width_choices(&nest, &machine(64)), [256, 512]);
        assert!(width_choices(&nest, &machine(32)).is_empty());
        // Another stage's steps (a pipeline's earlier stage) already chose one.
        nest.prefix.push("vector_width 256".to_string());
        assert!(width_choices(&nest, &machine(64)).is_empty());
        // A twin's steps end with its width, and its summary says so.
        let mut twin = Candidate::written("copy", &["vectorize j".to_string()]);
        twin.vector_width = Some(512);
        nest.prefix.clear();
        assert_eq!(twin.steps(&nest), ["vectorize j", "vector_width 512"]);
        assert_eq!(twin.summary(), "copy, 512-bit vectors");
    }

    #[test]
    fn kernels_are_timed_with_three_buffer_sets_unless_their_inputs_are_large() {
        let input = |n: usize| {
            BTreeMap::from([("x".to_string(), atl_lang::interp::Tensor::zeros(vec![n]))])
        };
        assert_eq!(buffer_sets(&input(1 << 20)), 3);
        assert_eq!(buffer_sets(&input(64 << 20)), 1);
    }

    #[test]
    fn the_names_a_directive_introduces_are_among_its_words() {
        let step = "tile S.i, S.j by 6, 32 into it, jt, ir, jr";
        assert_eq!(
            words(step).collect::<Vec<_>>(),
            [
                "tile", "S", "i", "S", "j", "by", "into", "it", "jt", "ir", "jr"
            ]
        );
        assert_eq!(
            words("rfactor k1i into k1l as k1part").collect::<Vec<_>>(),
            ["rfactor", "k1i", "into", "k1l", "as", "k1part"]
        );
    }

    #[test]
    fn derive_blocks_are_cut_out_of_the_source() {
        let source = "size n\ninput f : [n]\ndef g = gen i < n: f[i]\nderive h from g {\n  split i by 4 into io, ii\n}\ndef z = gen i < n: f[i]\n";
        let cut = without_derivations(source);
        assert!(!cut.contains("derive"), "{cut}");
        assert!(cut.contains("def g") && cut.contains("def z"), "{cut}");
    }
}

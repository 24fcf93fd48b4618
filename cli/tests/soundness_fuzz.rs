//! The soundness fuzzer of issue 17 (`docs/fuzzing.md`): random well-shaped programs
//! built around the constructs of the known holes, random derivations of them (rule
//! steps, tactics, directives), and for every derivation the engine accepts: the
//! interpreter at every size assignment in `1..=9` against its source, the independent
//! checker on its certificate, mutated certificates, and for a few the compiled C
//! (for every program with index arrays, its final derivation's kernel).
//! Any disagreement fails the test with a minimized, complete `.atl` reproducer.
//!
//! Deterministic: a fixed seed and a fixed number of cases (about a minute in a debug
//! build). `ATL_FUZZ_SEED=S` and `ATL_FUZZ_CASES=N` select another run (nightly: a large
//! N); `ATL_FUZZ_CASE=C` replays a single case of the run, `ATL_FUZZ_FIRST=F` runs
//! its cases `F..N` only (a case compiled to C in the full run may not be in a
//! slice: which derivations compile depends on the cases before); `ATL_FUZZ_MINIMIZE=K`
//! minimizes the first K failing cases of each kind (default 1); `ATL_FUZZ_ALLOW_FAIL=1`
//! reports failures without failing (for measuring a tree with known holes);
//! `ATL_FUZZ_TRACE=1` prints each program before it is judged (to find a case that
//! does not finish).

// The fuzzer's report (counts, reproducers) is its output: printing is the point.
#![allow(clippy::print_stderr)]

mod fuzz_support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use fuzz_support::oracle::{self, Failure, Judges, Kind, Options};
use fuzz_support::program::{self, Program};
use fuzz_support::rng::Rng;
use fuzz_support::steps;

/// Cases of a default run: about a minute of a debug build on the 2-core CI machine.
const DEFAULT_CASES: u64 = 240;
const DEFAULT_SEED: u64 = 17;
/// Derivations compiled to C in a default run (compiling is slow).
const COMPILE_EVERY: u64 = 15;
/// One case in `PLANT_EVERY` judges a planted issue-28 program
/// ([`program::planted`]) instead of a random one.
const PLANT_EVERY: u64 = 25;
/// Steps tried per position before the derivation stops growing.
const ATTEMPTS_PER_STEP: usize = 4;
/// Certificate mutations per accepted derivation.
const MUTANTS: usize = 2;
/// Runs of the judges the minimizer may spend on one failure.
const MINIMIZE_BUDGET: usize = 400;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// `ATL_FUZZ_CASE=C`: a single case is replayed.
fn replaying() -> bool {
    env_u64("ATL_FUZZ_CASE").is_some()
}

/// `ATL_FUZZ_VERBOSE=1`: every program and step with its verdict on stderr.
fn verbose() -> bool {
    std::env::var("ATL_FUZZ_VERBOSE").is_ok_and(|v| v == "1")
}

#[derive(Default)]
struct Stats {
    programs_generated: u64,
    programs_rejected: u64,
    /// Programs whose derivation the engine refused at its starting point (E0413).
    programs_ill_shaped: u64,
    derivations_attempted: u64,
    derivations_accepted: u64,
    evaluated: u64,
    size_assignments: u64,
    /// Size assignments not judged because the derived program's index arithmetic
    /// overflowed 64 bits (E0502).
    overflowed: u64,
    certificates_verified: u64,
    checker_refused: u64,
    mutants: u64,
    mutants_accepted: u64,
    compiled: u64,
    /// Compiled kernels built with the sanitizers.
    sanitized: u64,
    /// Compiled-to-be kernels the validator validated.
    validated: u64,
    /// Kernels lowering refused for 64-bit overflow (E0938).
    lowering_refused: u64,
    /// Kernels the validator refused (E0951, E0938, E0944).
    validator_refused: u64,
    /// Kernel runs at a free size's entry bound or one past it.
    near_bound_runs: u64,
    /// Programs whose source reads at a huge index.
    huge_index_programs: u64,
    /// Programs that use a coordinate or a size as a value (`float(i + 1)`, issue 32).
    coordinate_programs: u64,
    /// Accepted derivations with a `pack` step, and how many of them were compiled (a
    /// packed panel's zero columns under a tile: lanes summed without their guard).
    packed_accepted: u64,
    packed_compiled: u64,
    /// Accepted derivations of programs with a column-major input, and how many of them
    /// were compiled and validated (the kernel reads that input in its storage order).
    column_major_accepted: u64,
    column_major_compiled: u64,
    /// Accepted derivations with a `store_root`/`store_at` step (the sliding window:
    /// each is compiled), and how many of them were compiled and validated.
    storage_accepted: u64,
    storage_compiled: u64,
    storage_validated: u64,
    column_major_validated: u64,
    /// The programs that declare index arrays (issue 31).
    ia: IndexArrayStats,
    /// The next accepted derivation is compiled (one every `COMPILE_EVERY` cases).
    compile_due: bool,
}

/// What became of the programs with index arrays (issue 31).
#[derive(Default)]
struct IndexArrayStats {
    programs: u64,
    /// Refused by the front end.
    rejected: u64,
    /// Refused as ill-shaped (E0413) or with unsatisfiable `assume`s.
    ill_shaped: u64,
    /// Programs whose derivation's starting point reads an index array.
    reading: u64,
    derivations_accepted: u64,
    /// Programs whose final derivation (compiled) has at least one step.
    derived: u64,
    /// Final derivations sent to the C judge, and what became of them.
    compile_tried: u64,
    gate_refused: u64,
    lowering_refused: u64,
    /// Refused by lowering for another reason (E0913: a directive's loop removed).
    lowering_other: u64,
    validator_refused: u64,
    /// Of those, kernels the validator rejects as wrong (E0951): a lowering bug that
    /// the validator stops (`atl emit` refuses them too).
    validator_rejected: u64,
    compiled: u64,
    validated: u64,
    sanitized: u64,
    /// Kernel runs compared with the interpreter: at small sizes, and at free sizes'
    /// entry bounds.
    small_runs: u64,
    near_bound_runs: u64,
    /// Programs whose starting point has a scatter (`program::has_scatter`), and of
    /// their final derivations, those compiled and validated.
    scatter_programs: u64,
    scatter_compiled: u64,
    scatter_validated: u64,
}

impl IndexArrayStats {
    fn tally_compile(&mut self, out: &oracle::Outcome) {
        self.compile_tried += 1;
        self.gate_refused += out.gate_refused as u64;
        self.lowering_refused += out.lowering_refused as u64;
        self.lowering_other += (out.lowering_refused == 0 && out.lowering_error.is_some()) as u64;
        self.validator_refused += out.validator_refused as u64;
        self.validator_rejected += out
            .validator_error
            .as_deref()
            .is_some_and(|e| e.starts_with("[E0951]")) as u64;
        self.compiled += out.compiled as u64;
        self.validated += out.validated as u64;
        self.sanitized += out.sanitized as u64;
        self.small_runs += out.small_runs as u64;
        self.near_bound_runs += out.near_bound_runs as u64;
    }
}

impl Stats {
    /// Counts an accepted derivation's outcome.
    fn tally(&mut self, out: &oracle::Outcome) {
        self.derivations_accepted += 1;
        if out.evaluated_sizes > 0 {
            self.evaluated += 1;
        }
        self.size_assignments += out.evaluated_sizes as u64;
        self.overflowed += out.overflowed_sizes as u64;
        self.certificates_verified += out.checker_accepted as u64;
        self.checker_refused += (!out.checker_accepted) as u64;
        self.mutants += out.mutants as u64;
        self.mutants_accepted += out.mutants_accepted as u64;
        self.compiled += out.compiled as u64;
        self.sanitized += out.sanitized as u64;
        self.validated += out.validated as u64;
        self.lowering_refused += out.lowering_refused as u64;
        self.validator_refused += out.validator_refused as u64;
        self.near_bound_runs += out.near_bound_runs as u64;
    }
}

struct Found {
    case: u64,
    program: Program,
    options: Options,
    failure: Failure,
}

fn options(case_seed: u64, compile: bool, sanitize: bool) -> Options {
    Options {
        mutants: MUTANTS,
        compile,
        sanitize,
        seed: case_seed,
        max_assignments: 81,
    }
}

/// `ATL_SANITIZE=1`: every compiled kernel is built with the sanitizers (by default
/// only those of programs with a huge constant).
fn sanitize_all() -> bool {
    std::env::var("ATL_SANITIZE").is_ok_and(|v| v == "1")
}

/// Derivations compiled to C: one every `ATL_FUZZ_COMPILE_EVERY` cases (default
/// [`COMPILE_EVERY`]), besides every case whose source reads at a huge index.
fn compile_every() -> u64 {
    env_u64("ATL_FUZZ_COMPILE_EVERY")
        .unwrap_or(COMPILE_EVERY)
        .max(1)
}

/// True when a number in the text has ten digits or more (`2^31` and up): such
/// kernels are built with the sanitizers (issue 28: 64-bit index arithmetic).
fn has_huge_constant(text: &str) -> bool {
    let mut run = 0;
    for ch in text.chars() {
        if ch.is_ascii_digit() {
            run += 1;
            if run >= 10 {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

/// One case: a program and a derivation grown step by step; every prefix the engine
/// accepts is judged. Returns the first failure.
fn run_one(judges: &Judges, seed: u64, case: u64, stats: &mut Stats) -> Option<Found> {
    let case_seed = Rng::case_seed(seed, case);
    let mut rng = Rng::new(case_seed);
    let planted = case % PLANT_EVERY == PLANT_EVERY / 2;
    let mut prog = if planted {
        program::planted(&mut Rng::new(case_seed ^ 0x28))
    } else {
        // Index arrays from a stream of their own: the programs without any are the
        // ones the generator made before index arrays existed.
        program::program(&mut rng, &mut Rng::new(case_seed ^ 0x31))
    };
    stats.programs_generated += 1;
    let index_arrays = !prog.index_arrays.is_empty();
    stats.ia.programs += index_arrays as u64;
    let (checked, diags) = atl_lang::check_source(&prog.text());
    if verbose() {
        eprintln!("--- case {case}\n{}", prog.text());
    }
    let Some(checked) = checked else {
        stats.programs_rejected += 1;
        stats.ia.rejected += index_arrays as u64;
        if verbose() {
            eprintln!(
                "case {case}: front end refused: [{}] {}",
                diags[0].code, diags[0].message
            );
        }
        return None;
    };
    if index_arrays
        && prog
            .defs
            .last()
            .is_some_and(|d| program::reads_index_array(&d.1))
    {
        stats.ia.reading += 1;
    }
    let from = prog.defs.last().map(|d| d.0.clone()).unwrap_or_default();
    let mut current = checked.program.def(&from)?.body.clone();
    let defs: Vec<String> = prog.defs.iter().map(|d| d.0.clone()).collect::<Vec<_>>();
    let defs_before: Vec<String> = defs[..defs.len() - 1].to_vec();
    // A replayed case (`ATL_FUZZ_CASE`) compiles its first accepted derivation, as
    // the case may have done in the run it comes from (the due compile carries over
    // from earlier cases).
    if case.is_multiple_of(compile_every()) || replaying() {
        stats.compile_due = true;
    }
    // A source that reads at a huge index (issue 28) has its first accepted
    // derivation compiled, under the sanitizers.
    let mut huge_index_due = program::has_huge_index(&prog);
    stats.huge_index_programs += huge_index_due as u64;
    stats.coordinate_programs += prog.text().contains("float(") as u64;
    // A planted program's source is the point: only its empty derivation is judged
    // (compiled, sanitized); random steps rarely keep its guarded read. Any other
    // program reading at a huge index has its empty derivation compiled when no step
    // is accepted (see the end of the loop).
    if planted {
        return judge_source(judges, &prog, case, case_seed, stats);
    }
    let nsteps = rng.range(1, 6) as usize;
    for _ in 0..nsteps {
        let mut grew = false;
        for _ in 0..ATTEMPTS_PER_STEP {
            let st = steps::step(
                &mut rng,
                &judges.lib,
                &checked.shapes,
                &current,
                &prog.sizes,
                &defs_before,
            );
            prog.steps.push(st);
            stats.derivations_attempted += 1;
            let text = prog.text();
            // A derivation placing a stage's storage is compiled whenever accepted:
            // only lowering applies it.
            let storage = prog.steps.iter().any(|st| st.contains("store_"));
            let opts = options(
                case_seed ^ prog.steps.len() as u64,
                stats.compile_due || huge_index_due || storage,
                sanitize_all() || huge_index_due || has_huge_constant(&text),
            );
            if std::env::var("ATL_FUZZ_TRACE").is_ok_and(|v| v == "1") {
                eprintln!("case {case}: judging\n{text}");
            }
            let out = oracle::run_case(judges, &text, &opts);
            if verbose() {
                let verdict = if out.engine_accepted {
                    format!(
                        "accepted, checker {}",
                        if out.checker_accepted {
                            "accepted"
                        } else {
                            "refused"
                        }
                    )
                } else {
                    out.engine_error
                        .clone()
                        .unwrap_or_else(|| "refused".to_string())
                };
                eprintln!(
                    "case {case} step `{}`: {verdict}",
                    prog.steps.last().map_or("", |s| s)
                );
            }
            if out.engine_accepted {
                stats.tally(&out);
                if prog.steps.iter().any(|st| st.starts_with("pack ")) {
                    stats.packed_accepted += 1;
                    stats.packed_compiled += (out.compiled > 0) as u64;
                }
                if prog.steps.iter().any(|st| st.contains("store_")) {
                    stats.storage_accepted += 1;
                    stats.storage_compiled += (out.compiled > 0) as u64;
                    stats.storage_validated += (out.validated > 0) as u64;
                }
                if !prog.column_major.is_empty() {
                    stats.column_major_accepted += 1;
                    stats.column_major_compiled += (out.compiled > 0) as u64;
                    stats.column_major_validated += (out.validated > 0) as u64;
                }
                stats.ia.derivations_accepted += index_arrays as u64;
                if opts.compile && huge_index_due && verbose() {
                    eprintln!(
                        "case {case} (huge index): compiled {}, lowering refused {}, validator refused {}",
                        out.compiled, out.lowering_refused, out.validator_refused
                    );
                }
                if opts.compile {
                    // Tried once: compiled, or refused by the gate, lowering or the
                    // validator (a kernel not compiled is a verdict too).
                    huge_index_due = false;
                }
                if out.compiled > 0 {
                    stats.compile_due = false;
                }
            }
            // A program the shape discipline refuses (E0413: the starting point, in
            // the engine, or another definition, as the CLI checks) refuses every
            // derivation of it: no need to try more steps.
            if out.caller_refused
                || !out.engine_accepted
                    && out
                        .engine_error
                        .as_deref()
                        .is_some_and(|e| e.starts_with("[E0413]"))
            {
                stats.programs_ill_shaped += 1;
                stats.ia.ill_shaped += index_arrays as u64;
                prog.steps.pop();
                return None;
            }
            if let Some(failure) = out.failure {
                return Some(Found {
                    case,
                    program: prog,
                    options: opts,
                    failure,
                });
            }
            if out.engine_accepted
                && let Some(r) = out.result
            {
                current = r;
                grew = true;
                break;
            }
            prog.steps.pop();
        }
        if !grew {
            break;
        }
    }
    if huge_index_due {
        prog.steps.clear();
        return judge_source(judges, &prog, case, case_seed, stats);
    }
    if index_arrays {
        return judge_index_arrays(judges, &prog, case, case_seed, stats);
    }
    None
}

/// A program with index arrays (issue 31) has its final derivation (the longest the
/// engine accepted; the empty one if none) judged again and compiled, under the
/// sanitizers: its kernel reads `int32_t` arrays, checks their declarations on entry,
/// and its reads through them must be proved in range (access safety, the validator).
fn judge_index_arrays(
    judges: &Judges,
    prog: &Program,
    case: u64,
    case_seed: u64,
    stats: &mut Stats,
) -> Option<Found> {
    let text = prog.text();
    let opts = Options {
        mutants: 0,
        ..options(case_seed ^ 0x31, true, true)
    };
    if std::env::var("ATL_FUZZ_TRACE").is_ok_and(|v| v == "1") {
        eprintln!("case {case}: judging the final derivation (index arrays)\n{text}");
    }
    let out = oracle::run_case(judges, &text, &opts);
    if verbose() {
        eprintln!(
            "case {case} (index arrays, {} steps): engine {}, gate refused {}, compiled {}, \
             validated {}, lowering refused {}, validator refused {}",
            prog.steps.len(),
            out.engine_accepted,
            out.gate_refused,
            out.compiled,
            out.validated,
            out.lowering_refused,
            out.validator_refused
        );
        if let Some(e) = &out.gate_error {
            eprintln!("case {case}: the gate refuses: {e}");
        }
        if let Some(e) = &out.lowering_error {
            eprintln!("case {case}: lowering refuses: {e}");
        }
        if let Some(e) = &out.validator_error {
            eprintln!("case {case}: the validator refuses: {e}");
        }
    }
    if out.engine_accepted {
        stats.ia.derived += !prog.steps.is_empty() as u64;
        stats.ia.tally_compile(&out);
        if prog.defs.last().is_some_and(|d| program::has_scatter(&d.1)) {
            stats.ia.scatter_programs += 1;
            stats.ia.scatter_compiled += out.compiled as u64;
            stats.ia.scatter_validated += out.validated as u64;
        }
        // Only the C judge's counts: the derivation was counted when accepted.
        stats.compiled += out.compiled as u64;
        stats.sanitized += out.sanitized as u64;
        stats.validated += out.validated as u64;
        stats.lowering_refused += out.lowering_refused as u64;
        stats.validator_refused += out.validator_refused as u64;
        stats.near_bound_runs += out.near_bound_runs as u64;
    }
    out.failure.map(|failure| Found {
        case,
        program: prog.clone(),
        options: opts,
        failure,
    })
}

/// Judges the empty derivation of `prog` (its source), compiled and sanitized.
fn judge_source(
    judges: &Judges,
    prog: &Program,
    case: u64,
    case_seed: u64,
    stats: &mut Stats,
) -> Option<Found> {
    let text = prog.text();
    let opts = options(case_seed, true, true);
    if std::env::var("ATL_FUZZ_TRACE").is_ok_and(|v| v == "1") {
        eprintln!("case {case}: judging the source\n{text}");
    }
    stats.derivations_attempted += 1;
    let out = oracle::run_case(judges, &text, &opts);
    if verbose() {
        eprintln!(
            "case {case} (huge index, empty derivation): engine {}, compiled {}, lowering refused {}, validator refused {}",
            out.engine_accepted, out.compiled, out.lowering_refused, out.validator_refused
        );
    }
    if out.engine_accepted {
        stats.tally(&out);
    }
    out.failure.map(|failure| Found {
        case,
        program: prog.clone(),
        options: opts,
        failure,
    })
}

/// Greedy shrinking: the first simplification that keeps a failure of the same kind
/// (and the same diagnostic code, if any), again and again, within a budget.
fn minimize(judges: &Judges, found: &Found) -> (Program, Failure) {
    let mut best = found.program.clone();
    let mut failure = found.failure.clone();
    let mut runs = 0;
    'outer: loop {
        for cand in program::program_shrinks(&best) {
            if runs >= MINIMIZE_BUDGET {
                break 'outer;
            }
            runs += 1;
            let out = oracle::run_case(judges, &cand.text(), &found.options);
            if let Some(f) = out.failure
                && f.signature() == found.failure.signature()
            {
                best = cand;
                failure = f;
                continue 'outer;
            }
        }
        break;
    }
    (best, failure)
}

fn report(seed: u64, found: &Found, min: &Program, failure: &Failure) -> String {
    let mut s = format!(
        "=== {:?}: {}\n# seed {seed}, case {} (replay: ATL_FUZZ_SEED={seed} ATL_FUZZ_CASE={})\n",
        failure.kind,
        failure.kind.describe(),
        found.case,
        found.case
    );
    for line in failure.detail.lines() {
        s.push_str(&format!("# {line}\n"));
    }
    s.push_str("# minimized reproducer:\n");
    s.push_str(&min.text());
    s
}

#[test]
fn soundness_fuzz() {
    let seed = env_u64("ATL_FUZZ_SEED").unwrap_or(DEFAULT_SEED);
    let cases = env_u64("ATL_FUZZ_CASES").unwrap_or(DEFAULT_CASES);
    let only = env_u64("ATL_FUZZ_CASE");
    let allow_fail = std::env::var("ATL_FUZZ_ALLOW_FAIL").is_ok_and(|v| v == "1");
    let judges = Judges::new();
    // Panics are caught and reported as failures; the default hook would print each
    // one (and the minimizer provokes the same panic many times).
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let started = Instant::now();
    let mut stats = Stats::default();
    let mut found: Vec<Found> = Vec::new();
    let mut slowest = (Duration::ZERO, 0u64);
    // `ATL_FUZZ_FIRST=F`: the cases `F..N` of the run (a slice of a long run, e.g.
    // around a case that failed, without the minutes of the cases before it).
    let first = env_u64("ATL_FUZZ_FIRST").unwrap_or(0);
    let range: Vec<u64> = match only {
        Some(c) => vec![c],
        None => (first..cases).collect(),
    };
    for case in range {
        let t = Instant::now();
        if let Some(f) = run_one(&judges, seed, case, &mut stats) {
            // Reported at once, unminimized, so that a long run cut short still shows it.
            eprintln!(
                "case {case}: {:?}: {}",
                f.failure.kind,
                f.failure.detail.lines().next().unwrap_or("")
            );
            found.push(f);
        }
        if t.elapsed() > slowest.0 {
            slowest = (t.elapsed(), case);
        }
    }
    let fuzz_time = started.elapsed();
    // Minimized reproducers: the first case of each kind (`ATL_FUZZ_MINIMIZE=K`: the
    // first K), the others listed.
    let mut by_kind: BTreeMap<Kind, Vec<&Found>> = BTreeMap::new();
    for f in &found {
        by_kind.entry(f.failure.kind).or_default().push(f);
    }
    let mut reports = String::new();
    let per_kind = env_u64("ATL_FUZZ_MINIMIZE").unwrap_or(1) as usize;
    for (kind, list) in &by_kind {
        for f in list.iter().take(per_kind) {
            let (min, failure) = minimize(&judges, f);
            reports.push_str(&report(seed, f, &min, &failure));
        }
        let cases: Vec<String> = list.iter().map(|f| f.case.to_string()).collect();
        reports.push_str(&format!(
            "# {:?}: {} case(s): {}\n\n",
            kind,
            list.len(),
            cases.join(", ")
        ));
    }
    std::panic::set_hook(hook);
    eprintln!(
        "soundness fuzz (seed {seed}): {} programs generated ({} rejected by the front end, \
         {} refused as ill-shaped starting points), \
         {} derivations attempted, {} accepted by the engine, {} evaluated ({} size \
         assignments, {} not judged: 64-bit overflow), {} certificates verified ({} refused by the checker), {} mutated \
         certificates ({} accepted), {} compiled to C ({} sanitized, {} validated; {} runs \
         at entry bounds; {} refused by lowering E0938, {} by the validator; {} programs \
         read at huge indices; {} use coordinates as values; {} derivations with a `pack`, {} of them compiled; {} derivations of programs with a column-major input, {} compiled, {} validated; {} derivations with a `store_root`/`store_at`, {} compiled, {} validated); {:.1} s (slowest case {} in {:.1} s), {} failing case(s)",
        stats.programs_generated,
        stats.programs_rejected,
        stats.programs_ill_shaped,
        stats.derivations_attempted,
        stats.derivations_accepted,
        stats.evaluated,
        stats.size_assignments,
        stats.overflowed,
        stats.certificates_verified,
        stats.checker_refused,
        stats.mutants,
        stats.mutants_accepted,
        stats.compiled,
        stats.sanitized,
        stats.validated,
        stats.near_bound_runs,
        stats.lowering_refused,
        stats.validator_refused,
        stats.huge_index_programs,
        stats.coordinate_programs,
        stats.packed_accepted,
        stats.packed_compiled,
        stats.column_major_accepted,
        stats.column_major_compiled,
        stats.column_major_validated,
        stats.storage_accepted,
        stats.storage_compiled,
        stats.storage_validated,
        fuzz_time.as_secs_f64(),
        slowest.1,
        slowest.0.as_secs_f64(),
        found.len()
    );
    let ia = &stats.ia;
    eprintln!(
        "index arrays: {} programs declare them ({} rejected by the front end, {} refused as \
         ill-shaped; {} starting points read one), {} derivations of them accepted; final \
         derivations judged in C: {} ({} with steps): {} refused by the access-safety gate, \
         {} by lowering E0938 ({} otherwise), {} by the validator ({} rejected as wrong, E0951); {} compiled ({} sanitized), {} validated; {} kernel runs at small sizes, {} at \
         entry bounds; {} of them start from a scatter: {} compiled, {} validated",
        ia.programs,
        ia.rejected,
        ia.ill_shaped,
        ia.reading,
        ia.derivations_accepted,
        ia.compile_tried,
        ia.derived,
        ia.gate_refused,
        ia.lowering_refused,
        ia.lowering_other,
        ia.validator_refused,
        ia.validator_rejected,
        ia.compiled,
        ia.sanitized,
        ia.validated,
        ia.small_runs,
        ia.near_bound_runs,
        ia.scatter_programs,
        ia.scatter_compiled,
        ia.scatter_validated
    );
    if !reports.is_empty() {
        eprintln!("{reports}");
    }
    // The fuzzer must actually exercise the engine: a generator that drifted into
    // producing only rejected programs would pass vacuously.
    if only.is_none() && cases >= 50 {
        assert!(
            stats.derivations_accepted * 10 >= stats.programs_generated,
            "too few accepted derivations: the generator no longer fits the language"
        );
    }
    assert!(
        found.is_empty() || allow_fail,
        "the soundness fuzzer found {} failing case(s); reproducers above",
        found.len()
    );
}

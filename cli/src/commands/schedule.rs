//! `atl schedule`: search a fast schedule of a definition at given sizes on this
//! machine (`atl-schedule`), and print it — or append it to a file — as a `derive`
//! block of ordinary directives that `atl check` replays and `atl verify` checks.
//!
//! ```text
//! atl schedule FILE [--def SPEC] --sizes M=1024,… [--threads N] [--budget SECONDS]
//!     [--seed S] [--dtype f32|f64] [-o OUT.atl] [--json]
//! ```
//!
//! The report (on stderr, so that stdout is the `derive` block alone) lists every
//! candidate timed with the model's estimate, the refusals counted by reason, the
//! machine, and the rank correlation of the model with the measurements.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use serde_json::{Value, json};

use super::json;
use crate::ctx::Ctx;
use atl_driver::failure::Failure;
use atl_driver::inputs::{parse_dtype, parse_sizes};
use atl_schedule::{Options, Outcome, Verdict};

// The command's about text is the doc comment of its variant in `crate::Command`.
#[derive(Args, Debug)]
pub struct ScheduleArgs {
    pub file: PathBuf,
    /// The specification to schedule (default: the file's last definition).
    #[arg(long = "def")]
    pub def: Option<String>,
    /// Sizes the kernel is timed at (every size of the definition).
    #[arg(long = "sizes", value_name = "NAME=VALUE,...")]
    pub sizes: Vec<String>,
    /// OpenMP threads the schedule is for (above 1: the outer loop is parallel).
    #[arg(long = "threads", default_value_t = 1)]
    pub threads: usize,
    /// Seconds the search may take (candidates are not started after it).
    #[arg(long = "budget", default_value_t = 60.0)]
    pub budget: f64,
    /// Seed of the inputs the candidates are timed on.
    #[arg(long = "seed", default_value_t = 1)]
    pub seed: u64,
    #[arg(long = "dtype", default_value = "f32")]
    pub dtype: String,
    /// Append the `derive` block to this file (created if missing) instead of printing it.
    #[arg(short = 'o', long = "output", value_name = "OUT.atl")]
    pub output: Option<PathBuf>,
    /// Print one JSON document (docs/json.md) instead of the block and the report.
    #[arg(long)]
    pub json: bool,
}

/// `atl schedule`.
pub fn run(args: &ScheduleArgs, ctx: &mut Ctx<'_>) -> Result<(), Failure> {
    let dtype = parse_dtype(&args.dtype)?;
    if args.threads == 0 {
        return Err(Failure::usage("`--threads` must be at least 1"));
    }
    if !args.budget.is_finite() || args.budget <= 0.0 || args.budget > 86_400.0 {
        return Err(Failure::usage(
            "`--budget` is a number of seconds above 0 (at most 86400)",
        ));
    }
    let sizes: BTreeMap<String, i64> =
        parse_sizes(&args.sizes).map_err(|m| Failure::usage(format!("`--sizes`: {m}")))?;
    let options = Options {
        def: args.def.clone(),
        sizes,
        threads: args.threads,
        budget: Duration::from_secs_f64(args.budget),
        seed: args.seed,
        dtype,
    };
    // The output file is read first: one that cannot be appended to is refused before
    // the search spends its budget.
    let existing = match &args.output {
        Some(out) => Some(read_existing(out)?),
        None => None,
    };
    let progress = ctx.progress("searching");
    let outcome = atl_schedule::schedule(ctx, &args.file, &options);
    drop(progress);
    let outcome = outcome?;
    let block = outcome.derive_text();
    if let (Some(out), Some(existing)) = (&args.output, existing) {
        append(out, existing, &block)?;
    }
    if args.json {
        json::print(ctx.stdout, &outcome_json(&outcome));
        return Ok(());
    }
    if args.output.is_none() {
        let _ = write!(ctx.stdout, "{block}");
    }
    write_report(&outcome, ctx.stderr, args.output.as_ref());
    Ok(())
}

/// The text of the file the block is appended to: empty when it does not exist yet;
/// one that cannot be read (not UTF-8, no permission) is an error, never overwritten.
fn read_existing(path: &PathBuf) -> Result<String, Failure> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(Failure::usage(format!(
            "cannot read `{}` to append to it: {e}",
            path.display()
        ))),
    }
}

fn append(path: &PathBuf, mut text: String, block: &str) -> Result<(), Failure> {
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(block);
    std::fs::write(path, text)
        .map_err(|e| Failure::message(format!("error: cannot write `{}`: {e}", path.display())))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The report on stderr: the machine, the space, the timed candidates, the refusals.
fn write_report(outcome: &Outcome, out: &mut dyn Write, written: Option<&PathBuf>) {
    let _ = writeln!(out, "machine: {}", outcome.machine.describe());
    let _ = writeln!(
        out,
        "space: {} candidates ({} tile/copy variants, {} loop orders in e-graphs of {} nodes)",
        outcome.candidates,
        outcome.space.variants,
        outcome.space.orders,
        outcome.space.egraph_nodes
    );
    let mut refused: BTreeMap<String, usize> = BTreeMap::new();
    let mut skipped = 0;
    let mut timed = 0;
    for t in &outcome.tried {
        match &t.verdict {
            Verdict::Timed {
                median,
                compile,
                check_error,
            } => {
                timed += 1;
                let _ = writeln!(
                    out,
                    "  {:>10.3} ms  (estimate {:.3e}, compiled in {:.0} ms, check error {:.1e})  {}",
                    ms(*median),
                    t.estimate,
                    ms(*compile),
                    check_error,
                    t.candidate.summary()
                );
            }
            Verdict::Refused(r) | Verdict::Failed(r) => {
                *refused.entry(r.clone()).or_default() += 1;
            }
            Verdict::Skipped => skipped += 1,
        }
    }
    for (reason, n) in &refused {
        let _ = writeln!(out, "  {n} refused: {reason}");
    }
    if !outcome.rematch.is_empty() {
        let _ = writeln!(out, "the fastest, timed again interleaved:");
        for (k, median) in &outcome.rematch {
            let _ = writeln!(
                out,
                "  {:>10.3} ms  {}",
                ms(*median),
                outcome.tried[*k].candidate.summary()
            );
        }
    }
    let best = outcome.best();
    let _ = writeln!(
        out,
        "best: {:.3} ms ({}); {timed} timed, {} refused, {skipped} not tried, in {:.1} s",
        outcome.best_median().map_or(f64::NAN, ms),
        best.candidate.summary(),
        refused.values().sum::<usize>(),
        outcome.elapsed.as_secs_f64()
    );
    if let Some(r) = outcome.rank_correlation {
        let _ = writeln!(
            out,
            "cost model: rank correlation {r:.2} with the measured times ({timed} candidates)"
        );
    }
    for stage in &outcome.unscheduled {
        let _ = writeln!(out, "left as written: {stage}");
    }
    if let Some(path) = written {
        let _ = writeln!(
            out,
            "wrote `derive {}` to {} (`atl check {}` replays it)",
            outcome.name,
            path.display(),
            path.display()
        );
    }
}

/// The `--json` document of `atl schedule` (docs/json.md).
fn outcome_json(outcome: &Outcome) -> Value {
    let m = &outcome.machine;
    let tried: Vec<Value> = outcome
        .tried
        .iter()
        .filter(|t| t.verdict != Verdict::Skipped)
        .map(|t| {
            let (verdict, median, reason) = match &t.verdict {
                Verdict::Timed { median, .. } => ("timed", json::ms(*median), Value::Null),
                Verdict::Refused(r) => ("refused", Value::Null, json!(r)),
                Verdict::Failed(r) => ("failed", Value::Null, json!(r)),
                Verdict::Skipped => ("skipped", Value::Null, Value::Null),
            };
            json!({
                "schedule": t.candidate.summary(),
                "steps": t.steps,
                "estimate": json::number(t.estimate),
                "verdict": verdict,
                "median_ms": median,
                "reason": reason,
            })
        })
        .collect();
    let best = outcome.best();
    json!({
        "command": "schedule",
        "def": outcome.def,
        "name": outcome.name,
        "sizes": json::sizes(&outcome.sizes),
        "threads": outcome.threads,
        "dtype": super::run::dtype_word(outcome.dtype),
        "machine": {
            "isa": m.isa,
            "vector_bits": m.vector_bytes * 8,
            "vector_registers": m.vector_registers,
            "l1d_bytes": m.l1d,
            "l2_bytes": m.l2,
            "l3_bytes": m.l3,
            "cores": m.cores,
        },
        "derive": outcome.derive_text(),
        "steps": best.steps,
        "best_median_ms": outcome.best_median().map_or(Value::Null, json::ms),
        "vector_width": best.candidate.vector_width,
        "vector_width_note": outcome.width_note(),
        "rematch": outcome
            .rematch
            .iter()
            .map(|(k, m)| json!({
                "schedule": outcome.tried[*k].candidate.summary(),
                "median_ms": json::ms(*m),
            }))
            .collect::<Vec<_>>(),
        "candidates": outcome.candidates,
        "tried": tried,
        "rank_correlation": outcome.rank_correlation.map_or(Value::Null, json::number),
        "unscheduled": outcome.unscheduled,
        "elapsed_ms": json::ms(outcome.elapsed),
    })
}

//! `:bench [SIZES] [--vs DEF] [--runs R] [--threads N] [--no-validate]`: compiles and
//! times the current program against the focus's original (or `DEF`, a definition or
//! derivation of the file), as `atl bench` does and with its report
//! ([`crate::commands::bench::write_report`]): both pass the gate, are lowered and
//! validated (an unvalidated kernel is refused unless `--no-validate`), are checked
//! against the interpreter at small sizes, then timed interleaved through
//! [`atl_driver::timing::bench`].
//!
//! The current program is timed as `FOCUS_current` (the focus's name, which the
//! original keeps). Sizes not given are [`DEFAULT_SIZE`]. Ctrl-C stops the command
//! between compilations and between timed calls; the session is kept.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;

use atl_driver::timing::{BenchOptions, bench, default_check_sizes};
use atl_lang::diag::Diagnostic;
use atl_lang::interp::{EvalOptions, input_shapes};

use super::{Control, Session};

/// The value of every size `:bench` is not given.
pub const DEFAULT_SIZE: i64 = 256;

const USAGE: &str =
    "usage: :bench [NAME=VALUE,...] [--vs DEF] [--runs R] [--threads N] [--no-validate]";

/// The arguments of `:bench`.
struct BenchArgs {
    sizes: Vec<String>,
    vs: Option<String>,
    runs: usize,
    threads: usize,
    no_validate: bool,
}

fn parse_args(args: &str) -> Result<BenchArgs, String> {
    let mut parsed = BenchArgs {
        sizes: Vec::new(),
        vs: None,
        runs: 11,
        threads: 1,
        no_validate: false,
    };
    let mut words = args.split_whitespace();
    let count = |flag: &str, value: Option<&str>| -> Result<usize, String> {
        match value.map(str::parse::<usize>) {
            Some(Ok(n)) if n >= 1 => Ok(n),
            _ => Err(format!("`{flag}` takes a number of at least 1")),
        }
    };
    while let Some(word) = words.next() {
        match word {
            "--vs" => match words.next() {
                Some(v) => parsed.vs = Some(v.to_string()),
                None => return Err("`--vs` takes a definition's name".to_string()),
            },
            "--runs" => parsed.runs = count(word, words.next())?,
            "--threads" => parsed.threads = count(word, words.next())?,
            "--no-validate" => parsed.no_validate = true,
            w if w.starts_with("--") => return Err(format!("unknown option `{w}`")),
            w => parsed.sizes.push(w.to_string()),
        }
    }
    Ok(parsed)
}

impl Session {
    pub(super) fn cmd_bench(&mut self, args: &str, out: &mut dyn Write) -> Control {
        let args = match parse_args(args) {
            Ok(a) => a,
            Err(m) => {
                let _ = writeln!(out, "{m}\n{USAGE}");
                return Control::Continue;
            }
        };
        let (Some(checked), Some(focus)) = (&self.checked, self.focus.clone()) else {
            let _ = writeln!(out, "no program in focus");
            return Control::Continue;
        };
        let given = match atl_driver::inputs::parse_sizes(&args.sizes) {
            Ok(s) => s,
            Err(m) => {
                let _ = writeln!(out, "{}\n{USAGE}", m.replace("--sizes", ":bench"));
                return Control::Continue;
            }
        };
        let mut sizes: BTreeMap<String, i64> = checked
            .program
            .sizes
            .iter()
            .map(|s| (s.name.clone(), DEFAULT_SIZE))
            .collect();
        for (name, value) in given {
            if !sizes.contains_key(&name) {
                let known: Vec<&str> = sizes.keys().map(String::as_str).collect();
                let _ = writeln!(
                    out,
                    "the program has no size `{name}`; its sizes: {}",
                    known.join(", ")
                );
                return Control::Continue;
            }
            sizes.insert(name, value);
        }
        let vs = args.vs.clone().unwrap_or_else(|| focus.clone());
        if !self.derived.contains_key(&vs) {
            let hint = atl_lang::suggest::closest(&vs, self.derived.keys().map(String::as_str), 2)
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            let _ = writeln!(out, "no definition named `{vs}`{hint}");
            return Control::Continue;
        }
        // The current program under a name of its own, next to the original's.
        let mut name = format!("{focus}_current");
        while self.derived.contains_key(&name) {
            name.push('_');
        }
        let Some((program, shapes)) = self.candidate_program(&name, true, out) else {
            return Control::Continue;
        };
        if !self.steps_recheck(out) {
            return Control::Continue;
        }
        let wording = |d: Diagnostic| Diagnostic {
            help: d.help.map(|h| h.replace("`--sizes", "`:bench")),
            ..d
        };
        if let Err(d) = input_shapes(&program, &sizes, &EvalOptions::default()) {
            self.render(&[wording(d)], "<program>", &self.source, out);
            return Control::Continue;
        }
        let check_sizes = default_check_sizes(&program, &sizes);
        if let Err(d) = input_shapes(&program, &check_sizes, &EvalOptions::default()) {
            self.render(&[wording(d)], "<program>", &self.source, out);
            let _ = writeln!(
                out,
                "the check against the interpreter runs at these sizes (each size at most 19)"
            );
            return Control::Continue;
        }
        let progress = self.progress_display("benchmarking");
        let mut gated = Vec::new();
        let mut kernels = Vec::new();
        for def in [name.as_str(), vs.as_str()] {
            let g = match atl_driver::lowering::gate(&program, &shapes, def, &self.solver) {
                Ok((g, _warnings)) => g,
                Err(diags) => {
                    drop(progress);
                    self.render(&diags, "<program>", "", out);
                    let _ = writeln!(out, "`{def}` fails the gate before lowering");
                    return Control::Continue;
                }
            };
            let kernel = match g.lower() {
                Ok(k) => k,
                Err(diags) => {
                    drop(progress);
                    self.render(&diags, "<program>", "", out);
                    return Control::Continue;
                }
            };
            if !args.no_validate {
                self.monitor.begin(format!("validating `{def}`"), 0);
                let validated = atl_driver::lowering::validate_kernel_monitored(
                    &program,
                    &shapes,
                    def,
                    &kernel,
                    Some(&self.monitor),
                );
                if let Err((_, d)) = validated {
                    drop(progress);
                    if !self.monitor.is_cancelled() {
                        let d = Diagnostic {
                            help: Some(
                                "`:bench --no-validate` times it anyway; please report the program"
                                    .to_string(),
                            ),
                            ..d
                        };
                        self.render(&[d], "<program>", "", out);
                    }
                    return Control::Continue;
                }
            }
            gated.push(g);
            kernels.push(kernel);
        }
        let options = BenchOptions {
            dtype: atl_emit_c::Dtype::default(),
            fp: atl_emit_c::Fp::default(),
            threads: args.threads,
            runs: args.runs,
        };
        let monitor = Arc::clone(&self.monitor);
        let report = bench(
            Some(&monitor),
            &gated,
            &kernels,
            &sizes,
            &Default::default(),
            &check_sizes,
            &options,
        );
        drop(progress);
        match report {
            Ok(report) => {
                if args.threads > 1 && std::env::var_os("OMP_WAIT_POLICY").is_none() {
                    let _ = writeln!(
                        out,
                        "note: OMP_WAIT_POLICY is not set; on a machine whose cores are shared, \
                         spinning OpenMP threads distort multi-thread timings (set it to `passive`)"
                    );
                }
                let _ = crate::commands::bench::write_report(&report, out);
            }
            // Interrupted: a compiler killed by the same Ctrl-C fails too; the session
            // says it was interrupted instead.
            Err(_) if self.monitor.is_cancelled() => {}
            Err(diags) => self.render(&diags, "<program>", "", out),
        }
        Control::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments() {
        let a = parse_args("M=64,N=32 K=8 --vs fast --runs 3 --threads 2").expect("parses");
        assert_eq!(a.sizes, ["M=64,N=32", "K=8"]);
        assert_eq!(a.vs.as_deref(), Some("fast"));
        assert_eq!((a.runs, a.threads, a.no_validate), (3, 2, false));
        assert!(parse_args("--runs 0").is_err());
        assert!(parse_args("--vs").is_err());
        assert!(parse_args("--fast").is_err());
    }
}

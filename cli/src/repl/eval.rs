//! `:eval N=…,M=…`: the current program and the focus's original evaluated by the
//! interpreter on the same random inputs and compared (bit-identical, or the largest
//! difference). The session's monitor is passed down, so Ctrl-C stops the evaluation
//! at the interpreter's next loop iteration and a progress line counts the outermost
//! loop on a terminal.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;

use atl_lang::diag::Diagnostic;
use atl_lang::interp::{EvalOptions, Tensor, eval_def, input_shapes};
use atl_lang::ir::{Def, Program};
use atl_lang::span::Span;

use super::{Control, Session};

impl Session {
    pub(super) fn cmd_eval(&mut self, args: &str, out: &mut dyn Write) -> Control {
        let (Some(checked), Some(current), Some(original)) =
            (&self.checked, self.current(), &self.original)
        else {
            let _ = writeln!(out, "no program in focus");
            return Control::Continue;
        };
        let mut sizes = BTreeMap::new();
        for part in args.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part
                .split_once('=')
                .map(|(k, v)| (k.trim(), v.trim().parse::<i64>()))
            {
                Some((k, Ok(v))) if checked.program.sizes.iter().any(|s| s.name == k) => {
                    sizes.insert(k.to_string(), v);
                }
                Some((k, Ok(_))) => {
                    let known: Vec<&str> = checked
                        .program
                        .sizes
                        .iter()
                        .map(|s| s.name.as_str())
                        .collect();
                    let _ = writeln!(
                        out,
                        "the program has no size `{k}`; its sizes: {}",
                        known.join(", ")
                    );
                    return Control::Continue;
                }
                _ => {
                    let _ = writeln!(out, "usage: :eval {}", self.size_example("4"));
                    return Control::Continue;
                }
            }
        }
        let mut program: Program = checked.program.clone();
        for (name, body) in [("__original", original), ("__current", current)] {
            program.defs.push(Def {
                name: name.to_string(),
                name_span: Span::DUMMY,
                body: body.clone(),
                span: Span::DUMMY,
                hints: Vec::new(),
                vector_width: None,
                storage: Vec::new(),
            });
        }
        let options = EvalOptions {
            monitor: Some(Arc::clone(&self.monitor)),
            ..EvalOptions::default()
        };
        let shapes = match input_shapes(&program, &sizes, &options) {
            Ok(s) => s,
            Err(d) => {
                // The interpreter words its help for the command line (`--sizes`).
                let d = Diagnostic {
                    help: d.help.map(|h| h.replace("`--sizes", "`:eval")),
                    ..d
                };
                self.render(&[d], "<program>", &self.source, out);
                return Control::Continue;
            }
        };
        let inputs: BTreeMap<String, Tensor> = shapes
            .into_iter()
            .enumerate()
            .filter_map(|(k, (n, s))| {
                let decl = program.input(&n)?;
                let value = atl_lang::interp::random_input(decl, s, 1 + k as u64, &|size| {
                    sizes.get(size).copied()
                });
                Some((n, value))
            })
            .collect();
        // The interpreter counts the iterations of the outermost loop.
        let progress = self.progress_display("evaluating");
        self.monitor.begin("", 0);
        let original = eval_def(&program, "__original", &sizes, &inputs, &options);
        self.monitor.begin("", 0);
        let current = match &original {
            Ok(_) => eval_def(&program, "__current", &sizes, &inputs, &options),
            // Interrupted or failed: the second evaluation would only repeat it.
            Err(d) => Err(d.clone()),
        };
        drop(progress);
        let results = (original, current);
        match results {
            (Ok(a), Ok(b)) => {
                let max_err = a
                    .data
                    .iter()
                    .zip(&b.data)
                    .map(|(x, y)| (x - y).abs())
                    .fold(0.0, f64::max);
                let identical = a.shape == b.shape
                    && a.data
                        .iter()
                        .zip(&b.data)
                        .all(|(x, y)| x.to_bits() == y.to_bits());
                let _ = writeln!(out, "shape {:?}; {} elements", b.shape, b.data.len());
                let verdict = if identical {
                    "bit-identical to the original".to_string()
                } else if a.shape == b.shape {
                    format!("max |difference| from the original: {max_err:e}")
                } else {
                    format!("SHAPE DIFFERS from the original {:?}", a.shape)
                };
                let _ = writeln!(out, "{verdict}");
            }
            (Err(d), _) | (_, Err(d)) => self.render(&[d], "<program>", &self.source, out),
        }
        Control::Continue
    }
}

//! `atl eval`: evaluates a definition with the reference interpreter and prints the
//! result (nested lists, or `{"shape":[…],"data":[…]}` with `--json`), optionally
//! writing it as a float64 `.npy` file.

use std::path::PathBuf;

use atl_lang::interp::{EvalOptions, Tensor};
use clap::Args;

use crate::ctx::Ctx;
use atl_driver::failure::Failure;
use atl_driver::inputs::{Prepared, prepare};
use atl_driver::npy;

// The command's about text is the doc comment of its variant in `crate::Command`.
#[derive(Args, Debug)]
pub struct EvalArgs {
    pub file: PathBuf,
    /// Definition to evaluate (default: the last one in the file).
    #[arg(long = "def")]
    pub def: Option<String>,
    /// Size values, e.g. `n=4,m=5` (repeatable).
    #[arg(long = "sizes", value_name = "NAME=VALUE,...")]
    pub sizes: Vec<String>,
    /// An input: `NAME=random:SEED`, `NAME=PATH.npy`, or a sparse matrix `NAME=PATH.mtx|.npz` (repeatable).
    #[arg(long = "input", value_name = "NAME=SOURCE")]
    pub inputs: Vec<String>,
    /// Print `{"shape":[…],"data":[…]}` (flat, row-major).
    #[arg(long)]
    pub json: bool,
    /// Also write the result as a float64 `.npy` file.
    #[arg(long = "out", value_name = "PATH.npy")]
    pub out: Option<PathBuf>,
}

/// `atl eval`.
pub fn run(args: &EvalArgs, ctx: &mut Ctx<'_>) -> Result<(), Failure> {
    let file = args.file.as_path();
    let Prepared {
        loaded,
        name,
        sizes,
        inputs,
        ..
    } = prepare(ctx, file, args.def.as_deref(), &args.sizes, &args.inputs)?;
    let progress = ctx.progress(&format!("evaluating `{name}`"));
    let options = EvalOptions {
        monitor: ctx.monitor.clone(),
        ..EvalOptions::default()
    };
    let result = atl_lang::interp::eval_def(&loaded.program, &name, &sizes, &inputs, &options)
        .map_err(|d| Failure::diagnostics(vec![d], file, &loaded.source))?;
    drop(progress);
    if let Some(path) = &args.out {
        let mut buf = Vec::new();
        let _ = npy::write_f64(&mut buf, &result.shape, &result.data);
        std::fs::write(path, &buf)
            .map_err(|e| Failure::usage(format!("cannot write `{}`: {e}", path.display())))?;
    }
    if args.json {
        // Written by hand to keep DESIGN §8's key order (`shape` first).
        let shape = serde_json::Value::from(result.shape.clone());
        let data = serde_json::Value::Array(result.data.iter().map(|v| json_number(*v)).collect());
        let _ = writeln!(ctx.stdout, "{{\"shape\":{shape},\"data\":{data}}}");
    } else {
        let _ = writeln!(ctx.stdout, "{}", show_tensor(&result));
    }
    Ok(())
}

/// JSON has no NaN or infinity; they print as `null` (and the text output shows them).
fn json_number(v: f64) -> serde_json::Value {
    serde_json::Number::from_f64(v).map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// Human-readable nested-list rendering with six significant digits.
fn show_tensor(t: &Tensor) -> String {
    fn rec(t: &Tensor, dim: usize, offset: usize, out: &mut String) {
        if dim == t.shape.len() {
            out.push_str(&format!(
                "{:.6}",
                t.data.get(offset).copied().unwrap_or(0.0)
            ));
            return;
        }
        let stride: usize = t.shape[dim + 1..].iter().product();
        out.push('[');
        for k in 0..t.shape[dim] {
            if k > 0 {
                out.push_str(", ");
                if dim + 1 < t.shape.len() {
                    out.push('\n');
                    out.push_str(&" ".repeat(dim + 1));
                }
            }
            rec(t, dim + 1, offset + k * stride, out);
        }
        out.push(']');
    }
    let mut s = format!("shape {:?}\n", t.shape);
    rec(t, 0, 0, &mut s);
    s
}

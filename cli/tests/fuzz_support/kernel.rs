//! Compiled kernels for the soundness fuzzer's C judge: a kernel's C with a `main` of
//! our own that calls it *directly* (below the Rust-side `check_call`, so that the
//! kernel's own entry checks are what is tested), optionally under
//! `-fsanitize=address,undefined -fno-sanitize-recover=all`, on inputs in heap buffers
//! of exactly their lengths and an output pre-filled with a sentinel NaN (so that a
//! kernel that refuses on entry can be seen not to have written anything). Each run is
//! a process with a time limit.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use atl_loopir::ir::{Kernel, PreconditionKind, Stmt};

/// The symbol the kernel is emitted under.
const SYMBOL: &str = "fuzz_kernel";
/// The output's initial contents: a NaN with a payload no computation produces.
pub const SENTINEL: u64 = 0x7ff8_dead_beef_0001;
/// A run that takes longer is a hang (reported as a failure).
const TIME_LIMIT: Duration = Duration::from_secs(30);

/// A kernel compiled with the fuzzer's `main`; the directory is removed on drop.
pub struct Harness {
    dir: PathBuf,
    exe: PathBuf,
    pub sanitized: bool,
    /// Per input (ABI order): an index array, passed as `int32_t` values.
    int_inputs: Vec<bool>,
}

impl Drop for Harness {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// How a run ended.
pub enum Ran {
    /// Exit status 0: the output's elements (the sentinel where untouched).
    Clean(Vec<f64>),
    /// Anything else: a sanitizer report, a crash, a hang (the description).
    Failed(String),
}

fn main_source(kernel: &Kernel) -> String {
    let ns = kernel.sizes.len();
    let ni = kernel.inputs.len();
    let mut args: Vec<String> = (0..ns).map(|k| format!("sizes[{k}]")).collect();
    args.extend((0..ni).map(|k| format!("in[{k}]")));
    args.push("out".to_string());
    let mut elems: Vec<&str> = kernel
        .inputs
        .iter()
        .map(|d| {
            if d.index_array.is_some() {
                "sizeof(int32_t)"
            } else {
                "sizeof(double)"
            }
        })
        .collect();
    if elems.is_empty() {
        elems.push("1");
    }
    format!(
        r#"
#include <stdio.h>
#include <stdlib.h>
/* The soundness fuzzer's harness: sizes, inputs (each with its length) and the
   output's length and initial contents from argv[1]; the output to argv[2]. */
static void *read_buffer(FILE *f, uint64_t *len, size_t elem) {{
  if (fread(len, sizeof *len, 1, f) != 1) exit(71);
  void *b = malloc(*len ? *len * elem : 1);
  if (!b) exit(72);
  if (*len && fread(b, elem, *len, f) != *len) exit(73);
  return b;
}}
int main(int argc, char **argv) {{
  if (argc != 3) return 70;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return 71;
  int64_t sizes[{ns1}];
  for (int k = 0; k < {ns}; ++k)
    if (fread(&sizes[k], sizeof sizes[k], 1, f) != 1) return 73;
  /* Index arrays are int32_t buffers, the other inputs double. */
  static const size_t elem[{ni1}] = {{{elems}}};
  void *in[{ni1}];
  uint64_t len;
  for (int k = 0; k < {ni}; ++k)
    in[k] = read_buffer(f, &len, elem[k]);
  double *out = read_buffer(f, &len, sizeof(double));
  fclose(f);
  {SYMBOL}({args});
  FILE *o = fopen(argv[2], "wb");
  if (!o) return 74;
  if (len && fwrite(out, sizeof(double), len, o) != len) return 75;
  fclose(o);
  for (int k = 0; k < {ni}; ++k)
    free(in[k]);
  free(out);
  return 0;
}}
"#,
        ns1 = ns.max(1),
        ni1 = ni.max(1),
        elems = elems.join(", "),
        args = args.join(", ")
    )
}

static NEXT_DIR: AtomicU64 = AtomicU64::new(0);

/// Emits `kernel` (`f64`) with the fuzzer's `main` and compiles it; `Err` with the
/// compiler's messages when the C does not compile.
pub fn compile(kernel: &Kernel, sanitize: bool) -> Result<Harness, String> {
    let emit = atl_emit_c::EmitOptions {
        dtype: atl_emit_c::Dtype::F64,
        symbol: Some(SYMBOL.to_string()),
        fp: atl_emit_c::Fp::Fast,
    };
    let code =
        atl_emit_c::emit(kernel, &emit).map_err(|d| format!("[{}] {}", d.code, d.message))?;
    let dir = std::env::temp_dir().join(format!(
        "atl-fuzz-{}-{}",
        std::process::id(),
        NEXT_DIR.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).map_err(|e| format!("temporary directory: {e}"))?;
    let harness = Harness {
        exe: dir.join("kernel"),
        dir,
        sanitized: sanitize,
        int_inputs: kernel
            .inputs
            .iter()
            .map(|d| d.index_array.is_some())
            .collect(),
    };
    let src = harness.dir.join("kernel.c");
    let text = format!("{}\n{}", code.source, main_source(kernel));
    std::fs::write(&src, text).map_err(|e| format!("write: {e}"))?;
    let mut cc = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".to_string()));
    cc.args(["-std=c99", "-ffp-contract=fast", "-o"])
        .arg(&harness.exe)
        .arg(&src);
    if sanitize {
        cc.args([
            "-O1",
            "-g",
            "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all",
            "-fno-omit-frame-pointer",
        ]);
    } else {
        cc.arg("-O2");
    }
    cc.arg("-lm");
    let out = cc.output().map_err(|e| format!("cannot run cc: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(harness)
}

impl Harness {
    /// Calls the kernel with `sizes` (ABI order), `inputs` (ABI order; an index array's
    /// values are integers, passed as `int32_t`) and an output of `out_len` elements
    /// filled with [`SENTINEL`].
    pub fn run(&self, sizes: &[i64], inputs: &[&[f64]], out_len: usize) -> Ran {
        let mut bytes = Vec::new();
        for s in sizes {
            bytes.extend_from_slice(&s.to_ne_bytes());
        }
        for (k, input) in inputs.iter().enumerate() {
            bytes.extend_from_slice(&(input.len() as u64).to_ne_bytes());
            for x in *input {
                if self.int_inputs.get(k).copied().unwrap_or(false) {
                    // Integers in `int32_t` (the declaration's check, E0610, holds
                    // for the inputs the oracle draws).
                    bytes.extend_from_slice(&(*x as i32).to_ne_bytes());
                } else {
                    bytes.extend_from_slice(&x.to_ne_bytes());
                }
            }
        }
        bytes.extend_from_slice(&(out_len as u64).to_ne_bytes());
        for _ in 0..out_len {
            bytes.extend_from_slice(&SENTINEL.to_ne_bytes());
        }
        let in_path = self.dir.join("call.in");
        let out_path = self.dir.join("call.out");
        let _ = std::fs::remove_file(&out_path);
        if let Err(e) = std::fs::write(&in_path, &bytes) {
            return Ran::Failed(format!("cannot write the arguments: {e}"));
        }
        let child = Command::new(&self.exe)
            .arg(&in_path)
            .arg(&out_path)
            .env(
                "ASAN_OPTIONS",
                "detect_leaks=1:abort_on_error=0:exitcode=86",
            )
            .env(
                "UBSAN_OPTIONS",
                "print_stacktrace=1:halt_on_error=1:exitcode=87",
            )
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match child {
            Ok(c) => c,
            Err(e) => return Ran::Failed(format!("cannot run the kernel: {e}")),
        };
        let start = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if start.elapsed() > TIME_LIMIT => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Ran::Failed(format!("the kernel hangs (over {TIME_LIMIT:?})"));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => return Ran::Failed(format!("wait: {e}")),
            }
        }
        let out = match child.wait_with_output() {
            Ok(o) => o,
            Err(e) => return Ran::Failed(format!("wait: {e}")),
        };
        if !out.status.success() {
            let report = String::from_utf8_lossy(&out.stderr);
            let lines: Vec<&str> = report.lines().take(12).collect();
            return Ran::Failed(format!(
                "the kernel failed ({}):\n{}",
                out.status,
                lines.join("\n")
            ));
        }
        let data = match std::fs::read(&out_path) {
            Ok(d) => d,
            Err(e) => return Ran::Failed(format!("cannot read the output: {e}")),
        };
        if data.len() != out_len * 8 {
            return Ran::Failed(format!("the kernel wrote {} bytes", data.len()));
        }
        Ran::Clean(
            data.chunks_exact(8)
                .map(|c| {
                    let mut a = [0u8; 8];
                    a.copy_from_slice(c);
                    f64::from_ne_bytes(a)
                })
                .collect(),
        )
    }
}

/// Whether an output element is the untouched sentinel.
pub fn untouched(x: f64) -> bool {
    x.to_bits() == SENTINEL
}

/// Sizes of `kernel` that no buffer's extent, allocation length or loop bound
/// mentions: they occur only in guards, index arithmetic and entry checks, so the
/// kernel may run at huge values of them without memory or time.
pub fn free_sizes(kernel: &Kernel) -> Vec<String> {
    let mut used = std::collections::BTreeSet::new();
    for decl in kernel.inputs.iter().chain([&kernel.output]) {
        for e in &decl.shape {
            used.extend(e.vars());
        }
    }
    for s in &kernel.body {
        s.walk(&mut |st| match st {
            Stmt::For(l) => {
                for s in &kernel.sizes {
                    if l.lo.mentions(s) || l.hi.mentions(s) {
                        used.insert(s.clone());
                    }
                }
            }
            Stmt::Alloc { shape, len, .. } => {
                for e in shape {
                    used.extend(e.vars());
                }
                for s in &kernel.sizes {
                    if len.mentions(s) {
                        used.insert(s.clone());
                    }
                }
            }
            Stmt::Fill { len, .. } => {
                for s in &kernel.sizes {
                    if len.mentions(s) {
                        used.insert(s.clone());
                    }
                }
            }
            _ => {}
        });
    }
    kernel
        .sizes
        .iter()
        .filter(|s| !used.contains(*s))
        .cloned()
        .collect()
}

/// The entry bound `B` of `size <= B` the kernel checks for 64-bit index arithmetic
/// (E0937), if it has one.
pub fn index_range_bound(kernel: &Kernel, size: &str) -> Option<i64> {
    kernel.preconditions.iter().find_map(|p| {
        if p.kind != PreconditionKind::IndexRange {
            return None;
        }
        match &p.cond {
            atl_loopir::ir::Cond::Cmp(
                atl_lang::index::CmpOp::Le,
                atl_loopir::ir::Ix::Var(v),
                atl_loopir::ir::Ix::Const(b),
            ) if v == size => Some(*b),
            _ => None,
        }
    })
}

//! Running a compiled kernel: argument checking and marshalling, for both backends.

use std::collections::BTreeMap;
use std::time::Duration;

use atl_lang::diag::Diagnostic;
use atl_lang::interp::{Tensor, shape_numel};

use crate::Dtype;
use crate::compile::{Artifact, Compiled};

/// The output of a run and the time the kernel itself took.
#[derive(Clone, Debug, PartialEq)]
pub struct RunOutput {
    pub output: Tensor,
    pub elapsed: Duration,
}

/// An element type a kernel can be generated for.
pub(crate) trait Element: Copy + 'static {
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
    const NAN: Self;
    fn write_bytes(self, out: &mut Vec<u8>);
    const SIZE: usize;
    fn read_bytes(b: &[u8]) -> Self;
}

impl Element for f32 {
    fn from_f64(x: f64) -> f32 {
        x as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    const NAN: f32 = f32::NAN;
    fn write_bytes(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_ne_bytes());
    }
    const SIZE: usize = 4;
    fn read_bytes(b: &[u8]) -> f32 {
        f32::from_ne_bytes([b[0], b[1], b[2], b[3]])
    }
}

impl Element for f64 {
    fn from_f64(x: f64) -> f64 {
        x
    }
    fn to_f64(self) -> f64 {
        self
    }
    const NAN: f64 = f64::NAN;
    fn write_bytes(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_ne_bytes());
    }
    const SIZE: usize = 8;
    fn read_bytes(b: &[u8]) -> f64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[..8]);
        f64::from_ne_bytes(a)
    }
}

/// One input buffer: elements of the kernel's type, or of an index array (`int32_t`).
pub(crate) enum InputData<T> {
    Real(Vec<T>),
    Index(Vec<i32>),
}

impl<T: Element> InputData<T> {
    pub(crate) fn as_ptr(&self) -> *const std::ffi::c_void {
        match self {
            InputData::Real(v) => v.as_ptr().cast(),
            InputData::Index(v) => v.as_ptr().cast(),
        }
    }

    /// The buffer's bytes, in the machine's order (the harness reads them back).
    fn write_bytes(&self, out: &mut Vec<u8>) {
        match self {
            InputData::Real(v) => {
                out.extend_from_slice(&((v.len() * T::SIZE) as u64).to_ne_bytes());
                for &x in v {
                    x.write_bytes(out);
                }
            }
            InputData::Index(v) => {
                out.extend_from_slice(&((v.len() * 4) as u64).to_ne_bytes());
                for &x in v {
                    out.extend_from_slice(&x.to_ne_bytes());
                }
            }
        }
    }
}

/// The arguments of a checked call (see the SAFETY argument in `ffi`): only
/// [`Args::new`] builds them.
pub(crate) struct Args<T> {
    pub(crate) sizes: Vec<i64>,
    pub(crate) inputs: Vec<InputData<T>>,
    /// Pre-filled with NaN, so that an element the kernel fails to write shows.
    pub(crate) out: Vec<T>,
    pub(crate) out_shape: Vec<usize>,
}

impl<T: Element> Args<T> {
    fn new(
        compiled: &Compiled,
        sizes: &BTreeMap<String, i64>,
        inputs: &BTreeMap<String, Tensor>,
    ) -> Result<Args<T>, Diagnostic> {
        let call = atl_lower::check_call(&compiled.kernel, sizes, inputs)?;
        crate::memory::check_temporaries(
            &compiled.code.symbol,
            &compiled.kernel,
            sizes,
            std::mem::size_of::<T>(),
        )?;
        let mut data = Vec::new();
        for (decl, shape) in compiled.kernel.inputs.iter().zip(&call.inputs) {
            let t = atl_loopir::interp::stored_input(decl, &inputs[&decl.name])?;
            if shape_numel(shape) != Some(t.data.len()) {
                return Err(Diagnostic::error(
                    "E0605",
                    format!(
                        "input `{}` does not have the elements of its shape",
                        decl.name
                    ),
                ));
            }
            // `check_call` checked an index array's values: 32-bit integers.
            data.push(if decl.index_array.is_some() {
                InputData::Index(t.data.iter().map(|&x| x as i32).collect())
            } else {
                InputData::Real(t.data.iter().map(|&x| T::from_f64(x)).collect())
            });
        }
        let n = shape_numel(&call.output)
            .ok_or_else(|| Diagnostic::error("E0503", "the output is too large"))?;
        Ok(Args {
            sizes: call.sizes,
            inputs: data,
            out: vec![T::NAN; n],
            out_shape: call.output,
        })
    }

    fn into_output(self, elapsed: Duration) -> Result<RunOutput, Diagnostic> {
        let data = self.out.into_iter().map(T::to_f64).collect();
        let output = Tensor::new(self.out_shape, data)
            .ok_or_else(|| Diagnostic::error("E0934", "output length mismatch"))?;
        Ok(RunOutput { output, elapsed })
    }
}

impl Compiled {
    /// Runs the kernel at `sizes` on `inputs` (converted to the kernel's element
    /// type). The call is checked first, like the interpreter checks it: missing or
    /// invalid sizes, broken preconditions and ill-shaped inputs are reported with the
    /// interpreter's codes. Output buffers are fresh for every call.
    pub fn run(
        &self,
        sizes: &BTreeMap<String, i64>,
        inputs: &BTreeMap<String, Tensor>,
    ) -> Result<RunOutput, Diagnostic> {
        match self.dtype {
            Dtype::F32 => self.run_typed::<f32>(sizes, inputs),
            Dtype::F64 => self.run_typed::<f64>(sizes, inputs),
        }
    }

    fn run_typed<T: Element>(
        &self,
        sizes: &BTreeMap<String, i64>,
        inputs: &BTreeMap<String, Tensor>,
    ) -> Result<RunOutput, Diagnostic> {
        let mut args = Args::<T>::new(self, sizes, inputs)?;
        match &self.artifact {
            Artifact::Library(lib) => {
                let (elapsed, status) = lib.call(&self.code.symbol, &mut args).map_err(|e| {
                    Diagnostic::error("E0933", format!("cannot call the kernel: {e}"))
                })?;
                if status != 0 {
                    return Err(self.status_error(i64::from(status), "E0933"));
                }
                args.into_output(elapsed)
            }
            Artifact::Executable(exe) => self.run_harness(exe, args),
        }
    }

    /// A non-zero status of a call that `atl_lower::check_call` accepted: the C
    /// checks and the Rust ones disagree, which is a bug, never an answer.
    fn status_error(&self, status: i64, code: &'static str) -> Diagnostic {
        let arrays: Vec<&str> = self
            .kernel
            .inputs
            .iter()
            .filter(|b| b.index_array.is_some())
            .map(|b| b.name.as_str())
            .collect();
        let pre = self.kernel.preconditions.len();
        let which = match usize::try_from(status).ok().and_then(|k| k.checked_sub(1)) {
            Some(k) if k < pre => format!(
                "its precondition `{}` failed",
                self.kernel.preconditions[k].pred
            ),
            Some(k) if k - pre < arrays.len() => {
                format!("the check of its index array `{}` failed", arrays[k - pre])
            }
            _ => "which is no check of the kernel".to_string(),
        };
        Diagnostic::error(
            code,
            format!(
                "the compiled kernel `{}` returned status {status} ({which}) on a call \
                 whose sizes the checks before the call accepted",
                self.code.symbol
            ),
        )
        .with_help("this is a bug of atl (the C checks and atl's disagree): please report it")
    }

    fn run_harness<T: Element>(
        &self,
        exe: &std::path::Path,
        mut args: Args<T>,
    ) -> Result<RunOutput, Diagnostic> {
        let fail = |m: String| Diagnostic::error("E0934", m);
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&(args.sizes.len() as u64).to_ne_bytes());
        for s in &args.sizes {
            bytes.extend_from_slice(&s.to_ne_bytes());
        }
        bytes.extend_from_slice(&(args.inputs.len() as u64).to_ne_bytes());
        for input in &args.inputs {
            input.write_bytes(&mut bytes);
        }
        bytes.extend_from_slice(&(args.out.len() as u64).to_ne_bytes());
        let in_path = self.dir.path().join("call.in");
        let out_path = self.dir.path().join("call.out");
        std::fs::write(&in_path, &bytes)
            .map_err(|e| fail(format!("cannot write the arguments: {e}")))?;
        let mut harness = std::process::Command::new(exe);
        harness
            .arg(&in_path)
            .arg(&out_path)
            // Sanitizer reports go to stderr; make leaks and errors fail the run.
            .env(
                "ASAN_OPTIONS",
                "detect_leaks=1:abort_on_error=0:exitcode=86",
            )
            .env(
                "UBSAN_OPTIONS",
                "print_stacktrace=1:halt_on_error=1:exitcode=87",
            );
        let result = atl_lang::fork_guard::output(&mut harness)
            .map_err(|e| fail(format!("cannot run the harness: {e}")))?;
        if !result.status.success() {
            return Err(fail(format!(
                "the compiled kernel `{}` failed ({})",
                self.code.symbol, result.status
            ))
            .with_note(String::from_utf8_lossy(&result.stderr).into_owned()));
        }
        let out =
            std::fs::read(&out_path).map_err(|e| fail(format!("cannot read the output: {e}")))?;
        if out.len() != 16 + args.out.len() * T::SIZE {
            return Err(fail(format!("the harness wrote {} bytes", out.len())));
        }
        let word = |at: usize| -> [u8; 8] {
            let mut w = [0u8; 8];
            w.copy_from_slice(&out[at..at + 8]);
            w
        };
        let ns = u64::from_ne_bytes(word(0));
        let status = i64::from_ne_bytes(word(8));
        if status != 0 {
            return Err(self.status_error(status, "E0934"));
        }
        for (k, slot) in args.out.iter_mut().enumerate() {
            *slot = T::read_bytes(&out[16 + k * T::SIZE..]);
        }
        args.into_output(Duration::from_nanos(ns))
    }
}

/// The arguments of a prepared call, in the kernel's element type.
enum PreparedArgs {
    F32(Args<f32>),
    F64(Args<f64>),
}

/// A call checked and converted once, then made as often as wanted: what a benchmark
/// times. Only the kernel call itself is timed. Shared-object backend only.
pub struct PreparedCall<'c> {
    compiled: &'c Compiled,
    args: PreparedArgs,
}

impl std::fmt::Debug for PreparedCall<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedCall")
            .field("compiled", self.compiled)
            .finish_non_exhaustive()
    }
}

impl Compiled {
    /// Checks the call (sizes, preconditions, input shapes) and converts the inputs
    /// for repeated [`PreparedCall::call`]s.
    pub fn prepare(
        &self,
        sizes: &BTreeMap<String, i64>,
        inputs: &BTreeMap<String, Tensor>,
    ) -> Result<PreparedCall<'_>, Diagnostic> {
        if !matches!(self.artifact, Artifact::Library(_)) {
            return Err(Diagnostic::error(
                "E0933",
                "repeated calls need the shared-object backend",
            ));
        }
        let args = match self.dtype {
            Dtype::F32 => PreparedArgs::F32(Args::new(self, sizes, inputs)?),
            Dtype::F64 => PreparedArgs::F64(Args::new(self, sizes, inputs)?),
        };
        Ok(PreparedCall {
            compiled: self,
            args,
        })
    }

    /// Sets the number of threads later calls use, through the kernel's own
    /// `SYMBOL_set_threads` (the process's OpenMP settings are not touched; a kernel
    /// compiled without OpenMP ignores it). `&mut self`: no call of the kernel can run
    /// meanwhile (the C function writes a plain `int` that the calls read).
    pub fn set_threads(&mut self, threads: usize) -> Result<(), Diagnostic> {
        let Artifact::Library(lib) = &mut self.artifact else {
            return Err(Diagnostic::error(
                "E0933",
                "setting threads needs the shared-object backend",
            ));
        };
        let n = i32::try_from(threads.max(1)).unwrap_or(i32::MAX);
        lib.set_threads(&self.code.symbol, n)
            .map_err(|e| Diagnostic::error("E0933", format!("cannot set the threads: {e}")))
    }
}

impl PreparedCall<'_> {
    /// Calls the kernel once; returns the time the call took.
    pub fn call(&mut self) -> Result<Duration, Diagnostic> {
        let Artifact::Library(lib) = &self.compiled.artifact else {
            return Err(Diagnostic::error("E0933", "not a loaded kernel"));
        };
        let symbol = &self.compiled.code.symbol;
        let r = match &mut self.args {
            PreparedArgs::F32(a) => lib.call(symbol, a),
            PreparedArgs::F64(a) => lib.call(symbol, a),
        };
        let (elapsed, status) =
            r.map_err(|e| Diagnostic::error("E0933", format!("cannot call the kernel: {e}")))?;
        if status != 0 {
            return Err(self.compiled.status_error(i64::from(status), "E0933"));
        }
        Ok(elapsed)
    }

    /// The output of the last call.
    pub fn output(&self) -> Result<Tensor, Diagnostic> {
        let (shape, data): (Vec<usize>, Vec<f64>) = match &self.args {
            PreparedArgs::F32(a) => (
                a.out_shape.clone(),
                a.out.iter().map(|x| x.to_f64()).collect(),
            ),
            PreparedArgs::F64(a) => (a.out_shape.clone(), a.out.clone()),
        };
        Tensor::new(shape, data).ok_or_else(|| Diagnostic::error("E0934", "output length mismatch"))
    }
}

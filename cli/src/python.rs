//! `atl emit --python DIR`: a Python module (ctypes + numpy) beside the kernel's C
//! source and header. On first use the module compiles the C file next to it into a
//! shared object (with `-fopenmp` when the compiler can, otherwise sequential) or
//! loads the one already there when it is newer than the source; it exposes the kernel
//! as a function taking numpy arrays, which checks — before calling C — the sizes (given
//! or read from the arrays' shapes), the kernel's preconditions in order, and each
//! array's dtype, C-contiguity and shape, and returns the output array.
//!
//! The preconditions are evaluated with Python's unbounded integers and the language's
//! division conventions (floor division, `a / 0 = 0`, `a % 0 = a`), after every size
//! is checked to fit in `int64`.

use std::fmt::Write;

use atl_emit_c::{Dtype, Fp};
use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_lower::Kernel;

/// Python's keywords and the module's own names a parameter must not take.
const TAKEN: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield", "out", "np", "ctypes",
];

/// `name` as a Python parameter (`name_` when it is a keyword or taken).
fn py_ident(name: &str) -> String {
    if TAKEN.contains(&name) || name.starts_with("_atl") {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

fn ix(e: &IndexExpr) -> String {
    match e {
        IndexExpr::Const(c) => format!("({c})"),
        IndexExpr::Var(v) => format!("_atl_s[{v:?}]"),
        IndexExpr::Meta(_) => "_atl_fail()".to_string(),
        IndexExpr::Neg(a) => format!("(-{})", ix(a)),
        IndexExpr::Bin(op, a, b) => {
            let (a, b) = (ix(a), ix(b));
            match op {
                IndexOp::Add => format!("({a} + {b})"),
                IndexOp::Sub => format!("({a} - {b})"),
                IndexOp::Mul => format!("({a} * {b})"),
                IndexOp::Div => format!("_atl_fdiv({a}, {b})"),
                IndexOp::Mod => format!("_atl_fmod({a}, {b})"),
                IndexOp::CDiv => format!("(-_atl_fdiv(-{a}, {b}))"),
                IndexOp::Min => format!("min({a}, {b})"),
                IndexOp::Max => format!("max({a}, {b})"),
            }
        }
    }
}

fn pred(p: &Pred) -> String {
    match p {
        Pred::Bool(b) => if *b { "True" } else { "False" }.to_string(),
        Pred::Cmp(op, a, b) => {
            let op = match op {
                CmpOp::Eq => "==",
                CmpOp::Ne => "!=",
                CmpOp::Lt => "<",
                CmpOp::Le => "<=",
                CmpOp::Gt => ">",
                CmpOp::Ge => ">=",
            };
            format!("({} {op} {})", ix(a), ix(b))
        }
        Pred::And(a, b) => format!("({} and {})", pred(a), pred(b)),
        Pred::Or(a, b) => format!("({} or {})", pred(a), pred(b)),
        Pred::Not(a) => format!("(not {})", pred(a)),
    }
}

/// A Python list of the shape's extents.
fn shape(dims: &[IndexExpr]) -> String {
    let d: Vec<String> = dims.iter().map(ix).collect();
    format!("({}{})", d.join(", "), if d.len() == 1 { "," } else { "" })
}

/// A Python string literal (ASCII, escaped as Rust's `Debug` does, which Python reads
/// the same for the characters names and conditions contain).
fn lit(s: &str) -> String {
    format!("{s:?}")
}

/// The module's source for the kernel `symbol` (its C file is `SYMBOL.c` in the same
/// directory); `validated` is said in the docstring.
pub fn module(
    kernel: &Kernel,
    symbol: &str,
    dtype: Dtype,
    fp: Fp,
    def: &str,
    validated: bool,
) -> String {
    let np_dtype = match dtype {
        Dtype::F32 => "float32",
        Dtype::F64 => "float64",
    };
    let set_threads = atl_emit_c::set_threads_symbol(symbol);
    let inputs: Vec<String> = kernel.inputs.iter().map(|i| py_ident(&i.name)).collect();
    let sizes: Vec<String> = kernel.sizes.iter().map(|s| py_ident(s)).collect();
    let mut params: Vec<String> = inputs.clone();
    params.push("*".to_string());
    params.extend(sizes.iter().map(|s| format!("{s}=None")));
    params.push("out=None".to_string());

    let mut doc_args = String::new();
    for (i, p) in kernel.inputs.iter().zip(&inputs) {
        let dims: Vec<String> = i.shape.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            doc_args,
            "    {p}: numpy.ndarray of {np_dtype}, shape [{}], C-contiguous",
            dims.join(", ")
        );
    }
    let out_dims: Vec<String> = kernel
        .output
        .shape
        .iter()
        .map(ToString::to_string)
        .collect();
    let mut doc_pre = String::new();
    for p in &kernel.preconditions {
        let _ = writeln!(doc_pre, "    {} ({})", p.pred, p.reason);
    }

    let mut s = String::new();
    let _ = write!(
        s,
        r#""""The ATL kernel `{symbol}` (definition `{def}`{validated}), generated by
`atl emit --python`. Do not edit.

    {symbol}({params})

Arguments (the arrays are never converted: pass numpy arrays of exactly this dtype):
{doc_args}    {sizes_doc}: the sizes (int); each one that is an extent of an input is
        read from its shape when not given
    out: optional output array (else a new one), shape [{out_dims}],
        {np_dtype}, C-contiguous, writeable, sharing no memory with an input

Returns the output array, every element written by the kernel.

Before calling C it checks, raising ValueError (sizes, shapes) or TypeError
(dtypes, layout), these preconditions in order:
{doc_pre}then every array's dtype, C-contiguity and shape.

set_threads(n): later calls use n threads (n <= 0: OpenMP's default);
OPENMP tells whether this process built the shared object with OpenMP (None
before the first call, or when a prebuilt one was loaded).

The shared object lib{symbol}.so is compiled on first use from {symbol}.c beside
this file with $CC (default `cc`) and $CFLAGS (default -O3), -std=c99 {contract}
(`--fp {fp_name}`), and -fopenmp when the compiler can; an existing one newer than
the C file is loaded as it is.
"""

import ctypes as _atl_ctypes
import os as _atl_os
import subprocess as _atl_subprocess
import sys as _atl_sys
import threading as _atl_threading

import numpy as _atl_np

SYMBOL = {sym_lit}
DTYPE = _atl_np.{np_dtype}
_ATL_HERE = _atl_os.path.dirname(_atl_os.path.abspath(__file__))
_ATL_SOURCE = _atl_os.path.join(_ATL_HERE, SYMBOL + ".c")
_ATL_LIBRARY = _atl_os.path.join(
    _ATL_HERE, "lib" + SYMBOL + (".dylib" if _atl_sys.platform == "darwin" else ".so")
)
_ATL_INT64 = (-(2**63), 2**63 - 1)
# One call or set_threads at a time: ctypes releases the GIL during the call, and the
# thread count must not change while the kernel runs.
_atl_lock = _atl_threading.Lock()
_atl_kernel = None
_atl_set_threads = None
OPENMP = None


def _atl_compile():
    """Builds the shared object (with OpenMP if possible); returns whether with OpenMP."""
    cc = _atl_os.environ.get("CC", "cc")
    cflags = _atl_os.environ.get("CFLAGS", "-O3").split()
    tmp = _ATL_LIBRARY + ".%d.tmp" % _atl_os.getpid()
    errors = []
    for openmp in (["-fopenmp"], []):
        cmd = [cc] + cflags + ["-std=c99", "{contract}", "-fPIC", "-shared"] + openmp + [_ATL_SOURCE, "-o", tmp, "-lm"]
        r = _atl_subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode == 0:
            _atl_os.replace(tmp, _ATL_LIBRARY)
            return bool(openmp)
        errors.append(" ".join(cmd) + "\n" + r.stderr)
    raise RuntimeError("cannot compile %s:\n%s" % (_ATL_SOURCE, "\n".join(errors)))


def _atl_load():
    global _atl_kernel, _atl_set_threads, OPENMP
    if _atl_kernel is not None:
        return
    stale = not _atl_os.path.exists(_ATL_LIBRARY) or (
        _atl_os.path.exists(_ATL_SOURCE)
        and _atl_os.path.getmtime(_ATL_LIBRARY) < _atl_os.path.getmtime(_ATL_SOURCE)
    )
    if stale:
        built_with_openmp = _atl_compile()
    lib = _atl_ctypes.CDLL(_ATL_LIBRARY)
    kernel = getattr(lib, SYMBOL)
    kernel.restype = _atl_ctypes.c_int
    kernel.argtypes = [_atl_ctypes.c_int64] * {n_sizes} + [_atl_ctypes.c_void_p] * {n_arrays}
    set_threads = getattr(lib, {set_threads_lit})
    set_threads.restype = None
    set_threads.argtypes = [_atl_ctypes.c_int]
    _atl_kernel, _atl_set_threads = kernel, set_threads
    if stale:
        OPENMP = built_with_openmp


def _atl_fdiv(a, b):
    return 0 if b == 0 else a // b


def _atl_fmod(a, b):
    return a if b == 0 else a - b * (a // b)


def _atl_fail():
    raise ValueError("a pattern metavariable in a kernel shape")


def _atl_array(name, a, shape, writeable=False):
    if not isinstance(a, _atl_np.ndarray):
        raise TypeError("%s: `%s` must be a numpy.ndarray, not %s" % (SYMBOL, name, type(a).__name__))
    if a.dtype != DTYPE:
        raise TypeError("%s: `%s` has dtype %s, expected %s" % (SYMBOL, name, a.dtype, _atl_np.dtype(DTYPE)))
    if not a.flags.c_contiguous:
        raise TypeError("%s: `%s` is not C-contiguous (use numpy.ascontiguousarray)" % (SYMBOL, name))
    if writeable and not a.flags.writeable:
        raise TypeError("%s: `%s` is not writeable" % (SYMBOL, name))
    if tuple(a.shape) != tuple(shape):
        raise ValueError("%s: `%s` has shape %s, expected %s at these sizes" % (SYMBOL, name, tuple(a.shape), tuple(shape)))


def set_threads(n):
    """Later calls of the kernel use `n` threads (`n <= 0`: OpenMP's default)."""
    _atl_load()
    with _atl_lock:
        _atl_set_threads(int(n))


def {symbol}({params_sig}):
    _atl_load()
    _atl_s = {{}}
"#,
        sym_lit = lit(symbol),
        contract = fp.contract_flag(),
        fp_name = fp.name(),
        set_threads_lit = lit(&set_threads),
        validated = if validated {
            ", validated"
        } else {
            ", NOT VALIDATED: emitted with --no-validate"
        },
        params = params.join(", "),
        params_sig = params.join(", "),
        sizes_doc = sizes.join(", "),
        out_dims = out_dims.join(", "),
        n_sizes = kernel.sizes.len(),
        n_arrays = kernel.inputs.len() + 1,
    );
    // Sizes: given, else read from an input's shape where an extent is the size.
    for (name, p) in kernel.sizes.iter().zip(&sizes) {
        let _ = writeln!(
            s,
            "    if {p} is not None:\n        _atl_s[{}] = {p}",
            lit(name)
        );
        for (input, ip) in kernel.inputs.iter().zip(&inputs) {
            for (d, dim) in input.shape.iter().enumerate() {
                if matches!(dim, IndexExpr::Var(v) if v == name) {
                    let _ = writeln!(
                        s,
                        "    if {key} not in _atl_s and isinstance({ip}, _atl_np.ndarray) and {ip}.ndim == {rank}:\n        \
                         _atl_s[{key}] = int({ip}.shape[{d}])",
                        key = lit(name),
                        rank = input.shape.len()
                    );
                }
            }
        }
        let _ = writeln!(
            s,
            "    if {key} not in _atl_s:\n        \
             raise ValueError(\"%s: give the size `{name}` (`{p}=...`)\" % SYMBOL)\n    \
             if isinstance(_atl_s[{key}], bool) or not isinstance(_atl_s[{key}], (int, _atl_np.integer)):\n        \
             raise TypeError(\"%s: the size `{name}` must be an int\" % SYMBOL)\n    \
             _atl_s[{key}] = int(_atl_s[{key}])\n    \
             if not (_ATL_INT64[0] <= _atl_s[{key}] <= _ATL_INT64[1]):\n        \
             raise ValueError(\"%s: the size `{name}` does not fit in int64\" % SYMBOL)",
            key = lit(name)
        );
    }
    for p in &kernel.preconditions {
        let _ = writeln!(
            s,
            "    if not {}:\n        \
             raise ValueError(\"%s: the sizes %s break the precondition `%s` (%s)\" % (SYMBOL, _atl_s, {}, {}))",
            pred(&p.pred),
            lit(&p.pred.to_string()),
            lit(&p.reason)
        );
    }
    for (input, ip) in kernel.inputs.iter().zip(&inputs) {
        let _ = writeln!(
            s,
            "    _atl_array({}, {ip}, {})",
            lit(&input.name),
            shape(&input.shape)
        );
    }
    let mut call_args: Vec<String> = kernel
        .sizes
        .iter()
        .map(|n| format!("_atl_s[{}]", lit(n)))
        .collect();
    call_args.extend(inputs.iter().map(|p| format!("{p}.ctypes.data")));
    call_args.push("out.ctypes.data".to_string());
    let _ = writeln!(
        s,
        "    _atl_shape = {}\n    \
         if out is None:\n        \
         out = _atl_np.empty(_atl_shape, dtype=DTYPE)\n    \
         else:\n        \
         _atl_array(\"out\", out, _atl_shape, writeable=True)\n        \
         for _atl_a in ({}):\n            \
         if _atl_np.shares_memory(out, _atl_a):\n                \
         raise ValueError(\"%s: `out` shares memory with an input\" % SYMBOL)\n    \
         with _atl_lock:\n        \
         _atl_status = _atl_kernel({})\n    \
         if _atl_status != 0:\n        \
         raise RuntimeError(\"%s: the kernel returned status %d after the checks passed (a bug of atl: please report it)\" % (SYMBOL, _atl_status))\n    \
         return out\n\n\n\
         {symbol}.__doc__ = __doc__",
        shape(&kernel.output.shape),
        {
            let mut a = inputs.join(", ");
            if inputs.len() == 1 {
                a.push(',');
            }
            a
        },
        call_args.join(", ")
    );
    s
}

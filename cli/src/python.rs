//! `atl emit --python DIR`: a Python module (ctypes + numpy) beside the kernel's C
//! sources and headers, one variant per dtype (`SYMBOL_f32.c`, `SYMBOL_f64.c`). The
//! module serves both: a call runs the variant of its arguments' dtype (which must
//! agree), compiled on first use for the machine it runs on (`-O3 -march=native`, or
//! portable with `ATL_PORTABLE=1`; `$CFLAGS` overrides) into a shared object whose name
//! carries a hash of the compile command and the source, so a change of either builds
//! a new one. It exposes the kernel as a function taking numpy arrays (and numbers for
//! scalar inputs), which checks — before calling C — each argument's kind (an array of
//! the input's number of dimensions, not masked; a number for a scalar), the dtypes,
//! the sizes (given or read from the arrays' shapes), the kernel's preconditions in
//! order, and each array's C-contiguity and shape, and returns the output array.
//!
//! An index array (an `int` input) is the one argument the module converts: any
//! integer array or sequence of one dimension becomes a C-contiguous `int32` array
//! (the C's `int32_t`, in both dtype variants), after a check that every value fits,
//! since numpy's cast would wrap around. Its declaration (range, order) is checked by
//! the kernel on entry; the status it then returns is turned into a `ValueError`
//! naming the array, from `atl_emit_c::array_statuses`, the list the header prints.
//!
//! The preconditions are evaluated with Python's unbounded integers and the language's
//! division conventions (floor division, `a / 0 = 0`, `a % 0 = a`), after every size
//! is checked to fit in `int64`.

use std::fmt::Write;

use atl_emit_c::{Dtype, Fp};
use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_lang::ir::SparseDecl;
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
        // Shapes and preconditions are over sizes only; neither occurs in a kernel.
        IndexExpr::Meta(_) | IndexExpr::Load(..) => "_atl_fail()".to_string(),
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

/// The module's run time: compiling and loading the variants, and the argument checks.
/// It follows the constants `module` writes (`SYMBOL`, `DTYPE`, `_ATL_VARIANTS`,
/// `_ATL_SET_THREADS`, `_ATL_CONTRACT`, `_ATL_N_SIZES`, `_ATL_N_ARRAYS`) and the
/// imports.
const RUNTIME: &str = r#"_ATL_HERE = _atl_os.path.dirname(_atl_os.path.abspath(__file__))
_ATL_SUFFIX = ".dylib" if _atl_sys.platform == "darwin" else ".so"
_ATL_INT64 = (-(2**63), 2**63 - 1)
_ATL_FLOATS = (_atl_np.dtype(_atl_np.float32), _atl_np.dtype(_atl_np.float64))
# One call or set_threads at a time: ctypes releases the GIL during the call, and the
# thread count must not change while the kernel runs. Loading (and compiling) has its
# own lock, so two threads never build the same library at once.
_atl_lock = _atl_threading.Lock()
_atl_load_lock = _atl_threading.Lock()
_atl_kernels = {}
_atl_set_threads_fns = {}
_atl_threads = None
# Compile with -march=native (the default) unless this is true; read when a variant is
# first built, so set it before the first call of that dtype.
PORTABLE = _atl_os.environ.get("ATL_PORTABLE", "") not in ("", "0")
# Per dtype name ("float32", "float64"), once that variant is loaded: the library's
# path, the compile command that built it (None for a prebuilt one) and whether it
# has OpenMP (None when unknown).
BUILD = {}
OPENMP = None


def _atl_requested():
    """The compile command asked for (without -fopenmp and the file names), and
    whether -march=native is the module's default (dropped if the compiler rejects it)."""
    cc = _atl_os.environ.get("CC", "cc")
    if "CFLAGS" in _atl_os.environ:
        cflags, native = _atl_os.environ["CFLAGS"].split(), False
    elif PORTABLE:
        cflags, native = ["-O3"], False
    else:
        cflags, native = ["-O3", "-march=native"], True
    return [cc] + cflags + ["-std=c99", _ATL_CONTRACT, "-fPIC", "-shared"], native


def _atl_library(variant, command, source):
    """The cached library's path: keyed on the command and the C source, so a change of
    either (flags, compiler, a re-emitted kernel) builds a new one."""
    h = _atl_hashlib.sha256()
    h.update("\0".join(command).encode())
    h.update(b"\0")
    h.update(source)
    return _atl_os.path.join(_ATL_HERE, "lib%s.%s%s" % (variant, h.hexdigest()[:16], _ATL_SUFFIX))


def _atl_compile(source_path, command, native, library):
    """Builds `library`, with OpenMP if the compiler can, dropping -march=native if it
    is rejected; writes beside it (first) `library + ".json"`: the command and OpenMP."""
    tmp = "%s.%d.%d.tmp" % (library, _atl_os.getpid(), _atl_threading.get_ident())
    errors = []
    march = (True, False) if native else (True,)
    for keep_native in march:
        for openmp in (["-fopenmp"], []):
            cmd = [a for a in command if keep_native or a != "-march=native"]
            cmd = cmd + openmp + [source_path, "-o", tmp, "-lm"]
            r = _atl_subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode == 0:
                info = {"command": cmd[:-4] + cmd[-1:], "openmp": bool(openmp)}
                with open(tmp + ".json", "w") as f:
                    _atl_json.dump(info, f)
                _atl_os.replace(tmp + ".json", library + ".json")
                _atl_os.replace(tmp, library)
                return info
            errors.append(" ".join(cmd) + "\n" + r.stderr)
    raise RuntimeError("%s: cannot compile %s:\n%s" % (SYMBOL, source_path, "\n".join(errors)))


def _atl_load(dtype):
    """The kernel of `dtype`'s variant, loading (and compiling) its library once."""
    global OPENMP
    kernel = _atl_kernels.get(dtype.name)
    if kernel is not None:
        return kernel
    with _atl_load_lock:
        kernel = _atl_kernels.get(dtype.name)
        if kernel is not None:
            return kernel
        variant = _ATL_VARIANTS[dtype.name]
        source_path = _atl_os.path.join(_ATL_HERE, variant + ".c")
        prebuilt = _atl_os.path.join(_ATL_HERE, "lib" + variant + _ATL_SUFFIX)
        if _atl_os.path.exists(prebuilt) and (
            not _atl_os.path.exists(source_path)
            or _atl_os.path.getmtime(prebuilt) >= _atl_os.path.getmtime(source_path)
        ):
            library, info = prebuilt, {"command": None, "openmp": None}
        else:
            with open(source_path, "rb") as f:
                source = f.read()
            command, native = _atl_requested()
            library = _atl_library(variant, command, source)
            info = None
            if _atl_os.path.exists(library):
                try:
                    with open(library + ".json") as f:
                        info = _atl_json.load(f)
                except (OSError, ValueError):
                    info = {"command": None, "openmp": None}
            if info is None:
                info = _atl_compile(source_path, command, native, library)
        lib = _atl_ctypes.CDLL(library)
        kernel = getattr(lib, variant)
        kernel.restype = _atl_ctypes.c_int
        kernel.argtypes = [_atl_ctypes.c_int64] * _ATL_N_SIZES + [_atl_ctypes.c_void_p] * _ATL_N_ARRAYS
        set_threads_fn = getattr(lib, _ATL_SET_THREADS[dtype.name])
        set_threads_fn.restype = None
        set_threads_fn.argtypes = [_atl_ctypes.c_int]
        with _atl_lock:
            if _atl_threads is not None:
                set_threads_fn(_atl_threads)
            _atl_set_threads_fns[dtype.name] = set_threads_fn
            BUILD[dtype.name] = {"library": library, "command": info["command"], "openmp": info["openmp"]}
            known = [b["openmp"] for b in BUILD.values()]
            OPENMP = None if None in known else all(known)
            _atl_kernels[dtype.name] = kernel
        return kernel


def _atl_fdiv(a, b):
    return 0 if b == 0 else a // b


def _atl_fmod(a, b):
    return a if b == 0 else a - b * (a // b)


def _atl_fail():
    raise ValueError("a pattern metavariable in a kernel shape")


def _atl_kind(name, a, rank, shape):
    """Checks what `a` is for the input `name` of `rank` dimensions (`shape`, in the
    program's size names); returns the dtype it requires, None for a Python number."""
    if isinstance(a, _atl_np.ma.MaskedArray):
        raise TypeError(
            "%s: `%s` is a masked array, whose mask the kernel would ignore: pass "
            "`%s.filled(value)` (or numpy.ma.getdata to drop the mask)" % (SYMBOL, name, name)
        )
    if isinstance(a, _atl_np.ndarray):
        if a.ndim != rank:
            raise ValueError(
                "%s: `%s` must have %d dimension%s (shape %s), got an array with %d (shape %s)"
                % (SYMBOL, name, rank, "" if rank == 1 else "s", shape, a.ndim, tuple(a.shape))
            )
        if a.dtype not in _ATL_FLOATS:
            raise TypeError(
                "%s: `%s` has dtype %s; the kernel takes float32 or float64 (arrays are "
                "never converted: use .astype)" % (SYMBOL, name, a.dtype)
            )
        return a.dtype
    if type(a).__module__.startswith("scipy.sparse"):
        raise TypeError(
            "%s: `%s` is a scipy.sparse matrix (%s); this kernel reads a dense "
            "numpy.ndarray of %d dimension%s (shape %s): pass `%s.toarray()`"
            % (SYMBOL, name, type(a).__name__, rank, "" if rank == 1 else "s", shape, name)
        )
    if rank == 0:
        if isinstance(a, _atl_np.generic) and a.dtype in _ATL_FLOATS:
            return a.dtype
        if isinstance(a, (int, float, _atl_np.integer)) and not isinstance(a, (bool, _atl_np.bool_)):
            return None
        raise TypeError(
            "%s: `%s` (shape []) must be a number (int, float, numpy.float32 or "
            "numpy.float64) or a 0-d numpy.ndarray, not %s" % (SYMBOL, name, type(a).__name__)
        )
    raise TypeError(
        "%s: `%s` must be a numpy.ndarray of %d dimension%s (shape %s), not %s"
        % (SYMBOL, name, rank, "" if rank == 1 else "s", shape, type(a).__name__)
    )


_ATL_INT32 = (-(2**31), 2**31 - 1)


def _atl_index(name, a, shape):
    """The index array `name` (declared of `shape`, in the program's size names) as a
    C-contiguous int32 numpy array: any integer array or sequence of one dimension,
    every value checked to fit int32 first (a cast would wrap around silently)."""
    if isinstance(a, _atl_np.ma.MaskedArray):
        raise TypeError(
            "%s: `%s` is a masked array, whose mask the kernel would ignore: pass "
            "`%s.filled(value)` (or numpy.ma.getdata to drop the mask)" % (SYMBOL, name, name)
        )
    given = a
    a = _atl_np.asarray(a)
    if a.ndim != 1:
        raise ValueError(
            "%s: `%s` is an index array of 1 dimension (shape %s), got %s with %d (shape %s)"
            % (SYMBOL, name, shape, type(given).__name__, a.ndim, tuple(a.shape))
        )
    if a.dtype.kind == "O":
        # A sequence of Python ints too large for int64: checked with Python's
        # unbounded integers below, like any other.
        if not all(isinstance(x, (int, _atl_np.integer)) and not isinstance(x, bool) for x in a):
            raise TypeError("%s: `%s` is an index array: its elements must be integers" % (SYMBOL, name))
        values = [int(x) for x in a]
        bad = [x for x in values if not (_ATL_INT32[0] <= x <= _ATL_INT32[1])]
        if bad:
            raise ValueError(
                "%s: the index array `%s` holds %d, which does not fit in int32 (the "
                "kernel's int32_t)" % (SYMBOL, name, bad[0])
            )
        a = _atl_np.array(values, dtype=_atl_np.int64)
    elif a.size == 0 and not isinstance(given, _atl_np.ndarray):
        # An empty sequence has numpy's default dtype (float64); it holds no value.
        a = a.astype(_atl_np.int32)
    elif a.dtype.kind not in "iu":
        raise TypeError(
            "%s: `%s` is an index array: it must hold integers (any numpy integer dtype, "
            "converted to int32), not %s" % (SYMBOL, name, a.dtype)
        )
    if a.size > 0 and a.dtype != _atl_np.int32:
        lo, hi = int(a.min()), int(a.max())
        for x in (lo, hi):
            if not (_ATL_INT32[0] <= x <= _ATL_INT32[1]):
                raise ValueError(
                    "%s: the index array `%s` holds %d, which does not fit in int32 (the "
                    "kernel's int32_t)" % (SYMBOL, name, x)
                )
    return _atl_np.ascontiguousarray(a, dtype=_atl_np.int32)


def _atl_out_kind(out):
    """The dtype `out` requires (None when it is not a float array, which the later
    check refuses), refusing a masked array."""
    if isinstance(out, _atl_np.ma.MaskedArray):
        raise TypeError("%s: `out` is a masked array: pass a plain numpy.ndarray" % SYMBOL)
    if isinstance(out, _atl_np.ndarray) and out.dtype in _ATL_FLOATS:
        return out.dtype
    return None


def _atl_dtype(kinds):
    """The call's dtype: the one every argument that has one agrees on (DTYPE when
    none has one)."""
    found = [(n, d) for n, d in kinds if d is not None]
    for n, d in found[1:]:
        if d != found[0][1]:
            raise TypeError(
                "%s: mixed dtypes: `%s` is %s but `%s` is %s; pass arguments of one dtype "
                "(use .astype; a numpy scalar keeps its dtype, a Python number takes the "
                "arrays')" % (SYMBOL, found[0][0], found[0][1], n, d)
            )
    return found[0][1] if found else _atl_np.dtype(DTYPE)


def _atl_scalar(name, a, dtype):
    """A number for a [] input as a 0-d array of `dtype` (an array is left as it is)."""
    if isinstance(a, _atl_np.ndarray):
        return a
    try:
        with _atl_np.errstate(over="ignore"):
            v = _atl_np.array(a, dtype=dtype)
    except OverflowError:
        v = None
    if v is None or (not _atl_np.isfinite(v) and _atl_np.isfinite(float(a))):
        raise ValueError("%s: `%s` = %r does not fit in %s" % (SYMBOL, name, a, dtype))
    return v


def _atl_array(name, a, shape, dtype, writeable=False, stored=None):
    if not isinstance(a, _atl_np.ndarray) or isinstance(a, _atl_np.ma.MaskedArray):
        raise TypeError("%s: `%s` must be a numpy.ndarray (not masked), not %s" % (SYMBOL, name, type(a).__name__))
    if a.dtype != dtype:
        raise TypeError("%s: `%s` has dtype %s, expected %s" % (SYMBOL, name, a.dtype, dtype))
    if stored is not None and not a.flags.c_contiguous:
        raise TypeError("%s: `%s` is declared with a layout: its element (i0, i1, ...) must be at %s elements from the first (a column-major matrix: numpy.asfortranarray)" % (SYMBOL, name, stored))
    if not a.flags.c_contiguous:
        raise TypeError("%s: `%s` is not C-contiguous (use numpy.ascontiguousarray)" % (SYMBOL, name))
    if writeable and not a.flags.writeable:
        raise TypeError("%s: `%s` is not writeable" % (SYMBOL, name))
    if tuple(a.shape) != tuple(shape):
        raise ValueError("%s: `%s` has shape %s, expected %s at these sizes" % (SYMBOL, name, tuple(a.shape), tuple(shape)))


def set_threads(n):
    """Later calls of the kernel use `n` threads (`n <= 0`: OpenMP's default)."""
    global _atl_threads
    with _atl_lock:
        _atl_threads = int(n)
        for f in _atl_set_threads_fns.values():
            f(_atl_threads)
"#;

/// The dtypes a module serves: numpy's name and the suffix of the C variant's symbol.
const DTYPES: [(Dtype, &str, &str); 2] = [
    (Dtype::F32, "float32", "f32"),
    (Dtype::F64, "float64", "f64"),
];

/// The C symbol of the `dtype` variant of the kernel `symbol` (`SYMBOL_f32`,
/// `SYMBOL_f64`): its C file and header are named after it.
pub fn variant_symbol(symbol: &str, dtype: Dtype) -> String {
    let suffix = DTYPES
        .iter()
        .find(|(d, _, _)| *d == dtype)
        .map_or("f32", |(_, _, s)| s);
    format!("{symbol}_{suffix}")
}

/// The dtypes a module serves, each with its C variant (see [`variant_symbol`]).
pub fn variants(symbol: &str) -> Vec<(Dtype, String)> {
    DTYPES
        .iter()
        .map(|(d, _, _)| (*d, variant_symbol(symbol, *d)))
        .collect()
}

fn np_name(dtype: Dtype) -> &'static str {
    match dtype {
        Dtype::F32 => "float32",
        Dtype::F64 => "float64",
    }
}

/// A shape in the program's size names, as the docstring and errors show it.
fn shape_names(dims: &[IndexExpr]) -> String {
    let d: Vec<String> = dims.iter().map(ToString::to_string).collect();
    format!("[{}]", d.join(", "))
}

/// The module's source for the kernel `symbol` (its C variants are
/// [`variants`]`(symbol)`, each `VARIANT.c` in the same directory); `dtype` is the
/// dtype of a call none of whose arguments has one (only Python numbers); `validated`
/// is said in the docstring.
pub fn module(
    kernel: &Kernel,
    symbol: &str,
    dtype: Dtype,
    fp: Fp,
    def: &str,
    validated: bool,
    sparse: &[SparseDecl],
) -> String {
    let np_dtype = np_name(dtype);
    let inputs: Vec<String> = kernel.inputs.iter().map(|i| py_ident(&i.name)).collect();
    let sizes: Vec<String> = kernel.sizes.iter().map(|s| py_ident(s)).collect();
    let mut params: Vec<String> = inputs.clone();
    params.push("*".to_string());
    params.extend(sizes.iter().map(|s| format!("{s}=None")));
    params.push("out=None".to_string());

    let mut doc_args = String::new();
    let statuses = atl_emit_c::array_statuses(kernel);
    for (i, p) in kernel.inputs.iter().zip(&inputs) {
        if let Some(a) = statuses.iter().find(|a| a.array == i.name) {
            let _ = writeln!(
                doc_args,
                "    {p}: index array: a numpy.ndarray of any integer dtype (or a sequence of\n        \
                 ints), shape {}, converted to C-contiguous int32 (each value must\n        \
                 fit); declared {}",
                shape_names(&i.shape),
                a.declaration
            );
        } else if i.shape.is_empty() {
            let _ = writeln!(
                doc_args,
                "    {p}: a number (int, float, a numpy integer, numpy.float32 or\n        \
                 numpy.float64) or a 0-d numpy.ndarray (shape [])"
            );
        } else {
            match atl_emit_c::storage_offset(i) {
                None => {
                    let _ = writeln!(
                        doc_args,
                        "    {p}: numpy.ndarray of float32 or float64, shape {}, C-contiguous",
                        shape_names(&i.shape)
                    );
                }
                Some(offset) => {
                    let _ = writeln!(
                        doc_args,
                        "    {p}: numpy.ndarray of float32 or float64, shape {}, its element\n        \
                         (i0, i1, ...) at {offset} elements from the first (declared with a\n        \
                         layout; a column-major matrix is numpy.asfortranarray)",
                        shape_names(&i.program_shape())
                    );
                }
            }
        }
    }
    let mut doc_pre = String::new();
    for p in &kernel.preconditions {
        let _ = writeln!(doc_pre, "    {} ({})", p.pred, p.reason);
    }
    let variants = variants(symbol);
    let dict = |f: &dyn Fn(&str) -> String| {
        let items: Vec<String> = variants
            .iter()
            .map(|(d, v)| format!("{}: {}", lit(np_name(*d)), lit(&f(v))))
            .collect();
        format!("{{{}}}", items.join(", "))
    };
    let files: Vec<String> = variants.iter().map(|(_, v)| format!("{v}.c")).collect();

    let mut s = String::new();
    let _ = write!(
        s,
        r#""""The ATL kernel `{symbol}` (definition `{def}`{validated}), generated by
`atl emit --python`. Do not edit.

    {symbol}({params})

Arguments (float arrays are never converted: pass numpy arrays of one dtype, float32
or float64; the call runs the kernel's variant of that dtype and returns that dtype;
DTYPE, {np_dtype} (`atl emit --dtype`), when every argument is a Python number;
index arrays are int32 in both variants):
{doc_args}    {sizes_doc}: the sizes (int); each one that is an extent of an input is
        read from its shape when not given
    out: optional output array (else a new one), shape {out_dims}, of the
        call's dtype, C-contiguous, writeable, sharing no memory with an input

Returns the output array, every element written by the kernel.

Before calling C it checks, raising TypeError (kinds, dtypes, layout) or ValueError
(dimensions, sizes, shapes): every argument's kind (a numpy.ndarray, not masked,
of the input's number of dimensions; a number is also accepted for a scalar
input) and that their dtypes agree; every size; these preconditions in order:
{doc_pre}then every array's C-contiguity and shape. The kernel then checks each index
array's declaration before it computes, and a call whose index array breaks it
raises ValueError naming the array (every index array's values must also fit in
int32, checked before the call).

set_threads(n): later calls use n threads (n <= 0: OpenMP's default).

Compiling: on the first call of a dtype, the module compiles that variant's C file
({files}) beside this file into libVARIANT.HASH.so, with $CC (default `cc`)
and $CFLAGS (default `-O3 -march=native`: for the machine it runs on; `-O3` when
PORTABLE, which is true when the environment has ATL_PORTABLE=1; -march=native is
dropped if the compiler rejects it), then -std=c99 {contract} (`--fp {fp_name}`),
and -fopenmp when the compiler can. HASH is a hash of the compile command and the
C source: a change of either builds a new library, an unchanged one is reused. A
libVARIANT.so you built yourself, newer than the C file, is loaded instead.
BUILD[dtype name] tells the library, its compile command and whether it has OpenMP;
OPENMP whether every loaded variant has it (None before the first call).
"""

import ctypes as _atl_ctypes
import hashlib as _atl_hashlib
import json as _atl_json
import os as _atl_os
import subprocess as _atl_subprocess
import sys as _atl_sys
import threading as _atl_threading

import numpy as _atl_np

SYMBOL = {sym_lit}
DTYPE = _atl_np.{np_dtype}
_ATL_VARIANTS = {variants_dict}
_ATL_SET_THREADS = {set_threads_dict}
_ATL_CONTRACT = {contract_lit}
_ATL_N_SIZES = {n_sizes}
_ATL_N_ARRAYS = {n_arrays}
# The kernel's status when an index array breaks its declaration (its header's list).
_ATL_ARRAY_STATUS = {array_status}
"#,
        sym_lit = lit(symbol),
        contract = fp.contract_flag(),
        contract_lit = lit(fp.contract_flag()),
        fp_name = fp.name(),
        validated = if validated {
            ", validated"
        } else {
            ", NOT VALIDATED: emitted with --no-validate"
        },
        params = params.join(", "),
        sizes_doc = sizes.join(", "),
        out_dims = shape_names(&kernel.output.shape),
        files = files.join(", "),
        variants_dict = dict(&|v: &str| v.to_string()),
        set_threads_dict = dict(&|v: &str| atl_emit_c::set_threads_symbol(v)),
        n_sizes = kernel.sizes.len(),
        n_arrays = kernel.inputs.len() + 1,
        array_status = {
            let items: Vec<String> = statuses
                .iter()
                .map(|a| format!("{}: ({}, {})", a.status, lit(&a.array), lit(&a.declaration)))
                .collect();
            format!("{{{}}}", items.join(", "))
        },
    );
    s.push_str(RUNTIME);
    let _ = write!(
        s,
        "\n\ndef {symbol}({}):\n    _atl_kinds = []\n",
        params.join(", ")
    );
    // Each argument's kind (an array of the input's rank, a number for a scalar), then
    // the call's dtype, agreed by all (out included).
    // An index array is converted to int32 here, before the sizes are read from the
    // shapes; it has no part in the dtype.
    for (input, ip) in kernel.inputs.iter().zip(&inputs) {
        if input.index_array.is_some() {
            let _ = writeln!(
                s,
                "    {ip} = _atl_index({name}, {ip}, {shape})",
                name = lit(&input.name),
                shape = lit(&shape_names(&input.shape)),
            );
        } else {
            let _ = writeln!(
                s,
                "    _atl_kinds.append(({name}, _atl_kind({name}, {ip}, {rank}, {shape})))",
                name = lit(&input.name),
                rank = input.shape.len(),
                shape = lit(&shape_names(&input.program_shape())),
            );
        }
    }
    let _ = writeln!(
        s,
        "    if out is not None:\n        \
         _atl_kinds.append((\"out\", _atl_out_kind(out)))\n    \
         _atl_dt = _atl_dtype(_atl_kinds)"
    );
    // An input declared with a layout: the caller's array in the program's order of
    // dimensions, viewed in storage order (C-contiguous when its memory is in it).
    for (input, ip) in kernel.inputs.iter().zip(&inputs) {
        if let Some(order) = &input.order {
            let axes: Vec<String> = order.iter().map(usize::to_string).collect();
            let _ = writeln!(s, "    {ip} = {ip}.transpose(({},))", axes.join(", "));
        }
    }
    for (input, ip) in kernel.inputs.iter().zip(&inputs) {
        if input.shape.is_empty() {
            let _ = writeln!(
                s,
                "    {ip} = _atl_scalar({}, {ip}, _atl_dt)",
                lit(&input.name)
            );
        }
    }
    let _ = writeln!(s, "    _atl_s = {{}}");
    // Sizes: given, else read from an input's shape where an extent is the size (every
    // input is an array of its rank by now).
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
                        "    if {key} not in _atl_s:\n        _atl_s[{key}] = int({ip}.shape[{d}])",
                        key = lit(name),
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
        let stored = match atl_emit_c::storage_offset(input) {
            Some(offset) => format!(", stored={}", lit(&offset.to_string())),
            None => String::new(),
        };
        let _ = writeln!(
            s,
            "    _atl_array({}, {ip}, {}, {}{stored})",
            lit(&input.name),
            shape(&input.shape),
            if input.index_array.is_some() {
                "_atl_np.int32"
            } else {
                "_atl_dt"
            }
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
         out = _atl_np.empty(_atl_shape, dtype=_atl_dt)\n    \
         else:\n        \
         _atl_array(\"out\", out, _atl_shape, _atl_dt, writeable=True)\n        \
         for _atl_a in ({}):\n            \
         if _atl_np.shares_memory(out, _atl_a):\n                \
         raise ValueError(\"%s: `out` shares memory with an input\" % SYMBOL)\n    \
         _atl_kernel = _atl_load(_atl_dt)\n    \
         with _atl_lock:\n        \
         _atl_status = _atl_kernel({})\n    \
         if _atl_status in _ATL_ARRAY_STATUS:\n        \
         _atl_a, _atl_d = _ATL_ARRAY_STATUS[_atl_status]\n        \
         raise ValueError(\"%s: the index array `%s` breaks its declaration: %s (the kernel's check returned %d)\" % (SYMBOL, _atl_a, _atl_d, _atl_status))\n    \
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
    s.push_str(&sparse_helpers(kernel, symbol, sparse));
    s
}

/// For each sparse matrix whose arrays the kernel reads (`sparse A : [n, m] as
/// csr(pos, crd, vals)`), a function `sparse_A(matrix)` making its arrays from a
/// `scipy.sparse` matrix or array, as a dict of the kernel's keyword arguments
/// (`spmv(**sparse_A(M), v=v)`): stored in the declaration's format with duplicates
/// summed, zeros dropped and coordinates sorted, as `atl` stores a file
/// (`atl_lang::sparse::compress`). scipy is imported only when it is called.
fn sparse_helpers(kernel: &Kernel, symbol: &str, sparse: &[SparseDecl]) -> String {
    let mut s = String::new();
    let reads = |a: &String| kernel.inputs.iter().any(|i| i.name == *a);
    for decl in sparse.iter().filter(|d| d.arrays.iter().all(reads)) {
        let function = format!("sparse_{}", decl.name);
        if function == symbol
            || !function
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            continue;
        }
        let keys: Vec<String> = decl.arrays.iter().map(|a| lit(&py_ident(a))).collect();
        // scipy stores matrices only: a format of another rank gets no helper.
        let (convert, parts, extra): (&str, &[&str], String) = match decl.format.name {
            "csr" | "csc" => (
                if decl.format.name == "csr" {
                    "tocsr"
                } else {
                    "tocsc"
                },
                &["_atl_m.indptr", "_atl_m.indices", "_atl_m.data"],
                String::new(),
            ),
            // The rows (columns) that store a value, and the compressed rows of those.
            "dcsr" | "dcsc" => (
                if decl.format.name == "dcsr" {
                    "tocsr"
                } else {
                    "tocsc"
                },
                &[
                    "_atl_np.array([0, len(_atl_kept)])",
                    "_atl_kept",
                    "_atl_np.concatenate([[0], _atl_np.cumsum(_atl_counts[_atl_kept])])",
                    "_atl_m.indices",
                    "_atl_m.data",
                ],
                "    import numpy as _atl_np\n    \
                 _atl_counts = _atl_np.diff(_atl_m.indptr)\n    \
                 _atl_kept = _atl_np.flatnonzero(_atl_counts)\n"
                    .to_string(),
            ),
            "coo" => (
                "tocsr",
                &["_atl_c.row", "_atl_c.col", "_atl_c.data"],
                "    _atl_c = _atl_m.tocoo()\n".to_string(),
            ),
            // scipy's BSR needs extents that are multiples of the block's: the
            // matrix is padded with zeros, as `atl` pads the edge blocks.
            "bcsr" => {
                let [r, c] = decl.block[..] else { continue };
                (
                    "tocsr",
                    &["_atl_b.indptr", "_atl_b.indices", "_atl_b.data"],
                    format!(
                        "    _atl_p = _atl_m.copy()\n    \
                         _atl_p.resize((-(-_atl_m.shape[0] // {r}) * {r}, -(-_atl_m.shape[1] // {c}) * {c}))\n    \
                         _atl_b = _atl_p.tobsr(blocksize=({r}, {c}))\n    \
                         _atl_b.sort_indices()\n"
                    ),
                )
            }

            _ => continue,
        };
        let coo = extra;
        let mut entries: Vec<String> = keys
            .iter()
            .zip(parts)
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        // An extent that is a size alone is given too: `pos`'s length is `n + 1`,
        // from which the kernel cannot read `n`.
        for (k, extent) in decl.shape.iter().enumerate() {
            if let IndexExpr::Var(size) = extent
                && kernel.sizes.contains(size)
            {
                entries.push(format!("{}: _atl_m.shape[{k}]", lit(&py_ident(size))));
            }
        }
        let _ = write!(
            s,
            "\n\ndef {function}(matrix):\n    \
             \"\"\"The arrays of the sparse matrix `{name}` (`sparse {decl}`) made from a\n    \
             scipy.sparse matrix or array of any format, as keyword arguments of\n    \
             {symbol}, with the matrix's extents that are sizes:\n    \
             `{symbol}(**{function}(M), ...)`. Stored in {format}: duplicates summed,\n    \
             zeros dropped, coordinates sorted (as `atl` stores a file given for\n    \
             `{name}`); the values keep the matrix's dtype.\"\"\"\n    \
             try:\n        import scipy.sparse as _atl_sp\n    \
             except ImportError as e:\n        \
             raise ImportError(\"{function} needs scipy (pip install scipy)\") from e\n    \
             if not _atl_sp.issparse(matrix):\n        \
             raise TypeError(\"{function}: expected a scipy.sparse matrix or array, got %s\" % type(matrix).__name__)\n    \
             if len(matrix.shape) != 2:\n        \
             raise ValueError(\"{function}: expected a matrix, got shape %s\" % (matrix.shape,))\n    \
             _atl_m = matrix.{convert}(copy=True)\n    \
             _atl_m.sum_duplicates()\n    \
             _atl_m.eliminate_zeros()\n    \
             _atl_m.sort_indices()\n    \
             if _atl_m.nnz == 0 and min(_atl_m.shape) > 0:\n        \
             # No value: one explicit zero at the origin, as `atl` stores such a file\n        \
             # (a size is at least 1, so no array may be empty).\n        \
             _atl_m = _atl_sp.coo_matrix(([0], ([0], [0])), shape=_atl_m.shape, dtype=_atl_m.dtype).{convert}()\n\
             {coo}    \
             return {{{entries}}}\n",
            name = decl.name,
            format = decl.format.name,
            entries = entries.join(", "),
        );
    }
    s
}

//! The C99 printer: a [`Kernel`] becomes one function with the ABI of DESIGN §7,
//!
//! ```c
//! int NAME(int64_t <sizes…>, const T *restrict <inputs…>, T *restrict out);
//! ```
//!
//! returning 0, or `k` >= 1 when the `k`-th precondition (`Kernel::preconditions`
//! order) failed and nothing was touched; plus a header documenting the shapes, the
//! preconditions and the statuses. Index arithmetic is
//! `int64_t`; the floor-division helpers (and `min`/`max`, `cdiv`, the allocation
//! helper) are emitted only when the kernel uses them, which lowering arranges to be
//! only where a numerator may be negative or a divisor is not a positive constant.
//! Which helpers, macros and headers the source needs is recorded while the entry
//! checks and the body are printed ([`Needs`]), and the preamble is written from that
//! record afterwards: one source of truth, so a helper used only by an entry check
//! (an `assume`) is emitted like any other.
//!
//! Temporaries are printed as the loop IR places them (`atl_lower`'s placement pass):
//! a stack array, a heap allocation freed at the end of its block, or a hoisted heap
//! buffer declared `NULL` in a block around the loop that holds it (an `omp parallel`
//! region whose worksharing loop is that loop, when it is parallel) and allocated at
//! first use. The printer does not choose among them.
//!
//! Names: everything the emitter itself defines in the C file or the header (helpers,
//! macros, file-scope variables, loop counters of its own) starts with the reserved
//! prefix [`RESERVED_PREFIX`] (`atl__`, or `ATL__` for macros), which no user name may
//! start with (in any case), so a user's symbol or loop-IR name never collides with
//! them; the symbol's own exported companions are [`set_threads_symbol`]. Every name of
//! the loop IR is kept when it is a valid C identifier that collides with nothing (C
//! keywords, the reserved prefix, the symbol and its companions, the C library names
//! the code or its headers may declare, identifiers reserved by the C standard or by
//! OpenMP: the one list of `atl_loopir::cnames`, which the translation validator
//! checks too); otherwise it gets a numeric suffix. Renaming a size or input only
//! changes a parameter name, not the ABI. The renaming is injective, so two C names
//! clash only where two loop-IR names are equal: the validator refuses a kernel in
//! which two declarations of one name are visible together in the C printed here.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;

use atl_lang::functions::ScalarFn;
use atl_lang::index::IndexExpr;
use atl_lang::ir::BinOp;
use atl_lower::ir::{Cond, For, Ix, IxOp, Kernel, PreconditionKind, Stmt, Storage, StoreOp, Val};

use crate::{Dtype, Fp};

pub use atl_loopir::cnames::{RESERVED_PREFIX, is_free_identifier, set_threads_symbol};

/// Maps loop-IR names to C identifiers.
struct Names {
    map: HashMap<String, String>,
    used: HashSet<String>,
}

impl Names {
    fn new(symbol: &str) -> Names {
        let mut used = HashSet::new();
        used.insert(symbol.to_string());
        used.insert(set_threads_symbol(symbol));
        Names {
            map: HashMap::new(),
            used,
        }
    }

    fn declare(&mut self, name: &str) {
        if self.map.contains_key(name) {
            return;
        }
        let base: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let base = if is_free_identifier(&base) {
            base
        } else {
            format!("v_{}", base.trim_start_matches('_'))
        };
        let mut candidate = base.clone();
        let mut k = 1;
        while self.used.contains(&candidate) || !is_free_identifier(&candidate) {
            candidate = format!("{base}_{k}");
            k += 1;
        }
        self.used.insert(candidate.clone());
        self.map.insert(name.to_string(), candidate);
    }

    fn get<'a>(&'a self, name: &'a str) -> &'a str {
        self.map.get(name).map(String::as_str).unwrap_or(name)
    }
}

/// Every name of the kernel, in a deterministic order (parameters first).
fn collect_names(k: &Kernel, names: &mut Names) {
    for s in &k.sizes {
        names.declare(s);
    }
    for i in &k.inputs {
        names.declare(&i.name);
    }
    names.declare(&k.output.name);
    k.walk(&mut |s| match s {
        Stmt::For(l) => names.declare(&l.var),
        Stmt::Alloc { buf, .. } => names.declare(buf),
        Stmt::Decl { name, .. } => names.declare(name),
        _ => {}
    });
}

/// What the printed code refers to beyond plain C: helpers, macros, headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Need {
    FloorDiv,
    FloorMod,
    CeilDiv,
    Min,
    Max,
    /// `atl__vmax`/`atl__vmin`: the value functions `max`/`min`.
    ValueMax,
    ValueMin,
    Blend,
    /// The `ATL__OMP`/`ATL__UNROLL` macros.
    Pragmas,
    /// `atl__alloc` (and `free`, so `<stdlib.h>`).
    Alloc,
    /// `NAN`/`INFINITY` (`<math.h>`).
    Math,
    /// An OpenMP parallel region: `atl__threads()`, the thread count that
    /// `SYMBOL_set_threads` chose.
    Threads,
}

/// The set of [`Need`]s, filled in by the printing functions themselves (they take
/// `&self`, hence the cell).
type Needs = RefCell<BTreeSet<Need>>;

pub(crate) struct CPrinter<'k> {
    kernel: &'k Kernel,
    dtype: Dtype,
    fp: Fp,
    symbol: String,
    names: Names,
    out: String,
    /// What the code printed so far needs.
    needs: Needs,
}

/// The C type name of a dtype.
pub(crate) fn ctype(d: Dtype) -> &'static str {
    match d {
        Dtype::F32 => "float",
        Dtype::F64 => "double",
    }
}

fn show_shape(shape: &[IndexExpr]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", dims.join(", "))
}

impl<'k> CPrinter<'k> {
    pub(crate) fn new(kernel: &'k Kernel, dtype: Dtype, fp: Fp, symbol: &str) -> CPrinter<'k> {
        let mut names = Names::new(symbol);
        collect_names(kernel, &mut names);
        CPrinter {
            kernel,
            dtype,
            fp,
            symbol: symbol.to_string(),
            names,
            out: String::new(),
            needs: RefCell::new(BTreeSet::new()),
        }
    }

    fn t(&self) -> &'static str {
        ctype(self.dtype)
    }

    /// The parameter list of the kernel, one per line after the first.
    fn params(&self, restrict: &str) -> Vec<String> {
        let mut p = Vec::new();
        for s in &self.kernel.sizes {
            p.push(format!("int64_t {}", self.names.get(s)));
        }
        for i in &self.kernel.inputs {
            // An index array holds `int32_t`s whatever the element type.
            let t = if i.index_array.is_some() {
                "int32_t"
            } else {
                self.t()
            };
            p.push(format!("const {t} *{restrict} {}", self.names.get(&i.name)));
        }
        p.push(format!(
            "{} *{restrict} {}",
            self.t(),
            self.names.get(&self.kernel.output.name)
        ));
        p
    }

    /// The documentation comment of the source, and (`header`: with how to build,
    /// link and run the kernel) of the header.
    fn doc(&self, header: bool) -> String {
        let k = self.kernel;
        let t = self.t();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "/* `{}`: generated by atl from the definition `{}`.",
            self.symbol, k.name
        );
        let _ = writeln!(
            s,
            " *\n * Arguments, in this order (every array dense, row-major, of {t}):"
        );
        for size in &k.sizes {
            let _ = writeln!(s, " *   {:<12} size (int64_t)", self.names.get(size));
        }
        for i in &k.inputs {
            let what = if i.index_array.is_some() {
                "index array of int32_t, shape"
            } else {
                "input, shape"
            };
            let _ = writeln!(
                s,
                " *   {:<12} {what} {}",
                self.names.get(&i.name),
                show_shape(&i.shape)
            );
            if let Some(offset) = storage_offset(i) {
                let coords: Vec<String> = (0..i.shape.len()).map(|d| format!("i{d}")).collect();
                let _ = writeln!(
                    s,
                    " *   {:<12}   (`layout`: the program's element ({}) of {} is at {offset})",
                    "",
                    coords.join(", "),
                    show_shape(&i.program_shape()),
                );
            }
        }
        let _ = writeln!(
            s,
            " *   {:<12} output, shape {}",
            self.names.get(&k.output.name),
            show_shape(&k.output.shape)
        );
        s.push_str(
            " *\n * The kernel writes every element of the output (it need not be zeroed);\n",
        );
        s.push_str(" * the output must not overlap any input.\n");
        s.push_str(&status_list(k));
        if heap_allocates(k) {
            s.push_str(" * Temporaries are allocated with malloc/calloc; the kernel aborts if an\n * allocation fails.\n");
        }
        if header {
            let f = set_threads_symbol(&self.symbol);
            let mut parallel = false;
            k.walk(&mut |st| parallel |= matches!(st, Stmt::For(l) if l.parallel));
            if parallel {
                let _ = write!(
                    s,
                    " *\n * Threads (with OpenMP): {f}(n) below, else OpenMP's default\n \
                     * (OMP_NUM_THREADS, or the caller's omp_set_num_threads).\n"
                );
            } else {
                s.push_str(" *\n * Threads: the kernel has no parallel loop; it runs in the calling thread.\n");
            }
            let sym = &self.symbol;
            // Strict needs its flag on every build; fast is GNU C's default.
            let fp = match self.fp {
                Fp::Fast => String::new(),
                Fp::Strict => format!(" {}", self.fp.contract_flag()),
            };
            let builds = [
                (
                    format!("cc -O3 -march=native{fp} -fopenmp -c {sym}.c"),
                    "threads, SIMD",
                ),
                (
                    format!("cc -O3 -march=native{fp} -fopenmp-simd -c {sym}.c"),
                    "SIMD",
                ),
                (
                    format!("cc -O3 -march=native{fp} -c {sym}.c"),
                    "SIMD (hints)",
                ),
            ];
            let width = builds.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
            s.push_str(" *\n * Build (C99; -march=native: for this machine), one of:\n");
            for (command, what) in &builds {
                let _ = writeln!(s, " *   {command:<width$}  {what}");
            }
            s.push_str(
                " * Link: with -fopenmp when compiled with it (GCC: libgomp, -lgomp; Clang:\n \
                 * libomp, -lomp); ",
            );
            s.push_str(if self.uses_libm() {
                "and with -lm: the kernel calls the C math library (sqrt, exp, log,\n * fabs).\n"
            } else {
                "nothing else (the kernel calls no libm function, so -lm\n * is not needed).\n"
            });
        }
        if let Some(bits) = self.kernel.vector_width {
            let _ = write!(
                s,
                " * Vector width (`vector_width {bits}`): GCC on x86 prefers {bits}-bit vectors in\n \
                 * this kernel (`#pragma GCC target(\"prefer-vector-width={bits}\")`, as\n \
                 * -mprefer-vector-width={bits} would); other compilers ignore it.\n"
            );
        }
        s.push_str(match self.fp {
            Fp::Fast => {
                " * Floating point (--fp fast): multiply-adds may be fused (-ffp-contract=fast,\n \
                 * GNU C's default; add it under -std=c99), so results may differ in the last\n \
                 * bits from the interpreter's and between kernels of exact derivations.\n"
            }
            Fp::Strict => {
                " * Floating point (--fp strict): compile with -ffp-contract=off for results\n \
                 * bit-identical to other strict kernels of exact derivations.\n"
            }
        });
        s.push_str(" */\n");
        s
    }

    /// Whether the kernel calls a function of the C math library (a scalar function
    /// printed as a libm call).
    fn uses_libm(&self) -> bool {
        !self.libm_functions().is_empty()
    }

    /// The scalar functions the kernel calls that are printed as libm calls, in the
    /// table's order.
    fn libm_functions(&self) -> Vec<ScalarFn> {
        let mut found = std::collections::BTreeSet::new();
        self.kernel.walk(&mut |st| {
            let mut look = |v: &Val| {
                v.visit(&mut |n| {
                    if let Val::Call(f, _) = n
                        && f.c_name(false).is_some()
                    {
                        found.insert(f.name());
                    }
                })
            };
            match st {
                Stmt::Store { value, .. } | Stmt::SetScalar { value, .. } => look(value),
                Stmt::Decl { init: Some(v), .. } => look(v),
                _ => {}
            }
        });
        ScalarFn::named()
            .filter(|f| found.contains(f.name()))
            .collect()
    }

    /// Under `--fp fast`, the functions that glibc's vector math library (libmvec,
    /// glibc 2.22 and later on x86-64) computes in SIMD loops are declared with GCC's
    /// `simd` attribute, as glibc's own headers do under `-ffast-math`: GCC then calls
    /// their vector variants (`_ZGVeN16v_expf`, …) in the loops it vectorizes, which
    /// `-lm` links. They are not libm's scalar functions (a few ulp apart:
    /// docs/integration.md gives the measured error), so strict kernels keep the
    /// scalar calls, and `ATL_NO_LIBMVEC` turns the declarations off.
    fn vector_math(&self) -> String {
        let vector: Vec<ScalarFn> = self
            .libm_functions()
            .into_iter()
            .filter(|f| f.in_libmvec())
            .collect();
        if self.fp == Fp::Strict || vector.is_empty() {
            return String::new();
        }
        let (c_type, double) = match self.dtype {
            Dtype::F64 => ("double", true),
            Dtype::F32 => ("float", false),
        };
        let names: Vec<&str> = vector.iter().filter_map(|f| f.c_name(double)).collect();
        let mut s = format!(
            "/* {} in SIMD loops: glibc's vector math library (libmvec, linked by -lm),\n   \
             a few ulp from libm's scalar functions (--fp fast). GCC only; define\n   \
             ATL_NO_LIBMVEC for the scalar functions everywhere. */\n\
             #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) \\\n    \
             && defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 22) \\\n    \
             && !defined(ATL_NO_LIBMVEC)\n",
            names.join(", ")
        );
        for name in names {
            let _ = writeln!(
                s,
                "__attribute__((__simd__(\"notinbranch\"))) {c_type} {name}({c_type});"
            );
        }
        s.push_str("#endif\n");
        s
    }

    /// The header: include guard, the prototype, `extern "C"` for C++.
    pub(crate) fn header(&self) -> String {
        // The symbol as it is (two symbols differing only in case get two guards).
        let guard: String = format!("ATL__{}_H", self.symbol);
        let mut s = self.doc(true);
        let _ = writeln!(s, "#ifndef {guard}\n#define {guard}\n");
        s.push_str("#include <stdint.h>\n\n");
        s.push_str("#ifdef __cplusplus\n#define ATL__RESTRICT __restrict\nextern \"C\" {\n#else\n#define ATL__RESTRICT restrict\n#endif\n\n");
        let params = self.params("ATL__RESTRICT");
        let _ = writeln!(
            s,
            "int {}({});\n",
            self.symbol,
            params.join(&format!(",\n{}", " ".repeat(self.symbol.len() + 5)))
        );
        let _ = writeln!(
            s,
            "/* Threads of later calls of {sym}: n >= 1 uses n threads in its parallel loops,\n   \
             n <= 0 restores OpenMP's default (OMP_NUM_THREADS, or omp_set_num_threads of\n   \
             the calling thread). Affects only this kernel, never the OpenMP settings of\n   \
             the rest of the program; does nothing when the kernel was compiled without\n   \
             OpenMP. Not to be called while {sym} runs in another thread. */\n\
             void {f}(int n);\n",
            sym = self.symbol,
            f = set_threads_symbol(&self.symbol)
        );
        s.push_str("#ifdef __cplusplus\n}\n#endif\n\n");
        let _ = writeln!(s, "#endif /* {guard} */");
        s
    }

    /// The entry checks of the index arrays (`Kernel::array_checks`), numbered as
    /// [`array_statuses`] says (after the preconditions; the header and the bindings
    /// read the numbers from there too): one pass over each array, reading it and
    /// writing nothing, that returns its number at the first element outside the
    /// declared range (or, when `sorted`, below the one before it).
    fn array_checks(&self) -> String {
        let mut s = String::new();
        // Both list the index arrays in input order.
        let statuses = array_statuses(self.kernel);
        for (check, a) in self.kernel.array_checks().into_iter().zip(&statuses) {
            let status = a.status;
            // A declaration without a target form has no check: lowering and the
            // validator refuse such a kernel; were one printed, it fails at once.
            let Some(c) = check else {
                let _ = writeln!(s, "  return {status};");
                continue;
            };
            // Its range is checked where the body reads it (`Stmt::Fail`).
            if c.where_read {
                continue;
            }
            let a = self.names.get(&c.buf);
            let _ = writeln!(
                s,
                "  /* Index array `{a}`: its declared range{}. */",
                if c.sorted { " and order" } else { "" }
            );
            let (len, lo, hi) = (self.ix(&c.len), self.ix(&c.lo), self.ix(&c.hi));
            // Reductions without early exits, so that the compiler vectorizes them:
            // the check costs one streaming pass over the array (two when sorted).
            let _ = writeln!(
                s,
                "  {{\n    int32_t atl__lo = INT32_MAX, atl__hi = INT32_MIN;\n    \
                 int atl__bad = 0;\n    \
                 for (int64_t atl__k = 0; atl__k < {len}; atl__k++) {{\n      \
                 int32_t atl__x = {a}[atl__k];\n      \
                 atl__lo = atl__x < atl__lo ? atl__x : atl__lo;\n      \
                 atl__hi = atl__x > atl__hi ? atl__x : atl__hi;\n    }}"
            );
            if c.sorted {
                let _ = writeln!(
                    s,
                    "    for (int64_t atl__k = 1; atl__k < {len}; atl__k++)\n      \
                     atl__bad |= {a}[atl__k - 1] > {a}[atl__k];"
                );
            }
            let _ = writeln!(
                s,
                "    if (atl__bad || ({len} > 0 && !({lo} <= (int64_t)atl__lo && (int64_t)atl__hi < {hi})))\n      \
                 return {status};"
            );
            s.push_str("  }\n");
        }
        s
    }

    /// The implementation. The entry checks and the body are printed first, so that
    /// the preamble (headers, helpers, macros) is exactly what they need.
    pub(crate) fn source(mut self) -> String {
        let k = self.kernel;
        let checks: Vec<String> = k.preconditions.iter().map(|p| self.cond(&p.cond)).collect();
        let array_checks = self.array_checks();
        self.out.clear();
        for st in &k.body {
            self.stmt(st, 1);
        }
        let body = std::mem::take(&mut self.out);
        let needs = self.needs.borrow().clone();
        let mut s = self.doc(false);
        s.push_str("#include <stdint.h>\n");
        if needs.contains(&Need::Alloc) {
            s.push_str("#include <stdlib.h>\n");
        }
        if needs.contains(&Need::Math) {
            s.push_str("#include <math.h>\n");
            s.push_str(&self.vector_math());
        }
        if needs.contains(&Need::Threads) {
            s.push_str("#ifdef _OPENMP\n#include <omp.h>\n#endif\n");
        }
        s.push('\n');
        // After the system headers and before the helpers, so that they and the kernel
        // (OpenMP's outlined regions too) share the target options and still inline.
        let vector_width = self.kernel.vector_width.map(|bits| {
            (
                format!(
                    "#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))\n\
                     #pragma GCC push_options\n\
                     #pragma GCC target(\"prefer-vector-width={bits}\")\n\
                     #endif\n\n"
                ),
                "\n#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))\n\
                 #pragma GCC pop_options\n\
                 #endif\n",
            )
        });
        if let Some((push, _)) = &vector_width {
            s.push_str(push);
        }
        s.push_str(&self.helpers(&needs));
        s.push_str(&self.set_threads(needs.contains(&Need::Threads)));
        let params = self.params("restrict");
        let _ = writeln!(
            s,
            "int {}({})\n{{",
            self.symbol,
            params.join(&format!(",\n{}", " ".repeat(self.symbol.len() + 5)))
        );
        if !checks.is_empty() {
            // One `if` per precondition, in order: each is evaluated only when the
            // earlier ones hold (so none overflows), and its number is the status.
            s.push_str(
                "  /* Preconditions, in order: with invalid sizes, touch no memory and\n     \
                 return the number of the first that fails. */\n",
            );
            for (n, c) in checks.iter().enumerate() {
                let _ = writeln!(s, "  if (!({c}))\n    return {};", n + 1);
            }
        }
        s.push_str(&array_checks);
        // Parameters the body never reads (a size no extent mentions, an input only a
        // discarded subterm read) are still part of the ABI.
        let used = used_names(k);
        let unused: Vec<&str> = k
            .sizes
            .iter()
            .chain(k.inputs.iter().map(|i| &i.name))
            .chain(std::iter::once(&k.output.name))
            .filter(|n| !used.contains(n.as_str()))
            .map(String::as_str)
            .collect();
        for n in unused {
            let _ = writeln!(s, "  (void){};", self.names.get(n));
        }
        // Index arrays checked where they are read: the body records a broken value's
        // status and the kernel returns it at the end.
        let fails = fails(k);
        if fails {
            s.push_str("  int atl__status = 0;\n");
        }
        s.push_str(&body);
        s.push_str(if fails {
            "  return atl__status;\n}\n"
        } else {
            "  return 0;\n}\n"
        });
        if let Some((_, pop)) = vector_width {
            s.push_str(pop);
        }
        s
    }

    /// `SYMBOL_set_threads`, defined by every kernel, and the thread count its
    /// parallel regions ask for (`parallel`: it has some). A file-scope variable rather
    /// than `omp_set_num_threads`, which would change the calling thread's default for
    /// every other parallel region of the host application.
    fn set_threads(&self, parallel: bool) -> String {
        let f = set_threads_symbol(&self.symbol);
        if !parallel {
            return format!(
                "/* The kernel has no parallel loop: setting its threads changes nothing. */\n\
                 void {f}(int n)\n{{\n  (void)n;\n}}\n\n"
            );
        }
        format!(
            "/* The threads of the kernel's parallel loops: set by {f} (0: OpenMP's\n   \
             default, from OMP_NUM_THREADS or omp_set_num_threads). Without OpenMP the\n   \
             kernel is sequential and {f} does nothing. */\n\
             #ifdef _OPENMP\n\
             static int atl__nthreads = 0;\n\n\
             static int atl__threads(void)\n{{\n  \
             return atl__nthreads > 0 ? atl__nthreads : omp_get_max_threads();\n}}\n\
             #endif\n\n\
             void {f}(int n)\n{{\n\
             #ifdef _OPENMP\n  atl__nthreads = n > 0 ? n : 0;\n#else\n  (void)n;\n#endif\n}}\n\n"
        )
    }

    /// Records that the code printed needs `n`.
    fn need(&self, n: Need) {
        self.needs.borrow_mut().insert(n);
    }

    /// The helper functions the printed code uses (`needs`), and only those.
    fn helpers(&self, needs: &BTreeSet<Need>) -> String {
        let mut s = String::new();
        if needs.contains(&Need::FloorDiv) {
            s.push_str(
                r#"/* Floor division with a / 0 = 0 (ATL's index arithmetic, DESIGN §3.2). */
static inline int64_t atl__floordiv(int64_t a, int64_t b)
{
  if (b == 0)
    return 0;
  if (b == -1)
    return a == INT64_MIN ? a : -a;
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0)))
    q -= 1;
  return q;
}

"#,
            );
        }
        if needs.contains(&Need::FloorMod) {
            s.push_str(
                r#"/* Floor modulo with a % 0 = a: the sign of the result follows the divisor. */
static inline int64_t atl__floormod(int64_t a, int64_t b)
{
  if (b == 0)
    return a;
  if (b == -1)
    return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0)))
    r += b;
  return r;
}

"#,
            );
        }
        if needs.contains(&Need::CeilDiv) {
            s.push_str(
                r#"/* Ceiling division cdiv(a, b) = -((-a) / b), with cdiv(a, 0) = 0. */
static inline int64_t atl__cdiv(int64_t a, int64_t b)
{
  if (b == 0)
    return 0;
  if (b == -1)
    return a == INT64_MIN ? a : -a;
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) == (b < 0)))
    q += 1;
  return q;
}

"#,
            );
        }
        if needs.contains(&Need::Min) {
            s.push_str(
                "static inline int64_t atl__min(int64_t a, int64_t b)\n{\n  return a < b ? a : b;\n}\n\n",
            );
        }
        if needs.contains(&Need::Max) {
            s.push_str(
                "static inline int64_t atl__max(int64_t a, int64_t b)\n{\n  return a > b ? a : b;\n}\n\n",
            );
        }
        for (need, name, op) in [
            (Need::ValueMax, "atl__vmax", ">"),
            (Need::ValueMin, "atl__vmin", "<"),
        ] {
            if needs.contains(&need) {
                // ATL's `max(a, b)` is `a > b ? a : b` (`atl_lang::functions`), which
                // is not `fmax` when an operand is NaN.
                let _ = write!(
                    s,
                    "static inline {t} {name}({t} a, {t} b)\n{{\n  return a {op} b ? a : b;\n}}\n\n",
                    t = self.t()
                );
            }
        }
        if needs.contains(&Need::Blend) {
            // Masking the bits rather than `c ? v : 0`: GCC does not if-convert the
            // latter inside a loop (it sees control flow), while the mask becomes a
            // vector `and`. Exact: the result is `v` bit for bit, or +0.0.
            let bits = match self.dtype {
                Dtype::F32 => "uint32_t",
                Dtype::F64 => "uint64_t",
            };
            let helper = "/* `c ? v : 0`, with `v` computed whatever `c` (all its loads are in\n   \
                          bounds regardless), branch-free so that loops using it vectorize. */\n\
                          static inline ELEM atl__blend(int c, ELEM v)\n{\n  \
                          union { ELEM f; BITS u; } x;\n  x.f = v;\n  x.u &= -(BITS)(c != 0);\n  \
                          return x.f;\n}\n\n";
            s.push_str(&helper.replace("ELEM", self.t()).replace("BITS", bits));
        }
        if needs.contains(&Need::Pragmas) {
            // Without OpenMP the vector loops keep a vectorization hint: GCC's `ivdep`
            // alone is not enough, since its early complete unrolling of a short
            // constant loop (cunrolli, which spares `omp simd` loops) runs before the
            // loop vectorizer and leaves straight-line code it no longer vectorizes
            // (the matmul tile: 22x slower); `unroll 1` keeps the loop for it.
            // Measured by bench/no_openmp.sh. The hints are pragmas every GCC and
            // Clang knows, so `-Wall -Werror` without OpenMP stays quiet.
            s.push_str(
                "/* Loop annotations. ATL__OMP: OpenMP pragmas when compiled with OpenMP\n   \
                 (-fopenmp); the kernel is sequential otherwise. ATL__SIMD: a loop to\n   \
                 vectorize, `omp simd` with OpenMP, otherwise the compiler's own hint\n   \
                 (ATL__VEC, also on a parallel loop whose `omp ... simd` pragma vanished).\n   \
                 ATL__UNROLL: unrolling hints for GCC and Clang. */\n\
                 #ifdef _OPENMP\n\
                 #define ATL__OMP(x) _Pragma(#x)\n\
                 #define ATL__SIMD _Pragma(\"omp simd\")\n\
                 #define ATL__VEC\n\
                 #else\n\
                 #define ATL__OMP(x)\n\
                 #if defined(__clang__)\n\
                 #define ATL__VEC _Pragma(\"clang loop vectorize(enable) interleave(enable)\")\n\
                 #elif defined(__GNUC__) && !defined(__INTEL_COMPILER)\n\
                 #define ATL__VEC _Pragma(\"GCC ivdep\") _Pragma(\"GCC unroll 1\")\n\
                 #else\n\
                 #define ATL__VEC\n\
                 #endif\n\
                 #define ATL__SIMD ATL__VEC\n\
                 #endif\n\
                 #if defined(__GNUC__) && !defined(__INTEL_COMPILER)\n#define ATL__UNROLL(x) _Pragma(#x)\n\
                 #else\n#define ATL__UNROLL(x)\n#endif\n\n",
            );
        }
        if needs.contains(&Need::Alloc) {
            let helper = r#"/* A temporary of n elements (at least one, so that malloc(0) is never asked);
   aborts when memory is exhausted rather than writing through NULL. */
static ELEM *atl__alloc(int64_t n, int zeroed)
{
  size_t count = n > 0 ? (size_t)n : 1;
  if (count > SIZE_MAX / sizeof(ELEM))
    abort();
  void *p = zeroed ? calloc(count, sizeof(ELEM)) : malloc(count * sizeof(ELEM));
  if (p == NULL)
    abort();
  return (ELEM *)p;
}

"#;
            s.push_str(&helper.replace("ELEM", self.t()));
        }
        s
    }

    fn indent(&mut self, depth: usize) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
    }

    fn block(&mut self, stmts: &[Stmt], depth: usize) {
        for s in stmts {
            self.stmt(s, depth);
        }
    }

    fn stmt(&mut self, s: &Stmt, depth: usize) {
        match s {
            Stmt::For(l) => {
                if l.hoisted_buffers.is_empty() {
                    self.for_loop(l, depth, false);
                    return;
                }
                let bufs = &l.hoisted_buffers;
                // Temporaries of the loop's body allocated once around it (per thread
                // when it is parallel: the loop becomes the worksharing loop of a
                // parallel region); see `atl_lower`'s placement of temporaries.
                let v = self.names.get(&l.var).to_string();
                if l.parallel {
                    self.indent(depth);
                    self.out
                        .push_str("ATL__OMP(omp parallel num_threads(atl__threads()))\n");
                    self.need(Need::Pragmas);
                    self.need(Need::Threads);
                }
                self.indent(depth);
                let whose = if l.parallel { "each thread's" } else { "the" };
                let _ = writeln!(
                    self.out,
                    "{{ /* {whose} temporaries of the loop over {v}, allocated at first use */"
                );
                let t = self.t();
                for b in bufs {
                    let b = self.names.get(b).to_string();
                    self.indent(depth + 1);
                    let _ = writeln!(self.out, "{t} *restrict {b} = NULL;");
                }
                self.for_loop(l, depth + 1, l.parallel);
                for b in bufs {
                    let b = self.names.get(b).to_string();
                    self.indent(depth + 1);
                    let _ = writeln!(self.out, "free({b});");
                }
                self.indent(depth);
                self.out.push_str("}\n");
            }
            Stmt::If {
                cond,
                then_branch,
                else_branch,
            } => {
                let c = self.cond(cond);
                self.indent(depth);
                let _ = writeln!(self.out, "if ({c}) {{");
                self.block(then_branch, depth + 1);
                self.indent(depth);
                if else_branch.is_empty() {
                    self.out.push_str("}\n");
                } else {
                    self.out.push_str("} else {\n");
                    self.block(else_branch, depth + 1);
                    self.indent(depth);
                    self.out.push_str("}\n");
                }
            }
            Stmt::Alloc {
                buf,
                shape,
                len,
                zeroed,
                storage,
                body,
                ..
            } => {
                let b = self.names.get(buf).to_string();
                let t = self.t();
                // A stack array's length is a constant (the loop-IR interpreter
                // rejects any other; one that slipped through is printed as a heap
                // allocation, which is correct whatever the length).
                if let (Storage::Stack, Ix::Const(n)) = (storage, len) {
                    // A small constant-size temporary (a register tile) lives on the
                    // stack: no allocation per iteration, and the compiler may keep
                    // it in registers.
                    self.indent(depth);
                    let _ = writeln!(self.out, "{{ /* {b}: {} */", show_shape(shape));
                    self.indent(depth + 1);
                    let init = if *zeroed { " = {0}" } else { "" };
                    // `(void)` because a dead `let` may leave it written but never read.
                    let _ = writeln!(self.out, "{t} {b}[{}]{init};", n.max(&1));
                    self.indent(depth + 1);
                    let _ = writeln!(self.out, "(void){b};");
                    self.block(body, depth + 1);
                    self.indent(depth);
                    self.out.push_str("}\n");
                    return;
                }
                let n = self.ix(len);
                if let Storage::Hoisted {
                    loop_var,
                    per_thread,
                } = storage
                {
                    // Declared (as NULL) around the loop over `loop_var`: allocated at
                    // the first execution, reused after (zeroed again if zeroed).
                    let v = self.names.get(loop_var).to_string();
                    let whose = if *per_thread { "this thread's" } else { "one" };
                    self.indent(depth);
                    let _ = writeln!(
                        self.out,
                        "{{ /* {b}: {}, {whose} buffer for the loop over {v} */",
                        show_shape(shape)
                    );
                    self.indent(depth + 1);
                    let _ = writeln!(self.out, "if ({b} == NULL)");
                    self.indent(depth + 2);
                    let _ = writeln!(self.out, "{b} = atl__alloc({n}, {});", i32::from(*zeroed));
                    self.need(Need::Alloc);
                    if *zeroed {
                        // Reused: zeroed again, as a fresh zeroed buffer would be.
                        self.indent(depth + 1);
                        self.out.push_str("else\n");
                        let fill = Stmt::Fill {
                            buf: buf.clone(),
                            len: len.clone(),
                            value: 0.0,
                        };
                        self.stmt(&fill, depth + 2);
                    }
                    self.block(body, depth + 1);
                    self.indent(depth);
                    self.out.push_str("}\n");
                    return;
                }
                self.indent(depth);
                let _ = writeln!(self.out, "{{ /* {b}: {} */", show_shape(shape));
                self.indent(depth + 1);
                let _ = writeln!(
                    self.out,
                    "{t} *restrict {b} = atl__alloc({n}, {});",
                    i32::from(*zeroed)
                );
                self.need(Need::Alloc);
                self.block(body, depth + 1);
                self.indent(depth + 1);
                let _ = writeln!(self.out, "free({b});");
                self.indent(depth);
                self.out.push_str("}\n");
            }
            Stmt::Decl { name, init } => {
                let n = self.names.get(name).to_string();
                // Declarations are always initialized: C compilers cannot always see
                // that every path assigns before reading, and it costs nothing.
                let v = match init {
                    Some(v) => self.val(v, 0),
                    None => self.lit(0.0),
                };
                let t = self.t();
                self.indent(depth);
                let _ = writeln!(self.out, "{t} {n} = {v};");
            }
            Stmt::SetScalar { name, op, value } => {
                let n = self.names.get(name).to_string();
                let v = self.val(value, 0);
                self.indent(depth);
                if *op == StoreOp::Max {
                    // A max-reduction's step, with the `max` of the scalar functions.
                    self.need(Need::ValueMax);
                    let _ = writeln!(self.out, "{n} = atl__vmax({n}, {v});");
                } else {
                    let _ = writeln!(self.out, "{n} {} {v};", op_str(*op));
                }
            }
            Stmt::Store {
                buf,
                index,
                op,
                value,
                ..
            } => {
                let b = self.names.get(buf).to_string();
                let i = self.ix(index);
                let v = self.val(value, 0);
                self.indent(depth);
                if *op == StoreOp::Max {
                    self.need(Need::ValueMax);
                    let _ = writeln!(self.out, "{b}[{i}] = atl__vmax({b}[{i}], {v});");
                } else {
                    let _ = writeln!(self.out, "{b}[{i}] {} {v};", op_str(*op));
                }
            }
            Stmt::Fail { array } => {
                // The status is the array's. In a parallel loop each thread writes its
                // own copy (the loop's `reduction(max: atl__status)`, `pragmas`), and
                // the largest status recorded is returned. A plain write, not an
                // atomic one: an atomic write in the loop body kept gcc from
                // optimizing a CSR product's row loop (2.05-2.11 against 1.86-1.93
                // ms at 200000 rows, one thread, Intel Xeon, a C driver).
                let status = array_statuses(self.kernel)
                    .into_iter()
                    .find(|a| &a.array == array)
                    .map_or(i32::MAX, |a| a.status);
                self.indent(depth);
                let _ = writeln!(self.out, "atl__status = {status};");
            }
            Stmt::Fill { buf, len, value } => {
                let b = self.names.get(buf).to_string();
                let n = self.ix(len);
                let v = self.lit(*value);
                self.indent(depth);
                let _ = writeln!(
                    self.out,
                    "for (int64_t atl__k = 0; atl__k < {n}; ++atl__k)\n{}  {b}[atl__k] = {v};",
                    "  ".repeat(depth)
                );
            }
        }
    }

    /// A `for` loop with its pragmas; `in_region`: the loop is the worksharing loop
    /// of a parallel region already opened around it.
    fn for_loop(&mut self, l: &For, depth: usize, in_region: bool) {
        let v = self.names.get(&l.var).to_string();
        let (lo, hi) = (self.ix(&l.lo), self.ix(&l.hi));
        self.pragmas(l, depth, in_region);
        self.indent(depth);
        let _ = writeln!(self.out, "for (int64_t {v} = {lo}; {v} < {hi}; ++{v}) {{");
        self.block(&l.body, depth + 1);
        self.indent(depth);
        self.out.push_str("}\n");
    }

    /// OpenMP and unrolling pragmas for an annotated loop (see `atl_lower`'s
    /// annotations; without OpenMP the `omp` pragmas vanish and the kernel is the
    /// same sequential code, its vector loops keeping the compiler's vectorization
    /// hint: `ATL__SIMD`, or `ATL__VEC` under a parallel `simd` pragma). A loop marked
    /// [`For::collapse`] (by the annotation pass) is collapsed with its inner loop.
    /// `in_region`: a parallel loop is the worksharing `omp for` of a region already
    /// opened around it (its [`For::hoisted_buffers`]).
    fn pragmas(&mut self, l: &For, depth: usize, in_region: bool) {
        // OpenMP wants one directive per loop: a loop that is both parallel and
        // vector gets the combined `parallel for simd`, and a collapsed inner loop
        // carries no directive of its own (so it is only collapsed when it has none).
        let line = if l.parallel {
            let collapse = if l.collapse { " collapse(2)" } else { "" };
            // With `simd`, the `simd:` modifier keeps guided chunks whole vectors.
            let (simd, kind) = if l.vector {
                (" simd", "simd: guided")
            } else {
                ("", "guided")
            };
            // `guided`, not `static`: on time-shared vCPUs a static partition makes the
            // call as slow as its slowest thread, while guided chunks (large first,
            // shrinking) let a thread that kept its CPU take over the rest. Measured in
            // the bench kit at 2 threads: equal or faster on all four workloads (conv1d
            // 2.17 vs 2.42 ms, blur 1.61 vs 1.66 ms); no change at 1 thread.
            // The region's thread count is the one `SYMBOL_set_threads` chose.
            let (parallel, threads) = if in_region {
                ("", "")
            } else {
                self.need(Need::Threads);
                ("parallel ", " num_threads(atl__threads())")
            };
            // Without OpenMP the `simd` of the pragma vanishes with it: the loop keeps
            // the compiler's vectorization hint.
            let vec = if l.vector { "\nATL__VEC" } else { "" };
            // A loop that may record a broken index-array value: each thread records
            // into its own status, the largest kept.
            let reduction = if records_failure(&l.body) {
                " reduction(max: atl__status)"
            } else {
                ""
            };
            Some(format!(
                "ATL__OMP(omp {parallel}for{simd}{collapse}{threads}{reduction} schedule({kind})){vec}"
            ))
        } else if l.vector {
            Some("ATL__SIMD".to_string())
        } else if let (true, Ix::Const(lo), Ix::Const(hi)) = (l.unroll, &l.lo, &l.hi) {
            Some(format!("ATL__UNROLL(GCC unroll {})", hi - lo))
        } else {
            None
        };
        if let Some(line) = line {
            self.need(Need::Pragmas);
            for line in line.lines() {
                self.indent(depth);
                self.out.push_str(line);
                self.out.push('\n');
            }
        }
    }

    fn lit(&self, x: f64) -> String {
        let suffix = if self.dtype == Dtype::F32 { "f" } else { "" };
        if !x.is_finite() {
            self.need(Need::Math);
        }
        if x.is_nan() {
            return format!("(({})NAN)", self.t());
        }
        if x.is_infinite() {
            let sign = if x < 0.0 { "-" } else { "" };
            return format!("({sign}({})INFINITY)", self.t());
        }
        // `{:?}` is the shortest text that reads back as the same f64; it always has
        // a `.` or an exponent, so it is a floating constant in C as well.
        let text = format!("{x:?}");
        if x.is_sign_negative() {
            format!("({text}{suffix})")
        } else {
            format!("{text}{suffix}")
        }
    }

    fn ix(&self, ix: &Ix) -> String {
        let mut s = String::new();
        self.write_ix(&mut s, ix, 0);
        s
    }

    fn write_ix(&self, out: &mut String, ix: &Ix, min: u8) {
        let prec = match ix {
            Ix::Const(c) if *c < 0 => 3,
            Ix::Const(_) | Ix::Var(_) => 4,
            Ix::Neg(_) | Ix::Load(..) => 3,
            Ix::Bin(op, ..) => match op {
                IxOp::Add | IxOp::Sub => 1,
                IxOp::Mul | IxOp::DivNat | IxOp::ModNat => 2,
                _ => 4,
            },
        };
        if prec < min {
            out.push('(');
            self.write_ix(out, ix, 0);
            out.push(')');
            return;
        }
        match ix {
            Ix::Const(c) => {
                // Small constants are `int`s, converted to `int64_t` by the usual
                // arithmetic conversions; larger ones need the macro.
                if *c == i64::MIN {
                    out.push_str("INT64_MIN");
                } else if i32::try_from(*c).is_ok() {
                    let _ = write!(out, "{c}");
                } else {
                    let _ = write!(out, "INT64_C({c})");
                }
            }
            Ix::Var(v) => out.push_str(self.names.get(v)),
            Ix::Load(array, a) => {
                // An `int32_t` element, widened for the index arithmetic around it.
                let _ = write!(out, "(int64_t){}[", self.names.get(array));
                self.write_ix(out, a, 0);
                out.push(']');
            }
            Ix::Neg(a) => {
                out.push('-');
                self.write_ix(out, a, 4);
            }
            Ix::Bin(op, a, b) => {
                let call = match op {
                    IxOp::FloorDiv => Some(("atl__floordiv", Need::FloorDiv)),
                    IxOp::FloorMod => Some(("atl__floormod", Need::FloorMod)),
                    IxOp::CeilDiv => Some(("atl__cdiv", Need::CeilDiv)),
                    IxOp::Min => Some(("atl__min", Need::Min)),
                    IxOp::Max => Some(("atl__max", Need::Max)),
                    _ => None,
                };
                if let Some((f, need)) = call {
                    self.need(need);
                    let _ = write!(out, "{f}(");
                    self.write_ix(out, a, 0);
                    out.push_str(", ");
                    self.write_ix(out, b, 0);
                    out.push(')');
                    return;
                }
                let sym = match op {
                    IxOp::Add => "+",
                    IxOp::Sub => "-",
                    IxOp::Mul => "*",
                    IxOp::DivNat => "/",
                    _ => "%",
                };
                self.write_ix(out, a, prec);
                let _ = write!(out, " {sym} ");
                self.write_ix(out, b, prec + 1);
            }
        }
    }

    fn cond(&self, c: &Cond) -> String {
        let mut s = String::new();
        self.write_cond(&mut s, c, 0);
        s
    }

    fn write_cond(&self, out: &mut String, c: &Cond, min: u8) {
        let prec = match c {
            Cond::Or(..) => 1,
            Cond::And(..) => 2,
            Cond::Not(_) => 3,
            Cond::Cmp(..) | Cond::Bool(_) => 4,
        };
        if prec < min {
            out.push('(');
            self.write_cond(out, c, 0);
            out.push(')');
            return;
        }
        match c {
            Cond::Bool(b) => out.push_str(if *b { "1" } else { "0" }),
            Cond::Cmp(op, a, b) => {
                self.write_ix(out, a, 0);
                let _ = write!(out, " {} ", op.symbol());
                self.write_ix(out, b, 0);
            }
            Cond::And(a, b) => {
                self.write_cond(out, a, 2);
                out.push_str(" && ");
                self.write_cond(out, b, 3);
            }
            // A conjunction inside a disjunction is parenthesized, as gcc's
            // -Wparentheses asks (lowering's reads of index arrays under their bounds
            // are `(inside && P) || (!inside && P0)`).
            Cond::Or(a, b) => {
                self.write_cond(out, a, if matches!(**a, Cond::Or(..)) { 1 } else { 3 });
                out.push_str(" || ");
                self.write_cond(out, b, 3);
            }
            Cond::Not(a) => {
                out.push_str("!(");
                self.write_cond(out, a, 0);
                out.push(')');
            }
        }
    }

    /// A scalar expression; parenthesized when its precedence is below `min`.
    fn val(&self, v: &Val, min: u8) -> String {
        let prec = match v {
            Val::Select(..) => 0,
            Val::Blend(..) => 4,
            Val::Bin(BinOp::Add | BinOp::Sub, ..) => 1,
            Val::Bin(..) => 2,
            Val::Neg(_) => 3,
            Val::Lit(_) | Val::Coord(_) | Val::Scalar(_) | Val::Load(_) | Val::Call(..) => 4,
        };
        let text = match v {
            Val::Lit(x) => self.lit(*x),
            Val::Coord(ix) => format!("(({})({}))", self.t(), self.ix(ix)),
            Val::Scalar(s) => self.names.get(s).to_string(),
            Val::Load(l) => format!("{}[{}]", self.names.get(&l.buf), self.ix(&l.index)),
            Val::Neg(a) => format!("-{}", self.val(a, 4)),
            Val::Bin(op, a, b) => {
                format!(
                    "{} {} {}",
                    self.val(a, prec),
                    op.symbol(),
                    self.val(b, prec + 1)
                )
            }
            Val::Blend(c, a) => {
                // A function call evaluates its arguments first: the value is computed
                // whatever the condition (its loads are in bounds regardless), and the
                // inlined `?:` of two computed values becomes a vector blend.
                self.need(Need::Blend);
                format!("atl__blend({}, {})", self.cond(c), self.val(a, 0))
            }
            Val::Call(func, args) => {
                let args: Vec<String> = args.iter().map(|a| self.val(a, 0)).collect();
                match func {
                    ScalarFn::Max => {
                        self.need(Need::ValueMax);
                        format!("atl__vmax({}, {})", args[0], args[1])
                    }
                    ScalarFn::Min => {
                        self.need(Need::ValueMin);
                        format!("atl__vmin({}, {})", args[0], args[1])
                    }
                    ScalarFn::Select(op) => format!(
                        "(({}) {} ({}) ? {} : {})",
                        args[0],
                        op.symbol(),
                        args[1],
                        args[2],
                        args[3]
                    ),
                    f => {
                        self.need(Need::Math);
                        let name = f.c_name(self.dtype == Dtype::F64).unwrap_or("?");
                        format!("{name}({})", args.join(", "))
                    }
                }
            }
            Val::Select(c, a) => {
                // Only the chosen operand of `?:` is evaluated: the guarded load never
                // happens out of range.
                format!(
                    "{} ? {} : {}",
                    self.cond_in_select(c),
                    self.val(a, 1),
                    self.lit(0.0)
                )
            }
        };
        if prec < min {
            format!("({text})")
        } else {
            text
        }
    }

    fn cond_in_select(&self, c: &Cond) -> String {
        let mut s = String::new();
        // `a || b ? x : y` parses as intended, but parentheses read better.
        if matches!(c, Cond::Cmp(..) | Cond::Bool(_)) {
            self.write_cond(&mut s, c, 0);
            s
        } else {
            self.write_cond(&mut s, c, 0);
            format!("({s})")
        }
    }
}

/// The names the kernel's code refers to: index variables and buffers.
fn used_names(k: &Kernel) -> HashSet<String> {
    fn ix_vars(ix: &Ix, out: &mut HashSet<String>) {
        match ix {
            Ix::Const(_) => {}
            Ix::Var(v) => {
                out.insert(v.clone());
            }
            Ix::Neg(a) => ix_vars(a, out),
            Ix::Load(array, a) => {
                out.insert(array.clone());
                ix_vars(a, out);
            }
            Ix::Bin(_, a, b) => {
                ix_vars(a, out);
                ix_vars(b, out);
            }
        }
    }
    let mut used = HashSet::new();
    for p in &k.preconditions {
        p.cond.visit_ix(&mut |ix| ix_vars(ix, &mut used));
    }
    k.walk(&mut |st| {
        st.visit_own_ix(&mut |ix| ix_vars(ix, &mut used));
        let mut loads = |v: &Val| {
            v.visit(&mut |n| {
                if let Val::Load(l) = n {
                    used.insert(l.buf.clone());
                }
            })
        };
        match st {
            Stmt::Decl { init: Some(v), .. } => loads(v),
            Stmt::SetScalar { value, .. } => loads(value),
            Stmt::Store { buf, value, .. } => {
                loads(value);
                used.insert(buf.clone());
            }
            Stmt::Fill { buf, .. } => {
                used.insert(buf.clone());
            }
            _ => {}
        }
    });
    used
}

/// The status a kernel returns when an index array breaks its declaration (its entry
/// check, [`Kernel::array_checks`], found an element out of the declared range or out
/// of order), with the array and the declaration in the program's syntax.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrayStatus {
    /// What the kernel returns: numbered after the preconditions, in input order.
    pub status: i32,
    /// The input's name in the program.
    pub array: String,
    /// What every element must satisfy, e.g. `0 <= pos[k] < nnz + 1, non-decreasing`.
    pub declaration: String,
    /// Checked where the kernel reads it, after which the output's contents are
    /// unspecified ([`atl_loopir::ir::BufferDecl::checked_where_read`]), not on entry.
    pub where_read: bool,
}

/// The index arrays' statuses, as the header lists them: the one source of their
/// numbers and texts for the header and for the bindings that turn a status back
/// into an error naming the array.
pub fn array_statuses(k: &Kernel) -> Vec<ArrayStatus> {
    k.inputs
        .iter()
        .filter_map(|b| Some((b, b.index_array.as_ref()?)))
        .enumerate()
        .map(|(n, (b, a))| ArrayStatus {
            status: i32::try_from(k.preconditions.len() + n + 1).unwrap_or(i32::MAX),
            array: b.name.clone(),
            declaration: format!(
                "{} <= {}[k] < {}{}",
                a.lo,
                b.name,
                a.hi,
                if a.sorted { ", non-decreasing" } else { "" }
            ),
            where_read: b.checked_where_read,
        })
        .collect()
}

/// The statuses of the kernel, for its documentation comment: 0, then one number per
/// precondition in [`Kernel::preconditions`] order (the order the C checks them), each
/// with its condition in the program's names and what it is for.
fn status_list(k: &Kernel) -> String {
    let mut s = String::from(
        " * Returns 0 when it has written the output. Before touching any memory it\n \
         * checks the sizes, in this order, and returns the number of the first check\n \
         * that fails (reading and writing nothing: the output keeps its contents):\n",
    );
    if k.preconditions.is_empty() {
        s.push_str(" *   (none: the kernel has no condition on its sizes)\n");
    }
    let width = k.preconditions.len().to_string().len();
    for (n, p) in k.preconditions.iter().enumerate() {
        let what = match p.kind {
            PreconditionKind::Size => "a size",
            PreconditionKind::Assume => "the program's assumption",
            PreconditionKind::Amount => "a valid shape",
            PreconditionKind::InputExtent => "a valid input shape",
            PreconditionKind::IndexRange => "int64_t index arithmetic",
        };
        let _ = writeln!(s, " *   {:>width$}  {}  ({what})", n + 1, p.pred);
    }
    let arrays = array_statuses(k);
    let (at_entry, where_read): (Vec<&ArrayStatus>, Vec<&ArrayStatus>) =
        arrays.iter().partition(|a| !a.where_read);
    if !at_entry.is_empty() {
        s.push_str(
            " * Then it reads each index array once, and returns its number when an\n \
             * element breaks the array's declaration (writing nothing):\n",
        );
    }
    for a in &at_entry {
        let _ = writeln!(
            s,
            " *   {:>width$}  {}  (index array)",
            a.status, a.declaration
        );
    }
    if !where_read.is_empty() {
        s.push_str(
            " * These index arrays are checked where the kernel reads them (no pass of\n \
             * their own): when a value it reads breaks the declaration, the kernel uses\n \
             * no such value, finishes, and returns the array's number (the output's\n \
             * contents are then unspecified; a value it never reads is not checked):\n",
        );
    }
    for a in &where_read {
        let _ = writeln!(
            s,
            " *   {:>width$}  {}  (index array, checked where read)",
            a.status, a.declaration
        );
    }
    s.push_str(
        " * The caller guarantees what the kernel cannot check: each pointer points to\n \
         * at least the elements of its shape.\n",
    );
    s
}

/// Whether the body records a broken index-array value ([`Stmt::Fail`]).
fn fails(k: &Kernel) -> bool {
    records_failure(&k.body)
}

/// Whether statements (a kernel's body, a loop's) record a broken index-array value.
fn records_failure(stmts: &[Stmt]) -> bool {
    let mut found = false;
    for s in stmts {
        s.walk(&mut |s| found |= matches!(s, Stmt::Fail { .. }));
    }
    found
}

/// Whether the kernel has a temporary that is not a stack array (printed as one).
fn heap_allocates(k: &Kernel) -> bool {
    let mut found = false;
    k.walk(&mut |s| {
        found |= matches!(s, Stmt::Alloc { storage, len, .. }
            if !(matches!(storage, Storage::Stack) && matches!(len, Ix::Const(_))))
    });
    found
}

fn op_str(op: StoreOp) -> &'static str {
    match op {
        StoreOp::Assign => "=",
        StoreOp::Accumulate => "+=",
        StoreOp::Max => unreachable!("printed as a call of `atl__vmax`"),
    }
}

/// For an input declared with a `layout`, the offset of the program's element
/// `(i0, i1, …)` in the array the kernel receives (`M * i1 + i0` for a column-major
/// `[M, K]`): the header and the bindings document it.
pub fn storage_offset(decl: &atl_lower::ir::BufferDecl) -> Option<IndexExpr> {
    let order = decl.order.as_ref()?;
    let rank = order.len();
    let mut strides = vec![IndexExpr::Const(1); rank];
    for p in (0..rank.saturating_sub(1)).rev() {
        let inner = strides.get(*order.get(p + 1)?)?.clone();
        *strides.get_mut(*order.get(p)?)? = IndexExpr::mul(inner, decl.shape.get(p + 1)?.clone());
    }
    let offset = (0..rank)
        .map(|d| IndexExpr::mul(IndexExpr::var(format!("i{d}")), strides[d].clone()))
        .reduce(IndexExpr::add)
        .unwrap_or(IndexExpr::Const(0));
    Some(atl_lang::poly::normalize(&offset))
}

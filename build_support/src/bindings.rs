//! The Rust bindings of one kernel, as source text for a file in `OUT_DIR` that the
//! user `include!`s: a module named after the C symbol with the raw `extern "C"`
//! declarations (`ffi`), a safe `call` that checks every argument first, `set_threads`,
//! `lengths` and the module's `CallError`; and, beside the module, a function of the
//! symbol's name forwarding to `call` (functions and modules live in different
//! namespaces, so both are named after the kernel).
//!
//! The checks repeat, in Rust and in the same order, what the CLI's runner checks
//! before a call (`atl_lower::check_call`): every precondition of the kernel (sizes at
//! least 1, the index-range bounds, the `assume`s, reshape amounts, input extents)
//! evaluated with checked 64-bit arithmetic and DESIGN §3.2's division conventions (an
//! overflow refuses the call), then each array's length from its shape. Only then is
//! the C function called, so no call through the safe function can make the kernel
//! read or write outside a slice. The C function's own status (0, or the number of the
//! precondition it found broken, having touched nothing) is checked all the same: a
//! non-zero status after the Rust checks passed means the two disagree, a bug of atl,
//! and surfaces as `CallError::Refused` rather than being ignored.
//!
//! An index array (an `int` input) is a `&[i32]` (the C's `int32_t`), its length checked
//! like any input's. Its declaration (range, order) is checked by the kernel itself on
//! entry, in one pass, before it writes anything: the status it then returns becomes
//! `CallError::IndexArray` naming the array and its declaration, from
//! `atl_emit_c::array_statuses`, the list the header prints.

use std::fmt::Write;

use atl_emit_c::Dtype;
use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_lower::Kernel;

/// Rust's keywords (strict and reserved, 2015–2024 editions), which need `r#`.
const RUST_KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "dyn", "else", "enum", "extern", "false",
    "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "static", "struct", "trait", "true", "type", "unsafe", "use", "where",
    "while", "abstract", "become", "box", "do", "final", "macro", "override", "priv", "try",
    "typeof", "unsized", "virtual", "yield",
];

/// Names no raw identifier can spell.
const NOT_RAW: &[&str] = &["self", "Self", "super", "crate", "_"];

/// `name` as a Rust identifier (`r#name` for a keyword), or `None` when Rust cannot
/// spell it at all (`self`, `crate`, …).
pub(crate) fn rust_ident(name: &str) -> Option<String> {
    if NOT_RAW.contains(&name) {
        None
    } else if RUST_KEYWORDS.contains(&name) {
        Some(format!("r#{name}"))
    } else {
        Some(name.to_string())
    }
}

/// What the bindings are generated from.
#[derive(Debug)]
pub(crate) struct BindingSpec<'k> {
    pub kernel: &'k Kernel,
    /// The C symbol.
    pub symbol: &'k str,
    pub dtype: Dtype,
    /// For the leading comment: the `.atl` file, the definition, whether validated.
    pub file: &'k str,
    pub def: &'k str,
    pub validated: bool,
}

/// A string as a Rust string literal.
fn lit(s: &str) -> String {
    format!("{s:?}")
}

/// An index expression as a Rust expression of type `Option<i64>` over the size
/// parameters (all `i64`), through the module's `rt` helpers.
fn ix(e: &IndexExpr, vars: &dyn Fn(&str) -> String) -> String {
    match e {
        IndexExpr::Const(c) => format!("rt::c({c})"),
        IndexExpr::Var(v) => format!("rt::c({})", vars(v)),
        // A metavariable never occurs in a program's kernel; evaluate to an overflow
        // (a refused call) rather than fail the build.
        // Nor does a load: shapes and preconditions are over sizes only.
        IndexExpr::Meta(_) | IndexExpr::Load(..) => "::core::option::Option::None".to_string(),
        IndexExpr::Neg(a) => format!("rt::neg({})", ix(a, vars)),
        IndexExpr::Bin(op, a, b) => {
            let f = match op {
                IndexOp::Add => "add",
                IndexOp::Sub => "sub",
                IndexOp::Mul => "mul",
                IndexOp::Div => "fdiv",
                IndexOp::Mod => "fmod",
                IndexOp::CDiv => "cdiv",
                IndexOp::Min => "min",
                IndexOp::Max => "max",
            };
            format!("rt::{f}({}, {})", ix(a, vars), ix(b, vars))
        }
    }
}

/// A predicate as a Rust expression of type `Option<bool>` (`None`: overflow), with
/// `&&`/`||` short-circuiting left to right as `Pred::eval` does.
fn pred(p: &Pred, vars: &dyn Fn(&str) -> String) -> String {
    match p {
        Pred::Bool(b) => format!("::core::option::Option::Some({b})"),
        Pred::Cmp(op, a, b) => {
            let f = match op {
                CmpOp::Eq => "eq",
                CmpOp::Ne => "ne",
                CmpOp::Lt => "lt",
                CmpOp::Le => "le",
                CmpOp::Gt => "gt",
                CmpOp::Ge => "ge",
            };
            format!("rt::{f}({}, {})", ix(a, vars), ix(b, vars))
        }
        Pred::And(a, b) => format!("rt::and({}, || {})", pred(a, vars), pred(b, vars)),
        Pred::Or(a, b) => format!("rt::or({}, || {})", pred(a, vars), pred(b, vars)),
        Pred::Not(a) => format!("rt::not({})", pred(a, vars)),
    }
}

/// The helpers every bindings module carries (floor division with `a / 0 = 0`, as in
/// `atl_lang::index`).
const RUNTIME: &str = r#"    /// Checked index arithmetic with the language's conventions (floor division,
    /// `a / 0 = 0`, `a % 0 = a`); `None` is an overflow.
    mod rt {
        pub(super) static LOCK: ::std::sync::RwLock<()> = ::std::sync::RwLock::new(());
        pub(super) fn c(v: i64) -> Option<i64> { Some(v) }
        pub(super) fn neg(a: Option<i64>) -> Option<i64> { a?.checked_neg() }
        pub(super) fn add(a: Option<i64>, b: Option<i64>) -> Option<i64> { a?.checked_add(b?) }
        pub(super) fn sub(a: Option<i64>, b: Option<i64>) -> Option<i64> { a?.checked_sub(b?) }
        pub(super) fn mul(a: Option<i64>, b: Option<i64>) -> Option<i64> { a?.checked_mul(b?) }
        pub(super) fn fdiv(a: Option<i64>, b: Option<i64>) -> Option<i64> {
            let (a, b) = (a?, b?);
            if b == 0 {
                return Some(0);
            }
            let q = a.checked_div(b)?;
            if a % b != 0 && ((a < 0) != (b < 0)) { q.checked_sub(1) } else { Some(q) }
        }
        pub(super) fn fmod(a: Option<i64>, b: Option<i64>) -> Option<i64> {
            let (a, b) = (a?, b?);
            if b == 0 {
                return Some(a);
            }
            a.checked_sub(b.checked_mul(fdiv(Some(a), Some(b))?)?)
        }
        pub(super) fn cdiv(a: Option<i64>, b: Option<i64>) -> Option<i64> {
            fdiv(Some(a?.checked_neg()?), b)?.checked_neg()
        }
        pub(super) fn min(a: Option<i64>, b: Option<i64>) -> Option<i64> { Some(a?.min(b?)) }
        pub(super) fn max(a: Option<i64>, b: Option<i64>) -> Option<i64> { Some(a?.max(b?)) }
        pub(super) fn eq(a: Option<i64>, b: Option<i64>) -> Option<bool> { Some(a? == b?) }
        pub(super) fn ne(a: Option<i64>, b: Option<i64>) -> Option<bool> { Some(a? != b?) }
        pub(super) fn lt(a: Option<i64>, b: Option<i64>) -> Option<bool> { Some(a? < b?) }
        pub(super) fn le(a: Option<i64>, b: Option<i64>) -> Option<bool> { Some(a? <= b?) }
        pub(super) fn gt(a: Option<i64>, b: Option<i64>) -> Option<bool> { Some(a? > b?) }
        pub(super) fn ge(a: Option<i64>, b: Option<i64>) -> Option<bool> { Some(a? >= b?) }
        pub(super) fn and(a: Option<bool>, b: impl FnOnce() -> Option<bool>) -> Option<bool> {
            if a? { b() } else { Some(false) }
        }
        pub(super) fn or(a: Option<bool>, b: impl FnOnce() -> Option<bool>) -> Option<bool> {
            if a? { Some(true) } else { b() }
        }
        pub(super) fn not(a: Option<bool>) -> Option<bool> { Some(!a?) }
        /// The number of elements of a shape; `None` if an extent is negative or the
        /// product overflows.
        pub(super) fn numel(dims: &[Option<i64>]) -> Option<usize> {
            let mut n: usize = 1;
            for d in dims {
                n = n.checked_mul(usize::try_from((*d)?).ok()?)?;
            }
            Some(n)
        }
    }
"#;

/// A name for the output parameter that no size or input uses.
fn output_param(kernel: &Kernel) -> String {
    let taken =
        |n: &str| kernel.sizes.iter().any(|s| s == n) || kernel.inputs.iter().any(|i| i.name == n);
    let mut name = "out".to_string();
    while taken(&name) {
        name.push('_');
    }
    name
}

/// The shape of a buffer in the language's syntax, for documentation.
fn shape_text(shape: &[IndexExpr]) -> String {
    let dims: Vec<String> = shape.iter().map(ToString::to_string).collect();
    format!("[{}]", dims.join(", "))
}

/// Generates the bindings; fails (with a message) only for a symbol or a parameter
/// name Rust cannot spell.
pub(crate) fn generate(spec: &BindingSpec<'_>) -> Result<String, String> {
    let k = spec.kernel;
    let t = match spec.dtype {
        Dtype::F32 => "f32",
        Dtype::F64 => "f64",
    };
    let unspellable = |n: &str| {
        format!(
            "`{n}` cannot be a Rust identifier; choose another {}",
            if n == spec.symbol {
                "symbol with `.name(…)`"
            } else {
                "name in the .atl file"
            }
        )
    };
    let module = rust_ident(spec.symbol).ok_or_else(|| unspellable(spec.symbol))?;
    let mut names = std::collections::BTreeMap::new();
    for n in k.sizes.iter().chain(k.inputs.iter().map(|i| &i.name)) {
        names.insert(n.clone(), rust_ident(n).ok_or_else(|| unspellable(n))?);
    }
    let out = output_param(k);
    let vars = |v: &str| names.get(v).cloned().unwrap_or_else(|| v.to_string());
    let set_threads = atl_emit_c::set_threads_symbol(spec.symbol);

    let size_params: Vec<String> = k
        .sizes
        .iter()
        .map(|s| format!("{}: i64", vars(s)))
        .collect();
    let size_args: Vec<String> = k.sizes.iter().map(|s| vars(s)).collect();
    // An index array holds `int32_t`s whatever the element type.
    let elem = |i: &atl_lower::ir::BufferDecl| if i.index_array.is_some() { "i32" } else { t };
    let input_params: Vec<String> = k
        .inputs
        .iter()
        .map(|i| format!("{}: &[{}]", vars(&i.name), elem(i)))
        .collect();
    let mut params = size_params.clone();
    params.extend(input_params);
    params.push(format!("{out}: &mut [{t}]"));

    let mut ffi_params: Vec<String> = size_params.clone();
    ffi_params.extend(
        k.inputs
            .iter()
            .map(|i| format!("{}: *const {}", vars(&i.name), elem(i))),
    );
    ffi_params.push(format!("{out}: *mut {t}"));

    let mut s = String::new();
    let _ = writeln!(
        s,
        "// @generated by atl-build from `{}`, definition `{}`{}. Do not edit.\n",
        spec.file,
        spec.def,
        if spec.validated {
            " (validated)"
        } else {
            " (NOT VALIDATED: built with `.no_validate()`)"
        }
    );
    // Documentation of the module.
    let mut args_doc = String::new();
    for size in &k.sizes {
        let _ = writeln!(args_doc, "/// - `{}`: a size (`i64`)", vars(size));
    }
    let statuses = atl_emit_c::array_statuses(k);
    for i in &k.inputs {
        if let Some(a) = statuses.iter().find(|a| a.array == i.name) {
            let _ = writeln!(
                args_doc,
                "/// - `{}`: an index array `{}` of `i32`, declared `{}` (the kernel\n\
                 ///   checks it, [`{}::CallError::IndexArray`])",
                vars(&i.name),
                shape_text(&i.shape),
                a.declaration,
                module
            );
        } else if let Some(offset) = atl_emit_c::storage_offset(i) {
            let _ = writeln!(
                args_doc,
                "/// - `{}`: `{}` declared with a layout: its element `(i0, i1, …)` at\n\
                 ///   `{offset}`, length the product of the extents",
                vars(&i.name),
                shape_text(&i.program_shape())
            );
        } else {
            let _ = writeln!(
                args_doc,
                "/// - `{}`: `{}`, row-major, length the product of the extents",
                vars(&i.name),
                shape_text(&i.shape)
            );
        }
    }
    let _ = writeln!(
        args_doc,
        "/// - `{out}`: the output, `{}`; every element is written",
        shape_text(&k.output.shape)
    );
    let mut pre_doc = String::new();
    for p in &k.preconditions {
        let _ = writeln!(pre_doc, "/// - `{}` ({})", p.pred, p.reason);
    }
    let _ = write!(
        s,
        "/// The kernel `{sym}` (definition `{def}` of `{file}`), compiled by atl-build.\n\
         ///\n\
         /// [`{sym_fn}`] (or `{module}::call`) takes, in this order:\n\
         {args_doc}\
         ///\n\
         /// It refuses a call, with a [`{module}::CallError`] and without touching any slice,\n\
         /// unless these preconditions hold (in this order) and every slice has exactly the\n\
         /// length of its shape:\n\
         {pre_doc}{arrays_doc}",
        arrays_doc = if statuses.is_empty() {
            String::new()
        } else {
            format!(
                "///\n/// The kernel then checks each index array's declaration before writing anything, and\n\
                 /// a call whose index array breaks it returns [`{module}::CallError::IndexArray`].\n"
            )
        },
        sym = spec.symbol,
        sym_fn = module,
        def = spec.def,
        file = spec.file,
    );
    let _ = writeln!(
        s,
        "#[allow(non_snake_case, unsafe_code, dead_code, unused_parens, clippy::all)]\n\
         pub mod {module} {{"
    );
    // ffi
    let _ = writeln!(
        s,
        "    /// The C functions as the kernel's header declares them. Calling them is\n    \
         /// `unsafe`: the pointers must point to arrays of the shapes at these sizes and\n    \
         /// `{set_threads}` must not run while the kernel runs. `super::call` checks all\n    \
         /// of that.\n    \
         pub mod ffi {{\n        \
         unsafe extern \"C\" {{\n            \
         pub fn {module}({}) -> ::core::ffi::c_int;\n            \
         pub fn {set_threads}(threads: ::core::ffi::c_int);\n        \
         }}\n    \
         }}\n",
        ffi_params.join(", ")
    );
    // CallError
    let _ = writeln!(
        s,
        r#"    /// Why a call was refused; no slice was written (the kernel was not called, or,
    /// for `IndexArray` and `Refused`, returned before writing).
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum CallError {{
        /// A precondition on the sizes does not hold.
        Precondition {{
            /// The condition, in the language's syntax.
            condition: &'static str,
            /// Why the kernel needs it.
            reason: &'static str,
        }},
        /// Evaluating a precondition or a shape overflows 64-bit arithmetic, or an
        /// extent is negative.
        Overflow {{
            /// What was being evaluated.
            what: &'static str,
        }},
        /// A slice does not have the number of elements of its shape at these sizes.
        Length {{
            /// The parameter.
            argument: &'static str,
            expected: usize,
            actual: usize,
        }},
        /// An index array breaks its declaration: the kernel's entry check found an
        /// element out of the declared range or out of order, and it wrote nothing;
        /// or, for an array checked where it is read (the header says which), a value
        /// it read was out of range, and the output's contents are unspecified.
        IndexArray {{
            /// The parameter.
            argument: &'static str,
            /// What every element must satisfy, in the language's syntax.
            declaration: &'static str,
            /// What the kernel returned.
            status: ::core::ffi::c_int,
        }},
        /// The C kernel itself refused the call with this status (its `status`-th
        /// precondition failed; it touched no slice) although the checks of `call`
        /// passed: the two disagree, which is a bug of atl to report.
        Refused {{
            /// What the kernel returned (>= 1).
            status: ::core::ffi::c_int,
            /// Its precondition of that number, in the language's syntax.
            condition: &'static str,
        }},
    }}

    impl ::core::fmt::Display for CallError {{
        fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {{
            match self {{
                CallError::Precondition {{ condition, reason }} => write!(
                    f,
                    "`{sym}`: the sizes break the precondition `{{condition}}` ({{reason}})"
                ),
                CallError::Overflow {{ what }} => {{
                    write!(f, "`{sym}`: {{what}} overflows 64-bit arithmetic or is negative")
                }}
                CallError::Length {{ argument, expected, actual }} => write!(
                    f,
                    "`{sym}`: `{{argument}}` has {{actual}} elements, its shape has {{expected}} at these sizes"
                ),
                CallError::IndexArray {{ argument, declaration, status }} => write!(
                    f,
                    "`{sym}`: the index array `{{argument}}` breaks its declaration `{{declaration}}` (the kernel's check returned {{status}})"
                ),
                CallError::Refused {{ status, condition }} => write!(
                    f,
                    "`{sym}`: the kernel returned status {{status}} (precondition `{{condition}}`) after the call's checks passed; a bug of atl, please report it"
                ),
            }}
        }}
    }}

    impl ::std::error::Error for CallError {{}}
"#,
        sym = spec.symbol
    );
    s.push_str(RUNTIME);
    // lengths
    let n_in = k.inputs.len();
    let _ = writeln!(
        s,
        "\n    /// Checks the preconditions at these sizes and returns the number of elements\n    \
         /// of each input (in order) and of the output.\n    \
         pub fn lengths({}) -> ::core::result::Result<([usize; {n_in}], usize), CallError> {{",
        size_params.join(", ")
    );
    for p in &k.preconditions {
        let _ = writeln!(
            s,
            "        match {} {{\n            \
             ::core::option::Option::Some(true) => {{}}\n            \
             ::core::option::Option::Some(false) => {{\n                \
             return ::core::result::Result::Err(CallError::Precondition {{ condition: {}, reason: {} }});\n            \
             }}\n            \
             ::core::option::Option::None => {{\n                \
             return ::core::result::Result::Err(CallError::Overflow {{ what: {} }});\n            \
             }}\n        \
             }}",
            pred(&p.pred, &vars),
            lit(&p.pred.to_string()),
            lit(&p.reason),
            lit(&format!("the precondition `{}`", p.pred)),
        );
    }
    let numel = |shape: &[IndexExpr], what: &str| {
        let dims: Vec<String> = shape.iter().map(|d| ix(d, &vars)).collect();
        format!(
            "rt::numel(&[{}]).ok_or(CallError::Overflow {{ what: {} }})?",
            dims.join(", "),
            lit(what)
        )
    };
    let inputs_len: Vec<String> = k
        .inputs
        .iter()
        .map(|i| {
            numel(
                &i.shape,
                &format!("the length of `{}` {}", i.name, shape_text(&i.shape)),
            )
        })
        .collect();
    let _ = writeln!(
        s,
        "        let atl__inputs: [usize; {n_in}] = [{}];\n        \
         let atl__output = {};\n        \
         ::core::result::Result::Ok((atl__inputs, atl__output))\n    }}",
        inputs_len.join(", "),
        numel(
            &k.output.shape,
            &format!("the length of the output {}", shape_text(&k.output.shape))
        )
    );
    // call
    let _ = writeln!(
        s,
        "\n    /// Checks the call (preconditions, then every slice's length) and runs the\n    \
         /// kernel, which writes every element of `{out}`. Calls may run in several threads\n    \
         /// at once.\n    \
         pub fn call({}) -> ::core::result::Result<(), CallError> {{\n        \
         let (atl__inputs, atl__output) = self::lengths({})?;",
        params.join(", "),
        size_args.join(", ")
    );
    for (n, i) in k.inputs.iter().enumerate() {
        let _ = writeln!(
            s,
            "        if {v}.len() != atl__inputs[{n}] {{\n            \
             return ::core::result::Result::Err(CallError::Length {{ argument: {name}, expected: atl__inputs[{n}], actual: {v}.len() }});\n        \
             }}",
            v = vars(&i.name),
            name = lit(&i.name)
        );
    }
    let mut ffi_args = size_args.clone();
    ffi_args.extend(
        k.inputs
            .iter()
            .map(|i| format!("{}.as_ptr()", vars(&i.name))),
    );
    ffi_args.push(format!("{out}.as_mut_ptr()"));
    let _ = writeln!(
        s,
        "        if {out}.len() != atl__output {{\n            \
         return ::core::result::Result::Err(CallError::Length {{ argument: {}, expected: atl__output, actual: {out}.len() }});\n        \
         }}\n        \
         let _atl__guard = rt::LOCK.read().unwrap_or_else(|e| e.into_inner());\n        \
         // SAFETY: the preconditions hold at these sizes and every slice has the length\n        \
         // of its shape, so the kernel stays inside them (the gate and lowering prove\n        \
         // it); `{out}` is a unique borrow, so it overlaps no input; `set_threads` cannot\n        \
         // run meanwhile (the lock).\n        \
         let atl__status = unsafe {{ ffi::{module}({}) }};\n        \
         const ARRAYS: [(::core::ffi::c_int, &str, &str); {n_arrays}] = [{arrays}];\n        \
         if let ::core::option::Option::Some(&(status, argument, declaration)) = ARRAYS.iter().find(|a| a.0 == atl__status) {{\n            \
         return ::core::result::Result::Err(CallError::IndexArray {{ argument, declaration, status }});\n        \
         }}\n        \
         if atl__status != 0 {{\n            \
         const PRECONDITIONS: [&str; {n_pre}] = [{}];\n            \
         let condition = usize::try_from(atl__status).ok().and_then(|k| k.checked_sub(1)).and_then(|k| PRECONDITIONS.get(k)).copied().unwrap_or(\"(no such precondition)\");\n            \
         return ::core::result::Result::Err(CallError::Refused {{ status: atl__status, condition }});\n        \
         }}\n        \
         ::core::result::Result::Ok(())\n    }}",
        lit(&out),
        ffi_args.join(", "),
        k.preconditions
            .iter()
            .map(|p| lit(&p.pred.to_string()))
            .collect::<Vec<_>>()
            .join(", "),
        n_pre = k.preconditions.len(),
        n_arrays = statuses.len(),
        arrays = statuses
            .iter()
            .map(|a| format!("({}, {}, {})", a.status, lit(&a.array), lit(&a.declaration)))
            .collect::<Vec<_>>()
            .join(", "),
    );
    // set_threads
    let _ = writeln!(
        s,
        "\n    /// Later calls of this kernel run its parallel loops on `threads` threads\n    \
         /// (`threads <= 0`: OpenMP's default, `OMP_NUM_THREADS`). Waits for running calls\n    \
         /// to finish. Does nothing when the kernel was compiled without OpenMP.\n    \
         pub fn set_threads(threads: ::core::ffi::c_int) {{\n        \
         let _atl__guard = rt::LOCK.write().unwrap_or_else(|e| e.into_inner());\n        \
         // SAFETY: only writes the kernel's thread count; no call runs (the lock).\n        \
         unsafe {{ ffi::{set_threads}(threads) }}\n    }}\n}}\n"
    );
    // The forwarding function.
    let _ = writeln!(
        s,
        "/// The kernel `{sym}`: see the module [`{module}`](mod@{module}).\n\
         #[allow(non_snake_case, dead_code, clippy::too_many_arguments)]\n\
         pub fn {module}({}) -> ::core::result::Result<(), {module}::CallError> {{\n    \
         {module}::call({})\n}}",
        params.join(", "),
        {
            let mut a = size_args.clone();
            a.extend(k.inputs.iter().map(|i| vars(&i.name)));
            a.push(out.clone());
            a.join(", ")
        },
        sym = spec.symbol
    );
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_become_raw_identifiers() {
        assert_eq!(rust_ident("matvec").as_deref(), Some("matvec"));
        assert_eq!(rust_ident("type").as_deref(), Some("r#type"));
        assert_eq!(rust_ident("match").as_deref(), Some("r#match"));
        assert_eq!(rust_ident("self"), None);
        assert_eq!(rust_ident("crate"), None);
    }
}

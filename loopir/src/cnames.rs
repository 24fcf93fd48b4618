//! The names C reserves for a kernel's C file: C keywords, what the headers the C printer
//! includes declare (`<stdint.h>`, `<stdlib.h>`, `<math.h>` with every function and its
//! `f`/`l` variants, `<omp.h>` and the `omp_` prefix), the identifiers the C standard
//! reserves, and the prefixes of the printer's own names — one list, used by the C
//! printer (`atl-emit-c`) and by the translation validator (`atl-validate`), which
//! cannot depend on the printer.

/// The prefix of every name the C printer defines itself (helpers, macros in upper
/// case, file-scope variables, its own loop counters); reserved, in any case, for it.
pub const RESERVED_PREFIX: &str = "atl__";

/// The exported companion of the kernel `symbol` that sets its number of threads
/// (every emitted file defines it).
pub fn set_threads_symbol(symbol: &str) -> String {
    format!("{symbol}_set_threads")
}

/// C keywords (C99, C11, and the common extensions `asm` and `fortran`) and the
/// `<stdbool.h>` names.
const KEYWORDS: &[&str] = &[
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "_Bool",
    "_Complex",
    "_Imaginary",
    "_Alignas",
    "_Alignof",
    "_Atomic",
    "_Generic",
    "_Noreturn",
    "_Static_assert",
    "_Thread_local",
    "asm",
    "fortran",
    "bool",
    "true",
    "false",
];

/// Names the headers the printer includes declare or define, besides the `<math.h>`
/// functions ([`MATH_FUNCTIONS`]) and the `<stdint.h>` patterns ([`stdint_pattern`]),
/// and names C gives a meaning everywhere (`main`, `errno`).
const LIBRARY: &[&str] = &[
    // <stdint.h>, which every file includes (besides its patterns).
    "intptr_t",
    "uintptr_t",
    "intmax_t",
    "uintmax_t",
    "ptrdiff_t",
    "size_t",
    "wchar_t",
    "wint_t",
    "sig_atomic_t",
    "SIZE_MAX",
    "PTRDIFF_MIN",
    "PTRDIFF_MAX",
    "SIG_ATOMIC_MIN",
    "SIG_ATOMIC_MAX",
    "WCHAR_MIN",
    "WCHAR_MAX",
    "WINT_MIN",
    "WINT_MAX",
    // <stdlib.h> (included for temporaries).
    "NULL",
    "EXIT_SUCCESS",
    "EXIT_FAILURE",
    "RAND_MAX",
    "MB_CUR_MAX",
    "div_t",
    "ldiv_t",
    "lldiv_t",
    "malloc",
    "calloc",
    "realloc",
    "free",
    "aligned_alloc",
    "abort",
    "exit",
    "_Exit",
    "quick_exit",
    "at_quick_exit",
    "atexit",
    "getenv",
    "system",
    "qsort",
    "bsearch",
    "rand",
    "srand",
    "abs",
    "labs",
    "llabs",
    "div",
    "ldiv",
    "lldiv",
    "atoi",
    "atol",
    "atoll",
    "atof",
    "strtod",
    "strtof",
    "strtold",
    "strtol",
    "strtoll",
    "strtoul",
    "strtoull",
    "mblen",
    "mbtowc",
    "wctomb",
    "mbstowcs",
    "wcstombs",
    // <string.h> (`memset`, should a printer need it).
    "memset",
    "memcpy",
    "memmove",
    "memcmp",
    "memchr",
    "strlen",
    // <math.h> macros and types.
    "NAN",
    "INFINITY",
    "HUGE_VAL",
    "HUGE_VALF",
    "HUGE_VALL",
    "FP_NAN",
    "FP_INFINITE",
    "FP_ZERO",
    "FP_SUBNORMAL",
    "FP_NORMAL",
    "FP_FAST_FMA",
    "FP_FAST_FMAF",
    "FP_FAST_FMAL",
    "FP_ILOGB0",
    "FP_ILOGBNAN",
    "MATH_ERRNO",
    "MATH_ERREXCEPT",
    "math_errhandling",
    "float_t",
    "double_t",
    "isgreater",
    "isgreaterequal",
    "isless",
    "islessequal",
    "islessgreater",
    "isunordered",
    // Names C gives a meaning in every program.
    "main",
    "errno",
];

/// The `<math.h>` functions (and function-like macros) of ISO C; each is also reserved
/// with the `f` and `l` suffixes of its `float` and `long double` versions. (Not the
/// POSIX and GNU extensions such as `j1` or `y1`, names a name supply may give a
/// loop: a local variable may hide a function the kernel never calls.)
const MATH_FUNCTIONS: &[&str] = &[
    "acos",
    "asin",
    "atan",
    "atan2",
    "cos",
    "sin",
    "tan",
    "acosh",
    "asinh",
    "atanh",
    "cosh",
    "sinh",
    "tanh",
    "exp",
    "exp2",
    "expm1",
    "frexp",
    "ilogb",
    "ldexp",
    "log",
    "log10",
    "log1p",
    "log2",
    "logb",
    "modf",
    "scalbn",
    "scalbln",
    "cbrt",
    "fabs",
    "hypot",
    "pow",
    "sqrt",
    "erf",
    "erfc",
    "lgamma",
    "tgamma",
    "ceil",
    "floor",
    "nearbyint",
    "rint",
    "lrint",
    "llrint",
    "round",
    "lround",
    "llround",
    "trunc",
    "fmod",
    "remainder",
    "remquo",
    "copysign",
    "nan",
    "nextafter",
    "nexttoward",
    "fdim",
    "fmax",
    "fmin",
    "fma",
    "isnan",
    "isinf",
    "isfinite",
    "signbit",
    "fpclassify",
    "isnormal",
];

/// Whether `s` is a name `<stdint.h>` reserves by pattern (C99 7.18, 7.26.8): a type
/// `int…_t`/`uint…_t`, a macro `INT…`/`UINT…` ending in `_MAX`, `_MIN` or `_C`.
fn stdint_pattern(s: &str) -> bool {
    let typedef = (s.starts_with("int") || s.starts_with("uint")) && s.ends_with("_t");
    let mac = (s.starts_with("INT") || s.starts_with("UINT"))
        && (s.ends_with("_MAX") || s.ends_with("_MIN") || s.ends_with("_C"));
    typedef || mac
}

/// Whether `s` is a `<math.h>` function, or one with the `f` or `l` suffix.
fn is_math_function(s: &str) -> bool {
    MATH_FUNCTIONS.contains(&s)
        || s.strip_suffix(['f', 'l'])
            .is_some_and(|base| MATH_FUNCTIONS.contains(&base))
}

/// Whether `s` is an identifier of C: a letter or `_`, then letters, digits and `_`
/// (ASCII only).
pub fn is_c_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    (first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Why C, a header the kernel includes or the C printer reserves the identifier `s`;
/// `None` when a user's name may be `s` (which says nothing of whether `s` is an
/// identifier at all: [`is_c_identifier`]).
pub fn reserved(s: &str) -> Option<&'static str> {
    if KEYWORDS.contains(&s) {
        Some("a C keyword")
    } else if is_math_function(s) {
        Some("a function of the C math library (<math.h>)")
    } else if LIBRARY.contains(&s) || stdint_pattern(s) {
        Some("a name the C library declares")
    } else if s.to_ascii_lowercase().starts_with(RESERVED_PREFIX) {
        Some("reserved for the C printer's own names (it starts with `atl__`, in any case)")
    } else if s.starts_with("omp_") {
        Some("reserved by OpenMP (it starts with `omp_`)")
    } else if s.starts_with("__")
        || (s.starts_with('_') && s[1..].starts_with(|c: char| c.is_ascii_uppercase()))
    {
        Some("reserved by the C standard (it starts with `__` or `_` and a capital letter)")
    } else {
        None
    }
}

/// Whether `s` is a C identifier a user's name may be: an identifier
/// ([`is_c_identifier`]) that is not [`reserved`].
pub fn is_free_identifier(s: &str) -> bool {
    is_c_identifier(s) && reserved(s).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use atl_lang::functions::ScalarFn;

    #[test]
    fn every_libm_name_the_printer_emits_is_reserved() {
        for f in ScalarFn::all() {
            for double in [false, true] {
                if let Some(name) = f.c_name(double) {
                    assert!(reserved(name).is_some(), "{name}");
                }
            }
        }
    }

    #[test]
    fn reserved_names() {
        for name in [
            "int",
            "for",
            "restrict",
            "sqrt",
            "sqrtf",
            "expf",
            "logl",
            "fabs",
            "fabsf",
            "fmax",
            "fmin",
            "pow",
            "floor",
            "ceil",
            "INFINITY",
            "NAN",
            "HUGE_VAL",
            "isnan",
            "int64_t",
            "uint8_t",
            "int_fast32_t",
            "INT64_MAX",
            "UINT32_C",
            "INT64_MIN",
            "malloc",
            "free",
            "NULL",
            "main",
            "atl__x",
            "ATL__OMP",
            "Atl__y",
            "omp_x",
            "__x",
            "_X",
        ] {
            assert!(reserved(name).is_some(), "{name}");
            assert!(!is_free_identifier(name), "{name}");
        }
        for name in [
            "i", "acc", "out", "n", "_x", "atl_x", "omp", "expo", "stride", "f1", "j1", "y1",
        ] {
            assert!(is_free_identifier(name), "{name}");
        }
        for name in ["", "1x", "a-b", "i'", "é", "a.b"] {
            assert!(!is_c_identifier(name), "{name}");
        }
    }
}

//! Issue 17, hole 5: what the emitted C computes with must exist and must not
//! overflow. Helpers used only by an entry check (`assume`) are emitted; sizes for
//! which an index expression could overflow `int64_t` are refused on entry (E0937)
//! — by the compiled C itself, which is called here directly, below the Rust-side
//! check — and a kernel that would have to refuse ordinary sizes is refused by
//! lowering (E0938, issue 28).
//! Each compiled run is a harness under `-fsanitize=address,undefined` with
//! `ATL_SANITIZE=1`.

mod common;
#[path = "../../lower/tests/support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::Path;

use atl_emit_c::{EmitOptions, Tensor, compile, emit};

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(path).expect("fixture")
}

fn lowered(source: &str, def: &str) -> Result<atl_lower::Kernel, atl_lang::diag::Diagnostic> {
    let (checked, diags) = atl_lang::check_source(source);
    let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
    atl_lower::lower_def(&checked.program, &checked.shapes, def, &Default::default())
}

fn sizes(n: i64) -> BTreeMap<String, i64> {
    BTreeMap::from([("n".to_string(), n)])
}

fn input(data: Vec<f64>) -> BTreeMap<String, Tensor> {
    let n = data.len();
    BTreeMap::from([("f".to_string(), Tensor::new(vec![n], data).expect("shape"))])
}

#[test]
fn helpers_used_only_by_assumes_are_emitted() {
    let kernel = lowered(&fixture("assume_helpers.atl"), "a").expect("lowers");
    let compiled =
        compile(&kernel, &EmitOptions::default(), &common::compile_options()).expect("compiles");
    let out = compiled
        .run(&sizes(3), &input(vec![1.0, 2.0, 3.0]))
        .expect("runs");
    assert_eq!(out.output.data, vec![2.0, 4.0, 6.0]);
    for helper in [
        "atl__floordiv",
        "atl__floormod",
        "atl__cdiv",
        "atl__min",
        "atl__max",
    ] {
        assert!(
            compiled
                .code()
                .source
                .contains(&format!("{helper}(int64_t")),
            "{helper} is defined"
        );
    }
    // `max(n, 2) <= 100` is checked: n = 101 is refused.
    let err = compiled
        .run(&sizes(101), &input(vec![0.0; 101]))
        .expect_err("refused");
    assert_eq!(err.code, "E0603", "{err:?}");
}

/// Compiles `kernel` with a `main` that calls it at size `n` on `f = 1, 2, …` (at
/// most 4 elements are read) with the output filled with -7, and prints the kernel's
/// status, then the first `shown` output elements (returned as the status and the
/// elements). Sanitized under `ATL_SANITIZE=1`; `-O2` otherwise (the
/// optimizer is what turns an overflowing loop bound into a hang).
fn run_c(kernel: &atl_lower::Kernel, n: i64, shown: usize) -> (i32, Vec<f64>) {
    let code = emit(kernel, &EmitOptions::default()).expect("emits");
    let dir = tempfile::tempdir().expect("temp dir");
    let main = format!(
        "{}\n#include <stdio.h>\nint main(void) {{\n  float f[4] = {{1, 2, 3, 4}};\n  \
         float out[4] = {{-7, -7, -7, -7}};\n  \
         printf(\"%d\\n\", {sym}(INT64_C({n}), f, out));\n  \
         for (int k = 0; k < {shown}; ++k)\n    printf(\"%g\\n\", out[k]);\n  return 0;\n}}\n",
        code.source,
        sym = code.symbol
    );
    let src = dir.path().join("k.c");
    std::fs::write(&src, main).expect("write");
    let exe = dir.path().join("k");
    let mut cc = std::process::Command::new("cc");
    cc.arg("-std=c99").arg("-o").arg(&exe).arg(&src);
    if common::sanitize() {
        cc.args([
            "-O1",
            "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all",
        ]);
    } else {
        cc.arg("-O2");
    }
    let status = cc.status().expect("cc runs");
    assert!(status.success(), "compiles");
    let mut child = std::process::Command::new(&exe)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("runs");
    // A hang is a failure, not a stuck test.
    let start = std::time::Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if start.elapsed() > std::time::Duration::from_secs(20) {
            let _ = child.kill();
            panic!("the kernel hangs at n = {n}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "n = {n}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let status = lines
        .next()
        .and_then(|l| l.parse().ok())
        .expect("the status");
    (
        status,
        lines.map(|l| l.parse().expect("a number")).collect(),
    )
}

#[test]
fn a_size_beyond_the_entry_bound_is_refused_on_entry() {
    let kernel = lowered(&fixture("entry_bound.atl"), "a").expect("lowers");
    assert_eq!(run_c(&kernel, 3, 4), (0, vec![1.0, 2.0, 3.0, 4.0]));
    // n = 7e18 would compute `n + n / 2` beyond 2^63: refused by the second check
    // (status 2), out untouched; n = 0 by the first.
    assert_eq!(
        run_c(&kernel, 7_000_000_000_000_000_000, 4),
        (2, vec![-7.0; 4])
    );
    assert_eq!(run_c(&kernel, 0, 4), (1, vec![-7.0; 4]));
    let err = atl_lower::check_call(
        &kernel,
        &sizes(7_000_000_000_000_000_000),
        &input(vec![1.0; 4]),
    )
    .expect_err("refused");
    assert_eq!(err.code, "E0937", "{err:?}");
    let header = emit(&kernel, &EmitOptions::default())
        .expect("emits")
        .header;
    assert!(
        header.contains(" *   1  n >= 1  (a size)\n *   2  n <= "),
        "{header}"
    );
}

/// Kernels whose index arithmetic fits only at sizes below the least bound a kernel
/// may set (`atl_loopir::int64::min_index_range_bound`) are refused by lowering,
/// naming the expression: a huge ceiling-division factor (`(n + c - 1) / c` overflows
/// from n = 2), a guard's factor (`i * 2^62` from i = 2), an `assume` that multiplies
/// (its own entry check overflows).
#[test]
fn kernels_that_fit_only_at_tiny_sizes_are_refused_by_lowering() {
    for (file, what) in [
        ("cdiv_huge_factor.atl", "9223372036854775807"),
        ("guard_huge_factor.atl", "4611686018427387904 * i"),
        ("assume_overflow.atl", "4611686018427387904 * n"),
    ] {
        let err = lowered(&fixture(file), "a").expect_err("refused");
        assert_eq!(err.code, "E0938", "{file}: {err:?}");
        assert!(err.message.contains(what), "{file}: {}", err.message);
    }
}

#[test]
fn a_kernel_that_overflows_at_every_size_is_refused() {
    let src =
        "size n\ninput f : [n]\ndef a = gen i < n: [n * 9223372036854775807 + n > 0] * f[i]\n";
    let err = lowered(src, "a").expect_err("refused");
    assert_eq!(err.code, "E0938", "{err:?}");
}

#[test]
fn the_tile_id_derivation_with_a_huge_factor_runs() {
    let (_, kernel, _) = support::derived_kernel(&fixture("tile_id_huge_k.atl"), "b");
    assert_eq!(run_c(&kernel, 3, 3), (0, vec![1.0, 2.0, 3.0]));
}

/// 64-bit literals at the ends of the range are `int64_t` constants in the C: in C,
/// `-9223372036854775808` is the negation of a literal too large for any signed type
/// (GCC warns it is unsigned), so i64::MIN is `INT64_MIN`; the others are `INT64_C(…)`.
/// The kernel is read from loop-IR text (where `-9223372036854775808` is the constant),
/// compiled warning-free (`-Wall -Wextra -Werror`) and run against hand-computed values:
/// `i + MIN < MIN + 2` holds for `i < 2`, `i - MAX >= -MAX` for every `i >= 0`.
#[test]
fn extreme_literals_are_int64_constants_and_compile_without_warnings() {
    let text = "kernel h(n; f: [n]) -> out: [n]\n  requires n >= 1  # size: \"size `n` is at least 1\"\n  \
                source: gen i < n: f[i]\n{\n  for i in 0..n {  # gen\n    \
                out[i] = blend(i + -9223372036854775808 < -9223372036854775808 + 2 \
                && i - 9223372036854775807 >= -9223372036854775807 \
                && -(-9223372036854775807) > i - 9223372036854775807 - -9223372036854775807 - 1, \
                f[i @ (i)])  @ (i)\n  }\n}\n";
    let kernel = atl_loopir::parse_kernel(text).unwrap_or_else(|d| panic!("{d:?}"));
    let mut options = common::compile_options();
    options
        .flags
        .extend(["-Wall", "-Wextra", "-Werror"].map(String::from));
    let compiled = compile(&kernel, &EmitOptions::default(), &options).unwrap_or_else(|d| {
        panic!(
            "{d:?}\n{}",
            emit(&kernel, &EmitOptions::default())
                .map(|c| c.source)
                .unwrap_or_default()
        )
    });
    let c = &compiled.code().source;
    assert!(c.contains("i + INT64_MIN < INT64_MIN + 2"), "{c}");
    assert!(c.contains("INT64_C(-9223372036854775807)"), "{c}");
    assert!(
        c.contains("-(INT64_C(-9223372036854775807)) > i - INT64_C(9223372036854775807) - INT64_C(-9223372036854775807) - 1"),
        "{c}"
    );
    assert!(!c.contains("-9223372036854775808"), "{c}");
    let out = compiled
        .run(&sizes(4), &input(vec![1.0, 2.0, 3.0, 4.0]))
        .expect("runs");
    assert_eq!(out.output.data, vec![1.0, 2.0, 0.0, 0.0]);
}

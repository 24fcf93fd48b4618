//! The C that `atl emit` prints, built the way a user's project builds it (issue 21):
//!
//! - the C symbol a user chooses with `--name`: any C identifier outside the emitter's
//!   reserved prefix works, `atl_…` included, and the emitted file and header compile
//!   warning-free (`-Wall -Wextra -Werror`) into a program that calls the kernel under
//!   that name; a name in the reserved prefix is refused with E0931, which names what
//!   the user wrote;
//! - the thread control `NAME_set_threads`: declared in the header, the same results
//!   at 1 and 2 threads and with the default, and the host's OpenMP setting untouched.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh directory for one test.
fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("atl-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Runs the real `atl` binary; returns (status, stdout, stderr).
fn atl(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_atl"))
        .args(args)
        .output()
        .expect("atl runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Sum of squares of each row: `rownorm[i] = sum_j A[i, j]^2`.
const ROWNORM: &str =
    "size n, m\ninput A : [n, m]\n\ndef rownorm =\n  gen i < n: sum j < m: A[i, j] * A[i, j]\n";

/// Calls `atl_rownorm` on a 2x3 matrix whose row sums of squares are 14 and 77.
const MAIN: &str = r#"#include <stdio.h>
#include "atl_rownorm.h"

int main(void)
{
  const float a[6] = {1, 2, 3, 4, 5, 6};
  float out[2] = {-1, -1};
  atl_rownorm(2, 3, a, out);
  printf("%g %g\n", out[0], out[1]);
  return out[0] == 14.0f && out[1] == 77.0f ? 0 : 1;
}
"#;

fn compile_and_run(dir: &Path, sources: &[&str], flags: &[&str]) -> String {
    let exe = dir.join("prog");
    let out = Command::new("cc")
        .current_dir(dir)
        .args(["-std=c99", "-O2", "-Wall", "-Wextra", "-Werror"])
        .args(flags)
        .args(sources)
        .arg("-o")
        .arg(&exe)
        .arg("-lm")
        .output()
        .expect("cc runs");
    assert!(
        out.status.success(),
        "cc {flags:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().expect("the program runs");
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(run.status.success(), "{stdout}");
    stdout
}

#[test]
fn a_user_chosen_atl_prefixed_name_is_emitted_compiled_and_called() {
    let dir = temp_dir("emit-names");
    let file = dir.join("rownorm.atl");
    std::fs::write(&file, ROWNORM).expect("write");
    let c = dir.join("atl_rownorm.c");
    let h = dir.join("atl_rownorm.h");
    let (code, _, err) = atl(&[
        "emit",
        file.to_str().unwrap(),
        "--name",
        "atl_rownorm",
        "-o",
        c.to_str().unwrap(),
        "--header",
        h.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let header = std::fs::read_to_string(dir.join("atl_rownorm.h")).expect("header");
    assert!(header.contains("int atl_rownorm(int64_t n,"), "{header}");
    std::fs::write(dir.join("main.c"), MAIN).expect("write");
    for flags in [&[][..], &["-fopenmp"][..]] {
        let out = compile_and_run(&dir, &["main.c", "atl_rownorm.c"], flags);
        assert_eq!(out.trim(), "14 77", "{flags:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_name_in_the_reserved_prefix_is_refused() {
    let dir = temp_dir("emit-reserved");
    let file = dir.join("rownorm.atl");
    std::fs::write(&file, ROWNORM).expect("write");
    let file = file.to_str().unwrap();
    for bad in ["atl__rownorm", "ATL__OMP", "omp_rownorm", "sqrt"] {
        let (code, out, err) = atl(&["emit", file, "--name", bad]);
        assert_eq!(code, Some(1), "{bad}: {out}");
        assert!(out.is_empty(), "{bad}: nothing is printed: {out}");
        assert!(err.contains("E0931"), "{bad}: {err}");
        assert!(err.contains(&format!("`{bad}`")), "{bad}: {err}");
    }
    // A definition whose own name is reserved is refused the same way, and
    // accepted with a `--name`.
    std::fs::write(
        dir.join("reserved.atl"),
        ROWNORM.replace("def rownorm", "def atl__norm"),
    )
    .expect("write");
    let reserved = dir.join("reserved.atl");
    let reserved = reserved.to_str().unwrap();
    let (code, _, err) = atl(&["emit", reserved]);
    assert_eq!(code, Some(1));
    assert!(err.contains("`atl__norm`"), "{err}");
    let (code, out, err) = atl(&["emit", reserved, "--name", "atl_norm"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("int atl_norm(int64_t n,"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Calls matmul's `fast` derivation (register tiles, parallel and vector loops, a
/// packed temporary) at 1 thread, 2 threads and the default, and compares each with a
/// naive product computed here; checks that the host's OpenMP default is untouched.
const THREADS_MAIN: &str = r#"#include <math.h>
#include <stdio.h>
#include <omp.h>
#include "mm.h"

enum { M = 13, N = 37, K = 9 };

int main(void)
{
  static float a[M * K], b[K * N], want[M * N], got[3][M * N];
  for (int i = 0; i < M * K; ++i)
    a[i] = (float)(i % 7) - 3.0f;
  for (int i = 0; i < K * N; ++i)
    b[i] = (float)(i % 5) * 0.5f;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float s = 0;
      for (int k = 0; k < K; ++k)
        s += a[i * K + k] * b[k * N + j];
      want[i * N + j] = s;
    }
  omp_set_num_threads(3);
  const int threads[3] = {1, 2, 0};
  for (int t = 0; t < 3; ++t) {
    mm_set_threads(threads[t]);
    mm(M, N, K, a, b, got[t]);
  }
  if (omp_get_max_threads() != 3) {
    printf("the host's default changed: %d\n", omp_get_max_threads());
    return 1;
  }
  int bad = 0;
  for (int i = 0; i < M * N; ++i) {
    if (got[0][i] != got[1][i] || got[0][i] != got[2][i])
      ++bad;
    if (fabsf(got[0][i] - want[i]) > 1e-4f * (1.0f + fabsf(want[i])))
      ++bad;
  }
  printf("%d mismatches, out[0] = %g, out[%d] = %g\n", bad, got[0][0], M * N - 1, got[0][M * N - 1]);
  return bad != 0;
}
"#;

fn matmul_example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/matmul/matmul.atl")
}

#[test]
fn set_threads_is_declared_and_gives_the_same_results_at_any_thread_count() {
    let dir = temp_dir("emit-threads");
    let (c, h) = (dir.join("mm.c"), dir.join("mm.h"));
    let (code, _, err) = atl(&[
        "emit",
        matmul_example().to_str().unwrap(),
        "--def",
        "fast",
        "--name",
        "mm",
        "-o",
        c.to_str().unwrap(),
        "--header",
        h.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let header = std::fs::read_to_string(&h).expect("header");
    assert!(header.contains("void mm_set_threads(int n);"), "{header}");
    // The header documents the call, the checks, the threads and the build.
    for needle in [
        " *   M            size (int64_t)\n",
        " *   A            input, shape [M, K]\n",
        " *   out          output, shape [M, N]\n",
        " *   1  M >= 1  (a size)\n *   2  N >= 1  (a size)\n *   3  K >= 1  (a size)\n",
        " *   4  M <= 223146097665841350  (int64_t index arithmetic)\n",
        " *   6  K <= 223146097665841350  (int64_t index arithmetic)\n",
        "returns the number of the first check\n * that fails (reading and writing nothing",
        "mm_set_threads(n) below, else OpenMP's default\n * (OMP_NUM_THREADS,",
        " *   cc -O3 -march=native -fopenmp -c mm.c       threads, SIMD\n",
        " *   cc -O3 -march=native -fopenmp-simd -c mm.c  SIMD\n",
        "Link: with -fopenmp when compiled with it",
    ] {
        assert!(header.contains(needle), "{needle:?} in\n{header}");
    }
    let source = std::fs::read_to_string(&c).expect("source");
    assert!(source.contains("void mm_set_threads(int n)\n{"), "{source}");
    assert!(!source.contains("omp_set_num_threads("), "{source}");
    std::fs::write(dir.join("main.c"), THREADS_MAIN).expect("write");
    let out = compile_and_run(&dir, &["main.c", "mm.c"], &["-fopenmp"]);
    assert!(out.starts_with("0 mismatches, out[0] = "), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_kernel_without_parallel_loops_still_defines_set_threads() {
    let dir = temp_dir("emit-threads-seq");
    let file = dir.join("one.atl");
    // One element: nothing to parallelize.
    std::fs::write(
        &file,
        "size n\ninput f : [n]\n\ndef first =\n  gen i < 1: f[0]\n",
    )
    .expect("write");
    let (code, out, err) = atl(&["emit", file.to_str().unwrap(), "--name", "first"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("void first_set_threads(int n)\n{\n  (void)n;\n}"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The kit's matmul kernel built without OpenMP, warning-free under `-Wall -Wextra
/// -Werror` (the vectorization hints that replace `omp simd` are pragmas GCC knows),
/// with and without `-fopenmp-simd`, computes what the OpenMP build computes.
#[test]
fn kernels_build_without_openmp_warning_free_and_agree() {
    let dir = temp_dir("emit-no-openmp");
    let (c, h) = (dir.join("mm.c"), dir.join("mm.h"));
    let (code, _, err) = atl(&[
        "emit",
        matmul_example().to_str().unwrap(),
        "--def",
        "fast",
        "--name",
        "mm",
        "-o",
        c.to_str().unwrap(),
        "--header",
        h.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let source = std::fs::read_to_string(&c).expect("source");
    assert!(source.contains("ATL__SIMD\n"), "{source}");
    assert!(
        source.contains("#define ATL__VEC _Pragma(\"GCC ivdep\") _Pragma(\"GCC unroll 1\")"),
        "{source}"
    );
    // Without OpenMP the host has no <omp.h>: the same program without its checks of
    // the OpenMP default.
    let main = THREADS_MAIN
        .replace("#include <omp.h>\n", "")
        .replace("  omp_set_num_threads(3);\n", "")
        .replace("omp_get_max_threads() != 3", "0")
        .replace(
            "\"the host's default changed: %d\\n\", omp_get_max_threads()",
            "\"?\"",
        );
    std::fs::write(dir.join("main.c"), main).expect("write");
    let mut outputs = Vec::new();
    for flags in [
        &["-O3"][..],
        &["-O3", "-fopenmp-simd"][..],
        &["-O3", "-fopenmp"][..],
    ] {
        let out = compile_and_run(&dir, &["main.c", "mm.c"], flags);
        assert!(
            out.starts_with("0 mismatches, out[0] = "),
            "{flags:?}: {out}"
        );
        outputs.push(out);
    }
    assert_eq!(outputs[0], outputs[1]);
    assert_eq!(outputs[0], outputs[2]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Row sums under an assumption: the kernel's preconditions are `n >= 1`, `m >= 1`
/// (the sizes, in declaration order) and `n >= 2` (the `assume`), so its statuses are
/// 1, 2 and 3.
const ASSUMING: &str =
    "size n, m\nassume n >= 2\ninput A : [n, m]\n\ndef rows =\n  gen i < n: sum j < m: A[i, j]\n";

/// Calls `rows` with sizes breaking each precondition (the first broken one is the
/// status), checking that a refused call leaves the output as it was, then with valid
/// sizes (status 0, sums 6 and 15 by hand).
const STATUS_MAIN: &str = r#"#include <stdio.h>
#include "rows.h"

static int bad = 0;

static void expect(int got, int want, const float *out, float a, float b)
{
  if (got != want || out[0] != a || out[1] != b) {
    printf("status %d (expected %d), out = %g %g (expected %g %g)\n", got, want, out[0],
           out[1], a, b);
    bad = 1;
  }
}

int main(void)
{
  const float a[6] = {1, 2, 3, 4, 5, 6};
  float out[2] = {-7, -7};
  expect(rows(1, 3, a, out), 3, out, -7, -7);   /* n >= 2 broken */
  expect(rows(2, 0, a, out), 2, out, -7, -7);   /* m >= 1 broken */
  expect(rows(0, 0, a, out), 1, out, -7, -7);   /* n >= 1 first */
  expect(rows(-5, 3, a, out), 1, out, -7, -7);
  expect(rows(2, 3, a, out), 0, out, 6, 15);
  printf("%s\n", bad ? "wrong" : "ok");
  return bad;
}
"#;

#[test]
fn a_refused_call_returns_the_number_of_its_precondition_and_touches_nothing() {
    let dir = temp_dir("emit-status");
    let file = dir.join("rows.atl");
    std::fs::write(&file, ASSUMING).expect("write");
    let (code, _, err) = atl(&[
        "emit",
        file.to_str().unwrap(),
        "-o",
        dir.join("rows.c").to_str().unwrap(),
        "--header",
        dir.join("rows.h").to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    let header = std::fs::read_to_string(dir.join("rows.h")).expect("header");
    assert!(header.contains("int rows(int64_t n,"), "{header}");
    // The header numbers the statuses in the order the C checks them.
    let listed = " *   1  n >= 1  (a size)\n *   2  m >= 1  (a size)\n \
                  *   3  n >= 2  (the program's assumption)\n";
    assert!(header.contains(listed), "{header}");
    std::fs::write(dir.join("main.c"), STATUS_MAIN).expect("write");
    for flags in [&[][..], &["-fopenmp"][..]] {
        let out = compile_and_run(&dir, &["main.c", "rows.c"], flags);
        assert_eq!(out.trim(), "ok", "{flags:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_input_the_definition_does_not_read_is_no_parameter() {
    let dir = temp_dir("emit-unrelated");
    // The same file with one more input (and a definition reading it): `rownorm`'s C
    // must not change, byte for byte.
    let with_more = ROWNORM.replace("input A : [n, m]\n", "input A : [n, m]\ninput W : [m, n]\n")
        + "\ndef other =\n  gen i < m: sum j < n: W[i, j]\n";
    assert_ne!(with_more, ROWNORM);
    let mut emitted = Vec::new();
    for (tag, text) in [("plain", ROWNORM.to_string()), ("more", with_more)] {
        let file = dir.join(format!("{tag}.atl"));
        std::fs::write(&file, text).expect("write");
        let c = dir.join(format!("{tag}.c"));
        let h = dir.join(format!("{tag}.h"));
        let (code, _, err) = atl(&[
            "emit",
            file.to_str().unwrap(),
            "--def",
            "rownorm",
            "-o",
            c.to_str().unwrap(),
            "--header",
            h.to_str().unwrap(),
        ]);
        assert_eq!(code, Some(0), "{tag}: {err}");
        emitted.push((
            std::fs::read_to_string(&c).expect("c"),
            std::fs::read_to_string(&h).expect("h"),
        ));
    }
    assert_eq!(emitted[0], emitted[1]);
    // The parameters: the sizes, then A only (W is neither read nor passed).
    let header = &emitted[0].1;
    assert!(!header.contains(" W "), "{header}");
    // `other` reads W only: it takes W and not A.
    let (code, out, err) = atl(&[
        "emit",
        dir.join("more.atl").to_str().unwrap(),
        "--def",
        "other",
        "--header",
        dir.join("other.h").to_str().unwrap(),
        "-o",
        dir.join("other.c").to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let other = std::fs::read_to_string(dir.join("other.h")).expect("h");
    assert!(
        other.contains("int other(int64_t n,\n          int64_t m,\n          const float *ATL__RESTRICT W,\n          float *ATL__RESTRICT out);"),
        "{other}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

//! The Python example `examples/integration/python` (issues 21, 29): `atl emit
//! --python` writes a module per kernel (ctypes + numpy) into a temporary directory,
//! and `python3 check_kernels.py DIR` imports them, calls them in float32 and float64
//! (the module compiles each dtype's C on first use) and with Python and numpy numbers
//! for a scalar input, compares with numpy, exactly, at 2 threads and 1, and checks
//! that bad arguments (dtype, mixed dtypes, masked arrays, number of dimensions,
//! layout, shape, sizes, aliasing) raise before C is called. The build modes (native
//! by default, `ATL_PORTABLE=1`, `CFLAGS`, a compiler rejecting `-march=native`) are
//! checked from the modules' `BUILD` record and the libraries' file names. A
//! compressed-row product passes its index arrays (any integer dtype, converted to
//! int32) and agrees with numpy's dense product; an index array breaking its
//! declaration or not fitting in int32 raises ValueError naming it.
//!
//! `python3` with numpy comes from `scripts/setup.sh`. Without numpy the test says so
//! loudly and passes, unless `ATL_REQUIRE_NUMPY` is set (CI sets it in `.ci/run`), as
//! the CMake and Rocq tests do with `ATL_REQUIRE_CMAKE` and `ATL_REQUIRE_COQ`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn project() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/integration/python")
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("atl-integration-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Runs `cmd`; panics with its output unless it succeeds.
fn run(cmd: &mut Command) -> Output {
    let what = format!("{cmd:?}");
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Whether `python3 -c "import numpy"` succeeds.
fn have_numpy() -> bool {
    Command::new("python3")
        .args(["-c", "import numpy"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[allow(clippy::print_stdout, clippy::print_stderr)]
fn say_skipped(reason: &str) {
    println!("SKIPPED: {reason}");
    eprintln!("SKIPPED: {reason}");
}

fn emit(dir: &Path, file: &str, def: &str, name: &str, dtype: &str) {
    run(Command::new(env!("CARGO_BIN_EXE_atl"))
        .arg("emit")
        .arg(project().join(file))
        .args(["--def", def, "--name", name, "--dtype", dtype, "--python"])
        .arg(dir));
    assert!(dir.join(format!("{name}.py")).is_file(), "{name}.py");
    for variant in ["f32", "f64"] {
        for ext in ["c", "h"] {
            let file = format!("{name}_{variant}.{ext}");
            assert!(dir.join(&file).is_file(), "{file}");
        }
    }
}

/// Skips (returning false) when python3 with numpy is missing and not required.
fn numpy_or_skip() -> bool {
    if have_numpy() {
        return true;
    }
    assert!(
        std::env::var_os("ATL_REQUIRE_NUMPY").is_none(),
        "ATL_REQUIRE_NUMPY is set but `python3 -c 'import numpy'` fails: run scripts/setup.sh"
    );
    say_skipped("python3 with numpy is not installed; run scripts/setup.sh to install it");
    false
}

/// The compiled libraries in `dir` (`libVARIANT.HASH.so`), sorted.
fn libraries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("lib") && n.ends_with(".so"))
        .collect();
    v.sort();
    v
}

#[test]
fn emit_python_writes_a_module_that_agrees_with_numpy() {
    if !numpy_or_skip() {
        return;
    }
    let dir = temp_dir("python");
    emit(&dir, "kernels.atl", "matvec_blocked", "py_matvec", "f32");
    emit(&dir, "kernels.atl", "rownorm", "py_rownorm", "f64");
    emit(&dir, "smm.atl", "smm_tiled", "py_smm", "f32");
    let out = run(Command::new("python3")
        .arg(project().join("check_kernels.py"))
        .arg(&dir)
        .env_remove("CFLAGS")
        .env_remove("ATL_PORTABLE"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(
            "ok: py_matvec, py_rownorm and py_smm agree with numpy in float32 and float64"
        ),
        "{stdout}"
    );
    // The module compiled both variants' shared objects next to itself, each named
    // with a 16-digit hash of its compile command and source.
    let libs = libraries(&dir);
    for variant in [
        "py_matvec_f32",
        "py_matvec_f64",
        "py_rownorm_f64",
        "py_smm_f32",
    ] {
        assert!(
            libs.iter().any(|l| {
                l.strip_prefix(&format!("lib{variant}."))
                    .and_then(|rest| rest.strip_suffix(".so"))
                    .is_some_and(|h| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()))
            }),
            "{variant}: {libs:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Calls the float32 variant of the module `py_matvec` in `dir` under `env` and returns
/// the compile command of its library, then the library's path (two lines).
fn build_of(dir: &Path, env: &[(&str, &str)]) -> (String, String) {
    let script = "import sys, numpy as np; sys.path.insert(0, sys.argv[1]); import py_matvec as m; \
                  m.py_matvec(np.ones((2, 3), np.float32), np.ones(3, np.float32)); \
                  b = m.BUILD['float32']; print(' '.join(b['command'])); print(b['library'])";
    let mut cmd = Command::new("python3");
    cmd.args(["-c", script])
        .arg(dir)
        .env_remove("CFLAGS")
        .env_remove("ATL_PORTABLE")
        .env_remove("CC");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = run(&mut cmd);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = stdout.lines();
    let command = lines.next().unwrap_or_default().to_string();
    let library = lines.next().unwrap_or_default().to_string();
    (command, library)
}

#[test]
fn python_builds_for_this_machine_unless_portable() {
    if !numpy_or_skip() {
        return;
    }
    let dir = temp_dir("python-modes");
    emit(&dir, "kernels.atl", "matvec_blocked", "py_matvec", "f32");
    let flags = |c: &str| c.split(' ').map(str::to_string).collect::<Vec<_>>();

    // The default: for this machine, with the contraction flag of `--fp fast`.
    let (native, native_lib) = build_of(&dir, &[]);
    let f = flags(&native);
    for flag in ["-O3", "-march=native", "-ffp-contract=fast", "-std=c99"] {
        assert!(f.iter().any(|a| a == flag), "{flag} in {native}");
    }
    // Reused, not rebuilt, by the next process with the same flags.
    let modified = std::fs::metadata(&native_lib)
        .and_then(|m| m.modified())
        .expect("lib");
    assert_eq!(build_of(&dir, &[]), (native.clone(), native_lib.clone()));
    let again = std::fs::metadata(&native_lib)
        .and_then(|m| m.modified())
        .expect("lib");
    assert_eq!(modified, again, "the cached library was rebuilt");

    // Portable: -O3 without -march=native, into another library (the cache is keyed
    // on the flags, so the native one is not reused).
    let (portable, portable_lib) = build_of(&dir, &[("ATL_PORTABLE", "1")]);
    let f = flags(&portable);
    assert!(f.iter().any(|a| a == "-O3"), "{portable}");
    assert!(!portable.contains("-march"), "{portable}");
    assert_ne!(portable_lib, native_lib);

    // CFLAGS replaces the default flags (not the contraction flag).
    let (custom, custom_lib) = build_of(&dir, &[("CFLAGS", "-O1 -g")]);
    let f = flags(&custom);
    assert!(
        f.iter().any(|a| a == "-O1") && f.iter().any(|a| a == "-g"),
        "{custom}"
    );
    assert!(
        !custom.contains("-O3") && !custom.contains("-march"),
        "{custom}"
    );
    assert!(f.iter().any(|a| a == "-ffp-contract=fast"), "{custom}");
    assert!(custom_lib != native_lib && custom_lib != portable_lib);

    // A compiler that rejects -march=native: the module builds without it.
    let cc = dir.join("cc-without-native");
    std::fs::write(
        &cc,
        "#!/bin/sh\nfor a in \"$@\"; do\n  if [ \"$a\" = -march=native ]; then\n    \
         echo 'error: unsupported option -march=native' >&2; exit 1\n  fi\ndone\nexec cc \"$@\"\n",
    )
    .expect("write the wrapper");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&cc, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let cc = cc.to_str().expect("utf-8 path").to_string();
    let (fallback, fallback_lib) = build_of(&dir, &[("CC", &cc)]);
    assert!(fallback.starts_with(&cc), "{fallback}");
    assert!(!fallback.contains("-march"), "{fallback}");
    assert!(fallback.contains("-O3"), "{fallback}");
    assert!(std::path::Path::new(&fallback_lib).is_file());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn python_conflicts_with_other_outputs() {
    let out = Command::new(env!("CARGO_BIN_EXE_atl"))
        .arg("emit")
        .arg(project().join("kernels.atl"))
        .args(["--python", "/tmp/x", "-o", "/tmp/x.c"])
        .output()
        .expect("atl runs");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn emit_python_fp_strict_compiles_without_contraction() {
    // The module compiles its C on first use; under `--fp strict` with
    // `-ffp-contract=off` (no numpy needed to read the module's text).
    let dir = temp_dir("python-strict");
    run(Command::new(env!("CARGO_BIN_EXE_atl"))
        .arg("emit")
        .arg(project().join("kernels.atl"))
        .args(["--def", "matvec", "--name", "strict_k", "--python"])
        .arg(&dir)
        .args(["--fp", "strict"]));
    let py = std::fs::read_to_string(dir.join("strict_k.py")).expect("the module");
    assert!(py.contains("\"-ffp-contract=off\""), "{py}");
    assert!(!py.contains("\"-ffp-contract=fast\""), "{py}");
    for variant in ["f32", "f64"] {
        let h =
            std::fs::read_to_string(dir.join(format!("strict_k_{variant}.h"))).expect("the header");
        assert!(h.contains("-ffp-contract=off"), "{h}");
    }
}

/// A compressed-row product: `pos` says where each row's stored values begin and end,
/// `crd` their columns.
const SPMV: &str = "size n, m, nnz
input pos : int[n + 1] in 0..nnz + 1 sorted
input crd : int[nnz] in 0..m
input vals : [nnz]
input v : [m]
def spmv = gen i < n: sum p in pos[i]..pos[i + 1]: vals[p] * v[crd[p]]
";

/// Index arrays through the Python module: checked against a product computed by hand
/// and against numpy's dense product of the matrix the arrays encode; an index array
/// that breaks its declaration, or holds a value beyond int32, raises ValueError
/// naming it (before any wrap-around could make it valid).
const SPMV_CHECK: &str = r#"
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import py_spmv as m

def raises(f, needles):
    try:
        f()
    except ValueError as e:
        for n in needles:
            assert n in str(e), (n, str(e))
        return
    raise AssertionError("no ValueError, expected one mentioning %s" % (needles,))

# [[1, 0, 2], [0, 3, 0]] times [1, 10, 100], by hand: [201, 30].
r = m.py_spmv([0, 2, 3], [0, 2, 1], np.array([1, 2, 3], np.float64), np.array([1, 10, 100], np.float64), n=2)
assert r.dtype == np.float64 and r.tolist() == [201.0, 30.0], r

# 4 x 5, an empty row, a full one; int64 and uint16 arrays (numpy's defaults are not
# int32), in both dtypes, against numpy's dense product.
pos = np.array([0, 2, 2, 7, 9], np.int64)
crd = np.array([1, 4, 0, 1, 2, 3, 4, 0, 3], np.uint16)
vals = np.arange(1, 10, dtype=np.float64)
v = np.array([1.0, -2.0, 4.0, 0.5, 3.0])
dense = np.zeros((4, 5))
for i in range(4):
    for p in range(pos[i], pos[i + 1]):
        dense[i, crd[p]] += vals[p]
for dt in (np.float32, np.float64):
    r = m.py_spmv(pos, crd, vals.astype(dt), v.astype(dt), n=4)
    assert r.dtype == dt, r.dtype
    assert np.allclose(r, dense @ v, rtol=1e-6), (r, dense @ v)
# The arrays were converted, not changed.
assert pos.dtype == np.int64 and crd.dtype == np.uint16

# A column out of range: the kernel's entry check of `crd`, as its declaration says.
raises(lambda: m.py_spmv(pos, np.array([1, 4, 0, 1, 2, 3, 5, 0, 3]), vals, v, n=4), ["`crd`", "0 <= crd[k] < m"])
# Decreasing row starts: the check of `pos`.
raises(lambda: m.py_spmv([0, 2, 1, 7, 9], crd, vals, v, n=4), ["`pos`", "non-decreasing"])
# 2**32 + 1 would wrap around to 1, a valid column: refused before the cast.
big = crd.astype(np.int64)
big[0] = 2**32 + 1
raises(lambda: m.py_spmv(pos, big, vals, v, n=4), ["`crd`", "int32"])
print("ok: spmv through the module")
"#;

#[test]
fn python_passes_index_arrays_as_int32() {
    if !numpy_or_skip() {
        return;
    }
    let dir = temp_dir("python-spmv");
    let program = dir.join("spmv.atl");
    std::fs::write(&program, SPMV).expect("write the program");
    run(Command::new(env!("CARGO_BIN_EXE_atl"))
        .arg("emit")
        .arg(&program)
        .args(["--def", "spmv", "--name", "py_spmv", "--python"])
        .arg(&dir));
    let out = run(Command::new("python3")
        .args(["-c", SPMV_CHECK])
        .arg(&dir)
        .env_remove("CFLAGS")
        .env_remove("ATL_PORTABLE"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("ok: spmv through the module"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A kernel derived from a `sparse` matrix's product gets `sparse_A(matrix)` in its
/// module: the arrays (and the sizes the matrix fixes) from a `scipy.sparse` matrix of
/// any format, duplicates included, for `spmv(**sparse_A(M), v=v)`, which must equal
/// scipy's own product; a dense array is a TypeError. Skipped, saying so, without scipy.
#[test]
fn python_takes_scipy_sparse_matrices_for_sparse_inputs() {
    if !numpy_or_skip() {
        return;
    }
    let has_scipy = Command::new("python3")
        .args(["-c", "import scipy.sparse"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_scipy {
        say_skipped("python3 has no scipy; run scripts/setup.sh to install it");
        return;
    }
    let dir = temp_dir("python-scipy");
    let check = r#"
import sys
sys.path.insert(0, sys.argv[1])
keys = set(sys.argv[2].split(","))
import numpy as np, scipy.sparse as sp
import spmv as mod
rng = np.random.default_rng(7)
m = sp.random(60, 45, density=0.1, random_state=3, format="coo", dtype=np.float64)
# Entries stored twice add up, as in scipy's product; row 5 stores nothing (DCSR).
m = sp.coo_matrix((np.r_[m.data, m.data[:9]], (np.r_[m.row, m.row[:9]], np.r_[m.col, m.col[:9]])), shape=m.shape)
m = sp.coo_matrix(m.tocsr().multiply(np.arange(60)[:, None] != 5))
v = rng.standard_normal(45)
for given in (m, m.tocsr(), m.tocsc(), sp.csr_array(m)):
    args = mod.sparse_A(given)
    assert set(args) == keys, args.keys()
    assert (args["n"], args["m"]) == (60, 45)
    y = mod.spmv(**args, v=v)
    assert np.allclose(y, m @ v, rtol=1e-12, atol=1e-12), np.abs(y - m @ v).max()
# A matrix with no value: one explicit zero is stored (a size is at least 1).
z = sp.csr_matrix((60, 45))
y = mod.spmv(**mod.sparse_A(z), v=v)
assert y.shape == (60,) and not y.any(), y
try:
    mod.sparse_A(np.ones((3, 3)))
    raise SystemExit("a dense array was accepted")
except TypeError as e:
    assert "scipy.sparse" in str(e), e
print("ok: scipy.sparse through sparse_A")
"#;
    // Every matrix format's product (examples/spmv): CSR gathers, the others scatter.
    for (file, keys) in [
        ("spmv.atl", "pos,crd,vals,n,m"),
        ("spmv_csc.atl", "pos,crd,vals,n,m"),
        ("spmv_coo.atl", "row,col,vals,n,m"),
        ("spmv_dcsr.atl", "pos1,crd1,pos2,crd2,vals,n,m"),
    ] {
        let module = dir.join(file.trim_end_matches(".atl"));
        run(Command::new(env!("CARGO_BIN_EXE_atl"))
            .arg("emit")
            .arg(project().join("../../spmv").join(file))
            .args(["--def", "spmv", "--python"])
            .arg(&module));
        let out = run(Command::new("python3")
            .args(["-c", check])
            .arg(&module)
            .arg(keys)
            .env_remove("CFLAGS")
            .env_remove("ATL_PORTABLE"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("ok: scipy.sparse through sparse_A"),
            "{file}: {stdout}"
        );
    }
    // One matrix in five storages (examples/sparse/spmv.atl): each kernel's helper
    // gives its own storage's arrays and sizes only; BCSR's pads 60 x 45 to whole
    // 4 x 4 blocks.
    let check = check
        .replace(r#"(args["n"], args["m"])"#, r#"(args["M"], args["N"])"#)
        .replace("v=v", "x=v");
    for (def, keys) in [
        ("csr", "csr_pos,csr_crd,csr_vals,M,N"),
        ("csc", "csc_pos,csc_crd,csc_vals,M,N"),
        (
            "dcsr",
            "dcsr_pos1,dcsr_crd1,dcsr_pos2,dcsr_crd2,dcsr_vals,M,N",
        ),
        ("coo", "coo_row,coo_col,coo_vals,M,N"),
        ("bcsr", "bcsr_pos,bcsr_crd,bcsr_vals,M,N"),
    ] {
        let module = dir.join(format!("storage_{def}"));
        run(Command::new(env!("CARGO_BIN_EXE_atl"))
            .arg("emit")
            .arg(project().join("../../sparse/spmv.atl"))
            .args(["--def", def, "--name", "spmv", "--python"])
            .arg(&module));
        let out = run(Command::new("python3")
            .args(["-c", &check])
            .arg(&module)
            .arg(keys)
            .env_remove("CFLAGS")
            .env_remove("ATL_PORTABLE"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("ok: scipy.sparse through sparse_A"),
            "{def}: {stdout}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// numpy's column-major array is what the kernel of `examples/colmajor` reads: `A` passed as
/// `numpy.asfortranarray` (in place, its memory in the declared order) gives `A @ B`,
/// and a C-ordered `A` is a TypeError saying what to pass, never a wrong product.
const COLUMN_MAJOR_CHECK: &str = r#"
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import py_colmajor
rng = np.random.default_rng(7)
for dtype, tol in ((np.float32, 1e-4), (np.float64, 1e-12)):
    for m, n, k in ((5, 9, 3), (8, 16, 1), (13, 7, 21)):
        a = np.asfortranarray(rng.standard_normal((m, k)).astype(dtype))
        b = rng.standard_normal((k, n)).astype(dtype)
        got = py_colmajor.py_colmajor(a, b)
        want = a.astype(np.float64) @ b.astype(np.float64)
        assert got.dtype == dtype and got.shape == (m, n), (got.dtype, got.shape)
        assert np.abs(got - want).max() <= tol * max(1.0, np.abs(want).max()), (m, n, k)
try:
    py_colmajor.py_colmajor(np.ones((3, 2)), np.ones((2, 4)))
except TypeError as e:
    assert "asfortranarray" in str(e), e
else:
    raise AssertionError("a C-ordered A was accepted")
print("ok: a column-major A through the module")
"#;

#[test]
fn python_passes_a_column_major_input_in_place() {
    if !numpy_or_skip() {
        return;
    }
    let dir = temp_dir("python-colmajor");
    run(Command::new(env!("CARGO_BIN_EXE_atl"))
        .arg("emit")
        .arg(project().join("../../colmajor/colmajor.atl"))
        .args(["--def", "fast", "--name", "py_colmajor", "--python"])
        .arg(&dir));
    let out = run(Command::new("python3")
        .args(["-c", COLUMN_MAJOR_CHECK])
        .arg(&dir)
        .env_remove("CFLAGS")
        .env_remove("ATL_PORTABLE"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("ok: a column-major A through the module"),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

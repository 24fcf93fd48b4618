//! A compile-time limit stops the C compiler — the driver and the compiler proper it
//! started (`cc1`), which a plain kill of the driver would leave running — and says so
//! with E0930; within the limit, nothing changes.

use std::time::{Duration, Instant};

use atl_emit_c::{CompileOptions, Dtype, EmitOptions, compile};

/// A kernel GCC takes a while over at -O3: a register tile of constant extents with
/// nested constant sums, which it unrolls completely.
const HEAVY: &str = "size n\ninput a : [n, 64]\ninput b : [64, 64]\n\
    def heavy = gen i < n: gen j < 64: sum k < 64: a[i, k] * b[k, j] * a[i, k] + b[k, j]\n";

fn kernel() -> atl_lower::Kernel {
    let (checked, diags) = atl_lang::check_source(HEAVY);
    let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
    atl_lower::lower_def(
        &checked.program,
        &checked.shapes,
        "heavy",
        &Default::default(),
    )
    .expect("lowers")
}

fn emit(symbol: Option<&str>) -> EmitOptions {
    EmitOptions {
        dtype: Dtype::F32,
        symbol: symbol.map(str::to_string),
        fp: atl_emit_c::Fp::Fast,
    }
}

/// Whether process `pid` is still running (not gone, not a zombie).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            stat.rsplit(')')
                .next()
                .map(|rest| rest.trim_start().to_string())
        })
        .is_some_and(|state| !state.starts_with('Z') && !state.starts_with('X'))
}

/// The compiler is a script that starts a child (as GCC's driver starts `cc1`) that
/// would run for a minute, and records its process id. The compile runs in a copy of
/// this test binary (`slow_compiler_probe`) started with `CC` pointing at the script.
#[test]
fn a_compiler_past_its_limit_is_stopped_with_e0930_and_its_children_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("child.pid");
    let script = dir.path().join("slow-cc");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncase \"$*\" in\n  *limit_probe*) sleep 60 & echo $! > '{}'; wait ;;\n  *) exec cc \"$@\" ;;\nesac\n",
            marker.display()
        ),
    )
    .expect("script");
    let status = std::process::Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .expect("chmod");
    assert!(status.success());
    let start = Instant::now();
    let probe = std::process::Command::new(std::env::current_exe().expect("this test"))
        .args(["--exact", "slow_compiler_probe", "--ignored", "--nocapture"])
        .env("CC", &script)
        .env("ATL_SLOW_CC_PROBE", "1")
        .output()
        .expect("the probe runs");
    assert!(
        probe.status.success(),
        "{}",
        String::from_utf8_lossy(&probe.stdout)
    );
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    let pid: u32 = std::fs::read_to_string(&marker)
        .expect("the script started its child")
        .trim()
        .parse()
        .expect("a process id");
    let deadline = Instant::now() + Duration::from_secs(3);
    while running(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!running(pid), "the compiler's child survived its limit");
}

/// The compile of the test above, under the slow compiler.
#[test]
#[ignore = "run by a_compiler_past_its_limit_is_stopped_with_e0930_and_its_children_too"]
fn slow_compiler_probe() {
    if std::env::var_os("ATL_SLOW_CC_PROBE").is_none() {
        return;
    }
    let options = CompileOptions {
        time_limit: Some(Duration::from_millis(1500)),
        ..CompileOptions::default()
    };
    let Err(d) = compile(&kernel(), &emit(Some("limit_probe")), &options) else {
        panic!("the slow compiler finished");
    };
    assert_eq!(d.code, "E0930", "{d:?}");
}

#[test]
fn within_its_limit_the_compiler_runs_as_without_one() {
    let options = CompileOptions {
        time_limit: Some(Duration::from_secs(120)),
        ..CompileOptions::default()
    };
    let compiled = compile(&kernel(), &emit(None), &options).expect("compiles within 120 s");
    let sizes = std::collections::BTreeMap::from([("n".to_string(), 2)]);
    let a = atl_lang::interp::Tensor::random(vec![2, 64], 1);
    let b = atl_lang::interp::Tensor::random(vec![64, 64], 2);
    let inputs = std::collections::BTreeMap::from([
        ("a".to_string(), a.clone()),
        ("b".to_string(), b.clone()),
    ]);
    let out = compiled.run(&sizes, &inputs).expect("runs").output;
    // out[i, j] = sum_k a[i,k] * b[k,j] * a[i,k] + b[k,j], computed here.
    for i in 0..2 {
        for j in 0..64 {
            let want: f64 = (0..64)
                .map(|k| {
                    a.data[i * 64 + k] * b.data[k * 64 + j] * a.data[i * 64 + k]
                        + b.data[k * 64 + j]
                })
                .sum();
            let got = out.data[i * 64 + j];
            assert!(
                (got - want).abs() <= 1e-4 * want.abs().max(1.0),
                "({i}, {j}): {got} vs {want}"
            );
        }
    }
}

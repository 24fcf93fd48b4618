//! `vector_width N` reaches the compiler: the derivation's width is carried by the
//! kernel (its loop-IR text too, which reads back equal) and printed as GCC's
//! `prefer-vector-width` target pragma around the helpers and the kernel, stated in the
//! header; and GCC honours it: compiled for an AVX-512 target, the kernel's vector
//! code uses 512-bit registers at 512 and none at 256 (whatever the target's default).

#[path = "../../lower/tests/support/mod.rs"]
mod support;

use std::process::Command;

use atl_emit_c::{Dtype, EmitOptions, Fp, emit};
use atl_lower::Kernel;

const SOURCE: &str = "size n\ninput f : [n]\ninput g : [n]\n\
                      def axpy = gen i < n: 2 * f[i] + g[i]\n\
                      derive axpy256 from axpy {\n  vector_width 256\n}\n\
                      derive axpy512 from axpy {\n  vector_width 512\n}\n";

fn kernel(def: &str) -> Kernel {
    support::derived_kernel(SOURCE, def).1
}

fn c_source(kernel: &Kernel) -> String {
    let options = EmitOptions {
        dtype: Dtype::F32,
        symbol: None,
        fp: Fp::Fast,
    };
    emit(kernel, &options).expect("emits").source
}

#[test]
fn the_width_is_part_of_the_kernel_and_of_its_c() {
    assert_eq!(kernel("axpy").vector_width, None);
    assert!(!c_source(&kernel("axpy")).contains("prefer-vector-width"));
    for bits in [256, 512] {
        let k = kernel(&format!("axpy{bits}"));
        assert_eq!(k.vector_width, Some(bits));
        let text = atl_loopir::print::kernel_to_text(&k);
        assert!(text.contains(&format!("  vector_width {bits}\n")), "{text}");
        let back = atl_loopir::parse::parse_kernel(&text).expect("reads back");
        assert_eq!(back, k);
        let c = c_source(&k);
        let pragma = format!("#pragma GCC target(\"prefer-vector-width={bits}\")");
        let at = c.find(&pragma).expect("the pragma");
        // Before the helpers and the kernel, after the header comment that states it.
        assert!(at < c.find("int axpy").expect("the kernel"), "{c}");
        assert!(c[..at].contains(&format!("`vector_width {bits}`")), "{c}");
        assert!(c.contains("#pragma GCC pop_options"), "{c}");
    }
}

#[test]
fn a_width_that_is_no_vector_width_does_not_read_back() {
    let text = atl_loopir::print::kernel_to_text(&kernel("axpy256"));
    let edited = text.replace("vector_width 256", "vector_width 384");
    let err = atl_loopir::parse::parse_kernel(&edited).expect_err("refused");
    assert!(err.iter().any(|d| d.message.contains("384")), "{err:?}");
}

/// The kernel's assembly for an AVX-512 target, or None without GCC on x86-64.
fn assembly(kernel: &Kernel) -> Option<String> {
    if !cfg!(target_arch = "x86_64") {
        return None;
    }
    let version = Command::new("cc").arg("--version").output().ok()?;
    if !String::from_utf8_lossy(&version.stdout).contains("Free Software Foundation") {
        return None;
    }
    let dir = tempfile::tempdir().expect("a scratch directory");
    let c = dir.path().join("k.c");
    std::fs::write(&c, c_source(kernel)).expect("written");
    let s = dir.path().join("k.s");
    let status = Command::new("cc")
        .args(["-O3", "-march=x86-64-v4", "-std=c99", "-S", "-o"])
        .arg(&s)
        .arg(&c)
        .status()
        .expect("cc runs");
    assert!(status.success());
    Some(std::fs::read_to_string(&s).expect("assembly"))
}

#[test]
fn gcc_uses_the_width_asked_for() {
    let (Some(wide), Some(narrow)) = (assembly(&kernel("axpy512")), assembly(&kernel("axpy256")))
    else {
        return;
    };
    assert!(wide.contains("%zmm"), "no 512-bit code at 512:\n{wide}");
    assert!(!narrow.contains("%zmm"), "512-bit code at 256:\n{narrow}");
    assert!(narrow.contains("%ymm"), "no 256-bit code at 256:\n{narrow}");
}

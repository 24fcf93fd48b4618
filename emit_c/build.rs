//! Records the target and host triples so that the library can ask the `cc` crate
//! for the C compiler of the platform it was built for (outside a build script, `cc`
//! cannot read them from the environment).

#![allow(clippy::print_stdout)]

fn main() {
    for var in ["TARGET", "HOST"] {
        let value = std::env::var(var).unwrap_or_default();
        println!("cargo:rustc-env=ATL_EMIT_C_{var}={value}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}

//! Compiles the two kernels of `kernels.atl` with atl-build: each call runs the pipeline
//! of `atl emit` (checks, derivation replayed, gate, lowering, translation validation),
//! compiles the C (with OpenMP where the compiler has it), writes the Rust bindings to
//! `OUT_DIR/NAME.rs` and prints the directives Cargo needs (`rerun-if-changed`, the
//! libraries to link). A refused kernel fails the build with its diagnostic.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    atl_build::Kernel::new("kernels.atl")
        .def("matvec_blocked")
        .name("demo_matvec")
        .build();
    atl_build::Kernel::new("kernels.atl")
        .def("rownorm")
        .name("demo_rownorm")
        .dtype(atl_build::Dtype::F64)
        .build();
}

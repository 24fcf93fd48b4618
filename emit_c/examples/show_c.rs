//! Prints the C of one definition of an `.atl` file (derivations included), and the
//! compiler command line `cc` detects: `cargo run -p atl-emit-c --example show_c --
//! FILE DEF [f32|f64]`.

#![allow(clippy::print_stdout, clippy::print_stderr)]

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let source = std::fs::read_to_string(&args[1]).expect("readable file");
    let (checked, diags) = atl_lang::check_source(&source);
    let Some(checked) = checked else {
        eprintln!("{diags:?}");
        return;
    };
    let (library, _) = atl_rewrites::Library::standard();
    let solver = atl_solver::Solver::new();
    let env = atl_rewrites::Env {
        program: &checked.program,
        shapes: &checked.shapes,
        library: &library,
        solver: &solver,
    };
    let (derivations, _) = atl_rewrites::run_derivations(&env);
    let (program, shapes) =
        atl_rewrites::with_derived(&checked.program, &checked.shapes, &derivations);
    let dtype = args
        .get(3)
        .and_then(|s| atl_emit_c::Dtype::parse(s))
        .unwrap_or_default();
    let kernel =
        atl_lower::lower_def(&program, &shapes, &args[2], &Default::default()).expect("lowers");
    let code = atl_emit_c::emit(
        &kernel,
        &atl_emit_c::EmitOptions {
            dtype,
            symbol: None,
            fp: atl_emit_c::Fp::Fast,
        },
    )
    .expect("emits");
    println!("{}\n{}", code.header, code.source);
}

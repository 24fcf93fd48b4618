//! Prints the loop IR of every definition (and derivation) of an `.atl` file:
//! `cargo run -p atl-lower --example show_ir -- FILE [DEF]`.

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
    let (derivations, ddiags) = atl_rewrites::run_derivations(&env);
    for d in ddiags {
        eprintln!("derivation failed: {}", d.message);
    }
    let (program, shapes) =
        atl_rewrites::with_derived(&checked.program, &checked.shapes, &derivations);
    for def in &program.defs {
        if args.len() > 2 && args[2] != def.name {
            continue;
        }
        match atl_lower::lower_def(&program, &shapes, &def.name, &Default::default()) {
            Ok(k) => println!("{}", atl_lower::kernel_to_string(&k)),
            Err(d) => println!("{}: error {}", def.name, d.message),
        }
    }
}

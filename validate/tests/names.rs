//! C names (issue 28, item 3: "C has one namespace, the loop IR several"): kernels
//! whose loop IR is right but whose C would not be — a name hiding another of another
//! kind, a name declared twice in one C block, a C keyword, a libm function, the
//! printer's reserved prefix, a name that is no C identifier, a clash of hoisted
//! buffers — are rejected with the clash named; kernels with distinct legal names,
//! however they reuse names in separate C blocks, are validated.

use atl_lang::ir::Program;
use atl_lang::shapes::ShapeEnv;
use atl_loopir::ir::{Kernel, Stmt, Val};
use atl_validate::{KernelVerdict, ObligationKind, Report, Source, validate};

/// The program of the reproducers.
const PROGRAM: &str = "size n\ninput f : [n]\ndef g = gen i < n: sum j < n: f[j]\n";

fn program() -> (Program, ShapeEnv) {
    let (checked, diags) = atl_lang::check_source(PROGRAM);
    let checked = checked.unwrap_or_else(|| panic!("the program checks: {diags:?}"));
    (checked.program, checked.shapes)
}

/// The loop-IR text of `g`, as `atl emit --ir` prints it: `for i` around `scalar acc =
/// 0`, `for j` accumulating `f[j]` into `acc`, and `out[i] = acc`.
fn lowered_text() -> String {
    let (program, shapes) = program();
    let kernel = atl_lower::lower_def_with(
        &program,
        &shapes,
        "g",
        &atl_solver::Solver::new(),
        &atl_lower::LowerOptions::default(),
    )
    .expect("lowers");
    let text = atl_loopir::kernel_to_text(&kernel);
    for piece in [
        "for i in 0..n",
        "scalar acc = 0",
        "for j in 0..n",
        "f[j @ (j)]",
    ] {
        assert!(text.contains(piece), "the lowering changed:\n{text}");
    }
    text
}

/// `text` with each `(from, to)` replaced, every one of them found.
fn edited(text: &str, edits: &[(&str, &str)]) -> String {
    let mut out = text.to_string();
    for (from, to) in edits {
        assert!(out.contains(from), "`{from}` not in:\n{out}");
        out = out.replace(from, to);
    }
    out
}

fn parse(text: &str) -> Kernel {
    atl_loopir::parse_kernel(text).unwrap_or_else(|d| panic!("{d:?}\n{text}"))
}

fn report(kernel: &Kernel) -> Report {
    let (program, shapes) = program();
    let source = Source {
        program: &program,
        shapes: &shapes,
        def: "g",
    };
    validate(kernel, Some(&source), &atl_solver::Solver::new())
}

/// The problems of the refuted well-formedness obligations of a rejected kernel.
fn name_problems(kernel: &Kernel) -> Vec<String> {
    let report = report(kernel);
    let KernelVerdict::Rejected { refuted, .. } = &report.verdict else {
        panic!("not rejected:\n{report}");
    };
    refuted
        .iter()
        .filter_map(|r| match &r.obligation.kind {
            ObligationKind::WellFormed { problem } | ObligationKind::CName { problem } => {
                Some(problem.clone())
            }
            _ => None,
        })
        .collect()
}

/// Asserts the kernel is rejected with a well-formedness problem containing `wanted`.
fn assert_rejected_with(kernel: &Kernel, wanted: &str) {
    let problems = name_problems(kernel);
    assert!(
        problems.iter().any(|p| p.contains(wanted)),
        "no problem says `{wanted}`: {problems:#?}"
    );
}

fn assert_validated(kernel: &Kernel) {
    let report = report(kernel);
    assert_eq!(report.verdict, KernelVerdict::Validated, "{report}");
}

/// Renames the scalar `from` (its declarations, reads and writes) to `to`.
fn rename_scalar(stmts: &mut [Stmt], from: &str, to: &str) {
    fn val(v: &mut Val, from: &str, to: &str) {
        match v {
            Val::Scalar(s) if s == from => *s = to.to_string(),
            Val::Neg(a) | Val::Select(_, a) | Val::Blend(_, a) => val(a, from, to),
            Val::Bin(_, a, b) => {
                val(a, from, to);
                val(b, from, to);
            }
            Val::Call(_, args) => args.iter_mut().for_each(|a| val(a, from, to)),
            _ => {}
        }
    }
    for s in stmts {
        match s {
            Stmt::For(l) => rename_scalar(&mut l.body, from, to),
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                rename_scalar(then_branch, from, to);
                rename_scalar(else_branch, from, to);
            }
            Stmt::Alloc { body, .. } => rename_scalar(body, from, to),
            Stmt::Decl { name, init } => {
                if name == from {
                    *name = to.to_string();
                }
                if let Some(v) = init {
                    val(v, from, to);
                }
            }
            Stmt::SetScalar { name, value, .. } => {
                if name == from {
                    *name = to.to_string();
                }
                val(value, from, to);
            }
            Stmt::Store { value, .. } => val(value, from, to),
            Stmt::Fill { .. } | Stmt::Fail { .. } => {}
        }
    }
}

/// The loop `j` renamed `to` (its header and the load of `f`).
fn loop_j_named(to: &str) -> Kernel {
    parse(&edited(
        &lowered_text(),
        &[
            ("for j in", &format!("for {to} in")),
            ("f[j @ (j)]", &format!("f[{to} @ ({to})]")),
        ],
    ))
}

// ---- the reproducers ------------------------------------------------------

#[test]
fn a_scalar_named_like_a_size_is_rejected() {
    // C's `double n` would hide the size: `j < n` would compare with 0.
    let k = parse(&edited(
        &lowered_text(),
        &[("scalar acc = 0", "scalar n = 0\n    scalar acc = 0")],
    ));
    assert_rejected_with(
        &k,
        "the scalar `n` declared in loop `i` hides the size `n`: C has one namespace",
    );
}

#[test]
fn a_loop_named_like_the_accumulator_is_rejected() {
    // C's `acc += …` would change the loop counter: the loop would never end.
    let k = loop_j_named("acc");
    assert_rejected_with(
        &k,
        "the loop variable `acc` in loop `i` hides the scalar `acc` declared in loop `i`",
    );
    assert_rejected_with(
        &k,
        "the scalar `acc` used in loop `acc` is, in C, the loop variable `acc`",
    );
}

#[test]
fn a_scalar_declared_twice_in_one_block_is_rejected() {
    let k = parse(&edited(
        &lowered_text(),
        &[("scalar acc = 0", "scalar acc = 0\n    scalar acc = 0")],
    ));
    assert_rejected_with(
        &k,
        "the scalar `acc` declared in loop `i` is a second declaration of `acc` in one C block",
    );
}

#[test]
fn a_loop_named_like_an_input_is_rejected() {
    assert_rejected_with(
        &loop_j_named("f"),
        "the loop variable `f` in loop `i` hides the input `f`",
    );
}

#[test]
fn a_loop_named_like_the_output_or_the_kernel_is_rejected() {
    assert_rejected_with(
        &loop_j_named("out"),
        "the loop variable `out` in loop `i` hides the output `out`",
    );
    assert_rejected_with(
        &loop_j_named("g"),
        "the loop variable `g` in loop `i` hides the kernel's C function `g`",
    );
    assert_rejected_with(
        &loop_j_named("g_set_threads"),
        "hides the kernel's C function `g_set_threads`",
    );
}

// ---- names C reserves ---------------------------------------------------------------

#[test]
fn a_c_keyword_is_rejected() {
    assert_rejected_with(
        &loop_j_named("int"),
        "the name of the loop variable `int` in loop `i` is a C keyword",
    );
}

#[test]
fn libm_names_are_rejected() {
    assert_rejected_with(
        &loop_j_named("sqrt"),
        "the name of the loop variable `sqrt` in loop `i` is a function of the C math library",
    );
    let mut k = parse(&lowered_text());
    rename_scalar(&mut k.body, "acc", "expf");
    assert_rejected_with(
        &k,
        "the name of the scalar `expf` declared in loop `i` is a function of the C math library",
    );
    let mut k = parse(&lowered_text());
    rename_scalar(&mut k.body, "acc", "INFINITY");
    assert_rejected_with(
        &k,
        "the name of the scalar `INFINITY` declared in loop `i` is a name the C library declares",
    );
}

#[test]
fn the_printers_reserved_prefix_is_rejected() {
    assert_rejected_with(
        &loop_j_named("atl__x"),
        "the name of the loop variable `atl__x` in loop `i` is reserved for the C printer's own names",
    );
    let mut k = parse(&lowered_text());
    rename_scalar(&mut k.body, "acc", "ATL__ACC");
    assert_rejected_with(
        &k,
        "`ATL__ACC` declared in loop `i` is reserved for the C printer",
    );
}

#[test]
fn a_name_that_is_no_c_identifier_is_rejected() {
    let mut k = parse(&lowered_text());
    rename_scalar(&mut k.body, "acc", "acc'");
    assert_rejected_with(
        &k,
        "the name of the scalar `acc'` declared in loop `i` is not a C identifier",
    );
}

// ---- buffers ------------------------------------------------------------------------

/// `g` with the sum accumulated in a one-element buffer `t`, hoisted around loop `i`
/// (zeroed again at every iteration).
fn hoisted(buffer: &str) -> String {
    format!(
        "kernel g(n; f: [n]) -> out: [n]\n  \
         requires n >= 1  # size: \"size `n` is at least 1\"\n  \
         source: gen i < n: sum j < n: f[j]\n\
         {{\n  \
         for i in 0..n {{  # gen; buffers: {buffer}\n    \
         alloc t[1] = zeros[1] {{  # in the buffer of loop i\n      \
         for j in 0..n {{  # sum\n        \
         t[0] += f[j @ (j)]  @ (0)\n      \
         }}\n      \
         out[i] = t[0 @ (0)]  @ (i)\n    \
         }}\n  \
         }}\n\
         }}\n"
    )
}

#[test]
fn a_hoisted_buffer_with_distinct_names_is_validated() {
    assert_validated(&parse(&hoisted("t")));
}

#[test]
fn hoisted_buffer_clashes_are_rejected() {
    // Hoisted under the name of the input.
    let k = parse(&edited(
        &hoisted("f"),
        &[("alloc t[1]", "alloc f[1]"), ("t[0", "f[0")],
    ));
    assert_rejected_with(
        &k,
        "the buffer `f` hoisted around loop `i` hides the input `f`",
    );
    // Declared twice around one loop.
    let k = parse(&hoisted("t, t"));
    assert_rejected_with(
        &k,
        "the buffer `t` hoisted around loop `i` is a second declaration of `t` in one C block",
    );
    // Named like the loop it is hoisted around.
    let k = parse(&edited(
        &hoisted("i"),
        &[("alloc t[1]", "alloc i[1]"), ("t[0", "i[0")],
    ));
    assert_rejected_with(
        &k,
        "the loop variable `i` at the top level hides the buffer `i` hoisted around loop `i`",
    );
    // An alloc in a hoisted buffer no loop around it declares: C has no `t`.
    let k = parse(&hoisted("u"));
    assert_rejected_with(
        &k,
        "the buffer `t` allocated in loop `i` is to reuse the buffer `t` hoisted around loop \
         `i`, which no loop around it declares",
    );
    // A scalar between the hoisted buffer and its alloc: C's `t` would be the scalar.
    let k = parse(&edited(
        &hoisted("t"),
        &[("    alloc t[1]", "    scalar t = 0\n    alloc t[1]")],
    ));
    assert_rejected_with(
        &k,
        "the scalar `t` declared in loop `i` hides the buffer `t` hoisted around loop `i`",
    );
    assert_rejected_with(
        &k,
        "is to reuse the buffer `t` hoisted around loop `i`, but the `t` C sees there is the \
         scalar `t` declared in loop `i`",
    );
}

#[test]
fn an_alloc_inside_an_alloc_of_the_same_name_is_rejected() {
    // Two `alloc t` nested: the inner C block's `t` hides the outer one.
    let text = "kernel g(n; f: [n]) -> out: [n]\n  \
                requires n >= 1  # size: \"size `n` is at least 1\"\n  \
                source: gen i < n: sum j < n: f[j]\n\
                {\n  \
                for i in 0..n {  # gen\n    \
                alloc t[1] = zeros[1] {  # stack\n      \
                alloc t[1] = zeros[1] {  # stack\n        \
                for j in 0..n {  # sum\n          \
                t[0] += f[j @ (j)]  @ (0)\n        \
                }\n        \
                out[i] = t[0 @ (0)]  @ (i)\n      \
                }\n    \
                }\n  \
                }\n\
                }\n";
    assert_rejected_with(
        &parse(text),
        "the buffer `t` allocated in loop `i` hides the buffer `t` allocated in loop `i`",
    );
}

// ---- legal names --------------------------------------------------------------------

#[test]
fn distinct_legal_names_are_validated() {
    assert_validated(&parse(&lowered_text()));
    let mut k = loop_j_named("k");
    rename_scalar(&mut k.body, "acc", "total");
    assert_validated(&k);
    // Names C does not reserve although they look like library names.
    let mut k = loop_j_named("j1");
    rename_scalar(&mut k.body, "acc", "expo");
    assert_validated(&k);
}

#[test]
fn a_name_reused_in_separate_c_blocks_is_validated() {
    // Two sibling loops over `i`, each with its own `acc` and `j`.
    let text = lowered_text();
    let start = text.find("  for i in 0..n").expect("the loop over i");
    let end = text.rfind('}').expect("the kernel's closing brace");
    let nest = &text[start..end];
    let twice = format!(
        "{}{}{}{}",
        &text[..start],
        nest.replacen("0..n", "0..1", 1),
        nest.replacen("0..n", "1..n", 1),
        &text[end..]
    );
    assert_validated(&parse(&twice));
}

/// The names lowering makes up (an accumulator `acc`, the copy loops `t`, `t1` of a
/// register tile) avoid the definitions' names, which are the kernels' default C
/// symbols: a definition named `acc`, or a derivation named `t1`, is not refused for
/// a clash with its own function (it was: "the loop variable `t1` in loop `t` hides
/// the kernel's C function `t1`").
#[test]
fn made_up_names_avoid_the_kernels_own_name() {
    let source = "\
size n, m, k
input A : [n, k]
input B : [k, m]
def acc = gen i < n: sum j < k: A[i, j]
def t = gen i < n, j < m: sum c < k: A[i, c] * B[c, j]
derive t1 from t {
  tile i, j by 2, 4 into io, jo, ii, ji
  reorder io, jo, c, ii, ji
}
";
    let (checked, diags) = atl_lang::check_source(source);
    let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
    let (lib, _) = atl_rewrites::Library::standard();
    let solver = atl_solver::Solver::new();
    let env = atl_rewrites::Env {
        program: &checked.program,
        shapes: &checked.shapes,
        library: &lib,
        solver: &solver,
    };
    let (derivations, diags) = atl_rewrites::run_derivations(&env);
    assert!(diags.is_empty(), "{diags:?}");
    let (program, shapes) =
        atl_rewrites::with_derived(&checked.program, &checked.shapes, &derivations);
    for def in ["acc", "t1"] {
        let kernel = atl_lower::lower_def_with(
            &program,
            &shapes,
            def,
            &solver,
            &atl_lower::LowerOptions::default(),
        )
        .expect("lowers");
        let report = validate(
            &kernel,
            Some(&Source {
                program: &program,
                shapes: &shapes,
                def,
            }),
            &solver,
        );
        assert_eq!(
            report.verdict,
            KernelVerdict::Validated,
            "`{def}`:\n{report}"
        );
    }
}

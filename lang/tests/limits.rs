//! Limits and crash resistance of the front end and the interpreter (issue 17, hole 6,
//! and the interpreter's shape check):
//!
//! - deeply nested inputs of every kind (prefix operators, parentheses, binders,
//!   guards, `let`s, operator chains, index and predicate nesting, accesses, reshapes,
//!   chains of definitions) are refused with E0210/E0211 at the place where the
//!   nesting limit is crossed, at sizes that used to overflow the stack (5,000) and just
//!   above the limit; just below the limit every stage of this crate (parse, resolve,
//!   shapes, interpreter, formatter) runs on a thread with the default main-thread stack
//!   of 8 MB;
//! - invalid UTF-8, rendered the way the CLI does (lossy text, the offset of the first
//!   bad byte), gives E0100 without a panic, wherever the bad bytes are;
//! - the interpreter refuses a negative static extent (E0508) instead of clamping it to
//!   an empty range, also where the value is never evaluated.

use std::collections::BTreeMap;

use atl_lang::diag::{Diagnostic, render_to_string};
use atl_lang::interp::{EvalOptions, Tensor, concrete_shape, eval_def};
use atl_lang::parser::{MAX_NESTING, parse_expr_str, parse_file, parse_index_str, parse_pred_str};
use atl_lang::pretty::{Style, format_source};
use atl_lang::resolve::resolve;
use atl_lang::span::Span;
use atl_lang::{check_source, diag};

/// The default stack of a process's main thread on Linux, which the limit is sized for
/// in optimized builds. Unoptimized frames are several times larger (the interpreter's
/// compiler takes about 34 KB per level in a debug build, 8.5 MB at the limit); the CLI
/// runs on a 256 MB stack for that reason, and these tests use 64 MB in debug builds.
const MAIN_STACK: usize = if cfg!(debug_assertions) {
    64 << 20
} else {
    8 << 20
};

/// Runs `f` on a thread with the main thread's stack size (test threads have 2 MB).
fn on_main_sized_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(MAIN_STACK)
        .spawn(f)
        .expect("spawn")
        .join()
        .expect("no panic")
}

const HEADER: &str = "size n\ninput f : [n]\ninput s : []\n";

/// Every kind of nesting, `n` levels deep, as a whole file. The comment says how deep
/// the syntax tree gets.
const KINDS: &[&str] = &[
    "neg",
    "paren",
    "plus",
    "mul",
    "concat",
    "sum",
    "gen",
    "binders",
    "guard",
    "let",
    "letv",
    "index_paren",
    "index_neg",
    "index_plus",
    "index_min",
    "access",
    "transpose",
    "pad",
    "concat_call",
    "not",
    "and",
    "pred_paren",
    "cmp",
    "range",
    "input",
    "assume",
    "defs",
];

fn deep(kind: &str, n: usize) -> String {
    let rep = |s: &str| s.repeat(n);
    let join = |s: &str, sep: &str| vec![s; n].join(sep);
    let body = match kind {
        "neg" => format!("def a = {}s", rep("-")),
        "paren" => format!("def a = {}s{}", rep("("), rep(")")),
        "plus" => format!("def a = {}", join("s", " + ")),
        "mul" => format!("def a = {}", join("s", " * ")),
        "concat" => format!("def a = {}", join("f", " ++ ")),
        "sum" => format!(
            "def a = {}s",
            (0..n)
                .map(|k| format!("sum i{k} < n: "))
                .collect::<String>()
        ),
        "gen" => format!(
            "def a = {}s",
            (0..n)
                .map(|k| format!("gen i{k} < 1: "))
                .collect::<String>()
        ),
        "binders" => format!(
            "def a = sum {}: s",
            (0..n)
                .map(|k| format!("i{k} < n"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        "guard" => format!("def a = {}s", rep("[n > 0] * ")),
        "let" => format!(
            "def a = {}s",
            (0..n)
                .map(|k| format!("let x{k} = s in "))
                .collect::<String>()
        ),
        "letv" => format!("def a = {}s{}", rep("let x = "), rep(" in x")),
        "index_paren" => format!("def a = f[{}0{}]", rep("("), rep(")")),
        "index_neg" => format!("def a = f[{}0]", rep("-")),
        "index_plus" => format!("def a = f[{}]", join("0", " + ")),
        "index_min" => format!("def a = f[{}0{}]", rep("min(0, "), rep(")")),
        "access" => format!("input t : [{}]\ndef a = t{}", join("1", ", "), rep("[0]")),
        "transpose" => format!(
            "input t : [n, n]\ndef a = {}t{}",
            rep("transpose("),
            rep(")")
        ),
        "pad" => format!("def a = {}f{}", rep("pad_r(1, "), rep(")")),
        "concat_call" => format!("def a = {}f{}", rep("concat(f, "), rep(")")),
        "not" => format!("def a = [{}true] * s", rep("!")),
        "and" => format!("def a = [{}] * s", join("n > 0", " && ")),
        "pred_paren" => format!("def a = [{}true{}] * s", rep("("), rep(")")),
        "cmp" => format!("def a = [{}] * s", join("0", " < ")),
        "range" => format!("def a = gen i < {}: s", join("n", " + ")),
        "input" => format!("input g : [{}]\ndef a = s", join("n", " + ")),
        "assume" => format!("assume {} > 0\ndef a = s", join("n", " + ")),
        "defs" => {
            let mut s = String::from("def a0 = s\n");
            for k in 0..n {
                s.push_str(&format!("def a{} = -a{k}\n", k + 1));
            }
            s
        }
        other => panic!("unknown kind {other}"),
    };
    format!("{HEADER}{body}\n")
}

fn codes(diags: &[Diagnostic]) -> Vec<&'static str> {
    diags.iter().map(|d| d.code).collect()
}

/// The nesting diagnostic of a refused file, checked for position and wording.
fn limit_error(kind: &str, source: &str) -> Diagnostic {
    let (checked, diags) = check_source(source);
    assert!(checked.is_none(), "{kind}: accepted");
    let ours: Vec<&Diagnostic> = diags
        .iter()
        .filter(|d| d.code == "E0210" || d.code == "E0211")
        .collect();
    assert_eq!(ours.len(), 1, "{kind}: {:?}", codes(&diags));
    let d = ours[0].clone();
    let span = d.primary.as_ref().expect("a position").span;
    assert!(
        span.end <= source.len() && span.start < span.end,
        "{kind}: {span:?}"
    );
    assert!(
        d.message.contains(&MAX_NESTING.to_string()),
        "{}",
        d.message
    );
    assert!(d.help.is_some(), "{kind}: says what to do");
    // Rendering works (and shows the code).
    assert!(render_to_string(std::slice::from_ref(&d), "deep.atl", source).contains(d.code));
    d
}

/// The largest `n` for which `deep(kind, n)` is accepted (binary search; acceptance is
/// monotone in `n`).
fn largest_accepted(kind: &str) -> usize {
    let accepted = |n: usize| check_source(&deep(kind, n)).0.is_some();
    assert!(
        accepted(2),
        "{kind} at 2: {:?}",
        check_source(&deep(kind, 2)).1
    );
    let (mut lo, mut hi) = (2, MAX_NESTING + 1);
    assert!(!accepted(hi), "{kind} at {hi}");
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if accepted(mid) { lo = mid } else { hi = mid }
    }
    lo
}

#[test]
fn the_limit_leaves_room_for_real_programs() {
    assert!((256..=1000).contains(&MAX_NESTING));
}

#[test]
fn deep_inputs_are_refused_with_a_diagnostic() {
    on_main_sized_stack(|| {
        for kind in KINDS {
            // Sizes that overflowed the stack before the limit, and just above it.
            for n in [5000, MAX_NESTING + 1] {
                let source = deep(kind, n);
                let d = limit_error(kind, &source);
                let expected = if *kind == "defs" { "E0211" } else { "E0210" };
                assert_eq!(d.code, expected, "{kind} at {n}");
            }
        }
    });
}

#[test]
fn the_diagnostic_points_where_the_limit_is_crossed() {
    on_main_sized_stack(|| {
        // Prefix minus: the first `-` beyond the limit.
        let source = deep("neg", 300);
        let d = limit_error("neg", &source);
        let first_minus = source.find('-').expect("a minus");
        assert_eq!(
            d.primary.as_ref().map(|l| l.span.start),
            Some(first_minus + MAX_NESTING)
        );
        // Nested sums: the binder head one past the limit.
        let source = deep("sum", 300);
        let d = limit_error("sum", &source);
        let start = d.primary.as_ref().map(|l| l.span.start).expect("span");
        assert!(
            source[start..].starts_with(&format!("sum i{MAX_NESTING} <")),
            "{}",
            &source[start..start + 20]
        );
        // A chain of definitions: the reference in the first definition that crosses.
        let source = deep("defs", 300);
        let d = limit_error("defs", &source);
        let start = d.primary.as_ref().map(|l| l.span.start).expect("span");
        let line_start = source[..start].rfind('\n').map_or(0, |p| p + 1);
        let line = source[line_start..].lines().next().unwrap_or("");
        // `a0` has depth 1 and each `-a{k}` adds one level.
        assert_eq!(line, format!("def a{MAX_NESTING} = -a{}", MAX_NESTING - 1));
    });
}

#[test]
fn standalone_parsers_and_steps_have_the_limit_too() {
    on_main_sized_stack(|| {
        let deep_index = format!("{}0", "-".repeat(5000));
        assert_eq!(codes(&parse_index_str(&deep_index).unwrap_err()), ["E0210"]);
        let deep_sum = vec!["n"; 5000].join(" + ");
        assert_eq!(codes(&parse_index_str(&deep_sum).unwrap_err()), ["E0210"]);
        let deep_pred = format!("{}true", "!".repeat(5000));
        assert_eq!(codes(&parse_pred_str(&deep_pred).unwrap_err()), ["E0210"]);
        let deep_and = vec!["n > 0"; 5000].join(" && ");
        assert_eq!(codes(&parse_pred_str(&deep_and).unwrap_err()), ["E0210"]);
        let deep_expr = vec!["s"; 5000].join(" + ");
        assert_eq!(codes(&parse_expr_str(&deep_expr).unwrap_err()), ["E0210"]);
        // Derivation steps: `with` values, `around` patterns and window bounds.
        let deep_with = format!(
            "{HEADER}def a = f\nderive b from a {{\n  rw tile_id with k := {}\n}}\n",
            vec!["n"; 5000].join(" + ")
        );
        let (_, diags) = parse_file(&deep_with);
        assert_eq!(codes(&diags), ["E0210"]);
        let deep_around = format!(
            "{HEADER}def a = f\nderive b from a {{\n  rw get_gen around ({})\n}}\n",
            vec!["s"; 5000].join(" * ")
        );
        let (_, diags) = parse_file(&deep_around);
        assert_eq!(codes(&diags), ["E0210"]);
        let deep_window = format!(
            "{HEADER}def a = f\nderive b from a {{\n  window x in 0..{}\n}}\n",
            vec!["n"; 5000].join(" + ")
        );
        let (_, diags) = parse_file(&deep_window);
        assert_eq!(codes(&diags), ["E0210"]);
    });
}

/// Just below the limit, every stage of this crate handles every kind of nesting on a
/// main-thread-sized stack (in debug builds too, where frames are largest).
#[test]
fn every_stage_runs_just_below_the_limit() {
    on_main_sized_stack(|| {
        for kind in KINDS {
            let n = largest_accepted(kind);
            // The measure is exact up to a level or two per construct.
            assert!(n + 3 >= MAX_NESTING, "{kind}: only {n} levels accepted");
            let source = deep(kind, n);
            let (checked, diags) = check_source(&source);
            let checked = checked.unwrap_or_else(|| panic!("{kind}: {:?}", codes(&diags)));
            let program = &checked.program;
            let def = &program.defs.last().expect("a definition").name;
            let sizes = BTreeMap::from([("n".to_string(), 1)]);
            let shapes = atl_lang::interp::input_shapes(program, &sizes, &EvalOptions::default())
                .expect("input shapes");
            let inputs: BTreeMap<String, Tensor> = shapes
                .into_iter()
                .map(|(name, shape)| (name, Tensor::random(shape, 7)))
                .collect();
            let value = eval_def(program, def, &sizes, &inputs, &EvalOptions::default())
                .unwrap_or_else(|d| {
                    panic!("{kind}: {}", render_to_string(&[d], "deep.atl", &source))
                });
            // The value is right where it is easy to say what it is.
            let s = inputs["s"].data[0];
            match *kind {
                "neg" => assert_eq!(value.data, [if n.is_multiple_of(2) { s } else { -s }]),
                "plus" => assert_eq!(
                    value.data,
                    [(0..n).fold(0.0, |acc, k| if k == 0 { s } else { acc + s })]
                ),
                "defs" => assert_eq!(value.data, [if n.is_multiple_of(2) { s } else { -s }]),
                "concat" => assert_eq!(value.shape, [n]),
                "pad" => assert_eq!(value.shape, [n + 1]),
                _ => {}
            }
            for style in [Style::default(), Style { unicode: true }] {
                let formatted = format_source(&source, style)
                    .unwrap_or_else(|d| panic!("{kind}: {:?}", codes(&d)));
                // The formatter may add parentheses (`f[-(-(0))]`), which can take a
                // program near the limit over it: then the output is refused like any
                // other deep input, never crashes.
                let (again, diags) = check_source(&formatted);
                assert!(
                    again.is_some() || codes(&diags) == ["E0210"],
                    "{kind} formatted: {:?}",
                    codes(&diags)
                );
            }
        }
    });
}

/// The CLI reads a file as bytes; if they are not UTF-8 it renders E0100 at the first
/// bad byte over the lossily decoded text (`cli/src/load.rs`, `read_source`). The offset
/// then lands inside a replacement character (3 bytes), which made ariadne panic.
fn render_like_the_cli(bytes: &[u8]) -> String {
    let err = String::from_utf8(bytes.to_vec()).expect_err("invalid UTF-8");
    let offset = err.utf8_error().valid_up_to();
    let source = String::from_utf8_lossy(bytes).into_owned();
    let d = Diagnostic::error("E0100", "the file is not valid UTF-8")
        .at(Span::new(offset, offset + 1), "invalid byte here")
        .with_help("ATL sources are UTF-8 text");
    std::panic::catch_unwind(|| render_to_string(&[d], "bad.atl", &source))
        .unwrap_or_else(|_| panic!("rendering panicked for {bytes:?}"))
}

#[test]
fn invalid_utf8_is_reported_without_a_panic() {
    let cases: &[(&[u8], usize)] = &[
        // (file, line of the first bad byte)
        (b"size n\ninput f : [n]\ndef a = f\xff\n", 3),
        (
            b"size n\ninput f : [n]\n# comment \xff\xfe here\ndef a = f\n",
            3,
        ),
        // A multi-byte character cut in the middle, then text.
        (b"size n\ninput f : [n]\ndef a = f # \xe2\x88 x\n", 3),
        // Cut at the very end of the file.
        (b"size n\ninput f : [n]\ndef a = f\xe2\x88", 3),
        (b"\xff", 1),
        (b"\x80size n\n", 1),
        // Next to valid multi-byte characters and with other errors in the file.
        (
            b"size n\ninput f : [n]\ndef a = g $ \xce\xa3\xff\xce\xa3\n",
            3,
        ),
        // An overlong encoding after a byte-order mark.
        (b"\xef\xbb\xbfsize n\xc0\x80\n", 1),
    ];
    for (bytes, line) in cases {
        let text = render_like_the_cli(bytes);
        assert!(text.contains("E0100"), "{text}");
        assert!(text.contains(&format!("bad.atl:{line}:")), "{text}");
        assert!(text.contains("invalid byte here"), "{text}");
    }
    // Any span inside a multi-byte character renders (it is widened to the character).
    let source = "def a = Σ Σ\n";
    let sigma = source.find('Σ').expect("sigma");
    for (start, end) in [
        (sigma + 1, sigma + 2),
        (sigma + 1, sigma + 1),
        (sigma, sigma + 1),
    ] {
        let d = Diagnostic::error("E0101", "x").at(Span::new(start, end), "here");
        let text = render_to_string(&[d], "u.atl", source);
        assert!(text.contains("E0101"), "{text}");
    }
}

/// Parses and resolves without shape checking: the interpreter must stand on its own
/// for programs that reach it by other routes (rewritten terms, library callers).
fn unchecked(source: &str) -> atl_lang::ir::Program {
    let (file, mut diags) = parse_file(source);
    let program = resolve(&file, &mut diags);
    assert!(!diag::has_errors(&diags), "{:?}", codes(&diags));
    program
}

fn inputs_at(n: usize) -> BTreeMap<String, Tensor> {
    BTreeMap::from([
        ("f".to_string(), Tensor::random(vec![n], 1)),
        ("g".to_string(), Tensor::random(vec![n], 2)),
    ])
}

fn eval_at(source: &str, n: i64) -> Result<Tensor, Diagnostic> {
    let program = unchecked(source);
    let sizes = BTreeMap::from([("n".to_string(), n)]);
    let def = &program.defs.last().expect("a definition").name;
    eval_def(
        &program,
        def,
        &sizes,
        &inputs_at(n as usize),
        &EvalOptions::default(),
    )
}

#[test]
fn negative_static_extents_are_errors_not_empty_ranges() {
    let header = "size n\ninput f : [n]\ninput g : [n]\n";
    // The reproducer of issue 17: static shape [2 * n - 5]; at n = 2 it evaluated to
    // two elements (the `gen` clamped to empty).
    let source = format!("{header}def a = (gen i < n - 5: f[i]) ++ g\n");
    let d = eval_at(&source, 2).expect_err("negative extent");
    assert_eq!(d.code, "E0508", "{d:?}");
    let span = d.primary.as_ref().expect("span").span;
    assert_eq!(&source[span.start..span.end], "gen i < n - 5: f[i]");
    assert!(
        d.message.contains("-3") && d.message.contains("n = 2"),
        "{}",
        d.message
    );
    // Where every extent is non-negative it evaluates, with the static shape.
    let value = eval_at(&source, 6).expect("n = 6");
    assert_eq!(value.shape, [7]);
    assert_eq!(value.data[0], inputs_at(6)["f"].data[0]);
    assert_eq!(value.data[1..], inputs_at(6)["g"].data[..]);
    // The shape alone is refused too.
    let program = unchecked(&source);
    let sizes = BTreeMap::from([("n".to_string(), 2)]);
    let d = concrete_shape(&program, &program.defs[0].body, &sizes).expect_err("shape");
    assert_eq!(d.code, "E0508");
    // Also where the value is never evaluated: under a false guard, in an empty sum,
    // in a `let` value that is never read, in a definition only referenced there.
    for body in [
        "[n > 10] * ((gen i < n - 5: f[i]) ++ g)",
        "sum j < n - 2: (gen i < n - 5: f[i]) ++ g",
        "let x = gen i in 3..n: f[i] in g",
        "gen j < n: ((gen i < n - 5: f[i]) ++ g)[j]",
    ] {
        let source = format!("{header}def a = {body}\n");
        let d = eval_at(&source, 2).expect_err(body);
        assert_eq!(d.code, "E0508", "{body}: {d:?}");
    }
    let source = format!("{header}def b = gen i < n - 3: f[i]\ndef a = [n > 5] * (b ++ g)\n");
    assert_eq!(eval_at(&source, 2).expect_err("def").code, "E0508");
    // Empty but not negative ranges are fine, and sums over backwards ranges are empty
    // sums (no extent is involved).
    let source = format!("{header}def a = (gen i < n - 2: f[i]) ++ g\n");
    assert_eq!(eval_at(&source, 2).expect("empty gen").shape, [2]);
    let source = format!("{header}def a = gen j < n: sum i < n - 5: f[i]\n");
    assert_eq!(eval_at(&source, 2).expect("empty sum").data, [0.0, 0.0]);
}

/// A chain of definitions evaluates on a main-sized stack however long it is: the
/// interpreter compiles definitions in order instead of nesting their compilation. The
/// front end refuses chains this long (E0211); the interpreter must not depend on that.
#[test]
fn long_chains_of_definitions_evaluate() {
    on_main_sized_stack(|| {
        let n = 5000;
        let (file, mut diags) = parse_file(&deep("defs", n));
        assert_eq!(codes(&diags), ["E0211"]);
        diags.clear();
        let program = resolve(&file, &mut diags);
        assert!(diags.is_empty(), "{:?}", codes(&diags));
        let sizes = BTreeMap::from([("n".to_string(), 1)]);
        let inputs = BTreeMap::from([("s".to_string(), Tensor::scalar(3.0))]);
        let value = eval_def(
            &program,
            &format!("a{n}"),
            &sizes,
            &inputs,
            &EvalOptions::default(),
        )
        .expect("evaluates");
        assert_eq!(value.data, [if n.is_multiple_of(2) { 3.0 } else { -3.0 }]);
    });
}

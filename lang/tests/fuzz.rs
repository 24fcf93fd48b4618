//! Robustness properties: no input makes the front end, the formatter or the
//! interpreter panic. Inputs are random byte strings and random mutations (deletions,
//! insertions of tokens or bytes, truncations) of the example and fixture programs.
//! Whatever is accepted by the checker must also format, re-check and evaluate (or be
//! refused by the interpreter with a diagnostic) without panicking.

use std::collections::BTreeMap;
use std::path::Path;

use atl_lang::interp::{EvalOptions, Tensor, concrete_shape, eval_def};
use atl_lang::pretty::{Style, format_source};
use proptest::prelude::*;

fn seeds() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    for dir in ["examples", "lang/test_data/ok", "lang/test_data/err"] {
        let mut stack = vec![root.join(dir)];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "atl")
                    && let Ok(s) = std::fs::read_to_string(&p)
                {
                    out.push(s);
                }
            }
        }
    }
    out.sort();
    assert!(out.len() >= 5, "fixtures found: {}", out.len());
    out
}

/// Runs everything a user could run on a source text.
fn exercise(source: &str) {
    let (checked, _diags) = atl_lang::check_source(source);
    let _ = format_source(source, Style::default());
    let Some(checked) = checked else { return };
    let formatted =
        format_source(source, Style { unicode: true }).expect("a checked program formats");
    assert!(
        atl_lang::check_source(&formatted).0.is_some(),
        "formatted program fails to check:\n{formatted}"
    );
    let program = &checked.program;
    let sizes: BTreeMap<String, i64> = program.sizes.iter().map(|s| (s.name.clone(), 3)).collect();
    let mut inputs = BTreeMap::new();
    for (k, input) in program.inputs.iter().enumerate() {
        let shape: Option<Vec<usize>> = input
            .shape
            .iter()
            .map(|d| {
                d.eval(&|n| sizes.get(n).copied())
                    .ok()
                    .and_then(|v| usize::try_from(v).ok())
            })
            .collect();
        if let Some(shape) = shape
            && shape.iter().product::<usize>() <= 1 << 12
        {
            inputs.insert(input.name.clone(), Tensor::random(shape, k as u64));
        }
    }
    let options = EvalOptions {
        max_elements: 1 << 14,
        ..EvalOptions::default()
    };
    for def in &program.defs {
        let _ = concrete_shape(program, &def.body, &sizes);
        let _ = eval_def(program, &def.name, &sizes, &inputs, &options);
    }
}

const TOKENS: &[&str] = &[
    "gen",
    "sum",
    "let",
    "in",
    "[",
    "]",
    "(",
    ")",
    ",",
    ":",
    "..",
    "<",
    "<=",
    "==",
    "+",
    "-",
    "*",
    "/",
    "%",
    "++",
    "0",
    "1",
    "-1",
    "99999999999",
    "n",
    "i",
    "f",
    "?e",
    "transpose(",
    "split(",
    "trunc_r(",
    "pad_l(",
    "cdiv(",
    "min(",
    "&&",
    "||",
    "!",
    "def x =",
    "size",
    "input g : [",
    "derive d from",
    "{",
    "}",
    "rw",
    "⊞",
    "Σ",
    "·",
    "≤",
    "#",
    "\n",
    "1e308",
    "0.5",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        exercise(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn mutated_programs_never_panic(
        seed in 0usize..1000,
        edits in proptest::collection::vec((0usize..10_000, 0usize..8, 0usize..TOKENS.len(), any::<u8>()), 1..4),
    ) {
        let seeds = seeds();
        let mut text: Vec<u8> = seeds[seed % seeds.len()].clone().into_bytes();
        for (pos, kind, tok, byte) in edits {
            let at = if text.is_empty() { 0 } else { pos % (text.len() + 1) };
            match kind {
                0 => text.truncate(at),
                1 | 2 => {
                    let end = (at + 1 + pos % 7).min(text.len());
                    text.drain(at..end);
                }
                3 => text.insert(at, byte),
                _ => {
                    let t = format!(" {} ", TOKENS[tok]);
                    text.splice(at..at, t.bytes());
                }
            }
        }
        exercise(&String::from_utf8_lossy(&text));
    }
}

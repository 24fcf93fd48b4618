//! The shape discipline (issue 17, holes 1–3): a step may use a guard's or an
//! enclosing range's facts for values, never for shapes. Each program here has a
//! derivation that the engine accepts; the derived definition must evaluate exactly
//! like its source at every size 1..=9 (the reproducers of the issue and variants
//! with other constants, `max`, `cdiv` and other binders). Before the fix, `simpl`
//! rewrote the extents below using the guard's or the range's facts and the results
//! differed (e.g. hole 1 at n = 5: [0.133, 0.492, …] vs [0, 0.133, …]).

use std::collections::BTreeMap;

mod common;

use atl_lang::diag::render_to_string;
use atl_lang::interp::{EvalOptions, Tensor, eval_def, input_shapes};
use atl_rewrites::with_derived;

/// Derives `b` from `a` and compares them bit for bit at n = 1..=9.
fn derives_and_agrees(source: &str) {
    let (checked, derivations, diags) = common::derive(source);
    assert!(
        diags.is_empty(),
        "{}",
        render_to_string(&diags, "test.atl", source)
    );
    let (program, _) = with_derived(&checked.program, &checked.shapes, &derivations);
    let options = EvalOptions::default();
    for n in 1..=9 {
        let sizes = BTreeMap::from([("n".to_string(), n)]);
        let shapes = input_shapes(&program, &sizes, &options).expect("sizes are valid");
        let inputs: BTreeMap<String, Tensor> = shapes
            .into_iter()
            .enumerate()
            .map(|(k, (name, s))| {
                (
                    name.clone(),
                    atl_lang::interp::random_input_named(&program, &name, s, &sizes, 40 + k as u64),
                )
            })
            .collect();
        let a = eval_def(&program, "a", &sizes, &inputs, &options).expect("a evaluates");
        let b = eval_def(&program, "b", &sizes, &inputs, &options).expect("b evaluates");
        assert_eq!(a.shape, b.shape, "n = {n}\n{source}");
        let same = a
            .data
            .iter()
            .zip(&b.data)
            .all(|(x, y)| x.to_bits() == y.to_bits());
        assert!(
            same,
            "n = {n}: a = {:?}, b = {:?}\n{source}",
            a.data, b.data
        );
    }
}

fn program(def: &str, steps: &str) -> String {
    format!("size n\ninput f : [n]\ndef a = {def}\nderive b from a {{ {steps} }}\n")
}

#[test]
fn simpl_keeps_extents_under_a_guard() {
    // Hole 1 as reported, and with other constants and comparisons.
    for (guard, c) in [("n <= 4", 4), ("n < 3", 3), ("n <= 7", 7), ("n == 2", 2)] {
        derives_and_agrees(&program(
            &format!(
                "gen j < n: (([{guard}] * (gen i < min(n, {c}): f[i])) ++ f)[j + min(n, {c})]"
            ),
            "simpl",
        ));
    }
    // `max` under a lower bound.
    derives_and_agrees(&program(
        "gen j < n: (([n >= 3] * (gen i < max(n, 3): f[i % n])) ++ f)[j + max(n, 3)]",
        "simpl",
    ));
}

#[test]
fn simpl_keeps_extents_under_a_range() {
    // Hole 1's variant without a guard: inside `sum i < n - 4` (empty when n < 5).
    derives_and_agrees(&program(
        "gen j < n: ((sum i < n - 4: gen k < min(n, 5): f[k]) ++ f)[j + min(n, 5)]",
        "simpl",
    ));
    derives_and_agrees(&program(
        "gen j < n: ((sum i < n - 2: gen k < cdiv(min(n, 3), 1): f[k]) ++ f)[j + min(n, 3)]",
        "simpl",
    ));
}

#[test]
fn simpl_keeps_reshape_amounts_under_a_guard() {
    derives_and_agrees(&program(
        "gen j < n: (([n <= 4] * pad_r(min(n, 4), f)) ++ f)[j + n + min(n, 4)]",
        "simpl",
    ));
}

#[test]
fn simpl_still_simplifies_values_under_a_guard() {
    // Values may use the guard's facts: `min(n, 4)` in an index becomes `n` there.
    let source = program("gen j < n: [n <= 4] * f[min(n, 4) - 1 - j]", "simpl");
    derives_and_agrees(&source);
    let (_, derivations, _) = common::derive(&source);
    let text = atl_lang::pretty::expr_to_string(&derivations[0].result, Default::default());
    assert!(
        !text.contains("min"),
        "the guard's fact was not used: {text}"
    );
}

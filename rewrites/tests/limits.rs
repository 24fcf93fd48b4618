//! Derivations stay bounded (issue 17, item 6): a step that would make the program
//! larger than `MAX_TERM_SIZE` nodes is refused (E0848) instead of running for minutes
//! and gigabytes (20 doubling `let`s unfolded 21 times used to take 34 s and 2.4 GB).

mod common;

use atl_rewrites::engine::MAX_TERM_SIZE;

/// A balanced sum of `2^depth` reads of `f`, as text (balanced, so that parsing and
/// every pass stay shallow).
fn balanced(depth: u32, leaf: &str) -> String {
    if depth == 0 {
        return leaf.to_string();
    }
    let half = balanced(depth - 1, leaf);
    format!("({half} + {half})")
}

#[test]
fn a_step_that_duplicates_a_large_value_is_refused() {
    let value = balanced(12, "f[i]");
    let source = format!(
        "size n\ninput f : [n]\ndef a = let x = gen i < n: {value} in gen j < n: x[j] * x[j]\n\
         derive b from a {{ rw unfold_let }}\n"
    );
    let (checked, derivations, diags) = common::derive(&source);
    let before = atl_rewrites::engine::term_size(&checked.program.defs[0].body);
    assert!(
        before < MAX_TERM_SIZE && 2 * before > MAX_TERM_SIZE,
        "{before}"
    );
    assert!(derivations.is_empty());
    assert_eq!(diags.len(), 1);
    assert_eq!(diags[0].code, "E0848", "{:?}", diags[0]);
}

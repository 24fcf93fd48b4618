//! Print→parse round trips of index expressions and predicates with extreme literals
//! (i64::MIN, i64::MAX and their neighbours): what the printer writes — in
//! certificates, `atl derive` output and formatted programs — the parser reads back as
//! the same tree. i64::MIN is the case that broke (issue 28): it is written
//! `-9223372036854775808`, and the magnitude alone does not fit in 64 bits.

use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_lang::parser::{parse_index_str, parse_pred_str};
use proptest::prelude::*;

const EXTREMES: [i64; 10] = [
    i64::MIN,
    i64::MIN + 1,
    i64::MIN + 2,
    i64::MAX,
    i64::MAX - 1,
    -1,
    0,
    1,
    -4611686018427387904,
    4611686018427387904,
];

fn constant() -> impl Strategy<Value = i64> {
    prop_oneof![
        3 => proptest::sample::select(EXTREMES.to_vec()),
        1 => -50i64..50,
        1 => any::<i64>(),
    ]
}

fn op() -> impl Strategy<Value = IndexOp> {
    proptest::sample::select(vec![
        IndexOp::Add,
        IndexOp::Sub,
        IndexOp::Mul,
        IndexOp::Div,
        IndexOp::Mod,
        IndexOp::CDiv,
        IndexOp::Min,
        IndexOp::Max,
    ])
}

fn index() -> impl Strategy<Value = IndexExpr> {
    let leaf = prop_oneof![
        3 => constant().prop_map(IndexExpr::Const),
        1 => proptest::sample::select(vec!["i", "n", "k"]).prop_map(IndexExpr::var),
    ];
    leaf.prop_recursive(5, 32, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|a| IndexExpr::Neg(Box::new(a))),
            (op(), inner.clone(), inner).prop_map(|(o, a, b)| IndexExpr::bin(o, a, b)),
        ]
    })
}

fn pred() -> impl Strategy<Value = Pred> {
    let cmp = proptest::sample::select(vec![
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
    ]);
    let leaf = (cmp, index(), index()).prop_map(|(c, a, b)| Pred::Cmp(c, a, b));
    leaf.prop_recursive(2, 8, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|a| Pred::Not(Box::new(a))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Pred::And(Box::new(a), Box::new(b))),
            (inner.clone(), inner).prop_map(|(a, b)| Pred::Or(Box::new(a), Box::new(b))),
        ]
    })
}

fn reparse(e: &IndexExpr) -> IndexExpr {
    let text = e.to_string();
    parse_index_str(&text).unwrap_or_else(|d| panic!("`{text}` does not parse back: {d:?}"))
}

#[test]
fn extreme_constants_round_trip() {
    for c in EXTREMES {
        let e = IndexExpr::Const(c);
        assert_eq!(reparse(&e), e, "{c}");
        // As the operand of every operator, on either side, and negated.
        let neg = IndexExpr::Neg(Box::new(e.clone()));
        assert_eq!(reparse(&neg), neg, "-({c})");
        for o in [
            IndexOp::Add,
            IndexOp::Sub,
            IndexOp::Mul,
            IndexOp::Mod,
            IndexOp::Min,
        ] {
            let l = IndexExpr::bin(o, e.clone(), IndexExpr::var("k"));
            let r = IndexExpr::bin(o, IndexExpr::var("k"), e.clone());
            assert_eq!(reparse(&l), l, "{l}");
            assert_eq!(reparse(&r), r, "{r}");
        }
    }
}

#[test]
fn the_fuzzer_case_parses_back() {
    // Seed 7, case 981: `shift_sum` with d := i64::MAX, then `simpl`.
    let e = parse_index_str("k + -9223372036854775808").unwrap();
    assert_eq!(
        e,
        IndexExpr::add(IndexExpr::var("k"), IndexExpr::Const(i64::MIN))
    );
    assert_eq!(e.to_string(), "k + -9223372036854775808");
}

#[test]
fn magnitudes_beyond_64_bits_are_refused() {
    // 2^63 fits only under a minus sign; 2^63 + 1 never does.
    for text in [
        "9223372036854775808",
        "k + 9223372036854775808",
        "-9223372036854775809",
        "-(9223372036854775808)",
        "99999999999999999999",
    ] {
        let err = parse_index_str(text).expect_err(text);
        assert!(
            err.iter()
                .any(|d| d.message.contains("does not fit in 64 bits")),
            "{text}: {err:?}"
        );
    }
    // The negation of i64::MIN is a tree, not a literal: written with parentheses, or
    // with two minus signs as `--3` is the negation of the constant -3.
    let neg_min = IndexExpr::Neg(Box::new(IndexExpr::Const(i64::MIN)));
    assert_eq!(parse_index_str("-(-9223372036854775808)").unwrap(), neg_min);
    assert_eq!(parse_index_str("--9223372036854775808").unwrap(), neg_min);
    assert_eq!(
        parse_index_str("--3").unwrap(),
        IndexExpr::Neg(Box::new(IndexExpr::Const(-3)))
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn index_expressions_round_trip(e in index()) {
        prop_assert_eq!(reparse(&e), e);
    }

    #[test]
    fn predicates_round_trip(p in pred()) {
        let text = p.to_string();
        let back = parse_pred_str(&text);
        prop_assert!(back.is_ok(), "`{}` does not parse back: {:?}", text, back);
        prop_assert_eq!(back.unwrap(), p);
    }
}

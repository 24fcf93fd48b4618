//! Reading CuTe notation and expressions: whitespace, printing, errors with byte
//! offsets, and odd or random text, which must give an error with a span inside the
//! text, never a panic.

use atl_layout::expr::{Expr, parse};
use atl_layout::{LayoutError, TextError, TextErrorKind, evaluate, parse_layout};
use proptest::prelude::*;

fn eval_str(text: &str) -> String {
    evaluate(text)
        .unwrap_or_else(|e| panic!("`{text}`: {e}"))
        .to_string()
}

fn error(text: &str) -> TextError {
    match evaluate(text) {
        Err(e) => e,
        Ok(l) => panic!("`{text}` evaluated to {l}"),
    }
}

#[test]
fn notation_is_whitespace_tolerant_and_prints_canonically() {
    for (text, printed) in [
        ("(3,4):(4,1)", "(3,4):(4,1)"),
        ("  ( 3 , 4 ) :\t( 4 ,1 ) \n", "(3,4):(4,1)"),
        ("((2,3),4):((1,2),6)", "((2,3),4):((1,2),6)"),
        ("20:2", "20:2"),
        ("(4):(-1)", "(4):(-1)"),
    ] {
        assert_eq!(parse_layout(text).unwrap().to_string(), printed, "{text:?}");
    }
}

#[test]
fn syntax_errors_have_byte_offsets() {
    let e = parse_layout("(3,4):(4,1").unwrap_err();
    assert_eq!((e.kind, e.span), (TextErrorKind::Syntax, 10..10));
    let e = parse_layout("(3,4) (4,1)").unwrap_err();
    assert_eq!(e.span, 6..7);
    assert!(e.message.contains("expected `:`"), "{}", e.message);
    let e = parse_layout("(3,,4):(1,3)").unwrap_err();
    assert_eq!(e.span, 3..4);
    let e = parse_layout("99999999999999999999:1").unwrap_err();
    assert_eq!(e.span, 0..20);
    assert!(e.message.contains("64 bits"));
    let e = parse_layout("é:1").unwrap_err();
    assert_eq!(e.span, 0..2);
}

#[test]
fn a_pair_that_is_not_a_layout_is_an_error_over_its_text() {
    let e = parse_layout(" (3,4):(4,(1,2))").unwrap_err();
    assert_eq!(e.span, 1..16);
    assert!(matches!(
        e.kind,
        TextErrorKind::Layout(LayoutError::Malformed(_))
    ));
    let e = parse_layout("(3,-4):(4,1)").unwrap_err();
    assert!(e.message.contains("negative extent -4"), "{}", e.message);
}

#[test]
fn expressions_evaluate_and_nest() {
    assert_eq!(
        eval_str("compose((6,2):(8,2), (4,3):(3,1))"),
        "((2,2),3):((24,2),8)"
    );
    assert_eq!(eval_str("coalesce((2,(1,6)):(1,(6,2)))"), "12:1");
    assert_eq!(eval_str("complement(4:2, 24)"), "(2,3):(1,8)");
    assert_eq!(eval_str("complement(4:2)"), "2:1");
    assert_eq!(eval_str("concat(4:1, 6:4)"), "(4,6):(1,4)");
    assert_eq!(eval_str("concat(4:1)"), "(4):(1)");
    assert_eq!(
        eval_str("logical_divide((4,2,3):(2,1,8), 4:2)"),
        "((2,2),(2,3)):((4,1),(2,8))"
    );
    assert_eq!(eval_str("zipped_divide(24:1,4:1)"), "(4,6):(1,4)");
    assert_eq!(
        eval_str("logical_product((2,2):(4,1), 6:1)"),
        "((2,2),(2,3)):((4,1),(2,8))"
    );
    assert_eq!(
        eval_str(" coalesce( compose( 24:1 , concat(4:2, complement(4:2, 24)) ) ) "),
        "(4,2,3):(2,1,8)"
    );
    assert!(matches!(
        parse("compose(4:1, 2:2)").unwrap(),
        Expr::Call { .. }
    ));
}

#[test]
fn expression_errors_point_at_their_text() {
    let e = error("compose(4:1, 2:8)");
    assert_eq!(e.span, 0..17);
    assert!(matches!(
        e.kind,
        TextErrorKind::Layout(LayoutError::Compose(_))
    ));
    let e = error("coalesce(compose(4:1, 2:8))");
    assert_eq!(e.span, 9..26);
    let e = error("complement(4:1, 4:1)");
    assert_eq!((e.kind, e.span), (TextErrorKind::Arguments, 16..19));
    let e = error("coalesce(4)");
    assert_eq!((e.kind, e.span), (TextErrorKind::Arguments, 9..10));
    let e = error("transpose(4:1)");
    assert_eq!((e.kind, e.span), (TextErrorKind::Arguments, 0..9));
    assert!(e.message.contains("compose"), "{}", e.message);
    let e = error("compose(4:1)");
    assert_eq!((e.kind, e.span), (TextErrorKind::Arguments, 0..12));
    let e = error("24");
    assert_eq!(e.kind, TextErrorKind::Arguments);
    let e = error("complement(2:1, 0)");
    assert!(matches!(
        e.kind,
        TextErrorKind::Layout(LayoutError::Complement(_))
    ));
    let e = error("compose(4:1, 2:8) x");
    assert_eq!((e.kind, e.span), (TextErrorKind::Syntax, 18..19));
}

/// Every error's span lies inside the text, on character boundaries.
fn check_span(text: &str, e: &TextError) {
    assert!(
        e.span.start <= e.span.end && e.span.end <= text.len(),
        "{text:?}: {e:?}"
    );
    assert!(
        text.is_char_boundary(e.span.start) && text.is_char_boundary(e.span.end),
        "{text:?}: {e:?}"
    );
    assert!(!e.message.is_empty());
}

#[test]
fn odd_text_is_an_error_not_a_panic() {
    let deep_tuple = "(".repeat(100_000);
    let deep_call = "coalesce(".repeat(100_000);
    let balanced = format!(
        "{}1{}:{}1{}",
        "(".repeat(60),
        ")".repeat(60),
        "(".repeat(60),
        ")".repeat(60)
    );
    let odd = [
        "",
        " ",
        ":",
        "(",
        ")",
        "()",
        "():()",
        "(,):(,)",
        "(3,4)",
        "(3,4):",
        "3:(1,2)",
        "-3:1",
        "-:1",
        "3:-",
        "--3:1",
        "3:1:2",
        "3:1 junk",
        "é:1",
        "3:é",
        "\u{0}",
        "\u{feff}3:1",
        "9223372036854775807:1",
        "9223372036854775808:1",
        "-9223372036854775808:1",
        "2:-9223372036854775808",
        "(2,2):(9223372036854775807,9223372036854775807)",
        "compose(",
        "compose(3:1",
        "compose(3:1,)",
        "compose(,)",
        "compose()",
        "compose 3:1",
        "foo(3:1)",
        "_(1:1)",
        "compose(4:1, 4:1, 4:1)",
        "complement(4:1, -1)",
        "complement(4:1, 9223372036854775807)",
        "complement(2:4611686018427387904, 9223372036854775807)",
        "logical_product(4611686018427387904:1, 2:1)",
        "zipped_divide(4:1, (2,2):(1,1))",
        "concat()",
        "concat(9223372036854775807:1, 2:1)",
        "coalesce(0:0)",
        "compose(0:0, 0:0)",
        "logical_divide(0:1, 0:1)",
        &deep_tuple,
        &deep_call,
        &balanced,
    ];
    for text in odd {
        if let Err(e) = evaluate(text) {
            check_span(text, &e);
        }
        if let Err(e) = parse_layout(text) {
            check_span(text, &e);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn random_text_never_panics(text in "[()0-9:, \\-a-z_é]{0,40}") {
        if let Err(e) = evaluate(&text) {
            check_span(&text, &e);
        }
    }

    #[test]
    fn random_expressions_never_panic(
        op in prop::sample::select(vec!["compose", "coalesce", "complement", "logical_divide", "logical_product", "zipped_divide", "concat"]),
        a in "\\((-?[0-9]{1,3},){0,2}-?[0-9]{1,3}\\):\\((-?[0-9]{1,3},){0,2}-?[0-9]{1,3}\\)",
        b in "[0-9]{1,3}:-?[0-9]{1,3}",
    ) {
        for text in [format!("{op}({a}, {b})"), format!("{op}({a})"), format!("{op}({b}, {a})"), format!("{op}({a}, 24)")] {
            if let Err(e) = evaluate(&text) {
                check_span(&text, &e);
            }
        }
    }
}

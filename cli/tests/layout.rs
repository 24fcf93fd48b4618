//! `atl layout`: the printed layout, size, cosize and values; `--json` (one document,
//! the keys docs/json.md lists); the cap on printed values; and every error code of
//! the command as a diagnostic pointing into the expression, exit 1, with no panic.

mod common;

use atl_cli::{EXIT_OK, EXIT_USER};
use common::atl;
use serde_json::{Value, json};

#[test]
fn prints_the_layout_its_sizes_and_values() {
    let (code, out, err) = atl(&["layout", "compose((6,2):(8,2), (4,3):(3,1))"]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert_eq!(
        out,
        "layout: ((2,2),3):((24,2),8)\nsize:   12\ncosize: 43\nvalues: 0 24 2 26 8 32 10 34 16 40 18 42\n"
    );
    let (_, out, _) = atl(&["layout", "(3,4):(4,1)"]);
    assert!(
        out.ends_with("values: 0 4 8 1 5 9 2 6 10 3 7 11\n"),
        "{out}"
    );
    let (_, out, _) = atl(&["layout", "complement(4:2, 24)"]);
    assert!(out.starts_with("layout: (2,3):(1,8)\n"), "{out}");
}

#[test]
fn json_is_one_document() {
    let (code, out, err) = atl(&["layout", "compose(20:2, (5,4):(4,1))", "--json"]);
    assert_eq!(code, EXIT_OK, "{err}");
    let doc: Value = serde_json::from_str(&out).expect("one JSON document");
    let values: Vec<i64> = (0..20).map(|i| 8 * (i % 5) + 2 * (i / 5)).collect();
    assert_eq!(
        doc,
        json!({
            "command": "layout",
            "expression": "compose(20:2, (5,4):(4,1))",
            "layout": "(5,4):(8,2)",
            "size": 20,
            "cosize": 39,
            "values": values,
            "truncated": false,
        })
    );
}

#[test]
fn huge_layouts_print_the_first_values_only() {
    let (code, out, _) = atl(&["layout", "(4611686018427387903,2):(1,0)"]);
    assert_eq!(code, EXIT_OK);
    let line = out.lines().nth(3).expect("the values line");
    assert!(
        line.starts_with("values (the first 4096 of 9223372036854775806): 0 1 2 "),
        "{line}"
    );
    let (code, out, _) = atl(&["layout", "(100,100):(100,1)", "--json"]);
    assert_eq!(code, EXIT_OK);
    let doc: Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(doc["size"], 10000);
    assert_eq!(doc["truncated"], true);
    assert_eq!(doc["values"].as_array().map(Vec::len), Some(4096));
}

/// Runs `atl layout EXPR` (with and without `--json`) expecting exit 1, no stdout and
/// the diagnostic `code` on stderr; returns stderr.
fn error(expr: &str, code: &str) -> String {
    for json in [false, true] {
        let mut args = vec!["layout", expr];
        if json {
            args.push("--json");
        }
        let (status, out, err) = atl(&args);
        assert_eq!(status, EXIT_USER, "{expr}: {out}{err}");
        assert_eq!(out, "", "{expr}");
        assert!(
            err.contains(&format!("[{code}]")),
            "{expr}: expected {code}:\n{err}"
        );
    }
    atl(&["layout", expr]).2
}

#[test]
fn errors_are_diagnostics_in_the_expression() {
    let err = error("compose(4:1, 2:8", "E1101");
    assert!(err.contains("EXPR:1:17"), "{err}");
    error("(3,4):(4,(1,2))", "E1102");
    let err = error("coalesce(compose(4:1, 2:8))", "E1103");
    assert!(err.contains("outside the domain"), "{err}");
    assert!(err.contains("EXPR:1:10"), "{err}");
    error("compose((6,2):(1,10), (2,3):(3,2))", "E1103");
    error("compose(8:1, 4:0)", "E1103");
    error("complement((2,2):(1,1), 8)", "E1104");
    error("(2,2):(9223372036854775807,1)", "E1105");
    error("logical_product(1099511627776:1, 2:1099511627776)", "E1105");
    error("transpose(4:1)", "E1106");
    error("complement(4:1, 4:1)", "E1106");
    error("compose(4:1)", "E1106");
}

#[test]
fn odd_expressions_do_not_panic() {
    for expr in [
        "",
        "((((",
        "é",
        "compose(((",
        ":",
        "-",
        "9999999999999999999999:1",
    ] {
        let (status, _, err) = atl(&["layout", expr]);
        assert_eq!(status, EXIT_USER, "{expr:?}: {err}");
        assert!(
            err.contains("[E1101]") || err.contains("[E1105]"),
            "{expr:?}: {err}"
        );
    }
}

//! `rule` items in program files: the parser keeps them as text with their position
//! (the rewrite crate loads them), `rule` stays an ordinary name anywhere but at the
//! start of a line, and the formatter keeps them verbatim and in place.

use atl_lang::ast::Item;
use atl_lang::check_source;
use atl_lang::parser::parse_file;
use atl_lang::pretty::{Style, format_source};

const SOURCE: &str = "size n\ninput f : [n]\n\n\
# swap: addition commutes.\n\
rule swap: ?a + ?b => ?b + ?a\n  grade: exact\n  example: f[0] + s => s + f[0]\n\n\
def a =\n  gen i < n: f[i]\n";

#[test]
fn a_rule_item_is_kept_as_text_with_its_position() {
    let (file, diags) = parse_file(SOURCE);
    assert!(diags.is_empty(), "{diags:?}");
    let kinds: Vec<&str> = file
        .items
        .iter()
        .map(|i| match i {
            Item::Size(..) => "size",
            Item::Input { .. } => "input",
            Item::Rule(_) => "rule",
            Item::Def { .. } => "def",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["size", "input", "rule", "def"]);
    let Item::Rule(r) = &file.items[2] else {
        unreachable!()
    };
    assert_eq!(r.name.name, "swap");
    assert_eq!(
        r.text,
        "swap: ?a + ?b => ?b + ?a\n  grade: exact\n  example: f[0] + s => s + f[0]"
    );
    assert_eq!(&SOURCE[r.text_offset..r.text_offset + 4], "swap");
    assert_eq!(&SOURCE[r.span.range()], format!("rule {}", r.text));
    assert_eq!(r.line, 5);
    assert_eq!(r.doc.as_deref(), Some("# swap: addition commutes."));
    // The resolved program carries it; it declares no global name.
    let (checked, diags) = check_source(SOURCE);
    let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
    assert_eq!(checked.program.rules.len(), 1);
    assert_eq!(checked.program.defs.len(), 1);
}

#[test]
fn rule_is_an_ordinary_name_except_at_the_start_of_a_line() {
    let src = "size n\ninput f : [n]\ndef rule = gen i < n: f[i]\n\
               def b =\n  gen j < n: rule[j] + (sum rule2 < n: f[rule2])\n";
    let (checked, diags) = check_source(src);
    let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
    assert!(checked.program.rules.is_empty());
    assert!(checked.program.def("rule").is_some());
    // A rule item without a name.
    let (_, diags) = parse_file("size n\nrule : ?a => ?a\n");
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert_eq!(diags[0].code, "E0705");
    // No equation comment: recorded as absent (the rule loader reports it).
    let (file, _) = parse_file("size n\n\nrule x: ?a => ?a\n");
    let Some(Item::Rule(r)) = file.items.last() else {
        panic!("no rule item")
    };
    assert_eq!(r.doc, None);
    // A character outside ATL's syntax inside a rule is reported by the lexer.
    let (_, diags) = parse_file("size n\n# x: y.\nrule x: ?a @ ?b => ?a\n");
    assert!(diags.iter().any(|d| d.code == "E0101"), "{diags:?}");
}

#[test]
fn the_formatter_keeps_rules_verbatim_and_in_place() {
    let messy = "size n input f:[n]\n# swap: addition commutes.\nrule swap: ?a+?b => ?b+?a\n grade: exact\n   # inside\n example: f[0] + s => s + f[0]  # trailing\ndef a=gen i<n:f[i]\n";
    // A comment after the rule's last token is not part of it: it moves to the next
    // item, as comments between items do.
    let formatted = format_source(messy, Style::default()).expect("formats");
    assert_eq!(
        formatted,
        "size n\ninput f : [n]\n\n# swap: addition commutes.\nrule swap: ?a+?b => ?b+?a\n grade: exact\n   # inside\n example: f[0] + s => s + f[0]\n\n# trailing\ndef a =\n  gen i < n: f[i]\n"
    );
    assert_eq!(
        format_source(&formatted, Style::default()).expect("formats"),
        formatted,
        "not a fixed point"
    );
    assert_eq!(
        format_source(SOURCE, Style::default()).expect("formats"),
        SOURCE
    );
}

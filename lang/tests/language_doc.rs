//! Checks every example of the language reference, `docs/language.md`, so that the
//! document cannot drift from what the front end and the interpreter do.
//!
//! The conventions of the document (also stated in its introduction):
//!
//! - every fenced block opened with ```` ```atl ```` is a complete program. It must
//!   parse, resolve and shape-check with no diagnostic at all, and obey the shape
//!   discipline (below), unless it carries an error marker;
//! - `<!-- error: E0413 -->` after a block says the program is refused with that code
//!   (the test checks that the code is among the reported ones);
//! - `<!-- eval: NAME; n=3; f=[1, 2, 3] => [1, 3, 6] -->` after a block evaluates
//!   definition `NAME` with the reference interpreter at the given sizes and input
//!   values and compares the result with the stated value (same shape, each element
//!   within 1e-12 relative to `max(1, |expected|)`). Values are numbers or nested
//!   lists (`[]` is an empty vector, `[[1, 2], [3, 4]]` a 2x2 matrix, `5` a scalar,
//!   `-inf` minus infinity, equal only to itself).
//!   `=> error E0501` states that the evaluation fails with that code;
//! - markers belong to the last ```` ```atl ```` block above them, and there must be no
//!   other fenced block in between; syntax fragments use ```` ```text ````.
//!
//! The shape discipline (every `gen` range length, input extent and reshape amount in
//! range for every size the declarations allow, E0413) is proved by the solver in
//! `atl-rewrites`, which this crate cannot depend on. Here it is checked by
//! enumeration instead: every assignment of the sizes in `1..=B` (with `B^k` at most
//! 20,000 for `k` sizes, `B` at most 12) that satisfies the `assume`s is tried on every
//! obligation `shapes::infer_with_obligations` collects. A failing assignment is the
//! counterexample the solver would also find, so an `E0413` marker is confirmed; a
//! program without a marker must have no failing assignment in that range (the doc's
//! examples use small constants). A program whose `assume`s no assignment in the range
//! satisfies is reported as `E0414` (contradictory declarations), which is what the
//! CLI reports for truly contradictory ones.

use std::collections::BTreeMap;

use atl_lang::check_source;
use atl_lang::diag::render_to_string;
use atl_lang::index::Pred;
use atl_lang::interp::{EvalOptions, Tensor, eval_def};
use atl_lang::ir::Program;
use atl_lang::shapes::{self, ShapeEnv, ShapeObligation};

const DOC_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/language.md");
const README_PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md");

/// Tolerance of a stated value, relative to `max(1, |expected|)`.
const TOLERANCE: f64 = 1e-12;

/// The most size assignments the bounded shape-discipline check tries.
const MAX_ASSIGNMENTS: u64 = 20_000;

/// One ```` ```atl ```` block with the markers that follow it.
#[derive(Debug, Default)]
struct Block {
    /// 1-based line of the opening fence, for messages.
    line: usize,
    source: String,
    errors: Vec<(usize, String)>,
    evals: Vec<(usize, String)>,
}

/// Splits the document into its ```` ```atl ```` blocks and their markers. Panics on a
/// marker that follows no `atl` block or follows another fenced block, and on an
/// unclosed fence: a mistake in the document must not silently skip a check.
fn extract_blocks(doc: &str) -> Vec<Block> {
    let mut blocks: Vec<Block> = Vec::new();
    // Whether markers may attach to the last block (no other fence since it closed).
    let mut attachable = false;
    let mut open: Option<(String, Block)> = None;
    for (k, line) in doc.lines().enumerate() {
        let number = k + 1;
        let trimmed = line.trim();
        if let Some((fence, mut block)) = open.take() {
            if trimmed == fence {
                if let Some(b) = (block.line > 0).then_some(block) {
                    blocks.push(b);
                    attachable = true;
                } else {
                    attachable = false;
                }
            } else {
                if block.line > 0 {
                    block.source.push_str(line);
                    block.source.push('\n');
                }
                open = Some((fence, block));
            }
            continue;
        }
        if trimmed.starts_with("```") {
            let fence: String = trimmed.chars().take_while(|c| *c == '`').collect();
            let info = trimmed[fence.len()..].trim();
            // `line == 0` marks a block that is not ATL (its content is skipped).
            let block = Block {
                line: if info == "atl" { number } else { 0 },
                ..Block::default()
            };
            open = Some((fence, block));
            continue;
        }
        for (prefix, is_error) in [("<!-- error:", true), ("<!-- eval:", false)] {
            if let Some(rest) = trimmed.strip_prefix(prefix) {
                let body = rest
                    .strip_suffix("-->")
                    .unwrap_or_else(|| {
                        panic!("line {number}: a marker ends with `-->` on its line")
                    })
                    .trim()
                    .to_string();
                assert!(
                    attachable,
                    "line {number}: marker `{trimmed}` does not follow an ```atl block directly"
                );
                let block = blocks.last_mut().expect("attachable implies a block");
                if is_error {
                    block.errors.push((number, body));
                } else {
                    block.evals.push((number, body));
                }
            }
        }
    }
    assert!(
        open.is_none(),
        "docs/language.md: a fenced block is not closed"
    );
    blocks
}

// ---------------------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------------------

/// A value as written in a marker: a number or a list of values.
#[derive(Debug)]
enum Value {
    Num(f64),
    List(Vec<Value>),
}

/// Parses `5`, `-1.5`, `[1, 2]`, `[[1, 2], [3, 4]]`, `[]`.
fn parse_value(text: &str) -> Result<Value, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut pos = 0;
    let v = parse_value_at(&chars, &mut pos)?;
    skip_spaces(&chars, &mut pos);
    if pos != chars.len() {
        return Err(format!("trailing text in `{text}`"));
    }
    Ok(v)
}

fn skip_spaces(chars: &[char], pos: &mut usize) {
    while chars.get(*pos).is_some_and(|c| c.is_whitespace()) {
        *pos += 1;
    }
}

fn parse_value_at(chars: &[char], pos: &mut usize) -> Result<Value, String> {
    skip_spaces(chars, pos);
    if chars.get(*pos) == Some(&'[') {
        *pos += 1;
        let mut items = Vec::new();
        skip_spaces(chars, pos);
        if chars.get(*pos) == Some(&']') {
            *pos += 1;
            return Ok(Value::List(items));
        }
        loop {
            items.push(parse_value_at(chars, pos)?);
            skip_spaces(chars, pos);
            match chars.get(*pos) {
                Some(',') => *pos += 1,
                Some(']') => {
                    *pos += 1;
                    return Ok(Value::List(items));
                }
                other => return Err(format!("expected `,` or `]`, found {other:?}")),
            }
        }
    }
    let start = *pos;
    while chars
        .get(*pos)
        .is_some_and(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | '.' | 'e' | 'E'))
    {
        *pos += 1;
    }
    // `inf` and `-inf` (the value of an empty `max`).
    if chars[*pos..].starts_with(&['i', 'n', 'f']) {
        *pos += 3;
    }
    let text: String = chars[start..*pos].iter().collect();
    text.parse::<f64>()
        .map(Value::Num)
        .map_err(|_| format!("`{text}` is not a number"))
}

/// The tensor a value denotes (row-major); lists must be rectangular.
fn to_tensor(v: &Value) -> Result<Tensor, String> {
    fn shape_of(v: &Value) -> Vec<usize> {
        match v {
            Value::Num(_) => vec![],
            Value::List(items) => {
                let mut s = vec![items.len()];
                if let Some(first) = items.first() {
                    s.extend(shape_of(first));
                }
                s
            }
        }
    }
    fn flatten(v: &Value, shape: &[usize], out: &mut Vec<f64>) -> Result<(), String> {
        match (v, shape.split_first()) {
            (Value::Num(x), None) => {
                out.push(*x);
                Ok(())
            }
            (Value::List(items), Some((&n, rest))) if items.len() == n => {
                items.iter().try_for_each(|item| flatten(item, rest, out))
            }
            _ => Err("the list is not rectangular".to_string()),
        }
    }
    let shape = shape_of(v);
    let mut data = Vec::new();
    flatten(v, &shape, &mut data)?;
    Tensor::new(shape, data).ok_or_else(|| "shape and data disagree".to_string())
}

fn show_tensor(t: &Tensor) -> String {
    fn go(shape: &[usize], data: &[f64]) -> String {
        match shape.split_first() {
            None => format!("{}", data[0]),
            Some((&n, rest)) => {
                let stride: usize = rest.iter().product();
                let parts: Vec<String> = (0..n)
                    .map(|k| go(rest, &data[k * stride..(k + 1) * stride]))
                    .collect();
                format!("[{}]", parts.join(", "))
            }
        }
    }
    go(&t.shape, &t.data)
}

fn close_enough(got: &Tensor, want: &Tensor) -> bool {
    got.shape == want.shape
        && got
            .data
            .iter()
            .zip(&want.data)
            // Equal values first: infinities (an empty `max` is -inf) differ by NaN.
            .all(|(a, b)| a == b || (a - b).abs() <= TOLERANCE * b.abs().max(1.0))
}

// ---------------------------------------------------------------------------------------
// The bounded shape-discipline check
// ---------------------------------------------------------------------------------------

/// Every obligation of the program's inputs and definitions.
fn obligations(program: &Program, env: &ShapeEnv) -> Vec<ShapeObligation> {
    let mut out = shapes::input_obligations(program);
    for def in &program.defs {
        if let Ok((_, o)) = shapes::infer_with_obligations(env, &mut Vec::new(), &def.body) {
            out.extend(o);
        }
    }
    out
}

/// `Some(("E0413" | "E0414", explanation))` when the enumeration finds an obligation
/// that fails at allowed sizes, or no allowed sizes at all.
fn discipline_violation(program: &Program, env: &ShapeEnv) -> Option<(&'static str, String)> {
    let names: Vec<&str> = program.sizes.iter().map(|s| s.name.as_str()).collect();
    let k = names.len() as u32;
    let mut bound: i64 = 12;
    while bound > 2 && (bound as u64).pow(k) > MAX_ASSIGNMENTS {
        bound -= 1;
    }
    let obligations = obligations(program, env);
    let mut values = vec![1i64; names.len()];
    let mut allowed = 0usize;
    loop {
        let lookup = |name: &str| names.iter().position(|n| *n == name).map(|p| values[p]);
        let holds = |p: &Pred| p.eval(&lookup).unwrap_or(false);
        if program.assumes.iter().all(|a| holds(&a.pred)) {
            allowed += 1;
            if let Some(o) = obligations.iter().find(|o| !holds(&o.pred)) {
                let at: Vec<String> = names
                    .iter()
                    .zip(&values)
                    .map(|(n, v)| format!("{n}={v}"))
                    .collect();
                return Some((
                    "E0413",
                    format!("{}: `{}` fails at {}", o.what, o.pred, at.join(", ")),
                ));
            }
        }
        // Next assignment (odometer); done after the last one.
        let Some(p) = values.iter().position(|v| *v < bound) else {
            break;
        };
        values[p] += 1;
        for v in &mut values[..p] {
            *v = 1;
        }
    }
    (allowed == 0).then(|| {
        (
            "E0414",
            format!("no sizes in 1..={bound} satisfy the assumes"),
        )
    })
}

// ---------------------------------------------------------------------------------------
// Running one block
// ---------------------------------------------------------------------------------------

/// Evaluates one `eval` marker; `Err` describes a failure.
fn run_eval(program: &Program, marker: &str) -> Result<(), String> {
    let (call, expected) = marker
        .rsplit_once("=>")
        .ok_or("an eval marker is `NAME; n=3; f=[1, 2] => VALUE`")?;
    let mut parts = call.split(';').map(str::trim);
    let def = parts
        .next()
        .filter(|d| !d.is_empty())
        .ok_or("no definition name")?;
    let mut sizes = BTreeMap::new();
    let mut inputs = BTreeMap::new();
    for part in parts.filter(|p| !p.is_empty()) {
        let (name, value) = part
            .split_once('=')
            .ok_or_else(|| format!("`{part}` is not `name=value`"))?;
        let (name, value) = (name.trim(), value.trim());
        if program.sizes.iter().any(|s| s.name == name) {
            let v = value
                .parse::<i64>()
                .map_err(|_| format!("size `{name}` needs an integer, got `{value}`"))?;
            sizes.insert(name.to_string(), v);
        } else if program.inputs.iter().any(|i| i.name == name) {
            let t = parse_value(value).and_then(|v| to_tensor(&v))?;
            inputs.insert(name.to_string(), t);
        } else {
            return Err(format!(
                "`{name}` is neither a size nor an input of the program"
            ));
        }
    }
    let options = EvalOptions {
        parallel: false,
        ..EvalOptions::default()
    };
    let result = eval_def(program, def, &sizes, &inputs, &options);
    let expected = expected.trim();
    if let Some(code) = expected.strip_prefix("error") {
        let code = code.trim();
        return match result {
            Err(d) if d.code == code => Ok(()),
            Err(d) => Err(format!(
                "expected error {code}, got {}: {}",
                d.code, d.message
            )),
            Ok(t) => Err(format!("expected error {code}, got {}", show_tensor(&t))),
        };
    }
    let want = parse_value(expected).and_then(|v| to_tensor(&v))?;
    match result {
        Ok(got) if close_enough(&got, &want) => Ok(()),
        Ok(got) => Err(format!(
            "stated {}, evaluated {} (shape {:?})",
            show_tensor(&want),
            show_tensor(&got),
            got.shape
        )),
        Err(d) => Err(format!("evaluation failed: {} {}", d.code, d.message)),
    }
}

/// Checks one block and its markers; returns the failures.
fn check_block(block: &Block) -> Vec<String> {
    let mut failures = Vec::new();
    let mut fail = |line: usize, msg: String| {
        failures.push(format!("docs/language.md:{line}: {msg}"));
    };
    let (checked, diags) = check_source(&block.source);
    let mut codes: Vec<&str> = diags.iter().map(|d| d.code).collect();
    let mut discipline = None;
    if let Some(c) = &checked {
        discipline = discipline_violation(&c.program, &c.shapes);
        if let Some((code, _)) = &discipline {
            codes.push(code);
        }
    }
    if block.errors.is_empty() {
        if !diags.is_empty() {
            fail(
                block.line,
                format!(
                    "the example is not accepted without diagnostics:\n{}",
                    render_to_string(&diags, "example.atl", &block.source)
                ),
            );
        }
        if let Some((code, why)) = &discipline {
            fail(
                block.line,
                format!("the example breaks the shape discipline ({code}): {why}"),
            );
        }
    } else {
        for (line, code) in &block.errors {
            if !codes.contains(&code.as_str()) {
                fail(
                    *line,
                    format!("expected {code}, the example reports {codes:?}"),
                );
            }
        }
    }
    if !block.evals.is_empty() {
        match &checked {
            Some(c) if block.errors.is_empty() => {
                for (line, marker) in &block.evals {
                    if let Err(msg) = run_eval(&c.program, marker) {
                        fail(*line, format!("`{marker}`: {msg}"));
                    }
                }
            }
            _ => fail(
                block.line,
                "an eval marker on a program that is refused".to_string(),
            ),
        }
    }
    failures
}

#[test]
fn every_example_of_the_language_reference_holds() {
    let doc = std::fs::read_to_string(DOC_PATH).expect("docs/language.md exists");
    let blocks = extract_blocks(&doc);
    let evals: usize = blocks.iter().map(|b| b.evals.len()).sum();
    let errors: usize = blocks.iter().map(|b| b.errors.len()).sum();
    // A broken extraction (a renamed fence, say) must not pass by checking nothing.
    assert!(
        blocks.len() >= 30,
        "only {} ```atl blocks found",
        blocks.len()
    );
    assert!(evals >= 40, "only {evals} eval markers found");
    assert!(errors >= 8, "only {errors} error markers found");
    let failures: Vec<String> = blocks.iter().flat_map(check_block).collect();
    assert!(
        failures.is_empty(),
        "{} failing example(s):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The checker of this test is itself checked: a wrong stated value, a wrong error
/// code and a stray marker are caught.
#[test]
fn the_checker_catches_wrong_statements() {
    let doc = "```atl\nsize n\ninput f : [n]\ndef g = gen i < n: 2 * f[i]\n```\n\
               <!-- eval: g; n=2; f=[1, 2] => [2, 5] -->\n\
               <!-- eval: g; n=2; f=[1, 2] => [2, 4] -->\n\
               ```atl\nsize n\ndef h = gen i < n - 3: 1\n```\n\
               <!-- error: E0401 -->\n";
    let blocks = extract_blocks(doc);
    assert_eq!(blocks.len(), 2);
    let first = check_block(&blocks[0]);
    assert_eq!(first.len(), 1, "{first:?}");
    assert!(
        first[0].contains("stated [2, 5], evaluated [2, 4]"),
        "{first:?}"
    );
    let second = check_block(&blocks[1]);
    assert_eq!(second.len(), 1, "{second:?}");
    assert!(
        second[0].contains("expected E0401") && second[0].contains("E0413"),
        "{second:?}"
    );

    let stray = std::panic::catch_unwind(|| {
        extract_blocks("```text\nx\n```\n<!-- eval: g => 1 -->\n");
    });
    assert!(
        stray.is_err(),
        "a marker after a text block must be refused"
    );
}

#[test]
fn values_parse_as_nested_lists() {
    let t = to_tensor(&parse_value("[[1, 2.5], [-3, 4e1]]").unwrap()).unwrap();
    assert_eq!(t.shape, vec![2, 2]);
    assert_eq!(t.data, vec![1.0, 2.5, -3.0, 40.0]);
    assert_eq!(
        to_tensor(&parse_value("[]").unwrap()).unwrap().shape,
        vec![0]
    );
    assert_eq!(
        to_tensor(&parse_value("[[], []]").unwrap()).unwrap().shape,
        vec![2, 0]
    );
    assert_eq!(
        to_tensor(&parse_value("-7").unwrap()).unwrap().shape,
        Vec::<usize>::new()
    );
    assert!(to_tensor(&parse_value("[[1], [2, 3]]").unwrap()).is_err());
    assert!(parse_value("[1, 2").is_err());
}

#[test]
fn the_readme_links_the_language_reference() {
    let readme = std::fs::read_to_string(README_PATH).expect("README.md exists");
    assert!(
        readme.contains("(docs/language.md)"),
        "README.md must link docs/language.md"
    );
}

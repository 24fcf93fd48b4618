//! `--json` of every command that has it (docs/json.md), run in-process through
//! [`atl_cli::run`]: stdout must be exactly one JSON document, valid against the
//! schema docs/json.md documents for the command (read from the file, under its
//! `### atl … --json` heading), with the exit status of the command without `--json`;
//! some values are checked independently (hand-computed tolerances, counts, verdicts
//! of true and false facts, a tampered certificate). The schemas are checked by the
//! small validator below (the JSON Schema subset docs/json.md uses), which is itself
//! shown to reject documents that break a schema.

mod common;

use std::path::{Path, PathBuf};

use atl_cli::{EXIT_OK, EXIT_USER};
use common::atl;
use serde_json::{Value, json};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn path(rel: &str) -> String {
    root().join(rel).display().to_string()
}

/// A scratch file holding `text`, in a directory of this test process.
fn scratch(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("atl-json-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join(name);
    std::fs::write(&file, text).expect("write");
    file.display().to_string()
}

/// The headings of docs/json.md that introduce a schema, in order.
fn schema_headings() -> Vec<String> {
    let doc = std::fs::read_to_string(root().join("docs/json.md")).expect("docs/json.md");
    doc.lines()
        .filter_map(|l| l.strip_prefix("### "))
        .filter(|h| h.starts_with("atl ") && h.ends_with("--json"))
        .map(str::to_string)
        .collect()
}

/// The schema under the heading `### {heading}` of docs/json.md: the first ```json
/// block after it.
fn schema(heading: &str) -> Value {
    let doc = std::fs::read_to_string(root().join("docs/json.md")).expect("docs/json.md");
    let marker = format!("\n### {heading}\n");
    let start = doc
        .find(&marker)
        .unwrap_or_else(|| panic!("docs/json.md has no heading `### {heading}`"));
    let rest = &doc[start + marker.len()..];
    let open = rest
        .find("```json\n")
        .expect("a ```json block after the heading");
    let body = &rest[open + "```json\n".len()..];
    let close = body.find("\n```").expect("the block's end");
    serde_json::from_str(&body[..close])
        .unwrap_or_else(|e| panic!("the schema of `{heading}` is not JSON: {e}"))
}

/// The JSON type names of `v` that a schema's `type` may name (an integer is also a
/// number).
fn type_names(v: &Value) -> Vec<&'static str> {
    match v {
        Value::Null => vec!["null"],
        Value::Bool(_) => vec!["boolean"],
        Value::Number(n) if n.is_i64() || n.is_u64() => vec!["integer", "number"],
        Value::Number(_) => vec!["number"],
        Value::String(_) => vec!["string"],
        Value::Array(_) => vec!["array"],
        Value::Object(_) => vec!["object"],
    }
}

/// Checks `v` against `schema` (the subset of JSON Schema draft 2020-12 docs/json.md
/// uses: `type` (a name or a list), `properties`, `required`, `items`, `enum`,
/// `additionalProperties` (a boolean or a schema), `oneOf`); `at` is the path for the
/// message. A keyword outside the subset is an error: the documented schemas must
/// mean what this validator checks.
fn check(schema: &Value, v: &Value, at: &str) -> Result<(), String> {
    let s = schema
        .as_object()
        .ok_or_else(|| format!("{at}: the schema is not an object"))?;
    for key in s.keys() {
        if ![
            "type",
            "properties",
            "required",
            "items",
            "enum",
            "additionalProperties",
            "oneOf",
        ]
        .contains(&key.as_str())
        {
            return Err(format!(
                "{at}: schema keyword `{key}` is outside the subset"
            ));
        }
    }
    if let Some(t) = s.get("type") {
        let allowed: Vec<&str> = match t {
            Value::String(name) => vec![name.as_str()],
            Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
            _ => return Err(format!("{at}: `type` is neither a name nor a list")),
        };
        if !type_names(v).iter().any(|n| allowed.contains(n)) {
            return Err(format!("{at}: {v} is not of type {t}"));
        }
    }
    if let Some(e) = s.get("enum") {
        let options = e
            .as_array()
            .ok_or_else(|| format!("{at}: `enum` is not a list"))?;
        if !options.contains(v) {
            return Err(format!("{at}: {v} is not one of {e}"));
        }
    }
    if let Some(one_of) = s.get("oneOf") {
        let branches = one_of
            .as_array()
            .ok_or_else(|| format!("{at}: `oneOf` is not a list"))?;
        let matching = branches.iter().filter(|b| check(b, v, at).is_ok()).count();
        if matching != 1 {
            return Err(format!(
                "{at}: {matching} branches of `oneOf` match (exactly one must)"
            ));
        }
    }
    if let Value::Object(map) = v {
        let properties = s.get("properties").and_then(Value::as_object);
        if let Some(required) = s.get("required").and_then(Value::as_array) {
            for key in required.iter().filter_map(Value::as_str) {
                if !map.contains_key(key) {
                    return Err(format!("{at}: the required key `{key}` is missing"));
                }
            }
        }
        for (key, value) in map {
            let here = format!("{at}.{key}");
            match properties.and_then(|p| p.get(key)) {
                Some(sub) => check(sub, value, &here)?,
                None => match s.get("additionalProperties") {
                    Some(Value::Bool(false)) => {
                        return Err(format!("{at}: the key `{key}` is not in the schema"));
                    }
                    Some(Value::Bool(true)) | None => {}
                    Some(sub) => check(sub, value, &here)?,
                },
            }
        }
    }
    if let (Value::Array(items), Some(item_schema)) = (v, s.get("items")) {
        for (k, item) in items.iter().enumerate() {
            check(item_schema, item, &format!("{at}[{k}]"))?;
        }
    }
    Ok(())
}

/// Runs `atl ARGS…` (with `--json` among them); asserts the exit status, that stdout
/// is one JSON document (nothing else) and that it satisfies the schema of `heading`.
fn json_of(heading: &str, args: &[&str], status: i32) -> Value {
    json_and_stderr(heading, args, status).0
}

/// [`json_of`], and what the command wrote on stderr.
fn json_and_stderr(heading: &str, args: &[&str], status: i32) -> (Value, String) {
    let (code, out, err) = atl(args);
    assert_eq!(code, status, "atl {args:?}\nstdout:\n{out}\nstderr:\n{err}");
    // `from_str` refuses trailing non-whitespace: stdout holds one document only.
    let doc: Value = serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("atl {args:?}: stdout is not one JSON document ({e}):\n{out}"));
    if let Err(why) = check(&schema(heading), &doc, "$") {
        panic!("atl {args:?}: the output breaks the schema of `{heading}`: {why}\n{out}");
    }
    (doc, err)
}

fn count(v: &Value) -> usize {
    v.as_array().expect("an array").len()
}

#[test]
fn every_schema_heading_is_a_command_with_json_and_parses() {
    let headings = schema_headings();
    let expected = [
        "atl check --json",
        "atl derive --json",
        "atl run --json",
        "atl bench --json",
        "atl schedule --json",
        "atl validate --json",
        "atl verify --json",
        "atl rules --json",
        "atl rules --check --json",
        "atl prove --json",
        "atl eval --json",
        "atl layout --json",
    ];
    assert_eq!(headings, expected);
    for h in &headings {
        let s = schema(h);
        assert_eq!(s["type"], "object", "{h}");
        subset_only(&s, h);
    }
}

/// Asserts that `schema` and every schema inside it use only the keywords of the
/// subset the validator implements (so that none is silently ignored).
fn subset_only(schema: &Value, at: &str) {
    let s = schema
        .as_object()
        .unwrap_or_else(|| panic!("{at}: not an object"));
    for (key, value) in s {
        match key.as_str() {
            "type" | "required" | "enum" => {}
            "properties" => {
                for (name, sub) in value.as_object().expect("properties") {
                    subset_only(sub, &format!("{at}.{name}"));
                }
            }
            "items" => subset_only(value, &format!("{at}[]")),
            "additionalProperties" if value.is_boolean() => {}
            "additionalProperties" => subset_only(value, &format!("{at}.*")),
            "oneOf" => {
                for sub in value.as_array().expect("oneOf") {
                    subset_only(sub, at);
                }
            }
            other => panic!("{at}: schema keyword `{other}` is outside the subset"),
        }
    }
}

#[test]
fn the_validator_rejects_documents_that_break_a_schema() {
    let s = schema("atl prove --json");
    let good = json!({
        "command": "prove", "sizes": ["n"], "assumptions": [], "goal": "0 <= n",
        "verdict": "proved", "counterexample": null, "reason": null,
    });
    assert_eq!(check(&s, &good, "$"), Ok(()));
    // Each edit breaks the schema in one way, and the validator says where.
    type Edit = fn(&mut Value);
    let edits: [(Edit, &str); 5] = [
        (
            |v| {
                v.as_object_mut().unwrap().remove("verdict");
            },
            "`verdict` is missing",
        ),
        (|v| v["sizes"] = json!("n"), "not of type"),
        (|v| v["sizes"] = json!([1]), "$.sizes[0]"),
        (|v| v["verdict"] = json!("maybe"), "not one of"),
        (|v| v["confidence"] = json!(1), "`confidence`"),
    ];
    for (edit, expected) in edits {
        let mut broken = good.clone();
        edit(&mut broken);
        let error = check(&s, &broken, "$").unwrap_err();
        assert!(error.contains(expected), "{expected}: {error}");
    }
    let mut bad_map = good.clone();
    bad_map["counterexample"] = json!({"n": 1.5});
    assert!(check(&s, &bad_map, "$").is_err());
    // An integer is a number, a float is not an integer.
    assert_eq!(check(&json!({"type": "number"}), &json!(3), "$"), Ok(()));
    assert!(check(&json!({"type": "integer"}), &json!(3.5), "$").is_err());
    // `oneOf`: exactly one branch; verify's rejected form lacks the accepted keys.
    let v = schema("atl verify --json");
    let rejected = json!({
        "command": "verify", "certificate": "c.json", "verdict": "rejected",
        "error": {"code": "E1001", "message": "m"},
    });
    assert_eq!(check(&v, &rejected, "$"), Ok(()));
    let mut accepted_without_counts = rejected.clone();
    accepted_without_counts["verdict"] = json!("accepted");
    assert!(check(&v, &accepted_without_counts, "$").is_err());
    // A keyword outside the subset is refused rather than ignored.
    assert!(check(&json!({"minimum": 0}), &json!(1), "$").is_err());
}

#[test]
fn check_json_lists_definitions_and_derivations() {
    let file = path("examples/tensor_add/tensor_add.atl");
    let doc = json_of("atl check --json", &["check", &file, "--json"], EXIT_OK);
    let defs = doc["definitions"].as_array().unwrap();
    let names: Vec<&str> = defs.iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["tensor_add_op", "tensor_add", "flat", "fast"]);
    assert_eq!(defs[1]["derivation"], Value::Null);
    assert_eq!(defs[1]["shape"], json!(["A", "B", "C", "D"]));
    // `derive fast from tensor_add { parallel i  vectorize l }` in the file.
    assert_eq!(
        defs[3]["derivation"],
        json!({"from": "tensor_add", "steps": 2, "grade": "exact"})
    );
}

#[test]
fn a_file_that_does_not_check_prints_no_json() {
    let bad = scratch("bad.atl", "size n\ndef f = gen i < n: \n");
    let (code, out, err) = atl(&["check", &bad, "--json"]);
    assert_eq!(code, EXIT_USER, "{err}");
    assert_eq!(out, "", "no document before the file has something to say");
    assert!(err.contains("E0201"), "{err}");
}

#[test]
fn derive_json_has_every_step() {
    let file = path("examples/matmul/matmul.atl");
    let doc = json_of(
        "atl derive --json",
        &["derive", &file, "--def", "reordered", "--json"],
        EXIT_OK,
    );
    // `derive reordered from matmul { rw gen_sum }`: the loop interchange i-j-k → i-k-j.
    assert_eq!(doc["name"], "reordered");
    assert_eq!(doc["from"], "matmul");
    assert_eq!(
        doc["initial"],
        "gen i < M, j < N: sum k < K: A[i, k] * B[k, j]"
    );
    assert_eq!(
        doc["result"],
        "gen i < M: sum k < K: gen j < N: A[i, k] * B[k, j]"
    );
    assert_eq!(count(&doc["steps"]), 1);
    let step = &doc["steps"][0];
    assert_eq!(step["rule"], "gen_sum");
    assert_eq!(step["path"], json!([0]));
    assert_eq!(step["after"], doc["result"]);
    // A longer derivation: conditions are reported with their verdicts.
    let doc = json_of(
        "atl derive --json",
        &["derive", &file, "--def", "tiled", "--json"],
        EXIT_OK,
    );
    let conditions: Vec<&Value> = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["conditions"].as_array().unwrap())
        .collect();
    assert!(!conditions.is_empty(), "tiling has side conditions");
    assert!(conditions.iter().all(|c| c["verdict"] == "proved"));
}

#[test]
fn run_json_reports_errors_within_the_tolerance() {
    // `reordered` rather than `fast`: its kernel validates with easy obligations, so
    // the test does not depend on z3's time limit on a loaded machine.
    let file = path("examples/matmul/matmul.atl");
    let args = [
        "run",
        &file,
        "--def",
        "reordered",
        "--sizes",
        "M=5,N=7,K=3",
        "--json",
    ];
    let doc = json_of("atl run --json", &args, EXIT_OK);
    assert_eq!(doc["verdict"], "agrees");
    assert_eq!(doc["output_shape"], json!([5, 7]));
    assert_eq!(doc["elements"], 35);
    assert_eq!(doc["finite"], 35);
    assert_eq!(doc["sizes"], json!({"M": 5, "N": 7, "K": 3}));
    // The default tolerance, by hand: 8 · 2^-24 · (1 + K) for f32 and a sum of K terms.
    let tolerance = 8.0 * 2f64.powi(-24) * 4.0;
    assert_eq!(doc["tolerance"].as_f64(), Some(tolerance));
    let error = doc["max_scaled_error"].as_f64().unwrap();
    assert!(error <= tolerance, "{error} > {tolerance}");
    // The worst element's error is the largest one (up to the rounding of the
    // subtraction), and the scaled error is it over the scale.
    let worst = &doc["worst"];
    let diff = (worst["kernel"].as_f64().unwrap() - worst["interpreter"].as_f64().unwrap()).abs();
    let abs = doc["max_abs_error"].as_f64().unwrap();
    assert!((diff - abs).abs() <= 1e-6 * abs, "{diff} vs {abs}");
    let scale = doc["scale"].as_f64().unwrap();
    assert!(scale >= 1.0);
    assert!(
        (error - abs / scale).abs() <= 1e-6 * error,
        "{error} vs {abs} / {scale}"
    );
    assert!(doc["kernel_ms"].as_f64().unwrap() >= 0.0);
}

#[test]
fn run_json_still_prints_the_verdict_when_the_kernel_disagrees() {
    // The f32 kernel cannot be exact against the f64 interpreter on random inputs:
    // with a tolerance of 0 it disagrees (E0939, exit 1), and the document says so.
    let file = path("examples/matmul/matmul.atl");
    let args = [
        "run",
        &file,
        "--def",
        "matmul",
        "--sizes",
        "M=3,N=3,K=3",
        "--tolerance",
        "0",
        "--json",
    ];
    let (_, _, err) = atl(&args);
    assert!(err.contains("E0939"), "{err}");
    let doc = json_of("atl run --json", &args, EXIT_USER);
    assert_eq!(doc["verdict"], "disagrees");
    assert_eq!(doc["tolerance"].as_f64(), Some(0.0));
    assert!(doc["max_scaled_error"].as_f64().unwrap() > 0.0);
}

#[test]
fn run_json_under_strict_f64_counts_bit_identical_elements() {
    let file = path("examples/matmul/matmul.atl");
    let args = [
        "run",
        &file,
        "--def",
        "matmul",
        "--sizes",
        "M=2,N=3,K=4",
        "--dtype",
        "f64",
        "--fp",
        "strict",
        "--json",
    ];
    let doc = json_of("atl run --json", &args, EXIT_OK);
    assert_eq!(doc["bit_check"], "on");
    assert_eq!(doc["dtype"], "f64");
    // The specification lowered as written: every element bit for bit the loop IR's.
    assert_eq!(doc["bit_identical_to_loop_ir"], 6);
    assert!(doc["bit_identical_to_interpreter"].as_u64().unwrap() <= 6);
}

#[test]
fn bench_json_times_both_kernels() {
    let file = path("examples/matmul/matmul.atl");
    let args = [
        "bench",
        &file,
        "--def",
        "reordered",
        "--vs",
        "matmul",
        "--sizes",
        "M=8,N=8,K=8",
        "--runs",
        "2",
        "--json",
    ];
    let doc = json_of("atl bench --json", &args, EXIT_OK);
    assert_eq!(doc["runs"], 2);
    assert_eq!(doc["threads"], 1);
    assert_eq!(doc["main"]["def"], "reordered");
    assert_eq!(doc["vs"]["def"], "matmul");
    for k in [&doc["main"], &doc["vs"]] {
        let times: Vec<f64> = k["times_ms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_f64().unwrap())
            .collect();
        assert_eq!(times.len(), 2);
        let min = times.iter().copied().fold(f64::INFINITY, f64::min);
        assert_eq!(k["min_ms"].as_f64(), Some(min));
        // The median of two runs is the lower one (the timing module's convention).
        assert_eq!(k["median_ms"].as_f64(), Some(min));
        assert!(k["check_error"].as_f64().unwrap() < 1e-5);
    }
    let ratio = doc["ratio"].as_f64().unwrap();
    let expected =
        doc["vs"]["median_ms"].as_f64().unwrap() / doc["main"]["median_ms"].as_f64().unwrap();
    assert!(
        (ratio - expected).abs() <= 1e-9 * expected,
        "{ratio} vs {expected}"
    );
    // Without `--vs`: no second kernel, no ratio.
    let args = [
        "bench",
        &file,
        "--def",
        "matmul",
        "--sizes",
        "M=4,N=4,K=4",
        "--runs",
        "2",
        "--json",
    ];
    let doc = json_of("atl bench --json", &args, EXIT_OK);
    assert_eq!(doc["vs"], Value::Null);
    assert_eq!(doc["ratio"], Value::Null);
}

#[test]
fn validate_json_validated() {
    let file = path("examples/matmul/matmul.atl");
    let doc = json_of(
        "atl validate --json",
        &["validate", &file, "--def", "matmul", "--json"],
        EXIT_OK,
    );
    assert_eq!(doc["verdict"], "validated");
    let n = count(&doc["obligations"]);
    assert!(n > 0);
    assert_eq!(
        doc["counts"],
        json!({"proved": n, "refuted": 0, "unknown": 0})
    );
    assert!(
        doc["obligations"]
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["verdict"] == "proved")
    );
    assert!(
        doc["obligations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["kind"] == "value"),
        "the values against the definition are an obligation"
    );
}

/// `atl emit --ir` of `tiled` in the matmul example, edited by `edit`.
fn edited_tiled(name: &str, from: &str, to: &str) -> String {
    let (code, text, err) = atl(&[
        "emit",
        &path("examples/matmul/matmul.atl"),
        "--def",
        "tiled",
        "--ir",
    ]);
    assert_eq!(code, EXIT_OK, "{err}");
    let edited = text.replacen(from, to, 1);
    assert_ne!(edited, text, "`{from}` is in the printed kernel");
    scratch(name, &edited)
}

#[test]
fn validate_json_rejected_and_not_validated() {
    let file = path("examples/matmul/matmul.atl");
    // A loop bound one too far: an obligation refuted with a counterexample at k = K.
    let ir = edited_tiled("bound.ir", "for k in 0..K {", "for k in 0..K + 1 {");
    let args = ["validate", &file, "--def", "tiled", "--ir", &ir, "--json"];
    let doc = json_of("atl validate --json", &args, EXIT_USER);
    assert_eq!(doc["verdict"], "rejected");
    assert!(doc["counts"]["refuted"].as_u64().unwrap() > 0);
    let refuted = doc["refuted"].as_array().unwrap();
    assert!(!refuted.is_empty());
    let c = &refuted[0]["counterexample"];
    assert_eq!(c["k"], c["K"], "the extra iteration k = K: {c}");
    // A wrong initial value: a wrong result at sizes 1 (out[0,0] = 1 + A[0,0]·B[0,0]).
    let ir = edited_tiled("init.ir", "scalar acc = 0", "scalar acc = 1");
    let args = ["validate", &file, "--def", "tiled", "--ir", &ir, "--json"];
    let doc = json_of("atl validate --json", &args, EXIT_USER);
    assert_eq!(doc["verdict"], "rejected");
    let d = &doc["disagreement"];
    assert_eq!(d["sizes"], json!({"K": 1, "M": 1, "N": 1}));
    assert_eq!(d["element"], json!([0, 0]));
    let (expected, computed) = (
        d["expected"].as_f64().unwrap(),
        d["computed"].as_f64().unwrap(),
    );
    assert!((computed - (1.0 + expected)).abs() < 1e-12, "{d}");
    // Right for K <= 30 only: nothing refuted, the value obligation unknown.
    let ir = edited_tiled("min.ir", "for k in 0..K {", "for k in 0..min(K, 30) {");
    let args = ["validate", &file, "--def", "tiled", "--ir", &ir, "--json"];
    let (doc, err) = json_and_stderr("atl validate --json", &args, EXIT_USER);
    assert_eq!(doc["verdict"], "not_validated");
    // The error on stderr points into the document, not "above".
    assert!(
        err.contains("is not validated (`reasons` in the JSON document)"),
        "{err}"
    );
    assert!(count(&doc["reasons"]) > 0);
    let unknown: Vec<&Value> = doc["obligations"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["verdict"] == "unknown")
        .collect();
    assert!(
        unknown
            .iter()
            .any(|o| o["kind"] == "value" && o["reason"].is_string())
    );
}

#[test]
fn verify_json_accepts_a_certificate_and_rejects_a_tampered_one() {
    let file = path("examples/matmul/matmul.atl");
    let cert = std::env::temp_dir()
        .join(format!("atl-json-test-{}", std::process::id()))
        .join("tiled_tails.json");
    std::fs::create_dir_all(cert.parent().unwrap()).unwrap();
    let cert = cert.display().to_string();
    // `tiled_tails` is derived from the derivation `tiled`: a chain of one base.
    let doc = json_of(
        "atl derive --json",
        &[
            "derive",
            &file,
            "--def",
            "tiled_tails",
            "--cert",
            &cert,
            "--json",
        ],
        EXIT_OK,
    );
    assert_eq!(doc["certificate"], json!(cert));
    let doc = json_of("atl verify --json", &["verify", &cert, "--json"], EXIT_OK);
    assert_eq!(doc["verdict"], "accepted");
    assert_eq!(doc["derivation"], "tiled_tails");
    assert_eq!(doc["from"], "tiled");
    assert_eq!(doc["sizes"], json!(["M", "N", "K"]));
    assert_eq!(count(&doc["bases"]), 1);
    assert_eq!(doc["bases"][0]["derivation"], "tiled");
    assert_eq!(doc["chain_from"], "matmul");
    let steps = doc["steps"].as_u64().unwrap();
    assert_eq!(
        doc["rule_steps"].as_u64().unwrap() + doc["tactic_steps"].as_u64().unwrap(),
        steps
    );
    // The recorded result changed: the replay no longer reaches it.
    let text = std::fs::read_to_string(&cert).unwrap();
    let mut c: Value = serde_json::from_str(&text).unwrap();
    c["result"] = json!("gen i < M, j < N: 0.0");
    let tampered = scratch("tampered.json", &c.to_string());
    let doc = json_of(
        "atl verify --json",
        &["verify", &tampered, "--json"],
        EXIT_USER,
    );
    assert_eq!(doc["verdict"], "rejected");
    assert!(
        doc["error"]["code"].as_str().unwrap().starts_with("E10"),
        "{doc}"
    );
    // Not a certificate: exit 2 and no document.
    let junk = scratch("junk.json", "{\"format\": 1}");
    let (code, out, _) = atl(&["verify", &junk, "--json"]);
    assert_eq!(code, atl_cli::EXIT_ARGS);
    assert_eq!(out, "");
}

#[test]
fn rules_json_lists_and_checks() {
    let doc = json_of(
        "atl rules --json",
        &["rules", "sum_tile", "--json"],
        EXIT_OK,
    );
    let rules = doc["rules"].as_array().unwrap();
    assert!(
        rules
            .iter()
            .all(|r| r["name"].as_str().unwrap().contains("sum_tile"))
    );
    let tile = rules
        .iter()
        .find(|r| r["name"] == "sum_tile")
        .expect("sum_tile");
    assert_eq!(tile["grade"], "real");
    assert_eq!(
        tile["conditions"][0],
        json!({"name": "positive", "text": "1 <= ?q"})
    );
    // A program's user rules.
    let peel = path("examples/peel/peel.atl");
    let doc = json_of(
        "atl rules --json",
        &["rules", "--file", &peel, "--json"],
        EXIT_OK,
    );
    assert_eq!(doc["source"], json!(peel));
    assert!(
        doc["rules"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["status"] == "user")
    );
    // The check with so few attempts (10; the seed is fixed) that no random instance
    // of `get_gen_offset` applies: `untested`, exit 1, and still the document.
    let doc = json_of(
        "atl rules --check --json",
        &["rules", "--check", "get_gen", "--attempts", "10", "--json"],
        EXIT_USER,
    );
    let results = doc["results"].as_array().unwrap();
    let result = |name: &str| {
        results
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {doc}"))
    };
    assert_eq!(result("get_gen")["result"], "ok");
    let ok = result("get_gen");
    assert!(ok["instances"].as_u64().unwrap() <= ok["tried"].as_u64().unwrap());
    assert_eq!(ok["tried"], 10);
    assert_eq!(result("get_gen_offset")["result"], "untested");
    assert_eq!(result("get_gen_offset")["instances"], Value::Null);
    let doc = json_of(
        "atl rules --check --json",
        &["rules", "--check", "--file", &peel, "--json"],
        EXIT_OK,
    );
    assert!(
        doc["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["result"] == "ok")
    );
    // No rule matches: an error, no document.
    let (code, out, _) = atl(&["rules", "no_such_rule_anywhere", "--json"]);
    assert_eq!(code, EXIT_USER);
    assert_eq!(out, "");
}

#[test]
fn prove_json_on_a_true_and_a_false_fact() {
    let doc = json_of(
        "atl prove --json",
        &[
            "prove",
            "--size",
            "n",
            "--assume",
            "i < n",
            "i + 1 <= n",
            "--json",
        ],
        EXIT_OK,
    );
    assert_eq!(doc["verdict"], "proved");
    assert_eq!(doc["counterexample"], Value::Null);
    let doc = json_of(
        "atl prove --json",
        &[
            "prove",
            "--size",
            "n",
            "--assume",
            "0 <= i",
            "--assume",
            "i < n",
            "i + 2 <= n",
            "--json",
        ],
        EXIT_USER,
    );
    assert_eq!(doc["verdict"], "refuted");
    assert_eq!(doc["assumptions"], json!(["0 <= i", "i < n"]));
    // The counterexample really falsifies the goal under the facts.
    let (i, n) = (
        doc["counterexample"]["i"].as_i64().unwrap(),
        doc["counterexample"]["n"].as_i64().unwrap(),
    );
    assert!(n >= 1 && 0 <= i && i < n && i + 2 > n, "{doc}");
    // A goal that does not parse: no document.
    let (code, out, _) = atl(&["prove", "--size", "n", "i <", "--json"]);
    assert_eq!(code, EXIT_USER);
    assert_eq!(out, "");
}

#[test]
fn eval_json_matches_its_schema() {
    let file = path("examples/matmul/matmul.atl");
    let args = [
        "eval",
        &file,
        "--def",
        "matmul",
        "--sizes",
        "M=2,N=3,K=1",
        "--input",
        "A=random:1",
        "--input",
        "B=random:2",
        "--json",
    ];
    let doc = json_of("atl eval --json", &args, EXIT_OK);
    assert_eq!(doc["shape"], json!([2, 3]));
    assert_eq!(count(&doc["data"]), 6);
}

#[test]
fn layout_json_matches_its_schema() {
    let doc = json_of(
        "atl layout --json",
        &["layout", "complement(4:2, 24)", "--json"],
        EXIT_OK,
    );
    assert_eq!(doc["layout"], "(2,3):(1,8)");
    assert_eq!(doc["values"], json!([0, 1, 8, 9, 16, 17]));
    let doc = json_of(
        "atl layout --json",
        &["layout", "(64,128):(1,64)", "--json"],
        EXIT_OK,
    );
    assert_eq!(
        (count(&doc["values"]), &doc["truncated"]),
        (4096, &json!(true))
    );
}

#[test]
fn schedule_json_lists_the_candidates_tried() {
    let spec = scratch(
        "schedule_json.atl",
        "size M, N, K\ninput A : [M, K]\ninput B : [K, N]\n\
         def matmul = gen i < M, j < N: sum k < K: A[i, k] * B[k, j]\n",
    );
    let v = json_of(
        "atl schedule --json",
        &[
            "schedule",
            &spec,
            "--sizes",
            "M=24,N=40,K=16",
            "--budget",
            "6",
            "--json",
        ],
        0,
    );
    assert_eq!(v["def"], "matmul");
    assert!(v["tried"].as_array().is_some_and(|t| !t.is_empty()), "{v}");
    assert!(v["best_median_ms"].as_f64().is_some(), "{v}");
}

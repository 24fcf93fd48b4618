//! What the commands' `--json` output shares (docs/json.md): one document per run,
//! written pretty-printed on stdout after everything else the command computed, and
//! the conversions of numbers, durations, verdicts and size maps into it. The keys of
//! every document are snake_case and stable; times are milliseconds as floats (keys
//! ending in `_ms`); the schemas in docs/json.md are checked by `cli/tests/json.rs`.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Duration;

use serde_json::{Value, json};

/// Writes `doc` as the command's one JSON document (pretty, then a newline).
pub fn print(out: &mut dyn Write, doc: &Value) {
    // A `Value` always serializes; a failed write to stdout leaves nothing to do.
    let text = serde_json::to_string_pretty(doc).unwrap_or_default();
    let _ = writeln!(out, "{text}");
}

/// A float as a JSON number; JSON has no NaN or infinity, so they are `null`.
pub fn number(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

/// A duration in milliseconds (a float).
pub fn ms(d: Duration) -> Value {
    number(d.as_secs_f64() * 1e3)
}

/// Size name → value, as a JSON object (the map's order: by name).
pub fn sizes(m: &BTreeMap<String, i64>) -> Value {
    Value::Object(m.iter().map(|(k, v)| (k.clone(), json!(v))).collect())
}

/// A solver verdict as `(word, counterexample, reason)`: `proved`; `refuted` with the
/// assignment that refutes it; `unknown` with the solver's reason.
pub fn verdict(v: &atl_solver::Verdict) -> (&'static str, Value, Value) {
    match v {
        atl_solver::Verdict::Proved => ("proved", Value::Null, Value::Null),
        atl_solver::Verdict::Refuted(c) => ("refuted", counterexample(c), Value::Null),
        atl_solver::Verdict::Unknown(reason) => ("unknown", Value::Null, json!(reason)),
    }
}

/// A counterexample: variable → value.
pub fn counterexample(c: &atl_solver::Counterexample) -> Value {
    sizes(&c.values)
}

/// A grade word: `exact` or `real`.
pub fn grade(g: atl_rewrites::rule::Grade) -> &'static str {
    match g {
        atl_rewrites::rule::Grade::Exact => "exact",
        atl_rewrites::rule::Grade::Real => "real",
    }
}

/// A diagnostic's code and message (its rendering, with spans, stays on stderr).
pub fn diagnostic(d: &atl_lang::diag::Diagnostic) -> Value {
    json!({"code": d.code, "message": d.message})
}

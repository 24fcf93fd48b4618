//! The Rocq development (`proofs/rocq`) against the rule library and the interpreter:
//!
//! - the committed statements are what `atl rules --export-rocq` generates now;
//! - every library rule has a status, every rule marked `proved` has a theorem about
//!   its statement (and no other rule has one), and no proof is admitted;
//! - semantic agreement: small concrete programs evaluated by the reference
//!   interpreter and by `vm_compute` on the `Z` instance of the Rocq semantics give the
//!   same elements, so the two semantics cannot drift apart silently. This part needs
//!   `coqc`; without it the test says so and passes, unless `ATL_REQUIRE_COQ` is set
//!   (CI sets it).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use atl_lang::interp::{EvalOptions, Tensor, concrete_shape, eval_def};
use atl_lang::ir::Expr;
use atl_rewrites::Library;
use atl_rewrites::rocq::{export_library, input_ident, program_term, proofs_module};
use atl_rewrites::rule::Status;

fn rocq_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../proofs/rocq")
}

fn library() -> Library {
    let (lib, diags) = Library::standard();
    assert!(diags.is_empty(), "the rule library has errors");
    lib
}

#[test]
fn committed_statements_are_current() {
    let lib = library();
    let files = match export_library(&lib) {
        Ok(f) => f,
        Err(e) => panic!("export failed: {e}"),
    };
    let mut stale = Vec::new();
    for f in &files {
        let path = rocq_dir().join(&f.name);
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        if on_disk != f.contents {
            stale.push(f.name.clone());
        }
    }
    assert!(
        stale.is_empty(),
        "stale Rocq statements {stale:?}: run `atl rules --export-rocq proofs/rocq`"
    );
}

/// The statements of the deliberately wrong rules, which `Refutations.v` disproves: a
/// generated statement can be false, so its hypotheses are not contradictory.
#[test]
fn committed_wrong_rule_statements_are_current() {
    let text = include_str!("../test_data/wrong.rules");
    let (wrong, diags) = Library::from_sources([("wrong.rules".to_string(), text.to_string())]);
    assert!(diags.is_empty(), "{diags:?}");
    let rules: Vec<_> = wrong.rules().iter().collect();
    let file = match atl_rewrites::rocq::statements_file(
        atl_rewrites::rocq::WRONG_HEADER,
        "rewrites/test_data/wrong.rules",
        &rules,
    ) {
        Ok(f) => f,
        Err(e) => panic!("export failed: {e}"),
    };
    let path = rocq_dir().join(&file.name);
    if std::env::var_os("ATL_UPDATE_ROCQ").is_some()
        && let Err(e) = std::fs::write(&path, &file.contents)
    {
        panic!("cannot write {}: {e}", path.display());
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == file.contents,
        "stale {}: run `ATL_UPDATE_ROCQ=1 cargo test -p atl-rewrites --test rocq`",
        path.display()
    );
}

/// `Theorem NAME : NAME_stmt.` declarations of a proof file.
fn theorems(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim_start();
        let Some(rest) = line.strip_prefix("Theorem ") else {
            continue;
        };
        let mut parts = rest.split_whitespace();
        if let (Some(name), Some(":"), Some(stmt)) = (parts.next(), parts.next(), parts.next())
            && stmt.trim_end_matches('.') == format!("{name}_stmt")
        {
            out.insert(name.to_string());
        }
    }
    out
}

#[test]
fn statuses_match_the_proofs() {
    let lib = library();
    let mut problems = Vec::new();
    for (file, _) in atl_rewrites::library::RULE_FILES {
        let path = rocq_dir().join(format!("{}.v", proofs_module(file)));
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let proved = theorems(&text);
        let rules: Vec<_> = lib
            .rules()
            .iter()
            .filter(|r| r.origin.starts_with(&format!("{file}:")))
            .collect();
        for r in &rules {
            match (&r.status, proved.contains(&r.name)) {
                (Status::Proved, false) => problems.push(format!(
                    "`{}` is marked proved but {} has no `Theorem {} : {}_stmt.`",
                    r.name,
                    path.display(),
                    r.name,
                    r.name
                )),
                (Status::Checked(_), true) => problems.push(format!(
                    "`{}` has a theorem but is marked checked: mark it `status: proved`",
                    r.name
                )),
                (Status::Checked(None), false) => problems.push(format!(
                    "`{}` has no status line: `status: proved` or `status: checked -- REASON`",
                    r.name
                )),
                _ => {}
            }
        }
        for t in &proved {
            if !rules.iter().any(|r| &r.name == t) {
                problems.push(format!(
                    "{}: theorem `{t}` is about no rule",
                    path.display()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_proof_is_admitted() {
    let mut found = Vec::new();
    let entries = std::fs::read_dir(rocq_dir()).map(|d| d.flatten().collect::<Vec<_>>());
    let entries = entries.unwrap_or_default();
    assert!(!entries.is_empty(), "no Rocq development found");
    for entry in entries {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "v") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            let words: Vec<&str> = line
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .collect();
            if words
                .iter()
                .any(|w| *w == "Admitted" || *w == "admit" || *w == "Axiom" || *w == "Parameter")
            {
                found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "unfinished proofs:\n{}", found.join("\n"));
}

/// Small programs covering every construct, each with sizes; inputs get deterministic
/// small integer contents so that the reals and `Z` agree exactly.
const PROGRAMS: &[(&str, &[(&str, i64)])] = &[
    (
        "size n\ninput f : [n]\ndef main = gen i < n + 2: f[i - 1] * 2 + -f[i]",
        &[("n", 4)],
    ),
    (
        "size n, m\ninput g : [n, m]\ndef main = gen j < m: sum i < n: [i != 1] * g[i, j]",
        &[("n", 3), ("m", 2)],
    ),
    (
        "size n\ninput f : [n]\ndef main = gen i in 2..n + 3: gen j in -1..2: f[(i * j - 3) / 2] - f[(i - 7) % 3]",
        &[("n", 5)],
    ),
    (
        "size n\ninput f : [n]\ndef main = gen i < 7: f[cdiv(i - 3, 2)] + f[min(i, 2) + max(i - 5, 0)] + f[i / 0] + f[i % 0]",
        &[("n", 4)],
    ),
    (
        "size n\ninput f : [n]\ninput v : [n]\ndef main = let a = f + v in gen i < n: a[i] * a[n - 1 - i] - 1",
        &[("n", 3)],
    ),
    (
        "size n, m\ninput g : [n, m]\ndef main = transpose(g)",
        &[("n", 2), ("m", 3)],
    ),
    (
        "size n, m\ninput g : [n, m]\ndef main = flatten(g)",
        &[("n", 3), ("m", 2)],
    ),
    ("size n\ninput f : [n]\ndef main = split(3, f)", &[("n", 7)]),
    (
        "size n\ninput f : [n]\ninput v : [n]\ndef main = pad_l(2, f) ++ pad_r(1, v)",
        &[("n", 3)],
    ),
    (
        "size n\ninput f : [n]\ndef main = trunc_l(1, f) ++ trunc_r(2, f)",
        &[("n", 4)],
    ),
    (
        "size n\ninput f : [n]\ndef main = trunc_r(cdiv(n, 4) * 4 - n, flatten(split(4, f)))",
        &[("n", 6)],
    ),
    (
        "size n, m\ninput t : [n, m, 2]\ndef main = gen k < 2: flatten(transpose(gen i < n, j < m: t[i, j, k]))",
        &[("n", 2), ("m", 3)],
    ),
    (
        "size n\ninput f : [n]\ndef main = (gen i in n..n: f[i]) ++ (gen i < n: sum j in n..1: f[j]) ++ (gen i < 1: sum j < n: f[j] * f[j])",
        &[("n", 3)],
    ),
    // A guarded zero and an empty sum have their body's static shape, and `++`
    // offsets by it (issue 17, hole 2: the two semantics must agree here).
    (
        "size n\ninput f : [n]\ndef main = (([n >= 4] * (gen i < n: f[i])) ++ f) ++ ((sum s < n - 3: gen i < n + 1: f[i]) ++ f)",
        &[("n", 2)],
    ),
    (
        "size n\ninput f : [n]\ndef main = gen i < n + 1: [i < 2 || !(i >= 3) && i == i] * f[i] + [i > 1 && i <= 2] * 3",
        &[("n", 3)],
    ),
];

fn contents(shape: &[usize], seed: usize) -> Tensor {
    let n: usize = shape.iter().product();
    let data: Vec<f64> = (0..n)
        .map(|k| (((k * 7 + seed * 3) % 11) as f64) - 5.0)
        .collect();
    match Tensor::new(shape.to_vec(), data) {
        Some(t) => t,
        None => panic!("bad test tensor"),
    }
}

fn z_list(values: impl IntoIterator<Item = String>) -> String {
    format!("[{}]", values.into_iter().collect::<Vec<_>>().join("; "))
}

fn z(v: f64) -> String {
    let v = v as i64;
    if v < 0 {
        format!("({v})")
    } else {
        v.to_string()
    }
}

/// A skipped check says so in the test output rather than passing silently.
#[allow(clippy::print_stdout)]
fn say_skipped(reason: &str) {
    println!("skipped: {reason}");
}

#[test]
fn rocq_semantics_agrees_with_the_interpreter() {
    // Both evaluations first, so that a broken program fails without coqc too.
    let mut rocq = String::from(
        "From Coq Require Import ZArith List.\nFrom ATL Require Import Semantics Instances.\nImport ListNotations.\nOpen Scope Z_scope.\n#[local] Existing Instance ZScalar.\n\n",
    );
    let mut expected = Vec::new();
    for (k, (source, sizes)) in PROGRAMS.iter().enumerate() {
        let (checked, diags) = atl_lang::check_source(source);
        let Some(checked) = checked else {
            panic!("program {k} does not check: {diags:?}");
        };
        let program = checked.program;
        let sizes: BTreeMap<String, i64> = sizes.iter().map(|(n, v)| (n.to_string(), *v)).collect();
        let mut inputs = BTreeMap::new();
        let mut input_shapes = BTreeMap::new();
        for (seed, input) in program.inputs.iter().enumerate() {
            let shape = match concrete_shape(&program, &Expr::input(&input.name), &sizes) {
                Ok(s) => s,
                Err(d) => panic!("program {k}: {d:?}"),
            };
            let t = contents(&shape, seed + k);
            let shape_z: Vec<i64> = shape.iter().map(|d| *d as i64).collect();
            rocq.push_str(&format!(
                "Definition p{k}_{} : T := of_list {} {}.\n",
                input_ident(&input.name),
                z_list(shape_z.iter().map(|d| d.to_string())),
                z_list(t.data.iter().map(|v| z(*v)))
            ));
            input_shapes.insert(input.name.clone(), shape_z);
            inputs.insert(input.name.clone(), t);
        }
        let result = match eval_def(&program, "main", &sizes, &inputs, &EvalOptions::default()) {
            Ok(t) => t,
            Err(d) => panic!("program {k}: {d:?}"),
        };
        let Some(def) = program.def("main") else {
            panic!("program {k} has no main");
        };
        let term = match program_term(&def.body, &sizes, &input_shapes) {
            Ok(t) => t,
            Err(e) => panic!("program {k}: {e}"),
        };
        // Inputs are per program: rename the references.
        let mut term = term;
        for name in input_shapes.keys() {
            let id = input_ident(name);
            term = term.replace(&id, &format!("p{k}_{id}"));
        }
        let shape_z: Vec<String> = result.shape.iter().map(|d| d.to_string()).collect();
        rocq.push_str(&format!(
            "Definition p{k} : T := {term}.\nEval vm_compute in (to_list {} p{k}).\n\n",
            z_list(shape_z)
        ));
        expected.push(result.data.iter().map(|v| *v as i64).collect::<Vec<i64>>());
    }

    let have_coq = Command::new("coqc").arg("--version").output().is_ok();
    if !have_coq {
        assert!(
            std::env::var_os("ATL_REQUIRE_COQ").is_none(),
            "ATL_REQUIRE_COQ is set but coqc is not installed"
        );
        say_skipped("coqc is not installed (scripts/setup.sh installs Debian's coq)");
        return;
    }

    let dir = std::env::temp_dir().join(format!("atl-rocq-agreement-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        panic!("cannot create {}: {e}", dir.display());
    }
    for f in ["Semantics.v", "Instances.v"] {
        if let Err(e) = std::fs::copy(rocq_dir().join(f), dir.join(f)) {
            panic!("cannot copy {f}: {e}");
        }
    }
    if let Err(e) = std::fs::write(dir.join("Agreement.v"), &rocq) {
        panic!("cannot write the agreement file: {e}");
    }
    let mut printed = String::new();
    for f in ["Semantics.v", "Instances.v", "Agreement.v"] {
        let out = match Command::new("coqc")
            .args(["-Q", ".", "ATL", f])
            .current_dir(&dir)
            .output()
        {
            Ok(o) => o,
            Err(e) => panic!("cannot run coqc: {e}"),
        };
        assert!(
            out.status.success(),
            "coqc {f} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        printed = String::from_utf8_lossy(&out.stdout).into_owned();
    }
    let _ = std::fs::remove_dir_all(&dir);

    // Each `Eval` prints `= [ELEMENTS] : list scalar`, possibly over several lines.
    let mut got = Vec::new();
    for chunk in printed.split(": list").filter(|c| c.contains('=')) {
        let Some(eq) = chunk.find('=') else { continue };
        let body: String = chunk[eq + 1..]
            .chars()
            .filter(|c| !matches!(c, '[' | ']' | '(' | ')') && !c.is_whitespace())
            .collect();
        let values: Vec<i64> = body
            .split(';')
            .filter(|s| !s.is_empty())
            .map(|s| match s.parse() {
                Ok(v) => v,
                Err(_) => panic!("unexpected Rocq output `{s}` in:\n{printed}"),
            })
            .collect();
        got.push(values);
    }
    assert_eq!(got.len(), expected.len(), "Rocq printed:\n{printed}");
    for (k, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(g, e, "program {k} (`{}`) disagrees", PROGRAMS[k].0);
    }
}

const STATUS_RULE: &str = "# r: doc\nr: ?a + ?b => ?b + ?a\n  grade: exact\n";

fn load_with(status: &str) -> (Vec<atl_rewrites::rule::Rule>, Vec<String>) {
    let text = format!("{STATUS_RULE}{status}  example: f + v => v + f\n");
    let (rules, diags) = atl_rewrites::rule::load_rules(&text, "t.rules");
    (rules, diags.iter().map(|d| d.code.to_string()).collect())
}

#[test]
fn status_lines_load_and_malformed_ones_are_reported() {
    let (rules, diags) = load_with("  status: proved\n");
    assert!(diags.is_empty());
    assert_eq!(rules[0].status, Status::Proved);
    let (rules, _) = load_with("  status: checked -- float rounding\n");
    assert_eq!(
        rules[0].status,
        Status::Checked(Some("float rounding".to_string()))
    );
    let (rules, _) = load_with("");
    assert_eq!(rules[0].status, Status::Checked(None));
    for bad in [
        "  status: checked\n",
        "  status: checked --\n",
        "  status: maybe\n",
        "  status: proved\n  status: proved\n",
    ] {
        let (rules, diags) = load_with(bad);
        assert!(rules.is_empty(), "{bad:?} loaded");
        assert_eq!(diags, vec!["E0719".to_string()], "{bad:?}");
    }
}

#[test]
fn a_max_reduction_is_stated_for_an_associative_commutative_function_with_an_identity() {
    // In a rule, `max` is `MaxRed smax sbot` for an arbitrary `smax` and `sbot`, with
    // exactly the hypotheses the max-reduction rules need, and no others.
    let text = "# q: doc\nq: max ?i < ?n: ?e => max ?i < ?n: ?e\n  if scalar: shape(?e) = []\n  grade: exact\n  example: max i < n: f[i] => max i < n: f[i]\n";
    let (rules, diags) = atl_rewrites::rule::load_rules(text, "t.rules");
    assert!(diags.is_empty(), "{diags:?}");
    let stmt = atl_rewrites::rocq::rule_statement(&rules[0]).expect("renders");
    for part in [
        "(sbot : scalar) (smax : scalar -> scalar -> scalar)",
        "(forall x y z : scalar, smax x (smax y z) = smax (smax x y) z) ->",
        "(forall x y : scalar, smax x y = smax y x) ->",
        "(forall x : scalar, smax sbot x = x) ->",
        "(MaxRed smax sbot 0 n (fun i : Z => (e i))) ==",
    ] {
        assert!(stmt.contains(part), "missing `{part}` in\n{stmt}");
    }
    // A statement without a max-reduction assumes nothing about `smax`.
    let text = "# q: doc\nq: sum ?i < ?n: ?e => sum ?i < ?n: ?e\n  grade: exact\n  example: sum i < n: f[i] => sum i < n: f[i]\n";
    let (rules, _) = atl_rewrites::rule::load_rules(text, "t.rules");
    let stmt = atl_rewrites::rocq::rule_statement(&rules[0]).expect("renders");
    assert!(!stmt.contains("smax"), "{stmt}");
}

#[test]
fn export_explains_what_it_cannot_render() {
    // A concrete program has no function to give `max`: refused, saying so.
    let (checked, diags) =
        atl_lang::check_source("size n\ninput f : [n]\ndef d = max i < n: f[i]\n");
    let checked = checked.unwrap_or_else(|| panic!("{diags:?}"));
    let body = &checked.program.def("d").expect("d").body;
    let sizes = [("n".to_string(), 3)].into_iter().collect();
    let inputs = [("f".to_string(), vec![3])].into_iter().collect();
    let err = atl_rewrites::rocq::program_term(body, &sizes, &inputs).err();
    assert!(
        err.is_some_and(|e| e.0.contains("max-reduction")),
        "a max-reduction must be refused"
    );
}

/// Like division, each scalar function is stated as an arbitrary function of its arity
/// (`select` as a choice by an arbitrary comparison), quantified: a statement proved
/// for it holds whatever the function does, and one that needs what the function is
/// (`abs(abs(a)) = abs(a)`) cannot be proved.
#[test]
fn scalar_functions_are_stated_for_every_function() {
    let cases = [
        (
            "abs(abs(?a)) => abs(?a)",
            "abs(abs(s)) => abs(s)",
            &["(sabs : scalar -> scalar)", "(Fun1 sabs (Fun1 sabs a)) =="][..],
        ),
        (
            "max(?a, ?b) => min(?b, ?a)",
            "max(s, s) => min(s, s)",
            &[
                "(smax : scalar -> scalar -> scalar)",
                "(smin : scalar -> scalar -> scalar)",
                "(Fun2 smax a b) ==",
                "(Fun2 smin b a)",
            ][..],
        ),
        (
            "select(?a >= ?b, ?c, ?d) => select(?b <= ?a, ?c, ?d)",
            "select(s >= s, s, s) => select(s <= s, s, s)",
            &[
                "(scmp_ge : scalar -> scalar -> bool)",
                "(scmp_le : scalar -> scalar -> bool)",
                "(Choose scmp_ge a b c d) ==",
                "(Choose scmp_le b a c d)",
            ][..],
        ),
    ];
    for (rule, example, wanted) in cases {
        let text = format!("# q: doc\nq: {rule}\n  grade: exact\n  example: {example}\n");
        let (rules, diags) = atl_rewrites::rule::load_rules(&text, "t.rules");
        assert!(diags.is_empty(), "{diags:?}");
        let stmt = atl_rewrites::rocq::rule_statement(&rules[0]).expect("rendered");
        for w in wanted {
            assert!(stmt.contains(w), "{rule}: no {w} in\n{stmt}");
        }
    }
}

/// Scalar division is stated as an arbitrary binary function, quantified: a statement
/// proved for it holds for division whatever it does at zero, and one that needs what
/// division is (`(a * b) / b = a`) cannot be proved.
#[test]
fn division_is_stated_for_every_binary_function() {
    let text = "# q: doc\nq: (?a * ?b) / ?b => ?a\n  grade: exact\n  example: (s * t) / t => s\n";
    let (rules, diags) = atl_rewrites::rule::load_rules(text, "t.rules");
    assert!(diags.is_empty(), "{diags:?}");
    let stmt = atl_rewrites::rocq::rule_statement(&rules[0]).expect("rendered");
    assert!(
        stmt.contains("(sdiv : scalar -> scalar -> scalar)"),
        "{stmt}"
    );
    assert!(stmt.contains("(Fun2 sdiv (Mul a b) b) =="), "{stmt}");
}

//! Every derivation in `examples/` replays without error, and the derived program
//! equals the program it was derived from under the reference interpreter, on several
//! size assignments (including sizes that are not multiples of the tile sizes, and 1):
//! bit for bit when every step is `exact`, within rounding otherwise.

use std::collections::BTreeMap;
use std::path::Path;

use atl_lang::diag::render_to_string;
use atl_lang::interp::{EvalOptions, Tensor, eval_def, input_shapes};
use atl_rewrites::rule::Grade;
use atl_rewrites::{Env, Library, run_derivations, with_derived};
use atl_solver::Solver;

fn example_files() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut out = Vec::new();
    for dir in std::fs::read_dir(&root).expect("examples/") {
        let dir = dir.expect("entry").path();
        if dir.is_dir() {
            for f in std::fs::read_dir(&dir).expect("example dir") {
                let p = f.expect("entry").path();
                if p.extension().is_some_and(|e| e == "atl") {
                    out.push(p);
                }
            }
        }
    }
    out.sort();
    out
}

/// Size assignments: all equal to s for several s, and two mixed ones.
fn assignments(names: &[String]) -> Vec<BTreeMap<String, i64>> {
    let mut out = Vec::new();
    for s in [1, 2, 7, 9, 17] {
        out.push(names.iter().map(|n| (n.clone(), s)).collect());
    }
    for mix in [[5, 9, 2, 7, 3, 11], [13, 3, 8, 1, 6, 4]] {
        out.push(
            names
                .iter()
                .enumerate()
                .map(|(k, n)| (n.clone(), mix[k % mix.len()]))
                .collect(),
        );
    }
    // Several tiles of 8 or 64 with a partial last tile; only where evaluation stays
    // cheap (two-dimensional examples).
    // Multiples of 16, where an `assume` that a size is one (a max-reduction split by
    // 16) holds, in both positions.
    if names.len() <= 2 {
        for mix in [
            [67, 131],
            [130, 65],
            [3, 48],
            [32, 16],
            [5, 64],
            [16, 7],
            [48, 3],
        ] {
            out.push(
                names
                    .iter()
                    .enumerate()
                    .map(|(k, n)| (n.clone(), mix[k % 2]))
                    .collect(),
            );
        }
    }
    out
}

#[test]
fn every_derivation_replays_and_preserves_meaning() {
    let (lib, diags) = Library::standard();
    assert!(diags.is_empty(), "rule library has errors");
    let solver = Solver::new();
    let mut derivations_checked = 0;
    let mut failures = Vec::new();
    for file in example_files() {
        let source = std::fs::read_to_string(&file).expect("readable");
        let name = file.display().to_string();
        let (checked, diags) = atl_lang::check_source(&source);
        let checked =
            checked.unwrap_or_else(|| panic!("{}", render_to_string(&diags, &name, &source)));
        // The file's user rules, admitted as `atl check` admits them.
        let (lib, diags) = atl_rewrites::user_rules::library_with_user_rules(
            &lib,
            &checked.program,
            &name,
            &solver,
        );
        if !diags.is_empty() {
            failures.push(render_to_string(&diags, &name, &source));
            continue;
        }
        let env = Env {
            program: &checked.program,
            shapes: &checked.shapes,
            library: &lib,
            solver: &solver,
        };
        let (derivations, diags) = run_derivations(&env);
        if !diags.is_empty() {
            failures.push(render_to_string(&diags, &name, &source));
            continue;
        }
        let (program, _) = with_derived(&checked.program, &checked.shapes, &derivations);
        let size_names: Vec<String> = program.sizes.iter().map(|s| s.name.clone()).collect();
        for d in &derivations {
            // A derivation through another storage of a sparse matrix (`unfold A as
            // csc`) equals its specification where `A` is the matrix that storage
            // holds: the specification is evaluated with `A` defined so (random arrays
            // of two storages would hold different matrices).
            let mut spec_program = program.clone();
            if let Some(derived) = program.def(&d.name) {
                for matrix in program.sparse.iter().map(|s| &s.name) {
                    if let [storage] = program.storages_read(matrix, &derived.body)[..]
                        && let Some(def) = spec_program.defs.iter_mut().find(|x| x.name == *matrix)
                    {
                        def.body = storage.body.clone();
                    }
                }
            }
            let mut compared = 0;
            for sizes in assignments(&size_names) {
                let options = EvalOptions::default();
                let Ok(shapes) = input_shapes(&program, &sizes, &options) else {
                    continue; // an `assume` excludes these sizes
                };
                let inputs: BTreeMap<String, Tensor> = shapes
                    .into_iter()
                    .enumerate()
                    .map(|(k, (n, s))| {
                        (
                            n.clone(),
                            atl_lang::interp::random_input_named(
                                &program,
                                &n,
                                s,
                                &sizes,
                                100 + k as u64,
                            ),
                        )
                    })
                    .collect();
                let a = eval_def(&spec_program, &d.from, &sizes, &inputs, &options)
                    .expect("original evaluates");
                let b = eval_def(&program, &d.name, &sizes, &inputs, &options)
                    .expect("derived evaluates");
                let same = a.shape == b.shape
                    && match d.grade() {
                        Grade::Exact => a
                            .data
                            .iter()
                            .zip(&b.data)
                            .all(|(x, y)| x.to_bits() == y.to_bits()),
                        Grade::Real => a
                            .data
                            .iter()
                            .zip(&b.data)
                            .all(|(x, y)| (x - y).abs() <= 1e-10 * (1.0 + x.abs())),
                    };
                if !same {
                    failures.push(format!(
                        "{name}: `{}` differs from `{}` at {sizes:?}",
                        d.name, d.from
                    ));
                    break;
                }
                compared += 1;
            }
            assert!(
                compared >= 3,
                "{name}: `{}` compared at only {compared} size assignments",
                d.name
            );
            derivations_checked += 1;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(
        derivations_checked >= 5,
        "only {derivations_checked} derivations"
    );
}

/// Halide-style directives expand into exactly the rule steps of the hand-written
/// derivations they stand for.
#[test]
fn directives_expand_to_the_rule_level_derivations() {
    let (lib, _) = Library::standard();
    let solver = Solver::new();
    for (file, by_rules, by_directive) in [
        ("matmul/matmul.atl", "tiled", "tiled_directive"),
        ("blur/blur.atl", "tiled", "tiled_directive"),
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples")
            .join(file);
        let source = std::fs::read_to_string(&path).expect("readable");
        let (checked, _) = atl_lang::check_source(&source);
        let checked = checked.expect("checks");
        let env = Env {
            program: &checked.program,
            shapes: &checked.shapes,
            library: &lib,
            solver: &solver,
        };
        let (derivations, diags) = run_derivations(&env);
        assert!(diags.is_empty(), "{file}");
        let get = |n: &str| {
            derivations
                .iter()
                .find(|d| d.name == n)
                .unwrap_or_else(|| panic!("{n}"))
        };
        let (a, b) = (get(by_rules), get(by_directive));
        assert!(
            atl_lang::ir::alpha_eq(&a.result, &b.result),
            "{file}: {by_directive} differs from {by_rules}"
        );
        let rules = |d: &atl_rewrites::Derivation| {
            d.steps
                .iter()
                .filter_map(|s| s.rule.clone())
                .collect::<Vec<_>>()
        };
        let expected: Vec<String> = rules(a).into_iter().filter(|r| r != "unfold_let").collect();
        assert_eq!(rules(b), expected, "{file}");
        assert!(b.steps.iter().all(|s| s.origin.is_some()));
    }
}

/// Runs every derivation of `source` (which must all succeed).
fn derive_all(source: &str, what: &str) -> (atl_lang::Checked, Vec<atl_rewrites::Derivation>) {
    let (lib, _) = Library::standard();
    let solver = Solver::new();
    let (checked, diags) = atl_lang::check_source(source);
    let checked = checked.unwrap_or_else(|| panic!("{what}: {diags:?}"));
    let env = Env {
        program: &checked.program,
        shapes: &checked.shapes,
        library: &lib,
        solver: &solver,
    };
    let (derivations, diags) = run_derivations(&env);
    assert!(
        diags.is_empty(),
        "{what}: {}",
        render_to_string(&diags, what, source)
    );
    (checked, derivations)
}

fn example_source(file: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples")
            .join(file),
    )
    .expect("readable")
}

fn rules_of(d: &atl_rewrites::Derivation) -> Vec<String> {
    d.steps.iter().filter_map(|s| s.rule.clone()).collect()
}

/// The Halide-style schedules of the examples give the same programs as the rule-level
/// derivations written by hand (alpha-equivalent), through the same rule applications.
/// For `compute_at` the hand-written derivations give the window bounds; the directive
/// computes them itself.
#[test]
fn directive_schedules_equal_the_hand_written_derivations() {
    // Hand-written rule-level versions of the Halide papers' `compute_at` schedules.
    let halide = example_source("halide/halide.atl")
        + "
derive g_split_by_hand from intro {
  rw<- tile_id in [1] with k := 10
  rw split_def with io := xo, ii := xi
  rw get_gen
  rw<- trunc_r_let
  rw<- flatten_let
  rw<- let_lift_gen
  window f in xo * 10 - 1..xo * 10 + 10
  simpl
  rw get_gen
}

derive f_split3_by_hand from formal {
  rw<- tile_id in [1] with k := 3
  rw split_def with io := xo, ii := xi
  rw get_gen
  rw<- trunc_r_let
  rw<- flatten_let
  rw<- let_lift_gen
  window g in xo * 3..xo * 3 + 4
  simpl
  rw get_gen
}

derive h_shift_by_hand from formal4 {
  rw<- tile_id in [1] with k := 4
  rw split_def with io := xo, ii := xi
  rw get_gen
  simpl_guard
}
";
    // (source, by hand, by directive, whether the rule applications are the same)
    let cases: Vec<(String, &str, &str, bool)> = vec![
        (
            example_source("blur/blur.atl"),
            "fused",
            "inline_directive",
            true,
        ),
        (
            example_source("blur/blur.atl"),
            "strips_staged",
            "strips_directive",
            true,
        ),
        (
            example_source("blur/blur.atl"),
            "tiled",
            "tiled_schedule",
            false,
        ),
        (
            example_source("blur/blur.atl"),
            "tiled_staged",
            "tiled_staged_directive",
            true,
        ),
        (example_source("blur/blur.atl"), "fast_rules", "fast", false),
        (
            example_source("matmul/matmul.atl"),
            "fast_rules",
            "fast",
            false,
        ),
        (
            example_source("matmul/matmul.atl"),
            "reordered",
            "reordered_directive",
            true,
        ),
        (halide.clone(), "g_split_by_hand", "g_split", true),
        (halide.clone(), "f_split3_by_hand", "f_split3", true),
        (halide.clone(), "h_shift_by_hand", "h_shift", false),
        (halide.clone(), "h_shift", "h_round_split", false),
    ];
    for (source, by_hand, by_directive, same_rules) in cases {
        let source = if by_directive == "h_round_split" {
            source
                + "\nderive h_round_split from formal4 {\n  split x1 by 4 into xo, xi tail round\n}\n"
        } else {
            source
        };
        let (_, derivations) = derive_all(&source, by_directive);
        let get = |n: &str| {
            derivations
                .iter()
                .find(|d| d.name == n)
                .unwrap_or_else(|| panic!("{n}"))
        };
        let (a, b) = (get(by_hand), get(by_directive));
        assert!(
            atl_lang::ir::alpha_eq(&a.result, &b.result),
            "{by_directive} differs from {by_hand}"
        );
        if same_rules {
            assert_eq!(rules_of(b), rules_of(a), "{by_directive}");
        }
        // (The fast matmul's `simpl` is written as such: a tactic, no rule-level step.)
        assert!(
            b.steps
                .iter()
                .all(|s| s.origin.is_some() || s.command == "simpl"),
            "{by_directive}: every step comes from a directive"
        );
    }
    // `tiled_schedule` is `fused` followed by `tiled`.
    let (_, blur) = derive_all(&example_source("blur/blur.atl"), "blur");
    let get = |n: &str| blur.iter().find(|d| d.name == n).expect("derived");
    let mut expected = rules_of(get("fused"));
    expected.extend(rules_of(get("tiled")));
    assert_eq!(rules_of(get("tiled_schedule")), expected);
    // The kit's `fast` (`compute_inline bx; partition y1; partition x`) is the rule-level
    // chain fused, fused_boundary, fast_rules, rule for rule (simpl_guard steps apart).
    let mut expected = rules_of(get("fused"));
    expected.extend(rules_of(get("fused_boundary")));
    expected.extend(rules_of(get("fast_rules")));
    assert_eq!(rules_of(get("fast")), expected);
    // The two-stage schedule is the definition itself, recorded as one `check`.
    let two = get("two_stage_directive");
    assert!(atl_lang::ir::alpha_eq(&two.initial, &two.result));
    assert_eq!(two.steps.len(), 1);
    assert_eq!(two.steps[0].command, "check");
}

/// The extent of the first `gen` bound to `let name` in `e`.
fn stage_extent(e: &atl_lang::ir::Expr, name: &str) -> Option<atl_lang::index::IndexExpr> {
    use atl_lang::ir::ExprKind;
    if let ExprKind::Let { var, value, .. } = &e.kind
        && var == name
        && let ExprKind::Gen { lo, hi, .. } = &value.kind
    {
        return Some(atl_lang::poly::normalize(&atl_lang::index::IndexExpr::sub(
            hi.clone(),
            lo.clone(),
        )));
    }
    e.children().into_iter().find_map(|c| stage_extent(c, name))
}

/// The Halide papers' schedules (examples/halide): the stage computed per tile holds the
/// tile plus its halo (Halide's bounds inference: 11 values of `f` per 10 outputs of
/// the lowering paper's `g`; 4 values of `g` per 3 outputs in the formal-semantics
/// paper), the derived programs equal their specifications bit for bit at extents that
/// are multiples of the factors, that are not, and that are smaller than them, and the
/// tail strategies expand as documented.
#[test]
fn halide_paper_schedules() {
    // Besides the example's schedules: `g` moved by hand into the tile loop (rule
    // steps, without shrinking it), then `compute_root` lifts it back out through the
    // `trunc_r` and `flatten` of the split.
    let source = example_source("halide/halide.atl")
        + "
derive f_root_lifted from formal {
  split x1 by 4 into xo, xi
  rw<- trunc_r_let
  rw<- flatten_let
  rw<- let_lift_gen
  compute_root g
}
";
    let (checked, derivations) = derive_all(&source, "halide.atl");
    let get = |n: &str| derivations.iter().find(|d| d.name == n).expect("derived");
    let window = |d: &str, stage: &str| stage_extent(&get(d).result, stage);
    use atl_lang::index::IndexExpr;
    assert_eq!(window("g_split", "f"), Some(IndexExpr::Const(11)));
    assert_eq!(window("f_split3", "g"), Some(IndexExpr::Const(4)));
    assert_eq!(window("f_split4", "g"), Some(IndexExpr::Const(5)));
    assert_eq!(window("h_round", "g"), Some(IndexExpr::Const(5)));
    // RoundUp/ShiftInwards without a tail: the guarded split plus `guard_elim`.
    assert_eq!(
        rules_of(get("h_shift")),
        ["tile_id", "split_def", "get_gen", "guard_elim"]
    );
    assert_eq!(
        rules_of(get("h_guard")),
        ["tile_id", "split_def", "get_gen"]
    );
    assert_eq!(rules_of(get("h_fused")), ["split_flatten", "flatten_gen"]);
    // compute_root lifted the stage out of the tile loop and back to the root.
    assert_eq!(get("f_root").result, get("f_root_lifted").result);
    assert!(rules_of(get("f_root_lifted")).ends_with(&[
        "let_lift_gen".to_string(),
        "flatten_let".to_string(),
        "trunc_r_let".to_string()
    ]));
    let (program, _) = with_derived(&checked.program, &checked.shapes, &derivations);
    let mut compared = 0;
    for n in [1, 2, 3, 4, 5, 9, 10, 11, 12, 20, 21, 30] {
        for m in [1, 2, 3] {
            let sizes: BTreeMap<String, i64> = [("n".to_string(), n), ("m".to_string(), m)].into();
            let options = EvalOptions::default();
            let shapes = input_shapes(&program, &sizes, &options).expect("shapes");
            let inputs: BTreeMap<String, Tensor> = shapes
                .into_iter()
                .enumerate()
                .map(|(k, (name, s))| {
                    (
                        name.clone(),
                        atl_lang::interp::random_input_named(
                            &program,
                            &name,
                            s,
                            &sizes,
                            7 + k as u64,
                        ),
                    )
                })
                .collect();
            for d in &derivations {
                let a = eval_def(&program, &d.from, &sizes, &inputs, &options).expect("source");
                let b = eval_def(&program, &d.name, &sizes, &inputs, &options).expect("derived");
                assert_eq!(a.shape, b.shape, "{} at n={n}, m={m}", d.name);
                assert!(
                    a.data
                        .iter()
                        .zip(&b.data)
                        .all(|(x, y)| x.to_bits() == y.to_bits()),
                    "{} differs from {} at n={n}, m={m}",
                    d.name,
                    d.from
                );
                compared += 1;
            }
        }
    }
    assert!(compared >= 9 * 36);
}

/// `fuse` of two sums uses `sum_fuse` (graded `real`: the additions are associated
/// differently); fusing the gens of matmul keeps its layout with `split`.
#[test]
fn fuse_gens_and_sums() {
    let source = example_source("matmul/matmul.atl")
        + "
derive fused_ij from matmul {
  fuse i, j into t
}

def frob =
  sum i < M: sum j < N: A[i, j % K] * A[i, j % K]

derive frob_fused from frob {
  fuse i, j into t
}
";
    let (checked, derivations) = derive_all(&source, "fuse");
    let get = |n: &str| derivations.iter().find(|d| d.name == n).expect("derived");
    assert_eq!(rules_of(get("fused_ij")), ["split_flatten", "flatten_gen"]);
    assert_eq!(get("fused_ij").grade(), Grade::Exact);
    assert_eq!(rules_of(get("frob_fused")), ["sum_fuse"]);
    assert_eq!(get("frob_fused").grade(), Grade::Real);
    let (program, _) = with_derived(&checked.program, &checked.shapes, &derivations);
    for (mm, nn, kk) in [(1, 1, 1), (3, 5, 2), (4, 4, 4), (7, 2, 3)] {
        let sizes: BTreeMap<String, i64> = [("M", mm), ("N", nn), ("K", kk)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let options = EvalOptions::default();
        let shapes = input_shapes(&program, &sizes, &options).expect("shapes");
        let inputs: BTreeMap<String, Tensor> = shapes
            .into_iter()
            .enumerate()
            .map(|(k, (name, s))| {
                (
                    name.clone(),
                    atl_lang::interp::random_input_named(&program, &name, s, &sizes, 3 + k as u64),
                )
            })
            .collect();
        for (from, to) in [("matmul", "fused_ij"), ("frob", "frob_fused")] {
            let a = eval_def(&program, from, &sizes, &inputs, &options).expect("source");
            let b = eval_def(&program, to, &sizes, &inputs, &options).expect("derived");
            assert_eq!(a.shape, b.shape);
            assert!(
                a.data
                    .iter()
                    .zip(&b.data)
                    .all(|(x, y)| (x - y).abs() <= 1e-10 * (1.0 + x.abs())),
                "{to} at {sizes:?}"
            );
        }
    }
}

/// `compute_root` lifts a stage across another stage's `let` (`let_swap`) or out of its
/// value (`let_lift_let`) and out of the loop; `compute_at` moves it back into the loop,
/// where it is read at one point only: a window of one element.
#[test]
fn stages_move_across_lets() {
    let source = "
size n
input f : [n]

def a =
  gen i < n:
    let q = gen k < n: f[k] + f[i] in
    let p = gen j < n: f[j] * 2 in
    q[i] + p[i]

derive a_root from a {
  compute_root p
}

derive a_at from a_root {
  compute_at p at i
}

def b =
  gen i < n:
    let q = (let p = gen j < n: f[j] * 2 in gen k < n: p[k] + f[i]) in
    q[i]

derive b_root from b {
  compute_root p
}
";
    let (checked, derivations) = derive_all(source, "lets");
    let get = |n: &str| derivations.iter().find(|d| d.name == n).expect("derived");
    assert_eq!(rules_of(get("a_root")), ["let_swap", "let_lift_gen"]);
    assert_eq!(rules_of(get("b_root")), ["let_lift_let", "let_lift_gen"]);
    assert_eq!(rules_of(get("a_at")), ["let_lift_gen", "get_gen"]);
    assert_eq!(
        stage_extent(&get("a_at").result, "p"),
        Some(atl_lang::index::IndexExpr::Const(1))
    );
    let (program, _) = with_derived(&checked.program, &checked.shapes, &derivations);
    for n in [1, 2, 5] {
        let sizes: BTreeMap<String, i64> = [("n".to_string(), n)].into();
        let options = EvalOptions::default();
        let shapes = input_shapes(&program, &sizes, &options).expect("shapes");
        let inputs: BTreeMap<String, Tensor> = shapes
            .into_iter()
            .map(|(name, s)| {
                (
                    name.clone(),
                    atl_lang::interp::random_input_named(&program, &name, s, &sizes, 11),
                )
            })
            .collect();
        for d in &derivations {
            let x = eval_def(&program, &d.from, &sizes, &inputs, &options).expect("source");
            let y = eval_def(&program, &d.name, &sizes, &inputs, &options).expect("derived");
            assert_eq!(x.data, y.data, "{} at n = {n}", d.name);
        }
    }
}

/// The extents of the nested `gen`s bound to the first `let name` in `e` (pre-order).
fn stage_extents(e: &atl_lang::ir::Expr, name: &str) -> Option<Vec<String>> {
    use atl_lang::ir::ExprKind;
    if let ExprKind::Let { var, value, .. } = &e.kind
        && var == name
    {
        let mut out = Vec::new();
        let mut cur = &**value;
        while let ExprKind::Gen { lo, hi, body, .. } = &cur.kind {
            out.push(
                atl_lang::poly::normalize(&atl_lang::index::IndexExpr::sub(hi.clone(), lo.clone()))
                    .to_string(),
            );
            cur = body;
        }
        return Some(out);
    }
    e.children()
        .into_iter()
        .find_map(|c| stage_extents(c, name))
}

/// The guards of `e`, printed, outside any `let` value.
fn guards(e: &atl_lang::ir::Expr, out: &mut Vec<String>) {
    use atl_lang::ir::ExprKind;
    match &e.kind {
        ExprKind::Guard { pred, body } => {
            out.push(pred.to_string());
            guards(body, out);
        }
        ExprKind::Let { body, .. } => guards(body, out),
        _ => e.children().into_iter().for_each(|c| guards(c, out)),
    }
}

/// The blur tiled 64 x 64 with `bx` staged per tile (thesis Figure 8.2): the stage is a
/// 66 x 64 window (one row of halo above and below; the vertical stage reads `bx` in its
/// own column only), the directive computes exactly that window, with the tails
/// separated the main tiles keep only the image's top and bottom boundary guards, and
/// with the border tiles split off too the interior tiles have no guard at all.
#[test]
fn tiled_staged_blur() {
    let (_, blur) = derive_all(&example_source("blur/blur.atl"), "blur");
    let get = |n: &str| blur.iter().find(|d| d.name == n).expect("derived");
    for name in [
        "tiled_staged",
        "tiled_staged_directive",
        "tiled_staged_tails",
    ] {
        assert_eq!(
            stage_extents(&get(name).result, "bx"),
            Some(vec!["66".to_string(), "64".to_string()]),
            "{name}"
        );
    }
    let window = get("tiled_staged_directive")
        .steps
        .iter()
        .find(|s| s.command.starts_with("window"))
        .expect("a window step");
    assert_eq!(
        window.command,
        "window bx in 64 * yo - 1..64 * yo + 65, 64 * xo..64 * xo + 64"
    );
    // Every read of the windowed stage was proved inside both ranges.
    assert_eq!(
        window
            .conditions
            .iter()
            .filter(|c| c.name == "read_in_window")
            .count(),
        6
    );
    // The main tiles: the first `let bx` in pre-order is in the first part of both
    // splits; its consumer has no tile-bound guard left.
    let tails = &get("tiled_staged_tails").result;
    fn first_let(e: &atl_lang::ir::Expr) -> Option<&atl_lang::ir::Expr> {
        if matches!(e.kind, atl_lang::ir::ExprKind::Let { .. }) {
            return Some(e);
        }
        e.children().into_iter().find_map(first_let)
    }
    let mut main = Vec::new();
    guards(first_let(tails).expect("a staged tile"), &mut main);
    main.sort();
    assert_eq!(main, ["0 <= yi + 64 * yo - 1", "yi + 64 * yo + 1 < H"]);
    // Without the tails, the same tile also guards both tile bounds.
    let mut all = Vec::new();
    guards(
        first_let(&get("tiled_staged").result).expect("a staged tile"),
        &mut all,
    );
    assert_eq!(all.len(), 4, "{all:?}");
    // With the border tiles split off (first, interior and last tile rows; in the
    // interior rows first, interior and last tile columns: five staged tile loops), the
    // interior tiles compute the stage and the output with no guard at all.
    fn lets<'e>(e: &'e atl_lang::ir::Expr, out: &mut Vec<&'e atl_lang::ir::Expr>) {
        if matches!(e.kind, atl_lang::ir::ExprKind::Let { .. }) {
            out.push(e);
        }
        e.children().into_iter().for_each(|c| lets(c, out));
    }
    fn any_guard(e: &atl_lang::ir::Expr) -> bool {
        matches!(e.kind, atl_lang::ir::ExprKind::Guard { .. })
            || e.children().into_iter().any(any_guard)
    }
    let mut staged = Vec::new();
    lets(&get("tiled_staged_interior").result, &mut staged);
    assert_eq!(staged.len(), 5);
    assert_eq!(staged.iter().filter(|l| !any_guard(l)).count(), 1);
}

/// im2col in the thesis's direction (§8.1.3, Figure 8.5): from the direct convolution,
/// binding the read-with-offset and hoisting it out of every loop gives exactly the
/// im2col + matrix-product definition, through rule steps only.
#[test]
fn im2col_is_derived_from_the_direct_convolution() {
    let (checked, derivations) = derive_all(&example_source("im2col/im2col.atl"), "im2col");
    let d = derivations
        .iter()
        .find(|d| d.name == "im2col_from_conv")
        .expect("derived");
    let im2col = checked.program.def("im2col").expect("defined");
    assert!(atl_lang::ir::alpha_eq(&d.result, &im2col.body));
    assert!(d.steps.iter().all(|s| s.rule.is_some()));
    assert_eq!(d.grade(), Grade::Exact);
    // The buffer is bound once, outside every loop: [B, W, C, R].
    assert_eq!(
        stage_extents(&d.result, "a"),
        Some(["B", "W", "C", "R"].map(String::from).to_vec())
    );
}

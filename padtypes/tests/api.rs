//! The public API on small programs: pad types of each construct, the gate's verdicts,
//! diagnostics for subterms without source positions, and `check_definition`'s scope.

use atl_lang::diag::render_to_string;
use atl_lang::index::IndexExpr;
use atl_lang::ir::{AmountOp, Expr, ExprKind};
use atl_padtypes::{check_definition, check_program, def_pad_type, pad_predicate};
use atl_solver::Solver;

mod common;

const HEADER: &str = "size n, m, k\ninput f : [n]\ninput g : [n, m]\n";

fn pad_type_of(def: &str) -> String {
    let source = format!("{HEADER}def d = {def}\n");
    let solver = Solver::new();
    let loaded = common::load(&source, &solver).expect("checks");
    def_pad_type(&loaded.program, &loaded.shapes, "d")
        .expect("pad type")
        .to_string()
}

fn gate(def: &str) -> Vec<&'static str> {
    let source = format!("{HEADER}def d = {def}\n");
    let solver = Solver::new();
    let loaded = common::load(&source, &solver).expect("checks");
    check_program(&loaded.program, &loaded.shapes, &solver)
        .iter()
        .map(|d| d.code)
        .collect()
}

#[test]
fn pad_types_of_the_constructs() {
    assert_eq!(pad_type_of("f"), "{ [$0] < [n] | false }");
    assert_eq!(pad_type_of("pad_r(k, f)"), "{ [$0] < [k + n] | $0 >= n }");
    assert_eq!(pad_type_of("pad_l(k, f)"), "{ [$0] < [k + n] | $0 < k }");
    assert_eq!(
        pad_type_of("gen i < n + 2: [i < n] * f[i]"),
        "{ [$0] < [n + 2] | $0 >= n }"
    );
    assert_eq!(
        pad_type_of("split(4, f)"),
        "{ [$0, $1] < [cdiv(n, 4), 4] | 4 * $0 + $1 >= n }"
    );
    assert_eq!(
        pad_type_of("transpose(gen i < n: pad_r(k, g[i]))"),
        "{ [$0, $1] < [k + m, n] | $0 >= m }"
    );
    assert_eq!(
        pad_type_of("pad_r(1, f) ++ pad_l(1, f)"),
        "{ [$0] < [2 * n + 2] | $0 < n + 1 && $0 >= n || $0 >= n + 1 && $0 - n - 1 < 1 }"
    );
    // A sum keeps padding only where every iteration is padding.
    assert_eq!(
        pad_type_of("sum r < 3: gen i < n: [i != r] * f[i]"),
        "{ [$0] < [n] | forall r in 0..3: $0 == r }"
    );
    // Only accumulation keeps padding; other operators compute every position.
    assert_eq!(
        pad_type_of("pad_r(k, f) + pad_r(k, f)"),
        "{ [$0] < [k + n] | $0 >= n }"
    );
    assert_eq!(
        pad_type_of("pad_r(k, f) - pad_r(k, f)"),
        "{ [$0] < [k + n] | false }"
    );
    assert_eq!(pad_type_of("-pad_r(k, f)"), "{ [$0] < [k + n] | false }");
    assert_eq!(
        pad_type_of("let x = pad_r(k, f) in gen i < n + k: x[i]"),
        "{ [$0] < [k + n] | $0 >= n }"
    );
}

#[test]
fn the_tiling_identity_is_well_typed_and_simplifies() {
    let source = format!("{HEADER}def d = flatten(split(8, f))\n");
    let solver = Solver::new();
    let loaded = common::load(&source, &solver).expect("checks");
    let ty = def_pad_type(&loaded.program, &loaded.shapes, "d").expect("pad type");
    assert_eq!(
        ty.to_string(),
        "{ [$0] < [8 * cdiv(n, 8)] | 8 * ($0 / 8) + $0 % 8 >= n }"
    );
    let simple = atl_padtypes::simplify_pad_type(&ty, &loaded.program, &loaded.shapes, &solver);
    assert_eq!(simple.to_string(), "{ [$0] < [8 * cdiv(n, 8)] | $0 >= n }");
    assert!(gate("trunc_r(cdiv(n, 8) * 8 - n, flatten(split(8, f)))").is_empty());
}

#[test]
fn adjoint_pairs_pass_and_their_misuse_fails() {
    assert!(gate("trunc_r(k, pad_r(k, f))").is_empty());
    assert!(gate("trunc_l(k, pad_l(k, f))").is_empty());
    assert!(gate("trunc_r(k, gen i < n + k: [i < n] * f[i])").is_empty());
    assert!(gate("trunc_l(k, gen i < n + k: [k <= i] * f[i - k])").is_empty());
    assert!(gate("gen i < n: trunc_r(k, pad_r(k, g[i]))").is_empty());
    assert_eq!(gate("trunc_l(1, gen i < n: f[i])"), ["E0901"]);
    assert_eq!(gate("gen i < n: trunc_r(1, gen j < m: g[i, j])"), ["E0901"]);
    assert_eq!(gate("gen i < n: f[i + 1]"), ["E0903"]);
    assert!(gate("gen i < n: [i + 1 < n] * f[i + 1]").is_empty());
    // A sum whose padding depends on the iteration: the quantifier of the pad predicate
    // reaches the solver.
    assert!(
        gate("trunc_r(1, sum r < 2: gen i < n + 1: [i < n || r >= 5] * g[min(i, n - 1), 0])")
            .is_empty()
    );
    assert_eq!(
        gate("trunc_r(1, sum r < 2: gen i < n + 1: [i < n || r >= 1] * g[min(i, n - 1), 0])"),
        ["E0901"]
    );
}

#[test]
fn pad_predicate_of_an_expression() {
    let solver = Solver::new();
    let loaded = common::load(HEADER, &solver).expect("checks");
    let e = Expr::synth(ExprKind::Amount {
        op: AmountOp::PadR,
        amount: IndexExpr::Const(2),
        arg: Box::new(Expr::input("f")),
    });
    let ty = pad_predicate(&loaded.program, &loaded.shapes, &e).expect("well-shaped");
    assert_eq!(ty.to_string(), "{ [$0] < [n + 2] | $0 >= n }");
    let sizes = |name: &str| (name == "n").then_some(3);
    assert_eq!(ty.is_padding_at(&sizes, &[3]), Some(true));
    assert_eq!(ty.is_padding_at(&sizes, &[2]), Some(false));
}

/// A subterm without a source position (built by a rewrite) is reported at its
/// definition, printed in a note.
#[test]
fn subterms_without_positions_are_printed() {
    let source = format!("{HEADER}def d = f\n");
    let solver = Solver::new();
    let mut loaded = common::load(&source, &solver).expect("checks");
    let body = Expr::synth(ExprKind::Amount {
        op: AmountOp::TruncL,
        amount: IndexExpr::Const(1),
        arg: Box::new(Expr::gen_(
            "i",
            IndexExpr::Const(0),
            IndexExpr::var("n"),
            Expr::access(Expr::input("f"), IndexExpr::var("i")),
        )),
    });
    loaded.program.defs[0].body = body;
    let diags = check_program(&loaded.program, &loaded.shapes, &solver);
    insta::assert_snapshot!(render_to_string(&diags, "input.atl", &source));
}

#[test]
fn check_definition_covers_the_definition_and_its_dependencies() {
    let source = format!(
        "{HEADER}def bad = gen i < n: f[i + 1]\ndef good = f\ndef user = gen i < n: bad[i]\n"
    );
    let solver = Solver::new();
    let loaded = common::load(&source, &solver).expect("checks");
    let (p, s) = (&loaded.program, &loaded.shapes);
    assert!(check_definition(p, s, &solver, "good").is_empty());
    assert_eq!(check_definition(p, s, &solver, "user").len(), 1);
    assert_eq!(check_definition(p, s, &solver, "bad").len(), 1);
    assert_eq!(check_program(p, s, &solver).len(), 1);
}

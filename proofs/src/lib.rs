//! `atl-proofs`: an independent checker of derivation certificates (`atl verify`).
//!
//! A certificate (`docs/certificates.md`) claims that a chain of programs are equal, one
//! rewrite at a time. This crate replays it with as little shared code as possible: it
//! reuses the front end (parsing, the IR, alpha-equivalence, substitution, shapes, the
//! printer), the solver and the rule-file *loader* (`atl-rules`), but not the rewrite
//! engine (`atl-rewrites`: its matcher, instantiation, tactics, certificate types),
//! which is not a dependency of this crate (`cli/tests/crate_graph.rs` checks the crate
//! graph). For every step it re-parses the programs, finds the recorded subterm at the
//! recorded path, matches the rule with its own matcher ([`matching`]), rebuilds the
//! context facts along the path, re-proves every side condition from scratch, and checks
//! that the replacement gives the recorded program.
//! Tactic steps are re-checked by [`tactics`]; a step it cannot check is rejected.
//!
//! Programs may mention the definitions the certificate records (`definitions`), which
//! is what makes `unfold` checkable. User rules (`user_rules`: `rule` items of the
//! program file) are loaded from their recorded text with the rule loader, like the
//! library's; they were only tested (bounded checking), so an accepted certificate that
//! uses one holds only if that rule is sound, and the report lists them.
//!
//! The checker is part of the trusted base (`TRUSTED.md`), so it is kept small. Library
//! code never prints.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

use atl_lang::diag::Diagnostic;
use atl_lang::index::{CmpOp, IndexExpr, Pred};
use atl_lang::ir::{Expr, ExprKind, alpha_eq};
use atl_lang::pretty::{Style, expr_to_string};
use atl_lang::shapes::{
    Shape, ShapeEnv, ShapeObligation, infer_with_lets, infer_with_obligations, input_obligations,
    show_shape,
};
use atl_rules::Library;
use atl_rules::rule::{Condition, Grade, Rule, metas_of};
use atl_solver::{Facts, Solver, Verdict};
use serde::Deserialize;

mod matching;
mod tactics;

/// What an accepted certificate establishes: `initial` equals `result` (at every size
/// satisfying the declarations), derived by `steps` steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyReport {
    pub derivation: String,
    pub from: String,
    pub steps: usize,
    pub rule_steps: usize,
    pub tactic_steps: usize,
    /// Side conditions (and tactic obligations) re-proved by the solver.
    pub conditions_proved: usize,
    /// `exact` or `real`, recomputed from the rules.
    pub grade: String,
    /// User rules the steps used: tested by bounded checking when the certificate was
    /// made, never proved; the certificate's claim assumes they are sound.
    pub user_rules: Vec<String>,
    /// Definitions the certificate records (their bodies are part of its claim).
    pub definitions: usize,
    /// The sizes and the `assume`s the equality is claimed under (as ATL text).
    pub sizes: Vec<String>,
    pub assumes: Vec<String>,
    /// The index arrays the equality is claimed for: those satisfying these
    /// declarations (as ATL text, `input pos : int[n + 1] in 0..nnz + 1 sorted`).
    pub index_arrays: Vec<String>,
    /// The recorded definitions that are sparse matrices, as their items
    /// (`sparse A : [n, m] as csr(pos, crd, vals)`): each body was checked to be the
    /// matrix the format's arrays encode.
    pub sparse: Vec<String>,
    /// Shape obligations (extents `>= 0`, reshape amounts in range) proved under the
    /// declarations alone, counted once per distinct obligation.
    pub shape_obligations: usize,
    /// The report of the nested certificate of `from`, when `from` is a derivation:
    /// `initial` was checked against that certificate's verified `result`.
    pub base: Option<Box<VerifyReport>>,
    /// `from` is a derivation whose certificate is not nested: `initial` was checked
    /// only against its recorded result, which nothing here verified.
    pub from_unverified: bool,
    /// What the checker could not settle but did not refuse (e.g. the solver could not
    /// decide whether the declarations are consistent).
    pub warnings: Vec<String>,
}

/// Why a certificate was rejected: the first failing check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// `E10xx` (docs/errors.md).
    pub code: &'static str,
    /// The failing step, 1-based; `None` for the certificate as a whole.
    pub step: Option<usize>,
    pub command: Option<String>,
    pub message: String,
    pub notes: Vec<String>,
}

impl VerifyError {
    fn new(code: &'static str, message: impl Into<String>) -> VerifyError {
        VerifyError {
            code,
            step: None,
            command: None,
            message: message.into(),
            notes: Vec::new(),
        }
    }

    fn note(mut self, note: impl Into<String>) -> VerifyError {
        self.notes.push(note.into());
        self
    }

    /// The file is not a certificate at all (as opposed to a certificate that fails).
    pub fn is_unreadable(&self) -> bool {
        self.code == "E1001"
    }

    pub fn to_diagnostic(&self) -> Diagnostic {
        let message = match (self.step, &self.command) {
            (Some(k), Some(c)) => format!("step {k} (`{c}`): {}", self.message),
            _ => self.message.clone(),
        };
        let mut d = Diagnostic::error(self.code, message);
        for n in &self.notes {
            d = d.with_note(n.clone());
        }
        d
    }
}

impl std::fmt::Display for VerifyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}", self.code, self.to_diagnostic().message)?;
        for n in &self.notes {
            write!(f, "\n  note: {n}")?;
        }
        Ok(())
    }
}

impl std::error::Error for VerifyError {}

type Res<T> = Result<T, VerifyError>;

// The certificate as read; field names follow docs/certificates.md.
#[derive(Deserialize)]
struct CertIn {
    format: String,
    derivation: String,
    from: String,
    declarations: String,
    #[serde(default)]
    definitions: Vec<DefinitionIn>,
    #[serde(default)]
    user_rules: Vec<UserRuleIn>,
    #[serde(default)]
    from_definition: Option<FromIn>,
    initial: String,
    steps: Vec<StepIn>,
    result: String,
    grade: String,
    #[serde(default)]
    base: Option<Box<CertIn>>,
}

#[derive(Deserialize)]
struct FromIn {
    name: String,
    body: String,
    #[serde(default)]
    derived: bool,
}

#[derive(Deserialize)]
pub(crate) struct DefinitionIn {
    name: String,
    body: String,
    /// `A : [n, m] as csr(pos, crd, vals)` for a sparse matrix: the body must be the
    /// matrix the format's arrays encode.
    #[serde(default)]
    sparse: Option<String>,
}

#[derive(Deserialize)]
struct UserRuleIn {
    name: String,
    source: String,
}

#[derive(Deserialize)]
struct StepIn {
    command: String,
    rule: Option<String>,
    rule_statement: Option<String>,
    direction: Option<String>,
    path: Vec<usize>,
    instantiation: BTreeMap<String, String>,
    conditions: Vec<CondIn>,
    grade: String,
    before: String,
    after_site: String,
    after: String,
}

#[derive(Deserialize)]
struct CondIn {
    name: String,
    goal: String,
    context: Vec<String>,
    verdict: String,
}

/// Checks a certificate against the standard rule library with a fresh solver.
pub fn verify(cert_json: &str) -> Result<VerifyReport, VerifyError> {
    let (library, _) = Library::standard();
    verify_with(cert_json, &library, &Solver::new())
}

/// Checks a certificate the rewrite engine built in memory (the CLI's defence in depth:
/// every derivation it uses is checked). `library` is the standard library, without the
/// file's user rules (the certificate carries those, and they are read from it).
///
/// `cert` is any value that serializes to a certificate (the engine's
/// `atl_rewrites::cert::Certificate`): it is checked as its JSON text, read back through
/// this crate's own types, so the checker shares no code with the engine that made it.
pub fn verify_certificate(
    cert: &impl serde::Serialize,
    library: &Library,
    solver: &Solver,
) -> Result<VerifyReport, VerifyError> {
    let json = serde_json::to_string(cert)
        .map_err(|e| VerifyError::new("E1001", format!("not a certificate: {e}")))?;
    verify_with(&json, library, solver)
}

/// Checks a certificate against `library` (the rules as they are now).
pub fn verify_with(
    cert_json: &str,
    library: &Library,
    solver: &Solver,
) -> Result<VerifyReport, VerifyError> {
    let cert: CertIn = serde_json::from_str(cert_json)
        .map_err(|e| VerifyError::new("E1001", format!("not a certificate: {e}")))?;
    verify_cert(&cert, cert_json, library, solver)
}

/// Checks one certificate (and, recursively, the certificate of its base). `whole` is
/// the text of the outermost certificate (a name occurring nowhere in it is chosen to
/// parse programs under).
fn verify_cert(
    cert: &CertIn,
    whole: &str,
    library: &Library,
    solver: &Solver,
) -> Result<VerifyReport, VerifyError> {
    if cert.format != "atl-certificate/1" {
        return Err(VerifyError::new(
            "E1001",
            format!("unknown certificate format `{}`", cert.format),
        ));
    }
    // Refuse what cannot be checked before anything else (an `unfold` of a definition
    // the certificate does not carry: its programs would not even parse).
    for (k, step) in cert.steps.iter().enumerate() {
        let words: Vec<&str> = step.command.split_whitespace().collect();
        let missing = match words.as_slice() {
            ["unfold", name] | ["unfold", name, "as", _]
                if !cert.definitions.iter().any(|d| d.name == *name) =>
            {
                Some(format!(
                    "the certificate does not record the definition of `{name}`"
                ))
            }
            _ => None,
        };
        if step.rule.is_none()
            && let Some(why) =
                missing.or_else(|| tactics::uncheckable(&step.command).map(String::from))
        {
            let mut e = tactics::not_checkable(&why);
            e.step = Some(k + 1);
            e.command = Some(step.command.clone());
            return Err(e);
        }
    }
    let user_library = with_user_rules(library, &cert.user_rules)?;
    let ch = Checker::new(
        &cert.declarations,
        &cert.definitions,
        whole,
        &user_library,
        solver,
    )?;
    let (mut prog, shape) = ch
        .parse_program(&cert.initial)
        .map_err(|e| e.note("in the initial program"))?;
    ch.well_shaped(&prog)
        .map_err(|e| e.note("in the initial program"))?;
    let initial = prog.clone();
    let mut report = VerifyReport {
        derivation: cert.derivation.clone(),
        from: cert.from.clone(),
        steps: cert.steps.len(),
        rule_steps: 0,
        tactic_steps: 0,
        conditions_proved: 0,
        grade: "exact".into(),
        user_rules: Vec::new(),
        definitions: cert.definitions.len(),
        sizes: ch.sizes.clone(),
        assumes: ch.assumes.iter().map(Pred::to_string).collect(),
        index_arrays: ch.index_arrays.clone(),
        sparse: cert
            .definitions
            .iter()
            .filter_map(|d| d.sparse.as_ref().map(|s| format!("sparse {s}")))
            .collect(),
        shape_obligations: 0,
        base: None,
        from_unverified: false,
        warnings: ch.warnings.clone(),
    };
    for (k, step) in cert.steps.iter().enumerate() {
        let at = |mut e: VerifyError| {
            e.step = Some(k + 1);
            e.command = Some(step.command.clone());
            e
        };
        let next = match &step.rule {
            Some(name) => {
                report.rule_steps += 1;
                if user_library.user_source(name).is_some() && !report.user_rules.contains(name) {
                    report.user_rules.push(name.clone());
                }
                ch.rule_step(&prog, step, name).map_err(at)?
            }
            None => {
                report.tactic_steps += 1;
                tactics::check(&ch, &prog, step).map_err(at)?
            }
        };
        ch.same_shape(&shape, &next.1).map_err(at)?;
        ch.well_shaped(&next.0).map_err(at)?;
        if step.grade == "real" {
            report.grade = "real".into();
        }
        prog = next.0;
    }
    let (result, _) = ch
        .parse_program(&cert.result)
        .map_err(|e| e.note("in `result`"))?;
    if !alpha_eq(&prog, &result) {
        return Err(VerifyError::new(
            "E1008",
            "the last step's program is not the certificate's `result`",
        )
        .note(format!("last step: {}", show(&prog)))
        .note(format!("result:    {}", cert.result)));
    }
    if cert.grade != report.grade {
        return Err(VerifyError::new(
            "E1010",
            format!(
                "the certificate's grade is `{}`, but its steps give `{}`",
                cert.grade, report.grade
            ),
        ));
    }
    // Last, so that a step that fails says which (an edited `initial` usually makes the
    // first step fail to find its subterm).
    (report.base, report.from_unverified) = bind_from(&ch, cert, &initial, whole, library, solver)?;
    report.conditions_proved = ch.proved.get();
    report.shape_obligations = ch.shape_known.borrow().len();
    Ok(report)
}

/// Binds `initial` to `from` (E1012, E1013): it must be the recorded body of the `from`
/// definition, or the `result` of the nested certificate of the base derivation, which
/// is verified first (against the same declarations). Returns the base's report and
/// whether `from` is a derivation recorded only by its (unverified) result.
fn bind_from(
    ch: &Checker,
    cert: &CertIn,
    initial: &Expr,
    whole: &str,
    library: &Library,
    solver: &Solver,
) -> Res<(Option<Box<VerifyReport>>, bool)> {
    let unbound = |m: String| VerifyError::new("E1012", m);
    let (expected, what, out) = match (&cert.base, &cert.from_definition) {
        (Some(base), None) => {
            let bad = |m: String| VerifyError::new("E1013", m);
            if base.derivation != cert.from {
                return Err(bad(format!(
                    "the nested certificate is of `{}`, not of `from` (`{}`)",
                    base.derivation, cert.from
                )));
            }
            if base.declarations != cert.declarations {
                return Err(bad(format!(
                    "the nested certificate of `{}` has other declarations",
                    base.derivation
                )));
            }
            let report = verify_cert(base, whole, library, solver).map_err(|e| {
                e.note(format!(
                    "in the nested certificate of `{}` (the base of `{}`)",
                    base.derivation, cert.derivation
                ))
            })?;
            (
                &base.result,
                format!("the verified `result` of `{}`", cert.from),
                (Some(Box::new(report)), false),
            )
        }
        (None, Some(f)) => {
            if f.name != cert.from {
                return Err(unbound(format!(
                    "the recorded `from_definition` is `{}`, not `from` (`{}`)",
                    f.name, cert.from
                )));
            }
            (
                &f.body,
                format!("the recorded body of `{}`", cert.from),
                (None, f.derived),
            )
        }
        (None, None) => {
            return Err(unbound(format!(
                "the certificate does not record `{}`, the definition it starts from",
                cert.from
            ))
            .note("without it, `initial` could be any program: regenerate the certificate"));
        }
        (Some(_), Some(_)) => {
            return Err(unbound(
                "the certificate records both a `from_definition` and a nested `base`".into(),
            ));
        }
    };
    let (body, _) = ch
        .parse_program(expected)
        .map_err(|e| e.note(format!("in {what}")))?;
    ch.well_shaped(&body)
        .map_err(|e| e.note(format!("in {what}")))?;
    if !alpha_eq(&body, initial) {
        return Err(unbound(format!("`initial` is not {what}"))
            .note(format!("initial: {}", show(initial)))
            .note(format!("`{}`:  {}", cert.from, show(&body))));
    }
    Ok(out)
}

/// The library plus the certificate's user rules, each read with the rule loader from
/// its recorded text. A user rule must load cleanly, be the one rule of its text, carry
/// the recorded name, and not take the name of a library rule (or another user rule).
fn with_user_rules(library: &Library, rules: &[UserRuleIn]) -> Res<Library> {
    let mut out = library.clone();
    for r in rules {
        let bad = |m: String| VerifyError::new("E1011", m);
        let (loaded, diags) = atl_rules::rule::load_rules(&r.source, "certificate");
        if let Some(d) = diags.first() {
            return Err(bad(format!(
                "user rule `{}` does not load: {}",
                r.name, d.message
            ))
            .note(format!("recorded text: {}", r.source.trim_end())));
        }
        let [rule] = loaded.as_slice() else {
            return Err(bad(format!(
                "the recorded text of user rule `{}` holds {} rules",
                r.name,
                loaded.len()
            )));
        };
        if rule.name != r.name {
            return Err(bad(format!(
                "the recorded text of user rule `{}` defines `{}`",
                r.name, rule.name
            )));
        }
        // A caller may pass a library that already holds this very rule (the CLI's
        // library with the file's user rules): the same text is the same rule.
        if library.user_source(&r.name) == Some(r.source.as_str()) {
            continue;
        }
        if library.get(&r.name).is_some() {
            return Err(bad(format!(
                "user rule `{}` has the name of a library rule",
                r.name
            )));
        }
        if !out.add_user_rule(rule.clone(), r.source.clone()) {
            return Err(bad(format!("user rule `{}` is recorded twice", r.name)));
        }
    }
    Ok(out)
}

pub(crate) fn show(e: &Expr) -> String {
    expr_to_string(e, Style::default())
}

/// A binder around a point of a program, kept so that a subterm printed on its own can
/// be parsed back in the same scope.
#[derive(Clone, Debug)]
pub(crate) enum Head {
    Gen(String, IndexExpr, IndexExpr),
    Sum(String, IndexExpr, IndexExpr),
    Max(String, IndexExpr, IndexExpr),
    Let(String, Rc<Expr>),
}

/// What is known at a point of a program, rebuilt by the checker itself: binder ranges
/// and guards (outermost first), shapes of enclosing lets, names in scope.
#[derive(Clone, Debug, Default)]
pub(crate) struct Ctx {
    pub facts: Vec<Pred>,
    pub lets: Vec<(String, Shape)>,
    pub bound: Vec<String>,
    pub heads: Vec<Head>,
}

/// One obligation proved by the solver, compared with the certificate's record.
#[derive(Clone, Debug)]
pub(crate) struct Obligation {
    pub name: String,
    pub goal: Pred,
    pub facts: Facts,
}

pub(crate) fn range_fact(var: &str, lo: &IndexExpr, hi: &IndexExpr) -> Pred {
    Pred::and(
        Pred::cmp(CmpOp::Le, lo.clone(), IndexExpr::var(var)),
        Pred::cmp(CmpOp::Lt, IndexExpr::var(var), hi.clone()),
    )
}

/// One storage of a recorded sparse matrix (`csc(pos, crd, vals)` of `A`), as the
/// front end resolves its item.
pub(crate) struct Storage {
    pub name: String,
    pub format: String,
    pub arrays: Vec<String>,
    /// The matrix its arrays encode.
    pub body: Expr,
}

pub(crate) struct Checker<'a> {
    library: &'a Library,
    solver: &'a Solver,
    /// The declarations followed by the recorded definitions, as ATL text: every
    /// program is parsed after them.
    declarations: String,
    /// The recorded definitions, resolved: name → body.
    pub definitions: BTreeMap<String, Expr>,
    /// Every storage of the recorded sparse matrices, the defining one first.
    pub storages: Vec<Storage>,
    sizes: Vec<String>,
    assumes: Vec<Pred>,
    /// The declarations of the index arrays (facts for loads such as `pos[i]`).
    arrays: Vec<atl_solver::IndexArrayFacts>,
    /// The same declarations as text, for the report.
    index_arrays: Vec<String>,
    inputs: usize,
    pub shapes: ShapeEnv,
    /// The name programs are parsed under: one that occurs nowhere in the certificate.
    def_name: String,
    proved: Cell<usize>,
    /// Shape obligations proved under the declarations (by their text).
    shape_known: RefCell<BTreeSet<String>>,
    warnings: Vec<String>,
    /// Programs already parsed, by text.
    parsed: RefCell<HashMap<String, (Expr, Shape)>>,
}

impl<'a> Checker<'a> {
    fn new(
        declarations: &str,
        definitions: &[DefinitionIn],
        cert_json: &str,
        library: &'a Library,
        solver: &'a Solver,
    ) -> Res<Checker<'a>> {
        let mut declarations = declarations.to_string();
        if !declarations.ends_with('\n') {
            declarations.push('\n');
        }
        let (checked, diags) = atl_lang::check_source(&declarations);
        let bad = |m: String| VerifyError::new("E1002", m);
        let checked = checked.ok_or_else(|| {
            bad(format!(
                "the declarations do not check: {}",
                diags.first().map_or("", |d| d.message.as_str())
            ))
        })?;
        let p = checked.program;
        if !p.defs.is_empty() || !p.derives.is_empty() || !p.rules.is_empty() {
            return Err(bad(
                "the declarations may hold only sizes, assumes and inputs".into(),
            ));
        }
        let mut def_name = "certified_program".to_string();
        while cert_json.contains(&def_name) {
            def_name.push('_');
        }
        // The definitions, each of which may use the ones before it.
        let mut with_defs = declarations.clone();
        for d in definitions {
            with_defs.push_str(&format!(
                "def {} =\n  {}\n",
                d.name,
                d.body.replace('\n', "\n  ")
            ));
        }
        let (checked, diags) = atl_lang::check_source(&with_defs);
        let checked = checked.ok_or_else(|| {
            bad(format!(
                "the recorded definitions do not check: {}",
                diags
                    .iter()
                    .find(|d| d.is_error())
                    .map_or("", |d| d.message.as_str())
            ))
        })?;
        let q = checked.program;
        // A sparse matrix's body must be the one its item defines (the front end's
        // `atl_lang::sparse`), so that the claim's `A` is the matrix its arrays store;
        // its other storages are what `unfold A as FORMAT` may read.
        let mut storages = Vec::new();
        for d in definitions {
            let Some(item) = &d.sparse else { continue };
            let source = format!("{declarations}sparse {item}\n");
            let sparse = atl_lang::check_source(&source)
                .0
                .map(|c| c.program)
                .filter(|s| !s.sparse.is_empty() && s.sparse.iter().all(|x| x.name == d.name));
            if let Some(s) = &sparse {
                storages.extend(s.sparse.iter().map(|x| Storage {
                    name: x.name.clone(),
                    format: x.format.name.to_string(),
                    arrays: x.arrays.clone(),
                    body: x.body.clone(),
                }));
            }
            let same = match (&sparse, q.def(&d.name)) {
                (Some(s), Some(recorded)) => s
                    .def(&d.name)
                    .is_some_and(|def| alpha_eq(&def.body, &recorded.body)),
                _ => false,
            };
            if !same {
                return Err(bad(format!(
                    "the recorded definition of `{}` is not the matrix that `sparse {item}` stores",
                    d.name
                )));
            }
        }
        let names: Vec<&str> = definitions.iter().map(|d| d.name.as_str()).collect();
        if q.defs.iter().map(|d| d.name.as_str()).collect::<Vec<_>>() != names
            || !q.derives.is_empty()
            || !q.rules.is_empty()
            || (q.sizes.len(), q.assumes.len(), q.inputs.len())
                != (p.sizes.len(), p.assumes.len(), p.inputs.len())
        {
            return Err(bad(
                "a recorded definition's body holds more than one expression".into(),
            ));
        }
        let mut ch = Checker {
            library,
            solver,
            declarations: with_defs,
            definitions: q
                .defs
                .iter()
                .map(|d| (d.name.clone(), d.body.clone()))
                .collect(),
            storages,
            sizes: p.sizes.iter().map(|s| s.name.clone()).collect(),
            assumes: p.assumes.iter().map(|a| a.pred.clone()).collect(),
            arrays: atl_solver::IndexArrayFacts::of_program(&p),
            index_arrays: p
                .inputs
                .iter()
                .filter(|i| i.index_array.is_some())
                .map(|i| i.to_string())
                .collect(),
            inputs: p.inputs.len(),
            shapes: checked.shapes,
            def_name,
            proved: Cell::new(0),
            shape_known: RefCell::new(BTreeSet::new()),
            warnings: Vec::new(),
            parsed: RefCell::new(HashMap::new()),
        };
        // Under contradictory assumptions every side condition would hold: refused when
        // the solver proves `false`; when it cannot decide, the report says so (a
        // satisfiable `assume` the solver cannot model must not stop a certificate, but
        // the reader must know the claim may be vacuous).
        match ch
            .solver
            .prove(&ch.facts(&Ctx::default()), &Pred::Bool(false))
        {
            Verdict::Proved => {
                return Err(bad("the declarations are contradictory".into()).note(
                    "no size satisfies them, so every condition would hold vacuously",
                ));
            }
            Verdict::Refuted(_) => {}
            Verdict::Unknown(why) => ch.warnings.push(format!(
                "the solver could not show that the declarations can be satisfied ({why}); if no size satisfies them, this certificate says nothing"
            )),
        }
        // Every input extent and every recorded definition is well-shaped under the
        // declarations alone.
        for o in input_obligations(&p) {
            ch.prove_shape(&o)
                .map_err(|e| e.note("in the declarations"))?;
        }
        for (name, body) in &ch.definitions {
            ch.well_shaped(body)
                .map_err(|e| e.note(format!("in the recorded definition of `{name}`")))?;
        }
        Ok(ch)
    }

    /// The shape discipline (ARCHITECTURE.md): every extent of `e` is `>= 0` and every
    /// reshape amount in range for every size the declarations allow. Proved under the
    /// declarations alone, never under a guard's or a binder's facts: a shape is
    /// observed even where a value is not (a guarded zero has its body's shape, and
    /// `++` offsets by it).
    pub fn well_shaped(&self, e: &Expr) -> Res<()> {
        let (_, obligations) = infer_with_obligations(&self.shapes, &mut Vec::new(), e)
            .map_err(|d| VerifyError::new("E1002", format!("no shape: {}", d.message)))?;
        for o in &obligations {
            self.prove_shape(o)?;
        }
        Ok(())
    }

    fn prove_shape(&self, o: &ShapeObligation) -> Res<()> {
        let key = o.pred.to_string();
        if self.shape_known.borrow().contains(&key) {
            return Ok(());
        }
        let verdict = self.solver.prove(&self.facts(&Ctx::default()), &o.pred);
        let why = match verdict {
            Verdict::Proved => {
                self.shape_known.borrow_mut().insert(key);
                return Ok(());
            }
            Verdict::Refuted(c) => format!("counterexample: {c}"),
            Verdict::Unknown(r) => format!("the solver could not prove it: {r}"),
        };
        Err(VerifyError::new(
            "E1014",
            format!(
                "{} may be negative or out of range: `{}` does not follow from the declarations",
                o.what, o.pred
            ),
        )
        .note(why)
        .note("shapes may use only the sizes (>= 1) and the `assume`s, not guards or enclosing ranges"))
    }

    /// A rewritten term keeps its shape for every size the declarations allow (E1015);
    /// `lets` are the shapes of the `let`s around it.
    pub fn keeps_shape(
        &self,
        lets: &[(String, Shape)],
        lets_after: &[(String, Shape)],
        before: &Expr,
        after: &Expr,
    ) -> Res<()> {
        let s1 = infer_with_lets(&self.shapes, &mut lets.to_vec(), before);
        let s2 = infer_with_lets(&self.shapes, &mut lets_after.to_vec(), after);
        let (s1, s2) = match (s1, s2) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(d), _) | (_, Err(d)) => {
                return Err(VerifyError::new(
                    "E1015",
                    format!("a rewritten term has no shape: {}", d.message),
                ));
            }
        };
        if self.shapes_equal(&s1, &s2) {
            return Ok(());
        }
        Err(VerifyError::new(
            "E1015",
            format!(
                "the step changes the shape of the term it rewrites from {} to {}",
                show_shape(&s1),
                show_shape(&s2)
            ),
        )
        .note(format!("before: {}", show(before)))
        .note(format!("after:  {}", show(after)))
        .note("shapes must be equal for every size the declarations allow; guards and enclosing ranges do not count, because a shape is observed even where its value is not"))
    }

    /// Equal for every size the declarations allow.
    fn shapes_equal(&self, a: &Shape, b: &Shape) -> bool {
        let facts = self.facts(&Ctx::default());
        a.len() == b.len()
            && a.iter().zip(b).all(|(x, y)| {
                atl_lang::poly::same(x, y)
                    || self
                        .solver
                        .prove(&facts, &Pred::cmp(CmpOp::Eq, x.clone(), y.clone()))
                        .is_proved()
            })
    }

    /// Parses and checks (names, shapes) one program over the declarations. The same
    /// text always gives the same program, so results are kept (a step's `after` is
    /// the next step's `before`, and parsing is most of the checker's time).
    pub fn parse_program(&self, text: &str) -> Res<(Expr, Shape)> {
        if let Some(hit) = self.parsed.borrow().get(text) {
            return Ok(hit.clone());
        }
        let out = self.parse_uncached(text)?;
        self.parsed
            .borrow_mut()
            .insert(text.to_string(), out.clone());
        Ok(out)
    }

    fn parse_uncached(&self, text: &str) -> Res<(Expr, Shape)> {
        let src = format!(
            "{}def {} =\n  {}\n",
            self.declarations,
            self.def_name,
            text.replace('\n', "\n  ")
        );
        let bad = |m: String| VerifyError::new("E1002", m).note(format!("program: {text}"));
        let (checked, diags) = atl_lang::check_source(&src);
        let Some(c) = checked else {
            let first = diags
                .iter()
                .find(|d| d.is_error())
                .map_or("", |d| &d.message);
            return Err(bad(format!("a program does not check: {first}")));
        };
        let p = &c.program;
        // The text must be one expression, not smuggle in items of its own.
        if p.defs.len() != self.definitions.len() + 1
            || p.defs.last().is_none_or(|d| d.name != self.def_name)
            || !p.derives.is_empty()
            || !p.rules.is_empty()
            || p.sizes.len() != self.sizes.len()
            || p.assumes.len() != self.assumes.len()
            || p.inputs.len() != self.inputs
        {
            return Err(bad("a program text holds more than one expression".into()));
        }
        let body = p.defs[p.defs.len() - 1].body.clone();
        let shape = c
            .shapes
            .globals
            .get(&self.def_name)
            .cloned()
            .unwrap_or_default();
        Ok((body, shape))
    }

    /// Parses a subterm printed on its own by wrapping it in the binders around it;
    /// returns the whole wrapped expression (compare it with [`wrap`]).
    pub fn parse_in(&self, heads: &[Head], text: &str) -> Res<Expr> {
        let mut src = String::new();
        for h in heads {
            src.push_str(&match h {
                Head::Gen(v, lo, hi) => format!("gen {v} in {lo}..{hi}: "),
                Head::Sum(v, lo, hi) => format!("sum {v} in {lo}..{hi}: "),
                // As a `sum` (see `wrap`): the head only scopes the binder, and a
                // max-reduction's body must be a scalar, which a subterm below it (a
                // tensor read, say) need not be.
                Head::Max(v, lo, hi) => format!("sum {v} in {lo}..{hi}: "),
                Head::Let(v, value) => format!("let {v} = ({}) in ", show(value)),
            });
        }
        src.push_str(text);
        Ok(self.parse_program(&src)?.0)
    }

    /// Whether `text`, read in the scope `heads`, is alpha-equivalent to `e`.
    pub fn same_in(&self, heads: &[Head], text: &str, e: &Expr) -> Res<bool> {
        Ok(alpha_eq(
            &self.parse_in(heads, text)?,
            &wrap(heads, e.clone()),
        ))
    }

    /// The context inside child `k` of `e`, given the context at `e`.
    pub fn enter(&self, ctx: &Ctx, e: &Expr, k: usize) -> Ctx {
        let mut c = ctx.clone();
        match &e.kind {
            ExprKind::Gen { var, lo, hi, .. }
            | ExprKind::Sum { var, lo, hi, .. }
            | ExprKind::MaxRed { var, lo, hi, .. } => {
                c.facts.push(range_fact(var, lo, hi));
                c.bound.push(var.clone());
                let (v, lo, hi) = (var.clone(), lo.clone(), hi.clone());
                c.heads.push(match e.kind {
                    ExprKind::Gen { .. } => Head::Gen(v, lo, hi),
                    ExprKind::Sum { .. } => Head::Sum(v, lo, hi),
                    _ => Head::Max(v, lo, hi),
                });
            }
            ExprKind::Guard { pred, .. } => c.facts.push(pred.clone()),
            ExprKind::Let { var, value, .. } if k == 1 => {
                if let Ok(s) = infer_with_lets(&self.shapes, &mut ctx.lets.clone(), value) {
                    c.lets.push((var.clone(), s));
                }
                c.bound.push(var.clone());
                c.heads
                    .push(Head::Let(var.clone(), Rc::new((**value).clone())));
            }
            _ => {}
        }
        c
    }

    /// The node at `path` with its context.
    pub fn locate<'e>(&self, root: &'e Expr, path: &[usize]) -> Res<(Ctx, &'e Expr)> {
        let mut ctx = Ctx::default();
        let mut cur = root;
        for (depth, &k) in path.iter().enumerate() {
            let Some(next) = cur.children().get(k).copied() else {
                return Err(VerifyError::new(
                    "E1004",
                    format!("the path leads nowhere: `{}` has no child {k}", show(cur)),
                )
                .note(format!("at depth {depth} of path {path:?}")));
            };
            ctx = self.enter(&ctx, cur, k);
            cur = next;
        }
        Ok((ctx, cur))
    }

    /// The solver's hypotheses at a point: sizes >= 1, the assumes, the context.
    pub fn facts(&self, ctx: &Ctx) -> Facts {
        Facts {
            sizes: self.sizes.clone(),
            facts: self.assumes.iter().chain(&ctx.facts).cloned().collect(),
            arrays: self.arrays.clone(),
        }
    }

    pub fn is_size(&self, name: &str) -> bool {
        self.sizes.iter().any(|s| s == name)
    }

    /// Proves an obligation from scratch; the error shows the goal, the context and
    /// the counterexample when there is one.
    pub fn prove(&self, ob: &Obligation) -> Res<()> {
        let verdict = self.solver.prove(&ob.facts, &ob.goal);
        let context = show_context(&ob.facts).join(", ");
        let what = match verdict {
            Verdict::Proved => {
                self.proved.set(self.proved.get() + 1);
                return Ok(());
            }
            Verdict::Refuted(c) => ("is false here", format!("counterexample: {c}")),
            Verdict::Unknown(r) => ("could not be proved", format!("the solver gave up: {r}")),
        };
        Err(
            VerifyError::new("E1006", format!("side condition `{}` {}", ob.name, what.0))
                .note(format!("goal: {}", ob.goal))
                .note(format!("context: {context}"))
                .note(what.1),
        )
    }

    /// Shapes are preserved by every step (a cheap second line of defence).
    fn same_shape(&self, a: &Shape, b: &Shape) -> Res<()> {
        if self.shapes_equal(a, b) {
            return Ok(());
        }
        Err(
            VerifyError::new("E1008", "the step changed the program's shape").note(format!(
                "before: {}, after: {}",
                show_shape(a),
                show_shape(b)
            )),
        )
    }

    /// One `rw`/`rw<-` step: returns the program after it and its shape.
    fn rule_step(&self, prog: &Expr, step: &StepIn, name: &str) -> Res<(Expr, Shape)> {
        let rule = self.library.get(name).ok_or_else(|| {
            VerifyError::new("E1003", format!("the library has no rule `{name}`"))
        })?;
        let statement = rule.statement();
        if step.rule_statement.as_deref() != Some(statement.as_str()) {
            return Err(VerifyError::new(
                "E1003",
                format!("rule `{name}` is not the rule this certificate was made with"),
            )
            .note(format!(
                "certificate: {}",
                step.rule_statement.as_deref().unwrap_or("(none)")
            ))
            .note(format!("library:     {statement}")));
        }
        let backward = match step.direction.as_deref() {
            Some("forward") => false,
            Some("backward") => true,
            other => {
                return Err(VerifyError::new(
                    "E1010",
                    format!("unknown direction {other:?}"),
                ));
            }
        };
        let command = format!("{} {name}", if backward { "rw<-" } else { "rw" });
        let grade = match rule.grade {
            Grade::Exact => "exact",
            Grade::Real => "real",
        };
        if step.command != command || step.grade != grade {
            return Err(VerifyError::new(
                "E1010",
                format!("the record does not describe `{command}` (grade {grade})"),
            ));
        }
        let (pattern, result) = if backward {
            (&rule.rhs, &rule.lhs)
        } else {
            (&rule.lhs, &rule.rhs)
        };
        if backward && !rule.substs.is_empty() {
            return Err(VerifyError::new(
                "E1005",
                format!("rule `{name}` cannot be used right to left"),
            ));
        }
        let (ctx, node) = self.locate(prog, &step.path)?;
        if !self.same_in(&ctx.heads, &step.before, node)? {
            return Err(VerifyError::new(
                "E1004",
                format!(
                    "the program does not contain the recorded subterm at path {:?}",
                    step.path
                ),
            )
            .note(format!("recorded: {}", step.before))
            .note(format!("found:    {}", show(node))));
        }
        let mismatch = |m: String| {
            VerifyError::new(
                "E1005",
                format!(
                    "the subterm is not an instance of the rule's {} side",
                    if backward { "right" } else { "left" }
                ),
            )
            .note(m)
        };
        let mut inst = matching::match_rule(rule, pattern, node).map_err(mismatch)?;
        let obligations = self.rule_conditions(rule, result, step, &ctx, &mut inst)?;
        compare_instantiation(&inst.recorded(), &step.instantiation)?;
        for ob in &obligations {
            self.prove(ob)?;
        }
        compare_conditions(&obligations, &step.conditions)?;
        let built = matching::build(rule, result, &inst).map_err(mismatch)?;
        self.keeps_shape(&ctx.lets, &ctx.lets, node, &built)?;
        if !self.same_in(&ctx.heads, &step.after_site, &built)? {
            return Err(VerifyError::new(
                "E1008",
                "the recorded `after_site` is not the rule's instance",
            )
            .note(format!("recorded: {}", step.after_site))
            .note(format!("instance: {}", show(&built))));
        }
        let replaced = replace_at(prog, &step.path, built);
        self.expect_after(&replaced, step)
    }

    /// Parameters, shape conditions and index conditions of a rule at a site, with
    /// their instantiation completed; returns the obligations in the engine's order.
    fn rule_conditions(
        &self,
        rule: &Rule,
        result: &Expr,
        step: &StepIn,
        ctx: &Ctx,
        inst: &mut matching::Inst,
    ) -> Res<Vec<Obligation>> {
        let fail = |m: String| VerifyError::new("E1005", m);
        let shape_bound: BTreeSet<&str> = rule
            .conditions
            .iter()
            .flat_map(|c| match c {
                Condition::Shape { dims, .. } => dims.as_slice(),
                Condition::Pred { .. } => &[],
            })
            .filter_map(|d| match d {
                IndexExpr::Meta(m) => Some(m.as_str()),
                _ => None,
            })
            .collect();
        // Parameters (`with k := …`) are the only values taken from the record; they
        // may mention only sizes and the binders around the site.
        let mut needed = BTreeSet::new();
        metas_of(result, &mut needed);
        for spec in rule.substs.values() {
            needed.insert(spec.meta.clone());
            match &spec.value {
                atl_rules::rule::SubstValue::Index(v) => {
                    metas_of(&Expr::access(Expr::input("_"), v.clone()), &mut needed)
                }
                atl_rules::rule::SubstValue::Expr(v) => {
                    needed.insert(v.clone());
                }
            }
        }
        for m in &needed {
            if rule.substs.contains_key(m) || inst.is_bound(m) || shape_bound.contains(m.as_str()) {
                continue;
            }
            let text = step
                .instantiation
                .get(&format!("?{m}"))
                .filter(|_| rule.params.contains(m))
                .ok_or_else(|| fail(format!("no value for `?{m}`")))?;
            let v = atl_lang::parser::parse_index_str(text)
                .map_err(|_| fail(format!("`?{m}` := `{text}` is not an index expression")))?;
            if let Some(x) = v
                .vars()
                .into_iter()
                .find(|x| !self.is_size(x) && !ctx.bound.contains(x))
            {
                return Err(fail(format!(
                    "`?{m}` := `{text}` mentions `{x}`, not in scope"
                )));
            }
            inst.indices.insert(m.clone(), v);
        }
        let facts = self.facts(ctx);
        let mut out = Vec::new();
        for c in &rule.conditions {
            let Condition::Shape {
                name,
                meta,
                dims,
                open,
            } = c
            else {
                continue;
            };
            let term = inst.terms.get(meta).ok_or_else(|| {
                fail(format!(
                    "condition `{name}` needs `?{meta}`, which is not matched"
                ))
            })?;
            let shape = infer_with_lets(&self.shapes, &mut ctx.lets.clone(), term)
                .map_err(|d| fail(format!("no shape for `?{meta}`: {}", d.message)))?;
            if shape.len() < dims.len() || (!open && shape.len() != dims.len()) {
                return Err(VerifyError::new(
                    "E1006",
                    format!(
                        "condition `{name}` fails: `?{meta}` has {} dimensions",
                        shape.len()
                    ),
                ));
            }
            for (d, actual) in dims.iter().zip(&shape) {
                if let IndexExpr::Meta(m) = d
                    && !inst.indices.contains_key(m)
                {
                    inst.indices.insert(m.clone(), actual.clone());
                    continue;
                }
                let expected = inst.cond_index(d).map_err(fail)?;
                out.push(Obligation {
                    name: name.clone(),
                    goal: Pred::cmp(CmpOp::Eq, expected, actual.clone()),
                    facts: facts.clone(),
                });
            }
        }
        if let Some(m) = needed
            .iter()
            .find(|m| !rule.substs.contains_key(*m) && !inst.is_bound(m))
        {
            return Err(fail(format!("no value for `?{m}`")));
        }
        for c in &rule.conditions {
            let Condition::Pred { name, pred } = c else {
                continue;
            };
            let goal = inst.cond_pred(pred).map_err(fail)?;
            // A condition may mention binders matched inside the rule: add their ranges.
            let mut f = facts.clone();
            for (pv, (lo, hi)) in &inst.ranges {
                let tv = &inst.binders[pv];
                if goal.mentions(tv) {
                    f.facts.push(range_fact(tv, lo, hi));
                }
            }
            out.push(Obligation {
                name: name.clone(),
                goal,
                facts: f,
            });
        }
        Ok(out)
    }

    /// Checks that `replaced` is the recorded `after` program; returns the latter.
    pub fn expect_after(&self, replaced: &Expr, step: &StepIn) -> Res<(Expr, Shape)> {
        let after = self
            .parse_program(&step.after)
            .map_err(|e| e.note("in `after`"))?;
        if !alpha_eq(replaced, &after.0) {
            return Err(VerifyError::new(
                "E1008",
                "replacing the subterm does not give the recorded program",
            )
            .note(format!("recorded: {}", step.after))
            .note(format!("replaced: {}", show(replaced))));
        }
        Ok(after)
    }
}

/// `e` under the binders `heads` (outermost first).
pub(crate) fn wrap(heads: &[Head], e: Expr) -> Expr {
    heads.iter().rev().fold(e, |e, h| match h {
        Head::Gen(v, lo, hi) => Expr::gen_(v.clone(), lo.clone(), hi.clone(), e),
        Head::Sum(v, lo, hi) => Expr::sum(v.clone(), lo.clone(), hi.clone(), e),
        // As in `parse_in`: a binder that scopes `e`, whatever `e`'s shape.
        Head::Max(v, lo, hi) => Expr::sum(v.clone(), lo.clone(), hi.clone(), e),
        Head::Let(v, value) => Expr::let_(v.clone(), (**value).clone(), e),
    })
}

pub(crate) fn replace_at(root: &Expr, path: &[usize], new: Expr) -> Expr {
    let Some((&k, rest)) = path.split_first() else {
        return new;
    };
    let mut out = root.clone();
    if let Some(c) = out.children_mut().into_iter().nth(k) {
        *c = replace_at(c, rest, new);
    }
    out
}

/// The context as certificates print it: sizes first, then the facts.
pub(crate) fn show_context(facts: &Facts) -> Vec<String> {
    let sizes = facts.sizes.iter().map(|s| format!("{s} >= 1"));
    sizes
        .chain(facts.facts.iter().map(Pred::to_string))
        .collect()
}

fn compare_instantiation(
    derived: &BTreeMap<String, String>,
    recorded: &BTreeMap<String, String>,
) -> Res<()> {
    let keys: BTreeSet<&String> = derived.keys().chain(recorded.keys()).collect();
    for k in keys {
        let (d, r) = (derived.get(k), recorded.get(k));
        if d != r {
            let show = |v: Option<&String>| v.map_or("(nothing)".to_string(), |v| format!("`{v}`"));
            return Err(VerifyError::new(
                "E1005",
                format!("the recorded instantiation of `{k}` is wrong"),
            )
            .note(format!("recorded: {}", show(r)))
            .note(format!("matched:  {}", show(d))));
        }
    }
    Ok(())
}

/// The recorded conditions must be exactly the derived ones (name, goal, context), in
/// any order, and recorded as proved.
pub(crate) fn compare_conditions(derived: &[Obligation], recorded: &[CondIn]) -> Res<()> {
    let key = |name: &str, goal: String, ctx: Vec<String>| (name.to_string(), goal, ctx);
    let mut mine: Vec<_> = derived
        .iter()
        .map(|o| key(&o.name, o.goal.to_string(), show_context(&o.facts)))
        .collect();
    let mut theirs: Vec<_> = recorded
        .iter()
        .map(|c| key(&c.name, c.goal.clone(), c.context.clone()))
        .collect();
    if let Some(c) = recorded.iter().find(|c| c.verdict != "proved") {
        return Err(VerifyError::new(
            "E1007",
            format!("condition `{}` is recorded as `{}`", c.name, c.verdict),
        ));
    }
    mine.sort();
    theirs.sort();
    for (name, goal, ctx) in &mine {
        if !theirs
            .iter()
            .any(|t| t.0 == *name && t.1 == *goal && t.2 == *ctx)
        {
            return Err(VerifyError::new(
                "E1007",
                format!("side condition `{name}: {goal}` is missing from the certificate"),
            )
            .note(format!("context: {}", ctx.join(", "))));
        }
    }
    if mine != theirs {
        let extra = theirs
            .iter()
            .find(|t| !mine.contains(t))
            .unwrap_or(&theirs[0]);
        return Err(VerifyError::new(
            "E1007",
            format!(
                "the certificate records side condition `{}: {}`, which this step does not have",
                extra.0, extra.1
            ),
        )
        .note(format!("context: {}", extra.2.join(", "))));
    }
    Ok(())
}

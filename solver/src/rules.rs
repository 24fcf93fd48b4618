//! Index rewrite rules as data: the rule-file format, its parser, the statement of
//! each rule for the prover, and the reduction order that makes simplification
//! terminate.
//!
//! # Rule files
//!
//! `name: LHS => RHS [if COND, COND, …]`, one rule per line (indented lines continue
//! the previous rule, `#` starts a comment). `?cN` metavariables match integer
//! constants only, other `?x` match any expression, `fold(e)` on the right is
//! computed from matched constants. The built-in rules are `solver/rules/index.rules`.
//!
//! # Reduction order
//!
//! Termination rests on a *weight* `W`, a strictly monotone linear polynomial
//! interpretation of index expressions into the integers `>= 1`:
//!
//! ```text
//! W(constant) = W(variable) = W(fold(e)) = 1
//! W(-a)                    = W(a) + 1
//! W(a + b) = W(a - b) = W(a * b) = W(min(a, b)) = W(max(a, b)) = W(a) + W(b) + 1
//! W(a / b) = W(a % b) = W(cdiv(a, b))                          = 2·W(a) + W(b) + 1
//! ```
//!
//! Division counts its numerator twice: moving a term out of a numerator
//! (`(x*8 + y) / 8 => x + y / 8`) is progress even though the size stays the same.
//! The order `s > t iff W(s) > W(t)` is a reduction order (Baader & Nipkow, ch. 5.3):
//! it is well-founded (weights are positive integers), compatible with contexts
//! (every operator's weight is strictly increasing in each argument) and closed under
//! substitution when checked symbolically: a rule `l => r` is *oriented* if
//! `W(l) - W(r)`, a linear polynomial in the weights of the metavariables (each
//! `>= 1`; `?cN` is exactly 1, a constant), has non-negative coefficients and is
//! positive when every metavariable weighs 1. Then every instance of the rule
//! decreases `W`. [`Rule::check_orientation`] performs this check; a test runs it on
//! every built-in rule.
//!
//! The simplifier matches modulo associativity and commutativity and renormalizes
//! with the polynomial normal form, so it also checks at run time that each step
//! strictly decreases `W` of the whole (normalized) expression and skips a step that
//! does not: termination holds by construction, and the static check documents that
//! the rules point the right way.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};

use crate::query::Facts;
use crate::syntax::{self, FOLD_PREFIX};

/// The built-in index rules, as text.
pub const INDEX_RULES_SRC: &str = include_str!("../rules/index.rules");

/// One rewrite rule `lhs => rhs if conditions`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub name: String,
    /// The comment lines right above the rule (its equation, in words).
    pub doc: String,
    pub lhs: IndexExpr,
    /// The right-hand side; `fold(e)` appears as the metavariable `?#foldK`.
    pub rhs: IndexExpr,
    /// Bodies of the `fold(…)` markers of `rhs`, by index.
    pub folds: Vec<IndexExpr>,
    pub conditions: Vec<Pred>,
    /// Proof hints: predicates that follow from the conditions and help z3 prove the
    /// rule (each is proved first, then assumed; see [`prove_rule`]).
    pub hints: Vec<Pred>,
    /// 1-based line of the rule in its file.
    pub line: usize,
}

/// A malformed rule file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for RuleError {}

/// Whether a metavariable name is a constant pattern `cN`.
pub(crate) fn is_const_meta(name: &str) -> bool {
    name.len() > 1 && name.starts_with('c') && name[1..].bytes().all(|b| b.is_ascii_digit())
}

pub(crate) fn fold_index(name: &str) -> Option<usize> {
    name.strip_prefix(FOLD_PREFIX)?.parse().ok()
}

/// Replaces the `fold` markers of a right-hand side by their bodies.
fn unfold(e: &IndexExpr, folds: &[IndexExpr]) -> IndexExpr {
    match e {
        IndexExpr::Meta(name) => match fold_index(name) {
            Some(k) => folds[k].clone(),
            None => e.clone(),
        },
        IndexExpr::Const(_) | IndexExpr::Var(_) => e.clone(),
        IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(unfold(a, folds))),
        IndexExpr::Load(array, a) => IndexExpr::Load(array.clone(), Box::new(unfold(a, folds))),
        IndexExpr::Bin(op, a, b) => IndexExpr::bin(*op, unfold(a, folds), unfold(b, folds)),
    }
}

fn collect_metas(e: &IndexExpr, out: &mut BTreeMap<String, usize>) {
    match e {
        IndexExpr::Meta(name) => *out.entry(name.clone()).or_default() += 1,
        IndexExpr::Const(_) | IndexExpr::Var(_) => {}
        IndexExpr::Neg(a) | IndexExpr::Load(_, a) => collect_metas(a, out),
        IndexExpr::Bin(_, a, b) => {
            collect_metas(a, out);
            collect_metas(b, out);
        }
    }
}

fn pred_metas(p: &Pred, out: &mut BTreeMap<String, usize>) {
    match p {
        Pred::Bool(_) => {}
        Pred::Cmp(_, a, b) => {
            collect_metas(a, out);
            collect_metas(b, out);
        }
        Pred::And(a, b) | Pred::Or(a, b) => {
            pred_metas(a, out);
            pred_metas(b, out);
        }
        Pred::Not(a) => pred_metas(a, out),
    }
}

/// `W` as a linear polynomial over metavariables: `(constant, coefficient per meta)`.
/// Constant metavariables (`?cN`) and `fold` markers weigh exactly 1.
pub(crate) fn weight_poly(e: &IndexExpr) -> (i64, BTreeMap<String, i64>) {
    fn go(e: &IndexExpr, scale: i64, acc: &mut (i64, BTreeMap<String, i64>)) {
        match e {
            IndexExpr::Const(_) | IndexExpr::Var(_) => acc.0 += scale,
            IndexExpr::Meta(name) if is_const_meta(name) || fold_index(name).is_some() => {
                acc.0 += scale
            }
            IndexExpr::Meta(name) => *acc.1.entry(name.clone()).or_default() += scale,
            IndexExpr::Neg(a) | IndexExpr::Load(_, a) => {
                acc.0 += scale;
                go(a, scale, acc);
            }
            IndexExpr::Bin(op, a, b) => {
                acc.0 += scale;
                let k = match op {
                    IndexOp::Div | IndexOp::Mod | IndexOp::CDiv => 2,
                    _ => 1,
                };
                go(a, scale * k, acc);
                go(b, scale, acc);
            }
        }
    }
    let mut acc = (0, BTreeMap::new());
    go(e, 1, &mut acc);
    acc
}

/// `W` of a concrete expression (metavariables weigh 1). Saturates instead of
/// overflowing; expressions that large are not simplified anyway.
pub fn weight(e: &IndexExpr) -> u64 {
    match e {
        IndexExpr::Const(_) | IndexExpr::Var(_) | IndexExpr::Meta(_) => 1,
        IndexExpr::Neg(a) | IndexExpr::Load(_, a) => weight(a).saturating_add(1),
        IndexExpr::Bin(op, a, b) => {
            let k = match op {
                IndexOp::Div | IndexOp::Mod | IndexOp::CDiv => 2,
                _ => 1,
            };
            weight(a)
                .saturating_mul(k)
                .saturating_add(weight(b))
                .saturating_add(1)
        }
    }
}

impl Rule {
    /// The right-hand side with `fold(…)` bodies in place (for proving and display).
    pub fn rhs_unfolded(&self) -> IndexExpr {
        unfold(&self.rhs, &self.folds)
    }

    /// The statement that makes the rule sound: under its conditions, both sides are
    /// equal for all integer values of the metavariables (which the prover treats as
    /// variables named `?x`).
    pub fn validity_query(&self) -> (Facts, Pred) {
        let facts = Facts {
            sizes: Vec::new(),
            facts: self.conditions.clone(),
            arrays: Vec::new(),
        };
        (
            facts,
            Pred::cmp(CmpOp::Eq, self.lhs.clone(), self.rhs_unfolded()),
        )
    }

    /// Checks that the rule strictly decreases the weight `W` for every instance (see
    /// the module documentation). On failure, says which condition fails.
    pub fn check_orientation(&self) -> Result<(), String> {
        let (l0, lm) = weight_poly(&self.lhs);
        let (r0, rm) = weight_poly(&self.rhs);
        let mut total_at_one = l0 - r0;
        for (name, rc) in &rm {
            let lc = lm.get(name).copied().unwrap_or(0);
            if lc < *rc {
                return Err(format!(
                    "?{name} weighs {rc} on the right but {lc} on the left: a large instance of ?{name} would grow"
                ));
            }
        }
        for (name, lc) in &lm {
            total_at_one += lc - rm.get(name).copied().unwrap_or(0);
        }
        if total_at_one <= 0 {
            return Err(format!(
                "W(lhs) - W(rhs) = {total_at_one} when every metavariable weighs 1: not a strict decrease"
            ));
        }
        Ok(())
    }

    /// `W(lhs) - W(rhs)` with every metavariable weighing 1 (the guaranteed decrease).
    pub fn min_decrease(&self) -> i64 {
        let (l0, lm) = weight_poly(&self.lhs);
        let (r0, rm) = weight_poly(&self.rhs);
        l0 + lm.values().sum::<i64>() - r0 - rm.values().sum::<i64>()
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rhs = self.rhs.to_string();
        for (k, body) in self.folds.iter().enumerate() {
            rhs = rhs.replace(&format!("?{FOLD_PREFIX}{k}"), &format!("fold({body})"));
        }
        write!(f, "{}: {} => {}", self.name, self.lhs, rhs)?;
        for (i, c) in self.conditions.iter().enumerate() {
            write!(f, "{} {c}", if i == 0 { "  if" } else { "," })?;
        }
        for (i, h) in self.hints.iter().enumerate() {
            write!(f, "{} {h}", if i == 0 { "  hint" } else { "," })?;
        }
        Ok(())
    }
}

/// An ordered list of rules (earlier rules are tried first).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleSet {
    pub rules: Vec<Rule>,
}

/// Splits `s` at top-level commas (not inside parentheses).
fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// Finds the keyword `word` (surrounded by whitespace) at parenthesis depth 0.
fn find_keyword(s: &str, word: &str) -> Option<usize> {
    let mut depth = 0i32;
    let bytes = s.as_bytes();
    for i in 0..bytes.len() {
        match bytes[i] {
            b'(' => depth += 1,
            b')' => depth -= 1,
            _ => {}
        }
        if depth == 0
            && s[i..].starts_with(word)
            && (i == 0 || bytes[i - 1].is_ascii_whitespace())
            && bytes
                .get(i + word.len())
                .is_some_and(|b| b.is_ascii_whitespace())
        {
            return Some(i);
        }
    }
    None
}

fn parse_pred_list(src: Option<&str>, name: &str, what: &str) -> Result<Vec<Pred>, String> {
    let Some(src) = src else {
        return Ok(Vec::new());
    };
    split_top_level(src)
        .into_iter()
        .map(|c| {
            syntax::parse_pred(c.trim())
                .map_err(|e| format!("rule `{name}`, {what} `{}`: {e}", c.trim()))
        })
        .collect()
}

fn parse_rule(text: &str, doc: String, line: usize) -> Result<Rule, RuleError> {
    let err = |message: String| RuleError { line, message };
    let (name, body) = text
        .split_once(':')
        .ok_or_else(|| err("expected `name: lhs => rhs`".into()))?;
    let name = name.trim();
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err(err(format!("bad rule name `{name}`")));
    }
    let (lhs_src, rest) = body
        .split_once("=>")
        .ok_or_else(|| err(format!("rule `{name}`: expected `=>`")))?;
    let (rest, hint_src) = match find_keyword(rest, "hint") {
        Some(i) => (&rest[..i], Some(&rest[i + 4..])),
        None => (rest, None),
    };
    let (rhs_src, cond_src) = match find_keyword(rest, "if") {
        Some(i) => (&rest[..i], Some(&rest[i + 2..])),
        None => (rest, None),
    };
    let lhs = syntax::parse_index(lhs_src.trim())
        .map_err(|e| err(format!("rule `{name}`, left-hand side: {e}")))?;
    let (rhs, folds) = syntax::parse_template(rhs_src.trim())
        .map_err(|e| err(format!("rule `{name}`, right-hand side: {e}")))?;
    let conditions = parse_pred_list(cond_src, name, "condition").map_err(err)?;
    let hints = parse_pred_list(hint_src, name, "hint").map_err(err)?;
    let rule = Rule {
        name: name.to_string(),
        doc,
        lhs,
        rhs,
        folds,
        conditions,
        hints,
        line,
    };
    validate(&rule).map_err(err)?;
    Ok(rule)
}

/// Structural requirements that the matcher and the instantiation rely on.
fn validate(rule: &Rule) -> Result<(), String> {
    let name = &rule.name;
    if matches!(
        rule.lhs,
        IndexExpr::Meta(_) | IndexExpr::Const(_) | IndexExpr::Var(_)
    ) {
        return Err(format!(
            "rule `{name}`: the left-hand side must be an operation"
        ));
    }
    if rule.lhs.vars().into_iter().next().is_some() {
        return Err(format!(
            "rule `{name}`: use metavariables (`?x`), not names, in patterns"
        ));
    }
    let mut lhs_metas = BTreeMap::new();
    collect_metas(&rule.lhs, &mut lhs_metas);
    let mut used = BTreeMap::new();
    collect_metas(&rule.rhs, &mut used);
    for body in &rule.folds {
        let mut m = BTreeMap::new();
        collect_metas(body, &mut m);
        if let Some(bad) = m.keys().find(|k| !is_const_meta(k)) {
            return Err(format!(
                "rule `{name}`: fold(…) may only use constant metavariables (`?cN`), not ?{bad}"
            ));
        }
        used.extend(m);
    }
    for c in rule.conditions.iter().chain(&rule.hints) {
        pred_metas(c, &mut used);
    }
    for m in used.keys() {
        if fold_index(m).is_none() && !lhs_metas.contains_key(m) {
            return Err(format!(
                "rule `{name}`: ?{m} does not occur on the left-hand side"
            ));
        }
    }
    Ok(())
}

/// Parses a rule file.
pub fn parse_rules(src: &str) -> Result<RuleSet, RuleError> {
    let mut rules = Vec::new();
    let mut doc: Vec<String> = Vec::new();
    // (text, first line, doc) of the rule being accumulated.
    let mut current: Option<(String, usize, String)> = None;
    for (i, raw) in src.lines().enumerate() {
        let line_no = i + 1;
        let (code, comment) = match raw.find('#') {
            Some(k) => (&raw[..k], Some(raw[k + 1..].trim())),
            None => (raw, None),
        };
        let continues = raw.starts_with([' ', '\t']) && !code.trim().is_empty();
        if continues {
            match current.as_mut() {
                Some((text, _, _)) => {
                    text.push(' ');
                    text.push_str(code.trim());
                }
                None => {
                    return Err(RuleError {
                        line: line_no,
                        message: "indented line without a rule to continue".into(),
                    });
                }
            }
            continue;
        }
        if !code.trim().is_empty() {
            if let Some((text, line, d)) = current.take() {
                rules.push(parse_rule(&text, d, line)?);
            }
            current = Some((code.trim().to_string(), line_no, doc.join("\n")));
            doc.clear();
        } else if let Some(c) = comment {
            doc.push(c.to_string());
        } else {
            doc.clear();
        }
    }
    if let Some((text, line, d)) = current.take() {
        rules.push(parse_rule(&text, d, line)?);
    }
    let mut seen = std::collections::BTreeSet::new();
    for r in &rules {
        if !seen.insert(r.name.clone()) {
            return Err(RuleError {
                line: r.line,
                message: format!("duplicate rule name `{}`", r.name),
            });
        }
    }
    Ok(RuleSet { rules })
}

impl RuleSet {
    /// The built-in index rules (`solver/rules/index.rules`), parsed once.
    pub fn builtin() -> &'static RuleSet {
        static RULES: OnceLock<RuleSet> = OnceLock::new();
        RULES.get_or_init(|| {
            // The file is part of the crate and a test parses it, so a failure here is
            // a build defect, not a user error.
            parse_rules(INDEX_RULES_SRC).expect("solver/rules/index.rules is well-formed")
        })
    }

    pub fn get(&self, name: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.name == name)
    }
}

/// How [`prove_rule`] established a rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleProof {
    /// z3 queries that were proved (hints, case splits and the rule itself).
    pub queries: usize,
    /// Obligations that needed a case split on the signs of divisors.
    pub split: usize,
}

/// Replaces metavariables by expressions.
fn subst_metas(e: &IndexExpr, map: &BTreeMap<String, IndexExpr>) -> IndexExpr {
    match e {
        IndexExpr::Meta(name) => map.get(name).cloned().unwrap_or_else(|| e.clone()),
        IndexExpr::Const(_) | IndexExpr::Var(_) => e.clone(),
        IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(subst_metas(a, map))),
        IndexExpr::Load(array, a) => IndexExpr::Load(array.clone(), Box::new(subst_metas(a, map))),
        IndexExpr::Bin(op, a, b) => IndexExpr::bin(*op, subst_metas(a, map), subst_metas(b, map)),
    }
}

/// Eliminates divisibility conditions, which z3 handles poorly, in favour of explicit
/// quotients. `?a % ?b == 0` (with `?a` a metavariable) holds exactly when
/// `?a == w * ?b` for some integer `w` (for `?b = 0` both say `?a == 0`), so the rule
/// is valid iff it is valid with `?a` replaced by `w * ?b` for a fresh `w` — and the
/// condition dropped. The lemma `?b == 0 || (w * ?b) / ?b == w` (proved by z3 like any
/// other obligation) tells z3 what the quotient is. Other divisibility conditions
/// `a % b == 0` become the equivalent `a == w * b`.
///
/// Returns the substitution, the rewritten conditions and the lemmas.
fn eliminate_divisibility(conds: &[Pred]) -> (BTreeMap<String, IndexExpr>, Vec<Pred>, Vec<Pred>) {
    let mut map = BTreeMap::new();
    let mut out = Vec::new();
    let mut lemmas = Vec::new();
    for (fresh, c) in conds.iter().enumerate() {
        let Pred::Cmp(CmpOp::Eq, IndexExpr::Bin(IndexOp::Mod, a, b), IndexExpr::Const(0)) = c
        else {
            out.push(c.clone());
            continue;
        };
        let w = IndexExpr::Meta(format!("#w{fresh}"));
        let multiple = IndexExpr::mul(w.clone(), (**b).clone());
        match &**a {
            IndexExpr::Meta(name) if !map.contains_key(name) => {
                map.insert(name.clone(), multiple.clone());
                lemmas.push(Pred::or(
                    Pred::cmp(CmpOp::Eq, (**b).clone(), IndexExpr::Const(0)),
                    Pred::cmp(
                        CmpOp::Eq,
                        IndexExpr::bin(IndexOp::Div, multiple, (**b).clone()),
                        w,
                    ),
                ));
            }
            _ => out.push(Pred::cmp(CmpOp::Eq, (**a).clone(), multiple)),
        }
    }
    // Later conditions and lemmas may mention a substituted metavariable.
    let out = out
        .iter()
        .map(|p| p.map_index(&mut |e| subst_metas(e, &map)))
        .collect();
    let lemmas = lemmas
        .iter()
        .map(|p| p.map_index(&mut |e| subst_metas(e, &map)))
        .collect();
    (map, out, lemmas)
}

/// Metavariables used as divisors (the right operand of `/`, `%`, `cdiv`).
fn divisor_metas(e: &IndexExpr, out: &mut std::collections::BTreeSet<String>) {
    match e {
        IndexExpr::Bin(op, a, b) => {
            if matches!(op, IndexOp::Div | IndexOp::Mod | IndexOp::CDiv)
                && let IndexExpr::Meta(name) = &**b
            {
                out.insert(name.clone());
            }
            divisor_metas(a, out);
            divisor_metas(b, out);
        }
        IndexExpr::Neg(a) => divisor_metas(a, out),
        _ => {}
    }
}

fn pred_divisor_metas(p: &Pred, out: &mut std::collections::BTreeSet<String>) {
    match p {
        Pred::Bool(_) => {}
        Pred::Cmp(_, a, b) => {
            divisor_metas(a, out);
            divisor_metas(b, out);
        }
        Pred::And(a, b) | Pred::Or(a, b) => {
            pred_divisor_metas(a, out);
            pred_divisor_metas(b, out);
        }
        Pred::Not(a) => pred_divisor_metas(a, out),
    }
}

/// Proves `hyps => goal` with z3. When metavariables occur as divisors, the proof
/// splits on their signs (`< 0`, `= 0`, `> 0`): with a known sign the floor-division
/// encoding has a single branch, which z3's non-linear reasoning handles far more
/// reliably than the general three-way case. Returns the number of queries and
/// whether it split.
fn prove_obligation(
    hyps: &[Pred],
    goal: &Pred,
    solver: &crate::Solver,
) -> Result<(usize, bool), String> {
    let facts = Facts {
        sizes: Vec::new(),
        facts: hyps.to_vec(),
        arrays: Vec::new(),
    };
    let mut divisors = std::collections::BTreeSet::new();
    pred_divisor_metas(goal, &mut divisors);
    for h in hyps {
        pred_divisor_metas(h, &mut divisors);
    }
    if divisors.is_empty() {
        return match solver.prove(&facts, goal) {
            crate::Verdict::Proved => Ok((1, false)),
            crate::Verdict::Refuted(c) => Err(format!("`{goal}` is refuted: {c}")),
            crate::Verdict::Unknown(r) => Err(format!("`{goal}` is undecided: {r}")),
        };
    }
    let divisors: Vec<String> = divisors.into_iter().collect();
    let cases = 3usize.pow(divisors.len() as u32);
    for case in 0..cases {
        let mut f = facts.clone();
        let mut code = case;
        for d in &divisors {
            let op = [CmpOp::Gt, CmpOp::Lt, CmpOp::Eq][code % 3];
            code /= 3;
            f.facts.push(Pred::cmp(
                op,
                IndexExpr::Meta(d.clone()),
                IndexExpr::Const(0),
            ));
        }
        match solver.prove(&f, goal) {
            crate::Verdict::Proved => {}
            crate::Verdict::Refuted(c) => return Err(format!("`{goal}` is refuted: {c}")),
            crate::Verdict::Unknown(r) => {
                let signs: Vec<String> = f.facts[hyps.len()..]
                    .iter()
                    .map(|p| p.to_string())
                    .collect();
                return Err(format!(
                    "`{goal}` is undecided when {}: {r}",
                    signs.join(", ")
                ));
            }
        }
    }
    Ok((cases, true))
}

/// Proves a rule sound with z3: under its conditions, `lhs == rhs` for all integer
/// values of the metavariables. Divisibility conditions are replaced by explicit
/// quotients (see `eliminate_divisibility`); each lemma and hint is proved from the
/// conditions (and the earlier ones) and then assumed; undecided obligations are split
/// on the signs of divisors. Every step is a z3 proof, so the
/// chain is one. On failure, says which obligation failed and why.
pub fn prove_rule(rule: &Rule, solver: &crate::Solver) -> Result<RuleProof, String> {
    let (map, mut hyps, lemmas) = eliminate_divisibility(&rule.conditions);
    let mut proof = RuleProof {
        queries: 0,
        split: 0,
    };
    let goal = Pred::cmp(CmpOp::Eq, rule.lhs.clone(), rule.rhs_unfolded());
    let obligations: Vec<Pred> = lemmas
        .into_iter()
        .chain(
            rule.hints
                .iter()
                .chain(std::iter::once(&goal))
                .map(|p| p.map_index(&mut |e| subst_metas(e, &map))),
        )
        .collect();
    for h in &obligations {
        let (queries, split) = prove_obligation(&hyps, h, solver)?;
        proof.queries += queries;
        proof.split += usize::from(split);
        hyps.push(h.clone());
    }
    Ok(proof)
}

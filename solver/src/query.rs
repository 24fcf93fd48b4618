//! The vocabulary of a prover query: the hypotheses ([`Facts`]), the answer
//! ([`Verdict`]) and the witness of a refutation ([`Counterexample`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use atl_lang::index::{CmpOp, IndexExpr, Pred};

/// The context a goal is proved in: symbolic sizes (each an integer `>= 1`) and
/// hypotheses (binder ranges, guards, `assume` facts). Every other variable is a free
/// integer, bounded only by what the facts say.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Facts {
    pub sizes: Vec<String>,
    pub facts: Vec<Pred>,
    /// The declarations of the index arrays that loads (`pos[i]`) in the facts and the
    /// goal read (`crate::arrays`); a load of an array not listed is only known to be
    /// a function of its index.
    pub arrays: Vec<crate::arrays::IndexArrayFacts>,
}

impl Facts {
    pub fn new() -> Facts {
        Facts::default()
    }

    /// Adds a size (an integer `>= 1`).
    pub fn with_size(mut self, name: impl Into<String>) -> Facts {
        self.sizes.push(name.into());
        self
    }

    /// Adds a hypothesis.
    pub fn with_fact(mut self, fact: Pred) -> Facts {
        self.facts.push(fact);
        self
    }

    /// Adds the binder range `lo <= var < hi`.
    pub fn with_range(self, var: &str, lo: IndexExpr, hi: IndexExpr) -> Facts {
        let v = IndexExpr::var(var);
        self.with_fact(Pred::and(
            Pred::cmp(CmpOp::Le, lo, v.clone()),
            Pred::cmp(CmpOp::Lt, v, hi),
        ))
    }

    /// All hypotheses as predicates, the size bounds `n >= 1` first.
    pub fn hypotheses(&self) -> Vec<Pred> {
        self.sizes
            .iter()
            .map(|s| Pred::cmp(CmpOp::Ge, IndexExpr::var(s.clone()), IndexExpr::Const(1)))
            .chain(self.facts.iter().cloned())
            .collect()
    }

    /// The variables mentioned by the sizes and the facts.
    pub fn vars(&self) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = self.sizes.iter().cloned().collect();
        for f in &self.facts {
            f.collect_vars(&mut out);
        }
        out
    }

    /// Whether `assignment` satisfies every size bound and every fact. Unbound
    /// variables or overflowing arithmetic count as "not satisfied".
    pub fn holds(&self, assignment: &dyn Fn(&str) -> Option<i64>) -> bool {
        self.sizes
            .iter()
            .all(|s| assignment(s).is_some_and(|v| v >= 1))
            && self.facts.iter().all(|f| f.eval(assignment) == Ok(true))
    }
}

/// Concrete integer values for the variables of a refuted goal.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Counterexample {
    pub values: BTreeMap<String, i64>,
}

impl Counterexample {
    pub fn get(&self, name: &str) -> Option<i64> {
        self.values.get(name).copied()
    }

    /// Whether this assignment satisfies the facts and falsifies the goal, by direct
    /// evaluation with the interpreter's arithmetic — in 128 bits, so that a goal
    /// about values beyond 64 bits (an index that leaves `int64_t`) is refuted by
    /// its exact values. The prover only returns counterexamples for which this
    /// holds.
    pub fn refutes(&self, facts: &Facts, goal: &Pred) -> bool {
        let env = |name: &str| self.get(name);
        facts.sizes.iter().all(|s| env(s).is_some_and(|v| v >= 1))
            && facts.facts.iter().all(|f| f.eval_wide(&env) == Ok(true))
            && goal.eval_wide(&env) == Ok(false)
    }
}

impl fmt::Display for Counterexample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.values.is_empty() {
            return write!(f, "(no variables)");
        }
        for (i, (name, value)) in self.values.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{name}={value}")?;
        }
        Ok(())
    }
}

/// The answer to "do the facts imply the goal?".
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The goal holds for every assignment that satisfies the facts.
    Proved,
    /// An assignment satisfying the facts on which the goal is false (checked by
    /// evaluation before it is returned).
    Refuted(Counterexample),
    /// Neither could be established; the reason is for a diagnostic. Never accepted
    /// as a proof.
    Unknown(String),
}

impl Verdict {
    pub fn is_proved(&self) -> bool {
        matches!(self, Verdict::Proved)
    }

    pub fn is_refuted(&self) -> bool {
        matches!(self, Verdict::Refuted(_))
    }

    pub fn counterexample(&self) -> Option<&Counterexample> {
        match self {
            Verdict::Refuted(c) => Some(c),
            _ => None,
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Proved => write!(f, "proved"),
            Verdict::Refuted(c) => write!(f, "refuted: {c}"),
            Verdict::Unknown(reason) => write!(f, "unknown: {reason}"),
        }
    }
}

/// Replaces metavariables `?x` by variables named `?x`, so that rule side conditions
/// (which mention metavariables) can be proved and their counterexamples evaluated.
pub(crate) fn demeta_index(e: &IndexExpr) -> IndexExpr {
    match e {
        IndexExpr::Meta(name) => IndexExpr::Var(format!("?{name}")),
        IndexExpr::Const(_) | IndexExpr::Var(_) => e.clone(),
        IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(demeta_index(a))),
        IndexExpr::Load(array, a) => IndexExpr::Load(array.clone(), Box::new(demeta_index(a))),
        IndexExpr::Bin(op, a, b) => IndexExpr::bin(*op, demeta_index(a), demeta_index(b)),
    }
}

pub(crate) fn demeta_pred(p: &Pred) -> Pred {
    if !p.has_meta() {
        return p.clone();
    }
    p.map_index(&mut demeta_index)
}

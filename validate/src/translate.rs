//! The target's index language ([`Ix`], [`Cond`]) in the solver's terms
//! ([`IndexExpr`], [`Pred`]), written here rather than borrowed from the lowering so
//! that a wrong translation in one is not repeated in the other.
//!
//! Semantics (the loop IR's documentation, `atl_loopir::ir`): `FloorDiv`/`FloorMod`
//! are ATL's floor operations with `a / 0 = 0`, `a % 0 = a`; `CeilDiv` is
//! `-((-a) / b)`; `Min`/`Max` as usual — these are exactly the solver's `/ % cdiv min
//! max`. `DivNat`/`ModNat` are C's truncating `/` and `%`, which agree with the floor
//! operations only where the numerator is `>= 0` and the divisor `>= 1`: they are
//! translated as floor operations, and every occurrence yields a side condition
//! ([`SideCondition`]) that the caller must prove where the expression is evaluated.
//! So a translation is faithful exactly when its side conditions hold.
//!
//! Variables are mapped through a [`Scope`]: sizes keep their names, loop variables
//! get the name they have in the solver (a fresh one when a loop rebinds a name that
//! is already in scope), and a name bound by nothing is reported.

use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_loopir::ir::{Cond, Ix, IxOp};

/// A condition under which a translated expression means what the target computes:
/// the numerator of a C `/` or `%` is `>= 0` and its divisor `>= 1`. `guard` is what
/// must hold for the operation to be evaluated at all (the left operands of the
/// enclosing `&&`/`||`, which C evaluates first and short-circuits on).
#[derive(Clone, Debug, PartialEq)]
pub struct SideCondition {
    /// The target operation, printed (`i / 8`).
    pub operation: String,
    pub guard: Pred,
    pub goal: Pred,
}

/// Names in scope: the sizes, and the loop variables from the outermost loop in.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    sizes: Vec<String>,
    /// The kernel's index arrays with their extents.
    arrays: Vec<(String, IndexExpr)>,
    /// The index arrays checked where read, with their declared ranges `lo..hi`.
    checked: Vec<(String, IndexExpr, IndexExpr)>,
    /// (name in the kernel, name in the solver), innermost last.
    loops: Vec<(String, String)>,
    fresh: usize,
}

impl Scope {
    pub fn new(sizes: &[String]) -> Scope {
        Scope {
            sizes: sizes.to_vec(),
            arrays: Vec::new(),
            checked: Vec::new(),
            loops: Vec::new(),
            fresh: 0,
        }
    }

    /// The scope with the kernel's index arrays (name, extent), which loads read.
    pub fn with_arrays(mut self, arrays: Vec<(String, IndexExpr)>) -> Scope {
        self.arrays = arrays;
        self
    }

    /// The scope with the index arrays checked where read (name, `lo`, `hi`): every
    /// value read from one gets a [`Translation::checked_reads`] condition.
    pub fn with_checked_where_read(
        mut self,
        checked: Vec<(String, IndexExpr, IndexExpr)>,
    ) -> Scope {
        self.checked = checked;
        self
    }

    /// Whether `array` is an index array checked where read.
    pub fn is_checked_where_read(&self, array: &str) -> bool {
        self.checked.iter().any(|(a, _, _)| a == array)
    }

    /// Binds a loop variable; returns its name in the solver (fresh when `var` already
    /// names a size or an enclosing loop's variable).
    pub fn bind(&mut self, var: &str) -> String {
        let taken = |name: &str, scope: &Scope| {
            scope.sizes.iter().any(|s| s == name) || scope.loops.iter().any(|(_, n)| n == name)
        };
        let mut name = var.to_string();
        while taken(&name, self) {
            self.fresh += 1;
            name = format!("{var}'{}", self.fresh);
        }
        self.loops.push((var.to_string(), name.clone()));
        name
    }

    pub fn unbind(&mut self) {
        self.loops.pop();
    }

    /// The solver's name for `var`, or `None` when nothing binds it.
    pub fn lookup(&self, var: &str) -> Option<String> {
        if let Some((_, n)) = self.loops.iter().rev().find(|(v, _)| v == var) {
            return Some(n.clone());
        }
        self.sizes.iter().find(|s| *s == var).cloned()
    }
}

/// An `int64_t` expression the target evaluates, as translated: the caller proves
/// that it and each of its intermediate results fit (`crate::int64`).
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluated {
    /// The target's expression.
    pub ix: Ix,
    /// Its translation.
    pub expr: IndexExpr,
    /// What must hold for it to be evaluated at all (as for [`SideCondition`]).
    pub guard: Pred,
}

/// What translating one expression found: side conditions, unbound names, the
/// expressions the target evaluates.
#[derive(Clone, Debug, Default)]
pub struct Translation {
    pub side_conditions: Vec<SideCondition>,
    /// Reads of index arrays, each with the condition that it is inside its array.
    pub array_reads: Vec<SideCondition>,
    /// Values read from index arrays checked where read, each with the condition
    /// that it is inside the declared range.
    pub checked_reads: Vec<SideCondition>,
    pub unbound: Vec<String>,
    pub evaluated: Vec<Evaluated>,
}

impl Translation {
    /// An index expression the target evaluates (recorded in `evaluated`).
    pub fn ix(&mut self, scope: &Scope, guard: &Pred, ix: &Ix) -> IndexExpr {
        let expr = self.ix_node(scope, guard, ix);
        self.evaluated.push(Evaluated {
            ix: ix.clone(),
            expr: expr.clone(),
            guard: guard.clone(),
        });
        expr
    }

    fn ix_node(&mut self, scope: &Scope, guard: &Pred, ix: &Ix) -> IndexExpr {
        match ix {
            Ix::Const(c) => IndexExpr::Const(*c),
            Ix::Var(v) => IndexExpr::Var(self.name(scope, v)),
            Ix::Neg(a) => IndexExpr::Neg(Box::new(self.ix_node(scope, guard, a))),
            Ix::Load(array, a) => {
                let x = self.ix_node(scope, guard, a);
                match scope.arrays.iter().find(|(n, _)| n == array) {
                    Some((_, len)) => self.array_reads.push(SideCondition {
                        operation: format!("{array}[{x}]"),
                        guard: guard.clone(),
                        goal: Pred::and(
                            Pred::cmp(CmpOp::Le, IndexExpr::Const(0), x.clone()),
                            Pred::cmp(CmpOp::Lt, x.clone(), len.clone()),
                        ),
                    }),
                    None => self
                        .unbound
                        .push(format!("{array}[…] (no index array of that name)")),
                }
                let load = IndexExpr::Load(array.clone(), Box::new(x));
                if let Some((_, lo, hi)) = scope.checked.iter().find(|(n, _, _)| n == array) {
                    self.checked_reads.push(SideCondition {
                        operation: load.to_string(),
                        guard: guard.clone(),
                        goal: Pred::and(
                            Pred::cmp(CmpOp::Le, lo.clone(), load.clone()),
                            Pred::cmp(CmpOp::Lt, load.clone(), hi.clone()),
                        ),
                    });
                }
                load
            }
            Ix::Bin(op, a, b) => {
                let x = self.ix_node(scope, guard, a);
                let y = self.ix_node(scope, guard, b);
                let op = match op {
                    IxOp::Add => IndexOp::Add,
                    IxOp::Sub => IndexOp::Sub,
                    IxOp::Mul => IndexOp::Mul,
                    IxOp::DivNat | IxOp::ModNat => {
                        let symbol = if *op == IxOp::DivNat { "/" } else { "%" };
                        self.side_conditions.push(SideCondition {
                            operation: format!("({x}) {symbol} ({y})"),
                            guard: guard.clone(),
                            goal: Pred::and(
                                Pred::cmp(CmpOp::Ge, x.clone(), IndexExpr::Const(0)),
                                Pred::cmp(CmpOp::Ge, y.clone(), IndexExpr::Const(1)),
                            ),
                        });
                        if *op == IxOp::DivNat {
                            IndexOp::Div
                        } else {
                            IndexOp::Mod
                        }
                    }
                    IxOp::FloorDiv => IndexOp::Div,
                    IxOp::FloorMod => IndexOp::Mod,
                    IxOp::CeilDiv => IndexOp::CDiv,
                    IxOp::Min => IndexOp::Min,
                    IxOp::Max => IndexOp::Max,
                };
                IndexExpr::bin(op, x, y)
            }
        }
    }

    /// A condition of the target. `&&` and `||` short-circuit, so the side conditions
    /// of a right operand are only required where the left one lets C evaluate it.
    pub fn cond(&mut self, scope: &Scope, guard: &Pred, c: &Cond) -> Pred {
        match c {
            Cond::Bool(b) => Pred::Bool(*b),
            Cond::Cmp(op, a, b) => {
                Pred::cmp(*op, self.ix(scope, guard, a), self.ix(scope, guard, b))
            }
            Cond::And(a, b) => {
                let x = self.cond(scope, guard, a);
                let y = self.cond(scope, &Pred::and(guard.clone(), x.clone()), b);
                Pred::and(x, y)
            }
            Cond::Or(a, b) => {
                let x = self.cond(scope, guard, a);
                let y = self.cond(scope, &Pred::and(guard.clone(), Pred::not(x.clone())), b);
                Pred::or(x, y)
            }
            Cond::Not(a) => Pred::not(self.cond(scope, guard, a)),
        }
    }

    /// A source index expression recorded on an access (a coordinate or an extent):
    /// already in the solver's arithmetic; only its variables are renamed.
    pub fn index(&mut self, scope: &Scope, e: &IndexExpr) -> IndexExpr {
        match e {
            IndexExpr::Const(c) => IndexExpr::Const(*c),
            IndexExpr::Var(v) => IndexExpr::Var(self.name(scope, v)),
            IndexExpr::Meta(m) => {
                // Never in a kernel; a name nothing binds.
                self.unbound.push(format!("?{m}"));
                IndexExpr::Meta(m.clone())
            }
            IndexExpr::Neg(a) => IndexExpr::Neg(Box::new(self.index(scope, a))),
            IndexExpr::Load(array, a) => {
                IndexExpr::Load(array.clone(), Box::new(self.index(scope, a)))
            }
            IndexExpr::Bin(op, a, b) => {
                IndexExpr::bin(*op, self.index(scope, a), self.index(scope, b))
            }
        }
    }

    fn name(&mut self, scope: &Scope, v: &str) -> String {
        scope.lookup(v).unwrap_or_else(|| {
            self.unbound.push(v.to_string());
            v.to_string()
        })
    }
}

//! Pad-predicate inference and obligation collection: one walk over a definition that
//! computes, bottom-up, every subterm's shape and pad predicate, and records what must
//! be proved (truncations drop only padding, accesses are in bounds, reshape amounts
//! are valid) together with the context facts at that point.
//!
//! The rules are the symbolic reading of thesis Figures 5.5/5.6 (the pad predicate
//! `P_e` of `e` holds at an in-bounds position only if that position is padding):
//!
//! | expression | pad predicate at `($0, R)` |
//! |---|---|
//! | literal, input | `false` |
//! | `let`-variable, definition | the predicate of its value |
//! | `gen i in lo..hi: e` | `P_e[i := $0 + lo](R)` |
//! | `sum k in lo..hi: e` | `forall k in lo..hi: P_e` (vacuous when empty: an empty sum is padding) |
//! | `[p] * e` | `!p \|\| P_e` |
//! | `e[x]` | `0 <= x < \|e\| && P_e(x, …)` |
//! | `a + b` | `P_a && P_b` |
//! | `a - b`, `a * b`, `a / b`, `-a` | `false` |
//! | `concat(a, b)` | `($0 < \|a\| && P_a) \|\| (\|a\| <= $0 && P_b($0 - \|a\|))` |
//! | `transpose(a)` | `P_a($1, $0, …)` |
//! | `flatten(a)`, `a : [n, m, …]` | `P_a($0 / m, $0 % m, …)` |
//! | `split(k, a)` | `\|a\| <= $0*k + $1 \|\| P_a($0*k + $1, …)` |
//! | `pad_l(k, a)` | `$0 < k \|\| P_a($0 - k, …)` |
//! | `pad_r(k, a)` | `\|a\| <= $0 \|\| P_a` |
//! | `trunc_l(k, a)` | `P_a($0 + k, …)`, provided `P_a` holds on `0 <= $0 < k` |
//! | `trunc_r(k, a)` | `P_a`, provided `P_a` holds on `\|a\| - k <= $0 < \|a\|` |
//!
//! Which values are padding is a property of the lowering (thesis §5.5.1): padding is
//! what no store ever writes. A pad and a false guard store nothing, nor does an empty
//! sum; `a + b` lowers to two accumulations into the same destination, so it stores
//! nothing only where neither operand does. Every other scalar operation computes a
//! value that is stored (possibly a computed zero), so `-`, `*`, `/` and negation are
//! never padding. An out-of-bounds access reads a computed zero, not padding. These
//! choices are conservative (they claim less padding), which is the safe direction:
//! the predicate may only claim positions the lowering never writes.

use std::collections::{HashMap, HashSet};

use atl_lang::index::{CmpOp, IndexExpr, IndexOp, Pred};
use atl_lang::ir::{AmountOp, BinOp, Expr, ExprKind, Program};
use atl_lang::poly::normalize;
use atl_lang::shapes::{Shape, ShapeEnv};

use crate::pred::{PadPred, coord};

/// The largest pad predicate kept (in nodes); see [`Analyzer::visit`].
pub const MAX_PRED_SIZE: usize = 4000;

/// What an obligation is about.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Kind {
    /// `trunc_l`/`trunc_r` drops only padding of its argument (whose outermost extent
    /// is `extent`).
    Trunc {
        op: AmountOp,
        amount: IndexExpr,
        extent: IndexExpr,
        rank: usize,
    },
    /// A reshape amount is valid: non-negative for pads and truncations, at most the
    /// extent for truncations, positive for `split`.
    Amount {
        op: AmountOp,
        amount: IndexExpr,
        extent: IndexExpr,
    },
    /// `0 <= index < extent` for the access of dimension `dim` of the accessed chain.
    Access { index: IndexExpr, extent: IndexExpr },
}

/// A proof obligation with its context.
#[derive(Clone, Debug)]
pub(crate) struct Obligation<'e> {
    pub kind: Kind,
    /// The subterm the obligation is about (the truncation, the access, …).
    pub expr: &'e Expr,
    /// The definition it occurs in.
    pub def: String,
    /// Binder ranges and guards around the subterm, outermost first, plus (for
    /// truncations) the range of the dropped positions.
    pub facts: Vec<Pred>,
    pub goal: Pred,
    /// Pre-order number of the subterm in its definition (to report in source order).
    pub order: usize,
}

#[derive(Clone, Debug)]
struct LetInfo {
    name: String,
    shape: Shape,
    pad: PadPred,
}

/// The context of a point in a definition.
#[derive(Clone, Debug, Default)]
struct Scope {
    facts: Vec<Pred>,
    /// The positions in `facts` of the guards' conditions: a value's shape does not
    /// depend on them (`[false] * trunc_r(2, f)` still has the shape `n - 2`), so the
    /// obligations that make shapes valid do not assume them.
    guards: Vec<usize>,
    lets: Vec<LetInfo>,
}

impl Scope {
    /// The facts without the guards' conditions: the loops' ranges.
    fn shape_facts(&self) -> Vec<Pred> {
        self.facts
            .iter()
            .enumerate()
            .filter(|(k, _)| !self.guards.contains(k))
            .map(|(_, f)| f.clone())
            .collect()
    }
}

/// The walk. Holds the memo of definition predicates and the counter that makes
/// quantified variables unique.
pub(crate) struct Analyzer<'a> {
    program: &'a Program,
    shapes: &'a ShapeEnv,
    def_pads: HashMap<String, PadPred>,
    in_progress: HashSet<String>,
    fresh: usize,
    /// Whether obligations are recorded (off while computing a referenced definition's
    /// predicate: that definition is checked on its own).
    collect: bool,
    def_name: String,
    order: usize,
}

/// A shape or a reason why there is none (a program that escaped the shape checker;
/// the front end reports it, so the walk only stops).
type Res<T> = Result<T, String>;

fn range(var: &str, lo: &IndexExpr, hi: &IndexExpr) -> Pred {
    let v = IndexExpr::var(var);
    Pred::and(
        Pred::cmp(CmpOp::Le, lo.clone(), v.clone()),
        Pred::cmp(CmpOp::Lt, v, hi.clone()),
    )
}

fn c(d: usize) -> IndexExpr {
    IndexExpr::var(coord(d))
}

fn bin(op: IndexOp, a: IndexExpr, b: IndexExpr) -> IndexExpr {
    IndexExpr::bin(op, a, b)
}

/// Replaces the atoms `$d >= 0` and `$d < extent` by `true`. A pad predicate is only
/// ever consulted at in-bounds positions (every rule that evaluates an argument's
/// predicate elsewhere masks it with a disjunct or conjunct), so this is an equivalence
/// where it matters; it removes the bounds that accesses contribute (`x[i]` under
/// `gen i`), which would otherwise accumulate.
fn in_range(p: &PadPred, d: usize, extent: &IndexExpr) -> PadPred {
    let lower = PadPred::cmp(CmpOp::Ge, c(d), IndexExpr::Const(0));
    let upper = PadPred::cmp(CmpOp::Lt, c(d), extent.clone());
    let mut f = |q: &Pred| {
        let atom = PadPred::atom(q.clone());
        if atom == lower || atom == upper {
            Pred::Bool(true)
        } else {
            q.clone()
        }
    };
    p.map_atoms(&mut f)
}

/// `0 <= $d < extent` for every dimension `d >= from` of `shape`: the positions a pad
/// predicate talks about.
pub fn coord_ranges(shape: &[IndexExpr], from: usize) -> Vec<Pred> {
    (from..shape.len())
        .map(|d| {
            Pred::and(
                Pred::cmp(CmpOp::Le, IndexExpr::Const(0), c(d)),
                Pred::cmp(CmpOp::Lt, c(d), shape[d].clone()),
            )
        })
        .collect()
}

impl<'a> Analyzer<'a> {
    pub(crate) fn new(program: &'a Program, shapes: &'a ShapeEnv) -> Analyzer<'a> {
        Analyzer {
            program,
            shapes,
            def_pads: HashMap::new(),
            in_progress: HashSet::new(),
            fresh: 0,
            collect: false,
            def_name: String::new(),
            order: 0,
        }
    }

    /// Walks a definition body, recording its obligations into `out`. Returns the
    /// body's shape and pad predicate.
    pub(crate) fn check_def<'e>(
        &mut self,
        name: &str,
        body: &'e Expr,
        out: &mut Vec<Obligation<'e>>,
    ) -> Res<(Shape, PadPred)> {
        let saved = (self.collect, std::mem::take(&mut self.def_name), self.order);
        self.collect = true;
        self.def_name = name.to_string();
        self.order = 0;
        let r = self.visit(body, &mut Scope::default(), out);
        (self.collect, self.def_name, self.order) = saved;
        if let Ok((_, p)) = &r {
            self.def_pads.insert(name.to_string(), p.clone());
        }
        r
    }

    /// Shape and pad predicate of a closed expression (in the scope of the program:
    /// sizes, inputs, definitions), without recording obligations.
    pub(crate) fn infer_expr(&mut self, e: &Expr) -> Res<(Shape, PadPred)> {
        let saved = self.collect;
        self.collect = false;
        let r = self.visit(e, &mut Scope::default(), &mut Vec::new());
        self.collect = saved;
        r
    }

    /// The pad predicate of a definition (memoized).
    pub(crate) fn def_pad(&mut self, name: &str) -> PadPred {
        if let Some(p) = self.def_pads.get(name) {
            return p.clone();
        }
        let program = self.program;
        let Some(def) = program.def(name) else {
            // Unknown to this program: claim nothing (always sound).
            return PadPred::FALSE;
        };
        if !self.in_progress.insert(name.to_string()) {
            // A cycle cannot pass the resolver; be conservative if one does.
            return PadPred::FALSE;
        }
        let saved = (self.collect, std::mem::take(&mut self.def_name), self.order);
        self.collect = false;
        self.def_name = name.to_string();
        let r = self.visit(&def.body, &mut Scope::default(), &mut Vec::new());
        (self.collect, self.def_name, self.order) = saved;
        self.in_progress.remove(name);
        let p = r.map(|(_, p)| p).unwrap_or(PadPred::FALSE);
        self.def_pads.insert(name.to_string(), p.clone());
        p
    }

    /// Records an obligation about the subterm `at` (with its pre-order number).
    fn record<'e>(
        &mut self,
        out: &mut Vec<Obligation<'e>>,
        kind: Kind,
        (expr, order): (&'e Expr, usize),
        scope: &Scope,
        extra_facts: Vec<Pred>,
        goal: Pred,
    ) {
        if !self.collect {
            return;
        }
        let mut facts = scope.facts.clone();
        facts.extend(extra_facts);
        out.push(Obligation {
            kind,
            expr,
            def: self.def_name.clone(),
            facts,
            goal,
            order,
        });
    }

    fn fresh_var(&mut self, base: &str) -> String {
        self.fresh += 1;
        format!("{base}'{}", self.fresh)
    }

    /// Records that a reshape amount is valid, unless it visibly is.
    fn amount_obligation<'e>(
        &mut self,
        out: &mut Vec<Obligation<'e>>,
        at: (&'e Expr, usize),
        scope: &Scope,
        op: AmountOp,
        k: &IndexExpr,
        n: &IndexExpr,
    ) {
        let zero = IndexExpr::Const(0);
        let goal = match op {
            AmountOp::Split => Pred::cmp(CmpOp::Le, IndexExpr::Const(1), k.clone()),
            AmountOp::PadL | AmountOp::PadR => Pred::cmp(CmpOp::Le, zero, k.clone()),
            AmountOp::TruncL | AmountOp::TruncR => Pred::and(
                Pred::cmp(CmpOp::Le, zero, k.clone()),
                Pred::cmp(CmpOp::Le, k.clone(), n.clone()),
            ),
        };
        if PadPred::atom(goal.clone()).is_true() {
            return;
        }
        let kind = Kind::Amount {
            op,
            amount: k.clone(),
            extent: n.clone(),
        };
        // Under the loops' ranges only: a guard does not keep a shape from being
        // computed (the interpreter's zero of a false guard has the body's shape).
        let unguarded = Scope {
            facts: scope.shape_facts(),
            guards: Vec::new(),
            lets: Vec::new(),
        };
        self.record(out, kind, at, &unguarded, Vec::new(), goal);
    }

    /// [`Analyzer::visit_node`], with the predicate capped: a formula beyond
    /// [`MAX_PRED_SIZE`] nodes is replaced by `false`, which claims no padding and is
    /// therefore always sound. Only adversarial programs (chains of lets each used
    /// several times at different indices) get there.
    fn visit<'e>(
        &mut self,
        e: &'e Expr,
        scope: &mut Scope,
        out: &mut Vec<Obligation<'e>>,
    ) -> Res<(Shape, PadPred)> {
        let (shape, pad) = self.visit_node(e, scope, out)?;
        if pad.size() > MAX_PRED_SIZE {
            return Ok((shape, PadPred::FALSE));
        }
        Ok((shape, pad))
    }

    fn visit_node<'e>(
        &mut self,
        e: &'e Expr,
        scope: &mut Scope,
        out: &mut Vec<Obligation<'e>>,
    ) -> Res<(Shape, PadPred)> {
        let order = self.order;
        self.order += 1;
        match &e.kind {
            // A coordinate is a computed value, never padding (it is zero where the
            // index is, as a literal zero is zero).
            ExprKind::Lit(_) | ExprKind::Coord(_) => Ok((vec![], PadPred::FALSE)),
            ExprKind::Input(name) => {
                let shape = self.global_shape(name)?;
                Ok((shape, PadPred::FALSE))
            }
            ExprKind::DefRef(name) => {
                let shape = self.global_shape(name)?;
                Ok((shape, self.def_pad(name)))
            }
            ExprKind::Var(name) => scope
                .lets
                .iter()
                .rev()
                .find(|l| &l.name == name)
                .map(|l| (l.shape.clone(), l.pad.clone()))
                .ok_or_else(|| format!("unbound `{name}`")),
            ExprKind::Meta(m) => Err(format!("metavariable `?{m}` in a program")),
            ExprKind::Gen { var, lo, hi, body } => {
                scope.facts.push(range(var, lo, hi));
                let r = self.visit(body, scope, out);
                scope.facts.pop();
                let (bs, bp) = r?;
                let mut shape = vec![normalize(&IndexExpr::sub(hi.clone(), lo.clone()))];
                shape.extend(bs);
                let at = IndexExpr::add(c(0), lo.clone());
                let pad = bp.subst(&|name| {
                    if name == var {
                        return Some(at.clone());
                    }
                    crate::pred::coord_dim(name).map(|d| c(d + 1))
                });
                Ok((shape.clone(), in_range(&pad, 0, &shape[0])))
            }
            ExprKind::Sum { var, lo, hi, body } => {
                scope.facts.push(range(var, lo, hi));
                let r = self.visit(body, scope, out);
                scope.facts.pop();
                let (bs, bp) = r?;
                // A position is padding only if it is padding in every iteration
                // (pad + pad = pad, pad + x = x); an empty sum is all padding.
                let q = self.fresh_var(var);
                let qx = IndexExpr::var(q.clone());
                let body = bp.subst(&|name| (name == var).then(|| qx.clone()));
                Ok((bs, PadPred::forall(q, lo.clone(), hi.clone(), body)))
            }
            ExprKind::MaxRed { var, lo, hi, body } => {
                // The body's accesses are checked under the range; the result is a
                // stored value, never padding: `max` of padding is `0` only over a
                // non-empty range (`-inf` over an empty one), and nothing here tracks
                // that, so the conservative answer is the only one.
                scope.facts.push(range(var, lo, hi));
                let r = self.visit(body, scope, out);
                scope.facts.pop();
                let (bs, _) = r?;
                Ok((bs, PadPred::FALSE))
            }
            ExprKind::Guard { pred, body } => {
                scope.guards.push(scope.facts.len());
                scope.facts.push(pred.clone());
                let r = self.visit(body, scope, out);
                scope.facts.pop();
                scope.guards.pop();
                let (bs, bp) = r?;
                Ok((bs, PadPred::or(PadPred::atom(Pred::not(pred.clone())), bp)))
            }
            ExprKind::Let { var, value, body } => {
                let (vs, vp) = self.visit(value, scope, out)?;
                scope.lets.push(LetInfo {
                    name: var.clone(),
                    shape: vs,
                    pad: vp,
                });
                let r = self.visit(body, scope, out);
                scope.lets.pop();
                r
            }
            ExprKind::Access { tensor, index } => {
                let (ts, tp) = self.visit(tensor, scope, out)?;
                let Some(extent) = ts.first().cloned() else {
                    return Err("access into a scalar".to_string());
                };
                let in_bounds = Pred::and(
                    Pred::cmp(CmpOp::Le, IndexExpr::Const(0), index.clone()),
                    Pred::cmp(CmpOp::Lt, index.clone(), extent.clone()),
                );
                let kind = Kind::Access {
                    index: index.clone(),
                    extent,
                };
                self.record(out, kind, (e, order), scope, Vec::new(), in_bounds.clone());
                let pad = PadPred::and(
                    PadPred::atom(in_bounds),
                    tp.with_coords(std::slice::from_ref(index), 0),
                );
                Ok((ts[1..].to_vec(), pad))
            }
            ExprKind::Neg(a) => {
                let (s, _) = self.visit(a, scope, out)?;
                Ok((s, PadPred::FALSE))
            }
            // A function of padding is padding only if it maps zeros to zero (`sqrt`,
            // `abs`, `max`, `min`, `select` of two zeros; not `exp` or `log`), and only
            // where the arguments it returns from are all padding.
            ExprKind::Call { func, args } => {
                let mut pads = Vec::with_capacity(args.len());
                for a in args {
                    pads.push(self.visit(a, scope, out)?.1);
                }
                if !func.zero_to_zero() {
                    return Ok((vec![], PadPred::FALSE));
                }
                let pad = func
                    .result_arguments()
                    .map(|k| pads[k].clone())
                    .reduce(PadPred::and)
                    .unwrap_or(PadPred::FALSE);
                Ok((vec![], pad))
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let (ls, lp) = self.visit(lhs, scope, out)?;
                let (_, rp) = self.visit(rhs, scope, out)?;
                match op {
                    BinOp::Add => Ok((ls, PadPred::and(lp, rp))),
                    BinOp::Sub => Ok((ls, PadPred::FALSE)),
                    BinOp::Mul | BinOp::Div => Ok((vec![], PadPred::FALSE)),
                }
            }
            ExprKind::Concat(a, b) => {
                let (sa, pa) = self.visit(a, scope, out)?;
                let (sb, pb) = self.visit(b, scope, out)?;
                let (Some(n), Some(m)) = (sa.first(), sb.first()) else {
                    return Err("concat of scalars".to_string());
                };
                let mut shape = vec![normalize(&IndexExpr::add(n.clone(), m.clone()))];
                shape.extend(sa[1..].iter().cloned());
                let left = PadPred::and(PadPred::cmp(CmpOp::Lt, c(0), n.clone()), pa);
                let right = PadPred::and(
                    PadPred::cmp(CmpOp::Le, n.clone(), c(0)),
                    pb.with_coords(&[IndexExpr::sub(c(0), n.clone())], 1),
                );
                Ok((shape, PadPred::or(left, right)))
            }
            ExprKind::Transpose(a) => {
                let (mut s, p) = self.visit(a, scope, out)?;
                if s.len() < 2 {
                    return Err("transpose of rank < 2".to_string());
                }
                s.swap(0, 1);
                Ok((s, p.with_coords(&[c(1), c(0)], 2)))
            }
            ExprKind::Flatten(a) => {
                let (s, p) = self.visit(a, scope, out)?;
                if s.len() < 2 {
                    return Err("flatten of rank < 2".to_string());
                }
                let m = s[1].clone();
                let mut shape = vec![normalize(&IndexExpr::mul(s[0].clone(), m.clone()))];
                shape.extend(s[2..].iter().cloned());
                let coords = [
                    bin(IndexOp::Div, c(0), m.clone()),
                    bin(IndexOp::Mod, c(0), m),
                ];
                Ok((shape, p.with_coords(&coords, 1)))
            }
            ExprKind::Amount { op, amount, arg } => {
                let (s, p) = self.visit(arg, scope, out)?;
                let Some(n) = s.first().cloned() else {
                    return Err(format!("`{}` of a scalar", op.name()));
                };
                let k = normalize(amount);
                self.amount_obligation(out, (e, order), scope, *op, &k, &n);
                let rest = s[1..].to_vec();
                let with_first = |first: IndexExpr| {
                    let mut v = vec![normalize(&first)];
                    v.extend(rest.iter().cloned());
                    v
                };
                match op {
                    AmountOp::Split => {
                        let mut shape = vec![
                            normalize(&bin(IndexOp::CDiv, n.clone(), k.clone())),
                            k.clone(),
                        ];
                        shape.extend(rest.iter().cloned());
                        let flat = IndexExpr::add(IndexExpr::mul(c(0), k.clone()), c(1));
                        let tail = PadPred::cmp(CmpOp::Le, n, flat.clone());
                        Ok((shape, PadPred::or(tail, p.with_coords(&[flat], 2))))
                    }
                    AmountOp::PadL => {
                        let pad = PadPred::or(
                            PadPred::cmp(CmpOp::Lt, c(0), k.clone()),
                            p.with_coords(&[IndexExpr::sub(c(0), k.clone())], 1),
                        );
                        Ok((with_first(IndexExpr::add(n, k)), pad))
                    }
                    AmountOp::PadR => {
                        let pad = PadPred::or(PadPred::cmp(CmpOp::Le, n.clone(), c(0)), p);
                        Ok((with_first(IndexExpr::add(n, k)), pad))
                    }
                    AmountOp::TruncL | AmountOp::TruncR => {
                        // The dropped positions, then every other dimension in range.
                        let zero = IndexExpr::Const(0);
                        let mut region = vec![
                            Pred::cmp(CmpOp::Le, zero, c(0)),
                            Pred::cmp(CmpOp::Lt, c(0), n.clone()),
                        ];
                        region.push(if *op == AmountOp::TruncL {
                            Pred::cmp(CmpOp::Lt, c(0), k.clone())
                        } else {
                            Pred::cmp(CmpOp::Le, IndexExpr::sub(n.clone(), k.clone()), c(0))
                        });
                        region.extend(coord_ranges(&s, 1));
                        if self.collect && !p.is_true() {
                            let mut fresh = 0;
                            let goal = p.to_goal(&mut fresh);
                            let kind = Kind::Trunc {
                                op: *op,
                                amount: k.clone(),
                                extent: n.clone(),
                                rank: s.len(),
                            };
                            self.record(out, kind, (e, order), scope, region, goal);
                        }
                        let shape = with_first(IndexExpr::sub(n, k.clone()));
                        let pad = if *op == AmountOp::TruncL {
                            p.with_coords(&[IndexExpr::add(c(0), k)], 1)
                        } else {
                            p
                        };
                        Ok((shape, pad))
                    }
                }
            }
        }
    }

    fn global_shape(&self, name: &str) -> Res<Shape> {
        self.shapes
            .globals
            .get(name)
            .cloned()
            .ok_or_else(|| format!("no shape known for `{name}`"))
    }
}

//! An evaluator that marks padding (thesis §5.5.1): scalars are either computed
//! values or *pad* values, and the constructs that leave memory unwritten in the
//! lowered code produce pads: `pad_l`/`pad_r`, a false guard, an empty `sum`, the zero
//! tail of `split`. Accumulation keeps a pad only where every summand is a pad
//! (`pad + pad = pad`, `pad + x = x`); every other scalar operation computes a value.
//! Numerically a pad is `0.0`, so with the marks dropped the result is the reference
//! interpreter's.
//!
//! This is the semantics the pad predicates of [`crate::infer`] are tested against
//! (the soundness property of thesis Theorem 1: a position the type claims is a pad).
//! It is a plain eager tree walk meant for test-sized inputs, not a second interpreter
//! for users.

use std::collections::BTreeMap;
use std::rc::Rc;

use atl_lang::index::{IndexExpr, Pred};
use atl_lang::interp::Tensor;
use atl_lang::ir::{AmountOp, BinOp, Expr, ExprKind, Program};
use atl_lang::reshape::{self, ReshapeOp};
use atl_lang::shapes::{self, Shape, ShapeEnv};

/// One scalar of a marked tensor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Cell {
    /// Padding: never written by the lowered code; reads as `0.0`.
    Pad,
    Val(f64),
}

impl Cell {
    pub fn value(self) -> f64 {
        match self {
            Cell::Pad => 0.0,
            Cell::Val(v) => v,
        }
    }

    pub fn is_pad(self) -> bool {
        self == Cell::Pad
    }
}

/// A dense row-major tensor of cells.
#[derive(Clone, Debug, PartialEq)]
pub struct Marked {
    pub shape: Vec<usize>,
    pub cells: Vec<Cell>,
}

impl Marked {
    fn filled(shape: Vec<usize>, cell: Cell) -> Marked {
        let n = shape.iter().product();
        Marked {
            shape,
            cells: vec![cell; n],
        }
    }

    /// Elements per outermost index.
    fn stride(&self) -> usize {
        self.shape[1..].iter().product()
    }

    /// The values with the marks dropped.
    pub fn values(&self) -> Vec<f64> {
        self.cells.iter().map(|c| c.value()).collect()
    }
}

/// Something the gate exists to exclude, observed during a run.
#[derive(Clone, Debug, PartialEq)]
pub enum Violation {
    /// A `trunc_l`/`trunc_r` dropped a computed (non-padding) element.
    TruncatedValue { op: AmountOp, position: usize },
    /// An access read outside its tensor.
    OutOfBounds { index: i64, extent: usize },
}

/// Limit on any intermediate tensor (random test programs can nest many reshapes).
const MAX_CELLS: usize = 1 << 20;

struct Eval<'a> {
    program: &'a Program,
    shapes: &'a ShapeEnv,
    sizes: &'a BTreeMap<String, i64>,
    inputs: &'a BTreeMap<String, Tensor>,
    defs: BTreeMap<String, Rc<Marked>>,
    binders: Vec<(String, i64)>,
    lets: Vec<(String, Rc<Marked>)>,
    let_shapes: Vec<(String, Shape)>,
    violations: Vec<Violation>,
}

/// Evaluates a closed expression in the scope of `program` (sizes, inputs,
/// definitions) with padding marked. Errors (as text) for invalid amounts, scalar
/// division by zero, missing inputs and oversized intermediates.
pub fn eval_marked(
    program: &Program,
    shapes: &ShapeEnv,
    sizes: &BTreeMap<String, i64>,
    inputs: &BTreeMap<String, Tensor>,
    expr: &Expr,
) -> Result<Marked, String> {
    eval_marked_checked(program, shapes, sizes, inputs, expr).map(|(m, _)| m)
}

/// [`eval_marked`], also reporting every truncation of a computed element and every
/// out-of-bounds access the run performed: what a program that passes the gate never
/// does (the dynamic counterpart of the static check, used to test it).
pub fn eval_marked_checked(
    program: &Program,
    shapes: &ShapeEnv,
    sizes: &BTreeMap<String, i64>,
    inputs: &BTreeMap<String, Tensor>,
    expr: &Expr,
) -> Result<(Marked, Vec<Violation>), String> {
    let mut ev = Eval {
        program,
        shapes,
        sizes,
        inputs,
        defs: BTreeMap::new(),
        binders: Vec::new(),
        lets: Vec::new(),
        let_shapes: Vec::new(),
        violations: Vec::new(),
    };
    let m = ev.eval(expr)?;
    Ok(((*m).clone(), ev.violations))
}

impl Eval<'_> {
    fn lookup(&self, name: &str) -> Option<i64> {
        self.binders
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| *v)
            .or_else(|| self.sizes.get(name).copied())
    }

    fn index(&self, e: &IndexExpr) -> Result<i64, String> {
        e.eval(&|n| self.lookup(n)).map_err(|err| err.to_string())
    }

    fn pred(&self, p: &Pred) -> Result<bool, String> {
        p.eval(&|n| self.lookup(n)).map_err(|err| err.to_string())
    }

    fn extent(&self, e: &IndexExpr) -> Result<usize, String> {
        let v = self.index(e)?;
        usize::try_from(v).map_err(|_| format!("negative extent {v}"))
    }

    /// The concrete shape of `e` without evaluating it (for false guards and empty
    /// ranges, whose value is all padding of that shape).
    fn shape_of(&mut self, e: &Expr) -> Result<Vec<usize>, String> {
        let mut lets = self.let_shapes.clone();
        let shape = shapes::infer_with_lets(self.shapes, &mut lets, e).map_err(|d| d.message)?;
        let dims = shape
            .iter()
            .map(|d| self.extent(d))
            .collect::<Result<Vec<_>, _>>()?;
        check_size(&dims)?;
        Ok(dims)
    }

    fn def(&mut self, name: &str) -> Result<Rc<Marked>, String> {
        if let Some(m) = self.defs.get(name) {
            return Ok(m.clone());
        }
        let program = self.program;
        let def = program
            .def(name)
            .ok_or_else(|| format!("unknown definition `{name}`"))?;
        // A definition is evaluated in the empty scope.
        let binders = std::mem::take(&mut self.binders);
        let lets = std::mem::take(&mut self.lets);
        let let_shapes = std::mem::take(&mut self.let_shapes);
        let r = self.eval(&def.body);
        self.binders = binders;
        self.lets = lets;
        self.let_shapes = let_shapes;
        let m = r?;
        self.defs.insert(name.to_string(), m.clone());
        Ok(m)
    }

    fn eval(&mut self, e: &Expr) -> Result<Rc<Marked>, String> {
        let out = match &e.kind {
            ExprKind::Lit(v) => Marked {
                shape: vec![],
                cells: vec![Cell::Val(*v)],
            },
            ExprKind::Coord(index) => Marked {
                shape: vec![],
                cells: vec![Cell::Val(self.index(index)? as f64)],
            },
            ExprKind::Input(name) => {
                let t = self
                    .inputs
                    .get(name)
                    .ok_or_else(|| format!("no input `{name}`"))?;
                Marked {
                    shape: t.shape.clone(),
                    cells: t.data.iter().map(|v| Cell::Val(*v)).collect(),
                }
            }
            ExprKind::DefRef(name) => return self.def(name),
            ExprKind::Var(name) => {
                return self
                    .lets
                    .iter()
                    .rev()
                    .find(|(n, _)| n == name)
                    .map(|(_, m)| m.clone())
                    .ok_or_else(|| format!("unbound `{name}`"));
            }
            ExprKind::Meta(m) => return Err(format!("metavariable `?{m}`")),
            ExprKind::Gen { var, lo, hi, body } => {
                let lo = self.index(lo)?;
                let hi = self.index(hi)?;
                if hi <= lo {
                    self.binders.push((var.clone(), lo));
                    let inner = self.shape_of(body);
                    self.binders.pop();
                    let mut shape = vec![0];
                    shape.extend(inner?);
                    Marked::filled(shape, Cell::Pad)
                } else {
                    let mut cells = Vec::new();
                    let mut inner = None;
                    for i in lo..hi {
                        self.binders.push((var.clone(), i));
                        let r = self.eval(body);
                        self.binders.pop();
                        let m = r?;
                        cells.extend_from_slice(&m.cells);
                        check_cells(cells.len())?;
                        inner = Some(m.shape.clone());
                    }
                    let mut shape = vec![(hi - lo) as usize];
                    shape.extend(inner.unwrap_or_default());
                    Marked { shape, cells }
                }
            }
            ExprKind::Sum { var, lo, hi, body } => {
                let lo = self.index(lo)?;
                let hi = self.index(hi)?;
                self.binders.push((var.clone(), lo));
                let shape = self.shape_of(body);
                self.binders.pop();
                // The accumulator starts unwritten: an empty sum is all padding.
                let mut acc = Marked::filled(shape?, Cell::Pad);
                for i in lo..hi {
                    self.binders.push((var.clone(), i));
                    let r = self.eval(body);
                    self.binders.pop();
                    let m = r?;
                    for (a, b) in acc.cells.iter_mut().zip(&m.cells) {
                        *a = accumulate(*a, *b);
                    }
                }
                acc
            }
            ExprKind::MaxRed { var, lo, hi, body } => {
                // Never padding: the lowered code always writes the result (`-inf` for
                // an empty range, the largest value otherwise), as `infer.rs` says.
                let lo = self.index(lo)?;
                let hi = self.index(hi)?;
                let mut acc = atl_lang::functions::MAX_EMPTY;
                for i in lo..hi {
                    self.binders.push((var.clone(), i));
                    let r = self.eval(body);
                    self.binders.pop();
                    acc = atl_lang::functions::max_step(acc, r?.cells[0].value());
                }
                Marked {
                    shape: vec![],
                    cells: vec![Cell::Val(acc)],
                }
            }
            ExprKind::Guard { pred, body } => {
                if self.pred(pred)? {
                    return self.eval(body);
                }
                let shape = self.shape_of(body)?;
                Marked::filled(shape, Cell::Pad)
            }
            ExprKind::Let { var, value, body } => {
                let v = self.eval(value)?;
                let mut lets = self.let_shapes.clone();
                let vs = shapes::infer_with_lets(self.shapes, &mut lets, value)
                    .map_err(|d| d.message)?;
                self.lets.push((var.clone(), v));
                self.let_shapes.push((var.clone(), vs));
                let r = self.eval(body);
                self.lets.pop();
                self.let_shapes.pop();
                return r;
            }
            ExprKind::Access { tensor, index } => {
                let t = self.eval(tensor)?;
                let k = self.index(index)?;
                if t.shape.is_empty() {
                    return Err("access into a scalar".to_string());
                }
                let stride = t.stride();
                let shape = t.shape[1..].to_vec();
                if k < 0 || k as usize >= t.shape[0] {
                    self.violations.push(Violation::OutOfBounds {
                        index: k,
                        extent: t.shape[0],
                    });
                    // An out-of-range read is a computed zero, not padding.
                    Marked::filled(shape, Cell::Val(0.0))
                } else {
                    let k = k as usize;
                    Marked {
                        shape,
                        cells: t.cells[k * stride..(k + 1) * stride].to_vec(),
                    }
                }
            }
            ExprKind::Neg(a) => {
                let a = self.eval(a)?;
                Marked {
                    shape: a.shape.clone(),
                    cells: a.cells.iter().map(|c| Cell::Val(-c.value())).collect(),
                }
            }
            ExprKind::Call { func, args } => {
                let mut cells = Vec::with_capacity(args.len());
                for a in args {
                    cells.push(self.eval(a)?.cells[0]);
                }
                // Padding in, padding out, for a function that maps zeros to zero.
                let padding = func.zero_to_zero()
                    && func
                        .result_arguments()
                        .all(|k| matches!(cells[k], Cell::Pad));
                let values: Vec<f64> = cells.iter().map(|c| c.value()).collect();
                Marked {
                    shape: vec![],
                    cells: vec![if padding {
                        Cell::Pad
                    } else {
                        Cell::Val(func.apply(&values))
                    }],
                }
            }
            ExprKind::Binary { op, lhs, rhs } => {
                let a = self.eval(lhs)?;
                let b = self.eval(rhs)?;
                let cells = match op {
                    BinOp::Add => a
                        .cells
                        .iter()
                        .zip(&b.cells)
                        .map(|(x, y)| accumulate(*x, *y))
                        .collect(),
                    BinOp::Sub => a
                        .cells
                        .iter()
                        .zip(&b.cells)
                        .map(|(x, y)| Cell::Val(x.value() - y.value()))
                        .collect(),
                    BinOp::Mul => vec![Cell::Val(a.cells[0].value() * b.cells[0].value())],
                    BinOp::Div => {
                        let d = b.cells[0].value();
                        if d == 0.0 {
                            return Err("division by zero".to_string());
                        }
                        vec![Cell::Val(a.cells[0].value() / d)]
                    }
                };
                Marked {
                    shape: a.shape.clone(),
                    cells,
                }
            }
            ExprKind::Concat(a, b) => {
                let a = self.eval(a)?;
                let b = self.eval(b)?;
                let mut shape = a.shape.clone();
                shape[0] += b.shape[0];
                let mut cells = a.cells.clone();
                cells.extend_from_slice(&b.cells);
                Marked { shape, cells }
            }
            ExprKind::Transpose(a) => {
                let a = self.eval(a)?;
                let (n, m) = (a.shape[0], a.shape[1]);
                let inner: usize = a.shape[2..].iter().product();
                let mut cells = Vec::with_capacity(a.cells.len());
                for j in 0..m {
                    for i in 0..n {
                        let at = (i * m + j) * inner;
                        cells.extend_from_slice(&a.cells[at..at + inner]);
                    }
                }
                let mut shape = a.shape.clone();
                shape.swap(0, 1);
                Marked { shape, cells }
            }
            ExprKind::Flatten(a) => {
                let a = self.eval(a)?;
                let mut shape = vec![a.shape[0] * a.shape[1]];
                shape.extend_from_slice(&a.shape[2..]);
                Marked {
                    shape,
                    cells: a.cells.clone(),
                }
            }
            ExprKind::Amount { op, amount, arg } => {
                let a = self.eval(arg)?;
                let k = self.index(amount)?;
                let n = a.shape[0] as i64;
                let stride = a.stride();
                let bad = || format!("invalid amount {k} for `{}` of {n} elements", op.name());
                // Each row of the result is a row of the argument or padding (the
                // operator's read-side map in the reshape table); the argument's rows
                // that no row reads are dropped, which is a violation unless they are
                // padding.
                let amount = usize::try_from(k).map_err(|_| bad())?;
                let shape = reshape::result_shape(
                    &reshape::Concrete,
                    ReshapeOp::Amount(*op),
                    &[&a.shape],
                    Some(&amount),
                )
                .ok_or_else(bad)?;
                check_size(&shape)?;
                let sources = reshape::row_sources(*op, amount, a.shape[0]).ok_or_else(bad)?;
                let mut read = vec![false; a.shape[0]];
                let mut cells = Vec::with_capacity(sources.len() * stride);
                for source in &sources {
                    match source {
                        Some(row) => {
                            read[*row] = true;
                            cells.extend_from_slice(&a.cells[row * stride..(row + 1) * stride]);
                        }
                        None => cells.extend(std::iter::repeat_n(Cell::Pad, stride)),
                    }
                }
                for (row, _) in read.iter().enumerate().filter(|(_, read)| !**read) {
                    let dropped = &a.cells[row * stride..(row + 1) * stride];
                    if dropped.iter().any(|c| !c.is_pad()) {
                        self.violations.push(Violation::TruncatedValue {
                            op: *op,
                            position: row,
                        });
                    }
                }
                Marked { shape, cells }
            }
        };
        check_cells(out.cells.len())?;
        Ok(Rc::new(out))
    }
}

/// `pad + pad = pad`, `pad + x = x`: the lowered code accumulates both operands into
/// the same destination, so a position stays unwritten only if neither writes it.
fn accumulate(a: Cell, b: Cell) -> Cell {
    match (a, b) {
        (Cell::Pad, Cell::Pad) => Cell::Pad,
        (Cell::Pad, x) | (x, Cell::Pad) => x,
        (Cell::Val(x), Cell::Val(y)) => Cell::Val(x + y),
    }
}

fn check_cells(n: usize) -> Result<(), String> {
    if n > MAX_CELLS {
        Err(format!("more than {MAX_CELLS} elements"))
    } else {
        Ok(())
    }
}

fn check_size(shape: &[usize]) -> Result<(), String> {
    let mut n: usize = 1;
    for d in shape {
        n = n.checked_mul(*d).ok_or("shape overflows")?;
    }
    check_cells(n)
}

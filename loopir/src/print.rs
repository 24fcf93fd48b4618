//! The loop-IR pretty printer: C-like pseudo-code for reading what lowering did
//! (`atl emit --ir`, the REPL's `:ir`, snapshot tests).
//!
//! Index arithmetic is printed with C precedence; the floor operations the C emitter
//! implements with helpers are shown as calls (`floordiv(a, b)`, `floormod(a, b)`,
//! `cdiv(a, b)`, `min`, `max`), C's truncating operators as `/` and `%`. Each store
//! is followed by the coordinates it writes (`@ (i, j)`), and loops show where they
//! come from (`gen`, `sum`, `zero`) and their annotations. Where temporaries live
//! shows where it is not the default: a loop lists the heap buffers declared around
//! it (`; buffers: t`, `; buffers per thread: t` for a parallel loop), and an `alloc`
//! placed in one of them says so (`# in the buffer of loop k`).
//!
//! [`kernel_to_text`] prints the *full* form, which [`crate::parse::parse_kernel`]
//! reads back to an equal kernel (`atl emit --ir` prints it): the same layout plus
//! what the reading form leaves out — each precondition's kind and reason (and its
//! target condition when it is not the plain translation of the predicate), the
//! `source` expression, the coordinates of every load (`A[k * i + j @ (i, j)]`), a
//! coordinate's extent when it is not the declared one of its buffer (`@ (i : n)`),
//! every `alloc`'s storage, and negations of constants kept distinct from negative
//! constants (`-(3)`). In the full form the `#` notes are part of the syntax.

use std::fmt::Write as _;

use atl_lang::index::CmpOp;
use atl_lang::pretty::format_lit;

use atl_lang::index::IndexExpr;

use crate::ir::{
    Cond, Coord, Ix, IxOp, Kernel, LoopOrigin, PreconditionKind, Stmt, Storage, StoreOp, Val,
};

/// Prints a kernel in the reading form (snapshots, the REPL's `:ir`).
pub fn kernel_to_string(k: &Kernel) -> String {
    print_kernel(k, false)
}

/// Prints a kernel in the full form, which [`crate::parse::parse_kernel`] reads back
/// to an equal kernel (`atl emit --ir`).
pub fn kernel_to_text(k: &Kernel) -> String {
    print_kernel(k, true)
}

/// The keyword of a precondition kind in the full form.
pub fn precondition_kind_word(kind: PreconditionKind) -> &'static str {
    match kind {
        PreconditionKind::Size => "size",
        PreconditionKind::Assume => "assume",
        PreconditionKind::Amount => "amount",
        PreconditionKind::InputExtent => "input_extent",
        PreconditionKind::IndexRange => "index_range",
    }
}

/// The target condition a predicate stands for when nothing is known about its
/// operands: floor operations as the helpers, `None` for a metavariable. The full form
/// prints a precondition's condition only when it differs from this.
pub fn plain_cond(pred: &atl_lang::index::Pred) -> Option<Cond> {
    use atl_lang::index::Pred;
    Some(match pred {
        Pred::Bool(b) => Cond::Bool(*b),
        Pred::Cmp(op, a, b) => Cond::Cmp(*op, plain_ix(a)?, plain_ix(b)?),
        Pred::And(a, b) => Cond::And(Box::new(plain_cond(a)?), Box::new(plain_cond(b)?)),
        Pred::Or(a, b) => Cond::Or(Box::new(plain_cond(a)?), Box::new(plain_cond(b)?)),
        Pred::Not(a) => Cond::Not(Box::new(plain_cond(a)?)),
    })
}

/// [`plain_cond`] for one index expression.
pub fn plain_ix(e: &IndexExpr) -> Option<Ix> {
    use atl_lang::index::IndexOp;
    Some(match e {
        IndexExpr::Const(c) => Ix::Const(*c),
        IndexExpr::Var(v) => Ix::Var(v.clone()),
        IndexExpr::Meta(_) | IndexExpr::Load(..) => return None,
        IndexExpr::Neg(a) => Ix::Neg(Box::new(plain_ix(a)?)),
        IndexExpr::Bin(op, a, b) => {
            let op = match op {
                IndexOp::Add => IxOp::Add,
                IndexOp::Sub => IxOp::Sub,
                IndexOp::Mul => IxOp::Mul,
                IndexOp::Div => IxOp::FloorDiv,
                IndexOp::Mod => IxOp::FloorMod,
                IndexOp::CDiv => IxOp::CeilDiv,
                IndexOp::Min => IxOp::Min,
                IndexOp::Max => IxOp::Max,
            };
            Ix::bin(op, plain_ix(a)?, plain_ix(b)?)
        }
    })
}

/// Whether an access's recorded extents are the declared shape of its buffer, so that
/// the full form can leave them out (the parser fills them back in from the shape).
pub(crate) fn extents_implied(coords: &[Coord], shape: Option<&[IndexExpr]>) -> bool {
    shape.is_some_and(|shape| {
        shape.len() == coords.len() && shape.iter().zip(coords).all(|(s, c)| *s == c.extent)
    })
}

fn print_kernel(k: &Kernel, full: bool) -> String {
    let mut p = Printer {
        out: String::new(),
        full,
        scope: Vec::new(),
    };
    let inputs: Vec<String> = k
        .inputs
        .iter()
        .map(|b| match &b.index_array {
            None => match &b.order {
                None => format!("{}: {}", b.name, shape_str(&b.shape)),
                Some(order) => {
                    let order: Vec<String> = order.iter().map(usize::to_string).collect();
                    format!(
                        "{}: {} order ({})",
                        b.name,
                        shape_str(&b.shape),
                        order.join(", ")
                    )
                }
            },
            Some(a) => format!(
                "{}: int{} in {}..{}{}{}",
                b.name,
                shape_str(&b.shape),
                a.lo,
                a.hi,
                if a.sorted { " sorted" } else { "" },
                if b.checked_where_read {
                    " checked_where_read"
                } else {
                    ""
                }
            ),
        })
        .collect();
    let _ = writeln!(
        p.out,
        "kernel {}({}; {}) -> {}: {}",
        k.name,
        k.sizes.join(", "),
        inputs.join(", "),
        k.output.name,
        shape_str(&k.output.shape)
    );
    for pre in &k.preconditions {
        if !full {
            let _ = writeln!(p.out, "  requires {}", pre.pred);
            continue;
        }
        let _ = write!(p.out, "  requires {}", pre.pred);
        if plain_cond(&pre.pred).as_ref() != Some(&pre.cond) {
            let _ = write!(p.out, " as {}", p.cond(&pre.cond));
        }
        let _ = writeln!(
            p.out,
            "  # {}: {:?}",
            precondition_kind_word(pre.kind),
            pre.reason
        );
    }
    if let Some(bits) = k.vector_width {
        let _ = writeln!(p.out, "  vector_width {bits}");
    }
    if full {
        let _ = writeln!(
            p.out,
            "  source: {}",
            atl_lang::pretty::expr_to_string(&k.source, Default::default())
        );
        for b in k.inputs.iter().chain(std::iter::once(&k.output)) {
            p.scope.push((b.name.clone(), b.shape.clone()));
        }
    }
    p.out.push_str("{\n");
    p.block(&k.body, 1);
    p.out.push_str("}\n");
    p.out
}

fn shape_str(shape: &[atl_lang::index::IndexExpr]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", dims.join(", "))
}

struct Printer {
    out: String,
    /// The full (round-tripping) form rather than the reading form.
    full: bool,
    /// The buffers in scope with their shapes (full form only), innermost last.
    scope: Vec<(String, Vec<IndexExpr>)>,
}

impl Printer {
    fn shape_of(&self, buf: &str) -> Option<&[IndexExpr]> {
        self.scope
            .iter()
            .rev()
            .find(|(name, _)| name == buf)
            .map(|(_, shape)| shape.as_slice())
    }

    fn ix(&self, ix: &Ix) -> String {
        let mut s = String::new();
        write_ix(&mut s, ix, 0, self.full);
        s
    }

    fn cond(&self, c: &Cond) -> String {
        let mut s = String::new();
        write_cond(&mut s, c, 0, self.full);
        s
    }

    fn val(&self, v: &Val) -> String {
        let mut s = String::new();
        write_val(&mut s, v, 0, self);
        s
    }

    /// `(i, j)`; in the full form an extent that is not the declared one is written
    /// `i : n` (all of them, when the buffer's shape does not give them).
    fn coords(&self, buf: &str, coords: &[Coord]) -> String {
        let implied = !self.full || extents_implied(coords, self.shape_of(buf));
        let c: Vec<String> = coords
            .iter()
            .map(|c| {
                if implied {
                    c.index.to_string()
                } else {
                    format!("{} : {}", c.index, c.extent)
                }
            })
            .collect();
        format!("({})", c.join(", "))
    }

    fn indent(&mut self, depth: usize) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
    }

    fn block(&mut self, stmts: &[Stmt], depth: usize) {
        for s in stmts {
            self.stmt(s, depth);
        }
    }

    fn stmt(&mut self, s: &Stmt, depth: usize) {
        self.indent(depth);
        match s {
            Stmt::For(l) => {
                let origin = match l.origin {
                    LoopOrigin::Gen => "gen",
                    LoopOrigin::Sum => "sum",
                    LoopOrigin::Max => "max",
                    LoopOrigin::Zero => "zero",
                };
                let mut notes = vec![origin];
                if l.parallel {
                    notes.push("parallel");
                }
                if l.collapse {
                    notes.push("collapse");
                }
                if l.vector {
                    notes.push("vector");
                }
                if l.unroll {
                    notes.push("unroll");
                }
                let mut notes = notes.join(", ");
                if !l.hoisted_buffers.is_empty() {
                    // The heap buffers declared around the loop (by `atl-lower`'s
                    // placement pass).
                    let whose = if l.parallel { " per thread" } else { "" };
                    let _ = write!(notes, "; buffers{whose}: {}", l.hoisted_buffers.join(", "));
                }
                let _ = writeln!(
                    self.out,
                    "for {} in {}..{} {{  # {notes}",
                    l.var,
                    self.ix(&l.lo),
                    self.ix(&l.hi),
                );
                self.block(&l.body, depth + 1);
                self.indent(depth);
                self.out.push_str("}\n");
            }
            Stmt::If {
                cond,
                then_branch,
                else_branch,
            } => {
                let cond = self.cond(cond);
                let _ = writeln!(self.out, "if {cond} {{");
                self.block(then_branch, depth + 1);
                if !else_branch.is_empty() {
                    self.indent(depth);
                    self.out.push_str("} else {\n");
                    self.block(else_branch, depth + 1);
                }
                self.indent(depth);
                self.out.push_str("}\n");
            }
            Stmt::Alloc {
                buf,
                shape,
                len,
                zeroed,
                storage,
                fold,
                body,
            } => {
                // Stack and heap storage are not shown: they follow from the length
                // (a small constant is a stack array).
                let place = match storage {
                    Storage::Heap if self.full => "  # heap".to_string(),
                    Storage::Stack if self.full => "  # stack".to_string(),
                    Storage::Heap | Storage::Stack => String::new(),
                    Storage::Hoisted {
                        loop_var,
                        per_thread,
                    } => {
                        let whose = if *per_thread { "per-thread " } else { "" };
                        format!("  # in the {whose}buffer of loop {loop_var}")
                    }
                };
                let len = self.ix(len);
                let _ = writeln!(
                    self.out,
                    "alloc {buf}{}{} = {}[{len}] {{{place}",
                    shape_str(shape),
                    fold.map(|f| format!(" fold {f}")).unwrap_or_default(),
                    if *zeroed { "zeros" } else { "uninit" },
                );
                self.scope.push((buf.clone(), shape.clone()));
                self.block(body, depth + 1);
                self.scope.pop();
                self.indent(depth);
                self.out.push_str("}\n");
            }
            Stmt::Decl { name, init } => match init {
                Some(v) => {
                    let v = self.val(v);
                    let _ = writeln!(self.out, "scalar {name} = {v}");
                }
                None => {
                    let _ = writeln!(self.out, "scalar {name}");
                }
            },
            Stmt::SetScalar { name, op, value } => {
                let value = self.val(value);
                let _ = writeln!(self.out, "{name} {} {value}", op_str(*op));
            }
            Stmt::Store {
                buf,
                index,
                coords,
                op,
                value,
            } => {
                let (index, value) = (self.ix(index), self.val(value));
                let coords = self.coords(buf, coords);
                let _ = writeln!(
                    self.out,
                    "{buf}[{index}] {} {value}  @ {coords}",
                    op_str(*op),
                );
            }
            Stmt::Fill { buf, len, value } => {
                let len = self.ix(len);
                let _ = writeln!(
                    self.out,
                    "fill {buf}[0..{len}] = {}",
                    format_lit_signed(*value)
                );
            }
            Stmt::Fail { array } => {
                let _ = writeln!(self.out, "fail {array}");
            }
        }
    }
}

fn op_str(op: StoreOp) -> &'static str {
    match op {
        StoreOp::Assign => "=",
        StoreOp::Accumulate => "+=",
        StoreOp::Max => "max=",
    }
}

fn format_lit_signed(v: f64) -> String {
    if v.is_sign_negative() {
        // `-inf` too (the start of a max-reduction), read back by the parser.
        format!("-{}", format_lit(v.abs()))
    } else {
        format_lit(v)
    }
}

/// C-like precedence of index operators (higher binds tighter).
fn ix_prec(ix: &Ix) -> u8 {
    match ix {
        Ix::Const(c) if *c < 0 => 3,
        Ix::Const(_) | Ix::Var(_) | Ix::Load(..) => 4,
        Ix::Neg(_) => 3,
        Ix::Bin(op, ..) => match op {
            IxOp::Add | IxOp::Sub => 1,
            IxOp::Mul | IxOp::DivNat | IxOp::ModNat => 2,
            _ => 4,
        },
    }
}

/// `full`: the negation of a constant is written `-(3)`, apart from the constant -3.
fn write_ix(out: &mut String, ix: &Ix, min: u8, full: bool) {
    if ix_prec(ix) < min {
        out.push('(');
        write_ix(out, ix, 0, full);
        out.push(')');
        return;
    }
    match ix {
        Ix::Const(c) => {
            let _ = write!(out, "{c}");
        }
        Ix::Var(v) => out.push_str(v),
        Ix::Load(array, a) => {
            out.push_str(array);
            out.push('[');
            write_ix(out, a, 0, full);
            out.push(']');
        }
        Ix::Neg(a) => {
            out.push('-');
            let min = if full && matches!(**a, Ix::Const(_)) {
                5
            } else {
                4
            };
            write_ix(out, a, min, full);
        }
        Ix::Bin(op, a, b) => {
            let call = match op {
                IxOp::FloorDiv => Some("floordiv"),
                IxOp::FloorMod => Some("floormod"),
                IxOp::CeilDiv => Some("cdiv"),
                IxOp::Min => Some("min"),
                IxOp::Max => Some("max"),
                _ => None,
            };
            if let Some(name) = call {
                let _ = write!(out, "{name}(");
                write_ix(out, a, 0, full);
                out.push_str(", ");
                write_ix(out, b, 0, full);
                out.push(')');
                return;
            }
            let sym = match op {
                IxOp::Add => "+",
                IxOp::Sub => "-",
                IxOp::Mul => "*",
                IxOp::DivNat => "/",
                _ => "%",
            };
            let p = ix_prec(ix);
            write_ix(out, a, p, full);
            let _ = write!(out, " {sym} ");
            write_ix(out, b, p + 1, full);
        }
    }
}

/// An index expression in the printer's syntax.
pub fn ix_to_string(ix: &Ix) -> String {
    let mut s = String::new();
    write_ix(&mut s, ix, 0, false);
    s
}

fn cmp_str(op: CmpOp) -> &'static str {
    op.symbol()
}

fn cond_prec(c: &Cond) -> u8 {
    match c {
        Cond::Or(..) => 1,
        Cond::And(..) => 2,
        Cond::Not(_) => 3,
        Cond::Cmp(..) | Cond::Bool(_) => 4,
    }
}

fn write_cond(out: &mut String, c: &Cond, min: u8, full: bool) {
    if cond_prec(c) < min {
        out.push('(');
        write_cond(out, c, 0, full);
        out.push(')');
        return;
    }
    match c {
        Cond::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        Cond::Cmp(op, a, b) => {
            write_ix(out, a, 0, full);
            let _ = write!(out, " {} ", cmp_str(*op));
            write_ix(out, b, 0, full);
        }
        Cond::And(a, b) => {
            write_cond(out, a, 2, full);
            out.push_str(" && ");
            write_cond(out, b, 3, full);
        }
        Cond::Or(a, b) => {
            write_cond(out, a, 1, full);
            out.push_str(" || ");
            write_cond(out, b, 2, full);
        }
        Cond::Not(a) => {
            out.push('!');
            write_cond(out, a, 4, full);
        }
    }
}

/// A condition in the printer's syntax.
pub fn cond_to_string(c: &Cond) -> String {
    let mut s = String::new();
    write_cond(&mut s, c, 0, false);
    s
}

fn val_prec(v: &Val) -> u8 {
    match v {
        Val::Select(..) => 0,
        Val::Blend(..) => 4,
        Val::Bin(op, ..) => match op {
            atl_lang::ir::BinOp::Add | atl_lang::ir::BinOp::Sub => 1,
            _ => 2,
        },
        Val::Neg(_) => 3,
        Val::Lit(x) if x.is_sign_negative() => 3,
        Val::Lit(_) | Val::Coord(_) | Val::Scalar(_) | Val::Load(_) | Val::Call(..) => 4,
    }
}

fn write_val(out: &mut String, v: &Val, min: u8, p: &Printer) {
    if val_prec(v) < min {
        out.push('(');
        write_val(out, v, 0, p);
        out.push(')');
        return;
    }
    match v {
        Val::Lit(x) => out.push_str(&format_lit_signed(*x)),
        Val::Coord(ix) => {
            let _ = write!(out, "float({})", p.ix(ix));
        }
        Val::Scalar(s) => out.push_str(s),
        Val::Load(l) => {
            let _ = write!(out, "{}[{}", l.buf, p.ix(&l.index));
            if p.full {
                let _ = write!(out, " @ {}", p.coords(&l.buf, &l.coords));
            }
            out.push(']');
        }
        Val::Neg(a) => {
            out.push('-');
            // `-1` is the literal -1; the negation of the literal 1 is `-(1)`.
            let min = if p.full && matches!(**a, Val::Lit(_)) {
                5
            } else {
                4
            };
            write_val(out, a, min, p);
        }
        Val::Bin(op, a, b) => {
            let prec = val_prec(v);
            write_val(out, a, prec, p);
            let _ = write!(out, " {} ", op.symbol());
            write_val(out, b, prec + 1, p);
        }
        Val::Blend(c, a) => {
            out.push_str("blend(");
            write_cond(out, c, 0, p.full);
            out.push_str(", ");
            write_val(out, a, 0, p);
            out.push(')');
        }
        Val::Select(c, a) => {
            write_cond(out, c, 1, p.full);
            out.push_str(" ? ");
            write_val(out, a, 1, p);
            out.push_str(" : 0");
        }
        // As in ATL: `sqrt(x)`, `max(a, b)`, `select(a > b, x, y)`.
        Val::Call(func, args) => {
            let _ = write!(out, "{}(", func.name());
            for (k, a) in args.iter().enumerate() {
                write_val(out, a, 0, p);
                match func {
                    atl_lang::functions::ScalarFn::Select(op) if k == 0 => {
                        let _ = write!(out, " {} ", op.symbol());
                    }
                    _ if k + 1 < args.len() => out.push_str(", "),
                    _ => {}
                }
            }
            out.push(')');
        }
    }
}

/// A scalar expression in the printer's syntax.
pub fn val_to_string(v: &Val) -> String {
    Printer {
        out: String::new(),
        full: false,
        scope: Vec::new(),
    }
    .val(v)
}

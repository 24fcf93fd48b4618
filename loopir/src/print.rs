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

use std::fmt::Write as _;

use atl_lang::index::CmpOp;
use atl_lang::pretty::format_lit;

use crate::ir::{Cond, Coord, Ix, IxOp, Kernel, LoopOrigin, Stmt, Storage, StoreOp, Val};

/// Prints a kernel.
pub fn kernel_to_string(k: &Kernel) -> String {
    let mut p = Printer { out: String::new() };
    let inputs: Vec<String> = k
        .inputs
        .iter()
        .map(|b| format!("{}: {}", b.name, shape_str(&b.shape)))
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
        let _ = writeln!(p.out, "  requires {}", pre.pred);
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
}

impl Printer {
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
                    LoopOrigin::Zero => "zero",
                };
                let mut notes = vec![origin];
                if l.parallel {
                    notes.push("parallel");
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
                    ix_to_string(&l.lo),
                    ix_to_string(&l.hi),
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
                let _ = writeln!(self.out, "if {} {{", cond_to_string(cond));
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
                body,
            } => {
                // Stack and heap storage are not shown: they follow from the length
                // (a small constant is a stack array).
                let place = match storage {
                    Storage::Heap | Storage::Stack => String::new(),
                    Storage::Hoisted {
                        loop_var,
                        per_thread,
                    } => {
                        let whose = if *per_thread { "per-thread " } else { "" };
                        format!("  # in the {whose}buffer of loop {loop_var}")
                    }
                };
                let _ = writeln!(
                    self.out,
                    "alloc {buf}{} = {}[{}] {{{place}",
                    shape_str(shape),
                    if *zeroed { "zeros" } else { "uninit" },
                    ix_to_string(len)
                );
                self.block(body, depth + 1);
                self.indent(depth);
                self.out.push_str("}\n");
            }
            Stmt::Decl { name, init } => match init {
                Some(v) => {
                    let _ = writeln!(self.out, "scalar {name} = {}", val_to_string(v));
                }
                None => {
                    let _ = writeln!(self.out, "scalar {name}");
                }
            },
            Stmt::SetScalar { name, op, value } => {
                let _ = writeln!(self.out, "{name} {} {}", op_str(*op), val_to_string(value));
            }
            Stmt::Store {
                buf,
                index,
                coords,
                op,
                value,
            } => {
                let _ = writeln!(
                    self.out,
                    "{buf}[{}] {} {}  @ {}",
                    ix_to_string(index),
                    op_str(*op),
                    val_to_string(value),
                    coords_str(coords)
                );
            }
            Stmt::Fill { buf, len, value } => {
                let _ = writeln!(
                    self.out,
                    "fill {buf}[0..{}] = {}",
                    ix_to_string(len),
                    format_lit_signed(*value)
                );
            }
        }
    }
}

fn op_str(op: StoreOp) -> &'static str {
    match op {
        StoreOp::Assign => "=",
        StoreOp::Accumulate => "+=",
    }
}

fn coords_str(coords: &[Coord]) -> String {
    let c: Vec<String> = coords.iter().map(|c| c.index.to_string()).collect();
    format!("({})", c.join(", "))
}

fn format_lit_signed(v: f64) -> String {
    if v.is_sign_negative() {
        format!("-{}", format_lit(v))
    } else {
        format_lit(v)
    }
}

/// C-like precedence of index operators (higher binds tighter).
fn ix_prec(ix: &Ix) -> u8 {
    match ix {
        Ix::Const(c) if *c < 0 => 3,
        Ix::Const(_) | Ix::Var(_) => 4,
        Ix::Neg(_) => 3,
        Ix::Bin(op, ..) => match op {
            IxOp::Add | IxOp::Sub => 1,
            IxOp::Mul | IxOp::DivNat | IxOp::ModNat => 2,
            _ => 4,
        },
    }
}

fn write_ix(out: &mut String, ix: &Ix, min: u8) {
    if ix_prec(ix) < min {
        out.push('(');
        write_ix(out, ix, 0);
        out.push(')');
        return;
    }
    match ix {
        Ix::Const(c) => {
            let _ = write!(out, "{c}");
        }
        Ix::Var(v) => out.push_str(v),
        Ix::Neg(a) => {
            out.push('-');
            write_ix(out, a, 4);
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
                write_ix(out, a, 0);
                out.push_str(", ");
                write_ix(out, b, 0);
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
            write_ix(out, a, p);
            let _ = write!(out, " {sym} ");
            write_ix(out, b, p + 1);
        }
    }
}

/// An index expression in the printer's syntax.
pub fn ix_to_string(ix: &Ix) -> String {
    let mut s = String::new();
    write_ix(&mut s, ix, 0);
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

fn write_cond(out: &mut String, c: &Cond, min: u8) {
    if cond_prec(c) < min {
        out.push('(');
        write_cond(out, c, 0);
        out.push(')');
        return;
    }
    match c {
        Cond::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        Cond::Cmp(op, a, b) => {
            write_ix(out, a, 0);
            let _ = write!(out, " {} ", cmp_str(*op));
            write_ix(out, b, 0);
        }
        Cond::And(a, b) => {
            write_cond(out, a, 2);
            out.push_str(" && ");
            write_cond(out, b, 3);
        }
        Cond::Or(a, b) => {
            write_cond(out, a, 1);
            out.push_str(" || ");
            write_cond(out, b, 2);
        }
        Cond::Not(a) => {
            out.push('!');
            write_cond(out, a, 4);
        }
    }
}

/// A condition in the printer's syntax.
pub fn cond_to_string(c: &Cond) -> String {
    let mut s = String::new();
    write_cond(&mut s, c, 0);
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
        Val::Lit(_) | Val::Scalar(_) | Val::Load(_) => 4,
    }
}

fn write_val(out: &mut String, v: &Val, min: u8) {
    if val_prec(v) < min {
        out.push('(');
        write_val(out, v, 0);
        out.push(')');
        return;
    }
    match v {
        Val::Lit(x) => out.push_str(&format_lit_signed(*x)),
        Val::Scalar(s) => out.push_str(s),
        Val::Load(l) => {
            let _ = write!(out, "{}[{}]", l.buf, ix_to_string(&l.index));
        }
        Val::Neg(a) => {
            out.push('-');
            write_val(out, a, 4);
        }
        Val::Bin(op, a, b) => {
            let p = val_prec(v);
            write_val(out, a, p);
            let _ = write!(out, " {} ", op.symbol());
            write_val(out, b, p + 1);
        }
        Val::Blend(c, a) => {
            out.push_str("blend(");
            write_cond(out, c, 0);
            out.push_str(", ");
            write_val(out, a, 0);
            out.push(')');
        }
        Val::Select(c, a) => {
            write_cond(out, c, 1);
            out.push_str(" ? ");
            write_val(out, a, 1);
            out.push_str(" : 0");
        }
    }
}

/// A scalar expression in the printer's syntax.
pub fn val_to_string(v: &Val) -> String {
    let mut s = String::new();
    write_val(&mut s, v, 0);
    s
}

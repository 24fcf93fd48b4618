//! Layout expressions: layouts in CuTe notation and integers, combined by the
//! operations `compose(A, B)`, `coalesce(A)`, `complement(A, M)` (or `complement(A)`,
//! with `M = cosize A`), `logical_divide(A, B)`, `logical_product(A, B)`,
//! `zipped_divide(A, B)` and `concat(A, B, …)`, nested freely. Parsing and evaluation
//! are separate so that each error points at the text it is about: a syntax error at
//! the offending character, a wrong argument at the argument, an operation without a
//! result at the whole call.

use std::ops::Range;

use crate::error::{TextError, TextErrorKind};
use crate::layout::Layout;
use crate::notation::{Cursor, syntax};
use crate::{
    coalesce, complement, compose, concat, logical_divide, logical_product, zipped_divide,
};

/// How deeply calls may nest.
const MAX_DEPTH: usize = 64;

/// The operations, with their arguments as written in a message.
pub const OPERATIONS: &[(&str, &str)] = &[
    ("compose", "(A, B)"),
    ("coalesce", "(A)"),
    ("complement", "(A, M) or (A)"),
    ("logical_divide", "(A, B)"),
    ("logical_product", "(A, B)"),
    ("zipped_divide", "(A, B)"),
    ("concat", "(A, B, ...)"),
];

/// A parsed expression, with the byte range of its text.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Layout(Layout, Range<usize>),
    Int(i64, Range<usize>),
    Call {
        name: String,
        name_span: Range<usize>,
        args: Vec<Expr>,
        span: Range<usize>,
    },
}

impl Expr {
    pub fn span(&self) -> Range<usize> {
        match self {
            Expr::Layout(_, span) | Expr::Int(_, span) | Expr::Call { span, .. } => span.clone(),
        }
    }
}

/// The value of an expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Layout(Layout),
    Int(i64),
}

/// Parses the whole text as one expression.
pub fn parse(text: &str) -> Result<Expr, TextError> {
    let mut cursor = Cursor::new(text);
    let expr = parse_expr(&mut cursor, 0)?;
    cursor.end()?;
    Ok(expr)
}

/// Parses and evaluates `text`, which must denote a layout.
pub fn evaluate(text: &str) -> Result<Layout, TextError> {
    let expr = parse(text)?;
    layout_arg(&expr)
}

fn parse_expr(cursor: &mut Cursor<'_>, depth: usize) -> Result<Expr, TextError> {
    if let Some((name, name_span)) = cursor.ident() {
        if depth >= MAX_DEPTH {
            return Err(syntax(
                name_span,
                format!("calls nest more than {MAX_DEPTH} deep"),
            ));
        }
        cursor.expect('(', &format!("`(` after `{name}`"))?;
        let mut args = Vec::new();
        if !cursor.eat(')') {
            args.push(parse_expr(cursor, depth + 1)?);
            while cursor.eat(',') {
                args.push(parse_expr(cursor, depth + 1)?);
            }
            cursor.expect(')', "`,` or `)`")?;
        }
        return Ok(Expr::Call {
            name: name.to_string(),
            span: name_span.start..cursor.pos(),
            name_span,
            args,
        });
    }
    let (tuple, span) = match cursor.peek() {
        Some(c) if c == '(' || c == '-' || c.is_ascii_digit() => cursor.tuple()?,
        _ => {
            return Err(
                cursor.unexpected("a layout such as `(3,4):(4,1)`, an integer or an operation")
            );
        }
    };
    if cursor.peek() == Some(':') {
        let (layout, span) = cursor.stride_after(tuple, span)?;
        return Ok(Expr::Layout(layout, span));
    }
    match tuple {
        crate::IntTuple::Int(v) => Ok(Expr::Int(v, span)),
        crate::IntTuple::Tuple(_) => Err(cursor.unexpected("`:` and the stride after the shape")),
    }
}

fn arguments(span: Range<usize>, message: impl Into<String>) -> TextError {
    TextError {
        span,
        kind: TextErrorKind::Arguments,
        message: message.into(),
    }
}

/// Evaluates an expression.
pub fn eval(expr: &Expr) -> Result<Value, TextError> {
    match expr {
        Expr::Layout(l, _) => Ok(Value::Layout(l.clone())),
        Expr::Int(v, _) => Ok(Value::Int(*v)),
        Expr::Call {
            name,
            name_span,
            args,
            span,
        } => {
            let Some(&(_, usage)) = OPERATIONS.iter().find(|(n, _)| n == name) else {
                let known: Vec<&str> = OPERATIONS.iter().map(|(n, _)| *n).collect();
                return Err(arguments(
                    name_span.clone(),
                    format!(
                        "`{name}` is not an operation; the operations are {}",
                        known.join(", ")
                    ),
                ));
            };
            let arity_ok = match name.as_str() {
                "coalesce" => args.len() == 1,
                "complement" => args.len() == 1 || args.len() == 2,
                "concat" => !args.is_empty(),
                _ => args.len() == 2,
            };
            if !arity_ok {
                return Err(arguments(
                    span.clone(),
                    format!("`{name}` takes {usage}, not {} argument(s)", args.len()),
                ));
            }
            let layouts = |range: Range<usize>| -> Result<Vec<Layout>, TextError> {
                args[range].iter().map(layout_arg).collect()
            };
            let result = match name.as_str() {
                "compose" => {
                    let l = layouts(0..2)?;
                    compose(&l[0], &l[1])
                }
                "coalesce" => coalesce(&layouts(0..1)?[0]),
                "complement" => {
                    let a = layout_arg(&args[0])?;
                    let m = match args.get(1) {
                        Some(arg) => int_arg(arg)?,
                        None => a.cosize(),
                    };
                    complement(&a, m)
                }
                "logical_divide" => {
                    let l = layouts(0..2)?;
                    logical_divide(&l[0], &l[1])
                }
                "logical_product" => {
                    let l = layouts(0..2)?;
                    logical_product(&l[0], &l[1])
                }
                "zipped_divide" => {
                    let l = layouts(0..2)?;
                    zipped_divide(&l[0], &l[1])
                }
                _ => concat(&layouts(0..args.len())?),
            };
            result.map(Value::Layout).map_err(|e| TextError {
                span: span.clone(),
                message: format!("`{name}`: {}", e.message()),
                kind: TextErrorKind::Layout(e),
            })
        }
    }
}

/// An argument that must be a layout.
fn layout_arg(expr: &Expr) -> Result<Layout, TextError> {
    match eval(expr)? {
        Value::Layout(l) => Ok(l),
        Value::Int(v) => Err(arguments(
            expr.span(),
            format!("expected a layout such as `{v}:1`, found the integer {v}"),
        )),
    }
}

/// An argument that must be an integer.
fn int_arg(expr: &Expr) -> Result<i64, TextError> {
    match eval(expr)? {
        Value::Int(v) => Ok(v),
        Value::Layout(l) => Err(arguments(
            expr.span(),
            format!("expected an integer, found the layout `{l}`"),
        )),
    }
}

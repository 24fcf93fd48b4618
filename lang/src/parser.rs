//! The parser: tokens to the surface AST (chumsky for expressions, index expressions
//! and predicates; a small hand-written layer for items and derivation steps).
//!
//! Error recovery is by item: the token stream is cut at every item keyword (`size`,
//! `assume`, `input`, `def`, `derive` can appear nowhere else, and `rule` at the start
//! of a line), each item is parsed on its own, and a broken item yields one diagnostic
//! while the others are still parsed. A `rule` item is kept as text: its syntax is the
//! rule files' (`docs/rules.md`), loaded by the rewrite crate.
//! Inside a `derive { … }` block, steps end at a line break (outside brackets) or `;`.

use std::ops::Range;

use chumsky::Stream;
use chumsky::error::SimpleReason;
use chumsky::prelude::*;

use crate::ast::{
    DirectiveArg, File, Ident, IndexArrayAst, Item, LayoutAst, Quantifier, RuleItem, SBinder,
    SExpr, SExprKind, SIndex, SIndexKind, SPred, SPredKind, SRange, SiteSelector, SparseStorage,
    Step, StepKind,
};
use crate::diag::Diagnostic;
use crate::index::{CmpOp, IndexExpr, IndexOp, Pred};
use crate::ir::{AmountOp, BinOp};
use crate::lexer::{Token, lex};
use crate::span::Span;

type PErr = Simple<Token, Range<usize>>;

fn sp(r: Range<usize>) -> Span {
    Span::from(r)
}

/// An index atom as read: an expression, or the integer 2^63, which fits in 64 bits
/// only under a minus sign.
#[derive(Clone)]
enum Magnitude {
    Fits(SIndex),
    MinAbs(Span, String),
}

fn index_bin(op: IndexOp, a: SIndex, b: SIndex) -> SIndex {
    SIndex {
        span: a.span.to(b.span),
        kind: SIndexKind::Bin(op, Box::new(a), Box::new(b)),
    }
}

/// Index expressions: `+ -` over `* / %` over unary `-` over atoms (integers, names,
/// metavariables, `cdiv/min/max(a, b)`, parentheses).
pub fn index_parser() -> impl Parser<Token, SIndex, Error = PErr> + Clone {
    recursive(|idx| {
        // An integer is read as its magnitude; 2^63 is kept apart, since only a minus
        // sign in front of it (i64::MIN, which the printer writes as
        // `-9223372036854775808`) makes it fit in 64 bits.
        let int = select! { Token::Int(s) => s }.try_map(|s: String, span: Range<usize>| {
            match s.parse::<i64>() {
                Ok(v) => Ok(Magnitude::Fits(SIndex {
                    kind: SIndexKind::Int(v),
                    span: sp(span),
                })),
                Err(_) if s.parse::<u64>() == Ok(i64::MIN.unsigned_abs()) => {
                    Ok(Magnitude::MinAbs(sp(span), s))
                }
                Err(_) => Err(Simple::custom(
                    span,
                    format!("integer `{s}` does not fit in 64 bits"),
                )),
            }
        });
        // A name, or an element of an index array `pos[i + 1]`.
        let name = select! { Token::Ident(s) => s }
            .map_with_span(|s, span| (s, sp(span)))
            .then(
                idx.clone()
                    .delimited_by(just(Token::LBracket), just(Token::RBracket))
                    .or_not(),
            )
            .map_with_span(|((s, name_span), at), span| SIndex {
                kind: match at {
                    None => SIndexKind::Name(s),
                    Some(at) => SIndexKind::Load(
                        Ident {
                            name: s,
                            span: name_span,
                        },
                        Box::new(at),
                    ),
                },
                span: sp(span),
            });
        let meta = select! { Token::Meta(s) => s }.map_with_span(|s, span| SIndex {
            kind: SIndexKind::Meta(s),
            span: sp(span),
        });
        let call_op = choice((
            just(Token::CDiv).to(IndexOp::CDiv),
            just(Token::Min).to(IndexOp::Min),
            just(Token::Max).to(IndexOp::Max),
        ));
        let call = call_op
            .then(
                idx.clone()
                    .then_ignore(just(Token::Comma))
                    .then(idx.clone())
                    .delimited_by(just(Token::LParen), just(Token::RParen)),
            )
            .map_with_span(|(op, (a, b)), span| SIndex {
                kind: SIndexKind::Bin(op, Box::new(a), Box::new(b)),
                span: sp(span),
            });
        let paren = idx
            .clone()
            .delimited_by(just(Token::LParen), just(Token::RParen))
            .map_with_span(|e, span| SIndex {
                kind: SIndexKind::Paren(Box::new(e)),
                span: sp(span),
            });
        let atom = choice((int, name.or(meta).or(call).or(paren).map(Magnitude::Fits)));
        let unary = just(Token::Minus)
            .map_with_span(|_, span| sp(span))
            .repeated()
            .then(atom)
            .try_map(|(mut minuses, atom), _| {
                let mut e = match atom {
                    Magnitude::Fits(e) => e,
                    // `-9223372036854775808` is the constant i64::MIN, as `-3` is the
                    // constant -3 (resolution folds a minus and an integer the same way).
                    Magnitude::MinAbs(span, text) => match minuses.pop() {
                        Some(minus) => SIndex {
                            kind: SIndexKind::Int(i64::MIN),
                            span: minus.to(span),
                        },
                        None => {
                            return Err(Simple::custom(
                                span.start..span.end,
                                format!("integer `{text}` does not fit in 64 bits"),
                            ));
                        }
                    },
                };
                if !minuses.is_empty() && e.kind == SIndexKind::Int(i64::MIN) {
                    // `--9223372036854775808` negates the constant i64::MIN; the parentheses
                    // keep resolution from folding that minus into the literal.
                    e = SIndex {
                        span: e.span,
                        kind: SIndexKind::Paren(Box::new(e)),
                    };
                }
                for minus in minuses.into_iter().rev() {
                    e = SIndex {
                        span: minus.to(e.span),
                        kind: SIndexKind::Neg(Box::new(e)),
                    };
                }
                Ok(e)
            });
        let product = unary
            .clone()
            .then(
                choice((
                    just(Token::Star).to(IndexOp::Mul),
                    just(Token::Slash).to(IndexOp::Div),
                    just(Token::Percent).to(IndexOp::Mod),
                ))
                .then(unary)
                .repeated(),
            )
            .foldl(|a, (op, b)| index_bin(op, a, b));
        product
            .clone()
            .then(
                choice((
                    just(Token::Plus).to(IndexOp::Add),
                    just(Token::Minus).to(IndexOp::Sub),
                ))
                .then(product)
                .repeated(),
            )
            .foldl(|a, (op, b)| index_bin(op, a, b))
    })
}

fn pred_bin(a: SPred, b: SPred, and: bool) -> SPred {
    let span = a.span.to(b.span);
    let kind = if and {
        SPredKind::And(Box::new(a), Box::new(b))
    } else {
        SPredKind::Or(Box::new(a), Box::new(b))
    };
    SPred { kind, span }
}

/// A comparison operator: of indices in predicates, of values in `select`.
fn comparison() -> impl Parser<Token, CmpOp, Error = PErr> + Clone {
    choice((
        just(Token::EqEq).to(CmpOp::Eq),
        just(Token::Ne).to(CmpOp::Ne),
        just(Token::Le).to(CmpOp::Le),
        just(Token::Lt).to(CmpOp::Lt),
        just(Token::Ge).to(CmpOp::Ge),
        just(Token::Gt).to(CmpOp::Gt),
    ))
}

/// Predicates: `||` over `&&` over `!` over comparisons (chains like `0 <= i < n` mean
/// `0 <= i && i < n`), `true`, `false` and parentheses.
pub fn pred_parser(
    idx: impl Parser<Token, SIndex, Error = PErr> + Clone + 'static,
) -> impl Parser<Token, SPred, Error = PErr> + Clone {
    recursive(move |pred| {
        let cmp_op = comparison();
        let chain = idx
            .clone()
            .then(cmp_op.then(idx.clone()).repeated().at_least(1))
            .map(|(first, rest)| {
                let mut left = first;
                let mut out: Option<SPred> = None;
                for (op, right) in rest {
                    let cmp = SPred {
                        span: left.span.to(right.span),
                        kind: SPredKind::Cmp(op, left, right.clone()),
                    };
                    out = Some(match out {
                        None => cmp,
                        Some(acc) => pred_bin(acc, cmp, true),
                    });
                    left = right;
                }
                out.expect("at_least(1) comparison")
            });
        let boolean = choice((just(Token::True).to(true), just(Token::False).to(false)))
            .map_with_span(|b, span| SPred {
                kind: SPredKind::Bool(b),
                span: sp(span),
            });
        let paren = pred
            .clone()
            .delimited_by(just(Token::LParen), just(Token::RParen));
        // In rule patterns a bare `?p` stands for a whole predicate.
        let meta = select! { Token::Meta(s) => s }.map_with_span(|m, span| SPred {
            kind: SPredKind::Meta(m),
            span: sp(span),
        });
        let atom = choice((boolean, chain, paren, meta));
        let not = just(Token::Bang)
            .map_with_span(|_, span| sp(span))
            .repeated()
            .then(atom)
            .foldr(|bang, p| SPred {
                span: bang.to(p.span),
                kind: SPredKind::Not(Box::new(p)),
            });
        let and = not
            .clone()
            .then(just(Token::AndAnd).ignore_then(not).repeated())
            .foldl(|a, b| pred_bin(a, b, true));
        and.clone()
            .then(just(Token::OrOr).ignore_then(and).repeated())
            .foldl(|a, b| pred_bin(a, b, false))
    })
}

fn expr_bin(op: BinOp, a: SExpr, b: SExpr) -> SExpr {
    SExpr {
        span: a.span.to(b.span),
        kind: SExprKind::Binary {
            op,
            lhs: Box::new(a),
            rhs: Box::new(b),
        },
    }
}

fn ident() -> impl Parser<Token, Ident, Error = PErr> + Clone {
    select! { Token::Ident(s) => s }.map_with_span(|name, span| Ident {
        name,
        span: sp(span),
    })
}

/// Tensor expressions. Binder forms (`gen`, `sum`, `let`) and guards extend as far
/// right as possible; then `++` over `+ -` over `* /` over unary `-` over postfix
/// access `e[i, j]` over atoms.
pub fn expr_parser() -> impl Parser<Token, SExpr, Error = PErr> + Clone {
    let idx = index_parser();
    let pred = pred_parser(index_parser());
    recursive(move |expr| {
        let number = select! {
            Token::Int(s) => s,
            Token::Float(s) => s,
        }
        .try_map(|s: String, span: Range<usize>| {
            s.parse::<f64>()
                .map_err(|_| Simple::custom(span, format!("`{s}` is not a number")))
        })
        .map_with_span(|v, span| SExpr {
            kind: SExprKind::Num(v),
            span: sp(span),
        });
        let name = select! { Token::Ident(s) => s }.map_with_span(|s, span| SExpr {
            kind: SExprKind::Name(s),
            span: sp(span),
        });
        let meta = select! { Token::Meta(s) => s }.map_with_span(|s, span| SExpr {
            kind: SExprKind::Meta(s),
            span: sp(span),
        });
        let paren = expr
            .clone()
            .delimited_by(just(Token::LParen), just(Token::RParen))
            .map_with_span(|e, span| SExpr {
                kind: SExprKind::Paren(Box::new(e)),
                span: sp(span),
            });
        let range = choice((
            just(Token::Lt).ignore_then(idx.clone()).map(SRange::Below),
            just(Token::In)
                .ignore_then(idx.clone())
                .then_ignore(just(Token::DotDot))
                .then(idx.clone())
                .map(|(lo, hi)| SRange::Between(lo, hi)),
        ));
        let binder_var =
            ident().or(
                select! { Token::Meta(s) => s }.map_with_span(|name, span| Ident {
                    name: format!("?{name}"),
                    span: sp(span),
                }),
            );
        let binder = binder_var
            .clone()
            .then(range)
            .map_with_span(|(var, range), span| SBinder {
                var,
                range,
                span: sp(span),
            });
        let quantifier = choice((
            just(Token::Gen).to(Quantifier::Gen),
            just(Token::Sum).to(Quantifier::Sum),
            // `max` followed by a binder is the max-reduction; followed by `(` it is
            // the call `max(a, b)` (`fn_call`, tried first among the atoms, fails at
            // the binder, and `choice` tries this one).
            just(Token::Max).to(Quantifier::Max),
        ));
        let bind_form = quantifier
            .then(binder.separated_by(just(Token::Comma)).at_least(1))
            .then_ignore(just(Token::Colon))
            .then(expr.clone())
            .map_with_span(|((quantifier, binders), body), span| SExpr {
                kind: SExprKind::Bind {
                    quantifier,
                    binders,
                    body: Box::new(body),
                },
                span: sp(span),
            });
        let let_form = just(Token::Let)
            .ignore_then(binder_var.clone())
            .then_ignore(just(Token::Eq))
            .then(expr.clone())
            .then_ignore(just(Token::In))
            .then(expr.clone())
            .map_with_span(|((var, value), body), span| SExpr {
                kind: SExprKind::Let {
                    var,
                    value: Box::new(value),
                    body: Box::new(body),
                },
                span: sp(span),
            });
        let unary_call = choice((
            just(Token::Transpose).to(true),
            just(Token::Flatten).to(false),
        ))
        .then(
            expr.clone()
                .delimited_by(just(Token::LParen), just(Token::RParen)),
        )
        .map_with_span(|(is_transpose, e), span| SExpr {
            kind: if is_transpose {
                SExprKind::Transpose(Box::new(e))
            } else {
                SExprKind::Flatten(Box::new(e))
            },
            span: sp(span),
        });
        // One alternative per amount operator of the reshape table, in its order (the
        // order of the expected tokens in a parse error).
        let amount_op = choice(AmountOp::ALL.map(|op| just(Token::Amount(op)).to(op)));
        let amount_call = amount_op
            .then(
                idx.clone()
                    .then_ignore(just(Token::Comma))
                    .then(expr.clone())
                    .delimited_by(just(Token::LParen), just(Token::RParen)),
            )
            .map_with_span(|(op, (amount, arg)), span| SExpr {
                kind: SExprKind::Amount {
                    op,
                    amount,
                    arg: Box::new(arg),
                },
                span: sp(span),
            });
        // Scalar functions (`crate::functions`): `name(args…)` with `min`/`max` being
        // tokens of their own (they are index functions too), and `select(a OP b, x,
        // y)`.
        let value_cmp = comparison();
        let select_call = just(Token::Ident("select".to_string()))
            .map_with_span(|_, span| Ident {
                name: "select".to_string(),
                span: sp(span),
            })
            .then(
                expr.clone()
                    .then(value_cmp)
                    .then(expr.clone())
                    .then_ignore(just(Token::Comma))
                    .then(expr.clone())
                    .then_ignore(just(Token::Comma))
                    .then(expr.clone())
                    .delimited_by(just(Token::LParen), just(Token::RParen)),
            )
            .map_with_span(|(name, ((((a, op), b), x), y)), span| SExpr {
                kind: SExprKind::Call {
                    name,
                    cmp: Some(op),
                    args: vec![a, b, x, y],
                },
                span: sp(span),
            });
        // `float(i + 1)`: an index expression's value as a scalar (a bare index
        // variable or size in a scalar position means the same, `resolve`).
        let coord_call = just(Token::Ident("float".to_string()))
            .ignore_then(
                idx.clone()
                    .delimited_by(just(Token::LParen), just(Token::RParen)),
            )
            .map_with_span(|index, span| SExpr {
                kind: SExprKind::Coord(index),
                span: sp(span),
            });
        let fn_name = select! {
            Token::Ident(s) => s,
            Token::Min => "min".to_string(),
            Token::Max => "max".to_string(),
        }
        .map_with_span(|name, span| Ident {
            name,
            span: sp(span),
        });
        let fn_call = fn_name
            .then(
                expr.clone()
                    .separated_by(just(Token::Comma))
                    .delimited_by(just(Token::LParen), just(Token::RParen)),
            )
            .map_with_span(|(name, args), span| SExpr {
                kind: SExprKind::Call {
                    name,
                    cmp: None,
                    args,
                },
                span: sp(span),
            });
        let concat_call = just(Token::Concat)
            .ignore_then(
                expr.clone()
                    .then_ignore(just(Token::Comma))
                    .then(expr.clone())
                    .delimited_by(just(Token::LParen), just(Token::RParen)),
            )
            .map_with_span(|(a, b), span| SExpr {
                kind: SExprKind::Concat(Box::new(a), Box::new(b)),
                span: sp(span),
            });

        // The guard's operand is parsed at the unary level, declared below; chumsky
        // needs the recursion tied explicitly.
        let mut unary = Recursive::declare();
        let guard = pred
            .clone()
            .delimited_by(just(Token::LBracket), just(Token::RBracket))
            .then_ignore(just(Token::Star))
            .then(unary.clone())
            .map_with_span(|(pred, body): (SPred, SExpr), span| SExpr {
                kind: SExprKind::Guard {
                    pred,
                    body: Box::new(body),
                },
                span: sp(span),
            });
        let atom = choice((
            number,
            select_call,
            coord_call,
            fn_call,
            name,
            meta,
            paren,
            bind_form,
            let_form,
            unary_call,
            amount_call,
            concat_call,
            guard,
        ))
        .boxed();
        // `e[i, j]` (access) or, in rule patterns, `e[?i := k]` (substitution).
        let subst_suffix = select! { Token::Meta(s) => s }
            .map_with_span(|name, span| Ident {
                name: format!("?{name}"),
                span: sp(span),
            })
            .then_ignore(just(Token::ColonEq))
            .then(idx.clone())
            .delimited_by(just(Token::LBracket), just(Token::RBracket))
            .map_with_span(|(var, value), span| (Err((var, value)), sp(span)));
        let access_suffix = idx
            .clone()
            .separated_by(just(Token::Comma))
            .at_least(1)
            .delimited_by(just(Token::LBracket), just(Token::RBracket))
            .map_with_span(|indices, span| (Ok(indices), sp(span)));
        let postfix =
            atom.then(subst_suffix.or(access_suffix).repeated())
                .foldl(|tensor, (suffix, span)| SExpr {
                    span: tensor.span.to(span),
                    kind: match suffix {
                        Ok(indices) => SExprKind::Access {
                            tensor: Box::new(tensor),
                            indices,
                        },
                        Err((var, value)) => SExprKind::Subst {
                            body: Box::new(tensor),
                            var,
                            value,
                        },
                    },
                });
        unary.define(
            just(Token::Minus)
                .map_with_span(|_, span| sp(span))
                .repeated()
                .then(postfix)
                .foldr(|minus, e| SExpr {
                    span: minus.to(e.span),
                    kind: SExprKind::Neg(Box::new(e)),
                }),
        );
        let product = unary
            .clone()
            .then(
                choice((
                    just(Token::Star).to(BinOp::Mul),
                    just(Token::Slash).to(BinOp::Div),
                ))
                .then(unary.clone())
                .repeated(),
            )
            .foldl(|a, (op, b)| expr_bin(op, a, b));
        let additive = product
            .clone()
            .then(
                choice((
                    just(Token::Plus).to(BinOp::Add),
                    just(Token::Minus).to(BinOp::Sub),
                ))
                .then(product)
                .repeated(),
            )
            .foldl(|a, (op, b)| expr_bin(op, a, b));
        additive
            .clone()
            .then(just(Token::PlusPlus).ignore_then(additive).repeated())
            .foldl(|a, b| SExpr {
                span: a.span.to(b.span),
                kind: SExprKind::Concat(Box::new(a), Box::new(b)),
            })
            .boxed()
    })
}

/// Turns a chumsky error into a diagnostic.
fn to_diag(e: PErr, what: &str) -> Diagnostic {
    let span = sp(e.span());
    match e.reason() {
        SimpleReason::Unclosed {
            span: open,
            delimiter,
        } => Diagnostic::error("E0202", format!("unclosed `{delimiter}`"))
            .at(span, "expected the closing delimiter before this")
            .with_secondary(sp(open.clone()), "opened here"),
        SimpleReason::Custom(msg) => Diagnostic::error("E0203", msg.clone()).at(span, "here"),
        SimpleReason::Unexpected => {
            let mut expected: Vec<String> = e
                .expected()
                .map(|t| match t {
                    Some(t) => format!("`{t}`"),
                    None => "end of input".to_string(),
                })
                .collect();
            expected.sort();
            expected.dedup();
            let found = match e.found() {
                Some(t) => format!("`{t}`"),
                None => "end of input".to_string(),
            };
            let mut d = Diagnostic::error("E0201", format!("unexpected {found} in {what}"))
                .at(span, format!("unexpected {found}"));
            if !expected.is_empty() {
                let list = if expected.len() > 10 {
                    format!("{}, …", expected[..10].join(", "))
                } else {
                    expected.join(", ")
                };
                d = d.with_note(format!("expected one of: {list}"));
            }
            d
        }
    }
}

/// Runs a chumsky parser on a token slice that must be consumed entirely.
fn run<T>(
    parser: impl Parser<Token, T, Error = PErr>,
    tokens: &[(Token, Span)],
    eoi: usize,
    what: &str,
) -> Result<T, Diagnostic> {
    token_nesting(tokens, what)?;
    let stream = Stream::from_iter(eoi..eoi, tokens.iter().map(|(t, s)| (t.clone(), s.range())));
    parser.then_ignore(end()).parse(stream).map_err(|errs| {
        // Report the first error of an item: later ones are usually consequences.
        errs.into_iter()
            .next()
            .map(|e| to_diag(e, what))
            .unwrap_or_else(|| Diagnostic::error("E0201", format!("cannot parse {what}")))
    })
}

/// Byte offsets of line starts, to tell which line a token is on.
struct Lines(Vec<usize>);

impl Lines {
    fn new(source: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(source.match_indices('\n').map(|(i, _)| i + 1));
        Lines(starts)
    }

    fn line_of(&self, offset: usize) -> usize {
        match self.0.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        }
    }
}

/// Parses a whole source file.
pub fn parse_file(source: &str) -> (File, Vec<Diagnostic>) {
    let (tokens, mut diags) = lex(source);
    let lines = Lines::new(source);
    let mut file = File::default();

    // Cut into items at item keywords.
    let mut chunks: Vec<&[(Token, Span)]> = Vec::new();
    let mut start = 0;
    for (k, (tok, span)) in tokens.iter().enumerate() {
        if (tok.starts_item()
            || is_rule_keyword(source, tok, *span)
            || is_sparse_keyword(source, tok, *span))
            && k > start
        {
            chunks.push(&tokens[start..k]);
            start = k;
        }
    }
    if start < tokens.len() {
        chunks.push(&tokens[start..]);
    }

    // Parsers are built once: building chumsky combinators costs more than running
    // them on a typical item.
    let expr_p = expr_parser().boxed();
    let pred_p = pred_parser(index_parser()).boxed();
    let index_p = index_parser().boxed();
    for chunk in chunks {
        let first = &chunk[0];
        let end = chunk.last().map(|(_, s)| s.end).unwrap_or(first.1.end);
        let whole = first.1.to(Span::new(end, end));
        let result = match first.0 {
            Token::Size => run(
                just(Token::Size).ignore_then(ident().separated_by(just(Token::Comma)).at_least(1)),
                chunk,
                end,
                "a size declaration",
            )
            .map(|names| Item::Size(names, whole)),
            Token::Assume => run(
                just(Token::Assume).ignore_then(pred_p.clone()),
                chunk,
                end,
                "an assumption",
            )
            .and_then(|p| {
                check_depth(Tree::P(&p), "an assumption")?;
                Ok(Item::Assume(p, whole))
            }),
            Token::Input => run(
                just(Token::Input)
                    .ignore_then(ident())
                    .then_ignore(just(Token::Colon))
                    .then(
                        select! { Token::Ident(s) if s == "int" => () }
                            .map_with_span(|_, span| sp(span))
                            .or_not(),
                    )
                    .then(
                        index_p
                            .clone()
                            .separated_by(just(Token::Comma))
                            .delimited_by(just(Token::LBracket), just(Token::RBracket)),
                    )
                    .then({
                        // `layout (M, K):(1, M)`, or for one dimension `layout n:1`.
                        let tuple = index_p
                            .clone()
                            .separated_by(just(Token::Comma))
                            .at_least(1)
                            .delimited_by(just(Token::LParen), just(Token::RParen))
                            .or(index_p.clone().map(|e| vec![e]));
                        select! { Token::Ident(s) if s == "layout" => () }
                            .ignore_then(tuple.clone())
                            .then_ignore(just(Token::Colon))
                            .then(tuple)
                            .map_with_span(|(extents, strides), span| LayoutAst {
                                extents,
                                strides,
                                span: sp(span),
                            })
                            .or_not()
                    })
                    .then(
                        just(Token::In)
                            .ignore_then(index_p.clone())
                            .then_ignore(just(Token::DotDot))
                            .then(index_p.clone())
                            .or_not(),
                    )
                    .then(
                        select! { Token::Ident(s) if s == "sorted" => () }
                            .map_with_span(|_, span| sp(span))
                            .or_not(),
                    ),
                chunk,
                end,
                "an input declaration",
            )
            .and_then(|(((((name, int_span), shape), layout), range), sorted)| {
                let layout_dims = layout
                    .iter()
                    .flat_map(|l| l.extents.iter().chain(&l.strides));
                for d in shape
                    .iter()
                    .chain(range.iter().flat_map(|(a, b)| [a, b]))
                    .chain(layout_dims)
                {
                    check_depth(Tree::I(d), "an input declaration")?;
                }
                // `in` and `sorted` without `int` are refused by resolution, which can
                // say why; the parser keeps them.
                let index_array = match (int_span, &range, sorted) {
                    (None, None, None) => None,
                    (int_span, _, _) => Some(IndexArrayAst {
                        int_span: int_span.unwrap_or(name.span),
                        range,
                        sorted,
                    }),
                };
                Ok(Item::Input {
                    name,
                    shape,
                    index_array,
                    layout,
                    span: whole,
                })
            }),
            Token::Def => run(
                just(Token::Def)
                    .ignore_then(ident())
                    .then_ignore(just(Token::Eq))
                    .then(expr_p.clone()),
                chunk,
                end,
                "a definition",
            )
            .and_then(|(name, body)| {
                check_depth(Tree::E(&body), "a definition")?;
                Ok(Item::Def {
                    name,
                    body,
                    span: whole,
                })
            }),
            ref t if is_sparse_keyword(source, t, first.1) => run(
                select! { Token::Ident(s) if s == "sparse" => () }
                    .ignore_then(ident())
                    .then_ignore(just(Token::Colon))
                    .then(
                        index_p
                            .clone()
                            .separated_by(just(Token::Comma))
                            .delimited_by(just(Token::LBracket), just(Token::RBracket)),
                    )
                    .then_ignore(select! { Token::Ident(s) if s == "as" => () })
                    .then(
                        ident()
                            .then(
                                ident()
                                    .separated_by(just(Token::Comma))
                                    .delimited_by(just(Token::LParen), just(Token::RParen)),
                            )
                            .map(|(format, arrays)| SparseStorage { format, arrays })
                            .separated_by(just(Token::Comma))
                            .at_least(1),
                    ),
                chunk,
                end,
                "a sparse matrix declaration (`sparse A : [n, m] as csr(pos, crd, vals)`)",
            )
            .and_then(|((name, shape), storages)| {
                for d in &shape {
                    check_depth(Tree::I(d), "a sparse matrix declaration")?;
                }
                Ok(Item::Sparse {
                    name,
                    shape,
                    storages,
                    span: whole,
                })
            }),
            ref t if is_rule_keyword(source, t, first.1) => {
                rule_item(source, chunk, whole, &lines).map(Item::Rule)
            }
            Token::Derive => parse_derive(chunk, end, &lines, &mut diags).map(|(name, from, steps)| {
                Item::Derive {
                    name,
                    from,
                    steps,
                    span: whole,
                }
            }),
            _ => Err(Diagnostic::error(
                "E0204",
                format!("expected an item, found `{}`", first.0),
            )
            .at(
                whole,
                "not inside a declaration",
            )
            .with_help("a program is a sequence of `size`, `assume`, `input`, `sparse`, `def`, `derive` and `rule` items")),
        };
        match result {
            Ok(item) => file.items.push(item),
            Err(d) => {
                if matches!(first.0, Token::Def | Token::Derive)
                    && let Some((Token::Ident(name), _)) = chunk.get(1)
                {
                    file.broken.push(name.clone());
                }
                diags.push(d);
            }
        }
    }
    check_inlined_depth(&file, &mut diags);
    (file, diags)
}

/// `rule` starts an item only at the start of a line, so that `rule` stays an ordinary
/// name everywhere else (programs written before user rules keep their meaning).
fn is_rule_keyword(source: &str, tok: &Token, span: Span) -> bool {
    matches!(tok, Token::Ident(name) if name == "rule")
        && (span.start == 0 || source.as_bytes().get(span.start - 1) == Some(&b'\n'))
}

/// `sparse` at the start of a line begins a sparse matrix declaration (it is not a
/// keyword elsewhere: a binder may be called `sparse`).
fn is_sparse_keyword(source: &str, tok: &Token, span: Span) -> bool {
    matches!(tok, Token::Ident(name) if name == "sparse")
        && (span.start == 0 || source.as_bytes().get(span.start - 1) == Some(&b'\n'))
}

/// A `rule NAME: …` item, kept as text from the name to the item's last token (the
/// rewrite crate's rule loader parses it, with spans shifted into this file).
fn rule_item(
    source: &str,
    chunk: &[(Token, Span)],
    whole: Span,
    lines: &Lines,
) -> Result<RuleItem, Diagnostic> {
    let name = match chunk.get(1) {
        Some((Token::Ident(n), span)) => Ident {
            name: n.clone(),
            span: *span,
        },
        other => {
            let at = other.map_or(whole, |(_, s)| *s);
            return Err(
                Diagnostic::error("E0705", "a rule header is `rule NAME: LHS => RHS`")
                    .at(at, "expected the rule's name")
                    .with_help("rule names are letters, digits and `_`"),
            );
        }
    };
    let line = lines.line_of(whole.start);
    // The equation comment is the line just above the header, as in rule files.
    let doc = line
        .checked_sub(1)
        .and_then(|prev| {
            let start = lines.0[prev];
            source[start..lines.0[line]].lines().next()
        })
        .map(str::trim_end)
        .filter(|l| l.starts_with('#'))
        .map(str::to_string);
    Ok(RuleItem {
        text: source[name.span.start..whole.end].to_string(),
        text_offset: name.span.start,
        line: line + 1,
        doc,
        name,
        span: whole,
    })
}

/// `derive NAME from BASE { steps }`.
fn parse_derive(
    chunk: &[(Token, Span)],
    end: usize,
    lines: &Lines,
    diags: &mut Vec<Diagnostic>,
) -> Result<(Ident, Ident, Vec<Step>), Diagnostic> {
    let header = just(Token::Derive)
        .ignore_then(ident())
        .then_ignore(just(Token::From))
        .then(ident())
        .then_ignore(just(Token::LBrace));
    if chunk.len() < 5 {
        // Let chumsky produce the precise "expected …" message.
        return run(header.map(|_| ()), chunk, end, "a derivation").and_then(|_| {
            Err(Diagnostic::error("E0202", "unclosed `{`")
                .at(Span::new(end, end), "expected `}` to close the derivation"))
        });
    }
    let (name, from) = run(header, &chunk[..5], chunk[4].1.end, "a derivation")?;
    let open = chunk[4].1;
    let body = match chunk.last() {
        Some((Token::RBrace, _)) => &chunk[5..chunk.len() - 1],
        _ => {
            return Err(Diagnostic::error("E0202", "unclosed `{`")
                .at(Span::new(end, end), "expected `}` to close the derivation")
                .with_secondary(open, "opened here"));
        }
    };
    let (out, step_diags) = steps_from_tokens(body, lines, lines.line_of(open.start));
    diags.extend(step_diags);
    Ok((name, from, out))
}

/// Splits tokens into steps at line breaks outside brackets and at `;`, and parses each.
fn steps_from_tokens(
    body: &[(Token, Span)],
    lines: &Lines,
    first_line: usize,
) -> (Vec<Step>, Vec<Diagnostic>) {
    let mut steps = Vec::new();
    let mut depth = 0i32;
    let mut current: Vec<(Token, Span)> = Vec::new();
    let mut last_line = first_line;
    for (tok, span) in body {
        let line = lines.line_of(span.start);
        if depth <= 0 && line != last_line && !current.is_empty() {
            steps.push(std::mem::take(&mut current));
        }
        last_line = lines.line_of(span.end.saturating_sub(1).max(span.start));
        match tok {
            Token::Semi if depth <= 0 => {
                if !current.is_empty() {
                    steps.push(std::mem::take(&mut current));
                }
                continue;
            }
            Token::LParen | Token::LBracket | Token::LBrace => depth += 1,
            Token::RParen | Token::RBracket | Token::RBrace => depth -= 1,
            _ => {}
        }
        current.push((tok.clone(), *span));
    }
    if !current.is_empty() {
        steps.push(current);
    }
    let mut out = Vec::new();
    let mut diags = Vec::new();
    for step in steps {
        let parsed = match step.first() {
            Some((Token::Ident(w), _)) if w == "specialize" => parse_specialize(&step, lines),
            _ => parse_step(&step),
        };
        match parsed {
            Ok(s) => out.push(s),
            Err(d) => diags.push(d),
        }
    }
    (out, diags)
}

/// `specialize COND { steps }`: the condition up to the block, then the block's steps
/// (split as a derivation's are).
fn parse_specialize(tokens: &[(Token, Span)], lines: &Lines) -> Result<Step, Diagnostic> {
    let span = step_span(tokens);
    let head = tokens[0].1;
    let usage = || {
        Diagnostic::error(
            "E0206",
            "`specialize` needs a condition and a block of steps",
        )
        .at(head, "here")
        .with_help(crate::steps::lookup("specialize").map_or("", |s| s.usage))
    };
    let Some(open) = tokens.iter().position(|(t, _)| *t == Token::LBrace) else {
        return Err(usage());
    };
    if open == 1 {
        return Err(usage());
    }
    let close = match tokens.last() {
        Some((Token::RBrace, _)) if tokens.len() > open + 1 => tokens.len() - 1,
        _ => {
            return Err(Diagnostic::error("E0202", "unclosed `{`")
                .at(span, "expected `}` to close the block of `specialize`")
                .with_secondary(tokens[open].1, "opened here"));
        }
    };
    let cond_tokens = &tokens[1..open];
    let cond = run(
        pred_parser(index_parser()),
        cond_tokens,
        tokens[open].1.start,
        "the condition of `specialize`",
    )?;
    check_depth(Tree::P(&cond), "the condition of `specialize`")?;
    let (steps, mut diags) = steps_from_tokens(
        &tokens[open + 1..close],
        lines,
        lines.line_of(tokens[open].1.start),
    );
    if !diags.is_empty() {
        return Err(diags.remove(0));
    }
    Ok(Step {
        kind: StepKind::Specialize { cond, steps },
        span,
    })
}

/// Parses derivation steps typed outside a file (the REPL): one per line or separated
/// by `;`.
pub fn parse_steps(source: &str) -> (Vec<Step>, Vec<Diagnostic>) {
    let (tokens, mut diags) = lex(source);
    let lines = Lines::new(source);
    let (steps, step_diags) = steps_from_tokens(&tokens, &lines, 0);
    diags.extend(step_diags);
    (steps, diags)
}

/// Whether brackets are still open at the end of `source` (the REPL then asks for
/// another line).
pub fn is_incomplete(source: &str) -> bool {
    let (tokens, _) = lex(source);
    let mut depth = 0i32;
    for (t, _) in &tokens {
        match t {
            Token::LParen | Token::LBracket | Token::LBrace => depth += 1,
            Token::RParen | Token::RBracket | Token::RBrace => depth -= 1,
            _ => {}
        }
    }
    depth > 0
}

fn step_span(tokens: &[(Token, Span)]) -> Span {
    let first = tokens.first().map(|t| t.1).unwrap_or_default();
    let last = tokens.last().map(|t| t.1).unwrap_or_default();
    first.to(last)
}

/// Splits at commas outside brackets.
fn split_commas(tokens: &[(Token, Span)]) -> Vec<&[(Token, Span)]> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (k, (tok, _)) in tokens.iter().enumerate() {
        match tok {
            Token::LParen | Token::LBracket => depth += 1,
            Token::RParen | Token::RBracket => depth -= 1,
            Token::Comma if depth == 0 => {
                out.push(&tokens[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    out.push(&tokens[start..]);
    out
}

/// One derivation step (tokens of one line).
fn parse_step(tokens: &[(Token, Span)]) -> Result<Step, Diagnostic> {
    let span = step_span(tokens);
    let (head, head_span) = &tokens[0];
    let rest = &tokens[1..];
    let word = match head {
        Token::Ident(w) => w.as_str(),
        Token::RwBack => "rw<-",
        Token::Amount(AmountOp::Split) => "split",
        Token::Input => "input",
        other => {
            return Err(Diagnostic::error(
                "E0205",
                format!("expected a derivation step, found `{other}`"),
            )
            .at(*head_span, "not a step")
            .with_help(crate::steps::not_a_step_help()));
        }
    };
    let name_arg = |what: &str| -> Result<Ident, Diagnostic> {
        match rest {
            [(Token::Ident(n), s)] => Ok(Ident {
                name: n.clone(),
                span: *s,
            }),
            [] => Err(Diagnostic::error("E0206", format!("`{word}` needs {what}"))
                .at(*head_span, format!("expected {what} after this"))),
            [(_, s), ..] => Err(Diagnostic::error(
                "E0206",
                format!("`{word}` takes exactly one name ({what})"),
            )
            .at(step_span(rest).to(*s), "unexpected here")),
        }
    };
    let no_args = || -> Result<(), Diagnostic> {
        if rest.is_empty() {
            Ok(())
        } else {
            Err(
                Diagnostic::error("E0206", format!("`{word}` takes no arguments"))
                    .at(step_span(rest), "unexpected arguments"),
            )
        }
    };
    // The step table decides which words have a syntax of their own; every other word
    // starts a directive, which the engine checks (and refuses if it does not know it).
    let own_syntax = crate::steps::has_own_syntax(word);
    let kind = match word {
        _ if !own_syntax => parse_directive(word, *head_span, rest)?,
        "rw" | "rw<-" => parse_rewrite(word == "rw<-", *head_span, rest)?,
        "unfold" => match rest {
            [
                (Token::Ident(n), s),
                (Token::Ident(kw), _),
                (Token::Ident(f), fs),
            ] if kw == "as" => StepKind::Unfold {
                name: Ident {
                    name: n.clone(),
                    span: *s,
                },
                storage: Some(Ident {
                    name: f.clone(),
                    span: *fs,
                }),
            },
            _ => StepKind::Unfold {
                name: name_arg("a definition name")?,
                storage: None,
            },
        },
        "inline" => StepKind::Inline(name_arg("a let-bound name")?),
        "simpl" => {
            no_args()?;
            StepKind::Simpl
        }
        "window" => parse_window(*head_span, rest)?,
        "simpl_guard" => {
            no_args()?;
            StepKind::SimplGuard
        }
        "check" => {
            no_args()?;
            StepKind::Check
        }
        other => unreachable!("`{other}` has a syntax of its own in the step table, and no parser"),
    };
    Ok(Step { kind, span })
}

/// A directive step: its name and its words, integers and commas.
fn parse_directive(
    word: &str,
    head_span: Span,
    rest: &[(Token, Span)],
) -> Result<StepKind, Diagnostic> {
    let mut args = Vec::new();
    for (tok, s) in rest {
        args.push(match tok {
            Token::Ident(w) | Token::Qualified(w) => DirectiveArg::Word(Ident {
                name: w.clone(),
                span: *s,
            }),
            Token::Int(v) => match v.parse::<i64>() {
                Ok(v) => DirectiveArg::Int(v, *s),
                Err(_) => {
                    return Err(Diagnostic::error(
                        "E0203",
                        format!("integer `{v}` does not fit in 64 bits"),
                    )
                    .at(*s, "too large"));
                }
            },
            Token::Comma => DirectiveArg::Comma(*s),
            other => {
                return Err(Diagnostic::error(
                    "E0207",
                    format!("unexpected `{other}` in the arguments of `{word}`"),
                )
                .at(*s, "directive arguments are names, integers and commas"));
            }
        });
    }
    Ok(StepKind::Directive {
        name: Ident {
            name: word.to_string(),
            span: head_span,
        },
        args,
    })
}

fn parse_rewrite(
    backward: bool,
    head_span: Span,
    rest: &[(Token, Span)],
) -> Result<StepKind, Diagnostic> {
    let (rule, mut k) = match rest.first() {
        Some((Token::Ident(n), s)) => (
            Ident {
                name: n.clone(),
                span: *s,
            },
            1,
        ),
        _ => {
            return Err(
                Diagnostic::error("E0206", "a rewrite step needs a rule name")
                    .at(head_span, "expected a rule name after this")
                    .with_help("for example `rw get_gen` or `rw<- tile_id with k := 8`"),
            );
        }
    };
    let mut site = SiteSelector::default();
    let mut with = Vec::new();
    while k < rest.len() {
        let (tok, s) = &rest[k];
        match tok {
            Token::Ident(w) if w == "at" => {
                match rest.get(k + 1) {
                    Some((Token::Int(v), vs)) => match v.parse::<u64>() {
                        Ok(n) if n >= 1 => site.at = Some((n, s.to(*vs))),
                        _ => {
                            return Err(Diagnostic::error(
                                "E0208",
                                "`at` takes a match number from 1",
                            )
                            .at(*vs, "matches are numbered 1, 2, … in pre-order"));
                        }
                    },
                    _ => {
                        return Err(Diagnostic::error("E0208", "`at` needs a match number")
                            .at(*s, "expected a number after this"));
                    }
                }
                k += 2;
            }
            Token::Ident(w) if w == "around" => {
                let close = matching_paren(rest, k + 1).ok_or_else(|| {
                    Diagnostic::error("E0208", "`around` needs a parenthesized pattern")
                        .at(*s, "expected `(PATTERN)` after this")
                })?;
                let inner = &rest[k + 2..close];
                let pattern = run(expr_parser(), inner, rest[close].1.start, "a pattern")?;
                check_depth(Tree::E(&pattern), "a pattern")?;
                site.around = Some(Box::new(pattern));
                k = close + 1;
            }
            Token::In => {
                let close = rest[k + 1..]
                    .iter()
                    .position(|(t, _)| *t == Token::RBracket)
                    .map(|p| p + k + 1);
                let ok_open = matches!(rest.get(k + 1), Some((Token::LBracket, _)));
                let Some(close) = close.filter(|_| ok_open) else {
                    return Err(
                        Diagnostic::error("E0208", "`in` needs a path like `[0, 1, 0]`")
                            .at(*s, "expected `[…]` after this"),
                    );
                };
                let mut path = Vec::new();
                for part in split_commas(&rest[k + 2..close]) {
                    match part {
                        [] if path.is_empty() && close == k + 2 => {}
                        [(Token::Int(v), vs)] => path.push(v.parse::<u64>().map_err(|_| {
                            Diagnostic::error("E0208", "a path step is a child number")
                                .at(*vs, "too large")
                        })?),
                        _ => {
                            return Err(Diagnostic::error(
                                "E0208",
                                "a path is a list of child numbers",
                            )
                            .at(step_span(part).to(*s), "expected a number"));
                        }
                    }
                }
                site.path = Some((path, s.to(rest[close].1)));
                k = close + 1;
            }
            Token::Ident(w) if w == "with" => {
                let end = rest[k + 1..]
                    .iter()
                    .position(|(t, _)| {
                        matches!(t, Token::In)
                            || matches!(t, Token::Ident(w) if w == "at" || w == "around")
                    })
                    .map(|p| p + k + 1)
                    .unwrap_or(rest.len());
                for part in split_commas(&rest[k + 1..end]) {
                    match part {
                        [(Token::Ident(n), ns), (Token::ColonEq, cs), value @ ..]
                            if !value.is_empty() =>
                        {
                            let v = run(
                                index_parser(),
                                value,
                                value.last().map(|t| t.1.end).unwrap_or(cs.end),
                                "an instantiation",
                            )?;
                            check_depth(Tree::I(&v), "an instantiation")?;
                            with.push((
                                Ident {
                                    name: n.clone(),
                                    span: *ns,
                                },
                                v,
                            ));
                        }
                        _ => {
                            let at = if part.is_empty() { *s } else { step_span(part) };
                            return Err(Diagnostic::error(
                                "E0208",
                                "`with` takes `name := value` pairs",
                            )
                            .at(at, "expected `name := value`")
                            .with_help("for example `with k := 8, m := n`"));
                        }
                    }
                }
                k = end;
            }
            other => {
                return Err(Diagnostic::error(
                    "E0208",
                    format!("unexpected `{other}` in a rewrite step"),
                )
                .at(*s, "unknown option")
                .with_help(
                    "options are `at N`, `around (PATTERN)`, `in [PATH]` and `with NAME := VALUE`",
                ));
            }
        }
    }
    Ok(StepKind::Rewrite {
        backward,
        rule,
        site,
        with,
    })
}

/// `window x in LO..HI`, or `window x in LO1..HI1, LO2..HI2, …` (one range per leading
/// dimension, separated by commas outside brackets).
fn parse_window(head_span: Span, rest: &[(Token, Span)]) -> Result<StepKind, Diagnostic> {
    let usage = || {
        Diagnostic::error(
            "E0209",
            "`window` is `window NAME in LO..HI[, LO2..HI2, …]`",
        )
        .at(head_span.to(step_span(rest)), "malformed window")
        .with_help("for example `window bx in yo * 64 - 1..yo * 64 + 65, xo * 64..xo * 64 + 64`")
    };
    let [(Token::Ident(name), name_span), (Token::In, _), ranges @ ..] = rest else {
        return Err(usage());
    };
    // Split the ranges at top-level commas.
    let mut parts: Vec<&[(Token, Span)]> = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (k, (t, _)) in ranges.iter().enumerate() {
        match t {
            Token::LParen | Token::LBracket => depth += 1,
            Token::RParen | Token::RBracket => depth -= 1,
            Token::Comma if depth == 0 => {
                parts.push(&ranges[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&ranges[start..]);
    let mut dims = Vec::new();
    for range in parts {
        let mut depth = 0i32;
        let mut split = None;
        for (k, (t, _)) in range.iter().enumerate() {
            match t {
                Token::LParen | Token::LBracket => depth += 1,
                Token::RParen | Token::RBracket => depth -= 1,
                Token::DotDot if depth == 0 => {
                    split = Some(k);
                    break;
                }
                _ => {}
            }
        }
        let Some(k) = split.filter(|k| *k > 0 && *k + 1 < range.len()) else {
            return Err(usage());
        };
        let lo = run(
            index_parser(),
            &range[..k],
            range[k].1.start,
            "a window bound",
        )?;
        let hi = run(
            index_parser(),
            &range[k + 1..],
            range.last().map(|t| t.1.end).unwrap_or(0),
            "a window bound",
        )?;
        check_depth(Tree::I(&lo), "a window bound")?;
        check_depth(Tree::I(&hi), "a window bound")?;
        dims.push((lo, hi));
    }
    Ok(StepKind::Window {
        var: Ident {
            name: name.clone(),
            span: *name_span,
        },
        dims,
    })
}

/// Index of the `)` matching the `(` at `open`.
fn matching_paren(tokens: &[(Token, Span)], open: usize) -> Option<usize> {
    if !matches!(tokens.get(open), Some((Token::LParen, _))) {
        return None;
    }
    let mut depth = 0i32;
    for (k, (tok, _)) in tokens.iter().enumerate().skip(open) {
        match tok {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

fn parse_standalone<T>(
    source: &str,
    parser: impl Parser<Token, T, Error = PErr>,
    what: &str,
    tree: for<'t> fn(&'t T) -> Tree<'t>,
) -> Result<T, Vec<Diagnostic>> {
    let (tokens, diags) = lex(source);
    if !diags.is_empty() {
        return Err(diags);
    }
    let out = run(parser, &tokens, source.len(), what).map_err(|d| vec![d])?;
    check_depth(tree(&out), what).map_err(|d| vec![d])?;
    Ok(out)
}

/// Parses a standalone predicate (command-line facts, tests). Every name is a free
/// integer variable; metavariables are rejected.
pub fn parse_pred_str(source: &str) -> Result<Pred, Vec<Diagnostic>> {
    let p = parse_standalone(source, pred_parser(index_parser()), "a predicate", |t| {
        Tree::P(t)
    })?;
    crate::resolve::lower_pred_free(&p).map_err(|d| vec![d])
}

/// Parses a standalone index expression; names are free integer variables.
pub fn parse_index_str(source: &str) -> Result<IndexExpr, Vec<Diagnostic>> {
    let e = parse_standalone(source, index_parser(), "an index expression", |t| {
        Tree::I(t)
    })?;
    crate::resolve::lower_index_free(&e).map_err(|d| vec![d])
}

/// Parses a standalone index expression into the surface AST (keeps spans).
pub fn parse_index_ast(source: &str) -> Result<SIndex, Vec<Diagnostic>> {
    parse_standalone(source, index_parser(), "an index expression", |t| {
        Tree::I(t)
    })
}

/// Parses a standalone expression in surface syntax (patterns, tests).
pub fn parse_expr_str(source: &str) -> Result<SExpr, Vec<Diagnostic>> {
    parse_standalone(source, expr_parser(), "an expression", |t| Tree::E(t))
}

// ---------------------------------------------------------------------------------------
// Nesting limit
// ---------------------------------------------------------------------------------------

/// The deepest nesting the front end accepts, in levels of the syntax tree (each
/// operator, binder, `let`, guard, access index, parenthesis and index or predicate
/// operator is one level; a definition's references count with the nesting of the
/// definitions they name, as if inlined).
///
/// Every later stage (resolution, shapes, the interpreter, the rewrite engine, pad
/// types, lowering, emission, the printer) walks terms recursively, so a bound on the
/// depth of the trees they are given is what keeps them from exhausting the stack. The
/// value leaves a wide margin: the CLI runs on a 256 MB stack and every stage handles
/// several times this depth on the default 8 MB main-thread stack (release and debug
/// builds; `lang/tests/limits.rs`), while the examples nest fewer than 40 levels.
pub const MAX_NESTING: usize = 256;

/// Why a term was refused: the place where the limit is crossed.
fn too_deep(span: Span, what: &str) -> Diagnostic {
    Diagnostic::error(
        "E0210",
        format!("{what} is nested too deeply (more than {MAX_NESTING} levels)"),
    )
    .at(span, format!("nesting level {} starts here", MAX_NESTING + 1))
    .with_note(format!(
        "ATL limits nesting to {MAX_NESTING} levels so that no stage of the compiler can run out of stack"
    ))
    .with_help("name intermediate results with separate `def`s, or write long sums and chains as a `sum`/`gen` over an index")
}

/// A cheap bound on the parser's own recursion, computed from the tokens before the
/// parser runs: open brackets, the binder heads (`gen`, `sum`, `max`, `let`) and guards
/// (`] *`) inside them, and runs of prefix `-`/`!`. It over-approximates the tree depth
/// of bracketed and binder nesting (the exact depth is checked on the tree afterwards),
/// and stops pathological inputs before the parser spends time on them.
fn token_nesting(tokens: &[(Token, Span)], what: &str) -> Result<(), Diagnostic> {
    let mut depth = 0usize;
    let mut saved: Vec<usize> = Vec::new();
    let mut prefix_run = 0usize;
    let mut prev_close_bracket = false;
    for (k, (tok, span)) in tokens.iter().enumerate() {
        match tok {
            Token::Minus | Token::Bang => prefix_run += 1,
            _ => prefix_run = 0,
        }
        match tok {
            Token::LParen | Token::LBracket | Token::LBrace => {
                saved.push(depth);
                depth += 1;
            }
            Token::RParen | Token::RBracket | Token::RBrace => {
                // Unbalanced closers are the parser's to report.
                depth = saved.pop().unwrap_or(0);
            }
            Token::Gen | Token::Sum | Token::Let => depth += 1,
            // A max-reduction's head (the call `max(…)` counts at its bracket).
            Token::Max if !matches!(tokens.get(k + 1), Some((Token::LParen, _))) => depth += 1,
            Token::Star if prev_close_bracket => depth += 1,
            _ => {}
        }
        prev_close_bracket = matches!(tok, Token::RBracket);
        if depth + prefix_run > MAX_NESTING {
            return Err(too_deep(*span, what));
        }
    }
    Ok(())
}

/// A node of the surface syntax, for the iterative depth walk.
#[derive(Clone, Copy)]
enum Tree<'a> {
    E(&'a SExpr),
    I(&'a SIndex),
    P(&'a SPred),
}

/// The depth of a surface tree and, if it exceeds [`MAX_NESTING`], the span of a node
/// where the limit is crossed. `name_depth` gives the depth that a name stands for (a
/// reference to a definition counts as its body; other names as 0). Iterative, so that
/// it is safe on any input.
fn tree_depth(root: Tree<'_>, name_depth: &dyn Fn(&str) -> usize) -> Result<usize, Span> {
    let mut stack = vec![(root, 1usize)];
    let mut max = 0;
    while let Some((node, d)) = stack.pop() {
        let span = match node {
            Tree::E(e) => e.span,
            Tree::I(i) => i.span,
            Tree::P(p) => p.span,
        };
        if d > MAX_NESTING {
            return Err(span);
        }
        let mut leaf = d;
        match node {
            Tree::E(e) => match &e.kind {
                // An inlined definition replaces the name: its root takes the name's level.
                SExprKind::Name(n) => leaf = (d + name_depth(n)).saturating_sub(1).max(d),
                SExprKind::Num(_) | SExprKind::Meta(_) | SExprKind::Error => {}
                SExprKind::Paren(a)
                | SExprKind::Neg(a)
                | SExprKind::Transpose(a)
                | SExprKind::Flatten(a) => stack.push((Tree::E(a), d + 1)),
                SExprKind::Bind { binders, body, .. } => {
                    // Resolution nests one binder per level.
                    for (k, b) in binders.iter().enumerate() {
                        match &b.range {
                            SRange::Below(hi) => stack.push((Tree::I(hi), d + k + 1)),
                            SRange::Between(lo, hi) => {
                                stack.push((Tree::I(lo), d + k + 1));
                                stack.push((Tree::I(hi), d + k + 1));
                            }
                        }
                    }
                    stack.push((Tree::E(body), d + binders.len().max(1)));
                }
                SExprKind::Guard { pred, body } => {
                    stack.push((Tree::P(pred), d + 1));
                    stack.push((Tree::E(body), d + 1));
                }
                SExprKind::Let { value, body, .. } => {
                    stack.push((Tree::E(value), d + 1));
                    stack.push((Tree::E(body), d + 1));
                }
                SExprKind::Access { tensor, indices } => {
                    // `e[i, j]` is `e[i][j]`: one level per index.
                    for (k, i) in indices.iter().enumerate() {
                        stack.push((Tree::I(i), d + indices.len() - k));
                    }
                    stack.push((Tree::E(tensor), d + indices.len().max(1)));
                }
                SExprKind::Binary { lhs: a, rhs: b, .. } | SExprKind::Concat(a, b) => {
                    stack.push((Tree::E(a), d + 1));
                    stack.push((Tree::E(b), d + 1));
                }
                SExprKind::Call { args, .. } => {
                    for a in args {
                        stack.push((Tree::E(a), d + 1));
                    }
                }
                SExprKind::Amount { amount, arg, .. } => {
                    stack.push((Tree::I(amount), d + 1));
                    stack.push((Tree::E(arg), d + 1));
                }
                SExprKind::Subst { body, value, .. } => {
                    stack.push((Tree::I(value), d + 1));
                    stack.push((Tree::E(body), d + 1));
                }
                SExprKind::Coord(index) => stack.push((Tree::I(index), d + 1)),
            },
            Tree::I(i) => match &i.kind {
                SIndexKind::Int(_) | SIndexKind::Name(_) | SIndexKind::Meta(_) => {}
                SIndexKind::Neg(a) | SIndexKind::Paren(a) | SIndexKind::Load(_, a) => {
                    stack.push((Tree::I(a), d + 1))
                }
                SIndexKind::Bin(_, a, b) => {
                    stack.push((Tree::I(a), d + 1));
                    stack.push((Tree::I(b), d + 1));
                }
            },
            Tree::P(p) => match &p.kind {
                SPredKind::Bool(_) | SPredKind::Meta(_) => {}
                SPredKind::Cmp(_, a, b) => {
                    stack.push((Tree::I(a), d + 1));
                    stack.push((Tree::I(b), d + 1));
                }
                SPredKind::And(a, b) | SPredKind::Or(a, b) => {
                    stack.push((Tree::P(a), d + 1));
                    stack.push((Tree::P(b), d + 1));
                }
                SPredKind::Not(a) => stack.push((Tree::P(a), d + 1)),
            },
        }
        if leaf > MAX_NESTING {
            return Err(span);
        }
        max = max.max(leaf);
    }
    Ok(max)
}

/// Checks a tree against [`MAX_NESTING`] (names count 0).
fn check_depth(root: Tree<'_>, what: &str) -> Result<(), Diagnostic> {
    tree_depth(root, &|_| 0)
        .map(|_| ())
        .map_err(|span| too_deep(span, what))
}

/// The depth of every definition of a file with references to definitions counted as
/// their bodies (the nesting after inlining, which lowering and `unfold` produce), in
/// order. A definition whose inlined depth crosses the limit is reported (E0211) at the
/// reference where it does; definitions that use it are not reported again.
fn check_inlined_depth(file: &File, diags: &mut Vec<Diagnostic>) {
    use std::cell::Cell;
    use std::collections::{HashMap, HashSet};
    let mut depth: HashMap<&str, usize> = HashMap::new();
    let mut broken: HashSet<&str> = HashSet::new();
    for item in &file.items {
        match item {
            Item::Def { name, body, .. } => {
                let uses_broken = Cell::new(false);
                let result = {
                    let lookup = |n: &str| {
                        uses_broken.set(uses_broken.get() || broken.contains(n));
                        depth.get(n).copied().unwrap_or(0)
                    };
                    tree_depth(Tree::E(body), &lookup)
                };
                match result {
                    Ok(d) if !uses_broken.get() => {
                        depth.insert(&name.name, d);
                    }
                    Ok(_) => {
                        broken.insert(&name.name);
                    }
                    Err(span) => {
                        broken.insert(&name.name);
                        if !uses_broken.get() {
                            diags.push(
                                Diagnostic::error(
                                    "E0211",
                                    format!(
                                        "definition `{}` is nested too deeply once the definitions it uses are inlined (more than {MAX_NESTING} levels)",
                                        name.name
                                    ),
                                )
                                .at(span, "inlining this definition here crosses the limit")
                                .with_note(format!(
                                    "lowering and `unfold` inline definitions; ATL limits nesting to {MAX_NESTING} levels so that no stage of the compiler can run out of stack"
                                ))
                                .with_help("compute a deep chain of definitions as fewer, flatter ones (a `gen` or `sum` over an index instead of one definition per step)"),
                            );
                        }
                    }
                }
            }
            Item::Derive { name, from, .. } => {
                if broken.contains(from.name.as_str()) {
                    broken.insert(&name.name);
                } else {
                    let d = depth.get(from.name.as_str()).copied().unwrap_or(0);
                    depth.insert(&name.name, d);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod window_tests {
    use super::*;

    /// One range per dimension, split at top-level commas only (`max(1, W)` keeps its
    /// comma); an empty range is malformed.
    #[test]
    fn window_takes_one_range_per_dimension() {
        let (steps, diags) = parse_steps("window bx in 0..H, max(1, W) - 1..W + 1");
        assert!(diags.is_empty(), "{diags:?}");
        let [
            Step {
                kind: StepKind::Window { var, dims },
                ..
            },
        ] = steps.as_slice()
        else {
            panic!("one window step: {steps:?}")
        };
        assert_eq!(var.name, "bx");
        let shown: Vec<String> = dims
            .iter()
            .map(|(lo, hi)| {
                format!(
                    "{}..{}",
                    crate::resolve::lower_index_free(lo).expect("index"),
                    crate::resolve::lower_index_free(hi).expect("index")
                )
            })
            .collect();
        assert_eq!(shown, ["0..H", "max(1, W) - 1..W + 1"]);
        for bad in [
            "window bx in 0..H,",
            "window bx in 0..H, W",
            "window bx in , 0..H",
        ] {
            let (_, diags) = parse_steps(bad);
            assert_eq!(
                diags.iter().map(|d| d.code).collect::<Vec<_>>(),
                ["E0209"],
                "{bad}"
            );
        }
    }
}

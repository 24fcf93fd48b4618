//! The textual loop IR round-trips (issue 19): for every kernel of every example
//! program and of random programs, and for random mutations of them that reach the
//! printer's corners (negated constants, extents that are not the buffer's, every
//! storage and annotation, odd reasons), `parse_kernel(kernel_to_text(k)) == k`; and
//! damaged texts give diagnostics with spans into the text, never a panic.

mod support;

#[path = "support/random.rs"]
mod random;

use atl_lang::index::IndexExpr;
use atl_lang::ir::BinOp;
use atl_lang::rng::SplitMix64;
use atl_loopir::ir::{Coord, Ix, IxOp, Kernel, Stmt, Storage, StoreOp, Val};
use atl_loopir::{kernel_to_text, parse_kernel};

/// Every kernel of the examples (definitions and derivations) and of the random
/// programs that check.
fn corpus() -> Vec<(String, Kernel)> {
    let mut out = Vec::new();
    for path in support::example_files() {
        for (def, kernel) in support::kernels_of(&path) {
            let name = format!("{}: `{def}`", path.file_name().unwrap().to_string_lossy());
            out.push((name, kernel));
        }
    }
    for seed in 0..200u64 {
        let source = random::program(seed);
        let (Some(checked), _) = atl_lang::check_source(&source) else {
            continue;
        };
        if let Ok(k) =
            atl_lower::lower_def(&checked.program, &checked.shapes, "p", &Default::default())
        {
            out.push((format!("random program {seed}"), k));
        }
    }
    out
}

fn round_trip(name: &str, kernel: &Kernel) -> Result<(), String> {
    let text = kernel_to_text(kernel);
    match parse_kernel(&text) {
        Ok(back) if back == *kernel => Ok(()),
        Ok(back) => Err(format!(
            "{name}: parses back to a different kernel\n{text}\nreprinted:\n{}\n{back:#?}\nwant:\n{kernel:#?}",
            kernel_to_text(&back)
        )),
        Err(d) => Err(format!("{name}: does not parse back: {d:?}\n{text}")),
    }
}

#[test]
fn every_example_and_random_kernel_round_trips() {
    let corpus = corpus();
    assert!(corpus.len() >= 150, "only {} kernels", corpus.len());
    let failures: Vec<String> = corpus
        .iter()
        .filter_map(|(name, k)| round_trip(name, k).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

// ---------------------------------------------------------------------------------------
// Mutations: kernels lowering never produces, to reach every corner of the syntax.
// ---------------------------------------------------------------------------------------

fn mutate_ix(ix: &mut Ix, rng: &mut SplitMix64) {
    match rng.below(8) {
        0 => *ix = Ix::Neg(Box::new(Ix::Const(rng.range(0, 9)))),
        1 => *ix = Ix::Const(rng.range(-9, 9)),
        2 => {
            let op = *rng.pick(&[
                IxOp::Add,
                IxOp::Sub,
                IxOp::Mul,
                IxOp::DivNat,
                IxOp::ModNat,
                IxOp::FloorDiv,
                IxOp::FloorMod,
                IxOp::CeilDiv,
                IxOp::Min,
                IxOp::Max,
            ]);
            let other = if rng.chance(50) {
                Ix::Const(rng.range(-3, 3))
            } else {
                Ix::Neg(Box::new(ix.clone()))
            };
            *ix = if rng.chance(50) {
                Ix::bin(op, ix.clone(), other)
            } else {
                Ix::bin(op, other, ix.clone())
            };
        }
        3 => *ix = Ix::Neg(Box::new(ix.clone())),
        4 => *ix = Ix::Const(*rng.pick(&EXTREMES)),
        5 => {
            // Extreme literals as operands and negated: `-(-9223372036854775808)`,
            // `k - -9223372036854775808` (issue 28).
            let c = Ix::Const(*rng.pick(&EXTREMES));
            let c = if rng.chance(50) {
                Ix::Neg(Box::new(c))
            } else {
                c
            };
            *ix = if rng.chance(50) {
                Ix::bin(IxOp::Sub, ix.clone(), c)
            } else {
                Ix::bin(IxOp::Mul, c, ix.clone())
            };
        }
        _ => {}
    }
}

/// 64-bit literals at and next to the ends of the range: i64::MIN is the one whose
/// magnitude alone does not fit.
const EXTREMES: [i64; 6] = [
    i64::MIN,
    i64::MIN + 1,
    i64::MAX,
    i64::MAX - 1,
    -4611686018427387904,
    4611686018427387904,
];

fn mutate_val(v: &mut Val, rng: &mut SplitMix64) {
    match v {
        Val::Load(l) => {
            if rng.chance(30) {
                mutate_ix(&mut l.index, rng);
            }
            if rng.chance(20) {
                mutate_coords(&mut l.coords, rng);
            }
        }
        Val::Neg(a) | Val::Select(_, a) | Val::Blend(_, a) => mutate_val(a, rng),
        Val::Bin(_, a, b) => {
            mutate_val(a, rng);
            mutate_val(b, rng);
        }
        _ => {}
    }
    match rng.below(12) {
        0 => *v = Val::Neg(Box::new(Val::Lit(rng.range(0, 5) as f64 * 0.5))),
        1 => *v = Val::Lit(*rng.pick(&[-1.5, -0.0, 1e-7, 2.5e20, 3.0])),
        2 => *v = Val::Neg(Box::new(v.clone())),
        3 => {
            let op = *rng.pick(&[BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div]);
            *v = Val::Bin(op, Box::new(v.clone()), Box::new(Val::Lit(-2.0)));
        }
        4 => {
            let c = atl_loopir::ir::Cond::Or(
                Box::new(atl_loopir::ir::Cond::Cmp(
                    atl_lang::index::CmpOp::Lt,
                    Ix::Var("zz".into()),
                    Ix::Const(3),
                )),
                Box::new(atl_loopir::ir::Cond::Not(Box::new(
                    atl_loopir::ir::Cond::Bool(false),
                ))),
            );
            *v = if rng.chance(50) {
                Val::Select(c, Box::new(v.clone()))
            } else {
                Val::Bin(
                    BinOp::Mul,
                    Box::new(Val::Select(c, Box::new(v.clone()))),
                    Box::new(Val::Blend(
                        atl_loopir::ir::Cond::Bool(true),
                        Box::new(Val::Scalar("s".into())),
                    )),
                )
            };
        }
        _ => {}
    }
}

fn mutate_coords(coords: &mut [Coord], rng: &mut SplitMix64) {
    for c in coords {
        if rng.chance(50) {
            c.extent = IndexExpr::add(c.extent.clone(), IndexExpr::Const(1));
        }
        if rng.chance(30) {
            c.index = IndexExpr::Neg(Box::new(IndexExpr::Const(2)));
        }
        if rng.chance(15) {
            let e = IndexExpr::Const(*rng.pick(&EXTREMES));
            c.index = match rng.below(3) {
                0 => e,
                1 => IndexExpr::Neg(Box::new(e)),
                _ => IndexExpr::sub(c.index.clone(), e),
            };
        }
    }
}

fn mutate_stmts(stmts: &mut [Stmt], rng: &mut SplitMix64) {
    for s in stmts {
        match s {
            Stmt::For(l) => {
                if rng.chance(20) {
                    mutate_ix(&mut l.hi, rng);
                }
                l.parallel ^= rng.chance(20);
                l.vector ^= rng.chance(20);
                l.unroll ^= rng.chance(20);
                if rng.chance(15) {
                    l.hoisted_buffers.push(format!("h{}", rng.below(3)));
                }
                mutate_stmts(&mut l.body, rng);
            }
            Stmt::If {
                then_branch,
                else_branch,
                ..
            } => {
                mutate_stmts(then_branch, rng);
                mutate_stmts(else_branch, rng);
            }
            Stmt::Alloc {
                storage,
                zeroed,
                body,
                ..
            } => {
                *storage = match rng.below(4) {
                    0 => Storage::Heap,
                    1 => Storage::Stack,
                    k => Storage::Hoisted {
                        loop_var: "i".into(),
                        per_thread: k == 3,
                    },
                };
                *zeroed ^= rng.chance(30);
                mutate_stmts(body, rng);
            }
            Stmt::Decl { init, .. } => {
                if let Some(v) = init {
                    mutate_val(v, rng);
                } else if rng.chance(30) {
                    *init = Some(Val::Lit(-0.5));
                }
            }
            Stmt::SetScalar { op, value, .. } => {
                if rng.chance(30) {
                    *op = StoreOp::Assign;
                }
                mutate_val(value, rng);
            }
            Stmt::Store {
                index,
                coords,
                op,
                value,
                ..
            } => {
                if rng.chance(30) {
                    *op = match op {
                        StoreOp::Assign => StoreOp::Accumulate,
                        StoreOp::Accumulate => StoreOp::Max,
                        StoreOp::Max => StoreOp::Assign,
                    };
                }
                if rng.chance(30) {
                    mutate_ix(index, rng);
                }
                if rng.chance(30) {
                    mutate_coords(coords, rng);
                }
                mutate_val(value, rng);
            }
            Stmt::Fill { value, len, .. } => {
                *value = -1.25;
                mutate_ix(len, rng);
            }
            Stmt::Fail { array } => array.push_str("_2"),
        }
    }
}

fn mutate(kernel: &mut Kernel, rng: &mut SplitMix64) {
    for pre in &mut kernel.preconditions {
        if rng.chance(20) {
            pre.reason = "a \"quoted\" reason\\ with\na newline and `ticks` ⊞".into();
        }
        if rng.chance(20) {
            pre.cond = atl_loopir::ir::Cond::Not(Box::new(pre.cond.clone()));
        }
    }
    mutate_stmts(&mut kernel.body, rng);
}

#[test]
fn random_mutations_round_trip() {
    let corpus = corpus();
    let mut rng = SplitMix64::new(19);
    let mut failures = Vec::new();
    for round in 0..3 {
        for (name, kernel) in &corpus {
            let mut k = kernel.clone();
            mutate(&mut k, &mut rng);
            if let Err(e) = round_trip(&format!("{name} (mutation round {round})"), &k) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Damaged texts (a cut, a deleted or inserted character): the parser answers with a
/// kernel or with diagnostics whose spans lie in the text, and never panics.
#[test]
fn damaged_texts_give_diagnostics_with_spans() {
    let corpus = corpus();
    let mut rng = SplitMix64::new(1919);
    let mut errors = 0;
    for (name, kernel) in corpus.iter().take(60) {
        let text = kernel_to_text(kernel);
        for _ in 0..20 {
            let mut damaged: Vec<char> = text.chars().collect();
            let at = rng.below(damaged.len());
            match rng.below(3) {
                0 => damaged.truncate(at),
                1 => {
                    damaged.remove(at);
                }
                _ => damaged.insert(
                    at,
                    *rng.pick(&['(', ']', '@', '#', '"', '-', 'x', '\n', '$']),
                ),
            }
            let damaged: String = damaged.into_iter().collect();
            if let Err(diags) = parse_kernel(&damaged) {
                errors += 1;
                assert!(!diags.is_empty(), "{name}: no diagnostic");
                for d in &diags {
                    let label = d.primary.as_ref().unwrap_or_else(|| {
                        panic!("{name}: diagnostic without a span: {d:?}\n{damaged}")
                    });
                    assert!(
                        label.span.start <= label.span.end && label.span.end <= damaged.len(),
                        "{name}: span {:?} outside the text of {} bytes",
                        label.span,
                        damaged.len()
                    );
                }
            }
        }
    }
    assert!(errors > 300, "only {errors} damaged texts were refused");
}

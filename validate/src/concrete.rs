//! Concrete counterexamples: the kernel run by the loop-IR interpreter
//! (`atl_loopir::interp`, the loop IR's meaning) and the source definition run by the
//! reference interpreter (`atl_lang::interp`), at small sizes with random inputs,
//! compared element by element.
//!
//! This only ever *rejects*: a difference (or a fault of the kernel at sizes its
//! preconditions accept) is a concrete wrong result, reported with the sizes, the
//! element, the expected and the computed value. Agreement proves nothing; a kernel is
//! validated by the obligations alone.

use std::collections::BTreeMap;
use std::fmt;

use atl_lang::interp::{EvalOptions, Tensor};
use atl_lang::ir::Program;
use atl_lang::rng::SplitMix64;
use atl_loopir::ir::Kernel;

/// A run at which the kernel and the source disagree.
#[derive(Clone, Debug, PartialEq)]
pub struct Disagreement {
    pub sizes: BTreeMap<String, i64>,
    /// The seed of the random inputs (`Tensor::random`, one seed per input in order
    /// from this one).
    pub seed: u64,
    pub what: Difference,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Difference {
    /// Element `index` (row-major coordinates) is `computed` where the source has
    /// `expected`.
    Element {
        index: Vec<usize>,
        expected: f64,
        computed: f64,
    },
    /// The kernel faulted (an uninitialised read, an unwritten output element, an
    /// access out of bounds…) at sizes its preconditions accept.
    Fault(String),
}

impl fmt::Display for Disagreement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sizes: Vec<String> = self.sizes.iter().map(|(k, v)| format!("{k}={v}")).collect();
        write!(
            f,
            "at sizes {} (inputs random:{}): ",
            sizes.join(","),
            self.seed
        )?;
        match &self.what {
            Difference::Element {
                index,
                expected,
                computed,
            } => {
                let index: Vec<String> = index.iter().map(|i| i.to_string()).collect();
                write!(
                    f,
                    "element [{}] is {computed} where the source gives {expected}",
                    index.join(", ")
                )
            }
            Difference::Fault(why) => write!(f, "the kernel faults: {why}"),
        }
    }
}

/// The size assignments tried: every size equal to each of a few values, then a few
/// pseudo-random mixes (deterministic).
fn candidate_sizes(names: &[String]) -> Vec<BTreeMap<String, i64>> {
    let mut out: Vec<BTreeMap<String, i64>> = [1, 2, 3, 5, 7, 8, 13, 17]
        .iter()
        .map(|&v| names.iter().map(|n| (n.clone(), v)).collect())
        .collect();
    let mut rng = SplitMix64::new(0x5eed);
    for _ in 0..12 {
        out.push(
            names
                .iter()
                .map(|n| (n.clone(), 1 + (rng.next_u64() % 19) as i64))
                .collect(),
        );
    }
    out
}

fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs())) || (a.is_nan() && b.is_nan())
}

/// Looks for sizes and inputs at which `kernel` and the definition `def` of `program`
/// disagree; `None` when every run tried agrees (which proves nothing).
pub fn find_disagreement(kernel: &Kernel, program: &Program, def: &str) -> Option<Disagreement> {
    let options = EvalOptions {
        max_elements: 1 << 16,
        // The candidate sizes are below 20: a source that needs more is one whose
        // loops a huge constant stretches (a split by 2^40), not one to run here.
        max_iterations: 1 << 26,
        parallel: false,
        monitor: None,
    };
    let names: Vec<String> = program.sizes.iter().map(|s| s.name.clone()).collect();
    for (k, sizes) in candidate_sizes(&names).into_iter().enumerate() {
        let seed = 1000 + k as u64;
        let mut inputs = BTreeMap::new();
        let mut ok = true;
        for (i, decl) in program.inputs.iter().enumerate() {
            let lookup = |v: &str| sizes.get(v).copied();
            let shape: Option<Vec<usize>> = decl
                .shape
                .iter()
                .map(|e| e.eval(&lookup).ok().and_then(|x| usize::try_from(x).ok()))
                .collect();
            match shape {
                Some(shape)
                    if atl_lang::interp::shape_numel(&shape).is_some_and(|n| n <= 1 << 16) =>
                {
                    inputs.insert(decl.name.clone(), Tensor::random(shape, seed + i as u64));
                }
                _ => ok = false,
            }
        }
        if !ok {
            continue;
        }
        // Sizes the kernel refuses (its preconditions) or the source cannot evaluate
        // (its `assume`s, a division by zero) say nothing.
        if atl_loopir::interp::check_call(kernel, &sizes, &inputs).is_err() {
            continue;
        }
        let Ok(expected) = atl_lang::interp::eval_def(program, def, &sizes, &inputs, &options)
        else {
            continue;
        };
        let what = match atl_loopir::interp::run_kernel(kernel, &sizes, &inputs) {
            Err(d) => Some(Difference::Fault(d.message)),
            Ok(computed) if computed.shape != expected.shape => Some(Difference::Fault(format!(
                "the output has shape {:?} where the source's is {:?}",
                computed.shape, expected.shape
            ))),
            Ok(computed) => computed
                .data
                .iter()
                .zip(&expected.data)
                .position(|(c, e)| !close(*c, *e))
                .map(|at| Difference::Element {
                    index: unflatten(at, &expected.shape),
                    expected: expected.data[at],
                    computed: computed.data[at],
                }),
        };
        if let Some(what) = what {
            return Some(Disagreement { sizes, seed, what });
        }
    }
    None
}

fn unflatten(mut at: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        let n = shape[d].max(1);
        index[d] = at % n;
        at /= n;
    }
    index
}

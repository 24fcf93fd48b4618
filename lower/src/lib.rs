//! `atl-lower`: lowering of checked ATL definitions to a loop IR (DESIGN §6, thesis
//! §4.3–4.5).
//!
//! Pipeline: [`normalize_def`] (definitions bound by `let`, tensor leaves and tensor
//! arithmetic expanded into `gen`s, accesses pushed down to inputs and buffers,
//! unique binders) → destination-passing lowering with reindexers as data
//! ([`reindex`]) → loop annotations → placement of temporaries ([`place_temporaries`]:
//! stack, heap, or hoisted out of loops, per thread in parallel ones) → a
//! [`ir::Kernel`]. [`print::kernel_to_string`] shows it and
//! [`interp::run_kernel`] runs it, checking every access, so lowering is testable
//! without a C compiler.
//!
//! Correctness stance: lowering is correct for every program the reference
//! interpreter accepts at sizes satisfying the kernel's preconditions. Reads that
//! may be out of range are guarded (an out-of-range read is a zero in ATL), stores
//! dropped by a truncation are guarded, and a bounds check is only omitted when the
//! solver proves it redundant. A pad-type/safety gate is not required for
//! correctness, only for removing checks.
//!
//! Library code never prints.

mod annotate;
mod checks_at_use;
mod load_guards;
mod lowering;
mod merge_parallel;
mod normalize;
mod overflow;
mod placement;
mod prove;
pub mod reindex;
mod shape;
mod sliding;
mod substitute;
mod tail_bounds;

use atl_lang::diag::Diagnostic;
use atl_lang::ir::{Expr, Program};
use atl_lang::shapes::ShapeEnv;
use atl_solver::{Solver, SolverConfig};

/// The most copies of a statement that nested unrolled loops may make (the product of
/// their trip counts): lowering unrolls no further (and `atl schedule` bounds its
/// candidates' code with it). A register tile needs its row loop unrolled, so that its
/// accumulators have constant indices and stay in registers (a 16-row tile: 16); more
/// only makes straight-line code for the C compiler to schedule. Measured with gcc 12
/// at -O2 on a Zen 4, a 3 x 3 depthwise convolution's 2 x 16 tile partitioned at its
/// borders (up to 36 copies of the tile): the taps and the tile unrolled (3 x 3 x 2 = 18)
/// compiled in 6 s and ran in 0.38 to 0.45 ms; the outer tap loop kept (3 x 2 = 6), in 2.4 s
/// and 0.37 to 0.43 ms.
pub const UNROLLED_COPIES_MAX: i64 = 16;

// The loop IR lives in `atl-loopir` (so the validator can read it without this crate);
// re-exported under its former paths.
pub use atl_loopir::{interp, ir, parse, print};
pub use interp::{CallShapes, check_call, run_kernel};
pub use ir::Kernel;
pub use lowering::LowerOptions;
pub use placement::place as place_temporaries;
pub use print::kernel_to_string;

/// A solver that answers from its fast path only: lowering's questions (bounds,
/// guards, signs of numerators) are linear and an "unknown" only costs a run-time
/// check, so z3's latency is not worth it by default.
pub fn fast_solver() -> Solver {
    Solver::with_config(SolverConfig {
        use_z3: false,
        ..SolverConfig::default()
    })
}

/// Lowers the definition `def` (a `def`, or a derived definition added by
/// `atl_rewrites::with_derived`) of a checked program to a kernel.
pub fn lower_def(
    program: &Program,
    shapes: &ShapeEnv,
    def: &str,
    options: &LowerOptions,
) -> Result<Kernel, Diagnostic> {
    lower_def_with(program, shapes, def, &fast_solver(), options)
}

/// [`lower_def`] with a caller-supplied solver (to share its cache, or to use z3).
pub fn lower_def_with(
    program: &Program,
    shapes: &ShapeEnv,
    def: &str,
    solver: &Solver,
    options: &LowerOptions,
) -> Result<Kernel, Diagnostic> {
    lowering::lower(program, shapes, def, solver, *options)
}

/// The normalized form of a definition that lowering works on (see the `normalize`
/// module): an expression equal to the definition for every input.
pub fn normalize_def(program: &Program, shapes: &ShapeEnv, def: &str) -> Result<Expr, Diagnostic> {
    let solver = fast_solver();
    let prover = prove::Prover::new(program, &solver);
    normalize::normalize_def(program, shapes, def, &prover, &[]).map(|(e, _)| e)
}

//! `vector_width N`: the SIMD width, in bits, that the kernel's C asks the compiler to
//! prefer (GCC's `-mprefer-vector-width=N`, carried by the kernel's C itself as
//! `#pragma GCC target("prefer-vector-width=N")`, so that every build of the kernel
//! gets it). It is a compiler choice, not a program change: one `check` step
//! that leaves the program as it is, carrying the width for lowering. The width that
//! is faster depends on the machine (gcc 12 emits 256-bit code by default on some
//! AVX-512 CPUs and 512-bit code on others), which is why `atl schedule` measures it.

use atl_lang::ast::{Step, StepKind};
use atl_lang::diag::Diagnostic;
use atl_lang::ir::VECTOR_WIDTHS;
use atl_lang::span::Span;

use super::{Applier, Call};

pub(super) fn vector_width_directive(
    applier: &mut Applier<'_, '_>,
    call: &Call<'_>,
) -> Result<(), Diagnostic> {
    let [bits] = call.text.as_slice() else {
        return Err(call.usage());
    };
    let bits = call.int(bits)?;
    let Some(bits) = VECTOR_WIDTHS
        .iter()
        .copied()
        .find(|w| i64::from(*w) == bits)
    else {
        return Err(call.usage());
    };
    applier.apply(Step {
        kind: StepKind::Check,
        span: call.span,
    })?;
    if let Some(last) = applier.outcomes.last_mut() {
        last.record.vector_width = Some(bits);
    }
    Ok(())
}

/// E0849 for a second `vector_width` (at `span`) in a derivation or a REPL session
/// whose steps already chose `earlier`: one kernel is compiled for one width, and
/// which of two would win is not for the order of the steps to decide silently.
pub fn second_vector_width(earlier: u32, span: Span) -> Diagnostic {
    Diagnostic::error(
        "E0849",
        format!("the vector width is already {earlier} bits: a kernel has one vector width"),
    )
    .at(span, "a second `vector_width`")
    .with_help("keep one `vector_width` step (the last one you meant)")
}

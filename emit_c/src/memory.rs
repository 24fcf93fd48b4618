//! Whether a kernel's heap temporaries fit in the memory this machine has, checked
//! before `atl run`, `atl bench` and the REPL call a kernel: the C aborts when an
//! allocation fails (its header says so), which would end the calling process without
//! a word. The bound is the sum of every heap buffer's elements at the call's sizes
//! (what is live at once is at most that; stack arrays are small constants); a
//! diagnostic, not a guarantee (per-thread copies are counted once).

use std::collections::BTreeMap;

use atl_lang::diag::Diagnostic;
use atl_loopir::ir::{Stmt, Storage};
use atl_lower::Kernel;

/// The bytes of heap temporaries `kernel` may allocate at `sizes`, with elements of
/// `element_size` bytes (saturating).
pub fn temporary_bytes(
    kernel: &Kernel,
    sizes: &BTreeMap<String, i64>,
    element_size: usize,
) -> u128 {
    let mut total: u128 = 0;
    kernel.walk(&mut |s| {
        if let Stmt::Alloc {
            shape,
            storage,
            fold,
            ..
        } = s
            && *storage != Storage::Stack
        {
            // A buffer's elements are the product of its extents, functions of the
            // sizes evaluated as the front end evaluates them (a folded dimension's
            // extent is the fold).
            let elements = shape.iter().enumerate().try_fold(1u128, |acc, (k, d)| {
                let v = match fold {
                    Some(f) if k == 0 => *f,
                    _ => d.eval(&|n| sizes.get(n).copied()).ok()?,
                };
                Some(acc.saturating_mul(u128::try_from(v.max(0)).ok()?))
            });
            if let Some(n) = elements {
                total = total.saturating_add(n.max(1).saturating_mul(element_size as u128));
            }
        }
    });
    total
}

/// Refuses (E0611) a call whose temporaries exceed the memory available now
/// (`MemAvailable` plus free swap, from `/proc/meminfo`; nothing is refused where that
/// cannot be read).
pub fn check_temporaries(
    symbol: &str,
    kernel: &Kernel,
    sizes: &BTreeMap<String, i64>,
    element_size: usize,
) -> Result<(), Diagnostic> {
    let needed = temporary_bytes(kernel, sizes, element_size);
    let Some(available) = available_bytes() else {
        return Ok(());
    };
    if needed <= available {
        return Ok(());
    }
    let gib = |b: u128| b as f64 / (1u64 << 30) as f64;
    Err(Diagnostic::error(
        "E0611",
        format!(
            "the temporaries of the kernel `{symbol}` take {:.1} GiB at these sizes, and this machine has {:.1} GiB available: the kernel would abort",
            gib(needed),
            gib(available)
        ),
    )
    .with_help("run it at smaller sizes, or schedule the stages it stores (`compute_at`, `compute_inline`) so that less is kept"))
}

fn available_bytes() -> Option<u128> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let field = |name: &str| -> Option<u128> {
        let line = info.lines().find(|l| l.starts_with(name))?;
        let kib: u128 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    };
    Some(field("MemAvailable:")? + field("SwapFree:").unwrap_or(0))
}

//! `atl rules --export-rocq DIR`: writes the library's Rocq statements (one file per
//! rule file, and `All.v`), the statements of `proofs/rocq` (DESIGN §9).

use std::path::Path;

use crate::ctx::Ctx;
use atl_driver::failure::Failure;
use atl_driver::load::standard_library;

/// Writes the statements into `dir` (created if needed).
pub fn export(dir: &Path, ctx: &mut Ctx<'_>) -> Result<(), Failure> {
    let lib = standard_library()?;
    let exported = atl_rewrites::rocq::export_library(&lib)
        .map_err(|e| Failure::usage(format!("cannot export to Rocq: {e}")))?;
    std::fs::create_dir_all(dir)
        .map_err(|e| Failure::usage(format!("cannot create `{}`: {e}", dir.display())))?;
    for f in &exported {
        let path = dir.join(&f.name);
        std::fs::write(&path, &f.contents)
            .map_err(|e| Failure::usage(format!("cannot write `{}`: {e}", path.display())))?;
    }
    let _ = writeln!(
        ctx.stdout,
        "wrote {} files to {}",
        exported.len(),
        dir.display()
    );
    Ok(())
}

//! Sizes and inputs for evaluating, running or timing a definition: parsing `n=4,m=5`
//! lists, `NAME=random:SEED` / `NAME=PATH.npy` / `NAME=PATH.mtx|.npz` (a sparse
//! matrix, `sparse_file`) input sources, `f32|f64` and `fast|strict`, and [`prepare`],
//! which loads a file and checks them against it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use atl_lang::diag::Diagnostic;
use atl_lang::interp::{EvalOptions, Tensor};

use crate::failure::Failure;
use crate::load::{Loaded, load_derived, pick_loaded_def};
use crate::npy;
use crate::observer::Observer;
use crate::sparse_file;

/// Parses `n=4,m=5` lists (repeatable flag) into a map.
pub fn parse_sizes(args: &[String]) -> Result<BTreeMap<String, i64>, String> {
    let mut sizes = BTreeMap::new();
    for arg in args {
        for part in arg.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = part.split_once('=').ok_or_else(|| {
                format!("`--sizes {part}`: expected NAME=VALUE, e.g. `--sizes n=4,m=5`")
            })?;
            let value: i64 = value
                .trim()
                .parse()
                .map_err(|_| format!("`--sizes {part}`: `{value}` is not an integer"))?;
            if sizes.insert(name.trim().to_string(), value).is_some() {
                return Err(format!("`--sizes`: `{}` is given twice", name.trim()));
            }
        }
    }
    Ok(sizes)
}

/// An `--input` source, before shapes are known.
#[derive(Clone, Debug)]
pub enum InputSource {
    Random(u64),
    Npy(PathBuf),
    /// A Matrix Market `.mtx` or scipy `.npz` sparse matrix, given to a matrix input
    /// as its dense values.
    Sparse(PathBuf),
}

/// Parses `--input NAME=random:SEED` / `--input NAME=PATH.npy` arguments.
pub fn parse_inputs(args: &[String]) -> Result<Vec<(String, InputSource)>, String> {
    let mut out: Vec<(String, InputSource)> = Vec::new();
    for arg in args {
        let (name, source) = arg.split_once('=').ok_or_else(|| {
            format!(
                "`--input {arg}`: expected NAME=random:SEED, NAME=PATH.npy or NAME=PATH.mtx|.npz"
            )
        })?;
        let name = name.trim().to_string();
        if out.iter().any(|(n, _)| *n == name) {
            return Err(format!("`--input`: `{name}` is given twice"));
        }
        let source = if let Some(seed) = source.strip_prefix("random:") {
            InputSource::Random(seed.trim().parse().map_err(|_| {
                format!("`--input {arg}`: the seed `{seed}` is not a non-negative integer")
            })?)
        } else if source.ends_with(".npy") {
            InputSource::Npy(PathBuf::from(source))
        } else if sparse_file::is_sparse_path(source) {
            InputSource::Sparse(PathBuf::from(source))
        } else {
            return Err(format!(
                "`--input {arg}`: expected `random:SEED` or a path ending in `.npy` (dense), `.mtx` or `.npz` (a sparse matrix)"
            ));
        };
        out.push((name, source));
    }
    Ok(out)
}

/// Parses `--dtype f32|f64`.
pub fn parse_dtype(dtype: &str) -> Result<atl_emit_c::Dtype, Failure> {
    match dtype {
        "f32" => Ok(atl_emit_c::Dtype::F32),
        "f64" => Ok(atl_emit_c::Dtype::F64),
        other => Err(Failure::usage(format!(
            "`--dtype {other}`: expected `f32` or `f64`"
        ))),
    }
}

/// Parses `--fp fast|strict`.
pub fn parse_fp(fp: &str) -> Result<atl_emit_c::Fp, Failure> {
    atl_emit_c::Fp::parse(fp)
        .ok_or_else(|| Failure::usage(format!("`--fp {fp}`: expected `fast` or `strict`")))
}

/// What `eval`, `run` and `bench` need: the program (derivations added), the chosen
/// definition, checked sizes and every input given on the command line.
#[derive(Debug)]
pub struct Prepared {
    pub loaded: Loaded,
    pub name: String,
    pub sizes: BTreeMap<String, i64>,
    pub inputs: BTreeMap<String, Tensor>,
    /// Input shapes at these sizes (for filling inputs not given).
    pub input_shapes: BTreeMap<String, Vec<usize>>,
}

/// The `--input`s given for sparse matrices (`sparse A : … as csr(pos, crd, vals)`),
/// taken out of `sources`: a file is converted to the arrays of each of the matrix's
/// storages (`sparse_input`), completing `sizes`, so that every definition finds the
/// storage it reads; `random:SEED` becomes the same source for each array (random
/// arrays that satisfy their declarations).
fn sparse_inputs(
    loaded: &Loaded,
    file: &Path,
    sizes: &mut BTreeMap<String, i64>,
    sources: &mut Vec<(String, InputSource)>,
) -> Result<Vec<(String, Tensor)>, Failure> {
    let program = &loaded.program;
    let mut converted = Vec::new();
    let mut kept = Vec::new();
    for (name, source) in std::mem::take(sources) {
        if program.sparse(&name).is_none() {
            kept.push((name, source));
            continue;
        }
        for decl in program.storages(&name) {
            match &source {
                InputSource::Random(seed) => {
                    for array in &decl.arrays {
                        kept.push((array.clone(), InputSource::Random(*seed)));
                    }
                }
                InputSource::Npy(path) | InputSource::Sparse(path) => {
                    let arrays =
                        crate::sparse_input::convert(program, decl, path, sizes).map_err(|m| {
                            let d = Diagnostic::error(
                                "E0608",
                                format!(
                                    "cannot read the sparse matrix `{name}` from `{}`: {m}",
                                    path.display()
                                ),
                            )
                            .with_help(format!(
                                "`{name}` is stored as {}({}) ({})",
                                decl.format.name,
                                decl.arrays.join(", "),
                                decl.format.help
                            ));
                            Failure::diagnostics(vec![d], file, &loaded.source)
                        })?;
                    converted.extend(decl.arrays.iter().cloned().zip(arrays));
                }
            }
        }
    }
    // An array given twice (through its matrix and by itself, or through two
    // matrices that share it) is refused.
    let given: Vec<&String> = (kept.iter().map(|(a, _)| a))
        .chain(converted.iter().map(|(a, _)| a))
        .collect();
    for array in &given {
        if given.iter().filter(|a| *a == array).count() > 1 {
            let matrix = program
                .sparse
                .iter()
                .find(|s| s.arrays.contains(array))
                .map_or("its matrix", |s| s.name.as_str());
            return Err(Failure::usage(format!(
                "`--input`: `{array}` is given twice (through the sparse matrix `{matrix}` and otherwise)"
            )));
        }
    }
    *sources = kept;
    Ok(converted)
}

/// Loads `file` and checks the `--def`, `--sizes` and `--input` arguments against it.
pub fn prepare(
    observer: &mut dyn Observer,
    file: &Path,
    def: Option<&str>,
    size_args: &[String],
    input_args: &[String],
) -> Result<Prepared, Failure> {
    let mut sizes = parse_sizes(size_args).map_err(Failure::usage)?;
    let mut input_sources = parse_inputs(input_args).map_err(Failure::usage)?;
    let loaded = load_derived(observer, file)?;
    let program = &loaded.program;
    for name in sizes.keys() {
        if !program.is_size(name) {
            let declared: Vec<&str> = program.sizes.iter().map(|s| s.name.as_str()).collect();
            return Err(Failure::usage(format!(
                "`--sizes`: `{name}` is not a size of {} (sizes: {})",
                file.display(),
                if declared.is_empty() {
                    "none".to_string()
                } else {
                    declared.join(", ")
                }
            )));
        }
    }
    let name = pick_loaded_def(&loaded, file, def)?;
    let converted = sparse_inputs(&loaded, file, &mut sizes, &mut input_sources)?;
    // Sizes, assumptions and the element limit are checked before any input is built,
    // so huge sizes give a diagnostic instead of an out-of-memory abort.
    let shapes = atl_lang::interp::input_shapes(program, &sizes, &EvalOptions::default())
        .map_err(|d| Failure::diagnostics(vec![d], file, &loaded.source))?;
    let mut inputs = BTreeMap::new();
    for (input_name, src) in input_sources {
        let Some(decl) = program.input(&input_name) else {
            let declared: Vec<&str> = program.inputs.iter().map(|i| i.name.as_str()).collect();
            return Err(Failure::usage(format!(
                "`--input`: `{input_name}` is not an input of {} (inputs: {})",
                file.display(),
                if declared.is_empty() {
                    "none".to_string()
                } else {
                    declared.join(", ")
                }
            )));
        };
        let tensor = match src {
            InputSource::Random(seed) => match shapes.get(&decl.name) {
                Some(shape) => atl_lang::interp::random_input(decl, shape.clone(), seed, &|n| {
                    sizes.get(n).copied()
                }),
                None => continue,
            },
            InputSource::Sparse(path) => {
                let bytes = std::fs::read(&path).map_err(|e| {
                    Failure::usage(format!("cannot read `{}`: {e}", path.display()))
                })?;
                let refuse = |m: String| {
                    let d = Diagnostic::error(
                        "E0608",
                        format!(
                            "cannot read input `{input_name}` from `{}`: {m}",
                            path.display()
                        ),
                    );
                    Failure::diagnostics(vec![d], file, &loaded.source)
                };
                let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
                let matrix = sparse_file::read(extension, &bytes).map_err(refuse)?;
                // Compared with the declared shape before the dense values are made,
                // so that a file announcing a huge matrix allocates nothing.
                let declared = shapes.get(&decl.name).cloned().unwrap_or_default();
                if declared != [matrix.rows, matrix.cols] {
                    return Err(refuse(format!(
                        "the file holds a {} x {} matrix, and `{input_name}` has shape {declared:?} at these sizes",
                        matrix.rows, matrix.cols
                    )));
                }
                Tensor {
                    shape: declared,
                    data: matrix.to_dense(),
                }
            }
            InputSource::Npy(path) => match std::fs::read(&path) {
                Ok(bytes) => match npy::parse(&bytes) {
                    Ok(a) => Tensor {
                        shape: a.shape,
                        data: a.data,
                    },
                    Err(m) => {
                        let d = Diagnostic::error(
                            "E0608",
                            format!(
                                "cannot read input `{input_name}` from `{}`: {m}",
                                path.display()
                            ),
                        );
                        return Err(Failure::diagnostics(vec![d], file, &loaded.source));
                    }
                },
                Err(e) => {
                    return Err(Failure::usage(format!(
                        "cannot read `{}`: {e}",
                        path.display()
                    )));
                }
            },
        };
        inputs.insert(input_name, tensor);
    }
    for (array, tensor) in converted {
        inputs.insert(array, tensor);
    }
    Ok(Prepared {
        loaded,
        name,
        sizes,
        inputs,
        input_shapes: shapes,
    })
}

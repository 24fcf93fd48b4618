//! MTTKRP over a sparse tensor stored as compressed sparse fibers
//! (`examples/sparse/mttkrp.atl`): `out[i, r] = Σ_j Σ_k T[i, j, k] B[j, r] C[k, r]`,
//! the dense specification `mttkrp` and its derivation `csf`, which iterates over the
//! stored slices, fibers and values only. Driven through the `atl` binary as a user
//! would: a dense `.npy` given for `T` is stored in CSF (the sizes `NS`, `NF`, `NNZ`
//! taken from it), and both definitions evaluate, and the validated kernel of `csf`
//! runs, to the product computed here with plain loops over the dense tensor: on the
//! issue's tensor, on random tensors of several shapes (with empty slices and fibers,
//! and a single value), and on an all-zero tensor given by its arrays or as a file. The derivation's
//! certificate verifies, and the arrays of the issue's tensor are the issue's.

mod common;

use std::path::{Path, PathBuf};

use atl_cli::EXIT_OK;
use atl_lang::rng::SplitMix64;
use common::{atl, write_npy};

fn example() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/sparse/mttkrp.atl")
        .display()
        .to_string()
}

/// A directory of this test's own (the tests of this file run in parallel).
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("atl-mttkrp-{}-{test}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// A dense tensor `[I, J, K]` (row-major) and the factors `B : [J, R]`, `C : [K, R]`.
struct Case {
    dims: [usize; 4],
    t: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
}

impl Case {
    fn sizes(&self) -> String {
        let [i, j, k, r] = self.dims;
        format!("I={i},J={j},K={k},R={r}")
    }

    /// `out[i, r] = Σ_j Σ_k T[i, j, k] B[j, r] C[k, r]`, with plain loops: the
    /// expectation, independent of the language.
    fn expected(&self) -> Vec<f64> {
        let [ni, nj, nk, nr] = self.dims;
        let mut out = vec![0.0; ni * nr];
        for i in 0..ni {
            for r in 0..nr {
                let mut acc = 0.0;
                for j in 0..nj {
                    for k in 0..nk {
                        acc +=
                            self.t[(i * nj + j) * nk + k] * self.b[j * nr + r] * self.c[k * nr + r];
                    }
                }
                out[i * nr + r] = acc;
            }
        }
        out
    }

    /// The stored slices, fibers and values of `T` in CSF (counted here from the dense
    /// tensor): the sizes `NS`, `NF`, `NNZ` the driver takes from the file.
    fn stored(&self) -> (usize, usize, usize) {
        let [ni, nj, nk, _] = self.dims;
        let (mut slices, mut fibers, mut values) = (0, 0, 0);
        for i in 0..ni {
            let mut in_slice = 0;
            for j in 0..nj {
                let fiber = &self.t[(i * nj + j) * nk..(i * nj + j + 1) * nk];
                let n = fiber.iter().filter(|x| **x != 0.0).count();
                values += n;
                if n > 0 {
                    in_slice += 1;
                }
            }
            fibers += in_slice;
            if in_slice > 0 {
                slices += 1;
            }
        }
        (slices, fibers, values)
    }

    /// Writes `t.npy`, `b.npy` and `c.npy` into `dir`; returns the `--input` values.
    fn inputs(&self, dir: &Path) -> Vec<String> {
        let [ni, nj, nk, nr] = self.dims;
        vec![
            format!("T={}", write_npy(dir, "t.npy", &[ni, nj, nk], &self.t)),
            format!("B={}", write_npy(dir, "b.npy", &[nj, nr], &self.b)),
            format!("C={}", write_npy(dir, "c.npy", &[nk, nr], &self.c)),
        ]
    }
}

/// The issue's tensor: 3 x 3 x 4 with (0,0,0)=1, (0,0,3)=2, (0,2,1)=3, (2,0,2)=4,
/// (2,1,0)=5, (2,1,3)=6; B = [[1,2],[3,4],[5,6]], C = [[1,0],[0,1],[1,1],[2,1]].
fn issue_case() -> Case {
    let mut t = vec![0.0; 36];
    for (i, j, k, v) in ISSUE_ENTRIES {
        t[(i * 3 + j) * 4 + k] = v;
    }
    Case {
        dims: [3, 3, 4, 2],
        t,
        b: vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        c: vec![1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0, 1.0],
    }
}

const ISSUE_ENTRIES: [(usize, usize, usize, f64); 6] = [
    (0, 0, 0, 1.0),
    (0, 0, 3, 2.0),
    (0, 2, 1, 3.0),
    (2, 0, 2, 4.0),
    (2, 1, 0, 5.0),
    (2, 1, 3, 6.0),
];

/// The issue's product, [[5, 22], [0, 0], [55, 32]].
const ISSUE_PRODUCT: [f64; 6] = [5.0, 22.0, 0.0, 0.0, 55.0, 32.0];

/// The issue's CSF arrays of its tensor: pos1, crd1, pos2, crd2, pos3, crd3, vals.
fn issue_arrays() -> Vec<Vec<f64>> {
    vec![
        vec![0.0, 2.0],
        vec![0.0, 2.0],
        vec![0.0, 2.0, 4.0],
        vec![0.0, 2.0, 0.0, 1.0],
        vec![0.0, 2.0, 3.0, 4.0, 6.0],
        vec![0.0, 3.0, 1.0, 2.0, 0.0, 3.0],
        vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    ]
}

/// The data of a float64 C-order `.npy` file (as `atl eval --out` writes it), read
/// here, with its shape.
fn read_npy(path: &Path) -> (Vec<usize>, Vec<f64>) {
    let bytes = std::fs::read(path).expect("the output file");
    assert_eq!(&bytes[..6], b"\x93NUMPY", "not an .npy file");
    let (len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        _ => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
    };
    let header = std::str::from_utf8(&bytes[start..start + len]).expect("ASCII header");
    assert!(header.contains("'descr': '<f8'"), "{header}");
    assert!(header.contains("'fortran_order': False"), "{header}");
    let shape_text = header
        .split("'shape': (")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .expect("a shape");
    let shape: Vec<usize> = shape_text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().expect("an extent"))
        .collect();
    let data: Vec<f64> = bytes[start + len..]
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect();
    assert_eq!(data.len(), shape.iter().product::<usize>(), "{header}");
    (shape, data)
}

/// `atl eval` of `def` with `--sizes sizes` and `inputs`, writing `--out`: the output's
/// shape and values, read from the file.
fn eval(dir: &Path, def: &str, sizes: &str, inputs: &[String]) -> (Vec<usize>, Vec<f64>) {
    let out = dir.join(format!("out_{def}.npy"));
    let _ = std::fs::remove_file(&out);
    let file = example();
    let out_arg = out.display().to_string();
    let mut args = vec!["eval", &file, "--def", def, "--sizes", sizes];
    for i in inputs {
        args.extend(["--input", i.as_str()]);
    }
    args.extend(["--out", &out_arg]);
    let (code, _, err) = atl(&args);
    assert_eq!(code, EXIT_OK, "eval {def} at {sizes}: {err}");
    read_npy(&out)
}

/// `atl run --def csf` in double precision: the compiled kernel (which `run` refuses
/// unless it is validated) against the interpreter; returns the JSON report.
fn run_csf(sizes: &str, inputs: &[String]) -> serde_json::Value {
    let file = example();
    let mut args = vec![
        "run", &file, "--def", "csf", "--sizes", sizes, "--dtype", "f64", "--json",
    ];
    for i in inputs {
        args.extend(["--input", i.as_str()]);
    }
    let (code, out, err) = atl(&args);
    assert_eq!(code, EXIT_OK, "run csf at {sizes}: {err}");
    serde_json::from_str(out.trim()).expect("JSON")
}

/// Both definitions evaluate to `want`, and the compiled kernel of `csf` agrees with
/// the interpreter exactly (small integers: every sum is exact in double precision, so
/// the kernel's values are `want` too).
fn check_all(dir: &Path, case: &Case, want: &[f64], what: &str) -> serde_json::Value {
    let inputs = case.inputs(dir);
    let sizes = case.sizes();
    for def in ["mttkrp", "csf"] {
        let (shape, got) = eval(dir, def, &sizes, &inputs);
        assert_eq!(shape, [case.dims[0], case.dims[3]], "{what}: {def}");
        assert_eq!(got, want, "{what}: {def} at {sizes}");
    }
    let report = run_csf(&sizes, &inputs);
    assert_eq!(report["verdict"], "agrees", "{what}: {report}");
    assert_eq!(report["mismatches"], 0, "{what}: {report}");
    assert_eq!(report["max_abs_error"], 0.0, "{what}: {report}");
    report
}

/// The issue's example: both definitions give [[5, 22], [0, 0], [55, 32]] from the
/// dense `.npy`, the driver fixes NS = 2, NF = 4, NNZ = 6 from it, and the issue's CSF
/// arrays given directly give the same product.
#[test]
fn the_issues_tensor_gives_the_issues_product() {
    let dir = scratch("issue");
    let case = issue_case();
    assert_eq!(case.expected(), ISSUE_PRODUCT, "the plain loops");
    let report = check_all(&dir, &case, &ISSUE_PRODUCT, "the issue's tensor");
    assert_eq!(report["sizes"]["NS"], 2, "{report}");
    assert_eq!(report["sizes"]["NF"], 4, "{report}");
    assert_eq!(report["sizes"]["NNZ"], 6, "{report}");
    // The arrays themselves, as `.npy` files for the array inputs.
    let names = ["pos1", "crd1", "pos2", "crd2", "pos3", "crd3", "vals"];
    let mut inputs: Vec<String> = names
        .iter()
        .zip(issue_arrays())
        .map(|(name, a)| {
            let f = write_npy(&dir, &format!("{name}.npy"), &[a.len()], &a);
            format!("{name}={f}")
        })
        .collect();
    inputs.extend(case.inputs(&dir).into_iter().skip(1));
    let sizes = format!("{},NS=2,NF=4,NNZ=6", case.sizes());
    for def in ["mttkrp", "csf"] {
        let (_, got) = eval(&dir, def, &sizes, &inputs);
        assert_eq!(got, ISSUE_PRODUCT, "{def} over the issue's arrays");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `atl_lang::sparse::compress` stores the issue's tensor in the issue's CSF arrays
/// (the arrays a dense `.npy` given for `T` becomes).
#[test]
fn the_issues_tensor_compresses_to_the_issues_csf_arrays() {
    let csf = atl_lang::sparse::format_named("csf").expect("csf");
    // Any order: the arrays are sorted.
    let entries: Vec<(Vec<usize>, f64)> = ISSUE_ENTRIES
        .iter()
        .rev()
        .map(|&(i, j, k, v)| (vec![i, j, k], v))
        .collect();
    let arrays = atl_lang::sparse::compress(csf, &[3, 3, 4], &[], &entries).expect("compresses");
    assert_eq!(arrays, issue_arrays());
}

/// The derivation replays (`check`), is canonical (`fmt --check`), its certificate is
/// accepted by the independent checker (`verify`), and the kernel of `csf` is
/// validated and emitted as C (`emit` writes no kernel that is not validated).
#[test]
fn the_derivation_is_certified_and_its_kernel_validated() {
    let dir = scratch("certified");
    let file = example();
    let (code, _, err) = atl(&["check", &file]);
    assert_eq!(code, EXIT_OK, "{err}");
    let (code, _, err) = atl(&["fmt", "--check", &file]);
    assert_eq!(code, EXIT_OK, "{err}");
    let cert = dir.join("csf.json").display().to_string();
    let (code, _, err) = atl(&["derive", &file, "--def", "csf", "--cert", &cert]);
    assert_eq!(code, EXIT_OK, "{err}");
    let (code, out, err) = atl(&["verify", &cert]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(
        out.contains("certificate accepted: `csf` from `mttkrp`"),
        "{out}"
    );
    let (code, out, err) = atl(&["validate", &file, "--def", "csf"]);
    assert_eq!(code, EXIT_OK, "{err}");
    assert!(out.contains("verdict: validated"), "{out}");
    let (code, c, err) = atl(&["emit", &file, "--def", "csf"]);
    assert_eq!(code, EXIT_OK, "{err}");
    // The kernel loops over the stored slices, fibers and values, and scatters into
    // the row of each stored slice.
    for want in [
        "p < (int64_t)pos1[1]",
        "p1 < (int64_t)pos2[p + 1]",
        "p2 < (int64_t)pos3[p1 + 1]",
        "out[R * (int64_t)crd1[p] + r] +=",
    ] {
        assert!(c.contains(want), "no `{want}` in\n{c}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Random tensors of several shapes, from sparse to dense, each with an empty slice and
/// an empty fiber in a stored slice where the shape has room, and a tensor of a single
/// value: both definitions and the compiled kernel give the plain loops' product, and
/// the sizes the driver takes from the file are the stored slices, fibers and values.
#[test]
fn random_tensors_agree_with_plain_loops() {
    let dir = scratch("random");
    let shapes: [[usize; 4]; 7] = [
        [1, 1, 1, 1],
        [2, 3, 2, 1],
        [3, 3, 4, 2],
        [4, 2, 5, 3],
        [5, 4, 3, 2],
        [3, 5, 6, 4],
        [6, 3, 2, 3],
    ];
    let mut saw_empty_slice = false;
    let mut saw_empty_fiber = false;
    for (case_no, dims) in shapes.iter().enumerate() {
        let mut rng = SplitMix64::new(SplitMix64::case_seed(0x6d74_746b_7270, case_no as u64));
        let [ni, nj, nk, nr] = *dims;
        let small = |rng: &mut SplitMix64| rng.range(-3, 3) as f64;
        let b: Vec<f64> = (0..nj * nr).map(|_| small(&mut rng)).collect();
        let c: Vec<f64> = (0..nk * nr).map(|_| small(&mut rng)).collect();
        // The last case stores a single value; the others a share of the elements.
        let single = case_no == shapes.len() - 1;
        let density = *rng.pick(&[10, 35, 70]);
        let mut t: Vec<f64> = (0..ni * nj * nk)
            .map(|_| {
                if !single && rng.chance(density) {
                    // Nonzero: a stored value.
                    *rng.pick(&[-4.0, -3.0, -2.0, -1.0, 1.0, 2.0, 3.0, 4.0])
                } else {
                    0.0
                }
            })
            .collect();
        if !single && ni >= 2 {
            let i = rng.below(ni);
            t[i * nj * nk..(i + 1) * nj * nk].fill(0.0);
        }
        if !single && nj >= 2 {
            let (i, j) = (rng.below(ni), rng.below(nj));
            t[(i * nj + j) * nk..(i * nj + j + 1) * nk].fill(0.0);
        }
        // Sizes are at least 1: a file stores at least one value (the all-zero tensor
        // is given by its arrays in the next test).
        if t.iter().all(|x| *x == 0.0) {
            let at = rng.below(t.len());
            t[at] = 2.0;
        }
        let case = Case {
            dims: *dims,
            t,
            b,
            c,
        };
        let (slices, fibers, values) = case.stored();
        if single {
            assert_eq!((slices, fibers, values), (1, 1, 1));
        }
        saw_empty_slice |= slices < ni;
        saw_empty_fiber |= (0..ni).any(|i| {
            let fibers: Vec<bool> = (0..nj)
                .map(|j| {
                    case.t[(i * nj + j) * nk..(i * nj + j + 1) * nk]
                        .iter()
                        .any(|x| *x != 0.0)
                })
                .collect();
            fibers.contains(&true) && fibers.contains(&false)
        });
        let what = format!("case {case_no} ({dims:?}, {values} value(s))");
        let report = check_all(
            &dir.join(case_no.to_string()),
            &case,
            &case.expected(),
            &what,
        );
        assert_eq!(report["sizes"]["NS"], slices, "{what}: {report}");
        assert_eq!(report["sizes"]["NF"], fibers, "{what}: {report}");
        assert_eq!(report["sizes"]["NNZ"], values, "{what}: {report}");
    }
    assert!(saw_empty_slice, "no case has an empty slice");
    assert!(
        saw_empty_fiber,
        "no case has an empty fiber in a stored slice"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The all-zero tensor stores no slice; as sizes are at least 1, it is given by arrays
/// of one element each whose positions store nothing (`pos1 = [0, 0]`: no slice is
/// stored, and the one entry of every other array is never read): both definitions
/// and the kernel give zeros, whatever `vals` holds. The same tensor as a dense file
/// is stored as one explicit zero at the origin (`NS = NF = NNZ = 1`: a size is at
/// least 1), and gives zeros too.
#[test]
fn an_all_zero_tensor_gives_zeros() {
    let dir = scratch("zero");
    let (ni, nj, nk, nr) = (3, 2, 4, 2);
    let b: Vec<f64> = (0..nj * nr).map(|x| x as f64 + 1.0).collect();
    let c: Vec<f64> = (0..nk * nr).map(|x| x as f64 - 3.0).collect();
    let case = Case {
        dims: [ni, nj, nk, nr],
        t: vec![0.0; ni * nj * nk],
        b,
        c,
    };
    let want = vec![0.0; ni * nr];
    assert_eq!(case.expected(), want, "the plain loops");
    let arrays: [(&str, &[f64]); 7] = [
        ("pos1", &[0.0, 0.0]),
        ("crd1", &[0.0]),
        ("pos2", &[0.0, 0.0]),
        ("crd2", &[0.0]),
        ("pos3", &[0.0, 0.0]),
        ("crd3", &[0.0]),
        ("vals", &[7.0]),
    ];
    let mut inputs: Vec<String> = arrays
        .iter()
        .map(|(name, a)| {
            let f = write_npy(&dir, &format!("{name}.npy"), &[a.len()], a);
            format!("{name}={f}")
        })
        .collect();
    inputs.extend(case.inputs(&dir).into_iter().skip(1));
    let sizes = format!("{},NS=1,NF=1,NNZ=1", case.sizes());
    for def in ["mttkrp", "csf"] {
        let (_, got) = eval(&dir, def, &sizes, &inputs);
        assert_eq!(got, want, "{def}");
    }
    let report = run_csf(&sizes, &inputs);
    assert_eq!(report["verdict"], "agrees", "{report}");
    assert_eq!(report["max_abs_error"], 0.0, "{report}");
    // The dense file of the all-zero tensor: one explicit zero stored.
    let dense = case.inputs(&dir);
    let sizes = case.sizes();
    for def in ["mttkrp", "csf"] {
        let (_, got) = eval(&dir, def, &sizes, &dense);
        assert_eq!(got, want, "{def} of the dense all-zero file");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

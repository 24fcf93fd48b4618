//! End-to-end tests of the example programs in `examples/` (their unscheduled forms).
//!
//! For every example `examples/NAME/NAME.atl`:
//!
//! - the file parses and shape-checks with no diagnostic at all (not even a warning),
//!   and its last `def` is the example's main definition (the `atl` commands default to
//!   the last definition);
//! - every `def` of the file, evaluated by the reference interpreter at several size
//!   assignments (size 1 everywhere, non-square, filter wider than the signal, …),
//!   equals an **independent** implementation of the same math written here as plain
//!   Rust loops, straight from the thesis / bench-kit definition (never by running the
//!   interpreter, and not by transliterating the ATL where a more direct formulation
//!   exists: e.g. the blur reference is the 3x3 window sum, the 4-D add a flat zip, the
//!   scatter reference an actual scatter loop). Each assignment is run with two inputs:
//!   * exact inputs — multiples of 1/8 in [-2, 2], for which every sum and product in
//!     these programs is exact in `f64`, so the result must be equal (`==`) whatever
//!     the order of summation;
//!   * `Tensor::random` inputs (the CLI's `random:SEED`), compared with a relative
//!     tolerance of 1e-12 (relative to the largest magnitude in the expected tensor);
//! - the result shape equals the checker's static shape of the definition at those
//!   sizes;
//! - the formatter round-trips: `format_source` succeeds in ASCII and Unicode style, the
//!   output checks again without diagnostics, defines the same definitions in the same
//!   order with alpha-equivalent bodies, keeps every comment line, evaluates bit for bit
//!   like the original at every size assignment, and is a fixed point
//!   (`format(format(x)) == format(x)`); formatting the Unicode output in ASCII style
//!   gives the ASCII output.
//!
//! A few tests pin hand-computed values (so that a reference and the interpreter
//! cannot agree on a shared misunderstanding), check that the references of the
//! different forms of the convolution agree with one another, and evaluate the
//! `atl eval` demo of `examples/matmul`.

use std::collections::BTreeMap;

use atl_lang::diag::render_to_string;
use atl_lang::interp::{EvalOptions, Tensor, eval_def};
use atl_lang::ir::alpha_eq;
use atl_lang::pretty::{Style, format_source};
use atl_lang::{Checked, check_source};

type Sizes = BTreeMap<String, i64>;
type Inputs = BTreeMap<String, Tensor>;

/// The relative tolerance for inputs that are not exactly representable sums.
const RTOL: f64 = 1e-12;

// ---------------------------------------------------------------------------------------
// Loading, checking, evaluating
// ---------------------------------------------------------------------------------------

fn example_path(name: &str) -> String {
    format!(
        "{}/../examples/{name}/{name}.atl",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn load(name: &str) -> String {
    let path = example_path(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

/// Parses and checks `src`, which must produce no diagnostic at all.
fn check(src: &str, file: &str) -> Checked {
    let (checked, diags) = check_source(src);
    assert!(
        diags.is_empty(),
        "{file}: unexpected diagnostics:\n{}",
        render_to_string(&diags, file, src)
    );
    checked.unwrap_or_else(|| panic!("{file}: check_source returned no program"))
}

fn sizes_of(pairs: &[(&str, i64)]) -> Sizes {
    pairs.iter().map(|&(n, v)| (n.to_string(), v)).collect()
}

fn show_sizes(sizes: &Sizes) -> String {
    let parts: Vec<String> = sizes.iter().map(|(n, v)| format!("{n}={v}")).collect();
    parts.join(",")
}

/// The declared shape of every input at `sizes`, computed from the declarations (not by
/// the interpreter).
fn input_shapes(checked: &Checked, sizes: &Sizes) -> Vec<(String, Vec<usize>)> {
    let env = |name: &str| sizes.get(name).copied();
    checked
        .program
        .inputs
        .iter()
        .map(|input| {
            let shape = input
                .shape
                .iter()
                .map(|d| {
                    let v = d.eval(&env).expect("input extent evaluates");
                    usize::try_from(v).expect("input extent is non-negative")
                })
                .collect();
            (input.name.clone(), shape)
        })
        .collect()
}

/// How to fill the inputs.
#[derive(Clone, Copy, Debug)]
enum Fill {
    /// Multiples of 1/8 in [-2, 2] from a seeded generator: all arithmetic is exact.
    Exact(u64),
    /// `Tensor::random(shape, seed)`, values in [-1, 1).
    Random(u64),
}

/// Multiples of 1/8 in [-2, 2] (a 64-bit LCG; any decent stream will do).
fn exact_tensor(shape: Vec<usize>, seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    let data = (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let k = ((state >> 33) % 33) as i64 - 16;
            k as f64 / 8.0
        })
        .collect();
    Tensor { shape, data }
}

fn make_inputs(checked: &Checked, sizes: &Sizes, fill: Fill) -> Inputs {
    input_shapes(checked, sizes)
        .into_iter()
        .enumerate()
        .map(|(k, (name, shape))| {
            let t = match fill {
                Fill::Exact(seed) => exact_tensor(shape, seed * 1000 + k as u64),
                Fill::Random(seed) => Tensor::random(shape, seed * 1000 + k as u64),
            };
            (name, t)
        })
        .collect()
}

fn eval(checked: &Checked, def: &str, sizes: &Sizes, inputs: &Inputs, src: &str) -> Tensor {
    eval_def(
        &checked.program,
        def,
        sizes,
        inputs,
        &EvalOptions::default(),
    )
    .unwrap_or_else(|d| {
        panic!(
            "evaluating `{def}` at {} failed:\n{}",
            show_sizes(sizes),
            render_to_string(&[d], "example.atl", src)
        )
    })
}

/// The checker's static shape of `def`, evaluated at `sizes`.
fn static_shape(checked: &Checked, def: &str, sizes: &Sizes) -> Vec<usize> {
    let shape = checked
        .shapes
        .globals
        .get(def)
        .unwrap_or_else(|| panic!("no static shape for `{def}`"));
    let env = |name: &str| sizes.get(name).copied();
    shape
        .iter()
        .map(|d| usize::try_from(d.eval(&env).expect("extent evaluates")).expect("extent >= 0"))
        .collect()
}

/// Compares a result with the expected tensor: exactly (`==`, so `-0.0 == 0.0`) or
/// within `RTOL` relative to the largest expected magnitude.
fn assert_matches(got: &Tensor, want: &Tensor, exact: bool, what: &str) {
    assert_eq!(got.shape, want.shape, "{what}: shape");
    assert_eq!(got.data.len(), want.data.len(), "{what}: element count");
    let scale = want
        .data
        .iter()
        .fold(f64::MIN_POSITIVE, |m, v| m.max(v.abs()));
    for (k, (&g, &w)) in got.data.iter().zip(&want.data).enumerate() {
        let ok = if exact {
            g == w
        } else {
            (g - w).abs() <= RTOL * scale.max(w.abs())
        };
        assert!(
            ok,
            "{what}: element {k} (row-major) is {g:e}, expected {w:e} (shape {:?})",
            want.shape
        );
    }
}

/// Bit-for-bit equality of two results.
fn assert_bit_identical(a: &Tensor, b: &Tensor, what: &str) {
    assert_eq!(a.shape, b.shape, "{what}: shape");
    let bits = |t: &Tensor| t.data.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert!(bits(a) == bits(b), "{what}: results differ in their bits");
}

// ---------------------------------------------------------------------------------------
// The driver
// ---------------------------------------------------------------------------------------

type Reference = fn(&Sizes, &Inputs) -> Tensor;

struct Example {
    /// Folder and file stem under `examples/`.
    name: &'static str,
    /// Every `def` of the file, in order; the last is the main one.
    defs: &'static [&'static str],
    /// Size assignments to evaluate at.
    sizes: &'static [&'static [(&'static str, i64)]],
    /// The independent implementation every `def` must agree with.
    reference: Reference,
}

/// Checks the example, evaluates every definition against the reference, and runs the
/// formatter round trip.
fn run_example(ex: &Example) {
    let src = load(ex.name);
    let file = format!("examples/{0}/{0}.atl", ex.name);
    let checked = check(&src, &file);

    let names: Vec<&str> = checked
        .program
        .defs
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(
        names, ex.defs,
        "{file}: definitions (the last is the default)"
    );

    for pairs in ex.sizes {
        let sizes = sizes_of(pairs);
        for fill in [Fill::Exact(1), Fill::Exact(2), Fill::Random(7)] {
            let inputs = make_inputs(&checked, &sizes, fill);
            let want = (ex.reference)(&sizes, &inputs);
            for def in ex.defs {
                let what = format!("{file}: `{def}` at {} with {fill:?}", show_sizes(&sizes));
                let got = eval(&checked, def, &sizes, &inputs, &src);
                assert_eq!(
                    got.shape,
                    static_shape(&checked, def, &sizes),
                    "{what}: result shape vs static shape"
                );
                assert_matches(&got, &want, matches!(fill, Fill::Exact(_)), &what);
            }
        }
    }

    formatter_round_trip(ex, &src, &file, &checked);
}

/// The comment lines of a source text, trimmed, in order.
fn comment_lines(src: &str) -> Vec<&str> {
    src.lines()
        .map(str::trim)
        .filter(|l| l.starts_with('#'))
        .collect()
}

fn format_or_panic(src: &str, style: Style, file: &str) -> String {
    format_source(src, style).unwrap_or_else(|diags| {
        panic!(
            "{file}: format_source({style:?}) failed:\n{}",
            render_to_string(&diags, file, src)
        )
    })
}

fn formatter_round_trip(ex: &Example, src: &str, file: &str, checked: &Checked) {
    let mut outputs = Vec::new();
    for style in [Style::default(), Style { unicode: true }] {
        let what = format!("{file} formatted with {style:?}");
        let formatted = format_or_panic(src, style, file);
        let again = format_or_panic(&formatted, style, &what);
        assert_eq!(again, formatted, "{what}: formatting is not idempotent");

        let re = check(&formatted, &what);
        let names: Vec<&str> = re.program.defs.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ex.defs, "{what}: definitions");
        for (a, b) in checked.program.defs.iter().zip(&re.program.defs) {
            assert!(
                alpha_eq(&a.body, &b.body),
                "{what}: `{}` changed meaning:\n  before: {:?}\n  after:  {:?}",
                a.name,
                a.body,
                b.body
            );
        }
        assert_eq!(
            comment_lines(&formatted),
            comment_lines(src),
            "{what}: comments lost or reordered"
        );

        for pairs in ex.sizes {
            let sizes = sizes_of(pairs);
            let inputs = make_inputs(checked, &sizes, Fill::Random(11));
            for def in ex.defs {
                let original = eval(checked, def, &sizes, &inputs, src);
                let reformatted = eval(&re, def, &sizes, &inputs, &formatted);
                assert_bit_identical(
                    &original,
                    &reformatted,
                    &format!("{what}: `{def}` at {}", show_sizes(&sizes)),
                );
            }
        }
        outputs.push(formatted);
    }
    let ascii_of_unicode = format_or_panic(&outputs[1], Style::default(), file);
    assert_eq!(
        ascii_of_unicode, outputs[0],
        "{file}: the Unicode output formatted in ASCII differs from the ASCII output"
    );
}

// ---------------------------------------------------------------------------------------
// Independent references (plain loops, from the thesis / bench-kit definitions)
// ---------------------------------------------------------------------------------------

fn size(sizes: &Sizes, name: &str) -> usize {
    usize::try_from(sizes[name]).expect("sizes are positive")
}

fn data<'a>(inputs: &'a Inputs, name: &str) -> &'a [f64] {
    &inputs[name].data
}

/// Thesis §3.1: out[i] = f[i - 1] + f[i], with f[-1] = 0.
fn ref_pipeline(sizes: &Sizes, inputs: &Inputs) -> Tensor {
    let n = size(sizes, "n");
    let f = data(inputs, "f");
    let out = (0..n)
        .map(|i| if i == 0 { f[0] } else { f[i - 1] + f[i] })
        .collect();
    Tensor {
        shape: vec![n],
        data: out,
    }
}

/// C = A B with A : [M, K], B : [K, N].
fn ref_matmul(sizes: &Sizes, inputs: &Inputs) -> Tensor {
    let (m, n, k) = (size(sizes, "M"), size(sizes, "N"), size(sizes, "K"));
    let (a, b) = (data(inputs, "A"), data(inputs, "B"));
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut s = 0.0;
            for kk in 0..k {
                s += a[i * k + kk] * b[kk * n + j];
            }
            c[i * n + j] = s;
        }
    }
    Tensor {
        shape: vec![m, n],
        data: c,
    }
}

/// The unnormalized 3x3 box blur with zero boundary, as a window sum: out[y][x] is the
/// sum of img over the in-range cells of the 3x3 window centred at (y, x). (The kit's
/// two-stage definition is the same function; `blur_reference_is_the_kits_blur3x3`
/// checks that.)
fn ref_blur(sizes: &Sizes, inputs: &Inputs) -> Tensor {
    let (h, w) = (size(sizes, "H"), size(sizes, "W"));
    let img = data(inputs, "img");
    let mut out = vec![0.0; h * w];
    for y in 0..h {
        for x in 0..w {
            let mut s = 0.0;
            for yy in y.saturating_sub(1)..(y + 2).min(h) {
                for xx in x.saturating_sub(1)..(x + 2).min(w) {
                    s += img[yy * w + xx];
                }
            }
            out[y * w + x] = s;
        }
    }
    Tensor {
        shape: vec![h, w],
        data: out,
    }
}

/// The bench kit's reference `blur3x3` (bench/src/impl_naive.c), two stages with every
/// guard written out, in `f64`.
fn kit_blur3x3(img: &[f64], h: usize, w: usize) -> Vec<f64> {
    let mut bx = vec![0.0; h * w];
    for y in 0..h {
        for x in 0..w {
            let mut s = 0.0;
            if x >= 1 {
                s += img[y * w + (x - 1)];
            }
            s += img[y * w + x];
            if x + 1 < w {
                s += img[y * w + (x + 1)];
            }
            bx[y * w + x] = s;
        }
    }
    let mut out = vec![0.0; h * w];
    for y in 0..h {
        for x in 0..w {
            let mut s = 0.0;
            if y >= 1 {
                s += bx[(y - 1) * w + x];
            }
            s += bx[y * w + x];
            if y + 1 < h {
                s += bx[(y + 1) * w + x];
            }
            out[y * w + x] = s;
        }
    }
    out
}

/// Elementwise addition: row-major 4-D tensors of one shape add as flat vectors.
fn ref_tensor_add(sizes: &Sizes, inputs: &Inputs) -> Tensor {
    let shape = vec![
        size(sizes, "A"),
        size(sizes, "B"),
        size(sizes, "C"),
        size(sizes, "D"),
    ];
    let out = data(inputs, "t1")
        .iter()
        .zip(data(inputs, "t2"))
        .map(|(a, b)| a + b)
        .collect();
    Tensor { shape, data: out }
}

struct ConvSizes {
    b: usize,
    c: usize,
    k: usize,
    w: usize,
    r: usize,
}

fn conv_sizes(sizes: &Sizes) -> ConvSizes {
    ConvSizes {
        b: size(sizes, "B"),
        c: size(sizes, "C"),
        k: size(sizes, "K"),
        w: size(sizes, "W"),
        r: size(sizes, "R"),
    }
}

/// The kit's conv1d (bench/src/impl_naive.c): out[n][k][p] =
/// sum_{c, r} w[k][c][r] * x[n][c][p + r], x[n][c][q] = 0 for q >= W (gather form).
fn ref_conv1d_gather(sizes: &Sizes, inputs: &Inputs) -> Tensor {
    let ConvSizes { b, c, k, w, r } = conv_sizes(sizes);
    let (x, wt) = (data(inputs, "x"), data(inputs, "w"));
    let mut out = vec![0.0; b * k * w];
    for n in 0..b {
        for kk in 0..k {
            for p in 0..w {
                let mut s = 0.0;
                for cc in 0..c {
                    for rr in 0..r {
                        if p + rr < w {
                            s += wt[(kk * c + cc) * r + rr] * x[(n * c + cc) * w + (p + rr)];
                        }
                    }
                }
                out[(n * k + kk) * w + p] = s;
            }
        }
    }
    Tensor {
        shape: vec![b, k, w],
        data: out,
    }
}

/// The multi-channel 3x3 convolution with a zero border, as plain loops: the taps that
/// fall outside the image are skipped.
fn ref_conv2d(sizes: &Sizes, inputs: &Inputs) -> Tensor {
    let (c, k, h, w) = (
        size(sizes, "C"),
        size(sizes, "K"),
        size(sizes, "H"),
        size(sizes, "W"),
    );
    let (inp, wt) = (data(inputs, "inp"), data(inputs, "w"));
    let mut out = vec![0.0; k * h * w];
    for kk in 0..k {
        for y in 0..h {
            for x in 0..w {
                let mut s = 0.0;
                for cc in 0..c {
                    for ry in 0..3 {
                        for rx in 0..3 {
                            let (yy, xx) = (y + ry, x + rx);
                            if yy >= 1 && yy <= h && xx >= 1 && xx <= w {
                                s += wt[((kk * c + cc) * 3 + ry) * 3 + rx]
                                    * inp[(cc * h + yy - 1) * w + xx - 1];
                            }
                        }
                    }
                }
                out[(kk * h + y) * w + x] = s;
            }
        }
    }
    Tensor {
        shape: vec![k, h, w],
        data: out,
    }
}

/// The same convolution computed by scattering: every input element x[n][c][i] adds
/// x[n][c][i] * w[k][c][r] into each output position p = i - r that exists.
fn ref_conv1d_scatter(sizes: &Sizes, inputs: &Inputs) -> Tensor {
    let ConvSizes { b, c, k, w, r } = conv_sizes(sizes);
    let (x, wt) = (data(inputs, "x"), data(inputs, "w"));
    let mut out = vec![0.0; b * k * w];
    for n in 0..b {
        for cc in 0..c {
            for i in 0..w {
                let xv = x[(n * c + cc) * w + i];
                for kk in 0..k {
                    for rr in 0..r.min(i + 1) {
                        let p = i - rr;
                        out[(n * k + kk) * w + p] += xv * wt[(kk * c + cc) * r + rr];
                    }
                }
            }
        }
    }
    Tensor {
        shape: vec![b, k, w],
        data: out,
    }
}

/// out[j][i] = a[i][j] for a : [n, m].
fn ref_transpose(sizes: &Sizes, inputs: &Inputs) -> Tensor {
    let (n, m) = (size(sizes, "n"), size(sizes, "m"));
    let a = data(inputs, "a");
    let mut out = vec![0.0; m * n];
    for (idx, &v) in a.iter().enumerate() {
        let (i, j) = (idx / m, idx % m);
        out[j * n + i] = v;
    }
    Tensor {
        shape: vec![m, n],
        data: out,
    }
}

/// The dot product `sum_i f[i] * w[i]` (`examples/peel`).
fn ref_peel(sizes: &Sizes, inputs: &Inputs) -> Tensor {
    let n = size(sizes, "n");
    let (f, w) = (data(inputs, "f"), data(inputs, "w"));
    let mut s = 0.0;
    for i in 0..n {
        s += f[i] * w[i];
    }
    Tensor {
        shape: vec![],
        data: vec![s],
    }
}

// ---------------------------------------------------------------------------------------
// Size assignments
// ---------------------------------------------------------------------------------------

/// `(B, C, K, W, R)` for the convolutions: all ones, a filter wider than the signal
/// (R > W), R = 1, and general non-square cases.
const CONV_SIZES: &[&[(&str, i64)]] = &[
    &[("B", 1), ("C", 1), ("K", 1), ("W", 1), ("R", 1)],
    &[("B", 1), ("C", 1), ("K", 1), ("W", 1), ("R", 3)],
    &[("B", 2), ("C", 3), ("K", 4), ("W", 5), ("R", 3)],
    &[("B", 1), ("C", 2), ("K", 3), ("W", 7), ("R", 4)],
    &[("B", 3), ("C", 1), ("K", 2), ("W", 2), ("R", 5)],
    &[("B", 2), ("C", 2), ("K", 1), ("W", 6), ("R", 1)],
];

/// C = Aᵀ B with A : [K, M] (stored k-major), B : [K, N].
fn ref_matmul_at(sizes: &Sizes, inputs: &Inputs) -> Tensor {
    let (m, n, k) = (size(sizes, "M"), size(sizes, "N"), size(sizes, "K"));
    let (a, b) = (data(inputs, "A"), data(inputs, "B"));
    let mut c = vec![0.0; m * n];
    for kk in 0..k {
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] += a[kk * m + i] * b[kk * n + j];
            }
        }
    }
    Tensor {
        shape: vec![m, n],
        data: c,
    }
}

// ---------------------------------------------------------------------------------------
// One test per example
// ---------------------------------------------------------------------------------------

#[test]
fn pipeline() {
    // `assume n >= 2` rules out n = 1.
    run_example(&Example {
        name: "pipeline",
        defs: &["pipeline"],
        sizes: &[&[("n", 2)], &[("n", 3)], &[("n", 10)]],
        reference: ref_pipeline,
    });
}

#[test]
fn matmul() {
    run_example(&Example {
        name: "matmul",
        defs: &["matmul"],
        sizes: &[
            &[("M", 1), ("N", 1), ("K", 1)],
            &[("M", 3), ("N", 4), ("K", 5)],
            &[("M", 5), ("N", 3), ("K", 2)],
            &[("M", 1), ("N", 7), ("K", 3)],
            &[("M", 4), ("N", 1), ("K", 1)],
            &[("M", 2), ("N", 2), ("K", 6)],
        ],
        reference: ref_matmul,
    });
}

#[test]
fn matmul_at() {
    run_example(&Example {
        name: "matmul_at",
        defs: &["matmul_at"],
        sizes: &[
            &[("M", 1), ("N", 1), ("K", 1)],
            &[("M", 3), ("N", 4), ("K", 5)],
            &[("M", 5), ("N", 3), ("K", 2)],
            &[("M", 1), ("N", 7), ("K", 3)],
            &[("M", 4), ("N", 1), ("K", 1)],
            &[("M", 2), ("N", 2), ("K", 6)],
        ],
        reference: ref_matmul_at,
    });
}

#[test]
fn blur() {
    run_example(&Example {
        name: "blur",
        defs: &["blur"],
        sizes: &[
            &[("H", 1), ("W", 1)],
            &[("H", 1), ("W", 6)],
            &[("H", 5), ("W", 1)],
            &[("H", 2), ("W", 2)],
            &[("H", 3), ("W", 7)],
            &[("H", 6), ("W", 4)],
        ],
        reference: ref_blur,
    });
}

#[test]
fn tensor_add() {
    run_example(&Example {
        name: "tensor_add",
        defs: &["tensor_add_op", "tensor_add"],
        sizes: &[
            &[("A", 1), ("B", 1), ("C", 1), ("D", 1)],
            &[("A", 2), ("B", 3), ("C", 4), ("D", 5)],
            &[("A", 5), ("B", 1), ("C", 3), ("D", 2)],
            &[("A", 1), ("B", 2), ("C", 1), ("D", 7)],
        ],
        reference: ref_tensor_add,
    });
}

#[test]
fn conv1d_gather() {
    run_example(&Example {
        name: "conv1d_gather",
        defs: &["conv1d_gather"],
        sizes: CONV_SIZES,
        reference: ref_conv1d_gather,
    });
}

#[test]
fn conv1d_scatter() {
    run_example(&Example {
        name: "conv1d_scatter",
        defs: &["conv1d_scatter"],
        sizes: CONV_SIZES,
        reference: ref_conv1d_scatter,
    });
}

#[test]
fn conv1d_kit() {
    run_example(&Example {
        name: "conv1d_kit",
        defs: &["conv1d_kit"],
        sizes: CONV_SIZES,
        reference: ref_conv1d_gather,
    });
}

#[test]
fn conv2d() {
    run_example(&Example {
        name: "conv2d",
        defs: &["conv2d"],
        sizes: &[
            &[("C", 1), ("K", 1), ("H", 1), ("W", 1)],
            &[("C", 2), ("K", 3), ("H", 4), ("W", 5)],
            &[("C", 3), ("K", 1), ("H", 2), ("W", 7)],
            &[("C", 1), ("K", 2), ("H", 6), ("W", 3)],
        ],
        reference: ref_conv2d,
    });
}

#[test]
fn im2col() {
    run_example(&Example {
        name: "im2col",
        defs: &["conv", "im2col"],
        sizes: CONV_SIZES,
        reference: ref_conv1d_gather,
    });
}

#[test]
fn transpose() {
    run_example(&Example {
        name: "transpose",
        defs: &["transpose_op", "transpose_gen"],
        sizes: &[
            &[("n", 1), ("m", 1)],
            &[("n", 1), ("m", 5)],
            &[("n", 4), ("m", 1)],
            &[("n", 3), ("m", 7)],
            &[("n", 6), ("m", 2)],
        ],
        reference: ref_transpose,
    });
}

#[test]
fn peel() {
    // The file also holds a user rule (`rule` item): it must not disturb the front end
    // or the formatter round trip.
    run_example(&Example {
        name: "peel",
        defs: &["dot"],
        sizes: &[&[("n", 1)], &[("n", 2)], &[("n", 7)]],
        reference: ref_peel,
    });
}

// ---------------------------------------------------------------------------------------
// Cross-checks of the references and hand-computed values
// ---------------------------------------------------------------------------------------

/// The window-sum blur reference is the kit's two-stage `blur3x3`.
#[test]
fn blur_reference_is_the_kits_blur3x3() {
    for (h, w) in [(1, 1), (1, 6), (5, 1), (2, 2), (3, 7), (6, 4), (9, 9)] {
        let sizes = sizes_of(&[("H", h), ("W", w)]);
        let (h, w) = (h as usize, w as usize);
        let img = exact_tensor(vec![h, w], 3);
        let want = ref_blur(&sizes, &[("img".to_string(), img.clone())].into());
        let kit = Tensor {
            shape: vec![h, w],
            data: kit_blur3x3(&img.data, h, w),
        };
        assert_matches(&kit, &want, true, &format!("blur references at {h}x{w}"));
    }
}

/// The gather and scatter references compute the same convolution, and all four
/// convolution examples agree with each other on the same inputs.
#[test]
fn convolution_forms_agree() {
    let files = [
        ("conv1d_gather", "conv1d_gather"),
        ("conv1d_scatter", "conv1d_scatter"),
        ("conv1d_kit", "conv1d_kit"),
        ("im2col", "im2col"),
        ("im2col", "conv"),
    ];
    let programs: Vec<(String, Checked, &str)> = files
        .iter()
        .map(|(name, def)| {
            let src = load(name);
            let checked = check(&src, name);
            (src, checked, *def)
        })
        .collect();
    for pairs in CONV_SIZES {
        let sizes = sizes_of(pairs);
        let inputs = make_inputs(&programs[0].1, &sizes, Fill::Exact(5));
        let gather = ref_conv1d_gather(&sizes, &inputs);
        let scatter = ref_conv1d_scatter(&sizes, &inputs);
        let what = format!("at {}", show_sizes(&sizes));
        assert_matches(
            &scatter,
            &gather,
            true,
            &format!("scatter vs gather reference {what}"),
        );
        for (src, checked, def) in &programs {
            let got = eval(checked, def, &sizes, &inputs, src);
            assert_matches(&got, &gather, true, &format!("`{def}` {what}"));
        }
    }
}

fn tensor(shape: &[usize], data: &[f64]) -> Tensor {
    Tensor {
        shape: shape.to_vec(),
        data: data.to_vec(),
    }
}

fn eval_example(name: &str, def: &str, sizes: &[(&str, i64)], inputs: &[(&str, Tensor)]) -> Tensor {
    let src = load(name);
    let checked = check(&src, name);
    let inputs: Inputs = inputs
        .iter()
        .map(|(n, t)| (n.to_string(), t.clone()))
        .collect();
    eval(&checked, def, &sizes_of(sizes), &inputs, &src)
}

/// Values worked out by hand, independent of both the interpreter and the references.
#[test]
fn hand_computed_values() {
    // pipeline: [1, 2, 3, 4] -> [1, 3, 5, 7].
    let got = eval_example(
        "pipeline",
        "pipeline",
        &[("n", 4)],
        &[("f", tensor(&[4], &[1.0, 2.0, 3.0, 4.0]))],
    );
    assert_eq!(got, tensor(&[4], &[1.0, 3.0, 5.0, 7.0]));

    // matmul: [[1, 2], [3, 4]] x [[5, 6], [7, 8]] = [[19, 22], [43, 50]]; and a
    // [1, 3] x [3, 2] product.
    let got = eval_example(
        "matmul",
        "matmul",
        &[("M", 2), ("N", 2), ("K", 2)],
        &[
            ("A", tensor(&[2, 2], &[1.0, 2.0, 3.0, 4.0])),
            ("B", tensor(&[2, 2], &[5.0, 6.0, 7.0, 8.0])),
        ],
    );
    assert_eq!(got, tensor(&[2, 2], &[19.0, 22.0, 43.0, 50.0]));
    let got = eval_example(
        "matmul",
        "matmul",
        &[("M", 1), ("N", 2), ("K", 3)],
        &[
            ("A", tensor(&[1, 3], &[1.0, -1.0, 2.0])),
            ("B", tensor(&[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])),
        ],
    );
    assert_eq!(got, tensor(&[1, 2], &[8.0, 10.0]));

    // blur of a 3x4 image of ones: the count of in-range neighbours (corners 4,
    // edges 6, interior 9); of a single 1 in the middle of a 3x3 zero image: all ones.
    let got = eval_example(
        "blur",
        "blur",
        &[("H", 3), ("W", 4)],
        &[("img", tensor(&[3, 4], &[1.0; 12]))],
    );
    assert_eq!(
        got,
        tensor(
            &[3, 4],
            &[4.0, 6.0, 6.0, 4.0, 6.0, 9.0, 9.0, 6.0, 4.0, 6.0, 6.0, 4.0]
        )
    );
    let mut impulse = [0.0; 9];
    impulse[4] = 1.0;
    let got = eval_example(
        "blur",
        "blur",
        &[("H", 3), ("W", 3)],
        &[("img", tensor(&[3, 3], &impulse))],
    );
    assert_eq!(got, tensor(&[3, 3], &[1.0; 9]));

    // tensor_add on [1, 1, 1, 2].
    for def in ["tensor_add", "tensor_add_op"] {
        let got = eval_example(
            "tensor_add",
            def,
            &[("A", 1), ("B", 1), ("C", 1), ("D", 2)],
            &[
                ("t1", tensor(&[1, 1, 1, 2], &[1.5, -2.0])),
                ("t2", tensor(&[1, 1, 1, 2], &[0.25, 2.0])),
            ],
        );
        assert_eq!(got, tensor(&[1, 1, 1, 2], &[1.75, 0.0]), "{def}");
    }

    // 1-D convolution, B = C = K = 1, W = 4, R = 2: x = [1, 2, 3, 4], w = [10, 1]:
    // out[p] = 10 x[p] + x[p + 1] with x[4] = 0 -> [12, 23, 34, 40].
    for (name, def) in [
        ("conv1d_gather", "conv1d_gather"),
        ("conv1d_scatter", "conv1d_scatter"),
        ("conv1d_kit", "conv1d_kit"),
        ("im2col", "conv"),
        ("im2col", "im2col"),
    ] {
        let got = eval_example(
            name,
            def,
            &[("B", 1), ("C", 1), ("K", 1), ("W", 4), ("R", 2)],
            &[
                ("x", tensor(&[1, 1, 4], &[1.0, 2.0, 3.0, 4.0])),
                ("w", tensor(&[1, 1, 2], &[10.0, 1.0])),
            ],
        );
        assert_eq!(
            got,
            tensor(&[1, 1, 4], &[12.0, 23.0, 34.0, 40.0]),
            "{name}: {def}"
        );
    }

    // Two channels and two filters, W = 2, R = 2: x[c] = [1, 2] and [3, 4];
    // filter 0 = [[1, 0], [0, 1]] (x0[p] + x1[p + 1]), filter 1 = [[0, 0], [1, 1]]
    // (x1[p] + x1[p + 1]) -> [[1 + 4, 2 + 0], [3 + 4, 4 + 0]].
    for (name, def) in [
        ("conv1d_gather", "conv1d_gather"),
        ("conv1d_scatter", "conv1d_scatter"),
        ("conv1d_kit", "conv1d_kit"),
        ("im2col", "conv"),
        ("im2col", "im2col"),
    ] {
        let got = eval_example(
            name,
            def,
            &[("B", 1), ("C", 2), ("K", 2), ("W", 2), ("R", 2)],
            &[
                ("x", tensor(&[1, 2, 2], &[1.0, 2.0, 3.0, 4.0])),
                (
                    "w",
                    tensor(&[2, 2, 2], &[1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0]),
                ),
            ],
        );
        assert_eq!(
            got,
            tensor(&[1, 2, 2], &[5.0, 2.0, 7.0, 4.0]),
            "{name}: {def}"
        );
    }

    // transpose of [[1, 2, 3], [4, 5, 6]].
    for def in ["transpose_op", "transpose_gen"] {
        let got = eval_example(
            "transpose",
            def,
            &[("n", 2), ("m", 3)],
            &[("a", tensor(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))],
        );
        assert_eq!(
            got,
            tensor(&[3, 2], &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]),
            "{def}"
        );
    }
}

/// The documented CLI demo, `atl eval examples/matmul/matmul.atl --sizes M=3,N=4,K=5
/// --input A=random:1 --input B=random:2 --json`, computed through the library.
#[test]
fn matmul_cli_demo() {
    let sizes = sizes_of(&[("M", 3), ("N", 4), ("K", 5)]);
    let inputs: Inputs = [
        ("A".to_string(), Tensor::random(vec![3, 5], 1)),
        ("B".to_string(), Tensor::random(vec![5, 4], 2)),
    ]
    .into();
    let src = load("matmul");
    let checked = check(&src, "matmul");
    // The CLI evaluates the last definition when no `--def` is given.
    let last = &checked.program.defs.last().expect("a definition").name;
    let got = eval(&checked, last, &sizes, &inputs, &src);
    assert_matches(&got, &ref_matmul(&sizes, &inputs), false, "matmul CLI demo");
}

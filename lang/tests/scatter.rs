//! Scatter in the reference interpreter (`atl_lang::scatter`): a one-hot generator is
//! evaluated at its one element, and a sum of them adds each in place. Checked against
//! two independent expectations: the same values written so that no generator is
//! one-hot (`gen i: sum p: [crd[p] == i] * …`, the loop the fast path skips, which
//! adds the same terms in the same order, so the results are bit-identical), and
//! products computed here without the interpreter.

use std::collections::BTreeMap;

use atl_lang::interp::{EvalOptions, eval_def};
use atl_lang::rng::SplitMix64;
use atl_lang::{Checked, Tensor, check_source};

/// A COO matrix-vector product in its scatter form and in its gather form, a CSC one
/// likewise, and one-hot generators with an offset, a second conjunct, a tensor
/// value and a target outside the generator.
const PROGRAM: &str = "size n, m, nnz
input row : int[nnz] in 0..n
input col : int[nnz] in 0..m
input pos : int[m + 1] in 0..nnz + 1 sorted
input vals : [nnz]
input v : [m]
input w : [n, 3]
def coo_scatter = sum p < nnz: gen i < n: [row[p] == i] * (vals[p] * v[col[p]])
def coo_gather = gen i < n: sum p < nnz: [row[p] == i] * (vals[p] * v[col[p]])
def csc_scatter = sum j < m, p in pos[j]..pos[j + 1]: gen i < n: [i == row[p]] * (vals[p] * v[j])
def csc_gather = gen i < n: sum j < m, p in pos[j]..pos[j + 1]: [i == row[p]] * (vals[p] * v[j])
def offset_scatter = sum p < nnz: gen i in 1..n + 1: [i - 1 == row[p] && i <= col[p] + 1] * vals[p]
def offset_gather = gen i in 1..n + 1: sum p < nnz: [i - 1 == row[p] && i <= col[p] + 1] * vals[p]
def rows_scatter = sum p < nnz: gen i < n: [row[p] == i] * (gen k < 3: vals[p] * w[i, k])
def rows_gather = gen i < n: sum p < nnz: [row[p] == i] * (gen k < 3: vals[p] * w[i, k])
def outside = gen i < n: [i == n + 2] * v[0]
def one = gen i < n: [i == n - 1] * v[0]
def negated = gen i < n: [i == n - 1] * -v[0]
def negated_loop = gen i < n: [n - 1 <= i] * -v[0]
def read_at = gen j < n: (sum p < nnz: gen i < n: [row[p] == i] * (gen k < 3: vals[p] * w[i, k]))[j]
def read_at_loop = gen j < n: (sum p < nnz: gen i < n: [row[p] <= i && i <= row[p]] * (gen k < 3: vals[p] * w[i, k]))[j]
";

fn checked() -> Checked {
    let (checked, diags) = check_source(PROGRAM);
    checked.unwrap_or_else(|| panic!("{diags:?}"))
}

/// The project's one deterministic generator, with the two draws the cases need.
struct Rng(SplitMix64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0.below(n as usize) as u64
    }

    fn value(&mut self) -> f64 {
        (self.below(2001) as f64 - 1000.0) / 37.0
    }
}

struct Case {
    n: usize,
    m: usize,
    row: Vec<usize>,
    col: Vec<usize>,
    /// CSC column starts: `row` read as the rows of each column's run.
    pos: Vec<usize>,
    vals: Vec<f64>,
    v: Vec<f64>,
    w: Vec<f64>,
}

impl Case {
    /// Random entries, duplicates included; `row` sorted within each column's run.
    fn random(rng: &mut Rng, n: usize, m: usize, nnz: usize) -> Case {
        let row: Vec<usize> = (0..nnz).map(|_| rng.below(n as u64) as usize).collect();
        let col: Vec<usize> = (0..nnz).map(|_| rng.below(m as u64) as usize).collect();
        let mut cuts: Vec<usize> = (0..m - 1)
            .map(|_| rng.below(nnz as u64 + 1) as usize)
            .collect();
        cuts.sort();
        let mut pos = vec![0];
        pos.extend(cuts);
        pos.push(nnz);
        Case {
            n,
            m,
            row,
            col,
            pos,
            vals: (0..nnz).map(|_| rng.value()).collect(),
            v: (0..m).map(|_| rng.value()).collect(),
            w: (0..n * 3).map(|_| rng.value()).collect(),
        }
    }

    fn eval(&self, c: &Checked, def: &str) -> Tensor {
        let ints = |v: &[usize]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
        let vector = |v: Vec<f64>| Tensor::new(vec![v.len()], v).expect("a vector");
        let mut inputs = BTreeMap::new();
        inputs.insert("row".to_string(), vector(ints(&self.row)));
        inputs.insert("col".to_string(), vector(ints(&self.col)));
        inputs.insert("pos".to_string(), vector(ints(&self.pos)));
        inputs.insert("vals".to_string(), vector(self.vals.clone()));
        inputs.insert("v".to_string(), vector(self.v.clone()));
        inputs.insert(
            "w".to_string(),
            Tensor::new(vec![self.n, 3], self.w.clone()).expect("a matrix"),
        );
        let sizes: BTreeMap<String, i64> = [
            ("n", self.n as i64),
            ("m", self.m as i64),
            ("nnz", self.vals.len() as i64),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        eval_def(&c.program, def, &sizes, &inputs, &EvalOptions::default())
            .unwrap_or_else(|d| panic!("{def}: {d:?}"))
    }
}

#[test]
fn a_sum_of_one_hot_generators_is_the_gather_it_replaces_bit_for_bit() {
    let c = checked();
    let mut rng = Rng(SplitMix64::new(0x5eed_cafe));
    for (n, m, nnz) in [(1, 1, 1), (5, 3, 12), (17, 9, 40), (40, 33, 300)] {
        let case = Case::random(&mut rng, n, m, nnz);
        for (scatter, gather) in [
            ("coo_scatter", "coo_gather"),
            ("csc_scatter", "csc_gather"),
            ("offset_scatter", "offset_gather"),
            ("rows_scatter", "rows_gather"),
        ] {
            let (a, b) = (case.eval(&c, scatter), case.eval(&c, gather));
            assert_eq!(a.shape, b.shape, "{scatter} at {n}x{m}, {nnz}");
            let bits = |t: &Tensor| t.data.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&a), bits(&b), "{scatter} at {n}x{m}, {nnz}");
        }
    }
}

#[test]
fn the_scatter_forms_compute_the_products() {
    let c = checked();
    let mut rng = Rng(SplitMix64::new(0xfeed_beef));
    let case = Case::random(&mut rng, 11, 7, 50);
    // y[i] = Σ_p [row[p] == i] vals[p] v[col[p]], in p's order.
    let mut coo = vec![0.0; case.n];
    for p in 0..case.vals.len() {
        coo[case.row[p]] += case.vals[p] * case.v[case.col[p]];
    }
    assert_eq!(case.eval(&c, "coo_scatter").data, coo);
    // CSC: column j holds vals[pos[j]..pos[j + 1]] in rows row[…]. The sum over j
    // adds whole columns: each column's terms are added first.
    let mut csc = vec![0.0; case.n];
    for j in 0..case.m {
        let mut column = vec![0.0; case.n];
        for p in case.pos[j]..case.pos[j + 1] {
            column[case.row[p]] += case.vals[p] * case.v[j];
        }
        for (y, x) in csc.iter_mut().zip(column) {
            *y += x;
        }
    }
    assert_eq!(case.eval(&c, "csc_scatter").data, csc);
    // Shifted by one, and only where i <= col[p] + 1.
    let mut offset = vec![0.0; case.n];
    for p in 0..case.vals.len() {
        if case.row[p] < case.col[p] + 1 {
            offset[case.row[p]] += case.vals[p];
        }
    }
    assert_eq!(case.eval(&c, "offset_scatter").data, offset);
}

#[test]
fn a_target_outside_the_generator_gives_zeros_and_one_inside_its_element() {
    let c = checked();
    let mut rng = Rng(SplitMix64::new(7));
    let case = Case::random(&mut rng, 4, 2, 3);
    assert_eq!(case.eval(&c, "outside").data, vec![0.0; 4]);
    assert_eq!(case.eval(&c, "one").data, vec![0.0, 0.0, 0.0, case.v[0]]);
}

/// A one-hot generator alone writes its element, as the loop does: `-0.0` stays
/// `-0.0` (added to the zeroed output it would be `+0.0`).
#[test]
fn a_one_hot_generator_writes_its_element_bit_for_bit() {
    let c = checked();
    let mut rng = Rng(SplitMix64::new(11));
    let mut case = Case::random(&mut rng, 4, 2, 3);
    case.v[0] = 0.0;
    let bits = |t: Tensor| t.data.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let hot = bits(case.eval(&c, "negated"));
    assert_eq!(hot, bits(case.eval(&c, "negated_loop")));
    assert_eq!(hot[3], (-0.0f64).to_bits());
}

/// A sum of one-hot generators with tensor elements, read through an access, evaluates
/// the element the access selects (the soundness fuzzer's seed 37, case 27, panicked:
/// the in-place path wrote the generator's whole value into one row's buffer).
#[test]
fn a_scatter_read_through_an_access_is_its_element() {
    let c = checked();
    let mut rng = Rng(SplitMix64::new(13));
    let case = Case::random(&mut rng, 6, 3, 20);
    let bits = |t: Tensor| t.data.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bits(case.eval(&c, "read_at")),
        bits(case.eval(&c, "read_at_loop"))
    );
}

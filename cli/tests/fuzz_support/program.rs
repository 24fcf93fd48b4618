//! Random ATL programs for the soundness fuzzer: a small AST of our own (so that a
//! failing case can be shrunk subterm by subterm), its printer to `.atl` text, and a
//! shape-directed generator biased towards the constructs of issue 17's holes: guards
//! on size facts, `min`/`max`/`cdiv` extents, `++` read at offsets given by extents,
//! empty and possibly-negative ranges, nested sums and lets, reshape operators, and
//! huge constants and products in facts; max-reductions and scalar functions (finite
//! ones) in scalar positions; and in a fifth of the programs index arrays (issue 31),
//! read as gathers `x[crd[e]]`, `sum` bounds (`sum p in pos[e]..pos[e + 1]`,
//! `sum q < crd[e]`) and guards (`[crd[e] == j]`), their loads indexed in range.
//!
//! The generator aims at well-shaped programs but does not have to hit them: the front
//! end decides, and a program it rejects is simply counted and skipped.

use std::fmt::Write as _;

use super::rng::Rng;

/// An index expression. Printed fully parenthesized, so precedence never matters.
#[derive(Clone, Debug, PartialEq)]
pub enum Ix {
    C(i64),
    V(String),
    /// `+`, `-`, `*`, `/`, `%`.
    Bin(&'static str, Box<Ix>, Box<Ix>),
    /// `min`, `max`, `cdiv`.
    F(&'static str, Box<Ix>, Box<Ix>),
    /// A load of an index array, `crd[e]` (issue 31): only in access indices, `sum`
    /// bounds and guards, never in a `gen` bound, a shape, an amount or an `assume`.
    Load(String, Box<Ix>),
}

/// A predicate of a guard or an `assume`.
#[derive(Clone, Debug, PartialEq)]
pub enum Pr {
    Cmp(&'static str, Ix, Ix),
    And(Box<Pr>, Box<Pr>),
}

/// An expression.
#[derive(Clone, Debug, PartialEq)]
pub enum E {
    Lit(f64),
    /// An input, a `let` variable or a definition.
    Name(String),
    Acc(Box<E>, Ix),
    Neg(Box<E>),
    /// `+`, `-`, `*`.
    Bin(&'static str, Box<E>, Box<E>),
    Guard(Pr, Box<E>),
    Gen(String, Option<Ix>, Ix, Box<E>),
    Sum(String, Option<Ix>, Ix, Box<E>),
    /// A max-reduction of a scalar, always over `v < size` (never empty, so never
    /// `-inf`: the `real` grade's equalities hold over the reals only).
    Max(String, Ix, Box<E>),
    Let(String, Box<E>, Box<E>),
    Concat(Box<E>, Box<E>),
    /// `split`, `trunc_r`, `trunc_l`, `pad_r`, `pad_l`.
    Amt(&'static str, Ix, Box<E>),
    Transpose(Box<E>),
    Flatten(Box<E>),
    /// A scalar function: `abs`, `sqrt`, `max`, `min`, or `select` with the comparison
    /// after the name (`select>=`), its arguments in order.
    Call(&'static str, Vec<E>),
    /// An index's value as a scalar, `float(i + 1)` (issue 32).
    Coord(Ix),
}

/// An index array's declaration (issue 31, `docs/language.md` §3):
/// `input NAME : int[EXTENT] in LO..HI` (`sorted`), its extent and range over the
/// sizes that extents use.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexArray {
    pub name: String,
    pub extent: Ix,
    pub lo: Ix,
    pub hi: Ix,
    pub sorted: bool,
}

/// A whole program: declarations, definitions and one derivation of the last one.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub sizes: Vec<String>,
    pub assumes: Vec<Pr>,
    pub inputs: Vec<(String, Vec<Ix>)>,
    /// Index arrays, declared after the tensor inputs (empty in most programs).
    pub index_arrays: Vec<IndexArray>,
    /// The matrix inputs declared column-major (`layout (n, m):(1, n)`): the kernel
    /// receives them in that order.
    pub column_major: Vec<String>,
    pub defs: Vec<(String, E)>,
    pub steps: Vec<String>,
}

/// The name of the derivation every generated program ends with.
pub const DERIVED: &str = "d";

// ---------------------------------------------------------------------------------------
// Printing
// ---------------------------------------------------------------------------------------

impl std::fmt::Display for Ix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // A negative constant is written as a subtraction: no reliance on how the
            // lexer treats `-3` after an operator.
            Ix::C(c) if *c < 0 => write!(f, "(0 - {})", c.unsigned_abs()),
            Ix::C(c) => write!(f, "{c}"),
            Ix::V(v) => write!(f, "{v}"),
            Ix::Bin(op, a, b) => write!(f, "({a} {op} {b})"),
            Ix::F(name, a, b) => write!(f, "{name}({a}, {b})"),
            Ix::Load(array, i) => write!(f, "{array}[{i}]"),
        }
    }
}

impl std::fmt::Display for Pr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pr::Cmp(op, a, b) => write!(f, "{a} {op} {b}"),
            Pr::And(a, b) => write!(f, "{a} && {b}"),
        }
    }
}

fn range(lo: &Option<Ix>, hi: &Ix) -> String {
    match lo {
        Some(lo) => format!("in {lo}..{hi}"),
        None => format!("< {hi}"),
    }
}

impl std::fmt::Display for E {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            E::Lit(v) => {
                if *v < 0.0 {
                    write!(f, "({v:?})")
                } else {
                    write!(f, "{v:?}")
                }
            }
            E::Name(n) => write!(f, "{n}"),
            E::Coord(i) => write!(f, "float({i})"),
            E::Acc(t, i) => match &**t {
                E::Name(_) | E::Acc(..) => write!(f, "{t}[{i}]"),
                _ => write!(f, "({t})[{i}]"),
            },
            E::Neg(a) => write!(f, "(-({a}))"),
            E::Bin(op, a, b) => write!(f, "({a} {op} {b})"),
            E::Guard(p, b) => write!(f, "([{p}] * {b})"),
            E::Gen(v, lo, hi, b) => write!(f, "(gen {v} {}: {b})", range(lo, hi)),
            E::Sum(v, lo, hi, b) => write!(f, "(sum {v} {}: {b})", range(lo, hi)),
            E::Max(v, hi, b) => write!(f, "(max {v} < {hi}: {b})"),
            E::Let(v, val, b) => write!(f, "(let {v} = {val} in {b})"),
            E::Concat(a, b) => write!(f, "({a} ++ {b})"),
            E::Amt(op, k, a) => write!(f, "{op}({k}, {a})"),
            E::Transpose(a) => write!(f, "transpose({a})"),
            E::Flatten(a) => write!(f, "flatten({a})"),
            E::Call(name, args) => match name.strip_prefix("select") {
                Some(op) if !op.is_empty() => write!(
                    f,
                    "select({} {op} {}, {}, {})",
                    args[0], args[1], args[2], args[3]
                ),
                _ => {
                    let args: Vec<String> = args.iter().map(E::to_string).collect();
                    write!(f, "{name}({})", args.join(", "))
                }
            },
        }
    }
}

impl Program {
    /// The program as an `.atl` file.
    pub fn text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "size {}", self.sizes.join(", "));
        for a in &self.assumes {
            let _ = writeln!(s, "assume {a}");
        }
        for (name, shape) in &self.inputs {
            let dims: Vec<String> = shape.iter().map(Ix::to_string).collect();
            let _ = write!(s, "input {name} : [{}]", dims.join(", "));
            if let [rows, _] = dims.as_slice()
                && self.column_major.contains(name)
            {
                let _ = write!(s, " layout ({}):(1, {rows})", dims.join(", "));
            }
            let _ = writeln!(s);
        }
        for a in &self.index_arrays {
            let _ = writeln!(
                s,
                "input {} : int[{}] in {}..{}{}",
                a.name,
                a.extent,
                a.lo,
                a.hi,
                if a.sorted { " sorted" } else { "" }
            );
        }
        for (name, body) in &self.defs {
            let _ = writeln!(s, "def {name} = {body}");
        }
        let from = self.defs.last().map(|d| d.0.as_str()).unwrap_or("a");
        let _ = writeln!(s, "derive {DERIVED} from {from} {{");
        for st in &self.steps {
            let _ = writeln!(s, "  {st}");
        }
        let _ = writeln!(s, "}}");
        s
    }
}

// ---------------------------------------------------------------------------------------
// Generation
// ---------------------------------------------------------------------------------------

pub const HUGE: [i64; 4] = [
    4_611_686_018_427_387_904,
    9_223_372_036_854_775_807,
    1 << 40,
    3_037_000_500,
];

/// Constants of the huge index reads (issue 28): near `2^62` and `2^63`, `2^31`
/// (beyond which a product of two in-range values overflows), and powers of two.
pub const HUGE_INDEX: [i64; 9] = [
    4_611_686_018_427_387_904,
    9_223_372_036_854_775_807,
    9_223_372_036_854_775_806,
    4_611_686_018_427_387_903,
    2_147_483_648,
    4_294_967_296,
    1 << 40,
    1 << 61,
    3_037_000_500,
];

/// Percent of scalar leaves that read at a huge index when a binder is in scope.
const HUGE_READ_PERCENT: u64 = 4;

/// The name of the index-only size (no extent mentions it; see [`Gen::free`]).
pub const FREE_SIZE: &str = "b";

const BINDERS: [&str; 11] = ["i", "j", "k", "l", "o", "p", "q", "r", "s", "t", "v"];

fn c(v: i64) -> Ix {
    Ix::C(v)
}
fn var(v: &str) -> Ix {
    Ix::V(v.to_string())
}
fn bin(op: &'static str, a: Ix, b: Ix) -> Ix {
    Ix::Bin(op, Box::new(a), Box::new(b))
}
fn fun(name: &'static str, a: Ix, b: Ix) -> Ix {
    Ix::F(name, Box::new(a), Box::new(b))
}
fn b(e: E) -> Box<E> {
    Box::new(e)
}

struct Gen<'r> {
    rng: &'r mut Rng,
    /// The sizes extents may mention (`n`, `m`; not the fact-only extra sizes).
    dims: Vec<String>,
    extra: Vec<String>,
    /// Sizes used only in index arithmetic and guards ([`FREE_SIZE`]): no extent
    /// mentions them, so a kernel may be run at huge values of them.
    free: Vec<String>,
    /// Inputs and earlier definitions, with their shapes.
    tensors: Vec<(String, Vec<Ix>)>,
    /// Binders in scope.
    binders: Vec<String>,
    /// For each binder in scope (parallel to `binders`): an extent `X` with the binder
    /// in `0..X` by its range, when the generator knows one (what an index array's
    /// load may be indexed with: see [`Gen::in_range`]).
    within: Vec<Option<Ix>>,
    /// The program's index arrays (issue 31); empty for most programs, and then the
    /// generator draws exactly what it drew before they existed.
    arrays: Vec<IndexArray>,
    /// Nesting of the constructs that read index arrays (bounded: they call back into
    /// the generator).
    load_nesting: u32,
    /// `let` variables in scope with their shapes.
    lets: Vec<(String, Vec<Ix>)>,
    next_binder: usize,
    next_let: usize,
    /// Nodes left to generate: keeps programs small whatever the dice say.
    fuel: i32,
    /// The factor of the product facts when the extra sizes' bounds were calibrated
    /// (see [`calibrated_bounds`]).
    product_k: Option<i64>,
}

/// Factors `K` and bounds `B` with `2 * K * B * B = 2^127`: under `x, y, z, w <= B`, the
/// upper bound of `K*x*y + K*z*w` is exactly `i128::MAX + 1`, the edge at which an
/// unchecked interval computation in the prover wraps (issue 17, hole 7: `4` and
/// `2^62`). Random bounds almost never land on it, so a share of the programs does.
const CALIBRATED: [(i64, i64); 3] = [
    (4, 4_611_686_018_427_387_904),
    (16, 2_305_843_009_213_693_952),
    (64, 1_152_921_504_606_846_976),
];

impl Gen<'_> {
    fn fresh_binder(&mut self) -> String {
        let k = self.next_binder;
        self.next_binder += 1;
        if k < BINDERS.len() {
            BINDERS[k].to_string()
        } else {
            format!("{}{}", BINDERS[k % BINDERS.len()], k / BINDERS.len() + 1)
        }
    }

    fn fresh_let(&mut self) -> String {
        self.next_let += 1;
        format!("u{}", self.next_let)
    }

    /// Brings binder `v` into scope, in `0..within` when that is known.
    fn enter(&mut self, v: &str, within: Option<Ix>) {
        self.binders.push(v.to_string());
        self.within.push(within);
    }

    fn leave(&mut self) {
        self.binders.pop();
        self.within.pop();
    }

    fn size(&mut self) -> Ix {
        let d = self.rng.pick(&self.dims).clone();
        var(&d)
    }

    /// An extent over the sizes: plain, offset (possibly negative), clamped, divided.
    pub fn extent(&mut self) -> Ix {
        let n = self.size();
        match self.rng.below(14) {
            0..=2 => n,
            3 => c(self.rng.range(1, 5)),
            4 | 5 => bin("-", n, c(self.rng.range(1, 6))),
            6 => bin("+", n, c(self.rng.range(1, 3))),
            7 | 8 => fun("min", n, c(self.rng.range(1, 6))),
            9 => fun("max", n, c(self.rng.range(1, 6))),
            10 => fun("cdiv", n, c(self.rng.range(2, 4))),
            11 => bin("/", n, c(self.rng.range(2, 3))),
            12 => bin("*", c(2), n),
            _ => {
                let m = self.size();
                bin("*", n, m)
            }
        }
    }

    /// An index for a read: a binder, shifted, scaled, divided, clamped, or a constant.
    fn index(&mut self) -> Ix {
        if self.binders.is_empty() || self.rng.chance(10) {
            return match self.rng.below(3) {
                0 => c(self.rng.range(0, 3)),
                1 => bin("-", self.size(), c(1)),
                _ => self.extent(),
            };
        }
        let v = var(&self.rng.pick(&self.binders).clone());
        match self.rng.below(14) {
            0..=4 => v,
            5 => bin("+", v, c(self.rng.range(1, 4))),
            6 => bin("-", v, c(self.rng.range(1, 3))),
            7 => {
                let e = self.extent();
                bin("+", v, e)
            }
            8 => bin("*", c(2), v),
            9 => bin("/", v, c(2)),
            10 => bin("%", v, c(3)),
            11 => {
                let n = self.size();
                fun("min", v, bin("-", n, c(1)))
            }
            12 => fun("max", bin("-", v, c(1)), c(0)),
            _ => {
                let w = var(&self.rng.pick(&self.binders).clone());
                bin("+", v, w)
            }
        }
    }

    /// A guard: facts on sizes (the hole-1/2 kind), on binders, huge products.
    fn pred(&mut self) -> Pr {
        let p = self.simple_pred();
        if self.rng.chance(15) {
            let q = self.simple_pred();
            Pr::And(Box::new(p), Box::new(q))
        } else {
            p
        }
    }

    fn simple_pred(&mut self) -> Pr {
        if !self.arrays.is_empty()
            && self.rng.chance(30)
            && let Some(p) = self.load_pred()
        {
            return p;
        }
        let ops = ["<=", ">=", "<", "=="];
        match self.rng.below(12) {
            0..=3 => {
                let n = self.size();
                let op = *self.rng.pick(&ops);
                Pr::Cmp(op, n, c(self.rng.range(1, 6)))
            }
            4 => {
                let n = self.size();
                Pr::Cmp("==", bin("%", n, c(2)), c(0))
            }
            5 if !self.extra.is_empty() => self.product_fact(),
            6 if !self.binders.is_empty() => {
                let v = var(&self.rng.pick(&self.binders).clone());
                let n = self.size();
                Pr::Cmp("<", bin("*", v, c(*self.rng.pick(&HUGE))), n)
            }
            _ if !self.binders.is_empty() => {
                let v = var(&self.rng.pick(&self.binders).clone());
                match self.rng.below(4) {
                    0 => Pr::Cmp("<", v, c(self.rng.range(1, 4))),
                    1 => {
                        let n = self.size();
                        Pr::Cmp("<", bin("+", v, c(self.rng.range(1, 3))), n)
                    }
                    2 => {
                        let e = self.extent();
                        Pr::Cmp("<", v, e)
                    }
                    _ => Pr::Cmp("<=", c(self.rng.range(1, 3)), v),
                }
            }
            _ => {
                let n = self.size();
                Pr::Cmp(">=", n, c(self.rng.range(2, 5)))
            }
        }
    }

    /// `K*x*y + K*z*w >= n` over the fact-only sizes (issue 17, hole 7).
    fn product_fact(&mut self) -> Pr {
        let k = self
            .product_k
            .unwrap_or_else(|| *self.rng.pick(&[1, 2, 4, 8]));
        let mut terms: Vec<Ix> = Vec::new();
        for pair in self.extra.chunks(2) {
            let mut t = c(k);
            for v in pair {
                t = bin("*", t, var(v));
            }
            terms.push(t);
        }
        let mut sum = terms[0].clone();
        for t in &terms[1..] {
            sum = bin("+", sum, t.clone());
        }
        let n = var(&self.dims[0]);
        Pr::Cmp(">=", sum, n)
    }

    fn lit(&mut self) -> E {
        E::Lit(*self.rng.pick(&[1.0, 2.0, 0.5, -1.5, 0.0, 3.0]))
    }

    /// A read of a tensor of shape `shape` (rank >= 1) with one index per dimension.
    fn read(&mut self, name: &str, shape: &[Ix]) -> E {
        let mut e = E::Name(name.to_string());
        for extent in shape {
            let i = self.index_into(extent);
            e = E::Acc(b(e), i);
        }
        e
    }

    /// An index for a dimension of extent `extent`: [`Gen::index`], except in the
    /// programs with index arrays, where more than half of the time it is a binder
    /// in range if one is in scope, so that the access-safety gate passes more of
    /// their kernels (their point is the C judge of loads; programs without index
    /// arrays draw exactly what they drew before).
    fn index_into(&mut self, extent: &Ix) -> Ix {
        if !self.arrays.is_empty()
            && self.rng.chance(60)
            && let Some(i) = self.index_in(extent)
        {
            return i;
        }
        self.index()
    }

    fn leaf_scalar(&mut self) -> E {
        let mut cands: Vec<(String, Vec<Ix>)> = Vec::new();
        for (n, s) in self.tensors.iter().chain(self.lets.iter()) {
            cands.push((n.clone(), s.clone()));
        }
        if !self.arrays.is_empty() && self.load_nesting < 2 && self.rng.chance(30) {
            return self.load_scalar(0);
        }
        if cands.is_empty() || self.rng.chance(10) {
            return self.lit();
        }
        // A coordinate or a size as a value (issue 32); never an index array's element.
        if self.rng.chance(6) {
            let index = self.index();
            if !matches!(index, Ix::Load(..)) {
                return E::Coord(index);
            }
        }
        let (n, shape) = self.rng.pick(&cands).clone();
        if !shape.is_empty() && !self.binders.is_empty() && self.rng.chance(HUGE_READ_PERCENT) {
            return self.huge_read(&n, &shape);
        }
        self.read(&n, &shape)
    }

    /// A read with one index of huge intermediate values (issue 28): `(i * C) % n`,
    /// `(i + C) - C`, `(i * C) / C`, `(n * m * i) % n`, …, half of the time under a
    /// guard that keeps the read's value in range (`[i < 2] * f[(i * C) % n]`: the
    /// guard does not keep the index arithmetic of a blended load from overflowing).
    fn huge_read(&mut self, name: &str, shape: &[Ix]) -> E {
        let hot = self.rng.below(shape.len());
        let mut e = E::Name(name.to_string());
        for (d, extent) in shape.iter().enumerate() {
            let i = if d == hot {
                self.huge_index(extent.clone())
            } else {
                self.index()
            };
            e = E::Acc(b(e), i);
        }
        if self.rng.chance(50) {
            let v = var(&self.rng.pick(&self.binders).clone());
            let p = if self.rng.chance(60) {
                Pr::Cmp("<", v, c(self.rng.range(1, 3)))
            } else {
                let n = self.size();
                Pr::Cmp("<", bin("*", v, c(*self.rng.pick(&HUGE_INDEX))), n)
            };
            e = E::Guard(p, b(e));
        }
        e
    }

    /// A size for huge index arithmetic: an extent size, a fact-only one, or the
    /// index-only one.
    fn any_size(&mut self) -> Ix {
        let mut all = self.dims.clone();
        all.extend(self.extra.iter().cloned());
        all.extend(self.free.iter().cloned());
        all.extend(self.free.iter().cloned());
        var(&self.rng.pick(&all).clone())
    }

    /// An index into a dimension of extent `e` whose intermediate values are huge; the
    /// `% e` of most forms keeps the read in range (so the gate can accept it).
    fn huge_index(&mut self, e: Ix) -> Ix {
        let v = var(&self.rng.pick(&self.binders).clone());
        let k = c(*self.rng.pick(&HUGE_INDEX));
        let wrap = |i: Ix, e: &Ix| bin("%", i, e.clone());
        match self.rng.below(10) {
            0 => wrap(bin("*", v, k), &e),
            1 => wrap(bin("-", bin("+", v, k.clone()), k), &e),
            2 => wrap(bin("/", bin("*", v, k.clone()), k), &e),
            3 => {
                let m = self.any_size();
                wrap(bin("*", bin("*", e.clone(), m), v), &e)
            }
            4 => {
                let m = self.any_size();
                wrap(bin("*", v, m), &e)
            }
            5 => {
                let m = self.any_size();
                let big = bin("*", m, k);
                wrap(bin("-", bin("+", v, big.clone()), big), &e)
            }
            6 => {
                let m = self.any_size();
                wrap(bin("/", bin("*", v, m.clone()), m), &e)
            }
            7 => {
                let m = self.any_size();
                let p = self.any_size();
                wrap(bin("*", bin("*", m, p), v), &e)
            }
            8 => {
                // Unwrapped: in range only where the binder is (`(i + C) - C`).
                if self.rng.chance(50) {
                    bin("-", bin("+", v, k.clone()), k)
                } else {
                    bin("/", bin("*", v, k.clone()), k)
                }
            }
            _ => wrap(bin("+", bin("*", v, k), c(self.rng.range(0, 3))), &e),
        }
    }

    /// Binders in scope that their ranges keep in `0..extent`: their known bound is
    /// `extent`, `min(extent, _)` or `extent - c`.
    fn in_range(&self, extent: &Ix) -> Vec<String> {
        let fits = |x: &Ix| match x {
            _ if x == extent => true,
            Ix::F("min", a, bb) => **a == *extent || **bb == *extent,
            Ix::Bin("-", a, k) => **a == *extent && matches!(**k, Ix::C(k) if k >= 0),
            _ => false,
        };
        self.binders
            .iter()
            .zip(&self.within)
            .filter(|(_, w)| w.as_ref().is_some_and(fits))
            .map(|(v, _)| v.clone())
            .collect()
    }

    /// An index in `0..extent` built from a binder in range (`v`, `(extent - 1) - v`,
    /// `min(v, extent - 1)`), if one is in scope.
    fn index_in(&mut self, extent: &Ix) -> Option<Ix> {
        let vs = self.in_range(extent);
        if vs.is_empty() {
            return None;
        }
        let v = var(self.rng.pick(&vs).as_str());
        let last = bin("-", extent.clone(), c(1));
        Some(match self.rng.below(8) {
            0 => bin("-", last, v),
            1 => fun("min", v, last),
            _ => v,
        })
    }

    /// A constant index in `0..extent` (extents of index arrays are at least 1).
    fn const_index(&mut self, extent: &Ix) -> Ix {
        if self.rng.chance(50) {
            c(0)
        } else {
            bin("-", extent.clone(), c(1))
        }
    }

    /// An index in `0..extent` for a load: a binder in range, else (`loop` allowing) a
    /// new binder whose loop the caller opens around the read (returned as its
    /// name), else a constant.
    fn load_index(&mut self, extent: &Ix, allow_loop: bool) -> (Ix, Option<String>) {
        if let Some(e) = self.index_in(extent) {
            return (e, None);
        }
        if allow_loop && self.rng.chance(60) {
            let v = self.fresh_binder();
            self.enter(&v, Some(extent.clone()));
            return (var(&v), Some(v));
        }
        (self.const_index(extent), None)
    }

    /// Closes the loop [`Gen::load_index`] opened, if any: `sum v < extent: body`.
    fn close_loop(&mut self, opened: Option<String>, extent: &Ix, body: E) -> E {
        match opened {
            Some(v) => {
                self.leave();
                E::Sum(v, None, extent.clone(), b(body))
            }
            None => body,
        }
    }

    /// A tensor in scope (input, definition, `let`) with a dimension of extent
    /// `extent`: its name, shape and that dimension.
    fn with_dim(&mut self, extent: &Ix) -> Option<(String, Vec<Ix>, usize)> {
        let mut cands: Vec<(String, Vec<Ix>, usize)> = Vec::new();
        for (n, sh) in self.tensors.iter().chain(self.lets.iter()) {
            for (k, x) in sh.iter().enumerate() {
                if x == extent {
                    cands.push((n.clone(), sh.clone(), k));
                }
            }
        }
        if cands.is_empty() {
            None
        } else {
            Some(self.rng.pick(&cands).clone())
        }
    }

    /// A read of `name` (of `shape`) at `at` in dimension `dim`, the other dimensions
    /// at random indices.
    fn read_at(&mut self, name: &str, shape: &[Ix], dim: usize, at: Ix) -> E {
        let mut e = E::Name(name.to_string());
        for (k, extent) in shape.iter().enumerate() {
            let i = if k == dim {
                at.clone()
            } else {
                self.index_into(extent)
            };
            e = E::Acc(b(e), i);
        }
        e
    }

    /// A scalar that reads an index array (issue 31): through a gather array
    /// (`crd : int[E] in 0..S`) a gather `x[crd[e]]` (also `x[(S - 1) - crd[e]]`,
    /// `x[min(crd[e], S - 1)]`, a stage read at `crd[e]`) or a sum up to a load
    /// (`sum q < crd[e]: x[q] * …`), with `x` of extent `S` and `e` in `0..E`; through a
    /// row array (`pos : int[R + 1] in 0..K + 1 sorted`) a compressed row
    /// `sum p in pos[e]..pos[e + 1]: y[p] * …` with `y` of extent `K` and `e` in `0..R`,
    /// often with a gather `x[crd[p]]` (the CSR product) when `crd`'s extent is `K`.
    /// The load's index is a binder in range when there is one, else a new loop over
    /// the array (`sum e < E: …`) or a constant; now and then any binder under a
    /// guard that keeps it in range (`[v < E] * x[crd[v]]`). One gather in 25 reads
    /// one past the range (`x[crd[e] + 1]`): access safety must refuse such kernels.
    fn load_scalar(&mut self, d: u32) -> E {
        self.load_nesting += 1;
        let array = self.rng.pick(&self.arrays).clone();
        let e = match (minus_one(&array.extent), minus_one(&array.hi)) {
            (Some(rows), Some(k)) if array.sorted => self.row_sum(&array, &rows, &k, d),
            _ if !self.binders.is_empty() && self.rng.chance(15) => {
                // A load whose index only a guard keeps in range, `[v < E] *
                // x[crd[v]]` (binders are never negative): access safety passes
                // through the guard, and a kernel must not read `crd[v]` where the
                // guard is false.
                let v = var(&self.rng.pick(&self.binders).clone());
                let body = self.gather_at(&array, v.clone(), d);
                E::Guard(Pr::Cmp("<", v, array.extent.clone()), b(body))
            }
            _ => {
                let (e, opened) = self.load_index(&array.extent, true);
                let body = self.gather_at(&array, e, d);
                self.close_loop(opened, &array.extent, body)
            }
        };
        self.load_nesting -= 1;
        e
    }

    /// A read through the gather array `array` at load index `e` (see
    /// [`Gen::load_scalar`]).
    fn gather_at(&mut self, array: &IndexArray, e: Ix, d: u32) -> E {
        let s = array.hi.clone();
        let load = Ix::Load(array.name.clone(), Box::new(e));
        let Some((x, shape, dim)) = self.with_dim(&s) else {
            return self.lit();
        };
        match self.rng.below(10) {
            0 | 1 => {
                // A sum up to the load: `q < crd[e] < S`.
                let q = self.fresh_binder();
                self.enter(&q, Some(s));
                let read = self.read_at(&x, &shape, dim, var(&q));
                let body = if self.rng.chance(50) {
                    E::Bin("*", b(read), b(self.scalar(d)))
                } else {
                    read
                };
                self.leave();
                E::Sum(q, None, load, b(body))
            }
            2 => {
                // A stage read at the load.
                let t = self.tensor(std::slice::from_ref(&s), d);
                E::Acc(b(t), load)
            }
            _ => {
                let last = bin("-", s, c(1));
                let at = match self.rng.below(25) {
                    0..=2 => bin("-", last, load),
                    3..=5 => fun("min", load, last),
                    6 => bin("+", load, c(1)),
                    _ => load,
                };
                self.read_at(&x, &shape, dim, at)
            }
        }
    }

    /// A compressed row of the row array `array` (`int[rows + 1] in 0..k + 1 sorted`):
    /// `sum p in pos[e]..pos[e + 1]: y[p] * …`, `p` in `0..k`.
    fn row_sum(&mut self, array: &IndexArray, rows: &Ix, k: &Ix, d: u32) -> E {
        let (e, opened) = self.load_index(rows, true);
        let p = self.fresh_binder();
        let lo = Ix::Load(array.name.clone(), Box::new(e.clone()));
        let hi = Ix::Load(array.name.clone(), Box::new(bin("+", e, c(1))));
        self.enter(&p, Some(k.clone()));
        let value = match self.with_dim(k) {
            Some((y, shape, dim)) => self.read_at(&y, &shape, dim, var(&p)),
            None => self.lit(),
        };
        // A gather array over the row's elements: `x[crd[p]]`.
        let gathers: Vec<IndexArray> = self
            .arrays
            .iter()
            .filter(|a| a.extent == *k && minus_one(&a.hi).is_none())
            .cloned()
            .collect();
        let other = if !gathers.is_empty() && self.rng.chance(60) {
            let g = self.rng.pick(&gathers).clone();
            Some(self.gather_at(&g, var(&p), d))
        } else if self.rng.chance(50) {
            Some(self.scalar(d))
        } else {
            None
        };
        self.leave();
        let body = match other {
            Some(o) => E::Bin("*", b(value), b(o)),
            None => value,
        };
        let sum = E::Sum(p, Some(lo), hi, b(body));
        self.close_loop(opened, rows, sum)
    }

    /// A guard on a load (issue 31): `[crd[e] == j]` (the dense matrix that compressed
    /// rows stand for), `[crd[e] < c]`, `[j <= pos[e]]`.
    fn load_pred(&mut self) -> Option<Pr> {
        let array = self.rng.pick(&self.arrays).clone();
        let e = match self.index_in(&array.extent) {
            Some(e) => e,
            None if self.rng.chance(30) => self.const_index(&array.extent),
            None => return None,
        };
        let load = Ix::Load(array.name.clone(), Box::new(e));
        Some(match self.rng.below(4) {
            0 | 1 if !self.binders.is_empty() => {
                let j = var(&self.rng.pick(&self.binders).clone());
                Pr::Cmp("==", load, j)
            }
            2 if !self.binders.is_empty() => {
                let j = var(&self.rng.pick(&self.binders).clone());
                Pr::Cmp("<=", j, load)
            }
            _ => Pr::Cmp("<", load, c(self.rng.range(1, 3))),
        })
    }

    /// `let x = T in s`: a tensor stage read by a scalar.
    fn scalar_let(&mut self, d: u32) -> E {
        let x = self.fresh_let();
        let shape = vec![self.extent()];
        let val = self.tensor(&shape, d);
        self.lets.push((x.clone(), shape));
        let body = self.scalar(d);
        self.lets.pop();
        E::Let(x, b(val), b(body))
    }

    /// An argument of a scalar function: often a stage (`abs(let x = … in …)`), which
    /// the let-lifting rules and `compute_at`/`compute_root` move across the call.
    fn call_arg(&mut self, d: u32) -> E {
        if self.rng.chance(30) {
            self.scalar_let(d)
        } else {
            self.scalar(d)
        }
    }

    /// A scalar expression.
    fn scalar(&mut self, depth: u32) -> E {
        self.fuel -= 1;
        if depth == 0 || self.fuel <= 0 {
            return self.leaf_scalar();
        }
        let d = depth - 1;
        if !self.arrays.is_empty() && self.load_nesting < 2 && self.rng.chance(15) {
            return self.load_scalar(d);
        }
        match self.rng.below(24) {
            0..=4 => self.leaf_scalar(),
            5 => {
                let op = *self.rng.pick(&["+", "-", "*"]);
                E::Bin(op, b(self.scalar(d)), b(self.scalar(d)))
            }
            6 => E::Neg(b(self.scalar(d))),
            7 | 8 => {
                let p = self.pred();
                E::Guard(p, b(self.scalar(d)))
            }
            9 | 10 => {
                let v = self.fresh_binder();
                // One in five a max-reduction: no rule, tactic or directive may treat
                // it as a sum (its empty value and its zero terms differ).
                if self.rng.chance(20) {
                    let hi = self.size();
                    self.enter(&v, Some(hi.clone()));
                    let body = self.scalar(d);
                    self.leave();
                    return E::Max(v, hi, b(body));
                }
                let (lo, hi) = self.range();
                self.enter(&v, Some(hi.clone()));
                let body = self.scalar(d);
                self.leave();
                E::Sum(v, lo, hi, b(body))
            }
            11 => self.scalar_let(d),
            12 | 13 => {
                let shape = vec![self.extent()];
                let t = self.tensor(&shape, d);
                let i = self.index_into(&shape[0]);
                E::Acc(b(t), i)
            }
            14..=16 => {
                // `(X ++ f)[i + |X|]`: the second operand read through an offset that is
                // the first operand's extent (holes 1 and 2).
                let e1 = if self.rng.chance(50) {
                    let n = self.size();
                    let f = *self.rng.pick(&["min", "max", "cdiv"]);
                    fun(f, n, c(self.rng.range(2, 5)))
                } else {
                    self.extent()
                };
                let x = match self.rng.below(5) {
                    0 | 1 => {
                        // A guard on a size fact around the first operand (hole 1, 2).
                        let n = self.size();
                        let op = *self.rng.pick(&["<=", ">=", "<"]);
                        let p = Pr::Cmp(op, n, c(self.rng.range(2, 5)));
                        E::Guard(p, b(self.tensor(std::slice::from_ref(&e1), d)))
                    }
                    2 => {
                        // A sum over a range that is empty for small sizes (hole 1).
                        let v = self.fresh_binder();
                        let n = self.size();
                        let hi = bin("-", n, c(self.rng.range(2, 5)));
                        self.enter(&v, Some(hi.clone()));
                        let body = self.tensor(std::slice::from_ref(&e1), d);
                        self.leave();
                        E::Sum(v, None, hi, b(body))
                    }
                    _ => self.tensor(std::slice::from_ref(&e1), d),
                };
                let (name, shape) = self.rank1().unwrap_or(("f".to_string(), vec![]));
                let other = if shape.is_empty() {
                    self.tensor(&[self.dims_first()], d)
                } else {
                    E::Name(name)
                };
                let i = if !self.binders.is_empty() && self.rng.chance(70) {
                    bin("+", var(&self.rng.pick(&self.binders).clone()), e1)
                } else {
                    self.index()
                };
                E::Acc(b(E::Concat(b(x), b(other))), i)
            }
            17 => {
                let (e1, e2) = (self.extent(), self.extent());
                let t = self.tensor(&[e1, e2], d);
                let i = self.index();
                E::Acc(b(E::Flatten(b(t))), i)
            }
            18 => {
                let e = self.extent();
                let t = self.tensor(&[e], d);
                let k = self.amount();
                let (i, j) = (self.index(), self.index());
                E::Acc(b(E::Acc(b(E::Amt("split", k, b(t))), i)), j)
            }
            19 => {
                let (e1, e2) = (self.extent(), self.extent());
                let t = self.tensor(&[e1, e2], d);
                let (i, j) = (self.index(), self.index());
                E::Acc(b(E::Acc(b(E::Transpose(b(t))), i)), j)
            }
            22 | 23 => {
                // A scalar function. Only functions that are finite for finite
                // arguments (`sqrt` of an `abs`, no `exp` or `log`): a rule's grade
                // holds where the values are finite (TRUSTED.md), and the oracle
                // compares values.
                match self.rng.below(5) {
                    0 => E::Call("abs", vec![self.call_arg(d)]),
                    1 => E::Call("sqrt", vec![E::Call("abs", vec![self.call_arg(d)])]),
                    2 => {
                        let f = *self.rng.pick(&["max", "min"]);
                        E::Call(f, vec![self.call_arg(d), self.call_arg(d)])
                    }
                    _ => {
                        let f = *self.rng.pick(&[
                            "select<", "select<=", "select>", "select>=", "select==", "select!=",
                        ]);
                        let args = (0..4).map(|_| self.call_arg(d)).collect();
                        E::Call(f, args)
                    }
                }
            }
            _ => {
                let e = self.extent();
                let t = self.tensor(&[e], d);
                let op = *self.rng.pick(&["trunc_r", "trunc_l", "pad_r", "pad_l"]);
                let k = c(self.rng.range(0, 3));
                let i = self.index();
                E::Acc(b(E::Amt(op, k, b(t))), i)
            }
        }
    }

    fn dims_first(&self) -> Ix {
        var(&self.dims[0])
    }

    fn rank1(&mut self) -> Option<(String, Vec<Ix>)> {
        let first = self.dims_first();
        let c: Vec<(String, Vec<Ix>)> = self
            .tensors
            .iter()
            .filter(|(_, s)| s.len() == 1 && s[0] == first)
            .cloned()
            .collect();
        if c.is_empty() {
            None
        } else {
            Some(self.rng.pick(&c).clone())
        }
    }

    fn amount(&mut self) -> Ix {
        if self.rng.chance(85) {
            c(self.rng.range(2, 4))
        } else {
            self.extent()
        }
    }

    /// A `gen`/`sum` range: mostly `< E`, sometimes `in LO..HI`, sometimes empty or
    /// negative for small sizes (`n - 4`).
    fn range(&mut self) -> (Option<Ix>, Ix) {
        if self.rng.chance(15) {
            let lo = c(self.rng.range(1, 3));
            let hi = self.extent();
            (Some(lo), hi)
        } else {
            (None, self.extent())
        }
    }

    /// An expression of exactly `shape` (by construction; the front end confirms).
    fn tensor(&mut self, shape: &[Ix], depth: u32) -> E {
        if shape.is_empty() {
            return self.scalar(depth);
        }
        self.fuel -= 1;
        // An input or a let variable of exactly this shape.
        let same: Vec<String> = self
            .tensors
            .iter()
            .chain(self.lets.iter())
            .filter(|(_, s)| s.as_slice() == shape)
            .map(|(n, _)| n.clone())
            .collect();
        if depth == 0 || self.fuel <= 0 {
            if !same.is_empty() && self.rng.chance(50) {
                return E::Name(self.rng.pick(&same).clone());
            }
            return self.gen_loop(shape, 0);
        }
        let d = depth - 1;
        let (s0, rest) = (&shape[0], &shape[1..]);
        // `[cdiv(S, k), k]` is the shape of `split(k, [S])` (hole 4's `split(2, f)`).
        if let ([Ix::F("cdiv", sz, k1), Ix::C(k2)], true) = (shape, self.rng.chance(40))
            && **k1 == Ix::C(*k2)
        {
            let inner = (**sz).clone();
            return E::Amt("split", Ix::C(*k2), b(self.tensor(&[inner], d)));
        }
        // Drawn only where there are index arrays, so that the programs without any
        // are those the generator made before scatters.
        if !self.arrays.is_empty() && self.rng.chance(12) {
            return self.scatter(shape, d);
        }
        match self.rng.below(20) {
            0..=6 => self.gen_loop(shape, d),
            7 if !same.is_empty() => E::Name(self.rng.pick(&same).clone()),
            8 => {
                let p = self.pred();
                E::Guard(p, b(self.tensor(shape, d)))
            }
            9 => {
                let op = *self.rng.pick(&["+", "-", "*"]);
                E::Bin(op, b(self.tensor(shape, d)), b(self.tensor(shape, d)))
            }
            10 => {
                let v = self.fresh_binder();
                let (lo, hi) = self.range();
                self.enter(&v, Some(hi.clone()));
                let body = self.tensor(shape, d);
                self.leave();
                E::Sum(v, lo, hi, b(body))
            }
            11 => {
                let x = self.fresh_let();
                let vshape = if self.rng.chance(50) {
                    shape.to_vec()
                } else {
                    vec![self.extent()]
                };
                let val = self.tensor(&vshape, d);
                self.lets.push((x.clone(), vshape));
                let body = self.tensor(shape, d);
                self.lets.pop();
                E::Let(x, b(val), b(body))
            }
            12 | 13 => {
                // Split the extent at another extent: `[S1] ++ [S - S1]`. Often `S1` is
                // `n - k`, negative for small sizes (issue 17, hole 3): then the whole
                // is well-shaped only if the program assumes `n >= k`.
                let s1 = if self.rng.chance(40) {
                    let n = self.size();
                    bin("-", n, c(self.rng.range(2, 6)))
                } else {
                    self.extent()
                };
                let mut sh1 = vec![s1.clone()];
                sh1.extend_from_slice(rest);
                let mut sh2 = vec![bin("-", s0.clone(), s1)];
                sh2.extend_from_slice(rest);
                E::Concat(b(self.tensor(&sh1, d)), b(self.tensor(&sh2, d)))
            }
            14 => {
                let k = c(self.rng.range(0, 3));
                let (op, inner) = match self.rng.below(4) {
                    0 => ("trunc_r", bin("+", s0.clone(), k.clone())),
                    1 => ("trunc_l", bin("+", s0.clone(), k.clone())),
                    2 => ("pad_r", bin("-", s0.clone(), k.clone())),
                    _ => ("pad_l", bin("-", s0.clone(), k.clone())),
                };
                let mut sh = vec![inner];
                sh.extend_from_slice(rest);
                E::Amt(op, k, b(self.tensor(&sh, d)))
            }
            15 if !rest.is_empty() => {
                let mut sh = vec![rest[0].clone(), s0.clone()];
                sh.extend_from_slice(&rest[1..]);
                E::Transpose(b(self.tensor(&sh, d)))
            }
            16 => {
                let mut sh = vec![self.extent()];
                sh.extend_from_slice(shape);
                let t = self.tensor(&sh, d);
                let i = self.index_into(&sh[0]);
                E::Acc(b(t), i)
            }
            17 if rest.is_empty() => {
                // `flatten(split(k, X))` has extent cdiv(S, k) * k, not S: kept inside a
                // `trunc_r` as `tile_id`'s left side.
                let k = c(self.rng.range(2, 4));
                let t = self.tensor(shape, d);
                let amount = bin(
                    "-",
                    bin("*", fun("cdiv", s0.clone(), k.clone()), k.clone()),
                    s0.clone(),
                );
                E::Amt(
                    "trunc_r",
                    amount,
                    b(E::Flatten(b(E::Amt("split", k, b(t))))),
                )
            }
            _ => self.gen_loop(shape, d),
        }
    }

    /// A scatter (issue 31, thesis §7.2.1): a sum over an index array's positions of
    /// one-hot generators, `sum q < E: gen i < S: [crd[q] (± 1) == i] * …` (now and
    /// then `crd[q + 1]`, past the array at the last `q`), which lowering writes as one
    /// `+=` at the target. The array's range need not be
    /// `S`: a target outside the generator adds nothing (a guard the kernel keeps).
    /// Now and then a second conjunct, or the equation the other way round.
    fn scatter(&mut self, shape: &[Ix], d: u32) -> E {
        let array = self.rng.pick(&self.arrays).clone();
        let q = self.fresh_binder();
        self.enter(&q, Some(array.extent.clone()));
        // Now and then a read past the array at the last position (ATL reads 0 there:
        // the kernel must not read it, and must add that term into element 0).
        let at = if self.rng.chance(15) {
            bin("+", var(&q), c(1))
        } else {
            var(&q)
        };
        let load = Ix::Load(array.name.clone(), Box::new(at));
        let target = match self.rng.below(6) {
            0 => bin("+", load, c(1)),
            1 => bin("-", load, c(1)),
            _ => load,
        };
        let i = self.fresh_binder();
        self.enter(&i, Some(shape[0].clone()));
        let mut pred = if self.rng.chance(30) {
            Pr::Cmp("==", var(&i), target)
        } else {
            Pr::Cmp("==", target, var(&i))
        };
        if self.rng.chance(20) {
            pred = Pr::And(Box::new(self.pred()), Box::new(pred));
        }
        let body = self.tensor(&shape[1..], d);
        self.leave();
        self.leave();
        let hot = E::Gen(i, None, shape[0].clone(), b(E::Guard(pred, b(body))));
        E::Sum(q, None, array.extent.clone(), b(hot))
    }

    fn gen_loop(&mut self, shape: &[Ix], depth: u32) -> E {
        let v = self.fresh_binder();
        let (lo, hi) = if self.rng.chance(10) {
            let lo = c(self.rng.range(1, 3));
            (Some(lo.clone()), bin("+", shape[0].clone(), lo))
        } else {
            (None, shape[0].clone())
        };
        self.enter(&v, Some(hi.clone()));
        let body = self.tensor(&shape[1..], depth);
        self.leave();
        E::Gen(v, lo, hi, b(body))
    }
}

/// `x` when `e` is `x + 1`.
fn minus_one(e: &Ix) -> Option<Ix> {
    match e {
        Ix::Bin("+", a, k) if **k == Ix::C(1) => Some((**a).clone()),
        _ => None,
    }
}

/// Percent of the programs that declare index arrays (issue 31).
const INDEX_ARRAY_PERCENT: u64 = 20;

/// The index arrays of a program (drawn from their own stream, so that the programs
/// without any are those the generator made before index arrays existed): in
/// [`INDEX_ARRAY_PERCENT`] of the programs a gather array `crd : int[E] in 0..S`
/// (`E`, `S` among the extent sizes; now and then `sorted`), a row array
/// `pos : int[R + 1] in 0..K + 1 sorted`, or both, `crd`'s extent then `K` (compressed
/// rows: `crd` gives the column of each of the `K` stored values).
fn index_arrays(side: &mut Rng, dims: &[String]) -> Vec<IndexArray> {
    if !side.chance(INDEX_ARRAY_PERCENT) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let kind = side.below(3);
    let mut k_values = None;
    if kind >= 1 {
        let rows = var(side.pick(dims).as_str());
        let k = var(side.pick(dims).as_str());
        out.push(IndexArray {
            name: "pos".to_string(),
            extent: bin("+", rows, c(1)),
            lo: c(0),
            hi: bin("+", k.clone(), c(1)),
            sorted: true,
        });
        k_values = Some(k);
    }
    if kind != 1 {
        let extent = match &k_values {
            Some(k) => k.clone(),
            None => var(side.pick(dims).as_str()),
        };
        out.push(IndexArray {
            name: "crd".to_string(),
            extent,
            lo: c(0),
            hi: var(side.pick(dims).as_str()),
            sorted: side.chance(20),
        });
    }
    out
}

/// Whether `e` has a scatter as [`Gen::scatter`] makes them: a sum of one-hot
/// generators `gen i < S: [… == i] * …`.
pub fn has_scatter(e: &E) -> bool {
    fn one_hot(i: &str, p: &Pr) -> bool {
        match p {
            Pr::Cmp("==", a, b) => *a == Ix::V(i.to_string()) || *b == Ix::V(i.to_string()),
            Pr::And(a, b) => one_hot(i, a) || one_hot(i, b),
            Pr::Cmp(..) => false,
        }
    }
    match e {
        E::Sum(_, _, _, body) if matches!(&**body, E::Gen(i, None, _, g) if matches!(&**g, E::Guard(p, _) if one_hot(i, p))) => {
            true
        }
        E::Lit(_) | E::Name(_) | E::Coord(_) => false,
        E::Acc(t, _) => has_scatter(t),
        E::Neg(a) | E::Transpose(a) | E::Flatten(a) | E::Amt(_, _, a) | E::Guard(_, a) => {
            has_scatter(a)
        }
        E::Gen(_, _, _, a) | E::Sum(_, _, _, a) | E::Max(_, _, a) => has_scatter(a),
        E::Bin(_, a, b) | E::Let(_, a, b) | E::Concat(a, b) => has_scatter(a) || has_scatter(b),
        E::Call(_, args) => args.iter().any(has_scatter),
    }
}

/// Whether some index expression of `e` loads from an index array.
pub fn reads_index_array(e: &E) -> bool {
    fn ix(i: &Ix) -> bool {
        match i {
            Ix::C(_) | Ix::V(_) => false,
            Ix::Load(..) => true,
            Ix::Bin(_, a, b) | Ix::F(_, a, b) => ix(a) || ix(b),
        }
    }
    fn pr(p: &Pr) -> bool {
        match p {
            Pr::Cmp(_, a, b) => ix(a) || ix(b),
            Pr::And(a, b) => pr(a) || pr(b),
        }
    }
    match e {
        E::Lit(_) | E::Name(_) => false,
        E::Coord(i) => ix(i),
        E::Acc(t, i) => ix(i) || reads_index_array(t),
        E::Neg(a) | E::Transpose(a) | E::Flatten(a) | E::Amt(_, _, a) => reads_index_array(a),
        E::Guard(p, a) => pr(p) || reads_index_array(a),
        E::Gen(_, lo, hi, a) | E::Sum(_, lo, hi, a) => {
            lo.as_ref().is_some_and(ix) || ix(hi) || reads_index_array(a)
        }
        E::Max(_, hi, a) => ix(hi) || reads_index_array(a),
        E::Bin(_, a, b) | E::Let(_, a, b) | E::Concat(a, b) => {
            reads_index_array(a) || reads_index_array(b)
        }
        E::Call(_, args) => args.iter().any(reads_index_array),
    }
}

/// The generated program's shape for the definitions: mostly `[n]`.
fn top_shape(g: &mut Gen<'_>) -> Vec<Ix> {
    let n = g.dims_first();
    match g.rng.below(12) {
        0..=6 => vec![n],
        7 => vec![],
        8 => {
            let m = g.size();
            vec![n, m]
        }
        9 => vec![fun("min", n, c(4))],
        10 => vec![fun("cdiv", n, c(2)), c(2)],
        _ => {
            let e = g.extent();
            vec![e]
        }
    }
}

/// One random program (without steps); `side` draws its index arrays, if any (see
/// [`index_arrays`]).
pub fn program(rng: &mut Rng, side: &mut Rng) -> Program {
    let mut sizes = vec!["n".to_string()];
    if rng.chance(35) {
        sizes.push("m".to_string());
    }
    let dims = sizes.clone();
    let mut extra: Vec<String> = Vec::new();
    if rng.chance(25) {
        let k = if rng.chance(60) { 4 } else { 2 };
        for v in ["x", "y", "z", "w"].iter().take(k) {
            extra.push(v.to_string());
        }
        sizes.extend(extra.iter().cloned());
    }
    // An index-only size, for the huge index reads (issue 28).
    let free: Vec<String> = if rng.chance(15) {
        sizes.push(FREE_SIZE.to_string());
        vec![FREE_SIZE.to_string()]
    } else {
        Vec::new()
    };
    let mut inputs = vec![("f".to_string(), vec![var("n")])];
    if rng.chance(40) {
        inputs.push(("g".to_string(), vec![var("n")]));
    }
    if dims.len() > 1 {
        inputs.push(("h".to_string(), vec![var("m")]));
        if rng.chance(50) {
            inputs.push(("A".to_string(), vec![var("n"), var("m")]));
        }
    } else if rng.chance(25) {
        inputs.push(("A".to_string(), vec![var("n"), var("n")]));
    }
    // Drawn from the side stream, so that a seed's programs are otherwise unchanged.
    let column_major: Vec<String> = inputs
        .iter()
        .filter(|(_, shape)| shape.len() == 2)
        .filter(|_| side.chance(30))
        .map(|(name, _)| name.clone())
        .collect();
    let arrays = index_arrays(side, &dims);
    let mut g = Gen {
        rng,
        dims,
        extra: extra.clone(),
        free,
        tensors: inputs.clone(),
        binders: Vec::new(),
        within: Vec::new(),
        arrays: arrays.clone(),
        load_nesting: 0,
        lets: Vec::new(),
        next_binder: 0,
        next_let: 0,
        fuel: 0,
        product_k: None,
    };
    let mut assumes: Vec<Pr> = Vec::new();
    for _ in 0..g.rng.below(3) {
        let n = g.size();
        let a = match g.rng.below(4) {
            0 => Pr::Cmp(">=", n, c(g.rng.range(2, 6))),
            1 => Pr::Cmp("<=", n, c(g.rng.range(3, 8))),
            2 => Pr::Cmp("==", bin("%", n, c(2)), c(0)),
            _ => {
                let m = g.size();
                Pr::Cmp("<=", m, n)
            }
        };
        assumes.push(a);
    }
    // Half of the time the extra sizes' bounds sit exactly on the prover's i128 edge.
    let calibrated = (extra.len() == 4 && g.rng.chance(50)).then(|| *g.rng.pick(&CALIBRATED));
    g.product_k = calibrated.map(|(k, _)| k);
    for v in &extra {
        let h = calibrated.map_or_else(|| *g.rng.pick(&HUGE), |(_, b)| b);
        assumes.push(Pr::Cmp("<=", var(v), c(h)));
    }
    if !extra.is_empty() {
        let p = g.product_fact();
        assumes.push(p);
    }
    let mut defs = Vec::new();
    let ndefs = if g.rng.chance(20) { 2 } else { 1 };
    for k in 0..ndefs {
        let name = if k == 0 { "a" } else { "a2" }.to_string();
        // The derivation's starting point of a program with index arrays reads one:
        // a few tries, the last kept whatever it reads.
        let tries = if !arrays.is_empty() && k + 1 == ndefs {
            LOAD_TRIES
        } else {
            1
        };
        let mut made = None;
        for _ in 0..tries {
            let (shape, body, assumed) = def_body(&mut g);
            let reads = reads_index_array(&body);
            made = Some((shape, body, assumed));
            if reads {
                break;
            }
        }
        let (shape, body, assumed) = made.expect("at least one try");
        assumes.extend(assumed);
        g.tensors.push((name.clone(), shape));
        defs.push((name, body));
    }
    Program {
        sizes,
        assumes,
        inputs,
        index_arrays: arrays,
        column_major,
        defs,
        steps: Vec::new(),
    }
}

/// Tries at a starting point that reads an index array (see [`program`]).
const LOAD_TRIES: usize = 6;

/// One definition: its shape, its body, and the `assume`s it needs.
fn def_body(g: &mut Gen<'_>) -> (Vec<Ix>, E, Vec<Pr>) {
    let mut assumes = Vec::new();
    let shape = top_shape(g);
    g.fuel = g.rng.range(6, 22) as i32;
    g.next_binder = 0;
    let depth = g.rng.range(2, 5) as u32;
    let body = if !shape.is_empty() && g.rng.chance(15) {
        // The whole definition a `++` whose first operand's extent `n - k` is
        // negative for small sizes (issue 17, hole 3), unless (half of the time)
        // the program assumes `n >= k`.
        let n = g.size();
        let k = g.rng.range(2, 6);
        if g.rng.chance(50) {
            assumes.push(Pr::Cmp(">=", n.clone(), c(k)));
        }
        let s1 = bin("-", n, c(k));
        let mut sh1 = vec![s1.clone()];
        sh1.extend_from_slice(&shape[1..]);
        let mut sh2 = vec![bin("-", shape[0].clone(), s1)];
        sh2.extend_from_slice(&shape[1..]);
        let d = depth.saturating_sub(1);
        E::Concat(b(g.tensor(&sh1, d)), b(g.tensor(&sh2, d)))
    } else {
        g.tensor(&shape, depth)
    };
    (shape, body, assumes)
}

/// A planted issue-28 program: one derivation-free definition (no step needed: the
/// empty derivation compiles it) reading `f` at a guarded huge index, the guard keeping
/// the *value* in range but not a blended load's index arithmetic
/// (`[i < 2] * f[(i * 2^62) % n]` overflows from `i = 2` on), beside an unguarded huge
/// read that is in range (`f[(i + 2^62) - 2^62]`), with `n >= 3` so that the kernel runs
/// where the guarded index overflows. Random programs almost never combine these.
pub fn planted(rng: &mut Rng) -> Program {
    let n = || var("n");
    let i = || var("i");
    let mut sizes = vec!["n".to_string()];
    let with_b = rng.chance(30);
    if with_b {
        sizes.push(FREE_SIZE.to_string());
    }
    let lo = rng.range(3, 5);
    let assumes = vec![Pr::Cmp(">=", n(), c(lo))];
    let inputs = vec![("f".to_string(), vec![n()])];
    // The guarded index and the largest binder value at which it is in range.
    let (hot, k) = match rng.below(if with_b { 7 } else { 6 }) {
        0 => {
            let k = *rng.pick(&[4_611_686_018_427_387_904, 9_223_372_036_854_775_807]);
            (bin("%", bin("*", i(), c(k)), n()), 1)
        }
        1 => (bin("%", bin("*", i(), c(1 << 61)), n()), 3),
        2 => {
            let k = 9_223_372_036_854_775_806;
            (bin("-", bin("+", i(), c(k)), c(k)), 1)
        }
        3 => {
            let k = 4_611_686_018_427_387_904;
            (bin("/", bin("*", i(), c(k)), c(k)), 1)
        }
        4 => {
            // A product of sizes as the modulus.
            let k = 4_611_686_018_427_387_904;
            let nn = bin("*", n(), n());
            (bin("%", bin("%", bin("*", i(), c(k)), nn), n()), 1)
        }
        5 => {
            let k = 4_611_686_018_427_387_903;
            (bin("%", bin("+", bin("*", i(), c(k)), c(1)), n()), 2)
        }
        _ => {
            // The index-only size, run at its entry bound (`i64::MAX` without one).
            (bin("%", bin("*", i(), var(FREE_SIZE)), n()), 1)
        }
    };
    let guarded = E::Guard(
        Pr::Cmp("<", i(), c(k + 1)),
        b(E::Acc(b(E::Name("f".to_string())), hot)),
    );
    let safe = match rng.below(3) {
        0 => {
            let k = 4_611_686_018_427_387_904;
            bin("-", bin("+", i(), c(k)), c(k))
        }
        1 => {
            let k = 2_147_483_648;
            bin("/", bin("*", i(), c(k)), c(k))
        }
        _ => i(),
    };
    let unguarded = E::Acc(b(E::Name("f".to_string())), safe);
    let body = if rng.chance(50) {
        E::Bin("+", b(guarded), b(unguarded))
    } else {
        E::Bin("+", b(unguarded), b(guarded))
    };
    Program {
        sizes,
        assumes,
        inputs,
        index_arrays: Vec::new(),
        column_major: Vec::new(),
        defs: vec![("a".to_string(), E::Gen("i".to_string(), None, n(), b(body)))],
        steps: Vec::new(),
    }
}

/// Whether some definition reads at an index with a huge constant (`2^31` and up) or
/// the index-only size: such programs are compiled and run under the sanitizers.
pub fn has_huge_index(p: &Program) -> bool {
    fn ix(i: &Ix) -> bool {
        match i {
            Ix::C(v) => v.unsigned_abs() >= 1 << 31,
            Ix::V(v) => v == FREE_SIZE,
            Ix::Bin(_, a, b) | Ix::F(_, a, b) => ix(a) || ix(b),
            Ix::Load(_, a) => ix(a),
        }
    }
    fn ex(e: &E) -> bool {
        match e {
            E::Lit(_) | E::Name(_) => false,
            E::Coord(i) => ix(i),
            E::Acc(t, i) => ix(i) || ex(t),
            E::Neg(a) | E::Transpose(a) | E::Flatten(a) | E::Amt(_, _, a) => ex(a),
            E::Guard(_, a) | E::Gen(_, _, _, a) | E::Sum(_, _, _, a) | E::Max(_, _, a) => ex(a),
            E::Bin(_, a, b) | E::Let(_, a, b) | E::Concat(a, b) => ex(a) || ex(b),
            E::Call(_, args) => args.iter().any(ex),
        }
    }
    p.defs.iter().any(|(_, e)| ex(e))
}

// ---------------------------------------------------------------------------------------
// Shrinking
// ---------------------------------------------------------------------------------------

fn ix_shrinks(i: &Ix) -> Vec<Ix> {
    let mut out = Vec::new();
    match i {
        Ix::C(v) => {
            if *v != 0 && *v != 1 {
                out.push(c(1));
                out.push(c(v / 2));
            }
        }
        Ix::V(_) => out.push(c(1)),
        Ix::Load(array, a) => {
            out.push(c(0));
            for a2 in ix_shrinks(a) {
                out.push(Ix::Load(array.clone(), Box::new(a2)));
            }
        }
        Ix::Bin(op, a, bb) | Ix::F(op, a, bb) => {
            out.push((**a).clone());
            out.push((**bb).clone());
            for a2 in ix_shrinks(a) {
                out.push(rebuild_ix(i, op, a2, (**bb).clone()));
            }
            for b2 in ix_shrinks(bb) {
                out.push(rebuild_ix(i, op, (**a).clone(), b2));
            }
        }
    }
    out
}

fn rebuild_ix(orig: &Ix, op: &'static str, a: Ix, bb: Ix) -> Ix {
    match orig {
        Ix::F(..) => fun(op, a, bb),
        _ => bin(op, a, bb),
    }
}

fn pr_shrinks(p: &Pr) -> Vec<Pr> {
    match p {
        Pr::And(a, bb) => vec![(**a).clone(), (**bb).clone()],
        Pr::Cmp(op, a, bb) => {
            let mut out = Vec::new();
            for a2 in ix_shrinks(a) {
                out.push(Pr::Cmp(op, a2, bb.clone()));
            }
            for b2 in ix_shrinks(bb) {
                out.push(Pr::Cmp(op, a.clone(), b2));
            }
            out
        }
    }
}

/// Every expression one simplification away from `e`: a child in its place, a literal,
/// a guard dropped, one index or predicate simplified.
pub fn shrinks(e: &E) -> Vec<E> {
    let mut out: Vec<E> = Vec::new();
    if !matches!(e, E::Lit(_)) {
        out.push(E::Lit(1.0));
    }
    match e {
        E::Lit(_) | E::Name(_) => {}
        E::Coord(i) => out.extend(ix_shrinks(i).into_iter().map(E::Coord)),
        E::Acc(t, i) => {
            out.extend(shrinks(t).into_iter().map(|t2| E::Acc(b(t2), i.clone())));
            out.extend(ix_shrinks(i).into_iter().map(|i2| E::Acc(t.clone(), i2)));
        }
        E::Neg(a) => {
            out.push((**a).clone());
            out.extend(shrinks(a).into_iter().map(|a2| E::Neg(b(a2))));
        }
        E::Bin(op, a, bb) => {
            out.push((**a).clone());
            out.push((**bb).clone());
            out.extend(
                shrinks(a)
                    .into_iter()
                    .map(|a2| E::Bin(op, b(a2), bb.clone())),
            );
            out.extend(
                shrinks(bb)
                    .into_iter()
                    .map(|b2| E::Bin(op, a.clone(), b(b2))),
            );
        }
        E::Guard(p, body) => {
            out.push((**body).clone());
            out.extend(
                pr_shrinks(p)
                    .into_iter()
                    .map(|p2| E::Guard(p2, body.clone())),
            );
            out.extend(
                shrinks(body)
                    .into_iter()
                    .map(|b2| E::Guard(p.clone(), b(b2))),
            );
        }
        E::Gen(v, lo, hi, body) | E::Sum(v, lo, hi, body) => {
            let mk = |lo: Option<Ix>, hi: Ix, body: E| match e {
                E::Gen(..) => E::Gen(v.clone(), lo, hi, b(body)),
                _ => E::Sum(v.clone(), lo, hi, b(body)),
            };
            if matches!(e, E::Sum(..)) {
                out.push((**body).clone());
            }
            if lo.is_some() {
                out.push(mk(None, hi.clone(), (**body).clone()));
            }
            out.extend(
                ix_shrinks(hi)
                    .into_iter()
                    .map(|h2| mk(lo.clone(), h2, (**body).clone())),
            );
            out.extend(
                shrinks(body)
                    .into_iter()
                    .map(|b2| mk(lo.clone(), hi.clone(), b2)),
            );
        }
        E::Max(v, hi, body) => {
            out.push((**body).clone());
            out.extend(
                ix_shrinks(hi)
                    .into_iter()
                    // Never an empty range.
                    .filter(|h2| !matches!(h2, Ix::C(k) if *k < 1))
                    .map(|h2| E::Max(v.clone(), h2, body.clone())),
            );
            out.extend(
                shrinks(body)
                    .into_iter()
                    .map(|b2| E::Max(v.clone(), hi.clone(), b(b2))),
            );
        }
        E::Let(v, val, body) => {
            out.push((**body).clone());
            out.extend(
                shrinks(val)
                    .into_iter()
                    .map(|v2| E::Let(v.clone(), b(v2), body.clone())),
            );
            out.extend(
                shrinks(body)
                    .into_iter()
                    .map(|b2| E::Let(v.clone(), val.clone(), b(b2))),
            );
        }
        E::Concat(a, bb) => {
            out.extend(
                shrinks(a)
                    .into_iter()
                    .map(|a2| E::Concat(b(a2), bb.clone())),
            );
            out.extend(
                shrinks(bb)
                    .into_iter()
                    .map(|b2| E::Concat(a.clone(), b(b2))),
            );
        }
        E::Amt(op, k, a) => {
            out.push((**a).clone());
            out.extend(
                ix_shrinks(k)
                    .into_iter()
                    .map(|k2| E::Amt(op, k2, a.clone())),
            );
            out.extend(
                shrinks(a)
                    .into_iter()
                    .map(|a2| E::Amt(op, k.clone(), b(a2))),
            );
        }
        E::Transpose(a) | E::Flatten(a) => {
            out.push((**a).clone());
            let wrap = |x: E| match e {
                E::Transpose(_) => E::Transpose(b(x)),
                _ => E::Flatten(b(x)),
            };
            out.extend(shrinks(a).into_iter().map(wrap));
        }
        E::Call(name, args) => {
            // An argument alone (the scalar functions take and give scalars), or one
            // argument simplified.
            out.extend(args.iter().cloned());
            for (k, a) in args.iter().enumerate() {
                out.extend(shrinks(a).into_iter().map(|a2| {
                    let mut args2 = args.clone();
                    args2[k] = a2;
                    E::Call(name, args2)
                }));
            }
        }
    }
    out
}

/// Every program one simplification away: a step, an assume or a definition dropped,
/// one definition's body simplified.
pub fn program_shrinks(p: &Program) -> Vec<Program> {
    let mut out = Vec::new();
    for k in 0..p.steps.len() {
        let mut q = p.clone();
        q.steps.remove(k);
        out.push(q);
    }
    for k in 0..p.assumes.len() {
        let mut q = p.clone();
        q.assumes.remove(k);
        out.push(q);
        for a2 in pr_shrinks(&p.assumes[k]) {
            let mut q = p.clone();
            q.assumes[k] = a2;
            out.push(q);
        }
    }
    if p.defs.len() > 1 {
        let mut q = p.clone();
        q.defs.remove(0);
        out.push(q);
    }
    for k in 0..p.inputs.len() {
        let mut q = p.clone();
        q.inputs.remove(k);
        out.push(q);
    }
    for k in 0..p.index_arrays.len() {
        let mut q = p.clone();
        q.index_arrays.remove(k);
        out.push(q);
        if p.index_arrays[k].sorted {
            let mut q = p.clone();
            q.index_arrays[k].sorted = false;
            out.push(q);
        }
    }
    for k in (0..p.sizes.len()).rev() {
        let mut q = p.clone();
        q.sizes.remove(k);
        out.push(q);
    }
    for k in 0..p.defs.len() {
        for e2 in shrinks(&p.defs[k].1) {
            let mut q = p.clone();
            q.defs[k].1 = e2;
            out.push(q);
        }
    }
    out
}

//! The algebra's laws as properties over generated layouts, each on its domain:
//! coalesce keeps the size and the values on `[0, size)`; whenever compose succeeds,
//! `compose(A, B)(i) = A(B(i))` on `[0, size B)`; whenever complement succeeds,
//! `(A, complement(A, M))` is a bijection onto `[0, N)`, `N >= M`, with `N = M` when
//! M is a multiple of A's largest extent times stride; logical divide and product
//! agree with their definitions; `idx_crd`/`crd_idx` round-trip; printing and parsing
//! round-trip. The counterexamples outside each domain are in `examples.rs`.
//!
//! A seeded generator also checks that compose and complement succeed often enough on
//! the generated operands for these properties to mean something.

use atl_layout::{
    IntTuple, Layout, coalesce, complement, compose, concat, crd_idx, idx_crd, logical_divide,
    logical_product, parse_layout,
};
use proptest::prelude::*;

/// Extents and strides built from small factors, so that compositions often exist.
fn tuple_of(leaf: BoxedStrategy<i64>, depth: u32) -> BoxedStrategy<IntTuple> {
    let l = leaf.clone().prop_map(IntTuple::Int).boxed();
    if depth == 0 {
        return l;
    }
    prop_oneof![
        2 => l,
        1 => prop::collection::vec(tuple_of(leaf, depth - 1), 1..=3).prop_map(IntTuple::Tuple),
    ]
    .boxed()
}

/// A layout: a random shape tree, strides congruent to it.
fn layout() -> impl Strategy<Value = Layout> {
    let extent = prop::sample::select(vec![1i64, 2, 2, 3, 4, 6]).boxed();
    tuple_of(extent, 2).prop_flat_map(|shape| {
        let n = shape.rank();
        prop::collection::vec(
            prop::sample::select(vec![0i64, 1, 1, 2, 3, 4, 6, 8, 12, 24]),
            n,
        )
        .prop_map(move |strides| {
            let stride = shape.with_leaves(&strides).expect("same rank");
            Layout::new(shape.clone(), stride).expect("small layouts are well formed")
        })
    })
}

/// Every value of `l` on its domain.
fn values(l: &Layout) -> Vec<i64> {
    l.values(usize::MAX)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn coalesce_keeps_size_and_values(a in layout()) {
        let c = coalesce(&a).unwrap();
        prop_assert_eq!(c.size(), a.size());
        prop_assert_eq!(values(&c), values(&a));
        prop_assert_eq!(c.cosize(), a.cosize());
        // Idempotent.
        prop_assert_eq!(coalesce(&c).unwrap(), c);
    }

    #[test]
    fn compose_is_composition(a in layout(), b in layout()) {
        if let Ok(r) = compose(&a, &b) {
            prop_assert_eq!(r.size(), b.size());
            for i in 0..b.size() {
                let expected = a.apply(b.apply(i).unwrap()).unwrap();
                prop_assert_eq!(r.apply(i).unwrap(), expected, "{} o {} = {} at {}", a, b, r, i);
            }
        }
    }

    #[test]
    fn compose_with_a_tile_of_a_is_composition(a in layout(), k in 0usize..4, s in 1i64..5) {
        // Right operands built from A's own extents: the common case of tiling.
        let prefix: i64 = a.shape().leaves().iter().take(k).product();
        let b = Layout::leaf(s, prefix).unwrap();
        if let Ok(r) = compose(&a, &b) {
            for i in 0..b.size() {
                prop_assert_eq!(r.apply(i).unwrap(), a.apply(b.apply(i).unwrap()).unwrap());
            }
        }
    }

    #[test]
    fn complement_completes_a_bijection(a in layout(), m in 1i64..100) {
        if let Ok(c) = complement(&a, m) {
            let both = concat(&[a.clone(), c]).unwrap();
            let mut image = values(&both);
            image.sort_unstable();
            let n = both.size();
            prop_assert_eq!(&image, &(0..n).collect::<Vec<_>>(), "({}, complement) = {}", a, both);
            prop_assert!(n >= m);
            let top = a.modes().iter().filter(|(s, _)| *s > 1).map(|(s, d)| s * d).max().unwrap_or(1);
            if m % top == 0 {
                prop_assert_eq!(n, m, "{} with M = {}", a, m);
            }
        }
    }

    #[test]
    fn logical_divide_is_its_definition(a in layout(), b in layout()) {
        if let Ok(r) = logical_divide(&a, &b) {
            let bstar = concat(&[b.clone(), complement(&b, a.size()).unwrap()]).unwrap();
            prop_assert_eq!(r.size(), bstar.size());
            for i in 0..r.size() {
                prop_assert_eq!(r.apply(i).unwrap(), a.apply(bstar.apply(i).unwrap()).unwrap());
            }
            // Mode 0 is A seen through B.
            prop_assert_eq!(&r.top_modes()[0], &compose(&a, &b).unwrap());
        }
    }

    #[test]
    fn logical_product_is_its_definition(a in layout(), b in layout()) {
        if let Ok(r) = logical_product(&a, &b) {
            let modes = r.top_modes();
            prop_assert_eq!(&modes[0], &a);
            let rest = compose(&complement(&a, a.size() * b.cosize()).unwrap(), &b).unwrap();
            prop_assert_eq!(&modes[1], &rest);
            // R(x + size A * y) = A(x) + rest(y).
            for y in 0..b.size() {
                for x in 0..a.size() {
                    let i = x + a.size() * y;
                    prop_assert_eq!(r.apply(i).unwrap(), a.apply(x).unwrap() + rest.apply(y).unwrap());
                }
            }
        }
    }

    #[test]
    fn idx_crd_and_crd_idx_round_trip(a in layout(), extra in 0i64..3) {
        let shape = a.shape();
        // Beyond the size too: the last mode absorbs the overflow.
        for i in 0..(a.size() * (1 + extra)).max(1) {
            let c = match idx_crd(shape, i) {
                Ok(c) => c,
                Err(_) => { prop_assert_eq!(a.size(), 0); continue; }
            };
            prop_assert_eq!(crd_idx(shape, &c).unwrap(), i);
            prop_assert_eq!(a.at(&c).unwrap(), a.apply(i).unwrap());
            if i < a.size() {
                for (digit, extent) in c.leaves().into_iter().zip(shape.leaves()) {
                    prop_assert!((0..extent).contains(&digit));
                }
            }
        }
    }

    #[test]
    fn printing_and_parsing_round_trip(a in layout()) {
        prop_assert_eq!(parse_layout(&a.to_string()).unwrap(), a);
    }
}

/// xorshift64*: a small deterministic generator for the success-rate check.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn pick(&mut self, options: &[i64]) -> i64 {
        options[(self.next() % options.len() as u64) as usize]
    }

    fn layout(&mut self) -> Layout {
        let n = 1 + (self.next() % 3) as usize;
        let modes: Vec<(i64, i64)> = (0..n)
            .map(|_| {
                (
                    self.pick(&[1, 2, 3, 4, 6]),
                    self.pick(&[1, 2, 3, 4, 6, 8, 12]),
                )
            })
            .collect();
        Layout::from_modes(&modes).unwrap()
    }
}

#[test]
fn the_properties_are_not_vacuous() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let (mut composed, mut complemented, trials) = (0, 0, 2000);
    for _ in 0..trials {
        let (a, b) = (rng.layout(), rng.layout());
        if let Ok(r) = compose(&a, &b) {
            composed += 1;
            for i in 0..b.size() {
                assert_eq!(
                    r.apply(i),
                    a.apply(b.apply(i).unwrap()),
                    "{a} o {b} = {r} at {i}"
                );
            }
        }
        if complement(&a, 48).is_ok() {
            complemented += 1;
        }
    }
    assert!(
        composed * 10 > trials,
        "only {composed} of {trials} compositions succeeded"
    );
    assert!(
        complemented * 10 > trials,
        "only {complemented} of {trials} complements succeeded"
    );
}

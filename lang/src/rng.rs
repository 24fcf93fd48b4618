//! The project's one deterministic pseudo-random generator: `splitmix64` (Steele, Lea,
//! Flood 2014) and the few helpers its users share. It is tiny, fast and fully specified,
//! so a seed means the same stream everywhere: `random:SEED` inputs of the interpreter
//! (reproducible by other tools such as the C harness), the bounded rule checker and the
//! random program generators of the tests. Changing any function here changes what every
//! recorded seed means; the unit tests pin the streams.

/// The `splitmix64` generator. Every helper draws whole `u64`s from the one stream, so
/// a sequence of calls is reproducible from the seed alone.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` by a modulo (its bias is irrelevant to the users); `0` when
    /// `n == 0`, so callers that index an empty list still fail at the index, not here.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// True with probability `percent` percent (one draw, `x % 100 < percent`).
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    /// Uniform in `lo..=hi_inclusive` (`lo <= hi_inclusive`).
    pub fn range(&mut self, lo: i64, hi_inclusive: i64) -> i64 {
        lo + self.below((hi_inclusive - lo + 1) as usize) as i64
    }

    /// A uniformly chosen element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// Uniform in `[-1, 1)`: `(x >> 11) / 2^53 * 2 - 1`, exact in `f64` (the values of
    /// the interpreter's `random:SEED` inputs).
    pub fn uniform_signed_unit(&mut self) -> f64 {
        let scale = 1.0 / (1u64 << 53) as f64;
        (self.next_u64() >> 11) as f64 * scale * 2.0 - 1.0
    }

    /// The seed of case `case` of a run seeded with `seed`, so each case of a long run
    /// is reproducible on its own.
    pub fn case_seed(seed: u64, case: u64) -> u64 {
        SplitMix64(seed ^ case.wrapping_mul(0xD1B5_4A32_D192_ED03)).next_u64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_outputs_match_the_reference_stream() {
        // The reference values of splitmix64 seeded with 0.
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(rng.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn helpers_draw_one_value_each() {
        let mut a = SplitMix64::new(42);
        let mut b = SplitMix64::new(42);
        assert_eq!(a.below(7), (b.next_u64() % 7) as usize);
        assert_eq!(a.chance(30), b.next_u64() % 100 < 30);
        assert_eq!(a.below(0), 0);
        b.next_u64();
        let x = a.uniform_signed_unit();
        assert!((-1.0..1.0).contains(&x));
        assert_eq!(
            x,
            (b.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        );
    }
}

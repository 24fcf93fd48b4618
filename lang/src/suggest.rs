//! "Did you mean" hints: the edit distance between two names and the closest of a set of
//! candidates. Shared by name resolution here and the rule library's rule names
//! (`atl-rules`), so both suggest by the same measure.

/// The Levenshtein distance between `a` and `b`, counted in `char`s: the fewest
/// one-character insertions, deletions and substitutions that turn one into the other.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The candidate closest to `name` among those at most `max_distance` edits away; ties
/// go to the candidate first in string order, so the hint does not depend on the order
/// the candidates come in. Each caller chooses its own `max_distance` and filters the
/// candidates it would not suggest.
pub fn closest<'c>(
    name: &str,
    candidates: impl IntoIterator<Item = &'c str>,
    max_distance: usize,
) -> Option<&'c str> {
    candidates
        .into_iter()
        .map(|c| (edit_distance(name, c), c))
        .filter(|(d, _)| *d <= max_distance)
        .min()
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("", ""), 0);
        assert_eq!(edit_distance("abc", ""), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("get_gen", "gen_get"), 2);
        // Counted in chars, not bytes.
        assert_eq!(edit_distance("α", "β"), 1);
    }

    #[test]
    fn closest_prefers_distance_then_string_order() {
        let names = ["zeta", "beta", "betas"];
        assert_eq!(closest("bets", names, 1), Some("beta"));
        assert_eq!(closest("xeta", names, 1), Some("beta"));
        assert_eq!(closest("qqqq", names, 2), None);
    }
}

//! `sample_perfect_tile`: `n` factors whose product is a constant extent.

use super::SampleError;
use rand::Rng;
use rustc_hash::FxHashMap as HashMap;

fn divisors(x: i64) -> Vec<i64> {
    let mut small = Vec::new();
    let mut large = Vec::new();
    let mut d = 1;
    while d * d <= x {
        if x % d == 0 {
            small.push(d);
            if d != x / d {
                large.push(x / d);
            }
        }
        d += 1;
    }
    small.extend(large.into_iter().rev());
    small
}

/// Counts ordered factorizations of `extent` into `n` factors whose last is
/// at most `max_innermost` (memoized on (extent, n)).
struct Counter {
    max_innermost: i64,
    memo: HashMap<(i64, usize), u128>,
}

impl Counter {
    fn count(&mut self, extent: i64, n: usize) -> u128 {
        if n == 1 {
            return u128::from(extent <= self.max_innermost);
        }
        if let Some(c) = self.memo.get(&(extent, n)) {
            return *c;
        }
        let c = divisors(extent).into_iter().map(|d| self.count(extent / d, n - 1)).sum();
        self.memo.insert((extent, n), c);
        c
    }
}

/// Counts a thread remembers before it forgets them all.
const MAX_REMEMBERED: usize = 1 << 14;

thread_local! {
    /// Counters by `max_innermost`: replaying a trace counts the domain of
    /// each tiling decision, and a search replays the same tilings of the
    /// same extents thousands of times.
    static COUNTERS: std::cell::RefCell<HashMap<i64, Counter>> = std::cell::RefCell::default();
}

/// `f` with this thread's counter for `max_innermost` (at least 1).
fn with_counter<T>(max_innermost: i64, f: impl FnOnce(&mut Counter) -> T) -> T {
    let max_innermost = max_innermost.max(1);
    COUNTERS.with(|c| {
        let mut all = c.borrow_mut();
        if all.values().map(|c| c.memo.len()).sum::<usize>() > MAX_REMEMBERED {
            all.clear();
        }
        f(all.entry(max_innermost).or_insert_with(|| Counter { max_innermost, memo: HashMap::default() }))
    })
}

/// Number of decisions of `sample_perfect_tile(extent, n, max_innermost)`.
pub fn count_perfect(extent: i64, n: usize, max_innermost: i64) -> u128 {
    if extent < 1 || n == 0 {
        return 0;
    }
    with_counter(max_innermost, |c| c.count(extent, n))
}

/// Draws uniformly among the factorizations (outermost first).
pub fn sample_perfect(extent: i64, n: usize, max_innermost: i64, rng: &mut impl Rng) -> Result<Vec<i64>, SampleError> {
    with_counter(max_innermost, |counter| draw_perfect(counter, extent, n, max_innermost, rng))
}

/// [`sample_perfect`] with `counter`.
fn draw_perfect(
    counter: &mut Counter,
    extent: i64,
    n: usize,
    max_innermost: i64,
    rng: &mut impl Rng,
) -> Result<Vec<i64>, SampleError> {
    if extent < 1 || n == 0 || counter.count(extent, n) == 0 {
        return Err(SampleError(format!(
            "extent {extent} has no {n}-way tiling with innermost factor <= {max_innermost}"
        )));
    }
    let mut out = Vec::with_capacity(n);
    let mut rest = extent;
    for level in (1..=n).rev() {
        if level == 1 {
            out.push(rest);
            break;
        }
        let total = counter.count(rest, level);
        let mut pick = rng.gen_range(0..total);
        for d in divisors(rest) {
            let c = counter.count(rest / d, level - 1);
            if pick < c {
                out.push(d);
                rest /= d;
                break;
            }
            pick -= c;
        }
    }
    Ok(out)
}

/// Checks a recorded decision against the extent it is replayed on.
pub fn perfect_domain_ok(extent: i64, n: usize, max_innermost: i64, decision: &[i64]) -> Result<(), SampleError> {
    if decision.len() != n {
        return Err(SampleError(format!("decision has {} factors, expected {n}", decision.len())));
    }
    if decision.iter().any(|f| *f < 1) {
        return Err(SampleError(format!("decision {decision:?} has a factor below 1")));
    }
    let Some(product) = decision.iter().try_fold(1i64, |a, f| a.checked_mul(*f)) else {
        return Err(SampleError(format!(
            "decision {decision:?} multiplies beyond 64 bits, but the loop's extent is {extent}"
        )));
    };
    if product != extent {
        return Err(SampleError(format!(
            "decision {decision:?} multiplies to {product}, but the loop's extent is {extent}"
        )));
    }
    if decision.last().copied().unwrap_or(1) > max_innermost {
        return Err(SampleError(format!("innermost factor of {decision:?} exceeds {max_innermost}")));
    }
    Ok(())
}

/// The decision nearest to `decision` that tiles `extent` perfectly, for a
/// recorded decision whose loop's extent changed (a mutant's earlier tile
/// sizes moved a factor into or out of a fused loop): from the outermost
/// level in, each level keeps the largest divisor of its factor that still
/// divides what is left of the extent, and the innermost level takes the
/// rest. Splitting off a parallel loop, this keeps the number of chunks
/// whenever it divides the new extent. If that rest exceeds
/// `max_innermost`, the levels are kept from the innermost out instead and
/// the outermost takes the rest (the innermost factor then divides the old
/// one, so it is within the limit). `None` if the decision has the wrong
/// number of factors or a factor below 1, or its innermost factor exceeds
/// the limit.
pub fn repair_perfect(extent: i64, n: usize, max_innermost: i64, decision: &[i64]) -> Option<Vec<i64>> {
    if extent < 1 || decision.len() != n || n == 0 || decision.iter().any(|f| *f < 1) || decision[n - 1] > max_innermost
    {
        return None;
    }
    let keep = |levels: &mut dyn Iterator<Item = &i64>| -> (Vec<i64>, i64) {
        let mut rest = extent;
        let kept = levels
            .map(|f| {
                let k = gcd(*f, rest);
                rest /= k;
                k
            })
            .collect();
        (kept, rest)
    };
    let (mut outer_first, rest) = keep(&mut decision[..n - 1].iter());
    if rest <= max_innermost {
        outer_first.push(rest);
        return Some(outer_first);
    }
    let (inner_first, rest) = keep(&mut decision[1..].iter().rev());
    Some(std::iter::once(rest).chain(inner_first.into_iter().rev()).collect())
}

fn gcd(mut a: i64, mut b: i64) -> i64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn a_repaired_decision_tiles_the_new_extent_and_keeps_outer_factors() {
        // The extent grew by 2: the outer factor (the chunks) stays.
        assert_eq!(repair_perfect(24, 2, 64, &[4, 3]), Some(vec![4, 6]));
        // It shrank by 2 and the outer factor still divides it: kept.
        assert_eq!(repair_perfect(6, 2, 64, &[2, 6]), Some(vec![2, 3]));
        // It no longer divides it: its largest divisor that does.
        assert_eq!(repair_perfect(18, 2, 64, &[4, 3]), Some(vec![2, 9]));
        // More levels: each keeps what still divides the rest.
        assert_eq!(repair_perfect(40, 3, 64, &[4, 6, 1]), Some(vec![4, 2, 5]));
        // An unchanged extent leaves a valid decision as it is.
        assert_eq!(repair_perfect(12, 3, 64, &[2, 3, 2]), Some(vec![2, 3, 2]));
        // The rest over the innermost limit: kept from the innermost out.
        assert_eq!(repair_perfect(7, 2, 4, &[2, 1]), Some(vec![7, 1]));
        assert_eq!(repair_perfect(64, 2, 8, &[4, 4]), Some(vec![16, 4]));
        assert_eq!(repair_perfect(96, 3, 4, &[2, 3, 4]), Some(vec![8, 3, 4]));
        // A malformed decision, or one already over the limit: none.
        assert_eq!(repair_perfect(64, 2, 8, &[4, 16]), None);
        assert_eq!(repair_perfect(12, 2, 64, &[4, 3, 1]), None);
        assert_eq!(repair_perfect(12, 2, 64, &[0, 3]), None);
        // A product beyond 64 bits is a fault, not a wrap-around.
        let huge = [1i64 << 62, 8];
        assert!(perfect_domain_ok(0, 2, 8, &huge).is_err_and(|e| e.0.contains("beyond 64 bits")));
        // Every repair is a perfect tiling of the extent within the limit.
        for extent in 1..=60 {
            for d in [[1, 1, 1], [2, 3, 4], [8, 1, 2], [5, 5, 5]] {
                if let Some(r) = repair_perfect(extent, 3, 16, &d) {
                    assert_eq!(perfect_domain_ok(extent, 3, 16, &r), Ok(()), "{extent} {d:?} -> {r:?}");
                }
            }
        }
    }

    #[test]
    fn counts_match_enumeration() {
        // 12 = 2*2*3, two factors with innermost <= 4: (12,1) (6,2) (4,3) (3,4).
        assert_eq!(count_perfect(12, 2, 4), 4);
        assert_eq!(count_perfect(12, 2, 100), 6);
        // Three factors of 8 (= 2^3): C(3+2, 2) = 10 ordered factorizations.
        assert_eq!(count_perfect(8, 3, 8), 10);
        assert_eq!(count_perfect(7, 2, 1), 1);
    }

    #[test]
    fn samples_are_valid_and_cover_the_domain() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..400 {
            let d = sample_perfect(12, 2, 4, &mut rng).expect("samples");
            perfect_domain_ok(12, 2, 4, &d).expect("valid");
            seen.insert(d);
        }
        assert_eq!(seen.len(), 4);
        assert!(perfect_domain_ok(12, 2, 4, &[2, 5]).is_err());
        assert!(sample_perfect(7, 2, 0, &mut rng).is_ok());
    }
}

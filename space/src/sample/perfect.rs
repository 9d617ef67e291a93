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
    let product: i64 = decision.iter().product();
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

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

//! Statistics for judging measurements: the median, and Kendall's tau-b between two figures of the same candidates.

/// The median of `xs` (the mean of the middle two for an even count;
/// `None` when empty). Values compare with `f64::total_cmp`.
pub fn median(mut xs: Vec<f64>) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    Some(if n % 2 == 1 { xs[n / 2] } else { (xs[n / 2 - 1] + xs[n / 2]) / 2.0 })
}

/// Kendall's tau-b of two equally long samples: +1 when they rank every
/// pair alike, -1 when they rank every pair oppositely, with ties in either
/// sample handled by the tau-b correction. Only the first
/// `min(x.len(), y.len())` pairs are used; NaN when there are fewer than two,
/// or when either sample is constant. Values compare with `f64::total_cmp`.
pub fn kendall_tau_b(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len().min(y.len());
    let (mut concordant, mut discordant, mut ties_x, mut ties_y) = (0i64, 0i64, 0i64, 0i64);
    for i in 0..n {
        for j in i + 1..n {
            let dx = x[i].total_cmp(&x[j]);
            let dy = y[i].total_cmp(&y[j]);
            match (dx.is_eq(), dy.is_eq()) {
                (true, true) => {
                    ties_x += 1;
                    ties_y += 1;
                }
                (true, false) => ties_x += 1,
                (false, true) => ties_y += 1,
                (false, false) if dx == dy => concordant += 1,
                (false, false) => discordant += 1,
            }
        }
    }
    let pairs = (n * n.saturating_sub(1) / 2) as f64;
    let denom = ((pairs - ties_x as f64) * (pairs - ties_y as f64)).sqrt();
    if denom == 0.0 {
        f64::NAN
    } else {
        (concordant - discordant) as f64 / denom
    }
}

#[cfg(test)]
mod tests {
    use super::{kendall_tau_b, median};

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn the_median_is_the_middle_or_the_mean_of_the_middle_two() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }

    #[test]
    fn agreement_disagreement_and_monotone_transforms() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert!(close(kendall_tau_b(&x, &x), 1.0));
        let reversed = [5.0, 4.0, 3.0, 2.0, 1.0];
        assert!(close(kendall_tau_b(&x, &reversed), -1.0));
        // Only ranks matter.
        let cubed: Vec<f64> = x.iter().map(|v| v * v * v + 7.0).collect();
        assert!(close(kendall_tau_b(&x, &cubed), 1.0));
    }

    #[test]
    fn a_known_value_without_ties() {
        // Pairs of (1,2,3,4) vs (1,3,2,4): 5 concordant, 1 discordant of 6.
        let t = kendall_tau_b(&[1.0, 2.0, 3.0, 4.0], &[1.0, 3.0, 2.0, 4.0]);
        assert!(close(t, 4.0 / 6.0), "{t}");
    }

    #[test]
    fn ties_use_the_tau_b_correction() {
        // x = (1,1,2,3), y = (1,2,3,4): 6 pairs, 1 tied in x, 5 concordant,
        // tau-b = 5 / sqrt((6-1) * (6-0)).
        let t = kendall_tau_b(&[1.0, 1.0, 2.0, 3.0], &[1.0, 2.0, 3.0, 4.0]);
        assert!(close(t, 5.0 / 30f64.sqrt()), "{t}");
        // A pair tied in both counts in both tie totals: x = (1,1,2), y = (5,5,6):
        // 3 pairs, 1 tied in both, 2 concordant: 2 / sqrt(2 * 2) = 1.
        assert!(close(kendall_tau_b(&[1.0, 1.0, 2.0], &[5.0, 5.0, 6.0]), 1.0));
    }

    #[test]
    fn degenerate_samples_are_nan_and_lengths_are_cut_to_the_shorter() {
        assert!(kendall_tau_b(&[], &[]).is_nan());
        assert!(kendall_tau_b(&[1.0], &[2.0]).is_nan());
        assert!(kendall_tau_b(&[3.0, 3.0, 3.0], &[1.0, 2.0, 3.0]).is_nan(), "a constant sample");
        assert!(close(kendall_tau_b(&[1.0, 2.0, 3.0, 0.0], &[1.0, 2.0, 3.0]), 1.0));
    }
}

//! Gradient-boosted regression trees (forust-ml: pure Rust, XGBoost's algorithm) behind the small interface the cost model needs.
//!
//! Settings for the few dozen to few thousand rows a tuning job has:
//! shallow trees, a moderate learning rate, small leaves, single-threaded
//! (the builders and runners own the cores, and training is deterministic
//! for the same rows and seed).

use forust_ml::objective::ObjectiveType;
use forust_ml::{GradientBooster, Matrix};
use thiserror::Error;

/// Why a model could not be trained.
#[derive(Debug, Error)]
pub enum CostModelError {
    /// Rows of different lengths, or targets that do not match the rows.
    #[error("cost model: {0}")]
    Shape(String),
    /// The booster refused the data.
    #[error("cost model: training failed: {0}")]
    Training(String),
}

/// A trained ensemble.
pub struct Gbdt {
    booster: GradientBooster,
    n_features: usize,
}

impl std::fmt::Debug for Gbdt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gbdt").field("n_features", &self.n_features).finish_non_exhaustive()
    }
}

/// Column-major f64 copy of row-major rows (forust's layout).
fn column_major(rows: &[Vec<f32>], n_features: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(rows.len() * n_features);
    for c in 0..n_features {
        out.extend(rows.iter().map(|r| f64::from(r[c])));
    }
    out
}

impl Gbdt {
    /// Trains on rows of features (all the same length) and their targets.
    pub fn train(features: &[Vec<f32>], targets: &[f32], seed: u64) -> Result<Gbdt, CostModelError> {
        let n_features = features.first().map_or(0, Vec::len);
        if features.len() != targets.len() || features.is_empty() {
            return Err(CostModelError::Shape(format!("{} rows, {} targets", features.len(), targets.len())));
        }
        if let Some(r) = features.iter().find(|r| r.len() != n_features) {
            return Err(CostModelError::Shape(format!("a row of {} features among rows of {n_features}", r.len())));
        }
        let data = column_major(features, n_features);
        let matrix = Matrix::new(&data, features.len(), n_features);
        let y: Vec<f64> = targets.iter().map(|&t| f64::from(t)).collect();
        let mut booster = GradientBooster::default()
            .set_objective_type(ObjectiveType::SquaredLoss)
            .set_iterations(150)
            .set_learning_rate(0.1)
            .set_max_depth(5)
            .set_min_leaf_weight(1.0)
            .set_parallel(false)
            .set_seed(seed);
        booster.fit_unweighted(&matrix, &y, None).map_err(|e| CostModelError::Training(e.to_string()))?;
        Ok(Gbdt { booster, n_features })
    }

    /// Predicted targets of rows (rows of another length predict +inf: ranked last).
    pub fn predict(&self, features: &[Vec<f32>]) -> Vec<f32> {
        let good: Vec<Vec<f32>> = features.iter().filter(|r| r.len() == self.n_features).cloned().collect();
        let mut predicted = if good.is_empty() {
            Vec::new().into_iter()
        } else {
            let data = column_major(&good, self.n_features);
            self.booster.predict(&Matrix::new(&data, good.len(), self.n_features), true).into_iter()
        };
        features
            .iter()
            .map(|r| {
                if r.len() == self.n_features {
                    predicted.next().map_or(f32::INFINITY, |p| p as f32)
                } else {
                    f32::INFINITY
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// A roofline-like run time with a cache cliff: what tile sizes and lanes do to a kernel.
    fn synthetic(n: usize, seed: u64) -> (Vec<Vec<f32>>, Vec<f32>) {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut x = Vec::new();
        let mut y = Vec::new();
        for _ in 0..n {
            let tile: f32 = rng.gen_range(0.0..8.0);
            let lanes: f32 = [2.0f32, 3.0, 4.0][rng.gen_range(0..3)];
            let unroll: f32 = rng.gen_range(0.0..4.0);
            let masked: f32 = rng.gen_range(0.0..1.0);
            let compute = 20.0 - lanes - 0.5 * unroll.min(2.0);
            let memory = 14.0 + if tile > 5.0 { 3.0 } else { 0.0 } - 0.3 * tile;
            let noise: f32 = rng.gen_range(-0.1..0.1);
            x.push(vec![tile, lanes, unroll, masked]);
            y.push(compute.max(memory) + masked + noise);
        }
        (x, y)
    }

    fn tau(a: &[f32], b: &[f32]) -> f64 {
        let a: Vec<f64> = a.iter().map(|&v| f64::from(v)).collect();
        let b: Vec<f64> = b.iter().map(|&v| f64::from(v)).collect();
        scaletune_measure::stats::kendall_tau_b(&a, &b)
    }

    #[test]
    fn it_learns_to_rank_held_out_candidates() {
        let (x, y) = synthetic(256, 1);
        let (hx, hy) = synthetic(500, 2);
        let m = Gbdt::train(&x, &y, 7).expect("trains");
        let t = tau(&m.predict(&hx), &hy);
        assert!(t > 0.6, "held-out Kendall tau {t}");
    }

    #[test]
    fn training_is_deterministic_and_bad_shapes_are_errors() {
        let (x, y) = synthetic(64, 3);
        let a = Gbdt::train(&x, &y, 5).expect("trains").predict(&x);
        let b = Gbdt::train(&x, &y, 5).expect("trains").predict(&x);
        assert_eq!(a, b);
        assert!(Gbdt::train(&x, &y[..10], 5).is_err());
        let mut ragged = x.clone();
        ragged[3].push(1.0);
        assert!(Gbdt::train(&ragged, &y, 5).is_err());
        let m = Gbdt::train(&x, &y, 5).expect("trains");
        assert_eq!(m.predict(&[vec![1.0]]), [f32::INFINITY]);
    }
}

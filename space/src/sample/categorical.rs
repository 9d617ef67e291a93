//! `sample_categorical`: one of a list of candidates.

use super::SampleError;
use rand::Rng;

fn check_probs(probs: &[f64]) -> Result<f64, SampleError> {
    if probs.is_empty() || probs.iter().any(|p| !p.is_finite() || *p < 0.0) {
        return Err(SampleError(format!("probabilities {probs:?} must be finite and non-negative")));
    }
    let total: f64 = probs.iter().sum();
    if total <= 0.0 {
        return Err(SampleError("probabilities sum to zero".into()));
    }
    Ok(total)
}

/// Draws an index with the given (unnormalized) probabilities.
pub fn sample_categorical(probs: &[f64], rng: &mut impl Rng) -> Result<usize, SampleError> {
    let total = check_probs(probs)?;
    let x = rng.gen::<f64>() * total;
    let mut acc = 0.0;
    for (i, p) in probs.iter().enumerate() {
        acc += p;
        if x < acc {
            return Ok(i);
        }
    }
    Ok(probs.iter().rposition(|p| *p > 0.0).unwrap_or(0))
}

/// Checks a recorded decision.
pub fn check_categorical(probs: &[f64], decision: usize) -> Result<(), SampleError> {
    check_probs(probs)?;
    if decision >= probs.len() {
        return Err(SampleError(format!("decision {decision} is not one of the {} candidates", probs.len())));
    }
    if probs[decision] == 0.0 {
        return Err(SampleError(format!("decision {decision} has probability 0")));
    }
    Ok(())
}

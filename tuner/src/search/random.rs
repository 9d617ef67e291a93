//! Random search: fresh decisions of the design space, nothing learned.

use super::{fresh_samples, SearchStrategy, Texts};
use crate::cost_model::CostModel;
use crate::tune::task::Task;
use rand_chacha::ChaCha8Rng;
use scaletune_space::design::Sample;

/// Draws of the design space, uniformly over its traces and decisions.
#[derive(Debug, Default)]
pub struct Random;

impl SearchStrategy for Random {
    fn name(&self) -> &'static str {
        "random"
    }

    fn propose(&mut self, task: &Task, _model: Option<&CostModel>, n: usize, rng: &mut ChaCha8Rng) -> Vec<Sample> {
        fresh_samples(task, n, 20 * n + 20, &mut Texts::default(), rng)
    }
}

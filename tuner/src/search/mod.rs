//! Search strategies: what to measure next for a task, one strategy per file.
//!
//! A strategy proposes samples of a task's design space that no job has
//! measured; the job builds and measures them through the farm and tells
//! the task what came back ([`crate::tune::task::Task::observe`]).
//! Strategies see the cost model, when one is trained, to rank what they
//! propose. Every random choice comes from the RNG passed in.

pub mod evolutionary;
pub mod random;

use crate::cost_model::CostModel;
use crate::tune::task::Task;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use scaletune_space::design::Sample;
use std::collections::HashSet;

/// The strategies `tune --strategy` offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum StrategyKind {
    /// Fresh decisions of the design space.
    Random,
    /// Mutations of the best candidates, ranked by the cost model.
    Evolutionary,
}

impl StrategyKind {
    /// The name stored with the job.
    pub fn name(self) -> &'static str {
        match self {
            StrategyKind::Random => "random",
            StrategyKind::Evolutionary => "evolutionary",
        }
    }

    /// A new strategy of this kind.
    pub fn build(self) -> Box<dyn SearchStrategy> {
        match self {
            StrategyKind::Random => Box::new(random::Random),
            StrategyKind::Evolutionary => Box::new(evolutionary::Evolutionary::default()),
        }
    }
}

/// A search strategy.
pub trait SearchStrategy: Send {
    /// The strategy's name.
    fn name(&self) -> &'static str;

    /// Up to `n` samples of `task`'s space that are neither measured nor
    /// repeated. Fewer (or none) when the space has nothing new to offer.
    fn propose(&mut self, task: &Task, model: Option<&CostModel>, n: usize, rng: &mut ChaCha8Rng) -> Vec<Sample>;
}

/// Fresh samples of a task's space that are new (neither measured nor in
/// `seen`, which they are added to): at most `n`, trying at most `attempts`
/// draws.
pub fn fresh_samples(
    task: &Task,
    n: usize,
    attempts: usize,
    seen: &mut HashSet<String>,
    rng: &mut ChaCha8Rng,
) -> Vec<Sample> {
    new_samples(task, n, attempts, seen, rng, |r| task.space.sample(r).ok())
}

/// Samples made by `make` that are new (neither measured nor in `seen`,
/// which they are added to): at most `n`, calling `make` at most `attempts`
/// times. The calls run on every core, each with an RNG of its own seeded
/// from `rng` in call order, and their results are taken in that order: the
/// outcome depends on `rng` alone, not on the number of cores.
pub fn new_samples(
    task: &Task,
    n: usize,
    attempts: usize,
    seen: &mut HashSet<String>,
    rng: &mut ChaCha8Rng,
    make: impl Fn(&mut ChaCha8Rng) -> Option<Sample> + Sync,
) -> Vec<Sample> {
    let mut out = Vec::new();
    let mut tried = 0;
    while out.len() < n && tried < attempts {
        let round = (n - out.len()).min(attempts - tried);
        tried += round;
        let seeds: Vec<u64> = (0..round).map(|_| rng.gen()).collect();
        let made: Vec<Option<Sample>> =
            seeds.par_iter().map(|&seed| make(&mut ChaCha8Rng::seed_from_u64(seed))).collect();
        for s in made.into_iter().flatten() {
            if out.len() >= n {
                break;
            }
            let text = s.trace.to_string();
            if task.measured.contains(&text) || !seen.insert(text) {
                continue;
            }
            out.push(s);
        }
    }
    out
}

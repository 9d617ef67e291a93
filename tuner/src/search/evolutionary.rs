//! Evolutionary search: mutants of the best candidates known (this job's and the database's), bred for a few generations under the cost model, picked epsilon-greedily.
//!
//! One proposal of `n` samples:
//! 1. Until the task has a measured candidate, fresh samples only.
//! 2. Otherwise a pool of fresh samples and, for each of
//!    [`Evolutionary::generations`] generations, mutants of the frontier
//!    (first the task's parents, [`Task::parents`]: the elites, then the
//!    best of every design-space trace; parents picked with a bias to the best,
//!    [`scaletune_space::mutators::mutate_sample`]: decisions and
//!    structural moves). With a trained cost model each generation's
//!    frontier is its best-predicted mutants, so the search walks towards
//!    what the model likes without measuring the way there.
//! 3. `n - ⌈ε·n⌉` of the pool's best-predicted samples, plus `⌈ε·n⌉`
//!    fresh samples the model did not pick, drawn at random (exploration:
//!    the model is only as good as what it has seen, and the elites' mutants
//!    all sit near the elites, so exploring among them would never try
//!    another design-space trace). Without a model, mutants and fresh
//!    samples at random, three to one.

use super::{fresh_samples, new_samples, SearchStrategy};
use crate::cost_model::{CostModel, FeatureCache};
use crate::tune::task::Task;
use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use scaletune_space::design::Sample;
use scaletune_space::mutators::mutate_sample;
use std::collections::HashSet;

/// Settings of the evolutionary search.
#[derive(Clone, Debug)]
pub struct Evolutionary {
    /// Rounds of mutation under the cost model per proposal.
    pub generations: usize,
    /// Mutants bred per generation, as a multiple of the proposal size.
    pub mutants_per_sample: usize,
    /// Fresh samples in the pool, as a multiple of the proposal size.
    pub fresh_per_sample: usize,
    /// Share of each proposal picked at random instead of by the model.
    pub epsilon: f64,
}

impl Default for Evolutionary {
    fn default() -> Evolutionary {
        Evolutionary { generations: 3, mutants_per_sample: 6, fresh_per_sample: 2, epsilon: 0.25 }
    }
}

/// A parent index biased to the front (the best): `⌊len·u²⌋`.
fn biased_index(len: usize, rng: &mut ChaCha8Rng) -> usize {
    let u: f64 = rng.gen();
    ((len as f64 * u * u) as usize).min(len.saturating_sub(1))
}

impl Evolutionary {
    /// Up to `count` mutants of `frontier` (parents picked with a bias to
    /// the front) that are new (added to `seen`), bred on every core.
    pub fn breed(
        &self,
        task: &Task,
        frontier: &[Sample],
        count: usize,
        seen: &mut HashSet<String>,
        rng: &mut ChaCha8Rng,
    ) -> Vec<Sample> {
        if frontier.is_empty() {
            return Vec::new();
        }
        new_samples(task, count, count * 4, seen, rng, |r| {
            let parent = &frontier[biased_index(frontier.len(), r)];
            mutate_sample(&task.space, parent, r).map(|(child, _)| child)
        })
    }
}

/// Up to `n` pool indices: the first `n - explore` of `ranked` (best
/// predicted first), then `explore` drawn at random from the unpicked
/// indices that are fresh samples (`is_fresh`), topped up at random from the
/// other unpicked ones when too few fresh samples are left.
fn pick(
    ranked: &[usize],
    n: usize,
    explore: usize,
    is_fresh: impl Fn(usize) -> bool,
    rng: &mut ChaCha8Rng,
) -> Vec<usize> {
    let exploit = n.saturating_sub(explore).min(ranked.len());
    let mut picked: Vec<usize> = ranked[..exploit].to_vec();
    let (mut fresh, mut others): (Vec<usize>, Vec<usize>) = ranked[exploit..].iter().partition(|&&i| is_fresh(i));
    fresh.shuffle(rng);
    others.shuffle(rng);
    let wanted = n.min(ranked.len()) - picked.len();
    picked.extend(fresh.into_iter().chain(others).take(wanted));
    picked
}

impl SearchStrategy for Evolutionary {
    fn name(&self) -> &'static str {
        "evolutionary"
    }

    fn propose(&mut self, task: &Task, model: Option<&CostModel>, n: usize, rng: &mut ChaCha8Rng) -> Vec<Sample> {
        let mut seen = HashSet::new();
        if task.elites.is_empty() {
            return fresh_samples(task, n, 20 * n + 20, &mut seen, rng);
        }
        let fresh = fresh_samples(task, self.fresh_per_sample * n, 20 * n + 20, &mut seen, rng);
        let parents = task.parents();
        let mut frontier: Vec<Sample> = parents.clone();
        let mut mutants: Vec<Sample> = Vec::new();
        // Each mutant is lowered once, though ranked in its generation and in the final pool.
        let mut features = FeatureCache::default();
        for _ in 0..self.generations.max(1) {
            let children = self.breed(task, &frontier, self.mutants_per_sample * n, &mut seen, rng);
            if children.is_empty() {
                break;
            }
            match model {
                Some(m) => {
                    let ranked = m.rank_cached(task, &children, &mut features);
                    let keep = (2 * n).max(1);
                    let mut next: Vec<Sample> = parents.clone();
                    next.extend(ranked.iter().take(keep).map(|&i| children[i].clone()));
                    frontier = next;
                }
                None => frontier.clone_from(&children),
            }
            mutants.extend(children);
            if model.is_none() {
                // Without a model there is nothing to steer the later generations.
                break;
            }
        }
        match model {
            Some(m) => {
                let first_fresh = mutants.len();
                let mut pool = mutants;
                pool.extend(fresh);
                let ranked = m.rank_cached(task, &pool, &mut features);
                let explore = ((n as f64 * self.epsilon).ceil() as usize).min(n);
                pick(&ranked, n, explore, |i| i >= first_fresh, rng).into_iter().map(|i| pool[i].clone()).collect()
            }
            None => {
                let n_mutants = (n * 3).div_ceil(4).min(mutants.len());
                let mut out: Vec<Sample> = mutants.choose_multiple(rng, n_mutants).cloned().collect();
                out.extend(fresh.into_iter().take(n - out.len()));
                out
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn exploration_picks_fresh_samples_the_model_passed_over() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        // Pool: 0..20 mutants, 20..25 fresh; the model ranks every mutant first.
        let ranked: Vec<usize> = (0..25).collect();
        let picked = pick(&ranked, 8, 2, |i| i >= 20, &mut rng);
        assert_eq!(picked[..6], [0, 1, 2, 3, 4, 5]);
        assert!(picked[6..].iter().all(|&i| i >= 20), "{picked:?}");
        assert_eq!(picked.len(), 8);
        assert_ne!(picked[6], picked[7]);
    }

    #[test]
    fn too_few_fresh_samples_are_topped_up_from_the_rest_and_a_small_pool_is_taken_whole() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let ranked: Vec<usize> = vec![3, 0, 4, 1, 2, 5];
        let picked = pick(&ranked, 5, 3, |i| i == 5, &mut rng);
        assert_eq!(picked[..2], [3, 0]);
        assert_eq!(picked.len(), 5);
        assert!(picked.contains(&5), "the one fresh sample is explored: {picked:?}");
        let mut all = pick(&ranked, 10, 3, |_| false, &mut rng);
        all.sort_unstable();
        assert_eq!(all, [0, 1, 2, 3, 4, 5]);
    }
}

//! Evolutionary search: mutants of the best candidates known (this job's and the database's), bred for a few generations under the cost model, picked epsilon-greedily.
//!
//! One proposal of `n` samples:
//! 1. Until the task has a measured candidate, the best schedules of other
//!    shapes of its workload, adopted by this shape ([`adopted_samples`],
//!    [`Task::donors`]; up to half the proposal), and fresh samples spread
//!    over the design-space traces; where the objective is measured time,
//!    those with the fewest estimated instructions among many
//!    ([`first_proposal`], [`Evolutionary::for_objective`]).
//! 2. Otherwise a pool of fresh samples and, for each of
//!    [`Evolutionary::generations`] generations, mutants of the frontier
//!    (first the task's parents, [`Task::parents`]: the elites, then the
//!    best of every lineage, design-space trace and vector kind; parents
//!    picked with a bias to the best,
//!    [`scaletune_space::mutators::draft_mutant`]: decisions and
//!    structural moves). With a trained cost model each generation's
//!    frontier is its best-predicted mutants and the best-predicted two of
//!    every lineage (`frontier_picks`), so the search walks towards what
//!    the model likes without measuring the way there, in every trace and
//!    vector kind and not only the leading one.
//! 3. `n - ⌈ε·n⌉` of the pool's best-predicted samples, of which at least
//!    `⌈local·n⌉` ([`Evolutionary::local`]) are one-step mutants of the best candidate
//!    known (bred apart, [`LOCAL_MUTANTS_PER_SAMPLE`] per sample: a local
//!    search around the incumbent, whose neighbours the model may rank
//!    below those of other parents; the best-predicted mutant of each
//!    decision first, `spread_locals`; once the best stops improving, the
//!    local search takes turns around the best of other lineages, and its
//!    pool also holds the centre with its vector kind swapped and its
//!    tails drawn again, [`STALL_TRIALS`]), plus `⌈ε·n⌉`
//!    fresh samples the model did not pick, from the design-space traces
//!    measured least (exploration: the model is only as good as what it
//!    has seen, and the elites' mutants all sit near the elites, so
//!    exploring among them would never try another design-space trace; a
//!    trace whose first samples were unlucky draws still gets its share).
//!    Without a model, mutants and fresh samples at random, three to one.
//!
//! The model's predictions are ranked optimistically per design-space
//! trace ([`family_bonus`], an upper-confidence bonus): a trace the task
//! has measured little is credited with being faster than predicted, by
//! less the more it is measured. A trace whose first draws were slow
//! (a 1-row micro-kernel, a tiny reduction block) is otherwise ranked by
//! them and starved, even when its best decisions are the fastest code.
//!
//! The pool's fresh samples are [`spread_samples`]: drawn from the
//! design-space traces the task has measured least first, each trace once
//! before any twice.
//!
//! Neither a generation's frontier nor the proposal holds two samples of
//! one code, or one of a measured candidate's ([`new_code`]):
//! many one-step mutants change a decision the program does not depend on,
//! and the model, seeing the same features, ranks them with their parent.

use super::{adopted_samples, discard, new_samples, spread_samples, SearchStrategy, Texts};
use crate::cost_model::features::estimated_instructions;
use crate::cost_model::{rank_scores, CostModel, FeatureCache};
use crate::tune::objective::ObjectiveKind;
use crate::tune::task::{lineage, Task};
use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rustc_hash::FxHashSet;
use scaletune_space::design::Sample;
use scaletune_space::mutators::{draft_mutant, swap_kind};

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
    /// Share of each proposal that is the best-predicted new one-step
    /// mutants of the best candidate known (a local search around it; once
    /// the best stalls, in turn around other lineages, with kind swaps:
    /// [`STALL_TRIALS`]),
    /// `⌈local·n⌉` of `n` places. Half: on matmul 127x255x63 under QEMU
    /// (batches of 8, six seeds) the median run came within 5 % of the best
    /// in 68 trials with four places, 80 with two, 76 with six, and 112 with
    /// four places and one explored instead of two.
    pub local: f64,
    /// Whether a task's first proposal takes the fresh samples with the
    /// fewest [`estimated_instructions`] of a larger pool instead of the
    /// first drawn ([`first_proposal`]); set for measured time only
    /// ([`Evolutionary::for_objective`]).
    pub first_by_estimate: bool,
}

/// One-step mutants of the best candidate bred per proposal, as a multiple
/// of the proposal size, among which [`Evolutionary::local`] are picked.
pub const LOCAL_MUTANTS_PER_SAMPLE: usize = 4;

impl Default for Evolutionary {
    fn default() -> Evolutionary {
        Evolutionary {
            generations: 3,
            mutants_per_sample: 6,
            fresh_per_sample: 2,
            epsilon: 0.25,
            local: 0.5,
            first_by_estimate: true,
        }
    }
}

impl Evolutionary {
    /// The default search for a job minimizing `objective`: a first
    /// proposal by [`estimated_instructions`] for measured time only. On
    /// matmul 512^3 on an AVX-512 Zen 5 (five cold starts, time), it took
    /// the median run to within 5 % of the best at trial 2 instead of 23
    /// to 33; under QEMU (matmul 127x255x63 on neoverse-v1, estimated cycles,
    /// six seeds) its first batches were better too, but they led the
    /// search to a lineage 17 % short of the best whose neighbourhood the
    /// local search then worked for dozens of trials, and the median run
    /// needed 92 trials instead of 56 (with 2 or 4 such places of 8, 84
    /// and 80).
    pub fn for_objective(objective: ObjectiveKind) -> Evolutionary {
        Evolutionary { first_by_estimate: objective == ObjectiveKind::Time, ..Evolutionary::default() }
    }
}

/// Weight of the per-trace optimism, in the model's units (log objective):
/// a trace measured `n` times of `N` is credited `c·√(ln(N+1)/(n+1))`:
/// after 200 trials, 0.115 (about 11 % less time than predicted) for a
/// trace never measured, 0.016 for one measured 50 times. (Measured on
/// matmul 512^3, five cold-start runs per evaluation: with 0.15 every
/// trace got about its uniform share of the trials, as under random
/// search, and the median run needed 161 trials to come within 5 % of the
/// best; with 0.05, 60 in one evaluation and more than 200 in the next,
/// and with the per-trace frontier too, 62 and 105.)
pub const FAMILY_OPTIMISM: f32 = 0.05;

/// The optimism of design-space trace `family` (see [`FAMILY_OPTIMISM`]).
pub fn family_bonus(task: &Task, family: usize) -> f32 {
    let total: usize = task.family_tries.values().sum();
    let n = task.family_tries.get(&family).copied().unwrap_or(0);
    FAMILY_OPTIMISM * (((total + 1) as f32).ln() / (n + 1) as f32).sqrt()
}

/// Indices of `samples`, best first by the model's prediction less the
/// sample's design-space trace's [`family_bonus`].
fn rank_optimistic(model: &CostModel, task: &Task, samples: &[Sample], cache: &mut FeatureCache) -> Vec<usize> {
    let bonuses: Vec<f32> = (0..task.space.traces.len()).map(|k| family_bonus(task, k)).collect();
    let families: Vec<usize> = samples.iter().map(|s| s.space_trace).collect();
    optimistic_order(model.predict_cached(task, samples, cache), &families, &bonuses)
}

/// Indices of `predicted` (`None`: does not lower, last), best first by
/// prediction less the bonus of the sample's design-space trace
/// (`families[i]`; a trace without a bonus, such as the baseline's, gets 0).
fn optimistic_order(predicted: Vec<Option<f32>>, families: &[usize], bonuses: &[f32]) -> Vec<usize> {
    let scores =
        predicted.into_iter().zip(families).map(|(p, &f)| p.map(|p| p - bonuses.get(f).copied().unwrap_or(0.0)));
    rank_scores(scores.collect())
}

/// Children of each lineage ([`lineage`]) that stay on the frontier of the
/// next generation besides the best-predicted `2n` of all.
pub const FAMILY_FRONTIER: usize = 2;

/// The children that breed the next generation, as indices into `ranked`'s
/// order (best predicted first): the first `keep`, then for each lineage
/// (design-space trace and vector kind, [`lineage`]; `families[i]` is
/// child `i`'s) its first `per_family` not taken yet. Without the second
/// part the frontier is all the leading lineage's: a trace whose best
/// sample so far is a poor draw (one row, a tiny reduction block), or a
/// vector kind whose samples so far have the other kind's tails, needs two
/// or three mutations in a row to show what it can do, and its one-step
/// mutants never rank among the leader's.
fn frontier_picks<K: std::hash::Hash + Eq + Copy>(
    ranked: &[usize],
    families: &[K],
    keep: usize,
    per_family: usize,
) -> Vec<usize> {
    let mut picked: Vec<usize> = ranked.iter().copied().take(keep).collect();
    let mut per: std::collections::HashMap<K, usize> = std::collections::HashMap::new();
    for &i in &picked {
        *per.entry(families[i]).or_default() += 1;
    }
    for &i in ranked.iter().skip(keep) {
        let n = per.entry(families[i]).or_default();
        if *n < per_family {
            *n += 1;
            picked.push(i);
        }
    }
    picked
}

/// A parent index biased to the front (the best): `⌊len·u²⌋`.
fn biased_index(len: usize, rng: &mut ChaCha8Rng) -> usize {
    let u: f64 = rng.gen();
    ((len as f64 * u * u) as usize).min(len.saturating_sub(1))
}

impl Evolutionary {
    /// Up to `count` mutants of `frontier` (parents picked with a bias to
    /// the front) that are new (added to `seen`, as are the texts of
    /// drafted mutants that do not replay), bred on every core.
    pub fn breed(
        &self,
        task: &Task,
        frontier: &[Sample],
        count: usize,
        seen: &mut Texts,
        rng: &mut ChaCha8Rng,
    ) -> Vec<Sample> {
        self.breed_known(task, frontier, count, seen, None, rng)
    }

    /// [`Evolutionary::breed`], with mutants whose nest `known` keeps
    /// made without a replay (see [`new_samples`]): the same mutants.
    pub fn breed_known(
        &self,
        task: &Task,
        frontier: &[Sample],
        count: usize,
        seen: &mut Texts,
        known: Option<&FeatureCache>,
        rng: &mut ChaCha8Rng,
    ) -> Vec<Sample> {
        if frontier.is_empty() {
            return Vec::new();
        }
        new_samples(task, count, count * 4, seen, known, rng, |r| {
            let parent = &frontier[biased_index(frontier.len(), r)];
            draft_mutant(&task.space, parent, r)
        })
    }
}

/// Trials without a better best (by [`MIN_PROGRESS`](crate::tune::task::MIN_PROGRESS),
/// [`Task::stalled_trials`]) after which the local places of a
/// proposal take turns (one proposal each) between the best of the
/// [`RIVALS`] leading other lineages ([`Task::rivals`]) and the best
/// candidate, and their pool also holds `n` samples of the centre with
/// another vector kind and the tails after it drawn again ([`swap_kind`]).
/// On matmul 127x255x63 under QEMU (six seeds), a run whose first good
/// candidate was a length-agnostic kernel with predicated tails (136.7 k
/// cycles) otherwise spent 150 trials around it before the fixed-length
/// kernel of peeled tails (116 k) came up; with both, 80.
pub const STALL_TRIALS: usize = 24;

/// Lineages besides the best candidate's that the local search visits
/// while the best does not improve ([`STALL_TRIALS`]).
pub const RIVALS: usize = 2;

/// The sample whose one-step mutants fill the local places of a proposal
/// of `n`: the best candidate, or, once the best has not improved for
/// [`STALL_TRIALS`] trials, in turn per proposal the best of each of the
/// [`RIVALS`] leading other lineages and the best candidate. A best found
/// early in one lineage (a length-agnostic micro-kernel with predicated
/// tails, say) has neighbours that are all slower, while the lineage that
/// holds the fastest code (the fixed-length kernel of the same tiles,
/// which wants other tails) is two or three steps from its own best and
/// never gets the local places.
fn local_center(task: &Task, n: usize) -> Option<&Sample> {
    let best = &task.elites.first()?.sample;
    let stalled = task.stalled_trials();
    if stalled < STALL_TRIALS {
        return Some(best);
    }
    let rivals = task.rivals().into_iter().take(RIVALS).map(|s| &s.sample);
    let centers: Vec<&Sample> = rivals.chain(std::iter::once(best)).collect();
    Some(centers[(stalled - STALL_TRIALS) / n.max(1) % centers.len()])
}

impl Evolutionary {
    /// The samples a proposal of `n` picks its local places from: new
    /// one-step mutants of [`local_center`] ([`LOCAL_MUTANTS_PER_SAMPLE`]
    /// per place of the proposal) and, once the best has stalled
    /// ([`STALL_TRIALS`]), `n` new samples of the centre with another
    /// vector kind ([`swap_kind`]). Empty before anything was measured.
    fn local_pool(
        &self,
        task: &Task,
        n: usize,
        seen: &mut Texts,
        known: &FeatureCache,
        rng: &mut ChaCha8Rng,
    ) -> Vec<Sample> {
        let Some(center) = local_center(task, n) else { return Vec::new() };
        let count = LOCAL_MUTANTS_PER_SAMPLE * n;
        let mut local = self.breed_known(task, std::slice::from_ref(center), count, seen, Some(known), rng);
        if task.stalled_trials() >= STALL_TRIALS {
            local.extend(new_samples(task, n, 4 * n, seen, None, rng, |r| swap_kind(&task.space, center, r)));
        }
        local
    }
}

/// `ranked` (best first) without the samples whose code is a measured
/// candidate's (its digest, `code(i)`, in `measured`) or a better-ranked
/// sample's: they would build code that is measured already, or will be (a
/// decision the program does not depend on, such as an `unroll_max_step`
/// budget no loop under it fits in, changes the trace and nothing else; on
/// matmul under QEMU, two in five of a job's trials measured such a repeat
/// before this). Samples without a digest (`None`: they do not
/// lower) stay.
fn new_code(ranked: Vec<usize>, code: impl Fn(usize) -> Option<u64>, measured: &FxHashSet<u64>) -> Vec<usize> {
    let mut seen = FxHashSet::default();
    ranked.into_iter().filter(|&i| code(i).is_none_or(|c| !measured.contains(&c) && seen.insert(c))).collect()
}

/// The places of a proposal of `n` that a share of it takes: `⌈share·n⌉`,
/// at most `n` (a share of a small proposal is at least one place).
fn places(n: usize, share: f64) -> usize {
    ((n as f64 * share).ceil() as usize).min(n)
}

/// Up to `n` pool indices: `local` of `ranked` (best predicted first) that
/// are mutants of the local search's centre (`local_dim(i)` is the
/// decision they change, `None` for the rest of the pool), the first of
/// each decision before a second of any ([`spread_locals`]), then the first
/// others up to `n - explore` in all, then the first `explore` unpicked
/// indices that are fresh samples (`is_fresh`), in pool order (the fresh
/// samples are drawn least-tried design-space trace first), topped up at
/// random from the other unpicked ones when too few fresh samples are left.
fn pick(
    ranked: &[usize],
    n: usize,
    explore: usize,
    (local, local_dim): (usize, impl Fn(usize) -> Option<usize>),
    is_fresh: impl Fn(usize) -> bool,
    rng: &mut ChaCha8Rng,
) -> Vec<usize> {
    let exploit = n.saturating_sub(explore).min(ranked.len());
    let mut taken = vec![false; ranked.len()];
    let mut picked: Vec<usize> = Vec::with_capacity(n);
    let local_at = spread_locals(ranked, local.min(exploit), local_dim);
    let mut others_left = exploit - local_at.len();
    for at in local_at {
        taken[at] = true;
    }
    for (at, &i) in ranked.iter().enumerate() {
        if taken[at] {
            picked.push(i);
        } else if others_left > 0 {
            others_left -= 1;
            taken[at] = true;
            picked.push(i);
        }
    }
    let rest = ranked.iter().zip(&taken).filter(|(_, &t)| !t).map(|(&i, _)| i);
    let (mut fresh, mut others): (Vec<usize>, Vec<usize>) = rest.partition(|&i| is_fresh(i));
    fresh.sort_unstable();
    others.shuffle(rng);
    let wanted = n.min(ranked.len()) - picked.len();
    picked.extend(fresh.into_iter().chain(others).take(wanted));
    picked
}

/// Positions in `ranked` (best predicted first) of `count` mutants of the
/// local search's centre (`dim(i)`: the decision pool sample `i` changes,
/// `None` if it is no such mutant): the best-ranked of each decision, in
/// rank order, then, if places are left, the next best of any. The model
/// knows some decisions of a lineage better than others: ranked by it
/// alone, the places went to the same few decisions proposal after
/// proposal (an unroll factor and a row tile of the incumbent, predicted
/// within 1 % of it) while the one that mattered waited. On matmul
/// 127x255x63 under QEMU (seed 7), the change of the incumbent's column
/// tail from scalar to peeled (129.7 k cycles to 117.3 k), predicted 34 %
/// slower, was measured 48 trials after the incumbent.
fn spread_locals(ranked: &[usize], count: usize, dim: impl Fn(usize) -> Option<usize>) -> Vec<usize> {
    // (position in `ranked`, the first of its decision)
    let mut seen = FxHashSet::default();
    let mut locals: Vec<(usize, bool)> =
        ranked.iter().enumerate().filter_map(|(at, &i)| dim(i).map(|d| (at, seen.insert(d)))).collect();
    // Stable: in rank order, the first of each decision ahead of the rest.
    locals.sort_by_key(|&(_, first)| !first);
    let mut out: Vec<usize> = locals.into_iter().take(count).map(|(at, _)| at).collect();
    out.sort_unstable();
    out
}

/// The decision of `center` that its one-step mutant `s` changes: the index
/// of the first instruction in which their traces differ; `usize::MAX` for
/// a move to another design-space trace (a structural move).
fn changed_decision(center: &Sample, s: &Sample) -> usize {
    if s.space_trace != center.space_trace || s.trace.insts.len() != center.trace.insts.len() {
        return usize::MAX;
    }
    s.trace.insts.iter().zip(&center.trace.insts).position(|(a, b)| a != b).unwrap_or(usize::MAX)
}

impl SearchStrategy for Evolutionary {
    fn name(&self) -> &'static str {
        "evolutionary"
    }

    fn propose(&mut self, task: &Task, model: Option<&CostModel>, n: usize, rng: &mut ChaCha8Rng) -> Vec<Sample> {
        self.propose_counted(task, model, n, rng).0
    }
}

/// Fresh samples drawn for each place of a task's first proposal that no
/// donor takes, of which the proposal keeps those with the fewest
/// [`estimated_instructions`] ([`first_proposal`]).
pub const FIRST_POOL_PER_PLACE: usize = 16;

/// A proposal of `n` for a task with no measured candidate, before any
/// model knows its space: up to half adopted from other shapes of its
/// workload ([`adopted_samples`]), then fresh samples spread over the
/// design-space traces ([`spread_samples`]): `by_estimate`, from a pool of
/// [`FIRST_POOL_PER_PLACE`] per place left, those with the fewest [`estimated_instructions`]
/// ([`first_picks`]: the fewest of all for half the places, then the
/// fewest of each trace not picked yet). On matmul 512^3 on an AVX-512
/// Zen 5, the first batch as drawn held no candidate within 5 % of the
/// best in three cold starts; ranked by the estimate, it did in four of
/// five. Returns the proposal and the number of samples lowered to rank
/// it.
fn first_proposal(
    task: &Task,
    n: usize,
    by_estimate: bool,
    seen: &mut Texts,
    rng: &mut ChaCha8Rng,
) -> (Vec<Sample>, usize) {
    let mut out = adopted_samples(task, n.div_ceil(2), seen, rng);
    let rest = n - out.len();
    if rest == 0 {
        return (out, 0);
    }
    if !by_estimate {
        out.extend(spread_samples(task, rest, 20 * rest + 20, seen, rng));
        return (out, 0);
    }
    let drawn = FIRST_POOL_PER_PLACE * rest;
    let pool = spread_samples(task, drawn, 20 * drawn + 20, seen, rng);
    let mut cache = task.lowered();
    cache.begin_round();
    let estimates: Vec<Option<f32>> =
        cache.features(task, &pool).into_iter().map(|f| f.map(|f| estimated_instructions(&f) as f32)).collect();
    let ranked = new_code(rank_scores(estimates), |i| cache.code(&pool[i]), &task.codes);
    let families: Vec<usize> = pool.iter().map(|s| s.space_trace).collect();
    let mut pool: Vec<Option<Sample>> = pool.into_iter().map(Some).collect();
    out.extend(first_picks(&ranked, &families, rest).into_iter().filter_map(|i| pool[i].take()));
    discard(pool.into_iter().flatten().collect());
    (out, cache.touched())
}

/// Up to `n` of `ranked` (pool indices, fewest estimated instructions
/// first; `families[i]` is sample `i`'s design-space trace): the first
/// `⌈n/2⌉`, then the first of each trace not picked yet, then the next
/// ones, in rank order. Half the places trust the estimate across
/// traces; the rest hedge, as it cannot see what a trace's structure buys
/// besides instructions (a packed panel spends some to save cache misses),
/// and give the model its first look at the other traces, each by its
/// best-estimated draw.
fn first_picks(ranked: &[usize], families: &[usize], n: usize) -> Vec<usize> {
    let mut picked = frontier_picks(ranked, families, n.div_ceil(2), 1);
    picked.truncate(n);
    for &i in ranked {
        if picked.len() >= n {
            break;
        }
        if !picked.contains(&i) {
            picked.push(i);
        }
    }
    picked
}

impl Evolutionary {
    /// [`SearchStrategy::propose`], and the number of candidates it scored
    /// to choose them (each counted once, however often it was ranked,
    /// whether it was lowered now or, found in [`Task::lowered`], by an
    /// earlier proposal; before any candidate is measured, the fresh
    /// samples ranked by their estimated instructions, [`first_proposal`]):
    /// the work the search bench divides its time by.
    pub fn propose_counted(
        &self,
        task: &Task,
        model: Option<&CostModel>,
        n: usize,
        rng: &mut ChaCha8Rng,
    ) -> (Vec<Sample>, usize) {
        let mut seen = Texts::default();
        if task.elites.is_empty() {
            return first_proposal(task, n, self.first_by_estimate, &mut seen, rng);
        }
        // Each mutant is lowered once, though ranked in its generation and
        // in the final pool, and not again by a later proposal of the job;
        // one drafted again within a few proposals is not replayed either.
        let mut features = task.lowered();
        features.begin_round();
        let fresh = spread_samples(task, self.fresh_per_sample * n, 20 * n + 20, &mut seen, rng);
        let local = match model {
            Some(_) if self.local > 0.0 => self.local_pool(task, n, &mut seen, &features, rng),
            _ => Vec::new(),
        };
        let parents = task.parents();
        let mut frontier: Vec<Sample> = parents.clone();
        let mut mutants: Vec<Sample> = Vec::new();
        for _ in 0..self.generations.max(1) {
            let count = self.mutants_per_sample * n;
            let children = self.breed_known(task, &frontier, count, &mut seen, Some(&features), rng);
            if children.is_empty() {
                break;
            }
            match model {
                Some(m) => {
                    let ranked = rank_optimistic(m, task, &children, &mut features);
                    let ranked = new_code(ranked, |i| features.code(&children[i]), &task.codes);
                    let families: Vec<(usize, usize)> = children.iter().map(lineage).collect();
                    let mut next: Vec<Sample> = parents.clone();
                    let picked = frontier_picks(&ranked, &families, (2 * n).max(1), FAMILY_FRONTIER);
                    next.extend(picked.into_iter().map(|i| children[i].clone()));
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
        discard(frontier);
        match model {
            Some(m) => {
                let first_fresh = mutants.len();
                let mut pool = mutants;
                pool.extend(fresh);
                let first_local = pool.len();
                pool.extend(local);
                let ranked = rank_optimistic(m, task, &pool, &mut features);
                let ranked = new_code(ranked, |i| features.code(&pool[i]), &task.codes);
                let explore = places(n, self.epsilon);
                let is_fresh = |i: usize| (first_fresh..first_local).contains(&i);
                let dims: Vec<usize> = match local_center(task, n) {
                    Some(c) => pool[first_local..].iter().map(|s| changed_decision(c, s)).collect(),
                    None => Vec::new(),
                };
                let local_dim = |i: usize| i.checked_sub(first_local).and_then(|k| dims.get(k).copied());
                let picked = pick(&ranked, n, explore, (places(n, self.local), local_dim), is_fresh, rng);
                let mut pool: Vec<Option<Sample>> = pool.into_iter().map(Some).collect();
                let out = picked.into_iter().map(|i| pool[i].take().expect("each index picked once")).collect();
                discard(pool.into_iter().flatten().collect());
                (out, features.touched())
            }
            None => {
                // Without a model nothing is lowered to rank; lowered here
                // all the same, so that no code is measured twice.
                let first_fresh = mutants.len();
                let mut pool = mutants;
                pool.extend(fresh);
                features.lowered(task, &pool);
                let kept = new_code((0..pool.len()).collect(), |i| features.code(&pool[i]), &task.codes);
                let (kept_mutants, kept_fresh): (Vec<usize>, Vec<usize>) = kept.iter().partition(|&&i| i < first_fresh);
                let n_mutants = (n * 3).div_ceil(4).min(kept_mutants.len());
                let mut out: Vec<Sample> =
                    kept_mutants.choose_multiple(rng, n_mutants).map(|&i| pool[i].clone()).collect();
                out.extend(kept_fresh.into_iter().take(n - out.len()).map(|i| pool[i].clone()));
                discard(pool);
                (out, features.touched())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use std::sync::Arc;

    /// A task with no measured candidate starts from what the other shapes
    /// of its workload found: its first proposal opens with their best
    /// schedules, best first, adopted by its shape (up to half of it), then
    /// fresh samples; shapes of other workloads give nothing.
    #[test]
    fn a_new_shape_starts_from_the_best_schedules_of_its_siblings() {
        use crate::tune::task::{sibling_donors, test_task};
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let mut tasks: Vec<Task> = ["matmul:M=48,N=40,K=24", "softmax_rows:M=8,N=32", "matmul:M=40,N=40,K=16"]
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                let mut t = test_task(r);
                t.idx = i;
                t
            })
            .collect();
        for (k, objective) in [(0, 3e-6), (0, 1e-6), (0, 2e-6), (1, 1e-6)] {
            let s = tasks[k].space.sample(&mut rng).expect("samples");
            tasks[k].observe(&s, Some(objective), 1);
        }
        let donors = sibling_donors(&tasks, 2);
        let best: Vec<Arc<scaletune_space::trace::Trace>> =
            tasks[0].elites.iter().take(2).map(|e| Arc::clone(&e.sample.trace)).collect();
        assert_eq!(donors, best, "the matmul's best two, best first; nothing of the softmax");
        tasks[2].add_donors(donors.clone());
        tasks[2].add_donors(donors);
        assert_eq!(tasks[2].donors.len(), 2, "a donor is added once");
        let (proposed, scored) = Evolutionary::default().propose_counted(&tasks[2], None, 8, &mut rng);
        assert_eq!(proposed.len(), 8);
        assert!(scored > 6, "the fresh samples are ranked from a larger pool: {scored}");
        for (s, donor) in proposed.iter().zip(&best) {
            assert_eq!(s.trace.insts.len(), donor.insts.len());
            for (a, b) in s.trace.insts.iter().zip(&donor.insts) {
                if !matches!(a, scaletune_space::trace::Inst::SamplePerfectTile { .. }) {
                    assert_eq!(a, b, "adopted:\n{}\ndonor:\n{}", s.text(), donor);
                }
            }
        }
        let texts: std::collections::HashSet<&str> = proposed.iter().map(|s| &**s.text()).collect();
        assert_eq!(texts.len(), 8, "eight different schedules");
    }

    /// Before anything is measured, the fresh half of the first proposal
    /// holds the samples with the fewest estimated instructions of a pool
    /// of [`FIRST_POOL_PER_PLACE`] per place: half the proposal the fewest
    /// of all, the rest the fewest of each other design-space trace.
    #[test]
    fn a_first_proposal_takes_the_fresh_samples_with_the_fewest_estimated_instructions() {
        let task = crate::tune::task::test_task("matmul:M=64,N=48,K=32");
        let rng = ChaCha8Rng::seed_from_u64(5);
        let (proposed, scored) = Evolutionary::default().propose_counted(&task, None, 8, &mut rng.clone());
        assert_eq!(proposed.len(), 8);
        // The pool as the proposal drew it (no donors: nothing adopted).
        let (mut seen, mut r) = (Texts::default(), rng.clone());
        let pool =
            spread_samples(&task, 8 * FIRST_POOL_PER_PLACE, 20 * 8 * FIRST_POOL_PER_PLACE + 20, &mut seen, &mut r);
        assert_eq!(scored, pool.len());
        let estimate = |s: &Sample| crate::cost_model::sample_features(&task, s).map(|f| estimated_instructions(&f));
        // One sample per code, as the proposal ranks them.
        let mut codes = FxHashSet::default();
        let mut estimates: Vec<f64> = pool
            .iter()
            .filter_map(|s| crate::cost_model::sample_lowered(&task, s))
            .filter(|l| codes.insert(l.code))
            .map(|l| estimated_instructions(&l.features))
            .collect();
        estimates.sort_by(f64::total_cmp);
        let chosen: Vec<f64> = proposed.iter().map(|s| estimate(s).expect("lowers")).collect();
        assert_eq!(chosen[..4], estimates[..4], "the fewest of all first");
        let first_traces: FxHashSet<usize> = proposed[..4].iter().map(|s| s.space_trace).collect();
        let mut other_traces = FxHashSet::default();
        for s in proposed[4..].iter().filter(|s| !first_traces.contains(&s.space_trace)) {
            assert!(other_traces.insert(s.space_trace), "one of each other trace");
            let fewest = pool
                .iter()
                .filter(|p| p.space_trace == s.space_trace)
                .filter_map(estimate)
                .fold(f64::INFINITY, f64::min);
            assert_eq!(estimate(s), Some(fewest), "the fewest of trace {}", s.space_trace);
        }
        assert!(!other_traces.is_empty(), "other traces than the first half's: {first_traces:?}");
        // Drawn at random, the first batch estimates more.
        let (mut seen, mut r) = (Texts::default(), rng);
        let random = spread_samples(&task, 8, 180, &mut seen, &mut r);
        let total = |v: &[f64]| v.iter().sum::<f64>();
        let random: Vec<f64> = random.iter().filter_map(estimate).collect();
        assert!(total(&chosen) < total(&random), "{chosen:?} against {random:?}");
    }

    /// Under an emulated objective the first proposal is the first fresh
    /// samples drawn, unranked; under measured time, ranked.
    #[test]
    fn only_a_search_for_measured_time_ranks_its_first_proposal_by_the_estimate() {
        let task = crate::tune::task::test_task("matmul:M=64,N=48,K=32");
        let rng = ChaCha8Rng::seed_from_u64(5);
        let texts = |v: &[Sample]| v.iter().map(|s| s.text().to_string()).collect::<Vec<_>>();
        let drawn = spread_samples(&task, 8, 180, &mut Texts::default(), &mut rng.clone());
        for kind in [ObjectiveKind::Cycles, ObjectiveKind::Instructions] {
            let (proposed, scored) =
                Evolutionary::for_objective(kind).propose_counted(&task, None, 8, &mut rng.clone());
            assert_eq!((texts(&proposed), scored), (texts(&drawn), 0), "{kind:?}");
        }
        let timed = Evolutionary::for_objective(ObjectiveKind::Time);
        let (proposed, scored) = timed.propose_counted(&task, None, 8, &mut rng.clone());
        assert_eq!(texts(&proposed), texts(&Evolutionary::default().propose(&task, None, 8, &mut rng.clone())));
        assert!(scored > 8 && texts(&proposed) != texts(&drawn), "{scored} scored");
    }

    #[test]
    fn first_picks_take_the_fewest_then_the_fewest_of_each_other_trace() {
        // Pool indices ranked fewest first; families: traces 0, 0, 0, 1, 2, 1, 3.
        let families = [0, 0, 0, 1, 2, 1, 3];
        let ranked = [0, 1, 2, 5, 3, 4, 6];
        assert_eq!(first_picks(&ranked, &families, 4), vec![0, 1, 5, 4]);
        assert_eq!(first_picks(&ranked, &families, 6), vec![0, 1, 2, 5, 4, 6]);
        assert_eq!(first_picks(&ranked, &families, 7), vec![0, 1, 2, 5, 4, 6, 3], "topped up in rank order");
        assert_eq!(first_picks(&ranked[..2], &families, 4), vec![0, 1], "a small pool is taken whole");
    }

    #[test]
    fn exploration_picks_fresh_samples_the_model_passed_over() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        // Pool: 0..20 mutants, 20..25 fresh; the model ranks the mutants
        // first and fresh sample 21 above them all.
        let ranked: Vec<usize> = std::iter::once(21).chain(0..21).chain(22..25).collect();
        let picked = pick(&ranked, 8, 2, (0, |_| None), |i| i >= 20, &mut rng);
        assert_eq!(picked, [21, 0, 1, 2, 3, 4, 20, 22], "the first unpicked fresh samples, in pool order");
    }

    /// Exploration and the local search take shares of a proposal,
    /// rounded up and never more than the proposal.
    #[test]
    fn a_share_of_a_proposal_is_rounded_up_to_whole_places() {
        let of_8: Vec<usize> = [0.0, 0.1, 0.25, 0.5, 1.0, 1.5].iter().map(|&s| places(8, s)).collect();
        assert_eq!(of_8, [0, 1, 2, 4, 8, 8]);
        assert_eq!(places(3, 0.5), 2);
        assert_eq!(places(0, 0.5), 0);
        // The default search: 2 of a batch of 8 explored, 4 around the best.
        let d = Evolutionary::default();
        assert_eq!((places(8, d.epsilon), places(8, d.local)), (2, 4));
    }

    #[test]
    fn the_best_predicted_mutants_of_the_best_candidate_have_slots_of_their_own() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        // Pool: 0..20 mutants, 20..25 fresh, 25..30 mutants of the best,
        // of which 27 and 25 rank 3rd and 9th.
        let ranked: Vec<usize> =
            [0, 1, 27, 2, 3, 4, 5, 6, 25, 7].into_iter().chain(8..25).chain([26, 28, 29]).collect();
        let local = |i: usize| (i >= 25).then_some(i);
        let fresh = |i: usize| (20..25).contains(&i);
        // 8 picks, 2 explored: 2 of the 6 exploited are the best's mutants.
        assert_eq!(pick(&ranked, 8, 2, (2, local), fresh, &mut rng), [0, 1, 27, 2, 3, 25, 20, 21]);
        // Without local slots, the model's first 6 alone.
        assert_eq!(pick(&ranked, 8, 2, (0, local), fresh, &mut rng), [0, 1, 27, 2, 3, 4, 20, 21]);
        // Never more local slots than exploited ones.
        assert_eq!(pick(&ranked, 3, 2, (2, local), fresh, &mut rng), [27, 20, 21]);
    }

    /// The local places go to the best-predicted mutant of each decision
    /// first: the model's second and third choices changing the decision
    /// of its first wait for the best mutant of another decision.
    #[test]
    fn the_local_places_spread_over_the_decisions_of_the_centre() {
        // Pool 10..16 are mutants of the centre: 10, 11 and 12 change
        // decision 3, 13 and 14 decision 5, 15 is a structural move.
        let dim = |i: usize| match i {
            10..=12 => Some(3),
            13 | 14 => Some(5),
            15 => Some(usize::MAX),
            _ => None,
        };
        let ranked = [0, 10, 11, 1, 12, 13, 2, 14, 15, 3];
        // Positions in `ranked`, in rank order: 10 (decision 3), 13 (5), 15 (structural).
        assert_eq!(spread_locals(&ranked, 3, dim), [1, 5, 8]);
        // A fourth place goes to the next best of any decision: 11.
        assert_eq!(spread_locals(&ranked, 4, dim), [1, 2, 5, 8]);
        assert_eq!(spread_locals(&ranked, 1, dim), [1]);
        // 6 picks, 1 explored (3), 2 local places: 10 and 13, not 10 and
        // 11, besides the model's first three.
        let ranked = [0, 1, 2, 10, 11, 12, 13, 3, 14, 15];
        let picked = pick(&ranked, 6, 1, (2, dim), |i| i == 3, &mut ChaCha8Rng::seed_from_u64(4));
        assert_eq!(picked, [0, 1, 2, 10, 13, 3]);
    }

    #[test]
    fn a_mutant_is_known_by_the_first_instruction_it_changes() {
        let (task, _, mut rng) = measured_task();
        let center = task.best_scored().expect("measured").sample.clone();
        let mut by_decision = 0;
        for _ in 0..64 {
            let Some((m, _)) = scaletune_space::mutators::mutate_sample(&task.space, &center, &mut rng) else {
                continue;
            };
            let d = changed_decision(&center, &m);
            if m.space_trace != center.space_trace {
                assert_eq!(d, usize::MAX, "a structural move");
                continue;
            }
            assert!(d < center.trace.insts.len(), "{d}");
            assert_ne!(m.trace.insts[d], center.trace.insts[d]);
            assert_eq!(m.trace.insts[..d], center.trace.insts[..d], "nothing before it changed");
            by_decision += 1;
        }
        assert!(by_decision >= 32, "{by_decision} of 64 mutants change a decision");
        assert_eq!(changed_decision(&center, &center), usize::MAX, "no change");
    }

    #[test]
    fn the_optimism_of_a_design_space_trace_shrinks_as_it_is_measured() {
        let mut task = crate::tune::task::test_task("matmul:M=64,N=64,K=64");
        assert!(task.space.traces.len() >= 3);
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for r in 0..200 {
            let mut s = task.space.sample_trace(0, &mut rng).expect("draws");
            s.space_trace = if r < 150 { 0 } else { 1 };
            task.observe(&s, Some(1.0), r as i64);
        }
        let [b0, b1, b2] = [0, 1, 2].map(|k| family_bonus(&task, k));
        let close = |a: f32, b: f32| (a - b).abs() < 1e-3;
        assert!(close(b2, FAMILY_OPTIMISM * 201f32.ln().sqrt()), "untried: {b2}");
        assert!(close(b1, FAMILY_OPTIMISM * (201f32.ln() / 51.0).sqrt()), "50 tries: {b1}");
        assert!(b2 > b1 && b1 > b0 && b0 > 0.0, "{b0} {b1} {b2}");
        assert!((0.11..0.12).contains(&b2) && (0.015..0.017).contains(&b1), "the figures of the doc comment");
    }

    #[test]
    fn a_little_measured_trace_outranks_a_slightly_better_prediction_and_unlowered_samples_go_last() {
        // Trace 1 has the larger bonus: its sample 1 (0.50 - 0.10) passes
        // sample 0 of trace 0 (0.45 - 0.01); sample 3 did not lower.
        let predicted = vec![Some(0.45), Some(0.50), Some(0.60), None, Some(0.30)];
        let families = [0, 1, 0, 1, usize::MAX];
        assert_eq!(optimistic_order(predicted.clone(), &families, &[0.01, 0.10]), [4, 1, 0, 2, 3]);
        // Without bonuses, the prediction alone.
        assert_eq!(optimistic_order(predicted, &families, &[0.0, 0.0]), [4, 0, 1, 2, 3]);
    }

    #[test]
    fn every_design_space_trace_keeps_its_best_predicted_children_on_the_frontier() {
        // Children 0..6 of trace 0 rank first, then trace 1's (6, 7, 8), then trace 2's (9).
        let ranked: Vec<usize> = (0..10).collect();
        let families = [0, 0, 0, 0, 0, 0, 1, 1, 1, 2];
        assert_eq!(frontier_picks(&ranked, &families, 4, 2), [0, 1, 2, 3, 6, 7, 9]);
        // A trace with enough children among the leaders gets no more.
        let ranked = [6, 0, 7, 1, 2, 8, 9, 3];
        assert_eq!(frontier_picks(&ranked, &families, 3, 2), [6, 0, 7, 1, 9]);
        assert_eq!(frontier_picks(&ranked, &families, 20, 2), ranked);
    }

    #[test]
    fn too_few_fresh_samples_are_topped_up_from_the_rest_and_a_small_pool_is_taken_whole() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let ranked: Vec<usize> = vec![3, 0, 4, 1, 2, 5];
        let picked = pick(&ranked, 5, 3, (0, |_| None), |i| i == 5, &mut rng);
        assert_eq!(picked[..2], [3, 0]);
        assert_eq!(picked.len(), 5);
        assert!(picked.contains(&5), "the one fresh sample is explored: {picked:?}");
        let mut all = pick(&ranked, 10, 3, (0, |_| None), |_| false, &mut rng);
        all.sort_unstable();
        assert_eq!(all, [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn samples_that_build_measured_or_better_ranked_code_are_dropped() {
        // Codes by pool index: 1 repeats 0's, 3 is measured, 4 does not lower.
        let codes = [Some(10), Some(10), Some(11), Some(12), None, Some(13)];
        let measured: FxHashSet<u64> = [12].into_iter().collect();
        let ranked = vec![1, 0, 3, 4, 2, 5];
        assert_eq!(new_code(ranked, |i| codes[i], &measured), [1, 4, 2, 5], "the better-ranked of 0 and 1 stays");
    }

    /// A task of 24 measured samples (made-up objectives), its codes
    /// recorded, and a model trained on them.
    fn measured_task() -> (Task, CostModel, ChaCha8Rng) {
        use crate::cost_model::{sample_lowered, Row};
        let mut task = crate::tune::task::test_task("matmul:M=32,N=32,K=16");
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let mut rows = Vec::new();
        for r in 0..24 {
            let s = task.space.sample(&mut rng).expect("samples");
            let lowered = sample_lowered(&task, &s).expect("lowers");
            let objective = 1.0 + f64::from(lowered.features.iter().map(|x| x.abs()).sum::<f32>());
            task.observe(&s, Some(objective), r);
            task.codes.insert(lowered.code);
            rows.push(Row { task: 0, features: lowered.features.to_vec(), objective });
        }
        let model = CostModel::train(&rows, 1).expect("trains").expect("enough rows");
        (task, model, rng)
    }

    /// The local places are filled with mutants of the best candidate,
    /// bred apart from the generations: a search that breeds nothing else
    /// proposes them, and nothing without them.
    #[test]
    fn the_local_places_hold_new_mutants_of_the_best_candidate() {
        let (task, model, mut rng) = measured_task();
        let best = task.best_scored().expect("measured").sample.clone();
        let only_local = |local| Evolutionary {
            generations: 1,
            mutants_per_sample: 0,
            fresh_per_sample: 0,
            epsilon: 0.0,
            local,
            ..Evolutionary::default()
        };
        let proposed = only_local(1.0).propose(&task, Some(&model), 8, &mut rng);
        assert_eq!(proposed.len(), 8);
        let decision_mutants = proposed
            .iter()
            .filter(|s| {
                s.space_trace == best.space_trace && s.trace.without_decisions() == best.trace.without_decisions()
            })
            .count();
        // The rest are structural moves from it (one mutant in seven or so).
        assert!(decision_mutants >= 4, "{decision_mutants} of 8 change decisions of the best");
        assert!(proposed.iter().all(|s| !task.measured.contains(&**s.text())), "new ones");
        assert!(only_local(0.0).propose(&task, Some(&model), 8, &mut rng).is_empty());
    }

    /// While the best improves, the local places go to its mutants; after
    /// [`STALL_TRIALS`] trials without, they take turns per proposal
    /// between the two leading other lineages' best and the best.
    #[test]
    fn a_stalled_local_search_takes_turns_around_the_best_of_other_lineages() {
        let (mut task, _, _) = measured_task();
        let best = task.best_scored().expect("measured").sample.text().clone();
        let rivals: Vec<Arc<str>> = task.rivals().iter().map(|s| s.sample.text().clone()).collect();
        assert!(rivals.len() >= RIVALS, "{} other lineages", rivals.len());
        let center = |task: &Task| local_center(task, 8).expect("a best").text().clone();
        assert_eq!(center(&task), best, "no trial yet");
        task.curve = vec![(0, 3.0)];
        for stalled in 1..=STALL_TRIALS + 4 * 8 {
            task.curve.push((stalled, 3.0));
            assert_eq!(task.stalled_trials(), stalled);
            let want = match stalled.checked_sub(STALL_TRIALS).map(|s| s / 8 % 3) {
                None | Some(2) => &best,
                Some(k) => &rivals[k],
            };
            assert_eq!(&center(&task), want, "after {stalled} trials without a better best");
        }
        task.curve.push((100, 2.5));
        assert_eq!(center(&task), best, "an improvement brings the places back to the best");
    }

    /// Once the best stalls, the local pool also holds the centre with its
    /// vector kind swapped and its tails drawn again (the kind and at
    /// least one tail changed at once, which no one-step mutant does).
    #[test]
    fn a_stalled_local_search_also_tries_the_centre_in_another_vector_kind() {
        use scaletune_codegen::pipeline::initial_nest;
        let w = Arc::new(scaletune_space::workload::load("matmul:M=32,N=40,K=8").expect("workload"));
        let target = Arc::new(scaletune_codegen::target::Target::load("neoverse-v1").expect("target"));
        let space = scaletune_space::design::DesignSpace::generate(&initial_nest(&w, &target));
        let mut task = Task::new(0, w, target, 1.0, vec![128, 256], space);
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        for r in 0..24 {
            let s = task.space.sample_trace(0, &mut rng).expect("samples");
            task.observe(&s, Some(1.0 + r as f64), r);
        }
        let search = Evolutionary::default();
        let swaps = |task: &Task, rng: &mut ChaCha8Rng| {
            let pool = search.local_pool(task, 8, &mut Texts::default(), &FeatureCache::default(), rng);
            let center = local_center(task, 8).expect("a best");
            let changed = |s: &Sample| s.trace.insts.iter().zip(&center.trace.insts).filter(|(a, b)| a != b).count();
            let swapped = pool.iter().filter(|s| {
                s.space_trace == center.space_trace
                    && s.trace.without_decisions() == center.trace.without_decisions()
                    && s.nest.caps != center.nest.caps
                    && changed(s) >= 2
            });
            (pool.len(), swapped.count())
        };
        let (bred, swapped) = swaps(&task, &mut rng);
        assert_eq!(
            (bred, swapped),
            (LOCAL_MUTANTS_PER_SAMPLE * 8, 0),
            "while the best improves, one-step mutants only"
        );
        task.curve = (0..=STALL_TRIALS + 16).map(|t| (t, 3.0)).collect();
        assert_eq!(local_center(&task, 8).map(Sample::text), task.best_scored().map(|s| s.sample.text()));
        let (bred, swapped) = swaps(&task, &mut rng);
        assert!(bred > LOCAL_MUTANTS_PER_SAMPLE * 8 && swapped >= 2, "{bred} in the pool, {swapped} swapped");
    }

    /// The count of a proposal is the candidates it lowered to choose: a
    /// search that breeds only the local pool scores exactly that pool, and
    /// counting changes nothing of what is proposed.
    #[test]
    fn a_proposal_counts_the_candidates_it_scored() {
        let (task, model, rng) = measured_task();
        let only_local = Evolutionary {
            generations: 1,
            mutants_per_sample: 0,
            fresh_per_sample: 0,
            epsilon: 0.0,
            local: 1.0,
            ..Evolutionary::default()
        };
        // The pool as the proposal makes it: no fresh samples (which still
        // draw their tie-break), then the local pool.
        let (mut seen, mut r) = (Texts::default(), rng.clone());
        assert!(spread_samples(&task, 0, 20, &mut seen, &mut r).is_empty());
        let pool = only_local.local_pool(&task, 8, &mut seen, &FeatureCache::default(), &mut r);
        assert!(pool.len() > 8, "a pool to choose from: {}", pool.len());
        let (chosen, scored) = only_local.propose_counted(&task, Some(&model), 8, &mut rng.clone());
        assert_eq!((chosen.len(), scored), (8, pool.len()));
        let texts = |v: &[Sample]| v.iter().map(|s| s.text().to_string()).collect::<Vec<_>>();
        assert!(texts(&chosen).iter().all(|t| texts(&pool).contains(t)), "chosen from that pool");
        // The default search scores its generations, fresh samples and local
        // pool: more than it chooses, each once.
        let search = Evolutionary::default();
        let (chosen, scored) = search.propose_counted(&task, Some(&model), 8, &mut rng.clone());
        assert_eq!(texts(&chosen), texts(&search.clone().propose(&task, Some(&model), 8, &mut rng.clone())));
        let most =
            (search.generations * search.mutants_per_sample + search.fresh_per_sample + LOCAL_MUTANTS_PER_SAMPLE + 1)
                * 8;
        assert!((8 * 8..=most).contains(&scored), "{scored} scored, at most {most}");
    }

    /// The task's cache of lowered samples changes no proposal: a job's
    /// proposals, the task observing each one's candidates before the next,
    /// are the same and count the same candidates when the cache is emptied
    /// before each proposal; with it, later proposals find some of their
    /// candidates lowered already.
    #[test]
    fn the_task_cache_of_lowered_samples_changes_no_proposal() {
        let search = Evolutionary::default();
        let job = |cached: bool| {
            let (mut task, model, _) = measured_task();
            let (mut proposals, mut reused) = (Vec::new(), 0);
            for b in 0..4u64 {
                if !cached {
                    task.lowered().clear();
                }
                let (chosen, scored) =
                    search.propose_counted(&task, Some(&model), 8, &mut ChaCha8Rng::seed_from_u64(b));
                reused += task.lowered().reused();
                for (i, s) in chosen.iter().enumerate() {
                    let lowered = task.lowered_one(s).expect("lowers");
                    let objective = 1.0 + f64::from(lowered.features.iter().map(|x| x.abs()).sum::<f32>());
                    task.observe(s, Some(objective), 100 + 8 * b as i64 + i as i64);
                    task.codes.insert(lowered.code);
                }
                proposals.push((chosen.iter().map(|s| s.text().to_string()).collect::<Vec<_>>(), scored));
            }
            (proposals, reused)
        };
        let (cached, reused) = job(true);
        let (uncached, none) = job(false);
        assert_eq!(cached, uncached);
        assert_eq!(none, 0);
        assert!(reused > 0, "no candidate of a later proposal was lowered before");
    }

    /// A proposal holds no two samples of one vector program and none of a
    /// measured candidate's, where many mutants repeat their parents' code.
    #[test]
    fn a_proposal_builds_no_code_twice_and_none_measured_already() {
        use crate::cost_model::sample_lowered;
        let (task, model, mut rng) = measured_task();
        let mut search = Evolutionary::default();
        // Without the filter, these parents' one-step mutants repeat their
        // code often: the test would not show anything otherwise.
        let mutants = search.breed(&task, &task.parents(), 64, &mut Texts::default(), &mut rng);
        let repeats =
            mutants.iter().filter(|m| sample_lowered(&task, m).is_some_and(|l| task.codes.contains(&l.code))).count();
        assert!(repeats >= 4, "{repeats} of 64 mutants repeat a measured program");
        // With the model, and without one (a job's second batch, before
        // enough candidates passed to train it).
        for model in [Some(&model), None] {
            let proposed = search.propose(&task, model, 16, &mut rng);
            assert_eq!(proposed.len(), 16);
            let mut codes = FxHashSet::default();
            for s in &proposed {
                let code = sample_lowered(&task, s).expect("lowers").code;
                assert!(!task.codes.contains(&code), "a measured program proposed again: {}", s.text());
                assert!(codes.insert(code), "a program proposed twice: {}", s.text());
            }
        }
    }
}

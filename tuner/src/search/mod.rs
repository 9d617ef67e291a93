//! Search strategies: what to measure next for a task, one strategy per file.
//!
//! A strategy proposes samples of a task's design space that no job has
//! measured; the job builds and measures them through the farm and tells
//! the task what came back ([`crate::tune::task::Task::observe`]).
//! Strategies see the cost model, when one is trained, to rank what they
//! propose. Every random choice comes from the RNG passed in.

pub mod evolutionary;
pub mod random;

use crate::cost_model::{CostModel, FeatureCache};
use crate::tune::task::Task;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use scaletune_space::design::Sample;
use scaletune_space::mutators::Draft;
use std::sync::Arc;

/// Trace texts (a candidate's identity): the ones a task measured, and the
/// ones a proposal has seen. Fx-hashed: a proposal looks up thousands of
/// texts of a few kilobytes each, which SipHash spends most of its time on.
pub type Texts = rustc_hash::FxHashSet<String>;

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

    /// A new strategy of this kind, for a job minimizing `objective`.
    pub fn build(self, objective: crate::tune::objective::ObjectiveKind) -> Box<dyn SearchStrategy> {
        match self {
            StrategyKind::Random => Box::new(random::Random),
            StrategyKind::Evolutionary => Box::new(evolutionary::Evolutionary::for_objective(objective)),
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
pub fn fresh_samples(task: &Task, n: usize, attempts: usize, seen: &mut Texts, rng: &mut ChaCha8Rng) -> Vec<Sample> {
    new_samples(task, n, attempts, seen, None, rng, |r| task.space.sample(r).ok())
}

/// Fresh samples spread over the design-space traces: the `j`-th draw comes
/// from the `j mod T`-th of the `T` traces in [`Task::least_tried`] order
/// (ties broken at random), so the traces measured least are drawn from
/// first and every trace is drawn from before any twice; where the space
/// has whole-nest options (statement fusion), the cycle gives each of
/// their values an equal share ([`scaletune_space::design::DesignSpace::interleave`]). Otherwise as
/// [`fresh_samples`].
pub fn spread_samples(task: &Task, n: usize, attempts: usize, seen: &mut Texts, rng: &mut ChaCha8Rng) -> Vec<Sample> {
    if task.space.traces.is_empty() {
        return Vec::new();
    }
    let tiebreak: Vec<u64> = task.space.traces.iter().map(|_| rng.gen()).collect();
    let order = task.space.interleave(&task.least_tried(&tiebreak));
    new_candidates(task, n, attempts, seen, None, rng, |j, r| task.space.sample_trace(order[j % order.len()], r).ok())
}

/// Up to `n` new samples (neither measured nor in `seen`, which they are
/// added to) adopted from the task's donors, in order ([`Task::donors`]:
/// the best schedules of other shapes of its workload), each with this
/// shape's tilings ([`scaletune_space::design::DesignSpace::adopt`]).
pub fn adopted_samples(task: &Task, n: usize, seen: &mut Texts, rng: &mut ChaCha8Rng) -> Vec<Sample> {
    let mut out = Vec::new();
    for donor in &task.donors {
        if out.len() >= n {
            break;
        }
        let Some(s) = task.space.adopt(donor, rng) else { continue };
        let text = s.text().to_string();
        if !task.measured.contains(&text) && seen.insert(text) {
            out.push(s);
        }
    }
    out
}

/// Samples made by `make` that are new (neither measured nor in `seen`,
/// which they are added to): at most `n`, calling `make` at most `attempts`
/// times. The calls run on every core, each with an RNG of its own seeded
/// from `rng` in call order, and their results are taken in that order: the
/// outcome depends on `rng` alone, not on the number of cores.
///
/// `make` may give drafts (mutants whose decisions are made but not
/// replayed, [`Draft`]): a draft whose text repeats a known candidate is
/// dropped before its replay, the costly part, and only new ones are
/// replayed. `seen` also gets the texts of drafts that did not replay. A
/// replay that repairs a decision gives a sample of another text, which is
/// checked (and added) in turn: no sample returned repeats a known one or
/// another. A draft whose text `known` has the nest of
/// ([`FeatureCache::nest`]: a sample of a recent proposal) is not replayed
/// at all: it becomes the sample with that nest, as its replay would give.
pub fn new_samples<C: Candidate>(
    task: &Task,
    n: usize,
    attempts: usize,
    seen: &mut Texts,
    known: Option<&FeatureCache>,
    rng: &mut ChaCha8Rng,
    make: impl Fn(&mut ChaCha8Rng) -> Option<C> + Sync,
) -> Vec<Sample> {
    new_candidates(task, n, attempts, seen, known, rng, |_, r| make(r))
}

/// Drops `samples` on every core: a sample owns its scheduled nest, a
/// large tree, and a proposal discards hundreds of them at once.
pub fn discard(samples: Vec<Sample>) {
    samples.into_par_iter().for_each(drop);
}

/// What [`new_samples`] makes: a sample, or a draft of one to finish.
pub trait Candidate: Send + Sized {
    /// The text of the sample this is or, usually, becomes (its identity;
    /// a finished sample of another text is checked again).
    fn text(&self) -> &str;
    /// The sample, and whether its text is [`Candidate::text`]; `None` if
    /// it cannot be finished. `known` may have the nest the sample has
    /// (see [`new_samples`]).
    fn finish(self, known: Option<&FeatureCache>) -> Option<(Sample, bool)>;
}

impl Candidate for Sample {
    fn text(&self) -> &str {
        Sample::text(self)
    }
    fn finish(self, _: Option<&FeatureCache>) -> Option<(Sample, bool)> {
        Some((self, true))
    }
}

impl Candidate for Draft {
    fn text(&self) -> &str {
        Draft::text(self)
    }
    fn finish(self, known: Option<&FeatureCache>) -> Option<(Sample, bool)> {
        let text = Arc::clone(Draft::text(&self));
        self.finish_unless_known(|key| known.and_then(|k| k.nest(key))).map(|(s, _)| {
            let kept = Arc::ptr_eq(&text, s.text()) || text == *s.text();
            (s, kept)
        })
    }
}

/// [`new_samples`] of any candidate, with `make` also given the call's
/// number (0, 1, ... in call order). Candidates are made in rounds until as
/// many new ones as samples are missing are found, then finished, all on
/// every core; the order of calls, and so the outcome, does not depend on
/// the number of cores.
fn new_candidates<C: Candidate>(
    task: &Task,
    n: usize,
    attempts: usize,
    seen: &mut Texts,
    known: Option<&FeatureCache>,
    rng: &mut ChaCha8Rng,
    make: impl Fn(usize, &mut ChaCha8Rng) -> Option<C> + Sync,
) -> Vec<Sample> {
    let mut out = Vec::new();
    let mut tried = 0;
    while out.len() < n && tried < attempts {
        let need = n - out.len();
        let mut picked: Vec<C> = Vec::with_capacity(need);
        while picked.len() < need && tried < attempts {
            let round = (need - picked.len()).min(attempts - tried);
            let seeds: Vec<(usize, u64)> = (0..round).map(|j| (tried + j, rng.gen())).collect();
            tried += round;
            // Each candidate's text (its identity) was printed on the worker that made it.
            let made: Vec<Option<C>> =
                seeds.par_iter().map(|&(j, seed)| make(j, &mut ChaCha8Rng::seed_from_u64(seed))).collect();
            for c in made.into_iter().flatten() {
                let text = c.text();
                if task.measured.contains(text) || seen.contains(text) {
                    continue;
                }
                seen.insert(text.to_string());
                picked.push(c);
            }
        }
        let finished: Vec<Option<(Sample, bool)>> = picked.into_par_iter().map(|c| c.finish(known)).collect();
        for (s, kept_text) in finished.into_iter().flatten() {
            if !kept_text {
                if task.measured.contains(&**s.text()) || seen.contains(&**s.text()) {
                    continue;
                }
                seen.insert(s.text().to_string());
            }
            out.push(s);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tune::task::test_task;

    fn task() -> Task {
        test_task("matmul:M=64,N=64,K=64")
    }

    fn families(samples: &[Sample]) -> Vec<usize> {
        let mut f: Vec<usize> = samples.iter().map(|s| s.space_trace).collect();
        f.sort_unstable();
        f
    }

    /// A candidate that counts how often it is finished.
    struct Counted(Sample, &'static std::sync::atomic::AtomicUsize);

    impl Candidate for Counted {
        fn text(&self) -> &str {
            self.0.text()
        }
        fn finish(self, _: Option<&FeatureCache>) -> Option<(Sample, bool)> {
            self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Some((self.0, true))
        }
    }

    /// Candidates that repeat a known one are dropped before they are
    /// finished (for drafts: replayed): 40 attempts drawing among 4
    /// distinct candidates finish exactly 4, one of them already seen.
    #[test]
    fn repeated_candidates_are_never_finished() {
        static FINISHED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let t = task();
        let pool = fresh_samples(&t, 5, 50, &mut Texts::default(), &mut ChaCha8Rng::seed_from_u64(4));
        assert_eq!(pool.len(), 5);
        let mut seen: Texts = Texts::from_iter([pool[4].text().to_string()]);
        let got = new_samples(&t, 10, 40, &mut seen, None, &mut ChaCha8Rng::seed_from_u64(6), |r| {
            Some(Counted(pool[r.gen_range(0..pool.len())].clone(), &FINISHED))
        });
        assert_eq!(FINISHED.load(std::sync::atomic::Ordering::Relaxed), 4);
        let mut texts: Vec<&str> = got.iter().map(|s| &**s.text()).collect();
        texts.sort_unstable();
        let mut want: Vec<&str> = pool[..4].iter().map(|s| &**s.text()).collect();
        want.sort_unstable();
        assert_eq!(texts, want);
    }

    /// A candidate that finishes as another sample (a draft whose replay
    /// repaired a decision).
    struct Retexted(Sample, Sample);

    impl Candidate for Retexted {
        fn text(&self) -> &str {
            self.0.text()
        }
        fn finish(self, _: Option<&FeatureCache>) -> Option<(Sample, bool)> {
            Some((self.1, false))
        }
    }

    /// A finished candidate of another text is checked again: dropped if
    /// that text is measured, seen or finished before, else kept and seen.
    #[test]
    fn candidates_finished_under_another_text_are_checked_again() {
        let mut t = task();
        let pool = fresh_samples(&t, 7, 70, &mut Texts::default(), &mut ChaCha8Rng::seed_from_u64(4));
        assert_eq!(pool.len(), 7);
        t.observe(&pool[5], Some(1.0), 0);
        let mut seen: Texts = Texts::from_iter([pool[4].text().to_string()]);
        // Drafts 0..4 finishing as 6 (new), 4 (seen), 5 (measured) and 6 (finished before).
        let finished_as = [6, 4, 5, 6];
        let got = new_candidates(&t, 4, 4, &mut seen, None, &mut ChaCha8Rng::seed_from_u64(6), |j, _| {
            Some(Retexted(pool[j].clone(), pool[finished_as[j]].clone()))
        });
        let texts: Vec<&str> = got.iter().map(|s| &**s.text()).collect();
        assert_eq!(texts, [&**pool[6].text()]);
        // The drafts' texts and the kept sample's are seen now.
        for k in [0, 1, 2, 3, 4, 6] {
            assert!(seen.contains(&**pool[k].text()), "{k}");
        }
    }

    /// Mutants made as drafts: none repeats a measured or already seen
    /// candidate or another mutant, each is its draft's decisions replayed,
    /// and the outcome is the same on one core as on several.
    #[test]
    fn mutants_from_drafts_are_new_replayed_and_independent_of_the_cores() {
        use scaletune_space::mutators::draft_mutant;
        let mut t = task();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let parents = fresh_samples(&t, 4, 40, &mut Texts::default(), &mut rng);
        assert_eq!(parents.len(), 4);
        for (r, p) in parents.iter().enumerate() {
            t.observe(p, Some(1.0 + r as f64), r as i64);
        }
        // A candidate seen before: the mutants a first call makes.
        let breed = |seen: &mut Texts, seed| {
            new_samples(&t, 40, 400, seen, None, &mut ChaCha8Rng::seed_from_u64(seed), |r| {
                draft_mutant(&t.space, &parents[r.gen_range(0..parents.len())], r)
            })
        };
        let mut seen = Texts::default();
        let first = breed(&mut seen, 8);
        assert_eq!(first.len(), 40);
        let texts: std::collections::HashSet<&str> = first.iter().map(|s| &**s.text()).collect();
        assert_eq!(texts.len(), first.len(), "no mutant twice");
        for m in &first {
            assert!(!t.measured.contains(&**m.text()) && seen.contains(&**m.text()));
            let mut n = t.space.nest.clone();
            m.trace.apply(&mut n).expect("a mutant replays");
            assert_eq!(n.to_string(), m.nest.to_string());
        }
        let again = breed(&mut seen, 9);
        assert!(again.iter().all(|m| !texts.contains(&**m.text())), "a seen mutant came back");
        // One core or two: the same mutants.
        let on = |threads| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
            pool.install(|| breed(&mut Texts::default(), 8).iter().map(|s| s.text().to_string()).collect::<Vec<_>>())
        };
        assert_eq!(on(1), on(2));
    }

    /// Drafts whose text the cache holds a nest for are finished with that
    /// nest, unreplayed: breeding again from the same seed with the cache
    /// of the first brood gives the same mutants, the decided ones sharing
    /// the first brood's nests; without the cache, none shares one.
    #[test]
    fn drafts_the_cache_knows_take_its_nests_and_give_the_same_mutants() {
        use crate::cost_model::FeatureCache;
        use scaletune_space::mutators::draft_mutant;
        let t = task();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let parents = fresh_samples(&t, 4, 40, &mut Texts::default(), &mut rng);
        let breed = |known: Option<&FeatureCache>| {
            new_samples(&t, 40, 400, &mut Texts::default(), known, &mut ChaCha8Rng::seed_from_u64(11), |r| {
                draft_mutant(&t.space, &parents[r.gen_range(0..parents.len())], r)
            })
        };
        let first = breed(None);
        let mut cache = FeatureCache::default();
        cache.begin_round();
        cache.lowered(&t, &first);
        let texts = |b: &[Sample]| b.iter().map(|s| s.text().to_string()).collect::<Vec<_>>();
        let shared = |b: &[Sample]| b.iter().zip(&first).filter(|(a, f)| Arc::ptr_eq(&a.nest, &f.nest)).count();
        let known = breed(Some(&cache));
        assert_eq!(texts(&known), texts(&first));
        for (k, f) in known.iter().zip(&first) {
            assert_eq!(*k.nest, *f.nest, "{}", k.text());
        }
        assert!(shared(&known) > first.len() / 2, "{} of {} took the cached nest", shared(&known), first.len());
        assert_eq!(shared(&breed(None)), 0);
    }

    #[test]
    fn spread_samples_draw_every_design_space_trace_once_the_least_tried_first() {
        let mut t = task();
        let n = t.space.traces.len();
        assert!(n >= 4, "{n} design-space traces");
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let all = spread_samples(&t, n, 20 * n, &mut Texts::default(), &mut rng);
        assert_eq!(families(&all), (0..n).collect::<Vec<_>>(), "one of each trace");
        // Trace 0 measured twice, trace 1 once: a batch of n - 1 leaves out trace 0.
        for (r, s) in [&all[0], &all[1], &all[2]].into_iter().enumerate() {
            let mut s = s.clone();
            s.space_trace = if r < 2 { 0 } else { 1 };
            t.observe(&s, None, r as i64);
        }
        let some = spread_samples(&t, n - 1, 20 * n, &mut Texts::default(), &mut rng);
        assert_eq!(families(&some), (1..n).collect::<Vec<_>>());
        let most = spread_samples(&t, n - 2, 20 * n, &mut Texts::default(), &mut rng);
        assert_eq!(families(&most), (2..n).collect::<Vec<_>>());
        // Drawn again with the same seed, the same samples.
        let again = |seed| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            spread_samples(&t, 2 * n, 40 * n, &mut Texts::default(), &mut rng)
                .iter()
                .map(|s| s.trace.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(again(9), again(9));
        assert_eq!(again(9).len(), 2 * n);
    }
}

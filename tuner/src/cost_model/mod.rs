//! The learned cost model: gradient-boosted trees on features of each candidate's vector program, trained online on measured candidates.
//!
//! Targets are log objectives centred per task (`ln(objective)` minus the
//! task's mean), so that tasks with very different run times train one
//! model and the model ranks candidates within a task. The model only ever
//! ranks; measured figures are what the job reports.

mod digest;
pub mod features;
mod gbdt;

pub use digest::{code_digest, UNROLLED_ANYWAY};

pub use gbdt::{CostModelError, Gbdt};

use crate::tune::task::Task;
use rayon::prelude::*;
use scaletune_codegen::pipeline::{fixed_vl, lower_nest_unverified, schedule};
use scaletune_codegen::vprog::Program;
use scaletune_space::design::Sample;
use scaletune_space::ir::Nest;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// A measured candidate as training data.
#[derive(Clone, Debug)]
pub struct Row {
    /// The task it belongs to (targets are centred per task).
    pub task: usize,
    /// Its features.
    pub features: Vec<f32>,
    /// Its objective (lower is better, positive).
    pub objective: f64,
}

/// A sample lowered for the cost model: its features and a digest of its
/// code.
#[derive(Clone, Debug)]
pub struct Lowered {
    /// The features (see [`sample_features`]).
    pub features: Arc<[f32]>,
    /// Digest of the code the candidate builds at every VL the task
    /// measures at (each program's [`code_digest`]): a candidate with a
    /// measured one's would only measure that code again, and
    /// [`Task::codes`] keeps the digests of the measured ones.
    pub code: u64,
}

/// The nest and program a sample builds at `vl` when they are not the ones
/// it was sampled with (`Some(None)`: they are; `None`: it does not
/// schedule or lower there). A fixed-length scalable kind is scheduled
/// again at each other VL, as the builder does
/// ([`scaletune_codegen::pipeline::vl_builds`]), and a decision that
/// changes nothing at one VL (the tail of a loop the lanes divide) can
/// change the code at another.
fn rebuilt_at(task: &Task, sample: &Sample, vl: u32) -> Option<Option<(Nest, Program)>> {
    match fixed_vl(&sample.nest.caps) {
        Some(own) if own != vl => {
            let nest = schedule(&task.workload, Some(&sample.trace), &task.target, Some(vl)).ok()?;
            let prog = lower_nest_unverified(&task.workload, &nest).ok()?;
            Some(Some((nest, prog)))
        }
        _ => Some(None),
    }
}

/// A sample of `task` lowered: its features (the mean of those of the
/// program it builds at each of the task's VLs) and its code's digest
/// (every program it builds). `None` if it does not lower, at any of them.
pub fn sample_lowered(task: &Task, sample: &Sample) -> Option<Lowered> {
    let prog = lower_nest_unverified(&task.workload, &sample.nest).ok()?;
    let vls = if task.vls.is_empty() { vec![128] } else { task.vls.clone() };
    let mut sum = vec![0f32; features::N_FEATURES];
    let mut digest = rustc_hash::FxHasher::default();
    code_digest(&prog, &sample.nest.caps).hash(&mut digest);
    for &vl in &vls {
        let other = rebuilt_at(task, sample, vl)?;
        let (nest, p) = other.as_ref().map_or((&*sample.nest, &prog), |(n, p)| (n, p));
        if other.is_some() {
            (vl, code_digest(p, &nest.caps)).hash(&mut digest);
        }
        for (s, f) in sum.iter_mut().zip(features::features(&task.workload, nest, p, vl)) {
            *s += f;
        }
    }
    let n = vls.len() as f32;
    Some(Lowered { features: sum.into_iter().map(|s| s / n).collect(), code: digest.finish() })
}

/// Feature vector of a sample of `task`: the mean of its features at the
/// task's vector lengths (the objective is a mean over them too). `None`
/// if the sample does not lower.
pub fn sample_features(task: &Task, sample: &Sample) -> Option<Vec<f32>> {
    sample_lowered(task, sample).map(|l| l.features.to_vec())
}

/// A trained model.
#[derive(Debug)]
pub struct CostModel {
    gbdt: Gbdt,
    /// Rows it was trained on.
    pub trained_on: usize,
}

/// Fewest rows worth training on.
pub const MIN_ROWS: usize = 8;

impl CostModel {
    /// Trains on `rows` (deterministic for the same rows and seed, in any
    /// order: a job's rows come in the order its farm finished them); `None`
    /// with fewer than [`MIN_ROWS`] rows.
    pub fn train(rows: &[Row], seed: u64) -> Result<Option<CostModel>, CostModelError> {
        if rows.len() < MIN_ROWS {
            return Ok(None);
        }
        let targets = centred_targets(rows);
        let features: Vec<Vec<f32>> = rows.iter().map(|r| r.features.clone()).collect();
        let gbdt = Gbdt::train(&features, &targets, seed)?;
        Ok(Some(CostModel { gbdt, trained_on: rows.len() }))
    }

    /// Predicted (centred log) objectives of feature vectors: lower is better.
    pub fn predict(&self, features: &[Vec<f32>]) -> Vec<f32> {
        self.gbdt.predict(features)
    }

    /// Indices of `samples` ordered best-predicted first; samples that do
    /// not lower go last (ties keep the samples' order).
    pub fn rank(&self, task: &Task, samples: &[Sample]) -> Vec<usize> {
        self.rank_cached(task, samples, &mut FeatureCache::default())
    }

    /// [`CostModel::rank`], taking the features of samples seen before from
    /// `cache` and adding those of the others (a search ranks a candidate
    /// more than once: in its generation, then in the final pool).
    pub fn rank_cached(&self, task: &Task, samples: &[Sample], cache: &mut FeatureCache) -> Vec<usize> {
        rank_scores(self.predict_cached(task, samples, cache))
    }

    /// Predicted (centred log) objectives of `samples`, `None` for those
    /// that do not lower, with features taken from and added to `cache`.
    pub fn predict_cached(&self, task: &Task, samples: &[Sample], cache: &mut FeatureCache) -> Vec<Option<f32>> {
        let feats = cache.features(task, samples);
        let known: Vec<Vec<f32>> = feats.iter().flatten().map(|f| f.to_vec()).collect();
        let mut predicted = self.predict(&known).into_iter();
        feats.iter().map(|f| f.as_ref().and_then(|_| predicted.next())).collect()
    }
}

/// Indices of `scores` ordered lowest first; `None` goes last (ties keep
/// the order of `scores`).
pub fn rank_scores(scores: Vec<Option<f32>>) -> Vec<usize> {
    let mut scored: Vec<(usize, f32)> =
        scores.into_iter().enumerate().map(|(i, s)| (i, s.unwrap_or(f32::INFINITY))).collect();
    scored.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    scored.into_iter().map(|(i, _)| i).collect()
}

/// Samples lowered ([`Lowered`]) by trace text, each once, on every core.
///
/// A task keeps one for its whole job ([`Task::lowered`]): a proposal
/// breeds mostly from the same parents as the one before it, and the
/// mutants it makes again (in a 200-trial job on matmul 512^3, two in five
/// of them) are scored without being lowered again. What a sample lowers to
/// depends only on its trace and the task (workload, target, VLs), never
/// on the model, so the cache changes no ranking. Entries are keyed by a
/// 128-bit digest of the trace text ([`Sample::key`], computed where the
/// sample was made), and the cache is
/// emptied when a round begins with more than its capacity
/// ([`FeatureCache::CAPACITY`] by default) in it, or when it is asked for
/// VLs other than those it was filled at.
///
/// It also keeps the nests of the samples of its last [`NEST_ROUNDS`]
/// rounds ([`FeatureCache::nest`]): a mutant drafted again needs no replay
/// to be scored, and without one its nest is the only part a replay would
/// add (9 in 10 of a job's repeats come back within that many rounds; a
/// nest is about 5 kB, a round a few hundred samples).
#[derive(Debug)]
pub struct FeatureCache {
    known: rustc_hash::FxHashMap<u128, Entry>,
    /// Samples it holds before it starts again empty.
    capacity: usize,
    /// The round now under way ([`FeatureCache::begin_round`]).
    round: u64,
    /// Distinct samples looked up or lowered in this round.
    touched: usize,
    /// Of them, lowered in an earlier round.
    reused: usize,
    /// The task's VLs the entries were lowered at.
    vls: Vec<u32>,
    /// Scheduled nests by sample key, with the last round that looked the
    /// sample up.
    nests: rustc_hash::FxHashMap<u128, (Arc<Nest>, u64)>,
}

/// Rounds a [`FeatureCache`] keeps a sample's nest for after the last one
/// that looked the sample up.
pub const NEST_ROUNDS: u64 = 8;

#[derive(Debug)]
struct Entry {
    lowered: Option<Lowered>,
    /// The last round that looked it up.
    round: u64,
}

impl Default for FeatureCache {
    fn default() -> FeatureCache {
        FeatureCache::with_capacity(FeatureCache::CAPACITY)
    }
}

impl FeatureCache {
    /// Samples a cache holds before it starts again empty (at the start of
    /// a round): at most about 16 MB, several hundred proposals' worth.
    pub const CAPACITY: usize = 1 << 16;

    /// An empty cache that starts again empty when a round begins with
    /// more than `capacity` samples in it.
    pub fn with_capacity(capacity: usize) -> FeatureCache {
        FeatureCache {
            known: Default::default(),
            capacity,
            round: 0,
            touched: 0,
            reused: 0,
            vls: Vec::new(),
            nests: Default::default(),
        }
    }

    /// Starts a round (a proposal): [`FeatureCache::touched`] and
    /// [`FeatureCache::reused`] count from here.
    pub fn begin_round(&mut self) {
        self.round += 1;
        self.touched = 0;
        self.reused = 0;
        if self.known.len() > self.capacity {
            self.known.clear();
        }
        let round = self.round;
        let expired: Vec<u128> =
            self.nests.iter().filter(|(_, (_, last))| round - *last > NEST_ROUNDS).map(|(k, _)| *k).collect();
        // The last references to most of them: dropped on every core, as
        // the samples of a proposal are.
        let nests: Vec<Arc<Nest>> = expired.iter().filter_map(|k| self.nests.remove(k)).map(|(n, _)| n).collect();
        nests.into_par_iter().for_each(drop);
    }

    /// Distinct samples looked up or lowered since the round began: the
    /// candidates a proposal scored.
    pub fn touched(&self) -> usize {
        self.touched
    }

    /// Of [`FeatureCache::touched`], those lowered in an earlier round.
    pub fn reused(&self) -> usize {
        self.reused
    }

    /// The features of each of `samples` (`None`: it does not lower):
    /// cached ones looked up, the others computed in parallel (lowering is
    /// most of a proposal's time) and added.
    pub fn features(&mut self, task: &Task, samples: &[Sample]) -> Vec<Option<Arc<[f32]>>> {
        self.lowered(task, samples).into_iter().map(|l| l.map(|l| l.features)).collect()
    }

    /// Each of `samples` lowered (`None`: it does not lower), as [`FeatureCache::features`].
    pub fn lowered(&mut self, task: &Task, samples: &[Sample]) -> Vec<Option<Lowered>> {
        if self.vls != task.vls {
            self.known.clear();
            self.vls.clone_from(&task.vls);
        }
        let keys: Vec<u128> = samples.iter().map(Sample::key).collect();
        let mut pending: rustc_hash::FxHashSet<u128> = rustc_hash::FxHashSet::default();
        let mut todo: Vec<usize> = Vec::new();
        // Samples first looked up in this round, whose nests are kept from it on.
        let mut refreshed: Vec<usize> = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            match self.known.get_mut(key) {
                Some(e) if e.round != self.round => {
                    e.round = self.round;
                    self.touched += 1;
                    self.reused += 1;
                    refreshed.push(i);
                }
                Some(_) => {}
                None if pending.insert(*key) => todo.push(i),
                None => {}
            }
        }
        // On the process's pool of threads, which live on, and with them
        // each thread's memo of simplified expressions.
        let computed: Vec<Option<Lowered>> = todo.par_iter().map(|&i| sample_lowered(task, &samples[i])).collect();
        self.touched += todo.len();
        for (&i, lowered) in todo.iter().zip(computed) {
            self.known.insert(keys[i], Entry { lowered, round: self.round });
        }
        for &i in refreshed.iter().chain(&todo) {
            self.nests.insert(keys[i], (Arc::clone(&samples[i].nest), self.round));
        }
        keys.iter().map(|k| self.known.get(k).and_then(|e| e.lowered.clone())).collect()
    }

    /// The code digest of a sample lowered before (`None`: not lowered
    /// yet, or it does not lower).
    pub fn code(&self, sample: &Sample) -> Option<u64> {
        self.known.get(&sample.key()).and_then(|e| e.lowered.as_ref().map(|l| l.code))
    }

    /// The nest of a sample of key `key` (see [`Sample::key`]) looked up
    /// in the last [`NEST_ROUNDS`] rounds, if there was one.
    pub fn nest(&self, key: u128) -> Option<Arc<Nest>> {
        self.nests.get(&key).map(|(n, _)| Arc::clone(n))
    }

    /// Forgets every sample (the counts of the round stay).
    pub fn clear(&mut self) {
        self.known.clear();
        self.nests.clear();
    }

    /// Samples whose features are cached.
    pub fn len(&self) -> usize {
        self.known.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }
}

/// `ln(objective)` minus the mean of its task's.
fn centred_targets(rows: &[Row]) -> Vec<f32> {
    let mut sums: HashMap<usize, (f64, usize)> = HashMap::new();
    for r in rows {
        let e = sums.entry(r.task).or_default();
        e.0 += r.objective.ln();
        e.1 += 1;
    }
    rows.iter()
        .map(|r| {
            let (s, n) = sums[&r.task];
            (r.objective.ln() - s / n as f64) as f32
        })
        .collect()
}

/// Kendall's tau-b between the model's predictions and the measured
/// objectives of `held_out`, for a model trained on `train`; `None` when
/// either side is too small.
pub fn held_out_tau(train: &[Row], held_out: &[Row], seed: u64) -> Option<f64> {
    if held_out.len() < 4 {
        return None;
    }
    let model = CostModel::train(train, seed).ok()??;
    let feats: Vec<Vec<f32>> = held_out.iter().map(|r| r.features.clone()).collect();
    let predicted: Vec<f64> = model.predict(&feats).into_iter().map(f64::from).collect();
    let measured = centred_targets(held_out).into_iter().map(f64::from).collect::<Vec<_>>();
    Some(scaletune_measure::stats::kendall_tau_b(&predicted, &measured)).filter(|t| t.is_finite())
}

/// Splits rows into training and held-out parts: every fifth row held out.
pub fn split_held_out(rows: &[Row]) -> (Vec<Row>, Vec<Row>) {
    let (mut train, mut held) = (Vec::new(), Vec::new());
    for (i, r) in rows.iter().enumerate() {
        if i % 5 == 4 {
            held.push(r.clone());
        } else {
            train.push(r.clone());
        }
    }
    (train, held)
}

#[cfg(test)]
mod tests {
    use super::*;
    use scaletune_codegen::pipeline::initial_nest;
    use scaletune_codegen::target::Target;
    use scaletune_space::design::DesignSpace;
    use scaletune_space::sample::task_rng;
    use scaletune_space::workload::WorkloadRef;

    fn task() -> Task {
        let w = Arc::new(WorkloadRef::parse("matmul:M=64,N=60,K=32").expect("ref").load().expect("loads"));
        let t = Arc::new(Target::load("neoverse-v1").expect("target"));
        let space = DesignSpace::generate(&initial_nest(&w, &t));
        Task::new(0, w, t, 1.0, vec![128, 256], space)
    }

    /// The cached, parallel ranking is the ranking of features computed one
    /// by one; each distinct sample is lowered once, however often it is ranked.
    #[test]
    fn cached_ranking_equals_ranking_of_fresh_features() {
        let task = task();
        let mut rng = task_rng(7, 0);
        let mut samples: Vec<Sample> = (0..24).map(|_| task.space.sample(&mut rng).expect("samples")).collect();
        let rows: Vec<Row> = samples
            .iter()
            .filter_map(|s| sample_features(&task, s))
            .map(|f| Row { task: 0, objective: 1.0 + f.iter().map(|x| f64::from(x.abs())).sum::<f64>(), features: f })
            .collect();
        let model = CostModel::train(&rows, 3).expect("trains").expect("enough rows");
        samples.extend(samples[..5].to_vec());
        let sequential: Vec<Option<Vec<f32>>> = samples.iter().map(|s| sample_features(&task, s)).collect();
        let known: Vec<Vec<f32>> = sequential.iter().flatten().cloned().collect();
        let mut predicted = model.predict(&known).into_iter();
        let mut expected: Vec<(usize, f32)> = sequential
            .iter()
            .enumerate()
            .map(|(i, f)| (i, if f.is_some() { predicted.next().expect("one each") } else { f32::INFINITY }))
            .collect();
        expected.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        let expected: Vec<usize> = expected.into_iter().map(|(i, _)| i).collect();

        let mut cache = FeatureCache::default();
        assert_eq!(model.rank_cached(&task, &samples, &mut cache), expected);
        let distinct: std::collections::HashSet<String> = samples.iter().map(|s| s.trace.to_string()).collect();
        assert!(samples.iter().all(|s| **s.text() == s.trace.to_string()), "a sample's text is its trace's");
        assert_eq!(cache.len(), distinct.len());
        let cached = cache.features(&task, &samples);
        for (c, s) in cached.iter().zip(&sequential) {
            assert_eq!(c.as_deref(), s.as_deref());
        }
        assert_eq!(model.rank_cached(&task, &samples, &mut cache), expected, "from the cache alone");
        assert_eq!(cache.len(), distinct.len());
        assert_eq!(model.rank(&task, &samples), expected);
    }

    /// A candidate's code digest covers every VL it is measured at: a
    /// fixed-length kind is rebuilt per VL, and two candidates that build
    /// one program at its own VL can build two at another (a column tail
    /// of N=40 on neoverse-v1, whose own VL is 256 bits: 256-bit lanes
    /// divide it, 512-bit ones do not). A
    /// length-agnostic candidate builds one program for all VLs, and the
    /// schedule's vector kind is part of the digest.
    #[test]
    fn a_code_digest_stands_for_the_code_of_every_measured_vl() {
        use scaletune_space::mutators::mutate_sample;
        let w = Arc::new(WorkloadRef::parse("matmul:M=64,N=40,K=32").expect("ref").load().expect("loads"));
        let t = Arc::new(Target::load("neoverse-v1").expect("target"));
        let space = DesignSpace::generate(&initial_nest(&w, &t));
        let mut task = Task::new(0, w, t, 1.0, vec![], space);
        let mut rng = task_rng(4, 0);
        let code_at = |task: &mut Task, vls: &[u32], s: &Sample| {
            task.vls = vls.to_vec();
            sample_lowered(task, s).map(|l| l.code)
        };
        let mut pair = None;
        let mut agnostic = None;
        for _ in 0..400 {
            let s = task.space.sample(&mut rng).expect("samples");
            if fixed_vl(&s.nest.caps) != Some(256) {
                if s.nest.caps.scalable && lower_nest_unverified(&task.workload, &s.nest).is_ok() {
                    agnostic.get_or_insert(s);
                }
                continue;
            }
            let Some(own) = code_at(&mut task, &[256], &s) else { continue };
            for _ in 0..20 {
                let Some((m, _)) = mutate_sample(&task.space, &s, &mut rng) else { break };
                if m.nest.caps == s.nest.caps
                    && code_at(&mut task, &[256], &m) == Some(own)
                    && code_at(&mut task, &[256, 512], &m) != code_at(&mut task, &[256, 512], &s)
                {
                    pair = Some((s.clone(), m));
                    break;
                }
            }
            if pair.is_some() && agnostic.is_some() {
                break;
            }
        }
        let (a, b) = pair.expect("two fixed-length candidates with one program at 256 bits and two at 512");
        let at = |vl| {
            let nest = schedule(&task.workload, Some(&a.trace), &task.target, Some(vl)).expect("schedules");
            let other = schedule(&task.workload, Some(&b.trace), &task.target, Some(vl)).expect("schedules");
            let lower = |n: &Nest| lower_nest_unverified(&task.workload, n).expect("lowers");
            lower(&nest) == lower(&other)
        };
        assert!(at(256) && !at(512), "the builder's programs: the same at 256 bits only");
        let agnostic = agnostic.expect("drawn");
        let prog = lower_nest_unverified(&task.workload, &agnostic.nest).expect("lowers");
        assert_eq!(
            code_at(&mut task, &[256, 512], &agnostic),
            code_at(&mut task, &[512], &agnostic),
            "one object for both VLs"
        );
        assert_ne!(code_digest(&prog, &agnostic.nest.caps), code_digest(&prog, &a.nest.caps), "the kind counts");
    }

    /// A round counts the distinct samples it looked up, and which of them
    /// an earlier round lowered; a cache asked for other VLs lowers again
    /// (what it held was lowered at the old ones), and one past its
    /// capacity starts the next round empty.
    #[test]
    fn the_cache_counts_rounds_follows_the_vls_and_stays_bounded() {
        let mut task = task();
        let mut rng = task_rng(8, 0);
        let samples: Vec<Sample> = (0..6).map(|_| task.space.sample(&mut rng).expect("samples")).collect();
        let mut cache = FeatureCache::with_capacity(6);
        cache.begin_round();
        cache.lowered(&task, &samples[..4]);
        assert_eq!((cache.touched(), cache.reused(), cache.len()), (4, 0, 4));
        cache.begin_round();
        let twice: Vec<Sample> = samples[2..].iter().chain(&samples[2..]).cloned().collect();
        let got = cache.lowered(&task, &twice);
        assert_eq!((cache.touched(), cache.reused(), cache.len()), (4, 2, 6));
        let code = |l: &Option<Lowered>| l.as_ref().map(|l| (l.code, l.features.to_vec()));
        for (g, s) in got.iter().zip(&twice) {
            assert_eq!(code(g), code(&sample_lowered(&task, s)), "{}", s.text());
        }
        let before = cache.lowered(&task, &samples[..2]);
        task.vls = vec![512];
        let after = cache.lowered(&task, &samples[..2]);
        assert_eq!(cache.len(), 2, "emptied for the new VLs");
        for ((a, b), s) in after.iter().zip(&before).zip(&samples) {
            assert_eq!(code(a), code(&sample_lowered(&task, s)), "{}", s.text());
            assert_ne!(code(a), code(b), "lowered at 512 bits, not at 128 and 256: {}", s.text());
        }
        let mut small = FeatureCache::with_capacity(3);
        small.lowered(&task, &samples);
        assert_eq!(small.len(), 6, "a round is never cut short");
        small.begin_round();
        assert!(small.is_empty());
        small.lowered(&task, &samples[..1]);
        assert_eq!((small.touched(), small.reused(), small.len()), (1, 0, 1));
    }

    /// The cache keeps the nest of each sample it was asked for until
    /// [`NEST_ROUNDS`] rounds have passed without the sample, and forgets
    /// it when cleared.
    #[test]
    fn the_cache_keeps_nests_for_a_few_rounds_after_their_last_look_up() {
        let task = task();
        let mut rng = task_rng(8, 1);
        let samples: Vec<Sample> = (0..2).map(|_| task.space.sample(&mut rng).expect("samples")).collect();
        let mut cache = FeatureCache::default();
        cache.begin_round();
        cache.lowered(&task, &samples);
        let kept = |c: &FeatureCache, s: &Sample| c.nest(s.key()).is_some_and(|n| Arc::ptr_eq(&n, &s.nest));
        for round in 1..=NEST_ROUNDS {
            cache.begin_round();
            assert!(kept(&cache, &samples[0]) && kept(&cache, &samples[1]), "round {round}");
            // The second is looked up again (its features cached already).
            cache.lowered(&task, &samples[1..]);
        }
        cache.begin_round();
        assert!(!kept(&cache, &samples[0]), "{} rounds without a look-up", NEST_ROUNDS + 1);
        assert!(kept(&cache, &samples[1]));
        assert_eq!(cache.len(), 2, "features stay");
        cache.clear();
        assert!(cache.nest(samples[1].key()).is_none());
    }

    /// A job's rows arrive in the order its farm finishes the candidates:
    /// the model must not depend on it (forust-ml's training does not).
    #[test]
    fn the_same_rows_in_another_order_train_the_same_model() {
        let task = task();
        let mut rng = task_rng(9, 0);
        let samples: Vec<Sample> = (0..24).map(|_| task.space.sample(&mut rng).expect("samples")).collect();
        let mut rows: Vec<Row> = samples
            .iter()
            .filter_map(|s| sample_features(&task, s))
            .enumerate()
            .map(|(i, f)| Row { task: i % 2, objective: 1.0 + (i % 5) as f64, features: f })
            .collect();
        let feats: Vec<Vec<f32>> = rows.iter().map(|r| r.features.clone()).collect();
        let a = CostModel::train(&rows, 3).expect("trains").expect("enough rows").predict(&feats);
        rows.reverse();
        rows.rotate_left(5);
        let b = CostModel::train(&rows, 3).expect("trains").expect("enough rows").predict(&feats);
        assert_eq!(
            a.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            b.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
    }
}

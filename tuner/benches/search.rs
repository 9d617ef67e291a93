//! Throughput of the search: candidates proposed (fresh samples or mutants of the best) and scored by a trained cost model, per second, for matmul 512^3 on `host`.
//!
//! `cargo bench -p scaletune --bench search`. Criterion reports elements
//! per second: each iteration proposes (as `tune` does: fresh samples, or
//! mutants of 16 elites) and scores 256 new candidates on every core;
//! `mutate_and_score_one_thread` does so in the space of a one-thread job
//! (no parallel loops). `propose` is the search of a 200-trial job: 25
//! proposals of the default `evolutionary` search, [`PROPOSAL`] candidates
//! each, chosen as `tune` chooses a batch (three generations of mutants
//! ranked by the model, fresh samples, one-step mutants of the best), the
//! task observing each proposal's candidates (a made-up objective) before
//! the next; counted by the candidates each proposal scored, lowered by it
//! or, kept in the task's cache, by an earlier one. `propose_uncached`
//! is the same job with the cache emptied before every proposal: each
//! proposal lowers everything it scores.
//!
//! With `SCALETUNE_SEARCH_WORK=N` set, the binary instead runs a fixed
//! amount of work (N batches of each kind, 32·N single proposals, and N
//! job searches with and without the cache, fixed seeds) and prints what
//! it proposed, for instruction counts that the machine's load does not
//! move: `valgrind --tool=callgrind` on the bench binary (README,
//! Performance).

use criterion::{criterion_group, Criterion, Throughput};
use scaletune::cost_model::{sample_features, CostModel, FeatureCache, Row};
use scaletune::search::evolutionary::Evolutionary;
use scaletune::search::{discard, fresh_samples, Texts};
use scaletune::tune::task::Task;
use scaletune_codegen::pipeline::initial_nest;
use scaletune_codegen::target::Target;
use scaletune_space::design::{DesignSpace, Sample, SpaceOptions};
use scaletune_space::sample::task_rng;
use scaletune_space::workload::{load, Workload};
use std::hash::{Hash, Hasher};
use std::hint::black_box;
use std::sync::Arc;

/// The allocator of the `scaletune` binary, so the figures are the binary's.
#[global_allocator]
static GLOBAL: scaletune::alloc::Allocator = scaletune::alloc::Allocator;

const BATCH: usize = 256;

/// Candidates a `propose` iteration chooses: a batch of `tune` on two cores.
const PROPOSAL: usize = 8;

/// The task, trained model and elites every measurement starts from.
struct Fixture {
    w: Arc<Workload>,
    t: Arc<Target>,
    task: Task,
    model: CostModel,
    parents: Vec<Sample>,
    /// The elites the task observed, with their objectives.
    elites: Vec<(Sample, f64)>,
}

impl Fixture {
    fn new() -> Fixture {
        let w = Arc::new(load("matmul:M=512,N=512,K=512").expect("workload"));
        let t = Arc::new(Target::load("host").expect("target"));
        let space = DesignSpace::generate(&initial_nest(&w, &t));
        let mut task = Task::new(0, Arc::clone(&w), Arc::clone(&t), 1.0, Vec::new(), space);
        // A model trained on 64 samples with a synthetic objective, and 16 of them as elites.
        let mut rng = task_rng(11, 0);
        let seeds: Vec<Sample> = (0..64).map(|_| task.space.sample(&mut rng).expect("samples")).collect();
        let rows: Vec<Row> = seeds
            .iter()
            .filter_map(|s| sample_features(&task, s))
            .map(|f| Row { task: 0, objective: 1.0 + f.iter().map(|x| f64::from(x.abs())).sum::<f64>(), features: f })
            .collect();
        let model = CostModel::train(&rows, 5).expect("trains").expect("enough rows");
        let elites: Vec<(Sample, f64)> =
            seeds.into_iter().take(16).enumerate().map(|(i, s)| (s, 1.0 + i as f64)).collect();
        for (i, (s, objective)) in elites.iter().enumerate() {
            task.observe(s, Some(*objective), i as i64);
        }
        let parents = task.elites.iter().map(|s| s.sample.clone()).collect();
        Fixture { w, t, task, model, parents, elites }
    }

    /// A task as the fixture's starts a job: its space, the 16 elites
    /// observed, nothing lowered yet.
    fn job_task(&self) -> Task {
        let mut task = Task::new(0, Arc::clone(&self.w), Arc::clone(&self.t), 1.0, Vec::new(), self.task.space.clone());
        for (i, (s, objective)) in self.elites.iter().enumerate() {
            task.observe(s, Some(*objective), i as i64);
        }
        task
    }
}

/// Proposals of a 200-trial job in batches of [`PROPOSAL`].
const JOB_PROPOSALS: usize = 25;

/// What the search of one job did.
#[derive(Default)]
struct JobSearch {
    /// Candidates the proposals scored.
    scored: usize,
    /// Of them, lowered by an earlier proposal (found in the task's cache).
    reused: usize,
    /// Digest of the texts of the chosen candidates.
    digest: u64,
}

/// The search of a 200-trial job from `task`: [`JOB_PROPOSALS`] proposals,
/// each followed by the task observing its candidates as `tune` does (the
/// objective made up from the features: the fixture's model was trained on
/// the same one). With `cached` false, the task's cache of lowered samples
/// is emptied before each proposal.
fn job_search(task: &mut Task, model: &CostModel, evolutionary: &Evolutionary, seed: u64, cached: bool) -> JobSearch {
    let mut out = JobSearch::default();
    let mut digest = std::collections::hash_map::DefaultHasher::new();
    for b in 0..JOB_PROPOSALS {
        if !cached {
            task.lowered().clear();
        }
        let (chosen, k) = evolutionary.propose_counted(task, Some(model), PROPOSAL, &mut task_rng(seed, b as u64));
        out.scored += k;
        out.reused += task.lowered().reused();
        for (i, s) in chosen.iter().enumerate() {
            s.text().hash(&mut digest);
            let Some(lowered) = task.lowered_one(s) else { continue };
            let objective = 1.0 + lowered.features.iter().map(|x| f64::from(x.abs())).sum::<f64>();
            task.observe(s, Some(objective), (100 + b * PROPOSAL + i) as i64);
            task.codes.insert(lowered.code);
        }
        discard(chosen);
    }
    out.digest = digest.finish();
    out
}

/// `n` proposals of each kind with fixed seeds; prints how many candidates
/// each made and a digest of their trace texts and ranks.
fn fixed_work(n: usize) {
    let f = Fixture::new();
    let evolutionary = Evolutionary::default();
    let (serial, serial_parents) = task_with_elites(&f.w, &f.t, SpaceOptions { parallel: false });
    let mut digest = std::collections::hash_map::DefaultHasher::new();
    let mut counts = [0usize; 3];
    for i in 0..n {
        let seed = i as u64;
        let pools = [
            fresh_samples(&f.task, BATCH, 4 * BATCH, &mut Texts::default(), &mut task_rng(12, seed)),
            evolutionary.breed(&f.task, &f.parents, BATCH, &mut Texts::default(), &mut task_rng(13, seed)),
            evolutionary.breed(&serial, &serial_parents, BATCH, &mut Texts::default(), &mut task_rng(14, seed)),
        ];
        for (k, pool) in pools.into_iter().enumerate() {
            let task = if k == 2 { &serial } else { &f.task };
            let order = f.model.rank_cached(task, &pool, &mut FeatureCache::default());
            counts[k] += pool.len();
            for s in &pool {
                // The text printed when the sample was made: `trace.to_string()`.
                s.text().hash(&mut digest);
            }
            format!("{order:?}").hash(&mut digest);
            discard(pool);
        }
    }
    println!(
        "fresh {} mutants {} one-thread mutants {} digest {:016x}",
        counts[0],
        counts[1],
        counts[2],
        digest.finish()
    );
    // Single proposals of the default search, 32 per round, apart from the
    // digest above (which stays comparable with earlier builds'), each with
    // the task's cache emptied: as the proposals of earlier builds.
    let mut digest = std::collections::hash_map::DefaultHasher::new();
    let (mut proposals, mut scored) = (0, 0);
    for i in 0..32 * n {
        f.task.lowered().clear();
        let (chosen, k) = evolutionary.propose_counted(&f.task, Some(&f.model), PROPOSAL, &mut task_rng(15, i as u64));
        proposals += 1;
        scored += k;
        for s in &chosen {
            s.text().hash(&mut digest);
        }
        discard(chosen);
    }
    println!("proposals {proposals} scored {scored} digest {:016x}", digest.finish());
    // Whole job searches, with the task's cache and without: the same
    // candidates chosen, the same scored.
    for cached in [true, false] {
        let (mut scored, mut reused, mut digest) = (0, 0, std::collections::hash_map::DefaultHasher::new());
        for i in 0..n {
            let js = job_search(&mut f.job_task(), &f.model, &evolutionary, 17 + i as u64, cached);
            scored += js.scored;
            reused += js.reused;
            js.digest.hash(&mut digest);
        }
        println!(
            "jobs {n} cached {cached} proposals {} scored {scored} reused {reused} digest {:016x}",
            n * JOB_PROPOSALS,
            digest.finish()
        );
    }
}

fn bench(c: &mut Criterion) {
    let fixture = Fixture::new();
    let Fixture { w, t, task, model, parents, .. } = &fixture;
    let mut g = c.benchmark_group("search");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.sample_size(10);
    let mut rng = task_rng(12, 0);
    g.bench_function("sample_and_score", |b| {
        b.iter(|| {
            let pool = fresh_samples(task, BATCH, 4 * BATCH, &mut Texts::default(), &mut rng);
            black_box(model.rank_cached(task, &pool, &mut FeatureCache::default()));
            discard(pool);
        })
    });
    let mut rng = task_rng(13, 0);
    let evolutionary = Evolutionary::default();
    g.bench_function("mutate_and_score", |b| {
        b.iter(|| {
            let pool = evolutionary.breed(task, parents, BATCH, &mut Texts::default(), &mut rng);
            black_box(model.rank_cached(task, &pool, &mut FeatureCache::default()));
            discard(pool);
        })
    });
    // A job's search: the rate is per candidate scored, the same job each
    // iteration (so the same count), from a task set up outside the timing.
    for (name, cached) in [("propose", true), ("propose_uncached", false)] {
        let per_job = job_search(&mut fixture.job_task(), &fixture.model, &evolutionary, 17, cached).scored;
        g.throughput(Throughput::Elements(per_job as u64));
        g.bench_function(name, |b| {
            b.iter_batched(
                || fixture.job_task(),
                |mut task| black_box(job_search(&mut task, &fixture.model, &evolutionary, 17, cached).scored),
                criterion::BatchSize::PerIteration,
            )
        });
    }
    g.throughput(Throughput::Elements(BATCH as u64));
    // The space of a one-thread job (`tune --threads 1`, QEMU): no parallel loops.
    let (serial, serial_parents) = task_with_elites(w, t, SpaceOptions { parallel: false });
    let mut rng = task_rng(14, 0);
    g.bench_function("mutate_and_score_one_thread", |b| {
        b.iter(|| {
            let pool = evolutionary.breed(&serial, &serial_parents, BATCH, &mut Texts::default(), &mut rng);
            black_box(model.rank_cached(&serial, &pool, &mut FeatureCache::default()));
            discard(pool);
        })
    });
    g.finish();
}

/// A task of `options`' space with 16 sampled elites, and those elites.
fn task_with_elites(w: &Arc<Workload>, t: &Arc<Target>, options: SpaceOptions) -> (Task, Vec<Sample>) {
    let space = DesignSpace::generate_with(&initial_nest(w, t), options);
    let mut task = Task::new(0, Arc::clone(w), Arc::clone(t), 1.0, Vec::new(), space);
    let mut rng = task_rng(11, 1);
    for i in 0..16 {
        let s = task.space.sample(&mut rng).expect("samples");
        task.observe(&s, Some(1.0 + i as f64), i);
    }
    let parents = task.elites.iter().map(|s| s.sample.clone()).collect();
    (task, parents)
}

criterion_group!(benches, bench);

fn main() {
    scaletune::alloc::configure();
    if let Some(n) = std::env::var("SCALETUNE_SEARCH_WORK").ok().and_then(|n| n.parse().ok()) {
        fixed_work(n);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}

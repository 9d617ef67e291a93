//! Throughput of the search: candidates proposed (fresh samples or mutants of the best) and scored by a trained cost model, per second, for matmul 512^3 on `host`.
//!
//! `cargo bench -p scaletune --bench search`. Criterion reports elements
//! per second: each iteration proposes (as `tune` does: fresh samples, or
//! mutants of 16 elites) and scores 256 new candidates on every core;
//! `mutate_and_score_one_thread` does so in the space of a one-thread job
//! (no parallel loops); `propose` is a whole proposal of the default
//! `evolutionary` search, [`PROPOSAL`] candidates chosen as `tune` chooses
//! a batch (three generations of mutants ranked by the model, fresh
//! samples, one-step mutants of the best), counted by the candidates it
//! lowered and scored.
//!
//! With `SCALETUNE_SEARCH_WORK=N` set, the binary instead runs a fixed
//! amount of work (N batches of each kind and 32·N whole proposals, fixed
//! seeds) and prints what it proposed, for instruction counts that the machine's load does not
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
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
        for (i, s) in seeds.iter().take(16).enumerate() {
            task.observe(s, Some(1.0 + i as f64), i as i64);
        }
        let parents = task.elites.iter().map(|s| s.sample.clone()).collect();
        Fixture { w, t, task, model, parents }
    }
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
    // Whole proposals of the default search, 32 per round, apart from the
    // digest above (which stays comparable with earlier builds').
    let mut digest = std::collections::hash_map::DefaultHasher::new();
    let (mut proposals, mut scored) = (0, 0);
    for i in 0..32 * n {
        let (chosen, k) = evolutionary.propose_counted(&f.task, Some(&f.model), PROPOSAL, &mut task_rng(15, i as u64));
        proposals += 1;
        scored += k;
        for s in &chosen {
            s.text().hash(&mut digest);
        }
        discard(chosen);
    }
    println!("proposals {proposals} scored {scored} digest {:016x}", digest.finish());
}

fn bench(c: &mut Criterion) {
    let Fixture { w, t, task, model, parents } = Fixture::new();
    let mut g = c.benchmark_group("search");
    g.throughput(Throughput::Elements(BATCH as u64));
    g.sample_size(10);
    let mut rng = task_rng(12, 0);
    g.bench_function("sample_and_score", |b| {
        b.iter(|| {
            let pool = fresh_samples(&task, BATCH, 4 * BATCH, &mut Texts::default(), &mut rng);
            black_box(model.rank_cached(&task, &pool, &mut FeatureCache::default()));
            discard(pool);
        })
    });
    let mut rng = task_rng(13, 0);
    let evolutionary = Evolutionary::default();
    g.bench_function("mutate_and_score", |b| {
        b.iter(|| {
            let pool = evolutionary.breed(&task, &parents, BATCH, &mut Texts::default(), &mut rng);
            black_box(model.rank_cached(&task, &pool, &mut FeatureCache::default()));
            discard(pool);
        })
    });
    // Whole proposals: the rate is per candidate scored, the mean of a few
    // proposals' counts (they vary by a few per cent).
    let per_proposal = (0..8)
        .map(|i| {
            let (chosen, k) = evolutionary.propose_counted(&task, Some(&model), PROPOSAL, &mut task_rng(16, i));
            discard(chosen);
            k as u64
        })
        .sum::<u64>()
        / 8;
    g.throughput(Throughput::Elements(per_proposal));
    let mut rng = task_rng(15, 0);
    g.bench_function("propose", |b| {
        b.iter(|| discard(black_box(evolutionary.propose_counted(&task, Some(&model), PROPOSAL, &mut rng).0)))
    });
    g.throughput(Throughput::Elements(BATCH as u64));
    // The space of a one-thread job (`tune --threads 1`, QEMU): no parallel loops.
    let (serial, serial_parents) = task_with_elites(&w, &t, SpaceOptions { parallel: false });
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

//! Throughput of the schedule space: sampling a candidate and lowering it to
//! the vector program (matmul 512x512x512 on neoverse-v1).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use scaletune_codegen::lower::{lower, lower_unoptimized};
use scaletune_codegen::pipeline::initial_nest;
use scaletune_codegen::target::Target;
use scaletune_codegen::vprog::optimize;
use scaletune_space::design::DesignSpace;
use scaletune_space::sample::task_rng;
use scaletune_space::workload::load;
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let w = load("matmul:M=512,N=512,K=512").expect("workload");
    let t = Target::load("neoverse-v1").expect("target");
    let nest = initial_nest(&w, &t);
    let space = DesignSpace::generate(&nest);
    let mut g = c.benchmark_group("schedule_space");
    g.throughput(Throughput::Elements(1));
    g.bench_function("generate_design_space", |b| b.iter(|| black_box(DesignSpace::generate(black_box(&nest)))));
    let mut rng = task_rng(1, 0);
    g.bench_function("sample", |b| b.iter(|| black_box(space.sample(&mut rng).expect("samples"))));
    let mut rng = task_rng(2, 0);
    g.bench_function("sample_and_lower", |b| {
        b.iter(|| {
            let s = space.sample(&mut rng).expect("samples");
            black_box(lower(&s.nest, "k").expect("lowers"))
        })
    });
    // The stages of lowering, over a fixed set of samples.
    let mut rng = task_rng(3, 0);
    let samples: Vec<_> = (0..64).map(|_| space.sample(&mut rng).expect("samples")).collect();
    let mut i = 0;
    g.bench_function("lower_unoptimized", |b| {
        b.iter(|| {
            i = (i + 1) % samples.len();
            black_box(lower_unoptimized(&samples[i].nest, "k").expect("lowers"))
        })
    });
    let progs: Vec<_> = samples.iter().map(|s| lower_unoptimized(&s.nest, "k").expect("lowers")).collect();
    g.bench_function("optimize", |b| {
        b.iter(|| {
            i = (i + 1) % progs.len();
            let mut p = progs[i].clone();
            optimize(&mut p);
            black_box(p)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

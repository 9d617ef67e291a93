//! Validation of the emulated metrics: Kendall rank correlation between QEMU-derived figures and native time on this machine.
//!
//! For each workload, draws schedules from the design space the rules build
//! for this machine (the host target restricted to what QEMU 7.2 emulates,
//! see `scaletune_measure::emulation::emulable_host_target`), builds each
//! once, times it natively with the timing protocol (median of the repeats)
//! and runs it under `qemu-x86_64 -cpu max` with the instruction-count
//! plugin and llvm-mca for this CPU. Prints, per workload and over all
//! schedules, Kendall's tau-b between native time and (a) estimated cycles,
//! (b) the kernel's instruction count, (c) the resource-bound estimate
//! (executions x Block RThroughput), and how the best schedule by each
//! figure fares natively.
//!
//! ```sh
//! bash bench/emulated_vs_native.sh [--samples 30] [--seed 1] [--repeat 9] [--csv out/emulated_vs_native.csv] [WORKLOAD ...]
//! ```

use scaletune_codegen::pipeline::initial_nest;
use scaletune_codegen::target::Target;
use scaletune_measure::emulation::emulable_host_target;
use scaletune_measure::stats::kendall_tau_b;
use scaletune_measure::{
    ArtifactCache, Builder, Candidate, LlvmBuilder, NativeRunner, QemuRunner, Status, TimingProtocol,
};
use scaletune_space::design::DesignSpace;
use scaletune_space::ir::Nest;
use scaletune_space::sample::task_rng;
use scaletune_space::trace::Trace;
use scaletune_space::workload::load;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

const DEFAULT_WORKLOADS: &[&str] = &["matmul:M=256,N=256,K=256", "conv2d_nhwc:H=32,WI=32,C=32,F=64"];

struct Args {
    samples: usize,
    seed: u64,
    repeat: u32,
    csv: Option<String>,
    workloads: Vec<String>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args { samples: 30, seed: 1, repeat: 9, csv: None, workloads: Vec::new() };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--samples" => a.samples = value("--samples")?.parse().map_err(|e| format!("--samples: {e}"))?,
            "--seed" => a.seed = value("--seed")?.parse().map_err(|e| format!("--seed: {e}"))?,
            "--repeat" => a.repeat = value("--repeat")?.parse().map_err(|e| format!("--repeat: {e}"))?,
            "--csv" => a.csv = Some(value("--csv")?),
            s if s.starts_with("--") => return Err(format!("unknown option {s}")),
            w => a.workloads.push(w.to_string()),
        }
    }
    if a.workloads.is_empty() {
        a.workloads = DEFAULT_WORKLOADS.iter().map(|s| s.to_string()).collect();
    }
    Ok(a)
}

/// One measured schedule.
struct Row {
    workload: String,
    native_s: f64,
    native_min_s: f64,
    spread: f64,
    instructions: f64,
    est_cycles: f64,
    rthroughput_cycles: f64,
}

/// Draws up to `n` distinct schedules of the workload's design space.
fn sample_traces(nest: &Nest, n: usize, seed: u64, stream: u64) -> Vec<Trace> {
    let space = DesignSpace::generate(nest);
    let mut rng = task_rng(seed, stream);
    let (mut seen, mut out) = (HashSet::new(), Vec::new());
    for _ in 0..n * 20 {
        if out.len() == n {
            break;
        }
        if let Ok(s) = space.sample(&mut rng) {
            if seen.insert(s.trace.to_json()) {
                out.push((*s.trace).clone());
            }
        }
    }
    out
}

/// Tau-b of each figure against native time; with `rank_best`, where the best schedule by each figure ranks natively.
fn summarize(label: &str, rows: &[&Row], rank_best: bool, report: &mut String) {
    let time: Vec<f64> = rows.iter().map(|r| r.native_s).collect();
    let min_time: Vec<f64> = rows.iter().map(|r| r.native_min_s).collect();
    let figure = |f: fn(&Row) -> f64| -> Vec<f64> { rows.iter().map(|r| f(r)).collect() };
    let best_native = time.iter().copied().fold(f64::INFINITY, f64::min);
    let _ = writeln!(report, "{label} ({} schedules)", rows.len());
    let _ =
        writeln!(report, "  {:<22} {:>15} {:>12}   best by the figure, natively", "figure", "tau-b (median)", "(min)");
    for (name, values) in [
        ("estimated cycles", figure(|r| r.est_cycles)),
        ("instruction count", figure(|r| r.instructions)),
        ("resource-bound cycles", figure(|r| r.rthroughput_cycles)),
    ] {
        let tau = kendall_tau_b(&values, &time);
        let tau_min = kendall_tau_b(&values, &min_time);
        let best = (0..values.len()).min_by(|&a, &b| values[a].total_cmp(&values[b]));
        let (rank, slowdown) = match best {
            Some(i) => (1 + time.iter().filter(|&&t| t < time[i]).count(), time[i] / best_native),
            None => (0, f64::NAN),
        };
        let best = if rank_best {
            format!("rank {rank} of {} ({slowdown:.2}x the fastest)", rows.len())
        } else {
            "(schedules of different workloads)".to_string()
        };
        let _ = writeln!(report, "  {name:<22} {tau:>+15.3} {tau_min:>+12.3}   {best}");
    }
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("emulated_vs_native: {e}");
            std::process::exit(2);
        }
    };
    // The QEMU runner runs kernels on one pool thread; so do the native
    // runs (inherited by every child), or parallel schedules would be
    // compared at different thread counts.
    std::env::set_var("SCALETUNE_NUM_THREADS", "1");
    let host = Target::load("host").unwrap_or_else(|e| panic!("host target: {e}"));
    let target = Arc::new(emulable_host_target(&host));
    let vl = target.default_vl_bits[0];
    let builder = match ArtifactCache::new(ArtifactCache::default_dir()) {
        Ok(cache) => LlvmBuilder::new().with_cache(cache),
        Err(_) => LlvmBuilder::new(),
    };
    let protocol = TimingProtocol {
        warmup: 2,
        number: 1,
        repeat: args.repeat,
        min_repeat_ms: 20,
        flush_cache: false,
        pin_core: None,
        threads: Some(1),
    };
    let native = NativeRunner::new(protocol).with_timeout(Duration::from_secs(120));
    let qemu = QemuRunner::emulating_host().with_timeout(Duration::from_secs(600));
    let mca_cpu = target.mca_cpu.clone().unwrap_or_default();
    println!(
        "emulated vs native on {} ({}, {vl}-bit vectors; qemu-x86_64 -cpu max; llvm-mca -mcpu={mca_cpu}; one pool thread)",
        target.name, target.cpu
    );
    let start = Instant::now();
    let mut rows: Vec<Row> = Vec::new();
    let mut csv = String::from(
        "workload,trace_idx,native_median_s,native_min_s,native_spread,instructions,est_cycles,rthroughput_cycles\n",
    );
    for (w_idx, reference) in args.workloads.iter().enumerate() {
        let w = Arc::new(load(reference).unwrap_or_else(|e| panic!("{reference}: {e}")));
        let nest = initial_nest(&w, &target);
        let traces = sample_traces(&nest, args.samples, args.seed, w_idx as u64);
        println!("{reference}: {} distinct schedules drawn", traces.len());
        for (i, trace) in traces.into_iter().enumerate() {
            let c = Candidate::new(i as u64, Arc::clone(&w), Arc::clone(&target), trace)
                .with_timeout(Duration::from_secs(600));
            let built = match builder.build(&c) {
                Ok(b) => b,
                Err(e) => {
                    println!("  #{i:<3} build error: {e}");
                    continue;
                }
            };
            let n = native.measure(&built, vl);
            let (q, profile) = qemu.profile(&built, vl);
            if n.status != Status::Ok || q.status != Status::Ok {
                println!(
                    "  #{i:<3} skipped: native {} {} / qemu {} {}",
                    n.status.name(),
                    n.message,
                    q.status.name(),
                    q.message
                );
                continue;
            }
            let (Some(timing), Some(est)) = (n.timing.as_ref(), profile.as_ref().and_then(|p| p.estimate.as_ref()))
            else {
                let note = q.emulated.as_ref().and_then(|e| e.est_cycles_note.clone()).unwrap_or_default();
                println!("  #{i:<3} skipped: no native timing or no estimate ({note})");
                continue;
            };
            let counts = &profile.as_ref().map(|p| p.counts.kernel_instructions).unwrap_or(0);
            let row = Row {
                workload: reference.clone(),
                native_s: timing.median_s,
                native_min_s: timing.repeats_s.iter().copied().fold(f64::INFINITY, f64::min),
                spread: timing.spread,
                instructions: *counts as f64,
                est_cycles: est.cycles,
                rthroughput_cycles: est.rthroughput_cycles,
            };
            println!(
                "  #{i:<3} native {:>10.1} us (spread {:>5.1}%)  instructions {:>11}  est. cycles {:>12.0}",
                row.native_s * 1e6,
                row.spread * 100.0,
                counts,
                row.est_cycles
            );
            let _ = writeln!(
                csv,
                "\"{}\",{i},{:e},{:e},{:.4},{},{:.1},{:.1}",
                row.workload,
                row.native_s,
                row.native_min_s,
                row.spread,
                counts,
                row.est_cycles,
                row.rthroughput_cycles
            );
            rows.push(row);
        }
    }
    let mut report = String::new();
    let _ = writeln!(report, "\nKendall rank correlation (tau-b) with the native median time:");
    for reference in &args.workloads {
        let subset: Vec<&Row> = rows.iter().filter(|r| &r.workload == reference).collect();
        summarize(reference, &subset, true, &mut report);
    }
    summarize("all workloads", &rows.iter().collect::<Vec<_>>(), false, &mut report);
    let spreads: Vec<f64> = rows.iter().map(|r| r.spread).collect();
    let median_spread = {
        let mut s = spreads.clone();
        s.sort_by(|a, b| a.total_cmp(b));
        s.get(s.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let _ = writeln!(
        report,
        "native timing: median spread (max-min)/median over repeats {:.1}%; took {:.0} s",
        median_spread * 100.0,
        start.elapsed().as_secs_f64()
    );
    print!("{report}");
    if let Some(path) = &args.csv {
        if let Some(dir) = std::path::Path::new(path).parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        match std::fs::write(path, csv) {
            Ok(()) => println!("wrote {path}"),
            Err(e) => eprintln!("cannot write {path}: {e}"),
        }
    }
}

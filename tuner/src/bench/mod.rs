//! `scaletune bench`: tuned kernels against OpenBLAS, clang's auto-vectorized naive loops and the measured FMA peak, in one run.
//!
//! ```text
//! FMA-peak probe (c/fma_peak.c) ─┐
//! per host shape:   tune into the bench DB (tuned::tune) ─▶ tuned best, default schedule,
//!                   clang -O3 -march=native naive loop, OpenBLAS (matmul) ─▶ one native runner, interleaved rounds,
//!                   each round followed by the FMA probe (a kernel's share of the peak is paired by round)
//! per QEMU shape:   tune on neoverse-v1 at VL 128/256/512 ─▶ tuned best, default, clang -O3 -mcpu naive ─▶ QEMU runner
//! FMA-peak probe again ─┘          ─▶ tables (stdout) + bench.json
//! ```
//!
//! Baselines are foreign kernels ([`baseline`]): C sources implementing the
//! workload's kernel ABI, compiled by clang-19 and linked into the same
//! harness as tuned kernels, so one driver, one reference check and one
//! runner time or count them all.

pub mod baseline;
pub mod contenders;
pub mod openblas;
pub mod peak;
pub mod record;
pub mod report;
pub mod search;
pub mod tuned;

use crate::commands::measure::RunnerKind;
use crate::pipeline::load_workload_to_run as load_workload;
use crate::tune::objective::ObjectiveKind;
use baseline::BaselineKind;
use contenders::{build_baseline, build_trace, Contender, Kernel};
use report::{BenchReport, EmulatedRow, HostRow};
use scaletune_database::{Database, DbError};
use scaletune_measure::emulation::CycleEstimator;
use scaletune_measure::{ArtifactCache, HarnessError, LlvmBuilder, QemuRunner, Status, TimingProtocol};
use scaletune_space::trace::Trace;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;
use tokio::runtime::Handle;

/// Why the bench could not run (a kernel that fails its check is a row, not an error).
#[derive(Debug, Error)]
pub enum BenchError {
    /// No baseline of this kind exists for the workload.
    #[error(
        "no {kind} baseline for workload `{workload}` (baselines: matmul, conv2d_nhwc, sum_cos; OpenBLAS: matmul)"
    )]
    NoBaseline {
        /// The baseline's name.
        kind: &'static str,
        /// The workload's name.
        workload: String,
    },
    /// The request cannot be benchmarked as asked.
    #[error("{0}")]
    Unsupported(String),
    /// A compiler or the probe failed.
    #[error("`{command}` failed: {message}")]
    Tool {
        /// The command line.
        command: String,
        /// Its status and stderr.
        message: String,
    },
    /// The FMA-peak probe printed something unexpected.
    #[error("FMA-peak probe: {0}")]
    Probe(String),
    /// Linking a baseline's harness failed.
    #[error(transparent)]
    Harness(#[from] HarnessError),
    /// The tuning job of a shape failed.
    #[error("tuning {workload}: {message}")]
    Tune {
        /// The workload reference.
        workload: String,
        /// What went wrong.
        message: String,
    },
    /// The bench database.
    #[error(transparent)]
    Database(#[from] DbError),
    /// A file could not be read or written.
    #[error("{0}")]
    Io(String),
}

/// The host shapes of a full run.
pub const HOST_SHAPES: &[&str] =
    &["matmul:M=512,N=512,K=512", "matmul:M=1024,N=1024,K=1024", "matmul:M=127,N=255,K=63", "conv2d_nhwc", "sum_cos"];

/// The emulated shapes of a full run (sum_cos is left out: clang's loop
/// calls libm's `cosf`, whose instructions the plugin does not count).
pub const QEMU_SHAPES: &[&str] = &["matmul:M=127,N=255,K=63", "matmul:M=128,N=128,K=128", "conv2d_nhwc"];

/// The host shapes of `--quick`.
pub const QUICK_HOST_SHAPES: &[&str] = &["matmul:M=64,N=48,K=32", "conv2d_nhwc:H=8,WI=8,C=8,F=16", "sum_cos:N=256"];

/// The emulated shapes of `--quick`.
pub const QUICK_QEMU_SHAPES: &[&str] = &["matmul:M=16,N=24,K=8"];

/// The emulated target and its vector lengths.
pub const QEMU_TARGET: &str = "neoverse-v1";

/// Vector lengths of the emulated comparison.
pub const QEMU_VLS: &[u32] = &[128, 256, 512];

/// What to run.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// Trial budget per host shape (the database is topped up to it).
    pub trials: usize,
    /// Trial budget per emulated shape.
    pub qemu_trials: usize,
    /// The bench database.
    pub db: PathBuf,
    /// Host shapes (workload references).
    pub host_shapes: Vec<String>,
    /// Emulated shapes (on [`QEMU_TARGET`] at [`QEMU_VLS`]).
    pub qemu_shapes: Vec<String>,
    /// Interleaved timing rounds per host shape.
    pub rounds: u32,
    /// The timing protocol of every native measurement.
    pub protocol: TimingProtocol,
    /// Iterations of one repeat of the FMA probe.
    pub peak_iterations: u64,
    /// Timeout of one run.
    pub timeout: Duration,
}

impl BenchOptions {
    /// The full run, or the `--quick` one (small shapes, few trials, one round).
    pub fn new(quick: bool, db: PathBuf) -> BenchOptions {
        let shapes = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
        if quick {
            return BenchOptions {
                trials: 6,
                qemu_trials: 3,
                db,
                host_shapes: shapes(QUICK_HOST_SHAPES),
                qemu_shapes: shapes(QUICK_QEMU_SHAPES),
                rounds: 1,
                protocol: TimingProtocol {
                    warmup: 1,
                    repeat: 3,
                    min_repeat_ms: 2,
                    threads: Some(1),
                    ..TimingProtocol::default()
                },
                peak_iterations: 2_000_000,
                timeout: Duration::from_secs(60),
            };
        }
        BenchOptions {
            trials: 200,
            qemu_trials: 64,
            db,
            host_shapes: shapes(HOST_SHAPES),
            qemu_shapes: shapes(QEMU_SHAPES),
            rounds: 3,
            protocol: TimingProtocol {
                warmup: 1,
                repeat: 5,
                min_repeat_ms: 50,
                threads: Some(1),
                ..TimingProtocol::default()
            },
            peak_iterations: 20_000_000,
            timeout: Duration::from_secs(300),
        }
    }
}

/// Repeats of one FMA-probe run (the fastest counts).
const PEAK_REPEATS: u32 = 5;

/// Runs the bench: the FMA probe, every host shape (each timing round
/// followed by the probe), every emulated shape, the probe again.
pub fn run(opts: &BenchOptions, rt: &Handle) -> Result<BenchReport, BenchError> {
    if let Some(dir) = opts.db.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| BenchError::Io(format!("creating {}: {e}", dir.display())))?;
    }
    // OpenBLAS's own threads: one, whatever the wrapper's first call does.
    std::env::set_var("OPENBLAS_NUM_THREADS", "1");
    // Its kernels: not the pre-AVX fallback a VM's generic CPU model gets.
    let openblas = if opts.host_shapes.is_empty() {
        None
    } else {
        match openblas::choose(&std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default()) {
            Ok(core) => {
                eprintln!("bench: {}", core.describe());
                Some(core)
            }
            Err(e) => {
                eprintln!("bench: which OpenBLAS kernels run is unknown: {e}");
                None
            }
        }
    };
    let db = Database::open(&opts.db)?;
    let probe = peak::Probe::build()?;
    let mut peak_runs = vec![probe.run(opts.peak_iterations, PEAK_REPEATS)?];
    let cache = ArtifactCache::new(ArtifactCache::default_dir()).map_err(|e| BenchError::Io(e.to_string()))?;
    let builder = LlvmBuilder::new().with_cache(cache);
    let mut host = Vec::new();
    for shape in &opts.host_shapes {
        eprintln!("bench: {shape} on host");
        let (rows, probes) = host_shape(&db, &builder, &probe, shape, opts, rt)?;
        host.extend(rows);
        peak_runs.extend(probes);
    }
    let mut emulated = Vec::new();
    for shape in &opts.qemu_shapes {
        eprintln!("bench: {shape} on {QEMU_TARGET} under QEMU");
        emulated.extend(qemu_shape(&db, &builder, shape, opts, rt)?);
    }
    peak_runs.push(probe.run(opts.peak_iterations, PEAK_REPEATS)?);
    let peak_gflops = peak_runs.iter().map(|p| p.gflops).fold(0.0, f64::max);
    let l1_fed_gflops = peak_runs.iter().map(|p| p.l1_gflops).fold(0.0, f64::max);
    let l1_fed_share = peak::l1_fed_share(&peak_runs);
    Ok(BenchReport {
        cpu: peak::cpu_info(),
        peak_runs,
        peak_gflops,
        l1_fed_gflops,
        l1_fed_share,
        openblas,
        trials: opts.trials,
        emulated_target: format!(
            "{QEMU_TARGET} at VL {}",
            QEMU_VLS.iter().map(u32::to_string).collect::<Vec<_>>().join("/")
        ),
        host,
        emulated,
    })
}

/// The contenders of one shape: tuned (if any candidate passed), default, and the baselines that exist.
fn contenders(
    builder: &LlvmBuilder,
    workload: &Arc<scaletune_space::workload::Workload>,
    target: &Arc<scaletune_codegen::target::Target>,
    best: Option<Trace>,
    vls: &[u32],
    timeout: Duration,
) -> Result<Vec<Contender>, BenchError> {
    let mut out = Vec::new();
    let missing = || Contender {
        kernel: Kernel::Tuned,
        builds: Err("the tuning job found no passing candidate".into()),
        code: None,
    };
    out.push(match best {
        Some(t) => build_trace(builder, Kernel::Tuned, workload, target, t, vls, timeout),
        None => missing(),
    });
    out.push(build_trace(builder, Kernel::Default, workload, target, Trace::default(), vls, timeout));
    for kind in [BaselineKind::ClangNaive, BaselineKind::OpenBlas] {
        if baseline::available(kind, workload, target) {
            out.push(build_baseline(kind, workload, target, vls, timeout)?);
        }
    }
    Ok(out)
}

/// This user's machine lock held exclusively (see
/// [`crate::commands::machine_lock`]), for a phase of timed rounds; `None`
/// when turned off or unusable (with a warning).
pub fn timing_alone() -> Option<scaletune_measure::farm::ExclusiveHold> {
    let lock = crate::commands::machine_lock()?;
    lock.exclusive_blocking().map_err(|e| tracing::warn!("{e}; timing without keeping other processes out")).ok()
}

/// One host shape: tune it, then time every contender in interleaved rounds,
/// each round ending with the FMA probe. Returns the rows and the round's probes.
fn host_shape(
    db: &Database,
    builder: &LlvmBuilder,
    probe: &peak::Probe,
    shape: &str,
    opts: &BenchOptions,
    rt: &Handle,
) -> Result<(Vec<HostRow>, Vec<peak::Peak>), BenchError> {
    let workload = Arc::new(load_workload(shape).map_err(|e| BenchError::Unsupported(e.to_string()))?);
    let (tuned, target) = tuned::tune(db, shape, "host", RunnerKind::Native, &[], opts.trials, rt)?;
    let target = Arc::new(target);
    let vl = target.default_vl_bits.first().copied().unwrap_or(128);
    let cs = contenders(builder, &workload, &target, tuned.best, &[vl], opts.timeout)?;
    let mut rounds: Vec<Vec<_>> = cs.iter().map(|_| Vec::new()).collect();
    let mut probes = Vec::new();
    // Other scaletune processes build nothing while the rounds are timed.
    let _alone = timing_alone();
    for _ in 0..opts.rounds.max(1) {
        let round = contenders::time_interleaved(&cs, vl, &opts.protocol, 1);
        for (all, mut one) in rounds.iter_mut().zip(round) {
            all.append(&mut one);
        }
        probes.push(probe.run(opts.peak_iterations, PEAK_REPEATS)?);
    }
    let round_peaks: Vec<f64> = probes.iter().map(|p| p.gflops).collect();
    let times: Vec<Option<f64>> = rounds.iter().map(|r| contenders::median_time(r)).collect();
    let time_of = |k: Kernel| cs.iter().position(|c| c.kernel == k).and_then(|i| times[i]);
    let openblas = time_of(Kernel::Baseline(BaselineKind::OpenBlas));
    let clang = time_of(Kernel::Baseline(BaselineKind::ClangNaive));
    let flops = workload.flops();
    let runner = tuned::job_config(shape, "host", RunnerKind::Native, &[], opts.trials).runner_label();
    let metrics: Vec<serde_json::Value> = times.iter().map(|t| serde_json::json!({ "median_s": t })).collect();
    let figures: Vec<record::Figure<'_>> = cs
        .iter()
        .zip(&times)
        .zip(&metrics)
        .map(|((c, &objective), metrics)| record::Figure { kernel: c.kernel, objective, metrics })
        .collect();
    record::record(db, &workload, &target, &runner, &[vl], ObjectiveKind::Time.name(), &figures)?;
    let rows = cs
        .iter()
        .zip(rounds.iter().zip(&times))
        .map(|(c, (ms, &time_s))| {
            let failed = ms.iter().find(|m| m.status != Status::Ok);
            HostRow {
                shape: shape.to_string(),
                kernel: c.kernel,
                code: c.code.clone(),
                status: failed.map_or("ok", |m| m.status.name()).to_string(),
                message: failed.map(|m| m.message.clone()).unwrap_or_default(),
                time_s,
                gflops: time_s.zip(flops).map(|(t, f)| f / t / 1e9),
                vs_openblas: time_s.zip(openblas).map(|(t, o)| o / t),
                vs_clang: time_s.zip(clang).map(|(t, n)| n / t),
                of_peak: flops.and_then(|f| contenders::median_of_peak(ms, &round_peaks, f)),
            }
        })
        .collect();
    Ok((rows, probes))
}

fn qemu_shape(
    db: &Database,
    builder: &LlvmBuilder,
    shape: &str,
    opts: &BenchOptions,
    rt: &Handle,
) -> Result<Vec<EmulatedRow>, BenchError> {
    let workload = Arc::new(load_workload(shape).map_err(|e| BenchError::Unsupported(e.to_string()))?);
    let (tuned, target) = tuned::tune(db, shape, QEMU_TARGET, RunnerKind::Qemu, QEMU_VLS, opts.qemu_trials, rt)?;
    let target = Arc::new(target);
    let cs = contenders(builder, &workload, &target, tuned.best, QEMU_VLS, opts.timeout)?;
    let estimator = Arc::new(CycleEstimator::new().with_disk_cache(CycleEstimator::default_dir()));
    let runner = QemuRunner::new().with_estimator(estimator).with_timeout(opts.timeout);
    let counted = contenders::count_emulated(&cs, QEMU_VLS, &runner);
    let clang = cs.iter().position(|c| c.kernel == Kernel::Baseline(BaselineKind::ClangNaive));
    let cycles_of = |ms: &[scaletune_measure::VlMeasurement]| -> Vec<Option<f64>> {
        ms.iter().map(|m| m.emulated.as_ref().and_then(|e| e.est_cycles).filter(|_| m.status == Status::Ok)).collect()
    };
    let metrics: Vec<serde_json::Value> =
        counted.iter().map(|ms| serde_json::json!({ "vl_bits": QEMU_VLS, "est_cycles": cycles_of(ms) })).collect();
    let figures: Vec<record::Figure<'_>> = cs
        .iter()
        .zip(&counted)
        .zip(&metrics)
        .map(|((c, ms), metrics)| record::Figure {
            kernel: c.kernel,
            objective: record::geomean(&cycles_of(ms)),
            metrics,
        })
        .collect();
    let runner = RunnerKind::Qemu.name();
    record::record(db, &workload, &target, runner, QEMU_VLS, ObjectiveKind::Cycles.name(), &figures)?;
    let mut rows = Vec::new();
    for (c, ms) in cs.iter().zip(&counted) {
        for (k, m) in ms.iter().enumerate() {
            let ok = m.status == Status::Ok;
            let cycles = m.emulated.as_ref().and_then(|e| e.est_cycles).filter(|_| ok);
            let insns = m.emulated.as_ref().map(|e| e.instructions).filter(|_| ok);
            let clang_m = clang.map(|i| &counted[i][k]).filter(|m| m.status == Status::Ok);
            let clang_cycles = clang_m.and_then(|m| m.emulated.as_ref()).and_then(|e| e.est_cycles);
            let clang_insns = clang_m.and_then(|m| m.emulated.as_ref()).map(|e| e.instructions as f64);
            rows.push(EmulatedRow {
                shape: shape.to_string(),
                kernel: c.kernel,
                code: c.code.clone(),
                vl_bits: m.vl_bits,
                status: m.status.name().to_string(),
                message: m.message.clone(),
                est_cycles: cycles,
                instructions: insns,
                clang_cycles_ratio: cycles.zip(clang_cycles).map(|(c, n)| n / c),
                clang_instructions_ratio: insns.zip(clang_insns).map(|(i, n)| n / i as f64),
            });
        }
    }
    Ok(rows)
}

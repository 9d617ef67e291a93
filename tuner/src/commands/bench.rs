//! `scaletune bench`: tuned kernels against OpenBLAS, clang's auto-vectorized naive loops and the FMA peak; prints the tables and writes `bench.json`.

use crate::bench::{self, BenchOptions};
use crate::commands::measure::RunnerKind;
use crate::search::StrategyKind;
use anyhow::{bail, Context};
use std::path::PathBuf;
use tokio::runtime::Handle;

/// Options of `bench`.
#[derive(Clone, Debug, clap::Args)]
pub struct BenchArgs {
    /// Small shapes, a few trials, one timing round: about a minute.
    #[arg(long)]
    pub quick: bool,
    /// Trials per host shape; the bench database is topped up to this many
    /// candidates per shape [default: 200, 6 with --quick].
    #[arg(long)]
    pub trials: Option<usize>,
    /// Trials per emulated shape (neoverse-v1 under QEMU) [default: 64, 3 with --quick].
    #[arg(long)]
    pub qemu_trials: Option<usize>,
    /// The bench's tuning database, reused across runs [default: OUT/scaletune.db].
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Where bench.json goes.
    #[arg(long, default_value = "out/bench")]
    pub out: PathBuf,
    /// Host shapes instead of the default set (workload references separated
    /// by spaces, e.g. `--shapes matmul:M=64,N=64,K=64 sum_cos`); `none` skips the host.
    #[arg(long, num_args = 1..)]
    pub shapes: Vec<String>,
    /// Emulated shapes instead of the default set (as `--shapes`); `none` skips QEMU.
    #[arg(long, num_args = 1..)]
    pub qemu_shapes: Vec<String>,
    /// Interleaved timing rounds per host shape, and of the incumbents'
    /// re-measurement of `--search-efficiency` [default: 3, 1 with --quick].
    #[arg(long)]
    pub rounds: Option<u32>,
    /// Instead of the comparison: search efficiency of `random` and
    /// `evolutionary` from cold starts (`--trials` each, `--seeds` runs per
    /// strategy, the first `--shapes` workload, default matmul 512^3, on
    /// `--target`, one thread), databases in OUT/search/; on `host` every
    /// run's incumbents are then re-measured together and the curves use
    /// those times.
    #[arg(long)]
    pub search_efficiency: bool,
    /// Runs per strategy of `--search-efficiency`.
    #[arg(long, default_value_t = 3)]
    pub seeds: u64,
    /// The first seed of `--search-efficiency`: runs use seeds
    /// `first-seed .. first-seed + seeds` (e.g. `--first-seed 4 --seeds 3`
    /// adds seeds 4 to 6 to an earlier run's 1 to 3).
    #[arg(long, default_value_t = 1, requires = "search_efficiency")]
    pub first_seed: u64,
    /// The strategies `--search-efficiency` runs (comma-separated). Running
    /// one alone compares it with nothing; its table still gives its trials
    /// to 95% of the best of the runs it made.
    #[arg(long, value_enum, value_delimiter = ',', default_values = ["random", "evolutionary"], requires = "search_efficiency")]
    pub strategies: Vec<StrategyKind>,
    /// The target of `--search-efficiency`. A target the host cannot run
    /// (e.g. `neoverse-v1`) runs under QEMU with estimated cycles as the
    /// objective: the same candidate always gets the same figure, so the
    /// curves are free of timing noise and need no re-measuring.
    #[arg(long, default_value = "host", requires = "search_efficiency")]
    pub target: String,
    /// Vector lengths in bits of `--search-efficiency` under QEMU
    /// (comma-separated; the objective is the geometric mean over them)
    /// [default: the target's].
    #[arg(long, value_delimiter = ',', requires = "search_efficiency")]
    pub vl: Vec<u32>,
}

/// Runs the bench, prints its tables and writes `OUT/bench.json`; the exit
/// status is 1 if some kernel failed its check (the tables say which).
pub fn run(args: &BenchArgs, rt: &Handle) -> anyhow::Result<u8> {
    let _lock = lock_out_dir(&args.out)?;
    if args.search_efficiency {
        return search_efficiency(args, rt);
    }
    let db = args.db.clone().unwrap_or_else(|| args.out.join("scaletune.db"));
    let mut opts = BenchOptions::new(args.quick, db);
    if let Some(t) = args.trials {
        opts.trials = t;
    }
    if let Some(t) = args.qemu_trials {
        opts.qemu_trials = t;
    }
    if let Some(r) = args.rounds {
        opts.rounds = r;
    }
    if opts.trials == 0 || opts.rounds == 0 {
        bail!("--trials and --rounds must be at least 1");
    }
    if !args.shapes.is_empty() {
        opts.host_shapes = args.shapes.iter().filter(|s| *s != "none").cloned().collect();
    }
    if !args.qemu_shapes.is_empty() {
        opts.qemu_shapes = args.qemu_shapes.iter().filter(|s| *s != "none").cloned().collect();
    }
    // Every shape is loaded (and held to --max-bytes) before anything runs.
    for shape in opts.host_shapes.iter().chain(&opts.qemu_shapes) {
        crate::pipeline::load_workload_to_run(shape)?;
    }
    std::fs::create_dir_all(&args.out).with_context(|| format!("cannot create {}", args.out.display()))?;
    let report = bench::run(&opts, rt)?;
    print!("{}", bench::report::host_table(&report));
    if !report.emulated.is_empty() {
        println!();
        print!("{}", bench::report::emulated_table(&report));
    }
    let failures = bench::report::failures(&report);
    print!("{failures}");
    let json = args.out.join("bench.json");
    std::fs::write(&json, serde_json::to_string_pretty(&report)? + "\n")
        .with_context(|| format!("cannot write {}", json.display()))?;
    println!("wrote {}", json.display());
    Ok(u8::from(!failures.is_empty()))
}

/// The name of the lock file a running bench holds in its output directory.
pub const LOCK_FILE: &str = ".scaletune-bench.lock";

/// Takes `OUT/.scaletune-bench.lock` for the whole run: two benches in one
/// output directory would time each other's kernels and remove each
/// other's search-efficiency databases. The lock goes with the process
/// (also on `kill -9`); the file stays.
fn lock_out_dir(out: &std::path::Path) -> anyhow::Result<std::fs::File> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let path = out.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => bail!(
            "another `scaletune bench` is running in {} (it holds {}); wait for it to finish or pass another --out",
            out.display(),
            path.display()
        ),
        Err(std::fs::TryLockError::Error(e)) => Err(e).with_context(|| format!("locking {}", path.display())),
    }
}

/// `bench --search-efficiency`: cold-start runs of both strategies and the table.
fn search_efficiency(args: &BenchArgs, rt: &Handle) -> anyhow::Result<u8> {
    let trials = args.trials.unwrap_or(if args.quick { 8 } else { 200 });
    if trials == 0 || args.seeds == 0 {
        bail!("--trials and --seeds must be at least 1");
    }
    let reference = args.shapes.first().cloned().unwrap_or_else(|| bench::HOST_SHAPES[0].to_string());
    let flops = crate::pipeline::load_workload_to_run(&reference)?.flops();
    let last_seed = args.first_seed.checked_add(args.seeds - 1).context("--first-seed plus --seeds overflows")?;
    let seeds: Vec<u64> = (args.first_seed..=last_seed).collect();
    let mut strategies: Vec<StrategyKind> = Vec::new();
    for &s in &args.strategies {
        if !strategies.contains(&s) {
            strategies.push(s);
        }
    }
    if strategies.is_empty() {
        bail!("--strategies needs at least one of random, evolutionary");
    }
    let dir = args.out.join("search");
    let on = bench::search::On::new(&args.target, &args.vl)?;
    let mut runs = bench::search::run(&reference, &on, trials, &seeds, &strategies, &dir, rt)?;
    let (unit, remeasured) = if on.runner == RunnerKind::Qemu {
        (bench::search::Unit::Cycles, None)
    } else {
        eprintln!("bench: re-measuring every run's incumbents");
        let rounds = args.rounds.unwrap_or(if args.quick { 1 } else { 3 }).max(1);
        (bench::search::Unit::Seconds { flops }, Some(bench::search::remeasure(&reference, &on, &mut runs, rounds)?))
    };
    print!("{}", bench::search::table(&reference, &runs, unit, remeasured.as_ref()));
    Ok(0)
}

//! The `scaletune` command-line interface.

use anyhow::Context;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use scaletune::commands::{agent, bench, build, check, compile, db, info, measure, report, tune};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use tokio::runtime::Handle;

/// mimalloc (version 2, see the workspace manifest; [`scaletune::alloc`]):
/// proposing candidates (trace replay, simplification, lowering) allocates
/// many small expression nodes, and spent about a third of its time in
/// glibc's malloc and free.
#[global_allocator]
static GLOBAL: scaletune::alloc::Allocator = scaletune::alloc::Allocator;

/// The environment variables scaletune reads, for `--help`.
const ENVIRONMENT: &str = "\
Environment:
  SCALETUNE_DB            Tuning database when no --db is given [default: ./scaletune.db]
  SCALETUNE_MACHINE_LOCK  Directory of the lock that keeps other scaletune processes' builds and
                          untimed runs out of timed runs, or `off` [default: $XDG_RUNTIME_DIR/scaletune,
                          else scaletune-UID in the temporary directory]
  SCALETUNE_CACHE_DIR     Root of every cache (artifacts, runtime, plugin, mca, reference)
                          [default: scaletune-<cache> in the temporary directory]
  SCALETUNE_PLUGIN_DIR    Where the QEMU instruction-counting plugin is built [default: the plugin cache]
  SCALETUNE_NUM_THREADS   Threads of a kernel's parallel loops when it runs outside scaletune
                          [default: one per CPU the process may run on]
  SCALETUNE_FONT          TrueType font of report charts [default: DejaVu Sans]
  RUST_LOG                Level of the warnings and log lines on standard error [default: warn; info
                          for `agent`]
  OPENBLAS_CORETYPE       `bench`: the OpenBLAS kernels to run (the library's own choice otherwise)
  MIMALLOC_PURGE_DELAY, MIMALLOC_PURGE_DECOMMITS
                          Allocator settings that override scaletune's own (README, Performance)";

#[derive(Parser)]
#[command(
    name = "scaletune",
    version,
    about = "Autotuner and schedule-space explorer for tensor kernels on vector-length-agnostic hardware",
    after_help = ENVIRONMENT
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Largest total size of a workload's tensors for commands that run
    /// kernels (check, measure, tune, bench, explore --check; on an agent,
    /// each run it serves), e.g. 512M or 8G [default: a quarter of physical
    /// memory].
    #[arg(long, global = true, value_name = "SIZE")]
    max_bytes: Option<scaletune::limits::ByteSize>,
}

#[derive(Subcommand)]
enum Command {
    /// List the shipped workloads, or describe one (`NAME` or `NAME:P=V,...`).
    Workloads {
        /// Workload to describe.
        name: Option<String>,
    },
    /// List the shipped targets, or describe one.
    Targets {
        /// Target to describe.
        name: Option<String>,
    },
    /// Compile a workload (with a schedule, or the unscheduled nest) for a target.
    Compile {
        /// Workload: `NAME`, `NAME:P=V,...` or a TOML file.
        workload: String,
        /// Target name or TOML file.
        #[arg(long, short)]
        target: String,
        /// Schedule file (a trace as text or JSON).
        #[arg(long, short)]
        schedule: Option<PathBuf>,
        /// Use the best record of this tuning database instead of --schedule.
        #[arg(long, conflicts_with = "schedule")]
        db: Option<PathBuf>,
        /// Outputs (comma-separated).
        #[arg(long, value_enum, default_value = "obj", value_delimiter = ',')]
        emit: Vec<compile::Emit>,
        /// Output directory.
        #[arg(long, short, default_value = "out")]
        out: PathBuf,
    },
    /// Print the design space of a workload on a target, sample it, and optionally check the samples.
    Explore {
        /// Workload: `NAME`, `NAME:P=V,...` or a TOML file.
        workload: String,
        /// Target name or TOML file.
        #[arg(long, short)]
        target: String,
        /// Number of schedules to sample.
        #[arg(long, default_value_t = 20)]
        samples: usize,
        /// Seed of the sampling RNG.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Write each sampled trace to DIR/sample_NNN.trace.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Check every sample in the interpreter at vscale 1, 2 and 4 (those its vector kind allows).
        #[arg(long)]
        check: bool,
        /// With --check: also compile every sample and run it natively or under QEMU.
        #[arg(long)]
        qemu: bool,
        /// Threads used for checking.
        #[arg(long, default_value_t = 2)]
        threads: usize,
    },
    /// Run a kernel at each vector length and compare every output with the reference.
    Check {
        /// Workload: `NAME`, `NAME:P=V,...` or a TOML file.
        workload: String,
        /// Target name or TOML file.
        #[arg(long, short)]
        target: String,
        /// Schedule file (a trace as text or JSON).
        #[arg(long, short)]
        schedule: Option<PathBuf>,
        /// Vector lengths in bits (comma-separated); default: the target's.
        #[arg(long, value_delimiter = ',')]
        vl: Vec<u32>,
        /// Seed of the generated inputs.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Timeout of each run in seconds.
        #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..))]
        timeout: u64,
    },
    /// Build a schedule and measure it (native timing, QEMU instruction counts, or remote agents).
    Measure(measure::MeasureArgs),
    /// Tune workloads on a target: search schedules, measure them, record every result in the tuning database.
    Tune(tune::TuneArgs),
    /// Read, check, export or import the tuning database.
    Db {
        /// Tuning database [default: $SCALETUNE_DB, else ./scaletune.db].
        #[arg(long, global = true)]
        db: Option<PathBuf>,
        #[command(subcommand)]
        command: db::DbCommand,
    },
    /// Print a record of the tuning database: figures, trace, loop nest, vector program and assembly.
    Show {
        /// Record id.
        record: i64,
        /// Tuning database [default: $SCALETUNE_DB, else ./scaletune.db].
        #[arg(long)]
        db: Option<PathBuf>,
    },
    /// Write the HTML report of the tuning database (index.html with inline charts, each chart also as PNG).
    Report(report::ReportArgs),
    /// Replay the best recorded schedules of a kernel manifest into static libraries, a C header and Rust declarations.
    Build(build::BuildArgs),
    /// Benchmark tuned kernels against OpenBLAS, clang's auto-vectorized loops and the FMA peak.
    Bench(bench::BenchArgs),
    /// Serve this machine to remote runners: run authenticated clients' candidates with the timing protocol.
    Agent(agent::AgentArgs),
}

/// Runs a command on the one tokio runtime of the process; returns the exit
/// status (0 ok, 1 a candidate failed, 3 not measured).
fn run(cli: Cli, rt: &Handle) -> anyhow::Result<u8> {
    match cli.command {
        Command::Workloads { name } => print!("{}", info::workloads(name.as_deref())?),
        Command::Targets { name } => print!("{}", info::targets(name.as_deref())?),
        Command::Compile { workload, target, schedule, db, emit, out } => {
            let files = compile::run(&workload, &target, schedule.as_deref(), db.as_deref(), &emit, &out)
                .with_context(|| format!("compile {workload} for {target}"))?;
            for f in files {
                println!("wrote {}", f.display());
            }
        }
        Command::Explore { workload, target, samples, seed, out, check, qemu, threads } => {
            // Checking runs every sample on real tensors: held to --max-bytes.
            let w = if check || qemu {
                scaletune::pipeline::load_workload_to_run(&workload)?
            } else {
                scaletune::pipeline::load_workload(&workload)?
            };
            let t = scaletune_codegen_target(&target)?;
            let args = scaletune::explore::ExploreArgs { samples, seed, check: check || qemu, qemu, threads };
            let ex = scaletune::explore::explore(&w, &t, &args, rt);
            print!("{}", ex.report);
            if let Some(dir) = out {
                std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
                for (i, s) in ex.samples.iter().enumerate() {
                    let p = dir.join(format!("sample_{i:03}.trace"));
                    std::fs::write(&p, s.trace.to_string()).with_context(|| format!("cannot write {}", p.display()))?;
                }
                println!("wrote {} traces to {}", ex.samples.len(), dir.display());
            }
            return Ok(u8::from(ex.failed != 0));
        }
        Command::Check { workload, target, schedule, vl, seed, timeout } => {
            let outcome = check::run(
                &check::CheckArgs {
                    workload: &workload,
                    target: &target,
                    schedule: schedule.as_deref(),
                    vl_bits: vl,
                    seed,
                    timeout: Duration::from_secs(timeout),
                },
                rt,
            )?;
            print!("{}", outcome.report);
            return Ok(u8::from(!outcome.passed));
        }
        Command::Agent(args) => agent::run(&args, rt)?,
        Command::Build(args) => print!("{}", build::run(&args)?),
        Command::Tune(args) => return tune::run(&args, rt),
        Command::Report(args) => print!("{}", report::run(&args)?),
        Command::Bench(args) => return bench::run(&args, rt),
        Command::Db { db, command } => {
            let (text, code) = db::run(&command, db.as_deref())?;
            print!("{text}");
            return Ok(code);
        }
        Command::Show { record, db } => print!("{}", db::show(record, db.as_deref())?),
        Command::Measure(args) => {
            let outcome = measure::run(&args, rt)?;
            print!("{}", outcome.report);
            return Ok(outcome.exit_code());
        }
    }
    Ok(0)
}

/// Waits for Ctrl-C or SIGTERM, then kills the running children, removes the
/// scratch directories and exits (130 for Ctrl-C, 143 for SIGTERM, as a shell
/// reports a process killed by them).
async fn exit_on_interrupt() {
    let code = scaletune_measure::cleanup::next_interrupt().await;
    scaletune_measure::cleanup::on_interrupt();
    eprintln!("interrupted: running kernels stopped, scratch directories removed");
    std::process::exit(i32::from(code));
}

fn scaletune_codegen_target(name: &str) -> anyhow::Result<scaletune_codegen::target::Target> {
    Ok(scaletune_codegen::target::Target::load(name)?)
}

fn main() -> ExitCode {
    scaletune::alloc::configure();
    let matches = Cli::command().get_matches();
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if let (Command::Tune(args), Some(m)) = (&mut cli.command, matches.subcommand_matches("tune")) {
        // Which options the command line gave (not their defaults): `--resume` refuses a job's own.
        args.given = m
            .ids()
            .filter(|id| m.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine))
            .map(|id| id.to_string())
            .collect();
    }
    scaletune::limits::set_max_bytes(cli.max_bytes);
    if !matches!(cli.command, Command::Agent(_)) {
        // The libraries' warnings (a runner taken out, a cache that cannot be
        // written, a machine lock that cannot be taken) reach standard error
        // as `WARN message`; RUST_LOG sets another level. The agent sets up
        // its own log.
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
        let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .without_time()
            .with_target(false)
            .with_ansi(ansi)
            .with_writer(std::io::stderr)
            .try_init();
    }
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    if !matches!(cli.command, Command::Agent(_) | Command::Tune(_)) {
        // The agent and tuning jobs stop gracefully on their own signals
        // (a job records what arrived and marks itself interrupted); every
        // other command leaves no child process and no scratch directory behind.
        rt.spawn(exit_on_interrupt());
    }
    match run(cli, rt.handle()) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {}", scaletune::commands::error_text(&e));
            ExitCode::from(scaletune::commands::exit_code_of(&e))
        }
    }
}

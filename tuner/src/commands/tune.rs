//! `scaletune tune`: a resumable tuning job over one or more workloads on one target, recorded in the tuning database.

use super::measure::{check_runners_accept, runner_target, runners, RunnerKind};
use crate::cost_model;
use crate::search::StrategyKind;
use crate::tune::confirm::ConfirmConfig;
use crate::tune::job::{self, LoopState, Observer, StopReason};
use crate::tune::objective::{parse_vl_weight, Objective, ObjectiveKind};
use crate::tune::summary::{confirmation, format_objective, summary};
use crate::tune::task::Task;
use crate::tune::{count_earlier_trials, setup, suite::Suite, JobConfig};
use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressStyle};
use scaletune_database::{Database, JobStatus, NewJob};
use scaletune_measure::{ArtifactCache, Farm, LlvmBuilder, TimingProtocol};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::runtime::Handle;
use tokio::sync::Notify;

/// Options of `tune`.
#[derive(Clone, Debug, clap::Args)]
pub struct TuneArgs {
    /// Workloads: `NAME`, `NAME:P=V,...` or TOML files.
    pub workloads: Vec<String>,
    /// A suite of weighted workloads: a shipped one by name (`configs/suites/NAME.toml`, built in), or a path.
    #[arg(long)]
    pub suite: Option<String>,
    /// Target name or TOML file.
    #[arg(long, short, required_unless_present = "resume")]
    pub target: Option<String>,
    /// Trial budget of the job (candidates measured, failures included).
    #[arg(long, default_value_t = 64)]
    pub trials: usize,
    /// Stop after this long (`90s`, `20m`, `2h`); a resumed job gets it afresh.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub time_limit: Option<Duration>,
    /// Tuning database [default: $SCALETUNE_DB, else ./scaletune.db].
    #[arg(long)]
    pub db: Option<PathBuf>,
    /// Job seed: the same seed, inputs and database give the same candidates.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Vector lengths in bits (comma-separated); default: the target's.
    #[arg(long, value_delimiter = ',')]
    pub vl: Vec<u32>,
    /// Weights of vector lengths in the objective's geometric mean (`128=1,256=2`).
    #[arg(long, value_delimiter = ',', value_parser = parse_vl_weight)]
    pub vl_weights: Vec<(u32, f64)>,
    /// Runner [default: native for targets that run on this machine, else qemu].
    #[arg(long, value_enum)]
    pub runner: Option<RunnerKind>,
    /// Farm file listing remote agents (for `--runner remote`).
    #[arg(long)]
    pub farm: Option<PathBuf>,
    /// Search strategy.
    #[arg(long, value_enum, default_value = "evolutionary")]
    pub strategy: StrategyKind,
    /// Objective [default: time natively and remotely, estimated cycles under QEMU].
    #[arg(long, value_enum)]
    pub objective: Option<ObjectiveKind>,
    /// Candidates per batch [default: enough to keep builders and runners busy].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub batch: Option<u32>,
    /// Build workers [default: the number of CPUs].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub builders: Option<u32>,
    /// Timed repeats per candidate.
    #[arg(long, default_value_t = 5)]
    pub repeat: u32,
    /// Minimum duration of one repeat in milliseconds.
    #[arg(long, default_value_t = 10)]
    pub min_repeat_ms: u32,
    /// Timeout of each run in seconds.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
    /// Threads of parallel loops in timed runs [default: one per CPU];
    /// `--threads 1` tunes single-threaded code and searches no parallel
    /// loops (nor does a QEMU job). Part of each record's runner.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub threads: Option<u32>,
    /// At the end of a timed job, measure the best N candidates of each task
    /// again (0: never), so one lucky or unlucky run does not pick the
    /// winner; every run is kept in its record.
    #[arg(long, value_name = "N", default_value_t = ConfirmConfig::default().top)]
    pub confirm: usize,
    /// Rounds of that re-measurement (each measures every one once, interleaved).
    #[arg(long, value_name = "R", default_value_t = ConfirmConfig::default().rounds)]
    pub confirm_rounds: usize,
    /// During a timed job, each batch also measures the task's best
    /// candidate so far again until it has N runs (its median then ranks
    /// it; not a trial; 0 or 1: never).
    #[arg(long, value_name = "N", default_value_t = ConfirmConfig::default().best_runs)]
    pub recheck_best: usize,
    /// Continue job JOB (its own arguments; re-measures nothing, same seed stream).
    #[arg(long)]
    pub resume: Option<i64>,
    /// Directory of the artifact cache [default: $SCALETUNE_CACHE_DIR/artifacts, else scaletune-artifacts in the temporary directory].
    #[arg(long)]
    pub cache_dir: Option<PathBuf>,
    /// Rewrite the job's HTML report into DIR after every batch (see `scaletune report`).
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// The ids of the options given on the command line (filled in after
    /// parsing, from clap's value sources): `--resume` refuses the job's own.
    #[arg(skip)]
    pub given: Vec<String>,
}

/// Options a job keeps for its whole life: given beside `--resume`, they are
/// refused (`--trials` may raise the budget; the time limit, database,
/// cache and report are this run's).
const JOB_OPTIONS: [&str; 17] = [
    "seed",
    "vl",
    "vl_weights",
    "runner",
    "farm",
    "strategy",
    "objective",
    "batch",
    "builders",
    "repeat",
    "min_repeat_ms",
    "timeout",
    "threads",
    "confirm",
    "confirm_rounds",
    "recheck_best",
    "suite",
];

impl TuneArgs {
    /// The job this invocation describes (for a new job).
    /// The workloads named and those of `--suite`, with their weights.
    fn named_workloads(&self) -> anyhow::Result<Vec<(String, f64)>> {
        let mut workloads: Vec<(String, f64)> = self.workloads.iter().map(|w| (w.clone(), 1.0)).collect();
        if let Some(s) = &self.suite {
            let suite = Suite::load(s)?;
            workloads.extend(suite.tasks.into_iter().map(|t| (t.workload, t.weight)));
        }
        Ok(workloads)
    }

    /// With `--resume`, the job runs on with its own workloads and target:
    /// workloads, a suite or a target given beside it must be the job's, or
    /// the command is refused (it would otherwise tune something else than
    /// it was told, silently).
    fn check_resumed(&self, id: i64, job: &JobConfig) -> anyhow::Result<()> {
        let names = |ws: &[(String, f64)]| ws.iter().map(|(w, _)| w.clone()).collect::<Vec<_>>().join(" ");
        let given = self.named_workloads()?;
        if !given.is_empty() && names(&given) != names(&job.workloads) {
            bail!(
                "job {id} tunes {}; `--resume` continues it with its own workloads: leave out `{}`",
                names(&job.workloads),
                names(&given)
            );
        }
        if let Some(t) = self.target.as_ref().filter(|t| **t != job.target) {
            bail!("job {id} tunes on target `{}`; `--resume` continues it there: leave out `--target {t}`", job.target);
        }
        let own: Vec<String> = JOB_OPTIONS
            .iter()
            .filter(|o| self.given.iter().any(|g| g == *o) && **o != "suite")
            .map(|o| format!("--{}", o.replace('_', "-")))
            .collect();
        if !own.is_empty() {
            bail!(
                "job {id} keeps the {} it was started with; `--resume` continues it so: leave out {}",
                own.join(", "),
                own.join(" ")
            );
        }
        Ok(())
    }

    /// The trial budget of a resumed job: its own, or `--trials` when given,
    /// which must be more than the trials it has had.
    fn resumed_budget(&self, id: i64, job: &JobConfig, done: usize) -> anyhow::Result<usize> {
        if !self.given.iter().any(|g| g == "trials") || self.trials == job.trials {
            return Ok(job.trials);
        }
        if self.trials <= done {
            bail!("job {id} has had {done} trials; --trials {} must be more to continue it", self.trials);
        }
        Ok(self.trials)
    }

    fn config(&self) -> anyhow::Result<JobConfig> {
        let workloads = self.named_workloads()?;
        if workloads.is_empty() {
            bail!("nothing to tune: name workloads or a --suite");
        }
        // Every workload loads (and is held to --max-bytes) before a job exists.
        let mut seen: Vec<(String, &str)> = Vec::new();
        for (w, _) in &workloads {
            let shape = crate::pipeline::load_workload_to_run(w)?.reference();
            if let Some((_, first)) = seen.iter().find(|(s, _)| *s == shape) {
                bail!("`{w}` and `{first}` are the same workload ({shape}): name each shape once");
            }
            seen.push((shape, w));
        }
        if self.trials == 0 {
            bail!("--trials must be at least 1");
        }
        if self.timeout == 0 {
            bail!("--timeout must be at least 1 second");
        }
        if self.time_limit.is_some_and(|d| d.is_zero()) {
            bail!("--time-limit must be more than 0");
        }
        let Some(target) = self.target.clone() else { bail!("--target is required for a new job") };
        let (t, runner, _) = runner_target(&target, self.runner, &self.vl)?;
        if self.farm.is_some() && runner != RunnerKind::Remote {
            bail!("--farm lists remote agents; it needs --runner remote");
        }
        let vls = if self.vl.is_empty() { t.default_vl_bits.clone() } else { self.vl.clone() };
        check_vl_weights(&self.vl_weights, &vls)?;
        let kind = self.objective.unwrap_or(JobConfig::default_objective(runner));
        if kind.is_emulated() && runner != RunnerKind::Qemu {
            bail!("--objective {} is measured under QEMU: add --runner qemu", kind.name());
        }
        if kind == ObjectiveKind::Time && runner == RunnerKind::Qemu {
            bail!("under QEMU wall time is emulation time: use --objective cycles or instructions");
        }
        let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
        let builders = self.builders.map_or(cpus, |b| b as usize);
        let cfg = JobConfig {
            workloads,
            target,
            trials: self.trials,
            time_limit_s: self.time_limit.map(|d| d.as_secs_f64()),
            seed: self.seed,
            vls: self.vl.clone(),
            objective: Objective { kind, vl_weights: self.vl_weights.clone() },
            runner,
            farm: self.farm.clone(),
            strategy: self.strategy,
            batch: self.batch.map_or(2 * builders + 4, |b| b as usize),
            builders,
            protocol: TimingProtocol {
                warmup: 1,
                repeat: self.repeat,
                min_repeat_ms: self.min_repeat_ms,
                threads: self.threads,
                ..TimingProtocol::default()
            },
            timeout_s: self.timeout,
            confirm: ConfirmConfig { top: self.confirm, rounds: self.confirm_rounds, best_runs: self.recheck_best },
        };
        scaletune_measure::harness::timing::check_protocol(&cfg.protocol)?;
        Ok(cfg)
    }
}

/// Every `--vl-weights` entry must weight a vector length the job measures,
/// once: a weight of another length would be silently ignored.
fn check_vl_weights(weights: &[(u32, f64)], vls: &[u32]) -> anyhow::Result<()> {
    let list = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
    for (i, (vl, _)) in weights.iter().enumerate() {
        if !vls.contains(vl) {
            bail!("--vl-weights weights VL {vl}, which the job does not measure (its VLs: {})", list(vls));
        }
        if weights[..i].iter().any(|(seen, _)| seen == vl) {
            bail!("--vl-weights weights VL {vl} twice");
        }
    }
    Ok(())
}

/// Progress on a terminal: a bar with trials, the best per task and the ETA.
struct Bar {
    bar: ProgressBar,
    kind: ObjectiveKind,
    shown: Vec<Option<f64>>,
}

/// Progress elsewhere: one line per batch.
struct Lines {
    kind: ObjectiveKind,
    trials: usize,
    shown: Vec<Option<f64>>,
}

/// A task's name in the progress: its workload's name, or its full
/// reference (`matmul:M=128,N=768,K=768`) where another task of the job has
/// a workload of the same name (a suite's several matmuls).
fn task_label(tasks: &[Task], t: &Task) -> String {
    if tasks.iter().filter(|o| o.workload.name == t.workload.name).count() > 1 {
        t.workload.reference()
    } else {
        t.workload.name.clone()
    }
}

/// Each task's best, GFLOPS where known. `shown` holds the bests shown
/// last (updated here): a best that got worse since, which happens when
/// re-checks of the best candidate ran slower than its first run (or a
/// later run disqualified it), says so and what was shown before.
fn bests(tasks: &[Task], kind: ObjectiveKind, shown: &mut Vec<Option<f64>>) -> String {
    shown.resize(tasks.len(), None);
    let text = |t: &Task, b: f64| match crate::tune::summary::gflops(t, kind, b) {
        Some(g) => format!("{g:.1} GFLOPS"),
        None => format_objective(kind, b),
    };
    let parts: Vec<String> = tasks
        .iter()
        .zip(shown.iter_mut())
        .map(|(t, last)| {
            let best = t.best();
            let mut part = format!("{} {}", task_label(tasks, t), best.map_or_else(|| "-".into(), |b| text(t, b)));
            if let (Some(b), Some(was)) = (best, *last) {
                // Every objective is lower-is-better.
                if b > was {
                    part.push_str(&format!(" (re-measured; was {})", text(t, was)));
                }
            }
            *last = best;
            part
        })
        .collect();
    parts.join(" | ")
}

impl Observer for Bar {
    fn trial(&mut self, tasks: &[Task], state: &LoopState) {
        self.bar.set_position(state.trials as u64);
        self.bar.set_message(bests(tasks, self.kind, &mut self.shown));
    }

    fn batch(&mut self, _: &[Task], _: &LoopState, _: usize, _: usize, _: Duration) {}
}

impl Observer for Lines {
    fn trial(&mut self, _: &[Task], _: &LoopState) {}

    fn batch(&mut self, tasks: &[Task], state: &LoopState, task: usize, measured: usize, elapsed: Duration) {
        println!(
            "batch {:>3}: {} {} trials in {:.1} s, {}/{} done; best: {}",
            state.batches,
            tasks[task].workload.reference(),
            measured,
            elapsed.as_secs_f64(),
            state.trials,
            self.trials,
            bests(tasks, self.kind, &mut self.shown)
        );
    }
}

/// Rewrites the job's report after every batch around another observer;
/// a report that cannot be written is a warning, never the job's end.
struct Reporting<'a> {
    inner: &'a mut dyn Observer,
    db: &'a Database,
    job: i64,
    out: Option<PathBuf>,
}

impl Reporting<'_> {
    /// Rewrites the report; whether it was written (a failure is a warning:
    /// the job goes on).
    fn write(&self) -> bool {
        let Some(out) = &self.out else { return false };
        let filter = scaletune_reports::Filter { job: Some(self.job), ..Default::default() };
        match super::report::write(self.db, &filter, out) {
            Ok(_) => true,
            Err(e) => {
                eprintln!("warning: the report was not written: {}", super::error_text(&e));
                false
            }
        }
    }
}

impl Observer for Reporting<'_> {
    fn trial(&mut self, tasks: &[Task], state: &LoopState) {
        self.inner.trial(tasks, state);
    }

    fn batch(&mut self, tasks: &[Task], state: &LoopState, task: usize, measured: usize, elapsed: Duration) {
        self.inner.batch(tasks, state, task, measured, elapsed);
        let _ = self.write();
    }
}

/// Listens for Ctrl-C and SIGTERM; returns the notification and the exit status the signal asks for.
fn interrupts(rt: &Handle) -> (Arc<Notify>, Arc<std::sync::atomic::AtomicU8>) {
    use std::sync::atomic::{AtomicU8, Ordering};
    let notify = Arc::new(Notify::new());
    let code = Arc::new(AtomicU8::new(0));
    let (n, c) = (Arc::clone(&notify), Arc::clone(&code));
    rt.spawn(async move {
        let got = scaletune_measure::cleanup::next_interrupt().await;
        c.store(got, Ordering::SeqCst);
        n.notify_one();
    });
    (notify, code)
}

/// The outcome of `tune`: the exit status (0, or 130/143 when interrupted).
pub fn run(args: &TuneArgs, rt: &Handle) -> anyhow::Result<u8> {
    let path = args.db.clone().unwrap_or_else(scaletune_database::default_path);
    // A new job's options are checked before the database is opened (bad
    // input leaves no database file behind).
    if let Some(out) = args.report.as_ref().filter(|o| o.exists() && !o.is_dir()) {
        bail!("--report {}: not a directory (the report is DIR/index.html with its charts beside it)", out.display());
    }
    let new_cfg = if args.resume.is_none() { Some(args.config()?) } else { None };
    let db = Database::open(&path)?;
    // A resumed job's arguments, with the budget `--trials` may raise.
    let resumed = match args.resume {
        Some(id) => {
            let job = db.job(id)?.with_context(|| format!("{} has no job {id}", path.display()))?;
            let mut cfg: JobConfig = serde_json::from_str(&job.arguments)
                .with_context(|| format!("job {id} was not made by this version of `scaletune tune`"))?;
            args.check_resumed(id, &cfg)?;
            let state: LoopState = job.state.as_deref().and_then(|s| serde_json::from_str(s).ok()).unwrap_or_default();
            cfg.trials = args.resumed_budget(id, &cfg, state.trials)?;
            println!("resuming job {id} after {} trials ({} batches)", state.trials, state.batches);
            Some((id, cfg, state))
        }
        None => None,
    };
    let cfg = match &resumed {
        Some((_, cfg, _)) => cfg.clone(),
        None => new_cfg.context("a new job has a configuration")?,
    };
    // Everything that can refuse the job runs before the job is created or
    // reopened, so a refused command leaves no job marked running.
    let (target, runner, notes) = runner_target(&cfg.target, Some(cfg.runner), &cfg.vls)?;
    for n in &notes {
        println!("note: {n}");
    }
    let (runner_list, runner_notes) = runners(cfg.runner, &cfg.protocol, cfg.farm.as_deref(), &target, rt)?;
    for n in &runner_notes {
        println!("note: {n}");
    }
    let vls = if cfg.vls.is_empty() { target.default_vl_bits.clone() } else { cfg.vls.clone() };
    check_runners_accept(&runner_list, runner, &target, &vls)?;
    let mut setup = setup(&cfg, &target, &db)?;
    let (job_id, state) = match resumed {
        Some((id, _, state)) => {
            db.reopen_job(id)?;
            db.set_job_arguments(id, &serde_json::to_string(&cfg)?)?;
            count_earlier_trials(&mut setup, &db, id)?;
            (id, state)
        }
        None => {
            let id = db.create_job(&NewJob {
                arguments: serde_json::to_string(&cfg)?,
                seed: cfg.seed,
                strategy: cfg.strategy.name().to_string(),
            })?;
            (id, LoopState::default())
        }
    };
    let job = (|| -> anyhow::Result<u8> {
        let known: usize = setup.tasks.iter().map(|t| t.measured.len()).sum();
        println!(
            "job {job_id}: {} task(s) on {} ({}), runner {}, objective {}, strategy {}, {} trials, database {} ({} candidates known)",
            setup.tasks.len(),
            target.name,
            target.vector_summary(),
            cfg.runner_label(),
            cfg.objective.kind.name(),
            cfg.strategy.name(),
            cfg.trials,
            path.display(),
            known
        );

        let mut builder = LlvmBuilder::new().with_seed(cfg.seed);
        let dir = args.cache_dir.clone().unwrap_or_else(ArtifactCache::default_dir);
        let cache = ArtifactCache::new(&dir).with_context(|| format!("artifact cache {}", dir.display()))?;
        builder = builder.with_cache(cache);
        let stale = crate::tune::stale::find_stale(&mut setup, &builder, cfg.builders);
        for note in crate::tune::stale::notes(&stale) {
            println!("{note}");
        }
        let farm = super::lock_machine(Farm::new(Arc::new(builder), cfg.builders, runner_list));
        let runner_label = cfg.runner_label();
        let (interrupt, code) = interrupts(rt);
        let lp = job::Loop {
            time_limit: cfg.time_limit_s.map(Duration::from_secs_f64).or(args.time_limit),
            ..job::Loop::for_job(&db, job_id, &cfg, setup.rows.clone(), &farm, &runner_label, interrupt)
        };
        let training = std::mem::take(&mut setup.training);
        let finished = if std::io::stdout().is_terminal() {
            let bar = ProgressBar::new(cfg.trials as u64).with_position(state.trials as u64);
            bar.set_style(
                ProgressStyle::with_template("{bar:30} {pos}/{len} trials, {elapsed} (ETA {eta}) {wide_msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            let mut obs = Bar { bar: bar.clone(), kind: cfg.objective.kind, shown: Vec::new() };
            let mut obs = Reporting { inner: &mut obs, db: &db, job: job_id, out: args.report.clone() };
            let r = rt.block_on(lp.run(&mut setup.tasks, training, state, &mut obs));
            bar.finish_and_clear();
            r
        } else {
            let mut obs = Lines { kind: cfg.objective.kind, trials: cfg.trials, shown: Vec::new() };
            let mut obs = Reporting { inner: &mut obs, db: &db, job: job_id, out: args.report.clone() };
            rt.block_on(lp.run(&mut setup.tasks, training, state, &mut obs))
        }?;
        let status =
            if finished.reason == StopReason::Interrupted { JobStatus::Interrupted } else { JobStatus::Finished };
        db.finish_job(job_id, status, finished.reason.text())?;
        if let Some(out) = &args.report {
            let mut quiet = Lines { kind: cfg.objective.kind, trials: cfg.trials, shown: Vec::new() };
            if (Reporting { inner: &mut quiet, db: &db, job: job_id, out: Some(out.clone()) }).write() {
                println!("report: {}", out.join("index.html").display());
            }
        }
        let (train, held) = cost_model::split_held_out(&finished.rows);
        let tau = cost_model::held_out_tau(&train, &held, cfg.seed);
        println!(
            "job {job_id} {}: {} trials in all; {}",
            if status == JobStatus::Interrupted { "interrupted" } else { "finished" },
            finished.state.trials,
            finished.reason.text()
        );
        print!("{}", confirmation(&setup.tasks, cfg.objective.kind, &finished.confirmed));
        print!("{}", summary(&setup.tasks, cfg.objective.kind, tau));
        if finished.reason == StopReason::Interrupted {
            scaletune_measure::cleanup::on_interrupt();
            println!("resume with: scaletune tune --resume {job_id} --db {}", path.display());
            return Ok(code.load(std::sync::atomic::Ordering::SeqCst).max(130));
        }
        Ok(0)
    })();
    if let Err(e) = &job {
        // The job ends as failed, with the reason; what it recorded stays.
        let _ = db.finish_job(job_id, JobStatus::Failed, &crate::commands::error_text(e));
    }
    job
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// The progress shows a best that got worse as such, once.
    #[test]
    fn a_best_that_re_checks_made_worse_says_so() {
        let mut task = crate::tune::task::test_task("matmul:M=64,N=64,K=64");
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let s = task.space.sample(&mut rng).expect("samples");
        task.observe(&s, Some(1e-5), 7);
        let mut tasks = vec![task];
        let mut shown = Vec::new();
        let mut lines = vec![bests(&tasks, ObjectiveKind::Time, &mut shown)];
        // Its re-checks ran at half the speed: the median of three runs.
        tasks[0].remeasured(7, 2e-5, 3);
        lines.push(bests(&tasks, ObjectiveKind::Time, &mut shown));
        lines.push(bests(&tasks, ObjectiveKind::Time, &mut shown));
        expect_test::expect![[r#"
            matmul 52.4 GFLOPS
            matmul 26.2 GFLOPS (re-measured; was 52.4 GFLOPS)
            matmul 26.2 GFLOPS"#]]
        .assert_eq(&lines.join("\n"));
    }

    /// Tasks whose workloads share a name (a suite's matmuls) are told
    /// apart by their shapes; a task alone with its name keeps the name.
    #[test]
    fn tasks_of_one_workload_name_are_told_apart_by_shape() {
        let tasks: Vec<Task> = ["matmul:M=64,N=64,K=64", "softmax_rows", "matmul:M=32,N=64,K=16"]
            .into_iter()
            .map(crate::tune::task::test_task)
            .collect();
        expect_test::expect!["matmul:M=64,N=64,K=64 - | softmax_rows - | matmul:M=32,N=64,K=16 -"].assert_eq(&bests(
            &tasks,
            ObjectiveKind::Time,
            &mut Vec::new(),
        ));
    }
}

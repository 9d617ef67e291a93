//! `scaletune measure`: build one schedule, run it on a runner (native, QEMU or remote agents), print the figures and the verdict.

use crate::pipeline::{load_workload_to_run as load_workload, PipelineError, Schedule};
use anyhow::{bail, Context};
use scaletune_codegen::target::Target;
use scaletune_measure::emulation::{emulable_host_target, CycleEstimator};
use scaletune_measure::farm_config::FarmConfig;
use scaletune_measure::{
    ArtifactCache, Candidate, Farm, LlvmBuilder, Measurement, NativeRunner, QemuRunner, Runner, Status, TimingProtocol,
    VlMeasurement,
};
use scaletune_space::trace::Trace;
use std::fmt::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::runtime::Handle;

/// Where the candidate runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunnerKind {
    /// This machine, timed with the timing protocol.
    Native,
    /// QEMU user mode: instruction counts and estimated cycles, not time.
    Qemu,
    /// The agents listed in the farm file, on real machines.
    Remote,
}

impl RunnerKind {
    /// The runner's name in reports and database records.
    pub fn name(self) -> &'static str {
        match self {
            RunnerKind::Native => "native",
            RunnerKind::Qemu => "qemu",
            RunnerKind::Remote => "remote",
        }
    }
}

/// Options of `measure`.
#[derive(Clone, Debug, clap::Args)]
pub struct MeasureArgs {
    /// Workload: `NAME`, `NAME:P=V,...` or a TOML file.
    pub workload: String,
    /// Target name or TOML file.
    #[arg(long, short)]
    pub target: String,
    /// Schedule file (a trace as text or JSON); without it, the unscheduled loop nest.
    #[arg(long, short)]
    pub schedule: Option<PathBuf>,
    /// Runner [default: native for targets that run on this machine, else qemu].
    #[arg(long, value_enum)]
    pub runner: Option<RunnerKind>,
    /// Vector lengths in bits (comma-separated); default: the target's.
    #[arg(long, value_delimiter = ',')]
    pub vl: Vec<u32>,
    /// Farm file listing remote agents (for `--runner remote`).
    #[arg(long)]
    pub farm: Option<PathBuf>,
    /// Untimed calls before the repeats.
    #[arg(long, default_value_t = 2)]
    pub warmup: u32,
    /// Timed repeats.
    #[arg(long, default_value_t = 7)]
    pub repeat: u32,
    /// Kernel calls per repeat (raised so that a repeat lasts --min-repeat-ms).
    #[arg(long, default_value_t = 1)]
    pub number: u32,
    /// Minimum duration of one repeat in milliseconds.
    #[arg(long, default_value_t = 20)]
    pub min_repeat_ms: u32,
    /// Write a buffer larger than the last-level cache before every repeat
    /// (only each repeat's first call starts cold: add `--number 1
    /// --min-repeat-ms 0` to time cold calls only).
    #[arg(long)]
    pub flush_cache: bool,
    /// Pin the measured process to this CPU.
    #[arg(long)]
    pub pin_core: Option<u32>,
    /// Threads of parallel loops [default: one per CPU].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub threads: Option<u32>,
    /// Seed of the generated inputs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Timeout of each run in seconds (the run only, not the build).
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
    /// Directory of the artifact cache [default: $SCALETUNE_CACHE_DIR/artifacts, else scaletune-artifacts in the temporary directory].
    #[arg(long)]
    pub cache_dir: Option<PathBuf>,
    /// Always compile, neither reading nor writing the artifact cache.
    #[arg(long)]
    pub no_cache: bool,
}

impl MeasureArgs {
    /// The timing protocol the options describe.
    pub fn protocol(&self) -> TimingProtocol {
        TimingProtocol {
            warmup: self.warmup,
            number: self.number,
            repeat: self.repeat,
            min_repeat_ms: self.min_repeat_ms,
            flush_cache: self.flush_cache,
            pin_core: self.pin_core,
            threads: self.threads,
        }
    }
}

/// The outcome of `measure`: the report and whether the candidate is ok.
pub struct MeasureOutcome {
    /// Human-readable report.
    pub report: String,
    /// True if it built, ran and matched the reference at every vector length.
    pub passed: bool,
    /// The measurement itself.
    pub measurement: Measurement,
}

/// The exit status of `measure` when the candidate was not measured (no runner left, ...).
pub const EXIT_UNMEASURED: u8 = 3;

impl MeasureOutcome {
    /// The exit status: 0 for `ok`, 1 for the candidate's own failure
    /// (build error, crash, timeout, wrong result), [`EXIT_UNMEASURED`] when
    /// it could not be measured (2 is for bad input, before any measurement).
    pub fn exit_code(&self) -> u8 {
        match self.measurement.status {
            Status::Ok => 0,
            Status::Unmeasured => EXIT_UNMEASURED,
            _ => 1,
        }
    }
}

/// Runners, and notes for the report (agents that did not answer).
type RunnersAndNotes = (Vec<Arc<dyn Runner>>, Vec<String>);

/// The runners of a kind (`farm`: the farm file of remote agents).
pub(crate) fn runners(
    kind: RunnerKind,
    protocol: &TimingProtocol,
    farm: Option<&std::path::Path>,
    target: &Target,
    rt: &Handle,
) -> anyhow::Result<RunnersAndNotes> {
    match kind {
        RunnerKind::Native => {
            scaletune_measure::harness::timing::check_protocol(protocol)?;
            scaletune_measure::harness::timing::check_pin_core_here(protocol)?;
            Ok((vec![Arc::new(NativeRunner::new(protocol.clone()))], Vec::new()))
        }
        RunnerKind::Qemu => {
            let estimator = Arc::new(CycleEstimator::new().with_disk_cache(CycleEstimator::default_dir()));
            let runner = if target.is_native() { QemuRunner::emulating_host() } else { QemuRunner::new() };
            Ok((vec![Arc::new(runner.with_estimator(estimator))], Vec::new()))
        }
        RunnerKind::Remote => {
            let Some(path) = farm else {
                bail!("--runner remote needs --farm FILE listing the agents (see configs/farm.example.toml)")
            };
            scaletune_measure::harness::timing::check_protocol(protocol)?;
            let farm = FarmConfig::load(path)?;
            let (up, down) = rt.block_on(farm.connect(protocol))?;
            let notes: Vec<String> = down.iter().map(|e| format!("agent unavailable: {e}")).collect();
            if up.is_empty() {
                let message = format!("no agent of {} answered:\n  {}", path.display(), notes.join("\n  "));
                return Err(super::Infrastructure(message).into());
            }
            let up: Vec<Arc<dyn Runner>> = up.into_iter().map(|r| Arc::new(r) as Arc<dyn Runner>).collect();
            Ok((up, notes))
        }
    }
}

/// Builds the candidate, runs it at every requested vector length and reports.
pub fn run(args: &MeasureArgs, rt: &Handle) -> anyhow::Result<MeasureOutcome> {
    let w = load_workload(&args.workload)?;
    let (t, kind, mut notes) = runner_target(&args.target, args.runner, &args.vl)?;
    let sched = args.schedule.as_deref().map(Schedule::from_file).transpose()?;
    // A schedule given on the command line that does not apply (an unknown
    // name, factors that do not fit, a size beyond the limits) is bad input:
    // exit 2 before anything is built, as `check` does. Exit 1 is for a
    // candidate that applies but fails to build, run or match.
    crate::pipeline::check_schedule(&w, sched.as_ref(), &t)?;
    let trace = sched.map_or_else(Trace::default, |s| s.trace);
    if args.farm.is_some() && kind != RunnerKind::Remote {
        bail!("--farm lists remote agents; it needs --runner remote");
    }
    let (runners, runner_notes) = runners(kind, &args.protocol(), args.farm.as_deref(), &t, rt)?;
    notes.extend(runner_notes);
    let vls = if args.vl.is_empty() { t.default_vl_bits.clone() } else { args.vl.clone() };
    check_runners_accept(&runners, kind, &t, &vls)?;

    let mut builder = LlvmBuilder::new().with_seed(args.seed);
    if !args.no_cache {
        let dir = args.cache_dir.clone().unwrap_or_else(ArtifactCache::default_dir);
        let cache = ArtifactCache::new(&dir).with_context(|| format!("artifact cache {}", dir.display()))?;
        builder = builder.with_cache(cache);
    }
    let builder = Arc::new(builder);
    let candidate = Candidate::new(0, Arc::new(w.clone()), Arc::new(t.clone()), trace)
        .with_vl_bits(vls)
        .with_timeout(Duration::from_secs(args.timeout));
    let farm = super::lock_machine(Farm::new(builder.clone(), 1, runners));
    let report = rt.block_on(farm.measure(vec![candidate]));
    let Some(m) = report.measurements.into_iter().next() else { bail!("the farm returned no measurement") };

    let mut out = String::new();
    let sched = args.schedule.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "unscheduled".into());
    let _ = writeln!(
        out,
        "{} on {} ({}), schedule {sched}, runner {}",
        w.reference(),
        t.name,
        t.vector_summary(),
        kind.name()
    );
    for n in &notes {
        let _ = writeln!(out, "  note: {n}");
    }
    if m.status == Status::BuildError {
        let _ = writeln!(out, "  build: FAILED after {:.2} s\n    {}", m.build_s, m.message.replace('\n', "\n    "));
    } else {
        let stats = builder.stats();
        let from = match (stats.cache_hits > 0, stats.executable_hits > 0) {
            (true, true) => "object and executable from the artifact cache",
            (true, false) => "object from the artifact cache",
            _ => "compiled",
        };
        let short = m.artifact.get(..12).unwrap_or("-");
        let _ = writeln!(out, "  build: {:.2} s, artifact {short} ({from})", m.build_s);
        if m.runs.iter().any(|r| r.timing.is_some()) {
            let _ = writeln!(out, "  timing: {}", describe_protocol(&args.protocol()));
        }
        for r in &m.runs {
            out.push_str(&describe_run(r));
        }
    }
    let passed = m.status == Status::Ok;
    match m.status {
        Status::Ok => {
            let _ = writeln!(out, "verdict: ok");
        }
        Status::Unmeasured => {
            let _ = writeln!(out, "verdict: unmeasured (not the candidate's fault; try again later): {}", m.message);
        }
        s => {
            let _ = writeln!(out, "verdict: {}", s.name());
        }
    }
    Ok(MeasureOutcome { report: out, passed, measurement: m })
}

/// The target a runner kind builds for, the runner kind (default: native
/// for targets that run here, else QEMU) and notes for the report. QEMU's
/// user mode lacks some host extensions (AVX-512 in QEMU 7.2), so the host
/// under QEMU is built for the features it emulates.
pub(crate) fn runner_target(
    target: &str,
    runner: Option<RunnerKind>,
    vls: &[u32],
) -> anyhow::Result<(Target, RunnerKind, Vec<String>)> {
    let mut t = Target::load(target).map_err(PipelineError::from)?;
    if let Some(vl) = vls.iter().enumerate().find_map(|(i, vl)| vls[..i].contains(vl).then_some(vl)) {
        bail!("--vl lists {vl} twice");
    }
    let kind = runner.unwrap_or(if t.is_native() { RunnerKind::Native } else { RunnerKind::Qemu });
    let mut notes = Vec::new();
    if kind == RunnerKind::Qemu && t.is_native() {
        let emulable = emulable_host_target(&t);
        if emulable.features != t.features {
            notes.push(format!(
                "built without the host features QEMU does not emulate (AVX-512 and newer): {} vector bits",
                emulable.caps.max_bits()
            ));
        }
        t = emulable;
    }
    if kind != RunnerKind::Qemu {
        // The QEMU runner also runs VLs beyond the target's (a hypothetical
        // CPU with that VL); `check_runners_accept` names what it allows.
        for vl in vls {
            t.vscale_for_vl(*vl).map_err(PipelineError::from)?;
        }
    }
    Ok((t, kind, notes))
}

/// Refuses vector lengths no runner accepts, with a hint of what would.
pub(crate) fn check_runners_accept(
    runners: &[Arc<dyn Runner>],
    kind: RunnerKind,
    t: &Target,
    vls: &[u32],
) -> anyhow::Result<()> {
    for vl in vls {
        if !runners.iter().any(|r| r.accepts(t, *vl)) {
            let hint = match kind {
                RunnerKind::Native if !t.is_native() => " (emulated target: use --runner qemu)".to_string(),
                RunnerKind::Qemu if t.caps.scalable => {
                    " (scalable targets run at powers of two from 128 to 2048 bits on AArch64, 1024 on RISC-V)".into()
                }
                RunnerKind::Qemu => format!(" (fixed at {} bits)", t.caps.max_bits()),
                RunnerKind::Remote => {
                    let offered: Vec<String> = runners.iter().map(|r| r.name()).collect();
                    format!(" (no agent among {} offers it)", offered.join(", "))
                }
                RunnerKind::Native => String::new(),
            };
            bail!("runner {} cannot run target `{}` at VL {vl}{hint}", kind.name(), t.name);
        }
    }
    Ok(())
}

fn describe_protocol(p: &TimingProtocol) -> String {
    let mut s = format!(
        "{} warm-up calls, {} repeats of >= {} calls lasting >= {} ms each, CLOCK_MONOTONIC",
        p.warmup, p.repeat, p.number, p.min_repeat_ms
    );
    if p.flush_cache {
        s.push_str(", caches flushed before every repeat");
    }
    if let Some(c) = p.pin_core {
        let _ = write!(s, ", pinned to CPU {c}");
    }
    s
}

/// Seconds in the unit that suits them.
pub fn format_seconds(s: f64) -> String {
    if !s.is_finite() {
        format!("{s}")
    } else if s < 1e-6 {
        format!("{:.1} ns", s * 1e9)
    } else if s < 1e-3 {
        format!("{:.3} us", s * 1e6)
    } else if s < 1.0 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{s:.3} s")
    }
}

/// What other tasks on the CPU did to a timing, if anything: repeats timed
/// again, and the worst wait kept once the driver ran out of retries.
fn contention_note(t: &scaletune_measure::Timing) -> Option<String> {
    let worst = t.worst_wait_share().filter(|_| t.disturbed());
    let retimed = (t.discarded > 0).then(|| {
        let s = if t.discarded == 1 { "" } else { "s" };
        format!("{} repeat{s} timed again: other tasks held the CPU", t.discarded)
    });
    match (retimed, worst) {
        (None, None) => None,
        (r, None) => r,
        (r, Some(w)) => Some(format!(
            "{}a kept repeat waited {:.0} % of its time for the CPU: the machine is busy, the timing is too slow",
            r.map(|r| format!("{r}; ")).unwrap_or_default(),
            w * 100.0
        )),
    }
}

fn describe_run(r: &VlMeasurement) -> String {
    let mut s = format!("  VL {:>4}: {:<12}", r.vl_bits, r.status.name());
    if let Some(t) = &r.timing {
        let _ = write!(
            s,
            " median {}/call, spread {:.1} % ({} repeats x {} calls)",
            format_seconds(t.median_s),
            t.spread * 100.0,
            t.repeats_s.len(),
            t.number
        );
    }
    if let Some(e) = &r.emulated {
        let _ = write!(s, " instructions {}", e.instructions);
        match e.est_cycles {
            Some(c) if e.est_cycles_note.is_some() => {
                let _ = write!(s, ", estimated cycles {c:.0} (llvm-mca model + SME throughput table)");
            }
            Some(c) => {
                let _ = write!(s, ", estimated cycles {c:.0} (llvm-mca model)");
            }
            None => s.push_str(", estimated cycles n/a (no llvm-mca model)"),
        }
    }
    if r.max_abs_err.is_finite() {
        let _ = write!(s, ", max |error| {:.2e}", r.max_abs_err);
    }
    let _ = write!(s, " [{}]", r.runner);
    if let Some(vl) = r.built_for_vl {
        let _ = write!(s, " (object built for VL {vl})");
    }
    s.push('\n');
    if let Some(t) = &r.timing {
        let each: Vec<String> = t.repeats_s.iter().map(|&x| format_seconds(x)).collect();
        let _ = writeln!(s, "            repeats (per call): {}", each.join(", "));
        if let Some(line) = contention_note(t) {
            let _ = writeln!(s, "            {line}");
        }
    }
    if let Some(e) = &r.emulated {
        let _ = writeln!(
            s,
            "            emulation time {:.3} s (QEMU wall time: emulation, not kernel time)",
            e.emulation_wall_s
        );
        if let Some(note) = &e.est_cycles_note {
            let _ = writeln!(s, "            estimated cycles: {note}");
        }
    }
    if r.status != Status::Ok && !r.message.is_empty() {
        let _ = writeln!(s, "            {}", r.message.replace('\n', "\n            "));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(status: Status) -> MeasureOutcome {
        let run = VlMeasurement::bare(128, status, "r", "why");
        let measurement = Measurement::from_runs(0, String::new(), 0.0, vec![run]);
        MeasureOutcome { report: String::new(), passed: status == Status::Ok, measurement }
    }

    #[test]
    fn exit_codes_tell_a_failed_candidate_from_an_unmeasured_one() {
        assert_eq!(outcome(Status::Ok).exit_code(), 0);
        for s in [Status::RunError, Status::Timeout, Status::WrongResult] {
            assert_eq!(outcome(s).exit_code(), 1, "{s:?}");
        }
        assert_eq!(outcome(Status::Unmeasured).exit_code(), EXIT_UNMEASURED);
        assert_eq!(
            describe_run(&outcome(Status::Unmeasured).measurement.runs[0]).split_whitespace().nth(2),
            Some("unmeasured")
        );
    }

    /// Repeats timed again, and a disturbed one kept, are told under the repeats.
    #[test]
    fn a_timing_disturbed_by_other_tasks_says_so() {
        use scaletune_measure::Timing;
        // Each line behind a bar: the snapshot keeps the leading spaces.
        let shown = |r: &VlMeasurement| describe_run(r).lines().map(|l| format!("|{l}\n")).collect::<String>();
        let mut r = VlMeasurement::bare(256, Status::Ok, "native", "");
        let timing = |waited: f64, discarded: u32| {
            Timing::from_repeats(vec![1e-3, 1.2e-3, 1.1e-3], 10).with_waits(vec![0.0, waited, 0.0], discarded)
        };
        // Quiet; two repeats timed again; out of retries with a disturbed repeat kept.
        let cases = [(0.0, 0), (1e-6, 2), (0.6e-3, 3)];
        let mut all = String::new();
        for (waited, discarded) in cases {
            r.timing = Some(timing(waited, discarded));
            all.push_str(&format!("waited {waited} s, {discarded} discarded:\n{}", shown(&r)));
        }
        expect_test::expect![[r#"
            waited 0 s, 0 discarded:
            |  VL  256: ok           median 1.100 ms/call, spread 18.2 % (3 repeats x 10 calls) [native]
            |            repeats (per call): 1.000 ms, 1.200 ms, 1.100 ms
            waited 0.000001 s, 2 discarded:
            |  VL  256: ok           median 1.100 ms/call, spread 18.2 % (3 repeats x 10 calls) [native]
            |            repeats (per call): 1.000 ms, 1.200 ms, 1.100 ms
            |            2 repeats timed again: other tasks held the CPU
            waited 0.0006 s, 3 discarded:
            |  VL  256: ok           median 1.100 ms/call, spread 18.2 % (3 repeats x 10 calls) [native]
            |            repeats (per call): 1.000 ms, 1.200 ms, 1.100 ms
            |            3 repeats timed again: other tasks held the CPU; a kept repeat waited 50 % of its time for the CPU: the machine is busy, the timing is too slow
        "#]]
        .assert_eq(&all);
    }

    #[test]
    fn seconds_get_a_unit() {
        assert_eq!(format_seconds(2.5e-9), "2.5 ns");
        assert_eq!(format_seconds(1.25e-5), "12.500 us");
        assert_eq!(format_seconds(0.02), "20.000 ms");
        assert_eq!(format_seconds(3.0), "3.000 s");
    }
}

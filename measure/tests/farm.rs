//! The farm: a batch with crashing, hanging and wrong candidates, overlap of builders and runners (none with a runner that times this machine), queueing vs timeouts, runner faults.
//!
//! Faulty kernels cannot come out of a valid schedule, so the candidates
//! that crash, hang or compute a wrong result are hand-written C kernels
//! compiled with clang-19 by `common::CraftedBuilder`; every other candidate
//! is scheduled, lowered and compiled by the real `LlvmBuilder`.
//!
//! Overlap and dispatch are shown by construction, not by timing: a gated
//! builder and a gated runner hold builds and runs until the test releases
//! them, so "a run starts while a build is held" cannot depend on how loaded
//! the machine is.

mod common;

use async_trait::async_trait;
use common::{matmul_traces, scale_add_c, scale_add_traces, target, trace, workload, CraftedBuilder};
use scaletune_codegen::target::Target;
use scaletune_measure::builder::{BuildError, Builder};
use scaletune_measure::farm::EventKind;
use scaletune_measure::runner::RunnerFault;
use scaletune_measure::{
    ArtifactCache, Built, Candidate, Farm, FaultPolicy, LlvmBuilder, MachineLock, NativeRunner, Runner, Status,
    TimingProtocol, VlMeasurement,
};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

fn quick() -> TimingProtocol {
    TimingProtocol {
        warmup: 1,
        number: 1,
        repeat: 3,
        min_repeat_ms: 2,
        flush_cache: false,
        pin_core: None,
        threads: None,
    }
}

fn natives(n: usize, protocol: TimingProtocol) -> Vec<Arc<dyn Runner>> {
    (0..n)
        .map(|i| Arc::new(NativeRunner::new(protocol.clone()).with_name(format!("native-{i}"))) as Arc<dyn Runner>)
        .collect()
}

fn crafted(sources: &[(u64, String)]) -> CraftedBuilder {
    CraftedBuilder { llvm: LlvmBuilder::new(), sources: sources.iter().cloned().collect() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_twenty_survives_a_crash_a_hang_and_a_wrong_result() {
    const SEGV: u64 = 3;
    const HANG: u64 = 8;
    const WRONG: u64 = 14;
    let host = target("host");
    let cache_dir = tempfile::tempdir().expect("temp dir");
    let llvm = LlvmBuilder::new().with_cache(ArtifactCache::new(cache_dir.path()).expect("cache"));
    let sa = |n: usize| workload(&format!("scale_add:N={n}"));
    let builder = CraftedBuilder {
        llvm,
        sources: HashMap::from([
            (SEGV, scale_add_c(64, "*(volatile float *)(uintptr_t)16 = s;")),
            (HANG, scale_add_c(64, "volatile int spin = 1; while (spin) {}")),
            (WRONG, scale_add_c(64, "y[5] = -y[5] - 1.0f;")),
        ]),
    };
    // 17 real schedules: scale_add at three sizes x 5 traces, and 2 tiled matmuls (`+=` kernels).
    let mut real: Vec<(Arc<_>, _)> = Vec::new();
    for n in [203, 1000, 4096] {
        real.extend(scale_add_traces().into_iter().map(|tr| (sa(n), tr)));
    }
    let mm = workload("matmul:M=19,N=33,K=7");
    real.extend(matmul_traces().into_iter().skip(1).map(|tr| (Arc::clone(&mm), tr)));
    assert_eq!(real.len(), 17);
    let mut real = real.into_iter();
    let candidates: Vec<Candidate> = (0..20u64)
        .map(|id| match id {
            SEGV | HANG | WRONG => {
                let c = Candidate::new(id, sa(64), Arc::clone(&host), scale_add_traces()[0].clone());
                if id == HANG {
                    c.with_timeout(Duration::from_millis(1500))
                } else {
                    c
                }
            }
            _ => {
                let (w, tr) = real.next().expect("17 real candidates");
                Candidate::new(id, w, Arc::clone(&host), tr).with_timeout(Duration::from_secs(30))
            }
        })
        .collect();

    let farm = Farm::new(Arc::new(builder), 2, natives(2, quick()));
    let mut batch = farm.submit(candidates);
    let mut arrived = Vec::new();
    while let Some(m) = batch.next().await {
        arrived.push(m);
    }
    let report = batch.finish().await;
    assert!(report.measurements.is_empty(), "everything was already streamed");
    assert_eq!(arrived.len(), 20);
    let mut ids: Vec<u64> = arrived.iter().map(|m| m.candidate).collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..20).collect::<Vec<_>>());

    for m in &arrived {
        assert_eq!(m.runs.len(), 1, "{m:?}");
        let run = &m.runs[0];
        assert!(run.runner.starts_with("native-"), "{m:?}");
        match m.candidate {
            SEGV => {
                assert_eq!(m.status, Status::RunError, "{m:?}");
                assert!(m.message.contains("SIGSEGV"), "{}", m.message);
            }
            HANG => {
                assert_eq!(m.status, Status::Timeout, "{m:?}");
                assert!(m.message.contains("timed out after 1.5 s"), "{}", m.message);
            }
            WRONG => {
                assert_eq!(m.status, Status::WrongResult, "{m:?}");
                assert!(m.message.contains("first at flat index 5 = Y[5]"), "{}", m.message);
            }
            _ => {
                assert_eq!(m.status, Status::Ok, "candidate {}: {}", m.candidate, m.message);
                assert_eq!(m.artifact.len(), 64);
                assert!(m.build_s > 0.0);
                let t = run.timing.as_ref().expect("timed");
                assert_eq!(t.repeats_s.len(), 3);
                assert!(t.median_s > 0.0 && t.median_s < 0.01, "{t:?}");
                assert!(t.repeats_s.iter().all(|&s| s > 0.0));
            }
        }
    }

    // One build and one run per candidate, each run after its build, on
    // both runners. (That runs overlap builds and each other, and that no
    // slot idles while a built candidate waits, is shown by construction in
    // `a_run_starts_while_a_build_is_held_and_no_built_candidate_waits_for_one`.)
    let tl = &report.timeline;
    assert_eq!(tl.builds().len(), 20);
    assert_eq!(tl.runs().len(), 20);
    let built_at: HashMap<u64, Duration> = tl.builds().iter().map(|b| (b.candidate, b.end)).collect();
    assert!(tl.runs().iter().all(|r| r.start >= built_at[&r.candidate]), "{tl:#?}");
    let slots: HashSet<Option<usize>> = tl.runs().iter().map(|r| r.slot).collect();
    assert_eq!(slots.len(), 2, "both runners got work: {tl:#?}");
    // The hang held its slot until it was killed at its timeout.
    let hang = tl.runs().into_iter().find(|s| s.candidate == HANG).expect("hang ran");
    assert!(hang.end - hang.start >= Duration::from_millis(1500), "{hang:?}");
}

/// A door per candidate id: `wait` blocks until the test `open`s it.
#[derive(Default)]
struct Doors {
    open: Mutex<HashSet<u64>>,
    changed: Condvar,
}

impl Doors {
    fn open(&self, id: u64) {
        self.open.lock().expect("lock").insert(id);
        self.changed.notify_all();
    }

    fn open_all(&self, ids: impl IntoIterator<Item = u64>) {
        for id in ids {
            self.open(id);
        }
    }

    fn wait(&self, id: u64) {
        let mut open = self.open.lock().expect("lock");
        while !open.contains(&id) {
            open = self.changed.wait(open).expect("wait");
        }
    }
}

/// What the gated builder and runner tell the test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sign {
    BuildEntered(u64),
    RunStarted(u64),
}

/// Hands out prebuilt harnesses, each once its build door is open.
struct GatedBuilder {
    built: Mutex<HashMap<u64, Built>>,
    doors: Arc<Doors>,
    signs: Mutex<mpsc::Sender<Sign>>,
}

impl Builder for GatedBuilder {
    fn build(&self, c: &Candidate) -> Result<Built, BuildError> {
        let _ = self.signs.lock().expect("lock").send(Sign::BuildEntered(c.id));
        self.doors.wait(c.id);
        self.built.lock().expect("lock").remove(&c.id).ok_or_else(|| BuildError::Other(format!("no harness {}", c.id)))
    }
}

/// A runner with two slots whose runs end (ok) once their door is open; executes nothing.
struct GatedRunner {
    doors: Arc<Doors>,
    signs: Mutex<mpsc::Sender<Sign>>,
}

#[async_trait]
impl Runner for GatedRunner {
    fn name(&self) -> String {
        "gated".into()
    }
    fn accepts(&self, target: &Target, _vl_bits: u32) -> bool {
        target.is_native()
    }
    fn slots(&self) -> usize {
        2
    }
    async fn run(&self, built: Arc<Built>, vl_bits: &[u32]) -> Vec<VlMeasurement> {
        let id = built.candidate;
        let _ = self.signs.lock().expect("lock").send(Sign::RunStarted(id));
        let doors = Arc::clone(&self.doors);
        tokio::task::spawn_blocking(move || doors.wait(id)).await.expect("door");
        vl_bits.iter().map(|&vl| VlMeasurement::bare(vl, Status::Ok, "gated", "")).collect()
    }
}

/// Waits for the next sign (a minute is far beyond any scheduling delay: only a farm that never sends it fails).
fn next_sign(signs: &mpsc::Receiver<Sign>) -> Sign {
    signs.recv_timeout(Duration::from_secs(60)).expect("the farm went on")
}

#[test]
fn a_run_starts_while_a_build_is_held_and_no_built_candidate_waits_for_one() {
    let (w, t) = (workload("scale_add:N=64"), target("host"));
    let object = common::compile_c(&t, &scale_add_c(64, ""));
    let harness = |id: u64| {
        let req = scaletune_measure::CheckRequest {
            workload: &w,
            target: &t,
            object: &object,
            symbol: "kernel",
            vl_bits: vec![],
            seed: 1,
            timeout: Duration::from_secs(30),
            work_dir: None,
        };
        let harness = scaletune_measure::Harness::build(&req).expect("harness");
        Built::new(id, format!("crafted-{id}"), harness, 0.0)
    };
    let (build_doors, run_doors) = (Arc::new(Doors::default()), Arc::new(Doors::default()));
    let (tx, signs) = mpsc::channel();
    let builder = GatedBuilder {
        built: Mutex::new((0..4).map(|id| (id, harness(id))).collect()),
        doors: Arc::clone(&build_doors),
        signs: Mutex::new(tx.clone()),
    };
    let runner = GatedRunner { doors: Arc::clone(&run_doors), signs: Mutex::new(tx) };
    let candidates: Vec<Candidate> =
        (0..4).map(|id| Candidate::new(id, Arc::clone(&w), Arc::clone(&t), scale_add_traces()[0].clone())).collect();
    // Two build workers, one runner with two slots. Candidates 0 to 2 build at
    // once; candidate 3's build is held until the end.
    let farm = Farm::new(Arc::new(builder), 2, vec![Arc::new(runner)]).with_max_ahead(8);
    build_doors.open_all(0..3);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("runtime");
    let batch = {
        let _entered = rt.enter();
        farm.submit(candidates)
    };
    // Both slots take a built candidate while no run has ended, and
    // candidate 3's build has begun and is held: runs overlap each other and a build.
    let mut started = Vec::new();
    let mut build_3_entered = false;
    while started.len() < 2 || !build_3_entered {
        match next_sign(&signs) {
            Sign::RunStarted(id) => started.push(id),
            Sign::BuildEntered(3) => build_3_entered = true,
            Sign::BuildEntered(_) => {}
        }
    }
    assert!(started.iter().all(|id| *id < 3), "{started:?}");
    // The third built candidate waits for a slot, not for the held build:
    // ending one run (the other still held) starts it.
    run_doors.open(started[0]);
    let third = loop {
        if let Sign::RunStarted(id) = next_sign(&signs) {
            break id;
        }
    };
    assert!(third < 3 && !started.contains(&third), "{third} after {started:?}");
    build_doors.open(3);
    run_doors.open_all(0..4);
    let report = rt.block_on(batch.finish());
    assert_eq!(report.measurements.len(), 4);
    assert!(report.measurements.iter().all(|m| m.status == Status::Ok), "{:?}", report.measurements);
    let tl = &report.timeline;
    assert!(tl.max_concurrent_runs() >= 2, "{tl:#?}");
    assert!(tl.build_run_overlap() > Duration::ZERO, "{tl:#?}");
    // In the timeline, too: the third run started before candidate 3's build ended.
    let build_3_end = tl.builds().iter().find(|b| b.candidate == 3).expect("build 3").end;
    let third_start = tl.runs().iter().find(|r| r.candidate == third).expect("third run").start;
    assert!(third_start <= build_3_end, "{tl:#?}");
}

/// Hands out harnesses built before the batch, each after `delay` (zero:
/// every build ends at once).
struct Prebuilt {
    harnesses: Mutex<HashMap<u64, Built>>,
    delay: Duration,
}

impl Builder for Prebuilt {
    fn build(&self, c: &Candidate) -> Result<Built, BuildError> {
        std::thread::sleep(self.delay);
        let harness = self.harnesses.lock().expect("lock").remove(&c.id);
        harness.ok_or_else(|| BuildError::Other(format!("no harness for {}", c.id)))
    }
}

/// `n` candidates of `scale_add:N=256` whose kernel runs `body` first,
/// with `timeout`, and a builder handing out their harnesses after `delay`.
fn crafted_batch(n: u64, body: &str, timeout: Duration, delay: Duration) -> (Prebuilt, Vec<Candidate>) {
    let (w, t) = (workload("scale_add:N=256"), target("host"));
    let source = scale_add_c(256, body);
    let harnesses = (0..n).map(|id| (id, common::crafted_built(id, &w, &t, &source, timeout))).collect();
    let candidates = (0..n)
        .map(|id| {
            Candidate::new(id, Arc::clone(&w), Arc::clone(&t), scale_add_traces()[0].clone()).with_timeout(timeout)
        })
        .collect();
    (Prebuilt { harnesses: Mutex::new(harnesses), delay }, candidates)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_build_runs_while_the_native_runner_times_a_candidate() {
    // Six candidates, two build workers, one native runner whose runs take
    // about 60 ms (a checked call and two repeats of a kernel that sleeps
    // 20 ms). A runner that does not time this machine overlaps runs and
    // builds (`a_run_starts_while_a_build_is_held_and_no_built_candidate_waits_for_one`).
    let protocol = TimingProtocol { warmup: 0, number: 1, repeat: 2, min_repeat_ms: 0, ..quick() };
    let (builder, candidates) = crafted_batch(6, "usleep(20000);", Duration::from_secs(30), Duration::from_millis(40));
    let farm = Farm::new(Arc::new(builder), 2, natives(1, protocol)).with_max_ahead(16);
    let report = farm.measure(candidates).await;
    assert_eq!(report.measurements.len(), 6);
    assert!(report.measurements.iter().all(|m| m.status == Status::Ok), "{:?}", report.measurements);
    let tl = &report.timeline;
    assert_eq!((tl.builds().len(), tl.runs().len()), (6, 6));
    assert_eq!(tl.build_run_overlap(), Duration::ZERO, "{tl:#?}");
    // The two workers still build at the same time (the first two builds
    // start before anything is built to run).
    let builds = tl.builds();
    let together =
        builds.iter().any(|x| builds.iter().any(|y| x.candidate != y.candidate && x.start < y.end && y.start < x.end));
    assert!(together, "{tl:#?}");
}

/// Wall-clock spans of work, from any thread.
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<(Instant, Instant)>>>);

impl Spans {
    fn add(&self, start: Instant) {
        self.0.lock().expect("lock").push((start, Instant::now()));
    }
    fn all(&self) -> Vec<(Instant, Instant)> {
        self.0.lock().expect("lock").clone()
    }
}

/// A builder that takes `delay` per build and records each build's span.
struct SlowBuilder(Prebuilt, Spans);

impl Builder for SlowBuilder {
    fn build(&self, c: &Candidate) -> Result<Built, BuildError> {
        let start = Instant::now();
        let built = self.0.build(c);
        self.1.add(start);
        built
    }
}

/// Where a [`SpannedRunner`] says its runs happen.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Where {
    /// Timed on this machine (the native runner).
    Timed,
    /// On this machine, untimed (as QEMU runs are).
    Untimed,
    /// Elsewhere (as a remote agent's are).
    Remote,
}

/// A native runner that records each run's span and says its runs happen
/// where the test wants.
struct SpannedRunner(NativeRunner, Spans, Where);

#[async_trait]
impl Runner for SpannedRunner {
    fn name(&self) -> String {
        self.0.name()
    }
    fn accepts(&self, t: &Target, vl: u32) -> bool {
        self.0.accepts(t, vl)
    }
    fn times_this_machine(&self) -> bool {
        self.2 == Where::Timed
    }
    fn runs_on_this_machine(&self) -> bool {
        self.2 != Where::Remote
    }
    async fn run(&self, built: Arc<Built>, vl_bits: &[u32]) -> Vec<VlMeasurement> {
        let start = Instant::now();
        let out = self.0.run(built, vl_bits).await;
        self.1.add(start);
        out
    }
}

/// Two farms on one lock directory, as two processes on one machine: one
/// times candidates natively, the other builds here and runs its
/// candidates elsewhere, or here untimed (as under QEMU). With the lock, no
/// build or untimed run of the second overlaps a timed run of the first;
/// without it they do overlap (so the test shows something).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_process_builds_nothing_while_a_candidate_is_timed() {
    let protocol = TimingProtocol { warmup: 0, number: 1, repeat: 2, min_repeat_ms: 0, ..quick() };
    let dir = tempfile::tempdir().expect("a lock directory");
    let overlap = |locked: bool, other_runs: Where| {
        let protocol = protocol.clone();
        let dir = dir.path().to_path_buf();
        async move {
            let (runs, load, other) = (Spans::default(), Spans::default(), Spans::default());
            let (timed, timed_batch) = crafted_batch(4, "usleep(20000);", Duration::from_secs(30), Duration::ZERO);
            let (slow, other_batch) = crafted_batch(10, "", Duration::from_secs(30), Duration::from_millis(40));
            let runner = |spans: &Spans, at| {
                vec![Arc::new(SpannedRunner(NativeRunner::new(protocol.clone()), spans.clone(), at)) as Arc<dyn Runner>]
            };
            let mut a = Farm::new(Arc::new(timed), 1, runner(&runs, Where::Timed));
            let mut b = Farm::new(Arc::new(SlowBuilder(slow, load.clone())), 2, runner(&other, other_runs));
            if locked {
                let lock = |d: &std::path::Path| Arc::new(MachineLock::open(d).expect("opens"));
                a = a.with_machine_lock(lock(&dir));
                b = b.with_machine_lock(lock(&dir));
            }
            let (ra, rb) = tokio::join!(a.measure(timed_batch), b.measure(other_batch));
            assert!(ra.measurements.iter().chain(&rb.measurements).all(|m| m.status == Status::Ok));
            let (runs, mut load) = (runs.all(), load.all());
            assert_eq!((runs.len(), load.len()), (4, 10));
            if other_runs == Where::Untimed {
                load.extend(other.all());
            }
            let mut shared = Duration::ZERO;
            for &(rs, re) in &runs {
                for &(bs, be) in &load {
                    shared += re.min(be).saturating_duration_since(rs.max(bs));
                }
            }
            shared
        }
    };
    assert_eq!(overlap(true, Where::Remote).await, Duration::ZERO, "a build of the other farm ran during a timed run");
    assert_eq!(
        overlap(true, Where::Untimed).await,
        Duration::ZERO,
        "the other farm's builds or untimed runs overlapped"
    );
    assert!(overlap(false, Where::Remote).await > Duration::ZERO, "without the lock the two farms overlap");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_in_the_queue_does_not_count_toward_the_timeout() {
    // One slot; each run is five calls of a kernel that sleeps 100 ms (the
    // checked call and 4 repeats of one call), so about 0.5 s whatever the
    // load; the timeout is 2 s; all seven candidates are built at once, so
    // the last ones wait in the queue for longer than their timeout.
    let protocol = TimingProtocol { warmup: 0, number: 1, repeat: 4, min_repeat_ms: 0, ..quick() };
    let timeout = Duration::from_secs(2);
    let (builder, candidates) = crafted_batch(7, "usleep(100000);", timeout, Duration::ZERO);
    let farm = Farm::new(Arc::new(builder), 2, natives(1, protocol)).with_max_ahead(16);
    let report = farm.measure(candidates).await;
    assert_eq!(report.measurements.len(), 7);
    for m in &report.measurements {
        assert_eq!(m.status, Status::Ok, "candidate {}: {}", m.candidate, m.message);
        let median = m.runs[0].timing.as_ref().expect("timed").median_s;
        assert!(median > 0.09 && median < 1.0, "{median}");
    }
    let tl = &report.timeline;
    let built_at: HashMap<u64, Duration> = tl.builds().iter().map(|s| (s.candidate, s.end)).collect();
    let longest_wait = tl.runs().iter().map(|r| r.start - built_at[&r.candidate]).max().expect("runs");
    assert!(longest_wait > timeout, "longest queue wait {longest_wait:?}");
    assert_eq!(tl.max_concurrent_runs(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn build_errors_and_unrunnable_vector_lengths_are_results() {
    let (w, host, sve) = (workload("scale_add:N=100"), target("host"), target("sve-generic"));
    let vl = host.default_vl_bits[0];
    let candidates = vec![
        Candidate::new(0, Arc::clone(&w), Arc::clone(&host), trace("b = get_block(\"Nope\")\n")),
        Candidate::new(1, Arc::clone(&w), Arc::clone(&sve), scale_add_traces()[1].clone()).with_vl_bits(vec![256]),
        Candidate::new(2, Arc::clone(&w), Arc::clone(&host), scale_add_traces()[1].clone())
            .with_vl_bits(vec![vl, 4096]),
        Candidate::new(3, Arc::clone(&w), Arc::clone(&host), scale_add_traces()[1].clone()),
        Candidate::new(3, Arc::clone(&w), Arc::clone(&host), scale_add_traces()[2].clone()),
    ];
    let farm = Farm::new(Arc::new(LlvmBuilder::new()), 1, natives(1, quick()));
    let report = farm.measure(candidates).await;
    assert_eq!(report.measurements.len(), 5);
    let bad = report.get(0).expect("0");
    assert_eq!(bad.status, Status::BuildError);
    assert!(bad.message.contains("Nope"), "{}", bad.message);
    let sve_m = report.get(1).expect("1");
    assert_eq!(sve_m.status, Status::Unmeasured, "no runner for it is not the candidate's fault");
    assert!(sve_m.message.contains("no runner accepts target `sve-generic` at VL 256"), "{}", sve_m.message);
    assert!(report.timeline.of(1).iter().all(|e| e.kind == EventKind::Done), "never built");
    let mixed = report.get(2).expect("2");
    assert_eq!(
        mixed.runs.iter().map(|r| (r.vl_bits, r.status)).collect::<Vec<_>>(),
        [(vl, Status::Ok), (4096, Status::Unmeasured)]
    );
    let threes: Vec<_> = report.measurements.iter().filter(|m| m.candidate == 3).collect();
    assert_eq!(threes.len(), 2);
    assert!(threes.iter().any(|m| m.status == Status::Ok));
    assert!(threes.iter().any(|m| m.message.contains("duplicate candidate id 3")));
}

/// Fault handling that waits milliseconds, not seconds.
fn fast_policy() -> FaultPolicy {
    FaultPolicy {
        probes: 3,
        probe_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(20),
        busy_backoff: Duration::from_millis(5),
        max_faults_per_run: 3,
    }
}

/// A runner that accepts host candidates but is gone: every run is a runner fault, every probe fails.
#[derive(Default)]
struct Vanished {
    runs: AtomicUsize,
    probes: AtomicUsize,
}

#[async_trait]
impl Runner for Vanished {
    fn name(&self) -> String {
        "agent@gone".into()
    }
    fn accepts(&self, target: &Target, _vl_bits: u32) -> bool {
        target.is_native()
    }
    async fn run(&self, _built: Arc<Built>, _vl_bits: &[u32]) -> Vec<VlMeasurement> {
        unreachable!("the farm calls try_run")
    }
    async fn try_run(&self, _built: Arc<Built>, _vl_bits: &[u32]) -> Result<Vec<VlMeasurement>, RunnerFault> {
        self.runs.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(Duration::from_millis(50)).await;
        Err(RunnerFault::unreachable(self.name(), "connection reset"))
    }
    async fn probe(&self) -> Result<(), RunnerFault> {
        self.probes.fetch_add(1, Ordering::Relaxed);
        Err(RunnerFault::unreachable(self.name(), "connection refused"))
    }
}

/// A native runner whose first `flaky_runs` runs fail with a fault of `kind`
/// (unreachable: its probes succeed), and which fails every run of `cursed`.
struct Flaky {
    native: NativeRunner,
    kind: scaletune_measure::runner::FaultKind,
    flaky_runs: usize,
    cursed: Option<u64>,
    runs: AtomicUsize,
    probes: AtomicUsize,
}

impl Flaky {
    fn new(kind: scaletune_measure::runner::FaultKind, flaky_runs: usize, cursed: Option<u64>) -> Flaky {
        let native = NativeRunner::new(quick()).with_name("flaky");
        Flaky { native, kind, flaky_runs, cursed, runs: AtomicUsize::new(0), probes: AtomicUsize::new(0) }
    }
}

#[async_trait]
impl Runner for Flaky {
    fn name(&self) -> String {
        "flaky".into()
    }
    fn accepts(&self, target: &Target, vl_bits: u32) -> bool {
        self.native.accepts(target, vl_bits)
    }
    async fn run(&self, _built: Arc<Built>, _vl_bits: &[u32]) -> Vec<VlMeasurement> {
        unreachable!("the farm calls try_run")
    }
    async fn try_run(&self, built: Arc<Built>, vl_bits: &[u32]) -> Result<Vec<VlMeasurement>, RunnerFault> {
        let n = self.runs.fetch_add(1, Ordering::Relaxed);
        if n < self.flaky_runs || self.cursed == Some(built.candidate) {
            return Err(RunnerFault::new(self.name(), self.kind, format!("fault on run {n}")));
        }
        Ok(self.native.run(built, vl_bits).await)
    }
    async fn probe(&self) -> Result<(), RunnerFault> {
        self.probes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// A runner with a bug.
struct Panicky;

#[async_trait]
impl Runner for Panicky {
    fn name(&self) -> String {
        "panicky".into()
    }
    fn accepts(&self, target: &Target, _vl_bits: u32) -> bool {
        target.is_native()
    }
    async fn run(&self, built: Arc<Built>, _vl_bits: &[u32]) -> Vec<VlMeasurement> {
        panic!("runner bug on candidate {}", built.candidate)
    }
}

fn four_candidates() -> (Vec<Candidate>, Vec<(u64, String)>) {
    let (w, t) = (workload("scale_add:N=64"), target("host"));
    let sources: Vec<(u64, String)> = (0..4).map(|id| (id, scale_add_c(64, ""))).collect();
    let candidates: Vec<Candidate> =
        (0..4).map(|id| Candidate::new(id, Arc::clone(&w), Arc::clone(&t), scale_add_traces()[0].clone())).collect();
    (candidates, sources)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_that_disappears_hands_its_work_to_the_others() {
    let (candidates, sources) = four_candidates();
    let vanished = Arc::new(Vanished::default());
    let mut runners: Vec<Arc<dyn Runner>> = vec![vanished.clone()];
    runners.extend(natives(1, quick()));
    let farm = Farm::new(Arc::new(crafted(&sources)), 2, runners).with_fault_policy(fast_policy());
    let report = farm.measure(candidates.clone()).await;
    assert_eq!(report.measurements.len(), 4);
    for m in &report.measurements {
        assert_eq!(m.status, Status::Ok, "{m:?}");
        assert_eq!(m.runs[0].runner, "native-0");
    }
    assert_eq!(vanished.runs.load(Ordering::Relaxed), 1, "no new work while it is probed, none after");
    assert_eq!(report.timeline.events.iter().filter(|e| e.kind == EventKind::RunnerFault).count(), 1);

    // With no other runner, the work waits while the runner is re-probed; when
    // every probe has failed it is `unmeasured` (not the candidates' fault),
    // with the runner's fault, and the batch still ends.
    let gone = Arc::new(Vanished::default());
    let alone = Farm::new(Arc::new(crafted(&sources)), 1, vec![gone.clone()]).with_fault_policy(fast_policy());
    let report = alone.measure(candidates.clone()).await;
    assert_eq!(report.measurements.len(), 4);
    for m in &report.measurements {
        assert_eq!(m.status, Status::Unmeasured, "{m:?}");
        assert!(m.message.contains("no runner left") && m.message.contains("connection"), "{}", m.message);
    }
    assert_eq!(gone.runs.load(Ordering::Relaxed), 1, "one run, then probes only");
    assert_eq!(gone.probes.load(Ordering::Relaxed), 3, "a bounded number of probes");

    // A panicking runner leaves that run unmeasured, not a dead batch.
    let buggy = Farm::new(Arc::new(crafted(&sources)), 1, vec![Arc::new(Panicky)]);
    let report = buggy.measure(candidates).await;
    assert_eq!(report.measurements.len(), 4);
    for m in &report.measurements {
        assert_eq!(m.status, Status::Unmeasured);
        assert!(m.message.contains("runner panicky panicked"), "{}", m.message);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_that_answers_its_probe_or_was_busy_gets_work_again() {
    use scaletune_measure::runner::FaultKind;
    let (candidates, sources) = four_candidates();
    // Alone, a runner whose first run faults: it answers the probe and measures everything.
    let flaky = Arc::new(Flaky::new(FaultKind::Unreachable, 1, None));
    let farm = Farm::new(Arc::new(crafted(&sources)), 1, vec![flaky.clone()]).with_fault_policy(fast_policy());
    let report = farm.measure(candidates.clone()).await;
    assert_eq!(report.measurements.len(), 4);
    assert!(report.measurements.iter().all(|m| m.status == Status::Ok), "{:?}", report.measurements);
    assert!(flaky.probes.load(Ordering::Relaxed) >= 1);
    assert_eq!(flaky.runs.load(Ordering::Relaxed), 5, "the faulted run was retried once");

    // A busy runner (503: no free slot) is not probed, and not given up.
    let busy = Arc::new(Flaky::new(FaultKind::Busy, 2, None));
    let farm = Farm::new(Arc::new(crafted(&sources)), 1, vec![busy.clone()]).with_fault_policy(fast_policy());
    let report = farm.measure(candidates.clone()).await;
    assert!(report.measurements.iter().all(|m| m.status == Status::Ok), "{:?}", report.measurements);
    assert_eq!(busy.probes.load(Ordering::Relaxed), 0);
    assert_eq!(busy.runs.load(Ordering::Relaxed), 6);

    // Work that meets a fault on every attempt is unmeasured after its fault
    // budget; the rest of the batch is measured on the same runner.
    let cursed = Arc::new(Flaky::new(FaultKind::Unreachable, 0, Some(2)));
    let farm = Farm::new(Arc::new(crafted(&sources)), 1, vec![cursed.clone()]).with_fault_policy(fast_policy());
    let report = farm.measure(candidates).await;
    for m in &report.measurements {
        if m.candidate == 2 {
            assert_eq!(m.status, Status::Unmeasured, "{m:?}");
            assert!(m.message.contains("3 runner faults"), "{}", m.message);
        } else {
            assert_eq!(m.status, Status::Ok, "{m:?}");
        }
    }
}

//! Remote agents on 127.0.0.1: a measured batch, a refused token, an agent stopped mid-batch, one that comes back, a crash that stays put, slots and queueing, TLS.
//!
//! Every agent is served by the library (`Agent::serve`) on a tokio runtime
//! of its own, on an ephemeral loopback port; "killing" an agent shuts that
//! runtime down, which drops its listener and every open connection at once,
//! as the death of an agent process would. Candidates are real schedules
//! built by the LLVM builder and hand-written C kernels (`common`) that
//! crash, hang, sleep or compute wrong results.

mod common;

use common::{compile_c, matmul_traces, scale_add_c, scale_add_traces, target, workload, CraftedBuilder};
use scaletune_codegen::target::Target;
use scaletune_measure::agent::api::{AgentInfo, RunRequest, RunResponse, API_VERSION};
use scaletune_measure::agent::{Agent, AgentConfig, TlsIdentity, Token};
use scaletune_measure::farm::EventKind;
use scaletune_measure::harness::ProcessEnding;
use scaletune_measure::runner::remote::{AgentEndpoint, RemoteError};
use scaletune_measure::runner::FaultKind;
use scaletune_measure::{
    Built, Candidate, CheckRequest, Farm, FaultPolicy, Harness, LlvmBuilder, Prebuilt, RemoteRunner, Runner, Status,
    TimingProtocol,
};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

const TOKEN: &str = "test-token-4f1d2c9a7b3e8d6f";

fn token() -> Token {
    Token::new(TOKEN).expect("token")
}

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

/// One checked call and `repeat` timed calls, nothing else: a run of a kernel that sleeps takes a known time.
fn calls(repeat: u32) -> TimingProtocol {
    TimingProtocol { warmup: 0, number: 1, repeat, min_repeat_ms: 0, flush_cache: false, pin_core: None, threads: None }
}

/// An agent serving on its own runtime.
struct TestAgent {
    agent: Agent,
    addr: SocketAddr,
    rt: Option<tokio::runtime::Runtime>,
}

impl TestAgent {
    fn start(slots: usize, tls: Option<TlsIdentity>) -> TestAgent {
        TestAgent::start_on("127.0.0.1:0".parse().expect("addr"), slots, tls)
    }

    /// An agent on `addr` (port 0: an ephemeral port).
    fn start_on(addr: SocketAddr, slots: usize, tls: Option<TlsIdentity>) -> TestAgent {
        TestAgent::start_with(addr, slots, tls, token())
    }

    /// An agent on `addr` that wants `token`. A port that a killed agent's
    /// runtime has not let go of yet is tried again for up to a minute.
    fn start_with(addr: SocketAddr, slots: usize, tls: Option<TlsIdentity>, token: Token) -> TestAgent {
        let mut config = AgentConfig::new(Target::load("host").expect("host"), token);
        config.slots = slots;
        let agent = Agent::new(&config).expect("agent");
        let start = Instant::now();
        let listener = loop {
            match std::net::TcpListener::bind(addr) {
                Ok(l) => break l,
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && start.elapsed() < Duration::from_secs(60) => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => panic!("bind {addr}: {e}"),
            }
        };
        let addr = listener.local_addr().expect("addr");
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("rt");
        rt.spawn(agent.clone().serve(listener, tls, std::future::pending()));
        TestAgent { agent, addr, rt: Some(rt) }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn endpoint(&self, name: &str) -> AgentEndpoint {
        AgentEndpoint::new(name, self.url(), token())
    }

    /// Stops the agent at once: listener and connections are dropped.
    fn kill(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl Drop for TestAgent {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn connect(agent: &TestAgent, name: &str, protocol: TimingProtocol) -> RemoteRunner {
    RemoteRunner::connect(agent.endpoint(name), protocol).await.unwrap_or_else(|e| panic!("connect: {e}"))
}

/// Probes quickly, and often enough to outlast a restart of the agent.
fn patient() -> FaultPolicy {
    FaultPolicy {
        probes: 10,
        probe_backoff: Duration::from_millis(50),
        max_backoff: Duration::from_secs(2),
        busy_backoff: Duration::from_millis(50),
        max_faults_per_run: 3,
    }
}

/// Harnesses of one C kernel (compiled once) for candidates `ids` of `scale_add:N=n`.
fn prebuilt(ids: std::ops::Range<u64>, n: usize, extra: &str, timeout: Duration) -> (Vec<Candidate>, Prebuilt) {
    let (candidates, built) = prebuilt_harnesses(ids, n, extra, timeout);
    (candidates, Prebuilt::new(built))
}

/// [`prebuilt`]'s candidates and harnesses, in id order.
fn prebuilt_harnesses(
    ids: std::ops::Range<u64>,
    n: usize,
    extra: &str,
    timeout: Duration,
) -> (Vec<Candidate>, Vec<Built>) {
    let (w, t) = (workload(&format!("scale_add:N={n}")), target("host"));
    let object = compile_c(&t, &scale_add_c(n, extra));
    let mut built = Vec::new();
    let mut candidates = Vec::new();
    for id in ids {
        let req = CheckRequest {
            workload: &w,
            target: &t,
            object: &object,
            symbol: "kernel",
            vl_bits: vec![],
            seed: 1,
            timeout,
            work_dir: None,
        };
        let harness = Harness::build(&req).expect("harness");
        built.push(Built::new(id, format!("crafted-{id}"), harness, 0.0));
        let c = Candidate::new(id, Arc::clone(&w), Arc::clone(&t), scale_add_traces()[0].clone());
        candidates.push(c.with_timeout(timeout));
    }
    (candidates, built)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_measures_a_batch_with_timings_and_verdicts() {
    const WRONG: u64 = 6;
    let agent = TestAgent::start(2, None);
    let runner = connect(&agent, "a", quick()).await;
    let host = target("host");
    let info: &AgentInfo = runner.info();
    assert_eq!((info.api_version, info.slots), (API_VERSION, 2));
    assert_eq!((info.target.name.as_str(), &info.target.cpu), ("host", &host.cpu));
    assert_eq!(info.vl_bits, host.default_vl_bits);
    let vl = host.default_vl_bits[0];
    assert!(runner.accepts(&host, vl));
    assert!(!runner.accepts(&host, vl * 2));
    assert!(!runner.accepts(&target("sve-generic"), 256));

    // Five real schedules of scale_add and a tiled matmul, compiled by LLVM, and one wrong kernel.
    let sa = workload("scale_add:N=1000");
    let mut candidates: Vec<Candidate> = scale_add_traces()
        .into_iter()
        .enumerate()
        .map(|(i, tr)| Candidate::new(i as u64, Arc::clone(&sa), Arc::clone(&host), tr))
        .collect();
    candidates.push(Candidate::new(5, workload("matmul:M=19,N=33,K=7"), Arc::clone(&host), matmul_traces()[1].clone()));
    candidates.push(Candidate::new(
        WRONG,
        workload("scale_add:N=64"),
        Arc::clone(&host),
        scale_add_traces()[0].clone(),
    ));
    let builder = CraftedBuilder {
        llvm: LlvmBuilder::new(),
        sources: HashMap::from([(WRONG, scale_add_c(64, "y[5] = -y[5] - 1.0f;"))]),
    };
    let farm = Farm::new(Arc::new(builder), 2, vec![Arc::new(runner)]);
    let report = farm.measure(candidates).await;
    assert_eq!(report.measurements.len(), 7);
    for m in &report.measurements {
        assert_eq!(m.runs.len(), 1, "{m:?}");
        let run = &m.runs[0];
        assert_eq!((run.runner.as_str(), run.vl_bits), ("agent@a", vl));
        if m.candidate == WRONG {
            assert_eq!(m.status, Status::WrongResult, "{m:?}");
            assert!(m.message.contains("first at flat index 5 = Y[5]"), "{}", m.message);
            assert!(m.message.contains("on agent@a"), "{}", m.message);
            continue;
        }
        assert_eq!(m.status, Status::Ok, "candidate {}: {}", m.candidate, m.message);
        assert!(run.max_abs_err.is_finite());
        let t = run.timing.as_ref().expect("timed");
        assert_eq!(t.repeats_s.len(), 3);
        assert!(t.median_s > 0.0 && t.median_s < 0.01, "{t:?}");
    }
    assert_eq!(agent.agent.runs_started(), 7);

    // Two slots on one agent: two runs of a 100 ms kernel, both ready at
    // once, overlap (the runs above are too short to rely on that).
    let (slow, ready) = prebuilt(10..12, 128, "usleep(100000);", Duration::from_secs(60));
    let farm = Farm::new(Arc::new(ready), 2, vec![Arc::new(connect(&agent, "b", calls(2)).await)]);
    let report = farm.measure(slow).await;
    assert!(report.measurements.iter().all(|m| m.status == Status::Ok), "{:?}", report.measurements);
    assert!(report.timeline.max_concurrent_runs() >= 2, "two slots on one agent: {:#?}", report.timeline);
}

/// A "driver" that only leaves a trace of having run.
fn marker_script(marker: &std::path::Path) -> Vec<u8> {
    format!("#!/bin/sh\necho ran > '{}'\n", marker.display()).into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_is_refused_and_nothing_runs() {
    let agent = TestAgent::start(1, None);
    let dir = tempfile::tempdir().expect("temp dir");
    let marker = dir.path().join("ran");
    let vl = target("host").default_vl_bits[0];
    let request = RunRequest {
        label: "probe".into(),
        executable: marker_script(&marker),
        input: vec![0; 16],
        vl_bits: vec![vl],
        protocol: quick(),
        timeout_ms: 10_000,
        queue_timeout_ms: 10_000,
    };
    let client = reqwest::Client::new();
    let post = |auth: Option<&str>| {
        let mut r = client.post(format!("{}/run", agent.url())).json(&request);
        if let Some(a) = auth {
            r = r.header("Authorization", a);
        }
        r.send()
    };
    for auth in [Some("Bearer test-token-4f1d2c9a7b3e8d6e"), Some("Bearer "), Some(TOKEN), None] {
        let resp = post(auth).await.expect("the agent answers");
        assert_eq!(resp.status().as_u16(), 401, "{auth:?}");
    }
    let info = client.get(format!("{}/info", agent.url())).bearer_auth("nope-nope-nope-nope").send().await;
    assert_eq!(info.expect("answers").status().as_u16(), 401);
    let refused = RemoteRunner::connect(
        AgentEndpoint::new("a", agent.url(), Token::new("x".repeat(24).as_str()).expect("t")),
        quick(),
    )
    .await;
    assert!(matches!(refused, Err(RemoteError::Unauthorized { .. })), "{refused:?}");
    assert_eq!(agent.agent.runs_started(), 0);
    assert!(!marker.exists(), "an unauthenticated artifact ran");

    // The same request with the token runs (so the probe above would have seen a run).
    let resp = post(Some(&format!("Bearer {TOKEN}"))).await.expect("answers");
    assert_eq!(resp.status().as_u16(), 200);
    let body: RunResponse = resp.json().await.expect("json");
    assert_eq!(body.runs[0].ending, ProcessEnding::Exited { code: 0 });
    assert!(marker.exists());
    assert_eq!(agent.agent.runs_started(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_an_agent_mid_batch_moves_its_work_to_another() {
    // Each run: the checked call and 2 timed calls of a kernel that sleeps 100 ms.
    let (candidates, builder) = prebuilt(0..8, 256, "usleep(100000);", Duration::from_secs(20));
    let mut a = TestAgent::start(1, None);
    let b = TestAgent::start(1, None);
    let runners: Vec<Arc<dyn Runner>> =
        vec![Arc::new(connect(&a, "a", calls(2)).await), Arc::new(connect(&b, "b", calls(2)).await)];
    let farm = Farm::new(Arc::new(builder), 2, runners).with_max_ahead(16);
    let batch = farm.submit(candidates);
    // Stop agent a while it runs its second candidate.
    let start = Instant::now();
    loop {
        let tl = batch.timeline();
        let on_a = |kind| tl.events.iter().filter(|e| e.kind == kind && e.runner.as_deref() == Some("agent@a")).count();
        if on_a(EventKind::RunStart) >= 2 && on_a(EventKind::RunStart) > on_a(EventKind::RunEnd) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "agent a never ran twice: {tl:#?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    a.kill();
    let report = batch.finish().await;
    assert_eq!(report.measurements.len(), 8);
    for m in &report.measurements {
        assert_eq!(m.status, Status::Ok, "candidate {}: {}", m.candidate, m.message);
        let t = m.runs[0].timing.as_ref().expect("timed");
        assert!(t.median_s > 0.09 && t.median_s < 1.0, "{t:?}");
    }
    let faults: Vec<_> = report.timeline.events.iter().filter(|e| e.kind == EventKind::RunnerFault).collect();
    assert_eq!(faults.len(), 1, "{:#?}", report.timeline);
    assert_eq!(faults[0].runner.as_deref(), Some("agent@a"));
    let moved = report.get(faults[0].candidate).expect("moved candidate");
    assert_eq!(moved.runs[0].runner, "agent@b");
    let on = |name: &str| report.measurements.iter().filter(|m| m.runs[0].runner == name).count();
    assert!(on("agent@a") >= 1, "a finished its first candidate");
    assert_eq!(on("agent@a") + on("agent@b"), 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prebuilt_crashes_and_hangs_on_live_agents_are_the_candidates_own_results() {
    const SEGV: u64 = 0;
    const HANG: u64 = 1;
    let (w, t) = (workload("scale_add:N=64"), target("host"));
    let timeout = Duration::from_secs(20);
    let source = |id: u64| match id {
        SEGV => scale_add_c(64, "*(volatile float *)(uintptr_t)16 = s;"),
        HANG => scale_add_c(64, "volatile int spin = 1; while (spin) {}"),
        _ => scale_add_c(64, ""),
    };
    let timeout_of = |id: u64| if id == HANG { Duration::from_millis(800) } else { timeout };
    let built: Vec<Built> = (0..5).map(|id| common::crafted_built(id, &w, &t, &source(id), timeout_of(id))).collect();
    let candidates: Vec<Candidate> =
        (0..5).map(|id| Candidate::new(id, Arc::clone(&w), Arc::clone(&t), scale_add_traces()[0].clone())).collect();
    let (a, b) = (TestAgent::start(1, None), TestAgent::start(1, None));
    let mut gone = TestAgent::start(1, None);
    let gone_runner = connect(&gone, "gone", quick()).await;
    gone.kill();
    // The dead agent comes first, so the farm tries it first.
    let runners: Vec<Arc<dyn Runner>> = vec![
        Arc::new(gone_runner),
        Arc::new(connect(&a, "a", quick()).await),
        Arc::new(connect(&b, "b", quick()).await),
    ];
    let quick_probes = FaultPolicy { probes: 2, probe_backoff: Duration::from_millis(10), ..patient() };
    let prebuilt = Arc::new(Prebuilt::new(built));
    let farm = Farm::new(prebuilt.clone(), 1, runners).with_fault_policy(quick_probes);
    let report = farm.measure(candidates).await;
    assert_eq!(prebuilt.remaining(), 0, "every prebuilt harness was handed out");
    assert_eq!(report.measurements.len(), 5);
    for m in &report.measurements {
        let run = &m.runs[0];
        assert!(run.runner == "agent@a" || run.runner == "agent@b", "{m:?}");
        match m.candidate {
            SEGV => {
                assert_eq!(m.status, Status::RunError, "{m:?}");
                assert!(m.message.contains("SIGSEGV") && m.message.contains(&run.runner), "{}", m.message);
            }
            HANG => {
                assert_eq!(m.status, Status::Timeout, "{m:?}");
                assert!(m.message.contains("timed out after 0.8 s"), "{}", m.message);
            }
            _ => assert_eq!(m.status, Status::Ok, "{m:?}"),
        }
    }
    // One run per candidate on the live agents: the crash and the hang were not retried elsewhere.
    assert_eq!(a.agent.runs_started() + b.agent.runs_started(), 5);
    let runs_of = |id: u64| report.timeline.of(id).iter().filter(|e| e.kind == EventKind::RunEnd).count();
    assert!((0..5).all(|id| runs_of(id) == 1), "{:#?}", report.timeline);
    // Only the dead agent faulted, and at least once (it was tried first).
    let faults: Vec<_> = report.timeline.events.iter().filter(|e| e.kind == EventKind::RunnerFault).collect();
    assert!(!faults.is_empty() && faults.iter().all(|e| e.runner.as_deref() == Some("agent@gone")), "{faults:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_a_farm_a_crash_on_a_live_agent_is_the_candidates_result_and_is_not_retried() {
    const SEGV: u64 = 1;
    const WRONG: u64 = 3;
    let (w, host) = (workload("scale_add:N=64"), target("host"));
    let sources: HashMap<u64, String> = (0..5)
        .map(|id| {
            let extra = match id {
                SEGV => "*(volatile float *)(uintptr_t)16 = s;",
                WRONG => "y[5] = -y[5] - 1.0f;",
                _ => "",
            };
            (id, scale_add_c(64, extra))
        })
        .collect();
    let candidates: Vec<Candidate> =
        (0..5).map(|id| Candidate::new(id, Arc::clone(&w), Arc::clone(&host), scale_add_traces()[0].clone())).collect();
    let (a, b) = (TestAgent::start(1, None), TestAgent::start(1, None));
    let mut gone = TestAgent::start(1, None);
    let gone_runner = connect(&gone, "gone", quick()).await;
    gone.kill();
    let runners: Vec<Arc<dyn Runner>> = vec![
        Arc::new(gone_runner),
        Arc::new(connect(&a, "a", quick()).await),
        Arc::new(connect(&b, "b", quick()).await),
    ];
    let builder = CraftedBuilder { llvm: LlvmBuilder::new(), sources };
    let quick_probes = FaultPolicy { probes: 2, probe_backoff: Duration::from_millis(10), ..patient() };
    let farm = Farm::new(Arc::new(builder), 2, runners).with_fault_policy(quick_probes);
    let report = farm.measure(candidates).await;
    assert_eq!(report.measurements.len(), 5);
    for m in &report.measurements {
        let run = &m.runs[0];
        assert!(run.runner == "agent@a" || run.runner == "agent@b", "{m:?}");
        match m.candidate {
            SEGV => {
                assert_eq!(m.status, Status::RunError, "{m:?}");
                assert!(m.message.contains("SIGSEGV") && m.message.contains(&run.runner), "{}", m.message);
            }
            WRONG => assert_eq!(m.status, Status::WrongResult, "{m:?}"),
            _ => assert_eq!(m.status, Status::Ok, "{m:?}"),
        }
    }
    // Each candidate ran once on a live agent: the crash was not retried, and
    // the work the dead agent faulted on ran elsewhere.
    assert_eq!(a.agent.runs_started() + b.agent.runs_started(), 5);
    let runs_of = |id: u64| report.timeline.of(id).iter().filter(|e| e.kind == EventKind::RunEnd).count();
    assert!((0..5).all(|id| runs_of(id) == 1), "{:#?}", report.timeline);
    let faults: Vec<_> = report.timeline.events.iter().filter(|e| e.kind == EventKind::RunnerFault).collect();
    assert!(faults.iter().all(|e| e.runner.as_deref() == Some("agent@gone")), "{faults:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_restarts_mid_batch_is_probed_back_into_it() {
    // The only agent dies during a run and comes back on the same address:
    // the faulted run is retried there once a probe gets an answer, and the
    // batch is measured, none of it `unmeasured`.
    let (candidates, builder) = prebuilt(0..4, 256, "usleep(100000);", Duration::from_secs(20));
    let mut first = TestAgent::start(1, None);
    let addr = first.addr;
    let runner = Arc::new(connect(&first, "a", calls(2)).await);
    assert!(runner.probe().await.is_ok(), "a live agent answers its probe");
    let farm = Farm::new(Arc::new(builder), 2, vec![runner.clone() as Arc<dyn Runner>])
        .with_max_ahead(16)
        .with_fault_policy(patient());
    let batch = farm.submit(candidates);
    let start = Instant::now();
    loop {
        let tl = batch.timeline();
        let count = |kind| tl.events.iter().filter(|e| e.kind == kind).count();
        if count(EventKind::RunStart) >= 2 && count(EventKind::RunStart) > count(EventKind::RunEnd) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "no second run: {tl:#?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    first.kill();
    let fault = runner.probe().await.expect_err("a dead agent does not answer");
    assert_eq!(fault.kind, FaultKind::Unreachable, "{fault}");
    let second = TestAgent::start_on(addr, 1, None);
    let report = batch.finish().await;
    assert_eq!(report.measurements.len(), 4);
    for m in &report.measurements {
        assert_eq!(m.status, Status::Ok, "candidate {}: {}", m.candidate, m.message);
    }
    let faults = report.timeline.events.iter().filter(|e| e.kind == EventKind::RunnerFault).count();
    assert_eq!(faults, 1, "{:#?}", report.timeline);
    assert!(second.agent.runs_started() >= 2, "the restarted agent ran the faulted candidate and the rest");
    // An agent that comes back with another token refuses the probe: that is for good.
    drop(second);
    let other_token = Token::new("another-token-0123456789").expect("token");
    let _impostor = TestAgent::start_with(addr, 1, None, other_token);
    let fault = runner.probe().await.expect_err("refused");
    assert_eq!(fault.kind, FaultKind::Refused, "{fault}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extra_runs_wait_for_a_slot_and_waiting_is_not_run_time() {
    // One slot; each run is 4 calls of a 100 ms kernel (about 0.4 s); the
    // timeout is 1 s; three runs at once, so the last waits about 0.8 s.
    let timeout = Duration::from_secs(1);
    let (_, built) = prebuilt_harnesses(0..3, 128, "usleep(100000);", timeout);
    let built: Vec<Arc<Built>> = built.into_iter().map(Arc::new).collect();
    let agent = TestAgent::start(1, None);
    let runner = Arc::new(connect(&agent, "a", calls(3)).await);
    let vl = target("host").default_vl_bits[0];
    let start = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for b in &built {
        let (r, b) = (Arc::clone(&runner), Arc::clone(b));
        tasks.spawn(async move { r.try_run(b, &[vl]).await });
    }
    while let Some(joined) = tasks.join_next().await {
        let ms = joined.expect("task").expect("no runner fault");
        assert_eq!(ms[0].status, Status::Ok, "{}", ms[0].message);
    }
    assert!(start.elapsed() > Duration::from_millis(1150), "runs overlapped: {:?}", start.elapsed());

    // With a queue timeout shorter than a run, the waiting request is a runner fault (503), not the candidate's.
    let mut short = agent.endpoint("short");
    short.queue_timeout = Duration::from_millis(50);
    let impatient = Arc::new(RemoteRunner::connect(short, calls(3)).await.expect("connect"));
    let (r1, r2) = (Arc::clone(&impatient), Arc::clone(&impatient));
    let (b1, b2) = (Arc::clone(&built[0]), Arc::clone(&built[1]));
    let vls = [vl];
    let (x, y) = tokio::join!(r1.try_run(b1, &vls), r2.try_run(b2, &vls));
    let fault = match (x, y) {
        (Ok(ms), Err(f)) | (Err(f), Ok(ms)) => {
            assert_eq!(ms[0].status, Status::Ok);
            f
        }
        other => panic!("expected one run and one fault: {other:?}"),
    };
    assert!(fault.message.contains("503") && fault.message.contains("no free slot"), "{fault}");
    assert_eq!(fault.kind, FaultKind::Busy, "a busy agent is not a gone one");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_self_signed_certificate() {
    let rcgen::CertifiedKey { cert, key_pair } =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()]).expect("cert");
    let identity = TlsIdentity::from_pem(cert.pem().as_bytes(), key_pair.serialize_pem().as_bytes()).expect("identity");
    let agent = TestAgent::start(1, Some(identity));
    let https = format!("https://{}", agent.addr);
    let mut trusted = AgentEndpoint::new("tls", &https, token());
    trusted.ca_cert_pem = Some(cert.pem().into_bytes());
    let runner = RemoteRunner::connect(trusted.clone(), quick()).await.unwrap_or_else(|e| panic!("{e}"));
    let (w, t) = (workload("scale_add:N=300"), target("host"));
    let built = Arc::new(common::crafted_built(0, &w, &t, &scale_add_c(300, ""), Duration::from_secs(20)));
    let ms = runner.try_run(built, &t.default_vl_bits).await.expect("no fault");
    assert_eq!(ms[0].status, Status::Ok, "{}", ms[0].message);
    assert_eq!(ms[0].timing.as_ref().expect("timed").repeats_s.len(), 3);

    // Without trusting the certificate, or without TLS, the client gets nowhere.
    let untrusted = RemoteRunner::connect(AgentEndpoint::new("tls", &https, token()), quick()).await;
    match untrusted {
        Err(RemoteError::Unreachable { message, .. }) => assert!(message.contains("certificate"), "{message}"),
        other => panic!("untrusted certificate accepted: {other:?}"),
    }
    let plain = RemoteRunner::connect(agent.endpoint("plain"), quick()).await;
    assert!(matches!(plain, Err(RemoteError::Unreachable { .. })), "{plain:?}");
    let localhost = AgentEndpoint { url: format!("https://localhost:{}", agent.addr.port()), ..trusted };
    assert!(RemoteRunner::connect(localhost, quick()).await.is_ok());
    assert_eq!(agent.agent.runs_started(), 1);
}

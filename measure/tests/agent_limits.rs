//! An agent's limits and its ending of runs: requests beyond the documented bounds are refused before anything runs, a client that goes away cancels its run (its whole process group), a stopping agent drains runs in flight until its deadline and then kills them, and runs happen in a private directory.
//!
//! The "drivers" here are shell scripts: the agent runs whatever executable
//! it is sent, so a script that sleeps, or prints its working directory's
//! mode, exercises the agent without compiling a kernel.

use scaletune_codegen::target::Target;
use scaletune_measure::agent::api::{RunRequest, RunResponse, MAX_VLS_PER_REQUEST};
use scaletune_measure::agent::{Agent, AgentConfig, Token};
use scaletune_measure::harness::ProcessEnding;
use scaletune_measure::TimingProtocol;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

const TOKEN: &str = "test-token-limits-7c1e55d0a2";

/// An agent on an ephemeral loopback port, on its own runtime, stopped
/// (as by SIGTERM) when `stop` is sent; `done` says when `serve` returned.
struct TestAgent {
    agent: Agent,
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: std::sync::mpsc::Receiver<Instant>,
    rt: Option<tokio::runtime::Runtime>,
}

impl Drop for TestAgent {
    fn drop(&mut self) {
        // Dropped inside the test's own runtime: no blocking shutdown there.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl TestAgent {
    fn start(slots: usize, drain: Duration) -> TestAgent {
        TestAgent::start_with(slots, drain, None)
    }

    fn start_with(slots: usize, drain: Duration, max_bytes: Option<u64>) -> TestAgent {
        TestAgent::start_configured(|c| {
            c.slots = slots;
            c.drain_deadline = drain;
            c.max_bytes = max_bytes;
        })
    }

    fn start_configured(configure: impl FnOnce(&mut AgentConfig)) -> TestAgent {
        let mut config = AgentConfig::new(Target::load("host").expect("host"), Token::new(TOKEN).expect("token"));
        configure(&mut config);
        let agent = Agent::new(&config).expect("agent");
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("rt");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (done_tx, done) = std::sync::mpsc::channel();
        let served = agent.clone();
        rt.spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            served.serve(listener, None, shutdown).await.expect("serves");
            let _ = done_tx.send(Instant::now());
        });
        TestAgent { agent, addr, stop: Some(stop), done, rt: Some(rt) }
    }

    fn vl(&self) -> u32 {
        self.agent.info().vl_bits[0]
    }

    /// Posts `req`; `Err` when no answer came within `timeout`.
    async fn post(&self, req: &RunRequest, timeout: Duration) -> Result<reqwest::Response, reqwest::Error> {
        reqwest::Client::new()
            .post(format!("http://{}/run", self.addr))
            .bearer_auth(TOKEN)
            .timeout(timeout)
            .json(req)
            .send()
            .await
    }

    /// Waits up to `limit` for no run to be in flight.
    async fn idle_within(&self, limit: Duration) -> bool {
        let start = Instant::now();
        while self.agent.runs_in_flight() > 0 {
            if start.elapsed() > limit {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }
}

fn calls() -> TimingProtocol {
    TimingProtocol {
        warmup: 0,
        number: 1,
        repeat: 1,
        min_repeat_ms: 0,
        flush_cache: false,
        pin_core: None,
        threads: None,
    }
}

fn request(script: String, vls: Vec<u32>) -> RunRequest {
    RunRequest {
        label: "c1".into(),
        executable: format!("#!/bin/sh\n{script}\n").into_bytes(),
        input: vec![0; 8],
        vl_bits: vls,
        protocol: calls(),
        timeout_ms: 60_000,
        queue_timeout_ms: 60_000,
    }
}

/// A script that starts a 30 s sleep in the background, writes its pid to
/// `pid_file`, and waits for it: killing only the script would leave the sleep.
fn sleeper(pid_file: &Path) -> String {
    format!("sleep 30 & echo $! > '{}'\nwait", pid_file.display())
}

/// Whether the process whose pid is in `pid_file` has ended within 5 s.
fn ended(pid_file: &Path) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        let pid = std::fs::read_to_string(pid_file).unwrap_or_default();
        let pid = pid.trim();
        if !pid.is_empty() {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if stat.is_empty() || stat.split(' ').nth(2) == Some("Z") {
                return true;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Waits until the pid file exists (the script runs).
async fn started(pid_file: &Path) {
    let start = Instant::now();
    while !std::fs::read_to_string(pid_file).is_ok_and(|p| p.ends_with('\n')) {
        assert!(start.elapsed() < Duration::from_secs(30), "the run never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_beyond_the_limits_are_refused_before_anything_runs() {
    let agent = TestAgent::start(1, Duration::from_secs(30));
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("ran");
    let script = format!("echo ran > '{}'", marker.display());
    let vl = agent.vl();
    let many = request(script.clone(), vec![vl; 100_000]);
    let twice = request(script.clone(), vec![vl, vl]);
    let long_label = RunRequest { label: "l".repeat(60_000), ..request(script.clone(), vec![vl]) };
    let forever = RunRequest { queue_timeout_ms: u64::MAX, ..request(script.clone(), vec![vl]) };
    let expected = [
        format!("100000 vector lengths requested; at most {MAX_VLS_PER_REQUEST} per request"),
        format!("VL {vl} is requested twice"),
        "the label has 60000 bytes; at most 256".to_string(),
        format!("queue_timeout_ms {} is out of range (0 to 3600000)", u64::MAX),
    ];
    for (req, why) in [many, twice, long_label, forever].iter().zip(expected) {
        let resp = agent.post(req, Duration::from_secs(30)).await.expect("answers");
        assert_eq!(resp.status().as_u16(), 400, "{why}");
        let body: serde_json::Value = resp.json().await.expect("json");
        assert_eq!(body["error"], why);
    }
    assert_eq!(agent.agent.runs_started(), 0);
    assert!(!marker.exists(), "a refused request ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_cancels_its_run_and_frees_the_slot() {
    let agent = TestAgent::start(1, Duration::from_secs(30));
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("pid");
    let vl = agent.vl();
    let gone = agent.post(&request(sleeper(&pid_file), vec![vl]), Duration::from_millis(1500)).await;
    assert!(gone.expect_err("the client gave up").is_timeout());
    assert!(agent.idle_within(Duration::from_secs(5)).await, "the run outlived its client");
    assert!(ended(&pid_file), "the sleep the run started is still running");
    // The only slot is free again: a run that may wait 2 s for it runs.
    let quick = RunRequest { queue_timeout_ms: 2000, ..request("exit 0".into(), vec![vl]) };
    let resp = agent.post(&quick, Duration::from_secs(30)).await.expect("answers");
    assert_eq!(resp.status().as_u16(), 200);
    let body: RunResponse = resp.json().await.expect("json");
    assert_eq!(body.runs[0].ending, ProcessEnding::Exited { code: 0 });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_agent_finishes_short_runs_and_kills_long_ones_at_its_deadline() {
    let mut agent = TestAgent::start(2, Duration::from_secs(2));
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("pid");
    let short_started = dir.path().join("short");
    let vl = agent.vl();
    let short = request(format!("echo > '{}'\nsleep 1", short_started.display()), vec![vl]);
    let long = request(sleeper(&pid_file), vec![vl]);
    let stopper = agent.stop.take().expect("running");
    let stop = async {
        started(&pid_file).await;
        started(&short_started).await;
        stopper.send(()).expect("stop");
        Instant::now()
    };
    let (short_resp, long_resp, stopped_at) =
        tokio::join!(agent.post(&short, Duration::from_secs(60)), agent.post(&long, Duration::from_secs(60)), stop);
    let resp = short_resp.expect("the short run is answered");
    assert_eq!(resp.status().as_u16(), 200, "a run that ends within the deadline is answered");
    let body: RunResponse = resp.json().await.expect("json");
    assert_eq!(body.runs[0].ending, ProcessEnding::Exited { code: 0 });
    // The long run is cut at the deadline and answered 503 (the client may try another agent).
    let resp = long_resp.expect("the long run is answered");
    assert_eq!(resp.status().as_u16(), 503);
    let body: serde_json::Value = resp.json().await.expect("json");
    assert_eq!(body["error"], "the run was cancelled: the agent is shutting down");
    let served_until = agent.done.recv_timeout(Duration::from_secs(10)).expect("serve returned");
    let took = served_until - stopped_at;
    assert!(took < Duration::from_secs(5), "stopping took {took:?} with a 2 s deadline");
    assert!(ended(&pid_file), "the long run's sleep survived the deadline");
    assert!(agent.idle_within(Duration::from_secs(5)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_happen_in_a_private_directory() {
    let agent = TestAgent::start(1, Duration::from_secs(30));
    let req = request("stat -c '%a' .; stat -c '%a' driver input.bin".into(), vec![agent.vl()]);
    let resp = agent.post(&req, Duration::from_secs(30)).await.expect("answers");
    let body: RunResponse = resp.json().await.expect("json");
    assert_eq!(body.runs[0].ending, ProcessEnding::Exited { code: 0 }, "{}", body.runs[0].stderr);
    assert_eq!(body.runs[0].stdout, "700\n700\n600\n");
}

/// A script that builds a string of at least `bytes` bytes by doubling
/// (awk holds about three times that at the peak) and prints its length.
fn allocator(bytes: u64) -> String {
    format!("awk 'BEGIN {{ s = \"x\"; while (length(s) < {bytes}) s = s s; print length(s) }}'")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_with_max_bytes_refuses_larger_inputs_and_bounds_each_runs_memory() {
    let max = 1 << 20;
    let agent = TestAgent::start_with(1, Duration::from_secs(30), Some(max));
    let limit = scaletune_measure::agent::run_memory_limit(max);
    let vl = agent.vl();
    // Inputs larger than --max-bytes are refused before anything runs.
    let big = RunRequest { input: vec![0u8; (max + 1) as usize], ..request("exit 0".into(), vec![vl]) };
    let resp = agent.post(&big, Duration::from_secs(60)).await.expect("answers");
    assert_eq!(resp.status().as_u16(), 400);
    let body: serde_json::Value = resp.json().await.expect("json");
    let why = format!("the run's inputs take {} bytes; this agent runs at most {max} (--max-bytes)", max + 1);
    assert_eq!(body["error"], why);
    assert_eq!(agent.agent.runs_started(), 0);
    // A run that allocates well within the bound runs; one far beyond it
    // fails in its allocation instead of exhausting the machine.
    for (bytes, fits) in [(limit / 64, true), (limit * 2, false)] {
        let resp = agent.post(&request(allocator(bytes), vec![vl]), Duration::from_secs(60)).await.expect("answers");
        assert_eq!(resp.status().as_u16(), 200);
        let body: RunResponse = resp.json().await.expect("json");
        let run = &body.runs[0];
        if fits {
            assert_eq!(run.ending, ProcessEnding::Exited { code: 0 }, "{}", run.stderr);
            let len: u64 = run.stdout.trim().parse().expect("a length");
            assert!(len >= bytes, "{len}");
        } else {
            assert_ne!(run.ending, ProcessEnding::Exited { code: 0 }, "{bytes} bytes fit a {limit} byte bound");
            assert!(run.stderr.contains("out of memory"), "{}", run.stderr);
        }
    }
}

/// With a machine lock, a run waits while another process holds the lock
/// shared (a scaletune process building on the agent's machine), and
/// meanwhile holds the turnstile, so that process's next build would wait
/// for the run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waits_for_builds_of_other_processes_on_the_agents_machine() {
    let locks = tempfile::tempdir().expect("tempdir");
    let lock = std::sync::Arc::new(scaletune_measure::MachineLock::open(locks.path()).expect("opens"));
    let agent = TestAgent::start_configured(|c| c.machine_lock = Some(lock));
    // Another process's build: the lock file held shared through a file of its own.
    let building = std::fs::OpenOptions::new().write(true).open(locks.path().join("machine.lock")).expect("opens");
    building.lock_shared().expect("shared");
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("ran");
    let run = request(format!("echo ran > '{}'", marker.display()), vec![agent.vl()]);
    let client = {
        let (addr, run) = (agent.addr, run.clone());
        tokio::spawn(async move {
            reqwest::Client::new()
                .post(format!("http://{addr}/run"))
                .bearer_auth(TOKEN)
                .timeout(Duration::from_secs(30))
                .json(&run)
                .send()
                .await
        })
    };
    let turnstile = std::fs::OpenOptions::new().write(true).open(locks.path().join("turnstile.lock")).expect("opens");
    let start = Instant::now();
    while turnstile.try_lock().is_ok() {
        turnstile.unlock().expect("unlocks");
        assert!(start.elapsed() < Duration::from_secs(10), "the run never took the turnstile");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!marker.exists(), "the run started during another process's build");
    building.unlock().expect("the build ends");
    let resp = client.await.expect("joins").expect("answers");
    assert_eq!(resp.status().as_u16(), 200);
    assert!(marker.exists(), "the run ran once the build was over");
    // Released with the run: a build may start again.
    building.try_lock_shared().expect("free again");
}

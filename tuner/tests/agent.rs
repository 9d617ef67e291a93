//! `scaletune agent` as a real process: it listens on loopback by default, serves its info to the token only, measures a candidate for a farm on another runtime, and its death is a runner fault.

use base64::Engine;
use scaletune_codegen::target::Target;
use scaletune_measure::agent::Token;
use scaletune_measure::runner::remote::{AgentEndpoint, RemoteError};
use scaletune_measure::{Candidate, Farm, FaultPolicy, LlvmBuilder, RemoteRunner, Runner, Status, TimingProtocol};
use scaletune_space::trace::parse_trace;
use scaletune_space::workload::load;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const TOKEN: &str = "0123456789abcdef0123456789abcdef";

/// Kills the agent process when the test ends, however it ends.
struct AgentProcess(Child);

impl Drop for AgentProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Every line the agent wrote to stderr so far.
type Log = Arc<Mutex<Vec<String>>>;

/// Starts `scaletune agent` on an ephemeral loopback port; returns the process and its URL.
fn start_agent(token_file: &std::path::Path) -> (AgentProcess, String) {
    let (process, url, _) = start_agent_logged(token_file, &[]);
    (process, url)
}

/// [`start_agent`] with more options, keeping the agent's log.
fn start_agent_logged(token_file: &std::path::Path, extra: &[&str]) -> (AgentProcess, String, Log) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_scaletune"))
        .args(["agent", "--listen", "127.0.0.1:0", "--slots", "2", "--token-file"])
        .arg(token_file)
        .args(extra)
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start scaletune agent");
    let stderr = child.stderr.take().expect("stderr");
    let process = AgentProcess(child);
    let (tx, rx) = mpsc::channel();
    let log: Log = Arc::default();
    let lines = Arc::clone(&log);
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("listening on ").nth(1) {
                let url = rest.split(':').take(3).collect::<Vec<_>>().join(":");
                let _ = tx.send(url);
            }
            lines.lock().unwrap_or_else(|p| p.into_inner()).push(line);
        }
    });
    let url = rx.recv_timeout(Duration::from_secs(60)).expect("the agent says where it listens");
    (process, url, log)
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

#[test]
fn an_agent_process_serves_the_token_only_measures_and_its_death_is_a_fault() {
    let dir = tempfile::tempdir().expect("temp dir");
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).expect("write token");
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let (mut agent, url) = start_agent(&token_file);
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let token = Token::new(TOKEN).expect("token");

    // One runtime for the test, as the command line has one for the process.
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let wrong = Token::new("fedcba9876543210fedcba9876543210").expect("token");
    let refused = rt.block_on(RemoteRunner::connect(AgentEndpoint::new("p", &url, wrong), quick()));
    assert!(matches!(refused, Err(RemoteError::Unauthorized { .. })), "{refused:?}");

    let runner = rt.block_on(RemoteRunner::connect(AgentEndpoint::new("p", &url, token.clone()), quick())).expect("up");
    assert_eq!((runner.info().target.name.as_str(), runner.info().slots), ("host", 2));
    let host = Arc::new(Target::load("host").expect("host"));
    let w = Arc::new(load("scale_add:N=1000").expect("workload"));
    let trace = parse_trace(
        "b = get_block(\"Y\")\ni = get_loops(b)\ni0, i1 = split(i, factors=[None, 4*vscale])\nvectorize(i1, tail=\"predicate\")\n",
    )
    .expect("trace");
    let fast_probes = FaultPolicy {
        probes: 2,
        probe_backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(100),
        ..FaultPolicy::default()
    };
    let farm = Farm::new(Arc::new(LlvmBuilder::new()), 1, vec![Arc::new(runner.clone()) as Arc<dyn Runner>])
        .with_fault_policy(fast_probes);
    let candidate = Candidate::new(0, w, host, trace);
    let report = rt.block_on(farm.measure(vec![candidate.clone()]));
    let m = &report.measurements[0];
    assert_eq!(m.status, Status::Ok, "{m:?}");
    assert_eq!(m.runs[0].runner, "agent@p");
    assert_eq!(m.runs[0].timing.as_ref().expect("timed").repeats_s.len(), 3);

    // A dead agent process: connecting fails, and so does every run, as a
    // fault of the runner; after its probes fail the candidate is
    // `unmeasured` (not a failure of its own).
    agent.0.kill().expect("kill the agent");
    let _ = agent.0.wait();
    let report = rt.block_on(farm.measure(vec![candidate]));
    let m = &report.measurements[0];
    assert_eq!(m.status, Status::Unmeasured, "{m:?}");
    assert!(m.message.contains("no runner left") && m.message.contains("agent@p"), "{}", m.message);
    let gone = rt.block_on(RemoteRunner::connect(AgentEndpoint::new("p", &url, token), quick()));
    assert!(matches!(gone, Err(RemoteError::Unreachable { .. })), "{gone:?}");
}

#[test]
fn without_listen_the_agent_listens_on_loopback() {
    let dir = tempfile::tempdir().expect("temp dir");
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).expect("write token");
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let mut child = Command::new(env!("CARGO_BIN_EXE_scaletune"))
        .args(["agent", "--token-file"])
        .arg(&token_file)
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start scaletune agent");
    let stderr = child.stderr.take().expect("stderr");
    let _process = AgentProcess(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("listening on") || line.contains("error") {
                let _ = tx.send(line);
            }
        }
    });
    let line = rx.recv_timeout(Duration::from_secs(60)).expect("the agent says where it listens");
    // Either it listens on 127.0.0.1:7878, or (another test or agent holds
    // that port) it says it cannot: both name the default address.
    let listening = line.contains("listening on http://127.0.0.1:7878");
    let refused = line.contains("cannot listen on 127.0.0.1:7878");
    assert!(listening || refused, "{line}");
}

/// `scaletune measure --runner remote --farm FILE` against an agent process
/// (with a second, dead agent in the farm file): the live agent times the
/// candidate and the dead one is reported, not fatal.
#[test]
fn measure_through_a_farm_file_uses_the_live_agent() {
    let dir = tempfile::tempdir().expect("temp dir");
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).expect("write token");
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let (_agent, url) = start_agent(&token_file);
    // A port nobody listens on: bind one, note it, let it go.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let farm = dir.path().join("farm.toml");
    let entry =
        |name: &str, url: &str| format!("[[agent]]\nname = \"{name}\"\nurl = \"{url}\"\ntoken_file = \"token\"\n");
    let text =
        format!("connect_timeout_s = 5\n{}{}", entry("gone", &format!("http://127.0.0.1:{dead}")), entry("live", &url));
    std::fs::write(&farm, text).expect("write farm file");

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("root").to_path_buf();
    let o = Command::new(env!("CARGO_BIN_EXE_scaletune"))
        .current_dir(&root)
        .args(["measure", "scale_add:N=1000", "--target", "host", "--runner", "remote", "--repeat", "3", "--farm"])
        .arg(&farm)
        .args(["--schedule", "configs/schedules/scale_add_predicated.trace", "--no-cache"])
        .output()
        .expect("runs scaletune");
    let t = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{t}");
    assert!(t.contains("runner remote") && t.contains("[agent@live]"), "{t}");
    assert!(t.contains("note: agent unavailable") && t.contains("gone"), "{t}");
    assert!(t.contains("median") && t.contains("3 repeats"), "{t}");
    assert!(t.trim_end().ends_with("verdict: ok"), "{t}");

    // The agent checks a pinned CPU against its own: a clear refusal, never run.
    let o = Command::new(env!("CARGO_BIN_EXE_scaletune"))
        .current_dir(&root)
        .args(["measure", "scale_add:N=1000", "--target", "host", "--runner", "remote", "--pin-core", "4095", "--farm"])
        .arg(&farm)
        .output()
        .expect("runs scaletune");
    let t = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(!o.status.success(), "{t}");
    assert!(t.contains("cannot pin to CPU 4095"), "{t}");

    // A farm file whose only agent is down: a clear error, exit status 3 (infrastructure).
    std::fs::write(&farm, entry("gone", &format!("http://127.0.0.1:{dead}"))).expect("write farm file");
    let o = Command::new(env!("CARGO_BIN_EXE_scaletune"))
        .current_dir(&root)
        .args(["measure", "scale_add:N=1000", "--target", "host", "--runner", "remote", "--farm"])
        .arg(&farm)
        .output()
        .expect("runs scaletune");
    let t = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(3), "{t}");
    assert!(t.contains("no agent of") && t.contains("gone"), "{t}");
}

/// Beyond loopback the agent serves HTTPS, or plain HTTP only when told so
/// explicitly; a token file other users may read is refused.
#[test]
fn agent_refuses_unsafe_setups() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).expect("write token");
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_scaletune"))
            .arg("agent")
            .arg("--token-file")
            .arg(&token_file)
            .args(args)
            .output()
            .expect("runs scaletune");
        (o.status.code(), String::from_utf8_lossy(&o.stderr).to_string())
    };
    let (code, err) = run(&["--listen", "0.0.0.0:0"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("refusing to listen on 0.0.0.0:0 without TLS") && err.contains("--insecure-plain-http"),
        "{err}"
    );
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let (code, err) = run(&[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("has mode 644: other users may read it (chmod 600"), "{err}");
}

fn token_file(dir: &std::path::Path) -> std::path::PathBuf {
    let token_file = dir.join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).expect("write token");
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    token_file
}

/// A run request for a shell script "driver" at the host's first VL.
fn script_request(label: &str, script: &str) -> serde_json::Value {
    let vl = Target::load("host").expect("host").default_vl_bits[0];
    let exe = format!("#!/bin/sh\n{script}\n");
    serde_json::json!({
        "label": label,
        "executable": base64::engine::general_purpose::STANDARD.encode(exe.as_bytes()),
        "input": "",
        "vl_bits": [vl],
        "protocol": quick(),
        "timeout_ms": 60_000,
        "queue_timeout_ms": 60_000,
    })
}

async fn post(url: &str, body: &serde_json::Value) -> reqwest::Result<reqwest::Response> {
    reqwest::Client::new().post(format!("{url}/run")).bearer_auth(TOKEN).json(body).send().await
}

/// A label with a newline and an escape code cannot forge a log line, and a
/// 60 KB label does not reach the log whole.
#[test]
fn request_fields_reach_the_log_escaped_and_cut() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_agent, url, log) = start_agent_logged(&token_file(dir.path()), &[]);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let forged = "c1\nERROR scaletune: forged entry \u{1b}[31m";
    let resp = rt.block_on(post(&url, &script_request(forged, "exit 0"))).expect("answers");
    assert_eq!(resp.status().as_u16(), 200);
    let resp = rt.block_on(post(&url, &script_request(&"p".repeat(60_000), "exit 0"))).expect("answers");
    assert_eq!(resp.status().as_u16(), 400);
    let escaped = r"run c1\nERROR scaletune: forged entry \u{1b}[31m: ";
    let cut = format!("refused run {}... (60000 bytes in all)", "p".repeat(80));
    // The agent's log reaches this process through a pipe: wait for both lines.
    let start = std::time::Instant::now();
    let lines = loop {
        let lines = log.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let both = lines.iter().any(|l| l.contains(escaped)) && lines.iter().any(|l| l.contains(&cut));
        if both || start.elapsed() > Duration::from_secs(20) {
            break lines;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(lines.iter().all(|l| !l.starts_with("ERROR scaletune: forged") && !l.contains('\u{1b}')), "{lines:#?}");
    assert!(
        lines.iter().all(|l| l.len() < 400),
        "a log line of {} bytes",
        lines.iter().map(String::len).max().unwrap_or(0)
    );
    assert!(lines.iter().any(|l| l.contains(escaped)), "{lines:#?}");
    assert!(lines.iter().any(|l| l.contains(&cut)), "{lines:#?}");
}

/// SIGTERM with a run in flight: the agent waits for it until its drain
/// deadline, then kills it (and what it started) and exits.
#[test]
fn sigterm_drains_until_the_deadline_then_kills_the_run_and_exits() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut agent, url, log) = start_agent_logged(&token_file(dir.path()), &["--drain-secs", "1"]);
    let pid_file = dir.path().join("pid");
    let script = format!("sleep 60 & echo $! > '{}'\nwait", pid_file.display());
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let request = script_request("long", &script);
    let url2 = url.clone();
    let in_flight = rt.spawn(async move { post(&url2, &request).await });
    let start = std::time::Instant::now();
    while !std::fs::read_to_string(&pid_file).is_ok_and(|p| p.ends_with('\n')) {
        assert!(start.elapsed() < Duration::from_secs(30), "the run never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let sleeper: i32 = std::fs::read_to_string(&pid_file).expect("pid").trim().parse().expect("pid");
    let pid = nix::unistd::Pid::from_raw(agent.0.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let stopped = std::time::Instant::now();
    let status = loop {
        if let Some(status) = agent.0.try_wait().expect("wait") {
            break status;
        }
        assert!(stopped.elapsed() < Duration::from_secs(10), "the agent did not exit after its deadline");
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = stopped.elapsed();
    assert!(took >= Duration::from_millis(900), "the run got no time to finish: {took:?}");
    assert!(took < Duration::from_secs(5), "stopping took {took:?} with --drain-secs 1");
    assert_eq!(status.code(), Some(0), "a stopped agent exits 0");
    let answered = rt.block_on(in_flight).expect("task").expect("the run is answered");
    assert_eq!(answered.status().as_u16(), 503);
    let stat = std::fs::read_to_string(format!("/proc/{sleeper}/stat")).unwrap_or_default();
    assert!(stat.is_empty() || stat.split(' ').nth(2) == Some("Z"), "the run's sleep survived: {stat}");
    let said = "drain deadline passed: killing 1 run(s) in flight";
    let start = std::time::Instant::now();
    let lines = loop {
        let lines = log.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if lines.iter().any(|l| l.contains(said)) || start.elapsed() > Duration::from_secs(10) {
            break lines;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(lines.iter().any(|l| l.contains(said)), "{lines:#?}");
}

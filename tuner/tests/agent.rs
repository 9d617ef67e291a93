//! `scaletune agent` as a real process: it listens on loopback by default, serves its info to the token only, measures a candidate for a farm on another runtime, and its death is a runner fault.

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
use std::sync::Arc;
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

/// Starts `scaletune agent` on an ephemeral loopback port; returns the process and its URL.
fn start_agent(token_file: &std::path::Path) -> (AgentProcess, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_scaletune"))
        .args(["agent", "--listen", "127.0.0.1:0", "--slots", "2", "--token-file"])
        .arg(token_file)
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start scaletune agent");
    let stderr = child.stderr.take().expect("stderr");
    let process = AgentProcess(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("listening on ").nth(1) {
                let url = rest.split(':').take(3).collect::<Vec<_>>().join(":");
                let _ = tx.send(url);
            }
        }
    });
    let url = rx.recv_timeout(Duration::from_secs(60)).expect("the agent says where it listens");
    (process, url)
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

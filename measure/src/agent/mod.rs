//! The remote agent: an HTTP service on a real machine that runs candidates' driver executables for authenticated clients.
//!
//! # Protocol
//!
//! HTTP/1.1 with JSON bodies: [axum] serves, `reqwest` calls (see
//! [`crate::runner::remote`]), both over rustls when TLS is on. HTTP+JSON
//! rather than gRPC because the API is two calls, requests are few and
//! large (one per candidate) rather than many and small, the bodies are
//! readable with `curl` while debugging an agent on a far machine, and it
//! needs no code generation step. The paths and bodies are in [`api`].
//!
//! # Security
//!
//! An agent runs arbitrary machine code sent by its clients: that is its
//! job. What it guarantees is that only holders of the shared token get
//! that far:
//! - it listens on `127.0.0.1:7878` unless told otherwise (reach it through
//!   an SSH tunnel, or listen on another address with TLS);
//! - every request, `/info` included, must carry `Authorization: Bearer
//!   TOKEN`; the comparison is constant-time (SHA-256 of both sides compared
//!   with `subtle`); refusals are 401, logged with the peer's address, and
//!   happen before the request body is read, so nothing from an
//!   unauthenticated client is ever written to disk or run;
//! - with `--tls-cert`/`--tls-key` it serves HTTPS only (rustls, TLS 1.2+),
//!   so the token and the artifacts are not sent in clear; it refuses to
//!   listen beyond loopback without TLS unless `--insecure-plain-http`;
//! - each artifact runs in a fresh private directory (mode 0700; the driver
//!   writes its outputs 0600) as a child process in its own process group,
//!   with a cleared environment and a timeout; a crash or hang kills only
//!   the child's group, and the directory is removed afterwards;
//! - requests are bounded ([`api::RunRequest::check`]: at most 16 vector
//!   lengths, each once, a label of at most 256 bytes, a run timeout of at
//!   most 24 h and at most 24 h for all the runs of a request, a queue
//!   timeout of at most 1 h, a body of at most 512 MiB) and refused with
//!   400 beyond that; request fields reach the log escaped and cut to 80
//!   characters ([`logtext::loggable`]);
//! - a client that goes away cancels its run: the child's process group is
//!   killed and the slot freed at once;
//! - on SIGTERM or Ctrl-C the agent stops accepting requests, lets runs in
//!   flight finish for up to [`AgentConfig::drain_deadline`] (30 s by
//!   default, `--drain-secs`), then kills what still runs and exits.
//!
//! The child runs as the agent's user, so run the agent as a dedicated
//! unprivileged user whose files (the token file included, mode 0600) hold
//! nothing else of value.
//!
//! # Slots
//!
//! At most `slots` artifacts run at once (default 1, so that timings do not
//! disturb each other); further requests wait for a slot up to their
//! `queue_timeout_ms` and are answered 503 after that. Waiting never counts
//! toward a run's timeout, which starts when its child is spawned.

pub mod api;
mod auth;
mod exec;
pub mod logtext;
mod server;
mod tls;

pub use api::{AgentInfo, HostDesc, TargetDesc};
pub use auth::{Token, MIN_TOKEN_LEN};
pub use server::{serve_until_signal, Agent};
pub use tls::TlsIdentity;

use scaletune_codegen::target::{Arch, Target, TargetError};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;

/// The address an agent listens on unless told otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7878";

/// Errors that keep an agent from starting (never a candidate's failure).
#[derive(Debug, Error)]
pub enum AgentError {
    /// The token file is missing, unreadable or too weak.
    #[error("{0}")]
    Token(String),
    /// The target cannot be loaded.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The target is for another kind of machine.
    #[error("target `{target}` ({triple}) does not run on this {machine} machine")]
    WrongMachine {
        /// Target name.
        target: String,
        /// Its triple.
        triple: String,
        /// `std::env::consts::ARCH`.
        machine: String,
    },
    /// The certificate or key cannot be used.
    #[error("TLS: {0}")]
    Tls(String),
    /// Binding, serving or starting the runtime failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// How to start an agent (what `scaletune agent` parses its options into).
#[derive(Clone, Debug)]
pub struct AgentConfig {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// The shared token.
    pub token: Token,
    /// The target it runs code for (must match this machine's architecture).
    pub target: Target,
    /// Vector lengths it offers; empty means those of this machine (see [`machine_vl_bits`]).
    pub vl_bits: Vec<u32>,
    /// Artifacts run at once.
    pub slots: usize,
    /// PEM certificate chain and private key, to serve HTTPS.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Serve plain HTTP on a non-loopback address (the token and artifacts
    /// then cross the network in clear); refused without it.
    pub insecure_plain_http: bool,
    /// How long a stopping agent lets runs in flight finish before it kills them.
    pub drain_deadline: Duration,
    /// The largest total size of a run's tensors (`--max-bytes`): a request
    /// whose input alone is larger is refused, and each run's data segment
    /// is bounded by [`run_memory_limit`] of it. `None`: no bound.
    pub max_bytes: Option<u64>,
    /// The machine lock the agent holds exclusively while it runs an
    /// artifact, so that scaletune processes on the agent's machine (a job
    /// tuning here too, or one using this agent on localhost) build nothing
    /// during its timed runs ([`crate::MachineLock`]). `None`: not kept apart.
    pub machine_lock: Option<Arc<crate::MachineLock>>,
}

/// Memory a driver may allocate besides its tensors (timing buffers, the
/// cache-flush buffer, the C runtime).
const RUN_MEMORY_SLACK: u64 = 256 << 20;

/// The data-segment bound of one run on an agent with `max_bytes`: the
/// driver holds its tensors, a copy of the inputs and one of the first
/// outputs (at most twice the tensors), plus [`RUN_MEMORY_SLACK`].
pub fn run_memory_limit(max_bytes: u64) -> u64 {
    max_bytes.saturating_mul(2).saturating_add(RUN_MEMORY_SLACK)
}

/// The default [`AgentConfig::drain_deadline`].
pub const DEFAULT_DRAIN_DEADLINE: Duration = Duration::from_secs(30);

impl AgentConfig {
    /// An agent for `target` with `token`, on [`DEFAULT_LISTEN`], one slot, plain HTTP.
    pub fn new(target: Target, token: Token) -> AgentConfig {
        let listen = DEFAULT_LISTEN.parse().unwrap_or_else(|_| SocketAddr::from(([127, 0, 0, 1], 7878)));
        AgentConfig {
            listen,
            token,
            target,
            vl_bits: Vec::new(),
            slots: 1,
            tls: None,
            insecure_plain_http: false,
            drain_deadline: DEFAULT_DRAIN_DEADLINE,
            max_bytes: None,
            machine_lock: None,
        }
    }

    /// The vector lengths offered: the configured ones (each checked against
    /// the target), else this machine's.
    pub fn resolved_vl_bits(&self) -> Result<Vec<u32>, AgentError> {
        if self.vl_bits.is_empty() {
            return Ok(machine_vl_bits(&self.target));
        }
        for &vl in &self.vl_bits {
            self.target.vscale_for_vl(vl)?;
        }
        Ok(self.vl_bits.clone())
    }
}

/// The vector lengths code for `target` runs at on this machine: the fixed
/// width of a fixed-length target; on AArch64 Linux, the SVE length new
/// processes get (`/proc/sys/abi/sve_default_vector_length`) if the target
/// allows it; otherwise the target's default lengths.
pub fn machine_vl_bits(target: &Target) -> Vec<u32> {
    if target.caps.scalable && target.arch == Arch::Aarch64 {
        let bytes = std::fs::read_to_string("/proc/sys/abi/sve_default_vector_length").ok();
        if let Some(vl) = bytes.and_then(|b| b.trim().parse::<u32>().ok()).map(|b| b * 8) {
            if target.vscale_for_vl(vl).is_ok() {
                return vec![vl];
            }
        }
    }
    target.default_vl_bits.clone()
}

/// Checks that code for `target` executes on this machine without emulation.
pub fn check_machine(target: &Target) -> Result<(), AgentError> {
    let machine = std::env::consts::ARCH;
    if target.triple.split('-').next() == Some(machine) {
        Ok(())
    } else {
        Err(AgentError::WrongMachine {
            target: target.name.clone(),
            triple: target.triple.clone(),
            machine: machine.to_string(),
        })
    }
}

/// Describes this machine.
pub fn host_desc() -> HostDesc {
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |key: &str| {
        cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == key).then(|| v.trim().to_string())
        })
    };
    let cpu_model =
        field("model name").or_else(|| field("CPU part").map(|p| format!("Arm CPU part {p}"))).unwrap_or_default();
    HostDesc {
        hostname,
        arch: std::env::consts::ARCH.to_string(),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        cpu_model,
    }
}

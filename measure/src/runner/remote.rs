//! The remote runner: sends a built candidate to one `scaletune agent` on a real machine and judges what comes back.
//!
//! One [`RemoteRunner`] per agent. [`RemoteRunner::connect`] asks the agent
//! for its [`AgentInfo`] (`GET /info`), which fixes what the runner
//! [`accepts`](Runner::accepts): candidates whose target has the agent's
//! name, triple, CPU and features, at a vector length the agent offers; and
//! its [`slots`](Runner::slots). A run posts the driver executable, its
//! input, the vector lengths, the [`TimingProtocol`] and the timeout to
//! `/run`; the agent runs it and returns how each child ended with its
//! stdout and output bytes, and the runner judges them here against the
//! candidate's reference ([`Harness::judge_remote`](crate::Harness::judge_remote))
//! and parses the timing report, exactly as the native runner does locally.
//!
//! Faults: [`Runner::try_run`] returns a [`RunnerFault`] when the agent
//! itself failed, so that the farm gives the work to another agent, of a [`FaultKind`] that says what to do with this one:
//! `Unreachable` for a connection refused or reset, the HTTP request's own
//! deadline, a truncated answer, 408 or a 5xx other than 503 (the agent is
//! re-probed with [`Runner::probe`], `GET /info`, which must answer what it
//! answered at connect time); `Busy` for 503 (no free slot within the queue
//! timeout, or shutting down) and 429 (try later); `Refused` for 401 (the
//! token is refused). A crash, timeout or wrong result reported by a live
//! agent is the candidate's result. A 4xx refusal of the request (413:
//! artifact over the agent's body limit) is the candidate's `run_error`:
//! another agent would refuse it too.
//!
//! The HTTP request's deadline is the queue timeout plus, per vector
//! length, the run timeout and 5 s, plus 30 s and 1 s per MiB of artifact
//! for the transfer. Connections are not pooled: each run opens its own, so
//! a restarted agent is never mistaken for a dead one through a stale
//! pooled connection.

use super::native::apply_check;
use super::{Built, FaultKind, Runner, RunnerFault};
use crate::agent::api::{AgentInfo, ApiError, RunRequest, RunResponse, API_VERSION, INFO_PATH, RUN_PATH};
use crate::agent::Token;
use crate::harness::{parse_timing, ExternalRun};
use crate::protocol::TimingProtocol;
use crate::result::{Status, VlMeasurement};
use async_trait::async_trait;
use scaletune_codegen::target::Target;
use std::sync::Arc;
use std::time::Duration;
use thiserror::Error;

/// Default time to establish a connection to an agent.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Default time a run may wait for a free slot on the agent.
pub const DEFAULT_QUEUE_TIMEOUT: Duration = Duration::from_secs(600);

/// Allowance per vector length on top of the run timeout, in the HTTP deadline.
const RUN_GRACE: Duration = Duration::from_secs(5);

/// Where an agent is and how to talk to it.
#[derive(Clone, Debug)]
pub struct AgentEndpoint {
    /// Short name (`graviton3`); the runner is called `agent@NAME`.
    pub name: String,
    /// Base URL, `http://HOST:PORT` or `https://HOST:PORT`.
    pub url: String,
    /// The shared token.
    pub token: Token,
    /// A PEM CA certificate (or the agent's self-signed certificate) to trust, besides the usual roots.
    pub ca_cert_pem: Option<Vec<u8>>,
    /// Time to establish a connection.
    pub connect_timeout: Duration,
    /// Time a run may wait for a slot on the agent.
    pub queue_timeout: Duration,
}

impl AgentEndpoint {
    /// An endpoint with the default timeouts and no extra CA.
    pub fn new(name: impl Into<String>, url: impl Into<String>, token: Token) -> AgentEndpoint {
        AgentEndpoint {
            name: name.into(),
            url: url.into(),
            token,
            ca_cert_pem: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            queue_timeout: DEFAULT_QUEUE_TIMEOUT,
        }
    }
}

/// Why a remote runner could not be set up.
#[derive(Debug, Error)]
pub enum RemoteError {
    /// The URL is not an `http` or `https` URL.
    #[error("agent {agent}: bad URL `{url}`: {message}")]
    BadUrl {
        /// Agent name.
        agent: String,
        /// The URL.
        url: String,
        /// Why.
        message: String,
    },
    /// The HTTP client (or the CA certificate) could not be set up.
    #[error("agent {agent}: {message}")]
    Client {
        /// Agent name.
        agent: String,
        /// Why.
        message: String,
    },
    /// The agent could not be reached or did not answer properly.
    #[error("agent {agent} is unreachable: {message}")]
    Unreachable {
        /// Agent name.
        agent: String,
        /// Why.
        message: String,
    },
    /// The agent refused the token (401).
    #[error("agent {agent} refused the token (401)")]
    Unauthorized {
        /// Agent name.
        agent: String,
    },
    /// The agent answered with another error status.
    #[error("agent {agent} answered {status}: {message}")]
    Status {
        /// Agent name.
        agent: String,
        /// HTTP status.
        status: u16,
        /// The agent's message.
        message: String,
    },
    /// The agent speaks another API version.
    #[error("agent {agent} speaks API version {theirs}, this client {API_VERSION}")]
    Incompatible {
        /// Agent name.
        agent: String,
        /// The agent's API version.
        theirs: u32,
    },
}

/// A runner backed by one remote agent.
#[derive(Clone, Debug)]
pub struct RemoteRunner {
    name: String,
    endpoint: AgentEndpoint,
    base: reqwest::Url,
    client: reqwest::Client,
    info: AgentInfo,
    protocol: TimingProtocol,
    timeout: Option<Duration>,
}

/// A reqwest error with its chain of causes.
fn describe(e: &reqwest::Error) -> String {
    let mut s = if e.is_timeout() { format!("{e} (the request's deadline passed)") } else { e.to_string() };
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    s
}

/// The `error` of an [`ApiError`] body, else the body's text.
async fn error_message(resp: reqwest::Response) -> String {
    let text = resp.text().await.unwrap_or_default();
    serde_json::from_str::<ApiError>(&text).map(|e| e.error).unwrap_or_else(|_| text.trim().to_string())
}

impl RemoteRunner {
    /// Connects to an agent: builds the client, fetches `/info` and checks the API version.
    pub async fn connect(endpoint: AgentEndpoint, protocol: TimingProtocol) -> Result<RemoteRunner, RemoteError> {
        let agent = endpoint.name.clone();
        let bad_url =
            |message: String| RemoteError::BadUrl { agent: agent.clone(), url: endpoint.url.clone(), message };
        let base = reqwest::Url::parse(&endpoint.url).map_err(|e| bad_url(e.to_string()))?;
        if !matches!(base.scheme(), "http" | "https") || base.host_str().is_none() {
            return Err(bad_url("expected http://HOST:PORT or https://HOST:PORT".into()));
        }
        let client_error = |message: String| RemoteError::Client { agent: agent.clone(), message };
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .connect_timeout(endpoint.connect_timeout)
            .pool_max_idle_per_host(0)
            .user_agent(concat!("scaletune/", env!("CARGO_PKG_VERSION")));
        if let Some(pem) = &endpoint.ca_cert_pem {
            let certs = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| client_error(format!("bad CA certificate: {e}")))?;
            if certs.is_empty() {
                return Err(client_error("no CERTIFICATE block in the CA certificate file".into()));
            }
            for c in certs {
                builder = builder.add_root_certificate(c);
            }
        }
        let client = builder.build().map_err(|e| client_error(describe(&e)))?;
        let info = fetch_info(&client, &base, &endpoint).await?;
        Ok(RemoteRunner { name: format!("agent@{agent}"), endpoint, base, client, info, protocol, timeout: None })
    }

    /// Overrides the per-run timeout of every candidate.
    pub fn with_timeout(mut self, timeout: Duration) -> RemoteRunner {
        self.timeout = Some(timeout);
        self
    }

    /// What the agent said about itself at connect time.
    pub fn info(&self) -> &AgentInfo {
        &self.info
    }

    /// The timing protocol sent with every run.
    pub fn protocol(&self) -> &TimingProtocol {
        &self.protocol
    }

    fn fault(&self, message: impl Into<String>) -> RunnerFault {
        RunnerFault::unreachable(self.name.clone(), message)
    }

    fn failed(&self, vl_bits: &[u32], message: &str) -> Vec<VlMeasurement> {
        vl_bits.iter().map(|&vl| VlMeasurement::run_error(vl, &self.name, message)).collect()
    }

    /// Sends the candidate to the agent and waits for its answer.
    async fn post(&self, built: &Built, vl_bits: &[u32], timeout: Duration) -> Result<Posted, RunnerFault> {
        let read =
            |p: &std::path::Path| std::fs::read(p).map_err(|e| format!("cannot read {} to send it: {e}", p.display()));
        let (executable, input) = match (read(built.harness.executable()), read(built.harness.input_file())) {
            (Ok(x), Ok(i)) => (x, i),
            (Err(e), _) | (_, Err(e)) => return Ok(Posted::Refused(e)),
        };
        let mib = (executable.len() + input.len()) as u32 / (1024 * 1024);
        let deadline = self.endpoint.queue_timeout
            + (timeout + RUN_GRACE) * vl_bits.len() as u32
            + Duration::from_secs(30)
            + Duration::from_secs(1) * mib;
        let short = built.artifact.get(..12).unwrap_or(&built.artifact);
        let req = RunRequest {
            label: format!("candidate {} ({short})", built.candidate),
            executable,
            input,
            vl_bits: vl_bits.to_vec(),
            protocol: self.protocol.clone(),
            timeout_ms: timeout.as_millis().max(1) as u64,
            queue_timeout_ms: self.endpoint.queue_timeout.as_millis() as u64,
        };
        let url = self.base.join(RUN_PATH).map_err(|e| self.fault(e.to_string()))?;
        let resp = self
            .client
            .post(url)
            .header(reqwest::header::AUTHORIZATION, self.endpoint.token.bearer())
            .json(&req)
            .timeout(deadline)
            .send()
            .await
            .map_err(|e| self.fault(describe(&e)))?;
        let status = resp.status().as_u16();
        match status {
            200 => resp.json::<RunResponse>().await.map(Posted::Ran).map_err(|e| self.fault(describe(&e))),
            401 => Err(RunnerFault::refused(self.name.clone(), "the agent refused the token (401)")),
            400..=499 if status != 408 && status != 429 => {
                let msg = error_message(resp).await;
                Ok(Posted::Refused(format!("agent {} refused the run ({status}): {msg}", self.endpoint.name)))
            }
            429 | 503 => {
                let msg = format!("the agent answered {status}: {}", error_message(resp).await);
                Err(RunnerFault::busy(self.name.clone(), msg))
            }
            _ => Err(self.fault(format!("the agent answered {status}: {}", error_message(resp).await))),
        }
    }
}

/// `GET /info` with the token; checks the API version.
async fn fetch_info(
    client: &reqwest::Client,
    base: &reqwest::Url,
    endpoint: &AgentEndpoint,
) -> Result<AgentInfo, RemoteError> {
    let agent = endpoint.name.clone();
    let url = base.join(INFO_PATH).map_err(|e| RemoteError::BadUrl {
        agent: agent.clone(),
        url: endpoint.url.clone(),
        message: e.to_string(),
    })?;
    let unreachable = |message: String| RemoteError::Unreachable { agent: agent.clone(), message };
    let resp = client
        .get(url)
        .header(reqwest::header::AUTHORIZATION, endpoint.token.bearer())
        .timeout(endpoint.connect_timeout * 3)
        .send()
        .await
        .map_err(|e| unreachable(describe(&e)))?;
    match resp.status().as_u16() {
        200 => {}
        401 => return Err(RemoteError::Unauthorized { agent }),
        status => return Err(RemoteError::Status { agent, status, message: error_message(resp).await }),
    }
    let info: AgentInfo = resp.json().await.map_err(|e| unreachable(describe(&e)))?;
    if info.api_version != API_VERSION {
        return Err(RemoteError::Incompatible { agent, theirs: info.api_version });
    }
    Ok(info)
}

/// What a live agent did with a request.
enum Posted {
    Ran(RunResponse),
    Refused(String),
}

/// Judges the agent's runs against the candidate's reference (blocking: compares every output element).
fn judge(
    runner: &str,
    built: &Built,
    resp: &RunResponse,
    vl_bits: &[u32],
    timeout: Duration,
    p: &TimingProtocol,
) -> Vec<VlMeasurement> {
    let place = format!("on {runner} ({})", resp.hostname);
    vl_bits
        .iter()
        .map(|&vl| {
            let mut m = VlMeasurement {
                vl_bits: vl,
                status: Status::RunError,
                message: format!("{runner} returned no run for VL {vl}"),
                max_abs_err: f64::NAN,
                timing: None,
                emulated: None,
                runner: runner.to_string(),
                built_for_vl: None,
                wall_s: 0.0,
            };
            let Some(run) = resp.runs.iter().find(|r| r.vl_bits == vl) else { return m };
            m.wall_s = run.wall_s.max(0.0);
            let external = ExternalRun {
                vl_bits: vl,
                ending: &run.ending,
                stdout: &run.stdout,
                stderr: &run.stderr,
                output: run.output.as_deref(),
                wall_time: Duration::from_secs_f64(run.wall_s.max(0.0)),
                timeout,
            };
            let check = built.harness.judge_remote(&external, &place);
            apply_check(&mut m, &check);
            if m.status == Status::Ok {
                match parse_timing(&run.stdout, p) {
                    Ok(t) => m.timing = Some(t),
                    Err(e) => {
                        m.status = Status::RunError;
                        m.message = format!("{e} ({place})");
                    }
                }
            }
            m
        })
        .collect()
}

#[async_trait]
impl Runner for RemoteRunner {
    fn runs_on_this_machine(&self) -> bool {
        false
    }

    fn name(&self) -> String {
        self.name.clone()
    }

    fn accepts(&self, target: &Target, vl_bits: u32) -> bool {
        let t = &self.info.target;
        t.name == target.name
            && t.triple == target.triple
            && t.cpu == target.cpu
            && t.features == target.features
            && self.info.vl_bits.contains(&vl_bits)
            && target.vscale_for_vl(vl_bits).is_ok()
    }

    fn slots(&self) -> usize {
        self.info.slots.max(1)
    }

    async fn run(&self, built: Arc<Built>, vl_bits: &[u32]) -> Vec<VlMeasurement> {
        match self.try_run(built, vl_bits).await {
            Ok(ms) => ms,
            Err(fault) => {
                vl_bits.iter().map(|&vl| VlMeasurement::unmeasured(vl, &self.name, fault.to_string())).collect()
            }
        }
    }

    /// `GET /info`: the agent must answer, with the token, and describe the
    /// same target and vector lengths as at connect time (an agent restarted
    /// for another target or with another token is `Refused`).
    async fn probe(&self) -> Result<(), RunnerFault> {
        let info = match fetch_info(&self.client, &self.base, &self.endpoint).await {
            Ok(info) => info,
            Err(e @ (RemoteError::Unauthorized { .. } | RemoteError::Incompatible { .. })) => {
                return Err(RunnerFault::refused(self.name.clone(), e.to_string()))
            }
            Err(e) => return Err(RunnerFault::new(self.name.clone(), FaultKind::Unreachable, e.to_string())),
        };
        if info.target != self.info.target || info.vl_bits != self.info.vl_bits {
            let t = &info.target;
            let now = format!("the agent came back as target `{}` ({}, VL {:?})", t.name, t.cpu, info.vl_bits);
            return Err(RunnerFault::refused(self.name.clone(), now));
        }
        Ok(())
    }

    async fn try_run(&self, built: Arc<Built>, vl_bits: &[u32]) -> Result<Vec<VlMeasurement>, RunnerFault> {
        let timeout = self.timeout.unwrap_or_else(|| built.harness.timeout());
        let resp = match self.post(&built, vl_bits, timeout).await? {
            Posted::Ran(resp) => resp,
            Posted::Refused(why) => return Ok(self.failed(vl_bits, &why)),
        };
        let (name, vls, p) = (self.name.clone(), vl_bits.to_vec(), self.protocol.clone());
        let judged = tokio::task::spawn_blocking(move || judge(&name, &built, &resp, &vls, timeout, &p)).await;
        Ok(judged.unwrap_or_else(|e| self.failed(vl_bits, &format!("judging the runs failed: {e}"))))
    }
}

//! The agent's HTTP server: routes, the run handler with its slots, serving plain or TLS, and the blocking entry of the CLI.

use super::api::{AgentInfo, ApiError, RunRequest, RunResponse, TargetDesc, API_VERSION, INFO_PATH, RUN_PATH};
use super::auth::{require_token, Token};
use super::exec::ExecError;
use super::logtext::loggable;
use super::{check_machine, exec, host_desc, AgentConfig, AgentError, TlsIdentity};
use crate::harness::timing_args;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{middleware, Json, Router};
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// How long after the drain deadline connections that have not ended are closed.
const HARD_STOP_AFTER_DRAIN: Duration = Duration::from_secs(5);

/// A configured agent, ready to serve.
#[derive(Clone, Debug)]
pub struct Agent {
    state: Arc<AgentState>,
}

#[derive(Debug)]
struct AgentState {
    info: AgentInfo,
    token: Token,
    slots: Arc<Semaphore>,
    runs_started: AtomicU64,
    /// Runs whose child is running or about to be, each with its cancellation flag.
    running: std::sync::Mutex<Vec<Arc<AtomicBool>>>,
    /// Set when the drain deadline of a stopping agent has passed: no run starts any more.
    stopped: AtomicBool,
    drain_deadline: Duration,
    /// [`super::AgentConfig::max_bytes`].
    max_bytes: Option<u64>,
    /// [`super::AgentConfig::machine_lock`].
    machine_lock: Option<Arc<crate::MachineLock>>,
}

impl AgentState {
    /// Cancels every run in flight (the drain deadline has passed).
    fn cancel_all(&self) {
        self.stopped.store(true, Ordering::Relaxed);
        for flag in self.running.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            flag.store(true, Ordering::Relaxed);
        }
    }

    /// A new run's cancellation flag, listed until its [`RunGuard`] is dropped.
    fn register(self: &Arc<Self>) -> RunGuard {
        let flag = Arc::new(AtomicBool::new(self.stopped.load(Ordering::Relaxed)));
        self.running.lock().unwrap_or_else(|p| p.into_inner()).push(Arc::clone(&flag));
        RunGuard { state: Arc::clone(self), flag }
    }
}

/// Held by the request handler while its run is in flight. Dropping it,
/// which is what happens to a handler whose client went away (and to every
/// handler when the drain deadline closes the connections), cancels the run.
struct RunGuard {
    state: Arc<AgentState>,
    flag: Arc<AtomicBool>,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        self.flag.store(true, Ordering::Relaxed);
        self.state.running.lock().unwrap_or_else(|p| p.into_inner()).retain(|f| !Arc::ptr_eq(f, &self.flag));
    }
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(ApiError { error: message.into() })).into_response()
}

impl Agent {
    /// Checks the configuration against this machine and prepares the agent.
    pub fn new(config: &AgentConfig) -> Result<Agent, AgentError> {
        check_machine(&config.target)?;
        let t = &config.target;
        let slots = config.slots.max(1);
        let info = AgentInfo {
            agent_version: env!("CARGO_PKG_VERSION").to_string(),
            api_version: API_VERSION,
            target: TargetDesc {
                name: t.name.clone(),
                triple: t.triple.clone(),
                cpu: t.cpu.clone(),
                features: t.features.clone(),
            },
            vl_bits: config.resolved_vl_bits()?,
            slots,
            host: host_desc(),
        };
        let state = AgentState {
            info,
            token: config.token.clone(),
            slots: Arc::new(Semaphore::new(slots)),
            runs_started: AtomicU64::new(0),
            running: std::sync::Mutex::new(Vec::new()),
            stopped: AtomicBool::new(false),
            drain_deadline: config.drain_deadline,
            max_bytes: config.max_bytes,
            machine_lock: config.machine_lock.clone(),
        };
        Ok(Agent { state: Arc::new(state) })
    }

    /// What `GET /info` answers.
    pub fn info(&self) -> &AgentInfo {
        &self.state.info
    }

    /// Artifacts this agent has started running (each after authentication).
    pub fn runs_started(&self) -> u64 {
        self.state.runs_started.load(Ordering::Relaxed)
    }

    /// The routes, behind the token check.
    pub fn router(&self) -> Router {
        Router::new()
            .route(INFO_PATH, get(info))
            .route(RUN_PATH, post(run))
            .layer(DefaultBodyLimit::max(super::api::MAX_REQUEST_BYTES))
            .layer(middleware::from_fn_with_state(self.state.token.clone(), require_token))
            .with_state(Arc::clone(&self.state))
    }

    /// Runs in flight now.
    pub fn runs_in_flight(&self) -> usize {
        self.state.running.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Serves on `listener` (HTTPS with `tls`) until `shutdown` completes,
    /// then stops accepting requests, lets runs in flight finish until the
    /// drain deadline ([`AgentConfig::drain_deadline`]), kills what still
    /// runs, and returns.
    pub async fn serve(
        self,
        listener: std::net::TcpListener,
        tls: Option<TlsIdentity>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), AgentError> {
        let io = |what: &str| {
            let what = what.to_string();
            move |source| AgentError::Io { what, source }
        };
        listener.set_nonblocking(true).map_err(io("configuring the listener"))?;
        let handle = axum_server::Handle::new();
        let stopper = handle.clone();
        let state = Arc::clone(&self.state);
        tokio::spawn(async move {
            shutdown.await;
            // No new connections; those in flight end with their runs.
            stopper.graceful_shutdown(None);
            tokio::time::sleep(state.drain_deadline).await;
            let n = state.running.lock().unwrap_or_else(|p| p.into_inner()).len();
            if n > 0 {
                tracing::warn!("drain deadline passed: killing {n} run(s) in flight");
            }
            // Cancelled runs (and requests still waiting for a slot) are answered 503.
            state.cancel_all();
            // A connection that still does not end (a client that stopped
            // reading) is closed.
            tokio::time::sleep(HARD_STOP_AFTER_DRAIN).await;
            stopper.shutdown();
        });
        let app = self.router().into_make_service_with_connect_info::<SocketAddr>();
        match tls {
            Some(identity) => {
                let config = identity.rustls_config()?;
                axum_server::from_tcp_rustls(listener, config).handle(handle).serve(app).await
            }
            None => axum_server::from_tcp(listener).handle(handle).serve(app).await,
        }
        .map_err(io("serving"))
    }
}

async fn info(State(state): State<Arc<AgentState>>) -> Json<AgentInfo> {
    Json(state.info.clone())
}

async fn run(State(state): State<Arc<AgentState>>, Json(req): Json<RunRequest>) -> Response {
    if let Err(why) = req.check(&state.info.vl_bits) {
        tracing::warn!("refused run {}: {}", loggable(&req.label), loggable(&why));
        return error(StatusCode::BAD_REQUEST, why);
    }
    if let Some(max) = state.max_bytes.filter(|&m| req.input.len() as u64 > m) {
        let why =
            format!("the run's inputs take {} bytes; this agent runs at most {max} (--max-bytes)", req.input.len());
        tracing::warn!("refused run {}: {why}", loggable(&req.label));
        return error(StatusCode::BAD_REQUEST, why);
    }
    let driver_args = match timing_args(&req.protocol) {
        Ok(a) => a,
        Err(e) => return error(StatusCode::BAD_REQUEST, e.to_string()),
    };
    if let Err(e) = crate::harness::timing::check_pin_core_here(&req.protocol) {
        return error(StatusCode::BAD_REQUEST, e.to_string());
    }
    let label = loggable(&req.label);
    let queued = Instant::now();
    let wait = Duration::from_millis(req.queue_timeout_ms);
    let permit = match tokio::time::timeout(wait, Arc::clone(&state.slots).acquire_owned()).await {
        Ok(Ok(p)) => p,
        Ok(Err(_)) => return error(StatusCode::SERVICE_UNAVAILABLE, "the agent is shutting down"),
        Err(_) => {
            let msg = format!("no free slot within {:.1} s", wait.as_secs_f64());
            return error(StatusCode::SERVICE_UNAVAILABLE, msg);
        }
    };
    // Timed on this machine: builds of local scaletune processes finish
    // first and no new one starts until the run is over.
    let machine = match &state.machine_lock {
        Some(lock) => match lock.hold(crate::farm::MachineMode::Exclusive).await {
            Ok(h) => Some(h),
            Err(e) => {
                tracing::warn!("run {}: {e}; timed without keeping local builds out", loggable(&req.label));
                None
            }
        },
        None => None,
    };
    let queued_s = queued.elapsed().as_secs_f64();
    state.runs_started.fetch_add(1, Ordering::Relaxed);
    tracing::info!(
        "run {label}: {} byte executable at VL {:?} (waited {queued_s:.3} s for a slot)",
        req.executable.len(),
        req.vl_bits
    );
    // If this handler is dropped (the client went away, or the drain
    // deadline closed the connection), the guard cancels the run: its child
    // is killed and the blocking task ends, releasing the slot.
    let guard = state.register();
    let memory_limit = state.max_bytes.map(super::run_memory_limit);
    let cancel = Arc::clone(&guard.flag);
    let joined = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let _machine = machine;
        exec::execute(&req, &driver_args, memory_limit, &cancel)
    })
    .await;
    drop(guard);
    match joined {
        Ok(Ok(runs)) => {
            let endings: Vec<String> = runs.iter().map(|r| format!("{}: {:?}", r.vl_bits, r.ending)).collect();
            tracing::info!("run {label} done: {}", endings.join(", "));
            let hostname = state.info.host.hostname.clone();
            Json(RunResponse { hostname, queued_s, runs }).into_response()
        }
        Ok(Err(ExecError::Cancelled)) => {
            tracing::warn!("run {label} cancelled: the agent is stopping");
            error(StatusCode::SERVICE_UNAVAILABLE, "the run was cancelled: the agent is shutting down")
        }
        Ok(Err(ExecError::Agent(why))) => {
            tracing::error!("run {label}: {why}");
            error(StatusCode::INTERNAL_SERVER_ERROR, why)
        }
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, format!("the run task failed: {e}")),
    }
}

/// Runs an agent until Ctrl-C or SIGTERM: binds `config.listen`, loads the
/// TLS identity if any, and serves on the caller's runtime. For the
/// `scaletune agent` command.
pub async fn serve_until_signal(config: &AgentConfig) -> Result<(), AgentError> {
    if config.tls.is_none() && !config.listen.ip().is_loopback() && !config.insecure_plain_http {
        return Err(AgentError::Token(format!(
            "refusing to listen on {} without TLS: the token and artifacts would cross the network in clear \
             (give --tls-cert/--tls-key, listen on loopback behind an SSH tunnel, or --insecure-plain-http)",
            config.listen
        )));
    }
    let agent = Agent::new(config)?;
    let tls = match &config.tls {
        Some((cert, key)) => Some(TlsIdentity::from_pem_files(cert, key)?),
        None => None,
    };
    let listener = std::net::TcpListener::bind(config.listen)
        .map_err(|source| AgentError::Io { what: format!("cannot listen on {}", config.listen), source })?;
    let addr = listener.local_addr().unwrap_or(config.listen);
    if tls.is_none() && !addr.ip().is_loopback() {
        tracing::warn!("listening on {addr} without TLS: the token and artifacts cross the network in clear");
    }
    let info = agent.info();
    tracing::info!(
        "scaletune agent {} listening on {}://{addr}: target {} ({}, {}), VL {:?}, {} slot(s), host {} ({})",
        info.agent_version,
        if tls.is_some() { "https" } else { "http" },
        info.target.name,
        info.target.triple,
        info.target.cpu,
        info.vl_bits,
        info.slots,
        info.host.hostname,
        info.host.cpu_model
    );
    let drain_s = config.drain_deadline.as_secs();
    let stop = async move {
        crate::cleanup::next_interrupt().await;
        tracing::info!("stopping: runs in flight may finish within {drain_s} s");
    };
    agent.serve(listener, tls, stop).await
}

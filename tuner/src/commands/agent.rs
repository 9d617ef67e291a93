//! `scaletune agent`: serve this machine to remote runners (see `scaletune_measure::agent`).

use anyhow::{bail, Context};
use scaletune_codegen::target::Target;
use scaletune_measure::agent::{serve_until_signal, AgentConfig, Token, DEFAULT_LISTEN};
use std::net::ToSocketAddrs;
use std::path::PathBuf;
use tokio::runtime::Handle;

/// Options of `agent`.
#[derive(Clone, Debug, clap::Args)]
pub struct AgentArgs {
    /// Address to listen on (loopback by default; use TLS for any other address).
    #[arg(long, default_value = DEFAULT_LISTEN)]
    pub listen: String,
    /// File holding the shared token (one word, at least 16 bytes; keep it mode 600).
    #[arg(long)]
    pub token_file: PathBuf,
    /// Target the agent runs code for (must match this machine's architecture).
    #[arg(long, short, default_value = "host")]
    pub target: String,
    /// PEM certificate chain: serve HTTPS (with --tls-key).
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Candidates run at once (further requests wait for a slot).
    #[arg(long, default_value_t = 1)]
    pub slots: usize,
    /// Vector lengths in bits to offer (comma-separated) [default: this machine's].
    #[arg(long, value_delimiter = ',')]
    pub vl: Vec<u32>,
    /// Serve plain HTTP on a non-loopback address (token and artifacts in clear).
    #[arg(long)]
    pub insecure_plain_http: bool,
    /// On SIGTERM or Ctrl-C, seconds runs in flight may take to finish before they are killed.
    #[arg(long, default_value_t = 30)]
    pub drain_secs: u64,
}

/// Runs the agent on the command line's runtime until Ctrl-C or SIGTERM.
pub fn run(args: &AgentArgs, rt: &Handle) -> anyhow::Result<()> {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_ansi(ansi).with_writer(std::io::stderr).try_init();
    let listen = args
        .listen
        .to_socket_addrs()
        .with_context(|| format!("--listen {}", args.listen))?
        .next()
        .with_context(|| format!("--listen {} names no address", args.listen))?;
    if args.slots == 0 {
        bail!("--slots must be at least 1");
    }
    let token = Token::from_file(&args.token_file)?;
    let target = Target::load(&args.target)?;
    let mut config = AgentConfig::new(target, token);
    config.listen = listen;
    config.slots = args.slots;
    config.vl_bits = args.vl.clone();
    config.tls = args.tls_cert.clone().zip(args.tls_key.clone());
    config.insecure_plain_http = args.insecure_plain_http;
    config.drain_deadline = std::time::Duration::from_secs(args.drain_secs);
    config.max_bytes = Some(crate::limits::max_bytes());
    config.machine_lock = super::machine_lock();
    rt.block_on(serve_until_signal(&config))?;
    Ok(())
}

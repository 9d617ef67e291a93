//! The farm file: the remote agents a client may use (`configs/farm.example.toml`), and connecting to them.
//!
//! ```toml
//! connect_timeout_s = 10      # optional
//! queue_timeout_s = 600       # optional: how long a run may wait for an agent's slot
//!
//! [[agent]]
//! name = "graviton3"
//! url = "https://graviton3.lab:7878"
//! token_file = "tokens/graviton3.token"   # relative to the farm file; `~/` is $HOME
//! ca_cert = "certs/farm-ca.pem"           # optional: PEM CA (or self-signed) certificate to trust
//! # insecure_plain_http = true            # optional: allow http:// to a host beyond loopback
//! ```
//!
//! A plain `http://` URL would send the token (and the artifacts) in clear:
//! it is refused for any host but loopback (`localhost`, `127.0.0.0/8`,
//! `::1`, as through an SSH tunnel) unless the agent's entry says
//! `insecure_plain_http = true`.

use crate::agent::Token;
use crate::protocol::TimingProtocol;
use crate::runner::remote::{AgentEndpoint, RemoteError, RemoteRunner, DEFAULT_CONNECT_TIMEOUT, DEFAULT_QUEUE_TIMEOUT};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;
use thiserror::Error;

/// A farm file that cannot be used.
#[derive(Debug, Error)]
pub enum FarmConfigError {
    /// Reading a file failed.
    #[error("cannot read {file}: {error}")]
    Io {
        /// The file.
        file: String,
        /// The I/O error (in the message, not a chained source: printed once).
        error: std::io::Error,
    },
    /// A file an agent's entry names (its token, its CA certificate) cannot be used.
    #[error("agent `{agent}` of the farm file: {message}")]
    AgentFile {
        /// The agent's name.
        agent: String,
        /// What is wrong, naming the file.
        message: String,
    },
    /// The TOML is malformed or a value is invalid.
    #[error("farm file {file}: {message}")]
    Invalid {
        /// The farm file.
        file: String,
        /// What is wrong.
        message: String,
    },
}

/// One agent of the farm file.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentEntry {
    /// Short unique name.
    pub name: String,
    /// `http://HOST:PORT` or `https://HOST:PORT`.
    pub url: String,
    /// File holding the shared token (resolved against the farm file's directory).
    pub token_file: PathBuf,
    /// PEM certificate to trust for this agent (resolved like `token_file`).
    #[serde(default)]
    pub ca_cert: Option<PathBuf>,
    /// Send the token over plain HTTP to a host beyond loopback (refused without it).
    #[serde(default)]
    pub insecure_plain_http: bool,
}

/// Whether `url` (already known to start with `http://`) names a loopback host.
fn is_loopback_url(url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else { return false };
    let host = parsed.host_str().unwrap_or("");
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || bare.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// A parsed farm file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FarmConfig {
    /// The agents, in file order.
    pub agents: Vec<AgentEntry>,
    /// Time to establish a connection to an agent.
    pub connect_timeout: Duration,
    /// Time a run may wait for a slot on an agent.
    pub queue_timeout: Duration,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FarmFile {
    connect_timeout_s: Option<f64>,
    queue_timeout_s: Option<f64>,
    #[serde(default, rename = "agent")]
    agents: Vec<AgentEntry>,
}

/// `~/x` under `$HOME`; a relative path under `base`.
fn resolve(path: &Path, base: &Path) -> PathBuf {
    if let (Ok(rest), Some(home)) = (path.strip_prefix("~"), std::env::var_os("HOME")) {
        return PathBuf::from(home).join(rest);
    }
    if path.is_relative() {
        base.join(path)
    } else {
        path.to_path_buf()
    }
}

impl FarmConfig {
    /// Reads a farm file; relative paths in it are resolved against its directory.
    pub fn load(path: &Path) -> Result<FarmConfig, FarmConfigError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|source| FarmConfigError::Io { file: file.clone(), error: source })?;
        let base = path.parent().unwrap_or(Path::new("."));
        FarmConfig::parse(&text, base, &file)
    }

    /// Parses farm file text; `base` is where relative paths start, `file` names it in errors.
    pub fn parse(text: &str, base: &Path, file: &str) -> Result<FarmConfig, FarmConfigError> {
        let invalid = |message: String| FarmConfigError::Invalid { file: file.to_string(), message };
        let f: FarmFile = toml::from_str(text).map_err(|e| invalid(e.message().to_string()))?;
        let seconds = |v: Option<f64>, default: Duration, key: &str| match v {
            None => Ok(default),
            Some(s) if s.is_finite() && s > 0.0 && s < 1e7 => Ok(Duration::from_secs_f64(s)),
            Some(s) => Err(invalid(format!("{key} = {s} is not a positive number of seconds"))),
        };
        let connect_timeout = seconds(f.connect_timeout_s, DEFAULT_CONNECT_TIMEOUT, "connect_timeout_s")?;
        let queue_timeout = seconds(f.queue_timeout_s, DEFAULT_QUEUE_TIMEOUT, "queue_timeout_s")?;
        if f.agents.is_empty() {
            return Err(invalid("no [[agent]] entries".into()));
        }
        let mut agents = Vec::with_capacity(f.agents.len());
        for mut a in f.agents {
            if a.name.is_empty() || !a.name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
                return Err(invalid(format!("agent name `{}` must be letters, digits, `-`, `_` or `.`", a.name)));
            }
            if agents.iter().any(|b: &AgentEntry| b.name == a.name) {
                return Err(invalid(format!("two agents are named `{}`", a.name)));
            }
            if !(a.url.starts_with("http://") || a.url.starts_with("https://")) {
                return Err(invalid(format!(
                    "agent `{}`: url `{}` must start with http:// or https://",
                    a.name, a.url
                )));
            }
            if a.url.starts_with("http://") && !a.insecure_plain_http && !is_loopback_url(&a.url) {
                return Err(invalid(format!(
                    "agent `{}`: refusing to send the token in clear to {} (use https://, reach the agent \
                     through an SSH tunnel on loopback, or set insecure_plain_http = true)",
                    a.name, a.url
                )));
            }
            a.token_file = resolve(&a.token_file, base);
            a.ca_cert = a.ca_cert.map(|c| resolve(&c, base));
            agents.push(a);
        }
        Ok(FarmConfig { agents, connect_timeout, queue_timeout })
    }

    /// Reads every agent's token (and CA certificate) into an endpoint.
    pub fn endpoints(&self) -> Result<Vec<AgentEndpoint>, FarmConfigError> {
        self.agents
            .iter()
            .map(|a| {
                let bad = |message: String| FarmConfigError::AgentFile { agent: a.name.clone(), message };
                let token = Token::from_file(&a.token_file).map_err(|e| bad(e.to_string()))?;
                let ca_cert_pem = match &a.ca_cert {
                    Some(p) => {
                        let shown = p.display();
                        let pem = std::fs::read(p).map_err(|e| bad(format!("cannot read ca_cert {shown}: {e}")))?;
                        if !String::from_utf8_lossy(&pem).contains("-----BEGIN CERTIFICATE-----") {
                            return Err(bad(format!(
                                "ca_cert {shown} is not a PEM certificate (no CERTIFICATE block)"
                            )));
                        }
                        Some(pem)
                    }
                    None => None,
                };
                let mut e = AgentEndpoint::new(&a.name, &a.url, token);
                e.ca_cert_pem = ca_cert_pem;
                e.connect_timeout = self.connect_timeout;
                e.queue_timeout = self.queue_timeout;
                Ok(e)
            })
            .collect()
    }

    /// Connects to every agent at once. Returns the runners of the agents
    /// that answered and the errors of those that did not (a farm works with
    /// whatever is up; a caller with no runner at all should stop).
    pub async fn connect(
        &self,
        protocol: &TimingProtocol,
    ) -> Result<(Vec<RemoteRunner>, Vec<RemoteError>), FarmConfigError> {
        let mut tasks = tokio::task::JoinSet::new();
        for (i, e) in self.endpoints()?.into_iter().enumerate() {
            let p = protocol.clone();
            tasks.spawn(async move { (i, RemoteRunner::connect(e, p).await) });
        }
        let mut results = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            if let Ok(r) = joined {
                results.push(r);
            }
        }
        results.sort_by_key(|(i, _)| *i);
        let (mut up, mut down) = (Vec::new(), Vec::new());
        for (_, r) in results {
            match r {
                Ok(runner) => up.push(runner),
                Err(e) => down.push(e),
            }
        }
        Ok((up, down))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A token or certificate file that cannot be used is named with its agent.
    #[test]
    fn an_agents_unusable_files_are_named_with_the_agent() {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path();
        let token = base.join("t");
        std::fs::write(&token, "0123456789abcdef0123456789abcdef\n").expect("writes");
        std::fs::set_permissions(&token, std::os::unix::fs::PermissionsExt::from_mode(0o600)).expect("chmod");
        std::fs::write(base.join("not.pem"), "hello\n").expect("writes");
        let entry = |extra: &str| format!("[[agent]]\nname = \"a\"\nurl = \"https://h:1\"\n{extra}\n");
        let problem = |extra: &str| {
            let c = FarmConfig::parse(&entry(extra), base, "f.toml").expect("parses");
            c.endpoints().err().map(|e| e.to_string().replace(&base.display().to_string(), "DIR"))
        };
        assert_eq!(problem("token_file = \"t\""), None);
        assert_eq!(
            problem("token_file = \"missing\""),
            Some(
                "agent `a` of the farm file: cannot read token file DIR/missing: No such file or directory (os error 2)"
                    .into()
            )
        );
        assert_eq!(
            problem("token_file = \"t\"\nca_cert = \"not.pem\""),
            Some(
                "agent `a` of the farm file: ca_cert DIR/not.pem is not a PEM certificate (no CERTIFICATE block)"
                    .into()
            )
        );
        assert_eq!(
            problem("token_file = \"t\"\nca_cert = \"none.pem\""),
            Some(
                "agent `a` of the farm file: cannot read ca_cert DIR/none.pem: No such file or directory (os error 2)"
                    .into()
            )
        );
    }

    #[test]
    fn the_example_farm_file_parses_and_resolves_paths() {
        let text = include_str!("../../configs/farm.example.toml");
        let c = FarmConfig::parse(text, Path::new("/etc/scaletune"), "farm.example.toml").expect("parses");
        assert!(c.agents.len() >= 2);
        assert!(c.agents.iter().all(|a| a.token_file.is_absolute()), "{c:?}");
        assert_eq!(c.queue_timeout, Duration::from_secs(600));
    }

    #[test]
    fn bad_farm_files_say_why() {
        let err = |text: &str| FarmConfig::parse(text, Path::new("."), "f.toml").unwrap_err().to_string();
        assert!(err("").contains("no [[agent]]"));
        let a = "[[agent]]\nname = \"a\"\nurl = \"http://127.0.0.1:1\"\ntoken_file = \"t\"\n";
        assert!(err(&format!("{a}{a}")).contains("two agents are named `a`"));
        assert!(err(&a.replace("http://", "ftp://")).contains("must start with http"));
        assert!(err(&format!("queue_timeout_s = -1\n{a}")).contains("queue_timeout_s"));
        assert!(err(&a.replace("token_file", "token")).contains("unknown field"));
        let c = FarmConfig::parse(a, Path::new("/x"), "f.toml").expect("ok");
        assert_eq!(c.agents[0].token_file, PathBuf::from("/x/t"));
        assert_eq!(c.agents[0].ca_cert, None);
    }

    #[test]
    fn plain_http_beyond_loopback_needs_the_flag() {
        let entry =
            |url: &str, extra: &str| format!("[[agent]]\nname = \"a\"\nurl = \"{url}\"\ntoken_file = \"t\"\n{extra}");
        let parse = |text: &str| FarmConfig::parse(text, Path::new("."), "f.toml").map_err(|e| e.to_string());
        for loopback in ["http://127.0.0.1:7878", "http://127.3.4.5:1", "http://localhost:7878", "http://[::1]:7878"] {
            assert!(parse(&entry(loopback, "")).is_ok(), "{loopback}");
        }
        for far in
            ["http://10.0.0.7:7878", "http://graviton3.lab:7878", "http://[2001:db8::1]:7878", "http://0.0.0.0:1"]
        {
            let err = parse(&entry(far, "")).expect_err(far);
            assert_eq!(
                err,
                format!(
                    "farm file f.toml: agent `a`: refusing to send the token in clear to {far} (use https://, \
                     reach the agent through an SSH tunnel on loopback, or set insecure_plain_http = true)"
                )
            );
            let c = parse(&entry(far, "insecure_plain_http = true")).expect("allowed with the flag");
            assert!(c.agents[0].insecure_plain_http);
            assert!(parse(&entry(&far.replace("http://", "https://"), "")).is_ok(), "TLS needs no flag");
        }
    }
}

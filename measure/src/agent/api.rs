//! The agent's HTTP API: paths, headers and the JSON bodies shared by the agent and the remote runner.
//!
//! ```text
//! GET  /info   → 200 AgentInfo
//! POST /run    RunRequest → 200 RunResponse
//!              | 400 ApiError (a request the agent will never run: bad VL, bad protocol)
//!              | 401 (missing or wrong token) | 413 (body over the agent's limit)
//!              | 503 ApiError (no slot free within the request's queue timeout; shutting down)
//! ```
//!
//! Every request carries `Authorization: Bearer TOKEN`. Binary payloads
//! (the executable, its input, its outputs) are base64 strings in the JSON.

use crate::harness::ProcessEnding;
use crate::protocol::TimingProtocol;
use serde::{Deserialize, Serialize};

/// Version of this API; an agent and a client with different versions refuse to work together.
pub const API_VERSION: u32 = 1;

/// Path of the description of the agent.
pub const INFO_PATH: &str = "/info";

/// Path of the run endpoint.
pub const RUN_PATH: &str = "/run";

/// Largest request body the agent accepts (executable + input, base64-encoded).
pub const MAX_REQUEST_BYTES: usize = 512 * 1024 * 1024;

/// What an agent runs: the target as the client's compiler knew it.
///
/// A remote runner accepts a candidate only when its target agrees on all
/// four fields, so that a `host` candidate built on one machine never runs
/// on an agent whose `host` is another CPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetDesc {
    /// Target name (`host`, `neoverse-v1`, ...).
    pub name: String,
    /// LLVM triple.
    pub triple: String,
    /// LLVM CPU name.
    pub cpu: String,
    /// LLVM feature string.
    pub features: String,
}

/// The machine an agent runs on, for people and logs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostDesc {
    /// Host name.
    pub hostname: String,
    /// `std::env::consts::ARCH` of the agent.
    pub arch: String,
    /// Logical CPUs.
    pub cpus: usize,
    /// CPU model from `/proc/cpuinfo`, if any.
    pub cpu_model: String,
}

/// `GET /info`: who the agent is and what it can run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentInfo {
    /// The scaletune version of the agent.
    pub agent_version: String,
    /// [`API_VERSION`] of the agent.
    pub api_version: u32,
    /// The target it runs.
    pub target: TargetDesc,
    /// Vector lengths in bits it runs at.
    pub vl_bits: Vec<u32>,
    /// Runs it executes at once (more requests wait for a slot).
    pub slots: usize,
    /// The machine.
    pub host: HostDesc,
}

/// `POST /run`: one candidate's driver executable, run once per vector length.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunRequest {
    /// A label for the agent's logs (the candidate id and artifact hash).
    pub label: String,
    /// The linked driver executable.
    #[serde(with = "base64_bytes")]
    pub executable: Vec<u8>,
    /// Its input file.
    #[serde(with = "base64_bytes")]
    pub input: Vec<u8>,
    /// Vector lengths to run at, in order (each must be advertised).
    pub vl_bits: Vec<u32>,
    /// The timing protocol the driver follows after its checked first call.
    pub protocol: TimingProtocol,
    /// Wall-clock limit of one run (one vector length), from the child's start.
    pub timeout_ms: u64,
    /// How long the request may wait for a free slot before the agent answers 503.
    pub queue_timeout_ms: u64,
}

/// One run of a [`RunRequest`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VlRun {
    /// The vector length requested.
    pub vl_bits: u32,
    /// How the child process ended.
    pub ending: ProcessEnding,
    /// Its standard output (possibly truncated).
    pub stdout: String,
    /// Its standard error (possibly truncated).
    pub stderr: String,
    /// Its output file, if it wrote one.
    #[serde(with = "base64_opt")]
    pub output: Option<Vec<u8>>,
    /// Wall time of the child, spawn to exit, in seconds.
    pub wall_s: f64,
}

/// The answer to a [`RunRequest`].
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunResponse {
    /// The agent that ran it ([`HostDesc::hostname`]).
    pub hostname: String,
    /// Seconds the request waited for a slot (never part of a run's timeout).
    pub queued_s: f64,
    /// One entry per requested vector length, in order.
    pub runs: Vec<VlRun>,
}

/// The body of an error answer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ApiError {
    /// What went wrong.
    pub error: String,
}

mod base64_bytes {
    use base64::engine::general_purpose::STANDARD;
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        STANDARD.decode(text.as_bytes()).map_err(serde::de::Error::custom)
    }
}

mod base64_opt {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        match bytes {
            Some(b) => super::base64_bytes::serialize(b, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u8>>, D::Error> {
        #[derive(Deserialize)]
        struct Wrapped(#[serde(with = "super::base64_bytes")] Vec<u8>);
        Ok(Option::<Wrapped>::deserialize(d)?.map(|w| w.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_fields_travel_as_base64() {
        let run = VlRun {
            vl_bits: 256,
            ending: ProcessEnding::Signaled { signal: 11 },
            stdout: "x".into(),
            stderr: String::new(),
            output: Some(vec![0, 1, 2, 255]),
            wall_s: 0.5,
        };
        let json = serde_json::to_string(&run).expect("serialize");
        assert!(json.contains(r#""output":"AAEC/w==""#), "{json}");
        assert!(json.contains(r#""ending":{"kind":"signaled","signal":11}"#), "{json}");
        let back: VlRun = serde_json::from_str(&json).expect("deserialize");
        assert_eq!(back.output, run.output);
        let none = VlRun { output: None, ..run };
        let back: VlRun = serde_json::from_str(&serde_json::to_string(&none).expect("ser")).expect("de");
        assert_eq!(back.output, None);
    }
}

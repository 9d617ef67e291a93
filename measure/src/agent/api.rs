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
use std::time::Duration;

/// Version of this API; an agent and a client with different versions refuse to work together.
pub const API_VERSION: u32 = 1;

/// Path of the description of the agent.
pub const INFO_PATH: &str = "/info";

/// Path of the run endpoint.
pub const RUN_PATH: &str = "/run";

/// Largest request body the agent accepts (executable + input, base64-encoded).
pub const MAX_REQUEST_BYTES: usize = 512 * 1024 * 1024;

/// Most vector lengths one request may ask for (each at most once): SVE has
/// 16 lengths (128 to 2048 bits), and an agent offers at most those.
pub const MAX_VLS_PER_REQUEST: usize = 16;

/// Longest label, in bytes.
pub const MAX_LABEL_BYTES: usize = 256;

/// Longest timeout of one run (one vector length).
pub const MAX_RUN_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

/// Longest time all the runs of one request may take together
/// (vector lengths x timeout).
pub const MAX_REQUEST_RUN_TIME: Duration = Duration::from_secs(24 * 3600);

/// Longest time a request may wait for a free slot.
pub const MAX_QUEUE_TIMEOUT: Duration = Duration::from_secs(3600);

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

impl RunRequest {
    /// Checks the request against the limits of this module and the vector
    /// lengths an agent `offers`: at least one and at most
    /// [`MAX_VLS_PER_REQUEST`] vector lengths, each offered and none twice,
    /// a label of at most [`MAX_LABEL_BYTES`], a run timeout between 1 ms and
    /// [`MAX_RUN_TIMEOUT`], all runs together within
    /// [`MAX_REQUEST_RUN_TIME`], a queue timeout within [`MAX_QUEUE_TIMEOUT`].
    /// The error says which limit the request broke.
    pub fn check(&self, offers: &[u32]) -> Result<(), String> {
        let n = self.vl_bits.len();
        if n == 0 {
            return Err("no vector lengths to run at".into());
        }
        if n > MAX_VLS_PER_REQUEST {
            return Err(format!("{n} vector lengths requested; at most {MAX_VLS_PER_REQUEST} per request"));
        }
        for (i, vl) in self.vl_bits.iter().enumerate() {
            if !offers.contains(vl) {
                return Err(format!("this agent does not run at VL {vl} (it offers {offers:?})"));
            }
            if self.vl_bits[..i].contains(vl) {
                return Err(format!("VL {vl} is requested twice"));
            }
        }
        if self.label.len() > MAX_LABEL_BYTES {
            return Err(format!("the label has {} bytes; at most {MAX_LABEL_BYTES}", self.label.len()));
        }
        let timeout = Duration::from_millis(self.timeout_ms);
        if timeout.is_zero() || timeout > MAX_RUN_TIMEOUT {
            let max = MAX_RUN_TIMEOUT.as_millis();
            return Err(format!("timeout_ms {} is out of range (1 to {max})", self.timeout_ms));
        }
        // n <= 16, so the product cannot overflow.
        if timeout * n as u32 > MAX_REQUEST_RUN_TIME {
            let hours = MAX_REQUEST_RUN_TIME.as_secs() / 3600;
            return Err(format!("{n} runs of up to {} ms exceed the {hours} h a request may take", self.timeout_ms));
        }
        if Duration::from_millis(self.queue_timeout_ms) > MAX_QUEUE_TIMEOUT {
            let max = MAX_QUEUE_TIMEOUT.as_millis();
            return Err(format!("queue_timeout_ms {} is out of range (0 to {max})", self.queue_timeout_ms));
        }
        Ok(())
    }
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

    fn request(vls: &[u32]) -> RunRequest {
        RunRequest {
            label: "c1".into(),
            executable: vec![1],
            input: vec![],
            vl_bits: vls.to_vec(),
            protocol: TimingProtocol::default(),
            timeout_ms: 1000,
            queue_timeout_ms: 1000,
        }
    }

    #[test]
    fn requests_beyond_the_limits_are_refused_naming_the_limit() {
        let offers: Vec<u32> = (1..=16).map(|i| i * 128).collect();
        assert_eq!(request(&[128, 256]).check(&offers), Ok(()));
        assert_eq!(request(&offers).check(&offers), Ok(()), "every offered VL once");
        let err = |r: RunRequest| r.check(&offers).expect_err("refused");
        assert_eq!(err(request(&[])), "no vector lengths to run at");
        assert_eq!(err(request(&vec![128; 100_000])), "100000 vector lengths requested; at most 16 per request");
        assert_eq!(err(request(&[128, 256, 128])), "VL 128 is requested twice");
        assert_eq!(err(request(&[96])), format!("this agent does not run at VL 96 (it offers {offers:?})"));
        let long = RunRequest { label: "x".repeat(60_000), ..request(&[128]) };
        assert_eq!(err(long), "the label has 60000 bytes; at most 256");
        for bad in [0, 24 * 3600 * 1000 + 1, u64::MAX] {
            let r = RunRequest { timeout_ms: bad, ..request(&[128]) };
            assert_eq!(err(r), format!("timeout_ms {bad} is out of range (1 to 86400000)"));
        }
        let r = RunRequest { timeout_ms: 6 * 3600 * 1000, ..request(&[128, 256, 384, 512, 640]) };
        assert_eq!(err(r), "5 runs of up to 21600000 ms exceed the 24 h a request may take");
        let r = RunRequest { queue_timeout_ms: u64::MAX, ..request(&[128]) };
        assert_eq!(err(r), format!("queue_timeout_ms {} is out of range (0 to 3600000)", u64::MAX));
    }

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

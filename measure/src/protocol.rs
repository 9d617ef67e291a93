//! The timing protocol shared by the native runner and remote agents.

use serde::{Deserialize, Serialize};

/// The environment variable the kernel runtime reads for the number of
/// threads of a parallel loop.
pub const THREADS_VAR: &str = "SCALETUNE_NUM_THREADS";

/// How a kernel is timed inside its child process.
///
/// After `warmup` untimed calls, `repeat` repeats each time `number`
/// consecutive calls and record seconds per call. If a repeat would take
/// less than `min_repeat_ms`, `number` is raised (once, before the repeats)
/// so that it does not. With `flush_cache`, a buffer larger than the last
/// level cache is written between repeats. With `pin_core`, the child is
/// pinned to that CPU. With `threads`, parallel loops run on that many threads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimingProtocol {
    /// Untimed calls before the first repeat.
    pub warmup: u32,
    /// Calls per repeat (a lower bound, see `min_repeat_ms`).
    pub number: u32,
    /// Number of repeats.
    pub repeat: u32,
    /// Minimum duration of one repeat in milliseconds.
    pub min_repeat_ms: u32,
    /// Evict caches between repeats.
    pub flush_cache: bool,
    /// Pin the child process to this CPU.
    pub pin_core: Option<u32>,
    /// Threads a parallel loop runs on (`SCALETUNE_NUM_THREADS`); `None`
    /// means one per CPU. `Some(1)` times single-threaded code.
    #[serde(default)]
    pub threads: Option<u32>,
}

impl Default for TimingProtocol {
    fn default() -> Self {
        TimingProtocol {
            warmup: 2,
            number: 1,
            repeat: 7,
            min_repeat_ms: 20,
            flush_cache: false,
            pin_core: None,
            threads: None,
        }
    }
}

impl TimingProtocol {
    /// The environment variable that sets the thread count of parallel
    /// loops, when [`TimingProtocol::threads`] is set.
    pub fn thread_env(&self) -> Option<(String, String)> {
        self.threads.map(|n| (THREADS_VAR.to_string(), n.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_set_the_runtime_variable_and_default_to_unset() {
        let p = TimingProtocol { threads: Some(1), ..TimingProtocol::default() };
        assert_eq!(p.thread_env(), Some((THREADS_VAR.to_string(), "1".to_string())));
        assert_eq!(TimingProtocol::default().thread_env(), None);
        // A protocol serialized before `threads` existed still reads.
        let old = r#"{"warmup":2,"number":1,"repeat":7,"min_repeat_ms":20,"flush_cache":false,"pin_core":null}"#;
        assert_eq!(serde_json::from_str::<TimingProtocol>(old).unwrap(), TimingProtocol::default());
    }
}

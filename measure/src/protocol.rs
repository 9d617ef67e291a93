//! The timing protocol shared by the native runner and remote agents.

use serde::{Deserialize, Serialize};

/// How a kernel is timed inside its child process.
///
/// After `warmup` untimed calls, `repeat` repeats each time `number`
/// consecutive calls and record seconds per call. If a repeat would take
/// less than `min_repeat_ms`, `number` is raised (once, before the repeats)
/// so that it does not. With `flush_cache`, a buffer larger than the last
/// level cache is written between repeats. With `pin_core`, the child is
/// pinned to that CPU.
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
}

impl Default for TimingProtocol {
    fn default() -> Self {
        TimingProtocol { warmup: 2, number: 1, repeat: 7, min_repeat_ms: 20, flush_cache: false, pin_core: None }
    }
}

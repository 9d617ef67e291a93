//! A candidate: one schedule (trace) of one workload for one target, to build and measure at some vector lengths.

use scaletune_codegen::target::Target;
use scaletune_space::trace::Trace;
use scaletune_space::workload::Workload;
use std::sync::Arc;
use std::time::Duration;

/// The default per-run timeout of a candidate.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// What a farm builds and measures. Workload and target are shared between
/// the candidates of a batch.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// Id within its batch (reported back in [`crate::Measurement::candidate`]).
    pub id: u64,
    /// The workload (concrete shapes).
    pub workload: Arc<Workload>,
    /// The target to compile for.
    pub target: Arc<Target>,
    /// The schedule, with every sampling decision made.
    pub trace: Trace,
    /// Vector lengths in bits to measure at; empty means `target.default_vl_bits`.
    pub vl_bits: Vec<u32>,
    /// Wall-clock limit of one run (one vector length) of this candidate,
    /// counted from the start of its own process.
    pub timeout: Duration,
}

impl Candidate {
    /// A candidate at the target's default vector lengths with [`DEFAULT_TIMEOUT`].
    pub fn new(id: u64, workload: Arc<Workload>, target: Arc<Target>, trace: Trace) -> Candidate {
        Candidate { id, workload, target, trace, vl_bits: Vec::new(), timeout: DEFAULT_TIMEOUT }
    }

    /// Sets the vector lengths.
    pub fn with_vl_bits(mut self, vl_bits: Vec<u32>) -> Candidate {
        self.vl_bits = vl_bits;
        self
    }

    /// Sets the per-run timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Candidate {
        self.timeout = timeout;
        self
    }

    /// The vector lengths to measure at: the requested ones, or the target's defaults.
    pub fn vls(&self) -> Vec<u32> {
        if self.vl_bits.is_empty() {
            self.target.default_vl_bits.clone()
        } else {
            self.vl_bits.clone()
        }
    }
}

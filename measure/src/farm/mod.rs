//! The farm: builds a batch of candidates with a builder pool and feeds them to every idle runner that accepts them.
//!
//! ```text
//! candidates ──▶ BuilderPool (N workers, blocking pool) ──▶ ready queue ──▶ runner slots ──▶ Measurement stream
//!                      ▲ gate: at most `max_ahead` candidates building or built-and-waiting
//! ```
//!
//! One coordinator task owns the ready queue and the runner slots (each
//! runner has [`Runner::slots`] of them). Whenever a build finishes or a run
//! ends it hands every free slot the oldest ready candidate with a vector
//! length that slot's runner accepts (all such vector lengths at once), so a
//! slot never idles while accepted work is queued, builds continue while
//! runs execute, and several runners are busy at once. Results stream back in
//! completion order; a candidate is done when all its vector lengths are.
//! The exception: a run timed with the wall clock on this machine
//! ([`Runner::times_this_machine`]: the native runner) never overlaps a
//! build (the `quiet` module), which would otherwise slow its repeats; with
//! a [`MachineLock`] ([`Farm::with_machine_lock`]), nor a build or an
//! untimed local run of another process.
//!
//! Faults are results: a build failure (or builder panic) is
//! `Measurement::build_error`; a crash, timeout or wrong result reported by
//! a runner is the candidate's own result and is never retried. What is not
//! the candidate's fault is `unmeasured`, with the reason: a vector length
//! no runner accepts, a runner that panicked or left a vector length out.
//! A runner that reports a [`RunnerFault`](crate::runner::RunnerFault) from
//! `try_run` gets its work put back at the front of the queue for any
//! runner that is up, and is suspended, re-probed or taken out by the
//! fault's kind ([`crate::runner::health`]): an agent without a free
//! slot rests and gets work again; one that vanished is probed with backoff
//! and comes back if it answers; work waits for a suspended runner that
//! accepts it and is `unmeasured` only when none is left, or after its
//! runs met [`FaultPolicy::max_faults_per_run`] faults. The batch always
//! completes. Every build and run is recorded on a [`Timeline`].

mod dispatch;
mod machine;
mod quiet;
mod timeline;

pub(crate) use machine::Mode as MachineMode;
pub use machine::{ExclusiveHold, MachineLock, MachineLockError};
pub(crate) use quiet::Quiet;

pub use timeline::{Event, EventKind, Span, Timeline};

use crate::builder::{Builder, BuilderPool};
use crate::candidate::Candidate;
use crate::result::Measurement;
use crate::runner::health::FaultPolicy;
use crate::runner::Runner;
use std::sync::Arc;
use timeline::EventLog;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Builders and runners that measure batches of candidates.
#[derive(Clone)]
pub struct Farm {
    pool: BuilderPool,
    runners: Vec<Arc<dyn Runner>>,
    max_ahead: Option<usize>,
    policy: FaultPolicy,
    /// Shared by every batch of this farm and its clones.
    quiet: Arc<Quiet>,
}

impl std::fmt::Debug for Farm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.runners.iter().map(|r| r.name()).collect();
        f.debug_struct("Farm").field("pool", &self.pool).field("runners", &names).finish()
    }
}

impl Farm {
    /// A farm with `builders` build workers running `builder`, and `runners`.
    pub fn new(builder: Arc<dyn Builder>, builders: usize, runners: Vec<Arc<dyn Runner>>) -> Farm {
        Farm {
            pool: BuilderPool::new(builder, builders),
            runners,
            max_ahead: None,
            policy: FaultPolicy::default(),
            quiet: Arc::default(),
        }
    }

    /// Also keeps this farm's builds (and untimed runs here) and timed runs
    /// apart from other processes' through `lock` (see [`MachineLock`]).
    /// Call before the first batch.
    pub fn with_machine_lock(mut self, lock: Arc<MachineLock>) -> Farm {
        self.quiet = Arc::new(Quiet::with_machine(lock));
        self
    }

    /// How runner faults are handled (default: [`FaultPolicy::default`]).
    pub fn with_fault_policy(mut self, policy: FaultPolicy) -> Farm {
        self.policy = policy;
        self
    }

    /// Bounds how many candidates may be building or built and waiting for a
    /// runner (default: the build workers plus twice the runner slots).
    pub fn with_max_ahead(mut self, max_ahead: usize) -> Farm {
        self.max_ahead = Some(max_ahead.max(1));
        self
    }

    /// The runners.
    pub fn runners(&self) -> &[Arc<dyn Runner>] {
        &self.runners
    }

    /// Total runner slots.
    pub fn slots(&self) -> usize {
        self.runners.iter().map(|r| r.slots().max(1)).sum()
    }

    /// Starts measuring a batch; results arrive on the returned [`Batch`].
    /// Must be called inside a tokio runtime.
    pub fn submit(&self, candidates: Vec<Candidate>) -> Batch {
        let log = Arc::new(EventLog::new());
        let (tx, rx) = mpsc::unbounded_channel();
        let max_ahead = self.max_ahead.unwrap_or(self.pool.workers() + 2 * self.slots());
        let task = dispatch::start(self.clone(), candidates, max_ahead, Arc::clone(&log), tx);
        Batch { results: rx, log, task }
    }

    /// Measures a batch and returns every measurement (in completion order) with the timeline.
    pub async fn measure(&self, candidates: Vec<Candidate>) -> BatchReport {
        self.submit(candidates).finish().await
    }
}

/// A batch in progress.
#[derive(Debug)]
pub struct Batch {
    results: mpsc::UnboundedReceiver<Measurement>,
    log: Arc<EventLog>,
    task: JoinHandle<()>,
}

impl Batch {
    /// The next finished candidate, or `None` when the batch is complete.
    pub async fn next(&mut self) -> Option<Measurement> {
        self.results.recv().await
    }

    /// The timeline so far.
    pub fn timeline(&self) -> Timeline {
        self.log.snapshot()
    }

    /// Waits for the rest of the batch.
    pub async fn finish(mut self) -> BatchReport {
        let mut measurements = Vec::new();
        while let Some(m) = self.results.recv().await {
            measurements.push(m);
        }
        // The coordinator has dropped its sender, so it is finishing; a panic
        // in it would already show as missing measurements.
        let _ = (&mut self.task).await;
        BatchReport { measurements, timeline: self.log.snapshot() }
    }
}

/// A finished batch.
#[derive(Clone, Debug)]
pub struct BatchReport {
    /// One measurement per candidate, in completion order.
    pub measurements: Vec<Measurement>,
    /// When each build and run started and ended.
    pub timeline: Timeline,
}

impl BatchReport {
    /// The measurement of a candidate.
    pub fn get(&self, candidate: u64) -> Option<&Measurement> {
        self.measurements.iter().find(|m| m.candidate == candidate)
    }
}

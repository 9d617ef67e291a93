//! The builder pool: a fixed number of workers running a [`Builder`] on tokio's blocking pool.

use super::{panic_message, BuildError, Builder, VlBuild};
use crate::candidate::Candidate;
use crate::farm::Quiet;
use crate::runner::Built;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

/// The result of building one candidate.
#[derive(Debug)]
pub struct BuildOutcome {
    /// The candidate.
    pub candidate: Candidate,
    /// Its builds (one per object, see [`Builder::build_all`]; never empty).
    pub builds: Vec<VlBuild>,
    /// Seconds the build took (as seen by the pool).
    pub build_s: f64,
}

impl BuildOutcome {
    /// The first build's result: the only one unless the candidate is
    /// fixed-length code measured at several vector lengths.
    pub fn result(self) -> Result<Built, BuildError> {
        let first = self.builds.into_iter().next();
        first.map(|b| b.result).unwrap_or_else(|| Err(BuildError::Other("the builder built nothing".into())))
    }
}

/// When a build starts or ends (for a farm's timeline).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BuildPhase {
    /// A worker took the candidate.
    Start,
    /// The build finished (successfully or not).
    End,
}

/// Called by the workers at each [`BuildPhase`].
pub(crate) type BuildHook = Arc<dyn Fn(&Candidate, BuildPhase) + Send + Sync>;

/// A built candidate with the permit it held while building and waiting to run.
pub(crate) type GatedOutcome = (BuildOutcome, Option<OwnedSemaphorePermit>);

/// Runs one [`Builder`] for many candidates, `workers` at a time.
#[derive(Clone)]
pub struct BuilderPool {
    builder: Arc<dyn Builder>,
    workers: usize,
}

impl std::fmt::Debug for BuilderPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuilderPool").field("workers", &self.workers).finish_non_exhaustive()
    }
}

impl BuilderPool {
    /// A pool of `workers` (at least one) running `builder`.
    pub fn new(builder: Arc<dyn Builder>, workers: usize) -> BuilderPool {
        BuilderPool { builder, workers: workers.max(1) }
    }

    /// The number of workers.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Builds one candidate on the blocking pool; a panic becomes [`BuildError::Panic`].
    pub async fn build_one(&self, candidate: Candidate) -> BuildOutcome {
        build_on_blocking_pool(Arc::clone(&self.builder), candidate).await
    }

    /// Builds every candidate (taken in order by the workers); outcomes arrive
    /// in completion order. Must be called inside a tokio runtime.
    pub fn spawn(&self, candidates: Vec<Candidate>) -> mpsc::UnboundedReceiver<BuildOutcome> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut gated = self.spawn_gated(candidates, None, None, None);
        tokio::spawn(async move {
            while let Some((outcome, _)) = gated.recv().await {
                if tx.send(outcome).is_err() {
                    break;
                }
            }
        });
        rx
    }

    /// Like [`BuilderPool::spawn`]; with a `gate`, each worker takes a permit
    /// before it takes a candidate and hands it over with the outcome (a farm
    /// keeps it until the candidate starts running, bounding how far builds
    /// run ahead). `hook` sees every start and end. With `quiet`, each build
    /// waits for its admission ([`Quiet::build`]).
    pub(crate) fn spawn_gated(
        &self,
        candidates: Vec<Candidate>,
        gate: Option<Arc<Semaphore>>,
        hook: Option<BuildHook>,
        quiet: Option<Arc<Quiet>>,
    ) -> mpsc::UnboundedReceiver<GatedOutcome> {
        let (tx, rx) = mpsc::unbounded_channel();
        let queue = Arc::new(Mutex::new(VecDeque::from(candidates)));
        for _ in 0..self.workers {
            let queue = Arc::clone(&queue);
            let builder = Arc::clone(&self.builder);
            let gate = gate.clone();
            let hook = hook.clone();
            let quiet = quiet.clone();
            let tx = tx.clone();
            tokio::spawn(async move {
                loop {
                    let permit = match &gate {
                        Some(g) => match Arc::clone(g).acquire_owned().await {
                            Ok(p) => Some(p),
                            Err(_) => break,
                        },
                        None => None,
                    };
                    let next = queue.lock().map(|mut q| q.pop_front()).unwrap_or(None);
                    let Some(candidate) = next else { break };
                    let admitted = match &quiet {
                        Some(q) => Some(q.build().await),
                        None => None,
                    };
                    if let Some(h) = &hook {
                        h(&candidate, BuildPhase::Start);
                    }
                    let outcome = build_on_blocking_pool(Arc::clone(&builder), candidate).await;
                    if let Some(h) = &hook {
                        h(&outcome.candidate, BuildPhase::End);
                    }
                    drop(admitted);
                    if tx.send((outcome, permit)).is_err() {
                        break;
                    }
                }
            });
        }
        rx
    }
}

/// Runs `builder.build` on the blocking pool, catching panics.
async fn build_on_blocking_pool(builder: Arc<dyn Builder>, candidate: Candidate) -> BuildOutcome {
    let start = Instant::now();
    let c = candidate.clone();
    let joined = tokio::task::spawn_blocking(move || catch_unwind(AssertUnwindSafe(|| builder.build_all(&c)))).await;
    let failed = |e: BuildError| vec![VlBuild { vl_bits: candidate.vls(), result: Err(e) }];
    let builds = match joined {
        Ok(Ok(b)) if !b.is_empty() => b,
        Ok(Ok(_)) => failed(BuildError::Other("the builder built nothing".into())),
        Ok(Err(payload)) => {
            failed(BuildError::Panic { stage: "the builder".into(), message: panic_message(payload.as_ref()) })
        }
        Err(e) => failed(BuildError::Panic { stage: "the builder task".into(), message: e.to_string() }),
    };
    BuildOutcome { candidate, builds, build_s: start.elapsed().as_secs_f64() }
}

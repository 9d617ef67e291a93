//! A dispatcher for already-built candidates: every idle runner that accepts the work gets some, and work on a runner that fails moves to another.
//!
//! The [`Farm`](crate::Farm) schedules *batches to build*; the
//! [`Dispatcher`] does the same for candidates that are built already —
//! re-measuring a batch on the agents of a farm file, measuring one artifact
//! on whichever agent is free — without a builder pool. Both handle runner
//! faults with the same code ([`crate::runner::health`]):
//!
//! - each runner has [`Runner::slots`] slots; a run takes a free slot of a
//!   runner that is up and accepts at least one of its pending vector
//!   lengths (the runner with the most free slots first), and waits for one
//!   otherwise;
//! - a [`RunnerFault`](crate::runner::RunnerFault) puts the vector lengths
//!   back in the run's pending list for another runner, and suspends the
//!   runner (a busy one rests, an unreachable one is re-probed with backoff
//!   and comes back if it answers) or takes it out (a refusal, or every
//!   probe failed);
//! - a vector length is `unmeasured` when no runner short of down accepts
//!   it, or after its run met [`FaultPolicy::max_faults_per_run`] faults; a
//!   crash, timeout or wrong result reported by a live runner is the
//!   candidate's own result and is never retried.
//!
//! ```no_run
//! # async fn demo(runners: Vec<std::sync::Arc<dyn scaletune_measure::Runner>>,
//! #               built: Vec<std::sync::Arc<scaletune_measure::Built>>) {
//! use scaletune_measure::dispatch::Dispatcher;
//! let d = std::sync::Arc::new(Dispatcher::new(runners));
//! let work = built.into_iter().map(|b| { let vls = b.harness.vl_bits().to_vec(); (b, vls) }).collect();
//! for m in d.run_all(work).await { println!("{} {}", m.candidate, m.status.name()); }
//! # }
//! ```

use crate::result::{Measurement, VlMeasurement};
use crate::runner::health::{assemble, follow_up, FaultPolicy, FollowUp, Health, Roster};
use crate::runner::{Built, FaultKind, Runner};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

/// Runs built candidates on a set of runners, moving work off runners that fail.
pub struct Dispatcher {
    runners: Vec<Arc<dyn Runner>>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.runners.iter().map(|r| r.name()).collect();
        f.debug_struct("Dispatcher").field("runners", &names).finish()
    }
}

/// What runs and follow-ups share.
struct Shared {
    state: Mutex<State>,
    changed: Notify,
}

struct State {
    roster: Roster,
    /// Free slots per runner.
    free: Vec<usize>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A taken slot; given back on drop (also when the run's future is dropped).
struct SlotGuard<'a> {
    shared: &'a Shared,
    runner: usize,
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        self.shared.lock().free[self.runner] += 1;
        self.shared.changed.notify_waiters();
    }
}

impl Dispatcher {
    /// A dispatcher over `runners`, with the default [`FaultPolicy`].
    pub fn new(runners: Vec<Arc<dyn Runner>>) -> Dispatcher {
        Dispatcher::with_fault_policy(runners, FaultPolicy::default())
    }

    /// A dispatcher over `runners` that handles faults by `policy`.
    pub fn with_fault_policy(runners: Vec<Arc<dyn Runner>>, policy: FaultPolicy) -> Dispatcher {
        let free = runners.iter().map(|r| r.slots().max(1)).collect();
        let state = State { roster: Roster::new(runners.clone(), policy), free };
        Dispatcher { runners, shared: Arc::new(Shared { state: Mutex::new(state), changed: Notify::new() }) }
    }

    /// The runners.
    pub fn runners(&self) -> &[Arc<dyn Runner>] {
        &self.runners
    }

    /// Every runner's name and health.
    pub fn health(&self) -> Vec<(String, Health)> {
        let state = self.shared.lock();
        self.runners.iter().zip(state.roster.health()).map(|(r, h)| (r.name(), h.clone())).collect()
    }

    /// The runners taken out for good so far, with their faults.
    pub fn down(&self) -> Vec<(String, String)> {
        self.health()
            .into_iter()
            .filter_map(|(name, h)| match h {
                Health::Down { reason } => Some((name, reason)),
                _ => None,
            })
            .collect()
    }

    /// Takes a slot for some of `pending`, after giving up what no runner
    /// short of down accepts. `None`: every accepting runner is busy or suspended.
    fn claim(&self, built: &Built, pending: &mut Vec<u32>, out: &mut Vec<VlMeasurement>) -> Option<(usize, Vec<u32>)> {
        let target = built.harness.target();
        let mut state = self.shared.lock();
        let (keep, lost): (Vec<u32>, Vec<u32>) = pending.iter().partition(|&&vl| state.roster.can_run(target, vl));
        out.extend(
            lost.into_iter()
                .map(|vl| VlMeasurement::unmeasured(vl, "dispatcher", state.roster.unmeasured_reason(target, vl))),
        );
        *pending = keep;
        let r = (0..self.runners.len())
            .filter(|&r| state.free[r] > 0 && pending.iter().any(|&vl| state.roster.up_and_accepts(r, target, vl)))
            .max_by_key(|&r| (state.free[r], std::cmp::Reverse(r)))?;
        state.free[r] -= 1;
        let (take, rest): (Vec<u32>, Vec<u32>) = pending.iter().partition(|&&vl| self.runners[r].accepts(target, vl));
        *pending = rest;
        Some((r, take))
    }

    /// Runs `built` at each of `vl_bits` (in that order in the result) on
    /// whichever runners that are up accept them, waiting for a free slot
    /// (or a suspended runner's return) when there is none.
    pub async fn run(&self, built: Arc<Built>, vl_bits: &[u32]) -> Vec<VlMeasurement> {
        let mut pending = vl_bits.to_vec();
        let mut out = Vec::with_capacity(vl_bits.len());
        let mut faults = 0u32;
        while !pending.is_empty() {
            let notified = self.shared.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let Some((r, take)) = self.claim(&built, &mut pending, &mut out) else {
                if pending.is_empty() {
                    break;
                }
                notified.await;
                continue;
            };
            let guard = SlotGuard { shared: &self.shared, runner: r };
            let runner = Arc::clone(&self.runners[r]);
            let name = runner.name();
            let (b, v) = (Arc::clone(&built), take.clone());
            // A task of its own, so that a panicking runner is a result, not a dead dispatcher.
            let joined = tokio::spawn(async move { runner.try_run(b, &v).await }).await;
            let outcome = joined.unwrap_or_else(|e| {
                let why = format!("runner {name} panicked: {e}");
                Ok(take.iter().map(|&vl| VlMeasurement::unmeasured(vl, &name, why.clone())).collect())
            });
            match outcome {
                Ok(ms) => {
                    self.shared.lock().roster.on_success(r);
                    out.extend(assemble(&name, &take, ms));
                }
                Err(fault) => {
                    tracing::warn!("{fault}; its work goes to the other runners");
                    let (action, policy) = {
                        let mut state = self.shared.lock();
                        (state.roster.on_fault(r, &fault), state.roster.policy().clone())
                    };
                    if action != FollowUp::Nothing {
                        let (shared, runner) = (Arc::clone(&self.shared), Arc::clone(&self.runners[r]));
                        let policy = policy.clone();
                        tokio::spawn(async move {
                            let verdict = follow_up(runner, action, policy).await;
                            shared.lock().roster.settle(r, verdict);
                            shared.changed.notify_waiters();
                        });
                    }
                    if fault.kind != FaultKind::Busy {
                        faults += 1;
                    }
                    if faults >= policy.max_faults_per_run {
                        let why = format!("not measured: its run met {faults} runner faults, the last: {fault}");
                        out.extend(take.iter().map(|&vl| VlMeasurement::unmeasured(vl, "dispatcher", why.clone())));
                    } else {
                        pending.extend(take);
                    }
                    self.shared.changed.notify_waiters();
                }
            }
            drop(guard);
        }
        out.sort_by_key(|m| vl_bits.iter().position(|&v| v == m.vl_bits).unwrap_or(usize::MAX));
        out
    }

    /// Runs every `(built, vector lengths)` at once (as far as slots allow);
    /// returns one measurement per candidate, in completion order.
    pub async fn run_all(self: &Arc<Self>, work: Vec<(Arc<Built>, Vec<u32>)>) -> Vec<Measurement> {
        let mut tasks = tokio::task::JoinSet::new();
        for (built, vls) in work {
            let d = Arc::clone(self);
            tasks.spawn(async move {
                let runs = d.run(Arc::clone(&built), &vls).await;
                Measurement::from_runs(built.candidate, built.artifact.clone(), built.build_s, runs)
            });
        }
        let mut out = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            if let Ok(m) = joined {
                out.push(m);
            }
        }
        out
    }
}

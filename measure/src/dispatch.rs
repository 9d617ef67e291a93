//! A dispatcher for already-built candidates: every idle runner that accepts the work gets some, and work on a runner that fails moves to another.
//!
//! The [`Farm`](crate::Farm) already schedules *batches to build* this way
//! (its coordinator takes a runner out of the batch when `try_run` reports
//! a [`RunnerFault`] and re-queues the work). The [`Dispatcher`] is the same
//! rule for candidates that are built already — re-measuring a batch on the
//! agents of a farm file, measuring one artifact on whichever agent is free
//! — without a builder pool:
//!
//! - each runner has [`Runner::slots`] slots; a run takes a free slot of a
//!   live runner that accepts at least one of its pending vector lengths
//!   (the runner with the most free slots first), and waits for one otherwise;
//! - a [`RunnerFault`] (an agent that refused the connection, reset it, or
//!   let the request's own deadline pass) takes that runner out for good and
//!   puts the vector lengths back in the run's pending list for another runner;
//! - a vector length is `run_error` only when no live runner accepts it; a
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

use crate::result::{Measurement, Status, VlMeasurement};
use crate::runner::{Built, Runner, RunnerFault};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::Notify;

/// Runs built candidates on a set of runners, moving work off runners that fail.
pub struct Dispatcher {
    runners: Vec<Arc<dyn Runner>>,
    state: Mutex<State>,
    changed: Notify,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self.runners.iter().map(|r| r.name()).collect();
        f.debug_struct("Dispatcher").field("runners", &names).finish()
    }
}

struct State {
    /// Free slots per runner.
    free: Vec<usize>,
    /// Per runner: why it was taken out.
    down: Vec<Option<String>>,
}

/// A taken slot; given back on drop (also when the run's future is dropped).
struct SlotGuard<'a> {
    dispatcher: &'a Dispatcher,
    runner: usize,
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        self.dispatcher.lock().free[self.runner] += 1;
        self.dispatcher.changed.notify_waiters();
    }
}

fn failed_run(vl_bits: u32, runner: &str, message: String) -> VlMeasurement {
    VlMeasurement {
        vl_bits,
        status: Status::RunError,
        message,
        max_abs_err: f64::NAN,
        timing: None,
        emulated: None,
        runner: runner.to_string(),
    }
}

impl Dispatcher {
    /// A dispatcher over `runners`.
    pub fn new(runners: Vec<Arc<dyn Runner>>) -> Dispatcher {
        let state = State { free: runners.iter().map(|r| r.slots().max(1)).collect(), down: vec![None; runners.len()] };
        Dispatcher { runners, state: Mutex::new(state), changed: Notify::new() }
    }

    /// The runners.
    pub fn runners(&self) -> &[Arc<dyn Runner>] {
        &self.runners
    }

    /// The runners taken out so far, with their faults.
    pub fn down(&self) -> Vec<(String, String)> {
        let state = self.lock();
        self.runners.iter().zip(&state.down).filter_map(|(r, d)| Some((r.name(), d.clone()?))).collect()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Takes a slot for some of `pending`, or fails what no live runner accepts.
    /// `Ok(None)`: every accepting runner is busy.
    fn claim(&self, built: &Built, pending: &mut Vec<u32>, out: &mut Vec<VlMeasurement>) -> Option<(usize, Vec<u32>)> {
        let target = built.harness.target();
        let mut state = self.lock();
        let live = |r: usize, s: &State| s.down[r].is_none();
        let (keep, lost): (Vec<u32>, Vec<u32>) = pending
            .iter()
            .partition(|&&vl| (0..self.runners.len()).any(|r| live(r, &state) && self.runners[r].accepts(target, vl)));
        if !lost.is_empty() {
            let faults: Vec<&str> = state.down.iter().flatten().map(String::as_str).collect();
            let why = if faults.is_empty() {
                format!("no runner accepts target `{}` at this VL", target.name)
            } else {
                format!("no runner left that accepts it ({})", faults.join("; "))
            };
            out.extend(lost.into_iter().map(|vl| failed_run(vl, "dispatcher", why.clone())));
        }
        *pending = keep;
        let r = (0..self.runners.len())
            .filter(|&r| live(r, &state) && state.free[r] > 0)
            .filter(|&r| pending.iter().any(|&vl| self.runners[r].accepts(target, vl)))
            .max_by_key(|&r| (state.free[r], std::cmp::Reverse(r)))?;
        state.free[r] -= 1;
        let (take, rest): (Vec<u32>, Vec<u32>) = pending.iter().partition(|&&vl| self.runners[r].accepts(target, vl));
        *pending = rest;
        Some((r, take))
    }

    /// Runs `built` at each of `vl_bits` (in that order in the result) on
    /// whichever live runners accept them, waiting for a free slot when all are busy.
    pub async fn run(&self, built: Arc<Built>, vl_bits: &[u32]) -> Vec<VlMeasurement> {
        let mut pending = vl_bits.to_vec();
        let mut out = Vec::with_capacity(vl_bits.len());
        while !pending.is_empty() {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let Some((r, take)) = self.claim(&built, &mut pending, &mut out) else {
                if pending.is_empty() {
                    break;
                }
                notified.await;
                continue;
            };
            let guard = SlotGuard { dispatcher: self, runner: r };
            let runner = Arc::clone(&self.runners[r]);
            let name = runner.name();
            let (b, v) = (Arc::clone(&built), take.clone());
            // A task of its own, so that a panicking runner is a run error, not a dead dispatcher.
            let joined = tokio::spawn(async move { runner.try_run(b, &v).await }).await;
            let outcome = joined.unwrap_or_else(|e| {
                Ok(take.iter().map(|&vl| failed_run(vl, &name, format!("runner {name} panicked: {e}"))).collect())
            });
            match outcome {
                Ok(ms) => out.extend(take.iter().map(|&vl| {
                    ms.iter().find(|m| m.vl_bits == vl).cloned().unwrap_or_else(|| {
                        failed_run(vl, &name, format!("runner {name} returned no result for VL {vl}"))
                    })
                })),
                Err(RunnerFault { runner, message }) => {
                    tracing::warn!("runner {runner} failed ({message}); its work goes to the other runners");
                    self.lock().down[r] = Some(format!("runner {runner} failed: {message}"));
                    pending.extend(take);
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

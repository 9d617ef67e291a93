//! The farm's coordinator: one task that owns the ready queue and the runner slots and assembles the measurements.

use super::timeline::{EventKind, EventLog};
use crate::builder::{BuildHook, BuildOutcome, BuildPhase, BuilderPool};
use crate::candidate::Candidate;
use crate::result::{Measurement, Status, VlMeasurement};
use crate::runner::{Built, Runner, RunnerFault};
use scaletune_codegen::target::Target;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

/// Starts the coordinator of one batch.
pub(super) fn start(
    pool: BuilderPool,
    runners: Vec<Arc<dyn Runner>>,
    candidates: Vec<Candidate>,
    max_ahead: usize,
    log: Arc<EventLog>,
    results: UnboundedSender<Measurement>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let (runs_tx, runs_rx) = mpsc::unbounded_channel();
        let slots = runners
            .iter()
            .enumerate()
            .flat_map(|(r, runner)| (0..runner.slots().max(1)).map(move |_| Slot { runner: r, busy: false }))
            .collect();
        let coordinator = Coordinator {
            down: vec![None; runners.len()],
            runners,
            slots,
            ready: VecDeque::new(),
            progress: HashMap::new(),
            running: 0,
            log,
            results,
            runs_tx,
        };
        coordinator.run(pool, candidates, max_ahead, runs_rx).await;
    })
}

/// One place where a runner executes one candidate at a time.
struct Slot {
    runner: usize,
    busy: bool,
}

/// A built candidate with vector lengths not yet handed to a runner.
struct Ready {
    candidate: u64,
    built: Arc<Built>,
    target: Arc<Target>,
    pending: Vec<u32>,
    /// Held from the start of the build until the last vector length is dispatched.
    _permit: Option<OwnedSemaphorePermit>,
}

/// What is known about a candidate that is not done yet.
struct Progress {
    target: Arc<Target>,
    /// Every vector length, in the requested order.
    vls: Vec<u32>,
    /// The vector lengths some runner accepts.
    runnable: Vec<u32>,
    runs: Vec<VlMeasurement>,
    artifact: String,
    build_s: f64,
    /// Vector lengths without a result yet.
    outstanding: usize,
}

/// A finished run.
struct RunDone {
    slot: usize,
    candidate: u64,
    built: Arc<Built>,
    vls: Vec<u32>,
    outcome: Result<Vec<VlMeasurement>, RunnerFault>,
}

struct Coordinator {
    runners: Vec<Arc<dyn Runner>>,
    slots: Vec<Slot>,
    /// Per runner: why it was taken out of the batch.
    down: Vec<Option<String>>,
    ready: VecDeque<Ready>,
    progress: HashMap<u64, Progress>,
    running: usize,
    log: Arc<EventLog>,
    results: UnboundedSender<Measurement>,
    runs_tx: UnboundedSender<RunDone>,
}

/// A failed run of one vector length that never reached a runner (or whose runner misbehaved).
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

impl Coordinator {
    async fn run(
        mut self,
        pool: BuilderPool,
        candidates: Vec<Candidate>,
        max_ahead: usize,
        mut runs_rx: UnboundedReceiver<RunDone>,
    ) {
        let to_build = self.admit(candidates);
        let log = Arc::clone(&self.log);
        let hook: BuildHook = Arc::new(move |c: &Candidate, phase| {
            let kind = match phase {
                BuildPhase::Start => EventKind::BuildStart,
                BuildPhase::End => EventKind::BuildEnd,
            };
            log.record(c.id, kind, None, &[]);
        });
        let gate = Arc::new(Semaphore::new(max_ahead));
        let mut builds = pool.spawn_gated(to_build, Some(gate), Some(hook));
        let mut builds_open = true;
        loop {
            self.dispatch();
            if !builds_open && self.running == 0 {
                break;
            }
            tokio::select! {
                b = builds.recv(), if builds_open => match b {
                    Some((outcome, permit)) => self.on_built(outcome, permit),
                    None => builds_open = false,
                },
                Some(done) = runs_rx.recv(), if self.running > 0 => self.on_run_done(done),
                else => break,
            }
        }
    }

    /// Registers the candidates; returns those to build. Candidates with a
    /// duplicate id, no vector length or no runner at all finish at once.
    fn admit(&mut self, candidates: Vec<Candidate>) -> Vec<Candidate> {
        let mut to_build = Vec::new();
        for c in candidates {
            if self.progress.contains_key(&c.id) {
                self.send(Measurement::build_error(c.id, format!("duplicate candidate id {} in the batch", c.id), 0.0));
                continue;
            }
            let vls = c.vls();
            let (runnable, unrunnable): (Vec<u32>, Vec<u32>) =
                vls.iter().partition(|&&vl| self.live_runner_accepts(&c.target, vl));
            let runs = unrunnable
                .iter()
                .map(|&vl| failed_run(vl, "farm", format!("no runner accepts target `{}` at VL {vl}", c.target.name)))
                .collect();
            let p = Progress {
                target: Arc::clone(&c.target),
                vls: vls.clone(),
                outstanding: runnable.len(),
                runnable,
                runs,
                artifact: String::new(),
                build_s: 0.0,
            };
            let nothing_to_run = p.outstanding == 0;
            self.progress.insert(c.id, p);
            if vls.is_empty() {
                self.progress.remove(&c.id);
                let mut m = Measurement::from_runs(c.id, String::new(), 0.0, Vec::new());
                m.status = Status::RunError;
                m.message = format!("no vector lengths to run at (target `{}` has no defaults)", c.target.name);
                self.send(m);
            } else if nothing_to_run {
                self.finish(c.id);
            } else {
                to_build.push(c);
            }
        }
        to_build
    }

    fn live_runner_accepts(&self, target: &Target, vl: u32) -> bool {
        self.runners.iter().zip(&self.down).any(|(r, down)| down.is_none() && r.accepts(target, vl))
    }

    fn on_built(&mut self, outcome: BuildOutcome, permit: Option<OwnedSemaphorePermit>) {
        let id = outcome.candidate.id;
        match outcome.result {
            Err(e) => {
                self.progress.remove(&id);
                self.log.record(id, EventKind::Done, None, &[]);
                self.send(Measurement::build_error(id, e.to_string(), outcome.build_s));
            }
            Ok(built) => {
                let Some(p) = self.progress.get_mut(&id) else { return };
                p.artifact = built.artifact.clone();
                p.build_s = built.build_s;
                self.ready.push_back(Ready {
                    candidate: id,
                    built: Arc::new(built),
                    target: Arc::clone(&p.target),
                    pending: p.runnable.clone(),
                    _permit: permit,
                });
            }
        }
    }

    /// Fails what no live runner accepts, then gives every free slot the
    /// oldest ready work its runner accepts.
    fn dispatch(&mut self) {
        self.fail_unrunnable();
        for s in 0..self.slots.len() {
            let r = self.slots[s].runner;
            if self.slots[s].busy || self.down[r].is_some() {
                continue;
            }
            let runner = Arc::clone(&self.runners[r]);
            let accepted = |e: &Ready, vl: u32| runner.accepts(&e.target, vl);
            let Some(i) = self.ready.iter().position(|e| e.pending.iter().any(|&vl| accepted(e, vl))) else {
                continue;
            };
            let entry = &mut self.ready[i];
            let (take, keep): (Vec<u32>, Vec<u32>) = entry.pending.iter().partition(|&&vl| accepted(entry, vl));
            entry.pending = keep;
            let (candidate, built) = (entry.candidate, Arc::clone(&entry.built));
            if entry.pending.is_empty() {
                self.ready.remove(i);
            }
            self.start_run(s, candidate, built, take);
        }
    }

    fn fail_unrunnable(&mut self) {
        let mut failed: Vec<(u64, u32)> = Vec::new();
        for e in &mut self.ready {
            let (keep, lost): (Vec<u32>, Vec<u32>) = e.pending.iter().partition(|&&vl| {
                self.runners.iter().zip(&self.down).any(|(r, down)| down.is_none() && r.accepts(&e.target, vl))
            });
            failed.extend(lost.into_iter().map(|vl| (e.candidate, vl)));
            e.pending = keep;
        }
        self.ready.retain(|e| !e.pending.is_empty());
        if failed.is_empty() {
            return;
        }
        let faults: Vec<&str> = self.down.iter().flatten().map(String::as_str).collect();
        let why = format!("no runner left that accepts it ({})", faults.join("; "));
        for (candidate, vl) in failed {
            self.record(candidate, failed_run(vl, "farm", why.clone()));
        }
    }

    fn start_run(&mut self, slot: usize, candidate: u64, built: Arc<Built>, vls: Vec<u32>) {
        self.slots[slot].busy = true;
        self.running += 1;
        let runner = Arc::clone(&self.runners[self.slots[slot].runner]);
        let name = runner.name();
        self.log.record(candidate, EventKind::RunStart, Some((slot, name.clone())), &vls);
        let (tx, log) = (self.runs_tx.clone(), Arc::clone(&self.log));
        tokio::spawn(async move {
            let (b, v) = (Arc::clone(&built), vls.clone());
            // A separate task, so that a panicking runner is a JoinError here.
            let joined = tokio::spawn(async move { runner.try_run(b, &v).await }).await;
            let outcome = joined.unwrap_or_else(|e| {
                Ok(vls.iter().map(|&vl| failed_run(vl, &name, format!("runner {name} panicked: {e}"))).collect())
            });
            let kind = if outcome.is_ok() { EventKind::RunEnd } else { EventKind::RunnerFault };
            log.record(candidate, kind, Some((slot, name)), &vls);
            let _ = tx.send(RunDone { slot, candidate, built, vls, outcome });
        });
    }

    fn on_run_done(&mut self, done: RunDone) {
        self.slots[done.slot].busy = false;
        self.running -= 1;
        let r = self.slots[done.slot].runner;
        match done.outcome {
            Ok(ms) => {
                let name = self.runners[r].name();
                for &vl in &done.vls {
                    let m = ms.iter().find(|m| m.vl_bits == vl).cloned().unwrap_or_else(|| {
                        failed_run(vl, &name, format!("runner {name} returned no result for VL {vl}"))
                    });
                    self.record(done.candidate, m);
                }
            }
            Err(fault) => {
                tracing::warn!("{fault}; its work goes to the other runners");
                self.down[r] = Some(fault.to_string());
                let Some(p) = self.progress.get(&done.candidate) else { return };
                self.ready.push_front(Ready {
                    candidate: done.candidate,
                    built: done.built,
                    target: Arc::clone(&p.target),
                    pending: done.vls,
                    _permit: None,
                });
            }
        }
    }

    /// Adds the result of one vector length; finishes the candidate with its last.
    fn record(&mut self, candidate: u64, m: VlMeasurement) {
        let Some(p) = self.progress.get_mut(&candidate) else { return };
        p.runs.push(m);
        p.outstanding = p.outstanding.saturating_sub(1);
        if p.outstanding == 0 {
            self.finish(candidate);
        }
    }

    fn finish(&mut self, candidate: u64) {
        let Some(mut p) = self.progress.remove(&candidate) else { return };
        p.runs.sort_by_key(|m| p.vls.iter().position(|&v| v == m.vl_bits).unwrap_or(usize::MAX));
        self.log.record(candidate, EventKind::Done, None, &[]);
        self.send(Measurement::from_runs(candidate, p.artifact, p.build_s, p.runs));
    }

    fn send(&self, m: Measurement) {
        // A caller that stopped listening does not stop the batch.
        let _ = self.results.send(m);
    }
}

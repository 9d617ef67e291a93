//! The farm's coordinator: one task that owns the ready queue and the runner slots and assembles the measurements.

use super::timeline::{EventKind, EventLog};
use super::{Farm, Quiet};
use crate::builder::{BuildHook, BuildOutcome, BuildPhase, BuilderPool};
use crate::candidate::Candidate;
use crate::result::{Measurement, Status, VlMeasurement};
use crate::runner::health::{assemble, follow_up, FollowUp, Roster, Verdict};
use crate::runner::{Built, FaultKind, RunnerFault};
use scaletune_codegen::target::Target;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

/// Starts the coordinator of one batch on `farm`'s builders and runners
/// (a clone of the farm: its pool and admission are shared).
pub(super) fn start(
    farm: Farm,
    candidates: Vec<Candidate>,
    max_ahead: usize,
    log: Arc<EventLog>,
    results: UnboundedSender<Measurement>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let Farm { pool, runners, policy, quiet, .. } = farm;
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let slots = runners
            .iter()
            .enumerate()
            .flat_map(|(r, runner)| (0..runner.slots().max(1)).map(move |_| Slot { runner: r, busy: false }))
            .collect();
        let coordinator = Coordinator {
            roster: Roster::new(runners, policy),
            slots,
            ready: VecDeque::new(),
            progress: HashMap::new(),
            running: 0,
            quiet,
            log,
            results,
            events_tx,
        };
        coordinator.run(pool, candidates, max_ahead, events_rx).await;
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
    /// Every vector length, in the requested order.
    vls: Vec<u32>,
    /// The vector lengths some runner accepts.
    runnable: Vec<u32>,
    runs: Vec<VlMeasurement>,
    artifact: String,
    /// Each object's vector length and code ([`crate::builder::code_identity`]).
    codes: Vec<(Option<u32>, String)>,
    build_s: f64,
    /// Vector lengths without a result yet.
    outstanding: usize,
    /// Unreachable or refused runners its runs have met.
    faults: u32,
}

/// A finished run.
struct RunDone {
    slot: usize,
    candidate: u64,
    built: Arc<Built>,
    vls: Vec<u32>,
    outcome: Result<Vec<VlMeasurement>, RunnerFault>,
}

/// What the coordinator hears from the tasks it started.
enum Event {
    /// A run ended.
    Run(RunDone),
    /// The follow-up of a runner's fault ended.
    Settled { runner: usize, verdict: Verdict },
}

struct Coordinator {
    roster: Roster,
    slots: Vec<Slot>,
    ready: VecDeque<Ready>,
    progress: HashMap<u64, Progress>,
    running: usize,
    /// Keeps builds and runs that time this machine apart.
    quiet: Arc<Quiet>,
    log: Arc<EventLog>,
    results: UnboundedSender<Measurement>,
    events_tx: UnboundedSender<Event>,
}

impl Coordinator {
    async fn run(
        mut self,
        pool: BuilderPool,
        candidates: Vec<Candidate>,
        max_ahead: usize,
        mut events_rx: UnboundedReceiver<Event>,
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
        // Builds hold `quiet` when some runner times this machine, or to
        // keep out of other processes' timed runs.
        let gated = self.roster.times_this_machine() || self.quiet.has_machine();
        let quiet = gated.then(|| Arc::clone(&self.quiet));
        let mut builds = pool.spawn_gated(to_build, Some(gate), Some(hook), quiet);
        let mut builds_open = true;
        loop {
            self.dispatch();
            // Ready work with no run in flight waits for a suspended runner's
            // follow-up, which always ends with an event.
            if !builds_open && self.running == 0 && self.ready.is_empty() {
                break;
            }
            tokio::select! {
                b = builds.recv(), if builds_open => match b {
                    Some((outcome, permit)) => self.on_built(outcome, permit),
                    None => builds_open = false,
                },
                Some(event) = events_rx.recv() => match event {
                    Event::Run(done) => self.on_run_done(done),
                    Event::Settled { runner, verdict } => self.roster.settle(runner, verdict),
                },
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
                vls.iter().partition(|&&vl| self.roster.can_run(&c.target, vl));
            let runs = unrunnable
                .iter()
                .map(|&vl| VlMeasurement::unmeasured(vl, "farm", self.roster.unmeasured_reason(&c.target, vl)))
                .collect();
            let p = Progress {
                vls: vls.clone(),
                outstanding: runnable.len(),
                runnable,
                runs,
                artifact: String::new(),
                codes: Vec::new(),
                build_s: 0.0,
                faults: 0,
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

    /// Queues each object of a built candidate for its vector lengths. A
    /// candidate whose every build failed is a `build_error`; when only some
    /// of its objects failed (fixed-length code compiled per vector length),
    /// their vector lengths are.
    fn on_built(&mut self, outcome: BuildOutcome, permit: Option<OwnedSemaphorePermit>) {
        let id = outcome.candidate.id;
        if outcome.builds.iter().all(|b| b.result.is_err()) {
            let why: Vec<String> =
                outcome.builds.into_iter().filter_map(|b| b.result.err()).map(|e| e.to_string()).collect();
            self.progress.remove(&id);
            self.log.record(id, EventKind::Done, None, &[]);
            self.send(Measurement::build_error(id, why.join("; "), outcome.build_s));
            return;
        }
        let Some(p) = self.progress.get_mut(&id) else { return };
        p.build_s = outcome.build_s;
        let mut failed = Vec::new();
        let mut permit = permit;
        for b in outcome.builds {
            let pending: Vec<u32> = p.runnable.iter().copied().filter(|vl| b.vl_bits.contains(vl)).collect();
            match b.result {
                Err(e) => failed.extend(pending.into_iter().map(|vl| (vl, e.to_string()))),
                Ok(built) => {
                    if p.artifact.is_empty() {
                        p.artifact = built.artifact.clone();
                    }
                    p.codes.push((built.built_for_vl, built.code.clone()));
                    if pending.is_empty() {
                        continue;
                    }
                    // The object runs on the target it was linked for (moved to
                    // its vector length when specialized to one).
                    let target = Arc::new(built.harness.target().clone());
                    self.ready.push_back(Ready {
                        candidate: id,
                        built: Arc::new(built),
                        target,
                        pending,
                        _permit: permit.take(),
                    });
                }
            }
        }
        for (vl, why) in failed {
            self.record(id, VlMeasurement::bare(vl, Status::BuildError, "builder", why));
        }
    }

    /// Gives up what no runner short of down accepts, then gives every free
    /// slot of a runner that is up the oldest ready work it accepts.
    fn dispatch(&mut self) {
        self.fail_unrunnable();
        for s in 0..self.slots.len() {
            let r = self.slots[s].runner;
            if self.slots[s].busy || !self.roster.is_up(r) {
                continue;
            }
            let runner = self.roster.runner(r);
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
        let mut failed: Vec<(u64, VlMeasurement)> = Vec::new();
        for e in &mut self.ready {
            let (keep, lost): (Vec<u32>, Vec<u32>) =
                e.pending.iter().partition(|&&vl| self.roster.can_run(&e.target, vl));
            let why = |vl: u32| self.roster.unmeasured_reason(&e.target, vl);
            failed.extend(lost.into_iter().map(|vl| (e.candidate, VlMeasurement::unmeasured(vl, "farm", why(vl)))));
            e.pending = keep;
        }
        self.ready.retain(|e| !e.pending.is_empty());
        for (candidate, m) in failed {
            self.record(candidate, m);
        }
    }

    fn start_run(&mut self, slot: usize, candidate: u64, built: Arc<Built>, vls: Vec<u32>) {
        self.slots[slot].busy = true;
        self.running += 1;
        let runner = self.roster.runner(self.slots[slot].runner);
        let name = runner.name();
        let timed = runner.times_this_machine();
        let loads = !timed && runner.runs_on_this_machine() && self.quiet.has_machine();
        let quiet = (timed || loads).then(|| Arc::clone(&self.quiet));
        let (tx, log) = (self.events_tx.clone(), Arc::clone(&self.log));
        tokio::spawn(async move {
            // Timed on this machine: the builds under way finish first, and
            // no other starts until the run is over. Untimed work here (a
            // QEMU run) is load like a build for other processes' timed runs.
            let _alone = match quiet {
                Some(q) if timed => Some(q.run().await),
                Some(q) => Some(q.build().await),
                None => None,
            };
            log.record(candidate, EventKind::RunStart, Some((slot, name.clone())), &vls);
            let (b, v) = (Arc::clone(&built), vls.clone());
            // A separate task, so that a panicking runner is a JoinError here.
            let joined = tokio::spawn(async move { runner.try_run(b, &v).await }).await;
            let outcome = joined.unwrap_or_else(|e| {
                let why = format!("runner {name} panicked: {e}");
                Ok(vls.iter().map(|&vl| VlMeasurement::unmeasured(vl, &name, why.clone())).collect())
            });
            let kind = if outcome.is_ok() { EventKind::RunEnd } else { EventKind::RunnerFault };
            log.record(candidate, kind, Some((slot, name)), &vls);
            let _ = tx.send(Event::Run(RunDone { slot, candidate, built, vls, outcome }));
        });
    }

    fn on_run_done(&mut self, done: RunDone) {
        let RunDone { slot, candidate, built, vls, outcome } = done;
        self.slots[slot].busy = false;
        self.running -= 1;
        let r = self.slots[slot].runner;
        match outcome {
            Ok(ms) => {
                self.roster.on_success(r);
                for mut m in assemble(&self.roster.runner(r).name(), &vls, ms) {
                    m.built_for_vl = built.built_for_vl;
                    self.record(candidate, m);
                }
            }
            Err(fault) => self.on_fault(r, fault, candidate, built, vls),
        }
    }

    /// Deals with runner `r` by the fault's kind and puts the run's work back
    /// at the front of the queue, unless the candidate's fault budget is spent.
    fn on_fault(&mut self, r: usize, fault: RunnerFault, candidate: u64, built: Arc<Built>, vls: Vec<u32>) {
        tracing::warn!("{fault}; its work goes back to the queue");
        let action = self.roster.on_fault(r, &fault);
        if action != FollowUp::Nothing {
            let (runner, policy, tx) = (self.roster.runner(r), self.roster.policy().clone(), self.events_tx.clone());
            tokio::spawn(async move {
                let verdict = follow_up(runner, action, policy).await;
                let _ = tx.send(Event::Settled { runner: r, verdict });
            });
        }
        let budget = self.roster.policy().max_faults_per_run;
        let Some(p) = self.progress.get_mut(&candidate) else { return };
        if fault.kind != FaultKind::Busy {
            p.faults += 1;
        }
        if p.faults >= budget {
            let why = format!("not measured: its runs met {} runner faults, the last: {fault}", p.faults);
            for vl in vls {
                self.record(candidate, VlMeasurement::unmeasured(vl, "farm", why.clone()));
            }
            return;
        }
        let target = Arc::new(built.harness.target().clone());
        self.ready.push_front(Ready { candidate, built, target, pending: vls, _permit: None });
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
        let mut m = Measurement::from_runs(candidate, p.artifact, p.build_s, p.runs);
        m.code = crate::builder::code_identity(&p.codes);
        self.send(m);
    }

    fn send(&self, m: Measurement) {
        // A caller that stopped listening does not stop the batch.
        let _ = self.results.send(m);
    }
}

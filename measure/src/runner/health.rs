//! Runner health during a batch: which runners get work, what a [`RunnerFault`] does to a runner, and the probes that bring one back.
//!
//! Used by the farm's coordinator, the one place that hands work to runners:
//!
//! ```text
//!   Up ──Busy fault──────▶ Suspended (resting busy_backoff, doubling while it stays busy) ──▶ Up
//!   Up ──Unreachable─────▶ Suspended (probing: wait, probe, up to `probes` times, backoff doubling)
//!                              ├─ a probe succeeds ──▶ Up
//!                              └─ every probe fails, or one is refused ──▶ Down
//!   Up ──Refused fault───▶ Down (for the rest of the batch)
//! ```
//!
//! The work of a faulted run goes back to the queue at once, for any runner
//! that is up and accepts it. A suspended runner gets no new work, but work
//! it accepts is not given up while it is suspended: only work that no
//! runner short of down accepts is `unmeasured`. A run's own fault budget
//! ([`FaultPolicy::max_faults_per_run`]) bounds how often one candidate's
//! work may meet unreachable or refused runners (a busy answer does not
//! count), so a batch always ends.

use super::{FaultKind, Runner, RunnerFault};
use scaletune_codegen::target::Target;
use std::sync::Arc;
use std::time::Duration;

/// How the farm and the dispatcher treat runner faults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultPolicy {
    /// Probes of an unreachable runner before it is taken out for good.
    pub probes: u32,
    /// Wait before the first probe; doubled before each next one.
    pub probe_backoff: Duration,
    /// Longest wait between probes, and longest rest of a busy runner.
    pub max_backoff: Duration,
    /// How long a busy runner gets no new work (doubled each time it is busy again before a run succeeds there).
    pub busy_backoff: Duration,
    /// Unreachable or refused runners one candidate's work may meet before
    /// it is `unmeasured` (its work is retried elsewhere until then).
    pub max_faults_per_run: u32,
}

impl Default for FaultPolicy {
    /// 3 probes after 1, 2 and 4 s; busy runners rest 1 s (at most 30 s); 3 faults per run.
    fn default() -> Self {
        FaultPolicy {
            probes: 3,
            probe_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(30),
            busy_backoff: Duration::from_secs(1),
            max_faults_per_run: 3,
        }
    }
}

/// How a runner stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Health {
    /// It gets work.
    Up,
    /// It gets no new work for now (being re-probed after a fault, or resting after a busy answer).
    Suspended {
        /// The fault that suspended it.
        reason: String,
    },
    /// Taken out for good.
    Down {
        /// Why.
        reason: String,
    },
}

/// The task to run after a fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FollowUp {
    /// Nothing: the runner is down.
    Nothing,
    /// Rest this long, then the runner is up again.
    Rest(Duration),
    /// Probe with backoff until the runner answers or the probes run out.
    Probe,
}

/// What a follow-up found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The runner is up again.
    Back,
    /// The runner is down, and why.
    Gone(String),
}

/// The runners of a batch with their health.
pub(crate) struct Roster {
    runners: Vec<Arc<dyn Runner>>,
    health: Vec<Health>,
    busy_streak: Vec<u32>,
    policy: FaultPolicy,
}

impl Roster {
    pub(crate) fn new(runners: Vec<Arc<dyn Runner>>, policy: FaultPolicy) -> Roster {
        let n = runners.len();
        Roster { runners, health: vec![Health::Up; n], busy_streak: vec![0; n], policy }
    }

    pub(crate) fn runner(&self, r: usize) -> Arc<dyn Runner> {
        Arc::clone(&self.runners[r])
    }

    /// True if some runner times this machine ([`Runner::times_this_machine`]).
    pub(crate) fn times_this_machine(&self) -> bool {
        self.runners.iter().any(|r| r.times_this_machine())
    }

    pub(crate) fn policy(&self) -> &FaultPolicy {
        &self.policy
    }

    /// True if runner `r` gets work now.
    pub(crate) fn is_up(&self, r: usize) -> bool {
        self.health[r] == Health::Up
    }

    /// True if some runner that is not down accepts `target` at `vl` (a
    /// suspended one may take the work later).
    pub(crate) fn can_run(&self, target: &Target, vl: u32) -> bool {
        (0..self.runners.len())
            .any(|r| !matches!(self.health[r], Health::Down { .. }) && self.runners[r].accepts(target, vl))
    }

    /// Why work for `target` at `vl` that [`Roster::can_run`] refuses is not measured.
    pub(crate) fn unmeasured_reason(&self, target: &Target, vl: u32) -> String {
        let faults: Vec<&str> = self
            .runners
            .iter()
            .zip(&self.health)
            .filter(|(runner, _)| runner.accepts(target, vl))
            .filter_map(|(_, h)| match h {
                Health::Down { reason } => Some(reason.as_str()),
                _ => None,
            })
            .collect();
        if faults.is_empty() {
            format!("no runner accepts target `{}` at VL {vl}", target.name)
        } else {
            format!("no runner left that accepts it ({})", faults.join("; "))
        }
    }

    /// Suspends or takes out runner `r` after `fault`; returns the follow-up to run.
    pub(crate) fn on_fault(&mut self, r: usize, fault: &RunnerFault) -> FollowUp {
        if matches!(self.health[r], Health::Down { .. }) {
            return FollowUp::Nothing;
        }
        let reason = fault.to_string();
        match fault.kind {
            FaultKind::Refused => {
                self.health[r] = Health::Down { reason };
                FollowUp::Nothing
            }
            // Another run on the same runner already started a follow-up.
            _ if self.health[r] != Health::Up => FollowUp::Nothing,
            FaultKind::Busy => {
                self.busy_streak[r] = self.busy_streak[r].saturating_add(1);
                let doublings = self.busy_streak[r].saturating_sub(1).min(16);
                let rest = self.policy.busy_backoff.saturating_mul(1 << doublings).min(self.policy.max_backoff);
                self.health[r] = Health::Suspended { reason };
                FollowUp::Rest(rest)
            }
            FaultKind::Unreachable => {
                self.health[r] = Health::Suspended { reason };
                FollowUp::Probe
            }
        }
    }

    /// A run on `r` ended without a fault.
    pub(crate) fn on_success(&mut self, r: usize) {
        self.busy_streak[r] = 0;
    }

    /// Applies what a follow-up of runner `r` found.
    pub(crate) fn settle(&mut self, r: usize, verdict: Verdict) {
        match verdict {
            Verdict::Back => {
                if matches!(self.health[r], Health::Suspended { .. }) {
                    self.health[r] = Health::Up;
                }
            }
            Verdict::Gone(reason) => {
                tracing::warn!("{reason}; taken out for the rest of the batch");
                self.health[r] = Health::Down { reason };
            }
        }
    }
}

/// Runs a follow-up: rests, or probes `runner` with backoff.
pub(crate) async fn follow_up(runner: Arc<dyn Runner>, action: FollowUp, policy: FaultPolicy) -> Verdict {
    let name = runner.name();
    match action {
        FollowUp::Nothing => Verdict::Gone(format!("runner {name} is down")),
        FollowUp::Rest(d) => {
            tokio::time::sleep(d).await;
            Verdict::Back
        }
        FollowUp::Probe => {
            let mut wait = policy.probe_backoff;
            let mut last = String::from("no probe allowed");
            for _ in 0..policy.probes {
                tokio::time::sleep(wait).await;
                wait = wait.saturating_mul(2).min(policy.max_backoff);
                let r = Arc::clone(&runner);
                // A task of its own, so that a panicking probe is a failed probe.
                match tokio::spawn(async move { r.probe().await }).await {
                    Ok(Ok(())) => {
                        tracing::info!("runner {name} answers again");
                        return Verdict::Back;
                    }
                    Ok(Err(fault)) if fault.kind == FaultKind::Refused => return Verdict::Gone(fault.to_string()),
                    Ok(Err(fault)) => last = fault.to_string(),
                    Err(e) => last = format!("runner {name}'s probe panicked: {e}"),
                }
            }
            Verdict::Gone(format!("{last} (after {} probes)", policy.probes))
        }
    }
}

/// The measurements of `vls` from what a runner returned, in `vls` order;
/// a vector length it left out is `unmeasured`.
pub(crate) fn assemble(
    runner: &str,
    vls: &[u32],
    ms: Vec<crate::result::VlMeasurement>,
) -> Vec<crate::result::VlMeasurement> {
    use crate::result::VlMeasurement;
    vls.iter()
        .map(|&vl| {
            ms.iter().find(|m| m.vl_bits == vl).cloned().unwrap_or_else(|| {
                VlMeasurement::unmeasured(vl, runner, format!("runner {runner} returned no result for VL {vl}"))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::VlMeasurement;
    use async_trait::async_trait;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// Accepts every target; probes fail `failures` times, then succeed.
    struct Flaky {
        failures: u32,
        probes: AtomicU32,
        refuse: bool,
    }

    #[async_trait]
    impl Runner for Flaky {
        fn name(&self) -> String {
            "flaky".into()
        }
        fn accepts(&self, _target: &Target, _vl_bits: u32) -> bool {
            true
        }
        async fn run(&self, _built: Arc<crate::runner::Built>, _vl_bits: &[u32]) -> Vec<VlMeasurement> {
            Vec::new()
        }
        async fn probe(&self) -> Result<(), RunnerFault> {
            let n = self.probes.fetch_add(1, Ordering::Relaxed) + 1;
            if self.refuse {
                Err(RunnerFault::refused("flaky", "401"))
            } else if n <= self.failures {
                Err(RunnerFault::unreachable("flaky", format!("probe {n} refused")))
            } else {
                Ok(())
            }
        }
    }

    fn quick() -> FaultPolicy {
        FaultPolicy {
            probes: 3,
            probe_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(4),
            busy_backoff: Duration::from_millis(1),
            max_faults_per_run: 2,
        }
    }

    fn flaky(failures: u32, refuse: bool) -> Arc<Flaky> {
        Arc::new(Flaky { failures, probes: AtomicU32::new(0), refuse })
    }

    #[tokio::test]
    async fn probes_bring_a_runner_back_or_take_it_out() {
        let back = flaky(2, false);
        let v = follow_up(back.clone(), FollowUp::Probe, quick()).await;
        assert_eq!((v, back.probes.load(Ordering::Relaxed)), (Verdict::Back, 3));
        let gone = flaky(5, false);
        let v = follow_up(gone.clone(), FollowUp::Probe, quick()).await;
        assert_eq!(gone.probes.load(Ordering::Relaxed), 3, "a bounded number of probes");
        assert!(
            matches!(&v, Verdict::Gone(m) if m.contains("probe 3 refused") && m.contains("after 3 probes")),
            "{v:?}"
        );
        let refused = flaky(0, true);
        let v = follow_up(refused.clone(), FollowUp::Probe, quick()).await;
        assert_eq!(refused.probes.load(Ordering::Relaxed), 1, "a refusal ends the probing");
        assert!(matches!(v, Verdict::Gone(_)));
    }

    #[test]
    fn faults_suspend_or_take_out_by_kind() {
        let t = Target::load("host").expect("host");
        let mut roster = Roster::new(vec![flaky(0, false) as Arc<dyn Runner>], quick());
        assert!(roster.is_up(0) && roster.can_run(&t, 256));
        let busy = RunnerFault::busy("flaky", "503: no free slot");
        assert_eq!(roster.on_fault(0, &busy), FollowUp::Rest(Duration::from_millis(1)));
        assert!(!roster.is_up(0) && roster.can_run(&t, 256), "suspended, not gone");
        roster.settle(0, Verdict::Back);
        assert_eq!(roster.on_fault(0, &busy), FollowUp::Rest(Duration::from_millis(2)), "doubling while busy");
        roster.settle(0, Verdict::Back);
        roster.on_success(0);
        assert_eq!(roster.on_fault(0, &busy), FollowUp::Rest(Duration::from_millis(1)), "reset by a run");
        roster.settle(0, Verdict::Back);
        let reset = RunnerFault::unreachable("flaky", "connection reset");
        assert_eq!(roster.on_fault(0, &reset), FollowUp::Probe);
        assert_eq!(roster.on_fault(0, &reset), FollowUp::Nothing, "one follow-up at a time");
        roster.settle(0, Verdict::Gone("runner flaky failed: connection reset (after 3 probes)".into()));
        assert!(!roster.can_run(&t, 256));
        let why = roster.unmeasured_reason(&t, 256);
        assert!(why.starts_with("no runner left") && why.contains("connection reset"), "{why}");
        let mut roster = Roster::new(vec![flaky(0, false) as Arc<dyn Runner>], quick());
        assert_eq!(roster.on_fault(0, &RunnerFault::refused("flaky", "401")), FollowUp::Nothing);
        assert!(matches!(roster.health[0], Health::Down { .. }));
    }
}

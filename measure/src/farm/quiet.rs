//! Builds and timed runs kept apart: a run timed with the wall clock on this machine never shares it with a build.
//!
//! On a machine with two cores, two build workers and a timed run are three
//! busy threads: the run is time-sliced with a build for part of its
//! repeats and measures up to twice its time (matmul 512^3 on a 2-core
//! Zen 4: one candidate in ten had a median repeat 1.37 or more times its
//! fastest; 1.02 once the run had the machine to itself).
//! [`Quiet`] admits either builds (any number) or timed runs (any number:
//! runners pinned to different cores may time at once), never both. A run
//! waiting for the builds under way to finish stops new builds from
//! starting, so it waits for one build at most, and the builds resume as
//! soon as no timed run is left.
//!
//! With a [`MachineLock`] ([`Quiet::with_machine`]) every admission also
//! holds the process's share of the machine lock, so the rule holds across
//! processes: a build (or an untimed run on this machine, which the farm
//! admits as a build) passes the turnstile first and then holds the lock
//! shared; a timed run holds it exclusively.

use super::machine::{MachineHold, MachineLock, Mode};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

/// Who holds the machine, and who waits for it.
#[derive(Default, Debug)]
struct State {
    builds: usize,
    runs: usize,
    runs_waiting: usize,
}

/// The admission of builds and timed runs (see the module).
#[derive(Default, Debug)]
pub struct Quiet {
    state: Mutex<State>,
    changed: Notify,
    /// The same rule across processes, when set ([`MachineLock`]).
    machine: Option<Arc<MachineLock>>,
}

/// What a [`QuietGuard`] holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Build,
    Run,
}

/// A build's or a timed run's admission; dropping it lets the other kind in.
#[derive(Debug)]
pub struct QuietGuard {
    quiet: Arc<Quiet>,
    role: Role,
    /// This process's hold on the machine lock, released before the admission.
    machine: Option<MachineHold>,
}

impl Quiet {
    /// Also keeps builds and timed runs of other processes apart, through `machine`.
    pub fn with_machine(machine: Arc<MachineLock>) -> Quiet {
        Quiet { machine: Some(machine), ..Quiet::default() }
    }

    /// True if other processes are kept apart too.
    pub fn has_machine(&self) -> bool {
        self.machine.is_some()
    }

    /// Waits until no timed run holds or waits for the machine, then admits
    /// a build (or other untimed work on this machine).
    pub async fn build(self: &Arc<Self>) -> QuietGuard {
        if let Some(m) = &self.machine {
            if let Err(e) = m.pass_turnstile().await {
                tracing::warn!("{e}; builds go on without waiting for other processes' timed runs");
            }
        }
        let mut guard = self.admit(Role::Build).await;
        guard.machine = self.hold_machine(Mode::Shared).await;
        guard
    }

    /// Waits until no build holds the machine, then admits a timed run;
    /// builds that have not started wait until it is over.
    pub async fn run(self: &Arc<Self>) -> QuietGuard {
        self.lock().runs_waiting += 1;
        // Still counted as waiting if this future is dropped before it is admitted.
        let mut waiting = Waiting(Some(Arc::clone(self)));
        let mut guard = self.admit(Role::Run).await;
        waiting.0 = None;
        guard.machine = self.hold_machine(Mode::Exclusive).await;
        guard
    }

    async fn hold_machine(&self, mode: Mode) -> Option<MachineHold> {
        let m = self.machine.as_ref()?;
        match m.hold(mode).await {
            Ok(h) => Some(h),
            Err(e) => {
                tracing::warn!("{e}; this one goes on without waiting for other processes");
                None
            }
        }
    }

    async fn admit(self: &Arc<Self>, role: Role) -> QuietGuard {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut s = self.lock();
                let free = match role {
                    Role::Build => s.runs == 0 && s.runs_waiting == 0,
                    Role::Run => s.builds == 0,
                };
                if free {
                    match role {
                        Role::Build => s.builds += 1,
                        Role::Run => {
                            s.runs_waiting -= 1;
                            s.runs += 1;
                        }
                    }
                    return QuietGuard { quiet: Arc::clone(self), role, machine: None };
                }
            }
            notified.await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state is a few counters, consistent after any panic.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Un-counts a timed run that stopped waiting without being admitted.
struct Waiting(Option<Arc<Quiet>>);

impl Drop for Waiting {
    fn drop(&mut self) {
        if let Some(q) = self.0.take() {
            q.lock().runs_waiting -= 1;
            q.changed.notify_waiters();
        }
    }
}

impl Drop for QuietGuard {
    fn drop(&mut self) {
        // Other processes first: this process's next admission may want the other mode.
        drop(self.machine.take());
        {
            let mut s = self.quiet.lock();
            match self.role {
                Role::Build => s.builds -= 1,
                Role::Run => s.runs -= 1,
            }
        }
        self.quiet.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn counts(q: &Quiet) -> (usize, usize, usize) {
        let s = q.lock();
        (s.builds, s.runs, s.runs_waiting)
    }

    /// Polls `f` once: `Some` if it is ready now.
    async fn now<F: std::future::Future>(f: F) -> Option<F::Output> {
        tokio::time::timeout(Duration::from_millis(50), f).await.ok()
    }

    #[tokio::test]
    async fn builds_share_the_machine_and_a_waiting_run_stops_new_ones() {
        let q = Arc::new(Quiet::default());
        let b1 = q.build().await;
        let b2 = q.build().await;
        assert_eq!(counts(&q), (2, 0, 0), "builds run together");
        // A run waits for both builds; meanwhile no new build starts.
        let run = tokio::spawn({
            let q = Arc::clone(&q);
            async move { q.run().await }
        });
        while counts(&q).2 == 0 {
            tokio::task::yield_now().await;
        }
        assert!(now(q.build()).await.is_none(), "a build started while a run waited");
        drop(b1);
        assert_eq!(counts(&q), (1, 0, 1), "one build still under way");
        drop(b2);
        let r = run.await.expect("run admitted");
        assert_eq!(counts(&q), (0, 1, 0));
        // Runs share the machine with each other, not with builds.
        let r2 = now(q.run()).await.expect("a second run joins the first");
        let blocked = tokio::spawn({
            let q = Arc::clone(&q);
            async move { q.build().await }
        });
        drop(r);
        assert!(now(async {
            while counts(&q).0 == 0 {
                tokio::task::yield_now().await
            }
        })
        .await
        .is_none());
        drop(r2);
        let b = blocked.await.expect("the build starts once no run is left");
        assert_eq!(counts(&q), (1, 0, 0));
        drop(b);
        assert_eq!(counts(&q), (0, 0, 0));
    }

    #[tokio::test]
    async fn a_run_that_stops_waiting_lets_builds_in_again() {
        let q = Arc::new(Quiet::default());
        let b = q.build().await;
        assert!(now(q.run()).await.is_none(), "the run waits for the build");
        assert_eq!(counts(&q), (1, 0, 0), "the abandoned run no longer counts");
        let b2 = now(q.build()).await.expect("builds go on");
        drop((b, b2));
        assert_eq!(counts(&q), (0, 0, 0));
    }
}

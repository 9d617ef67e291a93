//! The native runner: candidates for this machine, timed in a child process with the timing protocol.
//!
//! Each vector length is one run of the candidate's driver executable in a
//! child process (a crash or a hang kills only the child): the driver's first
//! kernel call is checked against the reference, then the kernel is timed
//! with the [`TimingProtocol`] (see [`crate::harness::timing`]). The timeout
//! starts when the child is spawned, so time spent waiting in a farm's queue
//! never counts. The blocking wait runs on tokio's blocking pool.

use super::{Built, Runner};
use crate::harness::{parse_timing, timing_args, RunCheck, RunOptions};
use crate::protocol::TimingProtocol;
use crate::result::{Status, VlMeasurement};
use async_trait::async_trait;
use scaletune_codegen::target::Target;
use std::sync::Arc;
use std::time::Duration;

/// Runs candidates for targets that execute on this machine (`target.is_native()`).
#[derive(Clone, Debug)]
pub struct NativeRunner {
    name: String,
    protocol: TimingProtocol,
    slots: usize,
    timeout: Option<Duration>,
}

impl NativeRunner {
    /// A runner named `native` with one slot, following `protocol`, with the
    /// timeout each candidate's harness was built with.
    pub fn new(protocol: TimingProtocol) -> NativeRunner {
        NativeRunner { name: "native".into(), protocol, slots: 1, timeout: None }
    }

    /// Lets a farm run `slots` candidates at once on this runner (each in its
    /// own child process). For pinned timing, prefer one runner per core,
    /// each with its own `pin_core`, to sharing one pinned protocol.
    pub fn with_slots(mut self, slots: usize) -> NativeRunner {
        self.slots = slots.max(1);
        self
    }

    /// Renames the runner (as shown in results), e.g. `native@cpu1`.
    pub fn with_name(mut self, name: impl Into<String>) -> NativeRunner {
        self.name = name.into();
        self
    }

    /// Overrides the per-run timeout of every candidate.
    pub fn with_timeout(mut self, timeout: Duration) -> NativeRunner {
        self.timeout = Some(timeout);
        self
    }

    /// The timing protocol.
    pub fn protocol(&self) -> &TimingProtocol {
        &self.protocol
    }

    /// Runs, checks and times `built` at one vector length, blocking until the
    /// child exits or is killed. Never fails: every outcome is a measurement.
    pub fn measure(&self, built: &Built, vl_bits: u32) -> VlMeasurement {
        let mut m = VlMeasurement {
            vl_bits,
            status: Status::RunError,
            message: String::new(),
            max_abs_err: f64::NAN,
            timing: None,
            emulated: None,
            runner: self.name.clone(),
            built_for_vl: None,
            wall_s: 0.0,
        };
        if !built.harness.target().is_native() {
            m.message = format!("target `{}` does not run natively on this machine", built.harness.target().name);
            return m;
        }
        let driver_args = match timing_args(&self.protocol) {
            Ok(a) => a,
            Err(e) => {
                m.message = e.to_string();
                return m;
            }
        };
        let env = self.protocol.thread_env().into_iter().collect();
        let opts = RunOptions { driver_args, timeout: self.timeout, env, ..RunOptions::default() };
        let (check, output) = super::exec::run_with(&built.harness, vl_bits, &opts);
        apply_check(&mut m, &check);
        m.wall_s = check.wall_time.as_secs_f64();
        if m.status == Status::Ok {
            match parse_timing(&output.stdout, &self.protocol) {
                Ok(t) => m.timing = Some(t),
                Err(e) => {
                    m.status = Status::RunError;
                    m.message = e.to_string();
                }
            }
        }
        m
    }
}

/// Copies the verdict of a checked run into a measurement.
pub(crate) fn apply_check(m: &mut VlMeasurement, check: &RunCheck) {
    m.status = check.status;
    m.max_abs_err = check.max_abs_err;
    // An ok run's message is dropped, unless the interpreter gave the verdict.
    let keep = check.status != Status::Ok || check.message.starts_with(crate::harness::JUDGED_BY_INTERPRETER);
    m.message = if keep { check.message.clone() } else { String::new() };
}

#[async_trait]
impl Runner for NativeRunner {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn accepts(&self, target: &Target, vl_bits: u32) -> bool {
        target.is_native() && target.vscale_for_vl(vl_bits).is_ok()
    }

    fn slots(&self) -> usize {
        self.slots
    }

    fn times_this_machine(&self) -> bool {
        true
    }

    async fn run(&self, built: Arc<Built>, vl_bits: &[u32]) -> Vec<VlMeasurement> {
        let mut out = Vec::with_capacity(vl_bits.len());
        for &vl in vl_bits {
            let runner = self.clone();
            let b = Arc::clone(&built);
            let m = match tokio::task::spawn_blocking(move || runner.measure(&b, vl)).await {
                Ok(m) => m,
                Err(e) => VlMeasurement::unmeasured(vl, &self.name, format!("the native runner's task failed: {e}")),
            };
            out.push(m);
        }
        out
    }
}

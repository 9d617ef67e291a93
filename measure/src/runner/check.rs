//! The check runner: each vector length run once, natively or under QEMU as the target says, and judged by the harness; no timing, no counting.
//!
//! What `scaletune check` and `explore --qemu` use: the cheapest run that
//! gives a verdict. The run's wall time (emulation time under QEMU) is kept
//! in [`VlMeasurement::wall_s`] for the report; it is not a performance
//! figure. The blocking runs happen on tokio's blocking pool.

use super::native::apply_check;
use super::{Built, Runner};
use crate::result::{Status, VlMeasurement};
use async_trait::async_trait;
use scaletune_codegen::target::Target;
use std::sync::Arc;

/// Runs candidates once per vector length and reports the harness's verdict.
#[derive(Clone, Debug)]
pub struct CheckRunner {
    name: String,
    slots: usize,
}

impl Default for CheckRunner {
    fn default() -> Self {
        CheckRunner::new()
    }
}

impl CheckRunner {
    /// A runner named `check` with one slot.
    pub fn new() -> CheckRunner {
        CheckRunner { name: "check".into(), slots: 1 }
    }

    /// Lets a farm run `slots` candidates at once (each in its own process).
    pub fn with_slots(mut self, slots: usize) -> CheckRunner {
        self.slots = slots.max(1);
        self
    }

    /// Runs `built` once at `vl_bits` and judges it, blocking until the
    /// process exits or is killed. Never fails: every outcome is a measurement.
    pub fn check(&self, built: &Built, vl_bits: u32) -> VlMeasurement {
        let mut m = VlMeasurement::bare(vl_bits, Status::RunError, &self.name, "");
        let check = super::exec::run_once(&built.harness, vl_bits);
        apply_check(&mut m, &check);
        m.wall_s = check.wall_time.as_secs_f64();
        m
    }
}

#[async_trait]
impl Runner for CheckRunner {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn accepts(&self, target: &Target, vl_bits: u32) -> bool {
        (target.is_native() || target.qemu.is_some()) && target.vscale_for_vl(vl_bits).is_ok()
    }

    fn slots(&self) -> usize {
        self.slots
    }

    async fn run(&self, built: Arc<Built>, vl_bits: &[u32]) -> Vec<VlMeasurement> {
        let (me, vls) = (self.clone(), vl_bits.to_vec());
        let joined = tokio::task::spawn_blocking(move || vls.iter().map(|&vl| me.check(&built, vl)).collect()).await;
        joined.unwrap_or_else(|e| {
            let why = format!("the check run failed: {e}");
            vl_bits.iter().map(|&vl| VlMeasurement::unmeasured(vl, &self.name, why.clone())).collect()
        })
    }
}

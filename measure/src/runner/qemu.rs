//! The QEMU runner: candidates under QEMU user mode at each vector length, with kernel-only instruction counts and estimated cycles.
//!
//! Each vector length is one run of the candidate's driver under the
//! target's QEMU command with the instruction-count plugin
//! ([`crate::emulation::plugin`]) loaded for the kernel's code: its own
//! function and the outlined bodies of its parallel loops
//! ([`crate::emulation::elf`]). The driver calls the kernel once; the
//! harness checks its outputs. A run that completed (ok or wrong result)
//! carries [`Emulated`] metrics: the kernel's dynamic instruction count, the
//! estimated cycles (plugin block counts x llvm-mca costs for the target's
//! `mca_cpu`, [`crate::emulation::estimate`]; `None` with a note when the
//! target has no model or llvm-mca rejects an executed block) and the
//! process's wall time, which is emulation time and never an objective. A
//! crash, timeout, wrong result or plugin failure is a measurement with its
//! status and message.
//!
//! # Parallel loops
//!
//! The run has [`THREADS_VAR`]`=1`, so the runtime's thread pool starts no
//! worker and `scaletune_parallel_for` calls a parallel loop's body once
//! with the whole iteration range on the calling thread: the count is the
//! kernel's total work, the same on every run and close to that of the same
//! schedule without `parallel` (plus the few instructions that pack and
//! unpack the loop's context). The plugin reports how many guest threads
//! ran; counts from a run with more than one are refused (a plugin error),
//! since its counters are not atomic. What threads would gain on real
//! hardware is for the native and remote runners to measure.
//!
//! # Vector lengths
//!
//! Emulation can run any vector length the architecture allows (SVE: powers
//! of two from 128 to 2048 bits; RVV under QEMU 7.2: 128 to 1024), not only
//! those of the target's CPU. With [`VlPolicy::Architecture`] (the default)
//! a VL outside the target's range (e.g. 128 or 512 on `neoverse-v1`, whose
//! VL is 256) runs the same kernel object, linked again into a harness whose
//! target allows that VL: it measures a hypothetical `neoverse-v1` with
//! that vector length (same code, same llvm-mca model). Length-agnostic
//! code (`sve-vla`, NEON) is correct at every VL. Code of a fixed-length
//! kind is only valid at the VL it was compiled for: the LLVM builder
//! compiles it once per VL (`Builder::build_all`), each object linked for
//! the target moved to its VL, so it reaches this runner already built for
//! the VL it runs at. [`VlPolicy::Target`] refuses VLs outside the target's
//! range instead.
//!
//! # Emulating the host
//!
//! [`QemuRunner::emulating_host`] runs native targets under `qemu-<arch>
//! -cpu max` with the same plugin and the host's llvm-mca model, to compare
//! emulated metrics with native time (`bench/emulated_vs_native`). QEMU 7.2
//! has no AVX-512: build such candidates for
//! [`crate::emulation::emulable_host_target`].

use super::native::apply_check;
use super::{Built, Runner};
use crate::builder::BuildError;
use crate::emulation::elf::{kernel_range, kernel_symbol, read, KernelRange};
use crate::emulation::plugin::{parse_counts, plugin_library, qemu_args, Counts};
use crate::emulation::{host_qemu_command, CycleEstimator, EmulationError, Estimate};
use crate::harness::{CheckRequest, Harness, RunOptions};
use crate::result::{Emulated, Status, VlMeasurement};
use async_trait::async_trait;
use scaletune_codegen::target::{Arch, Target};
use scaletune_space::VectorCaps;
use std::sync::Arc;
use std::time::Duration;

/// The file name of the kernel object in a harness's work directory.
const KERNEL_OBJECT: &str = "kernel.o";

pub use crate::protocol::THREADS_VAR;

/// Which vector lengths the runner runs a scalable target at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VlPolicy {
    /// Only the target's own vector lengths.
    Target,
    /// Every vector length the architecture allows under QEMU (see the module documentation).
    Architecture,
}

/// Everything the plugin and llvm-mca found in one run.
#[derive(Clone, Debug)]
pub struct Profile {
    /// The address ranges of the kernel's code (its function and outlined parallel-loop bodies) in the executable.
    pub range: KernelRange,
    /// The plugin's counts.
    pub counts: Counts,
    /// The cycle estimate, if one was possible.
    pub estimate: Option<Estimate>,
}

/// Runs candidates under QEMU user mode with the instruction-count plugin.
#[derive(Clone, Debug)]
pub struct QemuRunner {
    name: String,
    slots: usize,
    timeout: Option<Duration>,
    emulate_host: bool,
    vl_policy: VlPolicy,
    estimator: Arc<CycleEstimator>,
}

impl Default for QemuRunner {
    fn default() -> Self {
        QemuRunner::new()
    }
}

impl QemuRunner {
    /// A runner named `qemu` for emulated targets (those with a `qemu`
    /// command), one slot, [`VlPolicy::Architecture`], block costs cached in memory.
    pub fn new() -> QemuRunner {
        QemuRunner {
            name: "qemu".into(),
            slots: 1,
            timeout: None,
            emulate_host: false,
            vl_policy: VlPolicy::Architecture,
            estimator: Arc::new(CycleEstimator::new()),
        }
    }

    /// A runner named `qemu-host` for *native* targets, run under `qemu-<arch> -cpu max`.
    pub fn emulating_host() -> QemuRunner {
        QemuRunner { name: "qemu-host".into(), emulate_host: true, ..QemuRunner::new() }
    }

    /// Lets a farm run `slots` candidates at once.
    pub fn with_slots(mut self, slots: usize) -> QemuRunner {
        self.slots = slots.max(1);
        self
    }

    /// Renames the runner (as shown in results).
    pub fn with_name(mut self, name: impl Into<String>) -> QemuRunner {
        self.name = name.into();
        self
    }

    /// Overrides the per-run timeout of every candidate.
    pub fn with_timeout(mut self, timeout: Duration) -> QemuRunner {
        self.timeout = Some(timeout);
        self
    }

    /// Sets which vector lengths scalable targets run at.
    pub fn with_vl_policy(mut self, policy: VlPolicy) -> QemuRunner {
        self.vl_policy = policy;
        self
    }

    /// Shares a cycle estimator (and its cache of block costs), e.g. with a disk cache.
    pub fn with_estimator(mut self, estimator: Arc<CycleEstimator>) -> QemuRunner {
        self.estimator = estimator;
        self
    }

    /// The vector lengths (granule, min, max bits) this runner can emulate for
    /// a scalable `target`; `None` for fixed-length targets.
    fn vl_range(&self, target: &Target) -> Option<(u32, u32, u32)> {
        let c = &target.caps;
        if !c.scalable {
            return None;
        }
        if self.vl_policy == VlPolicy::Target || self.emulate_host {
            return Some((c.granule_bits, c.min_bits(), c.max_bits()));
        }
        match target.arch {
            Arch::Aarch64 => Some((c.granule_bits, 128, 2048)),
            Arch::Riscv64 => Some((c.granule_bits, 128, 1024)),
            Arch::X86_64 => None,
        }
    }

    /// True if `vl_bits` is one the target or (by policy) its architecture allows.
    fn vl_allowed(&self, target: &Target, vl_bits: u32) -> bool {
        if target.vscale_for_vl(vl_bits).is_ok() {
            return true;
        }
        match self.vl_range(target) {
            Some((g, min, max)) => {
                vl_bits.is_power_of_two() && vl_bits.is_multiple_of(g) && (min..=max).contains(&vl_bits)
            }
            None => false,
        }
    }

    /// The target a second harness must have to run `built` at `vl_bits`, or
    /// `None` if the candidate's own harness does.
    fn run_target(&self, target: &Target, vl_bits: u32) -> Result<Option<Target>, String> {
        if self.emulate_host {
            if !target.is_native() {
                return Err(format!("target `{}` is emulated already; use QemuRunner::new", target.name));
            }
            return Ok(Some(Target { qemu: Some(host_qemu_command(target.arch)), ..target.clone() }));
        }
        if target.is_native() {
            return Err(format!(
                "target `{}` runs natively; QemuRunner::emulating_host runs it under QEMU",
                target.name
            ));
        }
        if target.vscale_for_vl(vl_bits).is_ok() {
            return Ok(None);
        }
        if !self.vl_allowed(target, vl_bits) {
            let what = match self.vl_range(target) {
                Some((_, min, max)) => format!("powers of two from {min} to {max}"),
                None => format!("fixed at {} bits", target.caps.max_bits()),
            };
            return Err(format!("the qemu runner cannot run `{}` at VL {vl_bits} ({what})", target.name));
        }
        let Some((g, min, max)) = self.vl_range(target) else { return Err("no vector-length range".into()) };
        let caps = VectorCaps {
            has_sme: target.caps.has_sme,
            has_gather: target.caps.has_gather,
            half_vectors: target.caps.half_vectors,
            ..VectorCaps::scalable(g, min, max)
        };
        Ok(Some(Target { caps, default_vl_bits: vec![vl_bits], ..target.clone() }))
    }

    /// Runs `built` at one vector length, blocking. Never fails: every outcome is a measurement.
    pub fn measure(&self, built: &Built, vl_bits: u32) -> VlMeasurement {
        self.profile(built, vl_bits).0
    }

    /// Like [`QemuRunner::measure`], also returning the plugin's counts and
    /// the priced blocks when the run completed.
    pub fn profile(&self, built: &Built, vl_bits: u32) -> (VlMeasurement, Option<Profile>) {
        let mut other = None;
        self.profile_with(built, vl_bits, &mut other)
    }

    /// Measures every vector length in order, linking at most one second harness.
    pub fn measure_all(&self, built: &Built, vl_bits: &[u32]) -> Vec<VlMeasurement> {
        let mut other = None;
        vl_bits.iter().map(|&vl| self.profile_with(built, vl, &mut other).0).collect()
    }

    fn profile_with(
        &self,
        built: &Built,
        vl_bits: u32,
        other: &mut Option<(Target, Result<Harness, String>)>,
    ) -> (VlMeasurement, Option<Profile>) {
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
        let target = built.harness.target();
        let harness = match self.run_target(target, vl_bits) {
            Err(why) => {
                m.message = why;
                return (m, None);
            }
            Ok(None) => &built.harness,
            Ok(Some(t)) => {
                // The widened target is the same for every VL outside the target's own.
                if other.as_ref().is_none_or(|(have, _)| have.caps != t.caps || have.qemu != t.qemu) {
                    let h = relink(built, &t).map_err(|e| format!("linking a harness for VL {vl_bits}: {e}"));
                    *other = Some((t, h));
                }
                match other.as_ref().map(|(_, h)| h) {
                    Some(Ok(h)) => h,
                    Some(Err(why)) => {
                        m.message = why.clone();
                        return (m, None);
                    }
                    None => return (m, None),
                }
            }
        };
        match self.run_counted(harness, vl_bits, &mut m) {
            Ok(profile) => (m, profile),
            Err(e) => {
                // A plugin problem after a good run, or a problem before the run (no message yet).
                if m.status == Status::Ok || m.message.is_empty() {
                    m.status = Status::RunError;
                    m.message = e.to_string();
                    m.emulated = None;
                }
                (m, None)
            }
        }
    }

    /// One run under the plugin; fills `m` and returns the profile of a completed run.
    fn run_counted(
        &self,
        harness: &Harness,
        vl_bits: u32,
        m: &mut VlMeasurement,
    ) -> Result<Option<Profile>, EmulationError> {
        let object_path = harness.work_dir().join(KERNEL_OBJECT);
        let symbol = kernel_symbol(&object_path, &read(&object_path)?)?;
        let exe_bytes = read(harness.executable())?;
        let range = kernel_range(harness.executable(), &exe_bytes, &symbol)?;
        let library = plugin_library()?;
        let out_dir = crate::cleanup::ScratchDir::new("scaletune-counts-")
            .map_err(|source| EmulationError::Io { what: "creating a temporary directory".into(), error: source })?;
        let counts_file = out_dir.path().join("counts.txt");
        let opts = RunOptions {
            qemu_args: qemu_args(&library, &range, &counts_file)?,
            driver_args: Vec::new(),
            timeout: self.timeout,
            env: vec![(THREADS_VAR.to_string(), "1".to_string())],
        };
        let (check, output) = super::exec::run_with(harness, vl_bits, &opts);
        apply_check(m, &check);
        m.wall_s = check.wall_time.as_secs_f64();
        if !matches!(check.status, Status::Ok | Status::WrongResult) {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&counts_file).map_err(|e| {
            let stderr = output.stderr.trim();
            EmulationError::Plugin(format!("no counts written ({e}); stderr: {stderr}"))
        })?;
        let counts = parse_counts(&text)?;
        if counts.threads != 1 {
            return Err(EmulationError::Plugin(format!(
                "the guest ran {} threads; counts are exact only for one ({THREADS_VAR}=1 is set for the run)",
                counts.threads
            )));
        }
        if !range.position_independent && counts.bias != 0 {
            return Err(EmulationError::Plugin(format!("a load bias of {:#x} for a non-PIE executable", counts.bias)));
        }
        if counts.kernel_instructions == 0 && check.status == Status::Ok {
            let spans: Vec<String> =
                range.functions.iter().map(|f| format!("`{}` [{:#x}, {:#x})", f.name, f.start, f.end)).collect();
            return Err(EmulationError::Plugin(format!(
                "no instruction executed in {} although its outputs are right",
                spans.join(", ")
            )));
        }
        let target = harness.target();
        let (estimate, note) = match self.estimator.estimate(harness.executable(), &exe_bytes, &range, &counts, target)
        {
            Ok(e) if e.sme_cycles > 0.0 => {
                let note = format!(
                    "{:.0} of the estimated cycles are SME instructions priced from the [sme] throughput table of target `{}` (llvm-mca has no SME model); llvm-mca ({}) priced the rest",
                    e.sme_cycles,
                    target.name,
                    target.mca_cpu.as_deref().unwrap_or("?")
                );
                (Some(e), Some(note))
            }
            Ok(e) => (Some(e), None),
            Err(e) => (None, Some(e.to_string())),
        };
        m.emulated = Some(Emulated {
            instructions: counts.kernel_instructions,
            est_cycles: estimate.as_ref().map(|e| e.cycles),
            est_cycles_note: note,
            process_instructions: counts.process_instructions,
            emulation_wall_s: check.wall_time.as_secs_f64(),
        });
        Ok(Some(Profile { range, counts, estimate }))
    }
}

/// A harness for `built`'s kernel object, linked again for `target` (with
/// the same extra libraries, inputs and, where it has one, vector program).
fn relink(built: &Built, target: &Target) -> Result<Harness, BuildError> {
    let h = &built.harness;
    let object_path = h.work_dir().join(KERNEL_OBJECT);
    let object = read(&object_path).map_err(|e| BuildError::Other(e.to_string()))?;
    let symbol = kernel_symbol(&object_path, &object).map_err(|e| BuildError::Other(e.to_string()))?;
    let req = CheckRequest {
        workload: h.workload(),
        target,
        object: &object,
        symbol: &symbol,
        vl_bits: target.default_vl_bits.clone(),
        seed: h.seed(),
        timeout: h.timeout(),
        work_dir: None,
    };
    let relinked = Harness::build_with_link(&req, h.link_extras())?;
    Ok(match h.program() {
        Some(p) => relinked.with_program(Arc::clone(p)),
        None => relinked,
    })
}

#[async_trait]
impl Runner for QemuRunner {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn accepts(&self, target: &Target, vl_bits: u32) -> bool {
        if self.emulate_host {
            target.is_native() && target.vscale_for_vl(vl_bits).is_ok()
        } else {
            !target.is_native() && self.vl_allowed(target, vl_bits)
        }
    }

    fn slots(&self) -> usize {
        self.slots
    }

    async fn run(&self, built: Arc<Built>, vl_bits: &[u32]) -> Vec<VlMeasurement> {
        let runner = self.clone();
        let vls = vl_bits.to_vec();
        let b = Arc::clone(&built);
        match tokio::task::spawn_blocking(move || runner.measure_all(&b, &vls)).await {
            Ok(ms) => ms,
            Err(e) => {
                let why = format!("the qemu runner's task failed: {e}");
                vl_bits.iter().map(|&vl| VlMeasurement::unmeasured(vl, &self.name, why.clone())).collect()
            }
        }
    }
}

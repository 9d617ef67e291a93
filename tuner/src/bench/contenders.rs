//! The kernels a bench shape compares (tuned, default schedule, baselines), built into harnesses and measured interleaved with one runner and protocol.

use super::baseline::{self, BaselineKind};
use super::BenchError;
use scaletune_codegen::target::Target;
use scaletune_measure::builder::{code_identity, Builder};
use scaletune_measure::stats::median;
use scaletune_measure::{
    Built, Candidate, LlvmBuilder, NativeRunner, QemuRunner, Status, TimingProtocol, VlMeasurement,
};
use scaletune_space::trace::Trace;
use scaletune_space::workload::Workload;
use std::sync::Arc;
use std::time::Duration;

/// What a contender is (serialized as its [`Kernel::name`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kernel {
    /// The best trace of the bench database.
    Tuned,
    /// The unscheduled loop nest through scaletune's own pipeline.
    Default,
    /// A foreign baseline.
    Baseline(BaselineKind),
}

impl Kernel {
    /// The name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Tuned => "tuned",
            Kernel::Default => "default",
            Kernel::Baseline(b) => b.name(),
        }
    }
}

/// The harnesses of a contender, each with the vector lengths it runs at.
pub type Builds = Vec<(Vec<u32>, Arc<Built>)>;

impl serde::Serialize for Kernel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// One contender, built: a harness per group of vector lengths (fixed-length
/// scalable code has one per VL), or why it could not be built.
pub struct Contender {
    /// What it is.
    pub kernel: Kernel,
    /// (vector lengths, harness) pairs, or the build failure.
    pub builds: Result<Builds, String>,
    /// The vector code of a baseline as clang emitted it (`SVE`, `NEON`, `AVX2`, ...).
    pub code: Option<String>,
}

impl Contender {
    /// The identity of the code it runs: [`code_identity`] of its builds'
    /// kernel objects, as a farm's measurement records it; `None` when the
    /// build failed or a build does not know its code (a baseline's
    /// hand-written kernel).
    pub fn code_identity(&self) -> Option<String> {
        let builds = self.builds.as_ref().ok()?;
        if builds.is_empty() || builds.iter().any(|(_, built)| built.code.is_empty()) {
            return None;
        }
        let objects: Vec<(Option<u32>, String)> =
            builds.iter().map(|(_, built)| (built.built_for_vl, built.code.clone())).collect();
        Some(code_identity(&objects))
    }

    /// The harness that runs at `vl`.
    fn built_for(&self, vl: u32) -> Result<&Arc<Built>, String> {
        match &self.builds {
            Err(why) => Err(why.clone()),
            Ok(builds) => builds
                .iter()
                .find(|(vls, _)| vls.contains(&vl))
                .map(|(_, b)| b)
                .ok_or_else(|| format!("no build runs at VL {vl}")),
        }
    }
}

/// Builds a trace of scaletune's pipeline (the tuned best or the default schedule).
pub fn build_trace(
    builder: &LlvmBuilder,
    kernel: Kernel,
    workload: &Arc<Workload>,
    target: &Arc<Target>,
    trace: Trace,
    vls: &[u32],
    timeout: Duration,
) -> Contender {
    let c = Candidate::new(0, Arc::clone(workload), Arc::clone(target), trace)
        .with_vl_bits(vls.to_vec())
        .with_timeout(timeout);
    let builds: Result<Builds, String> = builder
        .build_all(&c)
        .into_iter()
        .map(|b| b.result.map(|built| (b.vl_bits, Arc::new(built))).map_err(|e| e.to_string()))
        .collect();
    Contender { kernel, builds, code: None }
}

/// Compiles and links a baseline.
pub fn build_baseline(
    kind: BaselineKind,
    workload: &Workload,
    target: &Target,
    vls: &[u32],
    timeout: Duration,
) -> Result<Contender, BenchError> {
    let kernel = baseline::compile(kind, workload, target)?;
    let built = baseline::harness(&kernel, workload, target, target.default_vl_bits.clone(), timeout)?;
    let builds = Ok(vec![(vls.to_vec(), Arc::new(built))]);
    Ok(Contender { kernel: Kernel::Baseline(kind), builds, code: Some(kernel.vector_code) })
}

/// A measurement that never ran.
fn unmeasured(vl: u32, runner: &str, why: String) -> VlMeasurement {
    let mut m = VlMeasurement::unmeasured(vl, runner, why);
    m.status = Status::BuildError;
    m
}

/// Native timing: `rounds` rounds, each measuring every contender once in
/// turn with `protocol`; returns per contender its measurement of each round.
pub fn time_interleaved(
    contenders: &[Contender],
    vl: u32,
    protocol: &TimingProtocol,
    rounds: u32,
) -> Vec<Vec<VlMeasurement>> {
    let runner = NativeRunner::new(protocol.clone()).with_name("native");
    let mut out: Vec<Vec<VlMeasurement>> = contenders.iter().map(|_| Vec::new()).collect();
    for _ in 0..rounds.max(1) {
        for (c, ms) in contenders.iter().zip(out.iter_mut()) {
            let m = match c.built_for(vl) {
                Ok(built) => runner.measure(built, vl),
                Err(why) => unmeasured(vl, "native", why),
            };
            ms.push(m);
        }
    }
    out
}

/// Emulated counts: each contender at each vector length, under QEMU with the instruction-count plugin.
pub fn count_emulated(contenders: &[Contender], vls: &[u32], runner: &QemuRunner) -> Vec<Vec<VlMeasurement>> {
    contenders
        .iter()
        .map(|c| {
            vls.iter()
                .map(|&vl| match c.built_for(vl) {
                    Ok(built) => runner.measure(built, vl),
                    Err(why) => unmeasured(vl, "qemu", why),
                })
                .collect()
        })
        .collect()
}

/// The median of the rounds' median times, over the rounds that passed (`None` if none did).
pub fn median_time(rounds: &[VlMeasurement]) -> Option<f64> {
    median(rounds.iter().filter_map(round_time).collect())
}

/// The fraction of the FMA peak reached, paired by round: in each round that
/// passed, this round's GFLOPS over the peak probed in the same round
/// (`peaks[r]`, GFLOPS), and the median of those fractions. Pairing keeps a
/// machine that runs slower in one round than in another (frequency, a
/// neighbour on the host) from showing up as a kernel's loss.
pub fn median_of_peak(rounds: &[VlMeasurement], peaks: &[f64], flops: f64) -> Option<f64> {
    median(
        rounds
            .iter()
            .zip(peaks)
            .filter_map(|(m, &peak)| round_time(m).map(|t| flops / t / 1e9 / peak))
            .filter(|f| f.is_finite())
            .collect(),
    )
}

/// A round's median seconds per call, if it passed.
fn round_time(m: &VlMeasurement) -> Option<f64> {
    (m.status == Status::Ok).then(|| m.timing.as_ref().map(|t| t.median_s)).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use scaletune_measure::Timing;

    fn timed(status: Status, median_s: f64) -> VlMeasurement {
        let mut m = VlMeasurement::unmeasured(256, "native", String::new());
        m.status = status;
        m.timing = Some(Timing::from_repeats(vec![median_s], 1));
        m
    }

    #[test]
    fn the_median_skips_failed_rounds() {
        let rounds = [timed(Status::Ok, 3.0), timed(Status::WrongResult, 0.1), timed(Status::Ok, 1.0)];
        assert_eq!(median_time(&rounds), Some(2.0));
        assert_eq!(median_time(&rounds[1..2]), None);
    }

    #[test]
    fn the_fraction_of_peak_pairs_each_round_with_its_own_probe() {
        // 2 GFLOP per call: 1 s at a 4 GFLOPS peak is half of it, 0.5 s at an 8 GFLOPS peak too.
        let rounds = [timed(Status::Ok, 1.0), timed(Status::WrongResult, 0.01), timed(Status::Ok, 0.5)];
        assert_eq!(median_of_peak(&rounds, &[4.0, 8.0, 8.0], 2e9), Some(0.5));
        // Against the best probe alone the first round would read 25 %.
        assert_eq!(median_of_peak(&rounds[..1], &[8.0], 2e9), Some(0.25));
        assert_eq!(median_of_peak(&rounds[1..2], &[8.0], 2e9), None);
        assert_eq!(median_time(&[timed(Status::Ok, 1.0), timed(Status::Ok, 5.0), timed(Status::Ok, 2.0)]), Some(2.0));
    }
}

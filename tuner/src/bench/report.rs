//! The bench's figures: rows per shape and kernel, the printed tables and the JSON file.

use super::contenders::Kernel;
use super::openblas::OpenBlasCore;
use super::peak::{CpuInfo, Peak};
use std::fmt::Write;

/// One kernel of one host shape, timed natively.
#[derive(Clone, Debug, serde::Serialize)]
pub struct HostRow {
    /// The workload reference (`matmul:M=512,N=512,K=512`).
    pub shape: String,
    /// Which kernel.
    pub kernel: Kernel,
    /// A baseline's vector code as clang emitted it (`SVE`, `NEON`, `AVX-512`, `AVX2`, `scalar`).
    pub code: Option<String>,
    /// `ok` or the failure's status name.
    pub status: String,
    /// The first failure's message (empty when every round passed).
    pub message: String,
    /// Median seconds per call over the rounds.
    pub time_s: Option<f64>,
    /// GFLOPS where the workload's FLOPs are known.
    pub gflops: Option<f64>,
    /// OpenBLAS time / this time (above 1: faster than OpenBLAS); matmul only.
    pub vs_openblas: Option<f64>,
    /// clang naive time / this time.
    pub vs_clang: Option<f64>,
    /// The share of the FMA peak: per timing round, this round's GFLOPS over
    /// the peak probed right after it; the median over the rounds that passed.
    pub of_peak: Option<f64>,
}

/// One kernel of one emulated shape at one vector length.
#[derive(Clone, Debug, serde::Serialize)]
pub struct EmulatedRow {
    /// The workload reference.
    pub shape: String,
    /// Which kernel.
    pub kernel: Kernel,
    /// A baseline's vector code as clang emitted it (`SVE`, `NEON`, `AVX-512`, `AVX2`, `scalar`).
    pub code: Option<String>,
    /// Vector length in bits.
    pub vl_bits: u32,
    /// `ok` or the failure's status name.
    pub status: String,
    /// The failure's message (empty when ok).
    pub message: String,
    /// Estimated cycles (llvm-mca block costs x executions).
    pub est_cycles: Option<f64>,
    /// Kernel instructions executed.
    pub instructions: Option<u64>,
    /// clang naive cycles / these cycles (above 1: fewer cycles than clang).
    pub clang_cycles_ratio: Option<f64>,
    /// clang naive instructions / these instructions.
    pub clang_instructions_ratio: Option<f64>,
}

/// Everything one bench run measured (written as `bench.json`).
#[derive(Clone, Debug, serde::Serialize)]
pub struct BenchReport {
    /// The host CPU.
    pub cpu: CpuInfo,
    /// Every probe run of this bench run: at the start, after each host
    /// timing round, at the end.
    pub peak_runs: Vec<Peak>,
    /// The best of `peak_runs` in GFLOPS (the peak printed).
    pub peak_gflops: f64,
    /// The best L1-fed figure of `peak_runs` in GFLOPS (see [`Peak::l1_gflops`]).
    pub l1_fed_gflops: f64,
    /// The L1-fed throughput over the register-only one, per probe run; the
    /// median over `peak_runs` (see [`super::peak::l1_fed_share`]).
    pub l1_fed_share: Option<f64>,
    /// The OpenBLAS kernels the baseline ran (`None` without host shapes,
    /// or when the library could not be probed).
    pub openblas: Option<OpenBlasCore>,
    /// Trial budget per shape.
    pub trials: usize,
    /// The emulated target and its vector lengths.
    pub emulated_target: String,
    /// Host rows.
    pub host: Vec<HostRow>,
    /// Emulated rows.
    pub emulated: Vec<EmulatedRow>,
}

fn opt(x: Option<f64>, f: impl Fn(f64) -> String) -> String {
    x.map_or_else(|| "-".to_string(), f)
}

/// The host table.
pub fn host_table(report: &BenchReport) -> String {
    let mut out = String::new();
    let best = report.peak_runs.iter().max_by(|a, b| a.gflops.total_cmp(&b.gflops));
    let (lanes, chains) = best.map_or((0, 0), |p| (p.lanes, p.chains));
    let slowest = report.peak_runs.iter().map(|p| p.gflops).fold(f64::INFINITY, f64::min);
    let _ = writeln!(
        out,
        "host: {} ({}), one thread; FMA peak {:.1} GFLOPS ({lanes} f32 lanes x {chains} chains)",
        report.cpu.model, report.cpu.vector_isa, report.peak_gflops
    );
    let (rows, vectors) = best.map_or((0, 0), |p| (p.l1_rows, p.l1_vectors));
    let _ = writeln!(
        out,
        "fed from L1: {} of the FMA rate of the same probe run (median of {}; best {:.1} GFLOPS), a {rows}x{vectors}-register broadcast-FMA tile over an L1-resident panel: the most a kernel that loads its operands can reach",
        opt(report.l1_fed_share, |x| format!("{:.1}%", x * 100.0)),
        report.peak_runs.len(),
        report.l1_fed_gflops,
    );
    let _ = writeln!(
        out,
        "{} probes, slowest {:.1} GFLOPS; `of peak` divides each timing round by the probe run right after it",
        report.peak_runs.len(),
        if slowest.is_finite() { slowest } else { 0.0 }
    );
    if let Some(core) = &report.openblas {
        let _ = writeln!(out, "{}", core.describe());
    }
    let _ = writeln!(
        out,
        "{:<30} {:<12} {:<8} {:<12} {:>12} {:>8} {:>11} {:>9} {:>8}",
        "shape", "kernel", "code", "check", "time (us)", "GFLOPS", "vs OpenBLAS", "vs clang", "of peak"
    );
    let mut last = "";
    for r in &report.host {
        let shape = if r.shape == last { "" } else { r.shape.as_str() };
        last = &r.shape;
        let _ = writeln!(
            out,
            "{:<30} {:<12} {:<8} {:<12} {:>12} {:>8} {:>11} {:>9} {:>8}",
            shape,
            r.kernel.name(),
            r.code.as_deref().unwrap_or("-"),
            r.status,
            opt(r.time_s, |t| format!("{:.2}", t * 1e6)),
            opt(r.gflops, |g| format!("{g:.2}")),
            opt(r.vs_openblas, |x| format!("{x:.2}x")),
            opt(r.vs_clang, |x| format!("{x:.2}x")),
            opt(r.of_peak, |x| format!("{:.1}%", x * 100.0)),
        );
    }
    out
}

/// The emulated table.
pub fn emulated_table(report: &BenchReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} under QEMU: estimated cycles and instructions per call; clang/this above 1 means fewer than clang",
        report.emulated_target
    );
    let _ = writeln!(
        out,
        "{:<30} {:<12} {:<8} {:>5} {:<12} {:>14} {:>14} {:>13} {:>13}",
        "shape", "kernel", "code", "VL", "check", "est. cycles", "instructions", "clang/this cy", "clang/this in"
    );
    let mut last = "";
    for r in &report.emulated {
        let shape = if r.shape == last { "" } else { r.shape.as_str() };
        last = &r.shape;
        let _ = writeln!(
            out,
            "{:<30} {:<12} {:<8} {:>5} {:<12} {:>14} {:>14} {:>13} {:>13}",
            shape,
            r.kernel.name(),
            r.code.as_deref().unwrap_or("-"),
            r.vl_bits,
            r.status,
            opt(r.est_cycles, |c| format!("{c:.0}")),
            r.instructions.map_or_else(|| "-".to_string(), |i| i.to_string()),
            opt(r.clang_cycles_ratio, |x| format!("{x:.2}x")),
            opt(r.clang_instructions_ratio, |x| format!("{x:.2}x")),
        );
    }
    out
}

/// The failures of any row, one line each (empty when every kernel passed).
pub fn failures(report: &BenchReport) -> String {
    let mut out = String::new();
    for r in report.host.iter().filter(|r| r.status != "ok") {
        let _ = writeln!(out, "failed: {} {} natively: {}: {}", r.shape, r.kernel.name(), r.status, r.message);
    }
    for r in report.emulated.iter().filter(|r| r.status != "ok") {
        let _ =
            writeln!(out, "failed: {} {} at VL {}: {}: {}", r.shape, r.kernel.name(), r.vl_bits, r.status, r.message);
    }
    out
}

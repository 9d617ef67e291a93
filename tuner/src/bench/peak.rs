//! The machine's limit, measured in the bench's own run: single-core FP32 FMA throughput (`c/fma_peak.c`), and the CPU it ran on.

use super::baseline::{run_tool, CLANG};
use super::BenchError;
use std::process::Command;

/// The probe's C source.
const SOURCE: &str = include_str!("c/fma_peak.c");

/// The prefix of the probe's result line.
const PREFIX: &str = "scaletune-peak:";

/// What one run of the probe found.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Peak {
    /// FP32 GFLOPS (an FMA is two operations) of the fastest repeat.
    pub gflops: f64,
    /// f32 lanes per vector (16 with AVX-512, 8 with AVX2).
    pub lanes: u32,
    /// Independent accumulator chains.
    pub chains: u32,
    /// GFLOPS of the fastest repeat fed from L1: a micro-kernel's inner loop
    /// of `l1_rows` x `l1_vectors` vector accumulators over a packed panel
    /// and broadcast scalars that stay in L1 (the most a kernel that loads
    /// its operands can reach on this core).
    pub l1_gflops: f64,
    /// Rows of the L1-fed tile (one broadcast each per step).
    pub l1_rows: u32,
    /// Vectors of the L1-fed tile's rows (one panel load each per step).
    pub l1_vectors: u32,
}

/// The L1-fed throughput as a share of the register-only one, paired by
/// probe run (both loops of one run share the machine's state): the median
/// over `runs` (`None` without runs).
pub fn l1_fed_share(runs: &[Peak]) -> Option<f64> {
    scaletune_measure::stats::median(runs.iter().map(|p| p.l1_gflops / p.gflops).filter(|x| x.is_finite()).collect())
}

/// The CPU as `/proc/cpuinfo` names it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CpuInfo {
    /// `model name`.
    pub model: String,
    /// The widest FP32 FMA vector ISA its flags list: `AVX-512`, `AVX2+FMA`, `AVX`, `SSE`.
    pub vector_isa: String,
}

/// Reads the model name and vector ISA from the text of `/proc/cpuinfo`.
pub fn parse_cpuinfo(text: &str) -> CpuInfo {
    let field = |name: &str| {
        text.lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                (k.trim() == name).then(|| v.trim().to_string())
            })
            .unwrap_or_default()
    };
    let flags = field("flags");
    let has = |f: &str| flags.split_whitespace().any(|x| x == f);
    let vector_isa = if has("avx512f") {
        "AVX-512"
    } else if has("avx2") && has("fma") {
        "AVX2+FMA"
    } else if has("avx") {
        "AVX"
    } else {
        "SSE"
    };
    let model = field("model name");
    CpuInfo { model: if model.is_empty() { "unknown".into() } else { model }, vector_isa: vector_isa.into() }
}

/// This machine's CPU (`unknown` where `/proc/cpuinfo` cannot be read).
pub fn cpu_info() -> CpuInfo {
    parse_cpuinfo(&std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default())
}

/// Parses the probe's result line.
pub fn parse_peak(stdout: &str) -> Result<Peak, BenchError> {
    let bad = || BenchError::Probe(format!("no result line in its output: {}", stdout.trim()));
    let line = stdout.lines().find_map(|l| l.trim().strip_prefix(PREFIX)).ok_or_else(bad)?.trim();
    let get = |key: &str| {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
            .ok_or_else(|| BenchError::Probe(format!("`{key}` missing from `{line}`")))
    };
    let num = |key: &str| -> Result<f64, BenchError> {
        get(key)?.parse().map_err(|_| BenchError::Probe(format!("`{key}` is not a number in `{line}`")))
    };
    let peak = Peak {
        gflops: num("gflops")?,
        lanes: num("lanes")? as u32,
        chains: num("chains")? as u32,
        l1_gflops: num("l1_gflops")?,
        l1_rows: num("l1_rows")? as u32,
        l1_vectors: num("l1_vectors")? as u32,
    };
    if ![peak.gflops, peak.l1_gflops].iter().all(|g| g.is_finite() && *g > 0.0) {
        return Err(BenchError::Probe(format!("implausible throughput in `{line}`")));
    }
    Ok(peak)
}

/// Compiles the C program `source` as `NAME.c` in a new scratch directory
/// (prefixed `prefix`) into the executable `NAME` there:
/// `clang-19 FLAGS NAME.c -o NAME LIBS`.
pub(crate) fn compile_probe(
    prefix: &str,
    name: &str,
    source: &str,
    flags: &[&str],
    libs: &[&str],
) -> Result<scaletune_measure::cleanup::ScratchDir, BenchError> {
    let dir = scaletune_measure::cleanup::ScratchDir::new(prefix)
        .map_err(|e| BenchError::Io(format!("creating a temporary directory: {e}")))?;
    let src = dir.path().join(format!("{name}.c"));
    std::fs::write(&src, source).map_err(|e| BenchError::Io(format!("writing {}: {e}", src.display())))?;
    let c_file = format!("{name}.c");
    let mut shown: Vec<String> = std::iter::once(CLANG).chain(flags.iter().copied()).map(String::from).collect();
    shown.extend([c_file.as_str(), "-o", name].into_iter().chain(libs.iter().copied()).map(String::from));
    let mut cmd = Command::new(CLANG);
    cmd.args(flags).arg(&src).arg("-o").arg(dir.path().join(name)).args(libs);
    run_tool(&mut cmd, &shown)?;
    Ok(dir)
}

/// A compiled probe, runnable several times in one bench run.
pub struct Probe {
    dir: scaletune_measure::cleanup::ScratchDir,
}

impl Probe {
    /// Compiles the probe with `clang-19 -O2 -march=native`.
    pub fn build() -> Result<Probe, BenchError> {
        Probe::build_for("native")
    }

    /// Compiles the probe with `clang-19 -O2 -march=ARCH`.
    fn build_for(arch: &str) -> Result<Probe, BenchError> {
        let march = format!("-march={arch}");
        let flags = ["-O2", march.as_str(), "-Wno-invalid-feature-combination"];
        let dir = compile_probe("scaletune-peak-", "fma_peak", SOURCE, &flags, &[])?;
        Ok(Probe { dir })
    }

    /// Runs `repeats` repeats of `iterations` rounds of FMAs; the fastest repeat counts.
    pub fn run(&self, iterations: u64, repeats: u32) -> Result<Peak, BenchError> {
        let exe = self.dir.path().join("fma_peak");
        let shown = vec![exe.display().to_string(), iterations.to_string(), repeats.to_string()];
        let mut cmd = Command::new(&exe);
        cmd.arg(iterations.to_string()).arg(repeats.to_string());
        let out = run_tool(&mut cmd, &shown)?;
        parse_peak(&String::from_utf8_lossy(&out.stdout))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_names_the_widest_fma_isa() {
        let avx512 = "processor\t: 0\nmodel name\t: Some Xeon\nflags\t\t: fpu sse2 avx avx2 fma avx512f avx512bw\n";
        assert_eq!(parse_cpuinfo(avx512), CpuInfo { model: "Some Xeon".into(), vector_isa: "AVX-512".into() });
        let zen2 = "model name\t: AMD EPYC 7002\nflags\t\t: sse2 avx avx2 fma\n";
        assert_eq!(parse_cpuinfo(zen2).vector_isa, "AVX2+FMA");
        assert_eq!(parse_cpuinfo(""), CpuInfo { model: "unknown".into(), vector_isa: "SSE".into() });
    }

    #[test]
    fn the_result_line_is_parsed_and_garbage_refused() {
        let out = "noise\nscaletune-peak: gflops=133.730 lanes=16 chains=16 seconds=0.076 l1_gflops=120.5 l1_rows=6 \
                   l1_vectors=4 checksum=1327.8\n";
        let want = Peak { gflops: 133.73, lanes: 16, chains: 16, l1_gflops: 120.5, l1_rows: 6, l1_vectors: 4 };
        assert_eq!(parse_peak(out).expect("parses"), want);
        let err = parse_peak("scaletune-peak: gflops=x lanes=16 chains=16").expect_err("not a number");
        assert_eq!(err.to_string(), "FMA-peak probe: `gflops` is not a number in `gflops=x lanes=16 chains=16`");
        // A probe of an older source, without the L1-fed figures, is refused by name.
        let err = parse_peak("scaletune-peak: gflops=1.5 lanes=16 chains=16 seconds=1").expect_err("no L1 figure");
        assert_eq!(
            err.to_string(),
            "FMA-peak probe: `l1_gflops` missing from `gflops=1.5 lanes=16 chains=16 seconds=1`"
        );
        let err = parse_peak(&out.replace("l1_gflops=120.5", "l1_gflops=0")).expect_err("zero");
        assert!(err.to_string().starts_with("FMA-peak probe: implausible throughput in `gflops=133.730"), "{err}");
        assert!(parse_peak("nothing").is_err());
    }

    #[test]
    fn the_l1_fed_share_pairs_each_run_and_takes_the_median() {
        let run =
            |gflops: f64, l1_gflops: f64| Peak { gflops, lanes: 16, chains: 16, l1_gflops, l1_rows: 6, l1_vectors: 4 };
        // An outlier of the L1-fed loop in one run does not set the share.
        let runs = [run(200.0, 170.0), run(100.0, 90.0), run(220.0, 220.0)];
        assert_eq!(l1_fed_share(&runs), Some(0.9));
        assert_eq!(l1_fed_share(&runs[..2]), Some(0.875));
        assert_eq!(l1_fed_share(&[]), None);
    }

    #[test]
    fn the_probe_measures_a_plausible_throughput() {
        // Reference: the lane count the compiler chose follows the host's ISA.
        let probe = Probe::build().expect("clang-19 builds the probe");
        let peak = probe.run(1_000_000, 2).expect("runs");
        let lanes = match cpu_info().vector_isa.as_str() {
            "AVX-512" => 16,
            "AVX2+FMA" | "AVX" => 8,
            _ => 4,
        };
        assert_eq!(peak.lanes, lanes);
        assert!(peak.gflops > 1.0, "{peak:?}");
        // 6 rows of as many vectors as 32 registers hold beside the panel and a broadcast, else 16.
        assert_eq!((peak.l1_rows, peak.l1_vectors), (6, if lanes == 16 { 4 } else { 2 }), "{peak:?}");
        assert!(peak.l1_gflops > 1.0, "{peak:?}");
    }

    /// Built for an x86-64 without FMA (SSE only, and AVX without FMA3) the
    /// probe links without libm and measures multiply-adds on 4 and 8 lanes.
    #[test]
    fn the_probe_builds_and_runs_where_the_cpu_has_no_fma() {
        if !cfg!(target_arch = "x86_64") {
            return;
        }
        for (arch, lanes) in [("x86-64", 4), ("sandybridge", 8)] {
            if arch == "sandybridge" && cpu_info().vector_isa == "SSE" {
                continue;
            }
            let probe = Probe::build_for(arch).unwrap_or_else(|e| panic!("-march={arch}: {e}"));
            let peak = probe.run(100_000, 1).unwrap_or_else(|e| panic!("-march={arch}: {e}"));
            assert_eq!((peak.lanes, peak.l1_vectors), (lanes, 2), "-march={arch}: {peak:?}");
            assert!(peak.gflops > 0.1 && peak.l1_gflops > 0.1, "-march={arch}: {peak:?}");
        }
    }
}

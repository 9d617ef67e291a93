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
    let peak = Peak { gflops: num("gflops")?, lanes: num("lanes")? as u32, chains: num("chains")? as u32 };
    if !(peak.gflops.is_finite() && peak.gflops > 0.0) {
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
        let flags = ["-O2", "-march=native", "-Wno-invalid-feature-combination"];
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
        let out = "noise\nscaletune-peak: gflops=133.730 lanes=16 chains=16 seconds=0.076 checksum=1327.8\n";
        assert_eq!(parse_peak(out).expect("parses"), Peak { gflops: 133.73, lanes: 16, chains: 16 });
        let err = parse_peak("scaletune-peak: gflops=x lanes=16 chains=16").expect_err("not a number");
        assert_eq!(err.to_string(), "FMA-peak probe: `gflops` is not a number in `gflops=x lanes=16 chains=16`");
        assert!(parse_peak("nothing").is_err());
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
    }
}

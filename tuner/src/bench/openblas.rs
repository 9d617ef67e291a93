//! Which OpenBLAS kernels the baseline runs: the core the library detects and, where detection fell back to pre-AVX kernels on a CPU with AVX2 or AVX-512 (a VM that hides its CPU model), the core the CPU's flags support, forced with `OPENBLAS_CORETYPE`.
//!
//! Debian's OpenBLAS picks its kernels at load time from the CPU's model
//! numbers. A VM that reports a generic model (`Intel(R) Xeon(R)
//! Processor`) gets the SSE3 `Prescott` kernels: a 512^3 sgemm at a tenth
//! of the FMA peak, a baseline any tuned kernel beats by 5x and which says
//! nothing. So the bench asks the library which core it chose; when that is
//! a pre-AVX core and the CPU has AVX2+FMA or AVX-512, it sets
//! `OPENBLAS_CORETYPE` (`Haswell`, `SkylakeX`) for its runs, and says so in
//! the table's header. A core the library did recognise is left alone, even
//! where it is narrower than the CPU (Debian's OpenBLAS runs its Zen
//! kernels, AVX2, on AVX-512 Zen 5): that is the library users get. A value
//! of `OPENBLAS_CORETYPE` the user set is left alone too.

use super::baseline::run_tool;
use super::peak::compile_probe;
use super::BenchError;
use std::process::Command;

/// The probe's C source.
const SOURCE: &str = include_str!("c/openblas_core.c");

/// The prefix of the probe's result line.
const PREFIX: &str = "scaletune-openblas:";

/// The OpenBLAS kernels of a bench run.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct OpenBlasCore {
    /// The core the library chose by itself (`OPENBLAS_CORETYPE` unset).
    pub detected: String,
    /// The core whose kernels the baseline runs.
    pub used: String,
    /// `OPENBLAS_CORETYPE` as the runs see it, and who set it.
    pub coretype: Option<CoreType>,
}

/// A value of `OPENBLAS_CORETYPE` and where it came from.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CoreType {
    /// The value.
    pub value: String,
    /// Set by the user (else by the bench, after a fallback detection).
    pub by_user: bool,
}

impl OpenBlasCore {
    /// One line for the host table's header.
    pub fn describe(&self) -> String {
        match &self.coretype {
            None => format!("OpenBLAS: {} kernels (as the library detected them)", self.used),
            Some(CoreType { value, by_user: true }) => {
                format!("OpenBLAS: {} kernels (OPENBLAS_CORETYPE={value} set by the user)", self.used)
            }
            Some(CoreType { value, by_user: false }) => format!(
                "OpenBLAS: {} kernels (OPENBLAS_CORETYPE={value} set by the bench: the library detected {}, pre-AVX kernels on this CPU)",
                self.used, self.detected
            ),
        }
    }
}

/// OpenBLAS x86 cores whose kernels predate AVX: what detection falls back to.
const PRE_AVX: &[&str] = &[
    "prescott",
    "core2",
    "penryn",
    "dunnington",
    "nehalem",
    "atom",
    "katmai",
    "coppermine",
    "northwood",
    "banias",
    "opteron",
    "barcelona",
    "bobcat",
    "nano",
    "unknown",
];

/// True if `core` (as `openblas_get_corename` names it) runs pre-AVX kernels.
pub fn is_pre_avx(core: &str) -> bool {
    let c = core.trim().to_ascii_lowercase();
    c.is_empty() || PRE_AVX.contains(&c.as_str())
}

/// The OpenBLAS core for the widest FP32 FMA ISA the flags of
/// `/proc/cpuinfo` list: `SkylakeX` (AVX-512 F, CD, BW, DQ, VL), `Haswell`
/// (AVX2 and FMA), none otherwise.
pub fn core_for_flags(cpuinfo: &str) -> Option<&'static str> {
    let flags = cpuinfo
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.trim() == "flags").map(|(_, v)| v))
        .unwrap_or_default();
    let has = |f: &str| flags.split_whitespace().any(|x| x == f);
    if ["avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"].iter().all(|f| has(f)) {
        Some("SkylakeX")
    } else if has("avx2") && has("fma") {
        Some("Haswell")
    } else {
        None
    }
}

/// The `OPENBLAS_CORETYPE` the bench sets: `None` if the user set one, or
/// the library's own choice is not a fallback, or the CPU has nothing better.
pub fn forced_core(detected: &str, cpuinfo: &str, user_set: bool) -> Option<&'static str> {
    if user_set || !is_pre_avx(detected) {
        return None;
    }
    core_for_flags(cpuinfo)
}

/// A compiled probe printing the core OpenBLAS runs.
pub struct CoreProbe {
    dir: scaletune_measure::cleanup::ScratchDir,
}

impl CoreProbe {
    /// Compiles the probe with clang-19, linked with `-lopenblas`.
    pub fn build() -> Result<CoreProbe, BenchError> {
        let dir = compile_probe("scaletune-openblas-", "openblas_core", SOURCE, &["-O1"], &["-lopenblas"])?;
        Ok(CoreProbe { dir })
    }

    /// The core OpenBLAS runs with `OPENBLAS_CORETYPE` set to `coretype`
    /// (unset for `None`).
    pub fn core(&self, coretype: Option<&str>) -> Result<String, BenchError> {
        let exe = self.dir.path().join("openblas_core");
        let mut cmd = Command::new(&exe);
        match coretype {
            Some(c) => cmd.env("OPENBLAS_CORETYPE", c),
            None => cmd.env_remove("OPENBLAS_CORETYPE"),
        };
        let shown = vec![format!("OPENBLAS_CORETYPE={} {}", coretype.unwrap_or(""), exe.display())];
        let out = run_tool(&mut cmd, &shown)?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        stdout
            .lines()
            .find_map(|l| l.trim().strip_prefix(PREFIX))
            .map(|c| c.trim().to_string())
            .ok_or_else(|| BenchError::Probe(format!("OpenBLAS core probe printed no result line: {}", stdout.trim())))
    }
}

/// Finds the core OpenBLAS detects and, after a fallback, the one to force;
/// sets `OPENBLAS_CORETYPE` in this process (whose runners' children inherit
/// it) when the bench chose one. Call before any thread reads the environment.
pub fn choose(cpuinfo: &str) -> Result<OpenBlasCore, BenchError> {
    let probe = CoreProbe::build()?;
    let user = std::env::var("OPENBLAS_CORETYPE").ok().filter(|v| !v.is_empty());
    let detected = probe.core(None)?;
    let coretype = match (&user, forced_core(&detected, cpuinfo, user.is_some())) {
        (Some(value), _) => Some(CoreType { value: value.clone(), by_user: true }),
        (None, Some(forced)) => {
            std::env::set_var("OPENBLAS_CORETYPE", forced);
            Some(CoreType { value: forced.to_string(), by_user: false })
        }
        (None, None) => None,
    };
    let used = match &coretype {
        Some(c) => probe.core(Some(&c.value))?,
        None => detected.clone(),
    };
    Ok(OpenBlasCore { detected, used, coretype })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPR_VM: &str = "model name\t: Intel(R) Xeon(R) Processor\nflags\t\t: fpu sse2 avx avx2 fma avx512f avx512dq avx512cd avx512bw avx512vl avx512_bf16\n";
    const ZEN2: &str = "model name\t: AMD EPYC 7B12\nflags\t\t: fpu sse2 avx avx2 fma\n";
    const OLD: &str = "model name\t: Some Atom\nflags\t\t: fpu sse2 ssse3\n";

    #[test]
    fn only_a_fallback_to_pre_avx_kernels_on_a_wider_cpu_is_overridden() {
        assert_eq!(core_for_flags(SPR_VM), Some("SkylakeX"));
        assert_eq!(core_for_flags(ZEN2), Some("Haswell"));
        assert_eq!(core_for_flags(OLD), None);
        // The VM case: a generic model name, Prescott kernels.
        assert_eq!(forced_core("Prescott", SPR_VM, false), Some("SkylakeX"));
        assert_eq!(forced_core("Core2", ZEN2, false), Some("Haswell"));
        // A core the library recognised, even a narrower one, stays.
        assert_eq!(forced_core("Zen", SPR_VM, false), None);
        assert_eq!(forced_core("Haswell", SPR_VM, false), None);
        assert_eq!(forced_core("SkylakeX", SPR_VM, false), None);
        // The user's choice stays; a CPU without AVX2 has nothing better.
        assert_eq!(forced_core("Prescott", SPR_VM, true), None);
        assert_eq!(forced_core("Prescott", OLD, false), None);
    }

    #[test]
    fn the_header_line_says_who_chose_the_kernels() {
        let mut core = OpenBlasCore { detected: "Prescott".into(), used: "SkylakeX".into(), coretype: None };
        core.coretype = Some(CoreType { value: "SkylakeX".into(), by_user: false });
        expect_test::expect!["OpenBLAS: SkylakeX kernels (OPENBLAS_CORETYPE=SkylakeX set by the bench: the library detected Prescott, pre-AVX kernels on this CPU)"]
            .assert_eq(&core.describe());
        core.coretype = Some(CoreType { value: "Haswell".into(), by_user: true });
        core.used = "Haswell".into();
        expect_test::expect!["OpenBLAS: Haswell kernels (OPENBLAS_CORETYPE=Haswell set by the user)"]
            .assert_eq(&core.describe());
        let native = OpenBlasCore { detected: "Haswell".into(), used: "Haswell".into(), coretype: None };
        expect_test::expect!["OpenBLAS: Haswell kernels (as the library detected them)"].assert_eq(&native.describe());
    }

    /// The installed OpenBLAS (Debian's, built for every x86 core) names the
    /// core it runs, and follows `OPENBLAS_CORETYPE`.
    #[test]
    fn the_probe_reads_the_installed_librarys_core_and_it_follows_the_override() {
        let probe = CoreProbe::build().expect("the probe builds against -lopenblas");
        let detected = probe.core(None).expect("runs");
        assert!(!detected.is_empty());
        assert_eq!(probe.core(Some("Haswell")).expect("runs"), "Haswell");
        assert_eq!(probe.core(Some("Prescott")).expect("runs"), "Prescott");
    }
}

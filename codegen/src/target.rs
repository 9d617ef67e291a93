//! Targets: triple, CPU, features, vector capabilities and how to run code.
//!
//! Targets are TOML files under `configs/targets/`; the shipped ones are
//! embedded in the binary. `host` is resolved against this machine through
//! LLVM's host CPU detection.

use scaletune_space::{VectorCaps, VectorKind};
use serde::Deserialize;
use std::path::Path;
use thiserror::Error;

/// Errors loading or using a target description.
#[derive(Debug, Error)]
pub enum TargetError {
    /// No shipped target has this name and no such file exists.
    #[error("unknown target `{name}` (known: {known})")]
    Unknown {
        /// The name asked for.
        name: String,
        /// Comma-separated list of shipped targets.
        known: String,
    },
    /// The TOML is malformed or misses a field.
    #[error("target file {file}: {message}")]
    Malformed {
        /// File name (or `<embedded NAME>`).
        file: String,
        /// Parser message.
        message: String,
    },
    /// A vector length the target cannot run at.
    #[error("target `{target}` cannot run at a vector length of {vl_bits} bits ({allowed})")]
    BadVectorLength {
        /// Target name.
        target: String,
        /// Requested VL.
        vl_bits: u32,
        /// Description of what is allowed.
        allowed: String,
    },
    /// Reading a target file failed.
    #[error("cannot read target file {file}: {error}")]
    Io {
        /// File name.
        file: String,
        /// The I/O error (in the message, not a chained source: printed once).
        error: std::io::Error,
    },
}

/// Instruction set family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arch {
    /// x86-64.
    X86_64,
    /// AArch64 (NEON, SVE, SVE2, SME).
    Aarch64,
    /// RISC-V 64 (RVV).
    Riscv64,
}

/// A fully resolved target.
#[derive(Clone, Debug)]
pub struct Target {
    /// Short name (`host`, `neoverse-v1`, ...).
    pub name: String,
    /// One-line description.
    pub description: String,
    /// Instruction set family.
    pub arch: Arch,
    /// LLVM target triple.
    pub triple: String,
    /// LLVM CPU name.
    pub cpu: String,
    /// LLVM feature string (`+sve,+neon,...`).
    pub features: String,
    /// The vector capabilities handed to the schedule space.
    pub caps: VectorCaps,
    /// Vector lengths `check` runs at when no `--vl` is given.
    pub default_vl_bits: Vec<u32>,
    /// Compiler command that builds the harness driver and links the kernel.
    pub cc: Vec<String>,
    /// Extra link arguments placed after the objects.
    pub libs: Vec<String>,
    /// QEMU user-mode command line (with `{vl_bits}` / `{vl_bytes}`), if the
    /// target is not the host.
    pub qemu: Option<Vec<String>>,
    /// `llvm-mca -mcpu` model, if any.
    pub mca_cpu: Option<String>,
    /// SME's streaming mode, if the target has it (the `sme` vector kind).
    pub sme: Option<Sme>,
}

/// A target's SME streaming mode: its vector lengths and the throughput
/// table that estimated cycles use for the SME instructions (llvm-mca has
/// no model of them).
#[derive(Clone, Debug, PartialEq)]
pub struct Sme {
    /// Capabilities of streaming code: scalable, vscale = streaming VL / 128,
    /// no gathers, `has_sme`.
    pub caps: VectorCaps,
    /// Outer-product instructions (`fmopa`, `smopa`, ...) issued per cycle.
    pub mopa_per_cycle: f64,
    /// ZA horizontal slice loads (`ld1w {za0h.s[..]}`) per cycle.
    pub za_load_per_cycle: f64,
    /// ZA horizontal slice stores (`st1w {za0h.s[..]}`) per cycle.
    pub za_store_per_cycle: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetFile {
    name: String,
    description: String,
    arch: Arch,
    triple: String,
    cpu: String,
    features: String,
    mca_cpu: Option<String>,
    vector: VectorFile,
    sme: Option<SmeFile>,
    run: RunFile,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SmeFile {
    min_vl_bits: u32,
    max_vl_bits: u32,
    default_vl_bits: Option<Vec<u32>>,
    mopa_per_cycle: f64,
    za_load_per_cycle: f64,
    za_store_per_cycle: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VectorFile {
    scalable: bool,
    granule_bits: Option<u32>,
    /// Fixed targets: a width in bits or "native".
    width_bits: Option<toml::Value>,
    min_vl_bits: Option<u32>,
    max_vl_bits: Option<u32>,
    default_vl_bits: Option<Vec<u32>>,
    gather: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunFile {
    cc: Vec<String>,
    #[serde(default)]
    libs: Vec<String>,
    qemu: Option<Vec<String>>,
}

/// The shipped target files, by name.
pub const SHIPPED: &[(&str, &str)] = &[
    ("host", include_str!("../../configs/targets/host.toml")),
    ("neon", include_str!("../../configs/targets/neon.toml")),
    ("neoverse-v1", include_str!("../../configs/targets/neoverse-v1.toml")),
    ("neoverse-v2", include_str!("../../configs/targets/neoverse-v2.toml")),
    ("a64fx", include_str!("../../configs/targets/a64fx.toml")),
    ("sve-generic", include_str!("../../configs/targets/sve-generic.toml")),
    ("rvv", include_str!("../../configs/targets/rvv.toml")),
    ("sme", include_str!("../../configs/targets/sme.toml")),
    ("apple-m4", include_str!("../../configs/targets/apple-m4.toml")),
];

/// Host CPU facts, as LLVM detects them.
#[derive(Clone, Debug)]
pub struct HostInfo {
    /// LLVM host triple.
    pub triple: String,
    /// LLVM host CPU name.
    pub cpu: String,
    /// LLVM host feature string.
    pub features: String,
}

impl HostInfo {
    /// Reads the host facts from LLVM.
    pub fn detect() -> HostInfo {
        crate::llvm::host_info()
    }

    /// Native vector width in bits derived from the features.
    pub fn vector_bits(&self) -> u32 {
        let has = |f: &str| self.features.split(',').any(|x| x == format!("+{f}"));
        if self.triple.starts_with("x86_64") {
            if has("avx512f") {
                512
            } else if has("avx2") || has("avx") {
                256
            } else {
                128
            }
        } else {
            128
        }
    }
}

/// True if LLVM 19 compiles scalable f16 vectors for `arch` with
/// `features`: RVV needs Zvfh (the one rule both the schedule space, through
/// [`VectorCaps::half_vectors`], and `llvm::support` apply).
pub fn scalable_f16(arch: Arch, features: &str) -> bool {
    arch != Arch::Riscv64 || features.split(',').any(|f| f.trim() == "+zvfh")
}

impl Target {
    /// Loads a shipped target by name, or a target file by path.
    pub fn load(name_or_path: &str) -> Result<Target, TargetError> {
        if let Some((_, text)) = SHIPPED.iter().find(|(n, _)| *n == name_or_path) {
            return Target::from_toml(text, &format!("<embedded {name_or_path}>"));
        }
        let path = Path::new(name_or_path);
        if name_or_path.ends_with(".toml") || path.exists() {
            let text = std::fs::read_to_string(path)
                .map_err(|source| TargetError::Io { file: name_or_path.to_string(), error: source })?;
            return Target::from_toml(&text, name_or_path);
        }
        Err(TargetError::Unknown {
            name: name_or_path.to_string(),
            known: SHIPPED.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
        })
    }

    /// All shipped targets.
    pub fn shipped() -> Result<Vec<Target>, TargetError> {
        SHIPPED.iter().map(|(n, _)| Target::load(n)).collect()
    }

    /// Parses a target description.
    pub fn from_toml(text: &str, file: &str) -> Result<Target, TargetError> {
        let bad = |message: String| TargetError::Malformed { file: file.to_string(), message };
        let f: TargetFile = toml::from_str(text).map_err(|e| bad(e.message().to_string()))?;
        let host = || HostInfo::detect();
        let (triple, cpu, features) = {
            let mut t = (f.triple.clone(), f.cpu.clone(), f.features.clone());
            if t.1 == "native" || t.2 == "native" {
                let h = host();
                if t.1 == "native" {
                    t.1 = h.cpu.clone();
                }
                if t.2 == "native" {
                    t.2 = h.features.clone();
                }
                t.0 = h.triple;
            }
            t
        };
        let v = &f.vector;
        let (caps, default_vl) = if v.scalable {
            let granule =
                v.granule_bits.ok_or_else(|| bad("[vector] granule_bits is required when scalable".into()))?;
            let min = v.min_vl_bits.ok_or_else(|| bad("[vector] min_vl_bits is required when scalable".into()))?;
            let max = v.max_vl_bits.ok_or_else(|| bad("[vector] max_vl_bits is required when scalable".into()))?;
            if min > max || !min.is_multiple_of(granule) || !min.is_power_of_two() || !max.is_power_of_two() {
                return Err(bad(format!("[vector] bad VL range {min}..={max} for granule {granule}")));
            }
            let mut caps = VectorCaps::scalable(granule, min, max);
            caps.has_gather = v.gather.unwrap_or(true);
            // LLVM compiles scalable f16 vectors on RVV only with Zvfh
            // (see `llvm::support`): the schedule space must not make them.
            caps.half_vectors = scalable_f16(f.arch, &features);
            let dvl = v.default_vl_bits.clone().unwrap_or_else(|| vec![min]);
            if dvl.is_empty() {
                // A run at no vector length would check nothing and pass.
                return Err(bad("[vector] default_vl_bits is empty: list at least one vector length".into()));
            }
            (caps, dvl)
        } else {
            let bits = match &v.width_bits {
                Some(toml::Value::Integer(b)) => *b as u32,
                Some(toml::Value::String(s)) if s == "native" => host().vector_bits(),
                _ => return Err(bad("[vector] width_bits must be an integer or \"native\"".into())),
            };
            if bits < 128 || !bits.is_multiple_of(128) {
                return Err(bad(format!("[vector] width_bits {bits} is not a multiple of 128")));
            }
            let mut caps = VectorCaps::fixed(bits);
            caps.has_gather = v.gather.unwrap_or(bits >= 256);
            (caps, vec![bits])
        };
        let sme = match &f.sme {
            None => None,
            Some(s) => Some(sme_from_file(s, &bad)?),
        };
        // A fixed-width target with SME runs at its streaming vector lengths.
        let default_vl = match (&sme, caps.scalable, &f.sme) {
            (Some(s), false, Some(file)) => file.default_vl_bits.clone().unwrap_or_else(|| vec![s.caps.min_bits()]),
            _ => default_vl,
        };
        let mca_cpu = match f.mca_cpu {
            Some(c) if c == "native" => Some(cpu.clone()),
            other => other,
        };
        let target = Target {
            name: f.name,
            description: f.description,
            arch: f.arch,
            triple,
            cpu,
            features,
            caps,
            default_vl_bits: default_vl,
            cc: f.run.cc,
            libs: f.run.libs,
            qemu: f.run.qemu,
            mca_cpu,
            sme,
        };
        for &vl in &target.default_vl_bits {
            target.vscale_for_vl(vl)?;
        }
        Ok(target)
    }

    /// The vscale at which code runs for a vector length in bits, checking
    /// that the target can run at that length. A fixed-width target with SME
    /// (`apple-m4`) runs at its streaming vector lengths: the vscale is then
    /// that of streaming code.
    pub fn vscale_for_vl(&self, vl_bits: u32) -> Result<u32, TargetError> {
        let caps = match &self.sme {
            Some(s) if !self.caps.scalable => &s.caps,
            _ => &self.caps,
        };
        let allowed = if caps.scalable {
            format!("powers of two from {} to {}", caps.min_bits(), caps.max_bits())
        } else {
            format!("fixed at {} bits", caps.max_bits())
        };
        let g = caps.granule_bits;
        if vl_bits.is_multiple_of(g) && caps.vscale_values.contains(&(vl_bits / g)) {
            Ok(vl_bits / g)
        } else {
            Err(TargetError::BadVectorLength { target: self.name.clone(), vl_bits, allowed })
        }
    }

    /// True if code for this target runs on this machine without emulation.
    pub fn is_native(&self) -> bool {
        self.qemu.is_none()
    }

    /// The QEMU command line for a vector length, with placeholders filled.
    pub fn qemu_command(&self, vl_bits: u32) -> Option<Vec<String>> {
        self.qemu.as_ref().map(|cmd| {
            cmd.iter()
                .map(|a| a.replace("{vl_bits}", &vl_bits.to_string()).replace("{vl_bytes}", &(vl_bits / 8).to_string()))
                .collect()
        })
    }

    /// The kinds of vectors the schedule space may choose between on this
    /// target, by name: on AArch64 with SVE, SVE at the known vector length
    /// (`sve`, when the target fixes it), length-agnostic SVE (`sve-vla`) and
    /// NEON (`neon`); on RVV, length-agnostic (`rvv-vla`) and fixed at the
    /// first default VLEN (`rvv-<bits>`); on x86, the fixed widths the CPU has
    /// (`avx512`, `avx2`, else `sse`); on AArch64 with SME, also streaming
    /// code (`sme`), last. The first kind is the target's default.
    pub fn vector_kinds(&self) -> Vec<(VectorKind, VectorCaps)> {
        let c = &self.caps;
        let mut kinds = Vec::new();
        match self.arch {
            Arch::Aarch64 if c.scalable => {
                let fixed_vl = c.min_bits() == c.max_bits();
                if fixed_vl {
                    kinds.push((VectorKind::Sve, c.clone()));
                }
                let vla = VectorCaps::scalable(128, 128, 2048);
                kinds.push((VectorKind::SveVla, if fixed_vl { vla } else { c.clone() }));
                kinds.push((VectorKind::Neon, VectorCaps::fixed(128)));
                kinds.extend(self.sme.as_ref().map(|s| (VectorKind::Sme, s.caps.clone())));
            }
            Arch::Aarch64 => {
                kinds.push((VectorKind::Neon, c.clone()));
                kinds.extend(self.sme.as_ref().map(|s| (VectorKind::Sme, s.caps.clone())));
            }
            Arch::Riscv64 if c.scalable => {
                kinds.push((VectorKind::RvvVla, c.clone()));
                if let Some(&vl) = self.default_vl_bits.first() {
                    let v = vl / c.granule_bits;
                    let fixed = VectorCaps { vscale_values: vec![v], ..c.clone() };
                    kinds.push((VectorKind::RvvFixed(vl), fixed));
                }
            }
            Arch::Riscv64 => kinds.push((VectorKind::Rvv, c.clone())),
            Arch::X86_64 => {
                let has = |f: &str| self.features.split(',').any(|x| x == format!("+{f}"));
                if has("avx512f") {
                    kinds.push((VectorKind::Avx512, VectorCaps { has_gather: true, ..VectorCaps::fixed(512) }));
                }
                if has("avx2") {
                    kinds.push((VectorKind::Avx2, VectorCaps { has_gather: true, ..VectorCaps::fixed(256) }));
                }
                if kinds.is_empty() {
                    kinds.push((VectorKind::Sse, VectorCaps::fixed(128)));
                }
            }
        }
        kinds
    }

    /// This target generating code for other vector capabilities (a vector
    /// kind chosen by the schedule): same triple, CPU and features.
    pub fn with_caps(&self, caps: &VectorCaps) -> Target {
        Target { caps: caps.clone(), ..self.clone() }
    }

    /// A one-line summary of the vector capabilities.
    pub fn vector_summary(&self) -> String {
        let c = &self.caps;
        if c.scalable {
            let vls = if c.min_bits() == c.max_bits() {
                format!("VL {} bits", c.min_bits())
            } else {
                format!("VL {}..{} bits", c.min_bits(), c.max_bits())
            };
            format!("scalable, vscale = VL/{}, {vls}{}", c.granule_bits, self.sme_summary())
        } else {
            format!("fixed {}-bit vectors (vscale = {}){}", c.max_bits(), c.vscale_values[0], self.sme_summary())
        }
    }

    fn sme_summary(&self) -> String {
        match &self.sme {
            Some(s) if s.caps.min_bits() == s.caps.max_bits() => format!(", SME at streaming VL {}", s.caps.min_bits()),
            Some(s) => format!(", SME at streaming VL {}..{}", s.caps.min_bits(), s.caps.max_bits()),
            None => String::new(),
        }
    }
}

/// The `[sme]` table of a target file, checked.
fn sme_from_file(s: &SmeFile, bad: &dyn Fn(String) -> TargetError) -> Result<Sme, TargetError> {
    let (min, max) = (s.min_vl_bits, s.max_vl_bits);
    if min < 128 || min > max || max > 2048 || !min.is_power_of_two() || !max.is_power_of_two() {
        return Err(bad(format!("[sme] bad streaming VL range {min}..={max} (powers of two from 128 to 2048)")));
    }
    for (name, rate) in [
        ("mopa_per_cycle", s.mopa_per_cycle),
        ("za_load_per_cycle", s.za_load_per_cycle),
        ("za_store_per_cycle", s.za_store_per_cycle),
    ] {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(bad(format!("[sme] {name} must be a positive number of instructions per cycle, not {rate}")));
        }
    }
    let mut caps = VectorCaps::scalable(128, min, max);
    caps.has_sme = true;
    caps.has_gather = false;
    Ok(Sme {
        caps,
        mopa_per_cycle: s.mopa_per_cycle,
        za_load_per_cycle: s.za_load_per_cycle,
        za_store_per_cycle: s.za_store_per_cycle,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind_names(t: &Target) -> Vec<String> {
        t.vector_kinds().into_iter().map(|(k, _)| k.to_string()).collect()
    }

    #[test]
    fn an_empty_default_vl_list_is_refused() {
        let text = crate::target::SHIPPED.iter().find(|(n, _)| *n == "sve-generic").expect("shipped").1;
        let mut lines: Vec<String> =
            text.lines().filter(|l| !l.trim_start().starts_with("default_vl_bits")).map(str::to_string).collect();
        let at = lines.iter().position(|l| l.trim() == "[vector]").expect("a [vector] table") + 1;
        lines.insert(at, "default_vl_bits = []".to_string());
        let e = Target::from_toml(&lines.join("\n"), "empty.toml").expect_err("refused").to_string();
        assert_eq!(e, "target file empty.toml: [vector] default_vl_bits is empty: list at least one vector length");
    }

    #[test]
    fn vector_kinds_per_target() {
        let load = |n: &str| Target::load(n).expect("shipped");
        // SVE at a known VL: that length, length-agnostic, and NEON.
        let v1 = load("neoverse-v1");
        assert_eq!(kind_names(&v1), ["sve", "sve-vla", "neon"]);
        let kinds = v1.vector_kinds();
        assert_eq!(kinds[0].1.vscale_values, [2], "256-bit SVE");
        assert_eq!(kinds[1].1.vscale_values, [1, 2, 4, 8, 16], "any VL");
        assert!(!kinds[2].1.scalable);
        assert_eq!(kind_names(&load("a64fx")), ["sve", "sve-vla", "neon"]);
        // Length-agnostic SVE: no fixed-length SVE kind.
        assert_eq!(kind_names(&load("sve-generic")), ["sve-vla", "neon"]);
        assert_eq!(kind_names(&load("neon")), ["neon"]);
        // SME: streaming code last, at the streaming vector lengths, no gathers.
        let sme = load("sme");
        assert_eq!(kind_names(&sme), ["sve-vla", "neon", "sme"]);
        let streaming = &sme.vector_kinds()[2].1;
        assert!(streaming.has_sme && !streaming.has_gather && streaming.scalable);
        assert_eq!(streaming.vscale_values, [1, 2, 4, 8, 16]);
        assert!(sme.vector_kinds()[..2].iter().all(|(_, c)| !c.has_sme), "only streaming code uses ZA");
        // Apple M4: NEON outside streaming mode, SME at a 512-bit streaming VL.
        let m4 = load("apple-m4");
        assert_eq!(kind_names(&m4), ["neon", "sme"]);
        assert_eq!(m4.vector_kinds()[1].1.vscale_values, [4]);
        assert_eq!(m4.default_vl_bits, [512]);
        assert_eq!(m4.vscale_for_vl(512).ok(), Some(4));
        assert!(m4.vscale_for_vl(256).is_err());
        // RVV: length-agnostic, and fixed at the first default VLEN.
        let rvv = load("rvv");
        assert_eq!(kind_names(&rvv), ["rvv-vla", format!("rvv-{}", rvv.default_vl_bits[0]).as_str()]);
        assert_eq!(rvv.vector_kinds()[1].1.vscale_values, [rvv.default_vl_bits[0] / 64]);
        // x86: the fixed widths the CPU's features allow.
        let host = load("host");
        let with = |f: &str| Target { features: f.to_string(), ..host.clone() };
        assert_eq!(kind_names(&with("+avx2,+avx512f,+fma")), ["avx512", "avx2"]);
        assert_eq!(kind_names(&with("+avx2,+fma")), ["avx2"]);
        assert_eq!(kind_names(&with("+sse4.2")), ["sse"]);
        let widths: Vec<u32> = with("+avx2,+avx512f").vector_kinds().iter().map(|(_, c)| c.max_bits()).collect();
        assert_eq!(widths, [512, 256]);
    }
}

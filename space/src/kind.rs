//! Vector kinds: which sort of vectors a schedule generates (`use_vectors`), named as in trace text.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// One kind of vectors a target offers. The space never sees a target: a
/// kind reaches it with its [`crate::VectorCaps`] (`Nest::kinds`), and only
/// its name appears in traces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum VectorKind {
    /// Arm NEON: fixed 128-bit vectors.
    Neon,
    /// Arm SVE at the target's one known vector length (fixed-length code).
    Sve,
    /// Arm SVE at any vector length (length-agnostic code).
    SveVla,
    /// Arm SME: the kernel body runs in streaming mode (streaming SVE at the
    /// streaming vector length, gathers unavailable) and may accumulate
    /// outer products in the ZA tiles (`tensorize`).
    Sme,
    /// RISC-V vectors of a target with one vector length.
    Rvv,
    /// RISC-V vectors at any vector length (length-agnostic code).
    RvvVla,
    /// RISC-V vectors fixed at this many bits (fixed-length code on a
    /// length-agnostic target).
    RvvFixed(u32),
    /// x86 AVX-512: fixed 512-bit vectors.
    Avx512,
    /// x86 AVX2: fixed 256-bit vectors.
    Avx2,
    /// x86 SSE: fixed 128-bit vectors.
    Sse,
}

impl VectorKind {
    /// Architectural vector registers available to a kernel of this kind
    /// (the budget of a register tile's accumulators and operands). RVV
    /// counts single registers: a group of `m` registers is `m` of them.
    pub fn vector_registers(self) -> u32 {
        match self {
            VectorKind::Avx2 | VectorKind::Sse => 16,
            VectorKind::Neon
            | VectorKind::Sve
            | VectorKind::SveVla
            | VectorKind::Sme
            | VectorKind::Rvv
            | VectorKind::RvvVla
            | VectorKind::RvvFixed(_)
            | VectorKind::Avx512 => 32,
        }
    }
}

impl fmt::Display for VectorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VectorKind::Neon => f.write_str("neon"),
            VectorKind::Sve => f.write_str("sve"),
            VectorKind::SveVla => f.write_str("sve-vla"),
            VectorKind::Sme => f.write_str("sme"),
            VectorKind::Rvv => f.write_str("rvv"),
            VectorKind::RvvVla => f.write_str("rvv-vla"),
            VectorKind::RvvFixed(bits) => write!(f, "rvv-{bits}"),
            VectorKind::Avx512 => f.write_str("avx512"),
            VectorKind::Avx2 => f.write_str("avx2"),
            VectorKind::Sse => f.write_str("sse"),
        }
    }
}

/// A name that is no vector kind.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown vector kind `{0}` (neon, sve, sve-vla, sme, rvv, rvv-vla, rvv-BITS, avx512, avx2, sse)")]
pub struct UnknownKind(pub String);

impl FromStr for VectorKind {
    type Err = UnknownKind;

    fn from_str(s: &str) -> Result<VectorKind, UnknownKind> {
        Ok(match s {
            "neon" => VectorKind::Neon,
            "sve" => VectorKind::Sve,
            "sve-vla" => VectorKind::SveVla,
            "sme" => VectorKind::Sme,
            "rvv" => VectorKind::Rvv,
            "rvv-vla" => VectorKind::RvvVla,
            "avx512" => VectorKind::Avx512,
            "avx2" => VectorKind::Avx2,
            "sse" => VectorKind::Sse,
            _ => match s.strip_prefix("rvv-").and_then(|b| b.parse::<u32>().ok()) {
                Some(bits) if bits > 0 && bits.to_string() == s["rvv-".len()..] => VectorKind::RvvFixed(bits),
                _ => return Err(UnknownKind(s.to_string())),
            },
        })
    }
}

impl Serialize for VectorKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for VectorKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<VectorKind, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_others_are_refused() {
        let all = [
            VectorKind::Neon,
            VectorKind::Sve,
            VectorKind::SveVla,
            VectorKind::Sme,
            VectorKind::Rvv,
            VectorKind::RvvVla,
            VectorKind::RvvFixed(256),
            VectorKind::Avx512,
            VectorKind::Avx2,
            VectorKind::Sse,
        ];
        for k in all {
            assert_eq!(k.to_string().parse::<VectorKind>(), Ok(k));
            assert_eq!(serde_json::from_str::<VectorKind>(&serde_json::to_string(&k).expect("json")).ok(), Some(k));
        }
        assert_eq!(VectorKind::RvvFixed(128).to_string(), "rvv-128");
        for bad in ["", "SVE", "rvv-", "rvv-0", "rvv-012", "rvv-x", "altivec"] {
            assert!(bad.parse::<VectorKind>().is_err(), "{bad}");
        }
    }
}

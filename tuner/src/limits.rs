//! The memory bound of commands that allocate tensors (`--max-bytes`): a
//! workload whose tensors need more is refused before anything is allocated.
//!
//! The bound is process-wide: `main` sets it once from `--max-bytes` (default
//! a quarter of the machine's physical memory, since a run holds the inputs,
//! the kernel's outputs and the reference's outputs at once), and every
//! command that runs kernels loads its workloads through
//! [`crate::pipeline::load_workload_to_run`], which checks it.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

/// Used when the physical memory cannot be read: 4 GiB.
const FALLBACK_MAX_BYTES: u64 = 4 << 30;

/// 0 means "not set": the default applies.
static MAX_BYTES: AtomicU64 = AtomicU64::new(0);

/// A size in bytes, written as an integer with an optional binary suffix
/// (`K`, `M`, `G`, `T`, also `KiB`, `MiB`, `GiB`, `TiB`, case-insensitive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl FromStr for ByteSize {
    type Err = String;

    fn from_str(s: &str) -> Result<ByteSize, String> {
        let t = s.trim();
        let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (num, unit) = t.split_at(digits);
        let n: u64 = num.parse().map_err(|_| format!("`{s}` is not a size (e.g. 4096, 512M, 8G)"))?;
        let shift = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 0,
            "k" | "kib" => 10,
            "m" | "mib" => 20,
            "g" | "gib" => 30,
            "t" | "tib" => 40,
            other => return Err(format!("unknown size unit `{other}` in `{s}` (K, M, G, T)")),
        };
        let bytes = n.checked_mul(1u64 << shift).ok_or_else(|| format!("size `{s}` does not fit 64 bits"))?;
        if bytes == 0 {
            return Err("the size must be positive".to_string());
        }
        Ok(ByteSize(bytes))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(&str, u32); 4] = [("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)];
        for (unit, shift) in UNITS {
            if self.0 >= 1u64 << shift {
                return write!(f, "{:.1} {unit}", self.0 as f64 / (1u64 << shift) as f64);
            }
        }
        write!(f, "{} bytes", self.0)
    }
}

/// A quarter of the physical memory of this machine (4 GiB if unknown).
pub fn default_max_bytes() -> u64 {
    use nix::unistd::{sysconf, SysconfVar};
    let pages = sysconf(SysconfVar::_PHYS_PAGES).ok().flatten();
    let page = sysconf(SysconfVar::PAGE_SIZE).ok().flatten();
    match (pages, page) {
        (Some(n), Some(p)) if n > 0 && p > 0 => (n as u64).saturating_mul(p as u64) / 4,
        _ => FALLBACK_MAX_BYTES,
    }
}

/// Sets the bound (`--max-bytes`); `None` keeps the default.
pub fn set_max_bytes(bytes: Option<ByteSize>) {
    MAX_BYTES.store(bytes.map_or(0, |b| b.0), Ordering::Relaxed);
}

/// The bound in force.
pub fn max_bytes() -> u64 {
    match MAX_BYTES.load(Ordering::Relaxed) {
        0 => default_max_bytes(),
        n => n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_suffixes_and_refuse_the_rest() {
        assert_eq!("4096".parse::<ByteSize>(), Ok(ByteSize(4096)));
        assert_eq!("512M".parse::<ByteSize>(), Ok(ByteSize(512 << 20)));
        assert_eq!("8gib".parse::<ByteSize>(), Ok(ByteSize(8 << 30)));
        assert_eq!("2 T".parse::<ByteSize>(), Ok(ByteSize(2 << 40)));
        for bad in ["", "0", "-1", "1.5G", "12X", "99999999999T", "G"] {
            assert!(bad.parse::<ByteSize>().is_err(), "{bad} was accepted");
        }
        assert_eq!(ByteSize(3 << 29).to_string(), "1.5 GiB");
        assert_eq!(ByteSize(100).to_string(), "100 bytes");
    }

    #[test]
    fn the_default_is_a_positive_fraction_of_memory() {
        let d = default_max_bytes();
        assert!(d >= 1 << 20, "{d}");
    }
}

//! Vector capabilities: the only view of a target that the schedule space has.

use serde::{Deserialize, Serialize};

/// What the schedule space may assume about a target's vectors.
///
/// `vscale` is the number of `granule_bits` granules in one vector register.
/// On scalable targets it is a runtime symbol ranging over `vscale_values`;
/// on fixed-length targets it is the single constant `vscale_values[0]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct VectorCaps {
    /// True if vector registers have a length unknown at compile time.
    pub scalable: bool,
    /// Bits per unit of vscale (128 for SVE and fixed-length targets, 64 for RVV).
    pub granule_bits: u32,
    /// Every value vscale may take, ascending (one value on fixed targets).
    pub vscale_values: Vec<u32>,
    /// True for the `sme` vector kind: code runs in SME streaming mode
    /// (vscale is the streaming vector length over `granule_bits`) and may
    /// use the ZA tiles.
    pub has_sme: bool,
    /// True if the target has hardware gathers and scatters.
    pub has_gather: bool,
    /// False if vector registers cannot hold f16 elements: scalable RVV
    /// without the Zvfh extension (LLVM cannot compile such vectors), so no
    /// loop over f16 data may be vectorized. Absent in stored caps: true.
    #[serde(default = "yes")]
    pub half_vectors: bool,
}

fn yes() -> bool {
    true
}

impl VectorCaps {
    /// Capabilities of a fixed-length target with `bits`-wide registers.
    pub fn fixed(bits: u32) -> VectorCaps {
        VectorCaps {
            scalable: false,
            granule_bits: 128,
            vscale_values: vec![(bits / 128).max(1)],
            has_sme: false,
            has_gather: false,
            half_vectors: true,
        }
    }

    /// Capabilities of a scalable target whose vector length is any power of two in `min_bits..=max_bits`.
    pub fn scalable(granule_bits: u32, min_bits: u32, max_bits: u32) -> VectorCaps {
        let mut values = Vec::new();
        let mut bits = min_bits.max(granule_bits);
        while bits <= max_bits {
            values.push(bits / granule_bits);
            bits *= 2;
        }
        VectorCaps {
            scalable: true,
            granule_bits,
            vscale_values: values,
            has_sme: false,
            has_gather: true,
            half_vectors: true,
        }
    }

    /// SVE with any vector length from 128 to 2048 bits: the default domain of
    /// the schedule space when no target is given.
    pub fn sve_any() -> VectorCaps {
        VectorCaps::scalable(128, 128, 2048)
    }

    /// Smallest vector length in bits.
    pub fn min_bits(&self) -> u32 {
        self.vscale_values.first().copied().unwrap_or(1) * self.granule_bits
    }

    /// Largest vector length in bits.
    pub fn max_bits(&self) -> u32 {
        self.vscale_values.last().copied().unwrap_or(1) * self.granule_bits
    }

    /// Lanes of `dtype_bits`-wide elements in one vscale granule.
    pub fn lanes_per_granule(&self, dtype_bits: u32) -> u32 {
        (self.granule_bits / dtype_bits).max(1)
    }

    /// The constant vscale of a fixed-length target.
    pub fn fixed_vscale(&self) -> Option<u32> {
        if self.scalable {
            None
        } else {
            self.vscale_values.first().copied()
        }
    }
}

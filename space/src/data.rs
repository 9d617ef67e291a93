//! Tensor contents: typed element arrays shared by the reference evaluator,
//! the interpreter and the harness.

use crate::DType;
use half::{bf16, f16};

/// The elements of one tensor, row-major.
#[derive(Clone, Debug, PartialEq)]
pub enum TensorData {
    /// f16 elements.
    F16(Vec<f16>),
    /// bf16 elements.
    BF16(Vec<bf16>),
    /// f32 elements.
    F32(Vec<f32>),
    /// f64 elements.
    F64(Vec<f64>),
    /// i8 elements.
    I8(Vec<i8>),
    /// i32 elements.
    I32(Vec<i32>),
}

impl TensorData {
    /// `len` zero elements of `dtype`.
    pub fn zeros(dtype: DType, len: usize) -> TensorData {
        TensorData::filled(dtype, len, 0.0)
    }

    /// `len` elements of `dtype`, all equal to `value` (converted).
    pub fn filled(dtype: DType, len: usize, value: f64) -> TensorData {
        match dtype {
            DType::F16 => TensorData::F16(vec![f16::from_f64(value); len]),
            DType::BF16 => TensorData::BF16(vec![bf16_from_f64(value); len]),
            DType::F32 => TensorData::F32(vec![value as f32; len]),
            DType::F64 => TensorData::F64(vec![value; len]),
            DType::I8 => TensorData::I8(vec![value as i8; len]),
            DType::I32 => TensorData::I32(vec![value as i32; len]),
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            TensorData::F16(_) => DType::F16,
            TensorData::BF16(_) => DType::BF16,
            TensorData::F32(_) => DType::F32,
            TensorData::F64(_) => DType::F64,
            TensorData::I8(_) => DType::I8,
            TensorData::I32(_) => DType::I32,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            TensorData::F16(v) => v.len(),
            TensorData::BF16(v) => v.len(),
            TensorData::F32(v) => v.len(),
            TensorData::F64(v) => v.len(),
            TensorData::I8(v) => v.len(),
            TensorData::I32(v) => v.len(),
        }
    }

    /// True if there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` widened to f64.
    pub fn get(&self, i: usize) -> f64 {
        match self {
            TensorData::F16(v) => v[i].to_f64(),
            TensorData::BF16(v) => v[i].to_f64(),
            TensorData::F32(v) => f64::from(v[i]),
            TensorData::F64(v) => v[i],
            TensorData::I8(v) => f64::from(v[i]),
            TensorData::I32(v) => f64::from(v[i]),
        }
    }

    /// Stores `x` (rounded / wrapped to the element type) at element `i`.
    pub fn set(&mut self, i: usize, x: f64) {
        match self {
            TensorData::F16(v) => v[i] = f16::from_f64(x),
            TensorData::BF16(v) => v[i] = bf16_from_f64(x),
            TensorData::F32(v) => v[i] = x as f32,
            TensorData::F64(v) => v[i] = x,
            TensorData::I8(v) => v[i] = (x as i64) as i8,
            TensorData::I32(v) => v[i] = (x as i64) as i32,
        }
    }

    /// Little-endian bytes of all elements.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match self {
            TensorData::F16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            TensorData::BF16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            TensorData::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            TensorData::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            TensorData::I8(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            TensorData::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }

    /// Parses little-endian bytes; `None` if the length is not a whole number
    /// of elements.
    pub fn from_le_bytes(dtype: DType, bytes: &[u8]) -> Option<TensorData> {
        let n = dtype.bytes();
        if !bytes.len().is_multiple_of(n) {
            return None;
        }
        let chunks = bytes.chunks_exact(n);
        Some(match dtype {
            DType::F16 => TensorData::F16(chunks.map(|c| f16::from_le_bytes([c[0], c[1]])).collect()),
            DType::BF16 => TensorData::BF16(chunks.map(|c| bf16::from_le_bytes([c[0], c[1]])).collect()),
            DType::F32 => TensorData::F32(chunks.map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()),
            DType::F64 => TensorData::F64(
                chunks.map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect(),
            ),
            DType::I8 => TensorData::I8(chunks.map(|c| c[0] as i8).collect()),
            DType::I32 => TensorData::I32(chunks.map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()),
        })
    }
}

/// Correctly rounded (to nearest, ties to even) conversion of f64 to bf16.
///
/// `half::bf16::from_f64` drops the low 32 mantissa bits before rounding,
/// so a value just above a tie can round down. Here `x` is first rounded to
/// f32 *to odd* (an inexact result keeps a set last bit, which records that
/// bits were dropped); f32 has 16 bits more than bf16, so the one rounding
/// from f32 to bf16 (correct in `half`) then gives the right result, also for
/// subnormals (f32 and bf16 share their exponent range) and overflow.
pub fn bf16_from_f64(x: f64) -> bf16 {
    bf16::from_f32(f64_to_f32_odd(x))
}

/// `x` rounded to f32 to odd: the nearest f32 if exact, otherwise whichever
/// of the two neighbours has an odd last bit (infinite beyond the f32 range,
/// which every narrower type also overflows).
pub fn f64_to_f32_odd(x: f64) -> f32 {
    let single = x as f32;
    if single.is_finite() && f64::from(single) != x && single.to_bits() & 1 == 0 {
        // Step one ulp toward x: away from zero if |x| is larger.
        let bits = single.to_bits();
        return f32::from_bits(if x.abs() > f64::from(single).abs() { bits + 1 } else { bits - 1 });
    }
    single
}

/// Deterministic contents for every kernel argument of `w`, in
/// [`crate::workload::Workload::arg_tensors`] order.
///
/// Inputs get values from a ChaCha stream seeded by `seed` and the tensor
/// name: floats uniform in [-1, 1) (rounded to the dtype), index tensors
/// uniform in their declared range, other integers small signed values.
/// Outputs are filled with a poison value (NaN, or `i32::MIN + 7`) so that
/// an element the kernel forgets to write cannot match the reference.
pub fn make_args(w: &crate::workload::Workload, seed: u64) -> Vec<TensorData> {
    use crate::workload::Role;
    use rand::{Rng, SeedableRng};
    w.arg_tensors()
        .into_iter()
        .map(|id| {
            let t = w.tensor(id);
            let n = t.len();
            if t.role != Role::Input {
                return match t.dtype {
                    DType::I8 | DType::I32 => TensorData::filled(t.dtype, n, f64::from(i32::MIN + 7)),
                    d => TensorData::filled(d, n, f64::NAN),
                };
            }
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ fnv1a(&t.name));
            let mut data = TensorData::zeros(t.dtype, n);
            for i in 0..n {
                let v = match (t.dtype, t.range) {
                    (DType::I8 | DType::I32, Some((lo, hi))) => rng.gen_range(lo..hi) as f64,
                    (DType::I8, None) => f64::from(rng.gen_range(-128i32..128)),
                    (DType::I32, None) => f64::from(rng.gen_range(-100i32..100)),
                    _ => rng.gen_range(-1.0f64..1.0),
                };
                data.set(i, v);
            }
            data
        })
        .collect()
}

/// 64-bit FNV-1a hash (stable across runs and platforms).
pub fn fnv1a(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_from_f64_rounds_once_to_nearest_even() {
        // Ties go to the even neighbour; anything past the tie goes up, even
        // when the excess is below f32 precision (rounding through f32
        // would see the tie and go to even).
        let tie = 1.0 + 2f64.powi(-8);
        assert_eq!(bf16_from_f64(tie).to_f64(), 1.0);
        assert_eq!(bf16_from_f64(tie + 2f64.powi(-40)).to_f64(), 1.0 + 2f64.powi(-7));
        assert_eq!(bf16_from_f64(1.0 + 3.0 * 2f64.powi(-8)).to_f64(), 1.0 + 4.0 * 2f64.powi(-8));
        assert_eq!(bf16_from_f64(-(tie + 2f64.powi(-40))).to_f64(), -(1.0 + 2f64.powi(-7)));
        assert_eq!(bf16_from_f64(tie - 2f64.powi(-40)).to_f64(), 1.0);
        // Subnormals: the smallest bf16 subnormal is 2^-133.
        let min = 2f64.powi(-133);
        assert_eq!(bf16_from_f64(min / 2.0).to_f64(), 0.0);
        assert_eq!(bf16_from_f64(min / 2.0 + 2f64.powi(-170)).to_f64(), min);
        // Overflow: the largest finite bf16 is (2 - 2^-7) * 2^127.
        let max = (2.0 - 2f64.powi(-7)) * 2f64.powi(127);
        assert_eq!(bf16_from_f64(max).to_f64(), max);
        assert_eq!(bf16_from_f64(max + 2f64.powi(119)).to_f64(), f64::INFINITY);
        assert_eq!(bf16_from_f64(max + 2f64.powi(119) - 2f64.powi(100)).to_f64(), max);
        assert_eq!(bf16_from_f64(1e300).to_f64(), f64::INFINITY);
        assert!(bf16_from_f64(f64::NAN).is_nan());
    }

    #[test]
    fn bf16_tensors_store_two_bytes_per_element() {
        let mut t = TensorData::zeros(DType::BF16, 2);
        t.set(0, 1.5);
        t.set(1, -0.1);
        let bytes = t.to_le_bytes();
        // -0.1 is 0xBDCCCCCD in f32; bf16 rounds its upper half up to 0xBDCD.
        assert_eq!(bytes, vec![0xc0, 0x3f, 0xcd, 0xbd]);
        assert_eq!(TensorData::from_le_bytes(DType::BF16, &bytes), Some(t));
        assert_eq!(TensorData::from_le_bytes(DType::BF16, &bytes[..3]), None);
    }
}

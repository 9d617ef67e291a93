//! Element types of tensors and scalar parameters.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The element type of a tensor, a scalar parameter or an expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    /// IEEE half precision (inputs only; computed in f32).
    F16,
    /// bfloat16: the upper half of an IEEE single (inputs only; computed in f32).
    BF16,
    /// IEEE single precision.
    F32,
    /// IEEE double precision.
    F64,
    /// Signed 8-bit integer (inputs only; accumulated in i32).
    I8,
    /// Signed 32-bit integer.
    I32,
}

impl DType {
    /// All dtypes, in a fixed order.
    pub const ALL: [DType; 6] = [DType::F16, DType::BF16, DType::F32, DType::F64, DType::I8, DType::I32];

    /// Width of one element in bits.
    pub fn bits(self) -> u32 {
        match self {
            DType::F16 | DType::BF16 => 16,
            DType::F32 => 32,
            DType::F64 => 64,
            DType::I8 => 8,
            DType::I32 => 32,
        }
    }

    /// Width of one element in bytes.
    pub fn bytes(self) -> usize {
        self.bits() as usize / 8
    }

    /// True for floating-point types.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    /// The keyword used in workload files and the text forms.
    pub fn name(self) -> &'static str {
        match self {
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I8 => "i8",
            DType::I32 => "i32",
        }
    }

    /// The C type of one element in the kernel ABI. f16 and bf16 travel as
    /// their bits in a `uint16_t`: gcc 12 and clang 19 both accept it on every
    /// target, and the kernel only ever takes pointers to them.
    pub fn c_type(self) -> &'static str {
        match self {
            DType::F16 | DType::BF16 => "uint16_t",
            DType::F32 => "float",
            DType::F64 => "double",
            DType::I8 => "int8_t",
            DType::I32 => "int32_t",
        }
    }

    /// Parses a dtype keyword.
    pub fn parse(s: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == s)
    }

    /// Machine epsilon used by correctness tolerances (0 for integers).
    pub fn epsilon(self) -> f64 {
        match self {
            DType::F16 => f64::from(half::f16::EPSILON),
            DType::BF16 => f64::from(half::bf16::EPSILON),
            DType::F32 => f64::from(f32::EPSILON),
            DType::F64 => f64::EPSILON,
            DType::I8 | DType::I32 => 0.0,
        }
    }

    /// The smallest positive subnormal value (0 for integers): the bound on
    /// the absolute rounding error of a product, quotient or conversion whose
    /// result lies in the subnormal range, where the relative bound
    /// [`DType::epsilon`] does not hold.
    pub fn min_subnormal(self) -> f64 {
        match self {
            DType::F16 => f64::from(half::f16::from_bits(1)),
            DType::BF16 => f64::from(half::bf16::from_bits(1)),
            DType::F32 => f64::from(f32::from_bits(1)),
            DType::F64 => f64::from_bits(1),
            DType::I8 | DType::I32 => 0.0,
        }
    }

    /// True if a value of `self` converts to `to` without loss (a widening).
    pub fn widens_to(self, to: DType) -> bool {
        use DType::*;
        self == to
            || matches!(
                (self, to),
                (F16, F32)
                    | (F16, F64)
                    | (BF16, F32)
                    | (BF16, F64)
                    | (F32, F64)
                    | (I8, I32)
                    | (I8, F16)
                    | (I8, BF16)
                    | (I8, F32)
                    | (I8, F64)
                    | (I32, F64)
            )
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

//! Runtime values of the interpreter: element kinds, register slots and the
//! elementwise arithmetic with per-operation rounding and wrapping.
//!
//! Floats of every width are held as `f64` and rounded to their dtype after
//! each operation; integers of every width are held as `i64`, sign-extended,
//! and wrapped to their width after each operation.

use super::InterpError;
use crate::vprog::{BinOp, CmpOp, Elem, UnOp};
use half::f16;
use scaletune_space::data::{bf16_from_f64, f64_to_f32_odd};
use scaletune_space::DType;

/// The element type of a register, resolved once before execution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    F16,
    BF16,
    F32,
    F64,
    I8,
    I32,
    Index,
    Bool,
}

impl Kind {
    /// The kind of a vprog element type.
    pub(crate) fn of(e: Elem) -> Kind {
        match e {
            Elem::Data(d) => Kind::of_dtype(d),
            Elem::Index => Kind::Index,
            Elem::Bool => Kind::Bool,
        }
    }

    /// The kind of a data dtype.
    pub(crate) fn of_dtype(d: DType) -> Kind {
        match d {
            DType::F16 => Kind::F16,
            DType::BF16 => Kind::BF16,
            DType::F32 => Kind::F32,
            DType::F64 => Kind::F64,
            DType::I8 => Kind::I8,
            DType::I32 => Kind::I32,
        }
    }

    /// The storage class of values of this kind.
    pub(crate) fn class(self) -> Class {
        match self {
            Kind::F16 | Kind::BF16 | Kind::F32 | Kind::F64 => Class::Float,
            Kind::I8 | Kind::I32 | Kind::Index => Class::Int,
            Kind::Bool => Class::Bool,
        }
    }

    /// Width in bits of an integer kind (0 for others).
    fn int_bits(self) -> u32 {
        match self {
            Kind::I8 => 8,
            Kind::I32 => 32,
            Kind::Index => 64,
            _ => 0,
        }
    }

    /// The smallest value of an integer kind.
    fn int_min(self) -> i64 {
        match self {
            Kind::I8 => i64::from(i8::MIN),
            Kind::I32 => i64::from(i32::MIN),
            _ => i64::MIN,
        }
    }
}

/// How values of a kind are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    Float,
    Int,
    Bool,
}

/// One register's value. Scalars are inline; vectors own a `Vec` that is
/// reused across assignments (see `RegFile`).
#[derive(Clone, Debug)]
pub(crate) enum Slot {
    F(f64),
    I(i64),
    B(bool),
    VF(Vec<f64>),
    VI(Vec<i64>),
    VB(Vec<bool>),
}

impl Slot {
    /// An initial (unassigned) slot for a register of the given shape.
    pub(crate) fn empty(kind: Kind, vector: bool) -> Slot {
        match (kind.class(), vector) {
            (Class::Float, false) => Slot::F(0.0),
            (Class::Int, false) => Slot::I(0),
            (Class::Bool, false) => Slot::B(false),
            (Class::Float, true) => Slot::VF(Vec::new()),
            (Class::Int, true) => Slot::VI(Vec::new()),
            (Class::Bool, true) => Slot::VB(Vec::new()),
        }
    }
}

/// A scalar of any class, used by conversions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Scalar {
    F(f64),
    I(i64),
}

fn internal(what: &str) -> InterpError {
    InterpError::Internal(what.to_string())
}

/// Rounds `x` to the precision of a float kind.
#[inline(always)]
pub(crate) fn round_float(kind: Kind, x: f64) -> f64 {
    match kind {
        Kind::F32 => f64::from(x as f32),
        Kind::F16 => f64_to_f16(x).to_f64(),
        Kind::BF16 => bf16_from_f64(x).to_f64(),
        _ => x,
    }
}

/// Correctly rounded (to nearest, ties to even) conversion of f64 to f16.
///
/// `half::f16::from_f64` is not: on hosts with F16C it rounds through f32
/// (double rounding) and its fallback drops the low mantissa bits. Here `x`
/// is first rounded to f32 *to odd* (the sticky bit survives in the last
/// place), after which f32 to f16 (a correct conversion in `half`) rounds once.
pub(crate) fn f64_to_f16(x: f64) -> f16 {
    f16::from_f32(f64_to_f32_odd(x))
}

/// Wraps `x` to the width of an integer kind (sign-extended).
#[inline(always)]
pub(crate) fn wrap_int(kind: Kind, x: i64) -> i64 {
    match kind {
        Kind::I8 => i64::from(x as i8),
        Kind::I32 => i64::from(x as i32),
        _ => x,
    }
}

/// Elementwise binary operation on floats (inputs already rounded to `kind`).
///
/// Computing in f64 and rounding once is exact for f32, f16 and bf16 (f64 has
/// more than twice their precision plus two bits).
#[inline(always)]
pub(crate) fn float_bin(op: BinOp, kind: Kind, a: f64, b: f64) -> Result<f64, InterpError> {
    let r = match op {
        BinOp::Add => a + b,
        BinOp::Sub => a - b,
        BinOp::Mul => a * b,
        BinOp::Div => a / b,
        // `f64::min`/`max` ignore a NaN operand, like llvm.minnum/maxnum.
        BinOp::Min => return Ok(a.min(b)),
        BinOp::Max => return Ok(a.max(b)),
        _ => return Err(internal("integer operation on floats")),
    };
    Ok(round_float(kind, r))
}

/// Elementwise binary operation on integers of `kind` (inputs in range).
#[inline(always)]
pub(crate) fn int_bin(op: BinOp, kind: Kind, a: i64, b: i64) -> Result<i64, InterpError> {
    let r = match op {
        BinOp::Add => a.wrapping_add(b),
        BinOp::Sub => a.wrapping_sub(b),
        BinOp::Mul => a.wrapping_mul(b),
        BinOp::FloorDiv | BinOp::FloorMod => {
            if b == 0 {
                return Err(InterpError::DivisionByZero);
            }
            if b == -1 && a == kind.int_min() {
                return Err(InterpError::DivisionOverflow { dividend: a });
            }
            // a / b cannot overflow in i64 now (a is at least kind.int_min() > i64::MIN or b != -1).
            let (q, r) = (a / b, a % b);
            let adjust = r != 0 && ((r < 0) != (b < 0));
            if op == BinOp::FloorDiv {
                if adjust {
                    q - 1
                } else {
                    q
                }
            } else if adjust {
                r + b
            } else {
                r
            }
        }
        BinOp::Min => a.min(b),
        BinOp::Max => a.max(b),
        BinOp::And => a & b,
        BinOp::Or => a | b,
        BinOp::Shl | BinOp::Shr => {
            let bits = kind.int_bits();
            if b < 0 || b >= i64::from(bits) {
                return Err(InterpError::ShiftOutOfRange { amount: b, bits });
            }
            if op == BinOp::Shl {
                a.wrapping_shl(b as u32)
            } else {
                a >> b
            }
        }
        BinOp::Div => return Err(internal("float division on integers")),
    };
    Ok(wrap_int(kind, r))
}

/// Elementwise binary operation on booleans.
#[inline(always)]
pub(crate) fn bool_bin(op: BinOp, a: bool, b: bool) -> Result<bool, InterpError> {
    match op {
        BinOp::And => Ok(a && b),
        BinOp::Or => Ok(a || b),
        _ => Err(internal("arithmetic on booleans")),
    }
}

/// Elementwise unary operation on floats.
#[inline(always)]
pub(crate) fn float_un(op: UnOp, kind: Kind, a: f64) -> Result<f64, InterpError> {
    Ok(match op {
        UnOp::Neg => -a,
        UnOp::Abs => a.abs(),
        UnOp::Sqrt => round_float(kind, a.sqrt()),
        UnOp::Floor => a.floor(),
        UnOp::RoundEven => a.round_ties_even(),
        UnOp::Not => return Err(internal("logical not on floats")),
    })
}

/// Elementwise unary operation on integers.
#[inline(always)]
pub(crate) fn int_un(op: UnOp, kind: Kind, a: i64) -> Result<i64, InterpError> {
    match op {
        UnOp::Neg => Ok(wrap_int(kind, a.wrapping_neg())),
        UnOp::Abs => Ok(wrap_int(kind, a.wrapping_abs())),
        _ => Err(internal("float operation on integers")),
    }
}

/// Elementwise unary operation on booleans.
#[inline(always)]
pub(crate) fn bool_un(op: UnOp, a: bool) -> Result<bool, InterpError> {
    match op {
        UnOp::Not => Ok(!a),
        _ => Err(internal("arithmetic on booleans")),
    }
}

/// Fused multiply-add `a*b + c` with a single rounding to `kind`.
#[inline(always)]
pub(crate) fn fma(kind: Kind, a: f64, b: f64, c: f64) -> f64 {
    match kind {
        Kind::F32 => f64::from((a as f32).mul_add(b as f32, c as f32)),
        Kind::F16 => fma_f16(a, b, c),
        Kind::BF16 => fma_bf16(a, b, c),
        _ => a.mul_add(b, c),
    }
}

/// f16 fma. The product of two f16 values is exact in f64 (22 bits). The
/// f64 sum is either exact or its rounding is far from an f16 rounding
/// boundary (a tie needs the product near half an f16 ulp of the addend,
/// which keeps all bits within 53), so rounding it to f16 is a single
/// correct rounding.
fn fma_f16(a: f64, b: f64, c: f64) -> f64 {
    f64_to_f16(a * b + c).to_f64()
}

/// bf16 fma. The product of two bf16 values is exact in f64 (16 bits), but
/// unlike f16 the exponent range is wide enough for the f64 sum to drop an
/// addend that decides a tie, so the sum is rounded to odd in f64 (its exact
/// error from TwoSum says which way it was inexact) before the single
/// correct rounding to bf16 (round-to-odd with 45 spare bits keeps it one).
fn fma_bf16(a: f64, b: f64, c: f64) -> f64 {
    bf16_from_f64(add_to_odd(a * b, c)).to_f64()
}

/// `a + b` in f64 rounded to odd: the nearest f64 sum, stepped to its odd
/// neighbour on the side of the exact sum when it was inexact (non-finite
/// sums are returned as they are).
pub(super) fn add_to_odd(a: f64, b: f64) -> f64 {
    let s = a + b;
    if !s.is_finite() {
        return s;
    }
    // TwoSum: `err` is exactly (a + b) - s. A zero `s` is exact (a sum that
    // rounds to zero is zero), so stepping `s` never crosses zero.
    let av = s - b;
    let err = (a - av) + (b - (s - av));
    if err != 0.0 && s.to_bits() & 1 == 0 {
        let away = (err > 0.0) == (s > 0.0);
        f64::from_bits(if away { s.to_bits() + 1 } else { s.to_bits() - 1 })
    } else {
        s
    }
}

/// Integer to bf16, rounded once: beyond 2^53, where `as f64` would round
/// first, the integer is rounded to odd at 53 bits (exact in f64) so that
/// the rounding to bf16 is the only one.
fn int_to_bf16(i: i64) -> f64 {
    let mag = i.unsigned_abs();
    let shift = (64 - mag.leading_zeros()).saturating_sub(53);
    let mut m = mag >> shift;
    if mag & ((1u64 << shift) - 1) != 0 {
        m |= 1;
    }
    let x = (m as f64) * 2f64.powi(shift as i32);
    bf16_from_f64(if i < 0 { -x } else { x }).to_f64()
}

/// Float comparison: `Lt`, `Le`, `Eq` are ordered (false on NaN), `Ne` is
/// unordered (true on NaN), like C's operators.
#[inline(always)]
pub(crate) fn cmp_float(op: CmpOp, a: f64, b: f64) -> bool {
    match op {
        CmpOp::Lt => a < b,
        CmpOp::Le => a <= b,
        CmpOp::Eq => a == b,
        CmpOp::Ne => a != b,
    }
}

/// Signed integer comparison.
#[inline(always)]
pub(crate) fn cmp_int(op: CmpOp, a: i64, b: i64) -> bool {
    match op {
        CmpOp::Lt => a < b,
        CmpOp::Le => a <= b,
        CmpOp::Eq => a == b,
        CmpOp::Ne => a != b,
    }
}

/// Boolean comparison (false < true).
#[inline(always)]
pub(crate) fn cmp_bool(op: CmpOp, a: bool, b: bool) -> bool {
    match op {
        CmpOp::Lt => !a & b,
        CmpOp::Le => a <= b,
        CmpOp::Eq => a == b,
        CmpOp::Ne => a != b,
    }
}

/// Numeric conversion between kinds: float to int truncates toward zero and
/// saturates (NaN gives 0), int to int wraps, int to float rounds to nearest.
#[inline(always)]
pub(crate) fn cast(to: Kind, x: Scalar) -> Result<Scalar, InterpError> {
    Ok(match (x, to.class()) {
        (Scalar::F(v), Class::Float) => Scalar::F(round_float(to, v)),
        (Scalar::F(v), Class::Int) => Scalar::I(match to {
            Kind::I8 => i64::from(v as i8),
            Kind::I32 => i64::from(v as i32),
            _ => v as i64,
        }),
        (Scalar::I(i), Class::Float) => Scalar::F(match to {
            Kind::F32 => f64::from(i as f32),
            // f64 is exact below 2^53; larger values are infinite in f16.
            Kind::F16 => f64_to_f16(i as f64).to_f64(),
            Kind::BF16 => int_to_bf16(i),
            _ => i as f64,
        }),
        (Scalar::I(i), Class::Int) => Scalar::I(wrap_int(to, i)),
        (_, Class::Bool) => return Err(internal("cast to bool")),
    })
}

/// Reinterprets the bits of a value of kind `from` as kind `to` (same width).
#[inline(always)]
pub(crate) fn bitcast(from: Kind, to: Kind, x: Scalar) -> Result<Scalar, InterpError> {
    if from == to {
        return Ok(x);
    }
    Ok(match (from, to, x) {
        (Kind::F32, Kind::I32, Scalar::F(v)) => Scalar::I(i64::from((v as f32).to_bits() as i32)),
        (Kind::I32, Kind::F32, Scalar::I(i)) => Scalar::F(f64::from(f32::from_bits(i as i32 as u32))),
        (Kind::F64, Kind::Index, Scalar::F(v)) => Scalar::I(v.to_bits() as i64),
        (Kind::Index, Kind::F64, Scalar::I(i)) => Scalar::F(f64::from_bits(i as u64)),
        _ => return Err(internal("bitcast between kinds of different widths")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_division_and_modulo_follow_the_divisor_sign() {
        let cases = [(7, 2, 3, 1), (-7, 2, -4, 1), (7, -2, -4, -1), (-7, -2, 3, -1), (-8, 2, -4, 0)];
        for (a, b, q, r) in cases {
            assert_eq!(int_bin(BinOp::FloorDiv, Kind::I32, a, b), Ok(q), "{a} floordiv {b}");
            assert_eq!(int_bin(BinOp::FloorMod, Kind::I32, a, b), Ok(r), "{a} floormod {b}");
        }
        assert_eq!(int_bin(BinOp::FloorDiv, Kind::Index, 1, 0), Err(InterpError::DivisionByZero));
        assert!(matches!(
            int_bin(BinOp::FloorDiv, Kind::I8, -128, -1),
            Err(InterpError::DivisionOverflow { dividend: -128 })
        ));
        assert_eq!(int_bin(BinOp::FloorDiv, Kind::I32, -128, -1), Ok(128));
    }

    #[test]
    fn f16_fma_rounds_once() {
        // 48 * 683 = 2^15 + 2^4 is exactly halfway between two f16 values;
        // adding the smallest subnormal must round up, not tie to even.
        let tiny = 2f64.powi(-24);
        assert_eq!(fma(Kind::F16, 48.0, 683.0, tiny), 32800.0);
        assert_eq!(fma(Kind::F16, 48.0, 683.0, 0.0), 32768.0);
    }

    #[test]
    fn bf16_fma_and_int_conversion_round_once() {
        // 1 + 2^-8 is the tie between 1 and 1 + 2^-7; an addend far below
        // f64 precision of the product still decides it.
        let tie = 1.0 + 2f64.powi(-8);
        let tiny = 2f64.powi(-120);
        assert_eq!(fma(Kind::BF16, tie, 1.0, tiny), 1.0 + 2f64.powi(-7));
        assert_eq!(fma(Kind::BF16, tie, 1.0, -tiny), 1.0);
        assert_eq!(fma(Kind::BF16, tie, 1.0, 0.0), 1.0);
        assert_eq!(fma(Kind::BF16, -tie, 1.0, -tiny), -(1.0 + 2f64.powi(-7)));
        assert_eq!(fma(Kind::BF16, 3.0, 5.0, -15.0), 0.0);
        // 2^62 + 2^54 is a bf16 tie (between 2^62 and 2^62 + 2^55); one more
        // unit, lost by `as f64`, rounds it up.
        let t = (1i64 << 62) + (1i64 << 54);
        assert_eq!(cast(Kind::BF16, Scalar::I(t)), Ok(Scalar::F(2f64.powi(62))));
        assert_eq!(cast(Kind::BF16, Scalar::I(t + 1)), Ok(Scalar::F(2f64.powi(62) + 2f64.powi(55))));
        assert_eq!(cast(Kind::BF16, Scalar::I(-t - 1)), Ok(Scalar::F(-(2f64.powi(62) + 2f64.powi(55)))));
        assert_eq!(cast(Kind::BF16, Scalar::I(i64::MIN)), Ok(Scalar::F(-(2f64.powi(63)))));
        assert_eq!(cast(Kind::BF16, Scalar::I(-3)), Ok(Scalar::F(-3.0)));
        assert_eq!(cast(Kind::BF16, Scalar::I(257)), Ok(Scalar::F(256.0)));
    }

    #[test]
    fn f64_to_f16_rounds_once() {
        // Just above the tie between 1 and 1 + 2^-10; the f32 rounding of this
        // value is the tie itself, so rounding through f32 would give 1.
        let x = 1.0 + 2f64.powi(-11) + 2f64.powi(-40);
        assert_eq!(f64_to_f16(x).to_f64(), 1.0 + 2f64.powi(-10));
        assert_eq!(f64_to_f16(1.0 + 2f64.powi(-11)).to_f64(), 1.0);
        assert_eq!(f64_to_f16(-(1.0 + 3.0 * 2f64.powi(-11) - 2f64.powi(-40))).to_f64(), -(1.0 + 2f64.powi(-10)));
        assert_eq!(f64_to_f16(65520.0).to_f64(), f64::INFINITY);
        assert_eq!(f64_to_f16(65519.99).to_f64(), 65504.0);
        assert_eq!(f64_to_f16(1e300).to_f64(), f64::INFINITY);
        assert_eq!(f64_to_f16(2f64.powi(-25) + 2f64.powi(-60)).to_f64(), 2f64.powi(-24));
        assert_eq!(f64_to_f16(2f64.powi(-25)).to_f64(), 0.0);
        assert!(f64_to_f16(f64::NAN).is_nan());
    }

    #[test]
    fn casts_truncate_saturate_and_wrap() {
        assert_eq!(cast(Kind::I32, Scalar::F(-2.7)), Ok(Scalar::I(-2)));
        assert_eq!(cast(Kind::I8, Scalar::F(1000.0)), Ok(Scalar::I(127)));
        assert_eq!(cast(Kind::I32, Scalar::F(f64::NAN)), Ok(Scalar::I(0)));
        assert_eq!(cast(Kind::I8, Scalar::I(200)), Ok(Scalar::I(-56)));
        assert_eq!(cast(Kind::F32, Scalar::I(16_777_217)), Ok(Scalar::F(16_777_216.0)));
        assert_eq!(bitcast(Kind::F32, Kind::I32, Scalar::F(1.0)), Ok(Scalar::I(0x3f80_0000)));
        assert_eq!(bitcast(Kind::I32, Kind::F32, Scalar::I(0x4000_0000)), Ok(Scalar::F(2.0)));
    }
}

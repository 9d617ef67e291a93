//! Expansions of transcendental functions (`exp`, `cos`) into vprog operations.
//!
//! SVE and RVV have no vector `exp` or `cos`, and a libm call per lane would
//! make the interpreter and the generated code disagree. These expansions use
//! only elementwise vprog operations (`Fma`, `Bin`, `RoundEven`, `Bitcast`,
//! `Shl`, `Cmp`, `Select`, `Splat` of constants; no float-to-int `Cast`,
//! see `Math::integral_to_int`), so both compute
//! bit-identical results at every vector length.
//!
//! The sequences never feed a `Mul` into an `Add`/`Sub`: every product that
//! is summed goes through an explicit `Fma`, so floating-point contraction in
//! the backend cannot change a result.
//!
//! Accuracy, measured through the interpreter against Rust's f64 `exp`/`cos`
//! (`codegen/tests/interp_math.rs`, which asserts 4 ulp for f32 and 8 for
//! f64): `exp` within 0.9 ulp (f32) and 1 ulp (f64) over the whole range,
//! subnormal results included; `cos` within 1.4 ulp (f32) and 1 ulp (f64)
//! for `|x| <= 1e4`, including the neighbours of every multiple of pi/2.
//! Random sampling stays within 1.4 ulp up to `1e6` for f32 and within 1 ulp
//! up to `1e15` for f64.

use crate::vprog::{BinOp, Builder, CmpOp, Const, Elem, Op, Reg, Ty, UnOp};
use scaletune_space::DType;

/// Emits `exp(x)` for an f32 or f64 register `x`, scalar or vector (fixed or
/// scalable), and returns the result register (same type as `x`).
///
/// Cody-Waite reduction `x = n*ln2 + r` with `n = roundeven(x*log2(e))`, a
/// Taylor polynomial for `exp(r)` (degree 7 for f32, 13 for f64), and `2^n`
/// built from exponent bits as `2^(n/2) * 2^(n - n/2)` so that subnormal
/// results and overflow round correctly. Large arguments give `+inf`, very
/// negative ones `0`; NaN propagates. An f16 or bf16 `x` is computed in f32.
///
/// # Panics
/// If `x` is not a float register.
pub fn exp(b: &mut Builder, x: Reg) -> Reg {
    via_f32_for_f16(b, x, exp_f)
}

/// Emits `cos(x)` for an f32 or f64 register `x`, scalar or vector, and
/// returns the result register (same type as `x`).
///
/// Reduction by `pi/2` (`k = roundeven(x*2/pi)`) with a 3-part (f32) or
/// 4-part (f64) constant applied by `Fma`, then the sine or cosine Taylor
/// polynomial on `[-pi/4, pi/4]` chosen and negated by the quadrant `k mod 4`.
/// Accurate for `|x| <= 1e4` (and in practice up to about `1e6` for f32);
/// beyond that the f32 reduction loses accuracy, and where it breaks down
/// entirely (huge `|x|`) the result is still within `[-1, 1]`. NaN and infinities give NaN. An f16 or bf16 `x` is computed in f32.
///
/// # Panics
/// If `x` is not a float register.
pub fn cos(b: &mut Builder, x: Reg) -> Reg {
    via_f32_for_f16(b, x, cos_f)
}

fn via_f32_for_f16(b: &mut Builder, x: Reg, f: fn(&mut Math<'_>, Reg) -> Reg) -> Reg {
    let ty = b.ty(x);
    match ty.elem {
        Elem::Data(DType::F32) | Elem::Data(DType::F64) => f(&mut Math::new(b, ty), x),
        Elem::Data(d @ (DType::F16 | DType::BF16)) => {
            let wide = b.emit(Op::Cast(x, Elem::F32));
            let r = f(&mut Math::new(b, ty.with_elem(Elem::F32)), wide);
            b.emit(Op::Cast(r, Elem::Data(d)))
        }
        other => panic!("math expansion of a non-float register {x} of type {other}"),
    }
}

/// Emission helpers for one float type and shape.
struct Math<'b> {
    b: &'b mut Builder,
    /// The float type of the operand and result.
    ty: Ty,
    /// Its dtype, f32 or f64.
    dtype: DType,
    /// The integer element of the same width (i32 or index).
    int: Elem,
}

impl<'b> Math<'b> {
    fn new(b: &'b mut Builder, ty: Ty) -> Math<'b> {
        let (dtype, int) = match ty.elem {
            Elem::Data(DType::F32) => (DType::F32, Elem::I32),
            _ => (DType::F64, Elem::Index),
        };
        Math { b, ty, dtype, int }
    }

    fn f64(&self) -> bool {
        self.dtype == DType::F64
    }

    fn splat(&mut self, scalar: Reg) -> Reg {
        match self.ty.lanes {
            Some(l) => self.b.emit(Op::Splat(scalar, l)),
            None => scalar,
        }
    }

    /// A float constant in the operand's shape.
    fn fc(&mut self, v: f64) -> Reg {
        let c = self.b.emit(Op::Const(Const::Float(v, self.dtype)));
        self.splat(c)
    }

    /// A float constant given by its f32 or f64 bit pattern.
    fn fbits(&mut self, bits32: u32, bits64: u64) -> Reg {
        let v = if self.f64() { f64::from_bits(bits64) } else { f64::from(f32::from_bits(bits32)) };
        self.fc(v)
    }

    /// An integer constant of the same-width integer type, in the operand's shape.
    fn ic(&mut self, v: i64) -> Reg {
        let c = self.b.emit(Op::Const(Const::Int(v, self.int)));
        self.splat(c)
    }

    fn bin(&mut self, op: BinOp, a: Reg, c: Reg) -> Reg {
        self.b.emit(Op::Bin(op, a, c))
    }

    fn fma(&mut self, a: Reg, m: Reg, c: Reg) -> Reg {
        self.b.emit(Op::Fma(a, m, c))
    }

    fn un(&mut self, op: UnOp, a: Reg) -> Reg {
        self.b.emit(Op::Un(op, a))
    }

    fn cmp(&mut self, op: CmpOp, a: Reg, c: Reg) -> Reg {
        self.b.emit(Op::Cmp(op, a, c))
    }

    fn select(&mut self, cond: Reg, a: Reg, c: Reg) -> Reg {
        self.b.emit(Op::Select(cond, a, c))
    }

    /// The integer value of `n`, an integral float with `|n| < 2^22`
    /// (f32) or `2^51` (f64), without a float-to-int conversion: adding
    /// `M = 1.5·2^23` (or `1.5·2^52`) is exact and puts `n` in the low bits
    /// of the sum, so `bits(n + M) - bits(M) = n`.
    ///
    /// A conversion would be exact too, but on RVV LLVM emits it as
    /// `vfcvt.rtz.x.f.v`, and QEMU 7.2 aborts (`decode_save_opc`
    /// assertion) when a floating-point instruction with dynamic rounding
    /// follows it in the same translation block: every candidate with a
    /// vectorized `exp` or `cos` and a scalar float operation after it
    /// crashed the emulator.
    fn integral_to_int(&mut self, n: Reg) -> Reg {
        let (magic, magic_bits) =
            if self.f64() { (6_755_399_441_055_744.0, 0x4338_0000_0000_0000) } else { (12_582_912.0, 0x4b40_0000) };
        let magic = self.fc(magic);
        let sum = self.bin(BinOp::Add, n, magic);
        let bits = self.b.emit(Op::Bitcast(sum, self.int));
        let magic_bits = self.ic(magic_bits);
        self.bin(BinOp::Sub, bits, magic_bits)
    }

    /// Horner evaluation `c[0] + t*(c[1] + t*(...))` with one fma per coefficient.
    fn horner(&mut self, t: Reg, coeffs: &[f64]) -> Reg {
        let (&last, rest) = coeffs.split_last().expect("polynomial has coefficients");
        let mut p = self.fc(last);
        for &c in rest.iter().rev() {
            let c = self.fc(c);
            p = self.fma(p, t, c);
        }
        p
    }

    /// `2^e` for an integer `e` whose biased exponent is a normal one.
    fn pow2(&mut self, e: Reg) -> Reg {
        let (bias, mant) = if self.f64() { (1023, 52) } else { (127, 23) };
        let bias = self.ic(bias);
        let biased = self.bin(BinOp::Add, e, bias);
        let mant = self.ic(mant);
        let bits = self.bin(BinOp::Shl, biased, mant);
        self.b.emit(Op::Bitcast(bits, self.ty.elem))
    }
}

/// `1/k!` for k = 0..=7, rounded to f32.
const EXP_F32: [f32; 8] = [1.0, 1.0, 0.5, 0.16666667, 0.041666668, 0.008333334, 0.0013888889, 0.0001984127];

/// `1/k!` for k = 0..=13.
const EXP_F64: [f64; 14] = [
    1.0,
    1.0,
    0.5,
    0.16666666666666666,
    0.041666666666666664,
    0.008333333333333333,
    0.001388888888888889,
    0.0001984126984126984,
    2.48015873015873e-05,
    2.7557319223985893e-06,
    2.755731922398589e-07,
    2.505210838544172e-08,
    2.08767569878681e-09,
    1.6059043836821613e-10,
];

fn exp_f(m: &mut Math<'_>, x: Reg) -> Reg {
    let wide = m.f64();
    // n = roundeven(x * log2(e))
    let log2e = m.fc(std::f64::consts::LOG2_E);
    let t = m.bin(BinOp::Mul, x, log2e);
    let n = m.un(UnOp::RoundEven, t);
    // r = x - n*ln2, with ln2 = hi + lo; hi has trailing zero bits so that
    // n*hi is exact and x - n*hi cancels exactly.
    let neg_ln2_hi = m.fbits(0xbf31_8000, 0xbfe6_2e42_fee0_0000);
    let neg_ln2_lo = m.fbits(0x395e_8083, 0xbdea_39ef_3579_3c76);
    let r = m.fma(n, neg_ln2_hi, x);
    let r = m.fma(n, neg_ln2_lo, r);
    let coeffs: Vec<f64> = if wide { EXP_F64.to_vec() } else { EXP_F32.iter().map(|&c| f64::from(c)).collect() };
    let p = m.horner(r, &coeffs);
    // 2^n as two normal powers of two; the clamp keeps both halves in the
    // normal exponent range (results beyond it are selected away below).
    let bound = if wide { 2000.0 } else { 200.0 };
    let (lo, hi) = (m.fc(-bound), m.fc(bound));
    let n = m.bin(BinOp::Max, n, lo);
    let n = m.bin(BinOp::Min, n, hi);
    let ni = m.integral_to_int(n);
    let one = m.ic(1);
    let n1 = m.bin(BinOp::Shr, ni, one);
    let n2 = m.bin(BinOp::Sub, ni, n1);
    let s1 = m.pow2(n1);
    let s2 = m.pow2(n2);
    let y = m.bin(BinOp::Mul, p, s1);
    let y = m.bin(BinOp::Mul, y, s2);
    // Far outside the finite range the reduction is meaningless: saturate.
    // Ordered comparisons are false for NaN, which therefore propagates.
    let (under, over) = if wide { (-746.0, 710.0) } else { (-110.0, 100.0) };
    let over = m.fc(over);
    let inf = m.fc(f64::INFINITY);
    let is_over = m.cmp(CmpOp::Lt, over, x);
    let y = m.select(is_over, inf, y);
    let under = m.fc(under);
    let zero = m.fc(0.0);
    let is_under = m.cmp(CmpOp::Lt, x, under);
    m.select(is_under, zero, y)
}

/// Coefficients of `(sin(r) - r) / r^3` in `r^2`, rounded to f32.
const SIN_F32: [f32; 4] = [-0.16666667, 0.008333334, -0.0001984127, 2.7557319e-06];
/// Coefficients of `(cos(r) - 1) / r^2` in `r^2`, rounded to f32.
const COS_F32: [f32; 6] = [-0.5, 0.041666668, -0.0013888889, 2.4801588e-05, -2.755732e-07, 2.0876756e-09];
/// Coefficients of `(sin(r) - r) / r^3` in `r^2`.
const SIN_F64: [f64; 9] = [
    -0.16666666666666666,
    0.008333333333333333,
    -0.0001984126984126984,
    2.7557319223985893e-06,
    -2.505210838544172e-08,
    1.6059043836821613e-10,
    -7.647163731819816e-13,
    2.8114572543455206e-15,
    -8.22063524662433e-18,
];
/// Coefficients of `(cos(r) - 1) / r^2` in `r^2`.
const COS_F64: [f64; 10] = [
    -0.5,
    0.041666666666666664,
    -0.001388888888888889,
    2.48015873015873e-05,
    -2.755731922398589e-07,
    2.08767569878681e-09,
    -1.1470745597729725e-11,
    4.779477332387385e-14,
    -1.5619206968586225e-16,
    4.110317623312165e-19,
];

fn cos_f(m: &mut Math<'_>, x: Reg) -> Reg {
    let wide = m.f64();
    // k = roundeven(x * 2/pi), r = x - k*pi/2 with pi/2 split into parts.
    let two_over_pi = m.fc(std::f64::consts::FRAC_2_PI);
    let t = m.bin(BinOp::Mul, x, two_over_pi);
    let k = m.un(UnOp::RoundEven, t);
    // Negated parts of pi/2: each is exact, their sum matches pi/2 to
    // about 75 (f32) or 215 (f64) bits. The first product cancels exactly.
    let parts: &[(u32, u64)] = if wide {
        &[
            (0, 0xbff9_21fb_5444_2d18),
            (0, 0xbc91_a626_3314_5c07),
            (0, 0x391f_1976_b7ed_8fbc),
            (0, 0xb5b4_cf98_e804_177d),
        ]
    } else {
        &[(0xbfc9_0fdb, 0), (0x333b_bd2e, 0), (0x26f7_2ced, 0)]
    };
    let mut r = x;
    for &(b32, b64) in parts {
        let p = m.fbits(b32, b64);
        r = m.fma(k, p, r);
    }
    // If the reduction broke down (|x| far beyond its range) use r = 0 so the
    // result stays in [-1, 1]; the ordered comparison keeps NaN.
    let abs_r = m.un(UnOp::Abs, r);
    let limit = m.fc(2.0);
    let broken = m.cmp(CmpOp::Lt, limit, abs_r);
    let zero = m.fc(0.0);
    let r = m.select(broken, zero, r);
    let z = m.bin(BinOp::Mul, r, r);
    // sin(r) = r + r^3 * S(z), cos(r) = 1 + z * C(z)
    let (sin_c, cos_c): (Vec<f64>, Vec<f64>) = if wide {
        (SIN_F64.to_vec(), COS_F64.to_vec())
    } else {
        (SIN_F32.iter().map(|&c| f64::from(c)).collect(), COS_F32.iter().map(|&c| f64::from(c)).collect())
    };
    let s = m.horner(z, &sin_c);
    let r3 = m.bin(BinOp::Mul, r, z);
    let sin = m.fma(r3, s, r);
    let c = m.horner(z, &cos_c);
    let one = m.fc(1.0);
    let cos = m.fma(z, c, one);
    // Quadrant q = k mod 4: cos, -sin, -cos, sin. `k - 4·roundeven(k/4)`
    // is exact (in -2..=2) and congruent to k mod 4 at any size of k.
    let quarter = m.fc(0.25);
    let k4 = m.bin(BinOp::Mul, k, quarter);
    let k4 = m.un(UnOp::RoundEven, k4);
    let neg_four = m.fc(-4.0);
    let q = m.fma(k4, neg_four, k);
    let ki = m.integral_to_int(q);
    let (i1, i2) = (m.ic(1), m.ic(2));
    let q_odd = m.bin(BinOp::And, ki, i1);
    let use_sin = m.cmp(CmpOp::Eq, q_odd, i1);
    let q1 = m.bin(BinOp::Add, ki, i1);
    let q1_bit = m.bin(BinOp::And, q1, i2);
    let negate = m.cmp(CmpOp::Eq, q1_bit, i2);
    let v = m.select(use_sin, sin, cos);
    let neg_v = m.un(UnOp::Neg, v);
    m.select(negate, neg_v, v)
}

//! bf16 in LLVM IR: a storage type held as `i16` bits, converted with integer operations.
//!
//! LLVM 19 cannot select every `bfloat` operation on every shipped target (its
//! own loop vectorizer turns a scalar bf16 load into a fixed-length masked
//! `bfloat` load that the SVE fixed-length lowering cannot select on
//! neoverse-v1, and the shipped RVV target cannot select a scalable `bfloat`
//! load widened to f32). bf16 registers and buffers are therefore `i16` in
//! the IR, and the conversions are integer operations every backend compiles:
//!
//! - bf16 to f32: the bits shifted into the upper half of an f32 (exact);
//! - f32 to bf16: rounded to nearest, ties to even, on the bits (NaN stays a
//!   quiet NaN, overflow gives infinity, subnormals round like normals
//!   because f32 and bf16 share the exponent range);
//! - f64 to bf16: first rounded to f32 *to odd*, so that the rounding to bf16
//!   is the only one (as in the interpreter);
//! - f16 is widened to f32 and i8 or i32 converted to f64 (both exact)
//!   before that; bf16 to other types goes through f32.
//!
//! Arithmetic, comparisons and reductions on bf16 registers are rejected
//! with [`LlvmError::Unsupported`] (workloads convert bf16 to f32 first). The
//! SME widening outer product reinterprets the bits as `bfloat` at the call.

use super::emit::{Emitter, NONAME};
use super::LlvmError;
use crate::vprog::{Elem, Op, Program, Stmt, Ty};
use llvm_sys::core::*;
use llvm_sys::prelude::*;
use llvm_sys::{LLVMIntPredicate as IP, LLVMRealPredicate as RP};
use scaletune_space::DType;

type V = LLVMValueRef;

/// The bf16 element.
pub(crate) const BF16: Elem = Elem::Data(DType::BF16);

/// Rejects the operations on bf16 registers that have no lowering (anything
/// but moves, loads, stores, selects, splats, interleaves and conversions;
/// index to bf16 conversions are rejected too, their f64 step could round).
pub(crate) fn check_ops(prog: &Program, target: &str) -> Result<(), LlvmError> {
    check_body(prog, target, &prog.body)
}

fn check_body(prog: &Program, target: &str, body: &[Stmt]) -> Result<(), LlvmError> {
    for s in body {
        match s {
            Stmt::Assign { op, .. } => {
                let operand = match op {
                    Op::Bin(_, x, _) | Op::Un(_, x) | Op::Fma(x, _, _) | Op::Cmp(_, x, _) | Op::Reduce(_, x) => Some((
                        *x,
                        "arithmetic, comparisons and reductions on bf16 are not compiled; convert to f32 first",
                    )),
                    Op::Bitcast(x, e) if *e == BF16 || prog.ty(*x).elem == BF16 => {
                        Some((*x, "bitcasts to or from bf16 are not compiled"))
                    }
                    Op::Cast(x, e) if *e == BF16 && prog.ty(*x).elem == Elem::Index => {
                        Some((*x, "conversions of index values to bf16 are not compiled"))
                    }
                    _ => None,
                };
                if let Some((x, reason)) = operand {
                    let ty = prog.ty(x);
                    let to_bf16 = matches!(op, Op::Bitcast(_, e) | Op::Cast(_, e) if *e == BF16);
                    if ty.elem == BF16 || to_bf16 {
                        return Err(LlvmError::Unsupported {
                            kernel: prog.name.clone(),
                            target: target.to_string(),
                            ty: ty.to_string(),
                            reason: reason.to_string(),
                        });
                    }
                }
            }
            Stmt::Loop { body, .. } => check_body(prog, target, body)?,
            Stmt::If { then_body, else_body, .. } => {
                check_body(prog, target, then_body)?;
                check_body(prog, target, else_body)?;
            }
            _ => {}
        }
    }
    Ok(())
}

impl Emitter<'_> {
    /// An integer constant of `bits` bits in the shape of `like` (a splat for vectors).
    fn int_const_like(&self, like: Ty, bits: u32, v: u64) -> V {
        // SAFETY: an integer type of this context and a constant of it.
        unsafe {
            let ity = LLVMIntTypeInContext(self.ctx, bits);
            let c = LLVMConstInt(ity, v, 0);
            match like.lanes {
                None => c,
                Some(l) => {
                    let vec_ty = self.t.vector(ity, l);
                    let mask_ty = self.t.vector(self.t.i32, l);
                    let poison = LLVMGetPoison(vec_ty);
                    let ins = LLVMBuildInsertElement(self.b, poison, c, self.t.i64_const(0), NONAME);
                    LLVMBuildShuffleVector(self.b, ins, poison, LLVMConstNull(mask_ty), NONAME)
                }
            }
        }
    }

    /// The `i<bits>` type in the shape of `like`.
    fn int_ty_like(&self, like: Ty, bits: u32) -> LLVMTypeRef {
        // SAFETY: creating an integer type of this context.
        let ity = unsafe { LLVMIntTypeInContext(self.ctx, bits) };
        match like.lanes {
            None => ity,
            Some(l) => self.t.vector(ity, l),
        }
    }

    /// Converts `v` of type `from` (shape of `shape`) to bf16 bits.
    pub(crate) fn narrow_to_bf16(&self, v: V, from: Elem, shape: Ty) -> Result<V, LlvmError> {
        let f32_ty = self.t.ty(shape.with_elem(Elem::F32));
        let f64_ty = self.t.ty(shape.with_elem(Elem::F64));
        // SAFETY: every instruction below takes operands of the shape of `shape`.
        let single = unsafe {
            match from {
                Elem::Data(DType::F32) => v,
                Elem::Data(DType::F16) => LLVMBuildFPExt(self.b, v, f32_ty, NONAME),
                Elem::Data(DType::F64) => self.f64_to_f32_odd(v, shape)?,
                Elem::Data(DType::I8 | DType::I32) => {
                    let wide = LLVMBuildSIToFP(self.b, v, f64_ty, NONAME);
                    self.f64_to_f32_odd(wide, shape)?
                }
                Elem::Data(DType::BF16) => return Ok(v),
                Elem::Index | Elem::Bool => {
                    return Err(LlvmError::InvalidProgram(format!("conversion of {from} to bf16")));
                }
            }
        };
        Ok(self.f32_to_bf16(single, shape))
    }

    /// f32 to bf16 bits, rounded to nearest even; NaN becomes a quiet NaN.
    fn f32_to_bf16(&self, v: V, shape: Ty) -> V {
        let b = self.b;
        let i32_ty = self.int_ty_like(shape, 32);
        let i16_ty = self.int_ty_like(shape, 16);
        let c = |x: u64| self.int_const_like(shape, 32, x);
        // SAFETY: `v` is f32 of `shape`; all integer operands are i32 of `shape`.
        unsafe {
            let bits = LLVMBuildBitCast(b, v, i32_ty, NONAME);
            let hi = LLVMBuildLShr(b, bits, c(16), NONAME);
            let lsb = LLVMBuildAnd(b, hi, c(1), NONAME);
            let biased = LLVMBuildAdd(b, LLVMBuildAdd(b, bits, c(0x7fff), NONAME), lsb, NONAME);
            let rounded = LLVMBuildLShr(b, biased, c(16), NONAME);
            let quiet = LLVMBuildOr(b, hi, c(0x40), NONAME);
            let nan = LLVMBuildFCmp(b, RP::LLVMRealUNO, v, v, NONAME);
            let r = LLVMBuildSelect(b, nan, quiet, rounded, NONAME);
            LLVMBuildTrunc(b, r, i16_ty, NONAME)
        }
    }

    /// f64 to f32 rounded to odd: an inexact finite result whose last bit is
    /// even moves one ulp toward `v`.
    fn f64_to_f32_odd(&self, v: V, shape: Ty) -> Result<V, LlvmError> {
        let b = self.b;
        let f32_ty = self.t.ty(shape.with_elem(Elem::F32));
        let f64_ty = self.t.ty(shape.with_elem(Elem::F64));
        let i32_ty = self.int_ty_like(shape, 32);
        let c = |x: u64| self.int_const_like(shape, 32, x);
        // SAFETY: operands are f64, f32 and i32 of `shape`.
        unsafe {
            let single = LLVMBuildFPTrunc(b, v, f32_ty, NONAME);
            let back = LLVMBuildFPExt(b, single, f64_ty, NONAME);
            let inexact = LLVMBuildFCmp(b, RP::LLVMRealONE, back, v, NONAME);
            let bits = LLVMBuildBitCast(b, single, i32_ty, NONAME);
            let even = LLVMBuildICmp(b, IP::LLVMIntEQ, LLVMBuildAnd(b, bits, c(1), NONAME), c(0), NONAME);
            let exp = LLVMBuildAnd(b, bits, c(0x7f80_0000), NONAME);
            let finite = LLVMBuildICmp(b, IP::LLVMIntNE, exp, c(0x7f80_0000), NONAME);
            let step = LLVMBuildAnd(b, LLVMBuildAnd(b, inexact, even, NONAME), finite, NONAME);
            let abs_v = self.unary_intrinsic("llvm.fabs", v)?;
            let abs_back = self.unary_intrinsic("llvm.fabs", back)?;
            let away = LLVMBuildFCmp(b, RP::LLVMRealOGT, abs_v, abs_back, NONAME);
            let delta = LLVMBuildSelect(b, away, c(1), c(u64::from(u32::MAX)), NONAME);
            let stepped = LLVMBuildAdd(b, bits, delta, NONAME);
            let out = LLVMBuildSelect(b, step, stepped, bits, NONAME);
            Ok(LLVMBuildBitCast(b, out, f32_ty, NONAME))
        }
    }

    /// bf16 bits of `shape` to `to` (f32 exactly; others through f32).
    pub(crate) fn widen_bf16(&self, v: V, to: Elem, shape: Ty) -> Result<V, LlvmError> {
        let b = self.b;
        let f32_shape = shape.with_elem(Elem::F32);
        // SAFETY: `v` is i16 of `shape`; the results have the shape of `shape`.
        let single = unsafe {
            let wide = LLVMBuildZExt(b, v, self.int_ty_like(shape, 32), NONAME);
            let high = LLVMBuildShl(b, wide, self.int_const_like(shape, 32, 16), NONAME);
            LLVMBuildBitCast(b, high, self.t.ty(f32_shape), NONAME)
        };
        // SAFETY: f32 of `shape` to the destination type of the same shape.
        unsafe {
            match to {
                Elem::Data(DType::F32) => Ok(single),
                Elem::Data(DType::F64) => Ok(LLVMBuildFPExt(b, single, self.t.ty(shape.with_elem(to)), NONAME)),
                Elem::Data(DType::F16) => Ok(LLVMBuildFPTrunc(b, single, self.t.ty(shape.with_elem(to)), NONAME)),
                Elem::Data(DType::BF16) => Ok(v),
                Elem::Data(DType::I8 | DType::I32) | Elem::Index => self.float_to_int(single, f32_shape, to),
                Elem::Bool => Err(LlvmError::InvalidProgram("conversion of bf16 to bool".into())),
            }
        }
    }

    /// A bf16 constant: the bits of `x` rounded once to bf16.
    pub(crate) fn bf16_const(&self, x: f64) -> V {
        let bits = scaletune_space::data::bf16_from_f64(x).to_bits();
        // SAFETY: an i16 constant of this context.
        unsafe { LLVMConstInt(self.t.elem(BF16), u64::from(bits), 0) }
    }

    /// Reinterprets i16 bits of `shape` as `bfloat` (for the SME intrinsics).
    pub(crate) fn as_bfloat(&self, v: V, shape: Ty) -> V {
        // SAFETY: same width, same shape.
        unsafe {
            let bf = LLVMBFloatTypeInContext(self.ctx);
            let ty = match shape.lanes {
                None => bf,
                Some(l) => self.t.vector(bf, l),
            };
            LLVMBuildBitCast(self.b, v, ty, NONAME)
        }
    }
}

//! Calls to LLVM 19 intrinsics (vscale, step vectors, lane masks, masked memory, reductions, math).
//!
//! Intrinsics are looked up by their base name (`llvm.masked.load`) and
//! declared for the overload types given, which yields the mangled name
//! (`llvm.masked.load.nxv4f32.p0`). Names are those of LLVM 19; for example
//! the step vector is still `llvm.experimental.stepvector`.

use super::emit::{Emitter, NONAME};
use super::LlvmError;
use llvm_sys::core::*;
use llvm_sys::prelude::*;
use llvm_sys::LLVMTypeKind;
use std::os::raw::c_uint;

/// The step-vector intrinsic of LLVM 19 (renamed `llvm.stepvector` in LLVM 20).
pub(crate) const STEPVECTOR: &str = "llvm.experimental.stepvector";

impl Emitter<'_> {
    /// Calls intrinsic `name` declared for `overloads`, with `args`.
    pub(crate) fn intrinsic(
        &self,
        name: &str,
        overloads: &[LLVMTypeRef],
        args: &[LLVMValueRef],
    ) -> Result<LLVMValueRef, LlvmError> {
        let mut overloads = overloads.to_vec();
        let mut args = args.to_vec();
        // SAFETY: the name is passed with its length; the overload types and
        // arguments belong to this context and match the intrinsic signature
        // (each caller below passes the documented operand list).
        unsafe {
            let id = LLVMLookupIntrinsicID(name.as_ptr().cast(), name.len());
            if id == 0 {
                return Err(LlvmError::Internal(format!("LLVM has no intrinsic `{name}`")));
            }
            let decl = LLVMGetIntrinsicDeclaration(self.module, id, overloads.as_mut_ptr(), overloads.len());
            let fn_ty = LLVMIntrinsicGetType(self.ctx, id, overloads.as_mut_ptr(), overloads.len());
            Ok(LLVMBuildCall2(self.b, fn_ty, decl, args.as_mut_ptr(), args.len() as c_uint, NONAME))
        }
    }

    /// The runtime vscale as an i64: `llvm.vscale.i64` on scalable targets,
    /// the constant vscale of a fixed-length target otherwise.
    pub(crate) fn vscale(&self) -> Result<LLVMValueRef, LlvmError> {
        let caps = &self.target.caps;
        if !caps.scalable {
            let v = caps.vscale_values.first().copied().unwrap_or(1);
            return Ok(self.t.i64_const(i64::from(v)));
        }
        self.intrinsic("llvm.vscale", &[self.t.i64], &[])
    }

    /// `llvm.experimental.stepvector` of an integer vector type.
    pub(crate) fn step_vector(&self, vec_ty: LLVMTypeRef) -> Result<LLVMValueRef, LlvmError> {
        self.intrinsic(STEPVECTOR, &[vec_ty], &[])
    }

    /// `llvm.get.active.lane.mask(base, bound)`: lane `i` is `base + i < bound`, unsigned.
    pub(crate) fn active_lane_mask(
        &self,
        mask_ty: LLVMTypeRef,
        base: LLVMValueRef,
        bound: LLVMValueRef,
    ) -> Result<LLVMValueRef, LlvmError> {
        self.intrinsic("llvm.get.active.lane.mask", &[mask_ty, self.t.i64], &[base, bound])
    }

    /// `llvm.masked.load(ptr, align, mask, zeroinitializer)`.
    pub(crate) fn masked_load(
        &self,
        vec_ty: LLVMTypeRef,
        ptr: LLVMValueRef,
        align: u32,
        mask: LLVMValueRef,
    ) -> Result<LLVMValueRef, LlvmError> {
        if let Some(sc_ty) = self.sve_container(vec_ty) {
            let sc_mask = self.to_scalable_mask(mask)?;
            // SAFETY: `sc_ty` is a vector type of this context.
            let zero = unsafe { LLVMConstNull(sc_ty) };
            let v = self.intrinsic(
                "llvm.masked.load",
                &[sc_ty, self.t.ptr],
                &[ptr, self.t.i32_const(align as i32), sc_mask, zero],
            )?;
            return self.intrinsic("llvm.vector.extract", &[vec_ty, sc_ty], &[v, self.t.i64_const(0)]);
        }
        // SAFETY: `vec_ty` is a vector type of this context.
        let zero = unsafe { LLVMConstNull(vec_ty) };
        self.intrinsic("llvm.masked.load", &[vec_ty, self.t.ptr], &[ptr, self.t.i32_const(align as i32), mask, zero])
    }

    /// `llvm.masked.store(value, ptr, align, mask)`.
    pub(crate) fn masked_store(
        &self,
        value: LLVMValueRef,
        ptr: LLVMValueRef,
        align: u32,
        mask: LLVMValueRef,
    ) -> Result<(), LlvmError> {
        // SAFETY: `value` is a live value.
        let vec_ty = unsafe { LLVMTypeOf(value) };
        if let Some(sc_ty) = self.sve_container(vec_ty) {
            let (v, sc_mask) = (self.to_scalable(value)?, self.to_scalable_mask(mask)?);
            self.intrinsic(
                "llvm.masked.store",
                &[sc_ty, self.t.ptr],
                &[v, ptr, self.t.i32_const(align as i32), sc_mask],
            )?;
            return Ok(());
        }
        self.intrinsic(
            "llvm.masked.store",
            &[vec_ty, self.t.ptr],
            &[value, ptr, self.t.i32_const(align as i32), mask],
        )?;
        Ok(())
    }

    /// The scalable vector type with as many lanes (at vscale 1) as the
    /// fixed-length `vec_ty`, when masked memory operations (loads, stores,
    /// gathers, scatters) on `vec_ty` go through SVE: on an SVE target
    /// compiled for a 128-bit vector length (`vscale_range(1, 1)`), where
    /// fixed-length vectors are NEON, which has no masked memory operations
    /// (LLVM would split them into a branch per lane). Only for 32- and
    /// 64-bit elements filling whole 128-bit registers, a power of two of
    /// them (the scalable types LLVM can legalize).
    fn sve_container(&self, vec_ty: LLVMTypeRef) -> Option<LLVMTypeRef> {
        let t = &self.target;
        let sve = t.features.split(',').any(|f| f == "+sve");
        if !(sve && t.caps.scalable && t.caps.vscale_values == [1]) {
            return None;
        }
        // SAFETY: `vec_ty` is a type of this context; only queried.
        unsafe {
            if LLVMGetTypeKind(vec_ty) != LLVMTypeKind::LLVMVectorTypeKind {
                return None;
            }
            let (lanes, elem) = (LLVMGetVectorSize(vec_ty), LLVMGetElementType(vec_ty));
            let bits = match LLVMGetTypeKind(elem) {
                LLVMTypeKind::LLVMFloatTypeKind => 32,
                LLVMTypeKind::LLVMDoubleTypeKind => 64,
                LLVMTypeKind::LLVMIntegerTypeKind => LLVMGetIntTypeWidth(elem),
                _ => return None,
            };
            ((bits == 32 || bits == 64) && lanes.is_power_of_two() && (lanes * bits).is_multiple_of(128))
                .then(|| LLVMScalableVectorType(elem, lanes))
        }
    }

    /// A fixed-length vector `<n x T>` as the first lanes of a scalable
    /// `<vscale x n x T>` (all of them at vscale 1; the others undefined).
    fn to_scalable(&self, v: LLVMValueRef) -> Result<LLVMValueRef, LlvmError> {
        self.insert_into_scalable(v, false)
    }

    /// A fixed-length `<n x i1>` mask as the scalable `<vscale x n x i1>`
    /// (its first `n` lanes; the others, absent at vscale 1, are false).
    fn to_scalable_mask(&self, mask: LLVMValueRef) -> Result<LLVMValueRef, LlvmError> {
        self.insert_into_scalable(mask, true)
    }

    /// `llvm.vector.insert` of fixed-length `v` at lane 0 of a scalable
    /// vector of the same element type and minimum length, whose other
    /// lanes are zero (`zeroed`) or undefined.
    fn insert_into_scalable(&self, v: LLVMValueRef, zeroed: bool) -> Result<LLVMValueRef, LlvmError> {
        // SAFETY: `v` is a live fixed-length vector.
        let (ty, sc_ty) = unsafe {
            let ty = LLVMTypeOf(v);
            (ty, LLVMScalableVectorType(LLVMGetElementType(ty), LLVMGetVectorSize(ty)))
        };
        // SAFETY: `sc_ty` is a vector type of this context.
        let rest = unsafe {
            if zeroed {
                LLVMConstNull(sc_ty)
            } else {
                LLVMGetUndef(sc_ty)
            }
        };
        self.intrinsic("llvm.vector.insert", &[sc_ty, ty], &[rest, v, self.t.i64_const(0)])
    }

    /// `llvm.masked.gather(ptrs, align, mask, zeroinitializer)`.
    pub(crate) fn masked_gather(
        &self,
        vec_ty: LLVMTypeRef,
        ptrs: LLVMValueRef,
        align: u32,
        mask: LLVMValueRef,
    ) -> Result<LLVMValueRef, LlvmError> {
        // SAFETY: `vec_ty` is a vector type and `ptrs` a live value.
        let (zero, ptrs_ty) = unsafe { (LLVMConstNull(vec_ty), LLVMTypeOf(ptrs)) };
        if let Some(sc_ty) = self.sve_container(vec_ty) {
            let (sc_ptrs, sc_mask) = (self.to_scalable(ptrs)?, self.to_scalable_mask(mask)?);
            // SAFETY: `sc_ty` is a vector type of this context and `sc_ptrs` a live value.
            let (sc_zero, sc_ptrs_ty) = unsafe { (LLVMConstNull(sc_ty), LLVMTypeOf(sc_ptrs)) };
            let v = self.intrinsic(
                "llvm.masked.gather",
                &[sc_ty, sc_ptrs_ty],
                &[sc_ptrs, self.t.i32_const(align as i32), sc_mask, sc_zero],
            )?;
            return self.intrinsic("llvm.vector.extract", &[vec_ty, sc_ty], &[v, self.t.i64_const(0)]);
        }
        self.intrinsic("llvm.masked.gather", &[vec_ty, ptrs_ty], &[ptrs, self.t.i32_const(align as i32), mask, zero])
    }

    /// `llvm.masked.scatter(value, ptrs, align, mask)`; overlapping lanes are
    /// written from the lowest lane to the highest.
    pub(crate) fn masked_scatter(
        &self,
        value: LLVMValueRef,
        ptrs: LLVMValueRef,
        align: u32,
        mask: LLVMValueRef,
    ) -> Result<(), LlvmError> {
        // SAFETY: both are live values.
        let (vec_ty, ptrs_ty) = unsafe { (LLVMTypeOf(value), LLVMTypeOf(ptrs)) };
        if self.sve_container(vec_ty).is_some() {
            let (v, p, m) = (self.to_scalable(value)?, self.to_scalable(ptrs)?, self.to_scalable_mask(mask)?);
            // SAFETY: both are live values.
            let (sc_ty, sc_ptrs_ty) = unsafe { (LLVMTypeOf(v), LLVMTypeOf(p)) };
            self.intrinsic("llvm.masked.scatter", &[sc_ty, sc_ptrs_ty], &[v, p, self.t.i32_const(align as i32), m])?;
            return Ok(());
        }
        self.intrinsic(
            "llvm.masked.scatter",
            &[vec_ty, ptrs_ty],
            &[value, ptrs, self.t.i32_const(align as i32), mask],
        )?;
        Ok(())
    }

    /// A one-operand intrinsic overloaded on its operand type (`llvm.sqrt`,
    /// `llvm.floor`, `llvm.vector.reduce.fmax`, ...).
    pub(crate) fn unary_intrinsic(&self, name: &str, v: LLVMValueRef) -> Result<LLVMValueRef, LlvmError> {
        // SAFETY: `v` is a live value.
        let ty = unsafe { LLVMTypeOf(v) };
        self.intrinsic(name, &[ty], &[v])
    }

    /// A two-operand intrinsic overloaded on the operand type (`llvm.minnum`, `llvm.smax`, ...).
    pub(crate) fn binary_intrinsic(
        &self,
        name: &str,
        a: LLVMValueRef,
        b: LLVMValueRef,
    ) -> Result<LLVMValueRef, LlvmError> {
        // SAFETY: `a` is a live value.
        let ty = unsafe { LLVMTypeOf(a) };
        self.intrinsic(name, &[ty], &[a, b])
    }

    /// `llvm.fma(a, b, c)`.
    pub(crate) fn fma(&self, a: LLVMValueRef, b: LLVMValueRef, c: LLVMValueRef) -> Result<LLVMValueRef, LlvmError> {
        // SAFETY: `a` is a live value.
        let ty = unsafe { LLVMTypeOf(a) };
        self.intrinsic("llvm.fma", &[ty], &[a, b, c])
    }

    /// `llvm.abs(v, false)`: integer absolute value, wrapping on the minimum.
    pub(crate) fn int_abs(&self, v: LLVMValueRef) -> Result<LLVMValueRef, LlvmError> {
        // SAFETY: `v` is a live value; i1 false is a constant.
        let (ty, no_poison) = unsafe { (LLVMTypeOf(v), LLVMConstInt(self.t.i1, 0, 0)) };
        self.intrinsic("llvm.abs", &[ty], &[v, no_poison])
    }

    /// `llvm.vector.reduce.fadd(-0.0, v)` with the `reassoc` flag: a sum in
    /// any association order.
    pub(crate) fn reduce_fadd(&self, v: LLVMValueRef, elem_ty: LLVMTypeRef) -> Result<LLVMValueRef, LlvmError> {
        // SAFETY: `elem_ty` is a floating-point type; `v` a live vector.
        unsafe {
            let start = LLVMConstReal(elem_ty, -0.0);
            let call = self.intrinsic("llvm.vector.reduce.fadd", &[LLVMTypeOf(v)], &[start, v])?;
            LLVMSetFastMathFlags(call, llvm_sys::LLVMFastMathAllowReassoc);
            Ok(call)
        }
    }
}

//! SME: the ZA statements as LLVM 19's `llvm.aarch64.sme.*` intrinsics, and
//! the streaming-mode and ZA-state attributes of the kernel.
//!
//! Streaming code (`VectorCaps::has_sme`, the `sme` vector kind) gets
//! `"aarch64_pstate_sm_body"`: the function itself enters streaming mode
//! (`smstart sm`) and leaves it before returning, so its callers (the C
//! driver) run in normal mode. A kernel that uses ZA also gets
//! `"aarch64_new_za"`: it commits a pending lazy save of its caller's ZA
//! (`__arm_tpidr2_save`, shipped in `runtime/scaletune_sme_abi.S`), enables
//! ZA and zeroes it on entry, and disables it on return.

use super::emit::{Emitter, NONAME};
use super::LlvmError;
use crate::vprog::{BufId, Elem, Lanes, Reg, Ty};
use llvm_sys::core::*;
use llvm_sys::prelude::*;
use scaletune_space::DType;

/// The function attribute that runs a function body in streaming mode.
pub(crate) const STREAMING_BODY: &str = "aarch64_pstate_sm_body";
/// The function attribute that gives a function a fresh ZA state.
pub(crate) const NEW_ZA: &str = "aarch64_new_za";

impl Emitter<'_> {
    /// The predicate of an optional mask register: all lanes of one f32
    /// streaming vector when there is none.
    fn za_pred(&self, mask: Option<Reg>) -> LLVMValueRef {
        match mask {
            Some(m) => self.load_reg(m),
            // SAFETY: a scalable <vscale x 4 x i1> type of this context.
            None => unsafe { LLVMConstAllOnes(self.t.ty(Ty::mask(Lanes::scalable(4)))) },
        }
    }

    fn slice_index(&self, row: Reg) -> LLVMValueRef {
        // SAFETY: `row` holds an i64 of this function.
        unsafe { LLVMBuildTrunc(self.b, self.load_reg(row), self.t.i32, NONAME) }
    }

    /// `mov z, p/m, za<tile>v.s[slice, 0]`: one vertical slice as a vector of type `ty`.
    pub(crate) fn za_read_vertical(&self, tile: u8, slice: Reg, ty: Ty) -> Result<LLVMValueRef, LlvmError> {
        let vt = self.t.ty(ty);
        // SAFETY: constants of types of this context.
        let (zero, all) = unsafe { (LLVMConstNull(vt), LLVMConstAllOnes(self.t.ty(Ty::mask(Lanes::scalable(4))))) };
        let args = [zero, all, self.t.i32_const(i32::from(tile)), self.slice_index(slice)];
        self.intrinsic("llvm.aarch64.sme.read.vert", &[vt], &args)
    }

    /// `zero {za<tile>.s}`: the 32-bit tile `t` is the 64-bit tiles `t` and `t + 4`.
    pub(crate) fn za_zero(&self, tile: u8) -> Result<(), LlvmError> {
        let mask = (1i32 << tile) | (1i32 << (tile + 4));
        self.intrinsic("llvm.aarch64.sme.zero", &[], &[self.t.i32_const(mask)])?;
        Ok(())
    }

    /// `ld1w {za<tile>h.s[row, 0]}` or `st1w` of one horizontal slice.
    pub(crate) fn za_slice(
        &self,
        store: bool,
        tile: u8,
        row: Reg,
        buf: BufId,
        base: Reg,
        mask: Option<Reg>,
    ) -> Result<(), LlvmError> {
        let name = if store { "llvm.aarch64.sme.st1w.horiz" } else { "llvm.aarch64.sme.ld1w.horiz" };
        let p = self.elem_ptr(buf, self.load_reg(base), true);
        let args = [self.za_pred(mask), p, self.t.i32_const(i32::from(tile)), self.slice_index(row)];
        self.intrinsic(name, &[], &args)?;
        Ok(())
    }

    /// `fmopa za<tile>.s, pa/m, pb/m, a, b` on f32 vectors; on f16 vectors
    /// the widening `fmopa` (`llvm.aarch64.sme.mopa.wide`), on bf16 vectors
    /// the widening `bfmopa` (the same intrinsic on the bits reinterpreted
    /// as `bfloat`), on i8 vectors
    /// `smopa` (`llvm.aarch64.sme.smopa.wide`), both into 32-bit tiles.
    pub(crate) fn mopa(
        &self,
        tile: u8,
        a: Reg,
        b: Reg,
        a_mask: Option<Reg>,
        b_mask: Option<Reg>,
    ) -> Result<(), LlvmError> {
        let ty = self.prog.ty(a);
        let name = match ty.elem {
            Elem::F32 => "llvm.aarch64.sme.mopa",
            Elem::Data(DType::F16 | DType::BF16) => "llvm.aarch64.sme.mopa.wide",
            Elem::Data(DType::I8) => "llvm.aarch64.sme.smopa.wide",
            e => return Err(LlvmError::Internal(format!("outer product of {e} vectors"))),
        };
        let lanes = ty.lanes.ok_or_else(|| LlvmError::Internal("outer product of scalars".into()))?;
        let pred = |m: Option<Reg>| match m {
            Some(m) => self.load_reg(m),
            // SAFETY: a scalable mask type of this context.
            None => unsafe { LLVMConstAllOnes(self.t.ty(Ty::mask(lanes))) },
        };
        let (mut va, mut vb, mut op_ty) = (self.load_reg(a), self.load_reg(b), self.t.ty(ty));
        if ty.elem == Elem::Data(DType::BF16) {
            (va, vb) = (self.as_bfloat(va, ty), self.as_bfloat(vb, ty));
            // SAFETY: `va` is a live value.
            op_ty = unsafe { LLVMTypeOf(va) };
        }
        let args = [self.t.i32_const(i32::from(tile)), pred(a_mask), pred(b_mask), va, vb];
        self.intrinsic(name, &[op_ty], &args)?;
        Ok(())
    }
}

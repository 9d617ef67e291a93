//! Mapping of vector-program types to LLVM types, alignments and constants.

use crate::vprog::{Elem, Lanes, Ty};
use llvm_sys::core::*;
use llvm_sys::prelude::*;
use scaletune_space::DType;

/// The LLVM types used by one kernel, created once per context.
pub(crate) struct Types {
    pub(crate) void: LLVMTypeRef,
    pub(crate) i1: LLVMTypeRef,
    pub(crate) i8: LLVMTypeRef,
    pub(crate) i32: LLVMTypeRef,
    pub(crate) i64: LLVMTypeRef,
    pub(crate) f16: LLVMTypeRef,
    /// bf16 is held as its bits (see `bf16.rs`).
    pub(crate) bf16: LLVMTypeRef,
    pub(crate) f32: LLVMTypeRef,
    pub(crate) f64: LLVMTypeRef,
    pub(crate) ptr: LLVMTypeRef,
}

impl Types {
    /// Looks up the primitive types of `ctx`.
    pub(crate) fn new(ctx: LLVMContextRef) -> Types {
        // SAFETY: `ctx` is a live context; these calls only return its
        // uniqued primitive types.
        unsafe {
            Types {
                void: LLVMVoidTypeInContext(ctx),
                i1: LLVMInt1TypeInContext(ctx),
                i8: LLVMInt8TypeInContext(ctx),
                i32: LLVMInt32TypeInContext(ctx),
                i64: LLVMInt64TypeInContext(ctx),
                f16: LLVMHalfTypeInContext(ctx),
                bf16: LLVMInt16TypeInContext(ctx),
                f32: LLVMFloatTypeInContext(ctx),
                f64: LLVMDoubleTypeInContext(ctx),
                ptr: LLVMPointerTypeInContext(ctx, 0),
            }
        }
    }

    /// The LLVM type of one element: half/float/double/i8/i32, i16 (the
    /// bits) for bf16, i64 for indices, i1 for booleans.
    pub(crate) fn elem(&self, e: Elem) -> LLVMTypeRef {
        match e {
            Elem::Data(DType::F16) => self.f16,
            Elem::Data(DType::BF16) => self.bf16,
            Elem::Data(DType::F32) => self.f32,
            Elem::Data(DType::F64) => self.f64,
            Elem::Data(DType::I8) => self.i8,
            Elem::Data(DType::I32) => self.i32,
            Elem::Index => self.i64,
            Elem::Bool => self.i1,
        }
    }

    /// `<N x T>` or `<vscale x N x T>`.
    pub(crate) fn vector(&self, elem: LLVMTypeRef, lanes: Lanes) -> LLVMTypeRef {
        // SAFETY: `elem` is a valid element type of this context.
        unsafe {
            if lanes.scalable {
                LLVMScalableVectorType(elem, lanes.min)
            } else {
                LLVMVectorType(elem, lanes.min)
            }
        }
    }

    /// The LLVM type of a register type.
    pub(crate) fn ty(&self, t: Ty) -> LLVMTypeRef {
        match t.lanes {
            None => self.elem(t.elem),
            Some(l) => self.vector(self.elem(t.elem), l),
        }
    }

    /// A scalar integer constant of `ty`, wrapped to its width.
    pub(crate) fn const_int(&self, ty: LLVMTypeRef, v: i64) -> LLVMValueRef {
        // SAFETY: `ty` is an integer type of this context.
        unsafe { LLVMConstInt(ty, v as u64, 1) }
    }

    /// An `i64` constant.
    pub(crate) fn i64_const(&self, v: i64) -> LLVMValueRef {
        self.const_int(self.i64, v)
    }

    /// An `i32` constant.
    pub(crate) fn i32_const(&self, v: i32) -> LLVMValueRef {
        self.const_int(self.i32, i64::from(v))
    }
}

/// The natural alignment of one element in bytes (used on every memory access).
pub(crate) fn elem_align(e: Elem) -> u32 {
    match e {
        Elem::Data(d) => d.bytes() as u32,
        Elem::Index => 8,
        Elem::Bool => 1,
    }
}

/// Wraps an integer constant to the width of its element type, so that e.g.
/// `Const::Int(300, i8)` becomes 44 as wrapping arithmetic would give.
pub(crate) fn wrap_int(v: i64, e: Elem) -> i64 {
    match e {
        Elem::Data(DType::I8) => i64::from(v as i8),
        Elem::Data(DType::I32) => i64::from(v as i32),
        Elem::Bool => v & 1,
        _ => v,
    }
}

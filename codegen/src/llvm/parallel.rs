//! Outlining of parallel loops: a call to the thread-pool runtime, a context struct, and the body functions.
//!
//! `for var in start..end parallel { body }` (the k-th parallel loop of
//! kernel `K`, outermost ones only) becomes, in the kernel:
//!
//! ```text
//! ctx = { start, shared buffer pointers..., captured register values... }   ; on the kernel's stack
//! call scaletune_parallel_for(@K.par.k, &ctx, end - start)
//! ```
//!
//! `@K.par.k(ptr ctx, i64 begin, i64 end)` (internal, the kernel's function
//! attributes) unpacks the context and calls `@K.par.k.body(buffers...,
//! captures..., start + begin, start + end)`, an internal `alwaysinline`
//! function whose buffer parameters are `noalias` (the optimizer inlines it
//! into the unpacking function and keeps the no-alias facts as scoped
//! metadata). The body function gives every register the loop uses an alloca
//! of its own, stores the captured values into them, allocates the loop's
//! private local buffers once per call (per chunk), and runs the loop serially
//! over its range. Fixed-size captures travel in the struct by value; a
//! scalable vector cannot be a struct field, so it is copied into a stack slot
//! of the kernel whose address travels instead. Parallel loops nested in an
//! outlined body are emitted as serial loops (the runtime runs nested calls
//! serially anyway). What is captured, shared or private is decided in
//! `outline.rs`.

use super::emit::{Emitter, NONAME};
use super::outline::{self, ParallelPlan};
use super::LlvmError;
use crate::vprog::{LoopHint, Reg, Stmt};
use llvm_sys::core::*;
use llvm_sys::prelude::*;
use llvm_sys::{LLVMAttributeFunctionIndex, LLVMLinkage};
use std::ffi::CString;
use std::os::raw::c_uint;
use std::ptr;

/// The runtime entry point every parallel loop calls.
pub const PARALLEL_FOR: &str = "scaletune_parallel_for";

/// The state of the function being emitted, saved while another is emitted.
struct Saved {
    func: LLVMValueRef,
    heap_locals: Vec<LLVMValueRef>,
    regs: Vec<LLVMValueRef>,
    bufs: Vec<LLVMValueRef>,
    block: LLVMBasicBlockRef,
    outlined: bool,
}

impl Emitter<'_> {
    /// Emits a parallel loop of the kernel as a call to the runtime.
    pub(crate) fn emit_parallel_loop(
        &mut self,
        var: Reg,
        start: Reg,
        end: Reg,
        body: &[Stmt],
    ) -> Result<(), LlvmError> {
        let plan = outline::plan(self.prog, &self.usage, var, body)?;
        let base = format!("{}.par.{}", self.prog.name, self.n_outlined);
        self.n_outlined += 1;
        let body_fn = self.emit_body_function(&format!("{base}.body"), &plan, var, body)?;
        let ctx_ty = self.context_type(&plan);
        let thunk = self.emit_unpacking_function(&base, &plan, ctx_ty, body_fn)?;
        let first = self.load_reg(start);
        let last = self.load_reg(end);
        let ctx = self.entry_alloca(ctx_ty, "par.ctx");
        let mut fields = vec![first];
        fields.extend(plan.shared.iter().map(|(b, _)| self.bufs[b.0 as usize]));
        for &r in &plan.captures {
            let value = self.load_slot(r);
            if self.is_scalable(r) {
                let copy = self.entry_alloca(self.slot_ty(r), "par.capture");
                // SAFETY: `copy` is an alloca of the value's type.
                unsafe { LLVMSetAlignment(LLVMBuildStore(self.b, value, copy), 16) };
                fields.push(copy);
            } else {
                fields.push(value);
            }
        }
        for (i, v) in fields.into_iter().enumerate() {
            // SAFETY: `ctx` is an alloca of `ctx_ty`, whose field `i` has the type of `v`.
            unsafe {
                let p = LLVMBuildStructGEP2(self.b, ctx_ty, ctx, i as c_uint, NONAME);
                LLVMBuildStore(self.b, v, p);
            }
        }
        // SAFETY: i64 operands.
        let n = unsafe { LLVMBuildSub(self.b, last, first, c"par.n".as_ptr()) };
        let (runtime, runtime_ty) = self.runtime_declaration()?;
        let mut args = [thunk, ctx, n];
        // SAFETY: the arguments match `void (ptr, ptr, i64)`.
        unsafe { LLVMBuildCall2(self.b, runtime_ty, runtime, args.as_mut_ptr(), 3, NONAME) };
        Ok(())
    }

    /// `{ i64 start, ptr shared buffers..., captured values (ptr for scalable ones)... }`.
    fn context_type(&self, plan: &ParallelPlan) -> LLVMTypeRef {
        let mut fields = vec![self.t.i64];
        fields.extend(plan.shared.iter().map(|_| self.t.ptr));
        fields.extend(plan.captures.iter().map(|&r| if self.is_scalable(r) { self.t.ptr } else { self.slot_ty(r) }));
        // SAFETY: the field types belong to this context.
        unsafe { LLVMStructTypeInContext(self.ctx, fields.as_mut_ptr(), fields.len() as c_uint, 0) }
    }

    /// Declares `void scaletune_parallel_for(ptr fn, ptr ctx, i64 n)` once per module.
    fn runtime_declaration(&self) -> Result<(LLVMValueRef, LLVMTypeRef), LlvmError> {
        self.external_function(PARALLEL_FOR, self.t.void, &mut [self.t.ptr, self.t.ptr, self.t.i64])
    }

    /// Adds an internal function with the kernel's function attributes.
    fn add_internal_function(&self, name: &str, params: &mut [LLVMTypeRef]) -> Result<LLVMValueRef, LlvmError> {
        let cname =
            CString::new(name).map_err(|_| LlvmError::InvalidProgram(format!("name `{name}` has a NUL byte")))?;
        let attrs = self.function_attributes()?;
        // SAFETY: the types belong to this context; the name is NUL-terminated.
        unsafe {
            let fn_ty = LLVMFunctionType(self.t.void, params.as_mut_ptr(), params.len() as c_uint, 0);
            let f = LLVMAddFunction(self.module, cname.as_ptr(), fn_ty);
            LLVMSetLinkage(f, LLVMLinkage::LLVMInternalLinkage);
            for a in attrs {
                LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, a);
            }
            Ok(f)
        }
    }

    /// `void K.par.k.body(ptr noalias buffers..., captures..., i64 begin, i64 end)`:
    /// the loop over `[begin, end)` with private registers and local buffers.
    fn emit_body_function(
        &mut self,
        name: &str,
        plan: &ParallelPlan,
        var: Reg,
        body: &[Stmt],
    ) -> Result<LLVMValueRef, LlvmError> {
        let mut params: Vec<LLVMTypeRef> = plan.shared.iter().map(|_| self.t.ptr).collect();
        params.extend(plan.captures.iter().map(|&r| self.slot_ty(r)));
        params.extend([self.t.i64, self.t.i64]);
        let f = self.add_internal_function(name, &mut params)?;
        let mut attrs = vec![(LLVMAttributeFunctionIndex, self.enum_attr("alwaysinline", 0)?)];
        for (j, (_, written)) in plan.shared.iter().enumerate() {
            attrs.extend(self.pointer_attributes(j as c_uint + 1, !written)?);
        }
        // SAFETY: `f` is alive and the attributes belong to its context.
        unsafe {
            for (idx, a) in attrs {
                LLVMAddAttributeAtIndex(f, idx, a);
            }
        }
        let saved = self.enter_function(f);
        let entry = self.append_block("entry");
        self.position_at_end(entry);
        for &r in &plan.regs {
            self.regs[r.0 as usize] = self.reg_alloca(r);
        }
        for &b in &plan.private {
            self.bufs[b.0 as usize] = self.local_alloca(b)?.unwrap_or(ptr::null_mut());
        }
        let param = |i: usize| {
            // SAFETY: `i` is below the function's parameter count.
            unsafe { LLVMGetParam(f, i as c_uint) }
        };
        for (j, (b, _)) in plan.shared.iter().enumerate() {
            let v = param(j);
            let bname = &self.prog.buffer(*b).name;
            // SAFETY: the name is passed with its length.
            unsafe { LLVMSetValueName2(v, bname.as_ptr().cast(), bname.len()) };
            self.bufs[b.0 as usize] = v;
        }
        for (j, &r) in plan.captures.iter().enumerate() {
            self.store_slot(r, param(plan.shared.len() + j));
        }
        let (lo, hi) = (param(params.len() - 2), param(params.len() - 1));
        let result = self.emit_loop(var, lo, hi, body, LoopHint::None);
        let result = result.and_then(|()| self.free_heap_locals());
        if result.is_ok() {
            // SAFETY: the builder is at the end of the body function's last block.
            unsafe { LLVMBuildRetVoid(self.b) };
        }
        self.leave_function(saved);
        result.map(|()| f)
    }

    /// `void K.par.k(ptr ctx, i64 begin, i64 end)`: unpacks the context and
    /// calls the body function over `[start + begin, start + end)`.
    fn emit_unpacking_function(
        &mut self,
        name: &str,
        plan: &ParallelPlan,
        ctx_ty: LLVMTypeRef,
        body_fn: LLVMValueRef,
    ) -> Result<LLVMValueRef, LlvmError> {
        let f = self.add_internal_function(name, &mut [self.t.ptr, self.t.i64, self.t.i64])?;
        let saved = self.enter_function(f);
        let entry = self.append_block("entry");
        self.position_at_end(entry);
        // SAFETY: `f` has three parameters; every field is loaded with the
        // type `context_type` gave it; the body function's parameters are
        // the shared pointers, the captured values and the two bounds.
        unsafe {
            let ctx = LLVMGetParam(f, 0);
            let field = |i: usize, ty: LLVMTypeRef| {
                let p = LLVMBuildStructGEP2(self.b, ctx_ty, ctx, i as c_uint, NONAME);
                LLVMBuildLoad2(self.b, ty, p, NONAME)
            };
            let start = field(0, self.t.i64);
            let mut args: Vec<LLVMValueRef> = (0..plan.shared.len()).map(|j| field(1 + j, self.t.ptr)).collect();
            for (j, &r) in plan.captures.iter().enumerate() {
                let i = 1 + plan.shared.len() + j;
                if self.is_scalable(r) {
                    let v = LLVMBuildLoad2(self.b, self.slot_ty(r), field(i, self.t.ptr), NONAME);
                    LLVMSetAlignment(v, 16);
                    args.push(v);
                } else {
                    args.push(field(i, self.slot_ty(r)));
                }
            }
            args.push(LLVMBuildNSWAdd(self.b, start, LLVMGetParam(f, 1), c"begin".as_ptr()));
            args.push(LLVMBuildNSWAdd(self.b, start, LLVMGetParam(f, 2), c"end".as_ptr()));
            let body_ty = LLVMGlobalGetValueType(body_fn);
            LLVMBuildCall2(self.b, body_ty, body_fn, args.as_mut_ptr(), args.len() as c_uint, NONAME);
            LLVMBuildRetVoid(self.b);
        }
        self.leave_function(saved);
        Ok(f)
    }

    /// Switches emission to function `f` (no registers or buffers yet).
    fn enter_function(&mut self, f: LLVMValueRef) -> Saved {
        Saved {
            block: self.current_block(),
            func: std::mem::replace(&mut self.func, f),
            heap_locals: std::mem::take(&mut self.heap_locals),
            regs: std::mem::replace(&mut self.regs, vec![ptr::null_mut(); self.prog.regs.len()]),
            bufs: std::mem::replace(&mut self.bufs, vec![ptr::null_mut(); self.prog.buffers.len()]),
            outlined: std::mem::replace(&mut self.outlined, true),
        }
    }

    /// Returns to the function saved by [`Self::enter_function`], at the end of its block.
    fn leave_function(&mut self, saved: Saved) {
        self.func = saved.func;
        self.heap_locals = saved.heap_locals;
        self.regs = saved.regs;
        self.bufs = saved.bufs;
        self.outlined = saved.outlined;
        self.position_at_end(saved.block);
    }

    /// An alloca at the top of the current function's entry block.
    fn entry_alloca(&self, ty: LLVMTypeRef, name: &str) -> LLVMValueRef {
        let name = CString::new(name).unwrap_or_default();
        let here = self.current_block();
        // SAFETY: the function has an entry block (the builder is in one of
        // its blocks); the builder returns to the end of `here`.
        unsafe {
            let entry = LLVMGetEntryBasicBlock(self.func);
            let first = LLVMGetFirstInstruction(entry);
            if first.is_null() {
                LLVMPositionBuilderAtEnd(self.b, entry);
            } else {
                LLVMPositionBuilderBefore(self.b, first);
            }
            let slot = LLVMBuildAlloca(self.b, ty, name.as_ptr());
            LLVMPositionBuilderAtEnd(self.b, here);
            slot
        }
    }

    fn is_scalable(&self, r: Reg) -> bool {
        self.prog.ty(r).lanes.is_some_and(|l| l.scalable)
    }

    /// The raw content of register `r`'s alloca (masks as bytes).
    fn load_slot(&self, r: Reg) -> LLVMValueRef {
        let slot = self.regs[r.0 as usize];
        // SAFETY: `slot` is the register's alloca, of its slot type.
        unsafe {
            let v = LLVMBuildLoad2(self.b, self.slot_ty(r), slot, NONAME);
            LLVMSetAlignment(v, LLVMGetAlignment(slot));
            v
        }
    }

    /// Stores a raw slot value (as [`Self::load_slot`] gives) into register `r`'s alloca.
    fn store_slot(&self, r: Reg, v: LLVMValueRef) {
        let slot = self.regs[r.0 as usize];
        // SAFETY: `v` has the slot type of `r`.
        unsafe { LLVMSetAlignment(LLVMBuildStore(self.b, v, slot), LLVMGetAlignment(slot)) };
    }
}

//! Emission of the kernel function: signature, attributes, registers, buffers and statements.
//!
//! Every vprog register is an `alloca` in the entry block: a use loads from
//! it, an assignment stores to it. Loops are preheader/header/body/latch
//! blocks with a hidden SSA counter (the loop register receives the counter
//! at the top of each iteration); `if` statements are then/else/merge blocks.
//! Parallel loops are outlined into functions of their own (`parallel.rs`).

use super::context::{cstring, Context, IrBuilder, Module};
use super::outline::{self, Usage};
use super::types::{elem_align, Types};
use super::LlvmError;
use crate::target::Target;
use crate::vprog::{BufId, BufKind, Elem, LoopHint, Param, Program, Reg, Stmt};
use llvm_sys::core::*;
use llvm_sys::prelude::*;
use llvm_sys::{LLVMAttributeFunctionIndex, LLVMIntPredicate, LLVMLinkage};
use std::ffi::CString;
use std::os::raw::c_uint;
use std::ptr;

/// An empty value name.
pub(crate) const NONAME: *const std::os::raw::c_char = c"".as_ptr();

/// Emits the kernel function of `prog` into `module`.
pub(crate) fn emit_kernel(
    ctx: &Context,
    module: &Module<'_>,
    builder: &IrBuilder<'_>,
    prog: &Program,
    target: &Target,
) -> Result<(), LlvmError> {
    let types = Types::new(ctx.raw());
    let mut param_tys: Vec<LLVMTypeRef> = prog
        .params
        .iter()
        .map(|p| match p {
            Param::Tensor(_) => types.ptr,
            Param::Scalar { reg, .. } => types.ty(prog.ty(*reg)),
        })
        .collect();
    let name = cstring("kernel name", &prog.name)?;
    // SAFETY: the types belong to `ctx`, `name` is NUL-terminated, and the
    // module is fresh, so `LLVMAddFunction` creates a new function.
    let func = unsafe {
        let fn_ty = LLVMFunctionType(types.void, param_tys.as_mut_ptr(), param_tys.len() as c_uint, 0);
        let func = LLVMAddFunction(module.raw(), name.as_ptr(), fn_ty);
        LLVMSetLinkage(func, LLVMLinkage::LLVMExternalLinkage);
        func
    };
    let usage = Usage::of(prog, &prog.body);
    let mut private_locals = vec![false; prog.buffers.len()];
    for s in outline::outermost_parallel(&prog.body) {
        let Stmt::Loop { body, .. } = s else { continue };
        let inside = Usage::of(prog, body);
        for (i, buf) in prog.buffers.iter().enumerate() {
            let local = matches!(buf.kind, BufKind::Local { .. });
            private_locals[i] |= local && inside.accesses[i] > 0 && inside.accesses[i] == usage.accesses[i];
        }
    }
    let mut em = Emitter {
        prog,
        target,
        ctx: ctx.raw(),
        module: module.raw(),
        b: builder.raw(),
        t: types,
        func,
        regs: Vec::with_capacity(prog.regs.len()),
        bufs: vec![ptr::null_mut(); prog.buffers.len()],
        usage,
        private_locals,
        n_outlined: 0,
        outlined: false,
        heap_locals: Vec::new(),
    };
    em.add_attributes()?;
    em.prologue()?;
    em.stmts(&prog.body)?;
    em.free_heap_locals()?;
    // SAFETY: the builder is positioned at the end of the last open block.
    unsafe { LLVMBuildRetVoid(em.b) };
    Ok(())
}

/// State of the emission of one kernel function.
pub(crate) struct Emitter<'a> {
    pub(crate) prog: &'a Program,
    pub(crate) target: &'a Target,
    pub(crate) ctx: LLVMContextRef,
    pub(crate) module: LLVMModuleRef,
    pub(crate) b: LLVMBuilderRef,
    pub(crate) t: Types,
    /// The function being emitted (the kernel or an outlined parallel body).
    pub(crate) func: LLVMValueRef,
    /// One alloca per register (null for registers the function does not use).
    pub(crate) regs: Vec<LLVMValueRef>,
    /// Base pointer of each buffer (parameter or entry-block alloca; null if unused).
    pub(crate) bufs: Vec<LLVMValueRef>,
    /// Register reads and buffer accesses of the whole kernel.
    pub(crate) usage: Usage,
    /// Local buffers allocated by an outlined parallel body instead of the kernel.
    pub(crate) private_locals: Vec<bool>,
    /// Parallel loops outlined so far (names `<kernel>.par.<k>`).
    pub(crate) n_outlined: u32,
    /// True while emitting an outlined body (nested parallel loops run serially).
    pub(crate) outlined: bool,
    /// Local buffers of the current function allocated on the heap
    /// ([`HEAP_LOCAL_BYTES`]), freed before it returns.
    pub(crate) heap_locals: Vec<LLVMValueRef>,
}

/// Local buffers that may hold more bytes than this are allocated with
/// `aligned_alloc` and freed on return, not on the stack: a temporary of a
/// large workload (softmax's exponentials of 16384 rows of 1024, 64 MiB)
/// would overflow any thread's stack, and a kernel's caller, a tuning
/// harness or a user's thread, cannot be asked for a larger one. Smaller
/// buffers (packed panels, register tiles) stay on the stack, where they
/// cost nothing per call. Not for SME kernels, whose streaming body would
/// have to leave streaming mode around each call.
pub const HEAP_LOCAL_BYTES: u64 = 1 << 20;

impl Emitter<'_> {
    pub(crate) fn enum_attr(&self, name: &str, value: u64) -> Result<LLVMAttributeRef, LlvmError> {
        // SAFETY: `name` points to `name.len()` valid bytes; the context is alive.
        unsafe {
            let kind = LLVMGetEnumAttributeKindForName(name.as_ptr().cast(), name.len());
            if kind == 0 {
                return Err(LlvmError::Internal(format!("unknown LLVM attribute `{name}`")));
            }
            Ok(LLVMCreateEnumAttribute(self.ctx, kind, value))
        }
    }

    pub(crate) fn string_attr(&self, key: &str, value: &str) -> LLVMAttributeRef {
        // SAFETY: both strings are passed with their lengths; the context is alive.
        unsafe {
            LLVMCreateStringAttribute(
                self.ctx,
                key.as_ptr().cast(),
                key.len() as c_uint,
                value.as_ptr().cast(),
                value.len() as c_uint,
            )
        }
    }

    /// Function attributes (`target-cpu`, `target-features`, `nounwind`,
    /// `vscale_range` on scalable targets) and parameter attributes.
    fn add_attributes(&self) -> Result<(), LlvmError> {
        let mut fn_attrs = self.function_attributes()?;
        if self.prog.uses_za() {
            fn_attrs.push(self.string_attr(super::za::NEW_ZA, ""));
        }
        let mut param_attrs = Vec::new();
        for (i, p) in self.prog.params.iter().enumerate() {
            if let Param::Tensor(buf) = p {
                let idx = i as c_uint + 1;
                param_attrs.extend(self.pointer_attributes(idx, self.prog.buffer(*buf).read_only)?);
            }
        }
        // SAFETY: the function is alive and the attributes belong to its context.
        unsafe {
            for a in fn_attrs {
                LLVMAddAttributeAtIndex(self.func, LLVMAttributeFunctionIndex, a);
            }
            for (idx, a) in param_attrs {
                LLVMAddAttributeAtIndex(self.func, idx, a);
            }
        }
        Ok(())
    }

    /// `noalias nocapture` (and `readonly`) for the buffer pointer parameter `idx` (1-based).
    pub(crate) fn pointer_attributes(
        &self,
        idx: c_uint,
        read_only: bool,
    ) -> Result<Vec<(c_uint, LLVMAttributeRef)>, LlvmError> {
        let mut attrs = vec![(idx, self.enum_attr("noalias", 0)?), (idx, self.enum_attr("nocapture", 0)?)];
        if read_only {
            attrs.push((idx, self.enum_attr("readonly", 0)?));
        }
        Ok(attrs)
    }

    /// The kernel's function attributes, shared by its outlined parallel bodies.
    pub(crate) fn function_attributes(&self) -> Result<Vec<LLVMAttributeRef>, LlvmError> {
        let mut fn_attrs = vec![self.enum_attr("nounwind", 0)?];
        if !self.target.cpu.is_empty() {
            fn_attrs.push(self.string_attr("target-cpu", &self.target.cpu));
        }
        if !self.target.features.is_empty() {
            fn_attrs.push(self.string_attr("target-features", &self.target.features));
        }
        let caps = &self.target.caps;
        if caps.scalable {
            let (min, max) = match (caps.vscale_values.first(), caps.vscale_values.last()) {
                (Some(&a), Some(&b)) => (a, b),
                _ => return Err(LlvmError::Internal(format!("target `{}` has no vscale values", self.target.name))),
            };
            // `vscale_range(min,max)` packs both bounds into one integer.
            fn_attrs.push(self.enum_attr("vscale_range", (u64::from(min) << 32) | u64::from(max))?);
        }
        if caps.has_sme {
            fn_attrs.push(self.string_attr(super::za::STREAMING_BODY, ""));
        }
        Ok(fn_attrs)
    }

    /// The entry block: register allocas, parameter values, local buffers.
    fn prologue(&mut self) -> Result<(), LlvmError> {
        let entry = self.append_block("entry");
        self.position_at_end(entry);
        for i in 0..self.prog.regs.len() {
            let slot = self.reg_alloca(Reg(i as u32));
            self.regs.push(slot);
        }
        for (i, p) in self.prog.params.iter().enumerate() {
            // SAFETY: `i` is below the function's parameter count.
            let value = unsafe { LLVMGetParam(self.func, i as c_uint) };
            match p {
                Param::Tensor(buf) => {
                    let name = &self.prog.buffer(*buf).name;
                    // SAFETY: the name is passed with its length.
                    unsafe { LLVMSetValueName2(value, name.as_ptr().cast(), name.len()) };
                    self.bufs[buf.0 as usize] = value;
                }
                Param::Scalar { name, reg } => {
                    // SAFETY: the name is passed with its length.
                    unsafe { LLVMSetValueName2(value, name.as_ptr().cast(), name.len()) };
                    self.store_reg(*reg, value);
                }
            }
        }
        for i in 0..self.prog.buffers.len() {
            if !self.private_locals[i] {
                if let Some(slot) = self.local_alloca(BufId(i as u32))? {
                    self.bufs[i] = slot;
                }
            }
        }
        Ok(())
    }

    /// The alloca of register `r` (the builder must be in the entry block).
    pub(crate) fn reg_alloca(&self, r: Reg) -> LLVMValueRef {
        let name = CString::new(format!("r{}", r.0)).unwrap_or_default();
        // SAFETY: the builder is positioned in the entry block.
        let slot = unsafe { LLVMBuildAlloca(self.b, self.slot_ty(r), name.as_ptr()) };
        if self.prog.ty(r).lanes.is_some_and(|l| l.scalable) {
            // AArch64 cannot align scalable stack objects beyond 16 bytes.
            // SAFETY: `slot` is an alloca.
            unsafe { LLVMSetAlignment(slot, 16) };
        }
        slot
    }

    /// The memory of local buffer `buf` (an array alloca; the builder must be
    /// in the entry block), or `None` for a parameter buffer.
    pub(crate) fn local_alloca(&mut self, buf: BufId) -> Result<Option<LLVMValueRef>, LlvmError> {
        let b = self.prog.buffer(buf);
        let BufKind::Local { len } = &b.kind else { return Ok(None) };
        let (dtype, name) = (b.dtype, CString::new(b.name.clone()).unwrap_or_default());
        let count = self.vscale_polynomial(len)?;
        if self.on_heap(len, dtype.bytes() as u64) {
            let bytes = self.mul(count, self.t.i64_const(dtype.bytes() as i64));
            let slot = self.heap_alloc(bytes, &name)?;
            self.heap_locals.push(slot);
            return Ok(Some(slot));
        }
        // SAFETY: the builder is in the entry block; `count` is an i64.
        unsafe {
            let slot = LLVMBuildArrayAlloca(self.b, self.t.elem(Elem::Data(dtype)), count, name.as_ptr());
            LLVMSetAlignment(slot, 64);
            Ok(Some(slot))
        }
    }

    /// True if a local buffer of `len` elements (coefficients of powers of
    /// vscale) of `elem_bytes` each may exceed [`HEAP_LOCAL_BYTES`] at the
    /// target's largest vscale (and the kernel is not an SME one).
    fn on_heap(&self, len: &[i64], elem_bytes: u64) -> bool {
        let caps = &self.target.caps;
        let vscale = i128::from(caps.vscale_values.iter().copied().max().unwrap_or(1));
        let elems: i128 = len.iter().enumerate().map(|(p, &c)| i128::from(c) * vscale.pow(p as u32)).sum();
        !caps.has_sme && elems.saturating_mul(i128::from(elem_bytes)) > i128::from(HEAP_LOCAL_BYTES)
    }

    /// `aligned_alloc(64, bytes rounded up to 64)`, named `name`.
    fn heap_alloc(&mut self, bytes: LLVMValueRef, name: &CString) -> Result<LLVMValueRef, LlvmError> {
        let (f, fn_ty) = self.external_function("aligned_alloc", self.t.ptr, &mut [self.t.i64, self.t.i64])?;
        // SAFETY: `bytes` is an i64 of this function; `f` has type `fn_ty`.
        unsafe {
            let padded = LLVMBuildAdd(self.b, bytes, self.t.i64_const(63), NONAME);
            let rounded = LLVMBuildAnd(self.b, padded, self.t.i64_const(!63), NONAME);
            let mut args = [self.t.i64_const(64), rounded];
            Ok(LLVMBuildCall2(self.b, fn_ty, f, args.as_mut_ptr(), 2, name.as_ptr()))
        }
    }

    /// Frees the current function's [`Emitter::heap_locals`] (the builder
    /// at its end, before the return).
    pub(crate) fn free_heap_locals(&mut self) -> Result<(), LlvmError> {
        let locals = std::mem::take(&mut self.heap_locals);
        if locals.is_empty() {
            return Ok(());
        }
        let (f, fn_ty) = self.external_function("free", self.t.void, &mut [self.t.ptr])?;
        for p in locals {
            let mut args = [p];
            // SAFETY: `p` is a pointer of this function; `f` has type `fn_ty`.
            unsafe { LLVMBuildCall2(self.b, fn_ty, f, args.as_mut_ptr(), 1, NONAME) };
        }
        Ok(())
    }

    /// The declaration of external function `name` (a C library function,
    /// the parallel runtime), `nounwind`, declared once per module.
    pub(crate) fn external_function(
        &self,
        name: &str,
        ret: LLVMTypeRef,
        params: &mut [LLVMTypeRef],
    ) -> Result<(LLVMValueRef, LLVMTypeRef), LlvmError> {
        let cname = CString::new(name).map_err(|_| LlvmError::Internal(format!("function name `{name}`")))?;
        // SAFETY: the types belong to this context; the name is NUL-terminated.
        unsafe {
            let fn_ty = LLVMFunctionType(ret, params.as_mut_ptr(), params.len() as c_uint, 0);
            let mut f = LLVMGetNamedFunction(self.module, cname.as_ptr());
            if f.is_null() {
                f = LLVMAddFunction(self.module, cname.as_ptr(), fn_ty);
                LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, self.enum_attr("nounwind", 0)?);
            }
            Ok((f, fn_ty))
        }
    }

    /// `max(0, sum(coeffs[p] * vscale^p))` as an i64 value.
    fn vscale_polynomial(&mut self, coeffs: &[i64]) -> Result<LLVMValueRef, LlvmError> {
        let vscale = self.vscale()?;
        let mut total = self.t.i64_const(0);
        let mut power = self.t.i64_const(1);
        for (p, &c) in coeffs.iter().enumerate() {
            if p > 0 {
                power = self.mul(power, vscale);
            }
            if c != 0 {
                let term = self.mul(power, self.t.i64_const(c));
                // SAFETY: both operands are i64 values of this function.
                total = unsafe { LLVMBuildAdd(self.b, total, term, NONAME) };
            }
        }
        if coeffs.iter().any(|&c| c < 0) {
            total = self.intrinsic("llvm.smax", &[self.t.i64], &[total, self.t.i64_const(0)])?;
        }
        Ok(total)
    }

    fn mul(&self, a: LLVMValueRef, b: LLVMValueRef) -> LLVMValueRef {
        // SAFETY: both operands are integers of one type in this function.
        unsafe { LLVMBuildMul(self.b, a, b, NONAME) }
    }

    /// Appends a basic block to the kernel function.
    pub(crate) fn append_block(&self, name: &str) -> LLVMBasicBlockRef {
        let name = CString::new(name).unwrap_or_default();
        // SAFETY: the function and context are alive.
        unsafe { LLVMAppendBasicBlockInContext(self.ctx, self.func, name.as_ptr()) }
    }

    pub(crate) fn position_at_end(&self, bb: LLVMBasicBlockRef) {
        // SAFETY: `bb` is a block of the kernel function.
        unsafe { LLVMPositionBuilderAtEnd(self.b, bb) }
    }

    pub(crate) fn current_block(&self) -> LLVMBasicBlockRef {
        // SAFETY: the builder is alive.
        unsafe { LLVMGetInsertBlock(self.b) }
    }

    fn br(&self, dest: LLVMBasicBlockRef) -> LLVMValueRef {
        // SAFETY: `dest` is a block of the kernel function.
        unsafe { LLVMBuildBr(self.b, dest) }
    }

    /// The LLVM type of register `r`.
    pub(crate) fn reg_llvm_ty(&self, r: Reg) -> LLVMTypeRef {
        self.t.ty(self.prog.ty(r))
    }

    /// The type a register lives as in its alloca: its own type, except that
    /// masks are kept as byte vectors (backends cannot load or store every
    /// `<vscale x N x i1>` from memory, which matters at O0).
    pub(crate) fn slot_ty(&self, r: Reg) -> LLVMTypeRef {
        let ty = self.prog.ty(r);
        match ty.lanes {
            Some(l) if ty.elem == Elem::Bool => self.t.vector(self.t.i8, l),
            _ => self.t.ty(ty),
        }
    }

    fn is_mask(&self, r: Reg) -> bool {
        let ty = self.prog.ty(r);
        ty.elem == Elem::Bool && ty.is_vector()
    }

    /// Reads register `r`.
    pub(crate) fn load_reg(&self, r: Reg) -> LLVMValueRef {
        // SAFETY: `regs[r]` is an alloca of the register's slot type; masks
        // are truncated back from bytes to i1.
        unsafe {
            let slot = self.regs[r.0 as usize];
            let v = LLVMBuildLoad2(self.b, self.slot_ty(r), slot, NONAME);
            LLVMSetAlignment(v, LLVMGetAlignment(slot));
            if self.is_mask(r) {
                LLVMBuildTrunc(self.b, v, self.reg_llvm_ty(r), NONAME)
            } else {
                v
            }
        }
    }

    /// Writes register `r`.
    pub(crate) fn store_reg(&self, r: Reg, v: LLVMValueRef) {
        // SAFETY: `v` has the register's type (checked by vprog::verify);
        // masks are widened to bytes to match the slot type.
        unsafe {
            let v = if self.is_mask(r) { LLVMBuildZExt(self.b, v, self.slot_ty(r), NONAME) } else { v };
            let slot = self.regs[r.0 as usize];
            let st = LLVMBuildStore(self.b, v, slot);
            LLVMSetAlignment(st, LLVMGetAlignment(slot));
        }
    }

    /// The element type of buffer `buf`.
    pub(crate) fn buf_elem(&self, buf: BufId) -> Elem {
        Elem::Data(self.prog.buffer(buf).dtype)
    }

    /// A pointer to element `index` (an i64 value) of `buf`.
    pub(crate) fn elem_ptr(&self, buf: BufId, index: LLVMValueRef, inbounds: bool) -> LLVMValueRef {
        let elem = self.t.elem(self.buf_elem(buf));
        let mut idx = [index];
        // SAFETY: the base is a pointer; the index is an integer (or a vector
        // of integers, giving a vector of pointers).
        unsafe {
            if inbounds {
                LLVMBuildInBoundsGEP2(self.b, elem, self.bufs[buf.0 as usize], idx.as_mut_ptr(), 1, NONAME)
            } else {
                LLVMBuildGEP2(self.b, elem, self.bufs[buf.0 as usize], idx.as_mut_ptr(), 1, NONAME)
            }
        }
    }

    /// Emits a statement list.
    pub(crate) fn stmts(&mut self, body: &[Stmt]) -> Result<(), LlvmError> {
        for s in body {
            self.stmt(s)?;
        }
        Ok(())
    }

    fn stmt(&mut self, s: &Stmt) -> Result<(), LlvmError> {
        match s {
            Stmt::Assign { dst, op } => {
                let v = self.op(op, self.prog.ty(*dst))?;
                self.store_reg(*dst, v);
            }
            Stmt::Store { buf, index, value } => {
                let p = self.elem_ptr(*buf, self.load_reg(*index), true);
                let v = self.load_reg(*value);
                self.store(v, p, elem_align(self.buf_elem(*buf)));
            }
            Stmt::VStore { buf, base, value, mask } => self.vstore(*buf, *base, *value, *mask)?,
            Stmt::Scatter { buf, indices, value, mask } => self.scatter(*buf, *indices, *value, *mask)?,
            Stmt::Loop { var, start, end, body, hint: LoopHint::Parallel } if !self.outlined => {
                self.emit_parallel_loop(*var, *start, *end, body)?
            }
            Stmt::Loop { var, start, end, body, hint } => {
                let (first, last) = (self.load_reg(*start), self.load_reg(*end));
                self.emit_loop(*var, first, last, body, *hint)?
            }
            Stmt::If { cond, then_body, else_body } => self.emit_if(*cond, then_body, else_body)?,
            Stmt::ZaZero { tile } => self.za_zero(*tile)?,
            Stmt::ZaLoad { tile, row, buf, base, mask } => self.za_slice(false, *tile, *row, *buf, *base, *mask)?,
            Stmt::ZaStore { tile, row, buf, base, mask } => self.za_slice(true, *tile, *row, *buf, *base, *mask)?,
            Stmt::Mopa { tile, a, b, a_mask, b_mask } => self.mopa(*tile, *a, *b, *a_mask, *b_mask)?,
        }
        Ok(())
    }

    /// A store with the given alignment.
    pub(crate) fn store(&self, v: LLVMValueRef, p: LLVMValueRef, align: u32) {
        // SAFETY: `p` is a pointer and `v` a first-class value.
        unsafe {
            let st = LLVMBuildStore(self.b, v, p);
            LLVMSetAlignment(st, align);
        }
    }

    /// `for var in first..last { body }` over i64 values `first` and `last`
    /// (the bounds are read once); the body does not run when `first >= last`.
    pub(crate) fn emit_loop(
        &mut self,
        var: Reg,
        first: LLVMValueRef,
        last: LLVMValueRef,
        body: &[Stmt],
        hint: LoopHint,
    ) -> Result<(), LlvmError> {
        let preheader = self.current_block();
        let header = self.append_block("loop.header");
        let body_bb = self.append_block("loop.body");
        self.br(header);
        self.position_at_end(header);
        // SAFETY: the builder is at the start of `header`; the phi's incoming
        // values are added below, once the latch exists.
        let iv = unsafe { LLVMBuildPhi(self.b, self.t.i64, c"iv".as_ptr()) };
        // SAFETY: both operands are i64.
        let in_range = unsafe { LLVMBuildICmp(self.b, LLVMIntPredicate::LLVMIntSLT, iv, last, NONAME) };
        let exit_placeholder = self.append_block("loop.exit");
        // SAFETY: blocks of the kernel function.
        unsafe { LLVMBuildCondBr(self.b, in_range, body_bb, exit_placeholder) };
        self.position_at_end(body_bb);
        self.store_reg(var, iv);
        self.stmts(body)?;
        let latch = self.append_block("loop.latch");
        self.br(latch);
        self.position_at_end(latch);
        // `iv < end <= i64::MAX`, so `iv + 1` cannot overflow.
        // SAFETY: i64 operands.
        let next = unsafe { LLVMBuildNSWAdd(self.b, iv, self.t.i64_const(1), c"iv.next".as_ptr()) };
        let backedge = self.br(header);
        if let Some(md) = self.loop_metadata(hint) {
            // SAFETY: `md` is a metadata value of this context.
            unsafe {
                let kind = LLVMGetMDKindIDInContext(self.ctx, c"llvm.loop".as_ptr(), "llvm.loop".len() as c_uint);
                LLVMSetMetadata(backedge, kind, md);
            }
        }
        let mut values = [first, next];
        let mut blocks = [preheader, latch];
        // SAFETY: two incoming (value, block) pairs for the phi.
        unsafe { LLVMAddIncoming(iv, values.as_mut_ptr(), blocks.as_mut_ptr(), 2) };
        // Keep block order readable: move the exit block after the latch.
        // SAFETY: both blocks belong to the kernel function.
        unsafe { LLVMMoveBasicBlockAfter(exit_placeholder, self.current_block()) };
        self.position_at_end(exit_placeholder);
        Ok(())
    }

    /// The `llvm.loop` metadata for a hint, if any. `Unroll(n)` becomes
    /// `llvm.loop.unroll.count n` (`llvm.loop.unroll.disable` for 1).
    /// `Parallel` has none: a parallel loop reaches here only as the serial
    /// loop over one chunk inside its outlined body, or nested in another
    /// parallel loop (the runtime would run it serially anyway).
    fn loop_metadata(&self, hint: LoopHint) -> Option<LLVMValueRef> {
        let property = match hint {
            LoopHint::Unroll(0) | LoopHint::None | LoopHint::Parallel => return None,
            LoopHint::Unroll(1) => vec![self.md_string("llvm.loop.unroll.disable")],
            LoopHint::Unroll(n) => {
                let count = self.t.i32_const(n.min(i32::MAX as u32) as i32);
                // SAFETY: `count` is a constant.
                vec![self.md_string("llvm.loop.unroll.count"), unsafe { LLVMValueAsMetadata(count) }]
            }
        };
        // SAFETY: the loop id is built as a uniqued node whose first operand
        // is a temporary; replacing the temporary by the node itself makes it
        // the self-referential distinct node LLVM expects (and frees the
        // temporary).
        unsafe {
            let mut property = property;
            let prop = LLVMMDNodeInContext2(self.ctx, property.as_mut_ptr(), property.len());
            let temp = temporary_md_node(self.ctx);
            let mut ops = [temp, prop];
            let id = LLVMMDNodeInContext2(self.ctx, ops.as_mut_ptr(), ops.len());
            llvm_sys::debuginfo::LLVMMetadataReplaceAllUsesWith(temp, id);
            Some(LLVMMetadataAsValue(self.ctx, id))
        }
    }

    fn md_string(&self, s: &str) -> LLVMMetadataRef {
        // SAFETY: the string is passed with its length.
        unsafe { LLVMMDStringInContext2(self.ctx, s.as_ptr().cast(), s.len()) }
    }

    /// `if cond { then_body } else { else_body }`.
    fn emit_if(&mut self, cond: Reg, then_body: &[Stmt], else_body: &[Stmt]) -> Result<(), LlvmError> {
        let c = self.load_reg(cond);
        let then_bb = self.append_block("if.then");
        let else_bb = self.append_block("if.else");
        // SAFETY: `c` is an i1; the blocks belong to the kernel function.
        unsafe { LLVMBuildCondBr(self.b, c, then_bb, else_bb) };
        self.position_at_end(then_bb);
        self.stmts(then_body)?;
        let then_end = self.current_block();
        // SAFETY: `else_bb` belongs to the kernel function.
        unsafe { LLVMMoveBasicBlockAfter(else_bb, then_end) };
        self.position_at_end(else_bb);
        self.stmts(else_body)?;
        let merge = self.append_block("if.end");
        self.br(merge);
        self.position_at_end(then_end);
        self.br(merge);
        self.position_at_end(merge);
        Ok(())
    }
}

/// A temporary metadata node with no operands.
///
/// # Safety
/// `ctx` must be a live context; the node must be replaced with
/// `LLVMMetadataReplaceAllUsesWith` (which frees it).
unsafe fn temporary_md_node(ctx: LLVMContextRef) -> LLVMMetadataRef {
    llvm_sys::debuginfo::LLVMTemporaryMDNode(ctx, ptr::null_mut(), 0)
}

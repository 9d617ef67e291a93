//! RAII owners of LLVM objects (context, module, builder, target machine, buffers) and one-time target setup.
//!
//! Every LLVM object created by [`super::compile`] is owned by one of these
//! wrappers, so early returns on error paths release everything. Objects that
//! live inside a context borrow it ([`Module`], [`IrBuilder`]), which makes the
//! borrow checker drop them before the context.

use super::LlvmError;
use llvm_sys::core::*;
use llvm_sys::prelude::*;
use llvm_sys::target_machine::{LLVMDisposeTargetMachine, LLVMTargetMachineRef};
use llvm_sys::transforms::pass_builder::{LLVMDisposePassBuilderOptions, LLVMPassBuilderOptionsRef};
use std::ffi::{CStr, CString};
use std::marker::PhantomData;
use std::os::raw::c_char;
use std::sync::Once;

/// Registers the X86, AArch64 and RISC-V backends with LLVM, once per process.
pub(crate) fn init_targets() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        use llvm_sys::target::*;
        // SAFETY: the initializers only register backends in LLVM's global
        // registry; `Once` guarantees they run exactly once, before any use.
        unsafe {
            LLVMInitializeX86TargetInfo();
            LLVMInitializeX86Target();
            LLVMInitializeX86TargetMC();
            LLVMInitializeX86AsmPrinter();
            LLVMInitializeAArch64TargetInfo();
            LLVMInitializeAArch64Target();
            LLVMInitializeAArch64TargetMC();
            LLVMInitializeAArch64AsmPrinter();
            LLVMInitializeRISCVTargetInfo();
            LLVMInitializeRISCVTarget();
            LLVMInitializeRISCVTargetMC();
            LLVMInitializeRISCVAsmPrinter();
        }
    });
}

/// Copies an LLVM-allocated message and releases it with `LLVMDisposeMessage`.
pub(crate) fn take_message(p: *mut c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: `p` is a NUL-terminated string allocated by LLVM; it is copied
    // and then released exactly once.
    unsafe {
        let s = CStr::from_ptr(p).to_string_lossy().into_owned();
        LLVMDisposeMessage(p);
        s
    }
}

/// Converts an `LLVMErrorRef` into its message, consuming the error.
pub(crate) fn take_error(err: llvm_sys::error::LLVMErrorRef) -> String {
    // SAFETY: `err` is a live error owned by us; LLVMGetErrorMessage consumes
    // it and returns a message we release with LLVMDisposeErrorMessage.
    unsafe {
        let p = llvm_sys::error::LLVMGetErrorMessage(err);
        if p.is_null() {
            return String::from("unknown LLVM error");
        }
        let s = CStr::from_ptr(p).to_string_lossy().into_owned();
        llvm_sys::error::LLVMDisposeErrorMessage(p);
        s
    }
}

/// A C string for LLVM, rejecting interior NUL bytes.
pub(crate) fn cstring(what: &str, s: &str) -> Result<CString, LlvmError> {
    CString::new(s).map_err(|_| LlvmError::InvalidProgram(format!("{what} `{}` contains a NUL byte", s.escape_debug())))
}

/// An owned `LLVMContext`; one per compilation, never shared between threads.
pub(crate) struct Context {
    raw: LLVMContextRef,
}

impl Context {
    /// Creates a fresh context.
    pub(crate) fn new() -> Context {
        // SAFETY: creating a context has no preconditions.
        Context { raw: unsafe { LLVMContextCreate() } }
    }

    /// The raw handle (valid while `self` lives).
    pub(crate) fn raw(&self) -> LLVMContextRef {
        self.raw
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: we own the context and every module/builder borrowing it has
        // already been dropped (enforced by their lifetimes).
        unsafe { LLVMContextDispose(self.raw) }
    }
}

/// An owned `LLVMModule` living in a [`Context`].
pub(crate) struct Module<'c> {
    raw: LLVMModuleRef,
    _ctx: PhantomData<&'c Context>,
}

impl<'c> Module<'c> {
    /// Creates an empty module named `name`.
    pub(crate) fn new(ctx: &'c Context, name: &CStr) -> Module<'c> {
        // SAFETY: `name` is NUL-terminated and the context is alive for 'c.
        let raw = unsafe { LLVMModuleCreateWithNameInContext(name.as_ptr(), ctx.raw()) };
        Module { raw, _ctx: PhantomData }
    }

    /// The raw handle (valid while `self` lives).
    pub(crate) fn raw(&self) -> LLVMModuleRef {
        self.raw
    }

    /// A deep copy of the module in the same context.
    pub(crate) fn duplicate(&self) -> Module<'c> {
        // SAFETY: the module is alive; the clone is owned by the returned value.
        let raw = unsafe { LLVMCloneModule(self.raw) };
        Module { raw, _ctx: PhantomData }
    }

    /// The textual IR of the module.
    pub(crate) fn to_ir_string(&self) -> String {
        // SAFETY: the module is alive; the returned string is owned by us.
        take_message(unsafe { LLVMPrintModuleToString(self.raw) })
    }
}

impl Drop for Module<'_> {
    fn drop(&mut self) {
        // SAFETY: we own the module; its context outlives it.
        unsafe { LLVMDisposeModule(self.raw) }
    }
}

/// An owned `LLVMBuilder` (instruction builder) living in a [`Context`].
pub(crate) struct IrBuilder<'c> {
    raw: LLVMBuilderRef,
    _ctx: PhantomData<&'c Context>,
}

impl<'c> IrBuilder<'c> {
    /// Creates a builder with no insertion point.
    pub(crate) fn new(ctx: &'c Context) -> IrBuilder<'c> {
        // SAFETY: the context is alive for 'c.
        let raw = unsafe { LLVMCreateBuilderInContext(ctx.raw()) };
        IrBuilder { raw, _ctx: PhantomData }
    }

    /// The raw handle (valid while `self` lives).
    pub(crate) fn raw(&self) -> LLVMBuilderRef {
        self.raw
    }
}

impl Drop for IrBuilder<'_> {
    fn drop(&mut self) {
        // SAFETY: we own the builder.
        unsafe { LLVMDisposeBuilder(self.raw) }
    }
}

/// An owned `LLVMTargetMachine`.
pub(crate) struct TargetMachine {
    pub(crate) raw: LLVMTargetMachineRef,
}

impl Drop for TargetMachine {
    fn drop(&mut self) {
        // SAFETY: we own the target machine; no module refers to it.
        unsafe { LLVMDisposeTargetMachine(self.raw) }
    }
}

/// Owned new-pass-manager options.
pub(crate) struct PassOptions {
    pub(crate) raw: LLVMPassBuilderOptionsRef,
}

impl PassOptions {
    /// Default options.
    pub(crate) fn new() -> PassOptions {
        // SAFETY: no preconditions.
        PassOptions { raw: unsafe { llvm_sys::transforms::pass_builder::LLVMCreatePassBuilderOptions() } }
    }
}

impl Drop for PassOptions {
    fn drop(&mut self) {
        // SAFETY: we own the options.
        unsafe { LLVMDisposePassBuilderOptions(self.raw) }
    }
}

/// An owned `LLVMMemoryBuffer`.
pub(crate) struct MemoryBuffer {
    pub(crate) raw: LLVMMemoryBufferRef,
}

impl MemoryBuffer {
    /// A copy of the buffer's bytes.
    pub(crate) fn to_vec(&self) -> Vec<u8> {
        // SAFETY: the buffer is alive; start/size describe its contents.
        unsafe {
            let start = LLVMGetBufferStart(self.raw) as *const u8;
            let size = LLVMGetBufferSize(self.raw);
            if start.is_null() || size == 0 {
                return Vec::new();
            }
            std::slice::from_raw_parts(start, size).to_vec()
        }
    }
}

impl Drop for MemoryBuffer {
    fn drop(&mut self) {
        // SAFETY: we own the buffer.
        unsafe { LLVMDisposeMemoryBuffer(self.raw) }
    }
}

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
use llvm_sys::LLVMDiagnosticSeverity;
use std::cell::RefCell;
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

/// Diagnostics LLVM reported while working in one context.
#[derive(Default)]
pub(crate) struct Diagnostics {
    /// Error messages (LLVM continues after reporting them to a handler).
    pub(crate) errors: Vec<String>,
    /// Warning messages (e.g. an unroll hint LLVM could not honour).
    pub(crate) warnings: Vec<String>,
}

/// Receives LLVM diagnostics instead of LLVM printing them to stderr (and
/// exiting on errors).
extern "C" fn collect_diagnostic(info: LLVMDiagnosticInfoRef, sink: *mut std::ffi::c_void) {
    // SAFETY: `sink` is the `RefCell<Diagnostics>` boxed in the `Context`
    // that owns the LLVM context calling us; `info` is valid for this call.
    unsafe {
        let cell = &*(sink as *const RefCell<Diagnostics>);
        let severity = LLVMGetDiagInfoSeverity(info);
        let text = take_message(LLVMGetDiagInfoDescription(info));
        let Ok(mut d) = cell.try_borrow_mut() else { return };
        match severity {
            LLVMDiagnosticSeverity::LLVMDSError => d.errors.push(text),
            LLVMDiagnosticSeverity::LLVMDSWarning => d.warnings.push(text),
            _ => {}
        }
    }
}

/// An owned `LLVMContext`; one per compilation, never shared between threads.
/// Its diagnostics are collected rather than printed.
pub(crate) struct Context {
    raw: LLVMContextRef,
    diagnostics: Box<RefCell<Diagnostics>>,
}

impl Context {
    /// Creates a fresh context with a collecting diagnostic handler.
    pub(crate) fn new() -> Context {
        let diagnostics = Box::new(RefCell::new(Diagnostics::default()));
        // SAFETY: creating a context has no preconditions; the handler's
        // context pointer stays valid until the context is disposed (the box
        // is a field of `Context` and is dropped after `LLVMContextDispose`).
        let raw = unsafe {
            let raw = LLVMContextCreate();
            let sink = &*diagnostics as *const RefCell<Diagnostics> as *mut std::ffi::c_void;
            LLVMContextSetDiagnosticHandler(raw, Some(collect_diagnostic), sink);
            raw
        };
        Context { raw, diagnostics }
    }

    /// The raw handle (valid while `self` lives).
    pub(crate) fn raw(&self) -> LLVMContextRef {
        self.raw
    }

    /// Removes and returns the error diagnostics reported so far.
    pub(crate) fn take_errors(&self) -> Vec<String> {
        std::mem::take(&mut self.diagnostics.borrow_mut().errors)
    }

    /// The distinct warnings reported so far, in first-reported order
    /// (assembly and object generation report the same backend warnings).
    pub(crate) fn warnings(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for w in &self.diagnostics.borrow().warnings {
            if !out.contains(w) {
                out.push(w.clone());
            }
        }
        out
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

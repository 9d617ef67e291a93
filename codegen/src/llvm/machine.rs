//! Target machine creation, module verification, the optimization pipeline and assembly/object emission.

use super::context::{cstring, take_error, take_message, MemoryBuffer, Module, PassOptions, TargetMachine};
use super::LlvmError;
use crate::target::Target;
use llvm_sys::analysis::{LLVMVerifierFailureAction, LLVMVerifyModule};
use llvm_sys::target::{LLVMDisposeTargetData, LLVMSetModuleDataLayout};
use llvm_sys::target_machine::*;
use std::ptr;

/// What [`emit`] produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Output {
    /// Textual assembly.
    Assembly,
    /// An ELF relocatable object.
    Object,
}

/// Creates the target machine for `target`: its triple, CPU and features,
/// position-independent code, the default code model, and a codegen
/// optimization level following `opt_level` (3 = aggressive).
pub(crate) fn create_target_machine(target: &Target, opt_level: u8) -> Result<TargetMachine, LlvmError> {
    let triple = cstring("target triple", &target.triple)?;
    let cpu = cstring("target cpu", &target.cpu)?;
    let features = cstring("target features", &target.features)?;
    let mut llvm_target: LLVMTargetRef = ptr::null_mut();
    let mut message = ptr::null_mut();
    // SAFETY: all strings are NUL-terminated and outlive the calls; the out
    // pointers are valid; the error message is released by `take_message`.
    unsafe {
        if LLVMGetTargetFromTriple(triple.as_ptr(), &mut llvm_target, &mut message) != 0 {
            return Err(LlvmError::TargetNotFound { triple: target.triple.clone(), message: take_message(message) });
        }
        take_message(message);
        let level = match opt_level {
            0 => LLVMCodeGenOptLevel::LLVMCodeGenLevelNone,
            1 => LLVMCodeGenOptLevel::LLVMCodeGenLevelLess,
            2 => LLVMCodeGenOptLevel::LLVMCodeGenLevelDefault,
            _ => LLVMCodeGenOptLevel::LLVMCodeGenLevelAggressive,
        };
        let raw = LLVMCreateTargetMachine(
            llvm_target,
            triple.as_ptr(),
            cpu.as_ptr(),
            features.as_ptr(),
            level,
            LLVMRelocMode::LLVMRelocPIC,
            LLVMCodeModel::LLVMCodeModelDefault,
        );
        if raw.is_null() {
            return Err(LlvmError::TargetMachine { triple: target.triple.clone(), cpu: target.cpu.clone() });
        }
        Ok(TargetMachine { raw })
    }
}

/// Sets the module's triple and data layout from the target machine.
pub(crate) fn configure_module(module: &Module<'_>, tm: &TargetMachine, triple: &str) -> Result<(), LlvmError> {
    let triple = cstring("target triple", triple)?;
    // SAFETY: module and target machine are alive; the data layout is copied
    // into the module and then released.
    unsafe {
        llvm_sys::core::LLVMSetTarget(module.raw(), triple.as_ptr());
        let layout = LLVMCreateTargetDataLayout(tm.raw);
        LLVMSetModuleDataLayout(module.raw(), layout);
        LLVMDisposeTargetData(layout);
    }
    Ok(())
}

/// Runs LLVM's module verifier; its message is returned as the error.
pub(crate) fn verify(module: &Module<'_>) -> Result<(), LlvmError> {
    let mut message = ptr::null_mut();
    // SAFETY: the module is alive; the message is released by `take_message`.
    let failed =
        unsafe { LLVMVerifyModule(module.raw(), LLVMVerifierFailureAction::LLVMReturnStatusAction, &mut message) != 0 };
    let text = take_message(message);
    if failed {
        return Err(LlvmError::Verifier(text));
    }
    Ok(())
}

/// Runs the new-pass-manager pipeline `default<O{opt_level}>` on the module.
pub(crate) fn optimize(module: &Module<'_>, tm: &TargetMachine, opt_level: u8) -> Result<(), LlvmError> {
    let pipeline = format!("default<O{opt_level}>");
    let passes = cstring("pass pipeline", &pipeline)?;
    let options = PassOptions::new();
    // SAFETY: module, target machine and options are alive for the call; a
    // returned error is consumed by `take_error`.
    let err = unsafe {
        llvm_sys::transforms::pass_builder::LLVMRunPasses(module.raw(), passes.as_ptr(), tm.raw, options.raw)
    };
    if !err.is_null() {
        return Err(LlvmError::Passes { pipeline, message: take_error(err) });
    }
    Ok(())
}

/// Generates assembly or an object for the module.
pub(crate) fn emit(module: &Module<'_>, tm: &TargetMachine, output: Output) -> Result<Vec<u8>, LlvmError> {
    let (file_type, what) = match output {
        Output::Assembly => (LLVMCodeGenFileType::LLVMAssemblyFile, "assembly"),
        Output::Object => (LLVMCodeGenFileType::LLVMObjectFile, "object"),
    };
    let mut message = ptr::null_mut();
    let mut buffer = ptr::null_mut();
    // SAFETY: module and target machine are alive; on success we own the
    // returned buffer (released by `MemoryBuffer`), on failure the message.
    let failed =
        unsafe { LLVMTargetMachineEmitToMemoryBuffer(tm.raw, module.raw(), file_type, &mut message, &mut buffer) != 0 };
    let text = take_message(message);
    if failed || buffer.is_null() {
        return Err(LlvmError::Emission { what, message: text });
    }
    Ok(MemoryBuffer { raw: buffer }.to_vec())
}

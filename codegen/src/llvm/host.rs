//! Host CPU detection through LLVM.

use super::context::take_message;
use crate::target::HostInfo;

/// Reads the host triple, CPU name and features from LLVM.
pub fn host_info() -> HostInfo {
    // SAFETY: these LLVM functions take no arguments and return owned strings,
    // which `take_message` copies and releases.
    let (triple, cpu, features) = unsafe {
        (
            take_message(llvm_sys::target_machine::LLVMGetDefaultTargetTriple()),
            take_message(llvm_sys::target_machine::LLVMGetHostCPUName()),
            take_message(llvm_sys::target_machine::LLVMGetHostCPUFeatures()),
        )
    };
    HostInfo { triple, cpu, features }
}

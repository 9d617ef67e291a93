//! Host CPU detection through LLVM.

use crate::target::HostInfo;
use std::ffi::CStr;

fn take_message(p: *mut std::os::raw::c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: `p` is a NUL-terminated string allocated by LLVM; we copy it and
    // release it with LLVMDisposeMessage exactly once.
    unsafe {
        let s = CStr::from_ptr(p).to_string_lossy().into_owned();
        llvm_sys::core::LLVMDisposeMessage(p);
        s
    }
}

/// Reads the host triple, CPU name and features from LLVM.
pub fn host_info() -> HostInfo {
    // SAFETY: these LLVM functions take no arguments and return owned strings.
    let (triple, cpu, features) = unsafe {
        (
            take_message(llvm_sys::target_machine::LLVMGetDefaultTargetTriple()),
            take_message(llvm_sys::target_machine::LLVMGetHostCPUName()),
            take_message(llvm_sys::target_machine::LLVMGetHostCPUFeatures()),
        )
    };
    HostInfo { triple, cpu, features }
}

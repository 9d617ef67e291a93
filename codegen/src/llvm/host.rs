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

/// The version of the LLVM library code is generated with (`19.1.7`): part
/// of what decides the bytes of an object, so caches of objects key on it.
pub fn llvm_version() -> String {
    let (mut major, mut minor, mut patch) = (0u32, 0u32, 0u32);
    // SAFETY: LLVMGetVersion only writes the three integers it is given.
    unsafe { llvm_sys::core::LLVMGetVersion(&mut major, &mut minor, &mut patch) };
    format!("{major}.{minor}.{patch}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_llvm_library_is_version_19() {
        let v = super::llvm_version();
        assert!(v.starts_with("19."), "{v}");
        assert_eq!(v.split('.').count(), 3, "{v}");
    }
}

//! LLVM emission: the only module that uses llvm-sys and `unsafe` FFI.

mod host;

pub use host::host_info;

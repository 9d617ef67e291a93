//! scaletune-measure: the correctness harness, builders, runners and the measurement farm.
//!
//! A [`Candidate`] (workload + target + trace) is built by a [`Builder`]
//! ([`LlvmBuilder`]: schedule, lower, LLVM, link; objects cached by content
//! hash) into a [`Built`] harness, which a [`Runner`] ([`NativeRunner`], [`QemuRunner`], ...)
//! checks and measures. The [`Farm`], the one scheduler, overlaps builders
//! and runners for a batch and streams back one [`Measurement`] per
//! candidate (candidates built beforehand go through it with [`Prebuilt`]).
//!
//! The [`harness`] links a compiled kernel object with a small generated C
//! driver, runs the executable natively or under QEMU user mode at a
//! requested vector length, and compares every output element with the
//! reference semantics of the workload (`scaletune_space::reference`).
//!
//! # Kernel ABI
//!
//! A kernel is an external C-ABI function
//!
//! ```c
//! void SYMBOL(T0 *t0, T1 *t1, ..., S0 s0, S1 s1, ...);
//! ```
//!
//! - one pointer per tensor of [`Workload::arg_tensors`] (declaration order,
//!   inputs and outputs; `temp` tensors are internal to the kernel), each
//!   pointing at a 64-byte aligned, densely packed row-major buffer;
//! - then one by-value scalar per entry of `Workload::scalars`, in order:
//!   `float` for f32, `double` for f64 (no other scalar types).
//!
//! Element types: f32 `float`, f64 `double`, i32 `int32_t`, i8 `int8_t`,
//! f16 `uint16_t` (IEEE half bits), bf16 `uint16_t` (bfloat16 bits, the
//! upper half of an f32); 16-bit types are passed by pointer only.
//!
//! The kernel must write every element of every output tensor (output
//! buffers arrive filled with a poison value), must not write outside its
//! output buffers and must not modify its inputs; the driver checks all three.
//!
//! Running needs a Unix host (signals) and, for non-native targets, QEMU user
//! mode (`qemu-aarch64`, `qemu-riscv64`).
//!
//! [`Workload::arg_tensors`]: scaletune_space::workload::Workload::arg_tensors

pub mod agent;
pub mod builder;
pub mod candidate;
pub mod cleanup;
pub mod emulation;
pub mod farm;
pub mod farm_config;
pub mod harness;
pub(crate) mod process;
pub mod protocol;
pub mod result;
pub mod runner;
pub mod stats;

pub use builder::{ArtifactCache, BuildError, Builder, BuilderPool, LlvmBuilder, Prebuilt};
pub use candidate::Candidate;
pub use farm::{Batch, BatchReport, Farm, MachineLock, MachineLockError, Timeline};
pub use harness::{
    driver_source, CheckRequest, Harness, HarnessError, LinkExtras, PreparedRun, RunCheck, RunOptions, RunOutput,
};
pub use protocol::TimingProtocol;
pub use result::{Emulated, Measurement, Status, Timing, VlMeasurement, MAX_WAIT_SHARE};
pub use runner::check::CheckRunner;
pub use runner::exec::{check, run_once, run_with};
pub use runner::health::FaultPolicy;
pub use runner::native::NativeRunner;
pub use runner::qemu::{QemuRunner, VlPolicy};
pub use runner::remote::RemoteRunner;
pub use runner::{Built, Runner};
pub use scaletune_space::reference::Comparison;

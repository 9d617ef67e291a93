//! Emulated metrics: the TCG plugin that counts kernel instructions, and cycles estimated with llvm-mca.
//!
//! ```text
//! driver executable ──elf──▶ kernel code: [start, end) of the kernel and of each <kernel>.par.* (symbol table)
//!        │ qemu-<arch> -plugin insn_count.so,range=..:..,range=..,text=..,out=..   (SCALETUNE_NUM_THREADS=1)
//!        ▼
//! counts: kernel instructions, executions per translated block of the kernel, guest threads
//!        │ llvm-objdump-19 (the kernel's instructions)  +  llvm-mca-19 -mcpu=<target.mca_cpu>
//!        ▼
//! estimated cycles = Σ over blocks  executions × cycles per execution
//! ```
//!
//! - [`plugin`]: the plugin's C source (shipped in `measure/plugin/`), built
//!   with the system C compiler on first use into a cache directory, its
//!   QEMU arguments and the parser of what it writes.
//! - [`elf`]: the address ranges of the kernel's code (its function and
//!   its outlined parallel-loop bodies) in the linked executable.
//! - [`disasm`]: the kernel's instructions, as llvm-mca input.
//! - [`mca`]: llvm-mca on many blocks at once (one code region each).
//! - [`estimate`]: blocks to cycles, with a cache of block costs per
//!   kernel and CPU model; [`fallthrough`]: a block QEMU split without a
//!   branch (at a page boundary) is priced with the block it runs into.
//!
//! [`defects`]: probes of QEMU defects that make it compute a kernel's
//! outputs wrong (the 32-bit `smopa` of QEMU 7.2), so that such runs are
//! judged by the interpreter.
//!
//! [`emulable_host_target`] derives, from the host target, the x86-64
//! target whose code QEMU 7.2 can run (no AVX-512), so that the same
//! kernels can be timed natively and emulated.

pub mod defects;
pub mod disasm;
pub mod elf;
pub mod estimate;
mod fallthrough;
pub mod mca;
pub mod plugin;
pub mod sme;

pub use estimate::{BlockEstimate, CycleEstimator, Estimate};
pub use plugin::{BlockCount, Counts};

use scaletune_codegen::target::{Arch, Target};
use scaletune_space::VectorCaps;
use std::process::Command;
use thiserror::Error;

/// Why a kernel could not be counted or its cycles estimated.
#[derive(Debug, Error)]
pub enum EmulationError {
    /// A tool (compiler, llvm-objdump, llvm-mca) could not be started.
    #[error("cannot run `{command}`: {error}")]
    Tool {
        /// The command line.
        command: String,
        /// Why it could not start (in the message, not a chained source: printed once).
        error: std::io::Error,
    },
    /// A tool ran and failed.
    #[error("`{command}` failed ({status}): {stderr}")]
    ToolFailed {
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// The end of its standard error.
        stderr: String,
    },
    /// The executable or the kernel object is not what was expected.
    #[error("{file}: {message}")]
    Elf {
        /// The file.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// The plugin's output is missing or malformed, or disagrees with the executable.
    #[error("instruction-count plugin: {0}")]
    Plugin(String),
    /// No cycle estimate is possible (no CPU model, an instruction llvm-mca cannot model, ...).
    #[error("no cycle estimate: {0}")]
    NoEstimate(String),
    /// A file-system operation failed.
    #[error("{what}: {error}")]
    Io {
        /// What was being done.
        what: String,
        /// The I/O error (in the message, not a chained source: printed once).
        error: std::io::Error,
    },
}

/// Runs a tool to completion, returning its stdout; a non-zero exit is [`EmulationError::ToolFailed`].
pub(crate) fn run_tool(mut cmd: Command, stdin: Option<&str>) -> Result<String, EmulationError> {
    use std::io::Write;
    use std::process::Stdio;
    let command = format!(
        "{} {}",
        cmd.get_program().to_string_lossy(),
        cmd.get_args().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" ")
    );
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|source| EmulationError::Tool { command: command.clone(), error: source })?;
    let _listed = crate::cleanup::ChildGuard::new(child.id());
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // Write on a thread: the tool may fill its stdout pipe before reading all of stdin.
        let text = text.to_string();
        let writer = std::thread::spawn(move || {
            let _ = pipe.write_all(text.as_bytes());
        });
        let out = child.wait_with_output();
        let _ = writer.join();
        return finish(command, out);
    }
    finish(command, child.wait_with_output())
}

fn finish(command: String, out: std::io::Result<std::process::Output>) -> Result<String, EmulationError> {
    let out = out.map_err(|source| EmulationError::Tool { command: command.clone(), error: source })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: String =
            stderr.lines().rev().take(12).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
        return Err(EmulationError::ToolFailed { command, status: out.status.to_string(), stderr: tail });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The QEMU user-mode command that emulates code of `arch` compiled for this
/// machine's CPU (`-cpu max`: every feature QEMU's TCG implements).
pub fn host_qemu_command(arch: Arch) -> Vec<String> {
    let bin = match arch {
        Arch::X86_64 => "qemu-x86_64",
        Arch::Aarch64 => "qemu-aarch64",
        Arch::Riscv64 => "qemu-riscv64",
    };
    vec![bin.to_string(), "-cpu".to_string(), "max".to_string()]
}

/// The host target restricted to what QEMU 7.2 emulates, for comparing
/// emulated metrics with native time on the same code.
///
/// QEMU 7.2's x86 TCG implements AVX2 and FMA but not AVX-512, so on x86-64
/// every `avx512*`, `evex512`, `avx10*` and `amx*` feature is turned off and
/// vectors are 256 bits wide (the `avx2` vector kind). CPU name and llvm-mca
/// model stay the host's; the target still runs natively (`qemu` is unset),
/// and [`crate::runner::qemu::QemuRunner::emulating_host`] runs it under QEMU.
/// Other architectures are returned unchanged.
pub fn emulable_host_target(host: &Target) -> Target {
    if host.arch != Arch::X86_64 {
        return host.clone();
    }
    let unsupported =
        |f: &str| f.starts_with("avx512") || f == "evex512" || f.starts_with("avx10") || f.starts_with("amx");
    let features: Vec<String> = host
        .features
        .split(',')
        .filter(|f| !f.is_empty())
        .map(|f| match f.strip_prefix('+') {
            Some(name) if unsupported(name) => format!("-{name}"),
            _ => f.to_string(),
        })
        .collect();
    let features = features.join(",");
    let has_avx2 = features.split(',').any(|f| f == "+avx2");
    let bits = if has_avx2 { 256 } else { 128 };
    let caps = VectorCaps { has_gather: has_avx2, ..VectorCaps::fixed(bits) };
    Target {
        name: format!("{}-qemu", host.name),
        description: format!("{} without the features QEMU 7.2 cannot emulate (no AVX-512)", host.description),
        features,
        caps,
        default_vl_bits: vec![bits],
        ..host.clone()
    }
}

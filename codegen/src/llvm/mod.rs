//! LLVM emission: the only module that uses llvm-sys and `unsafe` FFI.
//!
//! [`compile`] turns one vector [`Program`] into optimized LLVM IR, assembly
//! and an object file for a [`Target`]. The pipeline reads top to bottom:
//!
//! 1. check the program (`vprog::verify`, parameters, constants) and its
//!    vector types against what the target's backend supports (`support.rs`:
//!    LLVM aborts the process on the types it cannot legalize, so those are
//!    rejected here with [`LlvmError::Unsupported`]),
//! 2. create a fresh LLVM context (`context.rs`, RAII owners), a module and
//!    the target machine,
//! 3. emit the kernel function (`emit.rs` for the signature and statements,
//!    `ops.rs` for operations, `intrinsics.rs` for intrinsic calls,
//!    `types.rs` for types),
//! 4. run LLVM's verifier, then the new-pass-manager pipeline `default<On>`,
//! 5. print the IR and emit assembly and the object (`machine.rs`),
//! 6. if the program has a parallel loop, merge the thread-pool runtime into
//!    the object (`runtime.rs`).
//!
//! Every vprog register becomes an `alloca` in the entry block; mem2reg/SROA
//! in the optimization pipeline turns them into SSA values. Each call owns its
//! context, so several threads may compile concurrently. Output is a pure
//! function of the inputs: the same program, target and options give
//! byte-identical IR, assembly and object.
//!
//! A `LoopHint::Parallel` loop runs on several threads. It is outlined into a
//! function over a range of iterations (`parallel.rs`; `outline.rs` decides
//! what the function captures: registers by value, shared buffers, and local
//! buffers private to each thread) and replaced by a call to
//! `scaletune_parallel_for(fn, ctx, n)`, the entry point of a small pthread
//! pool (`codegen/runtime/scaletune_rt.c`, static chunking, one contiguous
//! chunk per thread, `SCALETUNE_NUM_THREADS` threads or one per CPU). The
//! runtime is compiled with the target's C compiler, cached, and merged into
//! the returned object, so the object still links alone with a driver (the
//! target's `libs` provide `-lpthread`); objects without a parallel loop do
//! not contain it. The IR and assembly are the kernel's only. A parallel
//! loop whose iterations visibly depend on each other (a register carried
//! between iterations or out of the loop, a scratch buffer shared with code
//! outside the loop) is refused with [`LlvmError::Parallel`].

mod bf16;
mod context;
mod emit;
mod host;
mod intrinsics;
mod machine;
mod ops;
mod outline;
mod parallel;
mod runtime;
mod support;
mod types;
mod za;

pub use host::{host_info, llvm_version};
pub use parallel::PARALLEL_FOR;
pub use runtime::{compile_command as runtime_compile_command, RUNTIME_SOURCE, SME_ABI_SOURCE, SME_ABI_SYMBOLS};

use crate::target::Target;
use crate::vprog::{self, Param, Program};
use context::{Context, IrBuilder, Module};
use thiserror::Error;

/// Options of one compilation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileOptions {
    /// Optimization level 0..=3 (`default<On>` pipeline and codegen level).
    pub opt_level: u8,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions { opt_level: 3 }
    }
}

/// The products of one compilation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Artifacts {
    /// The optimized module as LLVM IR text.
    pub llvm_ir: String,
    /// Target assembly.
    pub asm: String,
    /// ELF relocatable object containing the kernel symbol (and, when the
    /// program has a parallel loop, the thread-pool runtime, whose entry
    /// point `scaletune_parallel_for` is a local symbol).
    pub object: Vec<u8>,
    /// Warnings LLVM reported (for example an unroll hint it could not
    /// honour), in the order reported.
    pub warnings: Vec<String>,
}

/// Why a compilation failed.
#[derive(Debug, Error)]
pub enum LlvmError {
    /// LLVM has no backend for the target triple.
    #[error("LLVM has no target for triple `{triple}`: {message}")]
    TargetNotFound {
        /// The triple asked for.
        triple: String,
        /// LLVM's message.
        message: String,
    },
    /// LLVM could not create a target machine for the triple/CPU/features.
    #[error("cannot create an LLVM target machine for `{triple}` (cpu `{cpu}`)")]
    TargetMachine {
        /// The triple.
        triple: String,
        /// The CPU name.
        cpu: String,
    },
    /// The program uses scalable vectors but the target has fixed-length vectors.
    #[error("kernel `{kernel}` uses the scalable type {ty} but target `{target}` has fixed-length vectors")]
    ScalableOnFixedTarget {
        /// Kernel name.
        kernel: String,
        /// Target name.
        target: String,
        /// The first scalable register type found.
        ty: String,
    },
    /// The target's backend cannot compile a vector type of the program
    /// (LLVM would abort the process).
    #[error("kernel `{kernel}`: target `{target}` cannot compile the type {ty}: {reason}")]
    Unsupported {
        /// Kernel name.
        kernel: String,
        /// Target name.
        target: String,
        /// The offending register type.
        ty: String,
        /// Why.
        reason: String,
    },
    /// The vector program is ill-typed.
    #[error(transparent)]
    IllTyped(#[from] vprog::VerifyError),
    /// The program is malformed in a way the type checker does not cover
    /// (bad parameter list, a name with a NUL byte, ...).
    #[error("invalid program: {0}")]
    InvalidProgram(String),
    /// The optimization level is outside 0..=3.
    #[error("optimization level {0} is not in 0..=3")]
    BadOptLevel(u8),
    /// LLVM's verifier rejected the emitted module (a bug in this emitter).
    #[error("LLVM verifier rejected the module: {0}")]
    Verifier(String),
    /// The optimization pipeline failed.
    #[error("LLVM optimization pipeline `{pipeline}` failed: {message}")]
    Passes {
        /// Pipeline text.
        pipeline: String,
        /// LLVM's message.
        message: String,
    },
    /// Emitting assembly or the object failed.
    #[error("LLVM failed to emit {what}: {message}")]
    Emission {
        /// `assembly` or `object`.
        what: &'static str,
        /// LLVM's message.
        message: String,
    },
    /// LLVM reported an error diagnostic while optimizing or generating code.
    #[error("LLVM reported an error during {stage}: {message}")]
    Diagnostic {
        /// `optimization`, `assembly` or `object`.
        stage: &'static str,
        /// The messages, one per line.
        message: String,
    },
    /// A parallel loop cannot run on several threads as written.
    #[error("kernel `{kernel}`: the parallel loop over {var} cannot run on several threads: {reason}")]
    Parallel {
        /// Kernel name.
        kernel: String,
        /// The loop variable register.
        var: String,
        /// Why.
        reason: String,
    },
    /// Building the thread-pool runtime or merging it into the object failed.
    #[error("thread-pool runtime: {step} failed: {message}")]
    Runtime {
        /// `compiling`, `caching` or `merging`.
        step: &'static str,
        /// What went wrong (the command and its output).
        message: String,
    },
    /// An internal inconsistency of the emitter (unknown intrinsic, ...).
    #[error("internal LLVM emitter error: {0}")]
    Internal(String),
}

/// Compiles `prog` for `target`: optimized IR text, assembly and an object.
///
/// The kernel is an external function named `prog.name` returning void, with
/// one parameter per `prog.params` entry (tensors as `ptr noalias nocapture`,
/// `readonly` when the buffer is read-only; scalars by value). Parallel loops
/// become internal functions `<kernel>.par.<k>` called through the runtime.
pub fn compile(prog: &Program, target: &Target, opts: &CompileOptions) -> Result<Artifacts, LlvmError> {
    let out = compile_emitting(prog, target, opts, true, true)?;
    Ok(Artifacts {
        llvm_ir: out.llvm_ir.unwrap_or_default(),
        asm: out.asm.unwrap_or_default(),
        object: out.object,
        warnings: out.warnings,
    })
}

/// The products of [`compile_emitting`]: the object, and the texts asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Emitted {
    /// Optimized IR text, if asked for.
    pub llvm_ir: Option<String>,
    /// Assembly, if asked for.
    pub asm: Option<String>,
    /// The object (as [`Artifacts::object`]).
    pub object: Vec<u8>,
    /// Warnings LLVM reported.
    pub warnings: Vec<String>,
}

/// Like [`compile`], printing the IR and emitting assembly only when asked:
/// the object is the same either way (assembly is always generated from a
/// copy of the optimized module).
pub fn compile_emitting(
    prog: &Program,
    target: &Target,
    opts: &CompileOptions,
    want_ir: bool,
    want_asm: bool,
) -> Result<Emitted, LlvmError> {
    if opts.opt_level > 3 {
        return Err(LlvmError::BadOptLevel(opts.opt_level));
    }
    check_program(prog, target, opts.opt_level)?;
    context::init_targets();
    let tm = machine::create_target_machine(target, opts.opt_level)?;
    let ctx = Context::new();
    let module_name = context::cstring("kernel name", &prog.name)?;
    let module = Module::new(&ctx, &module_name);
    machine::configure_module(&module, &tm, &target.triple)?;
    {
        let builder = IrBuilder::new(&ctx);
        emit::emit_kernel(&ctx, &module, &builder, prog, target)?;
    }
    machine::verify(&module)?;
    let check = |stage: &'static str| {
        let errors = ctx.take_errors();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(LlvmError::Diagnostic { stage, message: errors.join("\n") })
        }
    };
    machine::optimize(&module, &tm, opts.opt_level)?;
    check("optimization")?;
    let llvm_ir = want_ir.then(|| module.to_ir_string());
    // Code generation rewrites the IR it is given (CodeGenPrepare, ...), so
    // the assembly is produced from a copy and the object from the original:
    // both then come from the same optimized IR.
    let asm = if want_asm {
        let asm = machine::emit(&module.duplicate(), &tm, machine::Output::Assembly)?;
        check("assembly")?;
        Some(String::from_utf8_lossy(&asm).into_owned())
    } else {
        None
    };
    let mut object = machine::emit(&module, &tm, machine::Output::Object)?;
    check("object")?;
    let mut parts = Vec::new();
    if outline::has_parallel(&prog.body) {
        parts.push(runtime::Part::ThreadPool);
    }
    if prog.uses_za() {
        parts.push(runtime::Part::SmeAbi);
    }
    if !parts.is_empty() {
        object = runtime::link_runtime(target, &object, &parts)?;
    }
    Ok(Emitted { llvm_ir, asm, object, warnings: ctx.warnings() })
}

/// Checks what the emitter relies on before any LLVM object is created.
fn check_program(prog: &Program, target: &Target, opt_level: u8) -> Result<(), LlvmError> {
    vprog::verify(prog)?;
    if prog.name.is_empty() {
        return Err(LlvmError::InvalidProgram("the kernel name is empty".into()));
    }
    let mut seen = vec![false; prog.buffers.len()];
    for p in &prog.params {
        match p {
            Param::Tensor(b) => {
                let buf = prog.buffers.get(b.0 as usize).ok_or_else(|| {
                    LlvmError::InvalidProgram(format!("tensor parameter names missing buffer {}", b.0))
                })?;
                if buf.kind != vprog::BufKind::Param {
                    return Err(LlvmError::InvalidProgram(format!("local buffer `{}` is a parameter", buf.name)));
                }
                if std::mem::replace(&mut seen[b.0 as usize], true) {
                    return Err(LlvmError::InvalidProgram(format!("buffer `{}` is passed twice", buf.name)));
                }
            }
            Param::Scalar { name, reg } => {
                let ty = prog.regs.get(reg.0 as usize).ok_or_else(|| {
                    LlvmError::InvalidProgram(format!("scalar parameter `{name}` names missing register {reg}"))
                })?;
                if ty.is_vector() || !matches!(ty.elem, vprog::Elem::Data(_)) {
                    return Err(LlvmError::InvalidProgram(format!("scalar parameter `{name}` has type {ty}")));
                }
            }
        }
    }
    for (i, buf) in prog.buffers.iter().enumerate() {
        if buf.kind == vprog::BufKind::Param && !seen[i] {
            return Err(LlvmError::InvalidProgram(format!(
                "parameter buffer `{}` is not in the parameter list",
                buf.name
            )));
        }
    }
    if let Some(ty) = prog.regs.iter().find(|t| t.lanes.is_some_and(|l| l.min == 0)) {
        return Err(LlvmError::InvalidProgram(format!("a register has the zero-lane type {ty}")));
    }
    check_constants(&prog.body)?;
    bf16::check_ops(prog, &target.name)?;
    support::check_types(prog, target, opt_level)?;
    Ok(())
}

/// Checks that every constant's value kind matches its element type
/// (`Const::Int` of an integer, `Const::Float` of a float dtype).
fn check_constants(body: &[vprog::Stmt]) -> Result<(), LlvmError> {
    use vprog::{Const, Op, Stmt};
    for s in body {
        match s {
            Stmt::Assign { op: Op::Const(c), .. } => {
                let ok = match c {
                    Const::Int(_, e) => e.is_int(),
                    Const::Float(_, d) => d.is_float(),
                    Const::Bool(_) => true,
                };
                if !ok {
                    return Err(LlvmError::InvalidProgram(format!("constant {c:?} does not match its element type")));
                }
            }
            Stmt::Loop { body, .. } => check_constants(body)?,
            Stmt::If { then_body, else_body, .. } => {
                check_constants(then_body)?;
                check_constants(else_body)?;
            }
            _ => {}
        }
    }
    Ok(())
}

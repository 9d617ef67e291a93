//! The one compile pipeline: workload + trace + target → scheduled loop nest → vector program → LLVM IR, assembly, object.
//!
//! Every command and every builder compiles through [`compile`]; nothing
//! else in the workspace chains scheduling, lowering and LLVM by hand. The
//! stages read top to bottom:
//!
//! 1. [`schedule`]: the workload's loop nest with the target's vector kinds,
//!    the trace replayed on it (a `use_vectors` instruction may pick another
//!    kind than the target's own, e.g. NEON on an SVE target);
//! 2. [`crate::lower::lower`]: the vector program, named by [`kernel_symbol`];
//! 3. [`crate::llvm`]: optimized IR, and on request ([`Emit`]) IR text and
//!    assembly, always the object, for the target *as the schedule chose it*
//!    (its caps replaced by the nest's).
//!
//! A fixed-length vector kind (`sve` on a 256-bit Neoverse V1, `rvv-256`)
//! is only valid at the vector length it was compiled for. [`Options::vl_bits`]
//! specializes such a kind to another vector length before scheduling (the
//! `-msve-vector-bits` equivalent: LLVM sees `vscale_range(v, v)`), and
//! [`vl_builds`] says which vector lengths need an object of their own.
//! Length-agnostic and fixed-width (NEON, AVX) kinds are unaffected.

use crate::llvm::{self, CompileOptions, LlvmError};
use crate::lower::{lower, LowerError};
use crate::target::Target;
use crate::vprog::Program;
use scaletune_space::ir::Nest;
use scaletune_space::trace::{Trace, TraceError};
use scaletune_space::workload::Workload;
use scaletune_space::VectorCaps;
use thiserror::Error;

/// Which textual products to produce besides the object (they cost LLVM time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Emit {
    /// The optimized module as LLVM IR text.
    pub llvm_ir: bool,
    /// Target assembly.
    pub asm: bool,
}

impl Emit {
    /// The object only (what builders need).
    pub const OBJECT: Emit = Emit { llvm_ir: false, asm: false };
    /// IR text, assembly and the object.
    pub const ALL: Emit = Emit { llvm_ir: true, asm: true };
}

/// Options of one compilation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// LLVM options (optimization level).
    pub llvm: CompileOptions,
    /// Textual products wanted besides the object.
    pub emit: Emit,
    /// Specialize fixed-length scalable kinds to this vector length in bits
    /// (see the module documentation); `None` compiles them at their own.
    pub vl_bits: Option<u32>,
    /// The kernel's symbol instead of [`kernel_symbol`] (build-time replay
    /// names each kernel as its manifest does); must be a C identifier.
    pub symbol: Option<String>,
}

/// A failure of one stage, naming it.
#[derive(Debug, Error)]
pub enum CompileError {
    /// The trace does not apply to the workload's nest (the error is part
    /// of the message, not a chained source, so it is printed once).
    #[error("schedule: {0}")]
    Schedule(TraceError),
    /// The vector length to specialize for is not a multiple of the granule.
    #[error("cannot specialize {kind} vectors to {vl_bits} bits: not a multiple of the {granule_bits}-bit granule")]
    BadVectorLength {
        /// The vector kind's description.
        kind: String,
        /// The vector length asked for.
        vl_bits: u32,
        /// The kind's granule.
        granule_bits: u32,
    },
    /// Lowering failed.
    #[error(transparent)]
    Lower(#[from] LowerError),
    /// LLVM failed.
    #[error(transparent)]
    Llvm(#[from] LlvmError),
}

impl From<TraceError> for CompileError {
    fn from(e: TraceError) -> CompileError {
        CompileError::Schedule(e)
    }
}

/// Every stage of one compilation.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// The kernel's symbol ([`kernel_symbol`], or [`Options::symbol`]).
    pub symbol: String,
    /// The scheduled loop nest.
    pub nest: Nest,
    /// The lowered (and cleaned-up) vector program.
    pub program: Program,
    /// The target the object was generated for: the given target with the
    /// vector capabilities the schedule chose.
    pub target: Target,
    /// The optimized LLVM IR, if [`Emit::llvm_ir`] was asked for.
    pub llvm_ir: Option<String>,
    /// The assembly, if [`Emit::asm`] was asked for.
    pub asm: Option<String>,
    /// The ELF relocatable object.
    pub object: Vec<u8>,
    /// Warnings LLVM reported.
    pub warnings: Vec<String>,
    /// The vector length the object is only valid at (fixed-length scalable
    /// kinds); `None` for code that runs at any vector length of the target.
    pub built_for_vl: Option<u32>,
}

/// The kernel symbol of a workload: `scaletune_<name>`, non-identifier characters replaced by `_`.
pub fn kernel_symbol(w: &Workload) -> String {
    let clean: String = w.name.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    format!("scaletune_{clean}")
}

/// The file name of one product of a kernel: `<symbol>.<ext>` (`s`, `ll`, `o`, `loops`, `vector`).
pub fn artifact_file_name(symbol: &str, ext: &str) -> String {
    format!("{symbol}.{ext}")
}

/// The only vector length code for `caps` runs at, if it is a fixed-length
/// scalable kind (one vscale value); `None` for length-agnostic and fixed-width code.
pub fn fixed_vl(caps: &VectorCaps) -> Option<u32> {
    match caps.vscale_values.as_slice() {
        [v] if caps.scalable => Some(v * caps.granule_bits),
        _ => None,
    }
}

/// `caps` moved to `vl_bits` if it is a fixed-length scalable kind.
fn specialize(name: &str, caps: &VectorCaps, vl_bits: u32) -> Result<VectorCaps, CompileError> {
    if fixed_vl(caps).is_none() {
        return Ok(caps.clone());
    }
    if vl_bits == 0 || !vl_bits.is_multiple_of(caps.granule_bits) {
        return Err(CompileError::BadVectorLength { kind: name.to_string(), vl_bits, granule_bits: caps.granule_bits });
    }
    Ok(VectorCaps { vscale_values: vec![vl_bits / caps.granule_bits], ..caps.clone() })
}

/// The unscheduled loop nest of `w` for `target`, offering the target's vector kinds.
pub fn initial_nest(w: &Workload, target: &Target) -> Nest {
    Nest::from_workload(w, target.caps.clone()).with_kinds(target.vector_kinds())
}

/// [`initial_nest`] with the fixed-length scalable kinds (and the target's
/// own caps, if fixed-length) specialized to `vl_bits`.
pub fn initial_nest_at_vl(w: &Workload, target: &Target, vl_bits: u32) -> Result<Nest, CompileError> {
    let caps = specialize(&target.name, &target.caps, vl_bits)?;
    let mut kinds = target.vector_kinds();
    for (kind, caps) in &mut kinds {
        *caps = specialize(&kind.to_string(), caps, vl_bits)?;
    }
    Ok(Nest::from_workload(w, caps).with_kinds(kinds))
}

/// `target` as a CPU of the same kind whose fixed vector length is
/// `vl_bits` (a 512-bit Neoverse V1, say): its caps specialized if they are
/// fixed-length scalable, and `vl_bits` its only default vector length.
/// Length-agnostic and fixed-width targets come back unchanged.
pub fn target_at_vl(target: &Target, vl_bits: u32) -> Result<Target, CompileError> {
    let caps = specialize(&target.name, &target.caps, vl_bits)?;
    let default_vl_bits = if fixed_vl(&target.caps).is_some() { vec![vl_bits] } else { target.default_vl_bits.clone() };
    Ok(Target { caps, default_vl_bits, ..target.clone() })
}

/// Stage 1: the loop nest of `w` on `target` with `trace` replayed (the
/// unscheduled nest without one).
pub fn schedule(
    w: &Workload,
    trace: Option<&Trace>,
    target: &Target,
    vl_bits: Option<u32>,
) -> Result<Nest, CompileError> {
    let mut nest = match vl_bits {
        Some(vl) => initial_nest_at_vl(w, target, vl)?,
        None => initial_nest(w, target),
    };
    if let Some(t) = trace {
        t.apply(&mut nest)?;
    }
    Ok(nest)
}

/// Stage 2: the vector program of a scheduled nest of `w` (what the
/// interpreter runs and LLVM compiles).
pub fn lower_nest(w: &Workload, nest: &Nest) -> Result<Program, CompileError> {
    Ok(lower(nest, &kernel_symbol(w))?)
}

/// [`lower_nest`] without the verifier
/// ([`crate::lower::lower_unverified`]), for reading many candidates' programs.
pub fn lower_nest_unverified(w: &Workload, nest: &Nest) -> Result<Program, CompileError> {
    Ok(crate::lower::lower_unverified(nest, &kernel_symbol(w))?)
}

/// Stages 2 and 3 for a scheduled nest: lowering and LLVM.
pub fn compile_nest(w: &Workload, nest: Nest, target: &Target, opts: &Options) -> Result<Compiled, CompileError> {
    let symbol = opts.symbol.clone().unwrap_or_else(|| kernel_symbol(w));
    let program = lower(&nest, &symbol)?;
    // The schedule may have chosen another vector kind (e.g. NEON on an SVE target).
    let target = target.with_caps(&nest.caps);
    let out = llvm::compile_emitting(&program, &target, &opts.llvm, opts.emit.llvm_ir, opts.emit.asm)?;
    Ok(Compiled {
        symbol,
        built_for_vl: fixed_vl(&nest.caps),
        nest,
        program,
        target,
        llvm_ir: out.llvm_ir,
        asm: out.asm,
        object: out.object,
        warnings: out.warnings,
    })
}

/// The whole pipeline: schedule, lower, LLVM.
pub fn compile(w: &Workload, trace: Option<&Trace>, target: &Target, opts: &Options) -> Result<Compiled, CompileError> {
    let nest = schedule(w, trace, target, opts.vl_bits)?;
    compile_nest(w, nest, target, opts)
}

/// One object a candidate measured at several vector lengths needs (see [`vl_builds`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectPlan {
    /// The [`Options::vl_bits`] to compile it with (`None`: no specialization).
    pub specialize: Option<u32>,
    /// The vector length the object is only valid at, if any ([`Compiled::built_for_vl`]).
    pub built_for_vl: Option<u32>,
    /// The vector lengths it runs at.
    pub vl_bits: Vec<u32>,
}

/// Which objects measuring a candidate at `vls` needs: one per vector length
/// when the schedule picks a fixed-length scalable kind on this target
/// (specialized to that length, except at the kind's own, which needs no
/// specialization), else one for all of them. Scheduling errors are left
/// for [`compile`] to report (one plan for all of `vls`).
pub fn vl_builds(w: &Workload, trace: Option<&Trace>, target: &Target, vls: &[u32]) -> Vec<ObjectPlan> {
    let fixed = schedule(w, trace, target, None).ok().and_then(|n| fixed_vl(&n.caps));
    match fixed {
        Some(own) if !vls.is_empty() => vls
            .iter()
            .map(|&vl| ObjectPlan { specialize: (vl != own).then_some(vl), built_for_vl: Some(vl), vl_bits: vec![vl] })
            .collect(),
        _ => vec![ObjectPlan { specialize: None, built_for_vl: fixed, vl_bits: vls.to_vec() }],
    }
}

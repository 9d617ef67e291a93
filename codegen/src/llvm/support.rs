//! Up-front rejection of vector types a target's LLVM 19 backend cannot compile.
//!
//! LLVM reports unsupported scalable types with a fatal error that aborts the
//! whole process ("Scalarization of scalable vectors is not supported",
//! "Unable to widen vector store", ...). A failed build must be data, not an
//! abort, so every register type is checked here before LLVM sees it. The
//! rules were found by compiling every operation on every element type and
//! lane count for the shipped targets:
//!
//! - scalable vectors need a scalable target (AArch64 with SVE/SME, RISC-V
//!   with V/Zve*);
//! - the lane count per vscale must be a power of two;
//! - SVE needs at least 2 lanes per vscale (`<vscale x 1 x T>` aborts);
//! - RVV needs Zvfh for scalable f16 vectors;
//! - on SVE targets whose minimum vector length is 256 bits or more, LLVM
//!   lowers fixed-length vectors with SVE, and fails ("Cannot select",
//!   "Do not know how to scalarize") on fixed vectors whose lane count is
//!   not a power of two or is 1;
//! - AArch64 at O0 cannot compile `<1 x half>`.
//!
//! Other fixed-length vectors of any length and element type are supported
//! everywhere (LLVM widens or splits them).

use super::LlvmError;
use crate::target::{scalable_f16, Arch, Target};
use crate::vprog::{Elem, Program, Ty};
use scaletune_space::DType;

/// Checks that every register type of `prog` can be compiled for `target` at `opt_level`.
pub(crate) fn check_types(prog: &Program, target: &Target, opt_level: u8) -> Result<(), LlvmError> {
    let has_feature = |pred: &dyn Fn(&str) -> bool| target.features.split(',').any(|f| pred(f.trim()));
    let sve_fixed_lowering = target.arch == Arch::Aarch64
        && target.caps.scalable
        && target.caps.vscale_values.first().is_some_and(|&v| v >= 2);
    let mut seen: Vec<Ty> = Vec::new();
    for &ty in &prog.regs {
        let Some(lanes) = ty.lanes else { continue };
        if seen.contains(&ty) {
            continue;
        }
        seen.push(ty);
        let unsupported = |reason: String| LlvmError::Unsupported {
            kernel: prog.name.clone(),
            target: target.name.clone(),
            ty: ty.to_string(),
            reason,
        };
        if !lanes.scalable {
            if sve_fixed_lowering && (!lanes.min.is_power_of_two() || lanes.min < 2) {
                return Err(unsupported(format!(
                    "LLVM 19 lowers fixed vectors with SVE on this target and cannot handle {} lanes \
                     (it needs a power of two of at least 2)",
                    lanes.min
                )));
            }
            if target.arch == Arch::Aarch64 && opt_level == 0 && lanes.min == 1 && ty.elem == Elem::Data(DType::F16) {
                return Err(unsupported("AArch64 cannot compile one-lane f16 vectors at O0".into()));
            }
            continue;
        }
        if !target.caps.scalable {
            return Err(LlvmError::ScalableOnFixedTarget {
                kernel: prog.name.clone(),
                target: target.name.clone(),
                ty: ty.to_string(),
            });
        }
        let backend_ok = match target.arch {
            Arch::Aarch64 => has_feature(&|f| f.starts_with("+sve") || f.starts_with("+sme")),
            Arch::Riscv64 => has_feature(&|f| f == "+v" || f.starts_with("+zve")),
            Arch::X86_64 => false,
        };
        if !backend_ok {
            return Err(unsupported(format!(
                "the target's features `{}` have no scalable vector extension",
                target.features
            )));
        }
        if !lanes.min.is_power_of_two() {
            return Err(unsupported(format!("{} lanes per vscale is not a power of two", lanes.min)));
        }
        match target.arch {
            Arch::Aarch64 if lanes.min < 2 => {
                return Err(unsupported("SVE needs at least 2 lanes per vscale".into()));
            }
            Arch::Riscv64 if ty.elem == Elem::Data(DType::F16) && !scalable_f16(target.arch, &target.features) => {
                return Err(unsupported("scalable f16 vectors on RVV need the Zvfh extension (+zvfh)".into()));
            }
            _ => {}
        }
    }
    Ok(())
}

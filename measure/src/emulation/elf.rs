//! The kernel's symbol (from its object file) and its address range in the linked executable.
//!
//! The plugin counts instructions whose link-time address lies in
//! `[start, end)`, the kernel symbol's value and size in the executable's
//! symbol table. Instructions of functions the kernel calls (`memcpy`,
//! libm) lie outside and are not counted. The executables the harness links
//! for AArch64 and RISC-V are static and not position independent (clang
//! `-static`), so QEMU runs them at their link-time addresses; host
//! executables are PIE, which QEMU loads at some base: the plugin receives
//! `text_start`, the link-time address of the lowest executable segment,
//! and subtracts the difference to QEMU's start of code from every address.

use super::EmulationError;
use object::elf::PF_X;
use object::{Object, ObjectKind, ObjectSection, ObjectSegment, ObjectSymbol, SegmentFlags, SymbolKind};
use std::path::Path;

/// Where a kernel lies in an executable (link-time addresses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelRange {
    /// The kernel's symbol.
    pub symbol: String,
    /// Address of its first instruction.
    pub start: u64,
    /// One past its last byte.
    pub end: u64,
    /// Address of the lowest executable segment (to find the load bias).
    pub text_start: u64,
    /// True for position-independent executables (loaded at a bias).
    pub position_independent: bool,
}

fn elf_error(file: &Path, message: impl Into<String>) -> EmulationError {
    EmulationError::Elf { file: file.display().to_string(), message: message.into() }
}

/// Reads a file whole.
pub(crate) fn read(path: &Path) -> Result<Vec<u8>, EmulationError> {
    std::fs::read(path).map_err(|source| EmulationError::Io { what: format!("reading {}", path.display()), source })
}

/// The global functions an object file defines, in symbol-table order.
pub fn defined_functions(object_file: &Path, bytes: &[u8]) -> Result<Vec<String>, EmulationError> {
    let file = object::File::parse(bytes).map_err(|e| elf_error(object_file, e.to_string()))?;
    let mut names = Vec::new();
    for sym in file.symbols() {
        if sym.kind() == SymbolKind::Text && sym.is_definition() && sym.is_global() {
            if let Ok(name) = sym.name() {
                names.push(name.to_string());
            }
        }
    }
    Ok(names)
}

/// The kernel symbol of an object: its only global function, or the one
/// named `scaletune_*` if there are several.
pub fn kernel_symbol(object_file: &Path, bytes: &[u8]) -> Result<String, EmulationError> {
    let names = defined_functions(object_file, bytes)?;
    match names.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(elf_error(object_file, "defines no global function")),
        many => {
            let ours: Vec<&String> = many.iter().filter(|n| n.starts_with("scaletune_")).collect();
            match ours.as_slice() {
                [one] => Ok((*one).clone()),
                _ => Err(elf_error(object_file, format!("defines several global functions ({})", many.join(", ")))),
            }
        }
    }
}

/// The address range of `symbol` in the executable `exe` (its bytes).
pub fn kernel_range(exe: &Path, bytes: &[u8], symbol: &str) -> Result<KernelRange, EmulationError> {
    let file = object::File::parse(bytes).map_err(|e| elf_error(exe, e.to_string()))?;
    let position_independent = match file.kind() {
        ObjectKind::Executable => false,
        ObjectKind::Dynamic => true,
        other => return Err(elf_error(exe, format!("is not an executable ({other:?})"))),
    };
    let sym = file
        .symbols()
        .find(|s| s.kind() == SymbolKind::Text && s.is_definition() && s.name() == Ok(symbol))
        .ok_or_else(|| elf_error(exe, format!("has no function symbol `{symbol}`")))?;
    if sym.size() == 0 {
        return Err(elf_error(exe, format!("symbol `{symbol}` has no size")));
    }
    let text_start = file
        .segments()
        .filter(|seg| matches!(seg.flags(), SegmentFlags::Elf { p_flags } if p_flags & PF_X != 0))
        .map(|seg| seg.address())
        .min()
        .ok_or_else(|| elf_error(exe, "has no executable segment"))?;
    Ok(KernelRange {
        symbol: symbol.to_string(),
        start: sym.address(),
        end: sym.address() + sym.size(),
        text_start,
        position_independent,
    })
}

/// The bytes of the kernel's code in the executable (for cache keys).
pub fn kernel_code(exe: &Path, bytes: &[u8], range: &KernelRange) -> Result<Vec<u8>, EmulationError> {
    let file = object::File::parse(bytes).map_err(|e| elf_error(exe, e.to_string()))?;
    for section in file.sections() {
        let (lo, hi) = (section.address(), section.address() + section.size());
        if lo <= range.start && range.end <= hi {
            let data = section
                .data_range(range.start, range.end - range.start)
                .map_err(|e| elf_error(exe, e.to_string()))?
                .ok_or_else(|| elf_error(exe, format!("no data for `{}`", range.symbol)))?;
            return Ok(data.to_vec());
        }
    }
    Err(elf_error(exe, format!("no section holds `{}`", range.symbol)))
}

//! The kernel's symbol (from its object file) and the address ranges of its code in the linked executable.
//!
//! The kernel's code is its own function plus the functions its parallel
//! loops were outlined into: `codegen::llvm` emits `<kernel>.par.<k>` (and
//! `<kernel>.par.<k>.body`, unless LLVM inlines it) as local functions and
//! calls them through the runtime's `scaletune_parallel_for`. All of them
//! are counted and priced. The runtime itself (the thread pool, merged into
//! the kernel object as local `scaletune_parallel_for` and `rt_*`
//! functions) is not: it is scheduling, not the kernel's work, and under
//! emulation with one pool thread it only forwards the whole iteration
//! range to the outlined body. Functions the kernel calls (`memcpy`, libm)
//! are not counted either.
//!
//! The plugin counts instructions whose link-time address lies in one of
//! these ranges, read from the executable's symbol table. The executables
//! the harness links for AArch64 and RISC-V are static and not position
//! independent (clang `-static`), so QEMU runs them at their link-time
//! addresses; host executables are PIE, which QEMU loads at some base: the
//! plugin receives `text_start`, the link-time address of the lowest
//! executable segment, and subtracts the difference to QEMU's start of code
//! from every address.

use super::EmulationError;
use object::elf::PF_X;
use object::{Object, ObjectKind, ObjectSection, ObjectSegment, ObjectSymbol, SegmentFlags, SymbolKind};
use std::path::Path;

/// One function of the kernel's code (link-time addresses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeRange {
    /// The function's symbol.
    pub name: String,
    /// Address of its first instruction.
    pub start: u64,
    /// One past its last byte.
    pub end: u64,
}

/// Where a kernel's code lies in an executable (link-time addresses).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelRange {
    /// The kernel's symbol.
    pub symbol: String,
    /// The kernel's function and its outlined parallel-loop functions, by address.
    pub functions: Vec<CodeRange>,
    /// Address of the lowest executable segment (to find the load bias).
    pub text_start: u64,
    /// True for position-independent executables (loaded at a bias).
    pub position_independent: bool,
}

impl KernelRange {
    /// The function whose code holds `addr`.
    pub fn function_at(&self, addr: u64) -> Option<&CodeRange> {
        self.functions.iter().find(|f| f.start <= addr && addr < f.end)
    }
}

/// True if `name` is the kernel `symbol` or one of its outlined parallel-loop functions.
pub fn belongs_to_kernel(name: &str, symbol: &str) -> bool {
    name == symbol || name.strip_prefix(symbol).is_some_and(|rest| rest.starts_with(".par."))
}

fn elf_error(file: &Path, message: impl Into<String>) -> EmulationError {
    EmulationError::Elf { file: file.display().to_string(), message: message.into() }
}

/// Reads a file whole.
pub(crate) fn read(path: &Path) -> Result<Vec<u8>, EmulationError> {
    std::fs::read(path)
        .map_err(|source| EmulationError::Io { what: format!("reading {}", path.display()), error: source })
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

/// The address ranges of the kernel `symbol` and its outlined parallel-loop
/// functions in the executable `exe` (its bytes).
pub fn kernel_range(exe: &Path, bytes: &[u8], symbol: &str) -> Result<KernelRange, EmulationError> {
    let file = object::File::parse(bytes).map_err(|e| elf_error(exe, e.to_string()))?;
    let position_independent = match file.kind() {
        ObjectKind::Executable => false,
        ObjectKind::Dynamic => true,
        other => return Err(elf_error(exe, format!("is not an executable ({other:?})"))),
    };
    let mut functions = Vec::new();
    for sym in file.symbols() {
        let Ok(name) = sym.name() else { continue };
        if sym.kind() != SymbolKind::Text || !sym.is_definition() || !belongs_to_kernel(name, symbol) {
            continue;
        }
        if sym.size() == 0 {
            return Err(elf_error(exe, format!("symbol `{name}` has no size")));
        }
        functions.push(CodeRange { name: name.to_string(), start: sym.address(), end: sym.address() + sym.size() });
    }
    if !functions.iter().any(|f| f.name == symbol) {
        return Err(elf_error(exe, format!("has no function symbol `{symbol}`")));
    }
    functions.sort_by_key(|f| f.start);
    functions.dedup_by_key(|f| f.start);
    if let Some(w) = functions.windows(2).find(|w| w[0].end > w[1].start) {
        return Err(elf_error(exe, format!("functions `{}` and `{}` overlap", w[0].name, w[1].name)));
    }
    let text_start = file
        .segments()
        .filter(|seg| matches!(seg.flags(), SegmentFlags::Elf { p_flags } if p_flags & PF_X != 0))
        .map(|seg| seg.address())
        .min()
        .ok_or_else(|| elf_error(exe, "has no executable segment"))?;
    Ok(KernelRange { symbol: symbol.to_string(), functions, text_start, position_independent })
}

/// The kernel's code in the executable (for cache keys): for each function,
/// its address and length (8 bytes each, little-endian), then its bytes.
pub fn kernel_code(exe: &Path, bytes: &[u8], range: &KernelRange) -> Result<Vec<u8>, EmulationError> {
    let file = object::File::parse(bytes).map_err(|e| elf_error(exe, e.to_string()))?;
    let mut code = Vec::new();
    for f in &range.functions {
        let section = file
            .sections()
            .find(|s| s.address() <= f.start && f.end <= s.address() + s.size())
            .ok_or_else(|| elf_error(exe, format!("no section holds `{}`", f.name)))?;
        let data = section
            .data_range(f.start, f.end - f.start)
            .map_err(|e| elf_error(exe, e.to_string()))?
            .ok_or_else(|| elf_error(exe, format!("no data for `{}`", f.name)))?;
        code.extend_from_slice(&f.start.to_le_bytes());
        code.extend_from_slice(&(f.end - f.start).to_le_bytes());
        code.extend_from_slice(data);
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::belongs_to_kernel;

    #[test]
    fn outlined_parallel_bodies_belong_to_their_kernel() {
        let k = "scaletune_matmul";
        assert!(belongs_to_kernel(k, k));
        assert!(belongs_to_kernel("scaletune_matmul.par.0", k));
        assert!(belongs_to_kernel("scaletune_matmul.par.12.body", k));
        assert!(!belongs_to_kernel("scaletune_matmul2", k));
        assert!(!belongs_to_kernel("scaletune_matmul_par.0", k));
        assert!(!belongs_to_kernel("scaletune_parallel_for", k));
        assert!(!belongs_to_kernel("scaletune_matmul.cold", k));
    }
}

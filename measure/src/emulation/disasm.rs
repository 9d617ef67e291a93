//! The kernel's instructions, disassembled from the linked executable with llvm-objdump-19, as llvm-mca input.
//!
//! `llvm-objdump-19 -d --no-show-raw-insn --start-address=S --stop-address=E`,
//! once per function of the kernel (its own and its outlined parallel-loop
//! bodies, see [`super::elf`]), prints one instruction per line, `ADDR: MNEMONIC OPERANDS`, with
//! annotations llvm-mca's assembler does not accept. [`mca_text`] rewrites
//! them: comments go (`// =1000` on AArch64, `# 0x708 <...>` on x86 and
//! RISC-V), and a PC-relative target printed as `0xADDR <symbol+off>`
//! (branches, calls, `adr`/`adrp`) becomes the undefined symbol
//! [`TARGET_SYMBOL`]: a block's timing does not depend on where its branch goes.

use super::elf::KernelRange;
use super::{run_tool, EmulationError};
use scaletune_codegen::target::{Arch, Target};
use std::path::Path;
use std::process::Command;

/// The symbol that replaces PC-relative targets in llvm-mca input.
pub const TARGET_SYMBOL: &str = "scaletune_pc_target";

/// One disassembled instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Insn {
    /// Link-time address.
    pub addr: u64,
    /// The instruction as llvm-objdump prints it (mnemonic and operands).
    pub text: String,
}

/// The `-mattr` option of llvm-mca for this target: the features the code
/// was compiled with on AArch64 and RISC-V; none on x86 (the host's feature
/// list is long and the CPU model implies it).
pub fn mattr(target: &Target) -> Option<String> {
    match target.arch {
        Arch::Aarch64 | Arch::Riscv64 if !target.features.is_empty() => Some(target.features.clone()),
        _ => None,
    }
}

/// The `--mattr` option of llvm-objdump: RISC-V only (its disassembler
/// needs the extensions; AArch64 and x86 disassemble every extension unless
/// told otherwise, which also shows instructions the target lacks).
fn objdump_mattr(target: &Target) -> Option<String> {
    match target.arch {
        Arch::Riscv64 if !target.features.is_empty() => Some(target.features.clone()),
        _ => None,
    }
}

/// Disassembles every function of `range` in the executable `exe`; the instructions by address.
pub fn disassemble(exe: &Path, range: &KernelRange, target: &Target) -> Result<Vec<Insn>, EmulationError> {
    let mut all = Vec::new();
    for f in &range.functions {
        let mut cmd = Command::new(scaletune_codegen::tools::llvm_objdump());
        cmd.args(["-d", "--no-show-raw-insn"])
            .arg(format!("--start-address={:#x}", f.start))
            .arg(format!("--stop-address={:#x}", f.end));
        if let Some(m) = objdump_mattr(target) {
            cmd.arg(format!("--mattr={m}"));
        }
        cmd.arg(exe);
        let out = run_tool(cmd, None)?;
        let insns = parse_objdump(&out);
        if insns.is_empty() {
            return Err(EmulationError::Elf {
                file: exe.display().to_string(),
                message: format!("llvm-objdump printed no instructions for `{}`", f.name),
            });
        }
        all.extend(insns);
    }
    all.sort_by_key(|i| i.addr);
    Ok(all)
}

/// Parses `ADDR: TEXT` lines of llvm-objdump's disassembly.
pub fn parse_objdump(out: &str) -> Vec<Insn> {
    let mut insns = Vec::new();
    for line in out.lines() {
        let Some((addr, text)) = line.split_once(':') else { continue };
        let addr = addr.trim();
        if addr.is_empty() || !addr.chars().all(|c| c.is_ascii_hexdigit()) {
            continue;
        }
        let Ok(addr) = u64::from_str_radix(addr, 16) else { continue };
        let text = text.trim();
        if text.is_empty() || text == "..." {
            continue;
        }
        insns.push(Insn { addr, text: text.to_string() });
    }
    insns
}

/// The instruction as llvm-mca input for `arch` (see the module documentation).
pub fn mca_text(text: &str, arch: Arch) -> String {
    let code = match arch {
        Arch::Aarch64 => text.split("//").next().unwrap_or(text),
        Arch::X86_64 | Arch::Riscv64 => text.split('#').next().unwrap_or(text),
    };
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    // `0xADDR <sym+off>` -> TARGET_SYMBOL
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>') else { break };
        let before = rest[..open].trim_end();
        let addr_start = before.rfind(|c: char| c.is_whitespace() || c == ',').map_or(0, |i| i + 1);
        let word = &before[addr_start..];
        if word.starts_with("0x") && word[2..].chars().all(|c| c.is_ascii_hexdigit()) && word.len() > 2 {
            out.push_str(&before[..addr_start]);
            out.push_str(TARGET_SYMBOL);
        } else {
            out.push_str(before);
        }
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// True if the instruction `text` (as llvm-objdump prints it) may transfer
/// control anywhere but to the next instruction: a branch, call, return or
/// trap. A block whose last instruction is none of these falls through.
pub fn is_control_transfer(text: &str, arch: Arch) -> bool {
    let m = text.split_whitespace().next().unwrap_or("").to_ascii_lowercase();
    let m = m.as_str();
    match arch {
        Arch::Aarch64 => {
            matches!(m, "b" | "bl" | "br" | "blr" | "cbz" | "cbnz" | "tbz" | "tbnz" | "eret" | "svc" | "hvc" | "smc")
                || matches!(m, "brk" | "hlt" | "udf")
                || ["b.", "bc.", "ret", "bra", "blra", "eret"].iter().any(|p| m.starts_with(p))
        }
        Arch::X86_64 => {
            m.starts_with('j')
                || m.starts_with("call")
                || m.starts_with("ret")
                || m.starts_with("loop")
                || m.starts_with("int")
                || m.starts_with("sys")
                || matches!(m, "ud0" | "ud1" | "ud2" | "hlt")
        }
        Arch::Riscv64 => {
            let m = m.strip_prefix("c.").unwrap_or(m);
            matches!(m, "j" | "jal" | "jalr" | "jr" | "ret" | "ecall" | "ebreak" | "mret" | "sret" | "unimp")
                || matches!(m, "beq" | "bne" | "blt" | "bge" | "bltu" | "bgeu" | "bgt" | "ble" | "bgtu" | "bleu")
                || matches!(m, "beqz" | "bnez" | "blez" | "bgez" | "bltz" | "bgtz")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_objdump_lines() {
        let out = "\ndrv:\tfile format elf64-littleaarch64\n\nDisassembly of section .text:\n\n\
                   0000000000237e28 <scaletune_scale_add>:\n  237e28:      \tcntw\tx8\n  \
                   237e2c:      \tmov\tx11, #0x3e8             // =1000\n  237e30: \t...\n";
        let insns = parse_objdump(out);
        assert_eq!(insns.len(), 2);
        assert_eq!(insns[0], Insn { addr: 0x237e28, text: "cntw\tx8".into() });
        assert_eq!(insns[1].addr, 0x237e2c);
    }

    #[test]
    fn rewrites_annotations_for_mca() {
        let t = TARGET_SYMBOL;
        assert_eq!(mca_text("mov\tx11, #0x3e8             // =1000", Arch::Aarch64), "mov x11, #0x3e8");
        assert_eq!(mca_text("b.ne\t0x237e44 <scaletune_scale_add+0x1c>", Arch::Aarch64), format!("b.ne {t}"));
        assert_eq!(mca_text("tbz\tw8, #0x3, 0x4010 <k+0x10>", Arch::Aarch64), format!("tbz w8, #0x3, {t}"));
        assert_eq!(mca_text("adrp\tx8, 0x29e000 <k+0x1c>", Arch::Aarch64), format!("adrp x8, {t}"));
        assert_eq!(
            mca_text("vpmovsxbq\t-0x11f2(%rip), %zmm1 # 0x708 <_IO_stdin_used+0x144>", Arch::X86_64),
            "vpmovsxbq -0x11f2(%rip), %zmm1"
        );
        assert_eq!(mca_text("jne\t0x17b0 <scaletune_scale_add+0x30>", Arch::X86_64), format!("jne {t}"));
        assert_eq!(mca_text("bnez\ta0, 0x1023c <k+0x3c>", Arch::Riscv64), format!("bnez a0, {t}"));
        assert_eq!(mca_text("vse32.v\tv12, (a4), v0.t", Arch::Riscv64), "vse32.v v12, (a4), v0.t");
    }

    #[test]
    fn branches_calls_and_returns_transfer_control_other_instructions_fall_through() {
        for (text, arch) in [
            ("b.ne\t0x237e44 <k+0x1c>", Arch::Aarch64),
            ("b\t0x23ccc0 <k+0x470>", Arch::Aarch64),
            ("cbz\tw25, 0x23d058 <k+0x808>", Arch::Aarch64),
            ("tbnz\tw8, #0x3, 0x4010 <k+0x10>", Arch::Aarch64),
            ("ret", Arch::Aarch64),
            ("bl\t0x1000 <f>", Arch::Aarch64),
            ("jne\t0x17b0 <k+0x30>", Arch::X86_64),
            ("callq\t0x17b0 <f>", Arch::X86_64),
            ("retq", Arch::X86_64),
            ("bnez\ta0, 0x1023c <k+0x3c>", Arch::Riscv64),
            ("bltu\ta0, a1, 0x1023c <k+0x3c>", Arch::Riscv64),
            ("c.j\t0x1023c <k+0x3c>", Arch::Riscv64),
            ("ret", Arch::Riscv64),
        ] {
            assert!(is_control_transfer(text, arch), "{text}");
        }
        for (text, arch) in [
            ("fmla\tv27.4s, v8.4s, v31.s[0]", Arch::Aarch64),
            ("bfmmla\tz0.s, z1.h, z2.h", Arch::Aarch64),
            ("bic\tx0, x1, x2", Arch::Aarch64),
            ("ldr\ts31, [x6, #0x2f4]", Arch::Aarch64),
            ("vfmadd231ps\t%ymm1, %ymm2, %ymm3", Arch::X86_64),
            ("bset\ta0, a1, a2", Arch::Riscv64),
            ("vse32.v\tv12, (a4), v0.t", Arch::Riscv64),
        ] {
            assert!(!is_control_transfer(text, arch), "{text}");
        }
    }
}

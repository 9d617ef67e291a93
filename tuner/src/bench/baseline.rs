//! Baselines as foreign kernels: C sources implementing the kernel ABI of a workload, compiled by clang-19 for the target and linked into the same harness as tuned kernels.

use super::BenchError;
use scaletune_codegen::target::{Arch, Target};
use scaletune_measure::{Built, CheckRequest, Harness, LinkExtras};
use scaletune_space::workload::Workload;
use std::process::Command;
use std::time::{Duration, Instant};

/// The compiler the baselines are built with.
pub const CLANG: &str = "clang-19";

/// Which baseline implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BaselineKind {
    /// The plain C loop nest, auto-vectorized by `clang-19 -O3` for the target's CPU.
    ClangNaive,
    /// `cblas_sgemm` from OpenBLAS, single-threaded (matmul on the host only).
    OpenBlas,
}

impl BaselineKind {
    /// The name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            BaselineKind::ClangNaive => "clang-naive",
            BaselineKind::OpenBlas => "openblas",
        }
    }
}

/// One C source and the workload it implements.
struct Source {
    /// The shipped workload's name.
    workload: &'static str,
    /// The argument tensors the source's parameters are, in order.
    tensors: &'static [&'static str],
    /// The integer parameters passed as `-DBENCH_<NAME>=value`.
    params: &'static [&'static str],
    /// The C text.
    text: &'static str,
}

const NAIVE: &[Source] = &[
    Source {
        workload: "matmul",
        tensors: &["A", "B", "C"],
        params: &["M", "N", "K"],
        text: include_str!("c/naive_matmul.c"),
    },
    Source {
        workload: "conv2d_nhwc",
        tensors: &["In", "Wt", "Out"],
        params: &["N", "H", "WI", "C", "F", "KH", "KW", "S"],
        text: include_str!("c/naive_conv2d_nhwc.c"),
    },
    Source { workload: "sum_cos", tensors: &["X", "S"], params: &["N"], text: include_str!("c/naive_sum_cos.c") },
];

const OPENBLAS: Source = Source {
    workload: "matmul",
    tensors: &["A", "B", "C"],
    params: &["M", "N", "K"],
    text: include_str!("c/openblas_matmul.c"),
};

/// A baseline compiled to an object for one workload and target.
#[derive(Clone, Debug)]
pub struct ForeignKernel {
    /// Which baseline.
    pub kind: BaselineKind,
    /// The relocatable object.
    pub object: Vec<u8>,
    /// The symbol it exports (the kernel ABI of the workload).
    pub symbol: String,
    /// What the harness must link besides the target's libraries.
    pub link: LinkExtras,
    /// The compiler command (without the source and output paths), for reports.
    pub command: Vec<String>,
    /// The widest vector code clang emitted (see [`vector_code`]); `library` for OpenBLAS.
    pub vector_code: String,
}

/// True if `kind` has an implementation of `workload` on `target`.
pub fn available(kind: BaselineKind, workload: &Workload, target: &Target) -> bool {
    match kind {
        BaselineKind::ClangNaive => NAIVE.iter().any(|s| s.workload == workload.name),
        BaselineKind::OpenBlas => workload.name == OPENBLAS.workload && target.is_native(),
    }
}

/// The source of `kind` for `workload`, checked against the workload's
/// argument tensors (a user's workload file reusing a shipped name with
/// other tensors is refused, not miscomputed).
fn source(kind: BaselineKind, workload: &Workload, target: &Target) -> Result<&'static Source, BenchError> {
    let src = match kind {
        BaselineKind::ClangNaive => NAIVE.iter().find(|s| s.workload == workload.name),
        BaselineKind::OpenBlas => (workload.name == OPENBLAS.workload).then_some(&OPENBLAS),
    };
    let Some(src) = src else {
        return Err(BenchError::NoBaseline { kind: kind.name(), workload: workload.name.clone() });
    };
    if kind == BaselineKind::OpenBlas && !target.is_native() {
        return Err(BenchError::Unsupported(format!(
            "the OpenBLAS baseline runs on the host only, not `{}`",
            target.name
        )));
    }
    let names: Vec<String> = workload.arg_tensors().iter().map(|id| workload.tensor(*id).name.clone()).collect();
    if names != src.tensors || !workload.scalars.is_empty() {
        return Err(BenchError::Unsupported(format!(
            "workload `{}` has arguments ({}), the {} baseline implements ({})",
            workload.name,
            names.join(", "),
            kind.name(),
            src.tensors.join(", ")
        )));
    }
    Ok(src)
}

/// The clang flags that compile C for `target` as the bench compares it:
/// `-march=native` on the host, `-mcpu=CPU` (auto-vectorized SVE on
/// `neoverse-v1`) on AArch64 targets.
pub fn target_flags(target: &Target) -> Result<Vec<String>, BenchError> {
    if target.is_native() {
        return Ok(vec!["-march=native".into(), "-fPIC".into()]);
    }
    match target.arch {
        Arch::Aarch64 => Ok(vec![format!("--target={}", target.triple), format!("-mcpu={}", target.cpu)]),
        Arch::Riscv64 | Arch::X86_64 => Err(BenchError::Unsupported(format!(
            "no clang baseline flags for target `{}` (host and AArch64 targets only)",
            target.name
        ))),
    }
}

/// Compiles the `kind` baseline of `workload` for `target` with `clang-19 -O3`.
pub fn compile(kind: BaselineKind, workload: &Workload, target: &Target) -> Result<ForeignKernel, BenchError> {
    let src = source(kind, workload, target)?;
    let symbol = format!("bench_{}_{}", kind.name().replace('-', "_"), workload.name);
    let mut command = vec![CLANG.to_string(), "-O3".into()];
    command.extend(target_flags(target)?);
    command.push("-std=c11".into());
    command.push(format!("-DBENCH_SYMBOL={symbol}"));
    for name in src.params {
        let value = workload.params.iter().find(|(p, _)| p == name).map(|(_, v)| *v).ok_or_else(|| {
            BenchError::Unsupported(format!("workload `{}` has no parameter `{name}`", workload.reference()))
        })?;
        command.push(format!("-DBENCH_{name}={value}"));
    }
    let dir = scaletune_measure::cleanup::ScratchDir::new("scaletune-bench-")
        .map_err(|e| BenchError::Io(format!("creating a temporary directory: {e}")))?;
    let c_file = dir.path().join("baseline.c");
    let o_file = dir.path().join("baseline.o");
    std::fs::write(&c_file, src.text).map_err(|e| BenchError::Io(format!("writing {}: {e}", c_file.display())))?;
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..]).arg("-c").arg(&c_file).arg("-o").arg(&o_file);
    run_tool(&mut cmd, &command)?;
    let object = std::fs::read(&o_file).map_err(|e| BenchError::Io(format!("reading {}: {e}", o_file.display())))?;
    let link = match kind {
        BaselineKind::ClangNaive => LinkExtras::default(),
        BaselineKind::OpenBlas => LinkExtras::libraries(["openblas"]),
    };
    let vector_code = match kind {
        BaselineKind::ClangNaive => vector_code(&disassemble(&o_file)?),
        // The wrapper only calls the library, whose kernels OpenBLAS picks at run time.
        BaselineKind::OpenBlas => "library".to_string(),
    };
    Ok(ForeignKernel { kind, object, symbol, link, command, vector_code })
}

/// The disassembly of an object file (llvm-objdump-19).
fn disassemble(object: &std::path::Path) -> Result<String, BenchError> {
    let tool = scaletune_codegen::tools::llvm_objdump();
    let shown = vec![tool.clone(), "-d".into(), object.display().to_string()];
    let mut cmd = Command::new(&tool);
    cmd.arg("-d").arg("--no-show-raw-insn").arg(object);
    let out = run_tool(&mut cmd, &shown)?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The widest vector arithmetic a disassembly holds: `SVE` (on z
/// registers), `NEON` (on v registers), `AVX-512` (zmm), `AVX2` (ymm),
/// `SSE` (packed on xmm) or `scalar` — what clang's auto-vectorizer chose.
/// Arithmetic means float multiplies, adds and FMAs; moves and shuffles of
/// scalar code do not count.
pub fn vector_code(disassembly: &str) -> String {
    let mut widest = 0;
    for line in disassembly.lines() {
        let Some((_, insn)) = line.split_once(':') else { continue };
        let mut parts = insn.trim().splitn(2, char::is_whitespace);
        let mnemonic = parts.next().unwrap_or("");
        let operands = parts.next().unwrap_or("");
        let arm = ["fmla", "fmad", "fmul", "fadd", "fmls", "fmsb"].iter().any(|m| mnemonic.starts_with(m));
        let x86 = mnemonic.ends_with("ps") && ["mul", "add", "fma"].iter().any(|m| mnemonic.contains(m));
        let rank = if arm && (operands.contains(" z") || operands.starts_with('z')) {
            5
        } else if arm && (operands.starts_with('v') || operands.contains(" v")) {
            4
        } else if x86 && operands.contains("zmm") {
            3
        } else if x86 && operands.contains("ymm") {
            2
        } else if x86 && operands.contains("xmm") {
            1
        } else {
            0
        };
        widest = widest.max(rank);
    }
    ["scalar", "SSE", "AVX2", "AVX-512", "NEON", "SVE"][widest].to_string()
}

/// Runs a tool to completion; a failure names the command and its stderr.
pub(crate) fn run_tool(cmd: &mut Command, shown: &[String]) -> Result<std::process::Output, BenchError> {
    let out = scaletune_measure::cleanup::output(cmd)
        .map_err(|e| BenchError::Tool { command: shown.join(" "), message: e.to_string() })?;
    if !out.status.success() {
        return Err(BenchError::Tool {
            command: shown.join(" "),
            message: format!("{}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim()),
        });
    }
    Ok(out)
}

/// Links `kernel` into a harness for `workload` on `target` (the same driver,
/// inputs and reference as a tuned kernel), ready for any runner.
pub fn harness(
    kernel: &ForeignKernel,
    workload: &Workload,
    target: &Target,
    vl_bits: Vec<u32>,
    timeout: Duration,
) -> Result<Built, BenchError> {
    let start = Instant::now();
    let req = CheckRequest {
        workload,
        target,
        object: &kernel.object,
        symbol: &kernel.symbol,
        vl_bits,
        seed: 1,
        timeout,
        work_dir: None,
    };
    let harness = Harness::build_with_link(&req, &kernel.link)?;
    Ok(Built::new(0, format!("baseline:{}", kernel.kind.name()), harness, start.elapsed().as_secs_f64()))
}

#[cfg(test)]
mod tests {
    use super::vector_code;

    #[test]
    fn the_widest_vector_arithmetic_names_the_code() {
        let sve = "  94:\tfmad\tz2.s, p0/m, z1.s, z4.s\n  98:\tfmla\tv3.4s, v18.4s, v17.s[0]\n";
        assert_eq!(vector_code(sve), "SVE");
        assert_eq!(vector_code("  f0:\tfmla\tv3.4s, v18.4s, v17.s[0]\n  f4:\tfmov\ts0, wzr\n"), "NEON");
        assert_eq!(vector_code("  10:\tvfmadd231ps\t(%rax), %ymm1, %ymm0\n"), "AVX2");
        assert_eq!(
            vector_code("  10:\tvfmadd231ps\t%zmm2, %zmm1, %zmm0\n  14:\tvaddps\t%ymm1, %ymm1, %ymm0\n"),
            "AVX-512"
        );
        assert_eq!(vector_code("  10:\tvaddss\t%xmm1, %xmm0, %xmm0\n  14:\tcallq\tcosf\n"), "scalar");
        assert_eq!(vector_code("  10:\tfadd\ts0, s0, s1\n"), "scalar");
    }
}

//! The thread-pool runtime in every object with a parallel loop: compiled per target, cached, merged into the kernel object.
//!
//! `codegen/runtime/scaletune_rt.c` is embedded in the binary. For a target
//! it is compiled once with the target's C compiler (`target.cc` without its
//! linking flags, plus `-c -O2 -fPIC`) into an object cached under
//! `<temp dir>/scaletune-runtime/<key>.o`, where the key hashes the source,
//! the command, the triple, the features and the compiler's `--version`
//! (written to a temporary file and renamed, so concurrent builders never see
//! a partial entry). The kernel object and the runtime object are then merged
//! into one relocatable object (`ld.lld -r`), and `scaletune_parallel_for` is
//! made a local symbol (`llvm-objcopy --localize-symbol`): each kernel object
//! carries its own copy of the code (two kernels in one program never clash,
//! and the kernel stays the object's only global function), while the pool
//! state is a weak, versioned data symbol that every copy shares.
//!
//! Kernels that use ZA get the SME ABI support routines the same way
//! (`codegen/runtime/scaletune_sme_abi.c`: `__arm_tpidr2_save`,
//! `__arm_tpidr2_restore`, `__arm_za_disable`, `__arm_get_current_vg`,
//! made local to the object).

use super::parallel::PARALLEL_FOR;
use super::LlvmError;
use crate::target::{Arch, Target};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

/// The C source of the runtime.
pub const RUNTIME_SOURCE: &str = include_str!("../../runtime/scaletune_rt.c");

/// The C source of the SME ABI support routines.
pub const SME_ABI_SOURCE: &str = include_str!("../../runtime/scaletune_sme_abi.c");

/// The SME ABI routines, local to each kernel object that uses ZA.
pub const SME_ABI_SYMBOLS: &[&str] =
    &["__arm_tpidr2_save", "__arm_tpidr2_restore", "__arm_za_disable", "__arm_get_current_vg"];

/// One runtime source: the thread pool or the SME ABI routines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Part {
    /// `scaletune_rt.c`, for parallel loops.
    ThreadPool,
    /// `scaletune_sme_abi.c`, for kernels that use ZA.
    SmeAbi,
}

impl Part {
    fn source(self) -> &'static str {
        match self {
            Part::ThreadPool => RUNTIME_SOURCE,
            Part::SmeAbi => SME_ABI_SOURCE,
        }
    }

    /// The source's file name in scratch directories (relative, so that no
    /// temporary path reaches an object's symbol table).
    fn file(self) -> &'static str {
        match self {
            Part::ThreadPool => "scaletune_rt.c",
            Part::SmeAbi => "scaletune_sme_abi.c",
        }
    }

    fn object(self) -> &'static str {
        match self {
            Part::ThreadPool => "scaletune_rt.o",
            Part::SmeAbi => "scaletune_sme_abi.o",
        }
    }

    fn local_symbols(self) -> &'static [&'static str] {
        match self {
            Part::ThreadPool => &[PARALLEL_FOR],
            Part::SmeAbi => SME_ABI_SYMBOLS,
        }
    }
}

/// File names inside scratch directories.
const KERNEL_OBJECT: &str = "kernel.o";
const MERGED_OBJECT: &str = "merged.o";

/// Arguments of a `cc` command that only matter when linking.
fn is_link_flag(arg: &str) -> bool {
    const EXACT: &[&str] =
        &["-static", "-static-pie", "-shared", "-pie", "-no-pie", "-rdynamic", "-nostdlib", "-nostartfiles"];
    EXACT.contains(&arg) || ["-fuse-ld=", "-Wl,", "-l", "-L"].iter().any(|p| arg.starts_with(p))
}

/// The command compiling the runtime for `target`, without the input and output names.
pub fn compile_command(target: &Target) -> Result<Vec<String>, LlvmError> {
    if target.cc.is_empty() {
        return Err(runtime_error("compiling", format!("target `{}` has an empty cc command", target.name)));
    }
    let mut cmd: Vec<String> = target.cc.iter().take(1).cloned().collect();
    cmd.extend(target.cc.iter().skip(1).filter(|a| !is_link_flag(a)).cloned());
    if target.arch == Arch::Aarch64 {
        // LSE helpers (`__aarch64_ldadd8_acq_rel`) would need libgcc.
        cmd.push("-mno-outline-atomics".into());
    }
    cmd.extend(["-c", "-O2", "-fPIC", "-fno-addrsig", "-w"].map(String::from));
    Ok(cmd)
}

fn runtime_error(step: &'static str, message: String) -> LlvmError {
    LlvmError::Runtime { step, message }
}

/// Merges the runtime `parts` into `kernel_object` for `target`: one relocatable object.
pub(crate) fn link_runtime(target: &Target, kernel_object: &[u8], parts: &[Part]) -> Result<Vec<u8>, LlvmError> {
    let scratch = scratch(&cache_dir()).map_err(|e| runtime_error("merging", e))?;
    let write = |name: &str, bytes: &[u8]| {
        std::fs::write(scratch.path().join(name), bytes)
            .map_err(|e| runtime_error("merging", format!("writing {name}: {e}")))
    };
    write(KERNEL_OBJECT, kernel_object)?;
    let mut args = vec!["-r", KERNEL_OBJECT];
    for &part in parts {
        write(part.object(), &runtime_object(target, part)?)?;
        args.push(part.object());
    }
    args.extend(["-o", MERGED_OBJECT]);
    let ld = crate::tools::ld_lld();
    run(Command::new(&ld).args(&args), scratch.path(), "merging")?;
    let objcopy = crate::tools::llvm_objcopy();
    let localize: Vec<String> =
        parts.iter().flat_map(|p| p.local_symbols()).map(|s| format!("--localize-symbol={s}")).collect();
    run(Command::new(&objcopy).args(&localize).arg(MERGED_OBJECT), scratch.path(), "merging")?;
    std::fs::read(scratch.path().join(MERGED_OBJECT))
        .map_err(|e| runtime_error("merging", format!("reading {MERGED_OBJECT}: {e}")))
}

/// A runtime object for `target`: from this process's memo, the disk cache, or the compiler.
fn runtime_object(target: &Target, part: Part) -> Result<Arc<Vec<u8>>, LlvmError> {
    static MEMO: OnceLock<Mutex<HashMap<String, Arc<Vec<u8>>>>> = OnceLock::new();
    let cmd = compile_command(target)?;
    let memo_key = format!("{}\0{}\0{}\0{}", part.file(), cmd.join("\0"), target.triple, target.features);
    // Holding the lock while building keeps one process from compiling twice.
    let mut memo = MEMO.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    if let Some(obj) = memo.get(&memo_key) {
        return Ok(obj.clone());
    }
    let version = Command::new(&cmd[0])
        .arg("--version")
        .output()
        .map_err(|e| runtime_error("compiling", format!("cannot run `{} --version`: {e}", cmd[0])))?;
    let key = hash_hex(&[part.source().as_bytes(), memo_key.as_bytes(), &version.stdout]);
    let dir = cache_dir();
    let path = dir.join(format!("{key}.o"));
    let obj = match std::fs::read(&path) {
        Ok(bytes) if bytes.starts_with(b"\x7fELF") => bytes,
        _ => {
            let bytes = compile_runtime(&cmd, &dir, part)?;
            store(&dir, &path, &bytes)?;
            bytes
        }
    };
    let obj = Arc::new(obj);
    memo.insert(memo_key, obj.clone());
    Ok(obj)
}

/// Compiles an embedded source with `cmd` in a scratch directory.
fn compile_runtime(cmd: &[String], dir: &Path, part: Part) -> Result<Vec<u8>, LlvmError> {
    let scratch = scratch(dir).map_err(|e| runtime_error("compiling", e))?;
    let (file, object) = (part.file(), part.object());
    std::fs::write(scratch.path().join(file), part.source())
        .map_err(|e| runtime_error("compiling", format!("writing {file}: {e}")))?;
    run(Command::new(&cmd[0]).args(&cmd[1..]).args([file, "-o", object]), scratch.path(), "compiling")?;
    std::fs::read(scratch.path().join(object)).map_err(|e| runtime_error("compiling", format!("reading {object}: {e}")))
}

/// Writes a cache entry atomically: a temporary file in the same directory, then a rename.
fn store(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), LlvmError> {
    let fail = |e: std::io::Error| runtime_error("caching", format!("writing {}: {e}", path.display()));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(fail)?;
    std::io::Write::write_all(&mut tmp, bytes).map_err(fail)?;
    tmp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}

/// Runs `cmd` in `dir`, turning a failure into [`LlvmError::Runtime`].
fn run(cmd: &mut Command, dir: &Path, step: &'static str) -> Result<(), LlvmError> {
    let shown = format!("{cmd:?}");
    let out = cmd.current_dir(dir).output().map_err(|e| runtime_error(step, format!("cannot run {shown}: {e}")))?;
    if !out.status.success() {
        return Err(runtime_error(
            step,
            format!("{shown} failed with {}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim_end()),
        ));
    }
    Ok(())
}

/// The directory of cached runtime objects and scratch directories.
fn cache_dir() -> PathBuf {
    crate::tools::cache_dir("runtime")
}

/// A scratch directory under `parent`, removed on drop (`tempfile`).
fn scratch(parent: &Path) -> Result<tempfile::TempDir, String> {
    std::fs::create_dir_all(parent).map_err(|e| format!("creating {}: {e}", parent.display()))?;
    tempfile::Builder::new()
        .prefix("tmp-")
        .tempdir_in(parent)
        .map_err(|e| format!("creating a scratch directory in {}: {e}", parent.display()))
}

/// FNV-1a (128-bit) of the parts, each followed by its length, as hex.
fn hash_hex(parts: &[&[u8]]) -> String {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013b;
    let mut h = OFFSET;
    for part in parts {
        for &byte in part.iter().chain(&(part.len() as u64).to_le_bytes()) {
            h ^= u128::from(byte);
            h = h.wrapping_mul(PRIME);
        }
    }
    format!("{h:032x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_flags_are_dropped_from_the_compile_command() {
        let t = Target::load("rvv").expect("rvv target");
        let cmd = compile_command(&t).expect("command");
        assert_eq!(
            cmd,
            [
                "clang-19",
                "--target=riscv64-linux-gnu",
                "-march=rv64gcv",
                "-O2",
                "-c",
                "-O2",
                "-fPIC",
                "-fno-addrsig",
                "-w"
            ]
        );
    }

    #[test]
    fn hash_depends_on_every_part_and_its_boundaries() {
        let a = hash_hex(&[b"ab", b"c"]);
        assert_eq!(a, hash_hex(&[b"ab", b"c"]));
        assert_ne!(a, hash_hex(&[b"a", b"bc"]));
        assert_ne!(a, hash_hex(&[b"ab", b"d"]));
        assert_eq!(a.len(), 32);
    }
}

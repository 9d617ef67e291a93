//! The instruction-count TCG plugin: its source, its build on first use, its QEMU arguments and its output.
//!
//! The C source ships in `measure/plugin/insn_count.c` and is embedded in
//! the binary. The first call of [`plugin_library`] in a process compiles it
//! with the system C compiler (`cc`, else `gcc`, else `clang-19`; `-shared
//! -fPIC -O2`, no QEMU header or library needed) into
//! `DIR/insn_count-<hash of the source>.so`, where `DIR` is
//! `$SCALETUNE_PLUGIN_DIR` or `scaletune-plugin` in the temporary directory.
//! An existing library with the same hash is reused; a new one is written
//! to a temporary name and renamed into place, so concurrent processes
//! never load a partial file.
//!
//! The plugin writes, at exit, the file [`parse_counts`] reads (format in
//! the C source): the load bias, the number of guest threads, the
//! instructions of the whole process and of the kernel, and one line per
//! translated block of the kernel.

use super::elf::KernelRange;
use super::{run_tool, EmulationError};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The plugin's C source.
pub const SOURCE: &str = include_str!("../../plugin/insn_count.c");

/// The most code ranges the plugin takes (`MAX_RANGES` in the C source).
const MAX_RANGES: usize = 256;

/// The first line of the plugin's output.
const HEADER: &str = "scaletune-insn-count 2";

/// Executions of one straight-line run of kernel instructions (one translated block's part inside the kernel).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockCount {
    /// Link-time address of the first instruction.
    pub addr: u64,
    /// Number of instructions, contiguous from `addr`.
    pub n_insns: u64,
    /// Their size in bytes.
    pub bytes: u64,
    /// How many times the block executed.
    pub executions: u64,
}

/// What the plugin counted in one run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Runtime address minus link-time address of the code (0 unless PIE).
    pub bias: u64,
    /// Guest threads the process started, the main thread included. Counts
    /// are exact only for 1 (the plugin's counters are not atomic).
    pub threads: u64,
    /// Instructions executed by the whole process (driver, libc, loader, kernel).
    pub process_instructions: u64,
    /// Instructions executed inside the kernel's code ranges.
    pub kernel_instructions: u64,
    /// The kernel's blocks, by address.
    pub blocks: Vec<BlockCount>,
}

/// The directory the plugin library is built in: `SCALETUNE_PLUGIN_DIR`, else
/// the `plugin` cache directory of [`scaletune_codegen::tools::cache_dir`].
pub fn plugin_dir() -> PathBuf {
    match std::env::var_os("SCALETUNE_PLUGIN_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => scaletune_codegen::tools::cache_dir("plugin"),
    }
}

/// The path of the built plugin library, building it on the first call of the process.
pub fn plugin_library() -> Result<PathBuf, EmulationError> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT.get_or_init(|| build_plugin(&plugin_dir()).map_err(|e| e.to_string())).clone().map_err(EmulationError::Plugin)
}

/// Compiles the plugin into `dir` unless a library of the same source is there.
pub fn build_plugin(dir: &Path) -> Result<PathBuf, EmulationError> {
    let io = |what: String| move |source| EmulationError::Io { what, error: source };
    let hash: String = Sha256::digest(SOURCE.as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect();
    let lib = dir.join(format!("insn_count-{hash}.so"));
    if lib.is_file() {
        return Ok(lib);
    }
    std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
    let unique = format!("{}-{:?}", std::process::id(), std::thread::current().id());
    let unique: String = unique.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
    let src = dir.join(format!("insn_count-{hash}-{unique}.c"));
    let tmp = dir.join(format!("insn_count-{hash}-{unique}.so.tmp"));
    std::fs::write(&src, SOURCE).map_err(io(format!("writing {}", src.display())))?;
    let mut last_err = None;
    for cc in scaletune_codegen::tools::HOST_C_COMPILERS {
        let mut cmd = Command::new(cc);
        cmd.args(["-shared", "-fPIC", "-O2", "-fvisibility=hidden", "-o"]).arg(&tmp).arg(&src);
        match run_tool(cmd, None) {
            Ok(_) => {
                last_err = None;
                break;
            }
            // Only a missing compiler moves on to the next one.
            Err(e @ EmulationError::Tool { .. }) => last_err = Some(e),
            Err(e) => {
                last_err = Some(e);
                break;
            }
        }
    }
    let _ = std::fs::remove_file(&src);
    if let Some(e) = last_err {
        let _ = std::fs::remove_file(&tmp);
        return Err(EmulationError::Plugin(format!("building the plugin failed: {e}")));
    }
    std::fs::rename(&tmp, &lib).map_err(io(format!("renaming into {}", lib.display())))?;
    Ok(lib)
}

/// The QEMU arguments that load the plugin for the kernel's functions in `range`, writing its counts to `out`.
pub fn qemu_args(library: &Path, range: &KernelRange, out: &Path) -> Result<Vec<String>, EmulationError> {
    for p in [library, out] {
        // QEMU's option parser splits on commas.
        if p.to_string_lossy().contains(',') {
            return Err(EmulationError::Plugin(format!("path {} contains a comma", p.display())));
        }
    }
    if range.functions.is_empty() || range.functions.len() > MAX_RANGES {
        return Err(EmulationError::Plugin(format!(
            "{} code ranges for `{}` (the plugin takes 1 to {MAX_RANGES})",
            range.functions.len(),
            range.symbol
        )));
    }
    let mut arg = library.display().to_string();
    for f in &range.functions {
        arg.push_str(&format!(",range={:#x}:{:#x}", f.start, f.end));
    }
    arg.push_str(&format!(",text={:#x},out={}", range.text_start, out.display()));
    Ok(vec!["-plugin".to_string(), arg])
}

/// Parses the plugin's output file.
pub fn parse_counts(text: &str) -> Result<Counts, EmulationError> {
    let bad = |line: usize, why: &str| EmulationError::Plugin(format!("output line {}: {why}", line + 1));
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, HEADER)) => {}
        _ => return Err(EmulationError::Plugin(format!("output does not start with `{HEADER}`"))),
    }
    let num = |s: &str| -> Option<u64> {
        match s.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => s.parse().ok(),
        }
    };
    let mut counts = Counts::default();
    let (mut seen_total, mut seen_kernel, mut seen_threads) = (false, false, false);
    for (i, line) in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["bias", v] => counts.bias = num(v).ok_or_else(|| bad(i, "bad bias"))?,
            ["threads", v] => {
                counts.threads = num(v).ok_or_else(|| bad(i, "bad thread count"))?;
                seen_threads = true;
            }
            ["total", v] => {
                counts.process_instructions = num(v).ok_or_else(|| bad(i, "bad total"))?;
                seen_total = true;
            }
            ["kernel", v] => {
                counts.kernel_instructions = num(v).ok_or_else(|| bad(i, "bad kernel count"))?;
                seen_kernel = true;
            }
            ["tb", addr, n, bytes, execs] => {
                let field = |s: &str| num(s).ok_or_else(|| bad(i, "bad block line"));
                counts.blocks.push(BlockCount {
                    addr: field(addr)?,
                    n_insns: field(n)?,
                    bytes: field(bytes)?,
                    executions: field(execs)?,
                });
            }
            [] => {}
            _ => return Err(bad(i, "unknown line")),
        }
    }
    if !seen_total || !seen_kernel || !seen_threads {
        return Err(EmulationError::Plugin("output misses the thread, total or kernel count (truncated?)".into()));
    }
    let sum: u64 = counts.blocks.iter().map(|b| b.n_insns * b.executions).sum();
    if sum != counts.kernel_instructions {
        return Err(EmulationError::Plugin(format!(
            "block counts add up to {sum} instructions, not the {} reported",
            counts.kernel_instructions
        )));
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_plugin_output() {
        let text = "scaletune-insn-count 2\nbias 0x0\nthreads 1\ntotal 26180\nkernel 2258\n\
                    tb 0x237e28 16 64 1\ntb 0x237e44 9 36 249\ntb 0x237e68 1 4 1\n";
        let c = parse_counts(text).expect("parses");
        assert_eq!((c.bias, c.threads, c.process_instructions, c.kernel_instructions), (0, 1, 26180, 2258));
        assert_eq!(c.blocks[1], BlockCount { addr: 0x237e44, n_insns: 9, bytes: 36, executions: 249 });
        let wrong_sum = text.replace("kernel 2258", "kernel 2259");
        assert!(parse_counts(&wrong_sum).is_err());
        assert!(parse_counts("something else\n").is_err());
        assert!(parse_counts("scaletune-insn-count 2\nbias 0x0\n").is_err());
        assert!(parse_counts(&text.replace("threads 1\n", "")).is_err(), "the thread count is required");
        assert!(parse_counts(&text.replace("count 2", "count 1")).is_err(), "version 1 has no thread count");
    }

    #[test]
    fn arguments_name_every_range_and_refuse_commas() {
        use super::super::elf::CodeRange;
        let f = |name: &str, start: u64, end: u64| CodeRange { name: name.into(), start, end };
        let mut range = KernelRange {
            symbol: "k".into(),
            functions: vec![f("k", 0x1000, 0x1040), f("k.par.0", 0x1040, 0x1100)],
            text_start: 0x800,
            position_independent: false,
        };
        let args = qemu_args(Path::new("/p/ic.so"), &range, Path::new("/o/c.txt")).expect("args");
        assert_eq!(args, ["-plugin", "/p/ic.so,range=0x1000:0x1040,range=0x1040:0x1100,text=0x800,out=/o/c.txt"]);
        assert!(qemu_args(Path::new("/p,q/ic.so"), &range, Path::new("/o")).is_err());
        range.functions.clear();
        assert!(qemu_args(Path::new("/p/ic.so"), &range, Path::new("/o")).is_err());
    }
}

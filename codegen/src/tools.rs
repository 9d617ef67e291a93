//! Where scaletune finds external tools and keeps its caches: the one policy every cache and tool lookup of the workspace follows.
//!
//! Caches (each a directory of content-addressed files, written atomically,
//! safe to share between processes and to delete at any time):
//!
//! | kind | what | owner |
//! |---|---|---|
//! | `artifacts` | kernel objects and linked executables | `scaletune_measure::ArtifactCache` |
//! | `runtime` | the thread-pool runtime compiled per target | [`crate::llvm`] |
//! | `plugin` | the QEMU instruction-counting plugin | `scaletune_measure::emulation::plugin` |
//! | `mca` | llvm-mca block costs per kernel and CPU model | `scaletune_measure::emulation::CycleEstimator` |
//! | `reference` | reference outputs per workload and input seed | `scaletune_measure::harness::expected` |
//!
//! [`cache_dir`] puts them under `$SCALETUNE_CACHE_DIR/<kind>` when that is
//! set, else under the system's temporary directory as `scaletune-<kind>`.
//! Tools are looked up on `PATH` by [`find_tool`], versioned LLVM 19 names
//! first.

use std::path::PathBuf;

/// The environment variable that moves every cache.
pub const CACHE_DIR_ENV: &str = "SCALETUNE_CACHE_DIR";

/// The directory of the cache of `kind` (`artifacts`, `runtime`, `plugin`, `mca`).
pub fn cache_dir(kind: &str) -> PathBuf {
    cache_dir_under(std::env::var_os(CACHE_DIR_ENV), kind)
}

/// [`cache_dir`] with the variable's value given.
fn cache_dir_under(root: Option<std::ffi::OsString>, kind: &str) -> PathBuf {
    match root {
        Some(d) if !d.is_empty() => PathBuf::from(d).join(kind),
        _ => std::env::temp_dir().join(format!("scaletune-{kind}")),
    }
}

/// The first of `names` found on `PATH` (else the first name, so that the
/// error of running it names the tool that is missing).
pub fn find_tool(names: &[&str]) -> String {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in names {
        if std::env::split_paths(&path).any(|d| d.join(name).is_file()) {
            return (*name).to_string();
        }
    }
    names.first().map_or_else(String::new, |n| (*n).to_string())
}

/// LLVM 19's linker, for merging relocatable objects.
pub fn ld_lld() -> String {
    find_tool(&["ld.lld-19", "ld.lld"])
}

/// LLVM 19's objcopy.
pub fn llvm_objcopy() -> String {
    find_tool(&["llvm-objcopy-19", "llvm-objcopy"])
}

/// LLVM 19's disassembler (Debian's unversioned one may be an older LLVM).
pub fn llvm_objdump() -> String {
    find_tool(&["llvm-objdump-19"])
}

/// LLVM 19's machine-code analyzer (only LLVM 19 knows every model scaletune names).
pub fn llvm_mca() -> String {
    find_tool(&["llvm-mca-19"])
}

/// C compilers for host-side helpers (the QEMU plugin), in order of preference.
pub const HOST_C_COMPILERS: &[&str] = &["cc", "gcc", "clang-19"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caches_follow_one_policy() {
        assert_eq!(cache_dir_under(None, "mca"), std::env::temp_dir().join("scaletune-mca"));
        assert_eq!(cache_dir_under(Some("".into()), "plugin"), std::env::temp_dir().join("scaletune-plugin"));
        assert_eq!(
            cache_dir_under(Some("/var/cache/st".into()), "artifacts"),
            PathBuf::from("/var/cache/st/artifacts")
        );
    }

    #[test]
    fn tools_are_found_on_path_or_named() {
        assert_eq!(find_tool(&["scaletune-no-such-tool-a", "scaletune-no-such-tool-b"]), "scaletune-no-such-tool-a");
        assert_eq!(find_tool(&["scaletune-no-such-tool", "sh"]), "sh");
    }
}

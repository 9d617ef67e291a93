//! The content-addressed on-disk cache of kernel objects and linked executables.
//!
//! The key of an artifact ([`artifact_key`]) is the SHA-256 of everything
//! the object depends on: the workload (its reference string and its full
//! JSON form, so that two workload files with one name do not collide), the
//! target (name, triple, CPU, features, vector capabilities), the LLVM
//! options, the trace's JSON form, the scaletune version, the version of
//! the LLVM library it was built against, and the build identity
//! [`BUILD_ID`]: a hash of the sources of the schedule language,
//! codegen, the parallel-loop runtime, the builder and the harness, computed
//! by `measure/build.rs`, so that a changed compiler never reuses objects
//! an older one wrote.
//!
//! The linked executable (generated driver + kernel object + target
//! libraries) is cached too, under [`executable_key`]: the artifact key,
//! the driver's source, the target's `cc` command and libraries, and the
//! version the C compiler reports.
//!
//! Entries live at `DIR/<first two hex digits>/<key>.o` (objects) and
//! `<key>.exe` (executables), written to a temporary file and renamed into
//! place, so concurrent builders (threads or processes) never see a partial
//! file. An entry that does not look like an ELF file is ignored (and
//! overwritten by the next build).

use scaletune_codegen::llvm::CompileOptions;
use scaletune_codegen::target::Target;
use scaletune_space::trace::Trace;
use scaletune_space::workload::Workload;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// The identity of the code that builds artifacts (see the module documentation).
pub const BUILD_ID: &str = env!("SCALETUNE_BUILD_ID");

/// Hashes named, length-prefixed fields (so that no two different inputs hash the same text).
struct Fields(Sha256);

impl Fields {
    fn new() -> Fields {
        Fields(Sha256::new())
    }

    fn field(&mut self, name: &str, value: &str) {
        self.0.update(format!("{name}:{}:", value.len()).as_bytes());
        self.0.update(value.as_bytes());
        self.0.update(b"\n");
    }

    fn hex(self) -> String {
        self.0.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The cache key of the object compiled from `trace` of `workload` for `target`.
pub fn artifact_key(workload: &Workload, target: &Target, trace: &Trace, opts: &CompileOptions) -> String {
    artifact_key_for_build(BUILD_ID, workload, target, trace, opts, None)
}

/// The cache key of the object compiled from `trace` with fixed-length kinds
/// specialized to `specialize_vl` bits (see `scaletune_codegen::pipeline::Options::vl_bits`);
/// [`artifact_key`] when `None`.
pub fn artifact_key_at_vl(
    workload: &Workload,
    target: &Target,
    trace: &Trace,
    opts: &CompileOptions,
    specialize_vl: Option<u32>,
) -> String {
    artifact_key_for_build(BUILD_ID, workload, target, trace, opts, specialize_vl)
}

/// [`artifact_key`] as a build with identity `build_id` computes it.
fn artifact_key_for_build(
    build_id: &str,
    workload: &Workload,
    target: &Target,
    trace: &Trace,
    opts: &CompileOptions,
    specialize_vl: Option<u32>,
) -> String {
    let mut h = Fields::new();
    let mut field = |name: &str, value: &str| h.field(name, value);
    field("scaletune", env!("CARGO_PKG_VERSION"));
    field("build", build_id);
    field("llvm", &scaletune_codegen::llvm::llvm_version());
    field("workload", &workload.reference());
    field("workload_json", &serde_json::to_string(workload).unwrap_or_default());
    field("target", &target.name);
    field("triple", &target.triple);
    field("cpu", &target.cpu);
    field("features", &target.features);
    field("caps", &format!("{:?}", target.caps));
    field("opt_level", &opts.opt_level.to_string());
    field("trace", &trace.to_json());
    if let Some(vl) = specialize_vl {
        field("specialize_vl", &vl.to_string());
    }
    h.hex()
}

/// The cache key of the executable linking the object of `artifact_key`
/// with the driver `driver_source` for `target`.
pub fn executable_key(artifact_key: &str, target: &Target, driver_source: &str) -> String {
    let mut h = Fields::new();
    h.field("artifact", artifact_key);
    h.field("build", BUILD_ID);
    h.field("driver", driver_source);
    h.field("cc", &target.cc.join("\u{1f}"));
    h.field("libs", &target.libs.join("\u{1f}"));
    h.field("cc_version", &compiler_version(&target.cc));
    h.hex()
}

/// What the compiler of a `cc` command says with `--version` (memoized per
/// command; empty if it cannot be run, which the link will report anyway).
fn compiler_version(cc: &[String]) -> String {
    static MEMO: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    let Some(program) = cc.first() else { return String::new() };
    let memo = MEMO.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(v) = memo.lock().unwrap_or_else(|p| p.into_inner()).get(program) {
        return v.clone();
    }
    let version = Command::new(program)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    memo.lock().unwrap_or_else(|p| p.into_inner()).insert(program.clone(), version.clone());
    version
}

/// A directory of kernel objects by key.
#[derive(Clone, Debug)]
pub struct ArtifactCache {
    dir: PathBuf,
}

impl ArtifactCache {
    /// A cache in `dir` (created if missing).
    pub fn new(dir: impl Into<PathBuf>) -> std::io::Result<ArtifactCache> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)?;
        Ok(ArtifactCache { dir })
    }

    /// The `artifacts` cache directory of [`scaletune_codegen::tools::cache_dir`].
    pub fn default_dir() -> PathBuf {
        scaletune_codegen::tools::cache_dir("artifacts")
    }

    /// The cache directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the object of `key` is stored.
    pub fn path_of(&self, key: &str) -> PathBuf {
        self.entry(key, "o")
    }

    /// Where the executable of `key` (an [`executable_key`]) is stored.
    pub fn executable_path_of(&self, key: &str) -> PathBuf {
        self.entry(key, "exe")
    }

    fn entry(&self, key: &str, ext: &str) -> PathBuf {
        let shard = key.get(..2).unwrap_or("xx");
        self.dir.join(shard).join(format!("{key}.{ext}"))
    }

    /// The stored object of `key`, if there is a plausible one.
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        read_elf(&self.path_of(key))
    }

    /// Stores the object of `key` atomically (temporary file + rename).
    pub fn put(&self, key: &str, object: &[u8]) -> std::io::Result<()> {
        self.store(&self.path_of(key), object)
    }

    /// The stored executable of `key`, if there is a plausible one.
    pub fn get_executable(&self, key: &str) -> Option<Vec<u8>> {
        read_elf(&self.executable_path_of(key))
    }

    /// Stores the executable of `key` atomically.
    pub fn put_executable(&self, key: &str, executable: &[u8]) -> std::io::Result<()> {
        self.store(&self.executable_path_of(key), executable)
    }

    fn store(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        let parent = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(parent)?;
        let mut tmp = tempfile::NamedTempFile::new_in(parent)?;
        tmp.write_all(bytes)?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }
}

fn read_elf(path: &Path) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).ok()?;
    bytes.starts_with(b"\x7fELF").then_some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use scaletune_space::trace::parse_trace;
    use scaletune_space::workload::load;

    #[test]
    fn keys_change_with_every_input() {
        let w = load("scale_add:N=10").expect("workload");
        let w2 = load("scale_add:N=11").expect("workload");
        let t = Target::load("sve-generic").expect("target");
        let t2 = Target::load("neoverse-v1").expect("target");
        let tr = parse_trace("b = get_block(\"Y\")\ni = get_loops(b)\n").expect("trace");
        let tr2 = parse_trace("b = get_block(\"Y\")\ni = get_loops(b)\nunroll(i)\n").expect("trace");
        let o = CompileOptions::default();
        let k = artifact_key(&w, &t, &tr, &o);
        assert_eq!(k.len(), 64);
        assert_eq!(k, artifact_key(&w, &t, &tr, &o), "deterministic");
        assert_ne!(k, artifact_key(&w2, &t, &tr, &o));
        assert_ne!(k, artifact_key(&w, &t2, &tr, &o));
        assert_ne!(k, artifact_key(&w, &t, &tr2, &o));
        assert_ne!(k, artifact_key(&w, &t, &tr, &CompileOptions { opt_level: 2 }));
        // Another build of codegen (or the runtime, or the harness) is another key.
        assert_eq!(k, artifact_key_for_build(BUILD_ID, &w, &t, &tr, &o, None));
        assert_ne!(k, artifact_key_for_build("0123", &w, &t, &tr, &o, None));
        assert_eq!(k, artifact_key_at_vl(&w, &t, &tr, &o, None));
        assert_ne!(k, artifact_key_at_vl(&w, &t, &tr, &o, Some(512)));
        assert_ne!(artifact_key_at_vl(&w, &t, &tr, &o, Some(256)), artifact_key_at_vl(&w, &t, &tr, &o, Some(512)));
        assert_eq!(BUILD_ID.len(), 32, "{BUILD_ID}");
    }

    #[test]
    fn executable_keys_change_with_what_the_link_depends_on() {
        let t = Target::load("host").expect("target");
        let k = executable_key("ab12", &t, "int main() {}");
        assert_eq!(k, executable_key("ab12", &t, "int main() {}"));
        assert_ne!(k, executable_key("ab13", &t, "int main() {}"));
        assert_ne!(k, executable_key("ab12", &t, "int main() { return 0; }"));
        let mut other = t.clone();
        other.libs.push("-lfoo".into());
        assert_ne!(k, executable_key("ab12", &other, "int main() {}"));
        let mut other = t.clone();
        other.cc.push("-O1".into());
        assert_ne!(k, executable_key("ab12", &other, "int main() {}"));
    }

    #[test]
    fn objects_round_trip_and_junk_is_ignored() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cache = ArtifactCache::new(dir.path().join("c")).expect("cache");
        let key = "ab".repeat(32);
        assert_eq!(cache.get(&key), None);
        cache.put(&key, b"\x7fELF fake object").expect("put");
        assert_eq!(cache.get(&key).as_deref(), Some(&b"\x7fELF fake object"[..]));
        assert!(cache.path_of(&key).starts_with(dir.path().join("c").join("ab")));
        cache.put(&key, b"junk").expect("put");
        assert_eq!(cache.get(&key), None);
        assert_eq!(cache.get_executable(&key), None, "objects and executables are apart");
        cache.put_executable(&key, b"\x7fELF fake executable").expect("put");
        assert_eq!(cache.get_executable(&key).as_deref(), Some(&b"\x7fELF fake executable"[..]));
        assert_ne!(cache.executable_path_of(&key), cache.path_of(&key));
    }
}

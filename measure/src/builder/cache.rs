//! The content-addressed on-disk cache of kernel objects.
//!
//! The key of an artifact ([`artifact_key`]) is the SHA-256 of everything
//! the object depends on: the workload (its reference string and its full
//! JSON form, so that two workload files with one name do not collide), the
//! target (name, triple, CPU, features, vector capabilities), the LLVM
//! options, the trace's JSON form and the scaletune version. Objects live at
//! `DIR/<first two hex digits>/<key>.o`, written to a temporary file and
//! renamed into place, so concurrent builders (threads or processes) never
//! see a partial object. An entry that does not look like an ELF object is
//! ignored (and overwritten by the next build).

use scaletune_codegen::llvm::CompileOptions;
use scaletune_codegen::target::Target;
use scaletune_space::trace::Trace;
use scaletune_space::workload::Workload;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The cache key of the object compiled from `trace` of `workload` for `target`.
pub fn artifact_key(workload: &Workload, target: &Target, trace: &Trace, opts: &CompileOptions) -> String {
    let mut h = Sha256::new();
    let mut field = |name: &str, value: &str| {
        // Length-prefixed, so that no two different inputs hash the same text.
        h.update(format!("{name}:{}:", value.len()).as_bytes());
        h.update(value.as_bytes());
        h.update(b"\n");
    };
    field("scaletune", env!("CARGO_PKG_VERSION"));
    field("workload", &workload.reference());
    field("workload_json", &serde_json::to_string(workload).unwrap_or_default());
    field("target", &target.name);
    field("triple", &target.triple);
    field("cpu", &target.cpu);
    field("features", &target.features);
    field("caps", &format!("{:?}", target.caps));
    field("opt_level", &opts.opt_level.to_string());
    field("trace", &trace.to_json());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
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

    /// `scaletune-artifacts` under the system's temporary directory.
    pub fn default_dir() -> PathBuf {
        std::env::temp_dir().join("scaletune-artifacts")
    }

    /// The cache directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the object of `key` is stored.
    pub fn path_of(&self, key: &str) -> PathBuf {
        let shard = key.get(..2).unwrap_or("xx");
        self.dir.join(shard).join(format!("{key}.o"))
    }

    /// The stored object of `key`, if there is a plausible one.
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        let bytes = std::fs::read(self.path_of(key)).ok()?;
        bytes.starts_with(b"\x7fELF").then_some(bytes)
    }

    /// Stores the object of `key` atomically (temporary file + rename).
    pub fn put(&self, key: &str, object: &[u8]) -> std::io::Result<()> {
        let path = self.path_of(key);
        let parent = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(parent)?;
        let mut tmp = tempfile::NamedTempFile::new_in(parent)?;
        tmp.write_all(object)?;
        tmp.persist(&path).map_err(|e| e.error)?;
        Ok(())
    }
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
    }
}

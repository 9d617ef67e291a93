//! Build script: the build identity of the artifact cache, a hash of the sources that determine a kernel object and its linked executable.
//!
//! The artifact cache (`src/builder/cache.rs`) keys objects and executables
//! by their inputs; the code that turns those inputs into bytes is an input
//! too. This script hashes every file under the directories that hold that
//! code — the schedule language and its replay (`space/src`), lowering and
//! LLVM emission (`codegen/src`), the parallel-loop runtime
//! (`codegen/runtime`), the builder (`measure/src/builder`) and the harness
//! that writes and links the driver (`measure/src/harness`) — and exposes
//! the first 16 bytes as `SCALETUNE_BUILD_ID` (hex) for `env!`. Cargo reruns
//! it when any file under those directories changes, so an edit to codegen
//! or the runtime gives new cache keys instead of reusing stale objects.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The directories whose contents decide what the builder produces, relative to the workspace root.
const INPUTS: &[&str] = &["space/src", "codegen/src", "codegen/runtime", "measure/src/builder", "measure/src/harness"];

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest.parent().unwrap_or(&manifest).to_path_buf();
    let mut h = Sha256::new();
    for input in INPUTS {
        let dir = root.join(input);
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut files = Vec::new();
        files_under(&dir, &mut files);
        files.sort();
        h.update(format!("dir {input} {}\n", files.len()).as_bytes());
        for file in files {
            let rel = file.strip_prefix(&root).unwrap_or(&file).to_string_lossy().into_owned();
            let bytes = std::fs::read(&file).unwrap_or_default();
            h.update(format!("file {rel} {}\n", bytes.len()).as_bytes());
            h.update(&bytes);
        }
    }
    let id: String = h.finalize().iter().take(16).map(|b| format!("{b:02x}")).collect();
    println!("cargo:rustc-env=SCALETUNE_BUILD_ID={id}");
}

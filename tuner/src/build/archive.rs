//! Static libraries of kernel objects, written deterministically (`llvm-ar` with the `D` modifier: zero times, owners and modes) so the same objects give the same bytes.

use super::BuildError;
use std::path::Path;
use std::process::Command;

/// LLVM 19's archiver.
pub fn llvm_ar() -> String {
    scaletune_codegen::tools::find_tool(&["llvm-ar-19", "llvm-ar"])
}

/// Writes `objects` (member name, bytes) into the archive `lib`, using `scratch` (an empty directory) for the members.
pub fn write(lib: &Path, objects: &[(String, Vec<u8>)], scratch: &Path) -> Result<(), BuildError> {
    let fail = |message: String| BuildError::Archive { file: lib.display().to_string(), message };
    std::fs::create_dir_all(scratch).map_err(|e| fail(format!("cannot create {}: {e}", scratch.display())))?;
    for (name, bytes) in objects {
        let p = scratch.join(name);
        std::fs::write(&p, bytes).map_err(|e| fail(format!("cannot write {}: {e}", p.display())))?;
    }
    let ar = llvm_ar();
    // Members are named relative to `scratch`, so no directory reaches the archive.
    let out = Command::new(&ar)
        .arg("rcsD")
        .arg(lib)
        .args(objects.iter().map(|(n, _)| n))
        .current_dir(scratch)
        .output()
        .map_err(|e| fail(format!("cannot run {ar}: {e}")))?;
    if !out.status.success() {
        return Err(fail(format!("{ar} failed: {}", String::from_utf8_lossy(&out.stderr).trim())));
    }
    Ok(())
}

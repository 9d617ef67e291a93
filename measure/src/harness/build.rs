//! Compiling the driver and linking it with the kernel object using the target's `cc` command, or taking the executable from the artifact cache.

use super::{HarnessError, LinkExtras};
use crate::builder::{executable_key, ArtifactCache};
use scaletune_codegen::target::Target;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where linked executables are cached, and the key of the kernel object being linked.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LinkCache<'a> {
    /// The cache.
    pub cache: &'a ArtifactCache,
    /// The [`crate::builder::artifact_key`] of the object.
    pub object_key: &'a str,
}

/// File names inside the work directory.
pub(crate) const KERNEL_OBJECT: &str = "kernel.o";
pub(crate) const DRIVER_SOURCE: &str = "driver.c";
pub(crate) const EXECUTABLE: &str = "driver";
pub(crate) const INPUT_FILE: &str = "input.bin";

/// Writes `path`, mapping failures to [`HarnessError::Io`].
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), HarnessError> {
    std::fs::write(path, bytes)
        .map_err(|source| HarnessError::Io { what: format!("writing {}", path.display()), error: source })
}

/// A command line as one displayable string, quoted as a POSIX shell would
/// need it (`shlex`).
pub(crate) fn command_line(words: &[String]) -> String {
    shlex::try_join(words.iter().map(String::as_str))
        .unwrap_or_else(|_| words.iter().map(|w| format!("{w:?}")).collect::<Vec<_>>().join(" "))
}

/// Writes the kernel object and the driver source into `dir`, then compiles
/// and links them with `target.cc ... driver.c kernel.o -o driver target.libs`
/// — or, with a `cache` that holds the executable, copies it from there
/// (a linked executable is stored there for next time). `extras` are linked
/// after the target's libraries; a build with extras never uses the cache.
/// Returns the path of the executable and whether it came from the cache.
pub(crate) fn build_executable(
    dir: &Path,
    target: &Target,
    object: &[u8],
    driver_src: &str,
    cache: Option<LinkCache<'_>>,
    extras: &LinkExtras,
) -> Result<(PathBuf, bool), HarnessError> {
    let cache = if extras.is_empty() { cache } else { None };
    let obj = dir.join(KERNEL_OBJECT);
    let src = dir.join(DRIVER_SOURCE);
    let exe = dir.join(EXECUTABLE);
    write_file(&obj, object)?;
    write_file(&src, driver_src.as_bytes())?;
    let key = cache.map(|c| executable_key(c.object_key, target, driver_src));
    if let (Some(c), Some(key)) = (cache, key.as_deref()) {
        if let Some(bytes) = c.cache.get_executable(key) {
            write_file(&exe, &bytes)?;
            std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).map_err(|source| {
                HarnessError::Io { what: format!("making {} executable", exe.display()), error: source }
            })?;
            return Ok((exe, true));
        }
    }
    link(dir, target, &src, &obj, &exe, &extras.args())?;
    if let (Some(c), Some(key)) = (cache, key.as_deref()) {
        // A cache that cannot be written only costs time later.
        let stored = std::fs::read(&exe).and_then(|bytes| c.cache.put_executable(key, &bytes));
        if let Err(e) = stored {
            tracing::warn!("cannot store executable {key} in {}: {e}", c.cache.dir().display());
        }
    }
    Ok((exe, false))
}

/// Runs the target's `cc` on the driver and the kernel object.
fn link(
    dir: &Path,
    target: &Target,
    src: &Path,
    obj: &Path,
    exe: &Path,
    extras: &[String],
) -> Result<(), HarnessError> {
    let Some((cc, cc_args)) = target.cc.split_first() else {
        return Err(HarnessError::Unsupported(format!("target `{}` has an empty cc command", target.name)));
    };
    let mut shown: Vec<String> = target.cc.clone();
    shown.extend([display(src), display(obj), "-o".to_string(), display(exe)]);
    shown.extend(target.libs.iter().cloned());
    shown.extend(extras.iter().cloned());
    let command = command_line(&shown);
    let mut link = Command::new(cc);
    link.args(cc_args).arg(src).arg(obj).arg("-o").arg(exe).args(&target.libs).args(extras).current_dir(dir);
    let output = crate::cleanup::output(&mut link)
        .map_err(|source| HarnessError::Tool { command: command.clone(), error: source })?;
    if !output.status.success() {
        return Err(HarnessError::Build {
            command,
            status: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(())
}

fn display(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

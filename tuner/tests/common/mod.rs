//! Helpers shared by the end-to-end tests of the `scaletune` binary.
// Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The workspace root (shipped configs and schedules are found from there).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// Runs the `scaletune` binary with `args` in the workspace root.
pub fn scaletune(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scaletune")).args(args).current_dir(root()).output().expect("runs scaletune")
}

/// Standard output and standard error, one after the other.
pub fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Standard output.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

/// Standard error.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

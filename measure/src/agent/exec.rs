//! Running one artifact on the agent: a private directory, the executable, and one child process per vector length.
//!
//! Each artifact gets a fresh directory (mode 0700, removed afterwards)
//! holding `driver` (mode 0700), `input.bin` and, per run, `out-VL.bin`. Each
//! vector length is one child process started with the driver's timing
//! options, a cleared environment, the directory as its working directory
//! and stdin closed, killed at its timeout (the same process code as the
//! native runner, in a process group of its own). The timeout starts when
//! the child is spawned, never while the request waited for a slot. A run
//! whose cancellation flag is set (its client went away, or the agent's
//! drain deadline passed) is killed at once and the rest are not started.

use super::api::{RunRequest, VlRun};
use crate::harness::ProcessEnding;
use crate::process::{run_cancellable, Ending};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How often a spawn that hit `ETXTBSY` is retried (a concurrent fork in the
/// agent may briefly hold the just-written executable open).
const TEXT_BUSY_RETRIES: u32 = 20;

/// Writes `bytes` to a new file with `mode`.
fn write_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), String> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    f.write_all(bytes).and_then(|_| f.sync_all()).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Why [`execute`] did not return runs.
#[derive(Debug)]
pub(super) enum ExecError {
    /// The agent's own failure (its disk), not the candidate's.
    Agent(String),
    /// The run was cancelled before it ended.
    Cancelled,
}

/// Runs the request's executable at each vector length (blocking) until
/// done or `cancel` is set, each run's data segment bounded by
/// `memory_limit` bytes if given.
pub(super) fn execute(
    req: &RunRequest,
    driver_args: &[String],
    memory_limit: Option<u64>,
    cancel: &AtomicBool,
) -> Result<Vec<VlRun>, ExecError> {
    execute_runs(req, driver_args, memory_limit, cancel).map_err(ExecError::Agent)?.ok_or(ExecError::Cancelled)
}

/// [`execute`], with `None` for a cancelled run.
fn execute_runs(
    req: &RunRequest,
    driver_args: &[String],
    memory_limit: Option<u64>,
    cancel: &AtomicBool,
) -> Result<Option<Vec<VlRun>>, String> {
    let dir = crate::cleanup::ScratchDir::new("scaletune-agent-")
        .map_err(|e| format!("cannot create a private directory: {e}"))?;
    let driver = dir.path().join("driver");
    let input = dir.path().join("input.bin");
    write_new(&driver, &req.executable, 0o700)?;
    write_new(&input, &req.input, 0o600)?;
    let timeout = Duration::from_millis(req.timeout_ms);
    let mut runs = Vec::with_capacity(req.vl_bits.len());
    for &vl in &req.vl_bits {
        if cancel.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let output = dir.path().join(format!("out-{vl}.bin"));
        let mut attempt = 0;
        let raw = loop {
            let mut cmd = Command::new(&driver);
            cmd.arg(&input)
                .arg(&output)
                .args(driver_args)
                .current_dir(dir.path())
                .env_clear()
                .env("PATH", "/usr/local/bin:/usr/bin:/bin")
                .env("LC_ALL", "C")
                .envs(req.protocol.thread_env());
            if let Some(bytes) = memory_limit {
                crate::process::limit_memory(&mut cmd, bytes);
            }
            let raw = run_cancellable(cmd, timeout, cancel);
            let text_busy = matches!(&raw.ending, Ending::Failed(m) if m.contains("os error 26"));
            if !text_busy || attempt >= TEXT_BUSY_RETRIES {
                break raw;
            }
            attempt += 1;
            std::thread::sleep(Duration::from_millis(5));
        };
        if raw.ending == Ending::Cancelled {
            return Ok(None);
        }
        let bytes = std::fs::read(&output).ok();
        let _ = std::fs::remove_file(&output);
        runs.push(VlRun {
            vl_bits: vl,
            ending: ProcessEnding::from_ending(&raw.ending),
            stdout: raw.stdout,
            stderr: raw.stderr,
            output: bytes,
            wall_s: raw.wall_time.as_secs_f64(),
        });
    }
    Ok(Some(runs))
}

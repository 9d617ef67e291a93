//! What must not outlive the process: scratch directories and running child processes, registered while they exist and removed or killed at once when the command line is interrupted.
//!
//! A [`ScratchDir`] is a temporary directory removed on drop (`tempfile`)
//! that is also listed here while it lives; every child process that
//! [`crate::process`] spawns is listed while it runs. On Ctrl-C or SIGTERM
//! the CLI calls [`on_interrupt`], which kills the listed children and
//! removes the listed directories before the process exits, since an exit
//! runs no destructors.

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

static SCRATCH: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
static CHILDREN: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A temporary directory, removed on drop and by [`on_interrupt`].
#[derive(Debug)]
pub struct ScratchDir {
    dir: tempfile::TempDir,
}

impl ScratchDir {
    /// A new directory `PREFIX...` in the system's temporary directory,
    /// mode 0700 (private to this user, whatever the umask).
    pub fn new(prefix: &str) -> std::io::Result<ScratchDir> {
        use std::os::unix::fs::PermissionsExt;
        let private = std::fs::Permissions::from_mode(0o700);
        let dir = tempfile::Builder::new().prefix(prefix).permissions(private).tempdir()?;
        lock(&SCRATCH).insert(dir.path().to_path_buf());
        Ok(ScratchDir { dir })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        lock(&SCRATCH).remove(self.dir.path());
    }
}

/// A running child process, listed until dropped.
pub(crate) struct ChildGuard(u32);

impl ChildGuard {
    /// Lists the child `pid`.
    pub(crate) fn new(pid: u32) -> ChildGuard {
        lock(&CHILDREN).insert(pid);
        ChildGuard(pid)
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        lock(&CHILDREN).remove(&self.0);
    }
}

/// Runs `cmd` to completion like [`std::process::Command::output`], in a
/// process group of its own, listing the child while it runs (so that an
/// interrupt kills it and what it started).
pub fn output(cmd: &mut std::process::Command) -> std::io::Result<std::process::Output> {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0).spawn()?;
    let _listed = ChildGuard::new(child.id());
    child.wait_with_output()
}

/// Kills every listed child (SIGKILL) and removes every listed scratch
/// directory; for the CLI's signal handler, just before it exits.
pub fn on_interrupt() {
    let children = std::mem::take(&mut *lock(&CHILDREN));
    let dirs = std::mem::take(&mut *lock(&SCRATCH));
    kill_and_remove(children, dirs);
}

/// Kills (SIGKILL) the process group that the child `pid` leads, as every
/// child of [`crate::process`] and [`output`] does. An error means the group
/// is already gone.
pub(crate) fn kill_process_group(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

/// Kills `children` with their process groups and removes `dirs`.
fn kill_and_remove(children: BTreeSet<u32>, dirs: BTreeSet<PathBuf>) {
    for pid in children {
        kill_process_group(pid);
        if let Ok(pid) = i32::try_from(pid) {
            // A child that already exited is reaped by its waiter; an error changes nothing.
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
    for dir in dirs {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// Waits for Ctrl-C (SIGINT) or SIGTERM and returns the exit status a shell
/// reports for a process they ended: 130 or 143. The one signal wait of the
/// workspace: the CLI's exit on interrupt, tuning jobs and the agent use it.
pub async fn next_interrupt() -> u8 {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).ok();
    let sigterm = async {
        match term.as_mut() {
            Some(t) => {
                t.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => 130,
        _ = sigterm => 143,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_directories_are_listed_while_they_live_and_removed_on_interrupt() {
        let kept = ScratchDir::new("scaletune-cleanup-test-").expect("dir");
        let path = kept.path().to_path_buf();
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path).expect("dir").permissions());
        assert_eq!(mode & 0o777, 0o700, "scratch directories are private");
        assert!(lock(&SCRATCH).contains(&path));
        let dropped = ScratchDir::new("scaletune-cleanup-test-").expect("dir");
        let dropped_path = dropped.path().to_path_buf();
        drop(dropped);
        assert!(!dropped_path.exists() && !lock(&SCRATCH).contains(&dropped_path));
        let mut child = std::process::Command::new("sleep").arg("30").spawn().expect("sleep");
        let guard = ChildGuard::new(child.id());
        assert!(lock(&CHILDREN).contains(&child.id()));
        // What on_interrupt does, on this test's own child and directory only
        // (other tests of this binary have theirs listed too).
        kill_and_remove(BTreeSet::from([child.id()]), BTreeSet::from([path.clone()]));
        assert!(!path.exists(), "removed on interrupt");
        let status = child.wait().expect("reaped");
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(Signal::SIGKILL as i32));
        drop(guard);
        drop(kept);
    }
}

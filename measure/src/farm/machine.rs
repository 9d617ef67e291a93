//! Builds and timed runs kept apart across processes: a lock file that every scaletune process on the machine takes shared for its builds and exclusively for a timed run.
//!
//! [`Quiet`](super::Quiet) keeps one farm's builds away from its own timed
//! runs. Two jobs on one machine (a native tune in one terminal and a QEMU
//! tune in another, or a job and an agent serving another machine's job)
//! would still build during each other's timed runs. With a [`MachineLock`], a farm also holds an `flock` on
//! `machine.lock` in the lock directory: shared while it builds or runs
//! untimed work here (a QEMU or check run), exclusive while it times a run.
//! A process waiting for the exclusive lock first takes `turnstile.lock`,
//! which every build passes through (takes and drops) before it starts, so
//! the builds of other processes stop starting and the run waits for the
//! builds under way only, as within one farm.
//!
//! The locks are held per process (all of a farm's builds share its one
//! shared lock; its timed runs, which [`Quiet`](super::Quiet) lets run
//! together, share its one exclusive lock) and are released by the kernel
//! when the process exits, however it ends. The lock directory is per user
//! ([`MachineLock::default_dir`]): users do not wait for each other, and a
//! directory of another user's is refused.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use thiserror::Error;
use tokio::sync::Notify;

/// The machine lock could not be set up or taken.
#[derive(Debug, Error)]
#[error("machine lock {}: {source}", path.display())]
pub struct MachineLockError {
    /// The file or directory concerned.
    pub path: PathBuf,
    /// What went wrong.
    #[source]
    pub source: std::io::Error,
}

/// How the process holds `machine.lock`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Builds and untimed runs: any number of processes.
    Shared,
    /// A timed run: this process alone.
    Exclusive,
}

/// Where the process stands with `machine.lock`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Free,
    /// A blocking `flock` for this mode is under way; `true` once the
    /// caller that started it stopped waiting (the lock is then dropped as
    /// soon as it is taken, unless another caller wants it).
    Taking(Mode, bool),
    /// Held in this mode by this many guards (0 only for a moment: the
    /// caller that took it is about to count itself).
    Held(Mode, usize),
}

/// The lock files of one lock directory (see the module).
#[derive(Debug)]
pub struct MachineLock {
    dir: PathBuf,
    machine: File,
    phase: Mutex<Phase>,
    changed: Notify,
}

/// A hold on `machine.lock`; dropping the last one of the process releases it.
#[derive(Debug)]
pub(crate) struct MachineHold {
    lock: Arc<MachineLock>,
}

impl MachineLock {
    /// The lock files in `dir`, created (with the directory) if missing.
    pub fn open(dir: &Path) -> Result<MachineLock, MachineLockError> {
        let err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| MachineLockError { path, source }
        };
        std::fs::create_dir_all(dir).map_err(err(dir))?;
        // A directory another user made (in a shared /tmp) could hold the lock forever.
        let owner = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(dir).map_err(err(dir))?);
        let me = nix::unistd::getuid().as_raw();
        if owner != me {
            let why = format!("the directory belongs to user {owner}, not to this user ({me})");
            return Err(err(dir)(std::io::Error::new(std::io::ErrorKind::PermissionDenied, why)));
        }
        let path = dir.join("machine.lock");
        let machine = OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(err(&path))?;
        let turnstile = dir.join("turnstile.lock");
        OpenOptions::new().create(true).truncate(false).write(true).open(&turnstile).map_err(err(&turnstile))?;
        Ok(MachineLock { dir: dir.to_path_buf(), machine, phase: Mutex::new(Phase::Free), changed: Notify::new() })
    }

    /// The default lock directory of this user: `$XDG_RUNTIME_DIR/scaletune`,
    /// else `scaletune-UID` in the temporary directory.
    pub fn default_dir() -> PathBuf {
        match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
            Some(d) => PathBuf::from(d).join("scaletune"),
            None => std::env::temp_dir().join(format!("scaletune-{}", nix::unistd::getuid())),
        }
    }

    /// The lock directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn turnstile(&self) -> Result<File, MachineLockError> {
        let path = self.dir.join("turnstile.lock");
        OpenOptions::new().write(true).open(&path).map_err(|source| MachineLockError { path, source })
    }

    /// Waits while a timed run of another process waits for the machine
    /// (takes and drops `turnstile.lock`). Before each build.
    pub(crate) async fn pass_turnstile(self: &Arc<Self>) -> Result<(), MachineLockError> {
        let t = self.turnstile()?;
        let path = self.dir.join("turnstile.lock");
        let slow = self.slow_warning("a build waits for another process's timed run");
        blocking(move || t.lock().and_then(|()| t.unlock()), path, slow, SLOW_WAIT).await
    }

    /// What to log when a wait for the lock lasts [`SLOW_WAIT`]: the
    /// processes holding `machine.lock` (from `/proc/locks`) and how to stop
    /// waiting for them. A stopped job (Ctrl-Z) holds it until resumed.
    fn slow_warning(&self, what: &'static str) -> impl FnOnce() + Send + 'static {
        let path = self.dir.join("machine.lock");
        move || {
            let pids = holders(&path).iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
            tracing::warn!(
                "{what}: waiting for {} for {} s, held by process {}; a stopped (Ctrl-Z) scaletune job holds it \
                 until resumed; SCALETUNE_MACHINE_LOCK=off stops waiting for other processes",
                path.display(),
                SLOW_WAIT.as_secs(),
                if pids.is_empty() { "?".to_string() } else { pids }
            );
        }
    }

    /// Holds `machine.lock` in `mode`, waiting for other processes as the
    /// mode requires. The caller ([`Quiet`](super::Quiet)) never asks for
    /// both modes at once within the process.
    pub(crate) async fn hold(self: &Arc<Self>, mode: Mode) -> Result<MachineHold, MachineLockError> {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let take = {
                let mut p = self.lock_phase();
                match *p {
                    Phase::Held(m, n) if m == mode => {
                        *p = Phase::Held(m, n + 1);
                        return Ok(MachineHold { lock: Arc::clone(self) });
                    }
                    Phase::Held(_, 0) | Phase::Free => {
                        // Unlocking never blocks; a lock held in the other mode by nobody is let go first.
                        let _ = self.machine.unlock();
                        *p = Phase::Taking(mode, false);
                        true
                    }
                    Phase::Taking(m, true) if m == mode => {
                        // Started by a caller that stopped waiting: this one wants it.
                        *p = Phase::Taking(m, false);
                        false
                    }
                    _ => false,
                }
            };
            if take {
                let mut pending = Pending(Some(Arc::clone(self)));
                let taken = self.take(mode).await;
                pending.0 = None;
                taken?;
            } else {
                notified.await;
            }
        }
    }

    /// Takes `machine.lock` in `mode` on the blocking pool; the result is
    /// recorded there, so a caller that stops waiting leaves no lock taken
    /// by nobody behind for long (see [`Phase::Held`]).
    async fn take(self: &Arc<Self>, mode: Mode) -> Result<(), MachineLockError> {
        let me = Arc::clone(self);
        let path = self.dir.join("machine.lock");
        let slow = self.slow_warning(match mode {
            Mode::Exclusive => "a timed run waits for other processes' builds and runs",
            Mode::Shared => "a build waits for another process's timed run",
        });
        let taken = blocking(
            move || {
                let file = me.machine.try_clone()?;
                let got = match mode {
                    Mode::Exclusive => me.turnstile().map_err(|e| e.source).and_then(|t| lock_through(&file, &t)),
                    Mode::Shared => file.lock_shared(),
                };
                let mut p = me.lock_phase();
                *p = match (&got, *p) {
                    (Ok(()), Phase::Taking(_, false)) => Phase::Held(mode, 0),
                    (Ok(()), _) => {
                        // Nobody waits for it any more.
                        let _ = me.machine.unlock();
                        Phase::Free
                    }
                    (Err(_), _) => Phase::Free,
                };
                drop(p);
                me.changed.notify_waiters();
                got
            },
            path,
            slow,
            SLOW_WAIT,
        )
        .await;
        if taken.is_err() {
            *self.lock_phase() = Phase::Free;
            self.changed.notify_waiters();
        }
        taken
    }

    /// Holds `machine.lock` exclusively until the result is dropped,
    /// blocking the thread: for a synchronous phase of timed runs outside a
    /// farm (the bench's rounds). The hold is a file of its own, so it
    /// waits for this process's farms too: call it when none is busy.
    pub fn exclusive_blocking(&self) -> Result<ExclusiveHold, MachineLockError> {
        let path = self.dir.join("machine.lock");
        let err = |source| MachineLockError { path: path.clone(), source };
        let file = OpenOptions::new().write(true).open(&path).map_err(err)?;
        lock_through(&file, &self.turnstile()?).map_err(err)?;
        Ok(ExclusiveHold { _file: file })
    }

    /// True if no process, this one included, holds `machine.lock` (takes
    /// and drops it at once when free).
    pub fn is_free(&self) -> bool {
        let Ok(f) = OpenOptions::new().write(true).open(self.dir.join("machine.lock")) else { return false };
        f.try_lock().is_ok() && f.unlock().is_ok()
    }

    fn lock_phase(&self) -> std::sync::MutexGuard<'_, Phase> {
        // The phase is a plain value, consistent after any panic.
        self.phase.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// An exclusive hold of `machine.lock` taken with
/// [`MachineLock::exclusive_blocking`]; released when dropped (the file is
/// closed).
#[derive(Debug)]
pub struct ExclusiveHold {
    _file: File,
}

/// Marks a `flock` under way as abandoned if its caller stops waiting.
struct Pending(Option<Arc<MachineLock>>);

impl Drop for Pending {
    fn drop(&mut self) {
        let Some(lock) = self.0.take() else { return };
        let mut p = lock.lock_phase();
        match *p {
            Phase::Taking(m, _) => *p = Phase::Taking(m, true),
            Phase::Held(_, 0) => {
                let _ = lock.machine.unlock();
                *p = Phase::Free;
            }
            _ => {}
        }
        drop(p);
        lock.changed.notify_waiters();
    }
}

impl Drop for MachineHold {
    fn drop(&mut self) {
        let mut p = self.lock.lock_phase();
        if let Phase::Held(m, n) = *p {
            if n <= 1 {
                let _ = self.lock.machine.unlock();
                *p = Phase::Free;
            } else {
                *p = Phase::Held(m, n - 1);
            }
        }
        drop(p);
        self.lock.changed.notify_waiters();
    }
}

/// Locks `file` (`machine.lock`) exclusively while holding `turnstile`,
/// so that builds of other processes stop starting meanwhile.
fn lock_through(file: &File, turnstile: &File) -> std::io::Result<()> {
    turnstile.lock()?;
    let got = file.lock();
    turnstile.unlock()?;
    got
}

/// How long a wait for the lock lasts before it is logged.
pub const SLOW_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// Runs a blocking `flock` call on tokio's blocking pool; `slow` runs if
/// it has not returned `after` that long ([`SLOW_WAIT`]).
async fn blocking(
    f: impl FnOnce() -> std::io::Result<()> + Send + 'static,
    path: PathBuf,
    slow: impl FnOnce(),
    after: std::time::Duration,
) -> Result<(), MachineLockError> {
    let job = tokio::task::spawn_blocking(f);
    tokio::pin!(job);
    let joined = tokio::select! {
        r = &mut job => r,
        () = tokio::time::sleep(after) => {
            slow();
            job.await
        }
    };
    match joined {
        Ok(r) => r.map_err(|source| MachineLockError { path, source }),
        Err(e) => Err(MachineLockError { path, source: std::io::Error::other(e.to_string()) }),
    }
}

/// The processes holding an `flock` on the file at `path`, from `/proc/locks`
/// (empty where it cannot be read).
pub fn holders(path: &Path) -> Vec<u32> {
    use std::os::unix::fs::MetadataExt;
    let Ok(ino) = std::fs::metadata(path).map(|m| m.ino()) else { return Vec::new() };
    holders_in(&std::fs::read_to_string("/proc/locks").unwrap_or_default(), ino)
}

/// The processes `locks` (the text of `/proc/locks`) shows holding an
/// `flock` on inode `ino`. A line `N: FLOCK ADVISORY WRITE PID
/// MAJ:MIN:INODE START END` is a hold; `N: -> FLOCK ...` is a process
/// blocked waiting for one, which is not named (it holds nothing).
fn holders_in(locks: &str, ino: u64) -> Vec<u32> {
    let mut pids: Vec<u32> = locks
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let file_ino = f.get(5)?.rsplit(':').next()?.parse::<u64>().ok()?;
            (f.get(1) == Some(&"FLOCK") && file_ino == ino).then(|| f.get(4)?.parse().ok()).flatten()
        })
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Two locks on one directory, each with its own open file: as two processes.
    fn two() -> (tempfile::TempDir, Arc<MachineLock>, Arc<MachineLock>) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let a = Arc::new(MachineLock::open(dir.path()).expect("opens"));
        let b = Arc::new(MachineLock::open(dir.path()).expect("opens again"));
        (dir, a, b)
    }

    async fn now<F: std::future::Future>(f: F) -> Option<F::Output> {
        tokio::time::timeout(Duration::from_millis(100), f).await.ok()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn builds_of_two_processes_share_the_machine_and_a_timed_run_has_it_alone() {
        let (_dir, a, b) = two();
        let sa = a.hold(Mode::Shared).await.expect("shared");
        let sb = now(b.hold(Mode::Shared)).await.expect("shared twice").expect("no error");
        assert!(now(a.hold(Mode::Exclusive)).await.is_none(), "in this process, never both modes at once");
        drop(sb);
        // b's timed run waits for a's build; meanwhile b's next build waits too.
        let run = tokio::spawn({
            let b = Arc::clone(&b);
            async move { b.hold(Mode::Exclusive).await.expect("exclusive") }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!run.is_finished(), "the run waits for the other process's build");
        assert!(now(a.pass_turnstile()).await.is_none(), "a's new builds wait for the run");
        drop(sa);
        let held = run.await.expect("the run gets the machine");
        assert!(!a.is_free(), "b's run holds it");
        drop(held);
        assert!(a.is_free(), "released with its last hold");
        now(a.pass_turnstile()).await.expect("builds go on").expect("no error");
        let _s = now(a.hold(Mode::Shared)).await.expect("shared again").expect("no error");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn holds_of_one_process_count_and_the_last_releases() {
        let (_dir, a, b) = two();
        let h1 = a.hold(Mode::Exclusive).await.expect("exclusive");
        let h2 = now(a.hold(Mode::Exclusive)).await.expect("joins the process's hold").expect("no error");
        drop(h1);
        assert!(now(b.hold(Mode::Shared)).await.is_none(), "still held");
        drop(h2);
        assert!(now(b.hold(Mode::Shared)).await.is_some(), "free once the last hold is dropped");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_taker_that_stops_waiting_leaves_nothing_held() {
        let (_dir, a, b) = two();
        let build = b.hold(Mode::Shared).await.expect("shared");
        // a's run gives up waiting; its flock completes once b's build ends,
        // and is let go at once: nobody in a wants it any more.
        assert!(now(a.hold(Mode::Exclusive)).await.is_none());
        drop(build);
        let free = async {
            while !b.is_free() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        assert!(tokio::time::timeout(Duration::from_secs(5), free).await.is_ok(), "a's abandoned lock was released");
        let other = now(b.hold(Mode::Shared)).await.expect("b builds again").expect("no error");
        // A taker abandoned while another caller of the process comes for
        // the same mode: that caller takes it over.
        assert!(now(a.hold(Mode::Exclusive)).await.is_none(), "waits for b's build, then stops waiting");
        let run = tokio::spawn({
            let a = Arc::clone(&a);
            async move { a.hold(Mode::Exclusive).await.expect("exclusive") }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(other);
        let held = tokio::time::timeout(Duration::from_secs(5), run).await.expect("taken over").expect("joins");
        assert!(!b.is_free());
        drop(held);
        assert!(b.is_free());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_blocking_exclusive_hold_waits_for_builds_and_stops_new_ones() {
        let (_dir, a, b) = two();
        let build = a.hold(Mode::Shared).await.expect("shared");
        let timing = tokio::task::spawn_blocking({
            let b = Arc::clone(&b);
            move || b.exclusive_blocking().expect("exclusive")
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!timing.is_finished(), "waits for the build");
        assert!(now(a.pass_turnstile()).await.is_none(), "new builds wait for it");
        drop(build);
        let held = timing.await.expect("holds");
        assert!(!a.is_free());
        drop(held);
        assert!(a.is_free(), "released when dropped");
    }

    /// A wait that lasts is told once, and the wait goes on to its end.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_long_wait_is_told_once() {
        let told = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let wait = |ms: u64| {
            let told = Arc::clone(&told);
            let f = move || {
                std::thread::sleep(Duration::from_millis(ms));
                Ok(())
            };
            let slow = move || {
                told.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            };
            blocking(f, PathBuf::from("x"), slow, Duration::from_millis(50))
        };
        wait(0).await.expect("quick");
        assert_eq!(told.load(std::sync::atomic::Ordering::Relaxed), 0);
        wait(300).await.expect("slow, then done");
        assert_eq!(told.load(std::sync::atomic::Ordering::Relaxed), 1);
    }

    /// Holds on the inode are named, once each; waiters, other inodes and
    /// POSIX locks are not.
    #[test]
    fn the_holders_are_read_off_proc_locks() {
        let locks = "\
1: FLOCK  ADVISORY  WRITE 4242 00:2a:77 0 EOF
1: -> FLOCK  ADVISORY  WRITE 5151 00:2a:77 0 EOF
2: FLOCK  ADVISORY  READ 303 00:2a:77 0 EOF
3: FLOCK  ADVISORY  READ 303 00:2a:77 0 EOF
4: POSIX  ADVISORY  WRITE 606 00:2a:77 0 EOF
5: FLOCK  ADVISORY  WRITE 707 00:2a:78 0 EOF
garbage
";
        assert_eq!(holders_in(locks, 77), [303, 4242]);
        assert_eq!(holders_in(locks, 78), [707]);
        assert!(holders_in(locks, 79).is_empty());
    }

    #[test]
    fn the_processes_holding_the_lock_are_named() {
        let (dir, a, _b) = two();
        let path = dir.path().join("machine.lock");
        assert!(holders(&path).is_empty(), "nobody yet");
        let held = a.exclusive_blocking().expect("exclusive");
        assert_eq!(holders(&path), [std::process::id()]);
        drop(held);
        assert!(holders(&path).is_empty());
    }

    #[test]
    fn an_unusable_lock_directory_is_an_error_naming_it() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let file = dir.path().join("plain");
        std::fs::write(&file, b"not a directory").expect("writes");
        let e = MachineLock::open(&file.join("locks")).expect_err("cannot be created");
        assert!(e.to_string().starts_with(&format!("machine lock {}", file.join("locks").display())), "{e}");
        // Another user's directory (made in a shared /tmp, say) is refused.
        // Giving it away takes root, as `make test` runs (it installs packages).
        let theirs = dir.path().join("theirs");
        std::fs::create_dir(&theirs).expect("creates");
        std::os::unix::fs::chown(&theirs, Some(65534), None).expect("chown (the suite runs as root)");
        let e = MachineLock::open(&theirs).expect_err("another user's directory");
        let me = nix::unistd::getuid();
        assert_eq!(
            e.to_string(),
            format!("machine lock {}: the directory belongs to user 65534, not to this user ({me})", theirs.display())
        );
    }
}

//! Running a child process with a timeout, capturing its output and naming the signal that killed it.
//!
//! Every child runs in a process group of its own, and every kill (timeout,
//! cancellation, interrupt) kills the whole group, so whatever the child
//! started ends with it.

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use wait_timeout::ChildExt;

/// At most this many bytes of each of stdout and stderr are kept.
const CAPTURE_LIMIT: usize = 64 * 1024;

/// How often a cancellable wait looks at its cancellation flag.
const CANCEL_POLL: Duration = Duration::from_millis(20);

/// How a child process ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    /// It exited with this status code.
    Exited(i32),
    /// It was killed by this signal.
    Signaled(i32),
    /// It ran past the timeout and was killed.
    TimedOut,
    /// It could not be started or waited for.
    Failed(String),
    /// Its run was cancelled (the requester went away or the process is
    /// stopping) and it was killed.
    Cancelled,
}

/// The outcome of one run.
#[derive(Clone, Debug)]
pub(crate) struct RawRun {
    /// How the process ended.
    pub ending: Ending,
    /// Captured standard output (possibly truncated).
    pub stdout: String,
    /// Captured standard error (possibly truncated).
    pub stderr: String,
    /// Time from spawn to exit (or kill).
    pub wall_time: Duration,
}

/// Reads a pipe to its end on a thread, keeping at most [`CAPTURE_LIMIT`] bytes.
fn capture(pipe: Option<impl Read + Send + 'static>) -> Option<JoinHandle<Vec<u8>>> {
    let mut pipe = pipe?;
    Some(std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            match pipe.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = CAPTURE_LIMIT.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        }
        kept
    }))
}

fn joined(handle: Option<JoinHandle<Vec<u8>>>) -> String {
    let bytes = handle.and_then(|h| h.join().ok()).unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Kills `child` and its process group (SIGKILL); errors mean it already ended.
fn kill_group(child: &mut Child) {
    crate::cleanup::kill_process_group(child.id());
    let _ = child.kill();
}

/// Waits for `child` until `timeout` after `start` (with `wait-timeout`,
/// which may wake a little early: it waits again until the time is really
/// up), or until `cancel` is set (looked at every [`CANCEL_POLL`]); kills
/// its process group when the time is up or the run is cancelled.
fn wait_with_timeout(child: &mut Child, timeout: Duration, start: Instant, cancel: Option<&AtomicBool>) -> Ending {
    loop {
        if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            kill_group(child);
            let _ = child.wait();
            return Ending::Cancelled;
        }
        let remaining = timeout.saturating_sub(start.elapsed());
        let slice = if cancel.is_some() { remaining.min(CANCEL_POLL) } else { remaining };
        match child.wait_timeout(slice) {
            Ok(Some(status)) => return ending_of(status),
            Ok(None) if start.elapsed() < timeout => continue,
            Ok(None) => {
                kill_group(child);
                return match child.wait() {
                    Ok(status) if status.signal().is_none() => ending_of(status),
                    _ => Ending::TimedOut,
                };
            }
            Err(e) => {
                kill_group(child);
                let _ = child.wait();
                return Ending::Failed(format!("cannot wait for the process: {e}"));
            }
        }
    }
}

fn ending_of(status: ExitStatus) -> Ending {
    match (status.code(), status.signal()) {
        (Some(code), _) => Ending::Exited(code),
        (None, Some(sig)) => Ending::Signaled(sig),
        (None, None) => Ending::Failed(format!("unknown exit status {status}")),
    }
}

/// Bounds the data segment (heap and private anonymous mappings,
/// `RLIMIT_DATA`) of the process `cmd` starts to `bytes`: an allocation
/// beyond it fails in the child (the driver then reports which tensor it
/// could not allocate) instead of exhausting the machine. Address-space
/// reservations without access (as QEMU makes) do not count against it.
pub(crate) fn limit_memory(cmd: &mut Command, bytes: u64) {
    // SAFETY: the closure runs in the forked child before exec and only
    // makes the async-signal-safe setrlimit system call.
    unsafe {
        cmd.pre_exec(move || {
            nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_DATA, bytes, bytes)
                .map_err(std::io::Error::from)
        });
    }
}

/// Runs `cmd` (stdin closed, stdout and stderr captured, in a process
/// group of its own) with a timeout.
pub(crate) fn run_with_timeout(cmd: Command, timeout: Duration) -> RawRun {
    run(cmd, timeout, None)
}

/// [`run_with_timeout`] that also ends, killing the child's process group,
/// as soon as `cancel` is set; the ending is then [`Ending::Cancelled`].
pub(crate) fn run_cancellable(cmd: Command, timeout: Duration, cancel: &AtomicBool) -> RawRun {
    run(cmd, timeout, Some(cancel))
}

fn run(mut cmd: Command, timeout: Duration, cancel: Option<&AtomicBool>) -> RawRun {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let start = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let program = cmd.get_program().to_string_lossy().into_owned();
            return RawRun {
                ending: Ending::Failed(format!("cannot start `{program}`: {e}")),
                stdout: String::new(),
                stderr: String::new(),
                wall_time: start.elapsed(),
            };
        }
    };
    let listed = crate::cleanup::ChildGuard::new(child.id());
    let out = capture(child.stdout.take());
    let err = capture(child.stderr.take());
    let ending = wait_with_timeout(&mut child, timeout, start, cancel);
    drop(listed);
    let wall_time = start.elapsed();
    RawRun { ending, stdout: joined(out), stderr: joined(err), wall_time }
}

/// The conventional name of a Linux signal number (`SIGSEGV` for 11).
pub(crate) fn signal_name(sig: i32) -> String {
    let name = match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        31 => "SIGSYS",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_exit_status_and_output() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo out; echo err >&2; exit 4"]);
        let r = run_with_timeout(cmd, Duration::from_secs(10));
        assert_eq!(r.ending, Ending::Exited(4));
        assert_eq!(r.stdout, "out\n");
        assert_eq!(r.stderr, "err\n");
    }

    #[test]
    fn kills_at_the_timeout() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "exec sleep 30"]);
        let r = run_with_timeout(cmd, Duration::from_millis(200));
        assert_eq!(r.ending, Ending::TimedOut);
        assert!(r.wall_time < Duration::from_secs(5), "{:?}", r.wall_time);
    }

    /// Reads the pid a test script printed and waits up to 5 s for it to be gone.
    fn gone(pid_text: &str) -> bool {
        let pid: u32 = pid_text.trim().parse().expect("a pid");
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // Gone, or a zombie waiting for init to reap it.
            if state.is_empty() || state.split(' ').nth(2) == Some("Z") {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    #[test]
    fn a_timeout_kills_what_the_child_started_too() {
        let mut cmd = Command::new("sh");
        // The grandchild's pid goes to stdout before the shell waits for it.
        cmd.args(["-c", "sleep 30 & echo $!; wait"]);
        let r = run_with_timeout(cmd, Duration::from_millis(300));
        assert_eq!(r.ending, Ending::TimedOut);
        assert!(gone(&r.stdout), "the grandchild {} outlived the timeout", r.stdout.trim());
    }

    #[test]
    fn cancelling_ends_the_run_and_its_process_group() {
        let cancel = std::sync::Arc::new(AtomicBool::new(false));
        let setter = std::sync::Arc::clone(&cancel);
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            setter.store(true, Ordering::Relaxed);
        });
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 30 & echo $!; wait"]);
        let r = run_cancellable(cmd, Duration::from_secs(60), &cancel);
        t.join().expect("setter");
        assert_eq!(r.ending, Ending::Cancelled);
        assert!(r.wall_time < Duration::from_secs(5), "{:?}", r.wall_time);
        assert!(gone(&r.stdout), "the grandchild {} outlived the cancellation", r.stdout.trim());
        // Not cancelled: it runs to its end.
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "exit 3"]);
        let r = run_cancellable(cmd, Duration::from_secs(10), &AtomicBool::new(false));
        assert_eq!(r.ending, Ending::Exited(3));
    }

    #[test]
    fn reports_signals_and_spawn_failures() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "kill -SEGV $$"]);
        let r = run_with_timeout(cmd, Duration::from_secs(10));
        assert_eq!(r.ending, Ending::Signaled(11));
        assert_eq!(signal_name(11), "SIGSEGV");
        assert_eq!(signal_name(99), "signal 99");
        let r = run_with_timeout(Command::new("/nonexistent/scaletune-no-such-program"), Duration::from_secs(1));
        assert!(matches!(r.ending, Ending::Failed(ref m) if m.contains("cannot start")), "{:?}", r.ending);
    }

    #[test]
    fn a_memory_limit_fails_allocations_beyond_it_and_only_those() {
        let grow = |bytes: u64, limit: u64| {
            let mut cmd = Command::new("awk");
            cmd.arg(format!("BEGIN {{ s = \"x\"; while (length(s) < {bytes}) s = s s; print length(s) }}"));
            limit_memory(&mut cmd, limit);
            run_with_timeout(cmd, Duration::from_secs(60))
        };
        let r = grow(1 << 20, 256 << 20);
        assert_eq!(r.ending, Ending::Exited(0), "{}", r.stderr);
        let r = grow(512 << 20, 256 << 20);
        assert_ne!(r.ending, Ending::Exited(0));
        assert!(r.stderr.contains("out of memory"), "{}", r.stderr);
    }
}

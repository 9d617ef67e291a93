//! Running a child process with a timeout, capturing its output and naming the signal that killed it.

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use wait_timeout::ChildExt;

/// At most this many bytes of each of stdout and stderr are kept.
const CAPTURE_LIMIT: usize = 64 * 1024;

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

/// Waits for `child` until `timeout` after `start` (with `wait-timeout`,
/// which may wake a little early: it waits again until the time is really
/// up); kills it when the time is up.
fn wait_with_timeout(child: &mut Child, timeout: Duration, start: Instant) -> Ending {
    loop {
        let remaining = timeout.saturating_sub(start.elapsed());
        match child.wait_timeout(remaining) {
            Ok(Some(status)) => return ending_of(status),
            Ok(None) if start.elapsed() < timeout => continue,
            Ok(None) => {
                // kill() fails only if the child already exited; wait() reaps it either way.
                let _ = child.kill();
                return match child.wait() {
                    Ok(status) if status.signal().is_none() => ending_of(status),
                    _ => Ending::TimedOut,
                };
            }
            Err(e) => {
                let _ = child.kill();
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

/// Runs `cmd` (stdin closed, stdout and stderr captured) with a timeout.
pub(crate) fn run_with_timeout(mut cmd: Command, timeout: Duration) -> RawRun {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
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
    let ending = wait_with_timeout(&mut child, timeout, start);
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
}

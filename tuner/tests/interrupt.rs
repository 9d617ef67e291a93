//! Interrupting `scaletune`: SIGTERM or Ctrl-C (SIGINT) while a kernel runs stops that kernel and removes every scratch directory at once.

mod common;

use common::root;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Processes whose command line names a file in `dir` (the harness's
/// driver, and the compiler linking it, run from a scratch directory there).
fn processes_in(dir: &Path, file: &str) -> Vec<u32> {
    let needle = dir.display().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| {
                    let c = String::from_utf8_lossy(&c).into_owned();
                    c.contains(&needle) && c.contains(file)
                })
                .unwrap_or(false)
        })
        .collect()
}

fn scratch_dirs(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("scaletune-harness-"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn an_interrupted_run_leaves_no_kernel_running_and_no_scratch_directory() {
    for (signal, code) in [("TERM", 143), ("INT", 130)] {
        let tmp = tempfile::tempdir().expect("temp dir");
        // A run that times the kernel for a long while (1000 repeats of at least a second).
        let args = ["measure", "scale_add:N=1000", "--target", "host", "--repeat", "1000", "--min-repeat-ms", "1000"];
        let mut child = Command::new(env!("CARGO_BIN_EXE_scaletune"))
            .args(args)
            .args(["--no-cache", "--timeout", "600"])
            .current_dir(root())
            .env("TMPDIR", tmp.path())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starts");
        let deadline = Instant::now() + Duration::from_secs(120);
        while processes_in(tmp.path(), "/driver").is_empty() {
            assert!(Instant::now() < deadline, "the kernel never started");
            assert!(child.try_wait().expect("wait").is_none(), "scaletune ended before the kernel ran");
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(scratch_dirs(tmp.path()).len(), 1, "one harness directory while it runs");
        let sent = Command::new("kill").arg(format!("-{signal}")).arg(child.id().to_string()).status().expect("kill");
        assert!(sent.success());
        let start = Instant::now();
        let status = child.wait().expect("exits");
        assert!(start.elapsed() < Duration::from_secs(2), "SIG{signal}: took {:?}", start.elapsed());
        assert_eq!(status.code(), Some(code), "SIG{signal}");
        // SIGKILL is delivered at once, but the kernel may take a moment to be gone.
        let gone = Instant::now() + Duration::from_secs(1);
        while !processes_in(tmp.path(), "").is_empty() && Instant::now() < gone {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(processes_in(tmp.path(), ""), Vec::<u32>::new(), "SIG{signal}: processes left running");
        assert_eq!(scratch_dirs(tmp.path()), Vec::<String>::new(), "SIG{signal}: scratch directories left");
    }
}

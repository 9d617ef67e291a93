//! `scripts/demo.sh` (the `make demo` script) with a stand-in for the
//! `scaletune` binary: a failing step fails the script with that step's exit
//! status and the report keeps what ran so far; when every step succeeds the
//! script exits 0 with the whole report.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// Writes an executable shell script standing in for `scaletune`.
fn stub(dir: &Path, body: &str) -> PathBuf {
    let p = dir.join("scaletune-stub");
    std::fs::write(&p, format!("#!/bin/sh\necho \"stub $*\"\n{body}\n")).expect("writes stub");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    p
}

fn demo(shell: &str, st: &Path, out: &Path) -> (Output, String) {
    let o = Command::new(shell)
        .arg("scripts/demo.sh")
        .arg(st)
        .arg(out)
        .current_dir(root())
        .output()
        .expect("runs the demo script");
    let report = std::fs::read_to_string(out.join("report.md")).expect("report written");
    (o, report)
}

#[test]
fn a_failing_step_fails_the_demo_and_keeps_the_report() {
    for shell in ["sh", "bash"] {
        let dir = tempfile::tempdir().expect("tempdir");
        // `check` fails (exit 3) as a wrong result would; earlier steps succeed.
        let st = stub(dir.path(), "[ \"$1\" = check ] && exit 3\nexit 0");
        let out = dir.path().join("out");
        let (o, report) = demo(shell, &st, &out);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(3), "{shell}: {report}\n{stderr}");
        assert!(report.contains("stub compile matmul:M=67,N=131,K=29 --target host"), "{report}");
        assert!(report.contains("demo FAILED with exit status 3: scaletune check matmul"), "{report}");
        // Nothing after the failed step ran.
        assert!(!report.contains("## 2."), "{report}");
        assert!(stderr.contains("demo FAILED (exit status 3)"), "{stderr}");
    }
}

#[test]
fn a_failing_non_scaletune_step_fails_the_demo() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Every scaletune call succeeds but writes no assembly, so the grep for
    // SVE instructions finds nothing.
    let st = stub(dir.path(), "exit 0");
    let (o, report) = demo("sh", &st, &dir.path().join("out"));
    assert_eq!(o.status.code(), Some(2), "{report}");
    assert!(report.contains("demo FAILED with exit status 2: no SVE instructions"), "{report}");
}

#[test]
fn the_demo_passes_when_every_step_passes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let asm_dir = out.join("scale_add-sve");
    let body = format!(
        "case \"$*\" in *scale_add-sve*) mkdir -p '{d}' && echo '  whilelo p0.s, x8, x9' > '{d}/scaletune_scale_add.s';; esac\nexit 0",
        d = asm_dir.display()
    );
    let st = stub(dir.path(), &body);
    let (o, report) = demo("sh", &st, &out);
    assert!(o.status.success(), "{report}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(report.contains("    whilelo p0.s, x8, x9"), "{report}");
    assert!(report.contains("stub measure matmul:M=128,N=128,K=128 --target neoverse-v1 --runner qemu"), "{report}");
    assert!(report.contains("stub build --db"), "{report}");
    assert!(!report.contains("FAILED"), "{report}");
    assert!(!out.join(".demo-status").exists(), "status file left behind");
}

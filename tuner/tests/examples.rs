//! The examples of build-time replay, built and run on a database of real tuning jobs: `examples/c-kernels` (make; host natively, Neoverse V1 under QEMU) and `examples/rust-build` (cargo; a build script using `scaletune::build`).

mod common;

use common::{root, scaletune, stdout, text};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// A database tuned with short real jobs: the C example's workloads on the host (timed) and on a 256-bit Neoverse V1 (emulated).
fn tuned_db(dir: &Path) -> PathBuf {
    let db = dir.join("tuned.db");
    let dbs = db.to_str().expect("utf-8");
    let workloads = ["axpy:N=1000", "matmul:M=37,N=45,K=19"];
    let host = ["--target", "host", "--repeat", "2", "--min-repeat-ms", "1"];
    let v1 = ["--target", "neoverse-v1", "--runner", "qemu", "--vl", "256", "--objective", "cycles"];
    for target_args in [&host[..], &v1[..]] {
        let mut args = vec!["tune"];
        args.extend(workloads);
        args.extend(target_args);
        args.extend(["--db", dbs, "--batch", "4", "--trials", "16", "--strategy", "random"]);
        let o = scaletune(&args);
        assert!(o.status.success(), "{}", text(&o));
    }
    db
}

/// The target directory of this build (the binary is `<target>/<profile>/scaletune`).
fn target_dir() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_scaletune"));
    bin.parent().and_then(Path::parent).expect("target directory").to_path_buf()
}

#[test]
fn the_c_and_rust_examples_link_the_replayed_kernels_and_check_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = tuned_db(dir.path());

    let out = dir.path().join("c-kernels");
    let start = Instant::now();
    let make = Command::new("make")
        .args(["-C", "examples/c-kernels", "test"])
        .arg(format!("SCALETUNE={}", env!("CARGO_BIN_EXE_scaletune")))
        .arg(format!("DB={}", db.display()))
        .arg(format!("OUT={}", out.display()))
        .current_dir(root())
        .output()
        .expect("runs make");
    let printed = text(&make);
    assert!(make.status.success(), "{printed}");
    eprintln!("c-kernels: built and checked in {:.1} s", start.elapsed().as_secs_f64());
    // Both runs (host, then Neoverse V1 under QEMU) checked both kernels.
    let verdicts: Vec<&str> = printed.lines().filter(|l| l.contains("match the plain C loops")).collect();
    assert_eq!(verdicts, ["all kernels match the plain C loops"; 2], "{printed}");
    // Every kernel replayed a tuned record.
    let replayed = printed.lines().filter(|l| l.contains("): record ")).count();
    assert_eq!(replayed, 4, "{printed}");

    // The Rust crate, in a target directory of its own under this build's.
    let start = Instant::now();
    let cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["run", "--offline", "--quiet", "--manifest-path", "examples/rust-build/Cargo.toml"])
        .env("CARGO_TARGET_DIR", target_dir().join("rust-build-example"))
        .env("SCALETUNE_DB", &db)
        .current_dir(root())
        .output()
        .expect("runs cargo");
    assert!(cargo.status.success(), "{}", text(&cargo));
    eprintln!("rust-build: built and run in {:.1} s", start.elapsed().as_secs_f64());
    assert_eq!(stdout(&cargo), "axpy_host: 1000 of 1000 values match the plain loop\n", "{}", text(&cargo));
}

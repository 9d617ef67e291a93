//! End-to-end tests of parallel loops through the `scaletune` binary: a matmul whose row blocks run on the thread pool.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

fn scaletune(args: &[&str], threads: Option<u32>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_scaletune"));
    cmd.args(args).current_dir(root());
    if let Some(t) = threads {
        cmd.env("SCALETUNE_NUM_THREADS", t.to_string());
    }
    cmd.output().expect("runs scaletune")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

const MM: &str = "matmul:M=67,N=131,K=29";
const SCHEDULE: &str = "configs/schedules/matmul_parallel.trace";

fn check_ok(target: &str, vls: &str, threads: Option<u32>) -> String {
    let mut args = vec!["check", MM, "--target", target, "--schedule", SCHEDULE];
    if !vls.is_empty() {
        args.extend(["--vl", vls]);
    }
    let o = scaletune(&args, threads);
    let t = text(&o);
    assert!(o.status.success(), "{args:?} with {threads:?} threads failed:\n{t}");
    assert!(t.contains("all runs match the reference"), "{t}");
    t
}

/// The parallel tiled matmul matches the reference on the host, on SVE and
/// on RVV, with the default thread count and with 1 and 4 threads.
#[test]
fn parallel_matmul_matches_the_reference_everywhere() {
    for threads in [None, Some(1), Some(4)] {
        check_ok("host", "", threads);
        let t = check_ok("sve-generic", "128,512", threads);
        assert!(t.contains("VL  128: ok") && t.contains("VL  512: ok"), "{t}");
        check_ok("rvv", "128,256", threads);
    }
}

/// The compiled object carries the runtime (its entry point local) and the
/// IR has the outlined body of the parallel loop.
#[test]
fn the_object_carries_the_runtime() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().display().to_string();
    let args = ["compile", MM, "--target", "sve-generic", "--schedule", SCHEDULE, "--emit", "obj,llvm", "-o", &out];
    let o = scaletune(&args, None);
    assert!(o.status.success(), "{}", text(&o));
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(dir.path()).expect("dir").map(|e| e.expect("entry").path()).collect();
    files.sort();
    let obj = files.iter().find(|p| p.extension().is_some_and(|e| e == "o")).expect("an object");
    let ll = files.iter().find(|p| p.extension().is_some_and(|e| e == "ll")).expect("LLVM IR");
    let ir = std::fs::read_to_string(ll).expect("IR");
    assert!(ir.contains("call void @scaletune_parallel_for(") && ir.contains(".par.0("), "{ir}");
    let nm = Command::new("llvm-nm-19").arg("--defined-only").arg(obj).output().expect("llvm-nm-19");
    let syms = String::from_utf8_lossy(&nm.stdout).to_string();
    assert!(syms.lines().any(|l| l.ends_with(" t scaletune_parallel_for")), "{syms}");
    let globals: Vec<&str> = syms.lines().filter(|l| l.contains(" T ")).collect();
    assert_eq!(globals.len(), 1, "one global function, the kernel: {syms}");
}

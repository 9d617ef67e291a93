//! End-to-end tests of the correctness harness: small C kernels compiled with clang-19, run natively and under QEMU.

use scaletune_codegen::target::Target;
use scaletune_measure::{check, run_once, CheckRequest, Harness, HarnessError, RunCheck, Status};
use scaletune_space::workload::{load, Workload};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

fn target(name: &str) -> Target {
    Target::load(name).unwrap_or_else(|e| panic!("loading target {name}: {e}"))
}

fn workload(reference: &str) -> Workload {
    load(reference).unwrap_or_else(|e| panic!("loading workload {reference}: {e}"))
}

/// Compiles C source to an object for `target` with `clang-19 -c -O2`, taking
/// `--target=` and `-march` from the target's cc command (and enabling SVE
/// for SVE targets, so that kernels can use the ACLE intrinsics).
fn compile(target: &Target, source: &str) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path().join("kernel.c");
    let obj = dir.path().join("kernel.o");
    std::fs::write(&src, source).expect("write kernel source");
    let mut flags: Vec<String> =
        target.cc.iter().filter(|a| a.starts_with("--target=") || a.starts_with("-march")).cloned().collect();
    if target.features.split(',').any(|f| f == "+sve") && !flags.iter().any(|f| f.starts_with("-march")) {
        flags.push("-march=armv8.2-a+sve".into());
    }
    let out = Command::new("clang-19")
        .args(["-c", "-O2", "-Wall", "-Werror"])
        .args(&flags)
        .arg(&src)
        .arg("-o")
        .arg(&obj)
        .output()
        .expect("start clang-19");
    assert!(out.status.success(), "clang-19 failed on\n{source}\n{}", String::from_utf8_lossy(&out.stderr));
    std::fs::read(&obj).expect("read object")
}

fn request<'a>(w: &'a Workload, t: &'a Target, object: &'a [u8], vl_bits: Vec<u32>) -> CheckRequest<'a> {
    CheckRequest {
        workload: w,
        target: t,
        object,
        symbol: "kernel",
        vl_bits,
        seed: 1,
        timeout: TIMEOUT,
        work_dir: None,
    }
}

fn host_vl(t: &Target) -> u32 {
    t.default_vl_bits[0]
}

fn assert_ok(runs: &[RunCheck]) {
    for r in runs {
        assert_eq!(r.status, Status::Ok, "VL {}: {}", r.vl_bits, r.message);
        assert!(r.max_abs_err.is_finite(), "VL {}: {}", r.vl_bits, r.message);
        assert!(!r.comparisons.is_empty() && r.comparisons.iter().all(|c| c.passed()));
    }
}

/// `Y = s * (A + B)` over `n` elements: SVE and RVV intrinsics when compiled
/// for them (length-agnostic, predicated tail), a plain loop otherwise.
fn scale_add_source(n: usize) -> String {
    format!(
        r#"
#include <stddef.h>
#include <stdint.h>
#define N {n}
#if defined(__ARM_FEATURE_SVE)
#include <arm_sve.h>
void kernel(float *a, float *b, float *y, float s) {{
    for (int64_t i = 0; i < N; i += svcntw()) {{
        svbool_t pg = svwhilelt_b32_s64(i, N);
        svfloat32_t sum = svadd_f32_x(pg, svld1_f32(pg, a + i), svld1_f32(pg, b + i));
        svst1_f32(pg, y + i, svmul_n_f32_x(pg, sum, s));
    }}
}}
#elif defined(__riscv_vector)
#include <riscv_vector.h>
void kernel(float *a, float *b, float *y, float s) {{
    for (size_t i = 0; i < N;) {{
        size_t vl = __riscv_vsetvl_e32m1(N - i);
        vfloat32m1_t sum = __riscv_vfadd_vv_f32m1(__riscv_vle32_v_f32m1(a + i, vl), __riscv_vle32_v_f32m1(b + i, vl), vl);
        __riscv_vse32_v_f32m1(y + i, __riscv_vfmul_vf_f32m1(sum, s, vl), vl);
        i += vl;
    }}
}}
#else
void kernel(float *a, float *b, float *y, float s) {{
    for (int i = 0; i < N; i++) y[i] = s * (a[i] + b[i]);
}}
#endif
"#
    )
}

/// A plain scalar scale_add with a statement `extra` run after the loop.
fn scale_add_plain(n: usize, upper: &str, extra: &str) -> String {
    format!(
        r#"
#include <stdint.h>
#define N {n}
void kernel(float *a, float *b, float *y, float s) {{
    for (int i = 0; i < {upper}; i++) y[i] = s * (a[i] + b[i]);
    {extra}
}}
"#
    )
}

/// `C[i, j] = sum_k A[i, k] * B[k, j]`, row-major, with a statement `extra` at the end.
fn matmul_source(m: i64, n: i64, k: i64, extra: &str) -> String {
    format!(
        r#"
#define M {m}
#define N {n}
#define K {k}
void kernel(float *a, float *b, float *c) {{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {{
            float acc = 0.0f;
            for (int p = 0; p < K; p++) acc += a[i * K + p] * b[p * N + j];
            c[i * N + j] = acc;
        }}
    {extra}
}}
"#
    )
}

#[test]
fn scale_add_passes_on_host() {
    let w = workload("scale_add:N=203");
    let t = target("host");
    let obj = compile(&t, &scale_add_source(203));
    let runs = check(&request(&w, &t, &obj, vec![host_vl(&t)])).expect("harness builds");
    assert_eq!(runs.len(), 1);
    assert_ok(&runs);
    assert!(!runs[0].emulated);
    assert_eq!(runs[0].comparisons[0].tensor, "Y");
}

#[test]
fn scale_add_passes_on_sve_at_four_vector_lengths() {
    let w = workload("scale_add:N=203");
    let t = target("sve-generic");
    let obj = compile(&t, &scale_add_source(203));
    let harness = Harness::build(&request(&w, &t, &obj, vec![128, 256, 512, 2048])).expect("harness builds");
    let runs: Vec<RunCheck> = [128, 256, 512, 2048].iter().map(|&vl| run_once(&harness, vl)).collect();
    assert_ok(&runs);
    assert!(runs.iter().all(|r| r.emulated));
    assert_eq!(runs.iter().map(|r| r.vl_bits).collect::<Vec<_>>(), vec![128, 256, 512, 2048]);
}

#[test]
fn scale_add_passes_on_rvv() {
    let w = workload("scale_add:N=203");
    let t = target("rvv");
    let obj = compile(&t, &scale_add_source(203));
    let runs = check(&request(&w, &t, &obj, vec![128, 512])).expect("harness builds");
    assert_eq!(runs.len(), 2);
    assert_ok(&runs);
}

#[test]
fn one_wrong_element_is_named() {
    let w = workload("matmul:M=5,N=7,K=3");
    let t = target("host");
    let obj = compile(&t, &matmul_source(5, 7, 3, "c[2 * N + 3] += 0.5f;"));
    let runs = check(&request(&w, &t, &obj, vec![])).expect("harness builds");
    let r = &runs[0];
    assert_eq!(r.status, Status::WrongResult, "{}", r.message);
    assert_eq!(r.comparisons.len(), 1);
    assert_eq!(r.comparisons[0].mismatches, 1);
    assert_eq!(r.comparisons[0].first_mismatch.map(|m| m.0), Some(17));
    assert!(r.message.contains("tensor `C`"), "{}", r.message);
    assert!(r.message.contains("flat index 17 = C[2, 3]"), "{}", r.message);
    assert!(r.message.contains("expected"), "{}", r.message);
    assert!((r.max_abs_err - 0.5).abs() < 1e-3, "{}", r.max_abs_err);
}

#[test]
fn an_unwritten_element_is_caught_by_the_poison() {
    let w = workload("scale_add:N=64");
    let t = target("rvv");
    let obj = compile(&t, &scale_add_plain(64, "N - 1", ""));
    let runs = check(&request(&w, &t, &obj, vec![128])).expect("harness builds");
    let r = &runs[0];
    assert_eq!(r.status, Status::WrongResult, "{}", r.message);
    assert_eq!(r.comparisons[0].mismatches, 1);
    assert!(r.message.contains("flat index 63 = Y[63]: got NaN"), "{}", r.message);
}

#[test]
fn a_segfault_is_a_run_error_naming_the_signal() {
    let src = scale_add_plain(32, "N", "*(volatile float *)(uintptr_t)16 = s;");
    let w = workload("scale_add:N=32");
    for name in ["host", "sve-generic"] {
        let t = target(name);
        let obj = compile(&t, &src);
        let vl = host_vl(&t);
        let runs = check(&request(&w, &t, &obj, vec![vl])).expect("harness builds");
        let r = &runs[0];
        assert_eq!(r.status, Status::RunError, "{name}: {}", r.message);
        assert!(r.message.contains("SIGSEGV"), "{name}: {}", r.message);
        assert!(r.comparisons.is_empty() && r.max_abs_err.is_nan());
    }
}

#[test]
fn an_infinite_loop_times_out() {
    let src = scale_add_plain(32, "N", "volatile int spin = 1; while (spin) {}");
    let w = workload("scale_add:N=32");
    let timeout = Duration::from_secs(2);
    for name in ["host", "rvv"] {
        let t = target(name);
        let obj = compile(&t, &src);
        let mut req = request(&w, &t, &obj, vec![host_vl(&t)]);
        req.timeout = timeout;
        let runs = check(&req).expect("harness builds");
        let r = &runs[0];
        assert_eq!(r.status, Status::Timeout, "{name}: {}", r.message);
        assert!(r.wall_time >= timeout && r.wall_time < timeout + Duration::from_secs(3), "{:?}", r.wall_time);
        assert!(r.message.contains("timed out"), "{}", r.message);
    }
}

#[test]
fn an_impossible_vector_length_is_an_error() {
    let w = workload("scale_add:N=32");
    let src = scale_add_plain(32, "N", "");
    for (name, vl) in [("sve-generic", 384), ("sve-generic", 4096), ("rvv", 2048), ("rvv", 64), ("neoverse-v1", 128)] {
        let t = target(name);
        let obj = compile(&t, &src);
        let err = check(&request(&w, &t, &obj, vec![128, vl])).expect_err("bad VL must be rejected");
        assert!(matches!(err, HarnessError::BadVectorLength(_)), "{name} {vl}: {err}");
        assert!(err.to_string().contains(&vl.to_string()), "{err}");
    }
    // Asking an already built harness for a bad VL is a failed run, not a panic.
    let t = target("rvv");
    let obj = compile(&t, &src);
    let harness = Harness::build(&request(&w, &t, &obj, vec![128])).expect("harness builds");
    let r = run_once(&harness, 96);
    assert_eq!(r.status, Status::RunError);
    assert!(r.message.contains("96"), "{}", r.message);
}

#[test]
fn matmul_with_default_parameters_passes() {
    let w = workload("matmul");
    let (m, n, k) = (128, 128, 128);
    assert_eq!(w.params, vec![("M".to_string(), m), ("N".to_string(), n), ("K".to_string(), k)]);
    for (name, vl) in [("host", None), ("sve-generic", Some(256))] {
        let t = target(name);
        let obj = compile(&t, &matmul_source(m, n, k, ""));
        let runs = check(&request(&w, &t, &obj, vl.into_iter().collect())).expect("harness builds");
        assert_ok(&runs);
        // Sums of 128 f32 products are not exact, yet within the bound.
        assert!(runs[0].max_abs_err > 0.0 && runs[0].max_abs_err < 1e-4, "{}", runs[0].max_abs_err);
    }
}

#[test]
fn writes_outside_the_outputs_are_caught() {
    let w = workload("scale_add:N=40");
    let t = target("host");
    for (extra, expected) in [
        ("y[N] = 0.0f;", "kernel wrote outside tensor `Y` (byte offset 160"),
        ("y[-1] = 0.0f;", "kernel wrote outside tensor `Y` (byte offset -4"),
        ("a[3] = 0.0f;", "kernel modified input tensor `A`"),
    ] {
        let obj = compile(&t, &scale_add_plain(40, "N", extra));
        let runs = check(&request(&w, &t, &obj, vec![])).expect("harness builds");
        let r = &runs[0];
        assert_eq!(r.status, Status::RunError, "{extra}: {}", r.message);
        assert!(r.message.contains(expected), "{extra}: {}", r.message);
    }
}

#[test]
fn a_kernel_assuming_128_bit_vectors_fails_at_longer_ones() {
    // Steps by 4 floats but stores a whole (unpredicated) SVE vector.
    let src = r#"
#include <arm_sve.h>
void kernel(float *a, float *b, float *y, float s) {
    svbool_t all = svptrue_b32();
    for (int i = 0; i < 200; i += 4)
        svst1_f32(all, y + i, svmul_n_f32_x(all, svadd_f32_x(all, svld1_f32(all, a + i), svld1_f32(all, b + i)), s));
}
"#;
    let w = workload("scale_add:N=200");
    let t = target("sve-generic");
    let obj = compile(&t, src);
    let runs = check(&request(&w, &t, &obj, vec![128, 512])).expect("harness builds");
    assert_eq!(runs[0].status, Status::Ok, "{}", runs[0].message);
    assert_eq!(runs[1].status, Status::RunError, "{}", runs[1].message);
    assert!(runs[1].message.contains("wrote outside tensor `Y`"), "{}", runs[1].message);
}

#[test]
fn a_qemu_that_ignores_the_vector_length_is_detected() {
    // The QEMU command forgets the VL option: the guest always runs at QEMU's default (512 bits).
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/targets/sve-generic.toml");
    let text = std::fs::read_to_string(&path).expect("read sve-generic.toml");
    let text = text.replace("max,sve-default-vector-length={vl_bytes}", "max");
    assert!(!text.contains("{vl_bytes}"));
    let t = Target::from_toml(&text, "sve-forgetful").expect("parses");
    let w = workload("scale_add:N=50");
    let obj = compile(&t, &scale_add_source(50));
    let runs = check(&request(&w, &t, &obj, vec![256, 512])).expect("harness builds");
    assert_eq!(runs[0].status, Status::RunError, "{}", runs[0].message);
    assert!(
        runs[0].message.contains("ran at a vector length of 512 bits, not the 256 requested"),
        "{}",
        runs[0].message
    );
    assert_eq!(runs[1].status, Status::Ok, "{}", runs[1].message);
}

#[test]
fn build_failures_carry_the_command_and_stderr() {
    let w = workload("scale_add:N=8");
    let t = target("host");
    let obj = compile(&t, &scale_add_plain(8, "N", ""));
    let mut req = request(&w, &t, &obj, vec![]);
    req.symbol = "not_the_kernel";
    match Harness::build(&req) {
        Err(HarnessError::Build { command, stderr, .. }) => {
            assert!(command.starts_with("clang-19"), "{command}");
            assert!(command.contains("kernel.o"), "{command}");
            assert!(stderr.contains("not_the_kernel"), "{stderr}");
        }
        other => panic!("expected a build error, got {other:?}"),
    }
    req.symbol = "not a symbol";
    assert!(matches!(Harness::build(&req), Err(HarnessError::Unsupported(_))));
}

#[test]
fn work_directories_are_removed_or_kept_as_asked() {
    let w = workload("scale_add:N=8");
    let t = target("host");
    let obj = compile(&t, &scale_add_plain(8, "N", ""));
    let harness = Harness::build(&request(&w, &t, &obj, vec![])).expect("harness builds");
    let dir = harness.work_dir().to_path_buf();
    assert!(run_once(&harness, host_vl(&t)).passed());
    assert!(dir.join("driver").exists());
    drop(harness);
    assert!(!dir.exists(), "temporary work dir {} left behind", dir.display());

    let keep = tempfile::tempdir().expect("temp dir");
    let mut req = request(&w, &t, &obj, vec![]);
    req.work_dir = Some(keep.path());
    let runs = check(&req).expect("harness builds");
    assert_ok(&runs);
    let mut names: Vec<String> = std::fs::read_dir(keep.path())
        .expect("list work dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, vec!["driver", "driver.c", "input.bin", "kernel.o"]);
    // The driver writes its outputs private to its user (0600), whatever the umask.
    let out = keep.path().join("out.bin");
    let status = std::process::Command::new(keep.path().join("driver"))
        .arg(keep.path().join("input.bin"))
        .arg(&out)
        .status()
        .expect("runs the driver");
    assert!(status.success(), "{status}");
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&out).expect("output").permissions());
    assert_eq!(mode & 0o777, 0o600);

    // A relative work dir (the driver runs inside it, so paths must not stay relative).
    let keep = tempfile::tempdir().expect("temp dir");
    let cwd = std::env::current_dir().expect("cwd");
    let up = "../".repeat(cwd.components().count().saturating_sub(1));
    let relative = Path::new(&up).join(keep.path().strip_prefix("/").expect("absolute temp dir")).join("rel");
    assert!(relative.is_relative());
    req.work_dir = Some(&relative);
    assert_ok(&check(&req).expect("harness builds"));
    assert!(keep.path().join("rel/driver").exists());
}

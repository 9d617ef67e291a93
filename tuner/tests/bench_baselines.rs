//! The bench's C baselines are checked against the workload reference through the same harness as tuned kernels, at odd shapes, natively and under QEMU.

use scaletune::bench::baseline::{available, compile, harness, BaselineKind};
use scaletune_codegen::target::Target;
use scaletune_measure::{run_once, QemuRunner, Status};
use scaletune_space::workload::load;
use std::time::Duration;

/// Compiles `kind` for `shape` on `target` and runs it at each VL; returns "VL: status (message)" per run.
fn verdicts(kind: BaselineKind, shape: &str, target: &Target, vls: &[u32]) -> Vec<String> {
    let w = load(shape).expect("workload loads");
    assert!(available(kind, &w, target), "{} has a {} baseline", shape, kind.name());
    let kernel = compile(kind, &w, target).expect("clang-19 compiles the baseline");
    let built = harness(&kernel, &w, target, target.default_vl_bits.clone(), Duration::from_secs(120)).expect("links");
    vls.iter()
        .map(|&vl| {
            let (status, message) = if target.is_native() {
                let c = run_once(&built.harness, vl);
                (c.status, c.message)
            } else {
                let m = QemuRunner::new().measure(&built, vl);
                (m.status, m.message)
            };
            format!(
                "{shape} {} at VL {vl}: {}{}",
                kind.name(),
                status.name(),
                if status == Status::Ok { String::new() } else { format!(" ({message})") }
            )
        })
        .collect()
}

fn all_ok(lines: &[String]) {
    for l in lines {
        assert!(l.contains(": ok"), "{}", lines.join("\n"));
    }
}

#[test]
fn naive_baselines_match_the_reference_on_the_host_at_odd_shapes() {
    let host = Target::load("host").expect("host target");
    let vl = host.default_vl_bits[0];
    for shape in [
        "matmul:M=13,N=37,K=11",
        "matmul:M=67,N=5,K=129",
        "conv2d_nhwc:H=9,WI=11,C=3,F=7,S=2",
        "conv2d_nhwc:N=2,H=7,WI=6,C=5,F=13,KH=2,KW=3",
        "sum_cos:N=1",
        "sum_cos:N=1001",
    ] {
        all_ok(&verdicts(BaselineKind::ClangNaive, shape, &host, &[vl]));
    }
}

#[test]
fn the_openblas_baseline_matches_the_reference_on_the_host_at_odd_shapes() {
    let host = Target::load("host").expect("host target");
    let vl = host.default_vl_bits[0];
    for shape in ["matmul:M=13,N=37,K=11", "matmul:M=67,N=5,K=129"] {
        all_ok(&verdicts(BaselineKind::OpenBlas, shape, &host, &[vl]));
    }
}

#[test]
fn naive_baselines_match_the_reference_under_qemu_at_three_vector_lengths() {
    let v1 = Target::load("neoverse-v1").expect("neoverse-v1 target");
    for shape in ["matmul:M=7,N=45,K=5", "conv2d_nhwc:H=6,WI=7,C=3,F=19,S=2", "sum_cos:N=77"] {
        all_ok(&verdicts(BaselineKind::ClangNaive, shape, &v1, &[128, 256, 512]));
    }
}

#[test]
fn baselines_refuse_what_they_do_not_implement() {
    let host = Target::load("host").expect("host target");
    let v1 = Target::load("neoverse-v1").expect("neoverse-v1 target");
    let axpy = load("axpy").expect("loads");
    let err = compile(BaselineKind::ClangNaive, &axpy, &host).expect_err("no axpy baseline");
    assert_eq!(
        err.to_string(),
        "no clang-naive baseline for workload `axpy` (baselines: matmul, conv2d_nhwc, sum_cos; OpenBLAS: matmul)"
    );
    let matmul = load("matmul:M=4,N=4,K=4").expect("loads");
    assert!(!available(BaselineKind::OpenBlas, &matmul, &v1));
    let err = compile(BaselineKind::OpenBlas, &matmul, &v1).expect_err("host only");
    assert_eq!(err.to_string(), "the OpenBLAS baseline runs on the host only, not `neoverse-v1`");
}

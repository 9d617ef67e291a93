//! Workloads end to end, workload -> loop nest -> schedule -> vector program
//! -> LLVM -> harness, for what no other test covers: f64 tensors and an f64
//! scalar (the shipped `daxpy` and an inline f64 matmul), and the functions
//! sqrt, abs, neg, min and max. Each is interpreted at several vscales against
//! the reference, then compiled and checked natively and under QEMU.

use scaletune_codegen::interp::{run, ArgValue, InterpOptions};
use scaletune_codegen::lower::lower;
use scaletune_space::data::make_args;
use scaletune_space::ir::Nest;
use scaletune_space::reference::{compare, evaluate};
use scaletune_space::trace::parse_trace;
use scaletune_space::workload::{load, Role, Workload, WorkloadSpec};
use scaletune_space::{DType, VectorCaps};
use std::path::{Path, PathBuf};
mod common;
use common::{root, scaletune, text};

/// A vector loop over the single loop of block `block`, `lanes` wide, with a tail.
fn vector_1d(block: &str, lanes: &str, tail: &str) -> String {
    format!(
        "b = get_block(\"{block}\")\ni = get_loops(b)\ni0, i1 = split(i, factors=[None, {lanes}])\nvectorize(i1, tail=\"{tail}\")\n"
    )
}

/// Schedules `w` with `trace` for length-agnostic SVE, lowers it and runs the
/// vector program in the interpreter at each vscale, comparing every output
/// with the reference. Returns the vector program's text.
fn interpret(w: &Workload, trace: &str, vscales: &[u32]) -> String {
    let mut nest = Nest::from_workload(w, VectorCaps::scalable(128, 128, 2048));
    parse_trace(trace).expect("parses").apply(&mut nest).unwrap_or_else(|e| panic!("{}: {e}\n{trace}", w.name));
    let prog = lower(&nest, "k").unwrap_or_else(|e| panic!("{}: {e}\n{nest}", w.name));
    let args = make_args(w, 9);
    let reference = evaluate(w, &args).expect("reference");
    for &vs in vscales {
        let mut a: Vec<ArgValue> = args.iter().cloned().map(ArgValue::Tensor).collect();
        a.extend(w.scalars.iter().map(|s| ArgValue::Scalar(s.value)));
        run(&prog, &mut a, &InterpOptions::new(vs)).unwrap_or_else(|e| panic!("{} at vscale {vs}: {e}", w.name));
        let mut outputs = 0;
        for (k, id) in w.arg_tensors().iter().enumerate() {
            if w.tensor(*id).role != Role::Output {
                continue;
            }
            let got = a[k].as_tensor().expect("tensor");
            let c = compare(&w.tensor(*id).name, got, &reference[id.index()]);
            assert!(c.passed(), "{} at vscale {vs}: {c:?}\n{nest}", w.name);
            outputs += 1;
        }
        assert!(outputs > 0, "{}: no output checked", w.name);
    }
    prog.to_string()
}

/// `scaletune check` on a target at the given VLs; every run must match.
fn check(workload: &str, target: &str, schedule: &Path, vls: Option<&str>) -> String {
    let s = schedule.display().to_string();
    let mut args = vec!["check", workload, "--target", target, "--schedule", &s];
    args.extend(vls.iter().flat_map(|v| ["--vl", v]));
    let o = scaletune(&args);
    let t = text(&o);
    assert!(o.status.success() && t.contains("all runs match the reference"), "{args:?}:\n{t}");
    for vl in vls.map(|v| v.split(',').collect::<Vec<_>>()).unwrap_or_default() {
        assert!(t.contains(&format!("VL {vl:>4}: ok")), "{args:?}:\n{t}");
    }
    t
}

/// The LLVM IR `scaletune compile` emits for a target.
fn llvm_ir(workload: &str, target: &str, schedule: &Path) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let (s, out) = (schedule.display().to_string(), dir.path().display().to_string());
    let o = scaletune(&["compile", workload, "--target", target, "--schedule", &s, "--emit", "llvm", "-o", &out]);
    assert!(o.status.success(), "{}", text(&o));
    let f = std::fs::read_dir(dir.path()).expect("dir").next().expect("one file").expect("entry").path();
    std::fs::read_to_string(f).expect("IR")
}

fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, content).expect("writes");
    p
}

const F64_MATMUL: &str = r#"name = "dgemm"
description = "f64 matrix multiply"
compute = ["C[i, j] += A[i, k] * B[k, j]"]
[params]
M = 11
N = 19
K = 7
[tensors]
A = { dtype = "f64", shape = ["M", "K"] }
B = { dtype = "f64", shape = ["K", "N"] }
C = { dtype = "f64", shape = ["M", "N"], role = "output" }
"#;

/// The tiled matmul schedule with `lanes` f64 lanes per vector.
fn tiled(lanes: &str, tail: &str) -> String {
    format!(
        "b = get_block(\"C\")\ni, j, k = get_loops(b)\ni0, i1 = split(i, factors=[None, 4])\nj0, j1 = split(j, factors=[None, {lanes}])\nreorder(i0, j0, k, i1, j1)\nunroll(i1)\nvectorize(j1, tail=\"{tail}\")\n"
    )
}

#[test]
fn f64_workloads_interpreted_at_several_vscales() {
    let daxpy = load("daxpy:N=45").expect("daxpy loads");
    assert!(daxpy.tensors.iter().all(|t| t.dtype == DType::F64) && daxpy.scalars[0].dtype == DType::F64);
    for tail in ["predicate", "peel", "scalar"] {
        let prog = interpret(&daxpy, &vector_1d("Out", "2*vscale", tail), &[1, 2, 4, 16]);
        assert!(prog.contains("f64"), "{prog}");
    }
    let dgemm =
        WorkloadSpec::parse(F64_MATMUL, "dgemm.toml", "dgemm").and_then(|s| s.instantiate(&[])).expect("parses");
    for (lanes, tail) in [("2*vscale", "predicate"), ("4*vscale", "peel"), ("2*vscale", "scalar")] {
        interpret(&dgemm, &tiled(lanes, tail), &[1, 2, 4, 16]);
    }
}

/// f64 through LLVM and the harness: on the host, on length-agnostic SVE at
/// four VLs and on RVV at three; the SVE code holds scalable f64 vectors.
#[test]
fn f64_workloads_checked_on_host_sve_and_rvv() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dgemm = write(dir.path(), "dgemm.toml", F64_MATMUL).display().to_string();
    let runs = [
        ("daxpy:N=45", write(dir.path(), "daxpy.trace", &vector_1d("Out", "2*vscale", "predicate"))),
        ("daxpy:N=45", write(dir.path(), "daxpy_peel.trace", &vector_1d("Out", "2*vscale", "peel"))),
        (dgemm.as_str(), write(dir.path(), "dgemm.trace", &tiled("2*vscale", "predicate"))),
        (dgemm.as_str(), write(dir.path(), "dgemm_scalar.trace", &tiled("4*vscale", "scalar"))),
    ];
    for (w, s) in &runs {
        check(w, "host", s, None);
        check(w, "sve-generic", s, Some("128,256,512,2048"));
        check(w, "rvv", s, Some("128,256,1024"));
    }
    let ir = llvm_ir("daxpy:N=45", "sve-generic", &runs[0].1);
    assert!(ir.contains("<vscale x 2 x double>") && ir.contains("double %"), "{ir}");
    // The shipped workload unscheduled, at its default size.
    let o = scaletune(&["check", "daxpy", "--target", "host"]);
    assert!(o.status.success(), "{}", text(&o));
}

/// Every function of the workload language besides exp and cos, in one
/// statement with a reduction: `R[0] max= ...` keeps min/max in play as a
/// reduction too.
const MATH: &str = r#"name = "math_fns"
description = "sqrt, abs, neg, min and max"
compute = [
  "Y[i] = max(sqrt(abs(X[i])), neg(B[i])) + min(X[i], abs(B[i]) * 0.5)",
  "R[0] max= min(neg(X[i]), sqrt(abs(B[i])))",
]
[params]
N = 53
[tensors]
X = { dtype = "f32", shape = ["N"] }
B = { dtype = "f32", shape = ["N"] }
Y = { dtype = "f32", shape = ["N"], role = "output" }
R = { dtype = "f32", shape = [1], role = "output" }
"#;

fn math_schedule(tail: &str) -> String {
    format!(
        "{}r = get_block(\"R\")\nj = get_loops(r)\nj0, j1 = split(j, factors=[None, 4*vscale])\nvectorize(j1, tail=\"predicate\")\n",
        vector_1d("Y", "4*vscale", tail)
    )
}

#[test]
fn math_functions_interpreted_and_checked_on_sve() {
    let w = WorkloadSpec::parse(MATH, "math.toml", "math").and_then(|s| s.instantiate(&[])).expect("parses");
    for tail in ["predicate", "peel", "scalar"] {
        let prog = interpret(&w, &math_schedule(tail), &[1, 2, 4, 16]);
        for op in ["sqrt", "abs", "max", "min"] {
            assert!(prog.contains(op), "no `{op}` in the vector program:\n{prog}");
        }
    }
    // The naive nest too (scalar code, the reference's own order).
    interpret(&w, "", &[1]);

    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), "math.toml", MATH).display().to_string();
    for tail in ["predicate", "scalar"] {
        let s = write(dir.path(), &format!("math_{tail}.trace"), &math_schedule(tail));
        check(&path, "sve-generic", &s, Some("128,256,512,2048"));
    }
    let s = write(dir.path(), "math.trace", &math_schedule("predicate"));
    let ir = llvm_ir(&path, "sve-generic", &s);
    for f in ["llvm.sqrt.nxv4f32", "llvm.fabs.nxv4f32", "fneg <vscale x 4 x float>"] {
        assert!(ir.contains(f), "no `{f}` in the LLVM IR:\n{ir}");
    }
}

/// A softmax candidate a tuning job drew on `rvv` (minimized): its vector
/// `exp` used to convert floats to integers with `vfcvt.rtz.x.f.v`, and
/// QEMU 7.2 aborted (`decode_save_opc` assertion) on the float instruction
/// with dynamic rounding that followed it in the same translation block,
/// so the candidate was recorded as a crash at every VL. The expansions of
/// `exp` and `cos` now take integers from float bits and convert nothing.
const SOFTMAX_RVV_TRACE: &str = r#"b2 = get_block("Y")
l3, l4 = get_loops(b2)
t5, t6, t7 = sample_mixed_tile(l3, n=3, max_innermost_fixed=16, max_innermost_vscale=4, decision=[14, 8])
l8, l9, l10 = split(l3, factors=[t5, t6, t7])
reorder(l4, l8, l9, l10)
b12 = get_block("S")
l13, l14 = get_loops(b12)
t15, t16, t17 = sample_mixed_tile(l13, n=3, max_innermost_fixed=16, max_innermost_vscale=4, decision=[12, 8*vscale])
l18, l19, l20 = split(l13, factors=[t15, t16, t17])
reorder(l18, l14, l19, l20)
init21 = decompose_reduction(b12, l14)
tail22 = sample_categorical(candidates=["predicate", "peel", "scalar"], probs=[0.4, 0.3, 0.3], decision=1)
vectorize(l20, tail=tail22)
b23 = get_block("E")
l24, l25 = get_loops(b23)
t26, t27, t28 = sample_mixed_tile(l25, n=3, max_innermost_fixed=16, max_innermost_vscale=4, decision=[14, 8*vscale])
l29, l30, l31 = split(l25, factors=[t26, t27, t28])
t32, t33 = sample_perfect_tile(l24, n=2, max_innermost_factor=8, decision=[4, 8])
l34, l35 = split(l24, factors=[t32, t33])
reorder(l34, l29, l30, l35, l31)
unroll(l35)
tail36 = sample_categorical(candidates=["predicate", "peel", "scalar"], probs=[0.4, 0.3, 0.3], decision=0)
vectorize(l31, tail=tail36)
b37 = get_block("Mx")
l38, l39 = get_loops(b37)
t40, t41, t42 = sample_mixed_tile(l38, n=3, max_innermost_fixed=16, max_innermost_vscale=4, decision=[2*vscale, 16])
l43, l44, l45 = split(l38, factors=[t40, t41, t42])
reorder(l43, l39, l44, l45)
init46 = decompose_reduction(b37, l39)
tail47 = sample_categorical(candidates=["predicate", "peel", "scalar"], probs=[0.4, 0.3, 0.3], decision=0)
vectorize(l45, tail=tail47)
"#;

/// The candidate above runs under QEMU on RVV at every VL and matches the
/// reference, and neither it nor a vectorized `cos` converts a float to an
/// integer (`fptosi`, which RVV lowers to the conversion QEMU chokes on).
#[test]
fn vector_exp_and_cos_run_under_qemu_on_rvv_without_float_to_int_conversions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let softmax = write(dir.path(), "softmax.trace", SOFTMAX_RVV_TRACE);
    check("softmax_rows:M=32,N=100", "rvv", &softmax, Some("128,256,1024"));
    let cos = write(dir.path(), "cos.trace", &vector_1d("S", "4*vscale", "scalar"));
    check("sum_cos:N=45", "rvv", &cos, Some("128,256"));
    for (workload, schedule) in [("softmax_rows:M=32,N=100", &softmax), ("sum_cos:N=45", &cos)] {
        let ir = llvm_ir(workload, "rvv", schedule);
        assert!(ir.contains("<vscale x"), "{workload}: not vectorized:\n{ir}");
        assert!(!ir.contains("fptosi"), "{workload}: a float-to-int conversion:\n{ir}");
    }
}

/// A quantizing statement: floats scaled beyond the i8 range and truncated
/// to 8-bit integers, which saturate.
const QUANTIZE: &str = r#"name = "quantize"
description = "f32 to saturated i8"
compute = ["Q[i] = i8(X[i] * s)"]
[params]
N = 77
[scalars]
s = { dtype = "f32", value = 300.0 }
[tensors]
X = { dtype = "f32", shape = ["N"] }
Q = { dtype = "i8", shape = ["N"], role = "output" }
"#;

/// On x86 a vector float-to-int conversion is `fptosi` with its lanes out
/// of range and NaN selected away, not `llvm.fptosi.sat` (which LLVM 19
/// scalarizes there): the vectorized quantizer checks against the
/// reference natively (inputs scaled well past the i8 range both ways),
/// and its conversion is the vector sequence below.
#[test]
fn x86_vector_float_to_int_conversions_saturate_with_selects() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), "quantize.toml", QUANTIZE).display().to_string();
    let s = write(dir.path(), "q.trace", &vector_1d("Q", "8", "predicate"));
    check(&path, "host", &s, None);
    let target = write(
        dir.path(),
        "avx2.toml",
        &std::fs::read_to_string(root().join("codegen/tests/filetests/targets/zen2-avx2.toml")).expect("reads"),
    );
    let ir = llvm_ir(&path, target.to_str().expect("utf-8"), &s);
    let conversion: Vec<&str> = ir
        .lines()
        .map(str::trim)
        .filter(|l| ["fptosi", "fcmp", "select"].iter().any(|op| l.contains(op)) && !l.starts_with("declare"))
        .collect();
    expect_test::expect![[r#"
        %.inv = fcmp ole <8 x float> %7, <float -1.280000e+02, float -1.280000e+02, float -1.280000e+02, float -1.280000e+02, float -1.280000e+02, float -1.280000e+02, float -1.280000e+02, float -1.280000e+02>
        %8 = select <8 x i1> %.inv, <8 x float> <float -1.280000e+02, float -1.280000e+02, float -1.280000e+02, float -1.280000e+02, float -1.280000e+02, float -1.280000e+02, float -1.280000e+02, float -1.280000e+02>, <8 x float> %7
        %9 = fptosi <8 x float> %8 to <8 x i8>
        %10 = fcmp oge <8 x float> %7, <float 1.280000e+02, float 1.280000e+02, float 1.280000e+02, float 1.280000e+02, float 1.280000e+02, float 1.280000e+02, float 1.280000e+02, float 1.280000e+02>
        %11 = select <8 x i1> %10, <8 x i8> <i8 127, i8 127, i8 127, i8 127, i8 127, i8 127, i8 127, i8 127>, <8 x i8> %9
        %12 = fcmp uno <8 x float> %7, zeroinitializer
        %13 = select <8 x i1> %12, <8 x i8> zeroinitializer, <8 x i8> %11"#]].assert_eq(&conversion.join("\n"));
}

/// On RVV under QEMU 7.2 the quantizer's float-to-integer conversion makes
/// QEMU itself assert (`decode_save_opc`): the run is left unmeasured, as
/// the emulator's defect, and not recorded as a crash of the candidate.
/// Under a QEMU without the defect, the run matches the reference.
#[test]
fn a_qemu_assertion_leaves_the_run_unmeasured_not_crashed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), "quantize.toml", QUANTIZE).display().to_string();
    let o = scaletune(&["check", &path, "--target", "rvv", "--vl", "128"]);
    let t = text(&o);
    if t.contains(": Assertion `") {
        assert!(t.contains("VL  128: NOT RUN"), "{t}");
        assert!(t.contains("QEMU aborted on an assertion of its own (in stderr): a defect of the emulator"), "{t}");
        assert!(!t.contains("CRASH"), "{t}");
        assert!(t.ends_with("no run that was made is wrong, but some could not be made (NOT RUN above)\n"), "{t}");
    } else {
        assert!(o.status.success() && t.contains("VL  128: ok"), "{t}");
    }
}

/// Softmax computed one row at a time, its exponentials and its result
/// vectorized along the row.
const SOFTMAX_FUSED_TRACE: &str = "b0 = get_block(\"Y\")\nl1, l2 = get_loops(b0)\nb3 = get_block(\"S\")\n\
compute_at(b3, l1)\nb4 = get_block(\"E\")\ncompute_at(b4, l1)\nb5 = get_block(\"Mx\")\ncompute_at(b5, l1)\n\
b6 = get_block(\"E\")\nl7, l8, l9 = get_loops(b6)\nl10, l11 = split(l9, factors=[None, 4*vscale])\n\
vectorize(l11, tail=\"predicate\")\nb12 = get_block(\"Y\")\nl13, l14 = get_loops(b12)\n\
l15, l16 = split(l14, factors=[None, 4*vscale])\nvectorize(l16, tail=\"predicate\")\n";

/// Softmax computed one row at a time: its temporaries keep one row in the
/// vector program (`lower::compact`), and the kernel matches the reference
/// in the interpreter and under QEMU on AArch64 and RISC-V at several VLs.
#[test]
fn rows_computed_one_at_a_time_keep_one_row_of_temporaries_and_run_under_qemu() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fused = write(dir.path(), "fused.trace", SOFTMAX_FUSED_TRACE);
    let (s, out) = (fused.display().to_string(), dir.path().join("v").display().to_string());
    let o = scaletune(&[
        "compile",
        "softmax_rows:M=5,N=37",
        "--target",
        "neoverse-v1",
        "--schedule",
        &s,
        "--emit",
        "vector",
        "-o",
        &out,
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let program = std::fs::read_dir(&out).expect("dir").next().expect("a file").expect("entry").path();
    let program = std::fs::read_to_string(program).expect("program");
    let locals: Vec<&str> = program.lines().filter(|l| l.trim_start().starts_with("local ")).map(str::trim).collect();
    assert_eq!(locals, ["local Mx: f32[1]", "local E: f32[37]", "local S: f32[1]"], "{program}");
    check("softmax_rows:M=5,N=37", "sve-generic", &fused, Some("128,256,512"));
    check("softmax_rows:M=5,N=37", "rvv", &fused, Some("128,256,1024"));
}

/// A temporary over 1 MiB (layer norm's differences of 1024 rows of 320,
/// 1.25 MiB, unscheduled) is allocated with the C library's
/// `aligned_alloc` and freed: the kernels of both cross targets link and
/// match the reference under QEMU.
#[test]
fn a_temporary_on_the_heap_runs_under_qemu() {
    let dir = tempfile::tempdir().expect("tempdir");
    let none = write(dir.path(), "none.trace", "");
    let ir = llvm_ir("layer_norm:M=1024,N=320", "sve-generic", &none);
    assert!(ir.contains("@aligned_alloc(i64 64, i64 1310720)") && ir.contains("call void @free(ptr"), "{ir}");
    check("layer_norm:M=1024,N=320", "sve-generic", &none, Some("128,512"));
    check("layer_norm:M=1024,N=320", "rvv", &none, Some("128"));
}

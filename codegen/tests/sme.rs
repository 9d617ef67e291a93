//! SME: tensorized outer products into ZA tiles against the reference in the
//! interpreter at every streaming vector length, the compiled kernels under
//! QEMU (streaming mode only inside the kernel), the SME ABI routines, and
//! what `tensorize` refuses.

mod llvm_util;

use llvm_util::{link, run};
use scaletune_codegen::interp::{run as interpret, ArgValue, InterpOptions};
use scaletune_codegen::pipeline::{compile, schedule, Emit, Options};
use scaletune_codegen::target::Target;
use scaletune_space::data::make_args;
use scaletune_space::reference::{compare, evaluate};
use scaletune_space::trace::parse_trace;
use scaletune_space::workload::{load, Role, Workload, WorkloadSpec};
use std::process::Command;

/// The SME matmul trace with `rows x cols` lanes per micro-kernel (4 or 8 each: 1 or 2 tiles).
fn matmul_trace(rows: u32, cols: u32) -> String {
    format!(
        "use_vectors(\"sme\")\nb = get_block(\"C\")\ni, j, k = get_loops(b)\n\
         i0, i1 = split(i, factors=[None, {rows}*vscale])\nj0, j1 = split(j, factors=[None, {cols}*vscale])\n\
         reorder(i0, j0, k, i1, j1)\na = cache_read(b, \"A\", at=i0, layout=[1, 0])\n\
         tensorize(k, intrin=\"za_fmopa\")\n"
    )
}

fn outer_product_trace(rows: u32, cols: u32) -> String {
    format!(
        "use_vectors(\"sme\")\nb = get_block(\"Z\")\na, c = get_loops(b)\n\
         a0, a1 = split(a, factors=[None, {rows}*vscale])\nc0, c1 = split(c, factors=[None, {cols}*vscale])\n\
         reorder(a0, c0, a1, c1)\ntensorize(a1, intrin=\"za_fmopa\")\n"
    )
}

const LAYOUTS: [(u32, u32); 4] = [(4, 4), (4, 8), (8, 4), (8, 8)];

/// Lowers `trace` for `w` on `target` and interprets it at `vscale`; the outputs must match the reference.
fn interpret_matches(w: &Workload, target: &Target, trace: &str, vscale: u32) {
    let t = parse_trace(trace).expect("trace parses");
    let nest = schedule(w, Some(&t), target, None).unwrap_or_else(|e| panic!("{e}\n{trace}"));
    let prog = scaletune_codegen::lower::lower(&nest, "k").unwrap_or_else(|e| panic!("{e}"));
    assert!(prog.uses_za(), "{trace}");
    let args = make_args(w, 7);
    let reference = evaluate(w, &args).expect("reference");
    let mut a: Vec<ArgValue> = args.iter().cloned().map(ArgValue::Tensor).collect();
    interpret(&prog, &mut a, &InterpOptions::new(vscale)).unwrap_or_else(|e| panic!("vscale {vscale}: {e}\n{trace}"));
    for (k, id) in w.arg_tensors().iter().enumerate() {
        if w.tensor(*id).role == Role::Output {
            let c = compare(&w.tensor(*id).name, a[k].as_tensor().expect("tensor"), &reference[id.index()]);
            assert!(c.passed(), "{} at vscale {vscale}: {c:?}\n{trace}", w.name);
        }
    }
}

#[test]
fn tensorized_matmuls_match_the_reference_at_every_streaming_vl_with_1_2_and_4_tiles() {
    let target = Target::load("sme").expect("sme target");
    // Edge tiles in both dimensions, an output smaller than one tile, exact tiles.
    for w in ["matmul:M=67,N=131,K=29", "matmul:M=3,N=5,K=2", "matmul:M=32,N=16,K=4"] {
        let w = load(w).expect("workload");
        for (rows, cols) in LAYOUTS {
            for vscale in [1, 2, 4, 8, 16] {
                interpret_matches(&w, &target, &matmul_trace(rows, cols), vscale);
            }
        }
    }
}

#[test]
fn tensorized_outer_products_match_the_reference_with_edge_tiles() {
    let target = Target::load("sme").expect("sme target");
    for w in ["outer_product:M=20,N=12", "outer_product:M=64,N=64", "outer_product:M=1,N=33"] {
        let w = load(w).expect("workload");
        for (rows, cols) in LAYOUTS {
            for vscale in [1, 2, 4, 16] {
                interpret_matches(&w, &target, &outer_product_trace(rows, cols), vscale);
            }
        }
    }
}

/// `check`-style runs of the compiled kernel under QEMU through the harness are
/// in `tuner/tests`; here the kernel is linked with a driver that reads
/// PSTATE.SM (`svcr`) around the call: the driver runs in normal mode before
/// and after, the kernel in streaming mode.
#[test]
fn the_driver_runs_outside_streaming_mode_and_the_kernel_inside() {
    for target_name in ["sme", "apple-m4"] {
        let target = Target::load(target_name).expect("target");
        let w = load("outer_product:M=20,N=12").expect("workload");
        let trace = parse_trace(&outer_product_trace(4, 8)).expect("trace");
        let opts = Options { emit: Emit { llvm_ir: false, asm: true }, ..Options::default() };
        let out = compile(&w, Some(&trace), &target, &opts).unwrap_or_else(|e| panic!("{e}"));
        let asm = out.asm.expect("assembly");
        for needle in ["smstart\tsm", "smstop\tsm", "fmopa\tza", "st1w\t{za"] {
            assert!(asm.contains(needle), "{target_name}: no `{needle}` in the assembly");
        }
        let driver = r#"
#include <stdio.h>
#include <stdint.h>
void scaletune_outer_product(const float *x, const float *y, float *z);
static uint64_t svcr(void) { uint64_t v; __asm__ volatile(".arch_extension sme\n mrs %0, svcr" : "=r"(v)); return v; }
int main(void) {
  float x[20], y[12], z[240];
  for (int i = 0; i < 20; i++) x[i] = (float)i;
  for (int j = 0; j < 12; j++) y[j] = (float)(j + 1);
  uint64_t before = svcr();
  scaletune_outer_product(x, y, z);
  uint64_t after = svcr();
  int ok = 1;
  for (int i = 0; i < 20; i++) for (int j = 0; j < 12; j++) ok &= z[i * 12 + j] == x[i] * y[j];
  printf("svcr before %llu after %llu results %s\n", (unsigned long long)before, (unsigned long long)after, ok ? "ok" : "wrong");
  return 0;
}
"#;
        let dir = tempfile::tempdir().expect("tempdir");
        let exe = link(&target, &out.object, driver, dir.path());
        for &vl in &target.default_vl_bits {
            let got = run(&target, &exe, vl);
            assert_eq!(got.trim(), "svcr before 0 after 0 results ok", "{target_name} at VL {vl}");
        }
    }
}

/// The SME ABI routines shipped in the runtime save and restore every ZA
/// slice through a TPIDR2 block, at several streaming vector lengths.
#[test]
fn the_sme_abi_routines_save_and_restore_za() {
    let target = Target::load("sme").expect("sme target");
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("abi.c");
    std::fs::write(&src, scaletune_codegen::llvm::SME_ABI_SOURCE).expect("write");
    let test = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/sme/abi_test.c");
    let exe = dir.path().join("abi_test");
    let status = Command::new("clang-19")
        .args(["--target=aarch64-linux-gnu", "-O2", "-march=armv9-a+sme", "-static", "-fuse-ld=lld"])
        .arg(test)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .status()
        .expect("clang-19 runs");
    assert!(status.success(), "building the ABI test");
    for vl in [128, 512, 2048] {
        let got = run(&target, &exe, vl);
        assert_eq!(got.trim(), format!("svl={} saved=1", vl / 8));
    }
}

#[test]
fn tensorize_refuses_nests_that_za_tiles_cannot_hold_naming_the_reason() {
    let target = Target::load("sme").expect("sme target");
    let w = load("matmul:M=16,N=16,K=4").expect("workload");
    let err = |trace: &str| {
        let t = parse_trace(trace).expect("trace parses");
        schedule(&w, Some(&t), &target, None).expect_err("refused").to_string()
    };
    let unpacked = matmul_trace(4, 4).replace("a = cache_read(b, \"A\", at=i0, layout=[1, 0])\n", "");
    assert!(err(&unpacked).contains("operand `A` is not contiguous along `i1`"), "{}", err(&unpacked));
    let three = matmul_trace(4, 4).replace("factors=[None, 4*vscale])\nj0", "factors=[None, 12*vscale])\nj0");
    assert!(err(&three).contains("1 or 2 ZA tiles"), "{}", err(&three));
    let not_streaming = matmul_trace(4, 4).replace("use_vectors(\"sme\")\n", "");
    assert!(err(&not_streaming).contains("use_vectors(\"sme\")"), "{}", err(&not_streaming));
    let inner = matmul_trace(4, 4).replace("tensorize(k,", "tensorize(j1,");
    assert!(err(&inner).contains("must hold exactly a loop of rows"), "{}", err(&inner));
    let parallel = format!("{}parallel(i0)\n", matmul_trace(4, 4));
    assert!(err(&parallel).contains("contains the SME micro-kernel `k`"), "{}", err(&parallel));
    let intrin = matmul_trace(4, 4).replace("za_fmopa", "amx");
    assert!(err(&intrin).contains("unknown tensor intrinsic `amx`"), "{}", err(&intrin));
    // Operands of two types have no outer-product instruction.
    let text = "name = \"mixed\"\ncompute = [\"C[i, j] += f32(A[i, k]) * B[k, j]\"]\n[params]\nM = 16\nN = 16\nK = 4\n\
                [tensors]\nA = { dtype = \"f16\", shape = [\"M\", \"K\"] }\nB = { dtype = \"f32\", shape = [\"K\", \"N\"] }\n\
                C = { dtype = \"f32\", shape = [\"M\", \"N\"], role = \"output\" }\n";
    let mixed = WorkloadSpec::parse(text, "inline", "mixed").expect("spec").instantiate(&[]).expect("workload");
    let t = parse_trace(&matmul_trace(4, 4)).expect("trace parses");
    let e = schedule(&mixed, Some(&t), &target, None).expect_err("refused").to_string();
    assert!(e.contains("product of two tensor reads of one type"), "{e}");
}

/// The design space on SME targets: outer-product workloads get an SME
/// branch (`sme-tensorize`), other workloads do not; every SME trace's
/// samples compute the reference in the interpreter at several streaming
/// vector lengths.
#[test]
fn the_design_space_offers_sme_tensorization_for_outer_products_only() {
    use scaletune_codegen::pipeline::initial_nest;
    use scaletune_space::design::DesignSpace;
    use scaletune_space::sample::task_rng;
    let mut vread = false;
    for target_name in ["sme", "apple-m4"] {
        let target = Target::load(target_name).expect("target");
        for (w, offered) in [
            ("matmul:M=19,N=23,K=7", true),
            ("matmul_bt:M=9,N=21,K=5", true),
            ("batch_matmul:BS=2,M=7,N=18,K=3", true),
            ("outer_product:M=13,N=6", true),
            ("matmul_f16:M=9,N=21,K=5", true),
            ("matmul_bf16:M=9,N=21,K=5", true),
            ("matmul_i8:M=9,N=21,K=7", true),
            ("conv2d_nhwc:H=6,WI=9,C=3,F=5", true),
            ("conv2d_nhwc:H=7,WI=9,C=2,F=5,S=2", false),
            ("softmax_rows:M=3,N=21", false),
            ("scale_add:N=37", false),
        ] {
            let w = load(w).expect("workload");
            let nest = initial_nest(&w, &target);
            let space = DesignSpace::generate(&nest);
            let sme: Vec<usize> = (0..space.traces.len())
                .filter(|&k| space.traces[k].rules.iter().any(|r| r == "sme-tensorize"))
                .collect();
            assert_eq!(!sme.is_empty(), offered, "{} on {target_name}", w.name);
            for &k in &sme {
                let mut rng = task_rng(5, k as u64);
                for _ in 0..3 {
                    let mut n = space.nest.clone();
                    let (t, _) = space.traces[k].trace.sample(&mut n, &mut rng).unwrap_or_else(|e| panic!("{e}"));
                    let text = t.to_string();
                    assert!(text.contains("tensorize(") && text.contains("use_vectors(\"sme\")"), "{text}");
                    vread |= text.contains("za_fmopa_vread");
                    for vscale in n.caps.vscale_values.iter().copied().filter(|v| [1, 4, 16].contains(v)) {
                        interpret_matches(&w, &target, &text, vscale);
                    }
                }
            }
        }
    }
    assert!(vread, "no sample read the row operand through ZA");
}

/// The widening forms: `matmul_f16` (f16 pairs into f32 tiles, widening
/// `fmopa`), `matmul_bf16` (bf16 pairs, widening `bfmopa`) and `matmul_i8` (i8 quads into i32 tiles, `smopa`), with a K
/// that is not a multiple of 2 or 4 (the last step's missing elements
/// masked off), edge tiles and 1, 2 and 4 tiles, at several streaming VLs.
#[test]
fn widening_outer_products_match_the_reference_with_odd_k_and_edge_tiles() {
    let target = Target::load("sme").expect("sme target");
    for w in [
        "matmul_f16:M=19,N=23,K=7",
        "matmul_f16:M=67,N=131,K=29",
        "matmul_bf16:M=19,N=23,K=7",
        "matmul_bf16:M=67,N=131,K=29",
        "matmul_i8:M=67,N=131,K=29",
        "matmul_i8:M=5,N=19,K=6",
        "matmul_i8:M=16,N=16,K=8",
    ] {
        let w = load(w).expect("workload");
        for (rows, cols) in LAYOUTS {
            for vscale in [1, 2, 4, 16] {
                interpret_matches(&w, &target, &matmul_trace(rows, cols), vscale);
            }
        }
    }
}

/// A widening outer product without a reduction loop: one step of the
/// pair (quad) is the operand, the others are zero.
#[test]
fn widening_outer_products_without_a_reduction_loop_match_the_reference() {
    let target = Target::load("sme").expect("sme target");
    for (x, z) in [("f16", "f32"), ("bf16", "f32"), ("i8", "i32")] {
        let to = z;
        let text = format!(
            "name = \"op_{x}\"\ncompute = [\"Z[a, c] = {to}(X[a]) * {to}(Y[c])\"]\n[params]\nM = 21\nN = 10\n\
             [tensors]\nX = {{ dtype = \"{x}\", shape = [\"M\"] }}\nY = {{ dtype = \"{x}\", shape = [\"N\"] }}\n\
             Z = {{ dtype = \"{z}\", shape = [\"M\", \"N\"], role = \"output\" }}\n"
        );
        let w = WorkloadSpec::parse(&text, "inline", "op").expect("spec").instantiate(&[]).expect("workload");
        for (rows, cols) in LAYOUTS {
            for vscale in [1, 4] {
                interpret_matches(&w, &target, &outer_product_trace(rows, cols), vscale);
            }
        }
    }
}

/// The conv2d_nhwc trace: output columns x filters on ZA tiles, the whole
/// reduction (filter taps and channels) inside the micro-kernel.
fn conv_trace(rows: u32, cols: u32) -> String {
    let t = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/schedules/conv2d_nhwc_sme.trace"))
        .expect("trace");
    t.replace("split(ow, factors=[None, 4*vscale])", &format!("split(ow, factors=[None, {rows}*vscale])"))
        .replace("split(f, factors=[None, 4*vscale])", &format!("split(f, factors=[None, {cols}*vscale])"))
}

/// conv2d_nhwc through the im2col-style pack: edge tiles in both directions,
/// batches, 1, 2 and 4 tiles, at every streaming VL; the tiles start at zero
/// (no ZA load: the whole reduction is inside the micro-kernel).
#[test]
fn tensorized_convolutions_match_the_reference_at_every_streaming_vl() {
    let target = Target::load("sme").expect("sme target");
    for w in ["conv2d_nhwc:H=9,WI=11,C=3,F=6", "conv2d_nhwc:N=2,H=5,WI=21,C=4,F=19,KH=2,KW=3", "conv2d_nhwc"] {
        let w = load(w).expect("workload");
        for (rows, cols) in LAYOUTS {
            let trace = conv_trace(rows, cols);
            let t = parse_trace(&trace).expect("trace parses");
            let nest = schedule(&w, Some(&t), &target, None).unwrap_or_else(|e| panic!("{e}"));
            let prog = scaletune_codegen::lower::lower(&nest, "k").expect("lowers");
            assert!(!prog.to_string().contains("za.load"), "{prog}");
            for vscale in [1, 2, 4, 16] {
                interpret_matches(&w, &target, &trace, vscale);
            }
        }
    }
}

/// The matmul trace with `A` read through ZA vertical slices instead of the transposing pack.
fn vread_trace(rows: u32, cols: u32) -> String {
    matmul_trace(rows, cols)
        .replace("a = cache_read(b, \"A\", at=i0, layout=[1, 0])\n", "")
        .replace("za_fmopa", "za_fmopa_vread")
}

/// `za_fmopa_vread`: rows of `A` loaded into a spare ZA tile and read out
/// as vertical slices, with edge tiles, K below, at and above a chunk of
/// `L` steps, and 1, 2 (either way) tiles, at every streaming VL; what it refuses.
#[test]
fn rows_read_through_za_vertical_slices_match_the_reference() {
    let target = Target::load("sme").expect("sme target");
    for w in ["matmul:M=67,N=131,K=29", "matmul:M=3,N=5,K=2", "matmul:M=32,N=16,K=4", "matmul:M=9,N=40,K=64"] {
        let w = load(w).expect("workload");
        for (rows, cols) in [(4, 4), (4, 8), (8, 4)] {
            for vscale in [1, 2, 4, 16] {
                interpret_matches(&w, &target, &vread_trace(rows, cols), vscale);
            }
        }
    }
    let bt = load("matmul_bt:M=13,N=21,K=7").expect("workload");
    let bt_trace = "use_vectors(\"sme\")\nb = get_block(\"C\")\ni, j, k = get_loops(b)\n\
                    i0, i1 = split(i, factors=[None, 4*vscale])\nj0, j1 = split(j, factors=[None, 8*vscale])\n\
                    reorder(i0, j0, k, i1, j1)\nq = cache_read(b, \"B\", at=j0, layout=[1, 0])\n\
                    tensorize(k, intrin=\"za_fmopa_vread\")\n";
    for vscale in [1, 4] {
        interpret_matches(&bt, &target, bt_trace, vscale);
    }
    // The reduction split around the micro-kernel: tiles loaded from the output.
    let split = load("matmul:M=21,N=10,K=13").expect("workload");
    let split_trace = "use_vectors(\"sme\")\nb = get_block(\"C\")\ni, j, k = get_loops(b)\n\
                       i0, i1 = split(i, factors=[None, 8*vscale])\nj0, j1 = split(j, factors=[None, 4*vscale])\n\
                       k0, k1 = split(k, factors=[None, 13])\nreorder(i0, j0, k0, k1, i1, j1)\n\
                       tensorize(k1, intrin=\"za_fmopa_vread\")\n";
    for vscale in [1, 2, 16] {
        interpret_matches(&split, &target, split_trace, vscale);
    }
    let w = load("matmul:M=16,N=16,K=4").expect("workload");
    let err = |w: &Workload, trace: &str| {
        let t = parse_trace(trace).expect("trace parses");
        schedule(w, Some(&t), &target, None).expect_err("refused").to_string()
    };
    let e = err(&w, &vread_trace(8, 8));
    assert!(e.contains("needs 6 ZA tiles"), "{e}");
    let e = err(&load("matmul_f16:M=16,N=16,K=4").expect("workload"), &vread_trace(4, 4));
    assert!(e.contains("reads f16 operands (f32 only)"), "{e}");
    let e = err(&load("matmul_bf16:M=16,N=16,K=4").expect("workload"), &vread_trace(4, 4));
    assert!(e.contains("reads bf16 operands (f32 only)"), "{e}");
}

/// The compiled widening `bfmopa` under QEMU is bit-identical to the
/// interpreter (whose BFDotAdd rounds to odd and flushes to zero, as QEMU
/// 7.2 does), with 1, 2 and 4 tiles, edge tiles and an odd K, at the
/// smallest, a middle and the largest streaming VL. Inputs with products
/// far apart in magnitude make round-to-odd differ from round-to-nearest.
#[test]
fn bf16_outer_products_under_qemu_are_bit_identical_to_the_interpreter() {
    use llvm_util::diff::check_against_interpreter;
    use scaletune_codegen::llvm::CompileOptions;
    use scaletune_space::{DType, TensorData};
    let target = Target::load("sme").expect("sme target");
    let w = load("matmul_bf16:M=19,N=37,K=7").expect("workload");
    let mut args: Vec<ArgValue> = make_args(&w, 3).into_iter().map(ArgValue::Tensor).collect();
    // Scale every other element of A by 2^-20: pair sums and accumulations
    // then round, and to odd they round differently than to nearest.
    if let ArgValue::Tensor(a @ TensorData::BF16(_)) = &mut args[0] {
        for i in (1..a.len()).step_by(2) {
            a.set(i, a.get(i) * 2f64.powi(-20));
        }
    }
    assert_eq!(args[0].as_tensor().map(TensorData::dtype), Some(DType::BF16));
    for (rows, cols) in [(4, 4), (4, 8), (8, 8)] {
        let t = parse_trace(&matmul_trace(rows, cols)).expect("trace parses");
        let nest = schedule(&w, Some(&t), &target, None).expect("schedules");
        let prog = scaletune_codegen::lower::lower(&nest, "k").expect("lowers");
        // The schedule's vector kind (streaming SME) as the pipeline sets it.
        let streaming = target.with_caps(&nest.caps);
        check_against_interpreter(&prog, &streaming, &CompileOptions::default(), &args, &[128, 512, 2048]);
    }
}

/// An `unroll_max_step` budget unrolls the micro-kernel's reduction loops
/// fully when their steps fit it (groups of 2 for f16), and the result
/// does not change.
#[test]
fn an_unroll_budget_unrolls_the_micro_kernel_reduction() {
    let target = Target::load("sme").expect("sme target");
    for (w, budget, hint) in [
        ("matmul:M=19,N=23,K=6", 16, Some("unroll(6)")),
        ("matmul_f16:M=19,N=23,K=7", 16, Some("unroll(4)")),
        ("matmul:M=19,N=23,K=60", 16, None),
        ("conv2d_nhwc:H=6,WI=9,C=2,F=5", 64, Some("unroll(3)")),
    ] {
        let w = load(w).expect("workload");
        let base = if w.name == "conv2d_nhwc" { conv_trace(4, 4) } else { matmul_trace(4, 4) };
        let loop_ = if w.name == "conv2d_nhwc" { "ow0" } else { "i0" };
        let trace = format!("{base}annotate({loop_}, key=\"unroll_max_step\", value=\"{budget}\")\n");
        let t = parse_trace(&trace).unwrap_or_else(|e| panic!("{e}\n{trace}"));
        let nest = schedule(&w, Some(&t), &target, None).unwrap_or_else(|e| panic!("{e}"));
        let prog = scaletune_codegen::lower::lower(&nest, "k").expect("lowers").to_string();
        match hint {
            Some(h) => assert!(prog.contains(h), "{}: no {h}\n{prog}", w.name),
            None => assert!(!prog.contains("unroll("), "{}\n{prog}", w.name),
        }
        for vscale in [1, 4] {
            interpret_matches(&w, &target, &trace, vscale);
        }
    }
}

/// A reduction split around the micro-kernel: the tiles start from the
/// output loaded slice by slice (ZA loads), not from zero.
#[test]
fn a_reduction_split_around_the_micro_kernel_loads_the_tiles_from_the_output() {
    let target = Target::load("sme").expect("sme target");
    let w = load("matmul:M=21,N=10,K=12").expect("workload");
    let trace = "use_vectors(\"sme\")\nb = get_block(\"C\")\ni, j, k = get_loops(b)\n\
                 i0, i1 = split(i, factors=[None, 8*vscale])\nj0, j1 = split(j, factors=[None, 4*vscale])\n\
                 k0, k1 = split(k, factors=[None, 4])\nreorder(i0, j0, k0, k1, i1, j1)\n\
                 a = cache_read(b, \"A\", at=i0, layout=[1, 0])\ntensorize(k1, intrin=\"za_fmopa\")\n";
    let t = parse_trace(trace).expect("trace parses");
    let nest = schedule(&w, Some(&t), &target, None).unwrap_or_else(|e| panic!("{e}"));
    let prog = scaletune_codegen::lower::lower(&nest, "k").expect("lowers");
    assert!(prog.to_string().contains("za.load za0.s"), "{prog}");
    for vscale in [1, 2, 4, 16] {
        interpret_matches(&w, &target, trace, vscale);
    }
}

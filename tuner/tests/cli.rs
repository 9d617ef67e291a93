//! End-to-end tests of the `scaletune` binary: the tiled matmul on every
//! kind of target, gathers vs. contiguous loads (also on NEON, Neoverse V2 and
//! A64FX), the predicated reduction, the naive nest, exit status 1 on a
//! wrong result, and one-line errors for bad input.

use std::path::Path;
mod common;
use common::{root, scaletune, text};

fn sched(name: &str) -> String {
    format!("configs/schedules/{name}.trace")
}

/// `trace` with its two ZA tile splits, of loops `row` and `col` into
/// `default*vscale` steps, changed to `rows*vscale` and `cols*vscale`.
fn with_za_tiles(trace: &str, (row, col): (&str, &str), default: u32, rows: u32, cols: u32) -> String {
    let split = |var: &str, n: u32| format!("split({var}, factors=[None, {n}*vscale])");
    assert!(trace.contains(&split(row, default)) && trace.contains(&split(col, default)), "{trace}");
    trace.replace(&split(row, default), &split(row, rows)).replace(&split(col, default), &split(col, cols))
}

/// Asserts that the `check` output `t` reports `ok` at each of `vls`.
fn assert_ok_at(t: &str, vls: &[u32], what: &str) {
    for vl in vls {
        assert!(t.contains(&format!("VL {vl:>4}: ok")), "{what} VL {vl}: {t}");
    }
}

/// Asserts that the SME assembly `a` enters streaming mode, accumulates with
/// `fmopa` and stores a ZA slice.
fn assert_streaming_fmopa_and_slice_store(a: &str, target: &str) {
    for needle in ["smstart\tsm", "fmopa\tza", "st1w\t{za"] {
        assert!(a.contains(needle), "{target}: no `{needle}`");
    }
}

fn check_ok(workload: &str, target: &str, schedule: &str, vls: Option<&str>) -> String {
    check_passes(workload, target, Some(schedule), vls)
}

/// Runs `check` (with the naive nest when `schedule` is `None`) and
/// asserts that every run matches the reference.
fn check_passes(workload: &str, target: &str, schedule: Option<&str>, vls: Option<&str>) -> String {
    let mut args = vec!["check", workload, "--target", target];
    if let Some(s) = schedule {
        args.extend(["--schedule", s]);
    }
    if let Some(v) = vls {
        args.extend(["--vl", v]);
    }
    let o = scaletune(&args);
    let t = text(&o);
    assert!(o.status.success(), "{args:?} failed:\n{t}");
    assert!(t.contains("all runs match the reference"), "{t}");
    t
}

/// A schedule file with the tail strategy replaced.
fn with_tail(tail: &str, dir: &Path) -> String {
    let src = std::fs::read_to_string(root().join(sched("matmul_tiled"))).expect("reads");
    let p = dir.join(format!("matmul_{tail}.trace"));
    std::fs::write(&p, src.replace("\"predicate\"", &format!("\"{tail}\""))).expect("writes");
    p.display().to_string()
}

const MM: &str = "matmul:M=67,N=131,K=29";

#[test]
fn tiled_matmul_passes_on_every_target_and_vector_length() {
    let s = sched("matmul_tiled");
    check_ok(MM, "host", &s, None);
    check_ok(MM, "neoverse-v1", &s, None);
    let t = check_ok(MM, "sve-generic", &s, Some("128,256,512,2048"));
    for vl in ["128", "256", "512", "2048"] {
        assert!(t.contains(&format!("VL {vl:>4}: ok")), "{t}");
    }
    check_ok(MM, "rvv", &s, Some("128,256,1024"));
}

#[test]
fn tiled_matmul_with_scalar_and_peeled_tails() {
    let dir = tempfile::tempdir().expect("tempdir");
    for tail in ["scalar", "peel"] {
        let s = with_tail(tail, dir.path());
        check_ok(MM, "host", &s, None);
        check_ok(MM, "neoverse-v1", &s, None);
        check_ok(MM, "sve-generic", &s, Some("128,256,512,2048"));
        check_ok(MM, "rvv", &s, Some("128,256,1024"));
    }
}

/// The shipped micro-kernel (6 rows x 16 columns over blocks of 128 of the
/// reduction, a packed panel, peeled column tail) on a shape where rows,
/// columns and the reduction all leave partial blocks: natively on host,
/// under QEMU on NEON (4 registers of columns) and on fixed-length SVE; the
/// host assembly is the broadcast-FMA register tile (the broadcast a
/// separate instruction with AVX2, folded into the FMA with AVX-512).
#[test]
fn micro_kernel_schedules_pass_with_partial_blocks_everywhere() {
    let s = sched("matmul_microkernel");
    let shape = "matmul:M=67,N=131,K=300";
    check_ok(shape, "host", &s, None);
    check_ok(shape, "neon", &s, None);
    check_ok(shape, "neoverse-v1", &s, None);
    // Broadcast FMAs: a `vbroadcastss` feeding `vfmadd231ps` (AVX2), or
    // with AVX-512 the broadcast folded into the FMA's memory operand
    // (`vfmadd231ps (mem){1to16}, ...`).
    let a = asm(shape, "host", &s);
    let folded = a.lines().any(|l| l.contains("vfmadd231ps") && l.contains("{1to"));
    assert!(folded || (a.contains("vbroadcastss") && a.contains("vfmadd231ps")), "{a}");
    // The length-agnostic form the space builds on scalable targets: strips
    // of two registers (`8*vscale` columns) and a panel copied one register
    // at a time, under QEMU at every vector length.
    let dir = tempfile::tempdir().expect("tempdir");
    let vla = dir.path().join("matmul_microkernel_vla.trace");
    let text = std::fs::read_to_string(root().join(&s)).expect("reads");
    let text = text
        .replace("factors=[None, 16]", "factors=[None, 8*vscale]")
        .replace("factors=[None, 8]", "factors=[None, 4*vscale]");
    assert!(text.contains("8*vscale") && text.contains("4*vscale"), "{text}");
    std::fs::write(&vla, text).expect("writes");
    let vla = vla.display().to_string();
    let t = check_ok(shape, "sve-generic", &vla, Some("128,256,512,2048"));
    assert_ok_at(&t, &[128, 256, 512, 2048], "sve-generic");
    let t = check_ok(shape, "rvv", &vla, Some("128,256,1024"));
    assert_ok_at(&t, &[128, 256, 1024], "rvv");
    // The order with blocks of rows outermost: a partial block of rows (67
    // of 128) and of the reduction (300 = 2 x 128 + 44).
    let rows = sched("matmul_microkernel_rowblocks");
    check_ok(shape, "host", &rows, None);
    check_ok(shape, "neon", &rows, None);
    let rows_vla = dir.path().join("matmul_microkernel_rowblocks_vla.trace");
    let text = std::fs::read_to_string(root().join(&rows)).expect("reads");
    let text = text
        .replace("factors=[None, 16]", "factors=[None, 8*vscale]")
        .replace("factors=[None, 8]", "factors=[None, 4*vscale]");
    std::fs::write(&rows_vla, text).expect("writes");
    let t = check_ok(shape, "sve-generic", &rows_vla.display().to_string(), Some("128,512"));
    assert_ok_at(&t, &[128, 512], "sve-generic");
}

fn asm(workload: &str, target: &str, schedule: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().display().to_string();
    let o = scaletune(&["compile", workload, "--target", target, "--schedule", schedule, "--emit", "asm", "-o", &out]);
    assert!(o.status.success(), "{}", text(&o));
    let f = std::fs::read_dir(dir.path()).expect("dir").next().expect("one file").expect("entry").path();
    std::fs::read_to_string(f).expect("asm")
}

/// An SVE `ld1w` whose address has a vector register index
/// (`[x0, z1.s, uxtw #2]`) or is a vector of pointers (`[z1.d]`: the `sve`
/// kind at 128 bits, compiled as fixed-length vectors, gathers through
/// SVE containers of 64-bit addresses).
fn has_gather(asm: &str) -> bool {
    asm.lines().any(|l| l.contains("ld1w") && (l.contains(", z") || l.contains("[z")))
}

#[test]
fn sve_assembly_is_predicated() {
    let a = asm(MM, "sve-generic", &sched("matmul_tiled"));
    assert!(a.contains("whilelo"), "{a}");
    assert!(a.contains("ld1w"), "{a}");
}

#[test]
fn gathered_and_contiguous_dimensions() {
    for (w, gather, rows) in [
        ("paged_read", "paged_read_gather", "paged_read_rows"),
        ("matmul_bt:M=33,N=45,K=19", "matmul_bt_gather", "matmul_bt_rows"),
    ] {
        check_ok(w, "sve-generic", &sched(gather), None);
        check_ok(w, "sve-generic", &sched(rows), None);
        assert!(has_gather(&asm(w, "sve-generic", &sched(gather))), "{w}: no gather");
        let contiguous = asm(w, "sve-generic", &sched(rows));
        assert!(!has_gather(&contiguous) && contiguous.contains("ld1w"), "{w}: {contiguous}");
    }
}

#[test]
fn predicated_vector_reduction_at_every_vector_length() {
    let t = check_ok("sum_cos:N=500", "sve-generic", &sched("sum_cos_reduction"), Some("128,256,512,1024,2048"));
    for vl in ["128", "256", "512", "1024", "2048"] {
        assert!(t.contains(&format!("VL {vl:>4}: ok")), "{t}");
    }
    check_ok("sum_cos:N=500", "rvv", &sched("sum_cos_reduction"), Some("128,256,512,1024"));
}

/// The fixed-length Arm targets no other test runs: NEON (no hardware
/// gathers: LLVM scalarises them into lane loads), Neoverse V2 (SVE2 at 128
/// bits) and A64FX (SVE at 512 bits), each with both gather schedules and the
/// tiled matmul, under QEMU against the reference.
#[test]
fn gathers_and_tiled_matmul_on_neon_neoverse_v2_and_a64fx() {
    let runs =
        [("paged_read", "paged_read_gather"), ("matmul_bt:M=33,N=45,K=19", "matmul_bt_gather"), (MM, "matmul_tiled")];
    for (target, vl) in [("neon", "128"), ("neoverse-v2", "128"), ("a64fx", "512")] {
        for (w, s) in runs {
            let t = check_ok(w, target, &sched(s), None);
            assert!(t.contains(&format!("VL {vl:>4}: ok")) && t.contains("emulated"), "{target}: {t}");
        }
        let a = asm("paged_read", target, &sched("paged_read_gather"));
        if target == "neon" {
            // Lane-by-lane loads, no SVE register anywhere.
            assert!(!a.contains("ld1w") && !a.contains(" z0") && a.contains("ld1\t{ v"), "{a}");
        } else {
            assert!(has_gather(&a), "{target}: no gather\n{a}");
        }
    }
}

/// SME: `check` passes the tensorized matmul with edge tiles and the outer
/// product with 1, 2 and 4 ZA tiles per micro-kernel at every streaming
/// vector length of `sme` and at 512 bits on `apple-m4`; the assembly
/// enters streaming mode, accumulates with `fmopa` and stores ZA slices.
#[test]
fn sme_schedules_with_1_2_and_4_tiles_pass_check_on_sme_and_apple_m4() {
    let dir = tempfile::tempdir().expect("tempdir");
    let matmul = std::fs::read_to_string(common::root().join(sched("matmul_sme"))).expect("trace");
    let outer = std::fs::read_to_string(common::root().join(sched("outer_product_sme"))).expect("trace");
    for (rows, cols) in [(4, 4), (4, 8), (8, 8)] {
        let mm = with_za_tiles(&matmul, ("i", "j"), 8, rows, cols);
        let op = with_za_tiles(&outer, ("a", "c"), 4, rows, cols);
        let (mm_file, op_file) = (dir.path().join(format!("mm_{rows}x{cols}.trace")), dir.path().join("op.trace"));
        std::fs::write(&mm_file, mm).expect("write");
        std::fs::write(&op_file, op).expect("write");
        let (mm_file, op_file) = (mm_file.display().to_string(), op_file.display().to_string());
        for target in ["sme", "apple-m4"] {
            let t = check_ok("matmul:M=67,N=131,K=29", target, &mm_file, None);
            let vls: &[u32] = if target == "sme" { &[128, 256, 512, 1024, 2048] } else { &[512] };
            assert_ok_at(&t, vls, &format!("{target} {rows}x{cols}"));
            check_ok("outer_product", target, &op_file, None);
            let a = asm("matmul:M=67,N=131,K=29", target, &mm_file);
            assert_streaming_fmopa_and_slice_store(&a, target);
        }
    }
}

/// `matmul:M=512,N=512,K=512` with 1, 2 and 4 ZA tiles per micro-kernel
/// passes `check` under QEMU on `sme` at the smallest, a middle and the
/// largest streaming VL, and on `apple-m4` (512 bits).
#[test]
fn sme_matmul_512_cubed_passes_check_with_1_2_and_4_tiles() {
    let dir = tempfile::tempdir().expect("tempdir");
    let matmul = std::fs::read_to_string(common::root().join(sched("matmul_sme"))).expect("trace");
    for (rows, cols) in [(4, 4), (4, 8), (8, 8)] {
        let mm = with_za_tiles(&matmul, ("i", "j"), 8, rows, cols);
        let f = dir.path().join(format!("mm_{rows}x{cols}.trace"));
        std::fs::write(&f, mm).expect("write");
        let f = f.display().to_string();
        let t = check_ok("matmul:M=512,N=512,K=512", "sme", &f, Some("128,512,2048"));
        assert_ok_at(&t, &[128, 512, 2048], &format!("sme {rows}x{cols}"));
        let t = check_ok("matmul:M=512,N=512,K=512", "apple-m4", &f, None);
        assert!(t.contains("VL  512: ok"), "apple-m4 {rows}x{cols}: {t}");
    }
}

/// conv2d_nhwc through the im2col-style pack (`configs/schedules/conv2d_nhwc_sme.trace`)
/// with 1, 2 and 4 ZA tiles passes `check` at every streaming VL of `sme`
/// and on `apple-m4`, with edge tiles (7 output columns, 13 filters).
#[test]
fn sme_conv2d_nhwc_passes_check_with_1_2_and_4_tiles() {
    let dir = tempfile::tempdir().expect("tempdir");
    let conv = std::fs::read_to_string(common::root().join(sched("conv2d_nhwc_sme"))).expect("trace");
    for (rows, cols) in [(4, 4), (4, 8), (8, 8)] {
        let t = with_za_tiles(&conv, ("ow", "f"), 4, rows, cols);
        let f = dir.path().join(format!("conv_{rows}x{cols}.trace"));
        std::fs::write(&f, t).expect("write");
        let f = f.display().to_string();
        for target in ["sme", "apple-m4"] {
            let w = "conv2d_nhwc:N=2,H=6,WI=9,C=5,F=13";
            let t = check_ok(w, target, &f, None);
            let vls: &[u32] = if target == "sme" { &[128, 256, 512, 1024, 2048] } else { &[512] };
            assert_ok_at(&t, vls, &format!("{target} {rows}x{cols}"));
            let a = asm(w, target, &f);
            assert_streaming_fmopa_and_slice_store(&a, target);
        }
    }
}

/// `A` read through ZA vertical slices (`za_fmopa_vread`, no transposing
/// pack) passes `check` with 1 and 2 accumulator tiles at every streaming
/// VL of `sme` and on `apple-m4`; the assembly loads rows of `A` into the
/// spare tile and moves vertical slices out of it.
#[test]
fn sme_rows_read_through_za_pass_check() {
    let dir = tempfile::tempdir().expect("tempdir");
    let matmul = std::fs::read_to_string(common::root().join(sched("matmul_sme"))).expect("trace");
    for (rows, cols, spare) in [(4, 4, "za1v.s"), (4, 8, "za2v.s"), (8, 4, "za3v.s")] {
        let mm = with_za_tiles(&matmul, ("i", "j"), 8, rows, cols)
            .replace("a = cache_read(b, \"A\", at=i0, layout=[1, 0])\n", "")
            .replace("za_fmopa", "za_fmopa_vread");
        let f = dir.path().join(format!("vread_{rows}x{cols}.trace"));
        std::fs::write(&f, mm).expect("write");
        let f = f.display().to_string();
        for target in ["sme", "apple-m4"] {
            let t = check_ok("matmul:M=67,N=131,K=29", target, &f, None);
            let vls: &[u32] = if target == "sme" { &[128, 256, 512, 1024, 2048] } else { &[512] };
            assert_ok_at(&t, vls, &format!("{target} {rows}x{cols}"));
            let a = asm("matmul:M=67,N=131,K=29", target, &f);
            assert!(a.contains(spare) && a.contains("ld1w\t{za") && a.contains("fmopa\tza"), "{target}: {spare}");
        }
    }
}

/// The widening SME forms: `check` passes `matmul_f16` (widening `fmopa`,
/// f16 pairs into f32 tiles) with 1, 2 and 4 tiles and an odd K at every
/// streaming VL of `sme` and on `apple-m4`; `matmul_i8` compiles to `smopa`
/// (i8 quads into i32 tiles) and passes `check` too: by QEMU's outputs
/// where QEMU computes `smopa` right, else by the interpreter, which each
/// run then says (QEMU 7.2 computes the 32-bit `smopa` wrong, QEMU issue
/// 2083; see `scaletune_measure::emulation::defects`).
#[test]
fn widening_sme_schedules_pass_check_and_use_the_widening_instructions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let matmul = std::fs::read_to_string(common::root().join(sched("matmul_sme"))).expect("trace");
    let sme = scaletune_codegen::target::Target::load("sme").expect("sme target");
    let smopa_wrong = scaletune_measure::emulation::defects::smopa_i32_is_wrong(&sme, 128).expect("smopa probe");
    for (rows, cols) in [(4, 4), (4, 8), (8, 8)] {
        let mm = with_za_tiles(&matmul, ("i", "j"), 8, rows, cols);
        let f = dir.path().join(format!("mm_{rows}x{cols}.trace"));
        std::fs::write(&f, mm).expect("write");
        let f = f.display().to_string();
        for target in ["sme", "apple-m4"] {
            let t = check_ok("matmul_f16:M=67,N=131,K=29", target, &f, None);
            let vls: &[u32] = if target == "sme" { &[128, 256, 512, 1024, 2048] } else { &[512] };
            assert_ok_at(&t, vls, &format!("{target} {rows}x{cols}"));
            let a = asm("matmul_f16:M=67,N=131,K=29", target, &f);
            assert!(a.lines().any(|l| l.contains("fmopa\tza") && l.ends_with(".h")), "{target}: no widening fmopa");
            let a = asm("matmul_i8:M=67,N=131,K=29", target, &f);
            assert!(a.lines().any(|l| l.contains("smopa\tza") && l.ends_with(".b")), "{target}: no smopa");
            assert!(a.contains("smstart\tsm") && a.contains("st1w\t{za"), "{target}");
            let t = check_ok("matmul_i8:M=67,N=131,K=29", target, &f, None);
            let judged = t.matches("judged by the interpreter: this QEMU computes the 32-bit `smopa` wrong").count();
            assert_eq!(judged, if smopa_wrong { vls.len() } else { 0 }, "{target} {rows}x{cols}: {t}");
        }
    }
}

/// The widening bf16 form: `check` passes `matmul_bf16` (widening `bfmopa`,
/// bf16 pairs into f32 tiles, BFDotAdd rounding to odd under QEMU 7.2) with
/// 1, 2 and 4 tiles, edge tiles and an odd K at the smallest, a middle and
/// the largest streaming VL of `sme` and on `apple-m4`; the assembly enters
/// streaming mode, uses `bfmopa` and stores ZA slices.
#[test]
fn bf16_sme_schedules_pass_check_and_use_bfmopa() {
    let dir = tempfile::tempdir().expect("tempdir");
    let matmul = std::fs::read_to_string(common::root().join(sched("matmul_sme"))).expect("trace");
    let w = "matmul_bf16:M=67,N=131,K=29";
    for (rows, cols) in [(4, 4), (4, 8), (8, 8)] {
        let mm = with_za_tiles(&matmul, ("i", "j"), 8, rows, cols);
        let f = dir.path().join(format!("mm_{rows}x{cols}.trace"));
        std::fs::write(&f, mm).expect("write");
        let f = f.display().to_string();
        let t = check_ok(w, "sme", &f, Some("128,512,2048"));
        assert_ok_at(&t, &[128, 512, 2048], &format!("sme {rows}x{cols}"));
        let t = check_ok(w, "apple-m4", &f, None);
        assert_ok_at(&t, &[512], &format!("apple-m4 {rows}x{cols}"));
        for target in ["sme", "apple-m4"] {
            let a = asm(w, target, &f);
            assert!(a.lines().any(|l| l.contains("bfmopa\tza") && l.ends_with(".h")), "{target}: no bfmopa");
            assert!(a.contains("smstart\tsm") && a.contains("st1w\t{za"), "{target}");
        }
    }
}

/// bf16 inputs outside SME: `check` passes `matmul_bf16` unscheduled and
/// tiled natively on the host, and as length-agnostic SVE on neoverse-v1
/// under QEMU (bf16 loads widened to f32 in registers).
#[test]
fn bf16_matmul_passes_check_on_the_host_and_on_sve() {
    let w = "matmul_bf16:M=19,N=37,K=11";
    for (target, schedule) in [
        ("host", None),
        ("host", Some("matmul_tiled")),
        ("neoverse-v1", None),
        ("neoverse-v1", Some("matmul_tiled_vla")),
    ] {
        let file = schedule.map(sched);
        check_passes(w, target, file.as_deref(), None);
    }
}

/// A bf16 output (f32 results rounded to bf16 in the kernel, by integer
/// operations in the IR) passes `check` scalar and as predicated vectors on
/// the host, SVE, neoverse-v1 and RVV.
#[test]
fn bf16_outputs_pass_check_on_every_vector_architecture() {
    let dir = tempfile::tempdir().expect("tempdir");
    let w = dir.path().join("narrow_bf16.toml");
    std::fs::write(
        &w,
        "name = \"narrow_bf16\"\ncompute = [\"Y[i] = bf16(f32(X[i]) * 3.0 + Z[i])\"]\n[params]\nN = 77\n[tensors]\n\
         X = { dtype = \"bf16\", shape = [\"N\"] }\nZ = { dtype = \"f32\", shape = [\"N\"] }\n\
         Y = { dtype = \"bf16\", shape = [\"N\"], role = \"output\" }\n",
    )
    .expect("write");
    let s = dir.path().join("narrow.trace");
    std::fs::write(
        &s,
        "b = get_block(\"Y\")\ni, = get_loops(b)\ni0, i1 = split(i, factors=[None, 4*vscale])\nvectorize(i1, tail=\"predicate\")\n",
    )
    .expect("write");
    let (w, s) = (w.display().to_string(), s.display().to_string());
    for target in ["host", "sve-generic", "neoverse-v1", "rvv"] {
        for schedule in [None, Some(s.as_str())] {
            check_passes(&w, target, schedule, None);
        }
    }
}

/// Without `--schedule`, `compile` and `check` use the naive loop nest.
#[test]
fn compile_and_check_the_naive_nest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().display().to_string();
    let o = scaletune(&["compile", "scale_add:N=37", "--target", "sve-generic", "--emit", "loops,obj", "-o", &out]);
    assert!(o.status.success(), "{}", text(&o));
    let loops = std::fs::read_to_string(dir.path().join("scaletune_scale_add.loops")).expect("loops written");
    assert!(loops.contains("for i in 37:") && !loops.contains("vectorize"), "{loops}");
    assert!(!std::fs::read(dir.path().join("scaletune_scale_add.o")).expect("object written").is_empty());
    for (w, target, vls) in [
        ("matmul:M=7,N=9,K=5", "host", None),
        ("softmax_rows:M=3,N=21", "sve-generic", Some("128,2048")),
        ("paged_read:P=9,PAGES=40", "rvv", Some("128,1024")),
    ] {
        let mut args = vec!["check", w, "--target", target];
        if let Some(v) = vls {
            args.extend(["--vl", v]);
        }
        let o = scaletune(&args);
        let t = text(&o);
        assert!(o.status.success(), "{args:?}: {t}");
        assert!(t.contains("schedule unscheduled") && t.contains("all runs match the reference"), "{t}");
    }
}

/// `check` exits 1 when a run computes a wrong result. The wrong result is
/// real: a kernel scaling by a subnormal factor, run by a driver linked with
/// `-ffast-math` (clang then links crtfastmath.o, which turns on
/// flush-to-zero and denormals-are-zero), returns zeros where IEEE
/// arithmetic, and the same kernel linked normally, gives subnormals.
#[test]
fn check_exits_1_on_a_wrong_result() {
    let dir = tempfile::tempdir().expect("tempdir");
    let workload = dir.path().join("tiny_scale.toml");
    std::fs::write(
        &workload,
        "name = \"tiny_scale\"\ncompute = [\"Y[i] = s * X[i]\"]\n[scalars]\ns = { dtype = \"f32\", value = 1e-39 }\n[tensors]\nX = { dtype = \"f32\", shape = [37] }\nY = { dtype = \"f32\", shape = [37], role = \"output\" }\n",
    )
    .expect("writes");
    let host = std::fs::read_to_string(root().join("configs/targets/host.toml")).expect("reads");
    let cc = "cc = [\"clang-19\", \"-O2\", \"-fuse-ld=lld\"]";
    assert!(host.contains(cc), "{host}");
    let ftz = dir.path().join("host-ftz.toml");
    std::fs::write(
        &ftz,
        host.replace(cc, "cc = [\"clang-19\", \"-O2\", \"-ffast-math\", \"-fuse-ld=lld\"]")
            .replace("name = \"host\"", "name = \"host-ftz\""),
    )
    .expect("writes");
    let (w, ftz) = (workload.display().to_string(), ftz.display().to_string());
    let s = dir.path().join("vector.trace");
    std::fs::write(
        &s,
        "b = get_block(\"Y\")\ni = get_loops(b)\ni0, i1 = split(i, factors=[None, 4*vscale])\nvectorize(i1, tail=\"predicate\")\n",
    )
    .expect("writes");
    let s = s.display().to_string();
    for sched in [None, Some(s.as_str())] {
        let mut args = vec!["check", w.as_str(), "--target", "host"];
        args.extend(sched.iter().flat_map(|s| ["--schedule", s]));
        let ok = scaletune(&args);
        assert!(ok.status.success(), "{args:?}: IEEE subnormals must match: {}", text(&ok));
        args[3] = &ftz;
        let bad = scaletune(&args);
        let t = text(&bad);
        assert_eq!(bad.status.code(), Some(1), "{args:?}: {t}");
        assert!(t.contains("WRONG") && (t.contains("got -0,") || t.contains("got 0,")), "{t}");
        assert!(t.contains("some runs do NOT match the reference"), "{t}");
    }
}

fn fails(args: &[&str], expect: &str) {
    let o = scaletune(args);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(!o.status.success(), "{args:?} succeeded");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: not one line: {err}");
    assert!(err.contains(expect), "{args:?}: `{expect}` not in: {err}");
    assert_eq!(err.matches(expect).count(), 1, "{args:?}: the error is repeated: {err}");
}

#[test]
fn bad_input_gets_a_one_line_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "compute = [\"C[i, j] += A[i, k] * B[k j]\"]\n[tensors]\nA = { dtype = \"f32\", shape = [4, 4] }\nB = { dtype = \"f32\", shape = [4, 4] }\nC = { dtype = \"f32\", shape = [4, 4], role = \"output\" }\n",
    )
    .expect("writes");
    let bad = bad.display().to_string();
    fails(&["check", &bad, "--target", "host"], "bad.toml:1:38: expected `,` or `]` after an index, found `j`");
    fails(&["compile", "nosuch", "--target", "host"], "unknown workload `nosuch`");
    fails(&["compile", "matmul", "--target", "z80"], "unknown target `z80`");
    fails(
        &["check", "matmul:M=8", "--target", "sve-generic", "--vl", "384"],
        "cannot run at a vector length of 384 bits",
    );
    fails(&["check", "matmul:M=8", "--target", "sve-generic", "--vl", "128,128"], "--vl lists 128 twice");

    let unknown_loop = dir.path().join("unknown.trace");
    std::fs::write(&unknown_loop, "b = get_block(\"C\")\ni, j, k = get_loops(b)\nvectorize(jj)\n").expect("writes");
    let unknown_loop = unknown_loop.display().to_string();
    fails(
        &["check", "matmul", "--target", "host", "--schedule", &unknown_loop],
        "line 3: `vectorize(jj, tail=\"predicate\")`: `jj` is not defined",
    );

    let illegal = dir.path().join("illegal.trace");
    std::fs::write(&illegal, "b = get_block(\"C\")\ni, j, k = get_loops(b)\nvectorize(k)\n").expect("writes");
    let illegal = illegal.display().to_string();
    fails(&["compile", "matmul", "--target", "host", "--schedule", &illegal], "extent 128 is not a vector length");

    let bad_reorder = dir.path().join("reorder.trace");
    std::fs::write(&bad_reorder, "b = get_block(\"C\")\ni, j, k = get_loops(b)\nreorder(k, k)\n").expect("writes");
    let bad_reorder = bad_reorder.display().to_string();
    fails(&["compile", "matmul", "--target", "host", "--schedule", &bad_reorder], "loop `k` is listed twice");

    let syntax = dir.path().join("syntax.trace");
    std::fs::write(&syntax, "b = get_block(\"C\"\n").expect("writes");
    let syntax = syntax.display().to_string();
    fails(&["compile", "matmul", "--target", "host", "--schedule", &syntax], "line 1, column 18");
}

#[test]
fn listing_commands() {
    let o = scaletune(&["workloads"]);
    assert!(o.status.success());
    let t = text(&o);
    for w in ["scale_add", "matmul", "paged_read", "conv2d_nhwc", "softmax_rows"] {
        assert!(t.contains(w), "{t}");
    }
    let o = scaletune(&["targets", "rvv"]);
    let t = text(&o);
    assert!(t.contains("vscale = VL/64") && t.contains("qemu-riscv64"), "{t}");
    let o = scaletune(&["workloads", "conv2d_nhwc:S=2"]);
    assert!(text(&o).contains("Out: f32[1, 7, 7, 32] output"), "{}", text(&o));
}

#[test]
fn compile_emits_every_kind_deterministically() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    for d in [&a, &b] {
        let o = scaletune(&[
            "compile",
            MM,
            "--target",
            "sve-generic",
            "--schedule",
            &sched("matmul_tiled"),
            "--emit",
            "asm,llvm,obj,loops,vector",
            "-o",
            &d.display().to_string(),
        ]);
        assert!(o.status.success(), "{}", text(&o));
    }
    for ext in ["s", "ll", "o", "loops", "vector"] {
        let fa = std::fs::read(a.join(format!("scaletune_matmul.{ext}"))).expect("written");
        let fb = std::fs::read(b.join(format!("scaletune_matmul.{ext}"))).expect("written");
        assert!(!fa.is_empty() && fa == fb, "{ext} differs between runs");
    }
}

/// Bad options and inputs are bad input (exit 2, a message naming them),
/// not a candidate's failure.
#[test]
fn bad_options_exit_2() {
    let cases: [(&[&str], &str); 5] = [
        (&["compile", "matmul:K=4,K=8", "--target", "host"], "parameter `K` is given twice"),
        (&["measure", "scale_add:N=64", "--target", "host", "--timeout", "0"], "invalid value '0' for '--timeout"),
        (&["check", "scale_add:N=64", "--target", "host", "--timeout", "0"], "invalid value '0' for '--timeout"),
        (&["tune", "scale_add:N=64", "--target", "host", "--timeout", "0"], "invalid value '0' for '--timeout"),
        (&["measure", "scale_add:N=64", "--target", "host", "--pin-core", "4095"], "cannot pin to CPU 4095"),
    ];
    for (args, expect) in cases {
        let o = scaletune(args);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expect), "{args:?}: `{expect}` not in: {err}");
        assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    }
}

/// The libraries' warnings reach standard error from every command (here:
/// a machine lock that cannot be made, its directory being a file), and
/// `RUST_LOG=off` silences them.
#[test]
fn library_warnings_reach_standard_error_unless_the_log_is_off() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("not-a-directory");
    std::fs::write(&file, "").expect("writes");
    let run = |log: Option<&str>| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_scaletune"));
        cmd.args(["check", "scale_add:N=64", "--target", "host"]).current_dir(root());
        cmd.env("SCALETUNE_MACHINE_LOCK", &file).env_remove("RUST_LOG");
        if let Some(level) = log {
            cmd.env("RUST_LOG", level);
        }
        let o = cmd.output().expect("runs scaletune");
        assert!(o.status.success(), "{}", text(&o));
        String::from_utf8_lossy(&o.stderr).to_string()
    };
    assert_eq!(
        run(None),
        format!(
            " WARN machine lock {}: File exists (os error 17); timed runs are not kept apart from other scaletune \
             processes (set SCALETUNE_MACHINE_LOCK)\n",
            file.display()
        )
    );
    assert_eq!(run(Some("off")), "");
}

/// A job names each shape once: two references to one shape would be two
/// tasks sharing every record.
#[test]
fn a_shape_named_twice_in_one_job_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("t.db");
    let o = scaletune(&[
        "tune",
        "matmul:M=8,N=8,K=8",
        "matmul:K=8,N=8,M=8",
        "--target",
        "host",
        "--db",
        db.to_str().expect("utf-8"),
    ]);
    assert_eq!(
        (o.status.code(), String::from_utf8_lossy(&o.stderr).to_string()),
        (
            Some(2),
            "error: `matmul:K=8,N=8,M=8` and `matmul:M=8,N=8,K=8` are the same workload (matmul:M=8,N=8,K=8): name \
             each shape once\n"
                .to_string()
        )
    );
    assert!(!db.exists());
}

/// `--vl-weights` must weight the vector lengths the job measures, each
/// once; a refused job leaves no database behind.
#[test]
fn vl_weights_of_lengths_the_job_does_not_measure_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("t.db");
    let dbs = db.to_str().expect("utf-8");
    let job = ["tune", "scale_add:N=64", "--target", "sve-generic", "--runner", "qemu", "--db", dbs, "--vl-weights"];
    let cases: [(&str, Option<&str>, &str); 4] = [
        (
            "512=2",
            Some("128,256"),
            "error: --vl-weights weights VL 512, which the job does not measure (its VLs: 128,256)\n",
        ),
        ("128=1,128=2", Some("128,256"), "error: --vl-weights weights VL 128 twice\n"),
        ("128=1", Some("128,256,128"), "error: --vl lists 128 twice\n"),
        (
            "1024=2",
            None,
            "error: --vl-weights weights VL 1024, which the job does not measure (its VLs: 128,256,512,2048)\n",
        ),
    ];
    for (weights, vl, expect) in cases {
        let mut args: Vec<&str> = job.to_vec();
        args.push(weights);
        if let Some(vl) = vl {
            args.extend(["--vl", vl]);
        }
        let o = scaletune(&args);
        assert_eq!((o.status.code(), String::from_utf8_lossy(&o.stderr).to_string()), (Some(2), expect.to_string()));
        assert!(!db.exists(), "{args:?} left a database behind");
    }
}

/// Deeply nested input is a syntax error naming the place, not a stack
/// overflow: a workload expression and a trace argument 50,000 levels deep.
#[test]
fn deep_nesting_is_a_syntax_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let deep = format!("{}A[i]{}", "(".repeat(50_000), ")".repeat(50_000));
    let wl = dir.path().join("deep.toml");
    std::fs::write(
        &wl,
        format!(
            "compute = [\"Y[i] = {deep}\"]\n[tensors]\nA = {{ dtype = \"f32\", shape = [4] }}\nY = {{ dtype = \"f32\", shape = [4], role = \"output\" }}\n"
        ),
    )
    .expect("writes");
    let trace = dir.path().join("deep.trace");
    let factors = format!("{}4{}", "(".repeat(50_000), ")".repeat(50_000));
    std::fs::write(
        &trace,
        format!("b = get_block(\"C\")\ni, j, k = get_loops(b)\ni0, i1 = split(i, factors=[None, {factors}])\n"),
    )
    .expect("writes");
    let lists = dir.path().join("lists.trace");
    std::fs::write(
        &lists,
        format!(
            "b = get_block(\"C\")\ni, j, k = get_loops(b)\nreorder({}i{})\n",
            "[".repeat(50_000),
            "]".repeat(50_000)
        ),
    )
    .expect("writes");
    let (wl, trace, lists) = (wl.display().to_string(), trace.display().to_string(), lists.display().to_string());
    for args in [
        vec!["compile", wl.as_str(), "--target", "host"],
        vec!["compile", "matmul", "--target", "host", "--schedule", trace.as_str()],
        vec!["compile", "matmul", "--target", "host", "--schedule", lists.as_str()],
    ] {
        let o = scaletune(&args);
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", &err[..err.len().min(400)]);
        assert!(err.contains("nested more than 256 levels deep"), "{args:?}: {}", &err[..err.len().min(400)]);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: not one line");
        // The 100,000-character line is quoted by its start only.
        assert!(err.len() < 600, "{args:?}: a {}-byte message", err.len());
    }
}

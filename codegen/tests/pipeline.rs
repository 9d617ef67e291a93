//! The one compile pipeline: products on request leave the object unchanged, stages agree with each other, and fixed-length scalable kinds are specialized per vector length.

use scaletune_codegen::llvm::{self, CompileOptions};
use scaletune_codegen::pipeline::{
    compile, compile_nest, fixed_vl, kernel_symbol, lower_nest, schedule, target_at_vl, vl_builds, CompileError, Emit,
    ObjectPlan, Options,
};
use scaletune_codegen::target::Target;
use scaletune_space::trace::{parse_trace, Trace};
use scaletune_space::workload::{load, Workload};

fn schedule_file(name: &str) -> Trace {
    let path = format!("{}/../configs/schedules/{name}.trace", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    parse_trace(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn target(name: &str) -> Target {
    Target::load(name).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn workload(reference: &str) -> Workload {
    load(reference).unwrap_or_else(|e| panic!("{reference}: {e}"))
}

/// (workload, schedule, target) combinations that compile today.
const CASES: &[(&str, &str, &str)] = &[
    ("matmul:M=67,N=131,K=29", "matmul_tiled", "sve-generic"),
    ("matmul:M=67,N=131,K=29", "matmul_tiled", "neoverse-v1"),
    ("matmul:M=67,N=131,K=29", "matmul_tiled_neon", "neoverse-v2"),
    ("matmul:M=64,N=64,K=64", "matmul_parallel", "host"),
    ("matmul:M=64,N=64,K=64", "matmul_tiled", "rvv"),
    ("scale_add", "scale_add_predicated", "sve-generic"),
];

#[test]
fn the_object_does_not_depend_on_which_texts_are_emitted() {
    for &(w, s, t) in CASES {
        let (w, s, t) = (workload(w), schedule_file(s), target(t));
        let all = compile(&w, Some(&s), &t, &Options { emit: Emit::ALL, ..Options::default() }).expect("compiles");
        let object_only = compile(&w, Some(&s), &t, &Options::default()).expect("compiles");
        assert_eq!(all.object, object_only.object, "{} on {}", w.name, t.name);
        assert!(all.asm.as_ref().is_some_and(|a| !a.is_empty()) && all.llvm_ir.is_some());
        assert_eq!((object_only.asm, object_only.llvm_ir), (None, None));
    }
}

#[test]
fn the_stages_are_the_ones_llvm_and_lowering_give_alone() {
    for &(w, s, t) in CASES {
        let (w, s, t) = (workload(w), schedule_file(s), target(t));
        let c = compile(&w, Some(&s), &t, &Options { emit: Emit::ALL, ..Options::default() }).expect("compiles");
        let nest = schedule(&w, Some(&s), &t, None).expect("schedules");
        assert_eq!(c.nest.to_string(), nest.to_string());
        let program = lower_nest(&w, &nest).expect("lowers");
        assert_eq!(c.program.to_string(), program.to_string());
        assert_eq!(c.symbol, kernel_symbol(&w));
        assert_eq!(program.name, c.symbol);
        let alone = llvm::compile(&program, &t.with_caps(&nest.caps), &CompileOptions::default()).expect("LLVM");
        assert_eq!(c.object, alone.object);
        assert_eq!(c.asm.as_deref(), Some(alone.asm.as_str()));
        assert_eq!(c.llvm_ir.as_deref(), Some(alone.llvm_ir.as_str()));
        let again = compile_nest(&w, nest, &t, &Options::default()).expect("compiles");
        assert_eq!(again.object, c.object);
    }
}

#[test]
fn kernel_symbols_are_identifiers() {
    assert_eq!(kernel_symbol(&workload("matmul:M=8,N=8,K=8")), "scaletune_matmul");
    let mut w = workload("scale_add");
    w.name = "my-kernel v2".into();
    assert_eq!(kernel_symbol(&w), "scaletune_my_kernel_v2");
}

#[test]
fn options_symbol_names_the_kernel_and_its_outlined_loops() {
    let (w, t) = (workload("matmul:M=32,N=32,K=8"), target("host"));
    let s = schedule_file("matmul_parallel");
    let opts = Options { symbol: Some("mm_tuned".into()), emit: Emit::ALL, ..Options::default() };
    let c = compile(&w, Some(&s), &t, &opts).expect("compiles");
    assert_eq!(c.symbol, "mm_tuned");
    let ir = c.llvm_ir.expect("IR");
    assert!(ir.contains("define void @mm_tuned(") && ir.contains("@mm_tuned.par.0"), "{ir}");
    assert!(!ir.contains(&kernel_symbol(&w)), "{ir}");
}

#[test]
fn a_fixed_length_sve_schedule_is_compiled_once_per_vector_length() {
    // matmul_tiled has no use_vectors: on a 256-bit Neoverse V1 it takes the
    // target's own kind, SVE fixed at 256 bits.
    let (w, s, v1) = (workload("matmul:M=96,N=96,K=96"), schedule_file("matmul_tiled"), target("neoverse-v1"));
    let plan = |specialize: Option<u32>, vl: u32| ObjectPlan { specialize, built_for_vl: Some(vl), vl_bits: vec![vl] };
    assert_eq!(
        vl_builds(&w, Some(&s), &v1, &[128, 256, 512]),
        [plan(Some(128), 128), plan(None, 256), plan(Some(512), 512)]
    );
    // Measured at its own length only, it is one object as before.
    assert_eq!(vl_builds(&w, Some(&s), &v1, &[256]), [plan(None, 256)]);
    let mut seen = Vec::new();
    for (vl, vscale) in [(128, 1), (256, 2), (512, 4), (2048, 16)] {
        let opts = Options { emit: Emit { llvm_ir: true, asm: false }, vl_bits: Some(vl), ..Options::default() };
        let c = compile(&w, Some(&s), &v1, &opts).expect("compiles");
        assert_eq!(c.built_for_vl, Some(vl));
        assert_eq!(c.nest.caps.vscale_values, [vscale]);
        assert_eq!(fixed_vl(&c.target.caps), Some(vl));
        let ir = c.llvm_ir.expect("asked for");
        assert!(ir.contains(&format!("vscale_range({vscale},{vscale})")), "VL {vl}: {ir}");
        seen.push(c.object);
    }
    seen.dedup();
    assert_eq!(seen.len(), 4, "one object per vector length");
    // At its own length the specialization changes nothing.
    let own = compile(&w, Some(&s), &v1, &Options::default()).expect("compiles");
    let at_256 = compile(&w, Some(&s), &v1, &Options { vl_bits: Some(256), ..Options::default() }).expect("compiles");
    assert_eq!(own.object, at_256.object);
    assert_eq!(own.built_for_vl, Some(256));
}

#[test]
fn fixed_length_sve_at_vl_128_is_neon_with_sve_predicated_memory() {
    // Neoverse V1 has four FMA pipes for NEON and two for SVE: compiled for
    // 128 bits, the `sve` kind's vectors are fixed-length (NEON), and only
    // its masked loads and stores use SVE predicates (NEON has none).
    let (w, v1) = (workload("matmul:M=9,N=21,K=6"), target("neoverse-v1"));
    let s = parse_trace(&format!(
        "use_vectors(\"sve\")\n{}",
        std::fs::read_to_string(format!("{}/../configs/schedules/matmul_tiled.trace", env!("CARGO_MANIFEST_DIR")))
            .expect("read")
    ))
    .expect("parses");
    let asm = |vl: u32| {
        let opts = Options { emit: Emit { llvm_ir: false, asm: true }, vl_bits: Some(vl), ..Options::default() };
        compile(&w, Some(&s), &v1, &opts).expect("compiles").asm.expect("asked for")
    };
    let (at_128, at_256) = (asm(128), asm(256));
    assert!(at_128.contains("fmla\tv") && !at_128.contains("fmla\tz"), "{at_128}");
    assert!(at_128.contains("ld1w\t{ z") && at_128.contains("st1w\t{ z"), "{at_128}");
    assert!(at_256.contains("fmla\tz") && !at_256.contains("fmla\tv"), "{at_256}");
}

#[test]
fn length_agnostic_and_fixed_width_schedules_are_compiled_once() {
    let w = workload("matmul:M=96,N=96,K=96");
    let v1 = target("neoverse-v1");
    for s in ["matmul_tiled_vla", "matmul_tiled_neon"] {
        let s = schedule_file(s);
        let all = ObjectPlan { specialize: None, built_for_vl: None, vl_bits: vec![128, 256, 512] };
        assert_eq!(vl_builds(&w, Some(&s), &v1, &[128, 256, 512]), [all]);
        let c = compile(&w, Some(&s), &v1, &Options::default()).expect("compiles");
        assert_eq!(c.built_for_vl, None);
        // Specializing leaves code that is valid at every length alone.
        let at = compile(&w, Some(&s), &v1, &Options { vl_bits: Some(512), ..Options::default() }).expect("compiles");
        assert_eq!(at.object, c.object);
    }
    let generic = target("sve-generic");
    let s = schedule_file("matmul_tiled");
    let all = ObjectPlan { specialize: None, built_for_vl: None, vl_bits: vec![128, 2048] };
    assert_eq!(vl_builds(&w, Some(&s), &generic, &[128, 2048]), [all]);
}

#[test]
fn a_vector_length_off_the_granule_is_refused_naming_it() {
    let (w, s, v1) = (workload("matmul:M=16,N=16,K=16"), schedule_file("matmul_tiled"), target("neoverse-v1"));
    let e = compile(&w, Some(&s), &v1, &Options { vl_bits: Some(200), ..Options::default() }).expect_err("200 bits");
    assert!(matches!(e, CompileError::BadVectorLength { vl_bits: 200, granule_bits: 128, .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "cannot specialize neoverse-v1 vectors to 200 bits: not a multiple of the 128-bit granule"
    );
}

#[test]
fn a_schedule_that_does_not_apply_is_a_schedule_error() {
    let w = workload("scale_add");
    let s = schedule_file("matmul_tiled");
    let e = compile(&w, Some(&s), &target("host"), &Options::default()).expect_err("no block C");
    assert!(matches!(e, CompileError::Schedule(_)), "{e:?}");
    assert!(e.to_string().starts_with("schedule: "), "{e}");
}

#[test]
fn a_fixed_length_target_moves_to_another_vector_length_and_others_stay() {
    let v1 = target("neoverse-v1");
    let at = target_at_vl(&v1, 1024).expect("a multiple of 128");
    assert_eq!((at.caps.vscale_values.clone(), at.default_vl_bits.clone()), (vec![8], vec![1024]));
    assert_eq!(at.vscale_for_vl(1024).ok(), Some(8));
    assert_eq!(
        (at.name.as_str(), at.cpu.as_str(), at.features.as_str()),
        ("neoverse-v1", v1.cpu.as_str(), v1.features.as_str())
    );
    for name in ["sve-generic", "rvv", "neon", "host"] {
        let t = target(name);
        let at = target_at_vl(&t, 512).expect("unchanged");
        assert_eq!((at.caps, at.default_vl_bits), (t.caps, t.default_vl_bits), "{name}");
    }
}

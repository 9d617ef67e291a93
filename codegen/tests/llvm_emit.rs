//! Checks of the LLVM emitter's output text: instructions selected per target, attributes, metadata, determinism and errors.

mod llvm_util;

use llvm_util::{compile_o3, lanes32, programs};
use scaletune_codegen::llvm::{compile, CompileOptions, LlvmError};
use scaletune_codegen::target::Target;
use scaletune_codegen::vprog::*;
use scaletune_space::DType;

fn target(name: &str) -> Target {
    Target::load(name).unwrap_or_else(|e| panic!("loading target {name}: {e}"))
}

/// The instruction lines of an assembly listing (no directives or labels).
fn instructions(asm: &str) -> Vec<&str> {
    asm.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('.') && !l.ends_with(':')).collect()
}

fn has_instr(asm: &str, pred: impl Fn(&str) -> bool) -> bool {
    instructions(asm).into_iter().any(pred)
}

#[test]
fn sve_predicated_loop_uses_whilelo_and_ld1w() {
    for name in ["sve-generic", "neoverse-v1"] {
        let t = target(name);
        let art = compile_o3(&programs::vadd(37, lanes32(&t)), &t);
        let asm = &art.asm;
        assert!(has_instr(asm, |l| l.starts_with("whilelo\tp")), "{name}: no whilelo in\n{asm}");
        assert!(
            has_instr(asm, |l| l.starts_with("ld1w\t{ z") && l.contains("/z")),
            "{name}: no predicated ld1w\n{asm}"
        );
        assert!(has_instr(asm, |l| l.starts_with("st1w\t{ z")), "{name}: no st1w\n{asm}");
        assert!(has_instr(asm, |l| l.starts_with("fmul\tz")), "{name}: no SVE fmul\n{asm}");
        let ir = &art.llvm_ir;
        assert!(ir.contains("@llvm.get.active.lane.mask.nxv4i1.i64"), "{ir}");
        assert!(ir.contains("@llvm.masked.load.nxv4f32.p0"), "{ir}");
        assert!(ir.contains("@llvm.masked.store.nxv4f32.p0"), "{ir}");
        assert!(ir.contains("fadd contract <vscale x 4 x float>"), "{ir}");
    }
}

#[test]
fn function_signature_and_attributes() {
    let t = target("sve-generic");
    let ir = compile_o3(&programs::vadd(37, lanes32(&t)), &t).llvm_ir;
    assert!(
        ir.contains("define void @vadd(ptr noalias nocapture readonly %a, ptr noalias nocapture readonly %b, ptr noalias nocapture writeonly %y, float %s)"),
        "{ir}"
    );
    assert!(ir.contains("vscale_range(1,16)"), "{ir}");
    assert!(ir.contains("\"target-cpu\"=\"generic\""), "{ir}");
    assert!(ir.contains("\"target-features\"=\"+v8.2a,+neon,+sve\""), "{ir}");
    assert!(ir.contains("nounwind"), "{ir}");
    assert!(!ir.contains("alloca"), "registers must be promoted at O3:\n{ir}");

    let v1 = target("neoverse-v1");
    let ir = compile_o3(&programs::vadd(37, lanes32(&v1)), &v1).llvm_ir;
    assert!(ir.contains("vscale_range(2,2)"), "{ir}");
    assert!(ir.contains("\"target-cpu\"=\"neoverse-v1\""), "{ir}");

    let rvv = target("rvv");
    let ir = compile_o3(&programs::vadd(37, lanes32(&rvv)), &rvv).llvm_ir;
    assert!(ir.contains("vscale_range(2,16)"), "{ir}");

    let host = target("host");
    let ir = compile_o3(&programs::vadd(37, lanes32(&host)), &host).llvm_ir;
    assert!(!ir.contains("vscale_range"), "fixed-length targets get no vscale_range:\n{ir}");
    assert!(ir.contains(&format!("\"target-cpu\"=\"{}\"", host.cpu)), "{ir}");
}

#[test]
fn sve_gathers_and_scatters_use_32_bit_vector_offsets() {
    let t = target("sve-generic");
    let art = compile_o3(&programs::gather(29, lanes32(&t)), &t);
    let gathers: Vec<&str> = instructions(&art.asm).into_iter().filter(|l| l.starts_with("ld1w")).collect();
    // Both the indirect and the strided gather load 32-bit lanes with a vector of sign-extended 32-bit offsets.
    let vector_indexed = gathers.iter().filter(|l| l.contains(".s, sxtw #2]")).count();
    assert_eq!(vector_indexed, 2, "gathers: {gathers:#?}\n{}", art.asm);
    assert!(art.llvm_ir.contains("@llvm.masked.gather.nxv4f32.nxv4p0"), "{}", art.llvm_ir);

    let art = compile_o3(&programs::scatter(37, 16, lanes32(&t)), &t);
    assert!(has_instr(&art.asm, |l| l.starts_with("st1w") && l.contains(".s, sxtw #2]")), "{}", art.asm);
    assert!(art.llvm_ir.contains("@llvm.masked.scatter.nxv4f32.nxv4p0"), "{}", art.llvm_ir);
}

#[test]
fn sve_reductions_use_horizontal_instructions() {
    let t = target("sve-generic");
    let art = compile_o3(&programs::reduce(37, lanes32(&t)), &t);
    for op in ["faddv", "fmaxnmv", "uaddv", "sminv"] {
        assert!(has_instr(&art.asm, |l| l.starts_with(op)), "no {op} in\n{}", art.asm);
    }
    let ir = &art.llvm_ir;
    assert!(ir.contains("call reassoc float @llvm.vector.reduce.fadd.nxv4f32(float -0.000000e+00"), "{ir}");
    assert!(ir.contains("@llvm.vector.reduce.fmax.nxv4f32"), "{ir}");
    assert!(ir.contains("@llvm.vector.reduce.add.nxv4i32"), "{ir}");
    assert!(ir.contains("@llvm.vector.reduce.smin.nxv4i32"), "{ir}");
}

#[test]
fn rvv_uses_vector_extension() {
    let t = target("rvv");
    let art = compile_o3(&programs::vadd(37, lanes32(&t)), &t);
    assert!(has_instr(&art.asm, |l| l.starts_with("vsetvli")), "{}", art.asm);
    assert!(has_instr(&art.asm, |l| l.starts_with("vle32.v") && l.ends_with("v0.t")), "{}", art.asm);
    assert!(has_instr(&art.asm, |l| l.starts_with("vse32.v") && l.ends_with("v0.t")), "{}", art.asm);
    let art = compile_o3(&programs::gather(29, lanes32(&t)), &t);
    assert!(has_instr(&art.asm, |l| l.starts_with("vluxei") && l.ends_with("v0.t")), "{}", art.asm);
    // Scatters must write overlapping lanes in order: the ordered form.
    let art = compile_o3(&programs::scatter(37, 16, lanes32(&t)), &t);
    assert!(has_instr(&art.asm, |l| l.starts_with("vsoxei")), "{}", art.asm);
}

#[test]
fn host_uses_its_native_vectors() {
    let t = target("host");
    let art = compile_o3(&programs::vadd(37, lanes32(&t)), &t);
    let width = t.caps.max_bits();
    let reg = match width {
        512 => "%zmm",
        256 => "%ymm",
        _ => "%xmm",
    };
    assert!(has_instr(&art.asm, |l| l.starts_with("vaddps") && l.contains(reg)) || width == 128, "{}", art.asm);
    if width == 512 {
        let art = compile_o3(&programs::gather(29, lanes32(&t)), &t);
        assert!(has_instr(&art.asm, |l| l.starts_with("vgatherdps")), "{}", art.asm);
    }
}

#[test]
fn same_inputs_give_identical_outputs() {
    for name in ["host", "sve-generic", "rvv"] {
        let t = target(name);
        let prog = programs::math(37, lanes32(&t));
        let first = compile_o3(&prog, &t);
        let second = compile_o3(&prog, &t);
        assert!(first.llvm_ir == second.llvm_ir, "{name}: IR differs");
        assert!(first.asm == second.asm, "{name}: assembly differs");
        assert!(first.object == second.object, "{name}: object differs");
        assert!(!first.object.is_empty() && first.object.starts_with(b"\x7fELF"), "{name}: not an ELF object");
    }
}

#[test]
fn concurrent_compilations_are_independent() {
    let t = target("sve-generic");
    let progs = [
        programs::vadd(37, lanes32(&t)),
        programs::gather(29, lanes32(&t)),
        programs::reduce(37, lanes32(&t)),
        programs::floor_ops(24, lanes32(&t)),
    ];
    let sequential: Vec<_> = progs.iter().map(|p| compile_o3(p, &t)).collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|k| {
                let (p, t) = (&progs[k % progs.len()], &t);
                s.spawn(move || (k % 4, compile_o3(p, t)))
            })
            .collect();
        for h in handles {
            let (k, art) = h.join().expect("compile thread panicked");
            assert!(art == sequential[k], "thread result for program {k} differs from the sequential one");
        }
    });
}

#[test]
fn loop_hints_become_loop_metadata() {
    let t = target("sve-generic");
    let opts = CompileOptions { opt_level: 0 };
    let prog = programs::vadd(37, lanes32(&t));
    let ir = compile(&prog, &t, &opts).expect("compiles at O0").llvm_ir;
    assert!(ir.contains("!{!\"llvm.loop.unroll.count\", i32 2}"), "{ir}");
    assert!(ir.contains("!llvm.loop !0"), "{ir}");
    assert!(ir.contains("!0 = distinct !{!0, !1}"), "{ir}");
    // At O0 registers stay in allocas (scalable ones included).
    assert!(ir.contains("alloca <vscale x 4 x float>"), "{ir}");
    let prog = programs::scatter(37, 16, lanes32(&t));
    let ir = compile(&prog, &t, &opts).expect("compiles at O0").llvm_ir;
    assert!(!ir.contains("llvm.loop"), "a parallel loop is a plain serial loop for now:\n{ir}");
}

#[test]
fn every_program_compiles_at_every_optimization_level() {
    for name in ["host", "sve-generic", "neoverse-v1", "rvv"] {
        let t = target(name);
        let l = lanes32(&t);
        let progs = [
            programs::vadd(37, l),
            programs::gather(29, l),
            programs::scatter(37, 16, l),
            programs::reduce(37, l),
            programs::floor_ops(24, l),
            programs::local(l),
            programs::math(37, l),
        ];
        for prog in &progs {
            for opt_level in 0..=3 {
                let art = compile(prog, &t, &CompileOptions { opt_level })
                    .unwrap_or_else(|e| panic!("{} on {name} at O{opt_level}: {e}", prog.name));
                assert!(art.asm.contains(&format!("{}:", prog.name)), "{name} O{opt_level}:\n{}", art.asm);
            }
        }
    }
    let t = target("host");
    let err = compile(&programs::local(lanes32(&t)), &t, &CompileOptions { opt_level: 4 }).unwrap_err();
    assert!(matches!(err, LlvmError::BadOptLevel(4)), "{err}");
}

#[test]
fn scalable_program_on_fixed_target_is_an_error() {
    let prog = programs::vadd(37, Lanes::scalable(4));
    for name in ["host", "neon"] {
        let err = compile(&prog, &target(name), &CompileOptions::default()).unwrap_err();
        match &err {
            LlvmError::ScalableOnFixedTarget { kernel, target, ty } => {
                assert_eq!(kernel, "vadd");
                assert_eq!(target, name);
                assert!(ty.contains("vscale x 4"), "{ty}");
            }
            other => panic!("{name}: expected ScalableOnFixedTarget, got {other:?}"),
        }
    }
    // A fixed-length program is fine on a fixed-length AArch64 target.
    let neon = target("neon");
    let art = compile_o3(&programs::vadd(37, Lanes::fixed(4)), &neon);
    assert!(has_instr(&art.asm, |l| l.starts_with("fadd\tv")), "{}", art.asm);
}

#[test]
fn malformed_programs_and_targets_are_errors() {
    let t = target("sve-generic");
    // Ill-typed: adding an f32 vector to an index.
    let mut b = Builder::new("bad");
    let x = b.index(1);
    let c = b.constant(1.0, DType::F32);
    let r = b.new_reg(Ty::scalar(Elem::F32));
    b.assign(r, Op::Bin(BinOp::Add, x, c));
    let err = compile(&b.finish(), &t, &CompileOptions::default()).unwrap_err();
    assert!(matches!(err, LlvmError::IllTyped(_)), "{err:?}");

    // A parameter buffer missing from the parameter list.
    let mut b = Builder::new("orphan");
    b.add_buffer(Buffer { name: "a".into(), dtype: DType::F32, kind: BufKind::Param, len: 4, read_only: true });
    let err = compile(&b.finish(), &t, &CompileOptions::default()).unwrap_err();
    assert!(matches!(err, LlvmError::InvalidProgram(_)), "{err:?}");

    // A kernel name with a NUL byte.
    let err = compile(&Builder::new("a\0b").finish(), &t, &CompileOptions::default()).unwrap_err();
    assert!(matches!(err, LlvmError::InvalidProgram(_)), "{err:?}");

    // An unknown triple.
    let mut bogus = t.clone();
    bogus.triple = "nonexistent-unknown-none".into();
    let err = compile(&programs::vadd(8, Lanes::fixed(4)), &bogus, &CompileOptions::default()).unwrap_err();
    assert!(matches!(err, LlvmError::TargetNotFound { .. }), "{err:?}");
}

#[test]
fn empty_kernel_compiles() {
    let t = target("rvv");
    let art = compile_o3(&Builder::new("nothing").finish(), &t);
    assert!(art.llvm_ir.contains("define void @nothing()"), "{}", art.llvm_ir);
    assert!(has_instr(&art.asm, |l| l == "ret"), "{}", art.asm);
}

/// Every operation on every element type and lane count either compiles or
/// is rejected with a typed error: LLVM must never be reached with a type its
/// backend aborts on.
#[test]
fn every_type_compiles_or_is_rejected_on_every_target() {
    const ELEMS: [Elem; 6] =
        [Elem::Data(DType::I8), Elem::I32, Elem::Index, Elem::Data(DType::F16), Elem::F32, Elem::F64];
    let names = ["host", "neon", "sve-generic", "neoverse-v1", "rvv"];
    let lane_options = [
        Lanes::scalable(1),
        Lanes::scalable(2),
        Lanes::scalable(3),
        Lanes::scalable(4),
        Lanes::scalable(16),
        Lanes::fixed(1),
        Lanes::fixed(3),
        Lanes::fixed(4),
        Lanes::fixed(16),
    ];
    std::thread::scope(|s| {
        for name in names {
            s.spawn(move || {
                let t = target(name);
                for e in ELEMS {
                    for lanes in lane_options {
                        let prog = programs::all_ops(e, Some(lanes), 19, &ELEMS);
                        for opt_level in [0, 3] {
                            match compile(&prog, &t, &CompileOptions { opt_level }) {
                                Ok(art) => assert!(!art.object.is_empty()),
                                Err(LlvmError::Unsupported { .. } | LlvmError::ScalableOnFixedTarget { .. }) => {}
                                Err(other) => panic!("{name} {e} {lanes} O{opt_level}: {other}"),
                            }
                        }
                    }
                }
            });
        }
    });
}

#[test]
fn unsupported_vector_types_are_typed_errors() {
    let reject = |name: &str, e: Elem, lanes: Lanes, want: &str| {
        let prog = programs::all_ops(e, Some(lanes), 19, &[]);
        match compile(&prog, &target(name), &CompileOptions::default()) {
            Err(LlvmError::Unsupported { reason, .. }) => assert!(reason.contains(want), "{name}: {reason}"),
            other => panic!("{name} {e} {lanes}: expected Unsupported, got {other:?}"),
        }
    };
    reject("sve-generic", Elem::F32, Lanes::scalable(1), "at least 2 lanes");
    reject("sve-generic", Elem::F32, Lanes::scalable(3), "not a power of two");
    reject("rvv", Elem::F32, Lanes::scalable(6), "not a power of two");
    reject("rvv", Elem::Data(DType::F16), Lanes::scalable(4), "Zvfh");
    reject("neoverse-v1", Elem::F64, Lanes::fixed(3), "power of two of at least 2");
    reject("neoverse-v1", Elem::F64, Lanes::fixed(1), "power of two of at least 2");
    // The same shapes are fine where the backend supports them.
    let ok = |t: &Target, e: Elem, lanes: Lanes| {
        let prog = programs::all_ops(e, Some(lanes), 19, &[]);
        compile(&prog, t, &CompileOptions::default()).unwrap_or_else(|err| panic!("{} {e} {lanes}: {err}", t.name));
    };
    ok(&target("rvv"), Elem::F32, Lanes::scalable(1));
    ok(&target("sve-generic"), Elem::F64, Lanes::fixed(3));
    let mut zvfh = target("rvv");
    zvfh.features.push_str(",+zvfh");
    ok(&zvfh, Elem::Data(DType::F16), Lanes::scalable(4));
}

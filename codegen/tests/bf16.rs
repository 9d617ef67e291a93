//! bf16 in compiled kernels: conversions to and from bf16 (held as i16 bits
//! in LLVM IR) are bit-identical to the interpreter on every target, and
//! arithmetic on bf16 registers is a typed error, not an LLVM abort.

mod llvm_util;

use llvm_util::diff::check_against_interpreter;
use llvm_util::programs::{self, begin_vloop, end_vloop, param};
use llvm_util::{lanes32, run_targets};
use scaletune_codegen::interp::ArgValue;
use scaletune_codegen::llvm::{compile, CompileOptions, LlvmError};
use scaletune_codegen::target::{Arch, Target};
use scaletune_codegen::vprog::{Builder, Const, Elem, Lanes, LoopHint, Op, Stmt};
use scaletune_space::{DType, TensorData};

const BF16: Elem = Elem::Data(DType::BF16);

/// Conversions over `n` elements, as a predicated vector loop (`lanes`) or
/// a scalar loop: `x` (f32), `y` (f64), `c` (i32) and `h` (bf16) inputs;
/// outputs `x`, `y`, `c` rounded to bf16, `h` widened to f32 and f64 and
/// (with `to_int`) converted to i32, `h` copied, a bf16 constant, and `h`
/// or `x` as bf16 selected by the sign of `x`.
fn conversions(n: usize, lanes: Option<Lanes>, to_int: bool) -> scaletune_codegen::vprog::Program {
    let mut b = Builder::new("bf16_conversions");
    let x = param(&mut b, "x", DType::F32, n, true);
    let y = param(&mut b, "y", DType::F64, n, true);
    let c = param(&mut b, "c", DType::I32, n, true);
    let h = param(&mut b, "h", DType::BF16, n, true);
    let outs = [
        param(&mut b, "from_f32", DType::BF16, n, false),
        param(&mut b, "from_f64", DType::BF16, n, false),
        param(&mut b, "from_i32", DType::BF16, n, false),
        param(&mut b, "to_f32", DType::F32, n, false),
        param(&mut b, "to_f64", DType::F64, n, false),
        param(&mut b, "to_i32", DType::I32, n, false),
        param(&mut b, "copy", DType::BF16, n, false),
        param(&mut b, "constant", DType::BF16, n, false),
        param(&mut b, "selected", DType::BF16, n, false),
    ];
    let nn = b.index(n as i64);
    let third = b.emit(Op::Const(Const::Float(1.0 / 3.0, DType::BF16)));
    let zero = b.emit(Op::Const(Const::Float(0.0, DType::F32)));
    let start = b.index(0);
    let (base, mask, l) = match lanes {
        Some(lanes) => {
            let l = begin_vloop(&mut b, nn, lanes);
            (l.base, Some(l.mask), Some(l))
        }
        None => (b.begin_loop(), None, None),
    };
    let load = |b: &mut Builder, buf| match lanes {
        Some(lanes) => b.emit(Op::VLoad { buf, base, lanes, mask }),
        None => b.emit(Op::Load { buf, index: base }),
    };
    let store = |b: &mut Builder, k: usize, value| match lanes {
        Some(_) => b.push(Stmt::VStore { buf: outs[k], base, value, mask }),
        None => b.push(Stmt::Store { buf: outs[k], index: base, value }),
    };
    let (vx, vy, vc, vh) = (load(&mut b, x), load(&mut b, y), load(&mut b, c), load(&mut b, h));
    let from_x = b.emit(Op::Cast(vx, BF16));
    store(&mut b, 0, from_x);
    let v = b.emit(Op::Cast(vy, BF16));
    store(&mut b, 1, v);
    let v = b.emit(Op::Cast(vc, BF16));
    store(&mut b, 2, v);
    let v = b.emit(Op::Cast(vh, Elem::F32));
    store(&mut b, 3, v);
    let v = b.emit(Op::Cast(vh, Elem::F64));
    store(&mut b, 4, v);
    if to_int {
        let v = b.emit(Op::Cast(vh, Elem::I32));
        store(&mut b, 5, v);
    }
    store(&mut b, 6, vh);
    let (k, z) = match lanes {
        Some(lanes) => (b.emit(Op::Splat(third, lanes)), b.emit(Op::Splat(zero, lanes))),
        None => (third, zero),
    };
    store(&mut b, 7, k);
    let positive = b.emit(Op::Cmp(scaletune_codegen::vprog::CmpOp::Lt, z, vx));
    let v = b.emit(Op::Select(positive, vh, from_x));
    store(&mut b, 8, v);
    match l {
        Some(l) => end_vloop(&mut b, &l, LoopHint::None),
        None => b.end_loop(base, start, nn, LoopHint::None),
    }
    b.finish()
}

fn tensor(dtype: DType, values: &[f64], n: usize) -> ArgValue {
    let mut t = TensorData::zeros(dtype, n);
    for i in 0..n {
        t.set(i, values[i % values.len()]);
    }
    ArgValue::Tensor(t)
}

/// Inputs with ties, values just past ties (also below f32 precision, for
/// f64), NaN, infinities, overflow and subnormals.
fn args(n: usize) -> Vec<ArgValue> {
    let p = |e: i32| 2f64.powi(e);
    let x = [
        1.0 + p(-8),
        1.0 + 3.0 * p(-8),
        1.0 + p(-8) + p(-20),
        -(1.0 + p(-8) - p(-20)),
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::from(f32::MAX),
        (2.0 - p(-7)) * p(127),
        1.5 * p(-133),
        p(-140),
        -0.0,
        0.1,
        -7.3,
        123456.0,
    ];
    let y = [
        1.0 + p(-8) + p(-40),
        1.0 + p(-8),
        -(1.0 + p(-8) + p(-40)),
        1e300,
        -1e-300,
        f64::NAN,
        2.5 * p(-133),
        2.5 * p(-133) + p(-170),
        (2.0 - p(-8)) * p(127) - p(90),
        0.3,
        -2.5e10,
    ];
    let c = [257.0, 259.0, f64::from(i32::MAX), f64::from(i32::MIN), -1000001.0, 0.0, -3.0, 33685505.0];
    let h = [1.0, -0.0, 0.5, -3.0, 1e30, -1e-30, f64::INFINITY, f64::NAN, 3e9, -7.5, 9.2e-41, 100.0];
    let zeros = |d: DType| ArgValue::Tensor(TensorData::zeros(d, n));
    let mut out = vec![tensor(DType::F32, &x, n), tensor(DType::F64, &y, n), tensor(DType::I32, &c, n)];
    out.push(tensor(DType::BF16, &h, n));
    for d in [DType::BF16, DType::BF16, DType::BF16, DType::F32, DType::F64, DType::I32] {
        out.push(zeros(d));
    }
    for _ in 0..3 {
        out.push(zeros(DType::BF16));
    }
    out
}

/// The float-to-int conversion is left out on RVV: QEMU 7.2 aborts on a
/// float instruction with dynamic rounding after an RTZ vector conversion
/// (see `casts_for` in `llvm_diff.rs`).
fn to_int(target: &Target) -> bool {
    target.arch != Arch::Riscv64
}

#[test]
fn bf16_conversions_match_the_interpreter_on_every_target() {
    const N: usize = 37;
    let targets = run_targets();
    std::thread::scope(|s| {
        for (target, vls) in &targets {
            s.spawn(move || {
                for lanes in [Some(lanes32(target)), None] {
                    let prog = conversions(N, lanes, to_int(target));
                    check_against_interpreter(&prog, target, &CompileOptions::default(), &args(N), vls);
                }
            });
        }
    });
}

/// The interpreter's conversions themselves: one rounding to nearest even.
#[test]
fn bf16_conversions_in_the_interpreter_round_once() {
    let prog = conversions(15, None, true);
    let mut a = args(15);
    scaletune_codegen::interp::run(&prog, &mut a, &scaletune_codegen::interp::InterpOptions::new(1))
        .expect("interprets");
    let got = |k: usize| -> Vec<f64> {
        let t = a[k].as_tensor().expect("tensor");
        (0..t.len()).map(|i| t.get(i)).collect()
    };
    let p = |e: i32| 2f64.powi(e);
    let from_f32 = got(4);
    assert_eq!(&from_f32[..4], &[1.0, 1.0 + 4.0 * p(-8), 1.0 + p(-7), -1.0]);
    assert!(from_f32[4].is_nan());
    assert_eq!(&from_f32[5..10], &[f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, (2.0 - p(-7)) * p(127), p(-132)]);
    let from_f64 = got(5);
    assert_eq!(&from_f64[..5], &[1.0 + p(-7), 1.0, -(1.0 + p(-7)), f64::INFINITY, 0.0]);
    assert_eq!(&from_f64[6..9], &[p(-132), 3.0 * p(-133), (2.0 - p(-7)) * p(127)]);
    let from_i32 = got(6);
    assert_eq!(&from_i32[..3], &[256.0, 260.0, p(31)]);
    // 2^25 + 2^17 + 1: through f32 it would become the tie 2^25 + 2^17 and round to 2^25.
    assert_eq!(from_i32[7], p(25) + p(18));
    assert_eq!(got(11)[0], f64::from(half::bf16::from_f64(1.0 / 3.0)));
}

/// Arithmetic on bf16 registers is rejected before LLVM sees it.
#[test]
fn arithmetic_on_bf16_is_a_typed_error() {
    for (target, _) in run_targets() {
        let prog = programs::all_ops(BF16, Some(lanes32(&target)), 19, &[]);
        match compile(&prog, &target, &CompileOptions::default()) {
            Err(LlvmError::Unsupported { reason, .. }) => assert!(reason.contains("convert to f32 first"), "{reason}"),
            other => panic!("{}: expected Unsupported, got {other:?}", target.name),
        }
    }
}

/// The conversions compile on every shipped target at O0 and O3, as
/// vectors of one register and as scalars (bf16 never reaches LLVM as
/// `bfloat` outside the SME outer product).
#[test]
fn bf16_conversions_compile_on_every_shipped_target() {
    let names = ["host", "neon", "sve-generic", "neoverse-v1", "neoverse-v2", "a64fx", "rvv", "sme", "apple-m4"];
    std::thread::scope(|s| {
        for name in names {
            s.spawn(move || {
                let target = Target::load(name).expect("target");
                for lanes in [Some(lanes32(&target)), None] {
                    for opt_level in [0, 3] {
                        let prog = conversions(19, lanes, true);
                        let art = compile(&prog, &target, &CompileOptions { opt_level })
                            .unwrap_or_else(|e| panic!("{name} {lanes:?} O{opt_level}: {e}"));
                        assert!(!art.object.is_empty());
                        assert!(!art.llvm_ir.contains("bfloat"), "{name}: bfloat in the IR");
                    }
                }
            });
        }
    });
}

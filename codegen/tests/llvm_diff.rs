//! Differential tests: compiled kernels against the vector-program interpreter (the test oracle) on random inputs.
//!
//! Every operation on every element type runs as a predicated vector loop
//! (two lane counts per target) and as a scalar loop, on the host, SVE at
//! several vector lengths, Neoverse V1 and RVV; every output element must be
//! bit-identical to the interpreter's at the same vscale.

mod llvm_util;

use llvm_util::diff::check_against_interpreter;
use llvm_util::programs::{self, storage_dtype};
use llvm_util::run_targets;
use scaletune_codegen::interp::ArgValue;
use scaletune_codegen::llvm::CompileOptions;
use scaletune_codegen::target::{Arch, Target};
use scaletune_codegen::vprog::{Elem, Lanes, Program};
use scaletune_space::{DType, TensorData};

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }
}

const ELEMS: [Elem; 6] = [Elem::Data(DType::I8), Elem::I32, Elem::Index, Elem::Data(DType::F16), Elem::F32, Elem::F64];

/// Inputs `a`, `b` (non-zero) and a zeroed `out` for [`programs::all_ops`].
/// Floats are halves in [-8, 8] so that sums in any order are exact.
fn all_ops_args(prog: &Program, e: Elem, seed: u64) -> Vec<ArgValue> {
    let mut rng = Rng(seed | 1);
    let dt = storage_dtype(e);
    let n = prog.buffers[0].len;
    let mut value = |nonzero: bool| loop {
        let v = if e.is_float() { rng.range(-16, 16) as f64 / 2.0 } else { rng.range(-100, 100) as f64 };
        let v = if !e.is_float() && nonzero { v.clamp(-9.0, 9.0) } else { v };
        if !(nonzero && v == 0.0) {
            return v;
        }
    };
    let mut tensor = |nonzero: bool| {
        let mut t = TensorData::zeros(dt, n);
        for i in 0..n {
            t.set(i, value(nonzero));
        }
        ArgValue::Tensor(t)
    };
    let a = tensor(false);
    let b = tensor(true);
    let out = ArgValue::Tensor(TensorData::zeros(dt, prog.buffers[2].len));
    vec![a, b, out]
}

/// The lane counts to test for elements of `bits` on `target`: one full
/// register and two registers.
fn lane_configs(target: &Target, e: Elem) -> Vec<Lanes> {
    let bits = e.bits();
    if !target.caps.scalable {
        return vec![Lanes::fixed(target.caps.max_bits() / bits), Lanes::fixed(4)];
    }
    if target.arch == Arch::Riscv64 && e == Elem::Data(DType::F16) {
        // Scalable f16 needs Zvfh, which the shipped RVV target lacks.
        return vec![Lanes::fixed(8)];
    }
    let full = (target.caps.granule_bits / bits).max(if target.arch == Arch::Aarch64 { 2 } else { 1 });
    vec![Lanes::scalable(full), Lanes::scalable(2 * full)]
}

/// The element types `e` round-trips through. On RVV, round trips between
/// floats and integers are left out (they contain a float-to-int conversion,
/// which LLVM vectorizes even in the scalar loop): QEMU 7.2 aborts
/// (`decode_save_opc` assertion) on a floating-point instruction with
/// dynamic rounding that follows an RTZ vector conversion
/// (`vfcvt.rtz.x.f.v`) in the same translation block.
fn casts_for(target: &Target, e: Elem, lanes: Option<Lanes>) -> Vec<Elem> {
    let scalable = lanes.is_some_and(|l| l.scalable);
    let rvv = target.arch == Arch::Riscv64;
    ELEMS
        .into_iter()
        .filter(|&c| !(scalable && rvv && c == Elem::Data(DType::F16)))
        .filter(|&c| !(rvv && e.is_float() != c.is_float()))
        .collect()
}

#[test]
fn all_operations_match_the_interpreter_on_every_target() {
    const N: usize = 37;
    let targets = run_targets();
    std::thread::scope(|s| {
        let handles: Vec<_> = targets
            .iter()
            .map(|(target, vls)| {
                s.spawn(move || {
                    let mut seed = 0x5eed;
                    for e in ELEMS {
                        let mut configs: Vec<Option<Lanes>> = lane_configs(target, e).into_iter().map(Some).collect();
                        configs.push(None);
                        for lanes in configs {
                            let prog = programs::all_ops(e, lanes, N, &casts_for(target, e, lanes));
                            seed += 1;
                            let args = all_ops_args(&prog, e, seed);
                            check_against_interpreter(&prog, target, &CompileOptions::default(), &args, vls);
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            if let Err(e) = h.join() {
                std::panic::resume_unwind(e);
            }
        }
    });
}

fn tensor(dtype: DType, len: usize, f: impl Fn(usize) -> f64) -> ArgValue {
    let mut t = TensorData::zeros(dtype, len);
    for i in 0..len {
        t.set(i, f(i));
    }
    ArgValue::Tensor(t)
}

/// The hand-built programs of the run tests, also checked against the interpreter.
#[test]
fn hand_built_programs_match_the_interpreter_on_every_target() {
    let f32s = |len: usize, seed: u64| {
        let mut rng = Rng(seed);
        let values: Vec<f64> = (0..len).map(|_| rng.range(-40, 40) as f64 / 4.0).collect();
        tensor(DType::F32, len, move |i| values[i])
    };
    let nonzero = |len: usize| tensor(DType::F32, len, |i| (i % 5) as f64 * 0.5 + 0.25);
    let zeros = |d: DType, len: usize| ArgValue::Tensor(TensorData::zeros(d, len));
    type Case = (Box<dyn Fn(&Target) -> Program + Sync>, Vec<ArgValue>);
    let cases: Vec<Case> = vec![
        (
            Box::new(|t| programs::vadd(37, llvm_util::lanes32(t))),
            vec![f32s(37, 1), f32s(37, 2), zeros(DType::F32, 37), ArgValue::Scalar(1.5)],
        ),
        (
            Box::new(|t| programs::gather(29, llvm_util::lanes32(t))),
            vec![f32s(87, 3), tensor(DType::I32, 29, |i| ((i * 7 + 3) % 87) as f64), zeros(DType::F32, 29)],
        ),
        (
            Box::new(|t| programs::scatter(37, 16, llvm_util::lanes32(t))),
            vec![f32s(37, 4), tensor(DType::I32, 37, |i| ((i * 5) % 16) as f64), zeros(DType::F32, 16)],
        ),
        (
            Box::new(|t| programs::reduce(37, llvm_util::lanes32(t))),
            vec![
                f32s(37, 5),
                tensor(DType::I32, 37, |i| (i * 37 % 101) as f64 - 50.0),
                zeros(DType::F32, 2),
                zeros(DType::I32, 2),
            ],
        ),
        (
            Box::new(|t| programs::floor_ops(24, llvm_util::lanes32(t))),
            vec![
                tensor(DType::I32, 24, |i| ((i * 13) % 41) as f64 - 20.0),
                tensor(DType::I32, 24, |i| (i % 7) as f64 - 3.0),
                zeros(DType::I32, 8 * 24),
            ],
        ),
        (
            Box::new(|t| programs::local(llvm_util::lanes32(t))),
            vec![f32s(67, 6), zeros(DType::F32, 67), zeros(DType::F32, 67), zeros(DType::I32, 1)],
        ),
        (
            Box::new(|t| programs::math(37, llvm_util::lanes32(t))),
            vec![f32s(37, 7), nonzero(37), f32s(37, 8), zeros(DType::F32, 12 * 37), zeros(DType::I32, 3 * 37)],
        ),
        (
            Box::new(|t| programs::lane_mask(llvm_util::lanes32(t))),
            vec![zeros(DType::I32, 64), ArgValue::Scalar(-3.0), ArgValue::Scalar(2.0)],
        ),
    ];
    let targets = run_targets();
    std::thread::scope(|s| {
        let handles: Vec<_> = targets
            .iter()
            .map(|(target, vls)| {
                let cases = &cases;
                s.spawn(move || {
                    for (build, args) in cases {
                        check_against_interpreter(&build(target), target, &CompileOptions::default(), args, vls);
                    }
                })
            })
            .collect();
        for h in handles {
            if let Err(e) = h.join() {
                std::panic::resume_unwind(e);
            }
        }
    });
}

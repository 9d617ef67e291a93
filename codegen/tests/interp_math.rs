//! Accuracy of the `exp`/`cos` expansions of `lower::math`, run through the
//! interpreter against Rust's f64 `exp`/`cos`, scalar and vector at several vscales.

use half::f16;
use scaletune_codegen::interp::{run, ArgValue, InterpOptions};
use scaletune_codegen::lower::math;
use scaletune_codegen::vprog::{BinOp, BufKind, Buffer, Builder, Lanes, LoopHint, Op, Program, Reg, Stmt};
use scaletune_space::{DType, TensorData};

type MathFn = fn(&mut Builder, Reg) -> Reg;
type RefFn = fn(f64) -> f64;

/// `Y[i] = f(X[i])` for `n` elements; `lanes = None` for a scalar loop,
/// otherwise a predicated vector loop over `lanes`-wide blocks.
fn unary_program(f: MathFn, dtype: DType, n: usize, lanes: Option<Lanes>) -> Program {
    let mut b = Builder::new("unary");
    let x_buf = b.add_buffer(Buffer { name: "X".into(), dtype, kind: BufKind::Param, len: n, read_only: true });
    let y_buf = b.add_buffer(Buffer { name: "Y".into(), dtype, kind: BufKind::Param, len: n, read_only: false });
    b.add_tensor_param(x_buf);
    b.add_tensor_param(y_buf);
    let zero = b.index(0);
    let nc = b.index(n as i64);
    match lanes {
        None => {
            let i = b.begin_loop();
            let x = b.emit(Op::Load { buf: x_buf, index: i });
            let y = f(&mut b, x);
            b.push(Stmt::Store { buf: y_buf, index: i, value: y });
            b.end_loop(i, zero, nc, LoopHint::None);
        }
        Some(l) => {
            let min = b.index(i64::from(l.min));
            let vl = if l.scalable {
                let vs = b.emit(Op::VScale);
                b.bin(BinOp::Mul, vs, min)
            } else {
                min
            };
            let one = b.index(1);
            let vl1 = b.bin(BinOp::Sub, vl, one);
            let padded = b.bin(BinOp::Add, nc, vl1);
            let blocks = b.bin(BinOp::FloorDiv, padded, vl);
            let jb = b.begin_loop();
            let base = b.bin(BinOp::Mul, jb, vl);
            let mask = b.emit(Op::ActiveLaneMask { base, bound: nc, lanes: l });
            let x = b.emit(Op::VLoad { buf: x_buf, base, lanes: l, mask: Some(mask) });
            let y = f(&mut b, x);
            b.push(Stmt::VStore { buf: y_buf, base, value: y, mask: Some(mask) });
            b.end_loop(jb, zero, blocks, LoopHint::None);
        }
    }
    b.finish()
}

/// Runs `f` over `xs` (already representable in `dtype`) and returns the results.
fn eval(f: MathFn, dtype: DType, xs: &[f64], lanes: Option<Lanes>, vscale: u32) -> Vec<f64> {
    let prog = unary_program(f, dtype, xs.len(), lanes);
    let mut input = TensorData::zeros(dtype, xs.len());
    for (i, &x) in xs.iter().enumerate() {
        input.set(i, x);
    }
    let mut args = vec![ArgValue::Tensor(input), ArgValue::Tensor(TensorData::zeros(dtype, xs.len()))];
    run(&prog, &mut args, &InterpOptions::new(vscale)).expect("math program runs");
    let out = args[1].as_tensor().expect("output tensor");
    (0..xs.len()).map(|i| out.get(i)).collect()
}

/// A small deterministic xorshift generator (no RNG crate in the tests).
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `[lo, hi)`.
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)
    }
}

/// Rounds to `dtype` (f32 or f64).
fn round_to(dtype: DType, x: f64) -> f64 {
    if dtype == DType::F32 {
        f64::from(x as f32)
    } else {
        x
    }
}

/// Error of `got` (a `dtype` value) against the exact-ish `want`, in units in
/// the last place of `dtype` at `want` (subnormal spacing below the normal
/// range). Infinity counts as the next power of two after the largest finite.
fn ulp_error(dtype: DType, got: f64, want: f64) -> f64 {
    if want.is_nan() || got.is_nan() {
        return if want.is_nan() && got.is_nan() { 0.0 } else { f64::INFINITY };
    }
    let (mant, min_exp, max) = if dtype == DType::F32 { (23, -126, 2f64.powi(128)) } else { (52, -1022, f64::MAX) };
    let clamp_inf = |v: f64| if v.abs() >= max { v.signum() * max } else { v };
    let (got, want) = (clamp_inf(got), clamp_inf(want));
    if got == want {
        return 0.0;
    }
    let exp = if want == 0.0 { min_exp } else { (want.abs().log2().floor() as i32).max(min_exp) };
    let ulp = 2f64.powi(exp) * 2f64.powi(-mant);
    // For f64 the difference may itself round; it is exact enough for a bound.
    (got - want).abs() / ulp
}

/// Checks every result against the reference and returns the worst ulp error.
fn worst_ulp(dtype: DType, xs: &[f64], ys: &[f64], reference: RefFn, bound: f64, what: &str) -> f64 {
    let mut worst: f64 = 0.0;
    for (&x, &y) in xs.iter().zip(ys) {
        let want = reference(x);
        let e = ulp_error(dtype, y, want);
        assert!(e <= bound, "{what}({x:e}) = {y:e}, expected {want:e}: {e} ulp > {bound}");
        worst = worst.max(e);
    }
    worst
}

fn exp_inputs(dtype: DType, n: usize) -> Vec<f64> {
    let (lo, hi) = if dtype == DType::F32 { (-105.0, 89.5) } else { (-746.0, 710.0) };
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut xs: Vec<f64> = (0..n).map(|_| round_to(dtype, rng.uniform(lo, hi))).collect();
    // Small arguments, where the reduction is trivial, on a log scale.
    xs.extend((0..n / 8).map(|_| {
        let m = rng.uniform(-40.0, 2.0).exp2();
        round_to(dtype, if rng.next() & 1 == 0 { m } else { -m })
    }));
    // Half-integer multiples of ln 2 (reduction boundaries), and both ends.
    xs.extend((-300..300).map(|k| round_to(dtype, (f64::from(k) + 0.5) * std::f64::consts::LN_2)));
    let ends: &[f64] = if dtype == DType::F32 {
        &[88.72283, 88.7228, -87.33654, -87.3365, -103.972, -103.97, -103.3, -100.0, 88.0]
    } else {
        &[709.782712893384, 709.78, -708.3964185322641, -708.39, -745.1332191019411, -745.13, -744.0, -740.0]
    };
    xs.extend(ends.iter().map(|&v| round_to(dtype, v)));
    xs.extend([0.0, -0.0, 1.0, -1.0, 1e-30, -1e-30]);
    xs
}

fn cos_inputs(dtype: DType, n: usize) -> Vec<f64> {
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let mut xs: Vec<f64> = (0..n).map(|_| round_to(dtype, rng.uniform(-1e4, 1e4))).collect();
    xs.extend((0..n / 4).map(|_| round_to(dtype, rng.uniform(-10.0, 10.0))));
    xs.extend((0..n / 8).map(|_| round_to(dtype, rng.uniform(-40.0, 4.0).exp2())));
    // The representable neighbours of every multiple of pi/2 up to 1e4, where
    // cos is tiny and the reduction must not lose relative accuracy.
    for k in 1..=6366 {
        let t = f64::from(k) * std::f64::consts::FRAC_PI_2;
        if dtype == DType::F32 {
            let c = t as f32;
            for v in [f32::from_bits(c.to_bits() - 1), c, f32::from_bits(c.to_bits() + 1)] {
                xs.push(f64::from(v));
                xs.push(-f64::from(v));
            }
        } else {
            xs.push(t);
            xs.push(-f64::from_bits(t.to_bits() + 1));
        }
    }
    xs.extend([0.0, -0.0, 1e-30, std::f64::consts::FRAC_PI_4, 1e4, -1e4].map(|v| round_to(dtype, v)));
    xs
}

#[test]
fn exp_f32_is_within_4_ulp_over_the_full_range() {
    let xs = exp_inputs(DType::F32, 100_000);
    let ys = eval(math::exp, DType::F32, &xs, None, 1);
    let worst = worst_ulp(DType::F32, &xs, &ys, f64::exp, 4.0, "exp f32");
    eprintln!("exp f32: worst error {worst:.3} ulp over {} inputs", xs.len());
}

#[test]
fn exp_f64_is_within_8_ulp_over_the_full_range() {
    let xs = exp_inputs(DType::F64, 100_000);
    let ys = eval(math::exp, DType::F64, &xs, None, 1);
    let worst = worst_ulp(DType::F64, &xs, &ys, f64::exp, 8.0, "exp f64");
    eprintln!("exp f64: worst error {worst:.3} ulp over {} inputs", xs.len());
}

#[test]
fn cos_f32_is_within_4_ulp_up_to_1e4() {
    let xs = cos_inputs(DType::F32, 100_000);
    let ys = eval(math::cos, DType::F32, &xs, None, 1);
    let worst = worst_ulp(DType::F32, &xs, &ys, f64::cos, 4.0, "cos f32");
    eprintln!("cos f32: worst error {worst:.3} ulp over {} inputs", xs.len());
}

#[test]
fn cos_f64_is_within_8_ulp_up_to_1e4() {
    let xs = cos_inputs(DType::F64, 100_000);
    let ys = eval(math::cos, DType::F64, &xs, None, 1);
    let worst = worst_ulp(DType::F64, &xs, &ys, f64::cos, 8.0, "cos f64");
    eprintln!("cos f64: worst error {worst:.3} ulp over {} inputs", xs.len());
}

#[test]
fn vector_expansions_match_the_scalar_ones_bit_for_bit() {
    let cases: [(MathFn, RefFn, &str); 2] = [(math::exp, f64::exp, "exp"), (math::cos, f64::cos, "cos")];
    for (f, reference, name) in cases {
        for dtype in [DType::F32, DType::F64] {
            let mut xs =
                if name == "exp" { exp_inputs(dtype, 2_000) } else { cos_inputs(dtype, 2_000)[..3_000].to_vec() };
            xs.extend([f64::NAN, f64::INFINITY, f64::NEG_INFINITY]);
            xs.push(0.5); // an odd length leaves a partial last block
            let scalar = eval(f, dtype, &xs, None, 1);
            let bits =
                |v: &[f64]| v.iter().map(|x| if x.is_nan() { u64::MAX } else { x.to_bits() }).collect::<Vec<_>>();
            let min = if dtype == DType::F32 { 4 } else { 2 };
            for lanes in [Lanes::scalable(min), Lanes::fixed(min), Lanes::fixed(8)] {
                for vscale in [1, 2, 4, 16] {
                    let vector = eval(f, dtype, &xs, Some(lanes), vscale);
                    assert_eq!(bits(&vector), bits(&scalar), "{name} {dtype} <{lanes}> at vscale {vscale}");
                    let bound = if dtype == DType::F32 { 4.0 } else { 8.0 };
                    worst_ulp(dtype, &xs, &vector, reference, bound, name);
                    if !lanes.scalable {
                        break; // fixed vectors do not depend on vscale
                    }
                }
            }
        }
    }
}

#[test]
fn special_values() {
    for dtype in [DType::F32, DType::F64] {
        let xs = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0, 1e30, -1e30, 1e300f64.min(3e38)];
        let e = eval(math::exp, dtype, &xs, None, 1);
        assert!(e[0].is_nan(), "exp(NaN) is NaN for {dtype}");
        assert_eq!(&e[1..7], &[f64::INFINITY, 0.0, 1.0, 1.0, f64::INFINITY, 0.0], "{dtype}");
        let c = eval(math::cos, dtype, &xs, None, 1);
        assert!(c[0].is_nan() && c[1].is_nan() && c[2].is_nan(), "cos of NaN and infinities is NaN for {dtype}");
        assert_eq!(&c[3..5], &[1.0, 1.0], "{dtype}");
        for &v in &c[5..] {
            assert!((-1.0..=1.0).contains(&v), "cos of a huge argument is {v} for {dtype}");
        }
    }
}

#[test]
fn cos_stays_bounded_far_beyond_its_accurate_range() {
    let mut rng = XorShift(7);
    for dtype in [DType::F32, DType::F64] {
        let max_exp = if dtype == DType::F32 { 127.0 } else { 1023.0 };
        let xs: Vec<f64> = (0..5_000).map(|_| round_to(dtype, rng.uniform(13.0, max_exp).exp2())).collect();
        for (x, y) in xs.iter().zip(eval(math::cos, dtype, &xs, None, 1)) {
            assert!((-1.0..=1.0).contains(&y), "cos({x:e}) = {y} for {dtype}");
        }
    }
}

#[test]
fn f16_arguments_are_computed_in_f32() {
    let xs: Vec<f64> = (-400..400).map(|i| f16::from_f64(f64::from(i) / 37.0).to_f64()).collect();
    for (f, reference) in [(math::exp as MathFn, f64::exp as RefFn), (math::cos, f64::cos)] {
        for lanes in [None, Some(Lanes::scalable(8))] {
            let ys = eval(f, DType::F16, &xs, lanes, 2);
            for (&x, &y) in xs.iter().zip(&ys) {
                let want = f16::from_f64(reference(x)).to_f64();
                // Within one f16 ulp of the correctly rounded value.
                let ulp = f16::from_f64(want).to_f64().abs().max(6.2e-5) * 2f64.powi(-10);
                assert!((y - want).abs() <= ulp * 1.01, "f16 at {x}: got {y}, want {want}");
            }
        }
    }
}

//! Compiles hand-built vector programs, links them with C drivers and runs them on the host and under QEMU.
//!
//! Every test runs on x86 (native), length-agnostic SVE at 128/256/512/2048
//! bits, Neoverse V1 (SVE at 256 bits) and RVV at VLEN 128/512, and compares
//! the printed results with values computed in Rust.

mod llvm_util;

use llvm_util::programs;
use llvm_util::{check_everywhere, check_everywhere_with, lanes32, pf, pi, vadd_driver, C_PRELUDE, VADD_N};
use scaletune_codegen::llvm::CompileOptions;
use scaletune_codegen::target::{Arch, Target};
use scaletune_codegen::vprog::Lanes;

fn vadd_expected(_: &Target, _vscale: u32) -> String {
    llvm_util::vadd_expected()
}

/// Element-wise `y = s * (a + b)` with a predicated scalable loop; the
/// elements after `n` must stay untouched.
#[test]
fn vadd_runs_on_every_target() {
    check_everywhere(|t| programs::vadd(VADD_N, lanes32(t)), &vadd_driver(), vadd_expected);
}

/// The same kernel with fixed-length vectors (NEON code on the SVE targets,
/// fixed-length RVV, AVX on the host).
#[test]
fn fixed_length_vectors_run_on_every_target() {
    check_everywhere(|_| programs::vadd(VADD_N, Lanes::fixed(8)), &vadd_driver(), vadd_expected);
}

/// Optimization levels 0 to 2 (registers stay in allocas at O0, including
/// scalable vectors and masks).
#[test]
fn lower_optimization_levels_run_on_every_target() {
    for opt_level in 0..=2 {
        let opts = CompileOptions { opt_level };
        check_everywhere_with(&opts, |t| programs::vadd(VADD_N, lanes32(t)), &vadd_driver(), vadd_expected);
    }
}

/// Indirect and strided masked gathers.
#[test]
fn gather_runs_on_every_target() {
    const N: usize = 29;
    let driver = format!(
        "{C_PRELUDE}
void gather(const float *x, const int32_t *idx, float *y);
int main(void) {{
  enum {{ N = {N}, PAD = 64 }};
  float x[3 * N], y[N + PAD];
  int32_t idx[N];
  for (int i = 0; i < 3 * N; i++) x[i] = i * 0.25f;
  for (int i = 0; i < N; i++) idx[i] = (i * 7 + 3) % (3 * N);
  for (int i = 0; i < N + PAD; i++) y[i] = -1.0f;
  gather(x, idx, y);
  for (int i = 0; i < N + PAD; i++) pf(y[i]);
  return 0;
}}
"
    );
    let expect = |_: &Target, _vscale: u32| {
        let x = |i: usize| i as f32 * 0.25;
        (0..N + 64).map(|i| if i < N { pf(x((i * 7 + 3) % (3 * N)) + x(3 * i)) } else { pf(-1.0) }).collect::<String>()
    };
    check_everywhere(|t| programs::gather(N, lanes32(t)), &driver, expect);
}

/// A masked scatter with repeated indices: lanes write in order, so the
/// result equals a sequential loop.
#[test]
fn scatter_runs_on_every_target() {
    const N: usize = 37;
    const OUT: usize = 16;
    let driver = format!(
        "{C_PRELUDE}
void scatter(const float *a, const int32_t *idx, float *out);
int main(void) {{
  enum {{ N = {N}, OUT = {OUT} }};
  float a[N], out[OUT];
  int32_t idx[N];
  for (int i = 0; i < N; i++) {{ a[i] = i + 0.5f; idx[i] = (i * 5) % OUT; }}
  for (int i = 0; i < OUT; i++) out[i] = -1.0f;
  scatter(a, idx, out);
  for (int i = 0; i < OUT; i++) pf(out[i]);
  return 0;
}}
"
    );
    let expect = |_: &Target, _vscale: u32| {
        let mut out = [-1.0f32; OUT];
        for i in 0..N {
            out[(i * 5) % OUT] = i as f32 + 0.5;
        }
        out.iter().map(|&v| pf(v)).collect::<String>()
    };
    check_everywhere(|t| programs::scatter(N, OUT, lanes32(t)), &driver, expect);
}

/// Loop-carried vector accumulators with masked tails and `Reduce`.
#[test]
fn masked_reductions_run_on_every_target() {
    const N: usize = 37;
    let driver = format!(
        "{C_PRELUDE}
void reduce(const float *a, const int32_t *c, float *fout, int32_t *iout);
int main(void) {{
  enum {{ N = {N} }};
  float a[N], fout[2];
  int32_t c[N], iout[2];
  for (int i = 0; i < N; i++) {{ a[i] = (i % 11) - 4.5f; c[i] = (i * 37) % 101 - 50; }}
  reduce(a, c, fout, iout);
  pf(fout[0]); pf(fout[1]); pi(iout[0]); pi(iout[1]);
  return 0;
}}
"
    );
    let expect = |_: &Target, _vscale: u32| {
        let a: Vec<f32> = (0..N).map(|i| (i % 11) as f32 - 4.5).collect();
        let c: Vec<i32> = (0..N).map(|i| ((i * 37) % 101) as i32 - 50).collect();
        let sum: f32 = a.iter().sum();
        let max = a.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        pf(sum) + &pf(max) + &pi(c.iter().sum()) + &pi(*c.iter().min().unwrap_or(&0))
    };
    check_everywhere(|t| programs::reduce(N, lanes32(t)), &driver, expect);
}

fn floor_div(a: i64, b: i64) -> i64 {
    let (q, r) = (a.wrapping_div(b), a.wrapping_rem(b));
    if r != 0 && ((r < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

fn floor_mod(a: i64, b: i64) -> i64 {
    let r = a.wrapping_rem(b);
    if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    }
}

/// FloorDiv/FloorMod with negative operands, scalar (behind an `if`) and
/// vector, in i32 and in the index type, with variable and constant divisors.
#[test]
fn floor_div_mod_run_on_every_target() {
    const N: usize = 24;
    let driver = format!(
        "{C_PRELUDE}
void floor_ops(const int32_t *a, const int32_t *d, int32_t *out);
int main(void) {{
  enum {{ N = {N} }};
  int32_t a[N], d[N], out[8 * N];
  for (int i = 0; i < N; i++) {{ a[i] = (i * 13) % 41 - 20; d[i] = i % 7 - 3; }}
  a[0] = INT32_MIN; d[0] = -1;
  a[1] = INT32_MIN; d[1] = 3;
  for (int i = 0; i < 8 * N; i++) out[i] = 12345;
  floor_ops(a, d, out);
  for (int i = 0; i < 8 * N; i++) pi(out[i]);
  return 0;
}}
"
    );
    let expect = |_: &Target, _vscale: u32| {
        let mut a: Vec<i64> = (0..N).map(|i| ((i * 13) % 41) as i64 - 20).collect();
        let mut d: Vec<i64> = (0..N).map(|i| (i % 7) as i64 - 3).collect();
        (a[0], d[0], a[1], d[1]) = (i64::from(i32::MIN), -1, i64::from(i32::MIN), 3);
        let wrap = |v: i64| v as i32;
        let mut out = vec![0i32; 8 * N];
        for i in 0..N {
            let (x, y) = (a[i], d[i]);
            let nz = |v: i64| if y != 0 { wrap(v) } else { 0 };
            out[i] = nz(if y != 0 { floor_div(x, y) } else { 0 });
            out[N + i] = nz(if y != 0 { floor_mod(x, y) } else { 0 });
            let y1 = if y == 0 { 1 } else { y };
            out[2 * N + i] = wrap(floor_div(x, y1));
            out[3 * N + i] = wrap(floor_mod(x, y1));
            out[4 * N + i] = wrap(floor_div(x, 4));
            out[5 * N + i] = wrap(floor_mod(x, -3));
            out[6 * N + i] = wrap(floor_div(x, 7));
            out[7 * N + i] = wrap(floor_mod(x, -7));
        }
        out.iter().map(|&v| pi(v)).collect::<String>()
    };
    check_everywhere(|t| programs::floor_ops(N, lanes32(t)), &driver, expect);
}

/// A local buffer whose length depends on vscale, scalar and vector loops
/// over it, the runtime vscale, and an empty loop that must not run.
#[test]
fn local_buffer_runs_on_every_target() {
    let driver = format!(
        "{C_PRELUDE}
void local(const float *a, float *y, float *z, int32_t *vs);
int main(void) {{
  enum {{ M = 67 }};
  float a[M], y[M], z[M];
  int32_t vs = -1;
  for (int i = 0; i < M; i++) {{ a[i] = i * 0.75f - 10.0f; y[i] = -3.0f; z[i] = -4.0f; }}
  local(a, y, z, &vs);
  pi(vs);
  for (int i = 0; i < M; i++) pf(y[i]);
  for (int i = 0; i < M; i++) pf(z[i]);
  return 0;
}}
"
    );
    let expect = |_: &Target, vscale: u32| {
        let len = 3 + 4 * vscale as usize;
        let a = |i: usize| i as f32 * 0.75 - 10.0;
        let mut s = pi(vscale as i32);
        s += &(0..67).map(|i| if i < len { pf(2.0 * a(len - 1 - i) + 1.0) } else { pf(-3.0) }).collect::<String>();
        s += &(0..67).map(|i| if i < len { pf(2.0 * a(i)) } else { pf(-4.0) }).collect::<String>();
        s
    };
    check_everywhere(|t| programs::local(lanes32(t)), &driver, expect);
}

/// Unary/binary math, conversions, bitcasts, shifts, compare+select and
/// lane extraction, checked bit-exactly.
#[test]
fn math_ops_run_on_every_target() {
    const N: usize = 37;
    let driver = format!(
        "{C_PRELUDE}
void math(const float *a, const float *b, const float *c, float *out, int32_t *iout);
int main(void) {{
  enum {{ N = {N} }};
  float a[N], b[N], c[N], out[12 * N];
  int32_t iout[3 * N];
  for (int i = 0; i < N; i++) {{ a[i] = (i - 18) * 0.375f; b[i] = (i % 5) * 0.5f + 0.25f; c[i] = i * 0.125f; }}
  math(a, b, c, out, iout);
  for (int i = 0; i < 12 * N; i++) pf(out[i]);
  for (int i = 0; i < 3 * N; i++) pi(iout[i]);
  return 0;
}}
"
    );
    let expect_for = |vl: usize| {
        let a = |i: usize| (i as f32 - 18.0) * 0.375;
        let b = |i: usize| (i % 5) as f32 * 0.5 + 0.25;
        let c = |i: usize| i as f32 * 0.125;
        let lane1 = |i: usize| {
            let k = i / vl * vl + 1;
            if k < N {
                a(k)
            } else {
                0.0
            }
        };
        let fs: [&dyn Fn(usize) -> f32; 12] = [
            &|i| a(i).mul_add(b(i), c(i)),
            &|i| a(i).abs().sqrt(),
            &|i| a(i).floor(),
            &|i| a(i).round_ties_even(),
            &|i| a(i).abs(),
            &|i| a(i).min(b(i)),
            &|i| a(i).max(b(i)),
            &|i| -a(i),
            &|i| a(i) / b(i),
            &|i| (a(i) as i32) as f32,
            &|i| if a(i) < b(i) { a(i) } else { b(i) },
            &lane1,
        ];
        let is: [&dyn Fn(usize) -> i32; 3] =
            [&|i| a(i) as i32, &|i| a(i).to_bits() as i32, &|i| ((a(i) as i32) << 2) >> 1];
        let mut s = String::new();
        for f in fs {
            s += &(0..N).map(|i| pf(f(i))).collect::<String>();
        }
        for f in is {
            s += &(0..N).map(|i| pi(f(i))).collect::<String>();
        }
        s
    };
    // The lane-extract output depends on the number of lanes.
    check_everywhere(|t| programs::math(N, lanes32(t)), &driver, |t, vscale| expect_for(lanes32(t).count(vscale)));
}

/// `ActiveLaneMask` compares signed indices: negative bases and bounds.
#[test]
fn active_lane_mask_is_signed_on_every_target() {
    const CASES: [(i32, i32); 7] = [(0, 5), (-2, 3), (-5, -1), (3, -4), (-3, -3), (7, 100), (-100, 100)];
    let cases = CASES.iter().map(|(a, b)| format!("{{{a}, {b}}}")).collect::<Vec<_>>().join(", ");
    let driver = format!(
        "{C_PRELUDE}
void lane_mask(int32_t *out, int32_t base, int32_t bound);
int main(void) {{
  static const int32_t cases[][2] = {{ {cases} }};
  for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {{
    int32_t out[64];
    for (int i = 0; i < 64; i++) out[i] = 7;
    lane_mask(out, cases[c][0], cases[c][1]);
    for (int i = 0; i < 64; i++) pi(out[i]);
  }}
  return 0;
}}
"
    );
    let expect = |t: &Target, vscale: u32| {
        let lanes = lanes32(t).count(vscale);
        let mut s = String::new();
        for (base, bound) in CASES {
            for i in 0..64 {
                s += &pi(if i >= lanes { 7 } else { i32::from(base + (i as i32) < bound) });
            }
        }
        s
    };
    check_everywhere(|t| programs::lane_mask(lanes32(t)), &driver, expect);
}

/// Conversions, including out-of-range and NaN floats to integers
/// (saturating, NaN gives 0), f16 rounding, and wrapping int narrowing.
/// On RVV, `o16` stays untouched (no scalable f16 vectors without Zvfh) and
/// so do the float-to-int outputs: QEMU 7.2 aborts (`decode_save_opc`
/// assertion) on a floating-point instruction with dynamic rounding that
/// follows an RTZ vector conversion in the same translation block.
#[test]
fn casts_run_on_every_target() {
    const A: [f32; 20] = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        3e9,
        -3e9,
        1e10,
        -0.5,
        127.9,
        128.5,
        -129.5,
        2.5,
        -2.5,
        65504.0,
        65520.0,
        1e-8,
        -7.75,
        0.1,
        -1e20,
        5e-5,
        300.25,
    ];
    const C: [i32; 20] = [
        0,
        1,
        -1,
        127,
        128,
        -129,
        255,
        256,
        16777217,
        -16777217,
        i32::MAX,
        i32::MIN,
        1000,
        -1000,
        7,
        99999999,
        -3,
        65535,
        2,
        33,
    ];
    let floats = A.iter().map(|x| format!("u2f(0x{:08x}u)", x.to_bits())).collect::<Vec<_>>().join(", ");
    let ints = C.iter().map(|x| format!("{x}")).collect::<Vec<_>>().join(", ");
    let driver = format!(
        "{C_PRELUDE}
static float u2f(uint32_t u) {{ float f; memcpy(&f, &u, 4); return f; }}
void casts(const float *a, const int32_t *c, int32_t *o32, int8_t *o8, double *o64, uint16_t *o16,
           int32_t *owide, float *ocf, int8_t *oc8);
int main(void) {{
  enum {{ N = 20 }};
  float a[N] = {{ {floats} }};
  int32_t c[N] = {{ {ints} }};
  int32_t o32[N], owide[N]; int8_t o8[N], oc8[N]; double o64[N]; uint16_t o16[N]; float ocf[N];
  for (int i = 0; i < N; i++) {{ o16[i] = 0xdead; o32[i] = owide[i] = 777; o8[i] = 77; }}
  casts(a, c, o32, o8, o64, o16, owide, ocf, oc8);
  for (int i = 0; i < N; i++) {{
    uint64_t d; memcpy(&d, &o64[i], 8);
    printf(\"%d %d %016llx %04x %d \", o32[i], o8[i], (unsigned long long)d, o16[i], owide[i]);
    pf(ocf[i]);
    pi(oc8[i]);
  }}
  return 0;
}}
"
    );
    let full = |t: &Target| t.arch != Arch::Riscv64;
    let expect = |t: &Target, _vscale: u32| {
        let mut s = String::new();
        for (a, c) in A.into_iter().zip(C) {
            let (i32_, i8_, f16_bits, wide) = if full(t) {
                (a as i32, a as i8, half::f16::from_f32(a).to_bits(), (a as i64) as i32)
            } else {
                (777, 77, 0xdead, 777)
            };
            s += &format!("{i32_} {i8_} {:016x} {f16_bits:04x} {wide} ", f64::from(a).to_bits());
            s += &pf(c as f32);
            s += &pi(i32::from(c as i8));
        }
        s
    };
    check_everywhere(|t| programs::casts(20, lanes32(t), full(t), full(t)), &driver, expect);
}

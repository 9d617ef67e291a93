//! Interpreter semantics of scalar operations: per-op rounding, integer
//! wrapping, floor division, casts, bitcasts, NaN rules, f16 buffers, control flow.

use half::f16;
use scaletune_codegen::interp::{run, ArgValue, InterpOptions};
use scaletune_codegen::vprog::{
    BinOp, BufId, BufKind, Buffer, Builder, CmpOp, Const, Elem, LoopHint, Op, Reg, Stmt, Ty, UnOp,
};
use scaletune_space::{DType, TensorData};

/// A kernel whose results are stored, in order, into one output buffer.
struct Kernel {
    b: Builder,
    out: BufId,
    next: i64,
    len: usize,
}

impl Kernel {
    fn new(dtype: DType, len: usize) -> Kernel {
        let mut b = Builder::new("k");
        let out = b.add_buffer(Buffer { name: "OUT".into(), dtype, kind: BufKind::Param, len, read_only: false });
        b.add_tensor_param(out);
        Kernel { b, out, next: 0, len }
    }

    /// Stores `v` at the next output position.
    fn out(&mut self, v: Reg) {
        let i = self.b.index(self.next);
        self.b.push(Stmt::Store { buf: self.out, index: i, value: v });
        self.next += 1;
    }

    fn c(&mut self, v: f64, dtype: DType) -> Reg {
        self.b.constant(v, dtype)
    }

    fn bin(&mut self, op: BinOp, a: Reg, c: Reg) -> Reg {
        self.b.bin(op, a, c)
    }

    /// Runs at vscale `vscale` and returns the output elements widened to f64.
    fn run_at(self, vscale: u32) -> Vec<f64> {
        let dtype = self.b.program().buffer(self.out).dtype;
        let prog = self.b.finish();
        let mut args = vec![ArgValue::Tensor(TensorData::filled(dtype, self.len, -99.0))];
        run(&prog, &mut args, &InterpOptions::new(vscale)).expect("kernel runs");
        let t = args[0].as_tensor().expect("tensor");
        (0..self.len).map(|i| t.get(i)).collect()
    }

    fn run(self) -> Vec<f64> {
        self.run_at(1)
    }
}

#[test]
fn f32_arithmetic_rounds_after_every_operation() {
    let mut k = Kernel::new(DType::F32, 6);
    let big = k.c(16_777_216.0, DType::F32);
    let one = k.c(1.0, DType::F32);
    let s = k.bin(BinOp::Add, big, one);
    let s = k.bin(BinOp::Add, s, one);
    k.out(s); // 2^24 + 1 + 1 stays 2^24 in f32
    let tenth = k.c(0.1, DType::F32);
    let three = k.c(3.0, DType::F32);
    let p = k.bin(BinOp::Mul, tenth, three);
    k.out(p);
    let q = k.bin(BinOp::Div, one, three);
    let q = k.bin(BinOp::Mul, q, three);
    k.out(q);
    let two = k.c(2.0, DType::F32);
    let r = k.b.emit(Op::Un(UnOp::Sqrt, two));
    k.out(r);
    // fma rounds once; mul + add rounds twice.
    let a = k.c(1.0 + 2f64.powi(-12), DType::F32);
    let c = k.c(-(1.0 + 2f64.powi(-11)), DType::F32);
    let fused = k.b.emit(Op::Fma(a, a, c));
    k.out(fused);
    let prod = k.bin(BinOp::Mul, a, a);
    let split = k.bin(BinOp::Add, prod, c);
    k.out(split);
    let got = k.run();
    let a32 = 1.0f32 + 2f32.powi(-12);
    let c32 = -(1.0f32 + 2f32.powi(-11));
    let want = [16_777_216.0f32, 0.1f32 * 3.0, 1.0f32 / 3.0 * 3.0, 2f32.sqrt(), a32.mul_add(a32, c32), a32 * a32 + c32];
    assert_eq!(got, want.map(f64::from).to_vec());
    assert_ne!(got[4], got[5], "the fma case must distinguish one rounding from two");
}

#[test]
fn float_unary_operations_min_max_and_nan_rules() {
    let mut k = Kernel::new(DType::F64, 14);
    let vals = [2.5, 3.5, -2.5, -1.25];
    for v in vals {
        let x = k.c(v, DType::F64);
        let r = k.b.emit(Op::Un(UnOp::RoundEven, x));
        k.out(r);
    }
    let x = k.c(-1.25, DType::F64);
    for op in [UnOp::Floor, UnOp::Abs, UnOp::Neg] {
        let r = k.b.emit(Op::Un(op, x));
        k.out(r);
    }
    let nan = k.c(f64::NAN, DType::F64);
    let one = k.c(1.0, DType::F64);
    let mn = k.bin(BinOp::Min, nan, one);
    k.out(mn);
    let mx = k.bin(BinOp::Max, one, nan);
    k.out(mx);
    let zero = k.c(0.0, DType::F64);
    let inf = k.bin(BinOp::Div, one, zero);
    k.out(inf);
    // Comparisons with NaN: Lt, Le, Eq false; Ne true (stored as 1.0 / 0.0).
    for op in [CmpOp::Lt, CmpOp::Le, CmpOp::Eq, CmpOp::Ne] {
        let c = k.b.emit(Op::Cmp(op, nan, one));
        let r = k.b.emit(Op::Select(c, one, zero));
        k.out(r);
    }
    let got = k.run();
    assert_eq!(got, vec![2.0, 4.0, -2.0, -1.0, -2.0, 1.25, 1.25, 1.0, 1.0, f64::INFINITY, 0.0, 0.0, 0.0, 1.0]);
}

#[test]
fn integers_wrap_to_their_width() {
    let mut k = Kernel::new(DType::I8, 5);
    let (a, b) = (k.c(100.0, DType::I8), k.c(16.0, DType::I8));
    let s = k.bin(BinOp::Add, a, a);
    k.out(s);
    let m = k.bin(BinOp::Mul, b, b);
    k.out(m);
    let min = k.c(-128.0, DType::I8);
    let n = k.b.emit(Op::Un(UnOp::Neg, min));
    k.out(n);
    let sixty_four = k.c(64.0, DType::I8);
    let one = k.c(1.0, DType::I8);
    let sh = k.bin(BinOp::Shl, sixty_four, one);
    k.out(sh);
    let d = k.bin(BinOp::Sub, min, one);
    k.out(d);
    assert_eq!(k.run(), vec![-56.0, 0.0, -128.0, -128.0, 127.0]);

    let mut k = Kernel::new(DType::I32, 4);
    let max = k.c(f64::from(i32::MAX), DType::I32);
    let one = k.c(1.0, DType::I32);
    let s = k.bin(BinOp::Add, max, one);
    k.out(s);
    let m = k.bin(BinOp::Mul, max, max);
    k.out(m);
    let minus8 = k.c(-8.0, DType::I32);
    let sr = k.bin(BinOp::Shr, minus8, one);
    k.out(sr);
    let min = k.c(f64::from(i32::MIN), DType::I32);
    let abs = k.b.emit(Op::Un(UnOp::Abs, min));
    k.out(abs);
    let want = [i32::MAX.wrapping_add(1), i32::MAX.wrapping_mul(i32::MAX), -4, i32::MIN];
    assert_eq!(k.run(), want.map(f64::from).to_vec());
}

#[test]
fn index_arithmetic_wraps_at_64_bits() {
    // Results are cast to f64 for storage; wrapped values are exact powers of two.
    let mut k = Kernel::new(DType::F64, 2);
    let max = k.b.index(i64::MAX);
    let one = k.b.index(1);
    let s = k.bin(BinOp::Add, max, one);
    let f = k.b.emit(Op::Cast(s, Elem::F64));
    k.out(f);
    let vs = k.b.emit(Op::VScale);
    let f = k.b.emit(Op::Cast(vs, Elem::F64));
    k.out(f);
    assert_eq!(k.run_at(8), vec![-(2f64.powi(63)), 8.0]);
}

#[test]
fn floor_division_and_modulo_round_toward_negative_infinity() {
    let cases = [(7, 2), (-7, 2), (7, -2), (-7, -2), (-6, 3), (0, -5), (-1, 7)];
    let expected = [(3, 1), (-4, 1), (-4, -1), (3, -1), (-2, 0), (0, 0), (-1, 6)];
    for dtype in [DType::I32, DType::I8] {
        let mut k = Kernel::new(dtype, cases.len() * 2);
        for (a, d) in cases {
            let (a, d) = (k.c(f64::from(a), dtype), k.c(f64::from(d), dtype));
            let q = k.bin(BinOp::FloorDiv, a, d);
            k.out(q);
            let r = k.bin(BinOp::FloorMod, a, d);
            k.out(r);
        }
        let want: Vec<f64> = expected.iter().flat_map(|&(q, r)| [f64::from(q), f64::from(r)]).collect();
        assert_eq!(k.run(), want, "{dtype}");
    }
    // Index floor division on negatives, cast to f64 for storage.
    let mut k = Kernel::new(DType::F64, 2);
    let (a, d) = (k.b.index(-9), k.b.index(4));
    for op in [BinOp::FloorDiv, BinOp::FloorMod] {
        let r = k.bin(op, a, d);
        let f = k.b.emit(Op::Cast(r, Elem::F64));
        k.out(f);
    }
    assert_eq!(k.run(), vec![-3.0, 3.0]);
}

#[test]
fn casts_truncate_saturate_and_round() {
    let mut k = Kernel::new(DType::I32, 5);
    for v in [-2.7, 2.7, 1e10, -1e10, f64::NAN] {
        let x = k.c(v, DType::F32);
        let c = k.b.emit(Op::Cast(x, Elem::I32));
        k.out(c);
    }
    assert_eq!(k.run(), vec![-2.0, 2.0, f64::from(i32::MAX), f64::from(i32::MIN), 0.0]);

    let mut k = Kernel::new(DType::F32, 3);
    let big = k.c(16_777_217.0, DType::I32);
    let f = k.b.emit(Op::Cast(big, Elem::F32));
    k.out(f);
    let d = k.c(0.1, DType::F64);
    let f = k.b.emit(Op::Cast(d, Elem::F32));
    k.out(f);
    let i = k.c(-1000.0, DType::I32);
    let narrow = k.b.emit(Op::Cast(i, Elem::Data(DType::I8)));
    let f = k.b.emit(Op::Cast(narrow, Elem::F32));
    k.out(f);
    assert_eq!(k.run(), vec![16_777_216.0, f64::from(0.1f32), f64::from(-1000i32 as i8)]);
}

#[test]
fn bitcasts_reinterpret_bits() {
    let mut k = Kernel::new(DType::I32, 2);
    let x = k.c(-1.5, DType::F32);
    let bits = k.b.emit(Op::Bitcast(x, Elem::I32));
    k.out(bits);
    let i = k.c(f64::from(0x4049_0fdb), DType::I32);
    let f = k.b.emit(Op::Bitcast(i, Elem::F32));
    let back = k.b.emit(Op::Bitcast(f, Elem::I32));
    k.out(back);
    assert_eq!(k.run(), vec![f64::from((-1.5f32).to_bits() as i32), f64::from(0x4049_0fdb)]);

    let mut k = Kernel::new(DType::F64, 1);
    let i = k.b.index(0x4000_0000_0000_0000);
    let f = k.b.emit(Op::Bitcast(i, Elem::F64));
    k.out(f);
    assert_eq!(k.run(), vec![2.0]);
}

#[test]
fn f16_buffers_round_every_operation_to_half() {
    let mut b = Builder::new("h");
    let x = b.add_buffer(Buffer { name: "X".into(), dtype: DType::F16, kind: BufKind::Param, len: 3, read_only: true });
    let y =
        b.add_buffer(Buffer { name: "Y".into(), dtype: DType::F16, kind: BufKind::Param, len: 3, read_only: false });
    b.add_tensor_param(x);
    b.add_tensor_param(y);
    let (zero, one_i, two_i) = (b.index(0), b.index(1), b.index(2));
    let x0 = b.emit(Op::Load { buf: x, index: zero });
    let x1 = b.emit(Op::Load { buf: x, index: one_i });
    let s = b.bin(BinOp::Add, x0, x1);
    b.push(Stmt::Store { buf: y, index: zero, value: s });
    let p = b.bin(BinOp::Mul, x0, x1);
    b.push(Stmt::Store { buf: y, index: one_i, value: p });
    // Widen to f32, compute there, narrow back.
    let w0 = b.emit(Op::Cast(x0, Elem::F32));
    let w1 = b.emit(Op::Cast(x1, Elem::F32));
    let q = b.bin(BinOp::Div, w0, w1);
    let h = b.emit(Op::Cast(q, Elem::Data(DType::F16)));
    b.push(Stmt::Store { buf: y, index: two_i, value: h });
    let prog = b.finish();
    let xs = [f16::from_f32(1.0), f16::from_f64(3.0 * 2f64.powi(-12)), f16::from_f32(7.0)];
    let mut args =
        vec![ArgValue::Tensor(TensorData::F16(xs.to_vec())), ArgValue::Tensor(TensorData::zeros(DType::F16, 3))];
    run(&prog, &mut args, &InterpOptions::default()).unwrap();
    let (a, c) = (xs[0].to_f64(), xs[1].to_f64());
    let want = vec![f16::from_f64(a + c), f16::from_f64(a * c), f16::from_f32((a as f32) / (c as f32))];
    assert_eq!(args[1], ArgValue::Tensor(TensorData::F16(want)));
    assert_ne!(f16::from_f64(a + c).to_f64(), a + c, "1 + 3*2^-12 is not an f16: the test must round");
}

#[test]
fn scalar_parameters_are_converted_to_their_dtype() {
    let mut b = Builder::new("p");
    let out =
        b.add_buffer(Buffer { name: "OUT".into(), dtype: DType::F32, kind: BufKind::Param, len: 1, read_only: false });
    b.add_tensor_param(out);
    let alpha = b.add_scalar_param("alpha", DType::F32);
    let n = b.add_scalar_param("n", DType::I32);
    let nf = b.emit(Op::Cast(n, Elem::F32));
    let v = b.bin(BinOp::Mul, alpha, nf);
    let zero = b.index(0);
    b.push(Stmt::Store { buf: out, index: zero, value: v });
    let prog = b.finish();
    let mut args =
        vec![ArgValue::Tensor(TensorData::zeros(DType::F32, 1)), ArgValue::Scalar(0.1), ArgValue::Scalar(3.0)];
    run(&prog, &mut args, &InterpOptions::default()).unwrap();
    assert_eq!(args[0], ArgValue::Tensor(TensorData::F32(vec![0.1f32 * 3.0])));
}

#[test]
fn loops_and_conditionals() {
    // sum over i in start..end of (i odd ? i : -i), for several ranges.
    for (start, end) in [(0i64, 10i64), (-3, 2), (5, 3), (4, 4)] {
        let mut k = Kernel::new(DType::F64, 1);
        let (s, e) = (k.b.index(start), k.b.index(end));
        let acc = k.b.new_reg(Ty::index());
        k.b.assign(acc, Op::Const(Const::Int(0, Elem::Index)));
        let i = k.b.begin_loop();
        let two = k.b.index(2);
        let one = k.b.index(1);
        let m = k.bin(BinOp::FloorMod, i, two);
        let odd = k.b.emit(Op::Cmp(CmpOp::Eq, m, one));
        k.b.begin_body();
        k.b.assign(acc, Op::Bin(BinOp::Add, acc, i));
        let then_body = k.b.end_body();
        k.b.begin_body();
        k.b.assign(acc, Op::Bin(BinOp::Sub, acc, i));
        let else_body = k.b.end_body();
        k.b.push(Stmt::If { cond: odd, then_body, else_body });
        k.b.end_loop(i, s, e, LoopHint::Unroll(2));
        let f = k.b.emit(Op::Cast(acc, Elem::F64));
        k.out(f);
        let want: i64 = (start..end).map(|i| if i.rem_euclid(2) == 1 { i } else { -i }).sum();
        assert_eq!(k.run(), vec![want as f64], "{start}..{end}");
    }
}

#[test]
fn loop_bounds_are_read_once() {
    // The body doubles `end`; the loop still runs the original trip count.
    let mut k = Kernel::new(DType::F64, 1);
    let zero = k.b.index(0);
    let end = k.b.new_reg(Ty::index());
    k.b.assign(end, Op::Const(Const::Int(3, Elem::Index)));
    let count = k.b.new_reg(Ty::index());
    k.b.assign(count, Op::Copy(zero));
    let i = k.b.begin_loop();
    k.b.assign(end, Op::Bin(BinOp::Add, end, end));
    let one = k.b.index(1);
    k.b.assign(count, Op::Bin(BinOp::Add, count, one));
    k.b.end_loop(i, zero, end, LoopHint::None);
    let f = k.b.emit(Op::Cast(count, Elem::F64));
    k.out(f);
    assert_eq!(k.run(), vec![3.0]);
}

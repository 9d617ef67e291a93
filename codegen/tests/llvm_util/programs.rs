//! Hand-built vector programs used by the LLVM emitter tests.

use scaletune_codegen::vprog::*;
use scaletune_space::DType;

/// Adds a parameter buffer and its tensor parameter.
pub fn param(b: &mut Builder, name: &str, dtype: DType, len: usize, read_only: bool) -> BufId {
    let id = b.add_buffer(Buffer { name: name.into(), dtype, kind: BufKind::Param, len, read_only });
    b.add_tensor_param(id);
    id
}

/// The number of lanes as an index register (`min * vscale` or `min`).
pub fn vl(b: &mut Builder, lanes: Lanes) -> Reg {
    let m = b.index(i64::from(lanes.min));
    if lanes.scalable {
        let vs = b.emit(Op::VScale);
        b.bin(BinOp::Mul, vs, m)
    } else {
        m
    }
}

/// `ceildiv(n, d)` on index registers.
pub fn ceil_div(b: &mut Builder, n: Reg, d: Reg) -> Reg {
    let one = b.index(1);
    let t = b.bin(BinOp::Add, n, d);
    let t = b.bin(BinOp::Sub, t, one);
    b.bin(BinOp::FloorDiv, t, d)
}

/// Opens a predicated vector loop over `0..n`: returns (base, mask).
/// Close it with `b.end_loop(var, zero, trips, hint)` using the returned parts.
pub struct VLoop {
    /// Loop variable.
    pub var: Reg,
    /// Start (0).
    pub zero: Reg,
    /// Trip count.
    pub trips: Reg,
    /// First element of this iteration.
    pub base: Reg,
    /// Active lanes of this iteration.
    pub mask: Reg,
}

/// Starts `for j in 0..ceildiv(n, VL) { base = j*VL; mask = active_lane_mask(base, n) ... }`.
pub fn begin_vloop(b: &mut Builder, n: Reg, lanes: Lanes) -> VLoop {
    let vl = vl(b, lanes);
    let trips = ceil_div(b, n, vl);
    let zero = b.index(0);
    let var = b.begin_loop();
    let base = b.bin(BinOp::Mul, var, vl);
    let mask = b.emit(Op::ActiveLaneMask { base, bound: n, lanes });
    VLoop { var, zero, trips, base, mask }
}

/// Closes a loop opened by [`begin_vloop`].
pub fn end_vloop(b: &mut Builder, l: &VLoop, hint: LoopHint) {
    b.end_loop(l.var, l.zero, l.trips, hint);
}

/// `y[i] = s * (a[i] + b[i])` for `i < n`, a predicated vector loop.
/// Signature: `vadd(const float *a, const float *b, float *y, float s)`.
pub fn vadd(n: usize, lanes: Lanes) -> Program {
    let mut b = Builder::new("vadd");
    let a = param(&mut b, "a", DType::F32, n, true);
    let bb = param(&mut b, "b", DType::F32, n, true);
    let y = param(&mut b, "y", DType::F32, n, false);
    let s = b.add_scalar_param("s", DType::F32);
    let n = b.index(n as i64);
    let l = begin_vloop(&mut b, n, lanes);
    let va = b.emit(Op::VLoad { buf: a, base: l.base, lanes, mask: Some(l.mask) });
    let vb = b.emit(Op::VLoad { buf: bb, base: l.base, lanes, mask: Some(l.mask) });
    let sum = b.bin(BinOp::Add, va, vb);
    let vs = b.emit(Op::Splat(s, lanes));
    let prod = b.bin(BinOp::Mul, vs, sum);
    b.push(Stmt::VStore { buf: y, base: l.base, value: prod, mask: Some(l.mask) });
    end_vloop(&mut b, &l, LoopHint::Unroll(2));
    b.finish()
}

/// Gathers: `y[i] = x[idx[i]] + x[3*i]` for `i < n` (indirect and strided).
/// Signature: `gather(const float *x, const int32_t *idx, float *y)`; x has `3n` elements.
pub fn gather(n: usize, lanes: Lanes) -> Program {
    let mut b = Builder::new("gather");
    let x = param(&mut b, "x", DType::F32, 3 * n, true);
    let idx = param(&mut b, "idx", DType::I32, n, true);
    let y = param(&mut b, "y", DType::F32, n, false);
    let n = b.index(n as i64);
    let three = b.index(3);
    let l = begin_vloop(&mut b, n, lanes);
    let vi = b.emit(Op::VLoad { buf: idx, base: l.base, lanes, mask: Some(l.mask) });
    let vi = b.emit(Op::Cast(vi, Elem::Index));
    let g1 = b.emit(Op::Gather { buf: x, indices: vi, mask: Some(l.mask) });
    let step = b.emit(Op::Step(lanes));
    let base = b.emit(Op::Splat(l.base, lanes));
    let pos = b.bin(BinOp::Add, base, step);
    let three_v = b.emit(Op::Splat(three, lanes));
    let strided = b.bin(BinOp::Mul, pos, three_v);
    let g2 = b.emit(Op::Gather { buf: x, indices: strided, mask: Some(l.mask) });
    let sum = b.bin(BinOp::Add, g1, g2);
    b.push(Stmt::VStore { buf: y, base: l.base, value: sum, mask: Some(l.mask) });
    end_vloop(&mut b, &l, LoopHint::None);
    b.finish()
}

/// Scatter: `out[idx[i]] = a[i]` for `i < n` in order (indices may repeat;
/// the last write wins). Signature: `scatter(const float *a, const int32_t *idx, float *out)`.
pub fn scatter(n: usize, out_len: usize, lanes: Lanes) -> Program {
    let mut b = Builder::new("scatter");
    let a = param(&mut b, "a", DType::F32, n, true);
    let idx = param(&mut b, "idx", DType::I32, n, true);
    let out = param(&mut b, "out", DType::F32, out_len, false);
    let n = b.index(n as i64);
    let l = begin_vloop(&mut b, n, lanes);
    let va = b.emit(Op::VLoad { buf: a, base: l.base, lanes, mask: Some(l.mask) });
    let vi = b.emit(Op::VLoad { buf: idx, base: l.base, lanes, mask: Some(l.mask) });
    let vi = b.emit(Op::Cast(vi, Elem::Index));
    b.push(Stmt::Scatter { buf: out, indices: vi, value: va, mask: Some(l.mask) });
    // Serial: with repeated indices, iterations write the same elements and
    // the last write must win.
    end_vloop(&mut b, &l, LoopHint::None);
    b.finish()
}

/// Masked reductions: `fout = [sum(a), max(a)]`, `iout = [sum(c), min(c)]`
/// over `n` elements, with accumulators carried across a predicated loop.
/// Signature: `reduce(const float *a, const int32_t *c, float *fout, int32_t *iout)`.
pub fn reduce(n: usize, lanes: Lanes) -> Program {
    let mut b = Builder::new("reduce");
    let a = param(&mut b, "a", DType::F32, n, true);
    let c = param(&mut b, "c", DType::I32, n, true);
    let fout = param(&mut b, "fout", DType::F32, 2, false);
    let iout = param(&mut b, "iout", DType::I32, 2, false);
    let zero_f = b.constant(0.0, DType::F32);
    let ninf = b.constant(f64::NEG_INFINITY, DType::F32);
    let zero_i = b.constant(0.0, DType::I32);
    let big = b.constant(f64::from(i32::MAX), DType::I32);
    let acc = b.emit(Op::Splat(zero_f, lanes));
    let mx = b.emit(Op::Splat(ninf, lanes));
    let iacc = b.emit(Op::Splat(zero_i, lanes));
    let imin = b.emit(Op::Splat(big, lanes));
    let ninf_v = b.emit(Op::Splat(ninf, lanes));
    let big_v = b.emit(Op::Splat(big, lanes));
    let n = b.index(n as i64);
    let l = begin_vloop(&mut b, n, lanes);
    let v = b.emit(Op::VLoad { buf: a, base: l.base, lanes, mask: Some(l.mask) });
    let t = b.bin(BinOp::Add, acc, v);
    b.assign(acc, Op::Copy(t));
    let vm = b.emit(Op::Select(l.mask, v, ninf_v));
    b.assign(mx, Op::Bin(BinOp::Max, mx, vm));
    let vi = b.emit(Op::VLoad { buf: c, base: l.base, lanes, mask: Some(l.mask) });
    b.assign(iacc, Op::Bin(BinOp::Add, iacc, vi));
    let vim = b.emit(Op::Select(l.mask, vi, big_v));
    b.assign(imin, Op::Bin(BinOp::Min, imin, vim));
    end_vloop(&mut b, &l, LoopHint::None);
    let s = b.emit(Op::Reduce(ReduceOp::Add, acc));
    let m = b.emit(Op::Reduce(ReduceOp::Max, mx));
    let is = b.emit(Op::Reduce(ReduceOp::Add, iacc));
    let im = b.emit(Op::Reduce(ReduceOp::Min, imin));
    let i0 = b.index(0);
    let i1 = b.index(1);
    b.push(Stmt::Store { buf: fout, index: i0, value: s });
    b.push(Stmt::Store { buf: fout, index: i1, value: m });
    b.push(Stmt::Store { buf: iout, index: i0, value: is });
    b.push(Stmt::Store { buf: iout, index: i1, value: im });
    b.finish()
}

/// Floor division and modulo of int32 pairs, four ways; `out` has `8n` elements:
/// `[0,n)` scalar floordiv guarded by `if b != 0` (else 0), `[n,2n)` the same
/// for floormod, `[2n,4n)` vector floordiv/floormod in the index type (zero
/// divisors replaced by 1), `[4n,6n)` floordiv by 4 / floormod by -3, `[6n,8n)`
/// vector i32 floordiv/floormod by 7 / -7.
/// Signature: `floor_ops(const int32_t *a, const int32_t *d, int32_t *out)`.
pub fn floor_ops(n: usize, lanes: Lanes) -> Program {
    let mut b = Builder::new("floor_ops");
    let a = param(&mut b, "a", DType::I32, n, true);
    let d = param(&mut b, "d", DType::I32, n, true);
    let out = param(&mut b, "out", DType::I32, 8 * n, false);
    let nn = b.index(n as i64);
    let zero_i = b.constant(0.0, DType::I32);
    let (zero, end) = (b.index(0), nn);
    let i = b.begin_loop();
    let x = b.emit(Op::Load { buf: a, index: i });
    let y = b.emit(Op::Load { buf: d, index: i });
    let nz = b.emit(Op::Cmp(CmpOp::Ne, y, zero_i));
    let q = b.new_reg(Ty::scalar(Elem::I32));
    let r = b.new_reg(Ty::scalar(Elem::I32));
    b.begin_body();
    b.assign(q, Op::Bin(BinOp::FloorDiv, x, y));
    b.assign(r, Op::Bin(BinOp::FloorMod, x, y));
    let then_body = b.end_body();
    b.begin_body();
    b.assign(q, Op::Copy(zero_i));
    b.assign(r, Op::Copy(zero_i));
    let else_body = b.end_body();
    b.push(Stmt::If { cond: nz, then_body, else_body });
    b.push(Stmt::Store { buf: out, index: i, value: q });
    let i_n = b.bin(BinOp::Add, i, nn);
    b.push(Stmt::Store { buf: out, index: i_n, value: r });
    let four = b.constant(4.0, DType::I32);
    let m3 = b.constant(-3.0, DType::I32);
    let q4 = b.bin(BinOp::FloorDiv, x, four);
    let r3 = b.bin(BinOp::FloorMod, x, m3);
    let k4 = b.index(4 * n as i64);
    let k5 = b.index(5 * n as i64);
    let at = b.bin(BinOp::Add, i, k4);
    b.push(Stmt::Store { buf: out, index: at, value: q4 });
    let at = b.bin(BinOp::Add, i, k5);
    b.push(Stmt::Store { buf: out, index: at, value: r3 });
    b.end_loop(i, zero, end, LoopHint::None);

    let one_i = b.constant(1.0, DType::I32);
    let one_v = b.emit(Op::Splat(one_i, lanes));
    let zero_v = b.emit(Op::Splat(zero_i, lanes));
    let seven = b.constant(7.0, DType::I32);
    let seven_v = b.emit(Op::Splat(seven, lanes));
    let mseven = b.constant(-7.0, DType::I32);
    let mseven_v = b.emit(Op::Splat(mseven, lanes));
    let l = begin_vloop(&mut b, nn, lanes);
    let vx = b.emit(Op::VLoad { buf: a, base: l.base, lanes, mask: Some(l.mask) });
    let vy = b.emit(Op::VLoad { buf: d, base: l.base, lanes, mask: Some(l.mask) });
    let is_zero = b.emit(Op::Cmp(CmpOp::Eq, vy, zero_v));
    let vy = b.emit(Op::Select(is_zero, one_v, vy));
    let wx = b.emit(Op::Cast(vx, Elem::Index));
    let wy = b.emit(Op::Cast(vy, Elem::Index));
    let wq = b.bin(BinOp::FloorDiv, wx, wy);
    let wr = b.bin(BinOp::FloorMod, wx, wy);
    let wq = b.emit(Op::Cast(wq, Elem::I32));
    let wr = b.emit(Op::Cast(wr, Elem::I32));
    for (k, v) in [(2, wq), (3, wr)] {
        let off = b.index(k * n as i64);
        let at = b.bin(BinOp::Add, l.base, off);
        b.push(Stmt::VStore { buf: out, base: at, value: v, mask: Some(l.mask) });
    }
    let q7 = b.bin(BinOp::FloorDiv, vx, seven_v);
    let r7 = b.bin(BinOp::FloorMod, vx, mseven_v);
    for (k, v) in [(6, q7), (7, r7)] {
        let off = b.index(k * n as i64);
        let at = b.bin(BinOp::Add, l.base, off);
        b.push(Stmt::VStore { buf: out, base: at, value: v, mask: Some(l.mask) });
    }
    end_vloop(&mut b, &l, LoopHint::None);
    b.finish()
}

/// A local buffer of `3 + 4*vscale` floats: `tmp[i] = 2*a[i]`, then
/// `y[i] = tmp[L-1-i] + 1` (scalar) and `z[i] = tmp[i]` (predicated vector
/// loop) for `i < L`; `vs[0] = vscale`. A loop `for i in 5..3` must not run.
/// Signature: `local(const float *a, float *y, float *z, int32_t *vs)`; arrays hold 67 floats.
pub fn local(lanes: Lanes) -> Program {
    let mut b = Builder::new("local");
    let a = param(&mut b, "a", DType::F32, 67, true);
    let y = param(&mut b, "y", DType::F32, 67, false);
    let z = param(&mut b, "z", DType::F32, 67, false);
    let vs_out = param(&mut b, "vs", DType::I32, 1, false);
    let tmp = b.add_buffer(Buffer {
        name: "tmp".into(),
        dtype: DType::F32,
        kind: BufKind::Local { len: vec![3, 4] },
        len: 0,
        read_only: false,
    });
    let vs = b.emit(Op::VScale);
    let four = b.index(4);
    let three = b.index(3);
    let one = b.index(1);
    let len = b.bin(BinOp::Mul, vs, four);
    let len = b.bin(BinOp::Add, len, three);
    let two = b.constant(2.0, DType::F32);
    let onef = b.constant(1.0, DType::F32);
    let zero = b.index(0);
    let i = b.begin_loop();
    let v = b.emit(Op::Load { buf: a, index: i });
    let v = b.bin(BinOp::Mul, v, two);
    b.push(Stmt::Store { buf: tmp, index: i, value: v });
    b.end_loop(i, zero, len, LoopHint::Unroll(4));
    let i = b.begin_loop();
    let j = b.bin(BinOp::Sub, len, one);
    let j = b.bin(BinOp::Sub, j, i);
    let v = b.emit(Op::Load { buf: tmp, index: j });
    let v = b.bin(BinOp::Add, v, onef);
    b.push(Stmt::Store { buf: y, index: i, value: v });
    b.end_loop(i, zero, len, LoopHint::None);
    let l = begin_vloop(&mut b, len, lanes);
    let v = b.emit(Op::VLoad { buf: tmp, base: l.base, lanes, mask: Some(l.mask) });
    b.push(Stmt::VStore { buf: z, base: l.base, value: v, mask: Some(l.mask) });
    end_vloop(&mut b, &l, LoopHint::None);
    let vs32 = b.emit(Op::Cast(vs, Elem::I32));
    b.push(Stmt::Store { buf: vs_out, index: zero, value: vs32 });
    let five = b.index(5);
    let i = b.begin_loop();
    let bad = b.constant(1000.0, DType::F32);
    b.push(Stmt::Store { buf: y, index: i, value: bad });
    b.end_loop(i, five, three, LoopHint::None);
    b.finish()
}

/// Elementwise math in a predicated vector loop over `n` floats; `out` has
/// `12n` floats and `iout` `3n` ints:
/// `out = [fma(a,b,c), sqrt|a|, floor a, roundeven a, |a|, min(a,b), max(a,b), -a,
///         a/b, (float)(int)a, a<b ? a : b, lane 1 of a's vector (per element: extract)]`,
/// `iout = [(int)a truncated, bits(a) as int, (cast(a) << 2) >> 1]`.
/// Signature: `math(const float *a, const float *b, const float *c, float *out, int32_t *iout)`.
pub fn math(n: usize, lanes: Lanes) -> Program {
    let mut b = Builder::new("math");
    let a = param(&mut b, "a", DType::F32, n, true);
    let bb = param(&mut b, "b", DType::F32, n, true);
    let c = param(&mut b, "c", DType::F32, n, true);
    let out = param(&mut b, "out", DType::F32, 12 * n, false);
    let iout = param(&mut b, "iout", DType::I32, 3 * n, false);
    let nn = b.index(n as i64);
    let two_i = b.constant(2.0, DType::I32);
    let one_i = b.constant(1.0, DType::I32);
    let two_v = b.emit(Op::Splat(two_i, lanes));
    let one_v = b.emit(Op::Splat(one_i, lanes));
    let l = begin_vloop(&mut b, nn, lanes);
    let m = Some(l.mask);
    let va = b.emit(Op::VLoad { buf: a, base: l.base, lanes, mask: m });
    let vb = b.emit(Op::VLoad { buf: bb, base: l.base, lanes, mask: m });
    let vc = b.emit(Op::VLoad { buf: c, base: l.base, lanes, mask: m });
    let abs = b.emit(Op::Un(UnOp::Abs, va));
    let trunc = b.emit(Op::Cast(va, Elem::I32));
    let lt = b.emit(Op::Cmp(CmpOp::Lt, va, vb));
    let lane1 = b.index(1);
    let x1 = b.emit(Op::Extract(va, lane1));
    let results = [
        b.emit(Op::Fma(va, vb, vc)),
        b.emit(Op::Un(UnOp::Sqrt, abs)),
        b.emit(Op::Un(UnOp::Floor, va)),
        b.emit(Op::Un(UnOp::RoundEven, va)),
        abs,
        b.bin(BinOp::Min, va, vb),
        b.bin(BinOp::Max, va, vb),
        b.emit(Op::Un(UnOp::Neg, va)),
        b.bin(BinOp::Div, va, vb),
        b.emit(Op::Cast(trunc, Elem::F32)),
        b.emit(Op::Select(lt, va, vb)),
        b.emit(Op::Splat(x1, lanes)),
    ];
    for (k, v) in results.into_iter().enumerate() {
        let off = b.index((k * n) as i64);
        let at = b.bin(BinOp::Add, l.base, off);
        b.push(Stmt::VStore { buf: out, base: at, value: v, mask: m });
    }
    let bits = b.emit(Op::Bitcast(va, Elem::I32));
    let sh = b.bin(BinOp::Shl, trunc, two_v);
    let sh = b.bin(BinOp::Shr, sh, one_v);
    for (k, v) in [trunc, bits, sh].into_iter().enumerate() {
        let off = b.index((k * n) as i64);
        let at = b.bin(BinOp::Add, l.base, off);
        b.push(Stmt::VStore { buf: iout, base: at, value: v, mask: m });
    }
    end_vloop(&mut b, &l, LoopHint::None);
    b.finish()
}

/// `out[i] = (base + i < bound) ? 1 : 0` for every lane `i` of one vector,
/// through `ActiveLaneMask` on signed operands (scalar i32 parameters).
/// Signature: `lane_mask(int32_t *out, int32_t base, int32_t bound)`; `out` holds 64 ints.
pub fn lane_mask(lanes: Lanes) -> Program {
    let mut b = Builder::new("lane_mask");
    let out = param(&mut b, "out", DType::I32, 64, false);
    let base = b.add_scalar_param("base", DType::I32);
    let bound = b.add_scalar_param("bound", DType::I32);
    let base = b.emit(Op::Cast(base, Elem::Index));
    let bound = b.emit(Op::Cast(bound, Elem::Index));
    let mask = b.emit(Op::ActiveLaneMask { base, bound, lanes });
    let one = b.constant(1.0, DType::I32);
    let zero = b.constant(0.0, DType::I32);
    let ones = b.emit(Op::Splat(one, lanes));
    let zeros = b.emit(Op::Splat(zero, lanes));
    let v = b.emit(Op::Select(mask, ones, zeros));
    let at = b.index(0);
    b.push(Stmt::VStore { buf: out, base: at, value: v, mask: None });
    b.finish()
}

/// Conversions in a predicated vector loop over `n` elements: from floats
/// `a` to i32, i8, f64, f16 and i32 through the index type; from ints `c` to
/// f32 and i8. Signature: `casts(const float *a, const int32_t *c, int32_t *o32,
/// int8_t *o8, double *o64, uint16_t *o16, int32_t *owide, float *ocf, int8_t *oc8)`.
/// Without `with_f16`, `o16` is left untouched; without `with_float_to_int`,
/// `o32`, `o8` and `owide` are.
pub fn casts(n: usize, lanes: Lanes, with_f16: bool, with_float_to_int: bool) -> Program {
    let mut b = Builder::new("casts");
    let a = param(&mut b, "a", DType::F32, n, true);
    let c = param(&mut b, "c", DType::I32, n, true);
    let outs = [
        param(&mut b, "o32", DType::I32, n, false),
        param(&mut b, "o8", DType::I8, n, false),
        param(&mut b, "o64", DType::F64, n, false),
        param(&mut b, "o16", DType::F16, n, false),
        param(&mut b, "owide", DType::I32, n, false),
        param(&mut b, "ocf", DType::F32, n, false),
        param(&mut b, "oc8", DType::I8, n, false),
    ];
    let nn = b.index(n as i64);
    let l = begin_vloop(&mut b, nn, lanes);
    let m = Some(l.mask);
    let va = b.emit(Op::VLoad { buf: a, base: l.base, lanes, mask: m });
    let vc = b.emit(Op::VLoad { buf: c, base: l.base, lanes, mask: m });
    let store = |b: &mut Builder, k: usize, value: Reg| {
        b.push(Stmt::VStore { buf: outs[k], base: l.base, value, mask: m });
    };
    if with_float_to_int {
        let v = b.emit(Op::Cast(va, Elem::I32));
        store(&mut b, 0, v);
        let v = b.emit(Op::Cast(va, Elem::Data(DType::I8)));
        store(&mut b, 1, v);
        let wide = b.emit(Op::Cast(va, Elem::Index));
        let v = b.emit(Op::Cast(wide, Elem::I32));
        store(&mut b, 4, v);
    }
    let v = b.emit(Op::Cast(va, Elem::F64));
    store(&mut b, 2, v);
    if with_f16 {
        let v = b.emit(Op::Cast(va, Elem::Data(DType::F16)));
        store(&mut b, 3, v);
    }
    let v = b.emit(Op::Cast(vc, Elem::F32));
    store(&mut b, 5, v);
    let v = b.emit(Op::Cast(vc, Elem::Data(DType::I8)));
    store(&mut b, 6, v);
    end_vloop(&mut b, &l, LoopHint::None);
    b.finish()
}

/// The data dtype holding elements of `e` in memory (index values live in i32 tensors).
pub fn storage_dtype(e: Elem) -> DType {
    match e {
        Elem::Data(d) => d,
        _ => DType::I32,
    }
}

/// Every operation applicable to elements `e`, on two inputs `a` and `b`
/// (`b` must be non-zero), each result stored in its own `n`-element slice of
/// `out`. With `lanes`, a predicated vector loop that also covers
/// reductions, lane extraction, step vectors, gathers and scatters; without,
/// a scalar loop. `casts` lists the element types to round-trip through.
/// Signature: `all_ops(const T *a, const T *b, T *out)`.
pub fn all_ops(e: Elem, lanes: Option<Lanes>, n: usize, casts: &[Elem]) -> Program {
    let dt = storage_dtype(e);
    let mut b = Builder::new("all_ops");
    let a_buf = param(&mut b, "a", dt, n, true);
    let b_buf = param(&mut b, "b", dt, n, true);
    let out = param(&mut b, "out", dt, 0, false);
    let nn = b.index(n as i64);
    let int = e.is_int();
    let one_s = if int { b.emit(Op::Const(Const::Int(1, e))) } else { b.emit(Op::Const(Const::Float(1.0, dt))) };
    let shift_mask_s =
        b.emit(Op::Const(if int { Const::Int(i64::from(e.bits()) - 1, e) } else { Const::Float(1.0, dt) }));
    let nm1 = b.index(n as i64 - 1);
    let lane1 = b.index(1);
    let splat = |b: &mut Builder, r: Reg| match lanes {
        Some(l) => b.emit(Op::Splat(r, l)),
        None => r,
    };
    let one = splat(&mut b, one_s);
    let shift_mask = splat(&mut b, shift_mask_s);

    // Loop header: (position of element 0 of this step, mask).
    let (var, start, trips, pos, mask) = match lanes {
        Some(l) => {
            let v = begin_vloop(&mut b, nn, l);
            (v.var, v.zero, v.trips, v.base, Some(v.mask))
        }
        None => {
            let zero = b.index(0);
            let var = b.begin_loop();
            (var, zero, nn, var, None)
        }
    };
    let load = |b: &mut Builder, buf: BufId| {
        let raw = match lanes {
            Some(l) => b.emit(Op::VLoad { buf, base: pos, lanes: l, mask }),
            None => b.emit(Op::Load { buf, index: pos }),
        };
        if e == Elem::Index {
            b.emit(Op::Cast(raw, Elem::Index))
        } else {
            raw
        }
    };
    let a = load(&mut b, a_buf);
    let bv = load(&mut b, b_buf);
    let bv = match mask {
        Some(m) => b.emit(Op::Select(m, bv, one)),
        None => bv,
    };
    let mut results: Vec<Reg> = Vec::new();
    let mut bins = vec![BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Min, BinOp::Max];
    if int {
        bins.extend([BinOp::FloorDiv, BinOp::FloorMod, BinOp::And, BinOp::Or]);
    } else {
        bins.push(BinOp::Div);
    }
    for o in bins {
        results.push(b.bin(o, a, bv));
    }
    if int {
        let amount = b.bin(BinOp::And, bv, shift_mask);
        results.push(b.bin(BinOp::Shl, a, amount));
        results.push(b.bin(BinOp::Shr, a, amount));
        results.push(b.emit(Op::Un(UnOp::Neg, a)));
        results.push(b.emit(Op::Un(UnOp::Abs, a)));
    } else {
        let abs = b.emit(Op::Un(UnOp::Abs, a));
        results.push(abs);
        results.push(b.emit(Op::Un(UnOp::Neg, a)));
        results.push(b.emit(Op::Un(UnOp::Sqrt, abs)));
        results.push(b.emit(Op::Un(UnOp::Floor, a)));
        results.push(b.emit(Op::Un(UnOp::RoundEven, a)));
        results.push(b.emit(Op::Fma(a, bv, a)));
    }
    let mut cmps = Vec::new();
    for c in [CmpOp::Lt, CmpOp::Le, CmpOp::Eq, CmpOp::Ne] {
        let m = b.emit(Op::Cmp(c, a, bv));
        cmps.push(m);
        results.push(b.emit(Op::Select(m, a, bv)));
    }
    let not_eq = b.emit(Op::Un(UnOp::Not, cmps[2]));
    let both = b.bin(BinOp::And, cmps[0], not_eq);
    results.push(b.emit(Op::Select(both, a, bv)));
    let either = b.bin(BinOp::Or, cmps[1], cmps[2]);
    results.push(b.emit(Op::Select(either, bv, a)));
    let bool_eq = b.emit(Op::Cmp(CmpOp::Lt, cmps[0], cmps[2]));
    results.push(b.emit(Op::Select(bool_eq, a, bv)));
    for &to in casts {
        if to != e {
            let c = b.emit(Op::Cast(a, to));
            results.push(b.emit(Op::Cast(c, e)));
        }
    }
    let partner = match e {
        Elem::Data(DType::F32) => Some(Elem::I32),
        Elem::Data(DType::I32) => Some(Elem::F32),
        Elem::Data(DType::F64) => Some(Elem::Index),
        Elem::Index => Some(Elem::F64),
        _ => None,
    };
    if let Some(p) = partner {
        let bits = b.emit(Op::Bitcast(a, p));
        let back = b.emit(Op::Bitcast(bits, e));
        results.push(b.bin(BinOp::Add, back, one));
    }
    if let Some(l) = lanes {
        for o in [ReduceOp::Add, ReduceOp::Max, ReduceOp::Min] {
            let r = b.emit(Op::Reduce(o, a));
            results.push(b.emit(Op::Splat(r, l)));
        }
        if l.count(1) >= 2 {
            let x = b.emit(Op::Extract(a, lane1));
            results.push(b.emit(Op::Splat(x, l)));
        }
        // Reversed gather: lane i reads a[n-1-(pos+i)].
        let step = b.emit(Op::Step(l));
        let base = b.emit(Op::Splat(pos, l));
        let idx = b.bin(BinOp::Add, base, step);
        let last = b.emit(Op::Splat(nm1, l));
        let rev = b.bin(BinOp::Sub, last, idx);
        let g = b.emit(Op::Gather { buf: a_buf, indices: rev, mask });
        results.push(if e == Elem::Index { b.emit(Op::Cast(g, Elem::Index)) } else { g });
        // Reversed scatter of b into its own slice.
        let k = results.len() as i64;
        let off = b.index(k * n as i64);
        let off = b.emit(Op::Splat(off, l));
        let at = b.bin(BinOp::Add, rev, off);
        let value = if e == Elem::Index { b.emit(Op::Cast(bv, Elem::I32)) } else { bv };
        b.push(Stmt::Scatter { buf: out, indices: at, value, mask });
    }
    let n_slices = results.len() + usize::from(lanes.is_some());
    for (k, r) in results.into_iter().enumerate() {
        let r = if e == Elem::Index { b.emit(Op::Cast(r, Elem::I32)) } else { r };
        let off = b.index((k * n) as i64);
        let at = b.bin(BinOp::Add, pos, off);
        match lanes {
            Some(_) => b.push(Stmt::VStore { buf: out, base: at, value: r, mask }),
            None => b.push(Stmt::Store { buf: out, index: at, value: r }),
        }
    }
    b.end_loop(var, start, trips, LoopHint::None);
    let mut prog = b.finish();
    prog.buffers[out.0 as usize].len = n_slices * n;
    prog
}

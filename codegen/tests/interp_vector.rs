//! Interpreter semantics of vectors: scalable lane counts, masks, masked
//! loads and stores, gathers and scatters, reductions, lane extraction.

use scaletune_codegen::interp::{run, ArgValue, InterpError, InterpOptions};
use scaletune_codegen::vprog::{
    BinOp, BufId, BufKind, Buffer, Builder, CmpOp, Elem, Lanes, Op, Program, ReduceOp, Reg, Stmt,
};
use scaletune_space::{DType, TensorData};

const VSCALES: [u32; 4] = [1, 2, 4, 16];

fn param(b: &mut Builder, name: &str, dtype: DType, len: usize, read_only: bool) -> BufId {
    let id = b.add_buffer(Buffer { name: name.into(), dtype, kind: BufKind::Param, len, read_only });
    b.add_tensor_param(id);
    id
}

fn f32s(v: &[f32]) -> ArgValue {
    ArgValue::Tensor(TensorData::F32(v.to_vec()))
}

fn out_f32(args: &[ArgValue], i: usize) -> Vec<f32> {
    match &args[i] {
        ArgValue::Tensor(TensorData::F32(v)) => v.clone(),
        other => panic!("expected an f32 tensor, got {other:?}"),
    }
}

fn run_at(prog: &Program, args: &mut [ArgValue], vscale: u32) -> Result<(), InterpError> {
    run(prog, args, &InterpOptions::new(vscale)).map(|_| ())
}

fn sample(n: usize, seed: u32) -> Vec<f32> {
    (0..n).map(|i| (((i as u32).wrapping_mul(2_654_435_761) ^ seed) % 1000) as f32 / 37.0 - 13.0).collect()
}

#[test]
fn elementwise_scalable_ops_match_rust_at_every_vscale() {
    // One <vscale x 4 x f32> block: C = fma(A, B, A*B - min(A, B)) / 3.
    let lanes = Lanes::scalable(4);
    let mut b = Builder::new("ew");
    let n = 64; // enough for vscale 16
    let (a, bb, c) = (
        param(&mut b, "A", DType::F32, n, true),
        param(&mut b, "B", DType::F32, n, true),
        param(&mut b, "C", DType::F32, n, false),
    );
    let zero = b.index(0);
    let va = b.emit(Op::VLoad { buf: a, base: zero, lanes, mask: None });
    let vb = b.emit(Op::VLoad { buf: bb, base: zero, lanes, mask: None });
    let p = b.bin(BinOp::Mul, va, vb);
    let m = b.bin(BinOp::Min, va, vb);
    let d = b.bin(BinOp::Sub, p, m);
    let f = b.emit(Op::Fma(va, vb, d));
    let three = b.constant(3.0, DType::F32);
    let three = b.emit(Op::Splat(three, lanes));
    let q = b.bin(BinOp::Div, f, three);
    b.push(Stmt::VStore { buf: c, base: zero, value: q, mask: None });
    let prog = b.finish();
    let (xa, xb) = (sample(n, 1), sample(n, 7));
    for vscale in VSCALES {
        let mut args = vec![f32s(&xa), f32s(&xb), f32s(&vec![-1.0; n])];
        run_at(&prog, &mut args, vscale).unwrap();
        let got = out_f32(&args, 2);
        let active = 4 * vscale as usize;
        for i in 0..n {
            let want = if i < active { xa[i].mul_add(xb[i], xa[i] * xb[i] - xa[i].min(xb[i])) / 3.0 } else { -1.0 };
            assert_eq!(got[i], want, "lane {i} at vscale {vscale}");
        }
    }
}

#[test]
fn masked_lanes_touch_no_memory() {
    // Copy X[3..] to Y[3..] with a <vscale x 4> access masked by base + i < 5.
    // Inactive lanes lie beyond both buffers: they must not be bounds-checked,
    // must load zero, and must not be stored.
    let lanes = Lanes::scalable(4);
    let mut b = Builder::new("tail");
    let x = param(&mut b, "X", DType::F32, 5, true);
    let y = param(&mut b, "Y", DType::F32, 5, false);
    let z = param(&mut b, "Z", DType::F32, 64, false);
    let (base, bound, zero) = (b.index(3), b.index(5), b.index(0));
    let mask = b.emit(Op::ActiveLaneMask { base, bound, lanes });
    let v = b.emit(Op::VLoad { buf: x, base, lanes, mask: Some(mask) });
    b.push(Stmt::VStore { buf: y, base, value: v, mask: Some(mask) });
    b.push(Stmt::VStore { buf: z, base: zero, value: v, mask: None });
    let prog = b.finish();
    for vscale in VSCALES {
        let mut args = vec![f32s(&[1.0, 2.0, 3.0, 4.0, 5.0]), f32s(&[9.0; 5]), f32s(&[7.0; 64])];
        let stats = run(&prog, &mut args, &InterpOptions::new(vscale)).unwrap();
        assert_eq!(out_f32(&args, 1), vec![9.0, 9.0, 9.0, 4.0, 5.0]);
        let z = out_f32(&args, 2);
        let n = 4 * vscale as usize;
        assert_eq!(&z[..n], [&[4.0, 5.0][..], &vec![0.0; n - 2]].concat(), "loaded lanes at vscale {vscale}");
        assert!(z[n..].iter().all(|&v| v == 7.0));
        assert_eq!(stats.elements_loaded, 2);
        assert_eq!(stats.elements_stored, 2 + n as u64);
    }
}

/// Stores the mask `ActiveLaneMask(base, bound)` of 4 fixed lanes as 0/1 floats.
fn mask_bits(base: i64, bound: i64) -> Vec<f32> {
    let lanes = Lanes::fixed(4);
    let mut b = Builder::new("alm");
    let out = param(&mut b, "OUT", DType::F32, 4, false);
    let (base, bound, zero) = (b.index(base), b.index(bound), b.index(0));
    let mask = b.emit(Op::ActiveLaneMask { base, bound, lanes });
    let (one, nil) = (b.constant(1.0, DType::F32), b.constant(0.0, DType::F32));
    let (one, nil) = (b.emit(Op::Splat(one, lanes)), b.emit(Op::Splat(nil, lanes)));
    let v = b.emit(Op::Select(mask, one, nil));
    b.push(Stmt::VStore { buf: out, base: zero, value: v, mask: None });
    let prog = b.finish();
    let mut args = vec![f32s(&[5.0; 4])];
    run_at(&prog, &mut args, 1).unwrap();
    out_f32(&args, 0)
}

#[test]
fn active_lane_mask_is_a_signed_comparison_without_overflow() {
    assert_eq!(mask_bits(0, 2), vec![1.0, 1.0, 0.0, 0.0]);
    assert_eq!(mask_bits(-2, 1), vec![1.0, 1.0, 1.0, 0.0]);
    assert_eq!(mask_bits(0, -1), vec![0.0; 4]);
    assert_eq!(mask_bits(i64::MAX - 1, i64::MAX), vec![1.0, 0.0, 0.0, 0.0]);
    assert_eq!(mask_bits(7, 100), vec![1.0; 4]);
}

#[test]
fn gathers_and_scatters() {
    // Y[3*i] = X[3*i] * 10 for active lanes i (even lanes only), then a
    // scatter of all lanes to index 0 (duplicates: the last lane wins).
    let lanes = Lanes::scalable(2);
    let mut b = Builder::new("gs");
    let x = param(&mut b, "X", DType::F32, 100, true);
    let y = param(&mut b, "Y", DType::F32, 100, false);
    let w = param(&mut b, "W", DType::F32, 1, false);
    let step = b.emit(Op::Step(lanes));
    let three = b.index(3);
    let three = b.emit(Op::Splat(three, lanes));
    let idx = b.bin(BinOp::Mul, step, three);
    let two = b.index(2);
    let two = b.emit(Op::Splat(two, lanes));
    let parity = b.bin(BinOp::FloorMod, step, two);
    let zero = b.index(0);
    let zeros = b.emit(Op::Splat(zero, lanes));
    let even = b.emit(Op::Cmp(CmpOp::Eq, parity, zeros));
    let g = b.emit(Op::Gather { buf: x, indices: idx, mask: Some(even) });
    let ten = b.constant(10.0, DType::F32);
    let ten = b.emit(Op::Splat(ten, lanes));
    let g10 = b.bin(BinOp::Mul, g, ten);
    b.push(Stmt::Scatter { buf: y, indices: idx, value: g10, mask: Some(even) });
    let stepf = b.emit(Op::Cast(step, Elem::F32));
    b.push(Stmt::Scatter { buf: w, indices: zeros, value: stepf, mask: None });
    let prog = b.finish();
    let xs: Vec<f32> = (0..100).map(|i| i as f32).collect();
    for vscale in VSCALES {
        let n = 2 * vscale as usize;
        let mut args = vec![f32s(&xs), f32s(&[-1.0; 100]), f32s(&[-1.0])];
        run_at(&prog, &mut args, vscale).unwrap();
        let got = out_f32(&args, 1);
        for (j, &v) in got.iter().enumerate() {
            let lane = j / 3;
            let want = if j % 3 == 0 && lane < n && lane % 2 == 0 { xs[j] * 10.0 } else { -1.0 };
            assert_eq!(v, want, "Y[{j}] at vscale {vscale}");
        }
        assert_eq!(out_f32(&args, 2), vec![(n - 1) as f32], "last lane wins at vscale {vscale}");
    }
}

fn reduce_program(op: ReduceOp, dtype: DType, lanes: Lanes) -> Program {
    let mut b = Builder::new("red");
    let x = param(&mut b, "X", dtype, 64, true);
    let y = param(&mut b, "Y", dtype, 1, false);
    let zero = b.index(0);
    let v = b.emit(Op::VLoad { buf: x, base: zero, lanes, mask: None });
    let r = b.emit(Op::Reduce(op, v));
    b.push(Stmt::Store { buf: y, index: zero, value: r });
    b.finish()
}

#[test]
fn reductions_sum_in_lane_order_and_ignore_nan_in_min_max() {
    let mut xs = sample(64, 3);
    xs[0] = 1e8; // makes the f32 sum order-dependent
    for vscale in VSCALES {
        let n = 4 * vscale as usize;
        for (op, want) in [
            (ReduceOp::Add, xs[..n].iter().fold(0.0f32, |a, &x| a + x)),
            (ReduceOp::Max, xs[..n].iter().fold(f32::NEG_INFINITY, |a, &x| a.max(x))),
            (ReduceOp::Min, xs[..n].iter().fold(f32::INFINITY, |a, &x| a.min(x))),
        ] {
            let prog = reduce_program(op, DType::F32, Lanes::scalable(4));
            let mut args = vec![f32s(&xs), f32s(&[0.0])];
            run_at(&prog, &mut args, vscale).unwrap();
            assert_eq!(out_f32(&args, 1), vec![want], "{op:?} at vscale {vscale}");
        }
    }
    let mut with_nan = xs.clone();
    with_nan[1] = f32::NAN;
    for (op, want) in [(ReduceOp::Max, 1e8f32), (ReduceOp::Min, xs[..4].iter().fold(f32::INFINITY, |a, &x| a.min(x)))] {
        let prog = reduce_program(op, DType::F32, Lanes::fixed(4));
        let mut args = vec![f32s(&with_nan), f32s(&[0.0])];
        run_at(&prog, &mut args, 1).unwrap();
        assert_eq!(out_f32(&args, 1), vec![want], "{op:?} with a NaN lane");
    }
    // i32 sums wrap.
    let prog = reduce_program(ReduceOp::Add, DType::I32, Lanes::fixed(4));
    let mut ints = vec![0i32; 64];
    ints[..4].copy_from_slice(&[i32::MAX, 1, 5, -3]);
    let mut args = vec![ArgValue::Tensor(TensorData::I32(ints)), ArgValue::Tensor(TensorData::I32(vec![0]))];
    run_at(&prog, &mut args, 1).unwrap();
    assert_eq!(args[1], ArgValue::Tensor(TensorData::I32(vec![i32::MAX.wrapping_add(3)])));
}

#[test]
fn extract_select_and_integer_vectors() {
    // i8 vector arithmetic wraps lane by lane; a scalar condition selects a
    // whole vector; extract reads single lanes.
    let lanes = Lanes::scalable(16);
    let mut b = Builder::new("i8");
    let x = param(&mut b, "X", DType::I8, 256, true);
    let y = param(&mut b, "Y", DType::I8, 256, false);
    let e = param(&mut b, "E", DType::I8, 2, false);
    let zero = b.index(0);
    let v = b.emit(Op::VLoad { buf: x, base: zero, lanes, mask: None });
    let s = b.bin(BinOp::Add, v, v);
    let t = b.bool(false);
    let pick = b.emit(Op::Select(t, v, s));
    b.push(Stmt::VStore { buf: y, base: zero, value: pick, mask: None });
    let vs = b.emit(Op::VScale);
    let sixteen = b.index(16);
    let n = b.bin(BinOp::Mul, vs, sixteen);
    let one = b.index(1);
    let last = b.bin(BinOp::Sub, n, one);
    let l = b.emit(Op::Extract(s, last));
    b.push(Stmt::Store { buf: e, index: zero, value: l });
    let f = b.emit(Op::Extract(v, one));
    b.push(Stmt::Store { buf: e, index: one, value: f });
    let prog = b.finish();
    let xs: Vec<i8> = (0..256).map(|i| (i * 37 % 256) as u8 as i8).collect();
    for vscale in VSCALES {
        let n = 16 * vscale as usize;
        let mut args = vec![
            ArgValue::Tensor(TensorData::I8(xs.clone())),
            ArgValue::Tensor(TensorData::I8(vec![0; 256])),
            ArgValue::Tensor(TensorData::I8(vec![0; 2])),
        ];
        run_at(&prog, &mut args, vscale).unwrap();
        let want: Vec<i8> = (0..256).map(|i| if i < n { xs[i].wrapping_add(xs[i]) } else { 0 }).collect();
        assert_eq!(args[1], ArgValue::Tensor(TensorData::I8(want)), "vscale {vscale}");
        assert_eq!(args[2], ArgValue::Tensor(TensorData::I8(vec![xs[n - 1].wrapping_add(xs[n - 1]), xs[1]])));
    }
}

#[test]
fn vector_casts_bitcasts_and_comparisons() {
    let lanes = Lanes::fixed(4);
    let mut b = Builder::new("cast");
    let x = param(&mut b, "X", DType::F32, 4, true);
    let y = param(&mut b, "Y", DType::I32, 12, false);
    let zero = b.index(0);
    let v = b.emit(Op::VLoad { buf: x, base: zero, lanes, mask: None });
    let i = b.emit(Op::Cast(v, Elem::I32));
    b.push(Stmt::VStore { buf: y, base: zero, value: i, mask: None });
    let bits = b.emit(Op::Bitcast(v, Elem::I32));
    let four = b.index(4);
    b.push(Stmt::VStore { buf: y, base: four, value: bits, mask: None });
    let back = b.emit(Op::Cast(i, Elem::F32));
    let lt = b.emit(Op::Cmp(CmpOp::Lt, back, v));
    let one = b.constant(1.0, DType::I32);
    let one = b.emit(Op::Splat(one, lanes));
    let nil = b.constant(0.0, DType::I32);
    let nil = b.emit(Op::Splat(nil, lanes));
    let flag = b.emit(Op::Select(lt, one, nil));
    let eight = b.index(8);
    b.push(Stmt::VStore { buf: y, base: eight, value: flag, mask: None });
    let prog = b.finish();
    let xs = [2.5f32, -2.5, 1e20, f32::NAN];
    let mut args = vec![f32s(&xs), ArgValue::Tensor(TensorData::I32(vec![0; 12]))];
    run_at(&prog, &mut args, 1).unwrap();
    let mut want = vec![2, -2, i32::MAX, 0];
    want.extend(xs.iter().map(|x| x.to_bits() as i32));
    want.extend([1, 0, 1, 0]); // 2 < 2.5; i32::MAX as f32 = 2^31 < 1e20; NaN compares false
    assert_eq!(args[1], ArgValue::Tensor(TensorData::I32(want)));
}

#[test]
fn scalable_local_buffers_hold_vscale_dependent_data() {
    // A local of 4*vscale f32 written by a vector store and read back by scalar loads.
    let lanes = Lanes::scalable(4);
    let mut b = Builder::new("local");
    let y = param(&mut b, "Y", DType::F32, 64, false);
    let tmp = b.add_buffer(Buffer {
        name: "tmp".into(),
        dtype: DType::F32,
        kind: BufKind::Local { len: vec![0, 4] },
        len: 0,
        read_only: false,
    });
    let zero = b.index(0);
    let step = b.emit(Op::Step(lanes));
    let f = b.emit(Op::Cast(step, Elem::F32));
    b.push(Stmt::VStore { buf: tmp, base: zero, value: f, mask: None });
    let vs = b.emit(Op::VScale);
    let four = b.index(4);
    let n = b.bin(BinOp::Mul, vs, four);
    let i: Reg = b.begin_loop();
    let v = b.emit(Op::Load { buf: tmp, index: i });
    let v2 = b.bin(BinOp::Add, v, v);
    b.push(Stmt::Store { buf: y, index: i, value: v2 });
    b.end_loop(i, zero, n, scaletune_codegen::vprog::LoopHint::None);
    let prog = b.finish();
    for vscale in VSCALES {
        let mut args = vec![f32s(&[-1.0; 64])];
        run_at(&prog, &mut args, vscale).unwrap();
        let n = 4 * vscale as usize;
        let want: Vec<f32> = (0..64).map(|i| if i < n { 2.0 * i as f32 } else { -1.0 }).collect();
        assert_eq!(out_f32(&args, 0), want);
    }
}

//! Property tests of the interpreter: predicated vector loops agree with
//! scalar Rust at every vscale, and floor division obeys its definition.

use proptest::prelude::*;
use scaletune_codegen::interp::{run, ArgValue, InterpOptions};
use scaletune_codegen::vprog::{BinOp, BufKind, Buffer, Builder, Const, Elem, Lanes, LoopHint, Op, Program, Stmt};
use scaletune_space::{DType, TensorData};

/// `Y[i] = alpha * X[i] + Y[i]` over `n` elements with a predicated loop of
/// `<vscale x min x f32>` (or fixed `<min x f32>`) blocks.
fn axpy(n: usize, lanes: Lanes) -> Program {
    let mut b = Builder::new("axpy");
    let x = b.add_buffer(Buffer { name: "X".into(), dtype: DType::F32, kind: BufKind::Param, len: n, read_only: true });
    let y =
        b.add_buffer(Buffer { name: "Y".into(), dtype: DType::F32, kind: BufKind::Param, len: n, read_only: false });
    b.add_tensor_param(x);
    b.add_tensor_param(y);
    let alpha = b.add_scalar_param("alpha", DType::F32);
    let alpha_v = b.emit(Op::Splat(alpha, lanes));
    let (zero, nc, min) = (b.index(0), b.index(n as i64), b.index(i64::from(lanes.min)));
    let vl = if lanes.scalable {
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
    let mask = b.emit(Op::ActiveLaneMask { base, bound: nc, lanes });
    let xv = b.emit(Op::VLoad { buf: x, base, lanes, mask: Some(mask) });
    let yv = b.emit(Op::VLoad { buf: y, base, lanes, mask: Some(mask) });
    let r = b.emit(Op::Fma(alpha_v, xv, yv));
    b.push(Stmt::VStore { buf: y, base, value: r, mask: Some(mask) });
    b.end_loop(jb, zero, blocks, LoopHint::None);
    b.finish()
}

/// `OUT = [a floordiv d, a floormod d]` for i32 operands.
fn floor_ops(a: i32, d: i32) -> Vec<i32> {
    let mut b = Builder::new("floor");
    let out =
        b.add_buffer(Buffer { name: "OUT".into(), dtype: DType::I32, kind: BufKind::Param, len: 2, read_only: false });
    b.add_tensor_param(out);
    let a = b.emit(Op::Const(Const::Int(i64::from(a), Elem::I32)));
    let d = b.emit(Op::Const(Const::Int(i64::from(d), Elem::I32)));
    for (i, op) in [BinOp::FloorDiv, BinOp::FloorMod].into_iter().enumerate() {
        let r = b.bin(op, a, d);
        let idx = b.index(i as i64);
        b.push(Stmt::Store { buf: out, index: idx, value: r });
    }
    let mut args = vec![ArgValue::Tensor(TensorData::zeros(DType::I32, 2))];
    run(&b.finish(), &mut args, &InterpOptions::default()).expect("floor ops run");
    match &args[0] {
        ArgValue::Tensor(TensorData::I32(v)) => v.clone(),
        other => panic!("unexpected output {other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn predicated_axpy_matches_scalar_rust(
        n in 0usize..200,
        vscale in 1u32..=16,
        min in prop::sample::select(vec![1u32, 2, 4, 8]),
        scalable in any::<bool>(),
        alpha in -4.0f32..4.0,
        seed in any::<u32>(),
    ) {
        let lanes = Lanes { min, scalable };
        let xs: Vec<f32> = (0..n).map(|i| ((i as u32).wrapping_mul(seed | 1) % 997) as f32 / 31.0 - 16.0).collect();
        let ys: Vec<f32> = (0..n).map(|i| ((i as u32 ^ seed) % 389) as f32 / 7.0).collect();
        let mut args = vec![
            ArgValue::Tensor(TensorData::F32(xs.clone())),
            ArgValue::Tensor(TensorData::F32(ys.clone())),
            ArgValue::Scalar(f64::from(alpha)),
        ];
        let stats = run(&axpy(n, lanes), &mut args, &InterpOptions::new(vscale)).expect("axpy runs");
        let want: Vec<f32> = xs.iter().zip(&ys).map(|(&x, &y)| alpha.mul_add(x, y)).collect();
        prop_assert_eq!(&args[1], &ArgValue::Tensor(TensorData::F32(want)));
        prop_assert_eq!(stats.elements_stored, n as u64);
        prop_assert_eq!(stats.elements_loaded, 2 * n as u64);
    }

    #[test]
    fn floor_division_matches_its_definition(a in any::<i32>(), d in any::<i32>()) {
        prop_assume!(d != 0 && !(a == i32::MIN && d == -1));
        let r = floor_ops(a, d);
        let (q, m) = (i64::from(r[0]), i64::from(r[1]));
        let (a, d) = (i64::from(a), i64::from(d));
        // a == d*q + m with m in [0, d) or (d, 0]: that pins q to floor(a / d).
        prop_assert_eq!(d * q + m, a);
        prop_assert!(if d > 0 { (0..d).contains(&m) } else { (d + 1..=0).contains(&m) }, "m = {}", m);
    }
}

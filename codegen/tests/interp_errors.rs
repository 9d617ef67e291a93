//! The interpreter is strict: out-of-bounds accesses, uninitialized reads,
//! unassigned registers, bad arguments and runaway loops are typed errors.

use scaletune_codegen::interp::{run, ArgValue, InterpError, InterpOptions};
use scaletune_codegen::vprog::{
    BinOp, BufId, BufKind, Buffer, Builder, Const, Elem, Lanes, LoopHint, Op, Program, Reg, Stmt, Ty,
};
use scaletune_space::{DType, TensorData};

fn param(b: &mut Builder, name: &str, dtype: DType, len: usize, read_only: bool) -> BufId {
    let id = b.add_buffer(Buffer { name: name.into(), dtype, kind: BufKind::Param, len, read_only });
    b.add_tensor_param(id);
    id
}

fn local(b: &mut Builder, name: &str, len: Vec<i64>) -> BufId {
    b.add_buffer(Buffer {
        name: name.into(),
        dtype: DType::F32,
        kind: BufKind::Local { len },
        len: 0,
        read_only: false,
    })
}

fn f32s(n: usize) -> ArgValue {
    ArgValue::Tensor(TensorData::zeros(DType::F32, n))
}

fn run1(prog: &Program, args: &mut [ArgValue]) -> Result<(), InterpError> {
    run(prog, args, &InterpOptions::default()).map(|_| ())
}

/// `Y[0] = X[at]` for buffers of 10 elements.
fn scalar_copy(at: i64) -> Program {
    let mut b = Builder::new("copy");
    let x = param(&mut b, "X", DType::F32, 10, true);
    let y = param(&mut b, "Y", DType::F32, 10, false);
    let (i, zero) = (b.index(at), b.index(0));
    let v = b.emit(Op::Load { buf: x, index: i });
    b.push(Stmt::Store { buf: y, index: zero, value: v });
    b.finish()
}

#[test]
fn scalar_accesses_are_bounds_checked() {
    for (at, ok) in [(9, true), (10, false), (-1, false), (i64::MIN, false)] {
        let r = run1(&scalar_copy(at), &mut [f32s(10), f32s(10)]);
        if ok {
            assert_eq!(r, Ok(()));
        } else {
            assert_eq!(r, Err(InterpError::OutOfBounds { buffer: "X".into(), index: at, len: 10 }));
        }
    }
}

#[test]
fn active_vector_lanes_are_bounds_checked() {
    // A <vscale x 4> store at base 4 into 12 elements fits at vscale 2, not at vscale 4;
    // a mask of base + i < 12 makes it fit at every vscale.
    for masked in [false, true] {
        let lanes = Lanes::scalable(4);
        let mut b = Builder::new("vst");
        let y = param(&mut b, "Y", DType::F32, 12, false);
        let (base, bound) = (b.index(4), b.index(12));
        let one = b.constant(1.0, DType::F32);
        let v = b.emit(Op::Splat(one, lanes));
        let mask = masked.then(|| b.emit(Op::ActiveLaneMask { base, bound, lanes }));
        b.push(Stmt::VStore { buf: y, base, value: v, mask });
        let prog = b.finish();
        assert_eq!(run(&prog, &mut [f32s(12)], &InterpOptions::new(2)).map(|_| ()), Ok(()));
        let at4 = run(&prog, &mut [f32s(12)], &InterpOptions::new(4)).map(|_| ());
        if masked {
            assert_eq!(at4, Ok(()));
        } else {
            assert_eq!(at4, Err(InterpError::OutOfBounds { buffer: "Y".into(), index: 12, len: 12 }));
        }
    }
}

#[test]
fn gather_and_scatter_lanes_are_bounds_checked() {
    let lanes = Lanes::fixed(4);
    let mut b = Builder::new("g");
    let x = param(&mut b, "X", DType::F32, 8, true);
    let y = param(&mut b, "Y", DType::F32, 8, false);
    let step = b.emit(Op::Step(lanes));
    let three = b.index(3);
    let three = b.emit(Op::Splat(three, lanes));
    let idx = b.bin(BinOp::Mul, step, three); // 0, 3, 6, 9
    let v = b.emit(Op::Gather { buf: x, indices: idx, mask: None });
    b.push(Stmt::Scatter { buf: y, indices: idx, value: v, mask: None });
    let prog = b.finish();
    assert_eq!(
        run1(&prog, &mut [f32s(8), f32s(8)]),
        Err(InterpError::OutOfBounds { buffer: "X".into(), index: 9, len: 8 })
    );
}

#[test]
fn local_buffers_start_uninitialized() {
    // tmp has 2*vscale + 1 elements; write tmp[0], then read tmp[at].
    let program = |at: i64| {
        let mut b = Builder::new("uninit");
        let y = param(&mut b, "Y", DType::F32, 1, false);
        let tmp = local(&mut b, "tmp", vec![1, 2]);
        let (zero, i) = (b.index(0), b.index(at));
        let one = b.constant(1.0, DType::F32);
        b.push(Stmt::Store { buf: tmp, index: zero, value: one });
        let v = b.emit(Op::Load { buf: tmp, index: i });
        b.push(Stmt::Store { buf: y, index: zero, value: v });
        b.finish()
    };
    assert_eq!(run1(&program(0), &mut [f32s(1)]), Ok(()));
    assert_eq!(run1(&program(1), &mut [f32s(1)]), Err(InterpError::UninitRead { buffer: "tmp".into(), index: 1 }));
    let opts = InterpOptions::new(4);
    assert_eq!(
        run(&program(9), &mut [f32s(1)], &opts).map(|_| ()),
        Err(InterpError::OutOfBounds { buffer: "tmp".into(), index: 9, len: 9 })
    );
    assert_eq!(
        run(&program(8), &mut [f32s(1)], &opts).map(|_| ()),
        Err(InterpError::UninitRead { buffer: "tmp".into(), index: 8 })
    );
}

#[test]
fn masked_vector_loads_of_locals_check_only_active_lanes() {
    let lanes = Lanes::fixed(4);
    let mut b = Builder::new("partial");
    let y = param(&mut b, "Y", DType::F32, 4, false);
    let tmp = local(&mut b, "tmp", vec![4]);
    let (zero, two, four) = (b.index(0), b.index(2), b.index(4));
    let one = b.constant(1.0, DType::F32);
    b.push(Stmt::Store { buf: tmp, index: zero, value: one });
    let i1 = b.index(1);
    b.push(Stmt::Store { buf: tmp, index: i1, value: one });
    let first_two = b.emit(Op::ActiveLaneMask { base: zero, bound: two, lanes });
    let v = b.emit(Op::VLoad { buf: tmp, base: zero, lanes, mask: Some(first_two) });
    b.push(Stmt::VStore { buf: y, base: zero, value: v, mask: None });
    let all = b.emit(Op::ActiveLaneMask { base: zero, bound: four, lanes });
    let _ = b.emit(Op::VLoad { buf: tmp, base: zero, lanes, mask: Some(all) });
    let prog = b.finish();
    let mut args = [f32s(4)];
    assert_eq!(run1(&prog, &mut args), Err(InterpError::UninitRead { buffer: "tmp".into(), index: 2 }));
    assert_eq!(args[0], ArgValue::Tensor(TensorData::F32(vec![1.0, 1.0, 0.0, 0.0])), "writes before the error stay");
}

#[test]
fn registers_must_be_assigned_before_use() {
    let mut b = Builder::new("unassigned");
    let y = param(&mut b, "Y", DType::F32, 1, false);
    let ghost = b.new_reg(Ty::scalar(Elem::F32));
    let zero = b.index(0);
    b.push(Stmt::Store { buf: y, index: zero, value: ghost });
    assert_eq!(run1(&b.finish(), &mut [f32s(1)]), Err(InterpError::Unassigned(ghost)));

    // A loop variable does not outlive its loop, even when the loop ran.
    let mut b = Builder::new("loopvar");
    let y = param(&mut b, "Y", DType::F32, 1, false);
    let (zero, three) = (b.index(0), b.index(3));
    let i = b.begin_loop();
    b.end_loop(i, zero, three, LoopHint::None);
    let f = b.emit(Op::Cast(i, Elem::F32));
    b.push(Stmt::Store { buf: y, index: zero, value: f });
    assert_eq!(run1(&b.finish(), &mut [f32s(1)]), Err(InterpError::Unassigned(i)));
}

/// `Y[0] = cast(a op b)` on index operands.
fn index_op(op: BinOp, a: i64, c: i64, elem: Elem) -> Result<(), InterpError> {
    let mut b = Builder::new("div");
    let y = param(&mut b, "Y", DType::F32, 1, false);
    let (a, c) = (b.emit(Op::Const(Const::Int(a, elem))), b.emit(Op::Const(Const::Int(c, elem))));
    let q = b.bin(op, a, c);
    let f = b.emit(Op::Cast(q, Elem::F32));
    let zero = b.index(0);
    b.push(Stmt::Store { buf: y, index: zero, value: f });
    run1(&b.finish(), &mut [f32s(1)])
}

#[test]
fn integer_division_and_shift_errors() {
    assert_eq!(index_op(BinOp::FloorDiv, 5, 0, Elem::Index), Err(InterpError::DivisionByZero));
    assert_eq!(index_op(BinOp::FloorMod, 5, 0, Elem::I32), Err(InterpError::DivisionByZero));
    assert_eq!(
        index_op(BinOp::FloorDiv, i64::from(i32::MIN), -1, Elem::I32),
        Err(InterpError::DivisionOverflow { dividend: i64::from(i32::MIN) })
    );
    assert_eq!(index_op(BinOp::FloorDiv, i64::from(i32::MIN), -1, Elem::Index), Ok(()));
    assert_eq!(index_op(BinOp::Shl, 1, 32, Elem::I32), Err(InterpError::ShiftOutOfRange { amount: 32, bits: 32 }));
    assert_eq!(index_op(BinOp::Shr, 1, -1, Elem::Index), Err(InterpError::ShiftOutOfRange { amount: -1, bits: 64 }));
    assert_eq!(index_op(BinOp::Shl, 1, 63, Elem::Index), Ok(()));
}

#[test]
fn extract_of_a_missing_lane_is_an_error() {
    for vscale in [1, 2] {
        let lanes = Lanes::scalable(4);
        let mut b = Builder::new("extract");
        let y = param(&mut b, "Y", DType::F32, 1, false);
        let one = b.constant(1.0, DType::F32);
        let v = b.emit(Op::Splat(one, lanes));
        let (zero, seven) = (b.index(0), b.index(7));
        let e = b.emit(Op::Extract(v, seven));
        b.push(Stmt::Store { buf: y, index: zero, value: e });
        let r = run(&b.finish(), &mut [f32s(1)], &InterpOptions::new(vscale)).map(|_| ());
        if vscale == 1 {
            assert_eq!(r, Err(InterpError::LaneOutOfRange { lane: 7, lanes: 4 }));
        } else {
            assert_eq!(r, Ok(()));
        }
    }
}

#[test]
fn arguments_must_match_the_parameters() {
    let mut b = Builder::new("args");
    let x = param(&mut b, "X", DType::F32, 4, true);
    let n = b.add_scalar_param("n", DType::I32);
    let _ = (x, n);
    let prog = b.finish();
    let good = || vec![f32s(4), ArgValue::Scalar(3.0)];
    assert_eq!(run1(&prog, &mut good()), Ok(()));
    let bad: Vec<Vec<ArgValue>> = vec![
        vec![f32s(4)],
        vec![f32s(4), ArgValue::Scalar(3.0), ArgValue::Scalar(1.0)],
        vec![f32s(5), ArgValue::Scalar(3.0)],
        vec![ArgValue::Tensor(TensorData::zeros(DType::F64, 4)), ArgValue::Scalar(3.0)],
        vec![ArgValue::Scalar(1.0), ArgValue::Scalar(3.0)],
        vec![f32s(4), f32s(1)],
        vec![f32s(4), ArgValue::Scalar(3.5)],
        vec![f32s(4), ArgValue::Scalar(1e10)],
    ];
    for mut args in bad {
        let r = run1(&prog, &mut args);
        assert!(matches!(r, Err(InterpError::ArgMismatch(_))), "{args:?} gave {r:?}");
    }
}

#[test]
fn read_only_buffers_reject_writes() {
    let mut b = Builder::new("ro");
    let x = param(&mut b, "X", DType::F32, 4, true);
    let (zero, one) = (b.index(0), b.index(1));
    let v = b.emit(Op::Load { buf: x, index: zero });
    b.push(Stmt::Store { buf: x, index: one, value: v });
    assert_eq!(run1(&b.finish(), &mut [f32s(4)]), Err(InterpError::ReadOnlyWrite { buffer: "X".into(), index: 1 }));
}

#[test]
fn step_limit_stops_long_runs() {
    let mut b = Builder::new("spin");
    let (zero, huge) = (b.index(0), b.index(1 << 40));
    let acc = b.new_reg(Ty::index());
    b.assign(acc, Op::Copy(zero));
    let i = b.begin_loop();
    b.assign(acc, Op::Bin(BinOp::Add, acc, i));
    b.end_loop(i, zero, huge, LoopHint::None);
    let prog = b.finish();
    let r = run(&prog, &mut [], &InterpOptions::new(1).with_max_steps(10_000));
    assert_eq!(r, Err(InterpError::StepLimit { limit: 10_000 }));
}

#[test]
fn malformed_programs_are_errors_not_panics() {
    // Ill-typed: adding an f32 to an i32.
    let mut b = Builder::new("typed");
    let a = b.constant(1.0, DType::F32);
    let c = b.constant(1.0, DType::I32);
    let _ = b.bin(BinOp::Add, a, c);
    assert!(matches!(run1(&b.finish(), &mut []), Err(InterpError::Verify(_))));

    // A constant whose value kind contradicts its element type.
    let mut b = Builder::new("const");
    let _: Reg = b.emit(Op::Const(Const::Float(1.5, DType::I32)));
    assert!(matches!(run1(&b.finish(), &mut []), Err(InterpError::InvalidProgram(_))));

    // A parameter buffer missing from the parameter list.
    let mut b = Builder::new("params");
    b.add_buffer(Buffer { name: "X".into(), dtype: DType::F32, kind: BufKind::Param, len: 1, read_only: true });
    assert!(matches!(run1(&b.finish(), &mut []), Err(InterpError::InvalidProgram(_))));

    // A local with a negative length, and vscale 0.
    let mut b = Builder::new("neg");
    local(&mut b, "tmp", vec![8, -4]);
    let prog = b.finish();
    assert!(run(&prog, &mut [], &InterpOptions::new(1)).is_ok());
    assert!(matches!(run(&prog, &mut [], &InterpOptions::new(4)), Err(InterpError::InvalidProgram(_))));
    assert_eq!(run(&prog, &mut [], &InterpOptions::new(0)), Err(InterpError::InvalidVscale(0)));
}

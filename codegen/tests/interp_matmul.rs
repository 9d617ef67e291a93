//! Interpreter end-to-end: scalar and vectorized matmul programs against a Rust reference.

use scaletune_codegen::interp::{run, ArgValue, InterpOptions};
use scaletune_codegen::vprog::{BinOp, BufKind, Buffer, Builder, Const, Elem, Lanes, LoopHint, Op, Program, Reg, Ty};
use scaletune_space::{DType, TensorData};
use std::time::Instant;

fn param(b: &mut Builder, name: &str, len: usize, read_only: bool) -> scaletune_codegen::vprog::BufId {
    let id = b.add_buffer(Buffer { name: name.into(), dtype: DType::F32, kind: BufKind::Param, len, read_only });
    b.add_tensor_param(id);
    id
}

/// `C[i, j] = sum_k A[i, k] * B[k, j]` with three scalar loops and an fma accumulator.
fn scalar_matmul(m: usize, n: usize, k: usize) -> Program {
    let mut b = Builder::new("matmul_scalar");
    let (a, bb, c) =
        (param(&mut b, "A", m * k, true), param(&mut b, "B", k * n, true), param(&mut b, "C", m * n, false));
    let zero = b.index(0);
    let (mc, nc, kc) = (b.index(m as i64), b.index(n as i64), b.index(k as i64));
    let i = b.begin_loop();
    let j = b.begin_loop();
    let acc = b.new_reg(Ty::scalar(Elem::F32));
    b.assign(acc, Op::Const(Const::Float(0.0, DType::F32)));
    let kk = b.begin_loop();
    let t = b.bin(BinOp::Mul, i, kc);
    let ai = b.bin(BinOp::Add, t, kk);
    let av = b.emit(Op::Load { buf: a, index: ai });
    let t = b.bin(BinOp::Mul, kk, nc);
    let bi = b.bin(BinOp::Add, t, j);
    let bv = b.emit(Op::Load { buf: bb, index: bi });
    b.assign(acc, Op::Fma(av, bv, acc));
    b.end_loop(kk, zero, kc, LoopHint::None);
    let t = b.bin(BinOp::Mul, i, nc);
    let ci = b.bin(BinOp::Add, t, j);
    b.push(scaletune_codegen::vprog::Stmt::Store { buf: c, index: ci, value: acc });
    b.end_loop(j, zero, nc, LoopHint::None);
    b.end_loop(i, zero, mc, LoopHint::None);
    b.finish()
}

/// The same matmul vectorized over `j` with `<vscale x 4 x f32>` vectors and a
/// predicated main loop (active-lane mask on every iteration).
fn vector_matmul(m: usize, n: usize, k: usize) -> Program {
    let mut b = Builder::new("matmul_vla");
    let (a, bb, c) =
        (param(&mut b, "A", m * k, true), param(&mut b, "B", k * n, true), param(&mut b, "C", m * n, false));
    let lanes = Lanes::scalable(4);
    let zero = b.index(0);
    let (mc, nc, kc) = (b.index(m as i64), b.index(n as i64), b.index(k as i64));
    let vs = b.emit(Op::VScale);
    let four = b.index(4);
    let vl = b.bin(BinOp::Mul, vs, four);
    let vl_minus_one = {
        let one = b.index(1);
        b.bin(BinOp::Sub, vl, one)
    };
    let padded = b.bin(BinOp::Add, nc, vl_minus_one);
    let n_blocks = b.bin(BinOp::FloorDiv, padded, vl);
    let fzero = b.constant(0.0, DType::F32);
    let i = b.begin_loop();
    let jb = b.begin_loop();
    let j = b.bin(BinOp::Mul, jb, vl);
    let mask = b.emit(Op::ActiveLaneMask { base: j, bound: nc, lanes });
    let acc = b.new_reg(Ty::vector(Elem::F32, lanes));
    b.assign(acc, Op::Splat(fzero, lanes));
    let kk = b.begin_loop();
    let t = b.bin(BinOp::Mul, i, kc);
    let ai = b.bin(BinOp::Add, t, kk);
    let av = b.emit(Op::Load { buf: a, index: ai });
    let avs = b.emit(Op::Splat(av, lanes));
    let t = b.bin(BinOp::Mul, kk, nc);
    let bi = b.bin(BinOp::Add, t, j);
    let bv = b.emit(Op::VLoad { buf: bb, base: bi, lanes, mask: Some(mask) });
    b.assign(acc, Op::Fma(avs, bv, acc));
    b.end_loop(kk, zero, kc, LoopHint::None);
    let t = b.bin(BinOp::Mul, i, nc);
    let ci = b.bin(BinOp::Add, t, j);
    b.push(scaletune_codegen::vprog::Stmt::VStore { buf: c, base: ci, value: acc, mask: Some(mask) });
    b.end_loop(jb, zero, n_blocks, LoopHint::None);
    b.end_loop(i, zero, mc, LoopHint::None);
    let _: Reg = vl_minus_one;
    b.finish()
}

fn inputs(m: usize, n: usize, k: usize) -> (Vec<f32>, Vec<f32>) {
    let a = (0..m * k).map(|x| ((x * 7 + 3) % 17) as f32 / 8.0 - 1.0).collect();
    let b = (0..k * n).map(|x| ((x * 5 + 1) % 13) as f32 / 4.0 - 1.5).collect();
    (a, b)
}

/// Reference with the same fma accumulation order as the programs.
fn reference(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0.0f32;
            for kk in 0..k {
                acc = a[i * k + kk].mul_add(b[kk * n + j], acc);
            }
            c[i * n + j] = acc;
        }
    }
    c
}

fn run_matmul(prog: &Program, m: usize, n: usize, k: usize, vscale: u32) -> Vec<f32> {
    let (a, b) = inputs(m, n, k);
    let mut args = vec![
        ArgValue::Tensor(TensorData::F32(a)),
        ArgValue::Tensor(TensorData::F32(b)),
        ArgValue::Tensor(TensorData::F32(vec![f32::NAN; m * n])),
    ];
    run(prog, &mut args, &InterpOptions::new(vscale)).expect("matmul runs");
    match &args[2] {
        ArgValue::Tensor(TensorData::F32(c)) => c.clone(),
        other => panic!("unexpected output {other:?}"),
    }
}

#[test]
fn scalar_matmul_64_matches_reference_bit_for_bit() {
    let (m, n, k) = (64, 64, 64);
    let prog = scalar_matmul(m, n, k);
    let (a, b) = inputs(m, n, k);
    let start = Instant::now();
    let c = run_matmul(&prog, m, n, k, 1);
    eprintln!("scalar matmul 64x64x64 interpreted in {:?}", start.elapsed());
    assert_eq!(c, reference(&a, &b, m, n, k));
}

#[test]
fn scalar_matmul_counts_operations() {
    let (m, n, k) = (3, 5, 7);
    let prog = scalar_matmul(m, n, k);
    let (a, b) = inputs(m, n, k);
    let mut args = vec![
        ArgValue::Tensor(TensorData::F32(a)),
        ArgValue::Tensor(TensorData::F32(b)),
        ArgValue::Tensor(TensorData::zeros(DType::F32, m * n)),
    ];
    let stats = run(&prog, &mut args, &InterpOptions::new(1)).unwrap();
    assert_eq!(stats.loads, (2 * m * n * k) as u64);
    assert_eq!(stats.stores, (m * n) as u64);
    assert_eq!(stats.loop_iterations, (m + m * n + m * n * k) as u64);
    assert_eq!(stats.vector_ops, 0);
}

#[test]
fn vector_matmul_with_tail_matches_reference_at_every_vscale() {
    for (m, n, k) in [(5, 37, 9), (4, 64, 3), (2, 3, 5)] {
        let prog = vector_matmul(m, n, k);
        let (a, b) = inputs(m, n, k);
        let want = reference(&a, &b, m, n, k);
        for vscale in [1, 2, 3, 4, 16] {
            assert_eq!(run_matmul(&prog, m, n, k, vscale), want, "{m}x{n}x{k} at vscale {vscale}");
        }
    }
}

#[test]
fn vector_matmul_256_cubed_runs() {
    let (m, n, k) = (256, 256, 256);
    let prog = vector_matmul(m, n, k);
    let (a, b) = inputs(m, n, k);
    let start = Instant::now();
    let c = run_matmul(&prog, m, n, k, 4);
    eprintln!("vector matmul 256^3 at vscale 4 interpreted in {:?}", start.elapsed());
    assert_eq!(c, reference(&a, &b, m, n, k));
}

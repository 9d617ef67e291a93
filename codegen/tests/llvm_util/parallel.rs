//! Hand-built vector programs with parallel loops, for the thread-pool tests.

use super::programs::{ceil_div, param, vl};
use scaletune_codegen::vprog::*;
use scaletune_space::DType;

/// Emits `y[row*cols + c] = factor * x[row*cols + c]` for every column `c`
/// of one row, as a predicated vector loop (`factor` a vector register).
fn scale_row(b: &mut Builder, x: BufId, y: BufId, row: Reg, cols: usize, factor: Reg, lanes: Lanes) {
    let cols_r = b.index(cols as i64);
    let row_base = b.bin(BinOp::Mul, row, cols_r);
    let vl = vl(b, lanes);
    let trips = ceil_div(b, cols_r, vl);
    let zero = b.index(0);
    let j = b.begin_loop();
    let off = b.bin(BinOp::Mul, j, vl);
    let mask = b.emit(Op::ActiveLaneMask { base: off, bound: cols_r, lanes });
    let base = b.bin(BinOp::Add, row_base, off);
    let v = b.emit(Op::VLoad { buf: x, base, lanes, mask: Some(mask) });
    let prod = b.bin(BinOp::Mul, factor, v);
    b.push(Stmt::VStore { buf: y, base, value: prod, mask: Some(mask) });
    b.end_loop(j, zero, trips, LoopHint::None);
}

/// `y = 2 * x` over `rows x cols` f32 elements: a parallel loop over the
/// rows, a predicated vector loop over the columns. The splat of 2 is
/// computed before the parallel loop (a captured vector register).
/// Signature: `par_scale(const float *x, float *y)`.
pub fn par_scale(rows: usize, cols: usize, lanes: Lanes) -> Program {
    let mut b = Builder::new("par_scale");
    let x = param(&mut b, "x", DType::F32, rows * cols, true);
    let y = param(&mut b, "y", DType::F32, rows * cols, false);
    let two = b.constant(2.0, DType::F32);
    let vtwo = b.emit(Op::Splat(two, lanes));
    let (zero, n) = (b.index(0), b.index(rows as i64));
    let i = b.begin_loop();
    scale_row(&mut b, x, y, i, cols, vtwo, lanes);
    b.end_loop(i, zero, n, LoopHint::Parallel);
    b.finish()
}

/// Rows `[0, split)` get `y = 2 * x` and rows `[split, rows)` get
/// `y = s * x` (scalar parameter `s`), in two parallel loops, the second
/// starting at `split` (as tail splitting produces them).
/// Signature: `par_ranges(const float *x, float *y, float s)`.
pub fn par_ranges(rows: usize, cols: usize, split: usize, lanes: Lanes) -> Program {
    let mut b = Builder::new("par_ranges");
    let x = param(&mut b, "x", DType::F32, rows * cols, true);
    let y = param(&mut b, "y", DType::F32, rows * cols, false);
    let s = b.add_scalar_param("s", DType::F32);
    let (zero, mid, n) = (b.index(0), b.index(split as i64), b.index(rows as i64));
    for (start, end, factor) in [(zero, mid, None), (mid, n, Some(s))] {
        let i = b.begin_loop();
        let f = match factor {
            Some(s) => s,
            None => b.constant(2.0, DType::F32),
        };
        let vf = b.emit(Op::Splat(f, lanes));
        scale_row(&mut b, x, y, i, cols, vf, lanes);
        b.end_loop(i, start, end, LoopHint::Parallel);
    }
    b.finish()
}

/// A per-iteration scratch buffer: iteration `i` fills `scratch` with `i`
/// (through the permutation `perm`, so no store forwards to a load), spins
/// `spin` times over `perm` (accumulated into `z[i]`), then sums `scratch`
/// into `y[i]`, which is `len * i` only if no other iteration wrote
/// `scratch` in between.
/// Signature: `par_scratch(const int32_t *perm, int32_t *y, int32_t *z)`.
pub fn par_scratch(n: usize, len: usize, spin: usize) -> Program {
    let mut b = Builder::new("par_scratch");
    let perm = param(&mut b, "perm", DType::I32, len, true);
    let y = param(&mut b, "y", DType::I32, n, false);
    let z = param(&mut b, "z", DType::I32, n, false);
    let scratch = b.add_buffer(Buffer {
        name: "scratch".into(),
        dtype: DType::I32,
        kind: BufKind::Local { len: vec![len as i64] },
        len: 0,
        read_only: false,
    });
    let (zero, n_r, len_r, spin_r) = (b.index(0), b.index(n as i64), b.index(len as i64), b.index(spin as i64));
    let i = b.begin_loop();
    let i32v = b.emit(Op::Cast(i, Elem::I32));
    let j = b.begin_loop();
    let p = b.emit(Op::Load { buf: perm, index: j });
    let pi = b.emit(Op::Cast(p, Elem::Index));
    b.push(Stmt::Store { buf: scratch, index: pi, value: i32v });
    b.end_loop(j, zero, len_r, LoopHint::None);
    let acc = b.constant(0.0, DType::I32);
    let k = b.begin_loop();
    let jj = b.begin_loop();
    let q = b.emit(Op::Load { buf: perm, index: jj });
    b.assign(acc, Op::Bin(BinOp::Add, acc, q));
    b.end_loop(jj, zero, len_r, LoopHint::None);
    b.end_loop(k, zero, spin_r, LoopHint::None);
    let sum = b.constant(0.0, DType::I32);
    let j2 = b.begin_loop();
    let v = b.emit(Op::Load { buf: scratch, index: j2 });
    b.assign(sum, Op::Bin(BinOp::Add, sum, v));
    b.end_loop(j2, zero, len_r, LoopHint::None);
    b.push(Stmt::Store { buf: y, index: i, value: sum });
    b.push(Stmt::Store { buf: z, index: i, value: acc });
    b.end_loop(i, zero, n_r, LoopHint::Parallel);
    b.finish()
}

/// A whole-tensor temporary shared by two parallel loops: `t[i] = 2 * x[i]`,
/// then `y[i] = t[n - 1 - i] + 1` (each iteration of the second loop reads
/// an element another iteration of the first one wrote).
/// Signature: `par_temp(const float *x, float *y)`.
pub fn par_temp(n: usize) -> Program {
    let mut b = Builder::new("par_temp");
    let x = param(&mut b, "x", DType::F32, n, true);
    let y = param(&mut b, "y", DType::F32, n, false);
    let t = b.add_buffer(Buffer {
        name: "t".into(),
        dtype: DType::F32,
        kind: BufKind::Local { len: vec![n as i64] },
        len: 0,
        read_only: false,
    });
    let (zero, n_r, last) = (b.index(0), b.index(n as i64), b.index(n as i64 - 1));
    let i = b.begin_loop();
    let v = b.emit(Op::Load { buf: x, index: i });
    let two = b.constant(2.0, DType::F32);
    let d = b.bin(BinOp::Mul, v, two);
    b.push(Stmt::Store { buf: t, index: i, value: d });
    b.end_loop(i, zero, n_r, LoopHint::Parallel);
    let i2 = b.begin_loop();
    let r = b.bin(BinOp::Sub, last, i2);
    let v = b.emit(Op::Load { buf: t, index: r });
    let one = b.constant(1.0, DType::F32);
    let e = b.bin(BinOp::Add, v, one);
    b.push(Stmt::Store { buf: y, index: i2, value: e });
    b.end_loop(i2, zero, n_r, LoopHint::Parallel);
    b.finish()
}

/// Ways a parallel loop can be wrong, each refused by the emitter.
#[derive(Clone, Copy, Debug)]
pub enum Broken {
    /// `acc += x[i]` in the loop: a value carried between iterations.
    Carried,
    /// `last = x[i]` in the loop, stored after it: a value carried out.
    LiveOut,
    /// A scratch buffer written at a fixed position in the loop and read after it.
    SharedScratch,
}

/// A small program with a parallel loop of the given defect.
/// Signature: `broken(const float *x, float *y)`.
pub fn broken(kind: Broken) -> Program {
    let mut b = Builder::new("broken");
    let x = param(&mut b, "x", DType::F32, 16, true);
    let y = param(&mut b, "y", DType::F32, 16, false);
    let scratch = b.add_buffer(Buffer {
        name: "scratch".into(),
        dtype: DType::F32,
        kind: BufKind::Local { len: vec![1] },
        len: 0,
        read_only: false,
    });
    let (zero, n) = (b.index(0), b.index(16));
    let acc = b.constant(0.0, DType::F32);
    let i = b.begin_loop();
    let v = b.emit(Op::Load { buf: x, index: i });
    match kind {
        Broken::Carried => {
            b.assign(acc, Op::Bin(BinOp::Add, acc, v));
            b.push(Stmt::Store { buf: y, index: i, value: acc });
        }
        Broken::LiveOut => b.assign(acc, Op::Copy(v)),
        Broken::SharedScratch => b.push(Stmt::Store { buf: scratch, index: zero, value: v }),
    }
    b.end_loop(i, zero, n, LoopHint::Parallel);
    let out = match kind {
        Broken::SharedScratch => b.emit(Op::Load { buf: scratch, index: zero }),
        Broken::LiveOut => acc,
        Broken::Carried => b.constant(5.0, DType::F32),
    };
    b.push(Stmt::Store { buf: y, index: zero, value: out });
    b.finish()
}

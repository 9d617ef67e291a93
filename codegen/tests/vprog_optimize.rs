//! The vector-program clean-up (`vprog::optimize`): invariants leave loops,
//! repeated computations are shared, nothing that could fail or that reads
//! changing memory moves, and results stay bit for bit the same (hand-built
//! programs, and every shipped workload's sampled schedules).

use proptest::prelude::*;
use scaletune_codegen::interp::{run, ArgValue, InterpError, InterpOptions};
use scaletune_codegen::lower::{lower, lower_unoptimized};
use scaletune_codegen::pipeline::initial_nest;
use scaletune_codegen::target::Target;
use scaletune_codegen::vprog::{
    optimize, verify, walk, BinOp, BufId, BufKind, Buffer, Builder, Elem, LoopHint, Op, Program, Reg, Stmt,
};
use scaletune_space::data::make_args;
use scaletune_space::design::DesignSpace;
use scaletune_space::sample::task_rng;
use scaletune_space::workload::load;
use scaletune_space::{DType, TensorData};

const N: usize = 12;

fn kernel() -> (Builder, BufId) {
    let mut b = Builder::new("k");
    let out =
        b.add_buffer(Buffer { name: "OUT".into(), dtype: DType::F32, kind: BufKind::Param, len: N, read_only: false });
    b.add_tensor_param(out);
    (b, out)
}

/// Runs `prog` with `OUT` filled with `fill` and returns `OUT`'s bits.
fn run_bits(prog: &Program, vscale: u32, fill: f64) -> Result<Vec<u64>, InterpError> {
    let mut args = vec![ArgValue::Tensor(TensorData::filled(DType::F32, N, fill))];
    run(prog, &mut args, &InterpOptions::new(vscale))?;
    let t = args[0].as_tensor().expect("tensor");
    Ok((0..N).map(|i| t.get(i).to_bits()).collect())
}

/// Statements directly in the body of the first loop, and in the whole program.
fn counts(prog: &Program) -> (usize, usize) {
    let first = prog.body.iter().find_map(|s| match s {
        Stmt::Loop { body, .. } => Some(body.len()),
        _ => None,
    });
    let mut all = 0;
    walk(&prog.body, &mut |_| all += 1);
    (first.unwrap_or(0), all)
}

fn optimized(prog: &Program) -> Program {
    let mut p = prog.clone();
    optimize(&mut p);
    verify(&p).expect("the optimized program is well typed");
    p
}

#[test]
fn invariants_leave_loops_and_repeated_computations_are_shared() {
    // for i in 0..N { OUT[i] = f32(i * 4 + 7 * 4) / 8 } with every constant
    // and the invariant product written inside the loop, twice over.
    let (mut b, out) = kernel();
    let (zero, n) = (b.index(0), b.index(N as i64));
    let i = b.begin_loop();
    let mut value = None;
    for _ in 0..2 {
        let (four, seven) = (b.index(4), b.index(7));
        let inv = b.bin(BinOp::Mul, seven, four);
        let scaled = b.bin(BinOp::Mul, i, four);
        let sum = b.bin(BinOp::Add, scaled, inv);
        let f = b.emit(Op::Cast(sum, Elem::Data(DType::F32)));
        let eight = b.constant(8.0, DType::F32);
        value = Some(b.bin(BinOp::Div, f, eight));
    }
    b.push(Stmt::Store { buf: out, index: i, value: value.expect("a value") });
    b.end_loop(i, zero, n, LoopHint::None);
    let prog = b.finish();
    let opt = optimized(&prog);
    let ((inner0, all0), (inner1, all1)) = (counts(&prog), counts(&opt));
    // In the loop only what depends on i stays: i*4, + inv, cast, / 8, the store.
    assert_eq!(inner1, 5, "{opt}");
    assert!(inner0 > 2 * inner1 && all1 < all0, "{inner0} -> {inner1}, {all0} -> {all1}\n{opt}");
    for vs in [1, 2, 4, 16] {
        assert_eq!(run_bits(&opt, vs, 0.0).expect("runs"), run_bits(&prog, vs, 0.0).expect("runs"));
    }
    let expected: Vec<u64> = (0..N).map(|i| (((i * 4 + 28) as f32 / 8.0) as f64).to_bits()).collect();
    assert_eq!(run_bits(&opt, 1, 0.0).expect("runs"), expected);
}

#[test]
fn nothing_that_could_fail_or_reads_changing_memory_moves() {
    // A scalar parameter d = 0 and a loop that never runs computing
    // floordiv(7, d): hoisting it would fail a kernel that is fine.
    let (mut b, out) = kernel();
    let d = b.add_scalar_param("d", DType::I32);
    let (zero, n) = (b.index(0), b.index(N as i64));
    let i = b.begin_loop();
    let seven = b.emit(Op::Const(scaletune_codegen::vprog::Const::Int(7, Elem::Data(DType::I32))));
    let q = b.bin(BinOp::FloorDiv, seven, d);
    let f = b.emit(Op::Cast(q, Elem::Data(DType::F32)));
    b.push(Stmt::Store { buf: out, index: i, value: f });
    b.end_loop(i, zero, zero, LoopHint::None);
    // OUT[i] = OUT[0] + 1 for each i: the load of OUT[0] is invariant in its
    // operands but reads memory the loop writes, so it stays.
    let j = b.begin_loop();
    let first = b.index(0);
    let x = b.emit(Op::Load { buf: out, index: first });
    let one = b.constant(1.0, DType::F32);
    let y = b.bin(BinOp::Add, x, one);
    b.push(Stmt::Store { buf: out, index: j, value: y });
    b.end_loop(j, zero, n, LoopHint::None);
    let prog = b.finish();
    let opt = optimized(&prog);
    let run_with_d = |p: &Program| {
        let mut args = vec![ArgValue::Tensor(TensorData::filled(DType::F32, N, 1.0)), ArgValue::Scalar(0.0)];
        run(p, &mut args, &InterpOptions::new(1)).map(|_| {
            let t = args[0].as_tensor().expect("tensor").clone();
            (0..N).map(|k| t.get(k)).collect::<Vec<f64>>()
        })
    };
    let (a, o) = (run_with_d(&prog).expect("runs"), run_with_d(&opt).expect("the optimized kernel runs too"));
    assert_eq!(a, o);
    // OUT[0] = 2, then every later element reads the updated OUT[0].
    assert_eq!(o, [2.0].into_iter().chain(std::iter::repeat_n(3.0, N - 1)).collect::<Vec<_>>());
    let mut loads_in_loops = 0;
    for s in &opt.body {
        if let Stmt::Loop { body, .. } = s {
            walk(body, &mut |x| loads_in_loops += usize::from(matches!(x, Stmt::Assign { op: Op::Load { .. }, .. })));
        }
    }
    assert_eq!(loads_in_loops, 1, "{opt}");
}

#[test]
fn accumulators_and_parallel_loops_stay_put() {
    // acc = 0; for i { acc = acc + 1.5 }; OUT[0] = acc; and a parallel loop
    // whose constants stay inside it.
    let (mut b, out) = kernel();
    let (zero, n) = (b.index(0), b.index(N as i64));
    let acc = b.constant(0.0, DType::F32);
    let i = b.begin_loop();
    let step = b.constant(1.5, DType::F32);
    let next = b.bin(BinOp::Add, acc, step);
    b.assign(acc, Op::Copy(next));
    b.end_loop(i, zero, n, LoopHint::None);
    b.push(Stmt::Store { buf: out, index: zero, value: acc });
    let one = b.index(1);
    let p = b.begin_loop();
    let two = b.constant(2.0, DType::F32);
    b.push(Stmt::Store { buf: out, index: p, value: two });
    b.end_loop(p, one, n, LoopHint::Parallel);
    let prog = b.finish();
    let opt = optimized(&prog);
    let loops: Vec<(&LoopHint, Vec<&Stmt>)> = opt
        .body
        .iter()
        .filter_map(|s| match s {
            Stmt::Loop { body, hint, .. } => Some((hint, body.iter().collect())),
            _ => None,
        })
        .collect();
    assert_eq!(loops.len(), 2);
    // The step constant left the serial loop; the accumulator update stayed.
    assert!(loops[0].1.iter().all(|s| !matches!(s, Stmt::Assign { op: Op::Const(_), .. })), "{opt}");
    assert!(loops[0].1.iter().any(|s| matches!(s, Stmt::Assign { dst, .. } if *dst == acc)), "{opt}");
    assert_eq!(*loops[1].0, LoopHint::Parallel);
    assert!(loops[1].1.iter().any(|s| matches!(s, Stmt::Assign { op: Op::Const(_), .. })), "{opt}");
    let bits = run_bits(&opt, 1, 0.0).expect("runs");
    assert_eq!(bits, run_bits(&prog, 1, 0.0).expect("runs"));
    assert_eq!(f64::from_bits(bits[0]), 18.0);
}

/// Registers the program reads; every one must be assigned before (a parameter, or defined).
fn reads(prog: &Program) -> Vec<Reg> {
    let mut out = Vec::new();
    walk(&prog.body, &mut |s| out.extend(s.operands()));
    out
}

const WORKLOADS: &[&str] = &[
    "scale_add:N=37",
    "sum_cos:N=45",
    "softmax_rows:M=3,N=21",
    "matmul:M=9,N=21,K=6",
    "matmul_bt:M=7,N=10,K=13",
    "paged_read:P=11,PAGES=40",
    "conv2d_nhwc:H=5,WI=6,C=3,F=9",
    "matmul_i8:M=5,N=19,K=4",
    "daxpy:N=29",
];
const TARGETS: &[&str] = &["sve-generic", "rvv", "host"];

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    /// The optimized program of a sampled schedule computes exactly (bit for
    /// bit) what the unoptimized one computes, at every vscale it allows.
    #[test]
    fn optimized_programs_compute_the_same_bits(
        wi in 0usize..WORKLOADS.len(),
        ti in 0usize..TARGETS.len(),
        seed in any::<u64>(),
    ) {
        let w = load(WORKLOADS[wi]).expect("loads");
        let t = Target::load(TARGETS[ti]).expect("target");
        let nest = initial_nest(&w, &t);
        let space = DesignSpace::generate(&nest);
        let s = space.sample(&mut task_rng(seed, 0)).expect("samples");
        let plain = lower_unoptimized(&s.nest, "k").expect("lowers");
        let opt = lower(&s.nest, "k").expect("lowers");
        prop_assert!(reads(&opt).len() <= reads(&plain).len());
        let dom = &s.nest.caps.vscale_values;
        for vs in [1u32, 2, 4, 16].into_iter().filter(|v| dom.contains(v)).chain(dom.first().copied()) {
            let outputs = |p: &Program| {
                let mut a: Vec<ArgValue> = make_args(&w, seed).into_iter().map(ArgValue::Tensor).collect();
                a.extend(w.scalars.iter().map(|x| ArgValue::Scalar(x.value)));
                run(p, &mut a, &InterpOptions::new(vs)).map(|_| {
                    a.iter()
                        .filter_map(|x| x.as_tensor())
                        .map(|t| (0..t.len()).map(|k| t.get(k).to_bits()).collect::<Vec<u64>>())
                        .collect::<Vec<_>>()
                })
            };
            let (p, o) = (outputs(&plain), outputs(&opt));
            prop_assert!(p.is_ok(), "vscale {}: {:?}", vs, p);
            prop_assert_eq!(p.expect("checked"), o.expect("the optimized program runs"), "vscale {}\n{}", vs, s.trace);
        }
    }
}

#[test]
fn an_invariant_leaves_every_loop_it_does_not_depend_on_in_program_order() {
    // for i { for j { for k { OUT[i+j+k] = f32(15 + i*2 + j) } } }, every
    // term computed in the innermost loop: 3*5 leaves all three loops, i*2
    // leaves k and j, j + i*2 leaves only k; each lands in front of the
    // outermost loop it leaves, in the order it was written.
    let (mut b, out) = kernel();
    let (zero, two) = (b.index(0), b.index(2));
    let i = b.begin_loop();
    let j = b.begin_loop();
    let k = b.begin_loop();
    let (three, five, two_in) = (b.index(3), b.index(5), b.index(2));
    let c = b.bin(BinOp::Mul, three, five);
    let d = b.bin(BinOp::Mul, i, two_in);
    let e = b.bin(BinOp::Add, j, d);
    let f = b.bin(BinOp::Add, c, e);
    let v = b.emit(Op::Cast(f, Elem::Data(DType::F32)));
    let ij = b.bin(BinOp::Add, i, j);
    let at = b.bin(BinOp::Add, ij, k);
    b.push(Stmt::Store { buf: out, index: at, value: v });
    b.end_loop(k, zero, two, LoopHint::None);
    b.end_loop(j, zero, two, LoopHint::None);
    b.end_loop(i, zero, two, LoopHint::None);
    let prog = b.finish();
    let opt = optimized(&prog);
    expect_test::expect![[r#"
        kernel k(OUT: *f32[12]) {
          %0: idx = 0:idx
          %1: idx = 2:idx
          %5: idx = 3:idx
          %6: idx = 5:idx
          %8: idx = 15:idx
          for %2 in %0..%1 {
            %9: idx = mul %2, %1
            for %3 in %0..%1 {
              %10: idx = add %3, %9
              %11: idx = add %8, %10
              %12: f32 = cast %11 to f32
              %13: idx = add %2, %3
              for %4 in %0..%1 {
                %14: idx = add %13, %4
                store OUT[%14] = %12
              }
            }
          }
        }
    "#]]
    .assert_eq(&opt.to_string());
    for vs in [1, 4] {
        assert_eq!(run_bits(&opt, vs, 0.0).expect("runs"), run_bits(&prog, vs, 0.0).expect("runs"));
    }
}

/// The pass keeps its tables per thread from one program to the next: a
/// program optimized after others (larger, smaller, of other workloads)
/// comes out as it does first thing on a fresh thread.
#[test]
fn a_program_optimized_after_others_is_optimized_as_on_a_fresh_thread() {
    let t = Target::load("host").expect("target");
    let mut programs = Vec::new();
    for (i, name) in ["matmul:M=64,N=48,K=32", "sum_cos:N=100", "conv2d_nhwc"].into_iter().enumerate() {
        let w = load(name).expect("loads");
        let space = DesignSpace::generate(&initial_nest(&w, &t));
        let mut rng = task_rng(40 + i as u64, 0);
        for _ in 0..4 {
            let s = space.sample(&mut rng).expect("samples");
            programs.push(lower_unoptimized(&s.nest, "k").expect("lowers"));
        }
    }
    let fresh: Vec<Program> =
        programs.iter().map(|p| std::thread::scope(|sc| sc.spawn(|| optimized(p)).join().expect("runs"))).collect();
    // In order, then in reverse order, all on this thread.
    let forward: Vec<Program> = programs.iter().map(optimized).collect();
    let backward: Vec<Program> = programs.iter().rev().map(optimized).collect();
    assert_eq!(forward, fresh);
    assert_eq!(backward.into_iter().rev().collect::<Vec<_>>(), fresh);
    // Sizes differ, so the tables grew and were reused at other sizes.
    let sizes: Vec<usize> = programs.iter().map(|p| counts(p).1).collect();
    assert!(sizes.iter().max() > sizes.iter().min(), "{sizes:?}");
}

//! Property test: random legal schedules of the shipped workloads replay to
//! the same loop nest and, lowered and interpreted at vscale 1, 2, 4 and 16,
//! compute the reference result.

use proptest::prelude::*;
use scaletune_codegen::interp::{run, ArgValue, InterpOptions};
use scaletune_codegen::lower::lower;
use scaletune_space::data::make_args;
use scaletune_space::ids::{BlockId, LoopId};
use scaletune_space::ir::{Nest, Node, Tail};
use scaletune_space::reference::{compare, evaluate};
use scaletune_space::trace::{parse_trace, Bindings, BlockRv, Choice, Inst, LoopRv, TExpr, Trace};
use scaletune_space::workload::{load, Role, Workload};
use scaletune_space::VectorCaps;
use std::collections::HashMap;

const WORKLOADS: &[&str] = &[
    "scale_add:N=37",
    "axpy:N=29",
    "daxpy:N=23",
    "sum_cos:N=37",
    "row_sum:M=5,N=11",
    "softmax_rows:M=3,N=11",
    "matmul:M=9,N=13,K=5",
    "matmul_bt:M=7,N=10,K=6",
    "batch_matmul:BS=2,M=5,N=6,K=3",
    "outer_product:M=6,N=9",
    "paged_read:P=9,PAGES=40",
    "transpose:M=7,N=5",
    "conv2d_nhwc:H=5,WI=5,C=3,F=6",
    "depthwise_conv2d_nhwc:H=5,WI=6,C=5",
    "matmul_i8:M=5,N=9,K=4",
    "matmul_f16:M=5,N=9,K=4",
    "matmul_bf16:M=5,N=9,K=4",
];

const FACTORS: &[&str] = &["2", "3", "4", "vscale", "2*vscale", "4*vscale"];

fn factor(i: u32) -> TExpr {
    match FACTORS[i as usize % FACTORS.len()] {
        "vscale" => TExpr::VScale,
        "2*vscale" => TExpr::Mul(Box::new(TExpr::Int(2)), Box::new(TExpr::VScale)),
        "4*vscale" => TExpr::Mul(Box::new(TExpr::Int(4)), Box::new(TExpr::VScale)),
        n => TExpr::Int(n.parse().expect("integer factor")),
    }
}

/// Bound on the block executions of a generated schedule at the largest
/// vscale (splits by vscale multiples pad small extents; keep cases fast).
const MAX_ITERATIONS: i64 = 40_000;

/// Total block executions of the nest at a given vscale (tail iterations included).
fn iterations(nest: &Nest, vscale: i64) -> i64 {
    let ext = |l: LoopId| {
        scaletune_space::expr::eval(&nest.extent(l).clone(), &|_| None, vscale, &|_, _| None).unwrap_or(i64::MAX / 4)
    };
    nest.all_blocks()
        .iter()
        .map(|b| nest.ancestors(Node::Block(*b)).iter().map(|l| ext(*l)).fold(1i64, |a, e| a.saturating_mul(e)))
        .fold(0i64, |a, e| a.saturating_add(e))
}

struct Gen {
    nest: Nest,
    env: Bindings,
    trace: Trace,
}

impl Gen {
    fn new(nest: Nest) -> Gen {
        Gen { nest, env: Bindings::default(), trace: Trace::default() }
    }

    /// A fresh name: the prefix and the number of random variables so far.
    fn name(&self, p: &str) -> String {
        format!("{p}{}", self.trace.names.len() + 1)
    }

    fn new_loop(&mut self, p: &str) -> LoopRv {
        let name = self.name(p);
        self.trace.new_loop(name)
    }

    fn new_block(&mut self, p: &str) -> BlockRv {
        let name = self.name(p);
        self.trace.new_block(name)
    }

    /// Applies one instruction if legal; returns whether it applied.
    fn try_inst(&mut self, inst: Inst) -> bool {
        let mut nest = self.nest.clone();
        let at = self.trace.insts.len();
        self.trace.insts.push(inst);
        match self.trace.apply_from(at, &mut nest, self.env.clone()) {
            Ok(env) if iterations(&nest, 16) <= MAX_ITERATIONS => {
                self.nest = nest;
                self.env = env;
                true
            }
            _ => {
                self.trace.insts.truncate(at);
                false
            }
        }
    }

    fn block_rv(&mut self, b: BlockId) -> BlockRv {
        let out = self.new_block("b");
        let block_name = self.nest.block(b).name.clone();
        assert!(self.try_inst(Inst::GetBlock { out, name: block_name }));
        out
    }

    fn loops_rv(&mut self, b: BlockRv, bid: BlockId) -> Vec<(LoopRv, LoopId)> {
        let loops = self.nest.ancestors(Node::Block(bid));
        if loops.is_empty() {
            return Vec::new();
        }
        let outs: Vec<LoopRv> = loops.iter().map(|_| self.new_loop("l")).collect();
        assert!(self.try_inst(Inst::GetLoops { outs: outs.clone(), block: b }));
        outs.into_iter().zip(loops).collect()
    }

    fn step(&mut self, mv: &[u32; 4]) {
        let blocks = self.nest.all_blocks();
        let bid = blocks[mv[1] as usize % blocks.len()];
        let b = self.block_rv(bid);
        let loops = self.loops_rv(b, bid);
        if loops.is_empty() {
            return;
        }
        let pick = |k: u32| loops[k as usize % loops.len()];
        let (l, lid) = pick(mv[2]);
        match mv[0] % 10 {
            0 | 1 => {
                let outs = vec![self.new_loop("s"), self.new_loop("s")];
                self.try_inst(Inst::Split { outs, loop_: l, factors: vec![None, Some(factor(mv[3]))] });
            }
            2 => {
                // Rotate a suffix of the chain.
                let k = mv[3] as usize % loops.len();
                let mut order: Vec<LoopRv> = loops[k..].iter().map(|x| x.0).collect();
                order.rotate_left(1);
                self.try_inst(Inst::Reorder { loops: order });
            }
            3 | 4 => {
                let tail = Choice::Lit(Tail::ALL[mv[3] as usize % 3]);
                let inner = loops.last().expect("non-empty").0;
                let target = if mv[0] % 10 == 3 { inner } else { l };
                self.try_inst(Inst::Vectorize { loop_: target, tail });
            }
            5 => {
                let ext = self.nest.extent(lid).as_int().unwrap_or(999);
                if ext <= 8 {
                    self.try_inst(Inst::Unroll { loop_: l });
                }
            }
            6 => {
                let k = mv[3] as usize % loops.len();
                if k + 1 < loops.len() {
                    let out = self.new_loop("f");
                    self.try_inst(Inst::Fuse { out, loops: vec![loops[k].0, loops[k + 1].0] });
                }
            }
            7 => {
                let out = self.new_block("w");
                if mv[3].is_multiple_of(2) {
                    self.try_inst(Inst::CacheWrite { out, block: b, at: l });
                } else {
                    let out2 = self.new_block("i");
                    self.try_inst(Inst::DecomposeReduction { out: out2, block: b, loop_: l });
                }
            }
            8 => {
                let reads: Vec<String> =
                    self.nest.block(bid).rhs.reads().iter().map(|a| self.nest.tensor(a.tensor).name.clone()).collect();
                if !reads.is_empty() {
                    let tensor = reads[mv[3] as usize % reads.len()].clone();
                    let rank = self.nest.tensors.iter().find(|t| t.name == tensor).map(|t| t.shape.len()).unwrap_or(1);
                    let layout = (mv[3].is_multiple_of(3) && rank == 2).then(|| vec![1, 0]);
                    let out = self.new_block("c");
                    self.try_inst(Inst::CacheRead { out, block: b, tensor, at: l, layout });
                }
            }
            _ => {
                // compute_at a producer of this block under one of its loops.
                let producer = blocks
                    .iter()
                    .copied()
                    .find(|p| *p != bid && self.nest.block_reads(bid, self.nest.block(*p).lhs.tensor));
                if let Some(p) = producer {
                    let pb = self.block_rv(p);
                    self.try_inst(Inst::ComputeAt { block: pb, loop_: l });
                }
            }
        }
    }
}

fn check_case(wi: usize, moves: &[[u32; 4]]) -> Result<(), TestCaseError> {
    let caps = VectorCaps::scalable(128, 128, 2048);
    let w: Workload = load(WORKLOADS[wi]).expect("loads");
    let nest = Nest::from_workload(&w, caps.clone());
    let mut g = Gen::new(nest.clone());
    for m in moves {
        g.step(m);
    }
    g.nest.verify().map_err(|e| TestCaseError::fail(e.to_string()))?;
    // The text of the trace replays to the same nest.
    let text = g.trace.to_string();
    let mut replay = nest.clone();
    parse_trace(&text)
        .expect("trace text parses")
        .apply(&mut replay)
        .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
    prop_assert_eq!(replay.to_string(), g.nest.to_string());
    // Lowered and interpreted at several vscales, it computes the reference.
    let prog = lower(&g.nest, "k").map_err(|e| TestCaseError::fail(format!("{e}\n{text}\n{}", g.nest)))?;
    let args = make_args(&w, 3);
    let reference = evaluate(&w, &args).expect("reference");
    for vs in [1u32, 2, 4, 16] {
        let mut a: Vec<ArgValue> = args.iter().cloned().map(ArgValue::Tensor).collect();
        a.extend(w.scalars.iter().map(|s| ArgValue::Scalar(s.value)));
        run(&prog, &mut a, &InterpOptions::new(vs).with_max_steps(50_000_000))
            .map_err(|e| TestCaseError::fail(format!("vscale {vs}: {e}\n{text}\n{}", g.nest)))?;
        for (k, id) in w.arg_tensors().iter().enumerate() {
            if w.tensor(*id).role != Role::Output {
                continue;
            }
            let c = compare(&w.tensor(*id).name, a[k].as_tensor().expect("tensor"), &reference[id.index()]);
            prop_assert!(c.passed(), "vscale {}: {:?}\n{}\n{}", vs, c, text, g.nest);
        }
    }
    // That the generator really applies vectorize, caches, compute_at, ... is
    // checked once over many cases by `generator_covers_the_interesting_primitives`.
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]
    #[test]
    fn random_schedules_compute_the_reference(
        wi in 0usize..WORKLOADS.len(),
        moves in prop::collection::vec(any::<[u32; 4]>(), 1..24),
    ) {
        check_case(wi, &moves)?;
    }
}

/// The generator reaches vectorized loops with every tail strategy, caches
/// and compute_at (so the property above is not vacuous).
#[test]
fn generator_covers_the_interesting_primitives() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut seen: HashMap<&'static str, usize> = HashMap::new();
    for case in 0..300 {
        let wi = case % WORKLOADS.len();
        let w = load(WORKLOADS[wi]).expect("loads");
        let nest = Nest::from_workload(&w, VectorCaps::scalable(128, 128, 2048));
        let mut g = Gen::new(nest);
        for _ in 0..10 {
            let m: [u32; 4] = [rng.gen(), rng.gen(), rng.gen(), rng.gen()];
            g.step(&m);
        }
        for i in &g.trace.insts {
            let key = match i {
                Inst::Vectorize { tail: Choice::Lit(Tail::Predicate), .. } => "vectorize-predicate",
                Inst::Vectorize { tail: Choice::Lit(Tail::Peel), .. } => "vectorize-peel",
                Inst::Vectorize { tail: Choice::Lit(Tail::Scalar), .. } => "vectorize-scalar",
                other => other.name(),
            };
            *seen.entry(key).or_default() += 1;
        }
    }
    for k in [
        "vectorize-predicate",
        "vectorize-peel",
        "vectorize-scalar",
        "split",
        "reorder",
        "unroll",
        "fuse",
        "cache_write",
        "cache_read",
        "decompose_reduction",
        "compute_at",
    ] {
        assert!(seen.get(k).copied().unwrap_or(0) > 0, "generator never produced {k}: {seen:?}");
    }
}

//! Features of a candidate for the cost model, read off its lowered vector program at one vscale.
//!
//! A static walk of the program: scalar index registers whose values are
//! known (constants, vscale, arithmetic on known values, loop variables at
//! their first iteration) give each loop's trip count, and every operation
//! is counted once per execution of its enclosing loops. No memory is
//! touched and nothing runs, so a feature vector costs a small fraction of
//! the lowering that precedes it.

use scaletune_codegen::vprog::{BinOp, BufKind, Const, LoopHint, Op, Program, Reg, Stmt};
use scaletune_space::ir::Nest;
use scaletune_space::kind::VectorKind;
use scaletune_space::workload::Workload;

/// Names of the features, in vector order (for reports and debugging).
pub const NAMES: [&str; 34] = [
    "kind_neon",
    "kind_sve_vls",
    "kind_sve_vla",
    "kind_sme",
    "kind_rvv",
    "kind_x86",
    "kind_scalar",
    "lanes_f32_per_vscale",
    "log2_vl",
    "log2_vector_ops",
    "log2_float_mul",
    "log2_vector_arith",
    "log2_scalar_arith",
    "log2_vector_loads",
    "log2_masked_loads",
    "log2_gathers",
    "log2_vector_stores",
    "log2_masked_stores",
    "log2_scatters",
    "log2_scalar_mem",
    "log2_reductions",
    "log2_lane_masks",
    "log2_loop_iterations",
    "log2_innermost_trip",
    "max_depth",
    "unroll_product",
    "log2_parallel_extent",
    "log2_bytes_moved",
    "arith_per_byte",
    "log2_local_bytes",
    "log2_inner_working_set",
    "hot_accumulators",
    "hot_loads_per_mul",
    "log2_hot_trip",
];

/// Number of features.
pub const N_FEATURES: usize = NAMES.len();

/// Dynamic counts gathered by the walk.
#[derive(Default)]
struct Counts {
    vector_ops: f64,
    fma: f64,
    vector_arith: f64,
    scalar_arith: f64,
    vector_loads: f64,
    masked_loads: f64,
    gathers: f64,
    vector_stores: f64,
    masked_stores: f64,
    scatters: f64,
    scalar_mem: f64,
    reductions: f64,
    lane_masks: f64,
    loop_iterations: f64,
    bytes_moved: f64,
    flops: f64,
    innermost_trip: f64,
    max_depth: usize,
    unroll_product: f64,
    parallel_extent: f64,
    /// Bytes touched by one iteration of the innermost loops (the register/L1 working set).
    inner_working_set: f64,
    /// The innermost loop that executes the most float multiplies (the micro-kernel).
    hot: Hot,
}

/// The register-level shape of the innermost loop doing most of the arithmetic.
#[derive(Default)]
struct Hot {
    /// Float multiplies (FMAs once contracted) this loop executes in all.
    muls: f64,
    /// Vector registers carried from one iteration to the next (accumulators
    /// of a register tile): read in the body before being assigned in it.
    accumulators: f64,
    /// Loads (vector, scalar and gathers) per float multiply in one iteration.
    loads_per_mul: f64,
    /// The loop's trip count.
    trip: f64,
}

/// Counts the register-level shape of one innermost loop body (see [`Hot`]).
/// `marks` has an entry per register, all zero, and is left so.
fn hot_shape(prog: &Program, body: &[Stmt], marks: &mut [u8]) -> (f64, f64, f64) {
    const READ: u8 = 1;
    const CARRIED: u8 = 2;
    let (mut muls, mut loads, mut carried) = (0.0, 0.0, 0usize);
    let mut touched: Vec<Reg> = Vec::new();
    let mut mark = |r: Reg, bit: u8, marks: &mut [u8]| {
        let m = &mut marks[r.0 as usize];
        if *m == 0 {
            touched.push(r);
        }
        *m |= bit;
    };
    for s in body {
        match s {
            Stmt::Assign { dst, op } => {
                match op {
                    Op::Bin(BinOp::Mul, ..) | Op::Fma(..) if prog.ty(*dst).elem.is_float() => muls += 1.0,
                    Op::Load { .. } | Op::VLoad { .. } | Op::Gather { .. } => loads += 1.0,
                    _ => {}
                }
                for r in op.operands() {
                    mark(r, READ, marks);
                }
                let m = marks[dst.0 as usize];
                if prog.ty(*dst).is_vector() && m & READ != 0 && m & CARRIED == 0 {
                    carried += 1;
                    mark(*dst, CARRIED, marks);
                }
            }
            other => {
                for r in other.operands() {
                    mark(r, READ, marks);
                }
            }
        }
    }
    for r in touched {
        marks[r.0 as usize] = 0;
    }
    (muls, carried as f64, loads)
}

struct Walk<'a> {
    prog: &'a Program,
    vscale: u32,
    /// The value of each register, by number, where it is known.
    known: Vec<Option<i64>>,
    /// Scratch marks for [`hot_shape`], by register number.
    marks: Vec<u8>,
    c: Counts,
}

impl Walk<'_> {
    fn lanes(&self, r: Reg) -> f64 {
        self.prog.ty(r).lanes.map_or(1.0, |l| l.count(self.vscale) as f64)
    }

    fn elem_bytes(&self, r: Reg) -> f64 {
        f64::from(self.prog.ty(r).elem.bits().max(8)) / 8.0
    }

    fn assign(&mut self, dst: Reg, op: &Op, w: f64) {
        let vector = self.prog.ty(dst).is_vector();
        if vector {
            self.c.vector_ops += w;
        }
        let value = match op {
            Op::Const(Const::Int(x, _)) => Some(*x),
            Op::VScale => Some(i64::from(self.vscale)),
            Op::Copy(a) => self.known[a.0 as usize],
            Op::Bin(b, x, y) => {
                let (x, y) = (self.known[x.0 as usize], self.known[y.0 as usize]);
                let arith = if vector { &mut self.c.vector_arith } else { &mut self.c.scalar_arith };
                *arith += w;
                if self.prog.ty(dst).elem.is_float() {
                    self.c.flops += w * self.lanes(dst);
                    if *b == BinOp::Mul {
                        // A multiply feeding an add is one FMA once LLVM contracts it.
                        self.c.fma += w;
                    }
                }
                match (x, y) {
                    (Some(x), Some(y)) => fold(*b, x, y),
                    _ => None,
                }
            }
            Op::Fma(..) => {
                self.c.fma += w;
                self.c.flops += 2.0 * w * self.lanes(dst);
                None
            }
            Op::Un(..) | Op::Cmp(..) | Op::Select(..) | Op::Cast(..) => {
                let arith = if vector { &mut self.c.vector_arith } else { &mut self.c.scalar_arith };
                *arith += w;
                None
            }
            Op::Load { .. } => {
                self.c.scalar_mem += w;
                self.c.bytes_moved += w * self.elem_bytes(dst);
                None
            }
            Op::VLoad { mask, .. } => {
                self.c.vector_loads += w;
                if mask.is_some() {
                    self.c.masked_loads += w;
                }
                self.c.bytes_moved += w * self.lanes(dst) * self.elem_bytes(dst);
                None
            }
            Op::Gather { .. } => {
                self.c.gathers += w;
                self.c.bytes_moved += w * self.lanes(dst) * self.elem_bytes(dst);
                None
            }
            Op::Reduce(..) => {
                self.c.reductions += w;
                None
            }
            Op::ActiveLaneMask { .. } => {
                self.c.lane_masks += w;
                None
            }
            Op::Interleave(..) | Op::ZaReadVertical { .. } => {
                self.c.vector_ops += w;
                None
            }
            Op::Bitcast(..) | Op::Splat(..) | Op::Step(..) | Op::Extract(..) | Op::Const(_) => None,
        };
        self.known[dst.0 as usize] = value;
    }

    /// Walks `body` executed `w` times at loop depth `depth`; returns the
    /// bytes one execution of the body touches.
    fn body(&mut self, body: &[Stmt], w: f64, depth: usize) -> f64 {
        let mut bytes = 0.0;
        self.c.max_depth = self.c.max_depth.max(depth);
        for s in body {
            match s {
                Stmt::Assign { dst, op } => {
                    if matches!(op, Op::Load { .. } | Op::VLoad { .. } | Op::Gather { .. }) {
                        bytes += self.lanes(*dst) * self.elem_bytes(*dst);
                    }
                    self.assign(*dst, op, w);
                }
                Stmt::Store { value, .. } => {
                    self.c.scalar_mem += w;
                    self.c.bytes_moved += w * self.elem_bytes(*value);
                    bytes += self.elem_bytes(*value);
                }
                Stmt::VStore { value, mask, .. } => {
                    self.c.vector_stores += w;
                    if mask.is_some() {
                        self.c.masked_stores += w;
                    }
                    let b = self.lanes(*value) * self.elem_bytes(*value);
                    self.c.bytes_moved += w * b;
                    bytes += b;
                }
                Stmt::Scatter { value, .. } => {
                    self.c.scatters += w;
                    let b = self.lanes(*value) * self.elem_bytes(*value);
                    self.c.bytes_moved += w * b;
                    bytes += b;
                }
                Stmt::Loop { var, start, end, body, hint } => {
                    let (s, e) = (self.known[start.0 as usize], self.known[end.0 as usize]);
                    // Unknown bounds (an edge tile's min, say): count one
                    // iteration, the loop's least.
                    let trip = match (s, e) {
                        (Some(s), Some(e)) => (e - s).max(0) as f64,
                        _ => 1.0,
                    };
                    self.known[var.0 as usize] = s;
                    match hint {
                        LoopHint::Unroll(k) => self.c.unroll_product *= f64::from(*k).max(1.0),
                        LoopHint::Parallel => self.c.parallel_extent = self.c.parallel_extent.max(trip),
                        LoopHint::None => {}
                    }
                    self.c.loop_iterations += w * trip;
                    let inner = self.body(body, w * trip, depth + 1);
                    if !body.iter().any(|s| matches!(s, Stmt::Loop { .. })) {
                        let (muls, accumulators, loads) = hot_shape(self.prog, body, &mut self.marks);
                        if muls > 0.0 && w * trip * muls > self.c.hot.muls {
                            self.c.hot = Hot { muls: w * trip * muls, accumulators, loads_per_mul: loads / muls, trip };
                        }
                        self.c.innermost_trip = self.c.innermost_trip.max(trip);
                        self.c.inner_working_set = self.c.inner_working_set.max(inner * trip);
                    }
                    bytes += inner * trip;
                }
                // SME: a ZA slice moves one streaming vector; an outer
                // product is one vector FMA per row of the tile.
                Stmt::ZaLoad { mask, .. } | Stmt::ZaStore { mask, .. } => {
                    let load = matches!(s, Stmt::ZaLoad { .. });
                    if load {
                        self.c.vector_loads += w;
                    } else {
                        self.c.vector_stores += w;
                    }
                    if mask.is_some() {
                        if load {
                            self.c.masked_loads += w;
                        } else {
                            self.c.masked_stores += w;
                        }
                    }
                    let b = 4.0 * f64::from(self.vscale) * 4.0;
                    self.c.bytes_moved += w * b;
                    bytes += b;
                }
                Stmt::Mopa { a, .. } => {
                    let rows = self.lanes(*a);
                    self.c.vector_ops += w * rows;
                    self.c.fma += w * rows;
                    self.c.flops += w * 2.0 * rows * rows;
                }
                Stmt::ZaZero { .. } => self.c.vector_ops += w,
                Stmt::If { then_body, else_body, .. } => {
                    // Both arms at full weight: an upper bound on the work.
                    bytes += self.body(then_body, w, depth).max(self.body(else_body, w, depth));
                }
            }
        }
        bytes
    }
}

fn fold(b: BinOp, x: i64, y: i64) -> Option<i64> {
    Some(match b {
        BinOp::Add => x.checked_add(y)?,
        BinOp::Sub => x.checked_sub(y)?,
        BinOp::Mul => x.checked_mul(y)?,
        BinOp::Min => x.min(y),
        BinOp::Max => x.max(y),
        BinOp::FloorDiv if y != 0 => x.div_euclid(y),
        BinOp::FloorMod if y != 0 => x.rem_euclid(y),
        _ => return None,
    })
}

fn log2p(x: f64) -> f32 {
    (x.max(0.0) + 1.0).log2() as f32
}

/// The feature vector of a scheduled nest's vector program at vector length `vl_bits`.
pub fn features(w: &Workload, nest: &Nest, prog: &Program, vl_bits: u32) -> Vec<f32> {
    let caps = &nest.caps;
    let vscale = if caps.scalable {
        caps.fixed_vscale().unwrap_or_else(|| (vl_bits / caps.granule_bits.max(1)).max(1))
    } else {
        1
    };
    let mut walk = Walk {
        prog,
        vscale,
        known: vec![None; prog.regs.len()],
        marks: vec![0; prog.regs.len()],
        c: Counts { unroll_product: 1.0, ..Counts::default() },
    };
    walk.body(&prog.body, 1.0, 0);
    let c = walk.c;
    let kind = nest.kinds.iter().find(|(_, k)| k == caps).map(|(kind, _)| *kind);
    let one_hot = |pred: fn(VectorKind) -> bool| f32::from(u8::from(kind.is_some_and(pred)));
    let local_bytes: f64 = prog
        .buffers
        .iter()
        .filter(|b| matches!(b.kind, BufKind::Local { .. }))
        .map(|b| b.len_at(vscale) as f64 * f64::from(b.dtype.bits()) / 8.0)
        .sum();
    let flops = w.flops().unwrap_or(c.flops);
    let f = vec![
        one_hot(|k| k == VectorKind::Neon),
        one_hot(|k| k == VectorKind::Sve),
        one_hot(|k| k == VectorKind::SveVla),
        // Streaming SME code (ZA outer products) is a kind of its own.
        one_hot(|k| k == VectorKind::Sme),
        one_hot(|k| matches!(k, VectorKind::Rvv | VectorKind::RvvVla | VectorKind::RvvFixed(_))),
        one_hot(|k| matches!(k, VectorKind::Avx512 | VectorKind::Avx2 | VectorKind::Sse)),
        f32::from(u8::from(c.vector_ops == 0.0)),
        caps.lanes_per_granule(32) as f32 * if caps.scalable { 1.0 } else { 0.0 },
        (f64::from(vl_bits.max(1))).log2() as f32,
        log2p(c.vector_ops),
        log2p(c.fma),
        log2p(c.vector_arith),
        log2p(c.scalar_arith),
        log2p(c.vector_loads),
        log2p(c.masked_loads),
        log2p(c.gathers),
        log2p(c.vector_stores),
        log2p(c.masked_stores),
        log2p(c.scatters),
        log2p(c.scalar_mem),
        log2p(c.reductions),
        log2p(c.lane_masks),
        log2p(c.loop_iterations),
        log2p(c.innermost_trip),
        c.max_depth as f32,
        c.unroll_product.min(4096.0) as f32,
        log2p(c.parallel_extent),
        log2p(c.bytes_moved),
        (flops / c.bytes_moved.max(1.0)) as f32,
        log2p(local_bytes),
        log2p(c.inner_working_set),
        c.hot.accumulators as f32,
        c.hot.loads_per_mul as f32,
        log2p(c.hot.trip),
    ];
    debug_assert_eq!(f.len(), N_FEATURES);
    f
}

/// Positions in [`NAMES`] of the counts [`estimated_instructions`] adds up.
const INSTRUCTION_COUNTS: [usize; 6] = [
    9,  // log2_vector_ops: every vector value made (arithmetic, loads, gathers, FMAs)
    12, // log2_scalar_arith
    16, // log2_vector_stores
    18, // log2_scatters
    19, // log2_scalar_mem
    22, // log2_loop_iterations: a compare and a branch each
];

/// The instructions a candidate executes, estimated from its feature vector
/// (a [`features`] vector, or the mean of several): vector values made,
/// scalar arithmetic and memory operations, vector stores and scatters, and
/// one per loop iteration. A prior for candidates that nothing has been
/// measured to train a model on yet: fewer is faster more often than not
/// (Kendall's tau 0.53 with native time over 597 random samples of matmul
/// 512^3 on an AVX-512 Zen 5; the fewest 16 by it held the fastest of the
/// 597), as register blocking, wide vectors and hoisted loads all cut it.
/// It knows nothing of caches, latency or the cost of each instruction.
pub fn estimated_instructions(features: &[f32]) -> f64 {
    INSTRUCTION_COUNTS.iter().map(|&i| f64::from(features[i]).exp2() - 1.0).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustc_hash::FxHashMap as HashMap;
    use scaletune_codegen::pipeline::{initial_nest, lower_nest};
    use scaletune_codegen::target::Target;
    use scaletune_space::trace::parse_trace;
    use scaletune_space::workload::WorkloadRef;

    fn feature_map(schedule: &str, vl: u32) -> HashMap<&'static str, f32> {
        feature_map_on("sve-generic", schedule, vl)
    }

    fn feature_map_on(target: &str, schedule: &str, vl: u32) -> HashMap<&'static str, f32> {
        let w = WorkloadRef::parse("matmul:M=64,N=60,K=32").expect("ref").load().expect("loads");
        let target = Target::load(target).expect("target");
        let mut nest = initial_nest(&w, &target);
        parse_trace(schedule).expect("parses").apply(&mut nest).expect("applies");
        let prog = lower_nest(&w, &nest).expect("lowers");
        NAMES.iter().copied().zip(features(&w, &nest, &prog, vl)).collect()
    }

    const VLA: &str = "use_vectors(\"sve-vla\")\nb = get_block(\"C\")\ni, j, k = get_loops(b)\nj0, j1 = split(j, factors=[None, 4*vscale])\nreorder(i, j0, k, j1)\nvectorize(j1, tail=\"predicate\")\n";

    #[test]
    fn counts_follow_the_vector_length() {
        let at128 = feature_map(VLA, 128);
        let at512 = feature_map(VLA, 512);
        assert_eq!(at128["kind_sve_vla"], 1.0);
        assert_eq!(at128["lanes_f32_per_vscale"], 4.0);
        // Four times the lanes: a quarter of the vector multiplies (the
        // 60 columns in 15 vectors of 4 lanes at VL 128, 4 of 16 at VL 512).
        assert_eq!(at128["log2_float_mul"], log2p(64.0 * 15.0 * 32.0));
        assert_eq!(at512["log2_float_mul"], log2p(64.0 * 4.0 * 32.0));
        assert!(at128["log2_masked_loads"] > 0.0, "predicated tail: masked loads");
        assert_eq!(at128["log2_gathers"], 0.0);
    }

    #[test]
    fn the_hot_loop_shows_the_register_tile() {
        // 4 rows unrolled x one vector of columns, the reduction outside them:
        // four accumulators, each k step loading 4 A scalars and 4 B vectors
        // (one per row, as lowered) for 4 multiplies.
        let tiled = "use_vectors(\"sve-vla\")\nb = get_block(\"C\")\ni, j, k = get_loops(b)\n\
                     i0, i1 = split(i, factors=[None, 4])\nj0, j1 = split(j, factors=[None, 4*vscale])\n\
                     reorder(i0, j0, k, i1, j1)\nunroll(i1)\nvectorize(j1, tail=\"predicate\")\n";
        let f = feature_map(tiled, 128);
        assert_eq!(f["hot_accumulators"], 4.0);
        assert_eq!(f["log2_hot_trip"], log2p(32.0));
        // One row at a time, the reduction innermost: one accumulator.
        let g = feature_map(VLA, 128);
        assert_eq!(g["hot_accumulators"], 1.0);
        assert!(
            f["hot_loads_per_mul"] <= g["hot_loads_per_mul"],
            "{} vs {}",
            f["hot_loads_per_mul"],
            g["hot_loads_per_mul"]
        );
    }

    #[test]
    fn hot_shapes_do_not_see_each_others_registers() {
        use scaletune_codegen::vprog::{Builder, Elem, Lanes, Ty};
        // The first body reads `x` and carries nothing; the second assigns
        // `x` before reading it (not carried) and carries `acc`.
        let mut b = Builder::new("k");
        let vec = Ty::vector(Elem::Data(scaletune_space::DType::F32), Lanes::fixed(4));
        let (acc, x) = (b.new_reg(vec), b.new_reg(vec));
        b.begin_body();
        let m = b.emit(Op::Bin(BinOp::Mul, x, x));
        b.emit(Op::Copy(m));
        let first = b.end_body();
        b.begin_body();
        b.assign(x, Op::Copy(acc));
        let m = b.emit(Op::Bin(BinOp::Mul, x, x));
        b.assign(acc, Op::Copy(m));
        let second = b.end_body();
        let prog = b.finish();
        let mut marks = vec![0; prog.regs.len()];
        assert_eq!(hot_shape(&prog, &first, &mut marks), (1.0, 0.0, 0.0));
        assert!(marks.iter().all(|m| *m == 0), "the marks are cleared for the next body");
        assert_eq!(hot_shape(&prog, &second, &mut marks), (1.0, 1.0, 0.0), "`acc` is carried, `x` is not");
    }

    #[test]
    fn sme_kernels_have_a_kind_of_their_own() {
        let sme = "use_vectors(\"sme\")\nb = get_block(\"C\")\ni, j, k = get_loops(b)\n\
                   i0, i1 = split(i, factors=[None, 4*vscale])\nj0, j1 = split(j, factors=[None, 4*vscale])\n\
                   reorder(i0, j0, k, i1, j1)\na = cache_read(b, \"A\", at=i0, layout=[1, 0])\n\
                   tensorize(k, intrin=\"za_fmopa\")\n";
        let f = feature_map_on("sme", sme, 512);
        assert_eq!((f["kind_sme"], f["kind_sve_vla"]), (1.0, 0.0));
        let g = feature_map_on("sme", VLA, 512);
        assert_eq!((g["kind_sme"], g["kind_sve_vla"]), (0.0, 1.0));
    }

    #[test]
    fn the_unscheduled_nest_is_scalar() {
        let f = feature_map("", 128);
        assert_eq!(f["kind_scalar"], 1.0);
        assert_eq!(f["log2_vector_ops"], 0.0);
        assert_eq!(f["log2_loop_iterations"], log2p(64.0 + 64.0 * 60.0 + 64.0 * 60.0 * 32.0));
    }

    #[test]
    fn the_instruction_estimate_adds_up_the_counts_it_names() {
        let names: Vec<&str> = INSTRUCTION_COUNTS.iter().map(|&i| NAMES[i]).collect();
        assert_eq!(
            names,
            [
                "log2_vector_ops",
                "log2_scalar_arith",
                "log2_vector_stores",
                "log2_scatters",
                "log2_scalar_mem",
                "log2_loop_iterations"
            ]
        );
        let f: Vec<f32> =
            (0..N_FEATURES).map(|i| if INSTRUCTION_COUNTS.contains(&i) { log2p(7.0) } else { 9.0 }).collect();
        assert!((estimated_instructions(&f) - 42.0).abs() < 1e-3, "{}", estimated_instructions(&f));
    }

    #[test]
    fn register_tiles_and_wider_vectors_estimate_fewer_instructions() {
        let estimate = |schedule: &str, vl: u32| {
            let f = feature_map(schedule, vl);
            estimated_instructions(&NAMES.iter().map(|n| f[n]).collect::<Vec<f32>>())
        };
        let tiled = "use_vectors(\"sve-vla\")\nb = get_block(\"C\")\ni, j, k = get_loops(b)\n\
                     i0, i1 = split(i, factors=[None, 4])\nj0, j1 = split(j, factors=[None, 4*vscale])\n\
                     reorder(i0, j0, k, i1, j1)\nunroll(i1)\nvectorize(j1, tail=\"predicate\")\n";
        let (scalar, one_row, four_rows) = (estimate("", 128), estimate(VLA, 128), estimate(tiled, 128));
        assert!(scalar > one_row && one_row > four_rows, "{scalar} {one_row} {four_rows}");
        assert!(estimate(tiled, 512) < four_rows, "{} vs {four_rows}", estimate(tiled, 512));
    }
}

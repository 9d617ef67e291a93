//! Multi-level tiling (`SSRSRS`) for reductions with data reuse (matmul,
//! batch matmul, convolutions), with optional write and read reuse.

use super::analysis::{axis_loops, gathers_when_vectorized, has_reuse, load_axes, store_axis, AxisLoop};
use super::common::{
    has_register_divisor, perfect_tile, register_tile, vector_tile, vectorize, vectorize_unless_exact,
};
use super::{micro_kernel, BlockRule, State};
use crate::ir::Node;
use crate::trace::{BlockRv, Inst, LoopRv, TExpr};
use crate::workload::AxisKind;

/// Spatial axes get four levels and reduction axes two, ordered by the
/// structure string (`S` spatial level, `R` reduction level; default
/// `SSRSRS`). The innermost spatial level of the axis along which the
/// result is contiguous is vectorized (tiled with `sample_mixed_tile` on
/// scalable targets, `sample_perfect_tile` on fixed ones unless no multiple
/// of a vector register divides the extent); the innermost levels of the
/// other spatial axes form an unrolled register tile (perfect tilings, and
/// in a sibling branch any factor up to 8, the only option where the extent
/// has no divisor from 4 to 8). When
/// that vector axis would gather from an operand, a second branch vectorizes
/// the reduction axis that is contiguous in it instead. Branches also add
/// write reuse (`cache_write` of the tile) and read reuse (packing the
/// operand read along the vector axis).
pub struct MultiLevelTiling {
    /// The level structure.
    pub structure: &'static str,
}

impl Default for MultiLevelTiling {
    fn default() -> Self {
        MultiLevelTiling { structure: "SSRSRS" }
    }
}

/// Innermost factor of non-vector spatial axes (the unrolled register tile).
const MAX_REGISTER_TILE: i64 = 8;
/// Innermost factor of reduction axes.
const MAX_REDUCTION_INNER: i64 = 256;

enum VectorAxis {
    Spatial(usize),
    Reduction(usize),
}

impl MultiLevelTiling {
    fn levels(&self, kind: char) -> usize {
        self.structure.chars().filter(|c| *c == kind).count()
    }

    fn tile(&self, st: &State, block: &str, choice: &VectorAxis, any_register: bool) -> Option<State> {
        let mut s = st.clone();
        let (brv, bid) = s.get_block(block)?;
        let own = s.own_loops(brv, bid);
        let axes = axis_loops(&s.probe, bid, &own);
        let (ns, nr) = (self.levels('S'), self.levels('R'));
        let mut tiles: Vec<(AxisLoop, Vec<LoopRv>)> = Vec::new();
        for a in &axes {
            let is_vector = matches!(
                (choice, a.kind),
                (VectorAxis::Spatial(k), AxisKind::Spatial) | (VectorAxis::Reduction(k), AxisKind::Reduce) if *k == a.iter
            );
            let n = if a.kind == AxisKind::Spatial { ns } else { nr };
            let levels = if is_vector {
                vector_tile(&mut s, a, n)?
            } else if a.kind == AxisKind::Spatial {
                register_tile(&mut s, a, n, MAX_REGISTER_TILE, any_register)?
            } else {
                perfect_tile(&mut s, a, n, MAX_REDUCTION_INNER)?
            };
            tiles.push((a.clone(), levels));
        }
        // Order by the structure string; the vector level goes last.
        let mut next = vec![0usize; tiles.len()];
        let mut order: Vec<LoopRv> = Vec::new();
        let mut vector_level: Option<LoopRv> = None;
        let mut unrolled: Vec<LoopRv> = Vec::new();
        let last_s = self.structure.rfind('S');
        for (pos, c) in self.structure.chars().enumerate() {
            let kind = if c == 'S' { AxisKind::Spatial } else { AxisKind::Reduce };
            for (t, (a, levels)) in tiles.iter().enumerate() {
                if a.kind != kind {
                    continue;
                }
                let level = levels[next[t]];
                next[t] += 1;
                let innermost = next[t] == levels.len();
                let vector = innermost
                    && matches!(
                        (choice, a.kind),
                        (VectorAxis::Spatial(k), AxisKind::Spatial) | (VectorAxis::Reduction(k), AxisKind::Reduce) if *k == a.iter
                    );
                if vector {
                    vector_level = Some(level);
                } else {
                    if innermost && a.kind == AxisKind::Spatial && Some(pos) == last_s {
                        unrolled.push(level);
                    }
                    order.push(level);
                }
            }
        }
        let vector_level = vector_level?;
        order.push(vector_level);
        if !s.push(Inst::Reorder { loops: order }) {
            return None;
        }
        for u in unrolled {
            let _ = s.push(Inst::Unroll { loop_: u });
        }
        // Where vectors cannot hold the block's f16 values (RVV without
        // Zvfh, see `Nest::vectorize`), the tiles stay and their vector
        // level runs as a plain loop.
        if !s.probe.caps.half_vectors && s.probe.block_has_f16(bid) {
            return Some(s);
        }
        if !vectorize(&mut s, vector_level) {
            return None;
        }
        Some(s)
    }

    /// The block and its loop at level `pos` after tiling (for reuse).
    fn level_loop(s: &mut State, block: &str, pos: usize) -> Option<(BlockRv, LoopRv)> {
        let (brv, bid) = s.get_block(block)?;
        let loops = s.get_loops(brv, bid);
        Some((brv, loops.get(pos)?.0))
    }
}

impl BlockRule for MultiLevelTiling {
    fn name(&self) -> &'static str {
        "multi-level-tiling"
    }

    fn apply(&self, st: &State, block: &str) -> Option<Vec<State>> {
        let nest = &st.probe;
        let b = nest.find_block(block)?;
        let blk = nest.block(b);
        let n_spatial = blk.iters.iter().filter(|i| i.kind == AxisKind::Spatial).count();
        let n_reduce = blk.iters.len() - n_spatial;
        if n_reduce == 0 || n_spatial < 2 || !has_reuse(nest, b) {
            return None;
        }
        let own = nest.ancestors(Node::Block(b));
        if own.len() != blk.iters.len() {
            return None;
        }
        let vaxis = store_axis(nest, b)?;
        let mut choices = vec![VectorAxis::Spatial(vaxis)];
        if gathers_when_vectorized(nest, b, vaxis) {
            if let Some(r) = load_axes(nest, b).into_iter().find(|k| blk.iters[*k].kind == AxisKind::Reduce) {
                choices.push(VectorAxis::Reduction(r));
            }
        }
        // Position of the last loop of the second spatial level and of the first reduction level.
        let s1_last = 2 * n_spatial - 1;
        let r0_last = 2 * n_spatial + n_reduce - 1;
        let mut out = Vec::new();
        let mut tilings = Vec::new();
        for choice in &choices {
            // Register tiles of any size beside those dividing the extent,
            // where the extent has such divisors (otherwise any size is the
            // only option, see `register_tile`).
            let both = register_axes(nest, b, choice).any(|e| has_register_divisor(e, MAX_REGISTER_TILE));
            for any_register in if both { vec![false, true] } else { vec![false] } {
                let Some(tiled) = self.tile(st, block, choice, any_register) else { continue };
                let mut tiled = tiled.mark(self.name());
                if choices.len() > 1 {
                    let how = match choice {
                        VectorAxis::Spatial(_) => "gather",
                        VectorAxis::Reduction(_) => "contiguous reduction axis",
                    };
                    tiled = tiled.choose(block, "gather strategy", how);
                }
                if both {
                    tiled = tiled.choose(block, "register tile", if any_register { "any size" } else { "divisor" });
                }
                tilings.push((choice, tiled));
            }
        }
        for (choice, tiled) in tilings {
            for write_reuse in [false, true] {
                for read_reuse in [false, true] {
                    let mut s = tiled.clone();
                    s = s.choose(block, "write reuse", if write_reuse { "cache_write" } else { "none" });
                    // Read reuse is an option only where an operand can be packed.
                    if let VectorAxis::Spatial(k) = choice {
                        if packed_operand(&s, block, *k).is_some() {
                            s = s.choose(block, "read reuse", if read_reuse { "pack" } else { "none" });
                        }
                    }
                    if write_reuse {
                        let Some((brv, at)) = Self::level_loop(&mut s, block, s1_last) else { continue };
                        let wb = s.new_block("wb");
                        if !s.push(Inst::CacheWrite { out: wb, block: brv, at }) {
                            continue;
                        }
                        vectorize_copy(&mut s, wb, false);
                        s = s.mark("write-reuse");
                    }
                    if read_reuse {
                        let VectorAxis::Spatial(k) = choice else { continue };
                        let Some(tensor) = packed_operand(&s, block, *k) else { continue };
                        let Some((brv, at)) = Self::level_loop(&mut s, block, r0_last) else { continue };
                        let cp = s.new_block("pack");
                        if !s.push(Inst::CacheRead { out: cp, block: brv, tensor, at, layout: None }) {
                            continue;
                        }
                        vectorize_copy(&mut s, cp, false);
                        s = s.mark("read-reuse");
                    }
                    out.push(s);
                }
            }
        }
        // GotoBLAS-order micro-kernels, where the columns need no gather.
        if !gathers_when_vectorized(nest, b, vaxis) {
            out.extend(micro_kernel::branches(st, block, vaxis));
        }
        (!out.is_empty()).then_some(out)
    }
}

/// Constant extents of the spatial axes of block `b` that form register
/// tiles (all but the vector axis).
fn register_axes<'a>(
    nest: &'a crate::ir::Nest,
    b: crate::ids::BlockId,
    choice: &'a VectorAxis,
) -> impl Iterator<Item = i64> + 'a {
    nest.block(b).iters.iter().enumerate().filter_map(move |(k, it)| {
        let vector = matches!(choice, VectorAxis::Spatial(v) if *v == k);
        (it.kind == AxisKind::Spatial && !vector).then(|| nest.var(it.var).extent.as_int()).flatten()
    })
}

/// The input read contiguously along the vector axis (the operand to pack).
pub(super) fn packed_operand(s: &State, block: &str, k: usize) -> Option<String> {
    let nest = &s.probe;
    let b = nest.find_block(block)?;
    let blk = nest.block(b);
    let v = blk.iters[k].var;
    blk.rhs.reads().iter().find_map(|a| match a.indices.last() {
        Some(crate::expr::Expr::Var(x)) if *x == v && nest.tensor(a.tensor).scope == crate::ir::Scope::Global => {
            Some(nest.tensor(a.tensor).name.clone())
        }
        _ => None,
    })
}

/// Vectorizes the innermost loop of a copy block (write-back or packing):
/// split by one vector register (`L*vscale` lanes), with a sampled tail
/// strategy like every other vector loop, unless `constant_extent` says
/// that the loop's extent does not depend on decisions and it is a whole
/// number of registers on a fixed-length target (no tail to handle).
pub(super) fn vectorize_copy(s: &mut State, block_rv: BlockRv, constant_extent: bool) {
    let Some(b) = s.env.block(block_rv) else { return };
    let own = s.own_loops(block_rv, b);
    let Some((inner, lid)) = own.last().copied() else { return };
    let bits = s.probe.widest_bits(lid);
    let lanes = crate::sample::lanes_per_granule(&s.probe.caps, bits);
    let exact = constant_extent
        && match (s.probe.caps.fixed_vscale(), s.probe.extent(lid).as_int()) {
            (Some(v), Some(e)) => e % (lanes * i64::from(v)) == 0,
            _ => false,
        };
    let mut t = s.clone();
    let outs = t.new_loops("l", 2);
    let factor = TExpr::Mul(Box::new(TExpr::Int(lanes)), Box::new(TExpr::VScale));
    if t.push(Inst::Split { outs: outs.clone(), loop_: inner, factors: vec![None, Some(factor)] })
        && vectorize_unless_exact(&mut t, outs[1], exact)
    {
        *s = t;
    }
}

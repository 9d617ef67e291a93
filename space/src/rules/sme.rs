//! SME tensorization: an outer-product block as a micro-kernel of `fmopa`
//! into ZA tiles, on the `sme` vector kind; the row operand transposed by a
//! pack or (a second branch) read through ZA vertical slices.

use super::analysis::{axis_loops, outer_product_axes};
use super::{BlockRule, State};
use crate::ir::Scope;
use crate::schedule::{ZA_FMOPA, ZA_FMOPA_VREAD};
use crate::trace::{Inst, LoopRv};
use crate::workload::AxisKind;

/// Largest number of ZA tiles along rows or columns of a micro-kernel.
const MAX_TILES_PER_AXIS: i64 = 2;

/// On SME streaming code, for a block `C[.., i, j] (+)= X * Y`: `i` and `j`
/// split by a sampled 1 or 2 ZA tiles each (`sample_scalable_tile`, an
/// innermost factor of `m*4*vscale` f32 lanes: 1, 2 or 4 tiles per
/// micro-kernel), the reduction loops (several for a convolution: filter
/// rows, filter columns, channels) moved between the tile loops and the
/// micro-kernel, each operand that is not contiguous along its axis packed
/// with that axis last (`cache_read` at the row-tile loop: `A` transposed;
/// for `conv2d_nhwc` the input patch a row tile reads, channels before
/// columns, im2col style: each filter tap reads a shifted window of it), and
/// the micro-kernel tensorized. When the row operand needs the transposing
/// pack and the micro-kernel is f32 with one reduction loop, a second
/// branch reads it through ZA instead (`za_fmopa_vread`, one tile of rows
/// so that a spare tile holds the loaded rows); measurement decides.
pub struct SmeTensorize;

impl BlockRule for SmeTensorize {
    fn name(&self) -> &'static str {
        "sme-tensorize"
    }

    fn apply(&self, st: &State, block: &str) -> Option<Vec<State>> {
        if !st.probe.caps.has_sme {
            return None;
        }
        let b = st.probe.find_block(block)?;
        outer_product_axes(&st.probe, b)?;
        let packed = self.branch(st, block, false)?.mark(self.name());
        let key = "SME row operand";
        Some(match self.branch(st, block, true) {
            Some(via_za) => vec![
                packed.choose(block, key, "transposed by the pack"),
                via_za.mark(self.name()).choose(block, key, "read through ZA vertical slices"),
            ],
            None => vec![packed],
        })
    }
}

impl SmeTensorize {
    /// The tensorized state: every operand that is not contiguous along its
    /// axis packed, or (`via_za`) the row operand read through ZA instead
    /// (one tile of rows, `za_fmopa_vread`); `None` if `tensorize` refuses it.
    fn branch(&self, st: &State, block: &str, via_za: bool) -> Option<State> {
        let b = st.probe.find_block(block)?;
        let (rows, cols) = outer_product_axes(&st.probe, b)?;
        let mut s = st.clone();
        let (brv, bid) = s.get_block(block)?;
        let own = s.own_loops(brv, bid);
        if own.len() != s.probe.block(bid).iters.len() {
            return None;
        }
        let axes = axis_loops(&s.probe, bid, &own);
        let axis = |k: usize| axes.iter().find(|a| a.iter == k).map(|a| a.rv);
        let (row_rv, col_rv) = (axis(rows)?, axis(cols)?);
        let red: Vec<LoopRv> = axes.iter().filter(|a| a.kind == AxisKind::Reduce).map(|a| a.rv).collect();
        let [r0, r1] = tiles(&mut s, row_rv, if via_za { 1 } else { MAX_TILES_PER_AXIS })?;
        let [c0, c1] = tiles(&mut s, col_rv, MAX_TILES_PER_AXIS)?;
        let mut order = vec![r0, c0];
        order.extend(red.iter().copied());
        order.extend([r1, c1]);
        if !s.push(Inst::Reorder { loops: order }) {
            return None;
        }
        // Pack the operands that are not contiguous along their axis.
        let (row_var, col_var) = (s.probe.loop_(s.env.loop_(r1)?).var, s.probe.loop_(s.env.loop_(c1)?).var);
        let to_pack = operands_to_pack(&s, bid, row_var, col_var);
        if via_za && !to_pack.iter().any(|(var, ..)| *var == row_var) {
            return None;
        }
        for (var, name, dim, rank) in to_pack {
            if via_za && var == row_var {
                continue;
            }
            let mut layout: Vec<usize> = (0..rank).filter(|d| *d != dim).collect();
            layout.push(dim);
            let cp = s.new_block("pack");
            let at = if var == row_var { r0 } else { c0 };
            if !s.push(Inst::CacheRead { out: cp, block: brv, tensor: name, at, layout: Some(layout) }) {
                return None;
            }
        }
        let kernel = red.first().copied().unwrap_or(r1);
        let intrin = if via_za { ZA_FMOPA_VREAD } else { ZA_FMOPA };
        if !s.push(Inst::Tensorize { loop_: kernel, intrin: intrin.to_string() }) {
            return None;
        }
        Some(s)
    }
}

/// `l0, l1 = split(l, ...)` with the inner factor 1 to `max` ZA tiles.
fn tiles(s: &mut State, l: LoopRv, max: i64) -> Option<[LoopRv; 2]> {
    let outs = s.new_values("t", 2);
    let sample =
        Inst::SampleScalableTile { outs: outs.clone(), loop_: l, n: 2, max_innermost_vscale: max, decision: None };
    if !s.push(sample) {
        return None;
    }
    let loops = s.split_by(l, &outs)?;
    Some([loops[0], loops[1]])
}

/// The global operands read with a non-unit stride along the row or column
/// loop: (that loop's variable, tensor name, the dimension it indexes, the tensor's rank).
fn operands_to_pack(
    s: &State,
    b: crate::ids::BlockId,
    row_var: crate::ids::VarId,
    col_var: crate::ids::VarId,
) -> Vec<(crate::ids::VarId, String, usize, usize)> {
    let nest = &s.probe;
    let blk = nest.block(b);
    let mut out = Vec::new();
    for a in blk.rhs.reads() {
        if nest.tensor(a.tensor).scope != Scope::Global {
            continue;
        }
        let bound: Vec<_> = a.indices.iter().map(|e| nest.bind(b, e)).collect();
        for var in [row_var, col_var] {
            let Some(dim) = bound.iter().position(|e| e.uses_var(var)) else { continue };
            let flat = nest.flat_index(a.tensor, &bound);
            let unit = crate::expr::linear_in(&flat, var, nest).and_then(|l| l.const_coeff()) == Some(1);
            if !unit {
                let t = nest.tensor(a.tensor);
                out.push((var, t.name.clone(), dim, t.shape.len()));
            }
        }
    }
    out
}

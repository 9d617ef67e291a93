//! Reductions without reuse (`sum_cos`, `row_sum`, softmax's max and sum):
//! vectorize the reduction axis (vector accumulator, one horizontal
//! reduction at the end) or keep it outside the vector loop.

use super::analysis::{axis_loops, load_axes, single_iteration_axis, store_axis, AxisLoop};
use super::common::{vector_tile, vectorize};
use super::{BlockRule, State};
use crate::trace::{Inst, LoopRv};
use crate::workload::AxisKind;

/// Branches: (a) vectorize the reduction axis read contiguously; (b) if the
/// result has a contiguous axis, vectorize it with the reduction loops
/// between its tile levels. Both decompose the initialization explicitly.
pub struct Reduction;

impl Reduction {
    fn branch(st: &State, block: &str, vector_iter: usize) -> Option<State> {
        let mut s = st.clone();
        let (brv, bid) = s.get_block(block)?;
        let own = s.own_loops(brv, bid);
        let axes = axis_loops(&s.probe, bid, &own);
        let v: AxisLoop = axes.iter().find(|a| a.iter == vector_iter)?.clone();
        // Three levels: outer, a register block of vectors, the vector.
        let levels = vector_tile(&mut s, &v, 3)?;
        // Order: other spatial axes, outer vector level, reductions, register
        // block, vector level (a vectorized reduction axis keeps its register
        // block among the reductions, outside the vector level).
        let mut order: Vec<LoopRv> = Vec::new();
        for a in axes.iter().filter(|a| a.kind == AxisKind::Spatial && a.iter != vector_iter) {
            order.push(a.rv);
        }
        if v.kind == AxisKind::Spatial {
            order.push(levels[0]);
        }
        let mut first_reduction: Option<LoopRv> = None;
        for a in axes.iter().filter(|a| a.kind == AxisKind::Reduce) {
            let l = if a.iter == vector_iter { levels[0] } else { a.rv };
            first_reduction.get_or_insert(l);
            order.push(l);
        }
        order.push(levels[1]);
        order.push(levels[2]);
        if order.len() > 1 && !s.push(Inst::Reorder { loops: order }) {
            return None;
        }
        if let Some(r) = first_reduction {
            if s.probe.block(bid).init {
                let init = s.new_block("init");
                if !s.push(Inst::DecomposeReduction { out: init, block: brv, loop_: r }) {
                    return None;
                }
            }
        }
        // The register block is not marked `unroll`: a sampled scalable block
        // could not be; the unroll-depth rule's hint unrolls fixed ones.
        vectorize(&mut s, levels[2]).then_some(s)
    }
}

impl BlockRule for Reduction {
    fn name(&self) -> &'static str {
        "reduction"
    }

    fn apply(&self, st: &State, block: &str) -> Option<Vec<State>> {
        let nest = &st.probe;
        let b = nest.find_block(block)?;
        let blk = nest.block(b);
        if !blk.iters.iter().any(|i| i.kind == AxisKind::Reduce) {
            return None;
        }
        let mut out = Vec::new();
        let reduce_axis = load_axes(nest, b)
            .into_iter()
            .find(|k| blk.iters[*k].kind == AxisKind::Reduce)
            .or_else(|| blk.iters.iter().rposition(|i| i.kind == AxisKind::Reduce));
        let key = "reduction";
        if let Some(r) = reduce_axis {
            out.extend(Reduction::branch(st, block, r).map(|s| s.choose(block, key, "vector accumulator")));
        }
        // Not along an axis of one iteration (a producer computed at its
        // consumer's loop over that axis): one lane.
        if let Some(sx) = store_axis(nest, b).filter(|k| !single_iteration_axis(nest, b, *k)) {
            out.extend(Reduction::branch(st, block, sx).map(|s| s.choose(block, key, "spatial vectors")));
        }
        (!out.is_empty()).then(|| out.into_iter().map(|s| s.mark(self.name())).collect())
    }
}

//! Vector accumulators for reductions over a vectorized loop.
//!
//! A block whose written element does not depend on the vector loop `V`
//! reduces over `V`'s lanes. Its partial results stay in a vector register
//! from the outermost loop `H` such that every loop from `H` down to the
//! block has a single child and does not index the written element; after
//! `H` the register is reduced horizontally and combined with memory once.

use rustc_hash::FxHashMap as HashMap;
use scaletune_space::ids::{BlockId, LoopId};
use scaletune_space::ir::{LoopKind, Nest, Node};
use scaletune_space::workload::UpdateOp;

/// Where each reduction's vector accumulator lives.
#[derive(Clone, Debug, Default)]
pub(crate) struct AccPlan {
    /// Loop `H` -> blocks whose accumulators start before it and finish after it.
    pub at: HashMap<LoopId, Vec<BlockId>>,
    /// Block -> its vector loop.
    pub vloop: HashMap<BlockId, LoopId>,
}

impl AccPlan {
    pub fn build(nest: &Nest) -> AccPlan {
        let mut plan = AccPlan::default();
        for b in nest.all_blocks() {
            let blk = nest.block(b);
            if blk.op == UpdateOp::Assign || blk.init {
                continue;
            }
            let anc = nest.ancestors(Node::Block(b));
            let Some(v) = anc.iter().copied().find(|l| matches!(nest.loop_(*l).kind, LoopKind::Vectorize(_))) else {
                continue;
            };
            let bound: Vec<_> = blk.lhs.indices.iter().map(|e| nest.bind(b, e)).collect();
            let flat = nest.flat_index(blk.lhs.tensor, &bound);
            let vvar = nest.loop_(v).var;
            if flat.uses_var(vvar) {
                continue;
            }
            // Climb from the block while loops have one child and do not index the element.
            let mut h: Option<LoopId> = None;
            let mut child = Node::Block(b);
            for l in anc.iter().rev() {
                let lp = nest.loop_(*l);
                if lp.body != vec![child] || flat.uses_var(lp.var) || lp.kind == LoopKind::Parallel {
                    break;
                }
                h = Some(*l);
                child = Node::Loop(*l);
            }
            // The accumulator must cover the vector loop.
            let Some(h) = h else { continue };
            let pos_h = anc.iter().position(|x| *x == h);
            let pos_v = anc.iter().position(|x| *x == v);
            if pos_h > pos_v {
                continue;
            }
            plan.at.entry(h).or_default().push(b);
            plan.vloop.insert(b, v);
        }
        plan
    }
}

//! Parallelization of the outer spatial loops.

use super::{State, WorkloadRule};
use crate::ir::{LoopKind, Node, Scope};
use crate::trace::{Inst, LoopRv};

/// For each top-level loop nest, fuses the outermost loops that are spatial
/// for every block under them (a chain of serial loops with constant
/// extents), splits the fused loop with `sample_perfect_tile` and marks the
/// outer part `parallel`: its sampled extent is the number of chunks the
/// iterations are divided into (1 runs serially).
pub struct Parallel;

impl WorkloadRule for Parallel {
    fn name(&self) -> &'static str {
        "parallel"
    }

    fn apply(&self, st: &State) -> Option<Vec<State>> {
        let mut s = st.clone();
        let mut changed = false;
        for root in st.probe.root.clone() {
            let Node::Loop(_) = root else { continue };
            let blocks = s.probe.blocks_in(root);
            let Some(first) = blocks.first().copied() else { continue };
            // The chain of eligible outer loops (by position in the first block's loops).
            let name = s.probe.block(first).name.clone();
            let Some((brv, bid)) = s.get_block(&name) else { continue };
            let loops = s.get_loops(brv, bid);
            let variable = s.scalable_derived_loops();
            let mut chain: Vec<LoopRv> = Vec::new();
            // An upper bound of the fused extent under any decisions: the
            // product of the spatial iteration extents of the first block.
            let total: i64 = {
                let blk = s.probe.block(bid);
                blk.iters
                    .iter()
                    .filter(|it| it.kind == crate::workload::AxisKind::Spatial)
                    .map(|it| s.probe.var(it.var).extent.as_int().unwrap_or(1))
                    .fold(1i64, |a, e| a.saturating_mul(e))
            };
            for (i, (rv, l)) in loops.iter().enumerate() {
                let lp = s.probe.loop_(*l);
                let var = lp.var;
                let eligible = lp.kind == LoopKind::Serial
                    && !s.probe.loops_in(Node::Loop(*l)).iter().any(|x| s.probe.is_tensorized(*x))
                    && !variable.contains(l)
                    && s.probe.extent(*l).as_int().is_some_and(|e| e >= 1)
                    && s.probe.blocks_in(Node::Loop(*l)).iter().all(|b| {
                        // No reduction across iterations, and no two iterations
                        // writing the same element of a global tensor.
                        let blk = s.probe.block(*b);
                        let local = s.probe.tensor(blk.lhs.tensor).scope == Scope::Local;
                        let writes_own = blk.lhs.indices.iter().any(|e| s.probe.bind(*b, e).uses_var(var));
                        !s.probe.reduction_loop_vars(*b).contains(&var) && (local || writes_own)
                    });
                let single = i + 1 >= loops.len() || lp.body == vec![Node::Loop(loops[i + 1].1)];
                if !eligible {
                    break;
                }
                chain.push(*rv);
                if !single {
                    break;
                }
            }
            if chain.is_empty() {
                continue;
            }
            let mut t = s.clone();
            let fused = if chain.len() > 1 {
                let f = t.new_loop("l");
                if !t.push(Inst::Fuse { out: f, loops: chain }) {
                    continue;
                }
                f
            } else {
                chain[0]
            };
            let factors = t.new_values("t", 2);
            let tile = Inst::SamplePerfectTile {
                outs: factors.clone(),
                loop_: fused,
                n: 2,
                max_innermost_factor: total,
                decision: None,
            };
            let ok = t.push(tile)
                && t.split_by(fused, &factors).is_some_and(|parts| t.push(Inst::Parallel { loop_: parts[0] }));
            if ok {
                s = t;
                changed = true;
            }
        }
        changed.then(|| vec![s.mark(self.name())])
    }
}

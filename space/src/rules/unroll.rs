//! Unroll depth: how many inner iterations lowering may unroll.

use super::{State, WorkloadRule};
use crate::ir::Node;
use crate::trace::{Cand, Inst, LoopOrBlock, SArg};

/// Candidate unroll depths (`unroll_max_step`): 0 disables auto-unrolling.
pub const UNROLL_DEPTHS: [i64; 4] = [0, 4, 16, 64];

/// Samples an unroll depth for every top-level loop nest.
pub struct UnrollDepth;

impl WorkloadRule for UnrollDepth {
    fn name(&self) -> &'static str {
        "unroll-depth"
    }

    fn apply(&self, st: &State) -> Option<Vec<State>> {
        let mut s = st.clone();
        let roots: Vec<Node> = s.probe.root.clone();
        let mut changed = false;
        for n in roots {
            let Node::Loop(_) = n else { continue };
            let Some(b) = s.probe.blocks_in(n).first().copied() else { continue };
            let name = s.probe.block(b).name.clone();
            let Some((brv, bid)) = s.get_block(&name) else { continue };
            let loops = s.get_loops(brv, bid);
            let Some((outer, _)) = loops.first().copied() else { continue };
            let p = 1.0 / UNROLL_DEPTHS.len() as f64;
            let candidates = UNROLL_DEPTHS.iter().map(|d| Cand::Int(*d)).collect();
            let ok = s.sample_categorical("unroll", candidates, vec![p; UNROLL_DEPTHS.len()]).is_some_and(|u| {
                let key = "unroll_max_step".to_string();
                s.push(Inst::Annotate { target: LoopOrBlock::Loop(outer), key, value: SArg::Rv(u) })
            });
            changed |= ok;
        }
        changed.then(|| vec![s.mark(self.name())])
    }
}

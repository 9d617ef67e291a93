//! Fusion of statements: compute producers inside their consumer's outer loop.

use super::{State, WorkloadRule};
use crate::ir::Node;
use crate::trace::Inst;

/// For workloads with several statements, branches between leaving the
/// statements as separate loop nests and computing every producer under the
/// outermost loop of the last statement (e.g. one row of softmax at a time).
pub struct Fusion;

impl WorkloadRule for Fusion {
    fn name(&self) -> &'static str {
        "fuse-statements"
    }

    fn apply(&self, st: &State) -> Option<Vec<State>> {
        let blocks = st.probe.all_blocks();
        if blocks.len() < 2 {
            return None;
        }
        let mut s = st.clone();
        let last = *blocks.last()?;
        let last_name = s.probe.block(last).name.clone();
        let (brv, bid) = s.get_block(&last_name)?;
        let loops = s.get_loops(brv, bid);
        let (outer, outer_id) = loops.first().copied()?;
        let mut fused = 0;
        for p in blocks[..blocks.len() - 1].iter().rev() {
            let name = s.probe.block(*p).name.clone();
            let mut t = s.clone();
            let Some((prv, _)) = t.get_block(&name) else { continue };
            if t.push(Inst::ComputeAt { block: prv, loop_: outer }) {
                s = t;
                fused += 1;
            }
        }
        if fused == 0 || s.probe.blocks_in(Node::Loop(outer_id)).len() < 2 {
            return None;
        }
        let key = "statement fusion";
        Some(vec![
            st.clone().choose("*", key, "separate"),
            s.mark(self.name()).choose("*", key, "at the consumer's outer loop"),
        ])
    }
}

//! Vector axis and gather strategy for statements without reductions.

use super::analysis::{axis_loops, gathers_when_vectorized, load_axes, single_iteration_axis, store_axis};
use super::common::{perfect_tile, vector_tile, vectorize};
use super::{BlockRule, State};
use crate::trace::{Inst, LoopRv};
use crate::workload::AxisKind;

/// Largest unrolled factor of a gathered axis when the contiguous axis is vectorized.
const MAX_GATHER_UNROLL: i64 = 8;

/// One branch per candidate vector axis: the axis along which the result is
/// stored contiguously, and each axis along which an operand is read
/// contiguously. Vectorizing an axis that indexes an operand indirectly or
/// in an outer dimension uses hardware gathers; vectorizing the contiguous
/// inner axis instead keeps row loads contiguous and unrolls the gathered
/// axis (the gather RFC's "paged read").
pub struct VectorizeAxis;

impl VectorizeAxis {
    fn branch(st: &State, block: &str, k: usize) -> Option<State> {
        let mut s = st.clone();
        let (brv, bid) = s.get_block(block)?;
        let own = s.own_loops(brv, bid);
        let axes = axis_loops(&s.probe, bid, &own);
        let a = axes.iter().find(|x| x.iter == k)?.clone();
        // Three levels: outer, a register block of vectors, the vector.
        let levels = vector_tile(&mut s, &a, 3)?;
        // With a contiguous vector axis, unroll one gathered axis around it.
        let gathered = if gathers_when_vectorized(&s.probe, bid, k) {
            None
        } else {
            // (Not an axis of one iteration, which has nothing to unroll.)
            axes.iter().find(|x| {
                x.iter != k
                    && x.kind == AxisKind::Spatial
                    && x.extent != Some(1)
                    && gathers_when_vectorized(&s.probe, bid, x.iter)
            })
        };
        let glevels = match gathered {
            Some(g) => Some((g.iter, perfect_tile(&mut s, g, 2, MAX_GATHER_UNROLL)?)),
            None => None,
        };
        let mut order: Vec<LoopRv> = axes
            .iter()
            .filter(|x| x.iter != k && glevels.as_ref().map(|(gi, _)| *gi) != Some(x.iter))
            .map(|x| x.rv)
            .collect();
        if let Some((_, g)) = &glevels {
            order.push(g[0]);
        }
        order.push(levels[0]);
        order.push(levels[1]);
        if let Some((_, g)) = &glevels {
            order.push(g[1]);
        }
        order.push(levels[2]);
        if order.len() > 1 && !s.push(Inst::Reorder { loops: order }) {
            return None;
        }
        if let Some((_, g)) = &glevels {
            if !s.push(Inst::Unroll { loop_: g[1] }) {
                return None;
            }
        }
        // The register block is not marked `unroll`: a sampled scalable block
        // could not be; the unroll-depth rule's hint unrolls fixed ones.
        vectorize(&mut s, levels[2]).then_some(s)
    }
}

impl BlockRule for VectorizeAxis {
    fn name(&self) -> &'static str {
        "vectorize-axis"
    }

    fn apply(&self, st: &State, block: &str) -> Option<Vec<State>> {
        let nest = &st.probe;
        let b = nest.find_block(block)?;
        let blk = nest.block(b);
        if blk.iters.iter().any(|i| i.kind == AxisKind::Reduce) {
            return None;
        }
        let mut candidates: Vec<usize> = store_axis(nest, b).into_iter().collect();
        for k in load_axes(nest, b) {
            if !candidates.contains(&k) && blk.iters[k].kind == AxisKind::Spatial {
                candidates.push(k);
            }
        }
        // Labels name the workload's options, whichever remain here, so
        // that a trace differs from its sibling in the options it changed
        // (what the structural mutator's distance counts).
        let any_gather = candidates.iter().any(|k| gathers_when_vectorized(nest, b, *k));
        let several = candidates.len() > 1;
        // A producer computed at its consumer's row loop has one iteration
        // of that axis left: a vector along it would hold one lane.
        candidates.retain(|k| !single_iteration_axis(nest, b, *k));
        let out: Vec<State> = candidates
            .into_iter()
            .filter_map(|k| {
                let mut s = VectorizeAxis::branch(st, block, k)?.mark(self.name());
                if several {
                    s = s.choose(block, "vector axis", &axis_label(&nest.var(blk.iters[k].var).name));
                }
                if any_gather {
                    let how = if gathers_when_vectorized(nest, b, k) { "gather" } else { "contiguous rows" };
                    s = s.choose(block, "gather strategy", how);
                }
                Some(s)
            })
            .collect();
        (!out.is_empty()).then_some(out)
    }
}

/// The workload's name of an axis from its iteration variable's name
/// (`vj` or `vj_3` for axis `j`).
fn axis_label(var_name: &str) -> String {
    let base = var_name.strip_prefix('v').unwrap_or(var_name);
    match base.rsplit_once('_') {
        Some((head, tail)) if !head.is_empty() && tail.chars().all(|c| c.is_ascii_digit()) => head.to_string(),
        _ => base.to_string(),
    }
}

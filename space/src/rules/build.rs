//! Building a design-space trace instruction by instruction: typed random
//! variables with fresh names (`l3`, `t7`: a prefix and the number of
//! random variables made so far), and the lookups and splits rules share.

use super::State;
use crate::ids::{BlockId, LoopId};
use crate::ir::Node;
use crate::trace::{BlockRv, Cand, Inst, LoopRv, TExpr, ValueRv};

impl State {
    fn fresh(&self, prefix: &str) -> String {
        format!("{prefix}{}", self.trace.names.len() + 1)
    }

    /// A new random variable holding a loop, named `prefix` and a number.
    pub fn new_loop(&mut self, prefix: &str) -> LoopRv {
        let name = self.fresh(prefix);
        self.trace.new_loop(name)
    }

    /// `n` new loop random variables.
    pub fn new_loops(&mut self, prefix: &str, n: usize) -> Vec<LoopRv> {
        (0..n).map(|_| self.new_loop(prefix)).collect()
    }

    /// A new random variable holding a block, named `prefix` and a number.
    pub fn new_block(&mut self, prefix: &str) -> BlockRv {
        let name = self.fresh(prefix);
        self.trace.new_block(name)
    }

    /// A new random variable holding a sampled value, named `prefix` and a number.
    pub fn new_value(&mut self, prefix: &str) -> ValueRv {
        let name = self.fresh(prefix);
        self.trace.new_value(name)
    }

    /// `n` new sampled-value random variables.
    pub fn new_values(&mut self, prefix: &str, n: usize) -> Vec<ValueRv> {
        (0..n).map(|_| self.new_value(prefix)).collect()
    }

    /// `b = get_block("NAME")`; returns the random variable and the block.
    pub fn get_block(&mut self, name: &str) -> Option<(BlockRv, BlockId)> {
        let out = self.new_block("b");
        if !self.push(Inst::GetBlock { out, name: name.to_string() }) {
            return None;
        }
        Some((out, self.env.block(out)?))
    }

    /// `l1, l2, ... = get_loops(b)`; returns random variables and loops, outermost first.
    pub fn get_loops(&mut self, b: BlockRv, block: BlockId) -> Vec<(LoopRv, LoopId)> {
        let loops = self.probe.ancestors(Node::Block(block));
        if loops.is_empty() {
            return Vec::new();
        }
        let outs = self.new_loops("l", loops.len());
        if !self.push(Inst::GetLoops { outs: outs.clone(), block: b }) {
            return Vec::new();
        }
        outs.into_iter().zip(loops).collect()
    }

    /// The loops the block does not share with other blocks (innermost part
    /// of its ancestors), with their random variables.
    pub fn own_loops(&mut self, b: BlockRv, block: BlockId) -> Vec<(LoopRv, LoopId)> {
        let all = self.get_loops(b, block);
        all.into_iter().filter(|(_, l)| self.probe.blocks_in(Node::Loop(*l)).as_slice() == [block]).collect()
    }

    /// `l1, l2, ... = split(l, factors=[t1, t2, ...])` by sampled factors;
    /// returns the new loops, outermost first.
    pub fn split_by(&mut self, l: LoopRv, factors: &[ValueRv]) -> Option<Vec<LoopRv>> {
        let outs = self.new_loops("l", factors.len());
        let factors = factors.iter().map(|f| Some(TExpr::Rv(*f))).collect();
        self.push(Inst::Split { outs: outs.clone(), loop_: l, factors }).then_some(outs)
    }

    /// `x = sample_categorical(candidates=[...], probs=[...])`, undecided.
    pub fn sample_categorical(&mut self, prefix: &str, candidates: Vec<Cand>, probs: Vec<f64>) -> Option<ValueRv> {
        let out = self.new_value(prefix);
        self.push(Inst::SampleCategorical { out, candidates, probs, decision: None }).then_some(out)
    }

    /// Loops whose extent may depend on sampled decisions through vscale
    /// (created by splits whose factors come from a scalable tiling or a
    /// mixed tiling that may be scalable, or are literal multiples of
    /// vscale, which the sampled vector kind decides).
    pub fn scalable_derived_loops(&self) -> Vec<LoopId> {
        let mut scalable_rvs: Vec<ValueRv> = Vec::new();
        let mut out = Vec::new();
        for inst in &self.trace.insts {
            match inst {
                Inst::SampleMixedTile { outs, max_innermost_vscale, .. } if *max_innermost_vscale > 0 => {
                    scalable_rvs.extend(outs.iter().copied())
                }
                Inst::SampleScalableTile { outs, .. } => scalable_rvs.extend(outs.iter().copied()),
                Inst::Split { outs, factors, .. } => {
                    let derived = factors.iter().flatten().any(|f| match f {
                        TExpr::Rv(n) => scalable_rvs.contains(n),
                        literal => uses_vscale(literal),
                    });
                    if derived {
                        out.extend(outs.iter().filter_map(|o| self.env.loop_(*o)));
                    }
                }
                _ => {}
            }
        }
        out
    }
}

/// True if a split factor mentions `vscale`.
fn uses_vscale(e: &TExpr) -> bool {
    match e {
        TExpr::VScale => true,
        TExpr::Int(_) | TExpr::Rv(_) => false,
        TExpr::Add(a, b) | TExpr::Sub(a, b) | TExpr::Mul(a, b) => uses_vscale(a) || uses_vscale(b),
    }
}

//! `reorder`: permute loops along a chain.

use super::{ErrorKind, Result, ScheduleError};
use crate::ids::LoopId;
use crate::ir::{LoopKind, Nest, Node};

const PRIM: &str = "reorder";

impl Nest {
    /// Puts the given loops in the given order. They must lie on one path of
    /// directly nested loops (each loop between the outermost and innermost
    /// of them has exactly one child); loops on that path that are not listed
    /// keep their positions.
    pub fn reorder(&mut self, order: &[LoopId]) -> Result<()> {
        for l in order {
            self.check_loop(PRIM, *l)?;
        }
        for (i, l) in order.iter().enumerate() {
            if order[..i].contains(l) {
                return Err(ScheduleError::new(
                    PRIM,
                    ErrorKind::Structure,
                    format!("loop `{}` is listed twice", self.loop_name(*l)),
                ));
            }
        }
        if order.len() < 2 {
            return Ok(());
        }
        // The innermost listed loop must have every other listed loop as an ancestor.
        let depth = |l: LoopId| self.depth(Node::Loop(l));
        let inner = *order.iter().max_by_key(|l| depth(**l)).expect("non-empty");
        let anc = self.ancestors(Node::Loop(inner));
        for l in order {
            if *l != inner && !anc.contains(l) {
                return Err(ScheduleError::new(
                    PRIM,
                    ErrorKind::Structure,
                    format!(
                        "loops `{}` and `{}` are not nested in one another",
                        self.loop_name(*l),
                        self.loop_name(inner)
                    ),
                ));
            }
        }
        let outer = *order.iter().min_by_key(|l| depth(**l)).expect("non-empty");
        let start = anc.iter().position(|x| *x == outer).expect("outer is an ancestor");
        let mut path: Vec<LoopId> = anc[start..].to_vec();
        path.push(inner);
        for w in path.windows(2) {
            if self.loop_(w[0]).body != vec![Node::Loop(w[1])] {
                return Err(ScheduleError::new(
                    PRIM,
                    ErrorKind::Structure,
                    format!(
                        "loop `{}` has other statements besides `{}`, so the loops do not form a single chain",
                        self.loop_name(w[0]),
                        self.loop_name(w[1])
                    ),
                ));
            }
        }
        self.check_reorder_dependences(inner, order)?;
        let mut trial = self.clone();
        trial.rebuild_chain(&path, inner, order);
        for l in trial.loops_in(Node::Loop(trial.chain_top(&path))) {
            if let LoopKind::Vectorize(tail) = trial.loop_(l).kind {
                if let Some(why) = trial.tail_problem(l, tail) {
                    return Err(ScheduleError::new(
                        PRIM,
                        ErrorKind::LoopKind,
                        format!(
                            "after the reorder, vectorized loop `{}` could not keep its tail: {why}",
                            trial.loop_name(l)
                        ),
                    ));
                }
            }
        }
        *self = trial;
        Ok(())
    }

    /// The outermost loop of a rebuilt chain (the first of `path` in the new order).
    fn chain_top(&self, path: &[LoopId]) -> LoopId {
        let depth = |l: LoopId| self.depth(Node::Loop(l));
        *path.iter().min_by_key(|l| depth(**l)).expect("non-empty path")
    }

    fn rebuild_chain(&mut self, path: &[LoopId], inner: LoopId, order: &[LoopId]) {
        let mut it = order.iter();
        let new_path: Vec<LoopId> =
            path.iter().map(|l| if order.contains(l) { *it.next().expect("same count") } else { *l }).collect();
        let body = std::mem::take(&mut self.loop_mut(inner).body);
        let parent = self.loop_(path[0]).parent;
        let pos = self.position(Node::Loop(path[0]));
        self.siblings_mut(parent)[pos] = Node::Loop(new_path[0]);
        self.loop_mut(new_path[0]).parent = parent;
        for w in new_path.windows(2) {
            self.loop_mut(w[0]).body = vec![Node::Loop(w[1])];
            self.loop_mut(w[1]).parent = Some(w[0]);
        }
        let last = *new_path.last().expect("non-empty");
        for c in &body {
            self.set_parent(*c, Some(last));
        }
        self.loop_mut(last).body = body;
    }

    /// A reduction computed under the chain and consumed by another block
    /// under the chain must keep its reduction loops where they are.
    fn check_reorder_dependences(&self, inner: LoopId, order: &[LoopId]) -> Result<()> {
        let blocks = self.blocks_in(Node::Loop(inner));
        if blocks.len() < 2 {
            return Ok(());
        }
        for w in &blocks {
            let red = self.reduction_loop_vars(*w);
            let moved = order.iter().find(|l| red.contains(&self.loop_(**l).var));
            let Some(moved) = moved else { continue };
            let t = self.block(*w).lhs.tensor;
            if let Some(r) = blocks.iter().find(|r| *r != w && self.block_reads(**r, t)) {
                return Err(ScheduleError::new(
                    PRIM,
                    ErrorKind::Dependence,
                    format!(
                        "moving loop `{}` would break the dependence of block `{}` on the reduction in block `{}`",
                        self.loop_name(*moved),
                        self.block(*r).name,
                        self.block(*w).name
                    ),
                ));
            }
        }
        Ok(())
    }
}

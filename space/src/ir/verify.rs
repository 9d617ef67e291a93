//! Structural verifier of a loop nest (parent links, variable scoping, id validity): `compute_at` runs it on its trial nest before committing, and the schedule tests after each primitive.

use super::*;
use std::collections::HashSet;
use thiserror::Error;

/// A broken structural invariant of a loop nest.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("invalid loop nest: {0}")]
pub struct VerifyError(pub String);

impl Nest {
    /// Checks parent links, variable scoping and id validity.
    pub fn verify(&self) -> Result<(), VerifyError> {
        let mut seen = HashSet::new();
        let mut scope: Vec<VarId> = Vec::new();
        for n in &self.root {
            self.verify_node(*n, None, &mut scope, &mut seen)?;
        }
        Ok(())
    }

    fn verify_node(
        &self,
        n: Node,
        parent: Option<LoopId>,
        scope: &mut Vec<VarId>,
        seen: &mut HashSet<Node>,
    ) -> Result<(), VerifyError> {
        let err = |m: String| Err(VerifyError(m));
        if !seen.insert(n) {
            return err(format!("{n:?} appears twice"));
        }
        if self.parent_of(n) != parent {
            return err(format!("{n:?} has a wrong parent link"));
        }
        match n {
            Node::Loop(l) => {
                let lp = self.loops.get(l.index()).ok_or_else(|| VerifyError(format!("{l} does not exist")))?;
                if !lp.alive {
                    return err(format!("dead loop {l} is reachable"));
                }
                let ext = self.extent(l);
                if !ext.vars().is_empty() {
                    return err(format!("extent of loop {} depends on variables", self.loop_name(l)));
                }
                if lp.body.is_empty() {
                    return err(format!("loop {} has an empty body", self.loop_name(l)));
                }
                scope.push(lp.var);
                for c in &lp.body {
                    self.verify_node(*c, Some(l), scope, seen)?;
                }
                scope.pop();
            }
            Node::Block(b) => {
                let blk = self.blocks.get(b.index()).ok_or_else(|| VerifyError(format!("{b} does not exist")))?;
                if !blk.alive {
                    return err(format!("dead block {} is reachable", blk.name));
                }
                if blk.iters.len() != blk.bindings.len() {
                    return err(format!(
                        "block {} has {} iterators but {} bindings",
                        blk.name,
                        blk.iters.len(),
                        blk.bindings.len()
                    ));
                }
                let in_scope = |e: &Expr| e.vars().into_iter().all(|v| scope.contains(&v));
                for e in &blk.bindings {
                    if !in_scope(e) {
                        return err(format!(
                            "binding {} of block {} uses a variable not in scope",
                            self.expr_text(e),
                            blk.name
                        ));
                    }
                }
                for p in &blk.predicates {
                    if !in_scope(&p.lhs) || !in_scope(&p.rhs) {
                        return err(format!("predicate of block {} uses a variable not in scope", blk.name));
                    }
                }
                let iter_vars: Vec<VarId> = blk.iters.iter().map(|i| i.var).collect();
                let ok = |e: &Expr| e.vars().into_iter().all(|v| scope.contains(&v) || iter_vars.contains(&v));
                let n_tensors = self.tensors.len();
                let tensor_ok = |t: TensorId| t.index() < n_tensors;
                if !tensor_ok(blk.lhs.tensor) || blk.lhs.indices.len() != self.tensor(blk.lhs.tensor).shape.len() {
                    return err(format!("block {} writes a tensor with the wrong rank", blk.name));
                }
                if !blk.lhs.indices.iter().all(ok) {
                    return err(format!("left-hand side of block {} uses a variable not in scope", blk.name));
                }
                for a in blk.rhs.reads() {
                    if !tensor_ok(a.tensor) || a.indices.len() != self.tensor(a.tensor).shape.len() {
                        return err(format!("block {} reads a tensor with the wrong rank", blk.name));
                    }
                    if !a.indices.iter().all(ok) {
                        return err(format!("block {} reads with a variable not in scope", blk.name));
                    }
                }
            }
        }
        Ok(())
    }
}

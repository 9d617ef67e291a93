//! `cache_write` and `cache_read`: local tiles of outputs and inputs.

use super::region::Span;
use super::{ErrorKind, Result, ScheduleError};
use crate::expr::{prove_lt, simplify, Expr};
use crate::ids::{BlockId, LoopId, TensorId};
use crate::ir::{Block, IterVar, LoopKind, Nest, Node, Pred, Scope, TensorInfo};
use crate::workload::{Access, AxisKind, Role, UpdateOp, Value};
use std::collections::BTreeMap;

impl Nest {
    /// Loops strictly inside `at` that enclose block `b`.
    fn loops_between(&self, at: LoopId, b: BlockId) -> Vec<LoopId> {
        let anc = self.ancestors(Node::Block(b));
        let pos = anc.iter().position(|x| *x == at).expect("at encloses b");
        anc[pos + 1..].to_vec()
    }

    /// Builds a copy nest `dst[...] = src[...]` over `spans` (in `order` of
    /// dimensions, outermost first) and returns its outermost node and block.
    #[allow(clippy::too_many_arguments)]
    fn copy_nest(
        &mut self,
        name: &str,
        spans: &[Span],
        order: &[usize],
        global: TensorId,
        local: TensorId,
        to_local: bool,
        loop_base: &str,
    ) -> (Node, BlockId) {
        let rank = spans.len();
        let mut loop_vars = Vec::new();
        let mut iter_vars = vec![None; rank];
        for &d in order {
            loop_vars.push(self.new_var(&format!("{loop_base}{d}"), spans[d].extent.clone()));
        }
        for &d in order {
            iter_vars[d] = Some(self.new_var(&format!("v{loop_base}{d}"), spans[d].extent.clone()));
        }
        let iter_vars: Vec<_> = iter_vars.into_iter().map(|v| v.expect("order is a permutation")).collect();
        let mut bindings = vec![Expr::Int(0); rank];
        let mut predicates = Vec::new();
        let gshape = self.tensor(global).shape.clone();
        for (k, &d) in order.iter().enumerate() {
            bindings[d] = Expr::Var(loop_vars[k]);
            let lhs = simplify(&(spans[d].offset.clone() + Expr::Var(loop_vars[k])), self);
            if !prove_lt(&lhs, &gshape[d], self) {
                predicates.push(Pred { lhs, rhs: gshape[d].clone() });
            }
        }
        let g_idx: Vec<Expr> =
            (0..rank).map(|d| simplify(&(spans[d].offset.clone() + Expr::Var(iter_vars[d])), self)).collect();
        let l_idx: Vec<Expr> = order.iter().map(|&d| Expr::Var(iter_vars[d])).collect();
        let dtype = self.tensor(global).dtype;
        let (lhs, rhs) = if to_local {
            (Access { tensor: local, indices: l_idx }, Value::Read(Access { tensor: global, indices: g_idx }, dtype))
        } else {
            (Access { tensor: global, indices: g_idx }, Value::Read(Access { tensor: local, indices: l_idx }, dtype))
        };
        let bname = self.unique_block_name(name);
        let block = self.add_block(Block {
            name: bname,
            iters: (0..rank).map(|d| IterVar { var: iter_vars[d], kind: AxisKind::Spatial }).collect(),
            bindings,
            predicates,
            lhs,
            op: UpdateOp::Assign,
            rhs,
            init: false,
            parent: None,
            annotations: BTreeMap::new(),
            alive: true,
        });
        let mut child = Node::Block(block);
        for v in loop_vars.iter().rev() {
            let l = self.add_loop(*v, LoopKind::Serial, vec![child], None);
            self.set_parent(child, Some(l));
            child = Node::Loop(l);
        }
        self.simplify_block(block);
        (child, block)
    }

    /// Accumulates block `b`'s results for one iteration of `at` in a local
    /// tile, written back to the tensor once at the end of `at`'s body.
    /// Returns the write-back block.
    pub fn cache_write(&mut self, b: BlockId, at: LoopId) -> Result<BlockId> {
        const PRIM: &str = "cache_write";
        self.check_block(PRIM, b)?;
        self.check_loop(PRIM, at)?;
        self.check_outside_vector(PRIM, at)?;
        let bname = self.block(b).name.clone();
        let region = |m: String| ScheduleError::new(PRIM, ErrorKind::Region, m);
        if !self.encloses(at, Node::Block(b)) {
            return Err(ScheduleError::new(
                PRIM,
                ErrorKind::Structure,
                format!("loop `{}` does not enclose block `{bname}`", self.loop_name(at)),
            ));
        }
        let t = self.block(b).lhs.tensor;
        if self.tensor(t).scope == Scope::Local {
            return Err(region(format!("block `{bname}` already writes a local tile")));
        }
        let inner = self.loops_between(at, b);
        let inner_vars: Vec<_> = inner.iter().map(|l| self.loop_(*l).var).collect();
        for v in self.reduction_loop_vars(b) {
            if !inner_vars.contains(&v) {
                return Err(region(format!(
                    "reduction loop `{}` of block `{bname}` lies outside `{}`; the tile would be written back before the reduction completes",
                    self.var(v).name,
                    self.loop_name(at)
                )));
            }
        }
        let under = self.blocks_in(Node::Loop(at));
        let writers: Vec<BlockId> = under.iter().copied().filter(|x| self.block(*x).lhs.tensor == t).collect();
        if let Some(r) = under.iter().find(|x| self.block_reads(**x, t)) {
            return Err(region(format!(
                "block `{}` reads `{}` inside `{}`",
                self.block(*r).name,
                self.tensor(t).name,
                self.loop_name(at)
            )));
        }
        let blk = self.block(b).clone();
        if blk.op != UpdateOp::Assign && !blk.init && writers.len() == 1 {
            return Err(region(format!(
                "the initialization of block `{bname}` lies outside `{}`; cache at an outer loop or before decompose_reduction",
                self.loop_name(at)
            )));
        }
        let mut spans = Vec::new();
        for (d, idx) in blk.lhs.indices.iter().enumerate() {
            let e = self.bind(b, idx);
            let s = self.span(&e, &inner).ok_or_else(|| {
                region(format!(
                    "cannot bound dimension {d} of `{}` written inside `{}`",
                    self.tensor(t).name,
                    self.loop_name(at)
                ))
            })?;
            if !s.dense {
                return Err(region(format!(
                    "block `{bname}` writes dimension {d} of `{}` with gaps inside `{}` (a strided tile cannot be written back)",
                    self.tensor(t).name,
                    self.loop_name(at)
                )));
            }
            spans.push(s);
        }
        // Other writers must write inside the same tile.
        for w in &writers {
            if *w == b {
                continue;
            }
            let winner = self.loops_between(at, *w);
            for (d, idx) in self.block(*w).lhs.indices.clone().iter().enumerate() {
                let e = self.bind(*w, idx);
                let s = self.span(&e, &winner);
                if s.as_ref().map(|s| &s.offset) != Some(&spans[d].offset) {
                    return Err(region(format!(
                        "block `{}` also writes `{}` inside `{}` at a different place",
                        self.block(*w).name,
                        self.tensor(t).name,
                        self.loop_name(at)
                    )));
                }
            }
        }
        // Conditions of the block: those on loops outside the tile hold for the
        // whole tile and also guard the write-back; those bounding a spatial
        // index by the tensor's extent are the write-back's own bounds; those
        // restricting only reduction loops leave the tile complete. Anything
        // else would leave holes in the tile.
        let lhs_vars: Vec<_> = blk.lhs.indices.iter().flat_map(|e| self.bind(b, e).vars()).collect();
        let inner_spatial: Vec<_> = inner_vars.iter().copied().filter(|v| lhs_vars.contains(v)).collect();
        let mut outer_preds = Vec::new();
        for p in &blk.predicates {
            let vars: Vec<_> = p.lhs.vars().into_iter().chain(p.rhs.vars()).collect();
            if !vars.iter().any(|v| inner_vars.contains(v)) {
                outer_preds.push(p.clone());
                continue;
            }
            let bounds_dim = blk.lhs.indices.iter().enumerate().any(|(d, idx)| {
                let Expr::Var(iv) = idx else { return false };
                self.binding_of(b, *iv) == Some(&p.lhs) && p.rhs == self.tensor(t).shape[d]
            });
            if bounds_dim || !vars.iter().any(|v| inner_spatial.contains(v)) {
                continue;
            }
            return Err(region(format!(
                "block `{bname}` has the condition `{} < {}`, which would leave holes in the tile",
                self.expr_text(&p.lhs),
                self.expr_text(&p.rhs)
            )));
        }
        let tinfo = self.tensor(t).clone();
        let local = self.add_tensor(TensorInfo {
            name: self.unique_tensor_name(&format!("{}_local", tinfo.name)),
            dtype: tinfo.dtype,
            shape: spans.iter().map(|s| s.extent.clone()).collect(),
            role: Role::Temp,
            scope: Scope::Local,
            range: None,
        });
        for w in &writers {
            let idx: Vec<Expr> = self
                .block(*w)
                .lhs
                .indices
                .iter()
                .zip(&spans)
                .map(|(i, s)| simplify(&(i.clone() - s.offset.clone()), self))
                .collect();
            self.block_mut(*w).lhs = Access { tensor: local, indices: idx };
        }
        let order: Vec<usize> = (0..spans.len()).collect();
        let (node, wb) = self.copy_nest(&format!("{bname}_wb"), &spans, &order, t, local, false, "w");
        if !outer_preds.is_empty() {
            self.block_mut(wb).predicates.extend(outer_preds);
            self.simplify_block(wb);
        }
        let end = self.loop_(at).body.len();
        self.attach(node, Some(at), end);
        Ok(wb)
    }

    /// Copies the part of `tensor` that block `b` reads during one iteration
    /// of `at` into a contiguous local buffer at the start of `at`'s body
    /// (dimensions permuted by `layout`, e.g. `[1, 0]` to transpose) and makes
    /// `b` read the copy. Returns the copy block.
    pub fn cache_read(&mut self, b: BlockId, tensor: &str, at: LoopId, layout: Option<&[usize]>) -> Result<BlockId> {
        const PRIM: &str = "cache_read";
        self.check_block(PRIM, b)?;
        self.check_loop(PRIM, at)?;
        self.check_outside_vector(PRIM, at)?;
        let bname = self.block(b).name.clone();
        let region = |m: String| ScheduleError::new(PRIM, ErrorKind::Region, m);
        if !self.encloses(at, Node::Block(b)) {
            return Err(ScheduleError::new(
                PRIM,
                ErrorKind::Structure,
                format!("loop `{}` does not enclose block `{bname}`", self.loop_name(at)),
            ));
        }
        let t = (0..self.tensors.len())
            .map(|i| TensorId(i as u32))
            .find(|t| self.tensor(*t).name == tensor)
            .ok_or_else(|| region(format!("no tensor named `{tensor}`")))?;
        if self.tensor(t).scope == Scope::Local {
            return Err(region(format!("`{tensor}` is already a local buffer")));
        }
        let blk = self.block(b).clone();
        let reads: Vec<Access> = blk.rhs.reads().into_iter().filter(|a| a.tensor == t).cloned().collect();
        if reads.is_empty() {
            return Err(region(format!("block `{bname}` does not read `{tensor}` directly")));
        }
        if let Some(w) = self.blocks_in(Node::Loop(at)).iter().find(|x| self.block(**x).lhs.tensor == t) {
            return Err(region(format!(
                "`{tensor}` is written by block `{}` inside `{}`",
                self.block(*w).name,
                self.loop_name(at)
            )));
        }
        let rank = self.tensor(t).shape.len();
        let order: Vec<usize> = match layout {
            None => (0..rank).collect(),
            Some(p) => {
                let mut sorted = p.to_vec();
                sorted.sort_unstable();
                if sorted != (0..rank).collect::<Vec<_>>() {
                    return Err(region(format!(
                        "layout {p:?} is not a permutation of the {rank} dimensions of `{tensor}`"
                    )));
                }
                p.to_vec()
            }
        };
        let inner = self.loops_between(at, b);
        let mut spans: Option<Vec<Span>> = None;
        for a in &reads {
            let mut s = Vec::new();
            for (d, idx) in a.indices.iter().enumerate() {
                let e = self.bind(b, idx);
                s.push(self.span(&e, &inner).ok_or_else(|| {
                    region(format!("cannot bound dimension {d} of `{tensor}` read inside `{}`", self.loop_name(at)))
                })?);
            }
            match &spans {
                None => spans = Some(s),
                Some(prev) if *prev == s => {}
                Some(_) => return Err(region(format!("block `{bname}` reads different regions of `{tensor}`"))),
            }
        }
        let spans = spans.expect("at least one read");
        let tinfo = self.tensor(t).clone();
        let local = self.add_tensor(TensorInfo {
            name: self.unique_tensor_name(&format!("{}_local", tinfo.name)),
            dtype: tinfo.dtype,
            shape: order.iter().map(|&d| spans[d].extent.clone()).collect(),
            role: Role::Temp,
            scope: Scope::Local,
            range: tinfo.range,
        });
        let offsets: Vec<Expr> = spans.iter().map(|s| s.offset.clone()).collect();
        let perm = order.clone();
        let ctx: &Nest = self;
        let rhs = blk.rhs.map_reads(&|a: &Access| {
            (a.tensor == t).then(|| Access {
                tensor: local,
                indices: perm.iter().map(|&d| simplify(&(a.indices[d].clone() - offsets[d].clone()), ctx)).collect(),
            })
        });
        self.block_mut(b).rhs = rhs;
        let (node, copy) = self.copy_nest(&format!("{tensor}_local"), &spans, &order, t, local, true, "c");
        self.attach(node, Some(at), 0);
        Ok(copy)
    }
}

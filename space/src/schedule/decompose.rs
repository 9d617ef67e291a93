//! `decompose_reduction`: separate a reduction's initialization.

use super::{ErrorKind, Result, ScheduleError};
use crate::expr::Expr;
use crate::ids::{BlockId, LoopId, VarId};
use crate::ir::{Block, IterVar, Nest, Node, Pred};
use crate::workload::{AxisKind, Value};
use std::collections::BTreeMap;

const PRIM: &str = "decompose_reduction";

impl Nest {
    /// Moves the initialization of reduction block `b` into a new block
    /// placed just before loop `l`, under copies of the spatial loops between
    /// `l` and `b`. No loop outside `l` may carry the reduction. Returns the
    /// new init block.
    pub fn decompose_reduction(&mut self, b: BlockId, l: LoopId) -> Result<BlockId> {
        self.check_block(PRIM, b)?;
        self.check_loop(PRIM, l)?;
        let blk = self.block(b).clone();
        let lname = self.loop_name(l).to_string();
        if let Some(p) = self.loop_(l).parent {
            self.check_outside_vector(PRIM, p)?;
        }
        if !blk.init {
            return Err(ScheduleError::new(
                PRIM,
                ErrorKind::Structure,
                format!("block `{}` has no initialization to decompose", blk.name),
            ));
        }
        let anc = self.ancestors(Node::Block(b));
        let Some(pos) = anc.iter().position(|x| *x == l) else {
            return Err(ScheduleError::new(
                PRIM,
                ErrorKind::Structure,
                format!("loop `{lname}` does not enclose block `{}`", blk.name),
            ));
        };
        let red = self.reduction_loop_vars(b);
        let spatial = self.spatial_loop_vars(b);
        for a in &anc[pos..] {
            let v = self.loop_(*a).var;
            if red.contains(&v) && spatial.contains(&v) {
                return Err(ScheduleError::new(
                    PRIM,
                    ErrorKind::Structure,
                    format!(
                        "loop `{}` carries both spatial and reduction iterators of block `{}`",
                        self.loop_name(*a),
                        blk.name
                    ),
                ));
            }
        }
        for a in &anc[..pos] {
            if red.contains(&self.loop_(*a).var) {
                return Err(ScheduleError::new(
                    PRIM,
                    ErrorKind::Dependence,
                    format!(
                        "loop `{}` outside `{lname}` carries the reduction of block `{}`",
                        self.loop_name(*a),
                        blk.name
                    ),
                ));
            }
        }
        // The initialization must stay inside every loop shared with a reader
        // of the result (a write-back of a local tile, a consumer moved by
        // compute_at): it runs once per iteration of such a loop.
        let t = blk.lhs.tensor;
        for r in self.all_blocks() {
            if r == b || !self.block_reads(r, t) {
                continue;
            }
            let ra = self.ancestors(Node::Block(r));
            let lca = anc.iter().zip(&ra).take_while(|(x, y)| x == y).last().map(|(x, _)| *x);
            if let Some(lca) = lca {
                if !anc[..pos].contains(&lca) {
                    return Err(ScheduleError::new(
                        PRIM,
                        ErrorKind::Dependence,
                        format!(
                            "the initialization must stay inside loop `{}`, where block `{}` reads `{}`",
                            self.loop_name(lca),
                            self.block(r).name,
                            self.tensor(t).name
                        ),
                    ));
                }
            }
        }
        Ok(self.split_init(b, l, &anc[pos..], &red, &spatial))
    }

    /// Builds the init nest before `l` (used by `decompose_reduction` and by
    /// lowering for reductions left undecomposed).
    pub(crate) fn split_init(
        &mut self,
        b: BlockId,
        l: LoopId,
        chain: &[LoopId],
        red: &[VarId],
        spatial: &[VarId],
    ) -> BlockId {
        let blk = self.block(b).clone();
        let mut map: Vec<(VarId, VarId)> = Vec::new();
        let mut new_loops = Vec::new();
        for x in chain {
            let v = self.loop_(*x).var;
            if spatial.contains(&v) && !red.contains(&v) {
                let name = self.var(v).name.clone();
                let nv = self.new_var(&format!("{name}_init"), self.var(v).extent.clone());
                map.push((v, nv));
                let kind = self.loop_(*x).kind;
                new_loops.push((nv, kind));
            }
        }
        let replicated: Vec<VarId> = map.iter().map(|(o, _)| *o).collect();
        let outer: Vec<VarId> = self
            .ancestors(Node::Loop(l))
            .into_iter()
            .map(|a| self.loop_(a).var)
            .chain(std::iter::once(self.loop_(l).var).filter(|v| replicated.contains(v)))
            .collect();
        let rename = |e: &Expr| e.substitute(&|v| map.iter().find(|(o, _)| *o == v).map(|(_, n)| Expr::Var(*n)));
        let mut iters = Vec::new();
        let mut bindings = Vec::new();
        let mut iter_map: Vec<(VarId, VarId)> = Vec::new();
        for (it, e) in blk.iters.iter().zip(&blk.bindings) {
            if it.kind != AxisKind::Spatial {
                continue;
            }
            let name = self.var(it.var).name.clone();
            let nv = self.new_var(&format!("{name}_init"), self.var(it.var).extent.clone());
            iters.push(IterVar { var: nv, kind: AxisKind::Spatial });
            bindings.push(rename(e));
            iter_map.push((it.var, nv));
        }
        let allowed = |e: &Expr| e.vars().into_iter().all(|v| outer.contains(&v) || replicated.contains(&v));
        let predicates: Vec<Pred> = blk
            .predicates
            .iter()
            .filter(|p| allowed(&p.lhs) && allowed(&p.rhs))
            .map(|p| Pred { lhs: rename(&p.lhs), rhs: rename(&p.rhs) })
            .collect();
        let lhs_idx: Vec<Expr> = blk
            .lhs
            .indices
            .iter()
            .map(|e| rename(e).substitute(&|v| iter_map.iter().find(|(o, _)| *o == v).map(|(_, n)| Expr::Var(*n))))
            .collect();
        let dtype = self.tensor(blk.lhs.tensor).dtype;
        let neutral = blk.op.neutral(dtype).unwrap_or(0.0);
        let name = self.unique_block_name(&format!("{}_init", blk.name));
        let init = self.add_block(Block {
            name,
            iters,
            bindings,
            predicates,
            lhs: crate::workload::Access { tensor: blk.lhs.tensor, indices: lhs_idx },
            op: crate::workload::UpdateOp::Assign,
            rhs: Value::Const(neutral, dtype),
            init: false,
            parent: None,
            annotations: BTreeMap::new(),
            alive: true,
        });
        let mut child = Node::Block(init);
        for (v, kind) in new_loops.iter().rev() {
            let nl = self.add_loop(*v, *kind, vec![child], None);
            self.set_parent(child, Some(nl));
            child = Node::Loop(nl);
        }
        let parent = self.loop_(l).parent;
        let pos = self.position(Node::Loop(l));
        self.attach(child, parent, pos);
        self.block_mut(b).init = false;
        self.simplify_block(init);
        init
    }
}

impl Nest {
    /// Decomposes every remaining reduction initialization at the outermost
    /// loop carrying the reduction (what lowering does with undecomposed
    /// reductions), or deeper where the loops outside carry none of it:
    /// past reduction loops of one iteration and the spatial loops inside
    /// them, to the first reduction loop of more (see
    /// [`Nest::init_position`]). Blocks without a loop carrying their
    /// reduction keep `init` (their every execution is the first of its
    /// reduction).
    pub fn decompose_all_inits(&mut self) {
        for b in self.all_blocks() {
            if !self.block(b).init {
                continue;
            }
            let red = self.reduction_loop_vars(b);
            let anc = self.ancestors(Node::Block(b));
            let Some(pos) = self.init_position(b, &anc, &red) else { continue };
            let spatial = self.spatial_loop_vars(b);
            let chain = anc[pos..].to_vec();
            // A loop carrying both kinds of iterators (fused) keeps the
            // conditional initialization inside the block.
            if chain.iter().any(|l| {
                let v = self.loop_(*l).var;
                red.contains(&v) && spatial.contains(&v)
            }) {
                continue;
            }
            self.split_init(b, anc[pos], &chain, &red, &spatial);
        }
    }
}

impl Nest {
    /// Where [`Nest::decompose_all_inits`] puts the initialization of block
    /// `b` (whose enclosing loops, outermost first, are `anc`): the index in
    /// `anc` of the outermost loop carrying a reduction iterator (`red`),
    /// moved inward past every serial or unrolled loop that runs once or
    /// binds spatial iterators only, as long as a reduction loop
    /// of more than one iteration follows. A reduction block of `kc` equal
    /// to the whole reduction (`k0` of extent 1) is then initialized per
    /// register tile, just before the loop that accumulates it, rather than
    /// in a pass over every element before all the tiles: the zeros are
    /// stored where the tile's promotion loads them, and LLVM starts the
    /// accumulators at zero instead. Each skipped spatial loop gives each
    /// of its iterations elements of its own, so every element is still
    /// initialized once, before its first update.
    fn init_position(&self, b: BlockId, anc: &[LoopId], red: &[VarId]) -> Option<usize> {
        let first = anc.iter().position(|l| red.contains(&self.loop_(*l).var))?;
        let spatial = self.spatial_loop_vars(b);
        let once = |l: LoopId| crate::expr::simplify(self.extent(l), self) == Expr::Int(1);
        for (i, &l) in anc.iter().enumerate().skip(first) {
            let v = self.loop_(l).var;
            let plain = matches!(self.loop_(l).kind, crate::ir::LoopKind::Serial | crate::ir::LoopKind::Unroll);
            if plain && once(l) {
                continue;
            }
            if red.contains(&v) {
                return Some(i);
            }
            if !(plain && spatial.contains(&v)) {
                break;
            }
        }
        Some(first)
    }
}

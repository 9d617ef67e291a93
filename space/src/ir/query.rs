//! Structural queries and whole-nest rewrites.

use super::*;
use crate::expr::{prove_lt, simplify, RangeCtx};

impl RangeCtx for Nest {
    fn var_extent(&self, v: VarId) -> Option<Expr> {
        self.vars.get(v.index()).map(|x| x.extent.clone())
    }
    fn var_extent_is(&self, v: VarId, extent: Option<&Expr>) -> bool {
        self.vars.get(v.index()).map(|x| &x.extent) == extent
    }
    fn tensor_range(&self, t: TensorId) -> Option<(i64, i64)> {
        self.tensors.get(t.index()).and_then(|t| t.range)
    }
    fn vscales(&self) -> &[u32] {
        &self.caps.vscale_values
    }
}

/// The block a node is, if it is one.
fn as_block(n: Node) -> Option<BlockId> {
    match n {
        Node::Block(b) => Some(b),
        Node::Loop(_) => None,
    }
}

/// The loop a node is, if it is one.
fn as_loop(n: Node) -> Option<LoopId> {
    match n {
        Node::Loop(l) => Some(l),
        Node::Block(_) => None,
    }
}

impl Nest {
    /// Enclosing loops of a node, outermost first.
    pub fn ancestors(&self, n: Node) -> Loops {
        // Inline up to [`INLINE_NODES`] loops: lowering and replay ask for
        // ancestors by the hundred thousand.
        let mut out: Loops = self.enclosing(n).collect();
        out.reverse();
        out
    }

    /// The number of loops enclosing a node.
    pub fn depth(&self, n: Node) -> usize {
        self.enclosing(n).count()
    }

    /// Enclosing loops of a node, innermost first.
    fn enclosing(&self, n: Node) -> impl Iterator<Item = LoopId> + '_ {
        std::iter::successors(self.parent_of(n), |l| self.loop_(*l).parent)
    }

    /// True if `l` encloses node `n` (strictly).
    pub fn encloses(&self, l: LoopId, n: Node) -> bool {
        self.enclosing(n).any(|a| a == l)
    }

    /// Every block inside a node (itself if a block), in execution order.
    pub fn blocks_in(&self, n: Node) -> Blocks {
        self.gather(&[n], as_block)
    }

    /// Every loop inside a node (including itself), in pre-order.
    pub fn loops_in(&self, n: Node) -> Loops {
        self.gather(&[n], as_loop)
    }

    /// Pre-order walk.
    pub fn walk(&self, n: Node, f: &mut dyn FnMut(Node)) {
        f(n);
        if let Node::Loop(l) = n {
            for c in &self.loop_(l).body {
                self.walk(*c, f);
            }
        }
    }

    /// Every live block in execution order.
    pub fn all_blocks(&self) -> Blocks {
        self.gather(&self.root, as_block)
    }

    /// Every live loop in pre-order.
    pub fn all_loops(&self) -> Loops {
        self.gather(&self.root, as_loop)
    }

    /// What `pick` takes of the nodes under `tops` (each included), in pre-order.
    fn gather<A: smallvec::Array>(
        &self,
        tops: &[Node],
        pick: impl Fn(Node) -> Option<A::Item>,
    ) -> smallvec::SmallVec<A> {
        let mut out = smallvec::SmallVec::new();
        for n in tops {
            self.walk(*n, &mut |x| out.extend(pick(x)));
        }
        out
    }

    /// Looks up a live block by name.
    pub fn find_block(&self, name: &str) -> Option<BlockId> {
        self.all_blocks().into_iter().find(|b| self.block(*b).name == name)
    }

    /// The index of a node within its parent's body.
    pub fn position(&self, n: Node) -> usize {
        self.siblings(self.parent_of(n)).iter().position(|x| *x == n).expect("node is in its parent's body")
    }

    /// Substitutes an expression for a variable in every live block.
    ///
    /// Only expressions that mention `v` change; they are simplified again
    /// (what [`Nest::simplify_block`] would do to them), and a predicate
    /// that now holds for every vscale or repeats another goes. The
    /// expressions that do not mention `v` were simplified when they were
    /// made and are left as they are: simplifying them again would give
    /// them back unchanged, at the cost of most of a schedule's replay.
    pub fn replace_var(&mut self, v: VarId, with: &Expr) {
        self.replace_vars(&[(v, with.clone())]);
    }

    /// [`Nest::replace_var`] for several variables at once: each expression
    /// that mentions any of them is substituted and simplified once.
    pub fn replace_vars(&mut self, subst: &[(VarId, Expr)]) {
        let f = |x: VarId| subst.iter().find(|(v, _)| *v == x).map(|(_, e)| e.clone());
        let mentions = |e: &Expr| e.any(&|n| matches!(n, Expr::Var(x) if subst.iter().any(|(v, _)| v == x)));
        for b in self.all_blocks() {
            let blk = &self.blocks[b.index()];
            let touches = blk.bindings.iter().any(mentions)
                || blk.predicates.iter().any(|p| mentions(&p.lhs) || mentions(&p.rhs))
                || blk.lhs.indices.iter().any(mentions)
                || blk.rhs.any_index(&mentions);
            if !touches {
                continue;
            }
            let redo = |e: &Expr| mentions(e).then(|| simplify(&e.substitute(&f), self));
            let bindings: Vec<Option<Expr>> = blk.bindings.iter().map(redo).collect();
            let lhs: Vec<Option<Expr>> = blk.lhs.indices.iter().map(redo).collect();
            let rhs = blk.rhs.any_index(&mentions).then(|| {
                blk.rhs.map_indices(&|e| if mentions(e) { simplify(&e.substitute(&f), self) } else { e.clone() })
            });
            let mut preds: Vec<Pred> = Vec::with_capacity(blk.predicates.len());
            for p in &blk.predicates {
                let q = if mentions(&p.lhs) || mentions(&p.rhs) {
                    let lhs = simplify(&p.lhs.substitute(&f), self);
                    let rhs = simplify(&p.rhs.substitute(&f), self);
                    if prove_lt(&lhs, &rhs, self) {
                        continue;
                    }
                    Pred { lhs, rhs }
                } else {
                    p.clone()
                };
                if !preds.contains(&q) {
                    preds.push(q);
                }
            }
            let m = &mut self.blocks[b.index()];
            for (e, new) in m.bindings.iter_mut().zip(bindings) {
                if let Some(new) = new {
                    *e = new;
                }
            }
            for (e, new) in m.lhs.indices.iter_mut().zip(lhs) {
                if let Some(new) = new {
                    *e = new;
                }
            }
            if let Some(rhs) = rhs {
                m.rhs = rhs;
            }
            m.predicates = preds;
        }
    }

    /// Simplifies bindings, predicates and indices of a block, dropping
    /// predicates that hold for every vscale and duplicates.
    pub fn simplify_block(&mut self, b: BlockId) {
        let blk = self.block(b);
        let bindings: Vec<Expr> = blk.bindings.iter().map(|e| simplify(e, self)).collect();
        let mut preds: Vec<Pred> = Vec::new();
        for p in &blk.predicates {
            let lhs = simplify(&p.lhs, self);
            let rhs = simplify(&p.rhs, self);
            if prove_lt(&lhs, &rhs, self) {
                continue;
            }
            let q = Pred { lhs, rhs };
            if !preds.contains(&q) {
                preds.push(q);
            }
        }
        let lhs_idx: Vec<Expr> = blk.lhs.indices.iter().map(|e| simplify(e, self)).collect();
        let rhs = blk.rhs.map_indices(&|e| simplify(e, self));
        let m = self.block_mut(b);
        m.bindings = bindings;
        m.predicates = preds;
        m.lhs.indices = lhs_idx;
        m.rhs = rhs;
    }

    /// The block's binding of an iteration variable, if `v` is one of its iterators.
    pub fn binding_of(&self, b: BlockId, v: VarId) -> Option<&Expr> {
        let blk = self.block(b);
        blk.iters.iter().position(|it| it.var == v).map(|i| &blk.bindings[i])
    }

    /// Replaces iteration variables by their bindings in an expression.
    pub fn bind(&self, b: BlockId, e: &Expr) -> Expr {
        let blk = self.block(b);
        let f = |v: VarId| blk.iters.iter().position(|it| it.var == v).map(|i| blk.bindings[i].clone());
        simplify(&e.substitute(&f), self)
    }

    /// Loop variables that appear in the bindings of reduction iterators.
    pub fn reduction_loop_vars(&self, b: BlockId) -> Vec<VarId> {
        self.loop_vars_of(b, AxisKind::Reduce)
    }

    /// Loop variables that appear in the bindings of spatial iterators.
    pub fn spatial_loop_vars(&self, b: BlockId) -> Vec<VarId> {
        self.loop_vars_of(b, AxisKind::Spatial)
    }

    fn loop_vars_of(&self, b: BlockId, kind: AxisKind) -> Vec<VarId> {
        let blk = self.block(b);
        let mut out = Vec::with_capacity(blk.iters.len());
        for (it, e) in blk.iters.iter().zip(&blk.bindings) {
            if it.kind == kind {
                e.for_each_var(&mut |v| {
                    if !out.contains(&v) {
                        out.push(v);
                    }
                });
            }
        }
        out
    }

    /// True if the block reads the tensor (directly or as an indirect index).
    pub fn block_reads(&self, b: BlockId, t: TensorId) -> bool {
        let blk = self.block(b);
        let in_expr = |e: &Expr| e.any(&|x| matches!(x, Expr::Load(tt, _) if *tt == t));
        blk.rhs.reads().iter().any(|a| a.tensor == t || a.indices.iter().any(in_expr))
            || blk.lhs.indices.iter().any(in_expr)
    }

    /// Row-major strides of a tensor (in elements).
    pub fn strides(&self, t: TensorId) -> smallvec::SmallVec<[Expr; 4]> {
        let shape = &self.tensor(t).shape;
        let mut st: smallvec::SmallVec<[Expr; 4]> = smallvec::smallvec![Expr::Int(1); shape.len()];
        for d in (0..shape.len().saturating_sub(1)).rev() {
            st[d] = simplify(&(st[d + 1].clone() * shape[d + 1].clone()), self);
        }
        st
    }

    /// Flattened element offset of an access, simplified.
    pub fn flat_index(&self, t: TensorId, indices: &[Expr]) -> Expr {
        // Without the `0 +` and `* 1` the simplifier would drop anyway:
        // lowering and replay flatten accesses by the hundred thousand, and
        // each node is an allocation.
        let mut acc: Option<Expr> = None;
        for (i, s) in indices.iter().zip(self.strides(t)) {
            let term = match s {
                Expr::Int(1) => i.clone(),
                s => i.clone() * s,
            };
            acc = Some(match acc {
                None => term,
                Some(a) => a + term,
            });
        }
        simplify(&acc.unwrap_or(Expr::Int(0)), self)
    }

    /// Detaches a node from its parent's body (it must be attached).
    pub fn detach(&mut self, n: Node) -> usize {
        let pos = self.position(n);
        let parent = self.parent_of(n);
        self.siblings_mut(parent).remove(pos);
        pos
    }

    /// Inserts a node into a body at a position and sets its parent.
    pub fn attach(&mut self, n: Node, parent: Option<LoopId>, pos: usize) {
        self.siblings_mut(parent).insert(pos, n);
        self.set_parent(n, parent);
    }
}

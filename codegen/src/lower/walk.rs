//! Loops: serial, unrolled, vectorized, and versioned for tails.

use super::block::reduce_op;
use super::ctx::{Lowerer, Result, VecCtx};
use super::tails::VecMode;
use crate::vprog::{BinOp, LoopHint, Op, Reg, Stmt};
use scaletune_space::expr::{eval, Expr};
use scaletune_space::ids::{BlockId, LoopId};
use scaletune_space::ir::{LoopKind, Node, Tail};
use scaletune_space::limits::MAX_UNROLLED_COPIES;

impl Lowerer {
    /// Emits a node of the loop tree.
    pub fn node(&mut self, n: Node) -> Result<()> {
        match n {
            Node::Block(b) => self.block(b),
            Node::Loop(l) if self.nest.is_tensorized(l) => self.tensorized(l),
            Node::Loop(l) => self.loop_with_accumulators(l),
        }
    }

    fn loop_with_accumulators(&mut self, l: LoopId) -> Result<()> {
        let hoisted = self.accs.at.get(&l).cloned().unwrap_or_default();
        let mut started = Vec::new();
        for b in &hoisted {
            if let Some(acc) = self.start_acc(*b)? {
                started.push((*b, acc));
            }
        }
        let tiles = self.start_tiles(l)?;
        self.loop_versioned(l)?;
        self.finish_tiles(tiles)?;
        for (b, acc) in started {
            self.active_accs.remove(&b);
            self.finish_acc(b, acc)?;
        }
        Ok(())
    }

    /// A fresh vector accumulator for block `b` holding the neutral element.
    fn start_acc(&mut self, b: BlockId) -> Result<Option<Reg>> {
        let v = self.accs.vloop[&b];
        let lanes = self.lanes_of(v)?;
        let nest = std::rc::Rc::clone(&self.nest);
        let blk = nest.block(b);
        let dtype = self.dtype(blk.lhs.tensor);
        let Some(n) = blk.op.neutral(dtype) else { return Ok(None) };
        let c = self.b.constant(n, dtype);
        let acc = self.b.emit(Op::Splat(c, lanes));
        self.active_accs.insert(b, acc);
        Ok(Some(acc))
    }

    /// Reduces an accumulator and combines it with memory once.
    fn finish_acc(&mut self, b: BlockId, acc: Reg) -> Result<()> {
        let nest = std::rc::Rc::clone(&self.nest);
        let blk = nest.block(b);
        let s = self.b.emit(Op::Reduce(reduce_op(blk.op), acc));
        let bound: Vec<Expr> = blk.lhs.indices.iter().map(|e| self.nest.bind(b, e)).collect();
        let flat = self.nest.flat_index(blk.lhs.tensor, &bound);
        let outer: Vec<_> = blk
            .predicates
            .iter()
            .filter(|p| p.lhs.vars().iter().chain(p.rhs.vars().iter()).all(|v| self.vars.contains_key(v)))
            .cloned()
            .collect();
        let buf = self.bufs[blk.lhs.tensor.index()];
        let emit = |lw: &mut Lowerer| -> Result<()> {
            let i = lw.index(&flat)?;
            let old = lw.b.emit(Op::Load { buf, index: i });
            let new = lw.combine(blk.op, old, s);
            lw.b.push(Stmt::Store { buf, index: i, value: new });
            Ok(())
        };
        if outer.is_empty() {
            emit(self)
        } else {
            let cond = self.conjunction(&outer)?;
            self.b.begin_body();
            emit(self)?;
            let then_body = self.b.end_body();
            self.b.push(Stmt::If { cond, then_body, else_body: Vec::new() });
            Ok(())
        }
    }

    fn set_modes(&mut self, vloops: &[LoopId], mode: VecMode) {
        for v in vloops {
            self.modes.insert(*v, mode);
        }
    }

    /// A loop, split or branched when it decides whether vectors are full.
    fn loop_versioned(&mut self, l: LoopId) -> Result<()> {
        let Some(ver) = self.tails.at_loop.get(&l).cloned() else { return self.plain_loop(l) };
        let var = self.nest.loop_(l).var;
        let kind = self.nest.loop_(l).kind;
        match (&ver.bound, kind) {
            (Some(bound), LoopKind::Serial | LoopKind::Parallel) => {
                let hint = if kind == LoopKind::Parallel { LoopHint::Parallel } else { LoopHint::None };
                let zero = self.b.index(0);
                let split = self.index(bound)?;
                let end = self.index(&self.nest.extent(l).clone())?;
                self.set_modes(&ver.vloops, VecMode::Full);
                self.range_loop(l, zero, split, hint)?;
                self.set_modes(&ver.vloops, VecMode::Tail);
                self.range_loop(l, split, end, hint)?;
                for v in &ver.vloops {
                    self.modes.remove(v);
                }
                Ok(())
            }
            _ => {
                // Branch in every iteration.
                let body = self.nest.loop_(l).body.clone();
                let per_iter = |lw: &mut Lowerer| -> Result<()> {
                    let cond = lw.conjunction(&ver.conds)?;
                    lw.set_modes(&ver.vloops, VecMode::Full);
                    lw.b.begin_body();
                    for c in &body {
                        lw.node(*c)?;
                    }
                    let then_body = lw.b.end_body();
                    lw.set_modes(&ver.vloops, VecMode::Tail);
                    lw.b.begin_body();
                    for c in &body {
                        lw.node(*c)?;
                    }
                    let else_body = lw.b.end_body();
                    for v in &ver.vloops {
                        lw.modes.remove(v);
                    }
                    lw.b.push(Stmt::If { cond, then_body, else_body });
                    Ok(())
                };
                self.iterate(l, var, &per_iter)
            }
        }
    }

    /// Runs `body` once per iteration of `l` with its variable bound (a
    /// `Loop` statement, or replicated for unrolled loops).
    fn iterate(
        &mut self,
        l: LoopId,
        var: scaletune_space::ids::VarId,
        body: &dyn Fn(&mut Lowerer) -> Result<()>,
    ) -> Result<()> {
        let kind = self.nest.loop_(l).kind;
        if kind == LoopKind::Unroll {
            let n = self.const_extent(l)?;
            for i in 0..n {
                let c = self.b.index(i);
                self.vars.insert(var, c);
                self.unrolled.insert(var, i);
                body(self)?;
            }
            self.vars.remove(&var);
            self.unrolled.remove(&var);
            return Ok(());
        }
        let hint = match kind {
            LoopKind::Parallel => LoopHint::Parallel,
            _ => self.auto_unroll(l),
        };
        let start = self.b.index(0);
        let end = self.index(&self.nest.extent(l).clone())?;
        let r = self.b.begin_loop();
        self.vars.insert(var, r);
        body(self)?;
        self.vars.remove(&var);
        self.b.end_loop(r, start, end, hint);
        Ok(())
    }

    /// The `unroll_max_step` budget of loop `l` (the innermost annotation on
    /// it or an ancestor; 0 without one).
    pub(super) fn unroll_budget(&self, l: LoopId) -> i64 {
        let mut chain = self.nest.ancestors(Node::Loop(l));
        chain.push(l);
        chain
            .iter()
            .rev()
            .find_map(|a| self.nest.loop_(*a).annotations.get("unroll_max_step"))
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(0)
    }

    /// The unroll hint of a serial loop under an `unroll_max_step` annotation:
    /// full unrolling when the loop's total inner steps fit the budget.
    fn auto_unroll(&self, l: LoopId) -> LoopHint {
        let budget = self.unroll_budget(l);
        if budget <= 0 {
            return LoopHint::None;
        }
        match (self.steps(Node::Loop(l)), self.const_extent(l)) {
            // Capped like explicit unrolling: LLVM is never asked for more copies.
            (Some(steps), Ok(n)) if steps <= budget.min(MAX_UNROLLED_COPIES) && n > 1 => {
                LoopHint::Unroll(u32::try_from(n).unwrap_or(u32::MAX))
            }
            _ => LoopHint::None,
        }
    }

    /// Block executions of a subtree (constant extents only).
    fn steps(&self, n: Node) -> Option<i64> {
        match n {
            Node::Block(_) => Some(1),
            Node::Loop(l) => {
                let ext = self.const_extent(l).ok()?;
                let inner: i64 = self.nest.loop_(l).body.iter().map(|c| self.steps(*c)).sum::<Option<i64>>()?;
                ext.checked_mul(inner)
            }
        }
    }

    /// `for var in start..end { body of l }`.
    fn range_loop(&mut self, l: LoopId, start: Reg, end: Reg, hint: LoopHint) -> Result<()> {
        let var = self.nest.loop_(l).var;
        let body = self.nest.loop_(l).body.clone();
        let r = self.b.begin_loop();
        self.vars.insert(var, r);
        for c in &body {
            self.node(*c)?;
        }
        self.vars.remove(&var);
        self.b.end_loop(r, start, end, hint);
        Ok(())
    }

    fn const_extent(&self, l: LoopId) -> Result<i64> {
        let e = self.nest.extent(l);
        let v = self.vscale_const.unwrap_or(0);
        match eval(e, &|_| None, v, &|_, _| None) {
            Ok(n) if !e.uses_vscale() || self.vscale_const.is_some() => Ok(n),
            _ => Err(self.unsupported(format!(
                "unrolled loop `{}` has extent {}, not a constant on this target",
                self.nest.loop_name(l),
                self.nest.expr_text(e)
            ))),
        }
    }

    fn plain_loop(&mut self, l: LoopId) -> Result<()> {
        let nest = std::rc::Rc::clone(&self.nest);
        let lp = nest.loop_(l);
        match lp.kind {
            LoopKind::Serial | LoopKind::Parallel | LoopKind::Unroll => {
                let body = lp.body.clone();
                self.iterate(l, lp.var, &|lw: &mut Lowerer| {
                    for c in &body {
                        lw.node(*c)?;
                    }
                    Ok(())
                })
            }
            LoopKind::Vectorize(tail) => match self.tails.at_vector.get(&l).cloned() {
                Some(conds) => {
                    let cond = self.conjunction(&conds)?;
                    self.modes.insert(l, VecMode::Full);
                    self.b.begin_body();
                    self.vector_loop(l, tail)?;
                    let then_body = self.b.end_body();
                    self.modes.insert(l, VecMode::Tail);
                    self.b.begin_body();
                    self.vector_loop(l, tail)?;
                    let else_body = self.b.end_body();
                    self.modes.remove(&l);
                    self.b.push(Stmt::If { cond, then_body, else_body });
                    Ok(())
                }
                None => self.vector_loop(l, tail),
            },
        }
    }

    /// The body of a vector loop as vector code (or a scalar loop for the
    /// tail of `tail="scalar"`).
    fn vector_loop(&mut self, l: LoopId, tail: Tail) -> Result<()> {
        let nest = std::rc::Rc::clone(&self.nest);
        let lp = nest.loop_(l);
        let lanes = self.lanes_of(l)?;
        let mode = self.modes.get(&l).copied();
        if mode == Some(VecMode::Tail) && tail == Tail::Scalar {
            let start = self.b.index(0);
            let end = if lanes.scalable {
                let vs = self.b.emit(Op::VScale);
                let c = self.b.index(i64::from(lanes.min));
                self.b.bin(BinOp::Mul, vs, c)
            } else {
                self.b.index(i64::from(lanes.min))
            };
            return self.range_loop(l, start, end, LoopHint::None);
        }
        let saved = self.vec.replace(VecCtx { var: lp.var, lanes, full: mode == Some(VecMode::Full) });
        for c in &lp.body {
            self.node(*c)?;
        }
        self.vec = saved;
        Ok(())
    }
}

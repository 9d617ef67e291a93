//! `vectorize`, `unroll` and `parallel`.

use super::{ErrorKind, Result, ScheduleError};
use crate::expr::{linear_in, simplify, Expr};
use crate::ids::{BlockId, LoopId};
use crate::ir::{LoopKind, Nest, Node, Tail};
use crate::workload::Value;
use crate::DType;

/// The lane count of a vector loop extent: `c` (fixed) or `c*vscale` (scalable).
pub fn vector_lanes(extent: &Expr) -> Option<(u32, bool)> {
    match extent {
        Expr::Int(c) if (1..=64).contains(c) => Some((*c as u32, false)),
        Expr::VScale => Some((1, true)),
        Expr::Mul(a, b) => match (&**a, &**b) {
            (Expr::Int(c), Expr::VScale) | (Expr::VScale, Expr::Int(c)) if (1..=64).contains(c) => {
                Some((*c as u32, true))
            }
            _ => None,
        },
        _ => None,
    }
}

/// Largest unroll factor accepted: unrolling makes at most this many copies
/// of a block ([`crate::limits::MAX_UNROLLED_COPIES`], the product of the
/// extents of every unrolled loop around it).
pub const MAX_UNROLL: i64 = crate::limits::MAX_UNROLLED_COPIES;

impl Nest {
    fn kind_error(&self, prim: &'static str, l: LoopId, why: String) -> ScheduleError {
        ScheduleError::new(prim, ErrorKind::LoopKind, format!("cannot {prim} loop `{}`: {why}", self.loop_name(l)))
    }

    /// Marks `l` as a vector loop of `extent` lanes with the given tail strategy.
    pub fn vectorize(&mut self, l: LoopId, tail: Tail) -> Result<()> {
        const PRIM: &str = "vectorize";
        self.check_loop(PRIM, l)?;
        let err = |m: String| self.kind_error(PRIM, l, m);
        if self.loop_(l).kind != LoopKind::Serial {
            return Err(err(format!("it is already {}", self.kind_name(l))));
        }
        let extent = simplify(self.extent(l), self);
        if vector_lanes(&extent).is_none() {
            return Err(err(format!(
                "its extent {} is not a vector length (a constant up to 64, or c*vscale with c up to 64); split it first",
                self.expr_text(&extent)
            )));
        }
        for a in self.ancestors(Node::Loop(l)) {
            if matches!(self.loop_(a).kind, LoopKind::Vectorize(_)) {
                return Err(err(format!("it is inside the vectorized loop `{}`", self.loop_name(a))));
            }
        }
        let inner: Vec<LoopId> = self.loops_in(Node::Loop(l)).into_iter().filter(|x| *x != l).collect();
        for x in &inner {
            if matches!(self.loop_(*x).kind, LoopKind::Vectorize(_) | LoopKind::Parallel) {
                return Err(err(format!("it contains the {} loop `{}`", self.kind_name(*x), self.loop_name(*x))));
            }
        }
        let var = self.loop_(l).var;
        let blocks = self.blocks_in(Node::Loop(l));
        for b in &blocks {
            if !self.block(*b).bindings.iter().any(|e| e.uses_var(var)) {
                return Err(err(format!("block `{}` does not depend on it", self.block(*b).name)));
            }
        }
        for b in &blocks {
            if self.block(*b).op != crate::workload::UpdateOp::Assign
                && self.reduction_loop_vars(*b).contains(&var)
                && self.spatial_loop_vars(*b).contains(&var)
            {
                return Err(err(format!(
                    "it feeds both spatial and reduction iterators of block `{}`",
                    self.block(*b).name
                )));
            }
        }
        for w in &blocks {
            let t = self.block(*w).lhs.tensor;
            if let Some(r) = blocks.iter().find(|r| *r != w && self.block_reads(**r, t)) {
                return Err(err(format!(
                    "its body carries a dependence: block `{}` reads `{}` written by block `{}`",
                    self.block(*r).name,
                    self.tensor(t).name,
                    self.block(*w).name
                )));
            }
        }
        if !self.caps.half_vectors {
            if let Some(b) = blocks.iter().find(|b| self.block_has_f16(**b)) {
                return Err(err(format!(
                    "block `{}` computes with f16 values, and this target's vectors cannot hold f16 elements \
                     (scalable f16 vectors on RVV need the Zvfh extension)",
                    self.block(*b).name
                )));
            }
        }
        if let Some(why) = self.tail_problem(l, tail) {
            return Err(err(why));
        }
        self.loop_mut(l).kind = LoopKind::Vectorize(tail);
        Ok(())
    }

    /// True if block `b` writes an f16 tensor or any of its values (reads,
    /// conversions, arithmetic) is an f16.
    pub(crate) fn block_has_f16(&self, b: BlockId) -> bool {
        fn has(v: &Value) -> bool {
            v.dtype() == DType::F16
                || match v {
                    Value::Bin(_, x, y) => has(x) || has(y),
                    Value::Un(_, x) | Value::Cast(_, x) => has(x),
                    Value::Const(..) | Value::Scalar(..) | Value::Read(..) => false,
                }
        }
        let blk = self.block(b);
        self.tensor(blk.lhs.tensor).dtype == DType::F16 || has(&blk.rhs)
    }

    /// Why a vector loop cannot use `tail` (peel and scalar need every tail
    /// predicate to be increasing in the loop and free of inner loops).
    pub(crate) fn tail_problem(&self, l: LoopId, tail: Tail) -> Option<String> {
        if tail == Tail::Predicate {
            return None;
        }
        let var = self.loop_(l).var;
        let inner_vars: Vec<_> =
            self.loops_in(Node::Loop(l)).into_iter().filter(|x| *x != l).map(|x| self.loop_(x).var).collect();
        for b in self.blocks_in(Node::Loop(l)) {
            for p in &self.block(b).predicates {
                if !p.lhs.uses_var(var) && !p.rhs.uses_var(var) {
                    continue;
                }
                let lin = linear_in(&p.lhs, var, self);
                let ok = !p.rhs.uses_var(var)
                    && lin.as_ref().and_then(|x| x.const_coeff()).is_some_and(|c| c > 0)
                    && !inner_vars.iter().any(|iv| p.lhs.uses_var(*iv) || p.rhs.uses_var(*iv));
                if !ok {
                    return Some(format!(
                        "tail=\"{}\" needs a tail condition increasing in the loop and independent of inner loops, but block `{}` has `{} < {}`; use tail=\"predicate\"",
                        tail.name(),
                        self.block(b).name,
                        self.expr_text(&p.lhs),
                        self.expr_text(&p.rhs)
                    ));
                }
            }
        }
        None
    }

    /// Marks `l` for full unrolling at lowering.
    pub fn unroll(&mut self, l: LoopId) -> Result<()> {
        const PRIM: &str = "unroll";
        self.check_loop(PRIM, l)?;
        if self.loop_(l).kind != LoopKind::Serial {
            return Err(self.kind_error(PRIM, l, format!("it is already {}", self.kind_name(l))));
        }
        let extent = simplify(self.extent(l), self);
        let constant = match self.caps.fixed_vscale() {
            Some(v) => simplify(&extent.with_vscale(i64::from(v)), self).as_int(),
            None => extent.as_int(),
        };
        match constant {
            Some(n) if n <= MAX_UNROLL => {}
            Some(n) => return Err(self.kind_error(PRIM, l, format!("its extent {n} exceeds {MAX_UNROLL}"))),
            None => {
                return Err(self.kind_error(
                    PRIM,
                    l,
                    format!("its extent {} is not a compile-time constant on this target", self.expr_text(&extent)),
                ))
            }
        }
        self.loop_mut(l).kind = LoopKind::Unroll;
        // Nested unrolled loops multiply: refuse beyond the bound on copies.
        if let Err(e) = self.check_limits() {
            self.loop_mut(l).kind = LoopKind::Serial;
            return Err(ScheduleError::new(
                PRIM,
                ErrorKind::Limit,
                format!("cannot unroll `{}`: {e}", self.loop_name(l)),
            ));
        }
        Ok(())
    }

    /// Marks `l` to run its iterations on several threads.
    pub fn parallel(&mut self, l: LoopId) -> Result<()> {
        const PRIM: &str = "parallel";
        self.check_loop(PRIM, l)?;
        if self.loop_(l).kind != LoopKind::Serial {
            return Err(self.kind_error(PRIM, l, format!("it is already {}", self.kind_name(l))));
        }
        for a in self.ancestors(Node::Loop(l)) {
            if matches!(self.loop_(a).kind, LoopKind::Vectorize(_) | LoopKind::Parallel) {
                return Err(self.kind_error(
                    PRIM,
                    l,
                    format!("it is inside the {} loop `{}`", self.kind_name(a), self.loop_name(a)),
                ));
            }
        }
        for x in self.loops_in(Node::Loop(l)) {
            if x != l && self.loop_(x).kind == LoopKind::Parallel {
                return Err(self.kind_error(PRIM, l, format!("it contains the parallel loop `{}`", self.loop_name(x))));
            }
            // Each thread would need ZA state of its own.
            if self.is_tensorized(x) {
                return Err(self.kind_error(
                    PRIM,
                    l,
                    format!("it contains the SME micro-kernel `{}`", self.loop_name(x)),
                ));
            }
        }
        let var = self.loop_(l).var;
        for b in self.blocks_in(Node::Loop(l)) {
            if self.reduction_loop_vars(b).contains(&var) {
                return Err(self.kind_error(
                    PRIM,
                    l,
                    format!("it carries the reduction of block `{}`", self.block(b).name),
                ));
            }
        }
        self.loop_mut(l).kind = LoopKind::Parallel;
        Ok(())
    }
}

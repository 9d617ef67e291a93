//! Blocks: predicates, values and the update of the written element.

use super::access::{Shape, Slot, LHS};
use super::ctx::{Lowerer, Result};
use super::math;
use crate::vprog::{BinOp, BufId, CmpOp, Elem, Op, ReduceOp, Reg, Stmt, UnOp};
use scaletune_space::expr::{linear_in, Expr};
use scaletune_space::ids::BlockId;
use scaletune_space::ir::Pred;
use scaletune_space::workload::{BinOp as VBin, UnFn, UpdateOp, Value};
use scaletune_space::DType;
use std::rc::Rc;

impl Lowerer {
    /// Emits one block.
    pub fn block(&mut self, b: BlockId) -> Result<()> {
        let nest = Rc::clone(&self.nest);
        let blk = nest.block(b);
        let vvar = self.vec.as_ref().map(|v| v.var);
        let full = self.vec.as_ref().is_some_and(|v| v.full);
        let (varying, uniform): (Vec<Pred>, Vec<Pred>) =
            blk.predicates.iter().cloned().partition(|p| vvar.is_some_and(|v| p.lhs.uses_var(v) || p.rhs.uses_var(v)));
        let uniform = self.without_holding_guards(b, uniform);
        if !uniform.is_empty() {
            let cond = self.conjunction(&uniform)?;
            self.b.begin_body();
            self.block_body(b, &varying, full)?;
            let then_body = self.b.end_body();
            self.b.push(Stmt::If { cond, then_body, else_body: Vec::new() });
            Ok(())
        } else {
            self.block_body(b, &varying, full)
        }
    }

    /// `preds` of block `b` without the guards of unrolled loops that the
    /// current version knows to hold (see `tails`).
    pub(crate) fn without_holding_guards(&self, b: BlockId, preds: Vec<Pred>) -> Vec<Pred> {
        if self.tails.guards.is_empty() {
            return preds;
        }
        let anc = self.nest.ancestors(scaletune_space::ir::Node::Block(b));
        preds.into_iter().filter(|p| !self.tails.guard_holds(&self.modes, &anc, p)).collect()
    }

    /// The scalar condition that every predicate holds.
    pub fn conjunction(&mut self, preds: &[Pred]) -> Result<Reg> {
        let mut acc: Option<Reg> = None;
        for p in preds {
            let l = self.index(&p.lhs)?;
            let r = self.index(&p.rhs)?;
            let c = self.b.emit(Op::Cmp(CmpOp::Lt, l, r));
            acc = Some(match acc {
                None => c,
                Some(a) => self.b.bin(BinOp::And, a, c),
            });
        }
        Ok(acc.unwrap_or_else(|| self.b.bool(true)))
    }

    /// The lane mask of predicates that depend on the vector lane.
    pub(crate) fn lane_mask(&mut self, preds: &[Pred]) -> Result<Option<Reg>> {
        let Some(vc) = self.vec.clone() else { return Ok(None) };
        let mut acc: Option<Reg> = None;
        for p in preds {
            let lin = if p.rhs.uses_var(vc.var) { None } else { linear_in(&p.lhs, vc.var, &*self.nest) };
            let m = match lin.as_ref().and_then(|l| l.const_coeff().map(|c| (c, l.rest.clone()))) {
                Some((1, rest)) => {
                    let base = self.index(&rest)?;
                    let bound = self.index(&p.rhs)?;
                    self.b.emit(Op::ActiveLaneMask { base, bound, lanes: vc.lanes })
                }
                _ => {
                    let l = self.index_vec(&p.lhs, acc)?;
                    let r = self.index_vec(&p.rhs, acc)?;
                    self.b.emit(Op::Cmp(CmpOp::Lt, l, r))
                }
            };
            acc = Some(match acc {
                None => m,
                Some(a) => self.b.bin(BinOp::And, a, m),
            });
        }
        Ok(acc)
    }

    fn block_body(&mut self, b: BlockId, varying: &[Pred], full: bool) -> Result<()> {
        let nest = Rc::clone(&self.nest);
        let blk = nest.block(b);
        let mask = if full { None } else { self.lane_mask(varying)? };
        let value = self.value(b, &blk.rhs, mask)?;
        let t = blk.lhs.tensor;
        let dtype = self.dtype(t);
        let value = self.convert(value, dtype);
        let buf = self.bufs[t.index()];
        let neutral = blk.op.neutral(dtype);
        // Vector accumulator of a reduction over the vector loop.
        if let (Some(acc), Some(_)) = (self.active_accs.get(&b).copied(), &self.vec) {
            let value = self.widen(value);
            let n = neutral.expect("reductions have a neutral element");
            let value = self.masked(value, mask, n, dtype);
            let next = self.combine(blk.op, acc, value);
            self.b.assign(acc, Op::Copy(next));
            return Ok(());
        }
        // A promoted element: update its register.
        if let Some(keys) = self.tiles.keys.get(&b) {
            let values: Vec<i64> = keys.iter().map(|k| self.unrolled.get(k).copied().unwrap_or(-1)).collect();
            if let Some(acc) = self.active_tiles.get(&(b, values)).copied() {
                let value = if self.b.ty(acc).is_vector() { self.widen(value) } else { value };
                let next = self.combine(blk.op, acc, value);
                let next = match mask {
                    Some(m) => self.b.emit(Op::Select(m, next, acc)),
                    None => next,
                };
                self.b.assign(acc, Op::Copy(next));
                return Ok(());
            }
        }
        let shape = self.access_shape(b, LHS, &blk.lhs);
        match &*shape {
            Shape::Uniform(flat) => {
                let value = if self.vec.is_some() {
                    // A reduction over the lanes, completed in this iteration.
                    let n = neutral.ok_or_else(|| {
                        self.unsupported(format!("block `{}` writes one element from every lane", blk.name))
                    })?;
                    let v = self.widen(value);
                    let v = self.masked(v, mask, n, dtype);
                    self.b.emit(Op::Reduce(reduce_op(blk.op), v))
                } else {
                    value
                };
                let i = self.index(flat)?;
                let new = match blk.op {
                    UpdateOp::Assign => value,
                    op => {
                        self.init_store(b, buf, Target::Scalar(i), mask)?;
                        let old = self.b.emit(Op::Load { buf, index: i });
                        self.combine(op, old, value)
                    }
                };
                self.b.push(Stmt::Store { buf, index: i, value: new });
            }
            Shape::Contiguous(base) => {
                let lanes = self.vec.as_ref().expect("vector context").lanes;
                let value = self.widen(value);
                let base = self.index(base)?;
                let new = match blk.op {
                    UpdateOp::Assign => value,
                    op => {
                        self.init_store(b, buf, Target::Contiguous(base), mask)?;
                        let old = self.b.emit(Op::VLoad { buf, base, lanes, mask });
                        self.combine(op, old, value)
                    }
                };
                self.b.push(Stmt::VStore { buf, base, value: new, mask });
            }
            s @ (Shape::Strided(..) | Shape::Irregular(_)) => {
                let value = self.widen(value);
                let idx = self.lane_indices(s, mask)?;
                let new = match blk.op {
                    UpdateOp::Assign => value,
                    op => {
                        self.init_store(b, buf, Target::Lanes(idx), mask)?;
                        let old = self.b.emit(Op::Gather { buf, indices: idx, mask });
                        self.combine(op, old, value)
                    }
                };
                self.b.push(Stmt::Scatter { buf, indices: idx, value: new, mask });
            }
        }
        Ok(())
    }

    /// For a block that still initializes its reduction itself (`init`):
    /// stores the neutral element where every reduction iterator is 0
    /// (for a scalar element written from a vector: if any active lane is).
    fn init_store(&mut self, b: BlockId, buf: BufId, target: Target, mask: Option<Reg>) -> Result<()> {
        let nest = Rc::clone(&self.nest);
        let blk = nest.block(b);
        if !blk.init {
            return Ok(());
        }
        let dtype = self.dtype(blk.lhs.tensor);
        let n = blk.op.neutral(dtype).unwrap_or(0.0);
        let vvar = self.vec.as_ref().map(|v| v.var);
        let mut cond: Option<Reg> = None;
        for (it, e) in blk.iters.iter().zip(&blk.bindings) {
            if it.kind != scaletune_space::workload::AxisKind::Reduce {
                continue;
            }
            let c = if vvar.is_some_and(|v| e.uses_var(v)) {
                let x = self.index_vec(e, mask)?;
                let z = self.index_vec(&Expr::Int(0), mask)?;
                self.b.emit(Op::Cmp(CmpOp::Eq, x, z))
            } else {
                let x = self.index(e)?;
                let z = self.b.index(0);
                self.b.emit(Op::Cmp(CmpOp::Eq, x, z))
            };
            cond = Some(match cond {
                None => c,
                Some(a) => {
                    let (a, c) = self.same_shape(a, c);
                    self.b.bin(BinOp::And, a, c)
                }
            });
        }
        let cond = match cond {
            Some(c) => c,
            None => self.b.bool(true),
        };
        let neutral = self.b.constant(n, dtype);
        match (target, self.b.ty(cond).lanes) {
            (Target::Scalar(i), Some(lanes)) => {
                // Any active lane at the first reduction iteration.
                let cond = match mask {
                    Some(m) => self.b.bin(BinOp::And, cond, m),
                    None => cond,
                };
                let one = self.b.constant(1.0, DType::I32);
                let zero = self.b.constant(0.0, DType::I32);
                let (one_v, zero_v) = (self.b.emit(Op::Splat(one, lanes)), self.b.emit(Op::Splat(zero, lanes)));
                let as_int = self.b.emit(Op::Select(cond, one_v, zero_v));
                let any = self.b.emit(Op::Reduce(ReduceOp::Max, as_int));
                let c = self.b.emit(Op::Cmp(CmpOp::Eq, any, one));
                self.b.push(Stmt::If {
                    cond: c,
                    then_body: vec![Stmt::Store { buf, index: i, value: neutral }],
                    else_body: Vec::new(),
                });
            }
            (Target::Scalar(i), None) => {
                self.b.push(Stmt::If {
                    cond,
                    then_body: vec![Stmt::Store { buf, index: i, value: neutral }],
                    else_body: Vec::new(),
                });
            }
            (t, cond_lanes) => {
                let lanes = self.vec.as_ref().expect("vector context").lanes;
                let nv = self.b.emit(Op::Splat(neutral, lanes));
                let store_mask = match cond_lanes {
                    Some(_) => Some(match mask {
                        Some(m) => self.b.bin(BinOp::And, cond, m),
                        None => cond,
                    }),
                    None => mask,
                };
                let st = match t {
                    Target::Contiguous(base) => Stmt::VStore { buf, base, value: nv, mask: store_mask },
                    Target::Lanes(idx) => Stmt::Scatter { buf, indices: idx, value: nv, mask: store_mask },
                    Target::Scalar(_) => unreachable!("handled above"),
                };
                if cond_lanes.is_some() {
                    self.b.push(st);
                } else {
                    self.b.push(Stmt::If { cond, then_body: vec![st], else_body: Vec::new() });
                }
            }
        }
        Ok(())
    }

    /// Splats the scalar one of two booleans when the other is a mask.
    fn same_shape(&mut self, a: Reg, c: Reg) -> (Reg, Reg) {
        match (self.b.ty(a).lanes, self.b.ty(c).lanes) {
            (Some(l), None) => (a, self.b.emit(Op::Splat(c, l))),
            (None, Some(l)) => (self.b.emit(Op::Splat(a, l)), c),
            _ => (a, c),
        }
    }

    /// `select(mask, v, neutral)` (or `v` without a mask).
    fn masked(&mut self, v: Reg, mask: Option<Reg>, neutral: f64, dtype: DType) -> Reg {
        match mask {
            None => v,
            Some(m) => {
                let lanes = self.b.ty(v).lanes.expect("a vector");
                let n = self.b.constant(neutral, dtype);
                let n = self.b.emit(Op::Splat(n, lanes));
                self.b.emit(Op::Select(m, v, n))
            }
        }
    }

    /// `a op b` for an update operator.
    pub fn combine(&mut self, op: UpdateOp, a: Reg, b: Reg) -> Reg {
        match op {
            UpdateOp::Assign => b,
            UpdateOp::Add => self.b.bin(BinOp::Add, a, b),
            UpdateOp::Max => self.b.bin(BinOp::Max, a, b),
            UpdateOp::Min => self.b.bin(BinOp::Min, a, b),
        }
    }

    /// Splats a scalar to the current vector width (no-op outside vector loops or for vectors).
    pub fn widen(&mut self, r: Reg) -> Reg {
        match &self.vec {
            Some(vc) if !self.b.ty(r).is_vector() => {
                let lanes = vc.lanes;
                self.b.emit(Op::Splat(r, lanes))
            }
            _ => r,
        }
    }

    fn convert(&mut self, r: Reg, to: DType) -> Reg {
        if self.b.ty(r).elem == Elem::Data(to) {
            r
        } else {
            self.b.emit(Op::Cast(r, Elem::Data(to)))
        }
    }

    /// Emits a value expression: scalar when it does not depend on the lane.
    /// `v` must be the value of block `b` in the lowerer's nest.
    pub fn value(&mut self, b: BlockId, v: &Value, mask: Option<Reg>) -> Result<Reg> {
        self.value_from(b, v, mask, &mut 0)
    }

    /// [`Lowerer::value`] of a part of a block's value whose first read is
    /// read number `slot` of the block (advanced past its reads).
    fn value_from(&mut self, b: BlockId, v: &Value, mask: Option<Reg>, slot: &mut Slot) -> Result<Reg> {
        Ok(match v {
            Value::Const(c, d) => self.b.constant(*c, *d),
            Value::Scalar(i, _) => self.scalars[*i],
            Value::Read(a, _) => {
                let shape = self.access_shape(b, *slot, a);
                *slot += 1;
                self.read_shaped(a.tensor, &shape, mask)?
            }
            Value::Cast(d, x) => {
                let r = self.value_from(b, x, mask, slot)?;
                self.convert(r, *d)
            }
            Value::Un(f, x) => {
                let r = self.value_from(b, x, mask, slot)?;
                match f {
                    UnFn::Neg => self.b.emit(Op::Un(UnOp::Neg, r)),
                    UnFn::Abs => self.b.emit(Op::Un(UnOp::Abs, r)),
                    UnFn::Sqrt => self.b.emit(Op::Un(UnOp::Sqrt, r)),
                    UnFn::Exp => math::exp(&mut self.b, r),
                    UnFn::Cos => math::cos(&mut self.b, r),
                }
            }
            Value::Bin(op, x, y) => {
                let mut rx = self.value_from(b, x, mask, slot)?;
                let mut ry = self.value_from(b, y, mask, slot)?;
                let (vx, vy) = (self.b.ty(rx).is_vector(), self.b.ty(ry).is_vector());
                if vx && !vy {
                    ry = self.widen(ry);
                } else if vy && !vx {
                    rx = self.widen(rx);
                }
                let o = match op {
                    VBin::Add => BinOp::Add,
                    VBin::Sub => BinOp::Sub,
                    VBin::Mul => BinOp::Mul,
                    VBin::Div => BinOp::Div,
                    VBin::Max => BinOp::Max,
                    VBin::Min => BinOp::Min,
                };
                self.b.bin(o, rx, ry)
            }
        })
    }
}

/// Where a block's element(s) live, for the initializing store.
enum Target {
    /// One element at an index.
    Scalar(Reg),
    /// Consecutive elements.
    Contiguous(Reg),
    /// One element per lane at an index vector.
    Lanes(Reg),
}

/// The horizontal reduction of an update operator.
pub(crate) fn reduce_op(op: UpdateOp) -> ReduceOp {
    match op {
        UpdateOp::Max => ReduceOp::Max,
        UpdateOp::Min => ReduceOp::Min,
        _ => ReduceOp::Add,
    }
}

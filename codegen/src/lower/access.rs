//! Index expressions and memory accesses.

use super::ctx::{Lowerer, Result};
use crate::vprog::{BinOp, Elem, Op, Reg};
use scaletune_space::expr::{linear_in, Expr};
use scaletune_space::ids::{BlockId, TensorId, VarId};
use scaletune_space::workload::Access;
use scaletune_space::DType;
use smallvec::SmallVec;
use std::rc::Rc;

/// The terms of a sum (index sums have a handful).
type Terms<'e> = SmallVec<[&'e Expr; 8]>;

/// Which access of a block: its written element ([`LHS`]) or its `n`-th
/// read (in the order [`Lowerer::value`] visits them).
pub(crate) type Slot = u32;

/// The written element of a block.
pub(crate) const LHS: Slot = u32::MAX;

/// An access of a block under a vector variable (or none): what its shape
/// depends on while the lowerer's nest stays unchanged.
pub(crate) type AccessKey = (BlockId, Slot, Option<VarId>);

/// How an access depends on the current vector lane.
pub(crate) enum Shape {
    /// The same element for every lane.
    Uniform(Expr),
    /// Consecutive elements starting at `base` (stride 1).
    Contiguous(Expr),
    /// Elements `base + stride * lane`.
    Strided(Expr, i64),
    /// Anything else: indices computed lane by lane.
    Irregular(Expr),
}

impl Lowerer {
    /// Emits a scalar index expression (every variable must be scalar here).
    pub fn index(&mut self, e: &Expr) -> Result<Reg> {
        self.index_at(e).map(|(r, _)| r)
    }

    /// [`Lowerer::index`], with the depth of `e`: the register number of
    /// the innermost loop variable it uses (`None` if it uses none), by
    /// which sums order their terms. Found while emitting, not by another
    /// walk of each term.
    fn index_at(&mut self, e: &Expr) -> Result<(Reg, Option<u32>)> {
        Ok(match e {
            Expr::Int(v) => (self.b.index(*v), None),
            Expr::VScale => match self.vscale_const {
                Some(c) => (self.b.index(c), None),
                None => (self.b.emit(Op::VScale), None),
            },
            Expr::Var(v) => match self.vars.get(v) {
                Some(r) => (*r, Some(r.0)),
                None => {
                    return Err(self.unsupported(format!("variable `{}` used outside its loop", self.nest.var(*v).name)))
                }
            },
            Expr::Add(..) => self.sum_index(e)?,
            Expr::Sub(a, b) => self.bin_index(BinOp::Sub, a, b)?,
            Expr::Mul(a, b) => self.bin_index(BinOp::Mul, a, b)?,
            Expr::FloorDiv(a, b) => self.bin_index(BinOp::FloorDiv, a, b)?,
            Expr::FloorMod(a, b) => self.bin_index(BinOp::FloorMod, a, b)?,
            Expr::Min(a, b) => self.bin_index(BinOp::Min, a, b)?,
            Expr::Max(a, b) => self.bin_index(BinOp::Max, a, b)?,
            Expr::CeilDiv(a, b) => {
                let (x, da) = self.index_at(a)?;
                let (y, db) = self.index_at(b)?;
                let one = self.b.index(1);
                let s = self.b.bin(BinOp::Add, x, y);
                let s = self.b.bin(BinOp::Sub, s, one);
                (self.b.bin(BinOp::FloorDiv, s, y), da.max(db))
            }
            Expr::Load(t, idx) => {
                let flat = self.nest.flat_index(*t, idx);
                let i = self.index(&flat)?;
                let v = self.b.emit(Op::Load { buf: self.bufs[t.index()], index: i });
                // The variables of the indices as written (the flat index
                // may have simplified one away).
                let mut depth = None;
                e.for_each_var(&mut |v| depth = depth.max(self.vars.get(&v).map(|r| r.0)));
                (self.b.emit(Op::Cast(v, Elem::Index)), depth)
            }
        })
    }

    /// Emits a sum with its terms ordered from the outermost loop's variable
    /// to the innermost (constants and `vscale` first): LLVM's reassociation
    /// then has nothing to regroup, so the address stays `invariant + iv`
    /// (an `or disjoint` that SCEV reads as an add) and strength reduction
    /// turns it into a pointer increment instead of recomputing it per access.
    fn sum_index(&mut self, e: &Expr) -> Result<(Reg, Option<u32>)> {
        let mut terms = SmallVec::new();
        flatten_sum(e, &mut terms);
        let mut emitted: SmallVec<[(Option<u32>, Reg); 8]> = SmallVec::with_capacity(terms.len());
        for t in terms {
            let (r, depth) = self.index_at(t)?;
            emitted.push((depth, r));
        }
        // Stable: terms at one depth keep their order.
        emitted.sort_by_key(|(depth, _)| *depth);
        let depth = emitted.last().and_then(|(d, _)| *d);
        let mut regs = emitted.into_iter().map(|(_, r)| r);
        let first = regs.next().expect("a sum has two terms");
        Ok((regs.fold(first, |acc, r| self.b.bin(BinOp::Add, acc, r)), depth))
    }

    fn bin_index(&mut self, op: BinOp, a: &Expr, b: &Expr) -> Result<(Reg, Option<u32>)> {
        let (x, da) = self.index_at(a)?;
        let (y, db) = self.index_at(b)?;
        Ok((self.b.bin(op, x, y), da.max(db)))
    }

    /// Emits an index expression as a vector of lane values (the vector
    /// variable is the lane number); gathers of index tensors use `mask`.
    pub fn index_vec(&mut self, e: &Expr, mask: Option<Reg>) -> Result<Reg> {
        let vc = self.vec.clone().expect("index_vec in a vector loop");
        if !e.uses_var(vc.var) {
            let s = self.index(e)?;
            return Ok(self.b.emit(Op::Splat(s, vc.lanes)));
        }
        Ok(match e {
            Expr::Var(_) => self.b.emit(Op::Step(vc.lanes)),
            Expr::Add(a, b) => self.bin_vec(BinOp::Add, a, b, mask)?,
            Expr::Sub(a, b) => self.bin_vec(BinOp::Sub, a, b, mask)?,
            Expr::Mul(a, b) => self.bin_vec(BinOp::Mul, a, b, mask)?,
            Expr::FloorDiv(a, b) => self.bin_vec(BinOp::FloorDiv, a, b, mask)?,
            Expr::FloorMod(a, b) => self.bin_vec(BinOp::FloorMod, a, b, mask)?,
            Expr::Min(a, b) => self.bin_vec(BinOp::Min, a, b, mask)?,
            Expr::Max(a, b) => self.bin_vec(BinOp::Max, a, b, mask)?,
            Expr::CeilDiv(a, b) => {
                let e2 = ((**a).clone() + (**b).clone() - 1).floordiv((**b).clone());
                self.index_vec(&e2, mask)?
            }
            Expr::Load(t, idx) => {
                let flat = self.nest.flat_index(*t, idx);
                let iv = self.index_vec(&flat, mask)?;
                let v = self.b.emit(Op::Gather { buf: self.bufs[t.index()], indices: iv, mask });
                self.b.emit(Op::Cast(v, Elem::Index))
            }
            Expr::Int(_) | Expr::VScale => unreachable!("constants do not use the lane variable"),
        })
    }

    fn bin_vec(&mut self, op: BinOp, a: &Expr, b: &Expr, mask: Option<Reg>) -> Result<Reg> {
        let x = self.index_vec(a, mask)?;
        let y = self.index_vec(b, mask)?;
        Ok(self.b.bin(op, x, y))
    }

    /// Classifies the flat element offset of an access by its lane dependence.
    pub fn shape(&self, t: TensorId, bound_indices: &[Expr]) -> Shape {
        let flat = self.nest.flat_index(t, bound_indices);
        let Some(vc) = &self.vec else { return Shape::Uniform(flat) };
        if !flat.uses_var(vc.var) {
            return Shape::Uniform(flat);
        }
        match linear_in(&flat, vc.var, &*self.nest) {
            Some(lin) => match lin.const_coeff() {
                Some(1) => Shape::Contiguous(lin.rest),
                Some(c) => Shape::Strided(lin.rest, c),
                None => Shape::Irregular(flat),
            },
            None => Shape::Irregular(flat),
        }
    }

    /// The shape of access `a` (in `slot`) of block `b`, its indices bound
    /// to the enclosing loops: computed once per vector variable, as it
    /// depends on nothing else.
    pub(crate) fn access_shape(&mut self, b: BlockId, slot: Slot, a: &Access) -> Rc<Shape> {
        let key = (b, slot, self.vec.as_ref().map(|v| v.var));
        if let Some(s) = self.shapes.get(&key) {
            return Rc::clone(s);
        }
        let bound: Vec<Expr> = a.indices.iter().map(|e| self.nest.bind(b, e)).collect();
        let s = Rc::new(self.shape(a.tensor, &bound));
        self.shapes.insert(key, Rc::clone(&s));
        s
    }

    /// Lane indices of a strided or irregular access.
    pub fn lane_indices(&mut self, s: &Shape, mask: Option<Reg>) -> Result<Reg> {
        let lanes = self.vec.as_ref().expect("vector context").lanes;
        match s {
            Shape::Strided(base, c) => {
                let b = self.index(base)?;
                let bs = self.b.emit(Op::Splat(b, lanes));
                let st = self.b.emit(Op::Step(lanes));
                let c = self.b.index(*c);
                let cs = self.b.emit(Op::Splat(c, lanes));
                let off = self.b.bin(BinOp::Mul, st, cs);
                Ok(self.b.bin(BinOp::Add, bs, off))
            }
            Shape::Irregular(e) => self.index_vec(&e.clone(), mask),
            Shape::Uniform(_) | Shape::Contiguous(_) => unreachable!("only strided and irregular accesses gather"),
        }
    }

    /// Reads element(s) of tensor `t`; a vector in a vector loop unless uniform.
    pub fn read(&mut self, t: TensorId, bound_indices: &[Expr], mask: Option<Reg>) -> Result<Reg> {
        let s = self.shape(t, bound_indices);
        self.read_shaped(t, &s, mask)
    }

    /// Reads element(s) of tensor `t` at an access of shape `s`.
    pub(crate) fn read_shaped(&mut self, t: TensorId, s: &Shape, mask: Option<Reg>) -> Result<Reg> {
        let buf = self.bufs[t.index()];
        Ok(match s {
            Shape::Uniform(flat) => {
                let i = self.index(flat)?;
                self.b.emit(Op::Load { buf, index: i })
            }
            Shape::Contiguous(base) => {
                let lanes = self.vec.as_ref().expect("vector context").lanes;
                let base = self.index(base)?;
                self.b.emit(Op::VLoad { buf, base, lanes, mask })
            }
            _ => {
                let idx = self.lane_indices(s, mask)?;
                self.b.emit(Op::Gather { buf, indices: idx, mask })
            }
        })
    }

    /// The dtype of a tensor.
    pub fn dtype(&self, t: TensorId) -> DType {
        self.nest.tensor(t).dtype
    }
}

/// The terms of a (nested) sum, left to right.
fn flatten_sum<'e>(e: &'e Expr, out: &mut Terms<'e>) {
    match e {
        Expr::Add(a, b) => {
            flatten_sum(a, out);
            flatten_sum(b, out);
        }
        _ => out.push(e),
    }
}

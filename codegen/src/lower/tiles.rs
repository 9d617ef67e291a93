//! Register promotion of the elements a block accumulates into.
//!
//! When a block updates (`+=`, `max=`, `min=`) elements that stay the same
//! across the iterations of some enclosing loops — `C[i, j] += A[i, k] *
//! B[k, j]` under a loop over `k` — the elements are loaded into registers
//! before the outermost such loop `H`, updated in registers, and stored once
//! after it. Unrolled loops between `H` and the block that index the
//! elements give one register per unrolled instance (the register tile of a
//! blocked matmul); the vector loop gives vector registers.

use super::ctx::{Lowerer, Result, VecCtx};
use super::tails::{TailPlan, VecMode};
use crate::vprog::{Op, Reg, Stmt};
use rustc_hash::FxHashMap as HashMap;
use scaletune_space::expr::{eval, Expr};
use scaletune_space::ids::{BlockId, LoopId, VarId};
use scaletune_space::ir::{LoopKind, Nest, Node, Tail};
use scaletune_space::workload::UpdateOp;

/// Largest number of registers one promoted block may use.
const MAX_INSTANCES: i64 = 64;

/// One promoted block.
#[derive(Clone, Debug)]
pub(crate) struct TileAcc {
    pub block: BlockId,
    /// Unrolled loops between `H` and the block that index the element.
    pub keys: Vec<LoopId>,
    /// The vector loop enclosing the block, if it lies inside `H` (the
    /// accumulators are then vectors created outside it).
    pub vloop: Option<LoopId>,
}

/// Promotions by the loop `H` they wrap.
#[derive(Clone, Debug, Default)]
pub(crate) struct TilePlan {
    pub at: HashMap<LoopId, Vec<TileAcc>>,
    pub keys: HashMap<BlockId, Vec<VarId>>,
}

impl TilePlan {
    pub fn build(nest: &Nest, tails: &TailPlan, lane_reduced: &[BlockId]) -> TilePlan {
        let mut plan = TilePlan::default();
        for b in nest.all_blocks() {
            let blk = nest.block(b);
            if blk.op == UpdateOp::Assign || blk.init || lane_reduced.contains(&b) {
                continue;
            }
            let anc = nest.ancestors(Node::Block(b));
            if anc.iter().any(|l| nest.is_tensorized(*l)) {
                continue; // accumulated in ZA tiles
            }
            let v = anc.iter().copied().find(|l| matches!(nest.loop_(*l).kind, LoopKind::Vectorize(_)));
            let bound: Vec<Expr> = blk.lhs.indices.iter().map(|e| nest.bind(b, e)).collect();
            let flat = nest.flat_index(blk.lhs.tensor, &bound);
            if let Some(v) = v {
                if !flat.uses_var(nest.loop_(v).var) {
                    continue;
                }
            }
            let mut child = Node::Block(b);
            let mut keys = Vec::new();
            let mut found: Option<(LoopId, Vec<LoopId>)> = None;
            for l in anc.iter().rev() {
                let lp = nest.loop_(*l);
                if lp.body != vec![child] || lp.kind == LoopKind::Parallel {
                    break;
                }
                if flat.uses_var(lp.var) {
                    if Some(*l) == v {
                    } else if lp.kind == LoopKind::Unroll {
                        keys.push(*l);
                    } else {
                        break;
                    }
                } else {
                    found = Some((*l, keys.clone()));
                }
                child = Node::Loop(*l);
            }
            let Some((h, keys)) = found else { continue };
            let instances: i64 = keys
                .iter()
                .map(|k| eval(nest.extent(*k), &|_| None, 1, &|_, _| None).unwrap_or(MAX_INSTANCES + 1))
                .product();
            if instances > MAX_INSTANCES {
                continue;
            }
            // Conditions must either be computable before H or not involve the
            // element's varying loops at all.
            let pos_h = anc.iter().position(|x| *x == h).expect("h is an ancestor");
            let inside: Vec<VarId> = anc[pos_h..].iter().map(|l| nest.loop_(*l).var).collect();
            let tile_vars: Vec<VarId> = keys.iter().chain(v.iter()).map(|l| nest.loop_(*l).var).collect();
            let ok = blk.predicates.iter().all(|p| {
                let vars: Vec<VarId> = p.lhs.vars().into_iter().chain(p.rhs.vars()).collect();
                let uses_tile = vars.iter().any(|x| tile_vars.contains(x));
                let uses_other_inner = vars.iter().any(|x| inside.contains(x) && !tile_vars.contains(x));
                !(uses_tile && uses_other_inner)
            });
            if !ok {
                continue;
            }
            // A scalar tail decided at or inside H would update memory directly.
            if let Some(v) = v {
                if nest.loop_(v).kind == LoopKind::Vectorize(Tail::Scalar) {
                    let point = tails
                        .at_loop
                        .iter()
                        .find(|(_, ver)| ver.vloops.contains(&v))
                        .map(|(t, _)| *t)
                        .or_else(|| tails.at_vector.contains_key(&v).then_some(v));
                    if let Some(t) = point {
                        if !anc[..pos_h].contains(&t) {
                            continue;
                        }
                    }
                }
            }
            let v_inside = v.filter(|vl| !anc[..pos_h].contains(vl));
            plan.keys.insert(b, keys.iter().map(|k| nest.loop_(*k).var).collect());
            plan.at.entry(h).or_default().push(TileAcc { block: b, keys, vloop: v_inside });
        }
        plan
    }
}

impl Lowerer {
    /// Every combination of the key loops' values.
    fn instances(&self, keys: &[LoopId]) -> Vec<Vec<i64>> {
        let mut out = vec![Vec::new()];
        for k in keys {
            let n = eval(self.nest.extent(*k), &|_| None, self.vscale_const.unwrap_or(1), &|_, _| None).unwrap_or(0);
            out = out.into_iter().flat_map(|p| (0..n).map(move |i| [p.clone(), vec![i]].concat())).collect();
        }
        out
    }

    /// Runs `f` with the key loops bound to `values` and the block's vector
    /// loop entered if it is not already.
    fn with_instance<T>(
        &mut self,
        t: &TileAcc,
        values: &[i64],
        f: &mut dyn FnMut(&mut Lowerer) -> Result<T>,
    ) -> Result<T> {
        for (k, v) in t.keys.iter().zip(values) {
            let var = self.nest.loop_(*k).var;
            let r = self.b.index(*v);
            self.vars.insert(var, r);
            self.unrolled.insert(var, *v);
        }
        let saved = self.vec.clone();
        if let (Some(vl), None) = (t.vloop, &self.vec) {
            let lanes = self.lanes_of(vl)?;
            let full = self.modes.get(&vl) == Some(&VecMode::Full);
            self.vec = Some(VecCtx { var: self.nest.loop_(vl).var, lanes, full });
        }
        let out = f(self);
        self.vec = saved;
        for k in &t.keys {
            let var = self.nest.loop_(*k).var;
            self.vars.remove(&var);
            self.unrolled.remove(&var);
        }
        out
    }

    /// Loads the promoted elements before loop `H`.
    pub(crate) fn start_tiles(&mut self, h: LoopId) -> Result<Vec<(TileAcc, Vec<Vec<i64>>)>> {
        let mut started = Vec::new();
        for t in self.tiles.at.get(&h).cloned().unwrap_or_default() {
            // In the scalar tail of its vector loop the block runs lane by lane.
            if let Some(vl) = t.vloop {
                if self.nest.loop_(vl).kind == LoopKind::Vectorize(Tail::Scalar)
                    && self.modes.get(&vl) == Some(&VecMode::Tail)
                {
                    continue;
                }
            }
            let inst = self.instances(&t.keys);
            for values in &inst {
                let b = t.block;
                let acc = self.with_instance(&t, values, &mut |lw: &mut Lowerer| {
                    let (cond, access) = lw.tile_access(b)?;
                    lw.b.begin_body();
                    let v = access.load(lw)?;
                    let body = lw.b.end_body();
                    lw.guarded(cond, body);
                    Ok(v)
                })?;
                self.active_tiles.insert((b, values.clone()), acc);
            }
            started.push((t, inst));
        }
        Ok(started)
    }

    /// Stores the promoted elements after loop `H`.
    pub(crate) fn finish_tiles(&mut self, started: Vec<(TileAcc, Vec<Vec<i64>>)>) -> Result<()> {
        for (t, inst) in started {
            for values in inst {
                let b = t.block;
                let Some(acc) = self.active_tiles.remove(&(b, values.clone())) else { continue };
                self.with_instance(&t, &values, &mut |lw: &mut Lowerer| {
                    let (cond, access) = lw.tile_access(b)?;
                    lw.b.begin_body();
                    access.store(lw, acc);
                    let body = lw.b.end_body();
                    lw.guarded(cond, body);
                    Ok(())
                })?;
            }
        }
        Ok(())
    }

    fn guarded(&mut self, cond: Option<Reg>, body: Vec<Stmt>) {
        match cond {
            None => {
                for s in body {
                    self.b.push(s);
                }
            }
            Some(c) => self.b.push(Stmt::If { cond: c, then_body: body, else_body: Vec::new() }),
        }
    }

    /// The condition and the access of a promoted block's element(s) from
    /// outside the loops it accumulates over.
    fn tile_access(&mut self, b: BlockId) -> Result<(Option<Reg>, TileMem)> {
        let nest = std::rc::Rc::clone(&self.nest);
        let blk = nest.block(b);
        let vvar = self.vec.as_ref().map(|v| v.var);
        let full = self.vec.as_ref().is_some_and(|v| v.full);
        let available = |lw: &Lowerer, e: &Expr| e.vars().iter().all(|x| lw.vars.contains_key(x) || Some(*x) == vvar);
        let mut uniform = Vec::new();
        let mut varying = Vec::new();
        for p in &blk.predicates {
            if !available(self, &p.lhs) || !available(self, &p.rhs) {
                continue;
            }
            if vvar.is_some_and(|v| p.lhs.uses_var(v) || p.rhs.uses_var(v)) {
                varying.push(p.clone());
            } else {
                uniform.push(p.clone());
            }
        }
        let uniform = self.without_holding_guards(b, uniform);
        let cond = if uniform.is_empty() { None } else { Some(self.conjunction(&uniform)?) };
        let mask = if full { None } else { self.lane_mask(&varying)? };
        let t = blk.lhs.tensor;
        let buf = self.bufs[t.index()];
        let shape = self.access_shape(b, super::access::LHS, &blk.lhs);
        let mem = match &*shape {
            super::access::Shape::Uniform(flat) => TileMem::Scalar(buf, self.index(flat)?),
            super::access::Shape::Contiguous(base) => {
                let lanes = self.vec.as_ref().expect("vector context").lanes;
                TileMem::Vector(buf, self.index(base)?, lanes, mask)
            }
            s => TileMem::Lanes(buf, self.lane_indices(s, mask)?, mask),
        };
        Ok((cond, mem))
    }
}

/// Where a promoted element lives in memory.
enum TileMem {
    Scalar(crate::vprog::BufId, Reg),
    Vector(crate::vprog::BufId, Reg, crate::vprog::Lanes, Option<Reg>),
    Lanes(crate::vprog::BufId, Reg, Option<Reg>),
}

impl TileMem {
    fn load(&self, lw: &mut Lowerer) -> Result<Reg> {
        Ok(match *self {
            TileMem::Scalar(buf, index) => lw.b.emit(Op::Load { buf, index }),
            TileMem::Vector(buf, base, lanes, mask) => lw.b.emit(Op::VLoad { buf, base, lanes, mask }),
            TileMem::Lanes(buf, indices, mask) => lw.b.emit(Op::Gather { buf, indices, mask }),
        })
    }

    fn store(&self, lw: &mut Lowerer, value: Reg) {
        let s = match *self {
            TileMem::Scalar(buf, index) => Stmt::Store { buf, index, value },
            TileMem::Vector(buf, base, _, mask) => Stmt::VStore { buf, base, value, mask },
            TileMem::Lanes(buf, indices, mask) => Stmt::Scatter { buf, indices, value, mask },
        };
        lw.b.push(s);
    }
}

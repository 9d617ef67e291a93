//! Tensorized micro-kernels: an outer-product loop nest as SME outer products into ZA tiles.
//!
//! For a loop marked by `tensorize` (see `scaletune_space::schedule::OuterProduct`)
//! with `R x C` tiles of `L x L` f32 elements (`L = 4*vscale`):
//!
//! ```text
//! masks: rows of tile row r (row predicates), columns of tile column c (column predicates)
//! ZA tiles: zeroed (the reduction starts here), or loaded slice by slice from the output
//! for k:                         (the reduction loop, if any)
//!   a[r] = X[.. rows of r ..]    contiguous loads, masked
//!   b[c] = Y[.. columns of c ..]
//!   za(r*C + c) += a[r] (x) b[c] (fmopa, masked by both)
//! for r, for each row of r that exists: for c: store the slice to the output, masked by columns
//! ```
//!
//! Rows and columns beyond the output's edge are masked (no scalar clean-up).
//!
//! The widening forms (f16 operands into f32 tiles, i8 into i32) take `g`
//! reduction steps per outer product (`g` = 2 or 4): the reduction loop runs
//! `ceildiv(K, g)` times, each operand is `g` contiguous loads of `L` lanes
//! (steps `g*k .. g*k + g` of the reduction, a step beyond `K` masked off so
//! it reads zeros) interleaved in registers (`zip`) into one vector of
//! `g*L` narrow lanes, and each row and column mask is interleaved `g` times
//! to match.

use super::ctx::{Lowerer, Result, VecCtx};
use crate::vprog::{mopa_group, CmpOp, Const, Elem, Lanes, LoopHint, Op, Reg, Stmt};
use rustc_hash::FxHashSet as HashSet;
use scaletune_space::expr::simplify;
use scaletune_space::expr::Expr;
use scaletune_space::ids::{LoopId, VarId};
use scaletune_space::ir::{Nest, Pred};
use scaletune_space::schedule::{OuterProduct, ZA_LANES_PER_VSCALE};
use scaletune_space::workload::{Access, UpdateOp};
use scaletune_space::DType;
use std::rc::Rc;

/// Tensorized loops whose ZA tiles start at zero (the reduction lies wholly
/// inside the micro-kernel, or there is none): their blocks' initialization
/// is left to the tiles. Call before `decompose_all_inits`.
pub(crate) fn zero_started(nest: &mut Nest) -> HashSet<LoopId> {
    let mut out = HashSet::default();
    for l in nest.all_loops() {
        if !nest.is_tensorized(l) {
            continue;
        }
        let Ok(op) = nest.outer_product(l) else { continue };
        let blk = nest.block(op.block);
        let zero = if op.reductions.is_empty() {
            blk.op == UpdateOp::Assign
        } else {
            let mut inside: Vec<VarId> = op.reductions.iter().map(|k| nest.loop_(*k).var).collect();
            let mut all = nest.reduction_loop_vars(op.block);
            inside.sort();
            all.sort();
            blk.init && inside == all
        };
        if zero {
            nest.block_mut(op.block).init = false;
            out.insert(l);
        }
    }
    out
}

/// `e` with variable `v` shifted by `tiles` ZA tiles: `v + tiles*L`.
fn shift(e: &Expr, v: VarId, tiles: u32) -> Expr {
    if tiles == 0 {
        return e.clone();
    }
    let by = Expr::vscale_times(i64::from(tiles * ZA_LANES_PER_VSCALE));
    e.substitute(&|x| (x == v).then(|| Expr::Var(v) + by.clone()))
}

/// One reduction step of a (widening) outer product.
struct Step {
    /// The reduction variable and the step's index over it (`g*k + q`);
    /// `None` without a reduction loop.
    at: Option<(VarId, Expr)>,
    /// `None`: the step does not exist (its operand is zero); `Some(None)`:
    /// it always exists; `Some(Some(c))`: it exists when `c` holds.
    exists: Option<Option<Reg>>,
}

fn shift_preds(ps: &[Pred], v: VarId, tiles: u32) -> Vec<Pred> {
    ps.iter().map(|p| Pred { lhs: shift(&p.lhs, v, tiles), rhs: p.rhs.clone() }).collect()
}

impl Lowerer {
    /// Emits the micro-kernel of tensorized loop `l`.
    pub(crate) fn tensorized(&mut self, l: LoopId) -> Result<()> {
        let op = self.nest.outer_product(l).map_err(|e| self.unsupported(e.to_string()))?;
        if self.vscale_const.is_some() || self.vec.is_some() {
            return Err(
                self.unsupported("a tensorized loop needs streaming (scalable) vectors outside any vector loop")
            );
        }
        if op.outer_preds.is_empty() {
            return self.micro_kernel(l, &op);
        }
        let cond = self.conjunction(&op.outer_preds)?;
        self.b.begin_body();
        self.micro_kernel(l, &op)?;
        let then_body = self.b.end_body();
        self.b.push(Stmt::If { cond, then_body, else_body: Vec::new() });
        Ok(())
    }

    fn micro_kernel(&mut self, l: LoopId, op: &OuterProduct) -> Result<()> {
        let lanes = Lanes::scalable(ZA_LANES_PER_VSCALE);
        let (iv, jv) = (self.nest.loop_(op.rows).var, self.nest.loop_(op.cols).var);
        let tile = |r: u32, c: u32| (r * op.col_tiles + c) as u8;
        // Lane masks of each tile row and column.
        let mut row_masks = Vec::new();
        for r in 0..op.row_tiles {
            self.vec = Some(VecCtx { var: iv, lanes, full: false });
            row_masks.push(self.lane_mask(&shift_preds(&op.row_preds, iv, r))?);
        }
        let mut col_masks = Vec::new();
        for c in 0..op.col_tiles {
            self.vec = Some(VecCtx { var: jv, lanes, full: false });
            col_masks.push(self.lane_mask(&shift_preds(&op.col_preds, jv, c))?);
        }
        self.vec = None;
        let g =
            mopa_group(op.input).ok_or_else(|| self.unsupported(format!("outer products of {} operands", op.input)))?;
        // The masks of the outer products: each lane repeated for the `g` steps it holds.
        let wide = |lw: &mut Lowerer, ms: &[Option<Reg>]| -> Vec<Option<Reg>> {
            ms.iter().map(|m| m.map(|m| lw.repeat_lanes(&[m; 4][..g as usize]))).collect()
        };
        let (row_wide, col_wide) = (wide(self, &row_masks), wide(self, &col_masks));
        if self.za_zero_start.contains(&l) {
            for r in 0..op.row_tiles {
                for c in 0..op.col_tiles {
                    self.b.push(Stmt::ZaZero { tile: tile(r, c) });
                }
            }
        } else {
            self.za_slices(op, &col_masks, false)?;
        }
        // Reduction step `q` of this outer product: its index (over the
        // reduction variable, now counting groups of `g` steps), whether it
        // exists (`None`: always).
        let steps = |lw: &mut Lowerer, kv: Option<VarId>, ext: Option<&Expr>| -> Result<Vec<Step>> {
            let mut out = Vec::new();
            for q in 0..i64::from(g) {
                let Some(kv) = kv else {
                    out.push(Step { at: None, exists: (q == 0).then_some(None) });
                    continue;
                };
                let at = if g == 1 { Expr::Var(kv) } else { Expr::Var(kv) * i64::from(g) + q };
                let exists = match ext {
                    Some(ext) if q > 0 && ext.as_int().is_none_or(|n| n % i64::from(g) != 0) => {
                        let (i, n) = (lw.index(&at)?, lw.index(ext)?);
                        Some(Some(lw.b.emit(Op::Cmp(CmpOp::Lt, i, n))))
                    }
                    _ => Some(None),
                };
                out.push(Step { at: Some((kv, at)), exists });
            }
            Ok(out)
        };
        let body = |lw: &mut Lowerer, steps: &[Step]| -> Result<()> {
            let mut a = Vec::new();
            for (r, m) in row_masks.iter().enumerate() {
                a.push(lw.operand(op, &op.row_operand, iv, r as u32, *m, steps)?);
            }
            let mut b = Vec::new();
            for (c, m) in col_masks.iter().enumerate() {
                b.push(lw.operand(op, &op.col_operand, jv, c as u32, *m, steps)?);
            }
            for r in 0..op.row_tiles {
                for c in 0..op.col_tiles {
                    let (ri, ci) = (r as usize, c as usize);
                    lw.b.push(Stmt::Mopa {
                        tile: tile(r, c),
                        a: a[ri],
                        b: b[ci],
                        a_mask: row_wide[ri],
                        b_mask: col_wide[ci],
                    });
                }
            }
            Ok(())
        };
        if op.rows_via_za {
            self.reduction_via_za(op, &row_masks, &col_masks)?;
            return self.za_slices(op, &col_masks, true);
        }
        // The reduction loops, outermost first; the innermost counts groups of `g` steps.
        let mut open = Vec::new();
        for (d, &k) in op.reductions.iter().enumerate() {
            let kv = self.nest.loop_(k).var;
            let ext = simplify(self.nest.extent(k), &*self.nest);
            let innermost = d + 1 == op.reductions.len();
            let groups = if g == 1 || !innermost { ext.clone() } else { ext.clone().ceildiv(Expr::Int(i64::from(g))) };
            let start = self.b.index(0);
            let end = self.index(&simplify(&groups, &*self.nest))?;
            let hint = self.za_unroll(&op.reductions[d..], g);
            let var = self.b.begin_loop();
            self.vars.insert(kv, var);
            open.push((kv, ext, var, start, end, hint));
        }
        let st = match open.last() {
            Some((kv, ext, ..)) => {
                let (kv, ext) = (*kv, ext.clone());
                steps(self, Some(kv), Some(&ext))?
            }
            None => steps(self, None, None)?,
        };
        body(self, &st)?;
        while let Some((kv, _, var, start, end, hint)) = open.pop() {
            self.vars.remove(&kv);
            self.b.end_loop(var, start, end, hint);
        }
        self.za_slices(op, &col_masks, true)
    }

    /// One outer-product operand: tile `t` along `v`, masked; with several
    /// reduction steps, one load per step interleaved into one vector.
    fn operand(
        &mut self,
        op: &OuterProduct,
        a: &Access,
        v: VarId,
        t: u32,
        mask: Option<Reg>,
        steps: &[Step],
    ) -> Result<Reg> {
        let lanes = Lanes::scalable(ZA_LANES_PER_VSCALE);
        let mut loads = Vec::new();
        for s in steps {
            let r = match (&s.exists, &s.at) {
                (None, _) => {
                    let zero = self.b.emit(Op::Const(match op.input {
                        DType::I8 => Const::Int(0, Elem::Data(DType::I8)),
                        d => Const::Float(0.0, d),
                    }));
                    self.b.emit(Op::Splat(zero, lanes))
                }
                (Some(exists), at) => {
                    let bound: Vec<Expr> = a
                        .indices
                        .iter()
                        .map(|e| {
                            let e = shift(&self.nest.bind(op.block, e), v, t);
                            match at {
                                Some((kv, at)) => e.substitute(&|x| (x == *kv).then(|| at.clone())),
                                None => e,
                            }
                        })
                        .collect();
                    let m = match exists {
                        None => mask,
                        Some(c) => {
                            let on = match mask {
                                Some(m) => m,
                                None => {
                                    let t = self.b.bool(true);
                                    self.b.emit(Op::Splat(t, lanes))
                                }
                            };
                            let f = self.b.bool(false);
                            let off = self.b.emit(Op::Splat(f, lanes));
                            Some(self.b.emit(Op::Select(*c, on, off)))
                        }
                    };
                    self.vec = Some(VecCtx { var: v, lanes, full: false });
                    let r = self.read(a.tensor, &bound, m);
                    self.vec = None;
                    r?
                }
            };
            loads.push(r);
        }
        Ok(self.repeat_lanes(&loads))
    }

    /// The hint of the first of the reduction loops `ks` (the innermost last,
    /// counting groups of `g` steps). Their kind is serial (`tensorize`
    /// refuses others); like `Lowerer::iterate`'s loops, an
    /// `unroll_max_step` budget unrolls them fully when the micro-kernel's
    /// steps from this loop in (one group of outer products each) fit it.
    fn za_unroll(&self, ks: &[LoopId], g: u32) -> LoopHint {
        let budget = self.unroll_budget(ks[0]).min(scaletune_space::limits::MAX_UNROLLED_COPIES);
        let mut trips = Vec::new();
        for (d, &k) in ks.iter().enumerate() {
            let Some(n) = simplify(self.nest.extent(k), &*self.nest).as_int() else { return LoopHint::None };
            trips.push(if d + 1 == ks.len() { (n + i64::from(g) - 1) / i64::from(g) } else { n });
        }
        let steps: i64 = trips.iter().product();
        match u32::try_from(trips[0]) {
            Ok(n) if budget > 0 && steps <= budget && n > 1 => LoopHint::Unroll(n),
            _ => LoopHint::None,
        }
    }

    /// The reduction of a micro-kernel whose row operand `X` is read through
    /// ZA ([`scaletune_space::schedule::ZA_FMOPA_VREAD`]): for each chunk of
    /// `L` reduction steps, the chunk of each of the `L` rows of a tile row
    /// (contiguous in `X`) is loaded into a spare tile as a horizontal slice,
    /// and step `q` of the chunk reads column `q` of it (a vertical slice)
    /// as the outer product's row operand.
    fn reduction_via_za(
        &mut self,
        op: &OuterProduct,
        row_masks: &[Option<Reg>],
        col_masks: &[Option<Reg>],
    ) -> Result<()> {
        let lanes = Lanes::scalable(ZA_LANES_PER_VSCALE);
        let side = Expr::vscale_times(i64::from(ZA_LANES_PER_VSCALE));
        let (iv, jv) = (self.nest.loop_(op.rows).var, self.nest.loop_(op.cols).var);
        let k = op.reductions[0];
        let kv = self.nest.loop_(k).var;
        let ext = simplify(self.nest.extent(k), &*self.nest);
        let spare = |r: u32| (op.row_tiles * op.col_tiles + r) as u8;
        let x = op.row_operand.clone();
        let xbuf = self.bufs[x.tensor.index()];
        let start = self.b.index(0);
        let end = self.index(&simplify(&ext.clone().ceildiv(side.clone()), &*self.nest))?;
        let chunk = self.b.begin_loop();
        self.vars.insert(kv, chunk);
        // The chunk's first step, and the mask of the steps that exist.
        let first = Expr::Var(kv) * side.clone();
        let (kbase, kend) = (self.index(&first)?, self.index(&ext)?);
        let kmask = self.b.emit(Op::ActiveLaneMask { base: kbase, bound: kend, lanes });
        for r in 0..op.row_tiles {
            let (s0, s1) = (self.b.index(0), self.index(&side)?);
            let row = self.b.begin_loop();
            self.vars.insert(iv, row);
            let preds = shift_preds(&op.row_preds, iv, r);
            let cond = if preds.is_empty() { None } else { Some(self.conjunction(&preds)?) };
            let bound: Vec<Expr> = x
                .indices
                .iter()
                .map(|e| {
                    let e = shift(&self.nest.bind(op.block, e), iv, r);
                    e.substitute(&|v| (v == kv).then(|| first.clone()))
                })
                .collect();
            let flat = simplify(&self.nest.flat_index(x.tensor, &bound), &*self.nest);
            self.b.begin_body();
            let base = self.index(&flat)?;
            self.b.push(Stmt::ZaLoad { tile: spare(r), row, buf: xbuf, base, mask: Some(kmask) });
            let body = self.b.end_body();
            match cond {
                Some(cond) => self.b.push(Stmt::If { cond, then_body: body, else_body: Vec::new() }),
                None => body.into_iter().for_each(|s| self.b.push(s)),
            }
            self.vars.remove(&iv);
            self.b.end_loop(row, s0, s1, LoopHint::None);
        }
        // The chunk's steps: min(L, K - first).
        let side_reg = self.index(&side)?;
        let left = self.b.emit(Op::Bin(crate::vprog::BinOp::Sub, kend, kbase));
        let steps_end = self.b.emit(Op::Bin(crate::vprog::BinOp::Min, left, side_reg));
        let qv = Rc::make_mut(&mut self.nest).new_var("q", side.clone());
        let q0 = self.b.index(0);
        let q = self.b.begin_loop();
        self.vars.insert(qv, q);
        let step = [Step { at: Some((kv, first.clone() + Expr::Var(qv))), exists: Some(None) }];
        let mut b = Vec::new();
        for (c, m) in col_masks.iter().enumerate() {
            b.push(self.operand(op, &op.col_operand, jv, c as u32, *m, &step)?);
        }
        for (r, rm) in row_masks.iter().enumerate() {
            let a = self.b.emit(Op::ZaReadVertical { tile: spare(r as u32), slice: q });
            for (c, cm) in col_masks.iter().enumerate() {
                let tile = (r as u32 * op.col_tiles + c as u32) as u8;
                self.b.push(Stmt::Mopa { tile, a, b: b[c], a_mask: *rm, b_mask: *cm });
            }
        }
        self.vars.remove(&qv);
        self.b.end_loop(q, q0, steps_end, LoopHint::None);
        self.vars.remove(&kv);
        self.b.end_loop(chunk, start, end, LoopHint::None);
        Ok(())
    }

    /// `vs` interleaved lane by lane (`vs[0][0], vs[1][0], .., vs[0][1], ..`):
    /// one vector for 1, two interleaves for 2, three for 4.
    fn repeat_lanes(&mut self, vs: &[Reg]) -> Reg {
        match vs {
            [a] => *a,
            [a, b] => self.b.emit(Op::Interleave(*a, *b)),
            _ => {
                let half = vs.len() / 2;
                let evens: Vec<Reg> = vs.iter().step_by(2).copied().collect();
                let odds: Vec<Reg> = vs.iter().skip(1).step_by(2).copied().collect();
                debug_assert_eq!(evens.len(), half);
                let (e, o) = (self.repeat_lanes(&evens), self.repeat_lanes(&odds));
                self.b.emit(Op::Interleave(e, o))
            }
        }
    }

    /// Loads (`store == false`) or stores every existing row of every tile
    /// through ZA horizontal slices.
    fn za_slices(&mut self, op: &OuterProduct, col_masks: &[Option<Reg>], store: bool) -> Result<()> {
        let (iv, jv) = (self.nest.loop_(op.rows).var, self.nest.loop_(op.cols).var);
        let blk = self.nest.block(op.block).clone();
        let buf = self.bufs[blk.lhs.tensor.index()];
        let lanes = Lanes::scalable(ZA_LANES_PER_VSCALE);
        for r in 0..op.row_tiles {
            let start = self.b.index(0);
            let end = self.index(&Expr::vscale_times(i64::from(ZA_LANES_PER_VSCALE)))?;
            let row = self.b.begin_loop();
            self.vars.insert(iv, row);
            let preds = shift_preds(&op.row_preds, iv, r);
            let cond = if preds.is_empty() { None } else { Some(self.conjunction(&preds)?) };
            self.b.begin_body();
            for (c, mask) in col_masks.iter().enumerate() {
                let c = c as u32;
                let bound: Vec<Expr> =
                    blk.lhs.indices.iter().map(|e| shift(&shift(&self.nest.bind(op.block, e), iv, r), jv, c)).collect();
                let flat = self.nest.flat_index(blk.lhs.tensor, &bound);
                self.vec = Some(VecCtx { var: jv, lanes, full: false });
                let base = match self.shape(blk.lhs.tensor, &bound) {
                    super::access::Shape::Contiguous(base) => base,
                    _ => {
                        self.vec = None;
                        return Err(self.unsupported(format!(
                            "the output of a tensorized loop is not contiguous: {}",
                            self.nest.expr_text(&flat)
                        )));
                    }
                };
                self.vec = None;
                let base = self.index(&base)?;
                let tile = (r * op.col_tiles + c) as u8;
                let s = if store {
                    Stmt::ZaStore { tile, row, buf, base, mask: *mask }
                } else {
                    Stmt::ZaLoad { tile, row, buf, base, mask: *mask }
                };
                self.b.push(s);
            }
            let body = self.b.end_body();
            match cond {
                Some(cond) => self.b.push(Stmt::If { cond, then_body: body, else_body: Vec::new() }),
                None => {
                    for s in body {
                        self.b.push(s);
                    }
                }
            }
            self.vars.remove(&iv);
            self.b.end_loop(row, start, end, LoopHint::None);
        }
        Ok(())
    }
}

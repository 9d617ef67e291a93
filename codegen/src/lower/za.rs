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

use super::ctx::{Lowerer, Result, VecCtx};
use crate::vprog::{Lanes, LoopHint, Reg, Stmt};
use scaletune_space::expr::Expr;
use scaletune_space::ids::{LoopId, VarId};
use scaletune_space::ir::{Nest, Pred};
use scaletune_space::schedule::{OuterProduct, ZA_LANES_PER_VSCALE};
use scaletune_space::workload::{Access, UpdateOp};
use std::collections::HashSet;

/// Tensorized loops whose ZA tiles start at zero (the reduction lies wholly
/// inside the micro-kernel, or there is none): their blocks' initialization
/// is left to the tiles. Call before `decompose_all_inits`.
pub(crate) fn zero_started(nest: &mut Nest) -> HashSet<LoopId> {
    let mut out = HashSet::new();
    for l in nest.all_loops() {
        if !nest.is_tensorized(l) {
            continue;
        }
        let Ok(op) = nest.outer_product(l) else { continue };
        let blk = nest.block(op.block);
        let zero = match op.reduction {
            None => blk.op == UpdateOp::Assign,
            Some(k) => blk.init && nest.reduction_loop_vars(op.block) == [nest.loop_(k).var],
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
        if self.za_zero_start.contains(&l) {
            for r in 0..op.row_tiles {
                for c in 0..op.col_tiles {
                    self.b.push(Stmt::ZaZero { tile: tile(r, c) });
                }
            }
        } else {
            self.za_slices(op, &col_masks, false)?;
        }
        let body = |lw: &mut Lowerer| -> Result<()> {
            let mut a = Vec::new();
            for (r, m) in row_masks.iter().enumerate() {
                a.push(lw.operand(op, &op.row_operand, iv, r as u32, *m)?);
            }
            let mut b = Vec::new();
            for (c, m) in col_masks.iter().enumerate() {
                b.push(lw.operand(op, &op.col_operand, jv, c as u32, *m)?);
            }
            for r in 0..op.row_tiles {
                for c in 0..op.col_tiles {
                    let (ri, ci) = (r as usize, c as usize);
                    lw.b.push(Stmt::Mopa {
                        tile: tile(r, c),
                        a: a[ri],
                        b: b[ci],
                        a_mask: row_masks[ri],
                        b_mask: col_masks[ci],
                    });
                }
            }
            Ok(())
        };
        match op.reduction {
            Some(k) => {
                let kv = self.nest.loop_(k).var;
                let start = self.b.index(0);
                let end = self.index(&self.nest.extent(k).clone())?;
                let var = self.b.begin_loop();
                self.vars.insert(kv, var);
                body(self)?;
                self.vars.remove(&kv);
                self.b.end_loop(var, start, end, LoopHint::None);
            }
            None => body(self)?,
        }
        self.za_slices(op, &col_masks, true)
    }

    /// One streaming vector of an operand: tile `t` along `v`, masked.
    fn operand(&mut self, op: &OuterProduct, a: &Access, v: VarId, t: u32, mask: Option<Reg>) -> Result<Reg> {
        let bound: Vec<Expr> = a.indices.iter().map(|e| shift(&self.nest.bind(op.block, e), v, t)).collect();
        self.vec = Some(VecCtx { var: v, lanes: Lanes::scalable(ZA_LANES_PER_VSCALE), full: false });
        let r = self.read(a.tensor, &bound, mask);
        self.vec = None;
        // f16 operands are converted to f32 in registers.
        let r = r?;
        Ok(match self.b.ty(r).elem {
            crate::vprog::Elem::F32 => r,
            _ => self.b.emit(crate::vprog::Op::Cast(r, crate::vprog::Elem::F32)),
        })
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

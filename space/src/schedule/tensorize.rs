//! `tensorize`: an outer-product loop nest as SME outer products accumulated in ZA tiles.
//!
//! The micro-kernel is a loop `k` (the reduction; absent for a plain outer
//! product; several nested reduction loops are one reduction, as the filter
//! taps and channels of a convolution) whose only child is a loop `i` of rows, whose only child is a
//! loop `j` of columns, whose only child is one block `C[.., i, j] (+)= X[..i..] * Y[..j..]`.
//! `i` and `j` have extents `R * L` and `C * L` where `L = 4*vscale` is the
//! number of f32 lanes of a streaming vector (one ZA tile is `L x L`) and
//! `R, C` are 1 or 2: one ZA tile per `L x L` block of the output, at most
//! four (`za0.s`..`za3.s`). `X` must be contiguous along `i` (pack it
//! transposed with `cache_read(.., layout=[1, 0])`) and `Y` along `j`;
//! predicates that do not fill a tile become lane masks. The reads are f32
//! into an f32 output (`fmopa`), f16 or bf16 converted to f32 into an f32
//! output (the widening `fmopa` / `bfmopa`, two reduction steps per outer product) or i8
//! converted to i32 into an i32 output (`smopa`, four reduction steps).

use super::{ErrorKind, Result, ScheduleError};
use crate::expr::{linear_in, simplify, Expr};
use crate::ids::{BlockId, LoopId, VarId};
use crate::ir::{LoopKind, Nest, Node, Pred};
use crate::schedule::vector_lanes;
use crate::workload::{Access, BinOp, UpdateOp, Value};
use crate::DType;

const PRIM: &str = "tensorize";

/// The loop annotation that marks a tensorized micro-kernel (set only by [`Nest::tensorize`]).
pub const TENSORIZE_KEY: &str = "tensorize";

/// The tensor intrinsic: outer products (`fmopa`, widening `fmopa`,
/// `smopa`) accumulated in ZA tiles, both operands contiguous vectors.
pub const ZA_FMOPA: &str = "za_fmopa";

/// The same outer products with the row operand `X` read through ZA: each
/// chunk of `L` reduction steps loads `L` rows of `X` (contiguous along the
/// reduction) into a spare ZA tile as horizontal slices and reads them out
/// as vertical slices, instead of a transposing pack. f32 only, one
/// reduction loop, and a spare tile per tile row (1x1, 1x2 or 2x1 tiles).
pub const ZA_FMOPA_VREAD: &str = "za_fmopa_vread";

/// Lanes per vscale of one streaming vector of f32 (the side of a ZA tile).
pub const ZA_LANES_PER_VSCALE: u32 = 4;

/// A tensorized micro-kernel, as lowering needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct OuterProduct {
    /// The reduction loops (`k`), outermost first: none for a plain outer
    /// product, several when each is the only child of the one before (the
    /// filter taps and channels of a convolution); the tiles accumulate
    /// over all of them.
    pub reductions: Vec<LoopId>,
    /// The loop of rows (`i`).
    pub rows: LoopId,
    /// The loop of columns (`j`).
    pub cols: LoopId,
    /// The block.
    pub block: BlockId,
    /// ZA tiles down the rows (1 or 2).
    pub row_tiles: u32,
    /// ZA tiles across the columns (1 or 2).
    pub col_tiles: u32,
    /// The element type of both operands: f32, f16 (widening `fmopa` into
    /// f32 tiles), bf16 (widening `bfmopa` into f32 tiles) or i8 (`smopa`
    /// into i32 tiles).
    pub input: DType,
    /// The operand contiguous along the rows (`X`), as written in the block.
    pub row_operand: Access,
    /// The operand contiguous along the columns (`Y`).
    pub col_operand: Access,
    /// Predicates over the rows loop only.
    pub row_preds: Vec<Pred>,
    /// Predicates over the columns loop only.
    pub col_preds: Vec<Pred>,
    /// Predicates over neither (conditions on the whole micro-kernel).
    pub outer_preds: Vec<Pred>,
    /// The row operand is read through ZA vertical slices ([`ZA_FMOPA_VREAD`]):
    /// contiguous along the reduction loop, not along the rows.
    pub rows_via_za: bool,
}

impl Nest {
    /// Marks loop `l` as an SME micro-kernel (`intrin` is `za_fmopa` or
    /// `za_fmopa_vread`): see the module documentation for the loop
    /// structure it needs.
    pub fn tensorize(&mut self, l: LoopId, intrin: &str) -> Result<()> {
        if intrin != ZA_FMOPA && intrin != ZA_FMOPA_VREAD {
            return Err(err(
                ErrorKind::LoopKind,
                format!("unknown tensor intrinsic `{intrin}` (known: {ZA_FMOPA}, {ZA_FMOPA_VREAD})"),
            ));
        }
        self.outer_product_as(l, intrin == ZA_FMOPA_VREAD)?;
        self.loop_mut(l).annotations.insert(TENSORIZE_KEY.to_string(), intrin.to_string());
        Ok(())
    }

    /// True if loop `l` is a tensorized micro-kernel.
    pub fn is_tensorized(&self, l: LoopId) -> bool {
        self.loop_(l).annotations.contains_key(TENSORIZE_KEY)
    }

    /// The outer product that loop `l` computes, or why it is not one that
    /// ZA tiles can hold (read through ZA if `l` is tensorized with
    /// [`ZA_FMOPA_VREAD`]).
    pub fn outer_product(&self, l: LoopId) -> Result<OuterProduct> {
        self.check_loop(PRIM, l)?;
        let via_za = self.loop_(l).annotations.get(TENSORIZE_KEY).is_some_and(|v| v == ZA_FMOPA_VREAD);
        self.outer_product_as(l, via_za)
    }

    /// [`Nest::outer_product`] with the row operand read through ZA or not.
    fn outer_product_as(&self, l: LoopId, rows_via_za: bool) -> Result<OuterProduct> {
        self.check_loop(PRIM, l)?;
        if !self.caps.has_sme {
            return Err(err(ErrorKind::LoopKind, "needs SME streaming code: use_vectors(\"sme\") first".into()));
        }
        let only_loop = |x: LoopId| match self.loop_(x).body.as_slice() {
            [Node::Loop(c)] => Some(*c),
            _ => None,
        };
        let only_block = |x: LoopId| match self.loop_(x).body.as_slice() {
            [Node::Block(b)] => Some(*b),
            _ => None,
        };
        // `l`, then every loop that is the only child of the one before.
        let mut chain = vec![l];
        while let Some(c) = only_loop(*chain.last().expect("non-empty")) {
            chain.push(c);
        }
        let block = match (chain.len(), only_block(*chain.last().expect("non-empty"))) {
            (2.., Some(b)) => b,
            _ => return Err(self.shape_error(l)),
        };
        let (rows, cols) = (chain[chain.len() - 2], chain[chain.len() - 1]);
        let reductions = chain[..chain.len() - 2].to_vec();
        if let Some(p) = self.ancestors(Node::Loop(l)).into_iter().find(|a| self.loop_(*a).kind == LoopKind::Parallel) {
            return Err(err(
                ErrorKind::LoopKind,
                format!(
                    "loop `{}` is inside the parallel loop `{}`; each thread would need ZA state of its own",
                    self.loop_name(l),
                    self.loop_name(p)
                ),
            ));
        }
        for x in [rows, cols].into_iter().chain(reductions.iter().copied()) {
            if self.loop_(x).kind != LoopKind::Serial {
                return Err(err(
                    ErrorKind::LoopKind,
                    format!(
                        "loop `{}` is {}; the micro-kernel's loops must be serial",
                        self.loop_name(x),
                        self.kind_name(x)
                    ),
                ));
            }
        }
        let blk = self.block(block);
        match (blk.op, reductions.is_empty()) {
            (UpdateOp::Add, _) | (UpdateOp::Assign, true) => {}
            _ => {
                return Err(err(
                    ErrorKind::Structure,
                    format!("block `{}` must be `+=` (or `=` without a reduction loop)", blk.name),
                ))
            }
        }
        let out_dtype = self.tensor(blk.lhs.tensor).dtype;
        if !matches!(out_dtype, DType::F32 | DType::I32) {
            return Err(err(ErrorKind::Structure, format!("block `{}` must write f32 or i32", blk.name)));
        }
        let (x, y, input) = match mopa_operands(&blk.rhs, out_dtype) {
            Some((x, y, input)) => (x.clone(), y.clone(), input),
            None => return Err(self.value_error(block)),
        };
        let row_tiles = self.tiles_of(rows)?;
        let col_tiles = self.tiles_of(cols)?;
        let (iv, jv) = (self.loop_(rows).var, self.loop_(cols).var);
        let kvs: Vec<VarId> = reductions.iter().map(|k| self.loop_(*k).var).collect();
        let flat = |a: &Access| {
            let bound: Vec<Expr> = a.indices.iter().map(|e| self.bind(block, e)).collect();
            self.flat_index(a.tensor, &bound)
        };
        let unit = |e: &Expr, v: VarId| linear_in(e, v, self).and_then(|lin| lin.const_coeff()) == Some(1);
        let (fx, fy) = (flat(&x), flat(&y));
        let (row_operand, col_operand) = if !fx.uses_var(jv) && !fy.uses_var(iv) {
            (x, y)
        } else if !fy.uses_var(jv) && !fx.uses_var(iv) {
            (y, x)
        } else {
            return Err(err(
                ErrorKind::Structure,
                format!(
                    "block `{}` is not an outer product of one operand over `{}` and one over `{}`",
                    blk.name,
                    self.loop_name(rows),
                    self.loop_name(cols)
                ),
            ));
        };
        let (fr, fc) = (flat(&row_operand), flat(&col_operand));
        if rows_via_za {
            let tiles = row_tiles * col_tiles + row_tiles;
            let name = &self.tensor(row_operand.tensor).name;
            let why = if input != DType::F32 {
                Some(format!("reads {input} operands (f32 only)"))
            } else if tiles > u32::from(4u8) {
                Some(format!("needs {tiles} ZA tiles ({row_tiles}x{col_tiles} and one per tile row; 4 exist)"))
            } else if kvs.len() != 1 {
                Some("needs exactly one reduction loop".into())
            } else if !unit(&fr, kvs[0]) || linear_in(&fr, iv, self).is_none() {
                Some(format!(
                    "operand `{name}` must be contiguous along `{}` and linear in `{}`",
                    self.loop_name(reductions[0]),
                    self.loop_name(rows)
                ))
            } else {
                None
            };
            if let Some(why) = why {
                return Err(err(ErrorKind::Structure, format!("{ZA_FMOPA_VREAD}: the micro-kernel {why}")));
            }
        }
        for (f, a, v, lp) in [(&fr, &row_operand, iv, rows), (&fc, &col_operand, jv, cols)] {
            if rows_via_za && v == iv {
                continue;
            }
            if !unit(f, v) {
                let name = &self.tensor(a.tensor).name;
                return Err(err(
                    ErrorKind::Structure,
                    format!(
                        "operand `{name}` is not contiguous along `{}` (pack it, e.g. cache_read(block, \"{name}\", at=loop, layout=[1, 0]))",
                        self.loop_name(lp)
                    ),
                ));
            }
        }
        let fo = flat(&blk.lhs);
        if !unit(&fo, jv) || linear_in(&fo, iv, self).is_none() || kvs.iter().any(|k| fo.uses_var(*k)) {
            return Err(err(
                ErrorKind::Structure,
                format!(
                    "output `{}` must be contiguous along `{}` and fixed along the reduction",
                    self.tensor(blk.lhs.tensor).name,
                    self.loop_name(cols)
                ),
            ));
        }
        let (mut row_preds, mut col_preds, mut outer_preds) = (Vec::new(), Vec::new(), Vec::new());
        for p in &blk.predicates {
            let uses = |v: VarId| p.lhs.uses_var(v) || p.rhs.uses_var(v);
            let bad = kvs.iter().any(|k| uses(*k))
                || (uses(iv) && uses(jv))
                || p.rhs.uses_var(iv)
                || p.rhs.uses_var(jv)
                || (uses(iv) && !unit(&p.lhs, iv))
                || (uses(jv) && !unit(&p.lhs, jv));
            if bad {
                return Err(err(
                    ErrorKind::Structure,
                    format!(
                        "predicate `{} < {}` does not bound a row or a column of tiles",
                        self.expr_text(&p.lhs),
                        self.expr_text(&p.rhs)
                    ),
                ));
            }
            match (uses(iv), uses(jv)) {
                (true, _) => row_preds.push(p.clone()),
                (_, true) => col_preds.push(p.clone()),
                _ => outer_preds.push(p.clone()),
            }
        }
        Ok(OuterProduct {
            reductions,
            rows,
            cols,
            block,
            row_tiles,
            col_tiles,
            input,
            row_operand,
            col_operand,
            row_preds,
            col_preds,
            outer_preds,
            rows_via_za,
        })
    }

    /// How many ZA tiles (1 or 2) loop `l` spans.
    fn tiles_of(&self, l: LoopId) -> Result<u32> {
        let ext = simplify(self.extent(l), self);
        match vector_lanes(&ext) {
            Some((c, true)) if c == ZA_LANES_PER_VSCALE || c == 2 * ZA_LANES_PER_VSCALE => Ok(c / ZA_LANES_PER_VSCALE),
            _ => Err(err(
                ErrorKind::BadFactors,
                format!(
                    "loop `{}` has extent {}; a micro-kernel spans 1 or 2 ZA tiles of {ZA_LANES_PER_VSCALE}*vscale f32 lanes",
                    self.loop_name(l),
                    self.expr_text(&ext)
                ),
            )),
        }
    }

    fn shape_error(&self, l: LoopId) -> ScheduleError {
        err(
            ErrorKind::Structure,
            format!(
                "loop `{}` must hold exactly a loop of rows holding a loop of columns holding one block (after optional reduction loops, each the only child of the one before)",
                self.loop_name(l)
            ),
        )
    }

    fn value_error(&self, b: BlockId) -> ScheduleError {
        err(
            ErrorKind::Structure,
            format!(
                "block `{}` must compute the product of two tensor reads of one type: f32, f16 or bf16 converted \
                 to f32 (into f32), or i8 converted to i32 (into i32)",
                self.block(b).name
            ),
        )
    }
}

/// The two reads of a product `X * Y` that an outer product into a tile of
/// `out` elements computes, and their element type: f32 reads into f32,
/// f16 or bf16 reads converted to f32 into f32, i8 reads converted to i32 into i32.
pub(crate) fn mopa_operands(v: &Value, out: DType) -> Option<(&Access, &Access, DType)> {
    let read = |v: &'_ Value| -> Option<(DType, DType)> {
        match v {
            Value::Read(_, DType::F32) => Some((DType::F32, DType::F32)),
            Value::Cast(to, inner) => match &**inner {
                Value::Read(_, from) => Some((*from, *to)),
                _ => None,
            },
            _ => None,
        }
    };
    let Value::Bin(BinOp::Mul, x, y) = v else { return None };
    let (tx, ty) = (read(x)?, read(y)?);
    let fits = matches!(
        tx,
        (DType::F32, DType::F32) | (DType::F16, DType::F32) | (DType::BF16, DType::F32) | (DType::I8, DType::I32)
    );
    if tx != ty || !fits || tx.1 != out {
        return None;
    }
    Some((inner_read(x)?, inner_read(y)?, tx.0))
}

/// The access of a read, or of a converted read.
fn inner_read(v: &Value) -> Option<&Access> {
    match v {
        Value::Read(a, _) => Some(a),
        Value::Cast(_, inner) => match &**inner {
            Value::Read(a, _) => Some(a),
            _ => None,
        },
        _ => None,
    }
}

fn err(kind: ErrorKind, message: String) -> ScheduleError {
    ScheduleError::new(PRIM, kind, message)
}

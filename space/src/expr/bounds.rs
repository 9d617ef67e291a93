//! Interval bounds and concrete evaluation of expressions.

use super::poly::{Atom, Poly};
use super::Expr;
use crate::ids::{TensorId, VarId};
use thiserror::Error;

/// What the simplifier may assume about variables, tensors and vscale.
pub trait RangeCtx {
    /// The extent of a variable: it ranges over `0..extent`. `None` if unknown.
    fn var_extent(&self, v: VarId) -> Option<Expr>;
    /// True if [`RangeCtx::var_extent`] of `v` is `extent` (without the copy).
    fn var_extent_is(&self, v: VarId, extent: Option<&Expr>) -> bool {
        self.var_extent(v).as_ref() == extent
    }
    /// The half-open value range of an integer tensor's elements, if declared.
    fn tensor_range(&self, t: TensorId) -> Option<(i64, i64)>;
    /// Every value vscale may take.
    fn vscales(&self) -> &[u32];
}

/// Inclusive interval.
pub(crate) type Iv = (i128, i128);

const DEPTH_LIMIT: u32 = 16;

/// Inclusive bounds of `e` when vscale equals `vscale`, or `None` if unbounded.
pub fn bounds(e: &Expr, ctx: &dyn RangeCtx, vscale: i64) -> Option<(i64, i64)> {
    let (lo, hi) = expr_iv(e, ctx, vscale, 0)?;
    Some((clamp(lo), clamp(hi)))
}

fn clamp(v: i128) -> i64 {
    v.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

pub(crate) fn poly_iv(p: &Poly, ctx: &dyn RangeCtx, vscale: i64, depth: u32) -> Option<Iv> {
    if p.overflow {
        return None;
    }
    let mut lo: i128 = 0;
    let mut hi: i128 = 0;
    for (mono, &c) in &p.terms {
        let mut iv: Iv = (1, 1);
        for a in mono {
            let ai = atom_iv(a, ctx, vscale, depth)?;
            iv = mul_iv(iv, ai)?;
        }
        let t = mul_iv(iv, (c as i128, c as i128))?;
        lo = lo.checked_add(t.0)?;
        hi = hi.checked_add(t.1)?;
    }
    Some((lo, hi))
}

/// The product of two intervals, `None` if a corner overflows 128 bits.
fn mul_iv(a: Iv, b: Iv) -> Option<Iv> {
    let c = [a.0.checked_mul(b.0)?, a.0.checked_mul(b.1)?, a.1.checked_mul(b.0)?, a.1.checked_mul(b.1)?];
    Some((*c.iter().min()?, *c.iter().max()?))
}

fn atom_iv(a: &Atom, ctx: &dyn RangeCtx, vscale: i64, depth: u32) -> Option<Iv> {
    match a {
        Atom::VScale => Some((vscale as i128, vscale as i128)),
        Atom::Var(v) => {
            let ext = ctx.var_extent(*v)?;
            let (_, hi) = expr_iv(&ext, ctx, vscale, depth + 1)?;
            Some((0, (hi - 1).max(0)))
        }
        Atom::Opaque(e) => expr_iv(e, ctx, vscale, depth + 1),
    }
}

fn floor_div(a: i128, b: i128) -> i128 {
    let q = a / b;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

/// Interval of an expression tree (via the polynomial form where possible).
pub(crate) fn expr_iv(e: &Expr, ctx: &dyn RangeCtx, vscale: i64, depth: u32) -> Option<Iv> {
    if depth > DEPTH_LIMIT {
        return None;
    }
    match e {
        Expr::Int(v) => Some((*v as i128, *v as i128)),
        Expr::VScale => Some((vscale as i128, vscale as i128)),
        Expr::Var(_) | Expr::Add(..) | Expr::Sub(..) | Expr::Mul(..) => {
            let p = super::simplify::to_poly_raw(e);
            poly_iv(&p, ctx, vscale, depth)
        }
        Expr::FloorDiv(a, b) | Expr::CeilDiv(a, b) => {
            let ia = expr_iv(a, ctx, vscale, depth + 1)?;
            let ib = expr_iv(b, ctx, vscale, depth + 1)?;
            if ib.0 <= 0 {
                return None;
            }
            let ceil = matches!(e, Expr::CeilDiv(..));
            let f = |x: i128, y: i128| if ceil { -floor_div(-x, y) } else { floor_div(x, y) };
            let c = [f(ia.0, ib.0), f(ia.0, ib.1), f(ia.1, ib.0), f(ia.1, ib.1)];
            Some((*c.iter().min()?, *c.iter().max()?))
        }
        Expr::FloorMod(a, b) => {
            let ib = expr_iv(b, ctx, vscale, depth + 1)?;
            if ib.0 <= 0 {
                return None;
            }
            match expr_iv(a, ctx, vscale, depth + 1) {
                Some(ia) if ia.0 >= 0 && ia.1 < ib.0 => Some(ia),
                Some(ia) if ia.0 >= 0 => Some((0, ia.1.min(ib.1 - 1))),
                _ => Some((0, ib.1 - 1)),
            }
        }
        Expr::Min(a, b) => {
            let (ia, ib) = (expr_iv(a, ctx, vscale, depth + 1)?, expr_iv(b, ctx, vscale, depth + 1)?);
            Some((ia.0.min(ib.0), ia.1.min(ib.1)))
        }
        Expr::Max(a, b) => {
            let (ia, ib) = (expr_iv(a, ctx, vscale, depth + 1)?, expr_iv(b, ctx, vscale, depth + 1)?);
            Some((ia.0.max(ib.0), ia.1.max(ib.1)))
        }
        Expr::Load(t, _) => {
            let (lo, hi) = ctx.tensor_range(*t)?;
            Some((lo as i128, (hi - 1) as i128))
        }
    }
}

/// Failure to evaluate an expression to a number.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum EvalError {
    /// A variable had no value.
    #[error("variable {0} has no value")]
    Unbound(VarId),
    /// Division or modulo by zero.
    #[error("division by zero")]
    DivisionByZero,
    /// A tensor load could not be performed.
    #[error("cannot load from tensor {0} here")]
    Load(TensorId),
    /// The value does not fit in 64 bits.
    #[error("integer overflow")]
    Overflow,
}

/// Evaluates `e` with variable values from `var`, the given vscale and
/// integer tensor elements from `load`.
pub fn eval(
    e: &Expr,
    var: &dyn Fn(VarId) -> Option<i64>,
    vscale: i64,
    load: &dyn Fn(TensorId, &[i64]) -> Option<i64>,
) -> Result<i64, EvalError> {
    let ev = |x: &Expr| eval(x, var, vscale, load);
    let ovf = |v: Option<i64>| v.ok_or(EvalError::Overflow);
    Ok(match e {
        Expr::Int(v) => *v,
        Expr::VScale => vscale,
        Expr::Var(v) => var(*v).ok_or(EvalError::Unbound(*v))?,
        Expr::Add(a, b) => ovf(ev(a)?.checked_add(ev(b)?))?,
        Expr::Sub(a, b) => ovf(ev(a)?.checked_sub(ev(b)?))?,
        Expr::Mul(a, b) => ovf(ev(a)?.checked_mul(ev(b)?))?,
        Expr::FloorDiv(a, b) | Expr::FloorMod(a, b) | Expr::CeilDiv(a, b) => {
            let (x, y) = (ev(a)? as i128, ev(b)? as i128);
            if y == 0 {
                return Err(EvalError::DivisionByZero);
            }
            let r = match e {
                Expr::FloorDiv(..) => floor_div(x, y),
                Expr::FloorMod(..) => x - y * floor_div(x, y),
                _ => -floor_div(-x, y),
            };
            i64::try_from(r).map_err(|_| EvalError::Overflow)?
        }
        Expr::Min(a, b) => ev(a)?.min(ev(b)?),
        Expr::Max(a, b) => ev(a)?.max(ev(b)?),
        Expr::Load(t, idx) => {
            let vals = idx.iter().map(ev).collect::<Result<Vec<_>, _>>()?;
            load(*t, &vals).ok_or(EvalError::Load(*t))?
        }
    })
}

//! Canonicalization and proofs over every allowed vscale.

use super::bounds::{poly_iv, RangeCtx};
use super::memo::{cached, Table};
use super::poly::{Atom, Mono, Poly};
use super::Expr;
use crate::ids::VarId;
use std::cell::RefCell;
use std::sync::Arc;

thread_local! {
    /// Results of [`simplify`].
    static SIMPLIFIED: RefCell<Table<Expr>> = RefCell::default();
    /// Polynomials of the expressions that proofs and [`linear_in`] look at.
    static POLYS: RefCell<Table<Poly>> = RefCell::default();
}

/// [`to_poly`], remembered (see [`super::memo`]).
fn poly_of(e: &Expr, ctx: &dyn RangeCtx) -> Poly {
    match e {
        Expr::Add(..) | Expr::Sub(..) | Expr::Mul(..) => cached(&POLYS, e, ctx, to_poly),
        // Leaves need no memo, and other nodes are remembered by `to_poly`.
        _ => to_poly(e, ctx),
    }
}

/// Structural conversion to a polynomial, without range reasoning:
/// non-polynomial nodes become opaque atoms as they are.
pub(crate) fn to_poly_raw(e: &Expr) -> Poly {
    match e {
        Expr::Int(v) => Poly::constant(*v),
        Expr::Var(v) => Poly::atom(Atom::Var(*v)),
        Expr::VScale => Poly::atom(Atom::VScale),
        Expr::Add(a, b) => to_poly_raw(a).add(&to_poly_raw(b)),
        Expr::Sub(a, b) => to_poly_raw(a).sub(&to_poly_raw(b)),
        Expr::Mul(a, b) => to_poly_raw(a).mul(&to_poly_raw(b)),
        other => Poly::atom(Atom::Opaque(Arc::new(other.clone()))),
    }
}

/// Puts `e` in canonical form, using `ctx` to drop provably redundant
/// floordiv/floormod/min/max structure. The result is equal to `e` for every
/// variable assignment within the context's ranges and every allowed vscale.
pub fn simplify(e: &Expr, ctx: &dyn RangeCtx) -> Expr {
    cached(&SIMPLIFIED, e, ctx, simplify_uncached)
}

/// [`simplify`], computed.
fn simplify_uncached(e: &Expr, ctx: &dyn RangeCtx) -> Expr {
    let p = to_poly(e, ctx);
    if p.overflow {
        // A coefficient beyond 64 bits: keep the expression as written (its
        // evaluation is checked; bounds of it are unknown).
        return e.clone();
    }
    p.to_expr()
}

/// Bounds of a polynomial at every allowed vscale; `None` if any is unbounded.
fn all_ivs(p: &Poly, ctx: &dyn RangeCtx) -> Option<Vec<(i128, i128)>> {
    let vs = ctx.vscales();
    let vs: &[u32] = if vs.is_empty() { &[1] } else { vs };
    vs.iter().map(|&v| poly_iv(p, ctx, i64::from(v), 0)).collect()
}

/// True if `p` lies in `[lo_off, d + hi_off]` where `d` is the divisor, at every vscale.
fn within(p: &Poly, d: &Poly, lo: i128, hi_off: i128, ctx: &dyn RangeCtx) -> bool {
    let (Some(pr), Some(dr)) = (all_ivs(p, ctx), all_ivs(&p.sub(d), ctx)) else {
        return false;
    };
    pr.iter().all(|iv| iv.0 >= lo) && dr.iter().all(|iv| iv.1 <= hi_off)
}

/// The divisor as a single positive monomial `c * m`, if it is one.
fn positive_monomial(p: &Poly, ctx: &dyn RangeCtx) -> Option<(Mono, i64)> {
    let (m, c) = p.single_term()?;
    let ivs = all_ivs(p, ctx)?;
    (c > 0 && ivs.iter().all(|iv| iv.0 > 0)).then(|| (m.clone(), c))
}

fn opaque(e: Expr) -> Poly {
    match e {
        Expr::Int(v) => Poly::constant(v),
        other => Poly::atom(Atom::Opaque(Arc::new(other))),
    }
}

/// `floor(a / b)`, `None` when it overflows (`i64::MIN / -1`); `b` is not zero.
fn floor_div(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    Some(if a % b != 0 && ((a < 0) != (b < 0)) { q - 1 } else { q })
}

fn to_poly(e: &Expr, ctx: &dyn RangeCtx) -> Poly {
    match e {
        Expr::Int(_) | Expr::Var(_) | Expr::VScale => to_poly_raw(e),
        Expr::Add(a, b) => to_poly(a, ctx).add(&to_poly(b, ctx)),
        Expr::Sub(a, b) => to_poly(a, ctx).sub(&to_poly(b, ctx)),
        Expr::Mul(a, b) => to_poly(a, ctx).mul(&to_poly(b, ctx)),
        // The nodes that need range proofs, remembered on their own: the
        // same divisions of fused and split loop variables recur inside
        // many different index sums.
        _ => poly_of_node(e, ctx),
    }
}

/// [`to_poly_node`], remembered.
fn poly_of_node(e: &Expr, ctx: &dyn RangeCtx) -> Poly {
    cached(&POLYS, e, ctx, to_poly_node)
}

/// [`to_poly`] of a node that is not a sum, difference, product or leaf.
fn to_poly_node(e: &Expr, ctx: &dyn RangeCtx) -> Poly {
    match e {
        Expr::Int(_) | Expr::Var(_) | Expr::VScale | Expr::Add(..) | Expr::Sub(..) | Expr::Mul(..) => to_poly(e, ctx),
        Expr::FloorDiv(a, b) | Expr::FloorMod(a, b) | Expr::CeilDiv(a, b) => {
            let (pa, pb) = (to_poly(a, ctx), to_poly(b, ctx));
            divide(e, pa, pb, ctx)
        }
        Expr::Min(a, b) | Expr::Max(a, b) => {
            let (pa, pb) = (to_poly(a, ctx), to_poly(b, ctx));
            let is_min = matches!(e, Expr::Min(..));
            if let Some(ivs) = all_ivs(&pa.sub(&pb), ctx) {
                let a_le_b = ivs.iter().all(|iv| iv.1 <= 0);
                let a_ge_b = ivs.iter().all(|iv| iv.0 >= 0);
                if a_le_b {
                    return if is_min { pa } else { pb };
                }
                if a_ge_b {
                    return if is_min { pb } else { pa };
                }
            }
            let (ea, eb) = (pa.to_expr(), pb.to_expr());
            let (x, y) = if ea <= eb { (ea, eb) } else { (eb, ea) };
            opaque(if is_min { x.min(y) } else { x.max(y) })
        }
        Expr::Load(t, idx) => opaque(Expr::Load(*t, idx.iter().map(|i| simplify(i, ctx)).collect())),
    }
}

fn divide(e: &Expr, pa: Poly, pb: Poly, ctx: &dyn RangeCtx) -> Poly {
    let kind = match e {
        Expr::FloorDiv(..) => 0,
        Expr::FloorMod(..) => 1,
        _ => 2,
    };
    if pa.overflow || pb.overflow {
        return Poly { overflow: true, ..Poly::default() };
    }
    let fold = |x: i64, y: i64| -> Option<i64> {
        match kind {
            0 => floor_div(x, y),
            1 => x.checked_sub(y.checked_mul(floor_div(x, y)?)?),
            _ => floor_div(x.checked_neg()?, y)?.checked_neg(),
        }
    };
    if let (Some(x), Some(y)) = (pa.as_const(), pb.as_const()) {
        if y != 0 {
            return match fold(x, y) {
                Some(v) => Poly::constant(v),
                None => Poly { overflow: true, ..Poly::default() },
            };
        }
    }
    // The remainder's division as an opaque atom; a constant remainder over
    // a constant divisor folds, so that simplification is idempotent.
    let rebuild = |a: Poly| -> Expr {
        if let (Some(x), Some(y)) = (a.as_const(), pb.as_const()) {
            if let Some(v) = (y != 0).then(|| fold(x, y)).flatten() {
                return Expr::Int(v);
            }
        }
        let (ea, eb) = (Arc::new(a.to_expr()), Arc::new(pb.to_expr()));
        match kind {
            0 => Expr::FloorDiv(ea, eb),
            1 => Expr::FloorMod(ea, eb),
            _ => Expr::CeilDiv(ea, eb),
        }
    };
    let Some((m, c)) = positive_monomial(&pb, ctx) else {
        return opaque(rebuild(pa));
    };
    let (q, r) = pa.split_divisible(&m, c);
    match kind {
        // floordiv(d*q + r, d) = q + floordiv(r, d)
        0 => {
            if r.terms.is_empty() || within(&r, &pb, 0, -1, ctx) {
                q
            } else if q.terms.is_empty() {
                opaque(rebuild(r))
            } else {
                q.add(&opaque(rebuild(r)))
            }
        }
        // floormod(d*q + r, d) = floormod(r, d)
        1 => {
            if r.terms.is_empty() {
                Poly::default()
            } else if within(&r, &pb, 0, -1, ctx) {
                r
            } else {
                opaque(rebuild(r))
            }
        }
        // ceildiv(d*q + r, d) = q + ceildiv(r, d)
        _ => {
            if r.terms.is_empty() {
                q
            } else if within(&r, &pb, 1, 0, ctx) {
                q.add(&Poly::constant(1))
            } else if q.terms.is_empty() {
                opaque(rebuild(r))
            } else {
                q.add(&opaque(rebuild(r)))
            }
        }
    }
}

/// True if `a < b` for every value of the variables in range and every allowed vscale.
pub fn prove_lt(a: &Expr, b: &Expr, ctx: &dyn RangeCtx) -> bool {
    match constant_difference(a, b) {
        Some(d) => d < 0,
        None => prove_lt_poly(a, b, ctx),
    }
}

/// True if `a <= b` for every value of the variables in range and every allowed vscale.
pub fn prove_le(a: &Expr, b: &Expr, ctx: &dyn RangeCtx) -> bool {
    match constant_difference(a, b) {
        Some(d) => d <= 0,
        None => prove_le_poly(a, b, ctx),
    }
}

/// `a - b` if both are integer constants of magnitude below 2^62: the
/// proofs of constants (a split's factors and extents, most often)
/// compare them as the polynomial proof does, without building
/// polynomials. (Nearer the ends of the range the polynomial's arithmetic
/// overflows and the proof fails, as it still does.)
fn constant_difference(a: &Expr, b: &Expr) -> Option<i64> {
    const HALF: i64 = 1 << 62;
    match (a, b) {
        (Expr::Int(x), Expr::Int(y)) if (-HALF..HALF).contains(x) && (-HALF..HALF).contains(y) => Some(x - y),
        _ => None,
    }
}

/// [`prove_lt`] by the bounds of the polynomial `a - b`.
fn prove_lt_poly(a: &Expr, b: &Expr, ctx: &dyn RangeCtx) -> bool {
    let d = poly_of(a, ctx).sub(&poly_of(b, ctx));
    all_ivs(&d, ctx).is_some_and(|ivs| ivs.iter().all(|iv| iv.1 < 0))
}

/// [`prove_le`] by the bounds of the polynomial `a - b`.
fn prove_le_poly(a: &Expr, b: &Expr, ctx: &dyn RangeCtx) -> bool {
    let d = poly_of(a, ctx).sub(&poly_of(b, ctx));
    all_ivs(&d, ctx).is_some_and(|ivs| ivs.iter().all(|iv| iv.1 <= 0))
}

/// An expression split as `coeff * v + rest`, where neither part uses `v`.
#[derive(Clone, Debug, PartialEq)]
pub struct Linear {
    /// The coefficient of the variable (may involve other variables and vscale).
    pub coeff: Expr,
    /// Everything else.
    pub rest: Expr,
}

impl Linear {
    /// The coefficient if it is a constant.
    pub fn const_coeff(&self) -> Option<i64> {
        self.coeff.as_int()
    }
}

/// Splits `e` (after simplification) as `coeff * v + rest`; `None` if `v`
/// occurs non-linearly (squared, inside floordiv/min/load, ...).
pub fn linear_in(e: &Expr, v: VarId, ctx: &dyn RangeCtx) -> Option<Linear> {
    let p = poly_of(e, ctx);
    if p.overflow {
        return None;
    }
    let target = Atom::Var(v);
    let mut coeff = Poly::default();
    let mut rest = Poly::default();
    for (mono, &c) in &p.terms {
        let n = mono.iter().filter(|a| **a == target).count();
        if mono.iter().any(|a| matches!(a, Atom::Opaque(x) if x.uses_var(v))) || n > 1 {
            return None;
        }
        if n == 1 {
            let reduced: Mono = mono.iter().filter(|a| **a != target).cloned().collect();
            coeff.add_term(reduced, c);
        } else {
            rest.add_term(mono.clone(), c);
        }
    }
    Some(Linear { coeff: coeff.to_expr(), rest: rest.to_expr() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::TensorId;
    use proptest::prelude::*;

    /// No variables, vscale 1, 2 or 4.
    struct Vscales;

    impl RangeCtx for Vscales {
        fn var_extent(&self, _: VarId) -> Option<Expr> {
            None
        }
        fn tensor_range(&self, _: TensorId) -> Option<(i64, i64)> {
            None
        }
        fn vscales(&self) -> &[u32] {
            &[1, 2, 4]
        }
    }

    /// Constants from the whole range, the extremes and small values.
    fn constant() -> impl Strategy<Value = i64> {
        let half = 1i64 << 62;
        prop_oneof![
            any::<i64>(),
            -4i64..4,
            prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(i64::MIN + 1), Just(i64::MAX - 1)],
            prop_oneof![Just(half), Just(half - 1), Just(-half), Just(-half - 1)],
        ]
    }

    proptest! {
        /// The proofs of two constants, compared directly, say what the
        /// polynomial proofs say.
        #[test]
        fn constant_proofs_agree_with_the_polynomial_proofs(a in constant(), b in constant()) {
            let (x, y) = (Expr::Int(a), Expr::Int(b));
            prop_assert_eq!(prove_lt(&x, &y, &Vscales), prove_lt_poly(&x, &y, &Vscales));
            prop_assert_eq!(prove_le(&x, &y, &Vscales), prove_le_poly(&x, &y, &Vscales));
        }
    }
}

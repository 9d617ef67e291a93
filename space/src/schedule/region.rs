//! Bounding the part of a tensor touched while some loops vary.

use crate::expr::{linear_in, prove_le, simplify, Expr};
use crate::ids::{LoopId, VarId};
use crate::ir::Nest;

/// `offset .. offset + extent` along one dimension.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Span {
    /// First index (over the loops that stay fixed).
    pub offset: Expr,
    /// Number of indices (constants and vscale only).
    pub extent: Expr,
    /// True if every index in the span is reached (no holes, e.g. from a stride).
    pub dense: bool,
}

impl Nest {
    /// The span of index expression `e` (over loop variables) while the loops
    /// `inner` run through their ranges. `None` unless `e` is affine in those
    /// loops with non-negative coefficients free of other variables.
    pub(crate) fn span(&self, e: &Expr, inner: &[LoopId]) -> Option<Span> {
        let e = simplify(e, self);
        let mut offset = e.clone();
        let mut extent = Expr::Int(1);
        let mut terms: Vec<(Expr, Expr)> = Vec::new();
        for l in inner {
            let v: VarId = self.loop_(*l).var;
            if !e.uses_var(v) {
                continue;
            }
            let lin = linear_in(&e, v, self)?;
            if !lin.coeff.vars().is_empty() || !prove_le(&Expr::Int(0), &lin.coeff, self) {
                return None;
            }
            extent = extent + lin.coeff.clone() * (self.extent(*l).clone() - 1);
            terms.push((simplify(&lin.coeff, self), self.extent(*l).clone()));
            offset = offset.substitute(&|x| (x == v).then_some(Expr::Int(0)));
        }
        let offset = simplify(&offset, self);
        if offset.has_load() {
            return None;
        }
        // Dense when, taking the terms in order of increasing coefficient,
        // each coefficient is at most one more than the largest index the
        // smaller terms reach (mixed-radix counting without gaps).
        terms.retain(|(c, _)| *c != Expr::Int(0));
        terms.sort_by_key(|(c, _)| c.as_int().unwrap_or(i64::MAX));
        let mut reach = Expr::Int(0);
        let mut dense = true;
        for (c, ext) in &terms {
            if !prove_le(c, &(reach.clone() + 1), self) {
                dense = false;
                break;
            }
            reach = simplify(&(reach + c.clone() * (ext.clone() - 1)), self);
        }
        Some(Span { offset, extent: simplify(&extent, self), dense })
    }
}

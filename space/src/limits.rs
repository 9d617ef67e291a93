//! The size limits every workload and schedule must respect, so that all
//! index, extent and size arithmetic fits 64-bit integers with room to spare.
//!
//! One bound, [`MAX_EXTENT`] (2^40), applies to every integer a workload or a
//! schedule produces: a parameter, a tensor dimension, a tensor's element
//! count, an axis extent, a split factor, a loop extent and a loop nest's
//! iteration count (the product of the extents of the loops around a block,
//! at the largest vscale). Any product of two such values fits an `i128`, and
//! any index into a tensor fits an `i64`. [`MAX_UNROLLED_COPIES`] bounds how
//! many copies of a block full unrolling may make (the product of the
//! extents of the unrolled loops around it).

use crate::expr::bounds;
use crate::ir::{LoopKind, Nest, Node};
use thiserror::Error;

/// The largest extent, element count, split factor or iteration count: 2^40.
pub const MAX_EXTENT: i64 = 1 << 40;

/// The most copies of a block that unrolling may make (product of the
/// extents of the unrolled loops around it).
pub const MAX_UNROLLED_COPIES: i64 = 1024;

/// A value beyond one of the limits of this module.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{what} is {value}, beyond the limit of {limit}")]
pub struct LimitError {
    /// What exceeded the limit, naming the loop, tensor or parameter.
    pub what: String,
    /// The value (saturated at `i128::MAX` when it overflowed).
    pub value: i128,
    /// The limit it exceeded.
    pub limit: i64,
}

/// Fails if `value` exceeds [`MAX_EXTENT`].
pub fn check_extent(what: impl FnOnce() -> String, value: i128) -> Result<(), LimitError> {
    check(what, value, MAX_EXTENT)
}

fn check(what: impl FnOnce() -> String, value: i128, limit: i64) -> Result<(), LimitError> {
    if value > i128::from(limit) {
        Err(LimitError { what: what(), value, limit })
    } else {
        Ok(())
    }
}

/// The product of `factors`, or `None` if it exceeds [`MAX_EXTENT`] (no
/// intermediate product can overflow: each step is checked).
pub fn checked_product(factors: impl IntoIterator<Item = i64>) -> Option<i64> {
    let mut acc: i64 = 1;
    for f in factors {
        acc = acc.checked_mul(f)?;
        if acc > MAX_EXTENT {
            return None;
        }
    }
    Some(acc)
}

impl Nest {
    /// The largest value a loop's extent takes at any allowed vscale, or
    /// `None` if it cannot be bounded.
    pub fn max_extent(&self, l: crate::ids::LoopId) -> Option<i128> {
        self.max_value(self.extent(l))
    }

    /// The largest value `e` takes at any allowed vscale (variables over
    /// their loops' ranges), 0 if that is negative, or `None` if it cannot
    /// be bounded.
    pub fn max_value(&self, e: &crate::Expr) -> Option<i128> {
        // Most extents are constants: their bound at every vscale, as below.
        if let crate::Expr::Int(v) = e {
            return Some(i128::from(*v).max(0));
        }
        self.max_value_by_bounds(e)
    }

    /// [`Nest::max_value`] from the bounds of `e` at each allowed vscale.
    fn max_value_by_bounds(&self, e: &crate::Expr) -> Option<i128> {
        let vs: &[u32] = if self.caps.vscale_values.is_empty() { &[1] } else { &self.caps.vscale_values };
        vs.iter().map(|&v| bounds(e, self, i64::from(v)).map(|(_, hi)| i128::from(hi))).try_fold(0i128, |m, hi| {
            let hi = hi?;
            Some(m.max(hi))
        })
    }

    /// Checks every tensor's element count, every loop extent, every block's iteration count against
    /// [`MAX_EXTENT`] and every block's unrolled copies against
    /// [`MAX_UNROLLED_COPIES`].
    pub fn check_limits(&self) -> Result<(), LimitError> {
        // Element counts of every tensor (a nest given as text has its own shapes).
        for t in &self.tensors {
            let count =
                t.shape.iter().map(|d| self.max_value(d).unwrap_or(i128::MAX).max(0)).fold(1i128, i128::saturating_mul);
            check_extent(|| format!("the element count of tensor `{}`", t.name), count)?;
        }
        for n in &self.root {
            self.check_limits_at(*n, 1, 1)?;
        }
        Ok(())
    }

    fn check_limits_at(&self, n: Node, iterations: i128, copies: i128) -> Result<(), LimitError> {
        let Node::Loop(l) = n else { return Ok(()) };
        let name = || self.loop_name(l).to_string();
        let ext = self.max_extent(l).unwrap_or(i128::MAX);
        check_extent(|| format!("the extent of loop `{}`", name()), ext)?;
        let iterations = iterations.saturating_mul(ext);
        check_extent(|| format!("the iteration count of the loops down to `{}`", name()), iterations)?;
        let copies = if self.loop_(l).kind == LoopKind::Unroll { copies.saturating_mul(ext) } else { copies };
        check(
            || format!("the number of copies unrolling makes of the body of `{}`", name()),
            copies,
            MAX_UNROLLED_COPIES,
        )?;
        for c in &self.loop_(l).body {
            self.check_limits_at(*c, iterations, copies)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::expr::Expr;
    use crate::ir::Nest;
    use crate::workload::load;
    use crate::VectorCaps;

    /// The largest value of a constant is the one its bounds give, at one
    /// vscale or several.
    #[test]
    fn the_largest_value_of_a_constant_is_the_one_its_bounds_give() {
        let w = load("matmul:M=8,N=8,K=8").expect("loads");
        for caps in [VectorCaps::fixed(256), VectorCaps::sve_any()] {
            let nest = Nest::from_workload(&w, caps);
            for v in [i64::MIN, -7, -1, 0, 1, 42, 1 << 40, i64::MAX] {
                let e = Expr::Int(v);
                assert_eq!(nest.max_value(&e), nest.max_value_by_bounds(&e), "{v}");
            }
        }
    }
}

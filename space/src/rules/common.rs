//! Building blocks shared by the rules: tiling an axis, choosing a tail.

use super::analysis::{scalable, AxisLoop};
use super::State;
use crate::ir::Tail;
use crate::trace::{Cand, Choice, Inst, LoopRv, TExpr, ValueRv};

/// Largest multiplier of one vscale granule in a sampled vector length.
pub(crate) const MAX_VSCALE_MULT: i64 = 4;
/// Largest fixed factor of a level of a mixed tiling.
pub(crate) const MAX_FIXED: i64 = 16;
/// Largest innermost perfect-tile factor of a vectorized axis (fixed targets).
pub(crate) const MAX_VECTOR_FIXED: i64 = 64;

/// Smallest register tile a perfect tiling should be able to offer; an
/// extent with no divisor from here to the largest register tile (`127`
/// rows) is tiled without requiring divisors.
pub(crate) const MIN_GOOD_REGISTER_TILE: i64 = 4;

/// Splits `a` into `n` levels for vectorization: `sample_mixed_tile` when
/// the target may use scalable vectors, or when it is fixed-length but no
/// multiple of one vector register divides the extent (`N = 255` on 8
/// lanes: the tail is then left to the tail strategy), `sample_perfect_tile`
/// otherwise. Returns the new loops, outermost first.
pub(crate) fn vector_tile(s: &mut State, a: &AxisLoop, n: usize) -> Option<Vec<LoopRv>> {
    let outs = s.new_values("t", n);
    let awkward = match (a.extent, register_lanes(s, a)) {
        (Some(e), Some(lanes)) => !(1..=MAX_VECTOR_FIXED / lanes).any(|m| e % (m * lanes) == 0),
        _ => false,
    };
    let sample = if scalable(&s.probe) || awkward {
        Inst::SampleMixedTile {
            outs: outs.clone(),
            loop_: a.rv,
            n,
            max_innermost_fixed: MAX_FIXED,
            max_innermost_vscale: MAX_VSCALE_MULT,
            decision: None,
        }
    } else {
        Inst::SamplePerfectTile {
            outs: outs.clone(),
            loop_: a.rv,
            n,
            max_innermost_factor: MAX_VECTOR_FIXED,
            decision: None,
        }
    };
    if !s.push(sample) {
        return None;
    }
    s.split_by(a.rv, &outs)
}

/// Lanes of one vector register of loop `a`'s widest type on a fixed-length
/// target (`None` where the length is not fixed).
fn register_lanes(s: &State, a: &AxisLoop) -> Option<i64> {
    let vscale = i64::from(s.probe.caps.fixed_vscale()?);
    let l = s.env.loop_(a.rv)?;
    let bits = s.probe.widest_bits(l);
    Some(crate::sample::lanes_per_granule(&s.probe.caps, bits) * vscale).filter(|n| *n > 0)
}

/// True if `extent` has a divisor from [`MIN_GOOD_REGISTER_TILE`] to
/// `max_innermost`: a perfect tiling then offers register tiles worth having.
pub(crate) fn has_register_divisor(extent: i64, max_innermost: i64) -> bool {
    extent > max_innermost && (MIN_GOOD_REGISTER_TILE..=max_innermost).any(|f| extent % f == 0)
}

/// Splits a spatial axis that is not vectorized into `n` levels, the
/// innermost being the unrolled register tile: a perfect tiling when the
/// extent is small, or has a divisor from [`MIN_GOOD_REGISTER_TILE`] to
/// `max_innermost` and `any_size` is not asked for; otherwise (`127` rows,
/// whose only divisors are 1 and 127; or 6 rows over 512, the register
/// tile that fills 16 AVX2 registers) `sample_mixed_tile` without vscale,
/// so that the register tile may be any factor up to `max_innermost` and
/// the last iteration of the levels above handles the rows left over.
pub(crate) fn register_tile(
    s: &mut State,
    a: &AxisLoop,
    n: usize,
    max_innermost: i64,
    any_size: bool,
) -> Option<Vec<LoopRv>> {
    let extent = a.extent?;
    if n < 2 || extent <= max_innermost || (!any_size && has_register_divisor(extent, max_innermost)) {
        return perfect_tile(s, a, n, max_innermost);
    }
    let outs = s.new_values("t", n);
    let sample = Inst::SampleMixedTile {
        outs: outs.clone(),
        loop_: a.rv,
        n,
        max_innermost_fixed: max_innermost,
        max_innermost_vscale: 0,
        decision: None,
    };
    if !s.push(sample) {
        return None;
    }
    s.split_by(a.rv, &outs)
}

/// Splits `a` into `n` levels with a perfect tiling (constant extents only).
pub(crate) fn perfect_tile(s: &mut State, a: &AxisLoop, n: usize, max_innermost: i64) -> Option<Vec<LoopRv>> {
    a.extent?;
    let outs = s.new_values("t", n);
    let sample = Inst::SamplePerfectTile {
        outs: outs.clone(),
        loop_: a.rv,
        n,
        max_innermost_factor: max_innermost,
        decision: None,
    };
    if !s.push(sample) {
        return None;
    }
    s.split_by(a.rv, &outs)
}

/// True unless loop `l` comes from a perfect tiling (every factor a result
/// of `sample_perfect_tile`), whose vector level divides its loop exactly.
fn may_leave_tail(s: &State, l: LoopRv) -> bool {
    let perfect: Vec<ValueRv> = s
        .trace
        .insts
        .iter()
        .filter_map(|i| match i {
            Inst::SamplePerfectTile { outs, .. } => Some(outs),
            _ => None,
        })
        .flatten()
        .copied()
        .collect();
    let split = s.trace.insts.iter().rev().find_map(|i| match i {
        Inst::Split { outs, factors, .. } if outs.contains(&l) => Some(factors),
        _ => None,
    });
    match split {
        Some(factors) => !factors.iter().all(|f| matches!(f, Some(TExpr::Rv(n)) if perfect.contains(n))),
        None => true,
    }
}

/// Prior of the tail strategies (`predicate`, `peel`, `scalar`) where
/// vectors are scalable: predication is what SVE and RVV are built for.
const SCALABLE_TAIL_PRIOR: [f64; 3] = [0.4, 0.3, 0.3];
/// The prior on fixed-length targets, where a predicated loop masks every
/// load and store (AVX2 `vmaskmov`, NEON selects): measured 2.6x slower
/// than a peeled tail in the inner loop of a matmul on AVX2.
const FIXED_TAIL_PRIOR: [f64; 3] = [0.2, 0.5, 0.3];

/// The tail strategy of vector loop `l`: sampled when a tail may remain
/// (scalable vectors, or a split that rounds up), `predicate` otherwise
/// (the choice would change nothing).
pub(crate) fn tail(s: &mut State, l: LoopRv) -> Option<Choice<Tail>> {
    let scalable = scalable(&s.probe);
    if !scalable && !may_leave_tail(s, l) {
        return Some(Choice::Lit(Tail::Predicate));
    }
    let candidates = Tail::ALL.iter().map(|t| Cand::Tail(*t)).collect();
    let prior = if scalable { SCALABLE_TAIL_PRIOR } else { FIXED_TAIL_PRIOR };
    s.sample_categorical("tail", candidates, prior.to_vec()).map(Choice::Rv)
}

/// `vectorize(l, tail="predicate")` without sampling a tail when the
/// caller knows that `l` is a whole number of vectors under every decision
/// (`exact`: a constant extent that the constant vector length divides),
/// [`vectorize`] otherwise.
pub(crate) fn vectorize_unless_exact(s: &mut State, l: LoopRv, exact: bool) -> bool {
    if exact {
        s.push(Inst::Vectorize { loop_: l, tail: Choice::Lit(Tail::Predicate) })
    } else {
        vectorize(s, l)
    }
}

/// `vectorize(l, tail=...)` with a sampled tail.
pub(crate) fn vectorize(s: &mut State, l: LoopRv) -> bool {
    match tail(s, l) {
        Some(t) => s.push(Inst::Vectorize { loop_: l, tail: t }),
        None => false,
    }
}

//! Building blocks shared by the rules: tiling an axis, choosing a tail.

use super::analysis::{scalable, AxisLoop};
use super::State;
use crate::ir::Tail;
use crate::trace::{Cand, Choice, Inst, TExpr};

/// Largest multiplier of one vscale granule in a sampled vector length.
pub(crate) const MAX_VSCALE_MULT: i64 = 4;
/// Largest fixed factor of a level of a mixed tiling.
pub(crate) const MAX_FIXED: i64 = 16;
/// Largest innermost perfect-tile factor of a vectorized axis (fixed targets).
pub(crate) const MAX_VECTOR_FIXED: i64 = 64;

/// Splits `a` into `n` levels for vectorization: `sample_mixed_tile` when
/// the target may use scalable vectors, `sample_perfect_tile` otherwise.
/// Returns the names of the new loops, outermost first.
pub(crate) fn vector_tile(s: &mut State, a: &AxisLoop, n: usize) -> Option<Vec<String>> {
    let outs: Vec<String> = (0..n).map(|_| s.name("t")).collect();
    let sample = if scalable(&s.probe) {
        Inst::SampleMixedTile {
            outs: outs.clone(),
            loop_: a.rv.clone(),
            n,
            max_innermost_fixed: MAX_FIXED,
            max_innermost_vscale: MAX_VSCALE_MULT,
            decision: None,
        }
    } else {
        Inst::SamplePerfectTile {
            outs: outs.clone(),
            loop_: a.rv.clone(),
            n,
            max_innermost_factor: MAX_VECTOR_FIXED,
            decision: None,
        }
    };
    split_with(s, a, sample, outs)
}

/// Splits `a` into `n` levels with a perfect tiling (constant extents only).
pub(crate) fn perfect_tile(s: &mut State, a: &AxisLoop, n: usize, max_innermost: i64) -> Option<Vec<String>> {
    a.extent?;
    let outs: Vec<String> = (0..n).map(|_| s.name("t")).collect();
    let sample = Inst::SamplePerfectTile {
        outs: outs.clone(),
        loop_: a.rv.clone(),
        n,
        max_innermost_factor: max_innermost,
        decision: None,
    };
    split_with(s, a, sample, outs)
}

fn split_with(s: &mut State, a: &AxisLoop, sample: Inst, factors: Vec<String>) -> Option<Vec<String>> {
    if !s.push(sample) {
        return None;
    }
    let loops: Vec<String> = factors.iter().map(|_| s.name("l")).collect();
    let split = Inst::Split {
        outs: loops.clone(),
        loop_: a.rv.clone(),
        factors: factors.iter().map(|f| Some(TExpr::Rv(f.clone()))).collect(),
    };
    s.push(split).then_some(loops)
}

/// True unless loop `l` comes from a perfect tiling (every factor a result
/// of `sample_perfect_tile`), whose vector level divides its loop exactly.
fn may_leave_tail(s: &State, l: &str) -> bool {
    let perfect: Vec<&String> = s
        .trace
        .insts
        .iter()
        .filter_map(|i| match i {
            Inst::SamplePerfectTile { outs, .. } => Some(outs),
            _ => None,
        })
        .flatten()
        .collect();
    let split = s.trace.insts.iter().rev().find_map(|i| match i {
        Inst::Split { outs, factors, .. } if outs.iter().any(|o| o == l) => Some(factors),
        _ => None,
    });
    match split {
        Some(factors) => !factors.iter().all(|f| matches!(f, Some(TExpr::Rv(n)) if perfect.contains(&n))),
        None => true,
    }
}

/// The tail strategy of vector loop `l`: sampled when a tail may remain
/// (scalable vectors, or a split that rounds up), `predicate` otherwise
/// (the choice would change nothing).
pub(crate) fn tail(s: &mut State, l: &str) -> Option<Choice<Tail>> {
    if !scalable(&s.probe) && !may_leave_tail(s, l) {
        return Some(Choice::Lit(Tail::Predicate));
    }
    let out = s.name("tail");
    let ok = s.push(Inst::SampleCategorical {
        out: out.clone(),
        candidates: Tail::ALL.iter().map(|t| Cand::Tail(*t)).collect(),
        probs: vec![0.4, 0.3, 0.3],
        decision: None,
    });
    ok.then_some(Choice::Rv(out))
}

/// `vectorize(l, tail=...)` with a sampled tail.
pub(crate) fn vectorize(s: &mut State, l: &str) -> bool {
    match tail(s, l) {
        Some(t) => s.push(Inst::Vectorize { loop_: l.to_string(), tail: t }),
        None => false,
    }
}

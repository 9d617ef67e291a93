//! Mutating categorical decisions: tails, gather strategies, vector kinds (with their tails), unroll depth.

use super::Mutator;
use crate::ir::Nest;
use crate::trace::{Bindings, Cand, Inst, SArg, Trace, ValueRv};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// True if the categorical's result is an unroll depth.
fn is_unroll(trace: &Trace, out: ValueRv) -> bool {
    trace
        .insts
        .iter()
        .any(|x| matches!(x, Inst::Annotate { key, value: SArg::Rv(v), .. } if key == "unroll_max_step" && *v == out))
}

fn redecide_categorical(inst: &Inst, rng: &mut ChaCha8Rng) -> Option<Inst> {
    let Inst::SampleCategorical { out, candidates, probs, decision: Some(d) } = inst else { return None };
    let others: Vec<usize> = (0..candidates.len()).filter(|i| i != d && probs[*i] > 0.0).collect();
    if others.is_empty() {
        return None;
    }
    let nd = others[rng.gen_range(0..others.len())];
    Some(Inst::SampleCategorical {
        out: *out,
        candidates: candidates.clone(),
        probs: probs.clone(),
        decision: Some(nd),
    })
}

/// Picks another candidate of a categorical (tail strategy, vector kind,
/// ...). A new vector kind draws the tail strategies after it again half
/// the time ([`KIND_REDRAWS_TAILS`]).
pub struct MutateCategorical;

/// How often a new vector kind comes with tail strategies drawn again (by
/// their probabilities): which tail is fastest depends on the kind, so the
/// best schedule of one kind is often two decisions away from the best of
/// another (on neoverse-v1, a length-agnostic `sve-vla` micro-kernel runs
/// well with predicated column tails, the fixed-length `sve` one of the
/// same tiles wants them peeled; one decision at a time, the step between
/// them measures slower than both).
pub const KIND_REDRAWS_TAILS: f64 = 0.5;

/// True if instruction `i` samples a categorical of `kinds`' candidates
/// (vector kinds if `kinds`, else tail strategies).
pub(super) fn samples(trace: &Trace, i: usize, kinds: bool) -> bool {
    matches!(&trace.insts[i], Inst::SampleCategorical { candidates, .. }
        if !candidates.is_empty() && candidates.iter().all(|c| if kinds { matches!(c, Cand::Kind(_)) } else { matches!(c, Cand::Tail(_)) }))
}

impl Mutator for MutateCategorical {
    fn name(&self) -> &'static str {
        "categorical"
    }

    fn candidates(&self, trace: &Trace) -> Vec<usize> {
        (0..trace.insts.len())
            .filter(|i| matches!(&trace.insts[*i], Inst::SampleCategorical { out, .. } if !is_unroll(trace, *out)))
            .collect()
    }

    fn redecide(&self, trace: &Trace, i: usize, _before: &(Nest, Bindings), rng: &mut ChaCha8Rng) -> Option<Inst> {
        redecide_categorical(&trace.insts[i], rng)
    }

    fn follow_up(&self, trace: &mut Trace, i: usize, rng: &mut ChaCha8Rng) -> bool {
        if !samples(trace, i, true) || !rng.gen_bool(KIND_REDRAWS_TAILS) {
            return false;
        }
        let mut changed = false;
        for k in i + 1..trace.insts.len() {
            if !samples(trace, k, false) {
                continue;
            }
            let Inst::SampleCategorical { probs, decision, .. } = &mut trace.insts[k] else { continue };
            let total: f64 = probs.iter().sum();
            let mut x = rng.gen::<f64>() * total;
            let drawn = probs.iter().position(|p| {
                x -= p;
                x < 0.0
            });
            let drawn = drawn.unwrap_or(probs.len() - 1);
            changed |= *decision != Some(drawn);
            *decision = Some(drawn);
        }
        changed
    }
}

/// Picks another unroll depth.
pub struct MutateUnroll;

impl Mutator for MutateUnroll {
    fn name(&self) -> &'static str {
        "unroll"
    }

    fn candidates(&self, trace: &Trace) -> Vec<usize> {
        (0..trace.insts.len())
            .filter(|i| matches!(&trace.insts[*i], Inst::SampleCategorical { out, .. } if is_unroll(trace, *out)))
            .collect()
    }

    fn redecide(&self, trace: &Trace, i: usize, _before: &(Nest, Bindings), rng: &mut ChaCha8Rng) -> Option<Inst> {
        redecide_categorical(&trace.insts[i], rng)
    }
}

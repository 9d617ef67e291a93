//! Mutating categorical decisions: tails, gather strategies, vector kinds, unroll depth; and swapping the vector kind with the tails after it drawn again.

use super::Mutator;
use crate::ir::Nest;
use crate::sample::sample_categorical;
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

/// Picks another candidate of a categorical (tail strategy, vector kind, ...).
pub struct MutateCategorical;

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

/// True if instruction `i` of `trace` samples a categorical of vector kinds
/// (`kinds`) or of tail strategies (otherwise).
pub(super) fn samples(trace: &Trace, i: usize, kinds: bool) -> bool {
    matches!(&trace.insts[i], Inst::SampleCategorical { candidates, .. }
        if !candidates.is_empty()
            && candidates.iter().all(|c| if kinds { matches!(c, Cand::Kind(_)) } else { matches!(c, Cand::Tail(_)) }))
}

/// `trace` with another vector kind, picked at random, and every tail
/// strategy after it drawn again by its probabilities (a tail whose
/// probabilities cannot be drawn from keeps its decision): the index of the
/// kind's instruction and the trace, not replayed. `None` if the trace
/// samples no vector kind or has only one.
pub(super) fn swap_kind(trace: &Trace, rng: &mut ChaCha8Rng) -> Option<(usize, Trace)> {
    let i = (0..trace.insts.len()).find(|&i| samples(trace, i, true))?;
    let inst = redecide_categorical(&trace.insts[i], rng)?;
    let mut t = trace.clone();
    t.insts[i] = inst;
    for k in i + 1..t.insts.len() {
        if !samples(&t, k, false) {
            continue;
        }
        let Inst::SampleCategorical { probs, decision, .. } = &mut t.insts[k] else { continue };
        if let Ok(drawn) = sample_categorical(probs, rng) {
            *decision = Some(drawn);
        }
    }
    Some((i, t))
}

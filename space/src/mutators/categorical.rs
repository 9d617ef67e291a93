//! Mutating categorical decisions: tails, gather strategies, vector kinds, unroll depth.

use super::Mutator;
use crate::ir::Nest;
use crate::trace::{Bindings, Inst, SArg, Trace, ValueRv};
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

//! Structural mutation: the same schedule under a sibling design-space trace.
//!
//! Structural options (gather strategy, write and read reuse, reduction
//! strategy, statement fusion, vector axis) are branches of the design
//! space, one trace per combination, not decisions inside one trace. This
//! mutator moves a sample to a trace that took another value of one such
//! option, keeps the decisions both traces share, and draws the others.

use crate::design::{DesignSpace, Sample};
use crate::rules::Choice;
use crate::trace::Trace;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// Name of the structural mutator (for logs and statistics).
pub const NAME: &str = "structure";

/// Number of options on which two traces differ (an option only one of
/// them has counts as a difference).
pub fn option_distance(a: &[Choice], b: &[Choice]) -> usize {
    let map = |cs: &[Choice]| -> BTreeMap<(String, String), String> {
        cs.iter().map(|c| ((c.scope.clone(), c.key.clone()), c.value.clone())).collect()
    };
    let (ma, mb) = (map(a), map(b));
    let differing = ma.iter().filter(|(k, v)| mb.get(*k) != Some(*v)).count();
    differing + mb.keys().filter(|k| !ma.contains_key(*k)).count()
}

/// The traces nearest to trace `k` that differ from it in some option.
pub fn neighbours(space: &DesignSpace, k: usize) -> Vec<usize> {
    let own = &space.traces[k].choices;
    let dist: Vec<(usize, usize)> = space
        .traces
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != k)
        .map(|(j, t)| (j, option_distance(own, &t.choices)))
        .filter(|(_, d)| *d > 0)
        .collect();
    let Some(best) = dist.iter().map(|(_, d)| *d).min() else { return Vec::new() };
    dist.into_iter().filter(|(_, d)| *d == best).map(|(j, _)| j).collect()
}

/// `target` (a design-space trace) with the decisions of `decided` copied
/// onto its common prefix and, if `matching`, onto every later sampling
/// instruction that also occurs, undecided, in `decided`.
fn transfer(target: &Trace, decided: &Trace, matching: bool) -> Trace {
    let mut out = target.clone();
    let undecided = decided.without_decisions();
    let mut prefix = true;
    for i in 0..target.insts.len() {
        prefix &= i < undecided.insts.len() && target.same_inst(i, &undecided, i);
        if !target.insts[i].is_sampling() {
            continue;
        }
        let source = if prefix {
            Some(i)
        } else if matching {
            (0..undecided.insts.len()).find(|j| target.same_inst(i, &undecided, *j))
        } else {
            None
        };
        if let Some(j) = source {
            out.insts[i] = decided.insts[j].clone();
        }
    }
    out
}

/// A sample of a neighbouring design-space trace that keeps what it can of
/// `s`'s decisions, or `None` if no trace differs in an option or none of
/// the attempts applies.
pub fn mutate_structure(space: &DesignSpace, s: &Sample, rng: &mut ChaCha8Rng) -> Option<Sample> {
    let near = neighbours(space, s.space_trace);
    if near.is_empty() {
        return None;
    }
    let k = near[rng.gen_range(0..near.len())];
    let target = &space.traces[k].trace;
    let attempts = [transfer(target, &s.trace, true), transfer(target, &s.trace, false), target.clone()];
    for (attempt, partial) in attempts.iter().enumerate() {
        let mut nest = space.nest.clone();
        if let Ok((trace, _)) = partial.sample(&mut nest, rng) {
            debug_assert!(trace.insts.iter().all(|i| !i.undecided()));
            return Some(Sample::new(k, trace, nest, attempt as u32));
        }
    }
    None
}

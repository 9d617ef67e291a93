//! Structural mutation: the same schedule under a sibling design-space trace.
//!
//! Structural options (gather strategy, write and read reuse, reduction
//! strategy, statement fusion, vector axis) are branches of the design
//! space, one trace per combination, not decisions inside one trace. This
//! mutator moves a sample to a trace that took another value of one such
//! option, keeps the decisions both traces share, and draws the others.

use super::prefix_state;
use crate::design::{DesignSpace, Sample};
use crate::ir::Nest;
use crate::rules::Choice;
use crate::trace::{Bindings, Trace};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Name of the structural mutator (for logs and statistics).
pub const NAME: &str = "structure";

/// Number of options on which two traces differ (an option only one of
/// them has counts as a difference; an option listed twice has its last value).
pub fn option_distance(a: &[Choice], b: &[Choice]) -> usize {
    fn same_option(c: &Choice, d: &Choice) -> bool {
        c.scope == d.scope && c.key == d.key
    }
    // The last entry of its option: the one that counts.
    fn value_in<'c>(cs: &'c [Choice], c: &Choice) -> Option<&'c str> {
        cs.iter().rev().find(|d| same_option(d, c)).map(|d| d.value.as_str())
    }
    let counts = |cs: &[Choice], i: usize| !cs[i + 1..].iter().any(|d| same_option(d, &cs[i]));
    let differing = (0..a.len()).filter(|&i| counts(a, i) && value_in(b, &a[i]) != Some(a[i].value.as_str())).count();
    let only_in_b = (0..b.len()).filter(|&i| counts(b, i) && value_in(a, &b[i]).is_none()).count();
    differing + only_in_b
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
    // Attempts, each made only if the one before does not apply.
    for attempt in 0..3 {
        let transferred = match attempt {
            0 => Some(transfer(target, &s.trace, true)),
            1 => Some(transfer(target, &s.trace, false)),
            _ => None,
        };
        let partial = transferred.as_ref().unwrap_or(target);
        if let Some((trace, nest)) = sample_after_shared(space, &s.trace, partial, rng) {
            debug_assert!(trace.insts.iter().all(|i| !i.undecided()));
            return Some(Sample::new(k, trace, nest, attempt));
        }
    }
    None
}

/// `partial.sample` on the unscheduled nest, with the instructions it
/// shares with `parent` at its start (decisions included) not replayed
/// again but taken from the parent's replayed prefix
/// ([`prefix_state`]): the same instructions give the same nest and
/// bindings, and draw nothing from `rng` (random-variable names only
/// label errors and text). `None` if it does not apply.
fn sample_after_shared(
    space: &DesignSpace,
    parent: &Trace,
    partial: &Trace,
    rng: &mut ChaCha8Rng,
) -> Option<(Trace, Nest)> {
    let shared = partial.insts.iter().zip(&parent.insts).take_while(|(a, b)| a == b).count();
    let state = prefix_state(parent, shared, &space.nest);
    let (mut nest, env) = match state.as_deref() {
        Some((nest, env)) => (nest.clone(), env.clone()),
        None => (space.nest.clone(), Bindings::default()),
    };
    let start = if state.is_some() { shared } else { 0 };
    partial.sample_from(start, &mut nest, env, rng).ok().map(|(trace, _)| (trace, nest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// The definition: each trace's options as a map (a later entry of an
    /// option replaces an earlier one), compared key by key.
    fn reference(a: &[Choice], b: &[Choice]) -> usize {
        let map = |cs: &[Choice]| -> BTreeMap<(String, String), String> {
            cs.iter().map(|c| ((c.scope.clone(), c.key.clone()), c.value.clone())).collect()
        };
        let (ma, mb) = (map(a), map(b));
        ma.iter().filter(|(k, v)| mb.get(*k) != Some(*v)).count() + mb.keys().filter(|k| !ma.contains_key(*k)).count()
    }

    fn choice(scope: u8, key: u8, value: u8) -> Choice {
        Choice { scope: format!("s{scope}"), key: format!("k{key}"), value: format!("v{value}") }
    }

    fn choices() -> impl Strategy<Value = Vec<Choice>> {
        proptest::collection::vec((0..2u8, 0..3u8, 0..2u8).prop_map(|(s, k, v)| choice(s, k, v)), 0..7)
    }

    #[test]
    fn option_distance_counts_options_not_entries() {
        let a = [choice(0, 0, 0), choice(0, 1, 0)];
        assert_eq!(option_distance(&a, &a), 0);
        // One value differs, one option only `b` has.
        let b = [choice(0, 0, 1), choice(0, 1, 0), choice(1, 0, 0)];
        assert_eq!(option_distance(&a, &b), 2);
        // An option listed twice counts with its last value.
        let twice = [choice(0, 0, 1), choice(0, 0, 0), choice(0, 1, 0)];
        assert_eq!(option_distance(&a, &twice), 0);
        assert_eq!(option_distance(&twice, &b), 2);
    }

    proptest! {
        #[test]
        fn option_distance_is_the_map_comparison(a in choices(), b in choices()) {
            prop_assert_eq!(option_distance(&a, &b), reference(&a, &b));
        }
    }
}

//! The nest and bindings of a trace replayed up to an instruction, remembered per thread: a search mutates the same parents again and again, each time at one of a few instructions.
//!
//! An entry is reused only for an equal prefix (instructions and names)
//! replayed on an equal unscheduled nest, so a hit is what a fresh replay
//! would give. The table is per thread (no locking) and bounded: past
//! [`MAX_ENTRIES`] entries the oldest go first.

use crate::ir::Nest;
use crate::trace::{Inst, Trace};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Arc;

/// Prefix states a thread keeps.
const MAX_ENTRIES: usize = 512;

/// The outcome of a replayed prefix (`None`: the prefix does not apply),
/// shared: a mutant's draft holds it until it is replayed, or dropped
/// unreplayed as a repeat, without a copy of the nest.
pub(crate) type PrefixState = Option<super::Before>;

struct Entry {
    insts: Vec<Inst>,
    names: Arc<Vec<String>>,
    nest: Nest,
    state: PrefixState,
}

thread_local! {
    static PREFIXES: RefCell<VecDeque<Entry>> = const { RefCell::new(VecDeque::new()) };
}

/// The nest and bindings just before instruction `i` of `trace` replayed on
/// `nest` (decisions replayed), or `None` if that prefix does not apply.
pub(crate) fn prefix_state(trace: &Trace, i: usize, nest: &Nest) -> PrefixState {
    let prefix = &trace.insts[..i];
    let found = PREFIXES.with(|t| {
        t.borrow()
            .iter()
            .find(|e| {
                e.insts.len() == i
                    && e.insts == prefix
                    && (Arc::ptr_eq(&e.names, &trace.names) || e.names == trace.names)
                    && e.nest == *nest
            })
            .map(|e| e.state.clone())
    });
    if let Some(state) = found {
        return state;
    }
    let replay = Trace { insts: prefix.to_vec(), names: trace.names.clone(), lines: Vec::new() };
    let mut n = nest.clone();
    let state = replay.apply(&mut n).ok().map(|env| Arc::new((n, env)));
    PREFIXES.with(|t| {
        let mut t = t.borrow_mut();
        if t.len() >= MAX_ENTRIES {
            t.pop_front();
        }
        t.push_back(Entry { insts: replay.insts, names: replay.names, nest: nest.clone(), state: state.clone() });
    });
    state
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::DesignSpace;
    use crate::sample::task_rng;
    use crate::workload::load;
    use crate::VectorCaps;

    /// A remembered prefix is what a fresh replay gives, and is only reused
    /// for the same instructions on the same unscheduled nest.
    #[test]
    fn a_remembered_prefix_equals_a_fresh_replay() {
        let w = load("matmul:M=64,N=96,K=32").expect("loads");
        let nest = Nest::from_workload(&w, VectorCaps::sve_any());
        let space = DesignSpace::generate(&nest);
        let s = space.sample(&mut task_rng(3, 0)).expect("samples");
        let i = s.trace.insts.len() / 2;
        let first = prefix_state(&s.trace, i, &nest).expect("the prefix applies");
        let again = prefix_state(&s.trace, i, &nest).expect("the prefix applies");
        assert!(Arc::ptr_eq(&first, &again), "the second call is a hit");
        let mut fresh = nest.clone();
        let prefix = Trace { insts: s.trace.insts[..i].to_vec(), names: s.trace.names.clone(), lines: Vec::new() };
        let env = prefix.apply(&mut fresh).expect("the prefix applies");
        let (cached_nest, cached_env) = first.as_ref();
        assert_eq!((cached_nest, cached_env), (&fresh, &env));
        // Another prefix length, or another unscheduled nest: not that entry.
        assert!(!Arc::ptr_eq(&first, &prefix_state(&s.trace, i - 1, &nest).expect("applies")));
        let other = Nest::from_workload(&w, VectorCaps::fixed(128));
        assert!(!Arc::ptr_eq(&first, &prefix_state(&s.trace, i, &other).expect("applies")));
    }
}

//! Mutators: new schedules from a decided trace by changing decisions.
//!
//! A mutator never edits instructions, only the decisions of sampling
//! instructions; the result is replayed on the unscheduled nest and returned
//! only if it applies (legality is checked, never assumed).

mod categorical;
mod tile;

pub use categorical::{MutateCategorical, MutateUnroll};
pub use tile::{MutateParallel, MutateTileSize};

use crate::ir::Nest;
use crate::trace::{Inst, Trace};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Changes decisions of a decided trace.
pub trait Mutator {
    /// Name for logs and statistics.
    fn name(&self) -> &'static str;

    /// The indices of instructions this mutator can change.
    fn candidates(&self, trace: &Trace) -> Vec<usize>;

    /// A new decision for instruction `i` of `trace` (replayed on `nest` up
    /// to that point), or `None` if there is no other choice.
    fn redecide(&self, trace: &Trace, i: usize, nest: &Nest, rng: &mut ChaCha8Rng) -> Option<Inst>;

    /// A legal mutated trace, or `None`.
    fn mutate(&self, trace: &Trace, nest: &Nest, rng: &mut ChaCha8Rng) -> Option<Trace> {
        let cands = self.candidates(trace);
        if cands.is_empty() {
            return None;
        }
        for _ in 0..8 {
            let i = cands[rng.gen_range(0..cands.len())];
            let Some(inst) = self.redecide(trace, i, nest, rng) else { continue };
            let mut t = trace.clone();
            t.insts[i] = inst;
            let mut n = nest.clone();
            if t.apply(&mut n).is_ok() {
                return Some(t);
            }
        }
        None
    }
}

/// All mutators with their selection weights.
pub fn registry() -> Vec<(Box<dyn Mutator>, f64)> {
    vec![
        (Box::new(MutateTileSize), 0.45),
        (Box::new(MutateCategorical), 0.3),
        (Box::new(MutateUnroll), 0.15),
        (Box::new(MutateParallel), 0.1),
    ]
}

/// Picks a mutator by weight and applies it (trying the others if it finds nothing).
pub fn mutate(trace: &Trace, nest: &Nest, rng: &mut ChaCha8Rng) -> Option<(Trace, &'static str)> {
    let reg = registry();
    let total: f64 = reg.iter().map(|(_, w)| w).sum();
    let mut x = rng.gen::<f64>() * total;
    let mut first = 0;
    for (i, (_, w)) in reg.iter().enumerate() {
        if x < *w {
            first = i;
            break;
        }
        x -= w;
    }
    for k in 0..reg.len() {
        let (m, _) = &reg[(first + k) % reg.len()];
        if let Some(t) = m.mutate(trace, nest, rng) {
            return Some((t, m.name()));
        }
    }
    None
}

/// The nest and name bindings just before instruction `i` (decisions replayed).
pub(crate) fn prefix_state(
    trace: &Trace,
    i: usize,
    nest: &Nest,
) -> Option<(Nest, std::collections::HashMap<String, crate::trace::Rv>)> {
    let prefix = Trace { insts: trace.insts[..i].to_vec(), lines: Vec::new() };
    let mut n = nest.clone();
    let env = prefix.apply(&mut n).ok()?;
    Some((n, env))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::DesignSpace;
    use crate::sample::task_rng;
    use crate::workload::load;
    use crate::VectorCaps;

    #[test]
    fn every_mutator_changes_decisions_only_and_replays() {
        let w = load("matmul:M=64,N=96,K=32").expect("loads");
        let kinds = vec![("sve-vla".to_string(), VectorCaps::sve_any()), ("neon".to_string(), VectorCaps::fixed(128))];
        let nest = Nest::from_workload(&w, VectorCaps::sve_any()).with_kinds(kinds);
        let space = DesignSpace::generate(&nest);
        let mut rng = task_rng(5, 0);
        let mut worked = std::collections::BTreeSet::new();
        for _ in 0..30 {
            let s = space.sample(&mut rng).expect("samples");
            for (m, _) in registry() {
                if let Some(t) = m.mutate(&s.trace, &nest, &mut rng) {
                    assert_eq!(t.without_decisions(), s.trace.without_decisions(), "{}", m.name());
                    assert_ne!(t, s.trace, "{}", m.name());
                    let mut n = nest.clone();
                    t.apply(&mut n).expect("a mutant replays");
                    worked.insert(m.name());
                }
            }
        }
        assert_eq!(worked.len(), registry().len(), "{worked:?}");
    }
}

//! Mutators: new schedules from a decided trace by changing decisions.
//!
//! A mutator never edits instructions, only the decisions of sampling
//! instructions; the result is replayed on the unscheduled nest and returned
//! only if it applies (legality is checked, never assumed).

mod categorical;
mod prefix;
mod structure;
mod tile;

pub use categorical::{MutateCategorical, MutateUnroll};
pub use structure::{mutate_structure, neighbours, option_distance};
pub use tile::{MutateParallel, MutateTileSize};

use prefix::{prefix_state, PrefixState};

use crate::design::{text_key, DesignSpace, Sample};
use crate::ir::Nest;
use crate::trace::{Bindings, Inst, Trace};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use smallvec::SmallVec;
use std::fmt::Write;
use std::sync::Arc;

/// The nest and bindings of a trace replayed up to an instruction, shared
/// (between the drafts of one parent, and with the per-thread memo of
/// replayed prefixes).
pub type Before = Arc<(Nest, Bindings)>;

/// Changes decisions of a decided trace.
pub trait Mutator {
    /// Name for logs and statistics.
    fn name(&self) -> &'static str;

    /// The indices of instructions this mutator can change.
    fn candidates(&self, trace: &Trace) -> Vec<usize>;

    /// A new decision for instruction `i` of `trace`, given `before`, the
    /// nest and bindings of the trace replayed up to that instruction; `None`
    /// if there is no other choice.
    fn redecide(&self, trace: &Trace, i: usize, before: &(Nest, Bindings), rng: &mut ChaCha8Rng) -> Option<Inst>;

    /// A mutated trace, its decisions made but not replayed: the trace with
    /// one decision changed, the index of that instruction and the nest and
    /// bindings of the instructions before it. `None` if the mutator finds
    /// nothing to change (it tries up to 8 instructions).
    fn decide(&self, trace: &Trace, nest: &Nest, rng: &mut ChaCha8Rng) -> Option<(Trace, usize, Before)> {
        let cands = self.candidates(trace);
        if cands.is_empty() {
            return None;
        }
        let mut states: Vec<(usize, PrefixState)> = Vec::new();
        for _ in 0..8 {
            let i = cands[rng.gen_range(0..cands.len())];
            let k = match states.iter().position(|(j, _)| *j == i) {
                Some(k) => k,
                None => {
                    states.push((i, prefix_state(trace, i, nest)));
                    states.len() - 1
                }
            };
            let Some(before) = &states[k].1 else { continue };
            let Some(inst) = self.redecide(trace, i, before, rng) else { continue };
            let mut t = trace.clone();
            t.insts[i] = inst;
            return Some((t, i, Arc::clone(before)));
        }
        None
    }

    /// A legal mutated trace and the nest it schedules (`nest` is the
    /// unscheduled one), or `None`: up to 8 mutations ([`Mutator::decide`])
    /// are replayed until one applies. The instructions before the changed
    /// one are not replayed again; only the rest is.
    fn mutate(&self, trace: &Trace, nest: &Nest, rng: &mut ChaCha8Rng) -> Option<(Trace, Nest)> {
        for _ in 0..8 {
            let (t, i, before) = self.decide(trace, nest, rng)?;
            if let Some((t, n, _)) = replay_from(t, i, &before) {
                return Some((t, n));
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

/// The mutator of the registry picked by weight with `rng`, then the
/// others in registry order: the order in which [`mutate`] and
/// [`draft_mutant`] try them.
fn mutator_order(rng: &mut ChaCha8Rng) -> impl Iterator<Item = Box<dyn Mutator>> {
    let mut reg = registry();
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
    reg.rotate_left(first);
    reg.into_iter().map(|(m, _)| m)
}

/// Picks a mutator by weight and applies it (trying the others if it finds
/// nothing): the mutated trace, the nest it schedules (`nest` is the
/// unscheduled one) and the mutator's name.
pub fn mutate(trace: &Trace, nest: &Nest, rng: &mut ChaCha8Rng) -> Option<(Trace, Nest, &'static str)> {
    for m in mutator_order(rng) {
        if let Some((t, n)) = m.mutate(trace, nest, rng) {
            return Some((t, n, m.name()));
        }
    }
    None
}

/// A mutant of a sample whose decisions are made and whose text is printed,
/// but which is not replayed yet: a search drops one that repeats a known
/// candidate (by [`Decided::text`]) before paying for its replay. Replaying
/// may repair a later perfect tiling whose loop's extent the change moved;
/// that sample's text then differs from the draft's in the repaired lines,
/// which are printed again.
pub struct Decided {
    space_trace: usize,
    trace: Trace,
    text: Arc<str>,
    from: usize,
    before: Before,
    name: &'static str,
}

impl Decided {
    /// The mutated trace as text: the text of the sample [`Decided::replay`]
    /// gives, unless the replay repairs a later decision.
    pub fn text(&self) -> &Arc<str> {
        &self.text
    }

    /// The name of the mutator that made it.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The sample, the instructions from the changed one on replayed; `None`
    /// if they do not apply.
    pub fn replay(self) -> Option<Sample> {
        self.replay_unless_known(|_| None)
    }

    /// [`Decided::replay`], unless `known` gives for the draft's text key
    /// ([`text_key`] of [`Decided::text`]) the nest a sample of that text
    /// was replayed to: the sample is then made with that nest, without a
    /// replay. It is the sample the replay would give, as a replay is a
    /// function of the trace alone and a sample's trace, already repaired,
    /// replays without a repair (a search that lowered the sample before
    /// keeps its nest for a while, and mutants often repeat).
    pub fn replay_unless_known(self, known: impl Fn(u128) -> Option<Arc<Nest>>) -> Option<Sample> {
        let key = text_key(&self.text);
        if let Some(nest) = known(key) {
            let Decided { space_trace, trace, text, .. } = self;
            return Some(Sample::known(space_trace, trace, nest, text, key));
        }
        let Decided { space_trace, trace, text, from, before, .. } = self;
        let (trace, nest, repaired) = replay_from(trace, from, &before)?;
        // A repair changes the decisions of the instructions it repaired.
        let text = if repaired.is_empty() { text } else { respliced(&text, &repaired, &trace) };
        Some(Sample::with_text(space_trace, trace, nest, 0, text))
    }
}

/// `trace` replayed from instruction `from` on `before` (the nest and
/// bindings of the instructions before it), with the perfect tilings after
/// it whose loops' extents the change moved given the nearest decisions that
/// fit ([`Trace::apply_repairing_from`]): the trace as replayed, its nest,
/// and the instructions whose decisions were repaired. `None` if it does
/// not apply.
fn replay_from(mut trace: Trace, from: usize, before: &(Nest, Bindings)) -> Option<(Trace, Nest, Vec<usize>)> {
    let (mut nest, env) = before.clone();
    let (repaired, _) = trace.apply_repairing_from(from, &mut nest, env).ok()?;
    let mut at = Vec::with_capacity(repaired.len());
    for (i, inst) in repaired {
        trace.insts[i] = inst;
        at.push(i);
    }
    Some((trace, nest, at))
}

/// A mutant in the making: a sample already made (a structural move
/// samples the decisions its new trace needs as it applies them), or
/// decisions to replay.
pub enum Draft {
    /// A sample ready to use, and the name of the mutator that made it.
    Ready(Sample, &'static str),
    /// Decisions made, not replayed.
    Decided(Box<Decided>),
}

impl Draft {
    /// The text of the sample this draft is or (unless its replay repairs
    /// a decision, see [`Decided`]) becomes.
    pub fn text(&self) -> &Arc<str> {
        match self {
            Draft::Ready(s, _) => s.text(),
            Draft::Decided(d) => d.text(),
        }
    }

    /// The sample and the name of the mutator that made it; `None` if the
    /// decisions do not replay.
    pub fn finish(self) -> Option<(Sample, &'static str)> {
        self.finish_unless_known(|_| None)
    }

    /// [`Draft::finish`], with decisions not replayed when `known` has the
    /// nest of their text ([`Decided::replay_unless_known`]).
    pub fn finish_unless_known(self, known: impl Fn(u128) -> Option<Arc<Nest>>) -> Option<(Sample, &'static str)> {
        match self {
            Draft::Ready(s, name) => Some((s, name)),
            Draft::Decided(d) => {
                let name = d.name;
                d.replay_unless_known(known).map(|s| (s, name))
            }
        }
    }
}

/// Picks a mutator by weight and has it change decisions of `s` (trying
/// the others if it finds nothing), without replaying them.
fn decide(s: &Sample, nest: &Nest, rng: &mut ChaCha8Rng) -> Option<Decided> {
    for m in mutator_order(rng) {
        if let Some((trace, from, before)) = m.decide(&s.trace, nest, rng) {
            let text = respliced(s.text(), &[from], &trace);
            return Some(Decided { space_trace: s.space_trace, trace, text, from, before, name: m.name() });
        }
    }
    None
}

/// The text of `trace`, made from `parent`, the text of a trace with the
/// same names and as many instructions that differs from it in the
/// instructions `changed` alone: each instruction prints as one line, so
/// only those lines are printed again. (If `parent` does not have a line
/// per instruction, the whole trace is printed.)
fn respliced(parent: &str, changed: &[usize], trace: &Trace) -> Arc<str> {
    let mut changed: SmallVec<[usize; 4]> = changed.into();
    changed.sort_unstable();
    changed.dedup();
    debug_assert!(changed.iter().all(|&k| k < trace.insts.len()));
    let mut next = changed.iter().copied().peekable();
    let mut text = String::with_capacity(parent.len() + 16);
    // `parent[copied..]` is not in `text` yet; line `lines` starts at `start`.
    let (mut copied, mut start, mut lines) = (0, 0, 0);
    for (at, _) in parent.match_indices('\n') {
        if next.peek() == Some(&lines) {
            next.next();
            text.push_str(&parent[copied..start]);
            // Writing to a String cannot fail.
            let _ = writeln!(text, "{}", trace.insts[lines].named(&trace.names));
            copied = at + 1;
        }
        lines += 1;
        start = at + 1;
    }
    if lines != trace.insts.len() || start != parent.len() {
        return Arc::from(trace.to_string());
    }
    text.push_str(&parent[copied..]);
    Arc::from(text)
}

/// The text of `trace`, a trace made from `parent` (of text `text`): the
/// lines of the instructions the two share are taken from `text` when
/// they have the same names and as many instructions, else the whole trace
/// is printed.
fn reprinted(parent: &Trace, text: &str, trace: &Trace) -> Arc<str> {
    if parent.names != trace.names || parent.insts.len() != trace.insts.len() {
        return Arc::from(trace.to_string());
    }
    let changed: Vec<usize> = (0..trace.insts.len()).filter(|&k| parent.insts[k] != trace.insts[k]).collect();
    respliced(text, &changed, trace)
}

/// How often [`mutate_sample`] tries a structural move first.
pub const STRUCTURE_WEIGHT: f64 = 0.15;

/// A mutant of a sample of `space` in the making: a move to a design-space
/// trace that took another structural option (see [`mutate_structure`]),
/// or a change of decisions (not replayed yet), each tried first as often
/// as [`STRUCTURE_WEIGHT`] says, and each trying the other when it finds
/// nothing.
pub fn draft_mutant(space: &DesignSpace, s: &Sample, rng: &mut ChaCha8Rng) -> Option<Draft> {
    let structural_first = rng.gen::<f64>() < STRUCTURE_WEIGHT;
    if structural_first {
        if let Some(m) = mutate_structure(space, s, rng) {
            return Some(Draft::Ready(m, structure::NAME));
        }
    }
    if let Some(d) = decide(s, &space.nest, rng) {
        return Some(Draft::Decided(Box::new(d)));
    }
    if !structural_first {
        if let Some(m) = mutate_structure(space, s, rng) {
            return Some(Draft::Ready(m, structure::NAME));
        }
    }
    None
}

/// A sample of `space` like `s` but of another vector kind, with the tail
/// strategies after the kind drawn again (which tail is fastest depends
/// on the kind: on neoverse-v1 a length-agnostic `sve-vla` micro-kernel
/// runs well with predicated column tails, where the fixed-length `sve`
/// kernel of the same tiles wants them peeled, so the best of one kind is
/// often two or more decisions away from the best of the other). Up to 8
/// tries until one replays; `None` if `s` samples no vector kind, has one
/// only, or none replays.
pub fn swap_kind(space: &DesignSpace, s: &Sample, rng: &mut ChaCha8Rng) -> Option<Sample> {
    for _ in 0..8 {
        let (i, trace) = categorical::swap_kind(&s.trace, rng)?;
        let before = prefix_state(&trace, i, &space.nest)?;
        if let Some((trace, nest, _)) = replay_from(trace, i, &before) {
            let text = reprinted(&s.trace, s.text(), &trace);
            return Some(Sample::with_text(s.space_trace, trace, nest, 0, text));
        }
    }
    None
}

/// A mutant of a sample of `space` and the name of the mutator that made
/// it: up to 8 [`draft_mutant`]s, until one replays (`None` if none does,
/// or if there is nothing to mutate).
pub fn mutate_sample(space: &DesignSpace, s: &Sample, rng: &mut ChaCha8Rng) -> Option<(Sample, &'static str)> {
    for _ in 0..8 {
        if let Some(done) = draft_mutant(space, s, rng)?.finish() {
            return Some(done);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::design::DesignSpace;
    use crate::sample::task_rng;
    use crate::workload::load;
    use crate::VectorCaps;
    use crate::VectorKind;

    #[test]
    fn every_mutator_changes_decisions_only_and_replays() {
        let w = load("matmul:M=64,N=96,K=32").expect("loads");
        let kinds = vec![(VectorKind::SveVla, VectorCaps::sve_any()), (VectorKind::Neon, VectorCaps::fixed(128))];
        let nest = Nest::from_workload(&w, VectorCaps::sve_any()).with_kinds(kinds);
        let space = DesignSpace::generate(&nest);
        let mut rng = task_rng(5, 0);
        let mut worked = std::collections::BTreeSet::new();
        for _ in 0..30 {
            let s = space.sample(&mut rng).expect("samples");
            for (m, _) in registry() {
                if let Some((t, scheduled)) = m.mutate(&s.trace, &nest, &mut rng) {
                    assert_eq!(t.without_decisions(), s.trace.without_decisions(), "{}", m.name());
                    assert_ne!(t, *s.trace, "{}", m.name());
                    let mut n = nest.clone();
                    t.apply(&mut n).expect("a mutant replays");
                    // Replaying only the instructions after the change gave the same nest.
                    assert_eq!(n.to_string(), scheduled.to_string(), "{}", m.name());
                    worked.insert(m.name());
                }
            }
        }
        assert_eq!(worked.len(), registry().len(), "{worked:?}");
    }

    /// A kind swap changes the vector kind, may change the tails after it
    /// and nothing else, and its sample is its trace replayed.
    #[test]
    fn a_kind_swap_changes_the_vector_kind_and_redraws_only_the_tails_after_it() {
        let space = space_of("matmul:M=64,N=90,K=32");
        let mut rng = task_rng(3, 0);
        let (mut swapped, mut tails_changed) = (0, 0);
        for _ in 0..60 {
            let s = space.sample(&mut rng).expect("samples");
            let Some(m) = swap_kind(&space, &s, &mut rng) else { continue };
            swapped += 1;
            let changed: Vec<usize> =
                (0..m.trace.insts.len()).filter(|&k| m.trace.insts[k] != s.trace.insts[k]).collect();
            assert!(categorical::samples(&m.trace, changed[0], true), "the kind changes first: {changed:?}");
            assert!(changed[1..].iter().all(|&k| categorical::samples(&m.trace, k, false)), "then only tails");
            tails_changed += usize::from(changed.len() > 1);
            assert_eq!(m.trace.without_decisions(), s.trace.without_decisions());
            assert_ne!(m.nest.caps, s.nest.caps, "another vector kind");
            let mut nest = space.nest.clone();
            m.trace.apply(&mut nest).expect("replays");
            assert_eq!(nest, *m.nest, "the sample is its trace's");
        }
        assert!(swapped >= 30 && tails_changed >= 5, "{swapped} swapped, {tails_changed} with new tails");
    }

    fn space_of(reference: &str) -> DesignSpace {
        let w = load(reference).expect("loads");
        let kinds = vec![(VectorKind::SveVla, VectorCaps::sve_any()), (VectorKind::Neon, VectorCaps::fixed(128))];
        DesignSpace::generate(&Nest::from_workload(&w, VectorCaps::sve_any()).with_kinds(kinds))
    }

    /// A tile-size mutant that moves a factor into or out of the loops the
    /// parallel rule fuses no longer fits the recorded chunk decision. It
    /// replays with that decision repaired, and only that one: the chunk
    /// count kept where it divides the new extent, its text printed again,
    /// its nest the trace's. Mutants that fit replay unchanged.
    #[test]
    fn tile_mutants_that_resize_the_parallel_loop_replay_with_its_chunks_repaired() {
        let space = space_of("matmul:M=64,N=96,K=32");
        let nest = &space.nest;
        let mut rng = task_rng(9, 0);
        let (mut repaired, mut kept_chunks, mut unchanged) = (0, 0, 0);
        for _ in 0..120 {
            let s = space.sample(&mut rng).expect("samples");
            let Some((t, from, before)) = MutateTileSize.decide(&s.trace, nest, &mut rng) else { continue };
            let fits = {
                let (mut n, env) = before.as_ref().clone();
                t.apply_from(from, &mut n, env).is_ok()
            };
            let d = Decided {
                space_trace: s.space_trace,
                trace: t.clone(),
                text: respliced(s.text(), &[from], &t),
                from,
                before,
                name: "tile-size",
            };
            let m = d.replay().expect("a tile-size mutant replays, repaired if need be");
            let mut n = nest.clone();
            m.trace.apply(&mut n).expect("the replayed trace applies as it is");
            assert_eq!(n.to_string(), m.nest.to_string());
            assert_eq!(**m.text(), m.trace.to_string());
            if fits {
                assert_eq!(*m.trace, t, "a mutant that fits is not repaired");
                unchanged += 1;
                continue;
            }
            let changed: Vec<usize> = (0..t.insts.len()).filter(|i| m.trace.insts[*i] != t.insts[*i]).collect();
            assert!(!changed.is_empty());
            for i in changed {
                assert!(i > from && tile::feeds_parallel(&t, i), "only the chunk tiling is repaired: {i}");
                let (
                    Inst::SamplePerfectTile { decision: Some(old), max_innermost_factor: max, .. },
                    Inst::SamplePerfectTile { decision: Some(new), .. },
                ) = (&t.insts[i], &m.trace.insts[i])
                else {
                    panic!("a perfect tiling stays one")
                };
                let extent: i64 = new.iter().product();
                assert_eq!(Some(new), crate::sample::repair_perfect(extent, new.len(), *max, old).as_ref());
                kept_chunks += usize::from(extent % old[0] == 0 && new[0] == old[0]);
            }
            repaired += 1;
        }
        assert!(repaired >= 5 && unchanged >= 5 && kept_chunks >= 1, "{repaired} {unchanged} {kept_chunks}");
    }

    #[test]
    fn structural_moves_reach_every_option_and_keep_shared_decisions() {
        // matmul_bt: gather strategy (tiling) and reuse; paged_read: gather
        // strategy of the vector-axis rule; softmax_rows: statement fusion
        // and reduction strategies.
        for reference in ["matmul_bt:M=24,N=40,K=16", "paged_read:P=13,PAGES=64", "softmax_rows:M=4,N=24"] {
            let space = space_of(reference);
            let all: std::collections::BTreeSet<_> =
                space.traces.iter().flat_map(|t| t.choices.iter().map(|c| (c.key.clone(), c.value.clone()))).collect();
            assert!(all.len() >= 2, "{reference}: {all:?}");
            let mut reached = std::collections::BTreeSet::new();
            let mut rng = task_rng(7, 0);
            for _ in 0..60 {
                let s = space.sample(&mut rng).expect("samples");
                let m = mutate_structure(&space, &s, &mut rng).expect("every trace has a neighbour");
                assert_ne!(m.space_trace, s.space_trace, "{reference}");
                assert!(neighbours(&space, s.space_trace).contains(&m.space_trace), "{reference}");
                assert!(!m.trace.has_undecided(), "{reference}");
                let mut n = space.nest.clone();
                m.trace.apply(&mut n).expect("a structural mutant replays");
                // Its nest (made after the parent's replayed prefix) is its trace's.
                assert_eq!(n.to_string(), m.nest.to_string(), "{reference}");
                assert_eq!(**m.text(), m.trace.to_string(), "{reference}");
                // The vector kind is decided first, before any branch: kept.
                assert_eq!(m.trace.insts[0], s.trace.insts[0], "{reference}");
                reached.extend(space.traces[m.space_trace].choices.iter().map(|c| (c.key.clone(), c.value.clone())));
            }
            assert_eq!(reached, all, "{reference}");
        }
    }

    #[test]
    fn a_respliced_text_is_the_printed_trace() {
        let space = space_of("matmul_bt:M=24,N=40,K=16");
        let s = space.sample(&mut task_rng(6, 0)).expect("samples");
        let parent = s.trace.to_string();
        // Any one instruction replaced (here by another's), first and last included.
        let n = s.trace.insts.len();
        for i in 0..n {
            let mut t = (*s.trace).clone();
            t.insts[i] = s.trace.insts[(i + 1) % n].clone();
            assert_eq!(*respliced(&parent, &[i], &t), t.to_string(), "instruction {i}");
            // With the next one replaced too, and a line listed that did not change.
            let j = (i + 1) % n;
            t.insts[j] = s.trace.insts[i].clone();
            assert_eq!(*respliced(&parent, &[i, j], &t), t.to_string(), "instructions {i}, {j}");
            assert_eq!(*respliced(&parent, &[0, i, j], &t), t.to_string(), "instructions 0, {i}, {j}");
            assert_eq!(*reprinted(&s.trace, &parent, &t), t.to_string(), "instructions {i}, {j}");
        }
        assert_eq!(*reprinted(&s.trace, &parent, &s.trace), parent);
        // A parent text that is not one line per instruction: printed whole.
        let mut t = (*s.trace).clone();
        t.insts[1] = s.trace.insts[0].clone();
        assert_eq!(*respliced("not a trace\n", &[1], &t), t.to_string());
        assert_eq!(*respliced(&format!("{parent}extra\n"), &[1], &t), t.to_string());
        assert_eq!(*respliced(parent.trim_end(), &[1], &t), t.to_string());
        // Another number of instructions, or other names: printed whole.
        let mut shorter = (*s.trace).clone();
        shorter.insts.pop();
        assert_eq!(*reprinted(&s.trace, &parent, &shorter), shorter.to_string());
        let mut renamed = (*s.trace).clone();
        Arc::make_mut(&mut renamed.names)[0].push('x');
        assert_eq!(*reprinted(&s.trace, &parent, &renamed), renamed.to_string());
    }

    #[test]
    fn a_draft_has_the_text_of_the_sample_it_replays_to() {
        let space = space_of("matmul_bt:M=24,N=40,K=16");
        let mut rng = task_rng(4, 0);
        let (mut decided, mut ready) = (0, 0);
        for _ in 0..60 {
            let s = space.sample(&mut rng).expect("samples");
            let draft = draft_mutant(&space, &s, &mut rng).expect("a draft");
            let text = draft.text().to_string();
            let drafted = match &draft {
                Draft::Decided(d) => {
                    decided += 1;
                    assert_ne!(d.name(), structure::NAME);
                    Some(d.trace.clone())
                }
                Draft::Ready(_, name) => {
                    ready += 1;
                    assert_eq!(*name, structure::NAME);
                    None
                }
            };
            let Some((m, _)) = draft.finish() else { continue };
            assert_eq!(m.trace.to_string(), **m.text());
            if **m.text() != text {
                // Only a replay that repaired the parallel loop's chunks changes the text.
                let t = drafted.expect("a structural mutant is ready as drafted");
                let changed: Vec<usize> = (0..t.insts.len()).filter(|i| t.insts[*i] != m.trace.insts[*i]).collect();
                assert!(!changed.is_empty() && changed.iter().all(|i| tile::feeds_parallel(&t, *i)), "{changed:?}");
            }
            let mut n = space.nest.clone();
            m.trace.apply(&mut n).expect("replays");
            assert_eq!(n.to_string(), m.nest.to_string());
        }
        assert!(decided > 20 && ready > 2, "{decided} decided, {ready} structural");
    }

    /// A draft finished with the nest of an earlier sample of its text is
    /// that sample, unreplayed: the same trace, text and key, and the nest
    /// shared. `known` is asked for the draft's text key; a draft it has
    /// nothing for (or one whose text it does not know) is replayed.
    #[test]
    fn a_draft_of_a_known_text_takes_the_known_nest_instead_of_a_replay() {
        let space = space_of("matmul_bt:M=24,N=40,K=16");
        let mut rng = task_rng(5, 0);
        let mut reused = 0;
        for i in 0..60 {
            let s = space.sample(&mut rng).expect("samples");
            // The same draft twice: the same parent and RNG stream.
            let draft = || draft_mutant(&space, &s, &mut task_rng(6, i)).expect("a draft");
            let first = draft();
            let asked = text_key(first.text());
            let Some((m, _)) = first.finish_unless_known(|_| None) else { continue };
            let again = draft();
            assert_eq!(text_key(again.text()), asked);
            let known = |key: u128| (key == m.key()).then(|| Arc::clone(&m.nest));
            let (k, _) = again.finish_unless_known(known).expect("finishes as before");
            assert_eq!((&*k.trace, k.text(), k.key()), (&*m.trace, m.text(), m.key()));
            assert_eq!(k.nest, m.nest);
            if Arc::ptr_eq(&k.nest, &m.nest) {
                reused += 1;
                assert_eq!(asked, m.key(), "only a draft of the known text takes its nest");
            }
            // Nothing known: replayed.
            let (r, _) = draft().finish_unless_known(|_| None).expect("finishes as before");
            assert!(!Arc::ptr_eq(&r.nest, &m.nest));
            assert_eq!((&*r.nest, r.text()), (&*m.nest, m.text()));
        }
        assert!(reused > 20, "{reused} drafts took a known nest");
    }

    #[test]
    fn sample_mutation_uses_decisions_and_structure() {
        let space = space_of("matmul_bt:M=24,N=40,K=16");
        let mut rng = task_rng(9, 0);
        let mut names = std::collections::BTreeSet::new();
        for _ in 0..200 {
            let s = space.sample(&mut rng).expect("samples");
            let (m, name) = mutate_sample(&space, &s, &mut rng).expect("a mutant");
            let mut n = space.nest.clone();
            m.trace.apply(&mut n).expect("replays");
            assert_eq!(n.to_string(), m.nest.to_string(), "{name}");
            if name == "structure" {
                assert_ne!(m.space_trace, s.space_trace);
            } else {
                assert_eq!(m.space_trace, s.space_trace);
                assert_eq!(m.trace.without_decisions(), s.trace.without_decisions());
            }
            names.insert(name);
        }
        assert!(
            names.contains("structure") && names.contains("tile-size") && names.contains("categorical"),
            "{names:?}"
        );
    }
}

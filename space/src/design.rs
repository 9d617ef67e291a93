//! Design spaces: the traces rules build, their size, and sampling from them.

use crate::ir::Nest;
use crate::rules::{block_rules, final_rules, workload_rules, Choice, State};
use crate::sample::task_rng;
use crate::trace::{Count, Inst, TExpr, Trace, TraceError, ValueRv};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;

/// One design-space trace and the rules that built it.
#[derive(Clone, Debug)]
pub struct SpaceTrace {
    /// The trace, with undecided sampling instructions.
    pub trace: Trace,
    /// Rule names, in the order they applied.
    pub rules: Vec<String>,
    /// The structural options this trace took (one branch per option value).
    pub choices: Vec<Choice>,
    /// Number of decisions of each sampling instruction, by instruction
    /// index; empty if the trace could not be drawn from.
    pub domains: Vec<(usize, Count)>,
}

impl SpaceTrace {
    /// Number of decision combinations of this trace (saturating): exact,
    /// or an upper bound where a domain depends on earlier decisions.
    pub fn size(&self) -> Count {
        if self.domains.is_empty() && self.trace.insts.iter().any(Inst::is_sampling) {
            return Count::Unknown;
        }
        self.domains.iter().fold(Count::Exact(1), |a, (_, d)| a.times(*d))
    }
}

/// Draws tried when counting a trace's domains before giving up.
const DOMAIN_ATTEMPTS: u64 = 16;

/// All design-space traces of a nest.
#[derive(Clone, Debug)]
pub struct DesignSpace {
    /// The unscheduled nest (with the target's vector kinds).
    pub nest: Nest,
    /// The traces.
    pub traces: Vec<SpaceTrace>,
    /// The traces grouped by the values they take of the whole-nest
    /// options (statement fusion), each group in trace order, the groups in
    /// the order of their first trace: [`DesignSpace::sample`] and
    /// [`DesignSpace::interleave`] give every group an equal share, however
    /// many per-block variants each holds. One group when the space has no
    /// whole-nest option.
    groups: Vec<Vec<usize>>,
}

/// A sampled schedule.
#[derive(Clone, Debug)]
pub struct Sample {
    /// Index of the design-space trace it came from.
    pub space_trace: usize,
    /// The trace with every decision made (shared: a sample is copied into
    /// every generation and pool it takes part in, and never edited).
    pub trace: Arc<Trace>,
    /// The scheduled nest (shared, as the trace).
    pub nest: Arc<Nest>,
    /// Draws rejected before this one (decisions that did not apply).
    pub rejected: u32,
    /// `trace` as text, printed once when the sample is made: its identity
    /// (searches de-duplicate candidates and cache their features by it).
    /// Samples are not edited after they are made.
    text: Arc<str>,
    /// [`text_key`] of `text`, computed with it.
    key: u128,
}

/// A 128-bit digest of a trace text: two independent 64-bit digests of it
/// (SipHash with fixed keys, and FxHash), so that two of the tens of
/// thousands of texts a job makes share one with odds far below 2^-64.
/// A sample's ([`Sample::key`]) is computed once, where the sample is made
/// (on the thread that made it), for tables that hold many samples' worth
/// of entries without their texts.
pub fn text_key(text: &str) -> u128 {
    use std::hash::{Hash, Hasher};
    let mut sip = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut sip);
    let mut fx = rustc_hash::FxHasher::default();
    text.hash(&mut fx);
    (u128::from(sip.finish()) << 64) | u128::from(fx.finish())
}

impl Sample {
    /// A sample of design-space trace `space_trace`, with its text printed.
    pub fn new(space_trace: usize, trace: Trace, nest: Nest, rejected: u32) -> Sample {
        let text = Arc::from(trace.to_string());
        Sample::with_text(space_trace, trace, nest, rejected, text)
    }

    /// [`Sample::new`] with the trace's text already printed (`text` must be
    /// `trace.to_string()`).
    pub(crate) fn with_text(space_trace: usize, trace: Trace, nest: Nest, rejected: u32, text: Arc<str>) -> Sample {
        debug_assert_eq!(*text, trace.to_string());
        let key = text_key(&text);
        Sample { space_trace, trace: Arc::new(trace), nest: Arc::new(nest), rejected, text, key }
    }

    /// A sample of trace `trace`, printed as `text` (of key `key`), whose
    /// replay gives `nest` (shared with an earlier sample of that text).
    pub(crate) fn known(space_trace: usize, trace: Trace, nest: Arc<Nest>, text: Arc<str>, key: u128) -> Sample {
        debug_assert_eq!(*text, trace.to_string());
        debug_assert_eq!(key, text_key(&text));
        Sample { space_trace, trace: Arc::new(trace), nest, rejected: 0, text, key }
    }

    /// The trace as text (what `trace.to_string()` gives, printed once).
    pub fn text(&self) -> &Arc<str> {
        &self.text
    }

    /// [`text_key`] of [`Sample::text`].
    pub fn key(&self) -> u128 {
        self.key
    }
}

/// What a design space is generated for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpaceOptions {
    /// Whether candidates may run loops on several threads. When they run
    /// on one thread (`tune --threads 1`, emulation), a parallel loop's
    /// chunk count changes nothing measured, so the space leaves the
    /// parallel rule out instead of sampling a decision that cannot matter.
    pub parallel: bool,
}

impl Default for SpaceOptions {
    fn default() -> SpaceOptions {
        SpaceOptions { parallel: true }
    }
}

/// Maximum draws per sample before giving up.
const MAX_ATTEMPTS: u32 = 64;

impl DesignSpace {
    /// The design space of `nest` with the default options (parallel loops allowed).
    pub fn generate(nest: &Nest) -> DesignSpace {
        DesignSpace::generate_with(nest, SpaceOptions::default())
    }

    /// Applies the rules to the nest: workload rules, then for each block (in
    /// reverse statement order) the first block rule that applies, then the
    /// final rules (without the parallel rule unless `options.parallel`).
    pub fn generate_with(nest: &Nest, options: SpaceOptions) -> DesignSpace {
        let mut states = vec![State::new(nest.clone())];
        for r in workload_rules() {
            states = states.into_iter().flat_map(|s| r.apply(&s).unwrap_or_else(|| vec![s])).collect();
        }
        let rules = block_rules();
        let mut next = Vec::new();
        for s in states {
            let mut branch = vec![s];
            let names: Vec<String> =
                branch[0].probe.all_blocks().iter().rev().map(|b| branch[0].probe.block(*b).name.clone()).collect();
            for name in names {
                branch = branch
                    .into_iter()
                    .flat_map(|s| rules.iter().find_map(|r| r.apply(&s, &name)).unwrap_or_else(|| vec![s]))
                    .collect();
            }
            next.extend(branch);
        }
        let mut states = next;
        for r in final_rules(options.parallel) {
            states = states.into_iter().flat_map(|s| r.apply(&s).unwrap_or_else(|| vec![s])).collect();
        }
        let traces = states
            .into_iter()
            .map(|s| {
                let domains = (0..DOMAIN_ATTEMPTS)
                    .find_map(|k| s.trace.domain_sizes(&mut nest.clone(), &mut task_rng(k, 0)).ok())
                    .unwrap_or_default();
                SpaceTrace { trace: s.trace, rules: s.rules, choices: s.choices, domains }
            })
            .collect();
        DesignSpace::from_traces(nest.clone(), traces)
    }

    /// The space of `nest` made of `traces` (as [`DesignSpace::generate`]
    /// leaves them).
    pub fn from_traces(nest: Nest, traces: Vec<SpaceTrace>) -> DesignSpace {
        let mut keys: Vec<Vec<&Choice>> = Vec::new();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for (k, t) in traces.iter().enumerate() {
            let key: Vec<&Choice> = t.choices.iter().filter(|c| c.scope == "*").collect();
            match keys.iter().position(|g| *g == key) {
                Some(g) => groups[g].push(k),
                None => {
                    keys.push(key);
                    groups.push(vec![k]);
                }
            }
        }
        DesignSpace { nest, traces, groups }
    }

    /// `order` (trace indices) as a cycle of draws in which each group of
    /// traces taking the same whole-nest options ([`DesignSpace::sample`])
    /// comes up equally often: round-robin over the groups, in the order
    /// their first trace has in `order`, and within a group over its traces
    /// in `order`'s order, until the largest group has gone round once
    /// (softmax's one fused trace takes every other draw, the sixteen
    /// variants of separate statements the others). `order` itself when
    /// the space has one group.
    pub fn interleave(&self, order: &[usize]) -> Vec<usize> {
        if self.groups.len() <= 1 {
            return order.to_vec();
        }
        let mut by_group: Vec<Vec<usize>> = Vec::new();
        let mut first: Vec<usize> = Vec::new();
        for &k in order {
            let Some(g) = self.groups.iter().position(|g| g.contains(&k)) else { continue };
            match first.iter().position(|&f| f == g) {
                Some(i) => by_group[i].push(k),
                None => {
                    first.push(g);
                    by_group.push(vec![k]);
                }
            }
        }
        let rounds = by_group.iter().map(Vec::len).max().unwrap_or(0);
        (0..rounds).flat_map(|r| by_group.iter().map(move |g| g[r % g.len()])).collect()
    }

    /// Total number of decision combinations over all traces, saturating at
    /// `u128::MAX`: exact, or an upper bound if some domain depends on
    /// earlier decisions. Different combinations may still give the same
    /// loop nest (a tail strategy of a loop without a tail, say).
    pub fn size(&self) -> Count {
        self.traces.iter().fold(Count::Exact(0), |a, t| a.plus(t.size()))
    }

    /// Names of the rules that applied anywhere, in first-use order.
    pub fn rules(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for t in &self.traces {
            for r in &t.rules {
                if !out.contains(r) {
                    out.push(r.clone());
                }
            }
        }
        out
    }

    /// Draws one schedule: a design trace, then its decisions. The trace
    /// is drawn uniformly when the space has no whole-nest option; else a
    /// value of those options uniformly, then one of its traces (a nest
    /// whose statements are fused has one variant where separate ones
    /// have a vector axis and reduction per statement: each of the two is
    /// drawn half the time). Draws whose decisions do not apply are
    /// retried (and counted).
    pub fn sample(&self, rng: &mut ChaCha8Rng) -> Result<Sample, TraceError> {
        if self.groups.len() <= 1 {
            return self.draw(rng, |r| r.gen_range(0..self.traces.len()));
        }
        self.draw(rng, |r| {
            let g = &self.groups[r.gen_range(0..self.groups.len())];
            g[r.gen_range(0..g.len())]
        })
    }

    /// Draws one schedule of design trace `k` (which must exist), retrying
    /// draws whose decisions do not apply.
    pub fn sample_trace(&self, k: usize, rng: &mut ChaCha8Rng) -> Result<Sample, TraceError> {
        self.draw(rng, |_| k)
    }

    /// A schedule of this space with the decisions of `donor`, a decided
    /// trace of another space of the same computation (another shape of the
    /// workload, whose best schedule is a good first guess for this one):
    /// a design trace whose instructions are the donor's, one for one by
    /// name and tile levels, takes each decision that fits its own limits (perfect tilings
    /// moved to the nearest factors of this shape's extents, categorical
    /// decisions only among the same candidates); the decisions that do not
    /// fit are drawn from `rng`. Of several matching design traces, the one
    /// with the most instructions equal to the donor's but for decisions
    /// (the same limits, unroll candidates, ...) is tried first. `None` if
    /// no design trace matches or the result does not apply.
    pub fn adopt(&self, donor: &Trace, rng: &mut ChaCha8Rng) -> Option<Sample> {
        let mut matches: Vec<(usize, usize, Trace)> = self
            .traces
            .iter()
            .enumerate()
            .filter_map(|(k, design)| {
                let transplanted = transplant(&design.trace, donor)?;
                Some((same_but_decisions(&design.trace, donor), k, transplanted))
            })
            .collect();
        matches.sort_by_key(|(same, k, _)| (std::cmp::Reverse(*same), *k));
        matches.into_iter().find_map(|(_, k, transplanted)| {
            let mut nest = self.nest.clone();
            let trace = transplanted.sample_repairing(&mut nest, rng).ok()?;
            Some(Sample::new(k, trace, nest, 0))
        })
    }

    /// Up to [`MAX_ATTEMPTS`] draws, each from the design trace `pick` names.
    fn draw(&self, rng: &mut ChaCha8Rng, pick: impl Fn(&mut ChaCha8Rng) -> usize) -> Result<Sample, TraceError> {
        let mut last_err = None;
        for attempt in 0..MAX_ATTEMPTS {
            if self.traces.is_empty() {
                break;
            }
            let k = pick(rng);
            let mut nest = self.nest.clone();
            match self.traces[k].trace.sample(&mut nest, rng) {
                Ok((trace, _)) => return Ok(Sample::new(k, trace, nest, attempt)),
                Err(e) => last_err = Some(e),
            }
        }
        Err(last_err.unwrap_or_else(|| TraceError {
            line: None,
            col: None,
            inst: None,
            message: "the design space is empty".into(),
            kind: crate::trace::TraceErrorKind::Sample,
        }))
    }
}

/// How the vectorized axis of a sampled schedule was tiled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TileKind {
    /// Every level constant.
    Fixed,
    /// A `vscale` multiple and no other level above 1.
    Scalable,
    /// Both a `vscale` multiple and a constant level above 1.
    Mixed,
}

impl TileKind {
    /// Name used in summaries.
    pub fn name(self) -> &'static str {
        match self {
            TileKind::Fixed => "fixed",
            TileKind::Scalable => "scalable",
            TileKind::Mixed => "mixed",
        }
    }
}

/// Classifies the tiles of a decided trace: one entry per tiling of a loop
/// that the trace later vectorizes (matched by the split that consumes it).
pub fn tile_kinds(trace: &Trace) -> Vec<TileKind> {
    use crate::sample::TileChoice;
    let mut out = Vec::new();
    for (i, inst) in trace.insts.iter().enumerate() {
        let (outs, choices): (&Vec<ValueRv>, Vec<TileChoice>) = match inst {
            Inst::SampleMixedTile { outs, decision: Some(d), .. }
            | Inst::SampleScalableTile { outs, decision: Some(d), .. } => {
                (outs, d.iter().filter_map(TileChoice::from_texpr).collect())
            }
            Inst::SamplePerfectTile { outs, decision: Some(d), .. } => {
                (outs, d[1..].iter().map(|c| TileChoice::Fixed(*c)).collect())
            }
            _ => continue,
        };
        // The split using these factors, and whether one of its loops is vectorized.
        let split_outs = trace.insts[i + 1..].iter().find_map(|x| match x {
            Inst::Split { outs: louts, factors, .. }
                if factors.iter().any(|f| matches!(f, Some(TExpr::Rv(n)) if outs.contains(n))) =>
            {
                Some(louts.clone())
            }
            _ => None,
        });
        let Some(louts) = split_outs else { continue };
        let vectorized =
            trace.insts.iter().any(|x| matches!(x, Inst::Vectorize { loop_, .. } if louts.contains(loop_)));
        if !vectorized {
            continue;
        }
        let scalable = choices.iter().any(|c| c.is_scalable());
        let fixed_gt1 = choices.iter().any(|c| matches!(c, TileChoice::Fixed(f) if *f > 1));
        out.push(match (scalable, fixed_gt1) {
            (true, true) => TileKind::Mixed,
            (true, false) => TileKind::Scalable,
            _ => TileKind::Fixed,
        });
    }
    out
}

/// The decided value of every `sample_categorical` whose result feeds
/// `key`: `vectorize(..., tail=t)` (key `tail`) or `use_vectors(k)` (key `kind`).
pub fn categorical_choices(trace: &Trace, key: &str) -> Vec<String> {
    categorical_values(trace, key, true)
}

/// Like [`categorical_choices`], counting only sampled values (not literals).
pub fn sampled_choices(trace: &Trace, key: &str) -> Vec<String> {
    categorical_values(trace, key, false)
}

fn categorical_values(trace: &Trace, key: &str, literals: bool) -> Vec<String> {
    use crate::trace::{Cand, Choice};
    let value_of = |rv: ValueRv| {
        trace.insts.iter().find_map(|x| match x {
            Inst::SampleCategorical { out, candidates, decision: Some(d), .. } if *out == rv => {
                Some(match &candidates[*d] {
                    Cand::Int(v) => v.to_string(),
                    Cand::Tail(t) => t.name().to_string(),
                    Cand::Kind(k) => k.to_string(),
                })
            }
            _ => None,
        })
    };
    /// The literal's text, or the random variable that holds the value.
    fn split<T: ToString>(c: &Choice<T>) -> (Option<String>, Option<ValueRv>) {
        match c {
            Choice::Lit(v) => (Some(v.to_string()), None),
            Choice::Rv(n) => (None, Some(*n)),
        }
    }
    let mut out = Vec::new();
    for inst in &trace.insts {
        let (lit, rv) = match (inst, key) {
            (Inst::Vectorize { tail, .. }, "tail") => split(tail),
            (Inst::UseVectors { kind }, "kind") => split(kind),
            _ => continue,
        };
        match (lit, rv) {
            (Some(s), _) if literals => out.push(s),
            (_, Some(n)) => out.extend(value_of(n)),
            _ => {}
        }
    }
    out
}

/// Number of vectorized loops of a nest.
pub fn vectorized_loops(nest: &Nest) -> usize {
    nest.all_loops().iter().filter(|l| matches!(nest.loop_(**l).kind, crate::ir::LoopKind::Vectorize(_))).count()
}

/// How many instructions of `design` equal `donor`'s once decisions are cleared.
fn same_but_decisions(design: &Trace, donor: &Trace) -> usize {
    let undecided = |i: &Inst| {
        let mut i = i.clone();
        i.clear_decision();
        i
    };
    design.insts.iter().zip(&donor.insts).filter(|(a, b)| undecided(a) == undecided(b)).count()
}

/// `design` with the decisions of `donor` that fit its limits, the others
/// left to draw; `None` unless the two have the same instructions, one for
/// one, by name and by number of tile levels.
fn transplant(design: &Trace, donor: &Trace) -> Option<Trace> {
    if design.insts.len() != donor.insts.len() {
        return None;
    }
    let mut out = design.clone();
    for (mine, theirs) in out.insts.iter_mut().zip(&donor.insts) {
        if mine.name() != theirs.name() {
            return None;
        }
        match (mine, theirs) {
            (
                Inst::SamplePerfectTile { n, max_innermost_factor, decision, .. },
                Inst::SamplePerfectTile { n: n2, decision: d, .. },
            ) => {
                if n != n2 {
                    return None;
                }
                *decision = d.clone().filter(|d| d.last().is_some_and(|f| f <= max_innermost_factor));
            }
            (
                Inst::SampleScalableTile { n, decision, .. } | Inst::SampleMixedTile { n, decision, .. },
                Inst::SampleScalableTile { n: n2, decision: d, .. } | Inst::SampleMixedTile { n: n2, decision: d, .. },
            ) => {
                if n != n2 {
                    return None;
                }
                decision.clone_from(d);
            }
            (
                Inst::SampleCategorical { candidates, decision, .. },
                Inst::SampleCategorical { candidates: c2, decision: d, .. },
            ) => {
                *decision = if candidates == c2 { *d } else { None };
            }
            _ => {}
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::load;
    use crate::{VectorCaps, VectorKind};

    fn rejection_reasons(
        reference: &str,
        caps: VectorCaps,
        kinds: Vec<(VectorKind, VectorCaps)>,
    ) -> std::collections::BTreeMap<String, usize> {
        let w = load(reference).expect("loads");
        let nest = Nest::from_workload(&w, caps).with_kinds(kinds);
        let space = DesignSpace::generate(&nest);
        let mut rng = task_rng(3, 0);
        let mut errors = std::collections::BTreeMap::new();
        for _ in 0..200 {
            let k = rng.gen_range(0..space.traces.len());
            let mut n = space.nest.clone();
            if let Err(e) = space.traces[k].trace.sample(&mut n, &mut rng) {
                *errors.entry(e.message.clone()).or_insert(0) += 1;
            }
        }
        errors
    }

    /// A sample's key is its text's: equal for equal texts (samples made
    /// apart), different for the different texts of a few dozen samples.
    #[test]
    fn a_sample_key_stands_for_its_text() {
        let w = load("matmul:M=64,N=48,K=32").expect("loads");
        let space = DesignSpace::generate(&Nest::from_workload(&w, VectorCaps::sve_any()));
        let mut rng = task_rng(5, 0);
        let samples: Vec<Sample> = (0..40).filter_map(|_| space.sample(&mut rng).ok()).collect();
        let mut by_text = std::collections::HashMap::new();
        for s in &samples {
            let again = Sample::new(s.space_trace, (*s.trace).clone(), (*s.nest).clone(), 0);
            assert_eq!(again.key(), s.key(), "{}", s.text());
            by_text.insert(s.text().to_string(), s.key());
        }
        let keys: std::collections::HashSet<u128> = by_text.values().copied().collect();
        assert!(by_text.len() > 20, "{} distinct texts", by_text.len());
        assert_eq!(keys.len(), by_text.len(), "a key per text");
    }

    /// Adopting a schedule into its own space gives it back. Adopted by
    /// another shape of the same structure, it keeps every decision but
    /// those of the perfect tilings, which move to factors of the new
    /// extents. Adopted by a much smaller shape, the decisions beyond its
    /// limits are drawn again, and what comes back applies there.
    #[test]
    fn a_schedule_adopted_by_another_shape_keeps_the_decisions_that_fit() {
        let caps = VectorCaps::sve_any();
        let space_of = |r: &str| DesignSpace::generate(&Nest::from_workload(&load(r).expect("loads"), caps.clone()));
        let from = space_of("matmul:M=128,N=96,K=64");
        let (to, tiny) = (space_of("matmul:M=96,N=96,K=48"), space_of("matmul:M=8,N=4,K=3"));
        let mut rng = task_rng(11, 0);
        let mut moved_tiles = 0;
        let mut tiny_adopted = 0;
        for _ in 0..40 {
            let donor = from.sample(&mut rng).expect("samples");
            let same = from.adopt(&donor.trace, &mut rng).expect("adopts its own");
            assert_eq!(same.text(), donor.text());
            let s = to.adopt(&donor.trace, &mut rng).expect("adopted by a shape of the same structure");
            assert_eq!(s.space_trace, donor.space_trace);
            for (a, b) in s.trace.insts.iter().zip(&donor.trace.insts) {
                if matches!(a, Inst::SamplePerfectTile { .. }) {
                    moved_tiles += usize::from(a != b);
                } else {
                    assert_eq!(a, b, "{}\nfrom\n{}", s.text(), donor.text());
                }
            }
            if let Some(t) = tiny.adopt(&donor.trace, &mut rng) {
                let mut nest = tiny.nest.clone();
                t.trace.apply(&mut nest).expect("an adopted schedule applies");
                tiny_adopted += 1;
            }
        }
        assert!(moved_tiles > 0, "the perfect tilings of K = 64 fit K = 48 unchanged in every sample");
        assert!(tiny_adopted > 0, "no schedule of 128x96x64 was adopted by 8x4x3");
    }

    #[test]
    fn gather_workloads_rarely_reject_draws() {
        let rvv = VectorCaps::scalable(64, 128, 1024);
        let kinds = vec![
            (VectorKind::RvvVla, rvv.clone()),
            (VectorKind::RvvFixed(128), VectorCaps { vscale_values: vec![2], ..rvv.clone() }),
        ];
        let errors = rejection_reasons("paged_read", rvv, kinds);
        assert!(errors.values().sum::<usize>() < 20, "{errors:#?}");
    }

    #[test]
    fn multi_statement_workloads_rarely_reject_draws() {
        let rvv = VectorCaps::scalable(64, 128, 1024);
        let kinds = vec![
            (VectorKind::RvvVla, rvv.clone()),
            (VectorKind::RvvFixed(128), VectorCaps { vscale_values: vec![2], ..rvv.clone() }),
        ];
        let errors = rejection_reasons("softmax_rows", rvv, kinds);
        assert!(errors.values().sum::<usize>() < 20, "{errors:#?}");
    }

    /// Distinct decided traces among `draws` samples of each design trace.
    fn distinct_schedules(space: &DesignSpace, k: usize, draws: usize) -> usize {
        let mut rng = task_rng(11, k as u64);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..draws {
            let mut n = space.nest.clone();
            let (t, _) = space.traces[k].trace.sample(&mut n, &mut rng).expect("draws");
            seen.insert(t.to_json());
        }
        seen.len()
    }

    #[test]
    fn independent_domains_count_exactly() {
        // sum_cos on a fixed 128-bit target: no parallel loop, so no domain
        // depends on another decision; every combination is reachable.
        let w = load("sum_cos:N=12").expect("loads");
        let space = DesignSpace::generate(&Nest::from_workload(&w, VectorCaps::fixed(128)));
        assert!(matches!(space.size(), Count::Exact(_)), "{:?}", space.size());
        for (k, t) in space.traces.iter().enumerate() {
            let Count::Exact(n) = t.size() else { panic!("trace {k}: {:?}", t.size()) };
            assert!(n > 1 && n < 2000, "trace {k}: {n}");
            assert_eq!(distinct_schedules(&space, k, 40 * n as usize), n as usize, "trace {k}");
        }
    }

    #[test]
    fn dependent_domains_are_bounded_from_above() {
        // scale_add:N=12 on a fixed target: the vector axis is tiled in three
        // levels (a, b, c) with a*b*c = 12, and the parallel rule fuses the
        // outer two (extent 12/c) and picks a chunk count dividing it, so its
        // domain depends on c. The true count is 4 unroll depths times
        // sum over m | 12 of (pairs with product m) * d(m) = sum d(m)^2 = 70.
        let w = load("scale_add:N=12").expect("loads");
        let space = DesignSpace::generate(&Nest::from_workload(&w, VectorCaps::fixed(128)));
        assert_eq!(space.traces.len(), 1);
        let t = &space.traces[0];
        let parallel_tile = t
            .domains
            .iter()
            .find(|(i, _)| matches!(&t.trace.insts[*i], Inst::SamplePerfectTile { max_innermost_factor: 12, n: 2, .. }))
            .expect("the parallel rule's tiling");
        assert_eq!(parallel_tile.1, Count::AtMost(6), "d(12) divisors of the largest fused extent");
        assert!(t.domains.iter().filter(|d| d.0 != parallel_tile.0).all(|(_, c)| c.is_exact()), "{:?}", t.domains);
        assert_eq!(t.size(), Count::AtMost(18 * 6 * 4));
        assert_eq!(space.size(), Count::AtMost(18 * 6 * 4));
        assert_eq!(distinct_schedules(&space, 0, 20_000), 4 * 70);
    }

    #[test]
    fn a_one_thread_space_has_no_parallel_loops_and_no_chunk_decision() {
        // The space above without the parallel rule: the 18 three-level
        // tilings of 12 times 4 unroll depths, every one reachable; the
        // default space of the same nest keeps its parallel loop.
        let w = load("scale_add:N=12").expect("loads");
        let nest = Nest::from_workload(&w, VectorCaps::fixed(128));
        let serial = DesignSpace::generate_with(&nest, SpaceOptions { parallel: false });
        let parallel = DesignSpace::generate(&nest);
        assert_eq!(serial.traces.len(), 1);
        let t = &serial.traces[0];
        assert!(!t.trace.insts.iter().any(|i| matches!(i, Inst::Parallel { .. })), "{}", t.trace);
        assert!(!t.rules.iter().any(|r| r == "parallel"), "{:?}", t.rules);
        assert_eq!(serial.size(), Count::Exact(18 * 4));
        assert_eq!(distinct_schedules(&serial, 0, 5_000), 18 * 4);
        assert!(parallel.traces[0].trace.insts.iter().any(|i| matches!(i, Inst::Parallel { .. })));
        assert_eq!(SpaceOptions::default(), SpaceOptions { parallel: true });
    }

    #[test]
    fn rejected_draws_are_rare() {
        let w = load("matmul:M=256,N=256,K=256").expect("loads");
        let kinds = vec![
            (VectorKind::Sve, VectorCaps::scalable(128, 256, 256)),
            (VectorKind::SveVla, VectorCaps::sve_any()),
            (VectorKind::Neon, VectorCaps::fixed(128)),
        ];
        let nest = Nest::from_workload(&w, VectorCaps::scalable(128, 256, 256)).with_kinds(kinds);
        let space = DesignSpace::generate(&nest);
        let mut rng = task_rng(3, 0);
        let mut errors = std::collections::BTreeMap::new();
        for _ in 0..200 {
            let k = rng.gen_range(0..space.traces.len());
            let mut n = space.nest.clone();
            if let Err(e) = space.traces[k].trace.sample(&mut n, &mut rng) {
                *errors.entry(e.message.clone()).or_insert(0) += 1;
            }
        }
        assert!(errors.values().sum::<usize>() < 20, "{errors:#?}");
    }

    /// The tiling instruction of each of the block's first two axes (`l2`
    /// rows, `l3` columns) in a fixed-length design space of `reference`.
    fn axis_tilings(reference: &str, bits: u32) -> (Inst, Inst) {
        let w = load(reference).expect("loads");
        let space = DesignSpace::generate(&Nest::from_workload(&w, VectorCaps::fixed(bits)));
        let insts = &space.traces[0].trace.insts;
        let of = |axis: usize| {
            insts
                .iter()
                .filter(|i| matches!(i, Inst::SamplePerfectTile { .. } | Inst::SampleMixedTile { .. }))
                .nth(axis)
                .cloned()
                .expect("a tiling")
        };
        (of(0), of(1))
    }

    #[test]
    fn irregular_extents_are_tiled_without_requiring_divisors_on_fixed_targets() {
        // 127 rows (prime) would only allow register tiles of 1 or 127, and no
        // multiple of the 8 lanes of a 256-bit f32 vector divides 255.
        let (rows, cols) = axis_tilings("matmul:M=127,N=255,K=63", 256);
        assert!(
            matches!(rows, Inst::SampleMixedTile { n: 4, max_innermost_fixed: 8, max_innermost_vscale: 0, .. }),
            "{rows:?}"
        );
        assert!(matches!(cols, Inst::SampleMixedTile { n: 4, max_innermost_vscale: 4, .. }), "{cols:?}");
        // Extents with good divisors keep their perfect tilings, and a
        // sibling branch offers register tiles of any size (6 rows of 512).
        let (rows, cols) = axis_tilings("matmul:M=512,N=512,K=512", 256);
        assert!(matches!(rows, Inst::SamplePerfectTile { max_innermost_factor: 8, .. }), "{rows:?}");
        assert!(matches!(cols, Inst::SamplePerfectTile { .. }), "{cols:?}");
        let w = load("matmul:M=512,N=512,K=512").expect("loads");
        let space = DesignSpace::generate(&Nest::from_workload(&w, VectorCaps::fixed(256)));
        let tilings = |space: &DesignSpace| -> Vec<SpaceTrace> {
            space.traces.iter().filter(|t| t.rules.iter().any(|r| r == "multi-level-tiling")).cloned().collect()
        };
        let register_options: Vec<(String, bool)> = tilings(&space)
            .iter()
            .map(|t| {
                let option = t.choices.iter().find(|c| c.key == "register tile").map(|c| c.value.clone());
                let mixed =
                    t.trace.insts.iter().any(|i| matches!(i, Inst::SampleMixedTile { max_innermost_vscale: 0, .. }));
                (option.unwrap_or_default(), mixed)
            })
            .collect();
        assert_eq!(register_options.len(), 8, "{register_options:?}");
        for (option, mixed) in &register_options {
            assert_eq!(option == "any size", *mixed, "{register_options:?}");
        }
        assert_eq!(register_options.iter().filter(|(_, m)| *m).count(), 4);
        // Where any size is the only option, the branch is not offered.
        let w = load("matmul:M=127,N=255,K=63").expect("loads");
        let space = DesignSpace::generate(&Nest::from_workload(&w, VectorCaps::fixed(256)));
        assert_eq!(tilings(&space).len(), 4);
        assert!(space.traces.iter().all(|t| t.choices.iter().all(|c| c.key != "register tile")));
        // Draws of the irregular space give register tiles of every size up to 8.
        let w = load("matmul:M=127,N=255,K=63").expect("loads");
        let space = DesignSpace::generate(&Nest::from_workload(&w, VectorCaps::fixed(256)));
        let mut rng = task_rng(5, 0);
        let mut innermost = std::collections::BTreeSet::new();
        for _ in 0..300 {
            let mut n = space.nest.clone();
            let (t, _) = space.traces[0].trace.sample(&mut n, &mut rng).expect("draws");
            if let Some(Inst::SampleMixedTile { decision: Some(d), .. }) =
                t.insts.iter().find(|i| matches!(i, Inst::SampleMixedTile { max_innermost_vscale: 0, .. }))
            {
                match crate::sample::TileChoice::from_texpr(d.last().expect("a decision")) {
                    Some(crate::sample::TileChoice::Fixed(f)) => innermost.insert(f),
                    other => panic!("a register tile of {other:?}"),
                };
            }
        }
        assert_eq!(innermost, (1..=8).collect());
    }

    /// Schedule primitives re-simplify only the expressions they rewrite
    /// (`Nest::replace_var`): that is enough only if every block stays
    /// simplified, which this checks on the nests of samples and mutants.
    #[test]
    fn every_block_of_a_sampled_or_mutated_nest_is_already_simplified() {
        let sve = VectorCaps::scalable(128, 128, 2048);
        for reference in ["matmul:M=64,N=48,K=32", "conv2d_nhwc", "softmax_rows", "layer_norm", "paged_read"] {
            let w = load(reference).expect("loads");
            let nest = Nest::from_workload(&w, sve.clone()).with_kinds(vec![(VectorKind::SveVla, sve.clone())]);
            let space = DesignSpace::generate(&nest);
            let mut rng = task_rng(7, 0);
            let mut nests = vec![space.nest.clone()];
            for _ in 0..12 {
                let Ok(s) = space.sample(&mut rng) else { continue };
                if let Some((m, _)) = crate::mutators::mutate_sample(&space, &s, &mut rng) {
                    nests.push((*m.nest).clone());
                }
                nests.push((*s.nest).clone());
            }
            assert!(nests.len() > 10, "{reference}: {} nests", nests.len());
            for n in &nests {
                for b in n.all_blocks() {
                    let mut again = n.clone();
                    again.simplify_block(b);
                    assert_eq!(
                        again.to_string(),
                        n.to_string(),
                        "{reference}: block {} simplifies further",
                        n.block(b).name
                    );
                }
            }
        }
    }

    /// Row statements computed at their consumer's row loop (softmax's
    /// max, exponentials and sum; layer norm's mean, differences and
    /// variance) keep one iteration of the row axis: the space offers
    /// them no vector along it (a vector of one lane, a gather of one
    /// element), only along the row's elements, and every vectorized loop
    /// of every sample of those traces runs along a row.
    #[test]
    fn fused_row_statements_are_vectorized_along_the_row_only() {
        use crate::ir::{LoopKind, Node};
        let avx512 = VectorCaps::fixed(512);
        for (reference, traces, fused) in [("softmax_rows:M=48,N=40", 17, 1), ("layer_norm:M=24,N=64", 17, 1)] {
            let w = load(reference).expect("loads");
            let nest = Nest::from_workload(&w, avx512.clone()).with_kinds(vec![(VectorKind::Avx512, avx512.clone())]);
            let space = DesignSpace::generate(&nest);
            let is_fused = |t: &SpaceTrace| t.choices.iter().any(|c| c.value == "at the consumer's outer loop");
            assert_eq!(space.traces.len(), traces, "{reference}: design traces");
            assert_eq!(space.traces.iter().filter(|t| is_fused(t)).count(), fused, "{reference}: fused traces");
            let mut rng = task_rng(5, 0);
            for (k, st) in space.traces.iter().enumerate().filter(|(_, t)| is_fused(t)) {
                let values: Vec<&str> = st.choices.iter().map(|c| c.value.as_str()).collect();
                assert!(!values.contains(&"spatial vectors") && !values.contains(&"gather"), "{reference}: {values:?}");
                for _ in 0..8 {
                    let s = space.sample_trace(k, &mut rng).expect("draws");
                    let n = &*s.nest;
                    let mut vectorized = 0;
                    for l in n.all_loops().into_iter().filter(|l| matches!(n.loop_(*l).kind, LoopKind::Vectorize(_))) {
                        vectorized += 1;
                        let v = n.loop_(l).var;
                        for b in n.blocks_in(Node::Loop(l)) {
                            let blk = n.block(b);
                            let k = blk.bindings.iter().position(|e| e.uses_var(v)).expect("drives an iterator");
                            let axis = &n.var(blk.iters[k].var).name;
                            assert!(axis.starts_with("vj"), "{reference}: {} vectorized along {axis}", blk.name);
                        }
                    }
                    // Every row statement: softmax's four, layer norm's four.
                    assert_eq!(vectorized, 4, "{reference}: {}", s.text());
                }
            }
        }
    }

    /// A whole-nest option (statement fusion) splits the space into groups
    /// that are drawn equally often, whatever number of per-block variants
    /// each holds; a space without one draws its traces uniformly, as the
    /// trace order it is given.
    #[test]
    fn each_value_of_a_whole_nest_option_is_drawn_equally_often() {
        let avx512 = VectorCaps::fixed(512);
        let space_of = |reference: &str| {
            let w = load(reference).expect("loads");
            DesignSpace::generate(
                &Nest::from_workload(&w, avx512.clone()).with_kinds(vec![(VectorKind::Avx512, avx512.clone())]),
            )
        };
        let softmax = space_of("softmax_rows:M=48,N=40");
        let fused: Vec<usize> = (0..softmax.traces.len())
            .filter(|k| softmax.traces[*k].choices.iter().any(|c| c.value == "at the consumer's outer loop"))
            .collect();
        assert_eq!((softmax.traces.len(), fused.len()), (17, 1));
        let mut rng = task_rng(11, 0);
        let draws = 400;
        let fused_draws =
            (0..draws).filter(|_| fused.contains(&softmax.sample(&mut rng).expect("draws").space_trace)).count();
        assert!((160..=240).contains(&fused_draws), "{fused_draws} of {draws} draws fused");
        // The cycle, given the traces last first (the fused one, generated
        // last, first): the fused trace before each separate variant.
        assert_eq!(fused, [softmax.traces.len() - 1]);
        let order: Vec<usize> = (0..softmax.traces.len()).rev().collect();
        let expected: Vec<usize> = order[1..].iter().flat_map(|s| [fused[0], *s]).collect();
        assert_eq!(softmax.interleave(&order), expected);
        // No whole-nest option: the order as given, and a uniform draw.
        let matmul = space_of("matmul:M=64,N=48,K=32");
        let order: Vec<usize> = (0..matmul.traces.len()).rev().collect();
        assert_eq!(matmul.interleave(&order), order);
        let (mut a, mut b) = (task_rng(3, 0), task_rng(3, 0));
        for _ in 0..20 {
            let s = matmul.sample(&mut a).expect("draws");
            let k = b.gen_range(0..matmul.traces.len());
            let mut n = matmul.nest.clone();
            let (t, _) = matmul.traces[k].trace.sample(&mut n, &mut b).expect("draws");
            assert_eq!((s.space_trace, s.text().to_string()), (k, t.to_string()));
        }
    }
}

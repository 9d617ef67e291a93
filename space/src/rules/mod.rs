//! Schedule rules: how design spaces are built.
//!
//! A rule looks at a partially built design space (a trace with undecided
//! sampling instructions, plus a *probe* nest that the trace has been applied
//! to with fixed decisions, to see loop structure and check legality) and
//! extends it, possibly into several branches. The registry below lists the
//! rules in the order they run; [`crate::design::DesignSpace`] drives them.

mod analysis;
mod build;
mod common;
mod fusion;
mod micro_kernel;
mod parallel;
mod reduction;
mod sme;
mod state;
mod tiling;
mod unroll;
mod vector_kind;
mod vectorize;

pub use state::{Choice, State};

/// A rule over the whole nest (vector kind, fusion of statements, unrolling).
pub trait WorkloadRule {
    /// Name shown by `explore`.
    fn name(&self) -> &'static str;
    /// The branches this rule makes of `st`; `None` if it does not apply.
    fn apply(&self, st: &State) -> Option<Vec<State>>;
}

/// A rule for one block (tiling, reductions, vector axis and gathers).
pub trait BlockRule {
    /// Name shown by `explore`.
    fn name(&self) -> &'static str;
    /// The branches this rule makes for `block`; `None` if it does not apply.
    fn apply(&self, st: &State, block: &str) -> Option<Vec<State>>;
}

/// Rules run once before the per-block rules, in order.
pub fn workload_rules() -> Vec<Box<dyn WorkloadRule>> {
    vec![Box::new(vector_kind::VectorKind), Box::new(fusion::Fusion)]
}

/// Per-block rules; for each block the first one that applies is used.
pub fn block_rules() -> Vec<Box<dyn BlockRule>> {
    vec![
        Box::new(sme::SmeTensorize),
        Box::new(tiling::MultiLevelTiling::default()),
        Box::new(reduction::Reduction),
        Box::new(vectorize::VectorizeAxis),
    ]
}

/// Rules run once after the per-block rules, in order; the parallel rule
/// only when the candidates may run on several threads.
pub fn final_rules(parallel: bool) -> Vec<Box<dyn WorkloadRule>> {
    let mut rules: Vec<Box<dyn WorkloadRule>> = Vec::new();
    if parallel {
        rules.push(Box::new(parallel::Parallel));
    }
    rules.push(Box::new(unroll::UnrollDepth));
    rules
}

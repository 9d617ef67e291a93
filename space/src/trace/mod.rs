//! Traces: a schedule as a list of instructions.
//!
//! A trace names its results (blocks, loops) with random-variable names and
//! refers to them in later instructions. It serializes to JSON (for the
//! database) and to a readable text form, one instruction per line, that a
//! user can write by hand:
//!
//! ```text
//! b = get_block("C")
//! i, j, k = get_loops(b)
//! i0, i1 = split(i, factors=[None, 4])
//! j0, j1 = split(j, factors=[None, 4*vscale])
//! reorder(i0, j0, k, i1, j1)
//! unroll(i1)
//! vectorize(j1, tail="predicate")
//! ```

mod apply;
mod check;
mod domain;
mod parse;
mod print;
mod step;

#[cfg(test)]
mod tests;

pub use crate::sample::SampleError;
pub use apply::{Rv, TraceError, TraceErrorKind};
pub use domain::Count;
pub use parse::parse_trace;

use crate::ir::Tail;
use crate::kind::VectorKind;
use serde::{Deserialize, Serialize};

/// An integer expression in a trace (split factors): constants, `vscale`,
/// and names of expression results.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TExpr {
    /// A constant.
    Int(i64),
    /// The vector-length multiplier.
    VScale,
    /// A named result of an earlier instruction.
    Rv(String),
    /// Sum.
    Add(Box<TExpr>, Box<TExpr>),
    /// Difference.
    Sub(Box<TExpr>, Box<TExpr>),
    /// Product.
    Mul(Box<TExpr>, Box<TExpr>),
}

/// A string-valued argument: a literal, or the name of a
/// `sample_categorical` result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SArg {
    /// A literal string.
    Lit(String),
    /// A named result.
    Rv(String),
}

/// A typed argument of an instruction: a literal, or the name of a
/// `sample_categorical` result that holds one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Choice<T> {
    /// A literal value.
    Lit(T),
    /// A named result.
    Rv(String),
}

/// One candidate of `sample_categorical`: a typed value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cand {
    /// An integer (an unroll depth, a chunk count, ...).
    Int(i64),
    /// A tail strategy.
    Tail(Tail),
    /// A vector kind.
    Kind(VectorKind),
}

impl Cand {
    /// The candidate a quoted string of trace text names: a tail strategy
    /// or a vector kind.
    pub fn from_name(s: &str) -> Option<Cand> {
        Tail::parse(s).map(Cand::Tail).or_else(|| s.parse().ok().map(Cand::Kind))
    }
}

/// One schedule instruction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Inst {
    /// `out = get_block("NAME")`.
    GetBlock {
        /// Result name.
        out: String,
        /// Block name.
        name: String,
    },
    /// `a, b, c = get_loops(block)`.
    GetLoops {
        /// Result names (one per enclosing loop).
        outs: Vec<String>,
        /// Block.
        block: String,
    },
    /// `a, b = split(loop, factors=[None, 4*vscale])`.
    Split {
        /// Result names.
        outs: Vec<String>,
        /// Loop split.
        #[serde(rename = "loop")]
        loop_: String,
        /// Factors, at most one `None`.
        factors: Vec<Option<TExpr>>,
    },
    /// `f = fuse(a, b)`.
    Fuse {
        /// Result name.
        out: String,
        /// Loops fused, outermost first.
        loops: Vec<String>,
    },
    /// `reorder(a, b, c)`.
    Reorder {
        /// Loops in their new order.
        loops: Vec<String>,
    },
    /// `vectorize(loop, tail="predicate")` (the tail may be a sampled name).
    Vectorize {
        /// Loop.
        #[serde(rename = "loop")]
        loop_: String,
        /// Tail strategy.
        tail: Choice<Tail>,
    },
    /// `unroll(loop)`.
    Unroll {
        /// Loop.
        #[serde(rename = "loop")]
        loop_: String,
    },
    /// `parallel(loop)`.
    Parallel {
        /// Loop.
        #[serde(rename = "loop")]
        loop_: String,
    },
    /// `c = cache_read(block, "B", at=loop, layout=[1, 0])`.
    CacheRead {
        /// Result name (the copy block).
        out: String,
        /// Consumer block.
        block: String,
        /// Tensor name.
        tensor: String,
        /// Loop whose body gets the copy.
        at: String,
        /// Dimension permutation of the local copy.
        layout: Option<Vec<usize>>,
    },
    /// `w = cache_write(block, at=loop)`.
    CacheWrite {
        /// Result name (the write-back block).
        out: String,
        /// Block.
        block: String,
        /// Loop whose iterations each own a tile.
        at: String,
    },
    /// `compute_at(block, loop)`.
    ComputeAt {
        /// Producer block.
        block: String,
        /// Target loop.
        #[serde(rename = "loop")]
        loop_: String,
    },
    /// `init = decompose_reduction(block, loop)`.
    DecomposeReduction {
        /// Result name (the init block).
        out: String,
        /// Reduction block.
        block: String,
        /// Loop before which the init goes.
        #[serde(rename = "loop")]
        loop_: String,
    },
    /// `annotate(target, key="k", value="v")` (the value may be a sampled name).
    Annotate {
        /// Loop or block.
        target: String,
        /// Key.
        key: String,
        /// Value.
        value: SArg,
    },
    /// `use_vectors("sve-vla")`: the kind of vectors to generate (one of the
    /// target's vector kinds); must precede every loop transformation.
    UseVectors {
        /// The kind (or a sampled name).
        kind: Choice<VectorKind>,
    },
    /// `a, b = sample_perfect_tile(loop, n=2, max_innermost_factor=16, decision=[8, 16])`:
    /// `n` factors whose product is the loop's constant extent.
    SamplePerfectTile {
        /// Result names (one factor each, outermost first).
        outs: Vec<String>,
        /// Loop tiled.
        #[serde(rename = "loop")]
        loop_: String,
        /// Number of factors.
        n: usize,
        /// Largest innermost factor.
        max_innermost_factor: i64,
        /// The factors, once sampled.
        decision: Option<Vec<i64>>,
    },
    /// `a, b = sample_scalable_tile(loop, n=2, max_innermost_vscale=4, decision=[8*vscale])`:
    /// innermost factor `m*L*vscale` (`L` lanes of one granule, `1 <= m <= max`),
    /// middle factors small powers of two, outermost by ceildiv.
    SampleScalableTile {
        /// Result names (outermost first).
        outs: Vec<String>,
        /// Loop tiled.
        #[serde(rename = "loop")]
        loop_: String,
        /// Number of factors.
        n: usize,
        /// Largest multiplier `m`.
        max_innermost_vscale: i64,
        /// The `n - 1` inner factors, once sampled.
        decision: Option<Vec<TExpr>>,
    },
    /// `a, b, c = sample_mixed_tile(loop, n=3, max_innermost_fixed=8, max_innermost_vscale=4, decision=[4, 8*vscale])`:
    /// each inner level fixed or scalable (at most one scalable), outermost by ceildiv.
    SampleMixedTile {
        /// Result names (outermost first).
        outs: Vec<String>,
        /// Loop tiled.
        #[serde(rename = "loop")]
        loop_: String,
        /// Number of factors.
        n: usize,
        /// Largest fixed factor of a level.
        max_innermost_fixed: i64,
        /// Largest multiplier of a scalable level.
        max_innermost_vscale: i64,
        /// The `n - 1` inner factors, once sampled.
        decision: Option<Vec<TExpr>>,
    },
    /// `t = sample_categorical(candidates=["predicate", "peel"], probs=[0.5, 0.5], decision=1)`.
    SampleCategorical {
        /// Result name.
        out: String,
        /// The candidates.
        candidates: Vec<Cand>,
        /// Their probabilities (same length, summing to 1).
        probs: Vec<f64>,
        /// Index of the chosen candidate, once sampled.
        decision: Option<usize>,
    },
}

impl Inst {
    /// The instruction's name as written in trace text.
    pub fn name(&self) -> &'static str {
        match self {
            Inst::GetBlock { .. } => "get_block",
            Inst::GetLoops { .. } => "get_loops",
            Inst::Split { .. } => "split",
            Inst::Fuse { .. } => "fuse",
            Inst::Reorder { .. } => "reorder",
            Inst::Vectorize { .. } => "vectorize",
            Inst::Unroll { .. } => "unroll",
            Inst::Parallel { .. } => "parallel",
            Inst::CacheRead { .. } => "cache_read",
            Inst::CacheWrite { .. } => "cache_write",
            Inst::ComputeAt { .. } => "compute_at",
            Inst::DecomposeReduction { .. } => "decompose_reduction",
            Inst::Annotate { .. } => "annotate",
            Inst::UseVectors { .. } => "use_vectors",
            Inst::SamplePerfectTile { .. } => "sample_perfect_tile",
            Inst::SampleScalableTile { .. } => "sample_scalable_tile",
            Inst::SampleMixedTile { .. } => "sample_mixed_tile",
            Inst::SampleCategorical { .. } => "sample_categorical",
        }
    }

    /// True for sampling instructions (they carry a decision).
    pub fn is_sampling(&self) -> bool {
        matches!(
            self,
            Inst::SamplePerfectTile { .. }
                | Inst::SampleScalableTile { .. }
                | Inst::SampleMixedTile { .. }
                | Inst::SampleCategorical { .. }
        )
    }

    /// True if the instruction is a sampling instruction without a decision.
    pub fn undecided(&self) -> bool {
        match self {
            Inst::SamplePerfectTile { decision, .. } => decision.is_none(),
            Inst::SampleScalableTile { decision, .. } | Inst::SampleMixedTile { decision, .. } => decision.is_none(),
            Inst::SampleCategorical { decision, .. } => decision.is_none(),
            _ => false,
        }
    }

    /// Removes the decision of a sampling instruction.
    pub fn clear_decision(&mut self) {
        match self {
            Inst::SamplePerfectTile { decision, .. } => *decision = None,
            Inst::SampleScalableTile { decision, .. } | Inst::SampleMixedTile { decision, .. } => *decision = None,
            Inst::SampleCategorical { decision, .. } => *decision = None,
            _ => {}
        }
    }
}

impl SArg {
    /// A literal.
    pub fn lit(s: impl Into<String>) -> SArg {
        SArg::Lit(s.into())
    }
}

/// A schedule: instructions in order.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
pub struct Trace {
    /// The instructions.
    pub insts: Vec<Inst>,
    /// Source line of each instruction when parsed from text (for messages).
    #[serde(skip)]
    pub lines: Vec<usize>,
}

impl Trace {
    /// JSON form (what the database stores).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("traces always serialize")
    }

    /// Parses the JSON form.
    pub fn from_json(s: &str) -> Result<Trace, serde_json::Error> {
        serde_json::from_str(s)
    }

    /// The same trace with every sampling decision removed (a design space).
    pub fn without_decisions(&self) -> Trace {
        let mut t = self.clone();
        for i in &mut t.insts {
            i.clear_decision();
        }
        t
    }

    /// True if some sampling instruction has no decision.
    pub fn has_undecided(&self) -> bool {
        self.insts.iter().any(|i| i.undecided())
    }
}

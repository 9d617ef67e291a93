//! Trace instructions and their arguments: typed random variables, literals, sampled values.

use super::rv::{BlockRv, LoopOrBlock, LoopRv, ValueRv};
use crate::ir::Tail;
use crate::kind::VectorKind;
use serde::{Deserialize, Serialize};

/// An integer expression in a trace (split factors): constants, `vscale`,
/// and sampled integers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TExpr {
    /// A constant.
    Int(i64),
    /// The vector-length multiplier.
    VScale,
    /// A sampled integer (a result of an earlier instruction).
    Rv(ValueRv),
    /// Sum.
    Add(Box<TExpr>, Box<TExpr>),
    /// Difference.
    Sub(Box<TExpr>, Box<TExpr>),
    /// Product.
    Mul(Box<TExpr>, Box<TExpr>),
}

/// A string-valued argument: a literal, or a sampled value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SArg {
    /// A literal string.
    Lit(String),
    /// A sampled value.
    Rv(ValueRv),
}

/// A typed argument of an instruction: a literal, or a
/// `sample_categorical` result that holds one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Choice<T> {
    /// A literal value.
    Lit(T),
    /// A sampled value.
    Rv(ValueRv),
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
        /// Result.
        out: BlockRv,
        /// Block name.
        name: String,
    },
    /// `a, b, c = get_loops(block)`.
    GetLoops {
        /// Results (one per enclosing loop).
        outs: Vec<LoopRv>,
        /// Block.
        block: BlockRv,
    },
    /// `a, b = split(loop, factors=[None, 4*vscale])`.
    Split {
        /// Results.
        outs: Vec<LoopRv>,
        /// Loop split.
        #[serde(rename = "loop")]
        loop_: LoopRv,
        /// Factors, at most one `None`.
        factors: Vec<Option<TExpr>>,
    },
    /// `f = fuse(a, b)`.
    Fuse {
        /// Result.
        out: LoopRv,
        /// Loops fused, outermost first.
        loops: Vec<LoopRv>,
    },
    /// `reorder(a, b, c)`.
    Reorder {
        /// Loops in their new order.
        loops: Vec<LoopRv>,
    },
    /// `vectorize(loop, tail="predicate")` (the tail may be a sampled value).
    Vectorize {
        /// Loop.
        #[serde(rename = "loop")]
        loop_: LoopRv,
        /// Tail strategy.
        tail: Choice<Tail>,
    },
    /// `unroll(loop)`.
    Unroll {
        /// Loop.
        #[serde(rename = "loop")]
        loop_: LoopRv,
    },
    /// `parallel(loop)`.
    Parallel {
        /// Loop.
        #[serde(rename = "loop")]
        loop_: LoopRv,
    },
    /// `c = cache_read(block, "B", at=loop, layout=[1, 0])`.
    CacheRead {
        /// Result (the copy block).
        out: BlockRv,
        /// Consumer block.
        block: BlockRv,
        /// Tensor name.
        tensor: String,
        /// Loop whose body gets the copy.
        at: LoopRv,
        /// Dimension permutation of the local copy.
        layout: Option<Vec<usize>>,
    },
    /// `w = cache_write(block, at=loop)`.
    CacheWrite {
        /// Result (the write-back block).
        out: BlockRv,
        /// Block.
        block: BlockRv,
        /// Loop whose iterations each own a tile.
        at: LoopRv,
    },
    /// `compute_at(block, loop)`.
    ComputeAt {
        /// Producer block.
        block: BlockRv,
        /// Target loop.
        #[serde(rename = "loop")]
        loop_: LoopRv,
    },
    /// `init = decompose_reduction(block, loop)`.
    DecomposeReduction {
        /// Result (the init block).
        out: BlockRv,
        /// Reduction block.
        block: BlockRv,
        /// Loop before which the init goes.
        #[serde(rename = "loop")]
        loop_: LoopRv,
    },
    /// `annotate(loop, key="unroll_max_step", value="16")` (the value may be
    /// a sampled value, or written `value=16`; keys and values:
    /// [`crate::schedule::ANNOTATION_KEYS`], [`crate::schedule::check_annotation`]).
    Annotate {
        /// Loop (a block is refused on replay: lowering reads loop annotations only).
        target: LoopOrBlock,
        /// Key.
        key: String,
        /// Value.
        value: SArg,
    },
    /// `tensorize(loop, intrin="za_fmopa")` (or `"za_fmopa_vread"`: the row
    /// operand read through ZA vertical slices): the loop (a reduction over
    /// an outer product, or the outer product's rows) becomes an SME
    /// micro-kernel accumulating in ZA tiles.
    Tensorize {
        /// The micro-kernel's outermost loop.
        #[serde(rename = "loop")]
        loop_: LoopRv,
        /// The tensor intrinsic.
        intrin: String,
    },
    /// `use_vectors("sve-vla")`: the kind of vectors to generate (one of the
    /// target's vector kinds); must precede every loop transformation.
    UseVectors {
        /// The kind (or a sampled value).
        kind: Choice<VectorKind>,
    },
    /// `a, b = sample_perfect_tile(loop, n=2, max_innermost_factor=16, decision=[8, 16])`:
    /// `n` factors whose product is the loop's constant extent.
    SamplePerfectTile {
        /// Results (one factor each, outermost first).
        outs: Vec<ValueRv>,
        /// Loop tiled.
        #[serde(rename = "loop")]
        loop_: LoopRv,
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
        /// Results (outermost first).
        outs: Vec<ValueRv>,
        /// Loop tiled.
        #[serde(rename = "loop")]
        loop_: LoopRv,
        /// Number of factors.
        n: usize,
        /// Largest multiplier `m`.
        max_innermost_vscale: i64,
        /// The `n - 1` inner factors, once sampled.
        decision: Option<Vec<TExpr>>,
    },
    /// `a, b, c = sample_mixed_tile(loop, n=3, max_innermost_fixed=8, max_innermost_vscale=4, decision=[4, 8*vscale])`:
    /// each inner level fixed or scalable (at most one scalable), outermost by ceildiv.
    /// With `max_innermost_vscale=0` no level is scalable and each inner level,
    /// the innermost included, is any factor up to `max_innermost_fixed`.
    SampleMixedTile {
        /// Results (outermost first).
        outs: Vec<ValueRv>,
        /// Loop tiled.
        #[serde(rename = "loop")]
        loop_: LoopRv,
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
        /// Result.
        out: ValueRv,
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
            Inst::Tensorize { .. } => "tensorize",
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

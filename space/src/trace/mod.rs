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
mod parse;
mod print;

#[cfg(test)]
mod tests;

pub use apply::{Rv, TraceError, TraceErrorKind};
pub use parse::parse_trace;

use crate::ir::Tail;
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
    /// `vectorize(loop, tail="predicate")`.
    Vectorize {
        /// Loop.
        #[serde(rename = "loop")]
        loop_: String,
        /// Tail strategy.
        tail: Tail,
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
    /// `annotate(target, key="k", value="v")`.
    Annotate {
        /// Loop or block.
        target: String,
        /// Key.
        key: String,
        /// Value.
        value: String,
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
        }
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
}

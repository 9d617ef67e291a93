//! Random variables of a trace: typed ids of instruction results.
//!
//! Every result of an instruction is a random variable with an id, an index
//! into the trace's name table ([`super::Trace::names`]), where the name a
//! user wrote (or a rule chose) lives once. The id's type says what it
//! holds: a [`LoopRv`] a loop, a [`BlockRv`] a block, a [`ValueRv`] a
//! sampled value (an integer factor, or the candidate a `sample_categorical`
//! picked: an integer, a tail strategy or a vector kind). All three share
//! one index space.

use serde::{Deserialize, Serialize};

/// An id of a random variable: an index into its trace's name table.
pub trait RvId: Copy {
    /// The index into the trace's name table.
    fn index(self) -> usize;
}

macro_rules! rv_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub u32);

        impl RvId for $name {
            fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

rv_type!(
    /// A random variable holding a loop (a result of `get_loops`, `split`, `fuse`).
    LoopRv
);
rv_type!(
    /// A random variable holding a block (a result of `get_block`,
    /// `cache_read`, `cache_write`, `decompose_reduction`).
    BlockRv
);
rv_type!(
    /// A random variable holding a sampled value: a factor of a tiling, or
    /// the candidate a `sample_categorical` picked (an integer, a tail
    /// strategy or a vector kind; which one, its candidates say).
    ValueRv
);

/// Name printed for an id that is not in the name table (a trace built by hand).
const UNNAMED: &str = "?";

/// The name of the random variable with id `index` in a name table.
pub(super) fn name_in(names: &[String], index: usize) -> &str {
    names.get(index).map_or(UNNAMED, String::as_str)
}

/// The target of `annotate`: a loop or a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoopOrBlock {
    /// A loop.
    Loop(LoopRv),
    /// A block.
    Block(BlockRv),
}

impl RvId for LoopOrBlock {
    fn index(self) -> usize {
        match self {
            LoopOrBlock::Loop(l) => l.index(),
            LoopOrBlock::Block(b) => b.index(),
        }
    }
}

/// The kind of value a random variable holds (what a use expects, what a
/// definition makes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Block,
    Loop,
    Int,
    Tail,
    Vectors,
}

impl Kind {
    pub(super) fn noun(self) -> &'static str {
        match self {
            Kind::Block => "a block",
            Kind::Loop => "a loop",
            Kind::Int => "an integer",
            Kind::Tail => "a tail strategy",
            Kind::Vectors => "a vector kind",
        }
    }
}

/// One use of a random variable by an instruction: its index and the kinds
/// it may hold there.
#[derive(Clone, Copy, Debug)]
pub(super) struct Use {
    pub(super) index: usize,
    pub(super) wants: &'static [Kind],
}

impl Use {
    pub(super) fn loop_(rv: LoopRv) -> Use {
        Use { index: rv.index(), wants: &[Kind::Loop] }
    }

    pub(super) fn block(rv: BlockRv) -> Use {
        Use { index: rv.index(), wants: &[Kind::Block] }
    }

    pub(super) fn value(rv: ValueRv, wants: &'static [Kind]) -> Use {
        Use { index: rv.index(), wants }
    }
}

/// Every kind of value a sampled result may hold.
pub(super) const ANY_VALUE: &[Kind] = &[Kind::Int, Kind::Tail, Kind::Vectors];
/// Any kind at all (decision entries, which replay checks).
pub(super) const ANY: &[Kind] = &[Kind::Block, Kind::Loop, Kind::Int, Kind::Tail, Kind::Vectors];

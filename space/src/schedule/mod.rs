//! Schedule primitives: legality-checked transformations of a loop nest.
//!
//! Each primitive is a method on [`crate::ir::Nest`] in its own file.
//! A primitive either applies completely or fails with a [`ScheduleError`]
//! naming the primitive and the reason, leaving the nest unchanged.

mod annotate;
pub use annotate::{check_annotation, check_annotation_key, AnnotationError, ANNOTATION_KEYS, UNROLL_MAX_STEP};
mod cache;
mod compute_at;
mod decompose;
mod fuse;
mod kinds;
pub use kinds::{vector_lanes, MAX_UNROLL};
mod region;
mod reorder;
mod split;
mod tensorize;
pub(crate) use tensorize::mopa_operands;
pub use tensorize::{OuterProduct, TENSORIZE_KEY, ZA_FMOPA, ZA_FMOPA_VREAD, ZA_LANES_PER_VSCALE};
mod vectors;

#[cfg(test)]
mod tests;

use thiserror::Error;

/// The category of a schedule failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// A block name that does not exist.
    UnknownBlock,
    /// A loop or block removed by an earlier transformation.
    Stale,
    /// Split factors that are not positive or do not cover the extent.
    BadFactors,
    /// Loops that do not form a single chain, or a loop that is not where it must be.
    Structure,
    /// The transformation would break a dependence.
    Dependence,
    /// The loop cannot be vectorized, unrolled or parallelized.
    LoopKind,
    /// A region that cannot be bounded or a tensor that cannot be cached.
    Region,
    /// An annotation key `annotate` does not set, a value its key does not
    /// take, or a target it does not annotate.
    Annotation,
    /// A split factor, loop extent, iteration count or unrolled size beyond
    /// the limits of [`crate::limits`].
    Limit,
}

/// A schedule primitive could not be applied.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{primitive}: {message}")]
pub struct ScheduleError {
    /// The primitive's name (`split`, `vectorize`, ...).
    pub primitive: &'static str,
    /// The category.
    pub kind: ErrorKind,
    /// What is wrong, naming loops and blocks.
    pub message: String,
}

impl ScheduleError {
    /// A new error.
    pub fn new(primitive: &'static str, kind: ErrorKind, message: impl Into<String>) -> ScheduleError {
        ScheduleError { primitive, kind, message: message.into() }
    }
}

pub(crate) type Result<T> = std::result::Result<T, ScheduleError>;

use crate::ids::{BlockId, LoopId};
use crate::ir::{LoopKind, Loops, Nest, Node};

impl Nest {
    /// Fails unless the loop is alive.
    pub(crate) fn check_loop(&self, prim: &'static str, l: LoopId) -> Result<()> {
        match self.loops.get(l.index()) {
            Some(lp) if lp.alive => Ok(()),
            Some(lp) => Err(ScheduleError::new(
                prim,
                ErrorKind::Stale,
                format!("loop `{}` no longer exists (an earlier transformation replaced it)", self.var(lp.var).name),
            )),
            None => Err(ScheduleError::new(prim, ErrorKind::Stale, format!("{l} does not exist"))),
        }
    }

    /// Fails unless the block is alive.
    pub(crate) fn check_block(&self, prim: &'static str, b: BlockId) -> Result<()> {
        match self.blocks.get(b.index()) {
            Some(blk) if blk.alive => Ok(()),
            Some(blk) => {
                Err(ScheduleError::new(prim, ErrorKind::Stale, format!("block `{}` no longer exists", blk.name)))
            }
            None => Err(ScheduleError::new(prim, ErrorKind::Stale, format!("{b} does not exist"))),
        }
    }

    /// Fails if `l` is a vectorized loop or inside one: new blocks placed
    /// there would not depend on the vector lane.
    pub(crate) fn check_outside_vector(&self, prim: &'static str, l: LoopId) -> Result<()> {
        let mut chain = self.ancestors(Node::Loop(l));
        chain.push(l);
        for a in chain {
            if matches!(self.loop_(a).kind, LoopKind::Vectorize(_)) {
                return Err(ScheduleError::new(
                    prim,
                    ErrorKind::LoopKind,
                    format!(
                        "cannot place new statements inside the vectorized loop `{}`; vectorize afterwards",
                        self.loop_name(a)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The block with this name.
    pub fn get_block(&self, name: &str) -> Result<BlockId> {
        self.find_block(name).ok_or_else(|| {
            let known: Vec<String> = self.all_blocks().iter().map(|b| self.block(*b).name.clone()).collect();
            ScheduleError::new(
                "get_block",
                ErrorKind::UnknownBlock,
                format!("no block named `{name}` (blocks: {})", known.join(", ")),
            )
        })
    }

    /// The loops enclosing a block, outermost first.
    pub fn get_loops(&self, b: BlockId) -> Result<Loops> {
        self.check_block("get_loops", b)?;
        Ok(self.ancestors(Node::Block(b)))
    }

    /// A short description of a loop kind for messages.
    pub(crate) fn kind_name(&self, l: LoopId) -> &'static str {
        match self.loop_(l).kind {
            LoopKind::Serial => "serial",
            LoopKind::Unroll => "unrolled",
            LoopKind::Vectorize(_) => "vectorized",
            LoopKind::Parallel => "parallel",
        }
    }
}

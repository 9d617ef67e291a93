//! Lowering of scheduled loop nests to the vector program.
//!
//! [`lower`] walks the loop tree once. Serial loops become `Loop` statements,
//! unrolled loops are replicated, and a vectorized loop turns its body into
//! vector code: its variable becomes the lane index, accesses that are
//! contiguous in it become (masked) vector loads and stores, others gathers
//! and scatters, and predicates that depend on it become lane masks
//! (`ActiveLaneMask` where possible). Tail strategies `peel` and `scalar`
//! version the innermost loop that decides whether a vector is full
//! (`tails`); reductions over a vector loop accumulate in a vector register
//! hoisted above the loops that carry the reduction and are reduced
//! horizontally once (`reduce`). A loop marked by `tensorize` becomes an SME
//! micro-kernel of outer products into ZA tiles (`za`).

mod access;
mod block;
mod compact;
mod ctx;
pub mod math;
mod reduce;
mod tails;
mod tiles;
mod walk;
mod za;

#[cfg(test)]
mod tests;

pub use ctx::{lower, lower_unoptimized, lower_unverified, LowerError};

//! Replaying one trace instruction: a table from each instruction to the function (one file per group of related instructions) that applies it.
//!
//! Adding a primitive: its `Inst` variant (in `inst.rs`, with the random
//! variables it uses and defines in `uses.rs` and its text form in
//! `parse/build.rs` and `print.rs`), a function in one of these files (or a
//! new file), and one line in [`step`].

mod blocks;
mod lookup;
mod loops;
mod marks;
mod sample_categorical;
mod sample_perfect;
mod sample_tile;
mod tensorize;

use super::apply::Env;
use super::Inst;
use super::TraceError;
use crate::ir::Nest;
use rand_chacha::ChaCha8Rng;

/// What replaying an instruction gives besides its bindings: the instruction
/// with its decision filled in (sampling instructions) and the number of
/// decisions it could have taken.
pub(super) type Stepped = (Option<Inst>, Option<u128>);

/// Nothing beyond the bindings (every instruction but the sampling ones).
const PLAIN: Stepped = (None, None);

/// Applies `env.inst` to `nest`, binding its results in `env`; sampling
/// instructions without a decision draw one from `rng`.
pub(super) fn step(env: &mut Env, nest: &mut Nest, rng: Option<&mut ChaCha8Rng>) -> Result<Stepped, TraceError> {
    match env.inst {
        Inst::GetBlock { out, name } => lookup::get_block(env, nest, *out, name),
        Inst::GetLoops { outs, block } => lookup::get_loops(env, nest, outs, *block),
        Inst::Split { outs, loop_, factors } => loops::split(env, nest, outs, *loop_, factors),
        Inst::Fuse { out, loops } => loops::fuse(env, nest, *out, loops),
        Inst::Reorder { loops } => loops::reorder(env, nest, loops),
        Inst::Vectorize { loop_, tail } => marks::vectorize(env, nest, *loop_, tail),
        Inst::Unroll { loop_ } => marks::unroll(env, nest, *loop_),
        Inst::Parallel { loop_ } => marks::parallel(env, nest, *loop_),
        Inst::Annotate { target, key, value } => marks::annotate(env, nest, *target, key, value),
        Inst::UseVectors { kind } => marks::use_vectors(env, nest, kind),
        Inst::Tensorize { loop_, intrin } => tensorize::tensorize(env, nest, *loop_, intrin),
        Inst::CacheRead { out, block, tensor, at, layout } => {
            blocks::cache_read(env, nest, *out, *block, tensor, *at, layout.as_deref())
        }
        Inst::CacheWrite { out, block, at } => blocks::cache_write(env, nest, *out, *block, *at),
        Inst::ComputeAt { block, loop_ } => blocks::compute_at(env, nest, *block, *loop_),
        Inst::DecomposeReduction { out, block, loop_ } => blocks::decompose_reduction(env, nest, *out, *block, *loop_),
        Inst::SamplePerfectTile { .. } => sample_perfect::step(env, nest, rng),
        Inst::SampleScalableTile { .. } | Inst::SampleMixedTile { .. } => sample_tile::step(env, nest, rng),
        Inst::SampleCategorical { .. } => sample_categorical::step(env, rng),
    }
}

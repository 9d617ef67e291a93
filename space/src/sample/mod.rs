//! Sampling primitives: the random choices of a design space.
//!
//! Each primitive has a finite domain that can be counted exactly, draws
//! from it with an explicitly passed ChaCha RNG, and checks a recorded
//! decision against the loop it is replayed on (a decision that no longer
//! fits, e.g. after a shape change, is an error, never silently altered).

mod categorical;
mod perfect;
mod tile;

pub use categorical::{check_categorical, sample_categorical};
pub use perfect::{count_perfect, perfect_domain_ok, repair_perfect, sample_perfect};
pub use tile::{lanes_per_granule, TileChoice, TileDomain};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use thiserror::Error;

/// A sampling instruction cannot sample, or its decision does not fit.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{0}")]
pub struct SampleError(pub String);

/// The RNG of one task: the job seed's stream `stream` (independent streams
/// for independent tasks, reproducible from the seed alone).
pub fn task_rng(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

//! The allocator's settings: memory a search freed is kept a moment for the next proposal instead of going back to the system at once.
//!
//! The `scaletune` binary (and the search bench, to measure what the binary
//! does) allocates with mimalloc 2. A proposal builds and drops thousands of
//! samples, each a large tree; by default mimalloc returns freed memory to
//! the system 10 ms after it is freed, so the next proposal pages it in
//! again, and in this VM's kernel each such fault clears a whole 2 MiB huge
//! page. With [`PURGE_DELAY_MS`], the fixed work of the search bench
//! (`SCALETUNE_SEARCH_WORK=12`, 9,216 candidates, 2 cores, 2026-11-28) made
//! about 800 page faults instead of 7,000 and took 1.58 s instead of 1.71
//! (four runs of each, alternated; in an earlier, quieter set 1.48 s against
//! 1.69). Criterion's `sample_and_score` did not move beyond its own noise
//! (about 10 %).

use libmimalloc_sys::{mi_option_get, mi_option_set, mi_option_t};
use std::ffi::c_long;

/// mimalloc 2's `mi_option_purge_delay`: its place in `mi_option_e`
/// (`mimalloc.h`); the sys crate names no constant for it.
const PURGE_DELAY: mi_option_t = 15;

/// Milliseconds freed memory stays with the process before mimalloc returns
/// it to the system (mimalloc's default: 10). 50 to 250 ms measured alike;
/// 1,000 kept more page faults, and never returning memory would keep a
/// long job's peak for good.
pub const PURGE_DELAY_MS: c_long = 100;

/// Applies the settings; first thing in `main`, before the search allocates.
pub fn configure() {
    // SAFETY: sets one integer option of the allocator, which mimalloc
    // allows from any thread at any time.
    unsafe { mi_option_set(PURGE_DELAY, PURGE_DELAY_MS) };
}

/// The purge delay in force, in milliseconds.
pub fn purge_delay_ms() -> c_long {
    // SAFETY: reads one integer option of the allocator.
    unsafe { mi_option_get(PURGE_DELAY) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Option 15 is the purge delay: it has that option's default (unless
    /// `MIMALLOC_PURGE_DELAY` is set) until [`configure`] sets it. Nothing
    /// else in this test binary calls [`configure`].
    #[test]
    fn the_purge_delay_is_the_option_set() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(purge_delay_ms(), 10, "mimalloc 2's default purge delay");
        }
        configure();
        assert_eq!(purge_delay_ms(), PURGE_DELAY_MS);
    }
}

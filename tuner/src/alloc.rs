//! The allocator's settings: memory a search freed is kept a moment, and then left for the kernel to take back when it needs it, for the next proposal to reuse.
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
//!
//! A purge resets the memory (`MADV_FREE`, [`PURGE_DECOMMITS`] 0) instead
//! of decommitting it (`MADV_DONTNEED`, mimalloc's default): the kernel
//! takes the pages back when it needs memory, and until it does the next
//! proposal finds them in place. The same fixed work took 1.55 s instead of
//! 1.86 (medians of five runs each, alternated, 2026-11-28; the same
//! candidates and ranking), and about a tenth less CPU time; criterion's
//! `mutate_and_score` gained about a tenth, `sample_and_score` (whose
//! memory mostly grows, and is not given back) about 2 %. The process's
//! resident size no longer falls between proposals, though none of the
//! kept memory is lost to the machine.

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

/// mimalloc 2's `mi_option_purge_decommits`: 1 (its default) purges by
/// decommitting (`madvise(MADV_DONTNEED)`: the pages go at once, and the
/// next use faults in cleared ones), 0 by resetting (`MADV_FREE`: the
/// kernel takes the pages back only when it needs memory, and until then
/// the next use finds them in place).
const PURGE_DECOMMITS: mi_option_t = 5;

/// Applies the settings; first thing in `main`, before the search allocates.
pub fn configure() {
    // SAFETY: each sets one integer option of the allocator, which
    // mimalloc allows from any thread at any time.
    unsafe {
        mi_option_set(PURGE_DELAY, PURGE_DELAY_MS);
        mi_option_set(PURGE_DECOMMITS, 0);
    }
}

/// Whether a purge decommits memory (mimalloc's default) rather than
/// resetting it.
pub fn purge_decommits() -> bool {
    // SAFETY: reads one integer option of the allocator.
    unsafe { mi_option_get(PURGE_DECOMMITS) != 0 }
}

/// The purge delay in force, in milliseconds.
pub fn purge_delay_ms() -> c_long {
    // SAFETY: reads one integer option of the allocator.
    unsafe { mi_option_get(PURGE_DELAY) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Option 15 is the purge delay and option 5 the purge's kind: each has
    /// that option's default (unless `MIMALLOC_PURGE_DELAY` or
    /// `MIMALLOC_PURGE_DECOMMITS` is set) until [`configure`] sets it.
    /// Nothing else in this test binary calls [`configure`].
    #[test]
    fn the_purge_delay_and_the_purge_kind_are_the_options_set() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(purge_delay_ms(), 10, "mimalloc 2's default purge delay");
        }
        if std::env::var_os("MIMALLOC_PURGE_DECOMMITS").is_none() {
            assert!(purge_decommits(), "mimalloc 2's default: purges decommit");
        }
        configure();
        assert_eq!(purge_delay_ms(), PURGE_DELAY_MS);
        assert!(!purge_decommits(), "purges reset (MADV_FREE)");
    }
}

//! The allocator and its settings: plain mimalloc blocks where their alignment suffices, and memory a search freed kept a moment, then left for the kernel to take back when it needs it, for the next proposal to reuse.
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

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_option_get, mi_option_set, mi_option_t, mi_realloc, mi_realloc_aligned,
    mi_zalloc, mi_zalloc_aligned,
};
use std::alloc::{GlobalAlloc, Layout};
use std::ffi::{c_long, c_void};

/// The global allocator of the `scaletune` binary and the search bench:
/// mimalloc 2, asked for plain blocks where their natural alignment
/// suffices.
///
/// The `mimalloc` crate's allocator passes every request through
/// `mi_malloc_aligned`, whose checks cost about 30 instructions more than
/// `mi_malloc`'s fast path; proposing candidates allocates millions of
/// small expression nodes and vectors, and those checks were 3 % of the
/// search's instructions. mimalloc serves a block of `size` bytes aligned
/// to any power of two up to 16 that is at most `size`
/// (`mi_malloc_is_naturally_aligned`, which `mi_malloc_aligned` itself
/// relies on); larger or over-aligned requests still go the aligned way.
pub struct Allocator;

/// The largest alignment mimalloc gives every block at least as large
/// (`MI_MAX_ALIGN_SIZE`).
const NATURAL_ALIGN: usize = 16;

/// Whether a plain mimalloc block of `size` bytes is aligned to `align`.
fn natural(size: usize, align: usize) -> bool {
    align <= NATURAL_ALIGN && align <= size
}

// SAFETY: every method hands the request to mimalloc, plainly only when its
// blocks of that size are aligned as asked (`natural`), and frees with
// `mi_free`, which takes blocks of every kind.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if natural(layout.size(), layout.align()) {
            mi_malloc(layout.size()).cast()
        } else {
            mi_malloc_aligned(layout.size(), layout.align()).cast()
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if natural(layout.size(), layout.align()) {
            mi_zalloc(layout.size()).cast()
        } else {
            mi_zalloc_aligned(layout.size(), layout.align()).cast()
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        mi_free(ptr.cast::<c_void>());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if natural(new_size, layout.align()) {
            mi_realloc(ptr.cast::<c_void>(), new_size).cast()
        } else {
            mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
        }
    }
}

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
/// A setting named in the environment (`MIMALLOC_PURGE_DELAY`,
/// `MIMALLOC_PURGE_DECOMMITS`, which mimalloc reads itself) is left as the
/// environment set it, so the allocator can be measured with other values
/// without a rebuild.
pub fn configure() {
    // SAFETY: each sets one integer option of the allocator, which
    // mimalloc allows from any thread at any time.
    unsafe {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            mi_option_set(PURGE_DELAY, PURGE_DELAY_MS);
        }
        if std::env::var_os("MIMALLOC_PURGE_DECOMMITS").is_none() {
            mi_option_set(PURGE_DECOMMITS, 0);
        }
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

    /// Every size from 1 to 300 bytes and every alignment up to 256, asked
    /// of [`Allocator`] plainly, zeroed and grown: each block is aligned as
    /// asked, zeroed blocks are zero, and growing keeps the contents. (The
    /// test binary's own allocator is the system's, so these blocks come
    /// from this allocator alone.)
    #[test]
    fn every_block_is_aligned_as_asked_and_growing_keeps_its_contents() {
        let a = Allocator;
        for align in (0..=8).map(|k| 1usize << k) {
            for size in 1..=300usize {
                let layout = Layout::from_size_align(size, align).expect("layout");
                // SAFETY: `layout` has a non-zero size; each block is used
                // within its size and freed once, with its layout.
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null() && (p as usize).is_multiple_of(align), "size {size} align {align}");
                    for i in 0..size {
                        *p.add(i) = i as u8;
                    }
                    let grown = 2 * size + 5;
                    let q = a.realloc(p, layout, grown);
                    assert!(!q.is_null() && (q as usize).is_multiple_of(align), "grown {grown} align {align}");
                    assert!((0..size).all(|i| *q.add(i) == i as u8), "contents kept, size {size} align {align}");
                    a.dealloc(q, Layout::from_size_align(grown, align).expect("layout"));
                    let z = a.alloc_zeroed(layout);
                    assert!(!z.is_null() && (z as usize).is_multiple_of(align), "zeroed size {size} align {align}");
                    assert!((0..size).all(|i| *z.add(i) == 0), "zeroed, size {size} align {align}");
                    a.dealloc(z, layout);
                }
            }
        }
    }

    #[test]
    fn plain_blocks_only_where_mimalloc_aligns_them_by_size() {
        assert!(natural(8, 8) && natural(24, 8) && natural(16, 16) && natural(1, 1));
        assert!(!natural(8, 16), "an 8-byte block may sit on an 8-byte boundary");
        assert!(!natural(64, 32), "beyond mimalloc's guaranteed alignment");
    }

    /// Option 15 is the purge delay and option 5 the purge's kind: each has
    /// that option's default (unless `MIMALLOC_PURGE_DELAY` or
    /// `MIMALLOC_PURGE_DECOMMITS` is set) until [`configure`] sets it, and
    /// one the environment sets stays. Nothing else in this test binary
    /// calls [`configure`].
    #[test]
    fn the_purge_delay_and_the_purge_kind_are_the_options_set() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(purge_delay_ms(), 10, "mimalloc 2's default purge delay");
        }
        if std::env::var_os("MIMALLOC_PURGE_DECOMMITS").is_none() {
            assert!(purge_decommits(), "mimalloc 2's default: purges decommit");
        }
        let delay = purge_delay_ms();
        let decommits = purge_decommits();
        configure();
        match std::env::var_os("MIMALLOC_PURGE_DELAY") {
            None => assert_eq!(purge_delay_ms(), PURGE_DELAY_MS),
            Some(_) => assert_eq!(purge_delay_ms(), delay, "the environment's delay stays"),
        }
        match std::env::var_os("MIMALLOC_PURGE_DECOMMITS") {
            None => assert!(!purge_decommits(), "purges reset (MADV_FREE)"),
            Some(_) => assert_eq!(purge_decommits(), decommits, "the environment's kind stays"),
        }
    }

    /// Run in a child process of this test binary with
    /// `MIMALLOC_PURGE_DELAY=250` and `MIMALLOC_PURGE_DECOMMITS=1`: after
    /// [`configure`] both options are as the environment set them, not
    /// [`PURGE_DELAY_MS`] and resets.
    #[test]
    fn settings_named_in_the_environment_stay_as_set() {
        if std::env::var_os("SCALETUNE_ALLOC_CHILD").is_some() {
            configure();
            assert_eq!(purge_delay_ms(), 250, "the environment's delay");
            assert!(purge_decommits(), "the environment's kind: decommit");
            return;
        }
        let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
            .args(["--exact", "alloc::tests::settings_named_in_the_environment_stay_as_set", "--test-threads=1"])
            .env("SCALETUNE_ALLOC_CHILD", "1")
            .env("MIMALLOC_PURGE_DELAY", "250")
            .env("MIMALLOC_PURGE_DECOMMITS", "1")
            .output()
            .expect("runs the test binary");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
        assert!(text.contains("1 passed"), "the child ran the test: {text}");
    }
}

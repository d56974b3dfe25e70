//! The memory allocator: mimalloc, called through its plain entry points
//! wherever they give the alignment asked for.
//!
//! A small training step allocates and frees a few hundred matrices of a few
//! kilobytes each; mimalloc's per-size free lists serve those several times
//! faster than the C library's bins. A large step allocates matrices of
//! megabytes; mimalloc keeps the memory the previous step freed and backs
//! its arenas with huge pages where the kernel allows it, so the large
//! matrix products take fewer address-translation misses.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

pub struct Mimalloc;

/// Whether mimalloc's plain calls give this alignment: every block is
/// aligned to 8 bytes, and blocks of 16 bytes or more to 16. (The aligned
/// calls take a slower path, and nearly every block here is f64s.)
fn plain(layout: Layout) -> bool {
    layout.align() <= 8 || (layout.align() <= 16 && layout.size() >= 16)
}

// SAFETY: mimalloc's plain calls are used only where they give the layout's
// alignment (`plain`), its aligned calls otherwise, and `mi_free` frees
// blocks from both.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is passed on.
        unsafe {
            if plain(layout) {
                mi::mi_malloc(layout.size()).cast()
            } else {
                mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        unsafe {
            if plain(layout) {
                mi::mi_zalloc(layout.size()).cast()
            } else {
                mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from mimalloc.
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from mimalloc with `layout`; the new block keeps
        // the layout's alignment, by the plain resize where that gives it and
        // by the aligned one otherwise.
        unsafe {
            let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
            if plain(new_layout) {
                mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks of many sizes come back aligned as asked, zeroed when asked,
    /// and keep their contents through resizes up and down.
    #[test]
    fn blocks_are_aligned_and_survive_resizes() {
        let sizes = [1, 7, 8, 15, 16, 24, 100, 4096, 256 << 10, 1 << 20, 5 << 20];
        for size in sizes {
            for align in [1, 8, 16, 32, 64, 4096] {
                let layout = Layout::from_size_align(size, align).expect("a valid layout");
                // SAFETY: every layout has a non-zero size; every block is
                // written and read within its size and freed with its own layout.
                unsafe {
                    let z = Mimalloc.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0, "{size} bytes aligned to {align}");
                    assert!((0..size).all(|i| *z.add(i) == 0));
                    Mimalloc.dealloc(z, layout);
                    for new_size in [size / 2 + 1, size * 2, 3 << 20, 24] {
                        let p = Mimalloc.alloc(layout);
                        assert_eq!(p as usize % align, 0, "{size} bytes aligned to {align}");
                        std::ptr::write_bytes(p, 0xab, size);
                        let q = Mimalloc.realloc(p, layout, new_size);
                        assert_eq!(q as usize % align, 0, "{size} -> {new_size} by {align}");
                        let kept = size.min(new_size);
                        assert!((0..kept).all(|i| *q.add(i) == 0xab));
                        Mimalloc.dealloc(q, Layout::from_size_align_unchecked(new_size, align));
                    }
                }
            }
        }
    }
}

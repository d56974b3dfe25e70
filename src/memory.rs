//! The memory allocator: mimalloc for small and middling blocks, the C
//! library's allocator for large ones.
//!
//! A small training step allocates and frees a few hundred matrices of a few
//! kilobytes each; mimalloc's per-size free lists serve those several times
//! faster than the C library's bins. A large step allocates matrices of
//! megabytes, which the C library (told by [`keep_freed_memory`] to keep
//! what is freed) hands back from memory the previous step used, where
//! mimalloc would return the pages and fault them in again.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// Blocks of this many bytes or more come from the C library.
const LARGE: usize = 256 << 10;

pub struct Split;

fn small(size: usize) -> bool {
    size < LARGE
}

/// Whether mimalloc's plain calls give this alignment: every block is
/// aligned to 8 bytes, and blocks of 16 bytes or more to 16. (The aligned
/// calls take a slower path, and nearly every block here is f64s.)
fn plain(layout: Layout) -> bool {
    layout.align() <= 8 || (layout.align() <= 16 && layout.size() >= 16)
}

// SAFETY: every block is freed (or resized) by the allocator that made it,
// which `small(layout.size())` tells apart because the size a block is freed
// with is the size it was allocated with; a resize that crosses the line
// moves the block from one allocator to the other. mimalloc's plain calls are
// used only where they give the layout's alignment (`plain`), and `mi_free`
// frees blocks from its plain and aligned calls alike.
unsafe impl GlobalAlloc for Split {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is passed on.
        unsafe {
            match (small(layout.size()), plain(layout)) {
                (true, true) => mi::mi_malloc(layout.size()).cast(),
                (true, false) => mi::mi_malloc_aligned(layout.size(), layout.align()).cast(),
                (false, _) => System.alloc(layout),
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        unsafe {
            match (small(layout.size()), plain(layout)) {
                (true, true) => mi::mi_zalloc(layout.size()).cast(),
                (true, false) => mi::mi_zalloc_aligned(layout.size(), layout.align()).cast(),
                (false, _) => System.alloc_zeroed(layout),
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from the allocator `small` picks for this layout.
        unsafe {
            if small(layout.size()) {
                mi::mi_free(ptr.cast::<c_void>())
            } else {
                System.dealloc(ptr, layout)
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from the allocator `small` picks for `layout`;
        // when the new size belongs to the other one, or mimalloc's plain
        // resize would not keep the alignment, the block is copied into a
        // fresh block of the new size and the old one freed.
        unsafe {
            let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
            match (small(layout.size()), small(new_size)) {
                (true, true) if plain(new_layout) => {
                    mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
                }
                (false, false) => System.realloc(ptr, layout, new_size),
                _ => {
                    let new = self.alloc(new_layout);
                    if !new.is_null() {
                        std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                    new
                }
            }
        }
    }
}

/// Asks the C library's allocator to keep freed memory for reuse: a training
/// step frees and allocates the same large matrices every time, and by
/// default each one over 128 KiB is a fresh mapping whose pages the kernel
/// clears again (about 6% of a large step). Peak memory is unchanged: what
/// is kept is what the next step takes.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes two of the allocator's thresholds; it is
    // called before the interpreter thread starts allocating matrices.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks of sizes on both sides of the line come back aligned as asked,
    /// zeroed when asked, keep their contents through resizes across the
    /// line, and are freed by the allocator that made them.
    #[test]
    fn blocks_are_aligned_and_survive_resizes() {
        let sizes = [
            1,
            7,
            8,
            15,
            16,
            24,
            100,
            4096,
            LARGE - 8,
            LARGE,
            LARGE + 8,
            1 << 20,
        ];
        for size in sizes {
            for align in [1, 8, 16, 32, 64] {
                let layout = Layout::from_size_align(size, align).expect("a valid layout");
                // SAFETY: every layout has a non-zero size; every block is
                // written and read within its size and freed with its own layout.
                unsafe {
                    let z = Split.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0, "{size} bytes aligned to {align}");
                    assert!((0..size).all(|i| *z.add(i) == 0));
                    Split.dealloc(z, layout);
                    for new_size in [size / 2 + 1, size * 2, LARGE + 16, 24] {
                        let p = Split.alloc(layout);
                        assert_eq!(p as usize % align, 0, "{size} bytes aligned to {align}");
                        std::ptr::write_bytes(p, 0xab, size);
                        let q = Split.realloc(p, layout, new_size);
                        assert_eq!(q as usize % align, 0, "{size} -> {new_size} by {align}");
                        let kept = size.min(new_size);
                        assert!((0..kept).all(|i| *q.add(i) == 0xab));
                        Split.dealloc(q, Layout::from_size_align_unchecked(new_size, align));
                    }
                }
            }
        }
    }
}

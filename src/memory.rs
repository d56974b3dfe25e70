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

use mimalloc::MiMalloc;

/// Blocks of this many bytes or more come from the C library.
const LARGE: usize = 256 << 10;

pub struct Split;

fn small(size: usize) -> bool {
    size < LARGE
}

// SAFETY: every block is freed (or resized) by the allocator that made it,
// which `small(layout.size())` tells apart because the size a block is freed
// with is the size it was allocated with; a resize that crosses the line
// moves the block from one allocator to the other.
unsafe impl GlobalAlloc for Split {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is passed on.
        unsafe {
            if small(layout.size()) {
                MiMalloc.alloc(layout)
            } else {
                System.alloc(layout)
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        unsafe {
            if small(layout.size()) {
                MiMalloc.alloc_zeroed(layout)
            } else {
                System.alloc_zeroed(layout)
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from the allocator `small` picks for this layout.
        unsafe {
            if small(layout.size()) {
                MiMalloc.dealloc(ptr, layout)
            } else {
                System.dealloc(ptr, layout)
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from the allocator `small` picks for `layout`;
        // when the new size belongs to the other one, the block is copied
        // into a fresh block of the new size and the old one freed.
        unsafe {
            match (small(layout.size()), small(new_size)) {
                (true, true) => MiMalloc.realloc(ptr, layout, new_size),
                (false, false) => System.realloc(ptr, layout, new_size),
                _ => {
                    let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
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

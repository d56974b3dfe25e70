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

/// Blocks from this size (64 MiB) are asked for by [`room_for`] before the
/// operation that makes them runs; smaller ones never are.
pub const ASKED_FROM: usize = 64 << 20;

/// Whether the system gives `bytes` more memory now: for a block of
/// [`ASKED_FROM`] or more, by asking mimalloc for it and handing it back at
/// once (the pages are never touched, so this costs a mapping, not a fill).
/// The interpreter asks before an operation that makes a large matrix, so
/// that a program that wants more than the system gives (past a
/// `ulimit -v`, or past the address space there is) is refused at its
/// statement instead of stopping in the allocation. (Under Linux's default
/// overcommit a mapping is not refused for want of RAM.)
pub fn room_for(bytes: usize) -> bool {
    if bytes < ASKED_FROM {
        return true;
    }
    // SAFETY: a block mimalloc gave is freed once, unread.
    unsafe {
        let block = mi::mi_malloc(bytes);
        if block.is_null() {
            return false;
        }
        mi::mi_free(block);
    }
    true
}

/// What the allocator does when the system refuses memory that was not
/// asked for first (the walk's blames past the first, a copy inside an
/// operation): says so in plain words and ends the run with status 1,
/// instead of the standard library's abort. Nothing is allocated on the
/// way out. Every allocation goes through here, so a fallible one
/// (`Vec::try_reserve`) ends the run too: tapec's own reads of files ask
/// for their room first instead ([`crate::eval::files::read_at_most`]).
#[cold]
fn out_of_memory(bytes: usize) -> ! {
    use std::io::Write;
    let mut text = [0u8; 320];
    let mut cursor = std::io::Cursor::new(&mut text[..]);
    let (amount, unit) = if bytes >= 1 << 20 {
        (bytes.div_ceil(1 << 20), "MiB")
    } else {
        (bytes, "bytes")
    };
    let _ = write!(
        cursor,
        "Error: out of memory: the system refused {amount} {unit} more, and tapec stops\n  \
         Help: every value a variable or a tape holds stays in memory: use smaller matrices, \
         or raise the limit on memory (`ulimit -v`)\n"
    );
    let written = cursor.position() as usize;
    let _ = std::io::stderr().write_all(&text[..written]);
    std::process::exit(1);
}

/// `block`, unless it is null: then [`out_of_memory`].
#[inline]
fn given(block: *mut u8, bytes: usize) -> *mut u8 {
    if block.is_null() {
        out_of_memory(bytes);
    }
    block
}

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
            given(
                if plain(layout) {
                    mi::mi_malloc(layout.size()).cast()
                } else {
                    mi::mi_malloc_aligned(layout.size(), layout.align()).cast()
                },
                layout.size(),
            )
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        unsafe {
            given(
                if plain(layout) {
                    mi::mi_zalloc(layout.size()).cast()
                } else {
                    mi::mi_zalloc_aligned(layout.size(), layout.align()).cast()
                },
                layout.size(),
            )
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
            given(
                if plain(new_layout) {
                    mi::mi_realloc(ptr.cast::<c_void>(), new_size).cast()
                } else {
                    mi::mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
                },
                new_size,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Small blocks are never asked for; a large one the system maps is
    /// given; one larger than any address space is refused, not aborted.
    #[test]
    fn room_is_asked_for_large_blocks_only() {
        assert!(room_for(0));
        assert!(room_for(ASKED_FROM - 1));
        assert!(room_for(ASKED_FROM));
        assert!(!room_for(usize::MAX / 2));
    }

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

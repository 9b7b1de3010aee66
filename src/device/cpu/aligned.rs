//! Every host buffer of [`ALIGNED_FROM`] bytes or more starts on a cache line, as PyTorch's CPU
//! allocator starts every tensor (it asks for 64-byte alignment).
//!
//! glibc's `malloc` returns 16-byte-aligned memory, so a tensor's data usually began in the middle
//! of a 64-byte line, and every 64-byte AVX-512 load of it straddled two lines: two L1 accesses
//! for one load. Streaming from L2, that is the difference between a dot product at 0.83× of
//! PyTorch's speed and one level with it (Intel Xeon, 2 threads, 2¹⁷ f32 per vector: 7.6–8.7 µs
//! unaligned, 6.2–7.2 µs aligned, in alternating runs). `Vec`, which holds every tensor's data,
//! takes its alignment from the element type, so the rule is kept here, by the process's
//! allocator, for every allocation large enough to be streamed.
//!
//! How: `size + 64` bytes from `malloc` (or `calloc`, which keeps its zero pages; or `realloc`,
//! which keeps `mremap` for large buffers), the first cache-line boundary after the block's start
//! handed out, and the distance back to the start kept in the byte just before it (1 to 64, so
//! there is always room for that byte). Smaller allocations, and any that ask for more than
//! `malloc`'s own alignment, go to the system allocator as before.

use std::alloc::{GlobalAlloc, Layout, System};

/// A cache line on every x86-64 and most ARM cores; an AVX-512 register's width.
pub const CACHE_LINE: usize = 64;

/// From this size on an allocation starts on a cache line. Below it a buffer spans a few lines
/// anyway, and the 64 extra bytes would be a large share of it.
pub const ALIGNED_FROM: usize = 512;

/// What `malloc` guarantees on 64-bit glibc (and what Rust's `System` assumes there).
const MALLOC_ALIGN: usize = 16;

/// The process's allocator: the system's, with buffers of [`ALIGNED_FROM`] bytes and more
/// starting on a cache line.
pub struct CacheLineAligned;

/// Whether `CacheLineAligned` places an allocation of this layout on a cache line itself.
fn on_a_line(size: usize, align: usize) -> bool {
    size >= ALIGNED_FROM && align <= MALLOC_ALIGN
}

/// The first cache-line boundary after `raw`, with the distance back to `raw` stored just before
/// it; null stays null.
///
/// # Safety
/// `raw` is null, or the start of a block of at least `size + CACHE_LINE` bytes.
unsafe fn place(raw: *mut u8) -> *mut u8 {
    if raw.is_null() {
        return raw;
    }
    let back = CACHE_LINE - raw.addr() % CACHE_LINE;
    // SAFETY: `1 <= back <= 64`, so the line start and the byte before it lie inside the block,
    // and `size` bytes from the line start end within its `size + 64`.
    unsafe {
        let line = raw.add(back);
        line.sub(1).write(back as u8);
        line
    }
}

/// The start of the block that `line` (from [`place`]) was handed out from, and its distance.
///
/// # Safety
/// `line` came from [`place`] and its block is still allocated.
unsafe fn block_of(line: *mut u8) -> (*mut u8, usize) {
    // SAFETY: `place` wrote the distance in the byte before `line`, inside the block.
    let back = usize::from(unsafe { line.sub(1).read() });
    // SAFETY: the block starts `back` bytes before `line`.
    (unsafe { line.sub(back) }, back)
}

// SAFETY: every pointer handed out is aligned as its layout asks (a cache line is a multiple of
// any alignment `on_a_line` accepts) and valid for its size; each is given back by the path that
// made it, since `on_a_line` decides the same from the same layout.
unsafe impl GlobalAlloc for CacheLineAligned {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !on_a_line(layout.size(), layout.align()) {
            // SAFETY: the caller's contract, passed on.
            return unsafe { System.alloc(layout) };
        }
        // SAFETY: a block of `size + 64` bytes (a Layout's size is at most isize::MAX, so the sum
        // does not overflow usize), or null.
        unsafe { place(libc::malloc(layout.size() + CACHE_LINE).cast()) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !on_a_line(layout.size(), layout.align()) {
            // SAFETY: the caller's contract, passed on.
            return unsafe { System.alloc_zeroed(layout) };
        }
        // SAFETY: as in `alloc`; `calloc` zeroes the whole block.
        unsafe { place(libc::calloc(1, layout.size() + CACHE_LINE).cast()) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if !on_a_line(layout.size(), layout.align()) {
            // SAFETY: the caller's contract, passed on.
            return unsafe { System.dealloc(ptr, layout) };
        }
        // SAFETY: `ptr` came from `place` (the same layout chose that path when it was made).
        unsafe { libc::free(block_of(ptr).0.cast()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let (was, will) = (
            on_a_line(layout.size(), layout.align()),
            on_a_line(new_size, layout.align()),
        );
        if !was && !will {
            // SAFETY: the caller's contract, passed on.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        if !(was && will) {
            // Across the threshold: a fresh block by the other path, the bytes copied over.
            // SAFETY: the caller guarantees `new_size` with `layout.align()` is a valid layout.
            let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
            // SAFETY: a non-zero size (one of the two is at least `ALIGNED_FROM`).
            let fresh = unsafe { self.alloc(new_layout) };
            if !fresh.is_null() {
                // SAFETY: both are valid for the smaller size and do not overlap; `ptr` is then
                // given back by the path that made it.
                unsafe {
                    std::ptr::copy_nonoverlapping(ptr, fresh, layout.size().min(new_size));
                    self.dealloc(ptr, layout);
                }
            }
            return fresh;
        }
        // SAFETY: `ptr` came from `place`.
        let (block, back) = unsafe { block_of(ptr) };
        // SAFETY: `block` came from malloc/calloc; on failure it is left as it was.
        let moved: *mut u8 = unsafe { libc::realloc(block.cast(), new_size + CACHE_LINE) }.cast();
        if moved.is_null() {
            return moved;
        }
        let new_back = CACHE_LINE - moved.addr() % CACHE_LINE;
        if new_back != back {
            // The data sits `back` bytes into the moved block; the line boundary is now elsewhere.
            // SAFETY: both ranges lie inside the new block of `new_size + 64` bytes (each offset
            // is at most 64, the length at most `new_size`); `copy` allows the overlap.
            unsafe { std::ptr::copy(moved.add(back), moved.add(new_back), layout.size().min(new_size)) };
        }
        // SAFETY: `moved` is a block of `new_size + 64` bytes.
        unsafe { place(moved) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every size around the threshold starts where the rule says, keeps its bytes across a
    /// growth and a shrink that cross the threshold and the line, and zeroed memory is zero.
    #[test]
    fn buffers_from_the_threshold_start_on_a_line_and_keep_their_bytes() {
        for len in [1, 15, ALIGNED_FROM / 4 - 1, ALIGNED_FROM / 4, 1000, 100_000, 5 << 20] {
            let v: Vec<f32> = (0..len).map(|i| i as f32).collect();
            if len * 4 >= ALIGNED_FROM {
                assert_eq!(v.as_ptr().addr() % CACHE_LINE, 0, "{len} f32");
            }
            let mut grown = v.clone();
            for step in 0..40 {
                grown.push(step as f32);
                grown.reserve(grown.len() / 3 + 1);
                assert!(
                    grown[..len].iter().enumerate().all(|(i, &x)| x == i as f32),
                    "{len}: {step}"
                );
                if grown.capacity() * 4 >= ALIGNED_FROM {
                    assert_eq!(grown.as_ptr().addr() % CACHE_LINE, 0, "{len} grown");
                }
            }
            grown.truncate(len.min(3));
            grown.shrink_to_fit();
            assert!(grown.iter().enumerate().all(|(i, &x)| x == i as f32), "{len} shrunk");
            let zeros = vec![0u64; len];
            assert!(zeros.iter().all(|&z| z == 0));
        }
    }

    /// The distance byte is written and read back for each of the four offsets malloc can leave.
    #[test]
    fn a_block_is_found_from_its_line_at_every_offset() {
        let mut block = vec![0u8; 4 * CACHE_LINE];
        let base = block.as_mut_ptr();
        for skip in [0, 16, 32, 48] {
            // SAFETY: `skip + 64 + 64` bytes lie inside the 256 of `block`.
            let raw = unsafe { base.add(skip) };
            // SAFETY: as above.
            let line = unsafe { place(raw) };
            assert_eq!(line.addr() % CACHE_LINE, 0);
            // SAFETY: `line` came from `place` on a live block.
            assert_eq!(unsafe { block_of(line) }.0, raw);
        }
    }
}

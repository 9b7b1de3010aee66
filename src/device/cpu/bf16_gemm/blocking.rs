//! What both packed kernels share: how the products of a batch are given to threads, per-thread
//! scratch for packed panels, shared pointers that threads write disjoint parts of, work items
//! claimed from counters, and the split of the output into parts.

use std::mem::MaybeUninit;

use half::bf16;
use rayon::prelude::*;

use super::{Operand, Problem};

/// One product of a batch: pair (a, b) of `p` into its m×n output, on `threads` threads.
pub(super) type Product = fn(&Problem<'_>, Operand, Operand, usize, &mut [MaybeUninit<bf16>]);

/// Every pair's product, one m×n output after another. Many small products (below
/// `parallel_min_flop` each) run one per thread at a time; larger ones one after another, each
/// on every thread of rayon's pool (which also sizes `gemm`'s f32 matmul).
///
/// # Safety
///
/// `product` must write every element of the output it is given.
pub(super) unsafe fn products(p: &Problem<'_>, parallel_min_flop: usize, product: Product) -> Vec<bf16> {
    let (m, n, k) = (p.m, p.n, p.k);
    let total = p.pairs.len() * m * n;
    if m * n == 0 || k == 0 {
        return vec![bf16::ZERO; total];
    }
    let mut out: Vec<bf16> = Vec::with_capacity(total);
    let spare = &mut out.spare_capacity_mut()[..total];
    let small = 2 * m * n * k < parallel_min_flop;
    if small && p.pairs.len() > 1 {
        spare
            .par_chunks_mut(m * n)
            .zip(p.pairs)
            .for_each(|(o, &(oa, ob))| product(p, oa, ob, 1, o));
    } else {
        let threads = if small { 1 } else { rayon::current_num_threads() };
        for (o, &(oa, ob)) in spare.chunks_mut(m * n).zip(p.pairs) {
            product(p, oa, ob, threads, o);
        }
    }
    // SAFETY: the outputs of the pairs cover all `total` elements, and the caller promises that
    // `product` writes every element of each.
    unsafe { out.set_len(total) };
    out
}

/// Scratch memory for packed panels kept per thread between calls: a fresh multi-megabyte
/// allocation each call would cost a page fault per 4 KiB, several percent of a 1024³ product.
/// Packing overwrites every word it uses, so the old contents never matter.
pub(super) mod scratch {
    use std::cell::RefCell;

    use crate::device::cpu::heap::huge_pages;

    /// Larger buffers (over 256 MiB) are freed after use rather than kept.
    const KEEP_WORDS: usize = 64 << 20;

    thread_local! {
        static SCRATCH: RefCell<Vec<u32>> = const { RefCell::new(Vec::new()) };
    }

    /// Runs `f` with two 64-byte aligned word buffers of `a` and `b` words.
    pub fn with<R>(a: usize, b: usize, f: impl FnOnce(&mut [u32], &mut [u32]) -> R) -> R {
        // Taken out while in use, so a nested call (there is none today) would get its own.
        let mut buf = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
        let a_padded = a.next_multiple_of(16);
        let need = a_padded + b + 16;
        if buf.len() < need {
            if buf.capacity() < need {
                // A new allocation, advised before its pages are first touched (by `resize`).
                let mut fresh: Vec<u32> = Vec::with_capacity(need);
                huge_pages(fresh.as_mut_ptr().cast(), need * 4);
                buf = fresh;
            }
            buf.resize(need, 0);
        }
        let start = buf.as_ptr().align_offset(64).min(16);
        let (pa, pb) = buf[start..start + a_padded + b].split_at_mut(a_padded);
        let result = f(&mut pa[..a], pb);
        if buf.len() <= KEEP_WORDS {
            SCRATCH.with(|s| *s.borrow_mut() = buf);
        }
        result
    }
}

/// A raw output pointer that threads share; each writes a disjoint set of tiles.
#[derive(Clone, Copy)]
pub(super) struct OutPtr(pub *mut bf16);
// SAFETY: tiles written through it never overlap between threads (see `compute`).
unsafe impl Send for OutPtr {}
// SAFETY: as `Send`: threads write disjoint tiles through it.
unsafe impl Sync for OutPtr {}

/// A shared pointer into a packed buffer; threads reach disjoint ranges of it, handed out by
/// atomic counters, and read it whole only after all writes are published.
#[derive(Clone, Copy)]
pub(super) struct Words(pub *mut u32);
// SAFETY: see above; every use states which range it owns.
unsafe impl Send for Words {}
// SAFETY: as `Send`: disjoint ranges while packing, read only once every write is published.
unsafe impl Sync for Words {}

impl Words {
    /// The word `offset` words in (a method, so closures capture the `Sync` wrapper, not the
    /// raw pointer field).
    ///
    /// # Safety
    /// The offset stays inside the buffer.
    pub unsafe fn at(self, offset: usize) -> *mut u32 {
        // SAFETY: forwarded from the caller.
        unsafe { self.0.add(offset) }
    }
}

pub(super) use crate::device::cpu::team::claim;

/// A rectangle of tiles: row panels `rows.0..rows.1`, column panels `cols.0..cols.1`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Part {
    pub rows: (usize, usize),
    pub cols: (usize, usize),
}

/// Splits the tiles (`row_panels` by `col_panels`) into rectangles, along the rows or the columns:
/// `per_thread` of them per thread (more even out threads that run slower, a core shared with
/// another process; fewer keep more of each operand's reuse inside one part), and, along the rows,
/// none taller than `max_rows` panels.
pub(super) fn split(
    (row_panels, col_panels): (usize, usize),
    along_rows: bool,
    max_rows: usize,
    (threads, per_thread): (usize, usize),
) -> Vec<Part> {
    let count = if along_rows { row_panels } else { col_panels };
    let chunks = if threads <= 1 {
        1
    } else {
        let tall_enough = if along_rows {
            row_panels.div_ceil(max_rows.max(1))
        } else {
            1
        };
        (threads * per_thread).max(tall_enough).min(count)
    };
    (0..chunks)
        .map(|t| {
            let range = (count * t / chunks, count * (t + 1) / chunks);
            if along_rows {
                Part {
                    rows: range,
                    cols: (0, col_panels),
                }
            } else {
                Part {
                    rows: (0, row_panels),
                    cols: range,
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_covers_every_tile_once() {
        for (rp, cp, group, t) in [
            (1, 1, 8, 2),
            (7, 3, 8, 2),
            (2, 9, 8, 2),
            (5, 5, 8, 3),
            (100, 1, 8, 2),
            (100, 1, 3, 2),
            (171, 64, 4, 2),
            (3, 3, 4, 1),
        ] {
            let parts = split((rp, cp), rp * 12 >= cp * 32, group, (t, 4));
            let mut seen = vec![0; rp * cp];
            for part in &parts {
                for r in part.rows.0..part.rows.1 {
                    for c in part.cols.0..part.cols.1 {
                        seen[r * cp + c] += 1;
                    }
                }
            }
            assert!(
                seen.iter().all(|&s| s == 1),
                "{rp}×{cp} tiles over {t} threads: {seen:?}"
            );
            assert!(t > 1 || parts.len() == 1, "one thread, one part");
        }
    }
}

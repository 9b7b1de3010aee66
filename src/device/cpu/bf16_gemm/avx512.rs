//! The AVX512_BF16 kernel: pack, then multiply tile by tile with `vdpbf16ps`.
//!
//! Structure (the classic Goto/BLIS scheme, sized for Zen 4: 32 KiB L1d, 1 MiB L2 per core):
//! 1. Pack B into panels of `NR` columns, pair-interleaved (see `pack.rs`). Packing turns any
//!    strides into unit-stride streams the microkernel reads front to back, and pays for itself
//!    many times over when m, n ≫ 1.
//! 2. Split the output into parts of row panels, several per thread, which the threads of the
//!    team (`team.rs`: the caller plus spinning helpers) claim one at a time, so a thread that
//!    runs slower (a core shared with another process) just claims fewer. Each part packs its
//!    own A panels (`MR` rows each; they land in the cache of the thread that uses them) and,
//!    for each B panel, runs the microkernel down its rows, in groups of A panels small enough
//!    to stay in L2, so a B panel is fetched once per group.
//! 3. The microkernel keeps an MR × NR tile of f32 accumulators in zmm registers for the whole of
//!    k (no partial sums in memory, no k blocking: a k pair costs NV vector loads and MR
//!    broadcasts for MR·NV `vdpbf16ps`), then rounds the tile to bf16 once and stores it.
//!
//! Measured on Zen 4 (2048³): the microkernel alone with its data in L1 runs at the `vdpbf16ps`
//! peak (~228 GFLOP/s per core); a whole product at ~205 on one core and ~390 on two.

use std::arch::x86_64::*;
use std::mem::MaybeUninit;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering::*};

use half::bf16;

use super::blocking::{OutPtr, Part, Words, claim, products, scratch, split};
use super::pack::{Lanes, pack_panels, pairs};
use super::{Operand, Problem};
use crate::device::cpu::team::Team;

/// Rows of A per panel (broadcast from memory, one per accumulator row).
const MR: usize = 12;
/// zmm accumulators per row: NR = 16·NV columns. MR·NV = 24 accumulators + NV B registers stay
/// inside the 32 zmm registers, and 24 independent chains cover `vdpbf16ps`' latency.
const NV: usize = 2;
const NR: usize = 16 * NV;
// `store` rounds two vectors of a row at a time.
const _: () = assert!(NV.is_multiple_of(2));
/// Parts per thread, for load balancing.
const PARTS_PER_THREAD: usize = 4;
/// Bytes of packed A a thread keeps hot in its L2 while it sweeps the B panels.
const A_BLOCK_BYTES: usize = 384 * 1024;
/// Below this many FLOPs a product runs on one thread: waking a second costs more than it saves.
const PARALLEL_MIN_FLOP: usize = 2 * 96 * 96 * 96;

pub(super) fn matmul(p: &Problem<'_>) -> Vec<bf16> {
    // SAFETY: the tiles of a product cover the m×n block, and every tile store writes each of its elements.
    unsafe { products(p, PARALLEL_MIN_FLOP, product) }
}

/// `pack_panels` compiled for AVX-512, so its interleaving loops use zmm registers.
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn pack_range(src: &[bf16], lanes: &Lanes, total: usize, width: usize, panels: Range<usize>, dst: &mut [u32]) {
    // SAFETY: forwarded from the caller.
    unsafe { pack_panels(src, lanes, total, width, panels, dst, pairs(lanes.k) * width) }
}

/// One m×n product into the row-major `out` (every element of which gets written), on up to
/// `threads` threads of the team.
///
/// Two phases, each a list of items that threads claim one at a time: first pack B (and A, when
/// the output is split along columns), then compute the parts; a thread that runs out of packing
/// waits for the packing others claimed before it computes.
fn product(p: &Problem<'_>, oa: Operand, ob: Operand, threads: usize, out: &mut [MaybeUninit<bf16>]) {
    let (m, n, k) = (p.m, p.n, p.k);
    let kp = pairs(k);
    let (row_panels, col_panels) = (m.div_ceil(MR), n.div_ceil(NR));
    let a_lanes = Lanes {
        base: oa.offset,
        lane_stride: oa.rs,
        k_stride: oa.cs,
        k,
    };
    let b_lanes = Lanes {
        base: ob.offset,
        lane_stride: ob.cs,
        k_stride: ob.rs,
        k,
    };
    scratch::with(row_panels * kp * MR, col_panels * kp * NR, |a_packed, b_packed| {
        let (a_words, b_words) = (Words(a_packed.as_mut_ptr()), Words(b_packed.as_mut_ptr()));
        let along_rows = row_panels * MR >= col_panels * NR;
        let parts = split(
            (row_panels, col_panels),
            along_rows,
            a_group(kp),
            (threads, PARTS_PER_THREAD),
        );
        // Packing items: runs of B panels, then (split along columns) runs of A panels.
        let per_item = |panels: usize| panels.div_ceil(2 * threads).max(1);
        let (b_run, a_run) = (per_item(col_panels), per_item(row_panels));
        let b_items = col_panels.div_ceil(b_run);
        let a_items = if along_rows { 0 } else { row_panels.div_ceil(a_run) };
        let (pack_next, pack_done, part_next) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0));
        let job = Job {
            m,
            n,
            kp,
            b: b_words,
            out: OutPtr(out.as_mut_ptr().cast()),
        };
        // SAFETY (every block below): this module only runs once AVX512F/BW/BF16 were detected;
        // each item (a panel run or a part) is claimed by exactly one thread, and its panels are
        // a range of the packed buffers no other item reaches.
        let work = |_thread: usize| {
            while let Some(i) = claim(&pack_next, b_items + a_items) {
                let (src, lanes, total, width, words, run, item) = if i < b_items {
                    (p.b, &b_lanes, n, NR, b_words, b_run, i)
                } else {
                    (p.a, &a_lanes, m, MR, a_words, a_run, i - b_items)
                };
                let panels = item * run..((item + 1) * run).min(total.div_ceil(width));
                let per_panel = kp * width;
                // SAFETY: `panels` lies inside the packed buffer, and this item alone writes it.
                unsafe {
                    let dst =
                        std::slice::from_raw_parts_mut(words.0.add(panels.start * per_panel), panels.len() * per_panel);
                    pack_range(src, lanes, total, width, panels, dst);
                }
                pack_done.fetch_add(1, Release);
            }
            // The packing other threads claimed must be complete (and visible) before any tile
            // reads it.
            while pack_done.load(Acquire) < b_items + a_items {
                std::hint::spin_loop();
            }
            while let Some(i) = claim(&part_next, parts.len()) {
                let part = parts[i];
                if along_rows {
                    // Each part packs the A panels of its own rows, into the cache of the thread
                    // that uses them.
                    let per_panel = kp * MR;
                    let (first, count) = (part.rows.0, part.rows.1 - part.rows.0);
                    // SAFETY: the part's own A panels, inside the buffer; no other part has these rows.
                    let a = unsafe {
                        let a = std::slice::from_raw_parts_mut(a_words.0.add(first * per_panel), count * per_panel);
                        pack_range(p.a, &a_lanes, m, MR, part.rows.0..part.rows.1, a);
                        &*a
                    };
                    job.compute(part, a, first);
                } else {
                    // SAFETY: every A panel was packed before `pack_done` let any part start; from
                    // here on they are only read.
                    let a = unsafe { std::slice::from_raw_parts(a_words.0, row_panels * kp * MR) };
                    job.compute(part, a, 0);
                }
            }
        };
        if threads > 1 {
            Team::global().run(threads, &work);
        } else {
            work(0);
        }
    });
}

/// How many A panels of `kp` pairs fit the L2 budget.
fn a_group(kp: usize) -> usize {
    (A_BLOCK_BYTES / (kp * MR * 4)).max(1)
}

struct Job {
    m: usize,
    n: usize,
    kp: usize,
    /// All packed B panels, read only once packing is complete.
    b: Words,
    out: OutPtr,
}

impl Job {
    /// Computes the tiles of `part`; `a` holds the packed A panels from panel `a_first` on.
    fn compute(&self, part: Part, a: &[u32], a_first: usize) {
        let group = a_group(self.kp);
        let mut r = part.rows.0;
        while r < part.rows.1 {
            let r_end = (r + group).min(part.rows.1);
            for c in part.cols.0..part.cols.1 {
                // SAFETY: panel c of the packed B, complete and no longer written.
                let b = unsafe { std::slice::from_raw_parts(self.b.0.add(c * self.kp * NR), self.kp * NR) };
                for rr in r..r_end {
                    let a = &a[(rr - a_first) * self.kp * MR..(rr - a_first + 1) * self.kp * MR];
                    let (rows, cols) = (MR.min(self.m - rr * MR), NR.min(self.n - c * NR));
                    // SAFETY: the caller checked AVX512_BF16/BW; `a` and `b` hold kp groups of
                    // MR and NR words; the tile (rr, c) lies inside the m×n output, and no other
                    // part writes it.
                    unsafe {
                        let dst = self.out.0.add(rr * MR * self.n + c * NR);
                        tile(self.kp, a.as_ptr(), b.as_ptr(), dst, self.n, rows, cols);
                    }
                }
            }
            r = r_end;
        }
    }
}

#[inline(always)]
unsafe fn as_bh(v: __m512i) -> __m512bh {
    // SAFETY: both are 512 bits of plain data.
    unsafe { std::mem::transmute(v) }
}

/// The microkernel: out[0..rows, 0..cols] (row stride `ld`) = A panel · B panel, rounded to bf16.
///
/// # Safety
/// The CPU has AVX512F/BW/BF16; `a` holds `kp·MR` words, `b` holds `kp·NR` words; the
/// rows × cols block at `out` is writable.
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn tile(kp: usize, a: *const u32, b: *const u32, out: *mut bf16, ld: usize, rows: usize, cols: usize) {
    let mut c = [[_mm512_setzero_ps(); NV]; MR];
    for p in 0..kp {
        // SAFETY: p < kp, so both reads stay inside their panels.
        unsafe {
            let bp = b.add(p * NR);
            let bv: [__m512bh; NV] = std::array::from_fn(|j| as_bh(_mm512_loadu_si512(bp.add(16 * j) as *const _)));
            let ap = a.add(p * MR);
            for (i, row) in c.iter_mut().enumerate() {
                let av = as_bh(_mm512_set1_epi32(*ap.add(i) as i32));
                for (acc, &bj) in row.iter_mut().zip(&bv) {
                    *acc = _mm512_dpbf16_ps(*acc, av, bj);
                }
            }
        }
    }
    // SAFETY: forwarded from the caller.
    unsafe { store(&c, out, ld, rows, cols) }
}

/// Rounds an MR × NR tile of f32 to bf16 (nearest even) and writes its first rows × cols.
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
unsafe fn store(c: &[[__m512; NV]; MR], out: *mut bf16, ld: usize, rows: usize, cols: usize) {
    for (i, row) in c.iter().enumerate().take(rows) {
        for q in 0..NV / 2 {
            // Columns 32q..32q+32 of this row: two vectors rounded into one.
            // SAFETY: 32 bf16 values and 16 u32 lanes are the same 512 bits; the features are this
            // function's own.
            let v: __m512i = unsafe { std::mem::transmute(_mm512_cvtne2ps_pbh(row[2 * q + 1], row[2 * q])) };
            let valid = cols.saturating_sub(32 * q).min(32);
            let mask: __mmask32 = if valid == 32 { u32::MAX } else { (1u32 << valid) - 1 };
            // SAFETY: the masked store writes only the `valid` columns inside the tile.
            unsafe { _mm512_mask_storeu_epi16(out.add(i * ld + 32 * q) as *mut i16, mask, v) };
        }
    }
}

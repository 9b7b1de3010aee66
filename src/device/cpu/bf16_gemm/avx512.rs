//! The AVX512_BF16 kernel: pack, then multiply tile by tile with `vdpbf16ps`.
//!
//! Structure (the classic Goto/BLIS scheme, sized for Zen 4: 32 KiB L1d, 1 MiB L2 per core):
//! 1. Pack A into panels of `MR` rows and B into panels of `NR` columns, pair-interleaved (see
//!    `pack.rs`), on all threads. Packing turns any strides into unit-stride streams the
//!    microkernel reads front to back, and pays for itself many times over at n, m ≫ 1.
//! 2. Split the output into one block of row panels per thread. Each thread walks its rows in
//!    groups of A panels small enough to stay in its L2 and, for each B panel, runs the
//!    microkernel over the group, so the B panel is fetched once per group.
//! 3. The microkernel keeps an MR × NR tile of f32 accumulators in zmm registers for the whole of
//!    k (no partial sums in memory, no k blocking: a k pair costs NV vector loads and MR
//!    broadcasts for MR·NV `vdpbf16ps`), then rounds the tile to bf16 once and stores it.

use std::arch::x86_64::*;

use half::bf16;
use rayon::prelude::*;

use super::pack::{Lanes, pack_panel, pairs};
use super::{Operand, Problem};

/// Rows of A per panel (broadcast from memory, one per accumulator row).
const MR: usize = 12;
/// zmm accumulators per row: NR = 16·NV columns. MR·NV = 24 accumulators + NV B registers stay
/// inside the 32 zmm registers, and 24 independent chains cover `vdpbf16ps`' latency.
const NV: usize = 2;
const NR: usize = 16 * NV;
// `store` rounds two vectors of a row at a time.
const _: () = assert!(NV % 2 == 0);
/// Bytes of packed A a thread keeps hot in its L2 while it sweeps the B panels.
const A_BLOCK_BYTES: usize = 384 * 1024;
/// Below this many FLOPs a product runs on one thread: waking a second costs more than it saves.
const PARALLEL_MIN_FLOP: usize = 2 * 96 * 96 * 96;

/// A 64-byte aligned buffer of packed words, so every zmm load of a B panel is one cache line.
struct Packed {
    raw: Vec<u32>,
    start: usize,
    len: usize,
}

impl Packed {
    fn new(len: usize) -> Packed {
        let raw = vec![0u32; len + 16];
        let start = raw.as_ptr().align_offset(64).min(16);
        Packed { raw, start, len }
    }

    fn as_slice(&self) -> &[u32] {
        &self.raw[self.start..self.start + self.len]
    }

    fn as_mut_slice(&mut self) -> &mut [u32] {
        &mut self.raw[self.start..self.start + self.len]
    }
}

/// A raw output pointer that threads share; each writes a disjoint set of tiles.
#[derive(Clone, Copy)]
struct OutPtr(*mut bf16);
// SAFETY: tiles written through it never overlap between threads (see `compute`).
unsafe impl Send for OutPtr {}
unsafe impl Sync for OutPtr {}

pub(super) fn matmul(p: &Problem<'_>) -> Vec<bf16> {
    let (m, n, k) = (p.m, p.n, p.k);
    let mut out = vec![bf16::ZERO; p.pairs.len() * m * n];
    if m * n == 0 || k == 0 {
        return out;
    }
    let small = 2 * m * n * k < PARALLEL_MIN_FLOP;
    if small && p.pairs.len() > 1 {
        // Many small products: one per thread at a time.
        out.par_chunks_mut(m * n).zip(p.pairs).for_each(|(o, &(oa, ob))| product(p, oa, ob, 1, o));
    } else {
        let threads = if small { 1 } else { rayon::current_num_threads() };
        for (o, &(oa, ob)) in out.chunks_mut(m * n).zip(p.pairs) {
            product(p, oa, ob, threads, o);
        }
    }
    out
}

/// One m×n product into the row-major `out`.
fn product(p: &Problem<'_>, oa: Operand, ob: Operand, threads: usize, out: &mut [bf16]) {
    let (m, n, k) = (p.m, p.n, p.k);
    let kp = pairs(k);
    let (row_panels, col_panels) = (m.div_ceil(MR), n.div_ceil(NR));
    let mut a_packed = Packed::new(row_panels * kp * MR);
    let mut b_packed = Packed::new(col_panels * kp * NR);
    let a_lanes = Lanes { base: oa.offset, lane_stride: oa.rs, k_stride: oa.cs, k };
    let b_lanes = Lanes { base: ob.offset, lane_stride: ob.cs, k_stride: ob.rs, k };
    let pack_a = |(r, panel): (usize, &mut [u32])| pack_panel(p.a, &a_lanes, r * MR, MR.min(m - r * MR), MR, panel);
    let pack_b = |(c, panel): (usize, &mut [u32])| pack_panel(p.b, &b_lanes, c * NR, NR.min(n - c * NR), NR, panel);
    if threads > 1 {
        rayon::join(
            || a_packed.as_mut_slice().par_chunks_mut(kp * MR).enumerate().for_each(pack_a),
            || b_packed.as_mut_slice().par_chunks_mut(kp * NR).enumerate().for_each(pack_b),
        );
    } else {
        a_packed.as_mut_slice().chunks_mut(kp * MR).enumerate().for_each(pack_a);
        b_packed.as_mut_slice().chunks_mut(kp * NR).enumerate().for_each(pack_b);
    }

    let job = Job { m, n, kp, a: a_packed.as_slice(), b: b_packed.as_slice(), out: OutPtr(out.as_mut_ptr()) };
    let parts = split(row_panels, col_panels, threads);
    if parts.len() > 1 {
        parts.into_par_iter().for_each(|part| job.compute(part));
    } else {
        parts.into_iter().for_each(|part| job.compute(part));
    }
}

/// A rectangle of tiles: row panels `rows.0..rows.1`, column panels `cols.0..cols.1`.
#[derive(Clone, Copy, Debug)]
struct Part {
    rows: (usize, usize),
    cols: (usize, usize),
}

/// Splits the tiles into `threads` rectangles of near-equal size, along the longer side.
fn split(row_panels: usize, col_panels: usize, threads: usize) -> Vec<Part> {
    let along_rows = row_panels * MR >= col_panels * NR;
    let count = if along_rows { row_panels } else { col_panels };
    let threads = threads.clamp(1, count);
    (0..threads)
        .map(|t| {
            let range = (count * t / threads, count * (t + 1) / threads);
            if along_rows { Part { rows: range, cols: (0, col_panels) } } else { Part { rows: (0, row_panels), cols: range } }
        })
        .collect()
}

struct Job<'a> {
    m: usize,
    n: usize,
    kp: usize,
    a: &'a [u32],
    b: &'a [u32],
    out: OutPtr,
}

impl Job<'_> {
    fn compute(&self, part: Part) {
        let group = (A_BLOCK_BYTES / (self.kp * MR * 4)).max(1);
        let mut r = part.rows.0;
        while r < part.rows.1 {
            let r_end = (r + group).min(part.rows.1);
            for c in part.cols.0..part.cols.1 {
                let b = &self.b[c * self.kp * NR..(c + 1) * self.kp * NR];
                for rr in r..r_end {
                    let a = &self.a[rr * self.kp * MR..(rr + 1) * self.kp * MR];
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
            let v: __m512i = unsafe { std::mem::transmute(_mm512_cvtne2ps_pbh(row[2 * q + 1], row[2 * q])) };
            let valid = cols.saturating_sub(32 * q).min(32);
            let mask: __mmask32 = if valid == 32 { u32::MAX } else { (1u32 << valid) - 1 };
            // SAFETY: the masked store writes only the `valid` columns inside the tile.
            unsafe { _mm512_mask_storeu_epi16(out.add(i * ld + 32 * q) as *mut i16, mask, v) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_covers_every_tile_once() {
        for (rp, cp, t) in [(1, 1, 2), (7, 3, 2), (2, 9, 2), (5, 5, 3), (100, 1, 2)] {
            let parts = split(rp, cp, t);
            let mut seen = vec![0; rp * cp];
            for part in parts {
                for r in part.rows.0..part.rows.1 {
                    for c in part.cols.0..part.cols.1 {
                        seen[r * cp + c] += 1;
                    }
                }
            }
            assert!(seen.iter().all(|&s| s == 1), "{rp}×{cp} tiles over {t} threads: {seen:?}");
        }
    }
}

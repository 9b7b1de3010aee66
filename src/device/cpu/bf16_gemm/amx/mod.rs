//! The AMX kernel: Intel's tile unit (Sapphire Rapids and later) multiplies a 16×32 bf16 tile by
//! a 32×16 one into a 16×16 tile of f32 sums in one instruction, `tdpbf16ps`: 16,384 FLOPs, where
//! one `vdpbf16ps` does 64 (and on these cores issues at half the rate of an f32 FMA, so without
//! the tiles bf16 cannot beat f32 there). The sums stay in f32; each output is rounded to bf16 once.
//!
//! Structure: as `avx512.rs` (pack B, split the output into parts that threads claim, A rows kept
//! in L2 while the B panels stream past), with tiles as the microkernel:
//! - tmm0–3 hold a 32×32 block of f32 sums, tmm4–5 two 16-row slices of A (32 k each), tmm6–7
//!   two 16-column slices of B (16 k pairs each): per 32 k, four tile loads and four `tdpbf16ps`.
//! - B is packed as for the AVX-512 kernel (`pack.rs`: 32-column panels of k pairs, so a tile row
//!   is one k pair of 16 columns, 64 bytes, and the next row lies 128 bytes on), k padded with zero
//!   pairs to a multiple of 32.
//! - A is read in place when a tile row is 32 consecutive elements of one row (column stride 1,
//!   k a multiple of 32) and rows are short; otherwise, and for the last partial block of rows, it
//!   is copied tile by tile and zero-padded (`pack_row_tiles`), so no tile ever reads past the
//!   matrix and each tile is one contiguous kilobyte.
//! - Each finished 32×32 block goes through a small f32 buffer, is rounded to bf16 and written
//!   with masks at the matrix edges.
//!
//! Linux hands a process the tile state only on request (`arch_prctl(ARCH_REQ_XCOMP_PERM)`, made
//! once by `available`); each thread loads the tile configuration for its share of a product and
//! releases the tiles afterwards. The tile instructions are written as inline assembly: Rust's
//! AMX intrinsics (and their run-time detection) are not stable.

use std::mem::MaybeUninit;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering::*};

use half::bf16;

mod tiles;

use super::blocking::{OutPtr, Part, Words, claim, products, scratch, split};
use super::pack::{Lanes, pack_panels, pack_row_tiles};
use super::{Operand, Problem};
use crate::device::cpu::team::Team;
use tiles::{ATiles, KB, MR, NR, Sums, TILE_ROWS, Tiles, block, store};
pub(crate) use tiles::{available, peak_loop};

thread_local! {
    /// Block sums kept per thread between calls (a few KiB per row block of a group).
    static SUMS: std::cell::Cell<Vec<Sums>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Steps of k per chunk: the chunk of a B panel (16 KiB at 8 steps) stays in L1.
const KC_STEPS: usize = 8;
/// Longest row stride (elements) at which A is read in place rather than packed.
const IN_PLACE_MAX_ROW: usize = 512;
/// Parts per thread: more even out a thread that runs slower (a core shared with another
/// process), fewer keep each part's A blocks hot across more B panels and pack less twice. One
/// measured fastest on a quiet machine (2 threads at 512³: 1.87 TFLOP/s, against 1.66 with two
/// and 1.38 with four).
const PARTS_PER_THREAD: usize = 1;
/// Bytes of A a thread keeps hot in its L2 (2 MiB per core here) while it sweeps the B panels:
/// each B chunk fetched from L3 then serves more row blocks (1 MiB beat 512 KiB at 2048³).
const A_BLOCK_BYTES: usize = 1024 * 1024;
/// Below this many FLOPs a product runs on one thread: handing half of it to a second costs more
/// than it saves.
const PARALLEL_MIN_FLOP: usize = 2 * 128 * 128 * 128;

/// `pack_panels` and `pack_rows` compiled for AVX-512, so their loops use zmm registers.
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn pack_b(src: &[bf16], lanes: &Lanes, total: usize, panels: Range<usize>, dst: &mut [u32], panel_words: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { pack_panels(src, lanes, total, NR, panels, dst, panel_words) }
}

#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn pack_a(src: &[bf16], lanes: &Lanes, total: usize, rows: Range<usize>, dst: &mut [u32]) {
    // SAFETY: forwarded from the caller.
    unsafe { pack_row_tiles(src, lanes, total, rows, (MR, KB), dst) }
}

pub(super) fn matmul(p: &Problem<'_>) -> Vec<bf16> {
    // SAFETY: the blocks of a product cover the m×n output, and every store writes each of its elements.
    unsafe { products(p, PARALLEL_MIN_FLOP, product) }
}

/// The sizes of one product as the tiles see it.
#[derive(Clone, Copy)]
struct Shape {
    m: usize,
    n: usize,
    /// k padded to whole steps.
    steps: usize,
    /// Words per packed A row and k pairs per packed B panel (k padded, halved).
    kp: usize,
    /// Row blocks read in place (the rest are packed, from this block on).
    in_place: usize,
}

/// How many 32-row blocks of A fit the L2 budget.
fn a_group(kp: usize) -> usize {
    (A_BLOCK_BYTES / (kp * MR * 4)).max(1)
}

/// One m×n product into the row-major `out` (every element of which gets written), on up to
/// `threads` threads of the team: first the packing (B, and A when the output is split along
/// columns), claimed item by item, then the parts.
fn product(p: &Problem<'_>, oa: Operand, ob: Operand, threads: usize, out: &mut [MaybeUninit<bf16>]) {
    let (m, n, k) = (p.m, p.n, p.k);
    let steps = k.div_ceil(KB);
    let kp = steps * KB / 2;
    let (row_blocks, col_panels) = (m.div_ceil(MR), n.div_ceil(NR));
    // A tile row is 32 consecutive elements of one row of A: read A in place when that holds and
    // rows are short (a tile's 16 rows then span a few pages, not 16).
    let in_place = if oa.cs == 1 && oa.rs >= 0 && k.is_multiple_of(KB) && oa.rs as usize <= IN_PLACE_MAX_ROW {
        m / MR
    } else {
        0
    };
    let shape = Shape {
        m,
        n,
        steps,
        kp,
        in_place,
    };
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
    let packed_blocks = row_blocks - in_place;
    scratch::with(packed_blocks * MR * kp, col_panels * kp * NR, |a_packed, b_packed| {
        let (a_words, b_words) = (Words(a_packed.as_mut_ptr()), Words(b_packed.as_mut_ptr()));
        // Along the columns unless the output is much taller than wide: each part then packs its
        // own B panels and keeps a group of A blocks hot across all of them.
        let along_rows = row_blocks >= 2 * col_panels;
        let parts = split(
            (row_blocks, col_panels),
            along_rows,
            usize::MAX,
            (threads, PARTS_PER_THREAD),
        );
        let per_item = |count: usize| count.div_ceil(2 * threads).max(1);
        let (b_run, a_run) = (per_item(col_panels), per_item(packed_blocks));
        // Split along the columns, each part packs its own B panels (into the cache of the thread
        // that uses them); along the rows, every part needs every panel, packed first.
        let b_items = if along_rows { col_panels.div_ceil(b_run) } else { 0 };
        let a_items = if along_rows { 0 } else { packed_blocks.div_ceil(a_run) };
        let (pack_next, pack_done, part_next) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0));
        // Packs A blocks `blocks` (all at or past `in_place`) into their place in `a_words`.
        // SAFETY: AVX-512 was checked with AMX, and each caller packs blocks that no other
        // thread packs or reads until `pack_done` says they are complete.
        let pack_a_blocks = |blocks: Range<usize>| unsafe {
            let per_block = MR * kp;
            let dst = std::slice::from_raw_parts_mut(
                a_words.at((blocks.start - in_place) * per_block),
                blocks.len() * per_block,
            );
            pack_a(p.a, &a_lanes, m, blocks.start * MR..blocks.end * MR, dst);
        };
        let job = Job {
            shape,
            a: p.a.as_ptr().wrapping_add(oa.offset).cast(),
            a_row_bytes: oa.rs.max(0) as usize * 2,
            a_packed: a_words,
            b: b_words,
            out: OutPtr(out.as_mut_ptr().cast()),
        };
        // SAFETY (every block below): `available()` was checked before this kernel was chosen;
        // each item (a panel run, a block run or a part) is claimed by exactly one thread, and
        // its panels or blocks are a range of the packed buffers no other item reaches.
        // Packs B panels `panels` into their place in `b_words`.
        // SAFETY: as `pack_a_blocks`, for panels of B.
        let pack_b_panels = |panels: Range<usize>| unsafe {
            let per_panel = kp * NR;
            let dst = std::slice::from_raw_parts_mut(b_words.at(panels.start * per_panel), panels.len() * per_panel);
            pack_b(p.b, &b_lanes, n, panels, dst, per_panel);
        };
        let work = |_thread: usize| {
            while let Some(i) = claim(&pack_next, b_items + a_items) {
                if i < b_items {
                    pack_b_panels(i * b_run..((i + 1) * b_run).min(col_panels));
                } else {
                    let item = i - b_items;
                    pack_a_blocks(in_place + item * a_run..(in_place + (item + 1) * a_run).min(row_blocks));
                }
                pack_done.fetch_add(1, Release);
            }
            while pack_done.load(Acquire) < b_items + a_items {
                std::hint::spin_loop();
            }
            // SAFETY: this module only runs where `available()` found AMX granted.
            let _tiles = unsafe { Tiles::load() };
            while let Some(i) = claim(&part_next, parts.len()) {
                let part = parts[i];
                if along_rows && part.rows.1 > in_place {
                    // The part's own packed rows, into the cache of the thread that uses them.
                    pack_a_blocks(part.rows.0.max(in_place)..part.rows.1);
                }
                if !along_rows {
                    pack_b_panels(part.cols.0..part.cols.1);
                }
                // SAFETY: the tiles are loaded above; every B panel and the part's A blocks are
                // packed (after `pack_done`, or by this thread just now).
                unsafe { job.compute(part) };
            }
        };
        if threads > 1 {
            Team::global().run(threads, &work);
        } else {
            work(0);
        }
    });
}

struct Job {
    shape: Shape,
    /// A's element (0, 0), for the blocks read in place, and its row stride in bytes.
    a: *const u8,
    a_row_bytes: usize,
    a_packed: Words,
    /// All packed B panels, read only once packing is complete.
    b: Words,
    out: OutPtr,
}

// SAFETY: the pointers are only read (A, packed A and B once complete) or written at blocks no
// other part writes (out); see `compute`.
unsafe impl Sync for Job {}

impl Job {
    /// Computes the blocks of `part`, in groups of row blocks small enough to stay in L2.
    ///
    /// # Safety
    /// Tiles are loaded on this thread; the part's packed A blocks and every B panel are packed.
    unsafe fn compute(&self, part: Part) {
        let s = self.shape;
        let group = a_group(s.kp);
        SUMS.with(|cell| {
            let mut sums = cell.take();
            sums.resize(group.min(part.rows.1 - part.rows.0), Sums([0.0; MR * NR]));
            let mut r = part.rows.0;
            while r < part.rows.1 {
                let r_end = (r + group).min(part.rows.1);
                for c in part.cols.0..part.cols.1 {
                    // SAFETY: panel c of the packed B; the blocks as in `block_sums`.
                    unsafe { self.column(r..r_end, c, &mut sums) };
                }
                r = r_end;
            }
            cell.replace(sums);
        });
    }

    /// The blocks of row blocks `rows` in column panel `c`: k in chunks whose part of the B panel
    /// stays in L1 while the blocks use it. Each block is rounded and written while the tiles
    /// work on the next one.
    ///
    /// # Safety
    /// As `compute`; `sums` has room for every row block of `rows`.
    unsafe fn column(&self, rows: Range<usize>, c: usize, sums: &mut [Sums]) {
        let s = self.shape;
        // SAFETY: panel c of the packed B, kp·NR words.
        let b = unsafe { self.b.at(c * s.kp * NR) };
        let mut first = 0;
        while first < s.steps {
            let last = (first + KC_STEPS).min(s.steps);
            for rr in rows.clone() {
                // SAFETY: an in-place block has 32 rows of k (a multiple of 32) elements inside
                // A; a packed one 32 rows of kp words; the panel kp·NR words.
                unsafe { block(first..last, self.a_tiles(rr), b, &mut sums[rr - rows.start]) };
                if last == s.steps && rr > rows.start {
                    // SAFETY: block (rr − 1, c) belongs to this part, inside the output.
                    unsafe { self.write(rr - 1, c, &sums[rr - 1 - rows.start]) };
                }
            }
            first = last;
        }
        // SAFETY: the last block of `rows` in column c belongs to this part, inside the output.
        unsafe { self.write(rows.end - 1, c, &sums[rows.end - 1 - rows.start]) };
    }

    /// Rounds and writes the output block (rr, c).
    ///
    /// # Safety
    /// The block lies inside the m×n output (it does for every block of a part), and no other
    /// part writes it.
    unsafe fn write(&self, rr: usize, c: usize, sums: &Sums) {
        let s = self.shape;
        let (rows, cols) = (MR.min(s.m - rr * MR), NR.min(s.n - c * NR));
        // SAFETY: see the contract; AVX512_BF16 was checked with AMX.
        unsafe { store(sums, self.out.0.add(rr * MR * s.n + c * NR), s.n, rows, cols) };
    }

    /// Where the A tiles of row block `rr` are.
    fn a_tiles(&self, rr: usize) -> ATiles {
        let s = self.shape;
        if rr < s.in_place {
            ATiles {
                start: self.a.wrapping_add(rr * MR * self.a_row_bytes),
                row: self.a_row_bytes,
                low: TILE_ROWS * self.a_row_bytes,
                step: KB * 2,
            }
        } else {
            // Packed tile by tile: 32 rows of 64 bytes per step.
            let words = self.a_packed.0.wrapping_add((rr - s.in_place) * MR * s.kp);
            ATiles {
                start: words as *const u8,
                row: KB * 2,
                low: TILE_ROWS * KB * 2,
                step: MR * KB * 2,
            }
        }
    }
}

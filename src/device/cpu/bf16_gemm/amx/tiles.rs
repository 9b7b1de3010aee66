//! The tile instructions, as inline assembly (Rust's AMX intrinsics and their run-time detection
//! are not stable): asking Linux for the tile state, the tile configuration, the 32×32 block of
//! sums over a range of k, rounding a block to bf16, and the peak loop.

use std::arch::asm;
use std::arch::x86_64::*;
use std::ops::Range;
use std::sync::OnceLock;

use half::bf16;

/// Rows of one tile.
pub(super) const TILE_ROWS: usize = 16;
/// Rows of A per block: two tiles.
pub(super) const MR: usize = 2 * TILE_ROWS;
/// Columns of B per panel: two tiles of 16.
pub(super) const NR: usize = 32;
/// k per step: one tile row of A is 32 bf16 values (64 bytes).
pub(super) const KB: usize = 32;
/// Whether this CPU has AMX-TILE and AMX-BF16 and the OS granted this process the tile state.
pub(crate) fn available() -> bool {
    static READY: OnceLock<bool> = OnceLock::new();
    *READY.get_or_init(|| cpu_has_amx_bf16() && request_tile_state())
}

/// CPUID leaf 7, sub-leaf 0, EDX: bit 22 AMX-BF16, bit 24 AMX-TILE.
fn cpu_has_amx_bf16() -> bool {
    let max_leaf = __get_cpuid_max(0).0;
    if max_leaf < 7 {
        return false;
    }
    let leaf7 = __cpuid_count(7, 0);
    (leaf7.edx >> 22) & 1 == 1 && (leaf7.edx >> 24) & 1 == 1
}

#[cfg(target_os = "linux")]
fn request_tile_state() -> bool {
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;
    // SAFETY: a plain system call with integer arguments; it fails (non-zero) where the kernel
    // does not support AMX.
    unsafe { libc::syscall(libc::SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0 }
}

#[cfg(not(target_os = "linux"))]
fn request_tile_state() -> bool {
    false
}

/// The tile configuration: palette 1, tiles 0–7 of 16 rows × 64 bytes.
#[repr(C, align(64))]
struct TileConfig {
    palette: u8,
    start_row: u8,
    reserved: [u8; 14],
    colsb: [u16; 16],
    rows: [u8; 16],
}

static CONFIG: TileConfig = TileConfig {
    palette: 1,
    start_row: 0,
    reserved: [0; 14],
    colsb: [64, 64, 64, 64, 64, 64, 64, 64, 0, 0, 0, 0, 0, 0, 0, 0],
    rows: [16, 16, 16, 16, 16, 16, 16, 16, 0, 0, 0, 0, 0, 0, 0, 0],
};

/// The tiles configured on this thread; released when dropped (also on unwinding).
pub(super) struct Tiles;

impl Tiles {
    /// # Safety
    /// `available()` returned true.
    pub(super) unsafe fn load() -> Tiles {
        // SAFETY: CONFIG is a valid palette-1 configuration; the caller checked AMX.
        unsafe { asm!("ldtilecfg [{}]", in(reg) &CONFIG, options(nostack, readonly, preserves_flags)) };
        Tiles
    }
}

impl Drop for Tiles {
    fn drop(&mut self) {
        // SAFETY: tiles were configured by `load`.
        unsafe { asm!("tilerelease", options(nostack, nomem, preserves_flags)) };
    }
}

/// A 32×32 block of f32 sums, as the tiles store it (row stride 128 bytes).
#[derive(Clone)]
#[repr(C, align(64))]
pub(super) struct Sums(pub [f32; MR * NR]);

/// Where the A tiles of one 32-row block are: tile (rows 0–15, step s) at `start + s·step`, its
/// rows `row` bytes apart; the tile of rows 16–31 `low` bytes after it.
#[derive(Clone, Copy)]
pub(super) struct ATiles {
    pub start: *const u8,
    pub row: usize,
    pub low: usize,
    pub step: usize,
}

/// The sums of one 32×32 block over the steps `steps` (of 32 k each): the A tiles times the
/// packed B panel at `b`, added to `c` (or into it, for the first steps).
///
/// # Safety
/// Tiles are loaded; `a` describes readable tiles for these steps, and `b` holds 16·NR words for
/// each.
#[inline(always)]
pub(super) unsafe fn block(steps: Range<usize>, a: ATiles, b: *const u32, c: &mut Sums) {
    let c0 = c.0.as_mut_ptr();
    // SAFETY: see the contract; each step reads 64 bytes further along the A rows and the next 16
    // pairs of the B panel.
    unsafe {
        if steps.start == 0 {
            asm!(
                "tilezero tmm0",
                "tilezero tmm1",
                "tilezero tmm2",
                "tilezero tmm3",
                options(nostack, nomem, preserves_flags)
            );
        } else {
            asm!(
                "tileloadd tmm0, [{c0} + {ldc}*1]",
                "tileloadd tmm1, [{c0} + {ldc}*1 + 64]",
                "tileloadd tmm2, [{c1} + {ldc}*1]",
                "tileloadd tmm3, [{c1} + {ldc}*1 + 64]",
                c0 = in(reg) c0,
                c1 = in(reg) c0.add(TILE_ROWS * NR),
                ldc = in(reg) NR * 4,
                options(nostack, readonly, preserves_flags)
            );
        }
        let (lda, a_low) = (a.row, a.start.add(a.low));
        let ldb = NR * 4;
        let b_at = |s: usize| b.add(s * (KB / 2) * NR);
        // Tiles are not renamed: a load into a tile waits until every product reading it is done.
        // So the next step's tiles are loaded one by one as soon as the products of this step no
        // longer need them, and those loads overlap the remaining products.
        asm!(
            "tileloadd tmm4, [{a0} + {lda}*1]",
            "tileloadd tmm5, [{a1} + {lda}*1]",
            "tileloadd tmm6, [{b} + {ldb}*1]",
            "tileloadd tmm7, [{b} + {ldb}*1 + 64]",
            a0 = in(reg) a.start.add(steps.start * a.step),
            a1 = in(reg) a_low.add(steps.start * a.step),
            b = in(reg) b_at(steps.start),
            lda = in(reg) lda,
            ldb = in(reg) ldb,
            options(nostack, readonly, preserves_flags)
        );
        for s in steps.start..steps.end - 1 {
            asm!(
                "tdpbf16ps tmm0, tmm4, tmm6",
                "tdpbf16ps tmm2, tmm5, tmm6",
                "tileloadd tmm6, [{b} + {ldb}*1]",
                "tdpbf16ps tmm1, tmm4, tmm7",
                "tileloadd tmm4, [{a0} + {lda}*1]",
                "tdpbf16ps tmm3, tmm5, tmm7",
                "tileloadd tmm5, [{a1} + {lda}*1]",
                "tileloadd tmm7, [{b} + {ldb}*1 + 64]",
                a0 = in(reg) a.start.add((s + 1) * a.step),
                a1 = in(reg) a_low.add((s + 1) * a.step),
                b = in(reg) b_at(s + 1),
                lda = in(reg) lda,
                ldb = in(reg) ldb,
                options(nostack, readonly, preserves_flags)
            );
        }
        asm!(
            "tdpbf16ps tmm0, tmm4, tmm6",
            "tdpbf16ps tmm2, tmm5, tmm6",
            "tdpbf16ps tmm1, tmm4, tmm7",
            "tdpbf16ps tmm3, tmm5, tmm7",
            options(nostack, nomem, preserves_flags)
        );
        asm!(
            "tilestored [{c0} + {ldc}*1], tmm0",
            "tilestored [{c0} + {ldc}*1 + 64], tmm1",
            "tilestored [{c1} + {ldc}*1], tmm2",
            "tilestored [{c1} + {ldc}*1 + 64], tmm3",
            c0 = in(reg) c0,
            c1 = in(reg) c0.add(TILE_ROWS * NR),
            ldc = in(reg) NR * 4,
            options(nostack, preserves_flags)
        );
    }
}

/// Rounds the first rows × cols of a block of sums to bf16 (nearest even) and writes them.
///
/// # Safety
/// The CPU has AVX512F/BW/BF16; the rows × cols block at `out` (row stride `ld`) is writable.
#[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
pub(super) unsafe fn store(c: &Sums, out: *mut bf16, ld: usize, rows: usize, cols: usize) {
    let mask: __mmask32 = if cols >= 32 { u32::MAX } else { (1u32 << cols) - 1 };
    for r in 0..rows {
        // SAFETY: row r of the sums has NR = 32 floats; the masked store writes `cols` elements.
        unsafe {
            let lo = _mm512_load_ps(c.0.as_ptr().add(r * NR));
            let hi = _mm512_load_ps(c.0.as_ptr().add(r * NR + 16));
            let v: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(hi, lo));
            _mm512_mask_storeu_epi16(out.add(r * ld) as *mut i16, mask, v);
        }
    }
}

/// The peak loop for `cpu::peak`: `iters` rounds of 16 `tdpbf16ps` (16,384 FLOPs each) into six
/// accumulator tiles, so no instruction waits for the one before it. Returns one of the sums, so
/// the loop cannot be dropped. `None` where AMX is not available.
pub(crate) fn peak_loop(iters: u64) -> Option<f32> {
    if !available() {
        return None;
    }
    let ones = vec![0x3f80_3f80u32; 16 * 16];
    let mut out = Sums([0.0; MR * NR]);
    // SAFETY: AMX is available; the loads read 16 rows of 64 bytes from `ones`, the store writes
    // 16 rows of 64 bytes (stride 128) into `out`.
    unsafe {
        let _tiles = Tiles::load();
        asm!(
            "tilezero tmm0",
            "tilezero tmm1",
            "tilezero tmm2",
            "tilezero tmm3",
            "tilezero tmm4",
            "tilezero tmm5",
            "tileloadd tmm6, [{a} + {s}*1]",
            "tileloadd tmm7, [{a} + {s}*1]",
            a = in(reg) ones.as_ptr(),
            s = in(reg) 64usize,
            options(nostack, readonly, preserves_flags)
        );
        for _ in 0..iters {
            asm!(
                "tdpbf16ps tmm0, tmm6, tmm7",
                "tdpbf16ps tmm1, tmm6, tmm7",
                "tdpbf16ps tmm2, tmm6, tmm7",
                "tdpbf16ps tmm3, tmm6, tmm7",
                "tdpbf16ps tmm4, tmm6, tmm7",
                "tdpbf16ps tmm5, tmm6, tmm7",
                "tdpbf16ps tmm0, tmm6, tmm7",
                "tdpbf16ps tmm1, tmm6, tmm7",
                "tdpbf16ps tmm2, tmm6, tmm7",
                "tdpbf16ps tmm3, tmm6, tmm7",
                "tdpbf16ps tmm4, tmm6, tmm7",
                "tdpbf16ps tmm5, tmm6, tmm7",
                "tdpbf16ps tmm0, tmm6, tmm7",
                "tdpbf16ps tmm1, tmm6, tmm7",
                "tdpbf16ps tmm2, tmm6, tmm7",
                "tdpbf16ps tmm3, tmm6, tmm7",
                options(nostack, nomem, preserves_flags)
            );
        }
        asm!(
            "tilestored [{c} + {s}*1], tmm0",
            c = in(reg) out.0.as_mut_ptr(),
            s = in(reg) NR * 4,
            options(nostack, preserves_flags)
        );
    }
    Some(out.0[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each round adds three tile products of ones (32 products of 1·1 per element) into tile 0.
    #[test]
    fn peak_loop_computes_its_sums() {
        if available() {
            assert_eq!(peak_loop(10), Some(960.0));
        } else {
            assert_eq!(peak_loop(10), None);
        }
    }
}

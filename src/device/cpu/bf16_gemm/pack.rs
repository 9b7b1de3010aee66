//! Packing: copies a strided bf16 matrix into the pair-interleaved panels `vdpbf16ps` consumes.
//!
//! `vdpbf16ps` multiplies the two bf16 halves of each 32-bit lane of one register with the two
//! halves of the same lane of another and adds both products into that lane's f32 accumulator. So
//! the reduction index k must sit in pairs inside 32-bit words: word (p, l) of a panel holds
//! element (l, 2p) in its low half and (l, 2p+1) in its high half, for a "lane" l that is a row
//! of A or a column of B. A panel covers `lanes` consecutive rows (of A) or columns (of B) for the
//! whole of k: `kp = ceil(k / 2)` groups of `lanes` words, so the microkernel reads it front to
//! back. Lanes past the matrix edge and the odd k's missing partner are zero, which adds nothing.
//!
//! The same code packs both operands: for A a lane is a row (lane stride = row stride), for B a
//! lane is a column (lane stride = column stride).

use std::ops::Range;

use half::bf16;

/// A strided matrix seen as lanes × k: element (l, kk) is at `base + l·lane_stride + kk·k_stride`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Lanes {
    pub base: usize,
    pub lane_stride: isize,
    pub k_stride: isize,
    pub k: usize,
}

impl Lanes {
    #[inline(always)]
    fn at(&self, l: usize, kk: usize) -> usize {
        (self.base as isize + l as isize * self.lane_stride + kk as isize * self.k_stride) as usize
    }
}

#[inline(always)]
fn word(lo: bf16, hi: bf16) -> u32 {
    lo.to_bits() as u32 | (hi.to_bits() as u32) << 16
}

/// Number of k pairs.
pub(super) fn pairs(k: usize) -> usize {
    k.div_ceil(2)
}

/// Packs `panels` (panel c covers lanes c·width .. c·width + width of a matrix with `total` lanes)
/// into `dst`, which holds exactly those panels, `panel_words` words each: `pairs(k)·width` words
/// of data, then zeros (the AMX kernel pads k to whole tiles). Lanes past `total` are zero. The
/// caller has checked that every element of the matrix lies inside `src`.
///
/// # Safety
/// The CPU has AVX512F and AVX512BW (callers are the AVX-512 kernel, which checked), and this
/// body is inlined into their `#[target_feature]` functions, so its loops vectorize for AVX-512.
///
/// The loop order follows the memory: packing is a pass over the whole operand, and walking it
/// against its layout (down a column of a row-major matrix, say) costs a cache miss per element.
#[inline(always)]
pub(super) unsafe fn pack_panels(
    src: &[bf16],
    m: &Lanes,
    total: usize,
    width: usize,
    panels: Range<usize>,
    dst: &mut [u32],
    panel_words: usize,
) {
    let data = pairs(m.k) * width;
    assert!(panel_words >= data && dst.len() == panels.len() * panel_words);
    for panel in dst.chunks_exact_mut(panel_words) {
        panel[data..].fill(0);
    }
    let per_panel = panel_words;
    let panel_lanes = |c: usize| (c * width, width.min(total - c * width));
    if m.lane_stride == 1 {
        // Lanes are contiguous (a row-major B, a transposed A): for each k pair, two runs of
        // memory across all panels, interleaved.
        let full = m.k / 2;
        for p in 0..pairs(m.k) {
            for (c, panel) in panels.clone().zip(dst.chunks_exact_mut(per_panel)) {
                let (first, valid) = panel_lanes(c);
                let out = &mut panel[p * width..(p + 1) * width];
                let lo_start = m.at(first, 2 * p);
                let lo = &src[lo_start..lo_start + valid];
                let hi = (p < full).then(|| &src[m.at(first, 2 * p + 1)..m.at(first, 2 * p + 1) + valid]);
                if let Ok(out) = <&mut [u32; 32]>::try_from(&mut *out) {
                    // SAFETY: the caller guarantees AVX512F/BW (see this function's contract).
                    unsafe { super::transpose::interleave_32(lo, hi, out) };
                    continue;
                }
                if p < full {
                    let hi_start = m.at(first, 2 * p + 1);
                    let hi = &src[hi_start..hi_start + valid];
                    for ((o, &l), &h) in out.iter_mut().zip(lo).zip(hi) {
                        *o = word(l, h);
                    }
                } else {
                    for (o, &l) in out.iter_mut().zip(lo) {
                        *o = word(l, bf16::ZERO);
                    }
                }
                out[valid..].fill(0);
            }
        }
    } else if m.k_stride == 1 {
        // Each lane's k run is contiguous (a row-major A, a transposed B): a transpose of words.
        for (c, panel) in panels.zip(dst.chunks_exact_mut(per_panel)) {
            let (first, valid) = panel_lanes(c);
            let runs: Vec<&[bf16]> = (0..valid)
                .map(|l| &src[m.at(first + l, 0)..m.at(first + l, 0) + m.k])
                .collect();
            // SAFETY: the caller guarantees AVX512F (see this function's contract).
            unsafe { super::transpose::pack_runs(&runs, m.k, width, &mut panel[..data]) };
        }
    } else {
        for (c, panel) in panels.zip(dst.chunks_exact_mut(per_panel)) {
            let (first, valid) = panel_lanes(c);
            for (p, out) in panel[..data].chunks_exact_mut(width).enumerate() {
                for (l, o) in out.iter_mut().enumerate().take(valid) {
                    let hi = if 2 * p + 1 < m.k {
                        src[m.at(first + l, 2 * p + 1)]
                    } else {
                        bf16::ZERO
                    };
                    *o = word(src[m.at(first + l, 2 * p)], hi);
                }
                out[valid..].fill(0);
            }
        }
    }
}

/// Packs rows `rows` (whole blocks of `block_rows` rows) of a matrix with `total` rows (row i,
/// column kk at `m.at(i, kk)`) in the order AMX tiles load them: per block, per step of `step_k`
/// columns, the block's rows one after the other, each `step_k` values (so one tile of 16 rows is
/// one contiguous run of memory). Columns past k and rows past `total` are zero; `dst` holds
/// `step_k·block_rows/2` words per step and `k.div_ceil(step_k)` steps per block.
///
/// # Safety
/// Callers are the AMX kernel's `#[target_feature]` functions, into which this is inlined.
#[inline(always)]
pub(super) unsafe fn pack_row_tiles(
    src: &[bf16],
    m: &Lanes,
    total: usize,
    rows: Range<usize>,
    (block_rows, step_k): (usize, usize),
    dst: &mut [u32],
) {
    let steps = m.k.div_ceil(step_k);
    assert!(rows.len().is_multiple_of(block_rows) && dst.len() * 2 == rows.len() * steps * step_k);
    // SAFETY: u32 words are two u16 halves; the view covers exactly `dst`.
    let dst: &mut [u16] = unsafe { std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast(), dst.len() * 2) };
    let per_block = block_rows * steps * step_k;
    // Where element (row r of its block, column kk) goes inside the block.
    let at = |r: usize, kk: usize| ((kk / step_k) * block_rows + r) * step_k + kk % step_k;
    let valid = total.saturating_sub(rows.start).min(rows.len());
    for (b, block) in dst.chunks_exact_mut(per_block).enumerate() {
        let first = rows.start + b * block_rows;
        let here = valid.saturating_sub(b * block_rows).min(block_rows);
        if m.lane_stride == 1 && m.k_stride != 1 {
            // Column-major: walk down the columns, so every read is contiguous.
            for kk in 0..m.k {
                let column = &src[m.at(first, kk)..m.at(first, kk) + here];
                for (r, x) in column.iter().enumerate() {
                    block[at(r, kk)] = x.to_bits();
                }
            }
        } else if m.k_stride == 1 && step_k == 32 {
            // Rows are contiguous: each step of a row is one (masked) 64-byte copy, zeros included.
            for r in 0..here {
                let row = &src[m.at(first + r, 0)..m.at(first + r, 0) + m.k];
                for (s, run) in row.chunks(step_k).enumerate() {
                    // A range exactly 32 long: the conversion cannot fail.
                    let out: &mut [u16; 32] = (&mut block[at(r, s * step_k)..at(r, s * step_k) + 32])
                        .try_into()
                        .unwrap();
                    // SAFETY: the caller guarantees AVX512F/BW (see this function's contract).
                    unsafe { super::transpose::copy_32(run, out) };
                }
            }
        } else {
            for r in 0..here {
                for s in 0..steps {
                    let (from, to) = (s * step_k, ((s + 1) * step_k).min(m.k));
                    for (o, kk) in block[at(r, from)..at(r, from) + (to - from)].iter_mut().zip(from..to) {
                        *o = src[m.at(first + r, kk)].to_bits();
                    }
                }
            }
        }
        // Zeros: the columns past k in the last step, and whole rows past the matrix.
        for s in 0..steps {
            for r in 0..block_rows {
                let from = if r < here {
                    m.k.saturating_sub(s * step_k).min(step_k)
                } else {
                    0
                };
                let start = at(r, s * step_k);
                block[start + from..start + step_k].fill(0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(x: f32) -> bf16 {
        bf16::from_f32(x)
    }

    fn unpack(w: u32) -> (f32, f32) {
        (
            bf16::from_bits(w as u16).to_f32(),
            bf16::from_bits((w >> 16) as u16).to_f32(),
        )
    }

    /// Packs a 3×5 matrix (values 10·i + j) through each of the three paths and checks each word.
    #[test]
    fn every_path_interleaves_pairs_and_pads_with_zero() {
        if !crate::device::cpu::bf16_gemm::Bf16Kernel::Avx512Bf16.is_available() {
            let msg =
                "skipped: every_path_interleaves_pairs_and_pads_with_zero needs AVX512_BF16, which this CPU lacks";
            // CI's machine has it: there a skip is a failure.
            assert!(
                !std::env::var("CS336_REQUIRE_AVX512_BF16").is_ok_and(|v| v == "1"),
                "{msg}; CS336_REQUIRE_AVX512_BF16=1 makes that a failure"
            );
            // Past the harness's capture (it takes `eprintln!`), so a passing run shows the skip.
            let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), format!("{msg}\n").as_bytes());
            return;
        }
        let (rows, k) = (3usize, 5usize);
        let row_major: Vec<bf16> = (0..rows * k).map(|x| b((10 * (x / k) + x % k) as f32)).collect();
        let col_major: Vec<bf16> = (0..rows * k).map(|x| b((10 * (x % rows) + x / rows) as f32)).collect();
        // Row stride 2·k and column stride 2 exercise the generic path.
        let mut spread = vec![b(-1.0); 2 * rows * k];
        for i in 0..rows {
            for j in 0..k {
                spread[i * 2 * k + 2 * j] = b((10 * i + j) as f32);
            }
        }
        let layouts = [
            (
                &row_major,
                Lanes {
                    base: 0,
                    lane_stride: k as isize,
                    k_stride: 1,
                    k,
                },
            ),
            (
                &col_major,
                Lanes {
                    base: 0,
                    lane_stride: 1,
                    k_stride: rows as isize,
                    k,
                },
            ),
            (
                &spread,
                Lanes {
                    base: 0,
                    lane_stride: 2 * k as isize,
                    k_stride: 2,
                    k,
                },
            ),
        ];
        for (src, lanes) in layouts {
            // Three lanes in 2-lane panels: the second panel's second lane is padding.
            let mut dst = vec![u32::MAX; 2 * pairs(k) * 2];
            // SAFETY: only run where the CPU has AVX-512 (see the test's guard).
            unsafe { pack_panels(src, &lanes, rows, 2, 0..2, &mut dst, pairs(k) * 2) };
            for p in 0..pairs(k) {
                for l in 0..4 {
                    let (panel, lane) = (l / 2, l % 2);
                    let got = unpack(dst[panel * pairs(k) * 2 + p * 2 + lane]);
                    let want = if l < rows {
                        let row = l as f32 * 10.0;
                        (
                            row + (2 * p) as f32,
                            if 2 * p + 1 < k { row + (2 * p + 1) as f32 } else { 0.0 },
                        )
                    } else {
                        (0.0, 0.0)
                    };
                    assert_eq!(got, want, "pair {p} lane {l} with {lanes:?}");
                }
            }
            // Packing the second panel alone gives the same words.
            let mut second = vec![u32::MAX; pairs(k) * 2];
            // SAFETY: this test runs only where AVX-512 was detected; `second` holds one panel.
            unsafe { pack_panels(src, &lanes, rows, 2, 1..2, &mut second, pairs(k) * 2) };
            assert_eq!(second, dst[pairs(k) * 2..]);
        }
    }
}

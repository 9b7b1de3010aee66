//! The loops, compiled once per instruction set, and their split over the team's threads.
//!
//! One generic body (`Lane::unary`/`Lane::binary`, inlined with the op's closure) is compiled for
//! AVX-512F (16 f32 lanes, FMA included), AVX2 with FMA (8) and the build target (SSE2's 4 on
//! x86-64, NEON on aarch64), as `update.rs` does for AdaGrad. Each rounds every operation the same
//! way (IEEE; Rust never fuses a multiply and an add by itself, and an explicit `mul_add` is one
//! rounding on every target), so every variant gives the scalar loop's bits.

use std::mem::MaybeUninit;

use super::lane::Lane;
use crate::device::cpu::heap::huge_pages;
use crate::device::cpu::isa::{self, CpuIsa};
use crate::device::cpu::team::Shared;
use crate::device::cpu::team::{Split, in_chunks};
use crate::error::Result;

/// From this many elements a reduction or a dot product is split over the team's threads (maps:
/// [`MAP_PARALLEL_MIN`]). Measured on this
/// machine (2 cores, Xeon @ 2.8 GHz) with `elementwise_threshold` (`timing.rs`, `--ignored`): `add`
/// on f32 and `square` on bf16 at 2^12..2^20 elements, one thread against two, twice. Both runs
/// had other builds on the two cores (load 5-7), so the second thread was rarely free and the
/// results were within noise of each other at every size (2^16: 11.0 against 11.5 µs for `add`,
/// 21.8 against 20.8 µs for `square`). 2^16 (256 KiB of f32 in, as much out, four claimed ranges)
/// is kept as the point where the hand-off (a few µs to wake the helper) is a small part of the
/// op; measure again on a quiet machine.
pub(crate) const PARALLEL_MIN: usize = 1 << 16;

/// Elements per claimed range: large enough that claiming (an atomic add) is noise, small enough
/// that two threads finish close together.
pub(super) const CHUNK: usize = 1 << 14;

/// Where a map (unary, binary, copy) is split, and its claims: from 2^15 elements in claims of
/// 2^13. Measured on an AMD EPYC with AVX-512 (2 vCPUs, quiet) with `elementwise_threshold`:
/// at 2^15, two threads took 1.6 against 2.5 µs for f32 `add` and 3.0 against 5.4 µs for bf16
/// `square` in one run, and tied in the next; with claims of 2^14 a length under 2^15 is one
/// claim and stays on one thread. `bench elementwise` times `add` at half of L2 (43 690 f32
/// elements here), where PyTorch (grain 32 768) uses both threads and we used one.
pub(super) const MAP_PARALLEL_MIN: usize = 1 << 15;

/// A map's claims (see [`MAP_PARALLEL_MIN`]).
const MAP_CHUNK: usize = 1 << 13;

pub(super) const SPLIT: Split = Split {
    parallel_min: MAP_PARALLEL_MIN,
    chunk: MAP_CHUNK,
};

/// Outputs from this size on come straight from `mmap` (the lecture raises glibc's threshold to
/// 32 MiB: `heap.rs`), as fresh 4 KiB pages, each a page fault when first written: at 64 Mi f32
/// a one-thread copy into a fresh buffer measured 1.6 GB/s, page faults and all. They are asked
/// for 2 MiB pages instead (512 times fewer faults; advice only).
const HUGE_PAGES_FROM: usize = 32 << 20;

/// The instruction set the loops run with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Level {
    Portable,
    Avx2,
    Avx512,
}

impl Level {
    /// The level for this thread: `CS336_CPU_ISA` (or a test's `isa::with_isa`) limits it, as it
    /// limits the bf16 matmul kernels; fails where that names no level or one this CPU lacks.
    pub(crate) fn current() -> Result<Level> {
        Ok(Level::of(isa::current()?))
    }

    pub(crate) fn of(isa: CpuIsa) -> Level {
        match isa {
            CpuIsa::Portable => Level::Portable,
            CpuIsa::Avx2 => Level::Avx2,
            CpuIsa::Avx512 | CpuIsa::Amx => Level::Avx512,
        }
    }
}

#[inline(always)]
fn unary_on<T: Lane, F: Fn(f32) -> f32>(level: Level, f: &F, src: &[T], dst: &mut [MaybeUninit<T>]) {
    match level {
        // SAFETY: `isa::current` only returns a level this CPU has (`CpuIsa::check`).
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => match (T::as_bf16(src), T::as_bf16_mut(dst)) {
            // SAFETY: `narrow_bf16::available` said this CPU has what it needs.
            (Some(s), Some(d)) if super::narrow_bf16::available() => unsafe { super::narrow_bf16::unary(f, s, d) },
            // SAFETY: as the arm above.
            _ => unsafe { unary_avx512(f, src, dst) },
        },
        // SAFETY: as the arm above.
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => unsafe { unary_avx2(f, src, dst) },
        _ => T::unary(f, src, dst),
    }
}

#[inline(always)]
fn binary_on<T: Lane, F: Fn(f32, f32) -> f32>(level: Level, f: &F, a: &[T], b: &[T], dst: &mut [MaybeUninit<T>]) {
    match level {
        // bf16 rounds with AVX512_BF16 where the CPU has it (`narrow_bf16`); every other case,
        // and a CPU without it, takes the plain AVX-512 pass, so `dst` is always written.
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => match (T::as_bf16(a), T::as_bf16(b), T::as_bf16_mut(dst)) {
            // SAFETY: `narrow_bf16::available` said this CPU has what it needs.
            (Some(a), Some(b), Some(d)) if super::narrow_bf16::available() => unsafe {
                super::narrow_bf16::binary(f, a, b, d)
            },
            // SAFETY: as in `unary_on`.
            _ => unsafe { binary_avx512(f, a, b, dst) },
        },
        // SAFETY: as in `unary_on`.
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => unsafe { binary_avx2(f, a, b, dst) },
        _ => T::binary(f, a, b, dst),
    }
}

#[inline(always)]
fn relu_on<T: Lane>(level: Level, src: &[T], dst: &mut [MaybeUninit<T>]) {
    match level {
        // SAFETY: as in `unary_on`.
        #[cfg(target_arch = "x86_64")]
        Level::Avx512 => unsafe { relu_avx512(src, dst) },
        // SAFETY: as the arm above.
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 => unsafe { relu_avx2(src, dst) },
        _ => T::relu(src, dst),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn relu_avx512<T: Lane>(src: &[T], dst: &mut [MaybeUninit<T>]) {
    T::relu(src, dst)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn relu_avx2<T: Lane>(src: &[T], dst: &mut [MaybeUninit<T>]) {
    T::relu(src, dst)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn unary_avx512<T: Lane, F: Fn(f32) -> f32>(f: &F, src: &[T], dst: &mut [MaybeUninit<T>]) {
    T::unary(f, src, dst)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn unary_avx2<T: Lane, F: Fn(f32) -> f32>(f: &F, src: &[T], dst: &mut [MaybeUninit<T>]) {
    T::unary(f, src, dst)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn binary_avx512<T: Lane, F: Fn(f32, f32) -> f32>(f: &F, a: &[T], b: &[T], dst: &mut [MaybeUninit<T>]) {
    T::binary(f, a, b, dst)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn binary_avx2<T: Lane, F: Fn(f32, f32) -> f32>(f: &F, a: &[T], b: &[T], dst: &mut [MaybeUninit<T>]) {
    T::binary(f, a, b, dst)
}

/// Writes a range of the output into its part (`part.len() == range.len()`).
pub(super) type Fill<'a, T> = dyn Fn(std::ops::Range<usize>, &mut [MaybeUninit<T>]) + Sync + 'a;

/// A fresh output of `len` elements, every one written by `fill(range, part)` from the team's
/// threads: the output is never zeroed first, and its pages are first touched (faulted in) by the
/// thread that writes them, so that cost is split too.
pub(super) fn fill_fresh<T>(len: usize, split: Split, fill: &Fill<'_, T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(len);
    let bytes = len * std::mem::size_of::<T>();
    if bytes >= HUGE_PAGES_FROM {
        huge_pages(out.as_mut_ptr().cast(), bytes);
    }
    let dst = Shared(out.spare_capacity_mut().as_mut_ptr());
    in_chunks(len, split, &|r| {
        // SAFETY: the capacity holds `len` elements and `in_chunks` hands out disjoint ranges
        // inside `0..len`, so no two threads write one element.
        let part = unsafe { std::slice::from_raw_parts_mut(dst.get().add(r.start), r.len()) };
        fill(r, part)
    });
    // SAFETY: `in_chunks` returned after ranges covering `0..len` were all filled, and `fill`
    // writes every element of its part (`unary_on`, `binary_on` and the reductions do).
    unsafe { out.set_len(len) };
    out
}

/// `f` over a contiguous operand.
pub(super) fn unary<T: Lane, F: Fn(f32) -> f32 + Sync>(level: Level, split: Split, src: &[T], f: F) -> Vec<T> {
    fill_fresh(src.len(), split, &|r, part| unary_on(level, &f, &src[r], part))
}

/// ReLU over a contiguous operand ([`Lane::relu`]: on the bits in bf16 and f16).
pub(super) fn relu<T: Lane>(level: Level, split: Split, src: &[T]) -> Vec<T> {
    fill_fresh(src.len(), split, &|r, part| relu_on(level, &src[r], part))
}

/// `f` over two contiguous operands of one length.
pub(super) fn binary<T: Lane, F: Fn(f32, f32) -> f32 + Sync>(
    level: Level,
    split: Split,
    a: &[T],
    b: &[T],
    f: F,
) -> Vec<T> {
    let len = a.len().min(b.len());
    fill_fresh(len, split, &|r, part| binary_on(level, &f, &a[r.clone()], &b[r], part))
}

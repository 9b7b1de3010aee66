//! Every loop variant this CPU has, for every op in the tables and every float dtype, equals the
//! scalar loop (widen, `apply_f32`, round each element) bit for bit, over lengths that end in
//! every kind of remainder and values that include every special case.

use half::{bf16, f16};

use super::*;
use crate::base::Element;
use crate::device::cpu::isa::CpuIsa;

/// Every level this CPU can run, once.
pub(super) fn levels() -> Vec<Level> {
    let mut levels: Vec<Level> = CpuIsa::supported().into_iter().map(Level::of).collect();
    levels.dedup();
    levels
}

/// Lengths that end in every remainder: empty, shorter than a vector, one either side of a
/// vector, a block and the threshold for threads.
fn lengths() -> Vec<usize> {
    vec![
        0,
        1,
        15,
        16,
        17,
        BLOCK - 1,
        BLOCK,
        BLOCK + 1,
        2 * BLOCK + 3,
        MAP_PARALLEL_MIN - 1,
        MAP_PARALLEL_MIN,
        PARALLEL_MIN - 1,
        PARALLEL_MIN,
        PARALLEL_MIN + 1,
    ]
}

/// NaNs (quiet, signalling, negative, with payloads), infinities, signed zeros, f32, f16 and bf16
/// subnormals, the edges of f16's range, and values exactly halfway between two bf16 or f16.
fn specials() -> Vec<f32> {
    let bits = [
        0x7FC0_0000u32, // quiet NaN
        0x7F80_0001,    // signalling NaN
        0xFFC0_0000,    // negative NaN
        0x7FC0_1234,    // NaN with a payload below bf16's bits
        0x7FA0_0000,    // signalling NaN whose payload bf16 keeps
        0x3F80_8000,    // 1 + 2^-8: halfway between two bf16, even below
        0x3F81_8000,    // halfway, odd below: rounds up
        0x3F80_8001,    // just above halfway
        0xBF80_7FFF,    // just below halfway, negative
        0x7F7F_FFFF,    // f32::MAX: rounds to infinity in bf16
        0x0000_0001,    // the smallest f32 subnormal
        0x8040_0000,    // a negative f32 subnormal
        0x0001_8000,    // an f32 subnormal halfway between two bf16 subnormals
    ];
    let mut v: Vec<f32> = bits.iter().map(|&b| f32::from_bits(b)).collect();
    v.extend([
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1.0,
        -2.5,
        65504.0,           // f16::MAX
        65520.0,           // halfway to f16's next power: rounds to infinity
        6.0e-8,            // an f16 subnormal
        1.0 + 1.0 / 2048., // halfway between two f16
        1e-40,
        3.0e38,
        f32::MIN_POSITIVE,
    ]);
    v
}

/// `len` values: the specials first, then a spread over many magnitudes and both signs.
pub(super) fn values(len: usize, seed: u32) -> Vec<f32> {
    let specials = specials();
    (0..len)
        .map(|i| {
            let h = (i as u32).wrapping_add(seed).wrapping_mul(2_654_435_761) ^ seed.rotate_left(7);
            let pick = (i + seed as usize) % (specials.len() * 4);
            if pick < specials.len() {
                specials[pick]
            } else {
                let m = (h >> 8) as f32 / (1 << 24) as f32 - 0.5;
                m * 10f32.powi((h % 13) as i32 - 6)
            }
        })
        .collect()
}

/// The bits of an element (NaN payloads and signalling bits included, which `==` cannot see).
pub(super) trait Bits: Lane + Element {
    fn bits(self) -> u32;
}

impl Bits for f32 {
    fn bits(self) -> u32 {
        self.to_bits()
    }
}

impl Bits for bf16 {
    fn bits(self) -> u32 {
        self.to_bits().into()
    }
}

impl Bits for f16 {
    fn bits(self) -> u32 {
        self.to_bits().into()
    }
}

/// The first element whose bits differ (`usize::MAX` for different lengths); any NaN equals any NaN. Which NaN comes out of an
/// operation on NaN operands (its sign, its payload) follows the order in which the compiler
/// feeds the operands to the instruction, which vectorising may swap (GeLU's tanh backward gives
/// `NaN · NaN` for a NaN gradient at 3.4e38); PyTorch promises no NaN's bits either.
fn first_difference<T: Bits>(got: &[T], want: &[T]) -> Option<usize> {
    if got.len() != want.len() {
        return Some(usize::MAX);
    }
    got.iter()
        .zip(want)
        .position(|(a, b)| a.bits() != b.bits() && !(a.to_f32().is_nan() && b.to_f32().is_nan()))
}

/// The unary ops with scalars that take every path (`pow` with 2 and 0.5 are `square`, `sqrt`).
fn unary_ops() -> Vec<UnaryOp> {
    let mut ops = Vec::new();
    for &op in UnaryOp::ALL {
        if op.scalar().is_some() {
            for s in [2.0, 0.5, -3.0, 1e-3, 0.0] {
                ops.push(op.with_scalar(s).simplified());
            }
        } else {
            ops.push(op);
        }
    }
    ops
}

fn check_unary<T: Bits>() {
    for level in levels() {
        for op in unary_ops() {
            for len in lengths() {
                let src: Vec<T> = values(len, 1).into_iter().map(T::from_f32).collect();
                let want: Vec<T> = src.iter().map(|x| T::from_f32(op.apply_f32(x.to_f32()))).collect();
                let got = unary(op, level, &src);
                if let Some(i) = first_difference(&got, &want) {
                    panic!(
                        "{op:?} on {:?} x {len} at {level:?}: element {i}: {:?} against {:?} (input {:?})",
                        T::DTYPE,
                        got.get(i),
                        want.get(i),
                        src.get(i)
                    );
                }
            }
        }
    }
}

fn check_binary<T: Bits>() {
    for level in levels() {
        for &op in BinaryOp::ALL {
            for len in lengths() {
                let a: Vec<T> = values(len, 3).into_iter().map(T::from_f32).collect();
                let b: Vec<T> = values(len, 11).into_iter().map(T::from_f32).collect();
                let want: Vec<T> = a
                    .iter()
                    .zip(&b)
                    .map(|(x, y)| T::from_f32(op.apply_f32(x.to_f32(), y.to_f32())))
                    .collect();
                let got = binary(op, level, &a, &b);
                if let Some(i) = first_difference(&got, &want) {
                    panic!(
                        "{op:?} on {:?} x {len} at {level:?}: element {i}: {:?} against {:?} (inputs {:?}, {:?})",
                        T::DTYPE,
                        got.get(i),
                        want.get(i),
                        a.get(i),
                        b.get(i)
                    );
                }
            }
        }
    }
}

#[test]
fn unary_ops_equal_the_scalar_loop_in_every_dtype_and_variant() {
    check_unary::<f32>();
    check_unary::<bf16>();
    check_unary::<f16>();
}

#[test]
fn binary_ops_equal_the_scalar_loop_in_every_dtype_and_variant() {
    check_binary::<f32>();
    check_binary::<bf16>();
    check_binary::<f16>();
}

/// f32 bit patterns: a sweep over the whole range, and for every upper half the lower halves
/// that decide bf16's rounding (zero, just below, at and just above halfway, all ones).
fn f32_patterns() -> impl Iterator<Item = u32> {
    let sweep = (0..u32::MAX / 9973).map(|i| i * 9973);
    let edges =
        (0..=u16::MAX as u32).flat_map(|hi| [0x0000u32, 0x7FFF, 0x8000, 0x8001, 0xFFFF].map(move |lo| (hi << 16) | lo));
    sweep.chain(edges)
}

#[test]
fn bf16_rounding_is_halfs_bit_for_bit() {
    for bits in f32_patterns() {
        let x = f32::from_bits(bits);
        assert_eq!(f32_to_bf16(x).to_bits(), bf16::from_f32(x).to_bits(), "{bits:#010x}");
    }
    for bits in 0..=u16::MAX {
        let x = bf16::from_bits(bits);
        assert_eq!(bf16_to_f32(x).to_bits(), x.to_f32().to_bits(), "{bits:#06x}");
    }
}

/// `half`'s slice conversions (F16C on this CPU where it has it) against its one-element ones,
/// through the block loop every variant runs.
#[test]
fn f16_block_conversions_are_halfs_bit_for_bit() {
    let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
    let mut wide = vec![0f32; all.len()];
    for (s, d) in all.chunks(BLOCK).zip(wide.chunks_mut(BLOCK)) {
        f16::widen(s, d);
    }
    for (x, w) in all.iter().zip(&wide) {
        assert_eq!(w.to_bits(), x.to_f32().to_bits(), "{:#06x}", x.to_bits());
    }
    let patterns: Vec<f32> = f32_patterns().map(f32::from_bits).collect();
    let mut narrow = Vec::with_capacity(patterns.len());
    for s in patterns.chunks(BLOCK) {
        let mut d = vec![std::mem::MaybeUninit::uninit(); s.len()];
        f16::narrow(s, &mut d);
        // SAFETY: `narrow` wrote every element.
        narrow.extend(d.into_iter().map(|x| unsafe { x.assume_init() }));
    }
    for (x, n) in patterns.iter().zip(&narrow) {
        assert_eq!(n.to_bits(), f16::from_f32(*x).to_bits(), "{:#010x}", x.to_bits());
    }
}

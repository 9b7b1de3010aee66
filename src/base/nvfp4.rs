//! NVFP4: NVIDIA's 4-bit format, in two levels of scale. Each value is an fp4 E2M1 number (one of
//! fifteen, −6 … 6); every block of 16 values shares a scale stored in fp8 E4M3; the whole tensor
//! shares one float32 scale. The block scale lets a block of small values use E2M1's whole range,
//! and the tensor scale brings every block's scale into E4M3's range (at most 448).
//!
//! Quantising and dequantising here are exact simulations of that storage: the values are kept as
//! 4-bit codes (two in a byte, as PyTorch's `float4_e2m1fn_x2` packs them) and the block scales as
//! E4M3 bit patterns, so the bytes counted are the bytes a kernel would read.
//!
//! The scale choice follows NVIDIA's recipe: the tensor scale is amax / (6 · 448), so that the
//! largest block's scale lands on E4M3's largest value; a block's scale is its own amax / 6 in
//! units of the tensor scale, rounded to E4M3. A value is divided by its block's decoded scale
//! (times the tensor scale) and rounded to the nearest E2M1 number, ties to even, saturating at 6.

use super::formats::{FP4_E2M1, FP8_E4M3, FloatFormat, round_to_format};
use crate::error::{Error, Result};

/// Values that share one E4M3 scale.
pub const BLOCK: usize = 16;

/// A tensor in NVFP4: its codes, its block scales and its tensor scale.
#[derive(Debug, Clone, PartialEq)]
pub struct Nvfp4 {
    /// Two E2M1 codes a byte, the first value in the low four bits.
    pub codes: Vec<u8>,
    /// One E4M3 bit pattern per block of [`BLOCK`] values.
    pub block_scales: Vec<u8>,
    /// The float32 scale every block scale is in units of.
    pub tensor_scale: f32,
    /// How many values it holds.
    pub len: usize,
}

impl Nvfp4 {
    /// The bytes it takes: codes, block scales and the tensor scale.
    pub fn nbytes(&self) -> usize {
        self.codes.len() + self.block_scales.len() + std::mem::size_of::<f32>()
    }

    /// Bits per value, every scale included.
    pub fn bits_per_value(&self) -> f64 {
        8.0 * self.nbytes() as f64 / self.len as f64
    }

    /// The E2M1 code of value `i`.
    fn code(&self, i: usize) -> u8 {
        let byte = self.codes[i / 2];
        if i.is_multiple_of(2) { byte & 0x0f } else { byte >> 4 }
    }

    /// The decoded scale of block `b` (E4M3 value times the tensor scale).
    pub fn block_scale(&self, b: usize) -> f64 {
        FP8_E4M3.decode(u64::from(self.block_scales[b])) * f64::from(self.tensor_scale)
    }

    /// The values it stands for.
    pub fn dequantize(&self) -> Vec<f64> {
        (0..self.len)
            .map(|i| FP4_E2M1.decode(u64::from(self.code(i))) * self.block_scale(i / BLOCK))
            .collect()
    }
}

fn refuse(msg: String) -> Error {
    Error::InvalidArgument {
        op: "nvfp4_quantize",
        msg,
    }
}

/// Quantises `values` to NVFP4. Refuses an empty input, a length that is not a whole number of
/// blocks (NVFP4 scales whole blocks of 16 along a row; pad the row first), and NaN or infinity
/// (E2M1 and its scales have neither).
pub fn quantize(values: &[f64]) -> Result<Nvfp4> {
    if values.is_empty() {
        return Err(refuse("no values to quantise".into()));
    }
    if !values.len().is_multiple_of(BLOCK) {
        return Err(refuse(format!(
            "{} values are not a whole number of blocks of {BLOCK} (the last block would hold {}); pad to {}",
            values.len(),
            values.len() % BLOCK,
            values.len().div_ceil(BLOCK) * BLOCK
        )));
    }
    if let Some(i) = values.iter().position(|v| !v.is_finite()) {
        return Err(refuse(format!("value {i} is {}, which NVFP4 cannot hold", values[i])));
    }
    let (e2m1_max, e4m3_max) = (FP4_E2M1.max(), FP8_E4M3.max());
    let amax = values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    // All zeros: any scale will do; 1 keeps the decoded scales finite.
    let tensor_scale = if amax > 0.0 {
        (amax / (e2m1_max * e4m3_max)) as f32
    } else {
        1.0
    };
    let mut codes = vec![0u8; values.len() / 2];
    let mut block_scales = Vec::with_capacity(values.len() / BLOCK);
    for (b, block) in values.chunks(BLOCK).enumerate() {
        let block_amax = block.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let wanted = block_amax / e2m1_max / f64::from(tensor_scale);
        // E4M3 has no infinity: a scale past 448 (only by the float32 rounding of the tensor
        // scale) saturates rather than becoming NaN.
        let scale_bits = FP8_E4M3.encode(wanted.min(e4m3_max)).unwrap_or(0) as u8;
        block_scales.push(scale_bits);
        let scale = FP8_E4M3.decode(u64::from(scale_bits)) * f64::from(tensor_scale);
        for (j, &v) in block.iter().enumerate() {
            // A block whose scale rounded to zero holds only values too small for it: zeros.
            let q = if scale > 0.0 {
                round_to_format(v / scale, &FP4_E2M1)
            } else {
                0.0
            };
            let code = FP4_E2M1.encode(q).unwrap_or(0) as u8;
            let i = b * BLOCK + j;
            codes[i / 2] |= if i.is_multiple_of(2) { code } else { code << 4 };
        }
    }
    Ok(Nvfp4 {
        codes,
        block_scales,
        tensor_scale,
        len: values.len(),
    })
}

/// The one-level scheme fp8 training uses, to set NVFP4 against: one float32 scale for the whole
/// tensor (amax over the format's largest value), every value rounded into `fmt` at that scale.
/// Returns the values it stands for and the scale.
pub fn per_tensor_round_trip(values: &[f64], fmt: &FloatFormat) -> Result<(Vec<f64>, f32)> {
    if let Some(i) = values.iter().position(|v| !v.is_finite()) {
        return Err(Error::InvalidArgument {
            op: "per_tensor_round_trip",
            msg: format!("value {i} is {}, which a scaled {} cannot hold", values[i], fmt.name),
        });
    }
    let amax = values.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let scale = if amax > 0.0 { (amax / fmt.max()) as f32 } else { 1.0 };
    let s = f64::from(scale);
    // The scale's float32 rounding can push amax / scale a hair past the largest value: clamp, as
    // a saturating cast does.
    let back = values
        .iter()
        .map(|v| round_to_format((v / s).clamp(-fmt.max(), fmt.max()), fmt) * s)
        .collect();
    Ok((back, scale))
}

/// ‖x − y‖ / ‖x‖: how much of a tensor a quantisation lost, as one number.
pub fn relative_error(x: &[f64], y: &[f64]) -> f64 {
    let diff: f64 = x.iter().zip(y).map(|(a, b)| (a - b) * (a - b)).sum();
    let norm: f64 = x.iter().map(|a| a * a).sum();
    (diff / norm).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e2m1_values() -> Vec<f64> {
        FP4_E2M1.finite_values().unwrap_or_default()
    }

    #[test]
    fn values_already_on_the_grid_come_back_exactly() {
        // One block holding every E2M1 value and a zero: amax 6, so the block's scale is 448 in
        // units of a tensor scale of 6 / (6 · 448), about 1: every value keeps its own code.
        let mut x = e2m1_values();
        x.push(0.0);
        let q = quantize(&x).expect("16 values");
        let codes: Vec<f64> = (0..16).map(|i| FP4_E2M1.decode(u64::from(q.code(i)))).collect();
        assert_eq!(codes, x);
        assert_eq!(FP8_E4M3.decode(u64::from(q.block_scales[0])), 448.0);
        for (a, b) in x.iter().zip(q.dequantize()) {
            assert!((a - b).abs() <= a.abs() * 1e-6, "{a} → {b}");
        }
        // 4 bits a value, 8 for the block's scale, 32 for the tensor's: 4 + 0.5 + 2.
        assert_eq!(q.nbytes(), 8 + 1 + 4);
        assert_eq!(q.bits_per_value(), 6.5);
    }

    #[test]
    fn block_scale_is_the_block_amax_over_six_in_e4m3() {
        // Two blocks: amax 12 and amax 0.3. The tensor scale makes the first block's scale 448.
        let mut x = vec![0.0; 32];
        x[3] = -12.0;
        x[20] = 0.3;
        let q = quantize(&x).expect("32 values");
        assert_eq!(q.tensor_scale, (12.0 / (6.0 * 448.0)) as f32);
        assert_eq!(FP8_E4M3.decode(u64::from(q.block_scales[0])), 448.0);
        let wanted = 0.3 / 6.0 / f64::from(q.tensor_scale);
        assert_eq!(
            FP8_E4M3.decode(u64::from(q.block_scales[1])),
            round_to_format(wanted, &FP8_E4M3)
        );
        // Each block's largest value lands on E2M1's 6 (or next to it, by the scale's rounding).
        let d = q.dequantize();
        assert!((d[3] + 12.0).abs() < 1e-6, "{}", d[3]);
        assert!((d[20] - 0.3).abs() / 0.3 < 0.1, "{}", d[20]);
    }

    #[test]
    fn values_round_to_the_nearest_code_ties_to_even() {
        // amax 5.25 makes the tensor scale 5.25 / (6 · 448) = 2⁻⁹, exact in float32, and the
        // block's scale 448 · 2⁻⁹ = 0.875 exactly: the values are 0.875 times E2M1 inputs, so each
        // tie is a true tie. 2.5 is one between 2 and 3 (to the even mantissa: 2), 5 between 4
        // and 6 (4), 0.25 between 0 and 0.5 (0), −1.75 between −1.5 and −2 (−2); 2.6 is nearer 3.
        let unit = 0.875;
        let mut x: Vec<f64> = [6.0, 2.5, 5.0, 0.25, 2.6, -1.75, -0.7, 1.2]
            .iter()
            .map(|v| v * unit)
            .collect();
        x.resize(16, 0.0);
        let q = quantize(&x).expect("16 values");
        assert_eq!(q.tensor_scale, 2f32.powi(-9));
        assert_eq!(q.block_scale(0), unit);
        let d: Vec<f64> = q.dequantize().iter().map(|v| v / unit).collect();
        assert_eq!(&d[..8], &[6.0, 2.0, 4.0, 0.0, 3.0, -2.0, -0.5, 1.0]);
    }

    #[test]
    fn zeros_stay_zeros() {
        let q = quantize(&[0.0; 32]).expect("32 zeros");
        assert_eq!(q.dequantize(), vec![0.0; 32]);
        assert!(q.codes.iter().all(|&c| c == 0) && q.block_scales.iter().all(|&s| s == 0));
        // A zero block beside a non-zero one: its scale is zero, its values zero.
        let mut x = vec![0.0; 32];
        x[31] = 1.0;
        let d = quantize(&x).expect("32 values").dequantize();
        assert!(d[..16].iter().all(|&v| v == 0.0));
        assert!((d[31] - 1.0).abs() < 1e-6);
    }

    #[test]
    fn a_block_of_equal_values_is_exact() {
        // amax / 6 is the scale, and each value is 6 of it: exact up to the scales' own rounding,
        // which is none when the block is the tensor's largest (its scale is exactly 448).
        for v in [0.1, -3.7, 1e-3, 250.0] {
            let q = quantize(&[v; 16]).expect("16 values");
            for d in q.dequantize() {
                assert!((d - v).abs() <= v.abs() * 1e-6, "{v}: {d}");
            }
        }
    }

    #[test]
    fn round_trip_error_is_bounded_by_half_a_step() {
        // A spread of values: each dequantised value is within half of E2M1's step at its
        // magnitude (the largest step, between 4 and 6, is 2) times the block scale.
        let x: Vec<f64> = (0..64).map(|i| ((i * 37 % 64) as f64 - 31.5) / 7.0).collect();
        let q = quantize(&x).expect("64 values");
        let d = q.dequantize();
        for (i, (a, b)) in x.iter().zip(&d).enumerate() {
            let scale = q.block_scale(i / BLOCK);
            assert!((a - b).abs() <= scale * 1.0 + 1e-12, "{i}: {a} → {b} (scale {scale})");
        }
        let err = relative_error(&x, &d);
        assert!(err > 0.0 && err < 0.2, "relative error {err}");
    }

    #[test]
    fn per_tensor_fp8_keeps_the_largest_value_and_rounds_the_rest() {
        let x = [448.0 * 3.0, 1.0, -0.5, 0.0];
        let (back, scale) = per_tensor_round_trip(&x, &FP8_E4M3).expect("finite");
        assert_eq!(scale, 3.0);
        // 1/3 rounds to E4M3's 0.34375 (step 1/32 there), −1/6 to −0.171875 (step 1/64).
        assert_eq!(back, vec![1344.0, 0.34375 * 3.0, -0.171875 * 3.0, 0.0]);
        assert!(per_tensor_round_trip(&[f64::NAN], &FP8_E4M3).is_err());
    }

    #[test]
    fn bad_lengths_and_values_are_refused_with_reasons() {
        let e = quantize(&[1.0; 17]).expect_err("17 values");
        assert!(e.to_string().contains("not a whole number of blocks of 16"), "{e}");
        assert!(e.to_string().contains("pad to 32"), "{e}");
        assert!(quantize(&[]).expect_err("empty").to_string().contains("no values"));
        let mut x = vec![1.0; 16];
        x[5] = f64::NAN;
        assert!(quantize(&x).expect_err("NaN").to_string().contains("value 5 is NaN"));
        x[5] = f64::INFINITY;
        assert!(quantize(&x).expect_err("inf").to_string().contains("value 5 is inf"));
    }
}

//! Floating-point formats described by their bit fields, and every number the lecture quotes about
//! them (eps, max, smallest normal, resolution) derived from that description rather than typed in.
//! The same description rounds values into the format, which is how fp8 is simulated here.

use serde::Serialize;

/// How a format spends its all-ones exponent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Specials {
    /// IEEE 754: the all-ones exponent means infinity (mantissa 0) or NaN.
    Ieee,
    /// OCP FP8 E4M3 ("fn": finite, no infinities): only all-ones exponent *and* mantissa is NaN,
    /// the rest of that binade holds ordinary numbers.
    FiniteNanOnly,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FloatFormat {
    pub name: &'static str,
    pub exponent_bits: u32,
    /// Explicit (stored) mantissa bits; the leading 1 of normal numbers is implicit.
    pub mantissa_bits: u32,
    pub specials: Specials,
}

pub const FLOAT32: FloatFormat = FloatFormat {
    name: "float32",
    exponent_bits: 8,
    mantissa_bits: 23,
    specials: Specials::Ieee,
};
pub const FLOAT16: FloatFormat = FloatFormat {
    name: "float16",
    exponent_bits: 5,
    mantissa_bits: 10,
    specials: Specials::Ieee,
};
pub const BFLOAT16: FloatFormat = FloatFormat {
    name: "bfloat16",
    exponent_bits: 8,
    mantissa_bits: 7,
    specials: Specials::Ieee,
};
pub const FP8_E4M3: FloatFormat = FloatFormat {
    name: "float8_e4m3fn",
    exponent_bits: 4,
    mantissa_bits: 3,
    specials: Specials::FiniteNanOnly,
};
pub const FP8_E5M2: FloatFormat = FloatFormat {
    name: "float8_e5m2",
    exponent_bits: 5,
    mantissa_bits: 2,
    specials: Specials::Ieee,
};

pub const ALL_FORMATS: [&FloatFormat; 5] = [&FLOAT32, &FLOAT16, &BFLOAT16, &FP8_E4M3, &FP8_E5M2];

/// The numbers `torch.finfo` reports, computed from the bit layout.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FormatInfo {
    pub bits: u32,
    pub exponent_bits: u32,
    pub mantissa_bits: u32,
    /// Distance from 1.0 to the next representable number.
    pub eps: f64,
    pub max: f64,
    pub min: f64,
    /// Smallest positive normal number (`tiny` / `smallest_normal`).
    pub smallest_normal: f64,
    pub smallest_subnormal: f64,
    /// 10^-precision, where precision is the number of decimal digits the mantissa guarantees.
    pub resolution: f64,
}

impl FloatFormat {
    pub fn bits(&self) -> u32 {
        1 + self.exponent_bits + self.mantissa_bits
    }

    pub fn bias(&self) -> i32 {
        (1 << (self.exponent_bits - 1)) - 1
    }

    /// Exponent of the smallest normal binade.
    pub fn min_exponent(&self) -> i32 {
        1 - self.bias()
    }

    /// Exponent of the largest binade holding finite numbers.
    pub fn max_exponent(&self) -> i32 {
        let all_ones = (1i32 << self.exponent_bits) - 1;
        match self.specials {
            Specials::Ieee => all_ones - 1 - self.bias(),
            Specials::FiniteNanOnly => all_ones - self.bias(),
        }
    }

    pub fn max(&self) -> f64 {
        let m = self.mantissa_bits as i32;
        // Largest mantissa field in the top binade: all ones, except where all ones means NaN.
        let top_mantissa = match self.specials {
            Specials::Ieee => (1u64 << m) - 1,
            Specials::FiniteNanOnly => (1u64 << m) - 2,
        };
        (1.0 + top_mantissa as f64 / (1u64 << m) as f64) * pow2(self.max_exponent())
    }

    pub fn info(&self) -> FormatInfo {
        let m = self.mantissa_bits as i32;
        let precision = (self.mantissa_bits as f64 * std::f64::consts::LOG10_2).floor() as i32;
        FormatInfo {
            bits: self.bits(),
            exponent_bits: self.exponent_bits,
            mantissa_bits: self.mantissa_bits,
            eps: pow2(-m),
            max: self.max(),
            min: -self.max(),
            smallest_normal: pow2(self.min_exponent()),
            smallest_subnormal: pow2(self.min_exponent() - m),
            resolution: 10f64.powi(-precision),
        }
    }

    pub fn has_infinity(&self) -> bool {
        self.specials == Specials::Ieee
    }
}

fn pow2(e: i32) -> f64 {
    2f64.powi(e)
}

/// Rounds `x` to the nearest value representable in `fmt` (ties to even), returned as an f64
/// (every value of these formats is exact in f64). Values past the largest finite number become
/// infinity where the format has one, NaN otherwise (what PyTorch's unsaturated casts do).
pub fn round_to_format(x: f64, fmt: &FloatFormat) -> f64 {
    if !x.is_finite() {
        return if x.is_infinite() && !fmt.has_infinity() {
            f64::NAN
        } else {
            x
        };
    }
    if x == 0.0 {
        return x;
    }
    let a = x.abs();
    let exponent = floor_log2(a).max(fmt.min_exponent());
    let quantum = pow2(exponent - fmt.mantissa_bits as i32);
    // Dividing by a power of two is exact, so this is the one rounding step.
    let rounded = (a / quantum).round_ties_even() * quantum;
    let magnitude = if rounded > fmt.max() {
        if fmt.has_infinity() { f64::INFINITY } else { f64::NAN }
    } else {
        rounded
    };
    magnitude.copysign(x)
}

/// floor(log2(a)) for a positive finite f64, exactly (read from the bits, not from `log2`).
fn floor_log2(a: f64) -> i32 {
    let bits = a.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    if biased == 0 {
        // f64 subnormal: far below every format here; normalise by scaling.
        floor_log2(a * pow2(64)) - 64
    } else {
        biased - 1023
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_match_ieee_and_ocp_definitions() {
        let f32i = FLOAT32.info();
        assert_eq!(f32i.eps, f32::EPSILON as f64);
        assert_eq!(f32i.max, f32::MAX as f64);
        assert_eq!(f32i.smallest_normal, f32::MIN_POSITIVE as f64);
        assert_eq!(f32i.resolution, 1e-6);
        let f16i = FLOAT16.info();
        assert_eq!(f16i.max, 65504.0);
        assert_eq!(f16i.eps, 0.0009765625);
        assert_eq!(f16i.smallest_normal, 6.103515625e-05);
        assert_eq!(f16i.resolution, 1e-3);
        let bfi = BFLOAT16.info();
        assert_eq!(bfi.max, half::bf16::MAX.to_f64());
        assert_eq!(bfi.eps, 0.0078125);
        assert_eq!(bfi.resolution, 0.01);
        assert_eq!(FP8_E4M3.info().max, 448.0);
        assert_eq!(FP8_E4M3.info().smallest_normal, 2f64.powi(-6));
        assert_eq!(FP8_E5M2.info().max, 57344.0);
        assert_eq!(FP8_E5M2.info().smallest_subnormal, 2f64.powi(-16));
        assert_eq!(FP8_E4M3.info().resolution, 1.0);
    }

    #[test]
    fn rounding_is_nearest_even_with_subnormals_and_overflow() {
        assert_eq!(round_to_format(1e-8, &FLOAT16), 0.0);
        assert_eq!(round_to_format(1e-8, &BFLOAT16), 1.0011717677116394e-08);
        // 1 + eps/2 is a tie: goes to the even neighbour 1.0; 1 + 3eps/2 goes up to 1 + 2eps.
        let e = BFLOAT16.info().eps;
        assert_eq!(round_to_format(1.0 + e / 2.0, &BFLOAT16), 1.0);
        assert_eq!(round_to_format(1.0 + 1.5 * e, &BFLOAT16), 1.0 + 2.0 * e);
        assert_eq!(round_to_format(464.0, &FP8_E4M3), 448.0);
        assert!(round_to_format(480.0, &FP8_E4M3).is_nan());
        assert_eq!(round_to_format(65520.0, &FLOAT16), f64::INFINITY);
        assert_eq!(round_to_format(65519.0, &FLOAT16), 65504.0);
        assert_eq!(round_to_format(-2f64.powi(-17), &FP8_E5M2), -0.0);
        assert_eq!(round_to_format(1.25 * 2f64.powi(-16), &FP8_E5M2), 2f64.powi(-16));
        // 1.5 subnormal quanta is a tie: to the even count of quanta, 2.
        assert_eq!(round_to_format(3.0 * 2f64.powi(-17), &FP8_E5M2), 2f64.powi(-15));
    }
}

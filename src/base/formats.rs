//! Floating-point formats described by their bit fields, and every number the lecture quotes about
//! them (eps, max, smallest normal, resolution) derived from that description rather than typed in.
//! The same description rounds values into the format, which is how fp8 and fp4 are simulated
//! here, and lists every value a narrow format has.

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
    /// OCP FP4 E2M1 ("fn"): no infinity and no NaN, every pattern is a number; values past the
    /// largest saturate to it (what NVIDIA's conversions to fp4 do).
    FiniteOnly,
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

/// fp4 as NVFP4 stores its values (PyTorch packs two in a byte: `float4_e2m1fn_x2`).
pub const FP4_E2M1: FloatFormat = FloatFormat {
    name: "float4_e2m1fn",
    exponent_bits: 2,
    mantissa_bits: 1,
    specials: Specials::FiniteOnly,
};

pub const ALL_FORMATS: [&FloatFormat; 6] = [&FLOAT32, &FLOAT16, &BFLOAT16, &FP8_E4M3, &FP8_E5M2, &FP4_E2M1];

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
            Specials::FiniteNanOnly | Specials::FiniteOnly => all_ones - self.bias(),
        }
    }

    pub fn max(&self) -> f64 {
        let m = self.mantissa_bits as i32;
        // Largest mantissa field in the top binade: all ones, except where all ones means NaN.
        let top_mantissa = match self.specials {
            Specials::Ieee | Specials::FiniteOnly => (1u64 << m) - 1,
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

    /// The number a bit pattern (sign, exponent, mantissa from the top down; higher bits ignored)
    /// stands for.
    pub fn decode(&self, pattern: u64) -> f64 {
        let (e, m) = (self.exponent_bits, self.mantissa_bits);
        let all_ones = (1u64 << e) - 1;
        let sign = if (pattern >> (e + m)) & 1 == 1 { -1.0 } else { 1.0 };
        let exponent = (pattern >> m) & all_ones;
        let mantissa = pattern & ((1u64 << m) - 1);
        if exponent == all_ones {
            match self.specials {
                Specials::Ieee if mantissa == 0 => return sign * f64::INFINITY,
                Specials::Ieee => return f64::NAN,
                Specials::FiniteNanOnly if mantissa == (1u64 << m) - 1 => return f64::NAN,
                Specials::FiniteNanOnly | Specials::FiniteOnly => {}
            }
        }
        let fraction = mantissa as f64 / (1u64 << m) as f64;
        let magnitude = if exponent == 0 {
            // Subnormal: no implicit leading 1, the smallest normal binade's exponent.
            fraction * pow2(self.min_exponent())
        } else {
            (1.0 + fraction) * pow2(exponent as i32 - self.bias())
        };
        sign * magnitude
    }

    /// The bit pattern of `x`, rounded into the format first (NaN where the format has none:
    /// `None`). Zero is encoded without its sign.
    pub fn encode(&self, x: f64) -> Option<u64> {
        let r = round_to_format(x, self);
        if r.is_nan() {
            return None;
        }
        let (e, m) = (self.exponent_bits, self.mantissa_bits);
        let sign = u64::from(r < 0.0) << (e + m);
        let a = r.abs();
        if a == 0.0 {
            return Some(0);
        }
        if a.is_infinite() {
            return Some(sign | (((1u64 << e) - 1) << m));
        }
        let bits = if a < pow2(self.min_exponent()) {
            // Subnormal: a whole number of the smallest quanta (exact, `a` is in the format).
            (a / pow2(self.min_exponent() - m as i32)) as u64
        } else {
            let exponent = floor_log2(a);
            let mantissa = ((a / pow2(exponent) - 1.0) * (1u64 << m) as f64) as u64;
            (((exponent + self.bias()) as u64) << m) | mantissa
        };
        Some(sign | bits)
    }

    /// Every distinct finite value of a narrow format (at most 16 bits), from the smallest to the
    /// largest, each decoded from its bit pattern; +0 and −0 are one value. `None` for a wider
    /// format, whose list would not be worth holding.
    pub fn finite_values(&self) -> Option<Vec<f64>> {
        if self.bits() > 16 {
            return None;
        }
        let mut values: Vec<f64> = (0..1u64 << self.bits())
            .map(|p| self.decode(p))
            .filter(|v| v.is_finite())
            .map(|v| if v == 0.0 { 0.0 } else { v })
            .collect();
        values.sort_by(f64::total_cmp);
        values.dedup();
        Some(values)
    }
}

fn pow2(e: i32) -> f64 {
    2f64.powi(e)
}

/// Rounds `x` to the nearest value representable in `fmt` (ties to even), returned as an f64
/// (every value of these formats is exact in f64). Values past the largest finite number become
/// infinity where the format has one, NaN where it has only NaN (what PyTorch's unsaturated casts
/// do), and the largest number where it has neither (fp4).
pub fn round_to_format(x: f64, fmt: &FloatFormat) -> f64 {
    if !x.is_finite() {
        return match fmt.specials {
            Specials::Ieee => x,
            Specials::FiniteNanOnly => f64::NAN,
            // No NaN to give: ±∞ saturates like any large value; NaN has no fp4 at all, and
            // stays NaN so that a caller sees it (NVFP4 refuses it before rounding).
            Specials::FiniteOnly if x.is_infinite() => fmt.max().copysign(x),
            Specials::FiniteOnly => f64::NAN,
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
        match fmt.specials {
            Specials::Ieee => f64::INFINITY,
            Specials::FiniteNanOnly => f64::NAN,
            Specials::FiniteOnly => fmt.max(),
        }
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
    fn e2m1_has_the_fifteen_values_of_the_specification() {
        // OCP MX / NVFP4: ±{0, 0.5, 1, 1.5, 2, 3, 4, 6}, +0 and −0 one value.
        let spec = [
            -6.0, -4.0, -3.0, -2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
        ];
        assert_eq!(FP4_E2M1.finite_values(), Some(spec.to_vec()));
        let i = FP4_E2M1.info();
        assert_eq!(
            (i.bits, i.max, i.eps, i.smallest_normal, i.smallest_subnormal),
            (4, 6.0, 0.5, 1.0, 0.5)
        );
        // Every pattern encodes back to itself (−0 to +0).
        for p in 0..16u64 {
            let v = FP4_E2M1.decode(p);
            assert_eq!(FP4_E2M1.encode(v), Some(if v == 0.0 { 0 } else { p }), "pattern {p}");
        }
    }

    #[test]
    fn e2m1_rounds_to_nearest_even_and_saturates() {
        let r = |x| round_to_format(x, &FP4_E2M1);
        // Ties go to the even mantissa: 0.25 → 0, 0.75 → 1, 1.25 → 1, 1.75 → 2, 2.5 → 2, 3.5 → 4, 5 → 4.
        let ties = [
            (0.25, 0.0),
            (0.75, 1.0),
            (1.25, 1.0),
            (1.75, 2.0),
            (2.5, 2.0),
            (3.5, 4.0),
            (5.0, 4.0),
        ];
        for (x, want) in ties {
            assert_eq!(r(x), want, "{x}");
            assert_eq!(r(-x), -want, "-{x}");
        }
        assert_eq!((r(2.6), r(5.1), r(0.3)), (3.0, 6.0, 0.5));
        // No infinity, no NaN: past 6 it stays 6.
        assert_eq!((r(7.0), r(1e9), r(f64::INFINITY), r(-100.0)), (6.0, 6.0, 6.0, -6.0));
    }

    #[test]
    fn decoding_agrees_with_rounding_on_every_fp8_pattern() {
        for fmt in [&FP8_E4M3, &FP8_E5M2] {
            for p in 0..256u64 {
                let v = fmt.decode(p);
                if v.is_finite() {
                    assert_eq!(round_to_format(v, fmt), v, "{} {p}", fmt.name);
                    assert_eq!(fmt.encode(v).map(|q| fmt.decode(q)), Some(v), "{} {p}", fmt.name);
                }
            }
            let values = fmt.finite_values().unwrap_or_default();
            assert_eq!(values.last(), Some(&fmt.max()), "{}", fmt.name);
        }
        // E4M3 has 253 finite values (256 patterns, two NaNs, two zeros), E5M2 247.
        assert_eq!(FP8_E4M3.finite_values().map(|v| v.len()), Some(253));
        assert_eq!(FP8_E5M2.finite_values().map(|v| v.len()), Some(247));
        assert_eq!(FLOAT32.finite_values(), None);
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

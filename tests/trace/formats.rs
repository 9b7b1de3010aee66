//! Float formats checked exhaustively against their definitions: every f16 and bf16 bit pattern,
//! every fp8 E4M3 / E5M2 code (decoded here from the bit layout, independently of the library),
//! round-to-nearest-even at every midpoint, overflow, and the `finfo`-style tables against
//! numbers computed another way (Rust's and `half`'s constants, the decoded codes).

use cs336::tensor::Element;
use cs336::tensor::formats::{
    ALL_FORMATS, BFLOAT16, FLOAT16, FLOAT32, FP8_E4M3, FP8_E5M2, FloatFormat, round_to_format,
};
use half::{bf16, f16};
use proptest::prelude::*;

/// Every finite non-negative value of a 16-bit format in increasing order, with its bit pattern
/// (for sign-magnitude formats, increasing bit patterns are increasing values).
fn positive_finite_16(decode: fn(u16) -> f64) -> Vec<(u16, f64)> {
    (0..=0x7fffu16)
        .map(|b| (b, decode(b)))
        .filter(|(_, v)| v.is_finite())
        .collect()
}

fn f16_value(b: u16) -> f64 {
    f16::from_bits(b).to_f64()
}

fn bf16_value(b: u16) -> f64 {
    bf16::from_bits(b).to_f64()
}

/// Rounds through the library's `Element::from_f64` and returns the bit pattern.
fn f16_bits(x: f64) -> u16 {
    <f16 as Element>::from_f64(x).to_bits()
}

fn bf16_bits(x: f64) -> u16 {
    <bf16 as Element>::from_f64(x).to_bits()
}

fn same(a: f64, b: f64) -> bool {
    (a == b && a.is_sign_negative() == b.is_sign_negative()) || (a.is_nan() && b.is_nan())
}

#[test]
fn every_f16_and_bf16_value_rounds_to_itself() {
    type Case = (&'static FloatFormat, fn(u16) -> f64, fn(f64) -> u16);
    let cases: [Case; 2] = [(&FLOAT16, f16_value, f16_bits), (&BFLOAT16, bf16_value, bf16_bits)];
    for (fmt, decode, encode) in cases {
        let mut finite = 0;
        for b in 0..=u16::MAX {
            let v = decode(b);
            if v.is_nan() {
                assert!(round_to_format(v, fmt).is_nan());
                assert!(decode(encode(v)).is_nan());
                continue;
            }
            finite += v.is_finite() as u32;
            assert!(
                same(round_to_format(v, fmt), v),
                "{}: {b:#06x} = {v} did not round to itself",
                fmt.name
            );
            assert_eq!(encode(v), b, "{}: from_f64({v}) changed the bits", fmt.name);
        }
        // 2 signs × (2^e − 1 finite exponents) × 2^m mantissas.
        assert_eq!(
            finite,
            2 * ((1 << fmt.exponent_bits) - 1) * (1 << fmt.mantissa_bits),
            "{}",
            fmt.name
        );
    }
}

/// Between each pair of adjacent values: the exact midpoint goes to the neighbour with the even
/// mantissa (even bit pattern); anything off the midpoint goes to the nearer neighbour, including
/// offsets too small to survive a detour through f32 (f64 → f32 → f16 would round twice).
#[test]
fn midpoints_round_to_even_and_the_rest_to_nearest() {
    type Case = (&'static FloatFormat, fn(u16) -> f64, fn(f64) -> u16);
    let cases: [Case; 2] = [(&FLOAT16, f16_value, f16_bits), (&BFLOAT16, bf16_value, bf16_bits)];
    for (fmt, decode, encode) in cases {
        let values = positive_finite_16(decode);
        for pair in values.windows(2) {
            let ((ba, a), (bb, b)) = (pair[0], pair[1]);
            let mid = (a + b) / 2.0; // exact: both have few significant bits
            let (even_bits, even) = if ba % 2 == 0 { (ba, a) } else { (bb, b) };
            for sign in [1.0, -1.0] {
                assert!(
                    same(round_to_format(sign * mid, fmt), sign * even),
                    "{}: tie {mid} between {a} and {b}",
                    fmt.name
                );
                for tiny in [(b - a) / 1024.0, (b - a) * 2f64.powi(-30)] {
                    assert!(
                        same(round_to_format(sign * (mid - tiny), fmt), sign * a),
                        "{}: just below {mid}",
                        fmt.name
                    );
                    assert!(
                        same(round_to_format(sign * (mid + tiny), fmt), sign * b),
                        "{}: just above {mid}",
                        fmt.name
                    );
                }
            }
            assert_eq!(encode(mid), even_bits);
            assert_eq!(
                encode(mid + (b - a) * 2f64.powi(-30)),
                bb,
                "{}: from_f64 just above the tie {mid}",
                fmt.name
            );
            assert_eq!(encode(-(mid - (b - a) * 2f64.powi(-30))), 0x8000 | ba);
        }
        // Past the largest finite value: the next binade would start at 2^(emax+1); halfway to it
        // is a tie whose even neighbour is that (nonexistent) power of two, so it overflows.
        let (_, max) = *values.last().unwrap();
        let top = 2f64.powi(fmt.max_exponent() + 1);
        let mid = (max + top) / 2.0;
        assert_eq!(round_to_format(mid, fmt), f64::INFINITY, "{}", fmt.name);
        assert_eq!(round_to_format(-mid, fmt), f64::NEG_INFINITY, "{}", fmt.name);
        assert_eq!(
            round_to_format(mid - (top - max) * 2f64.powi(-30), fmt),
            max,
            "{}",
            fmt.name
        );
        assert_eq!(decode(encode(mid)), f64::INFINITY);
    }
}

/// The library's f64 → f16/bf16 conversion agrees with `half`'s (correctly rounded) f32 → f16/bf16
/// on f32 inputs: a sweep across all exponents, every near-tie f32 around every midpoint, and
/// random patterns below.
#[test]
fn from_f64_agrees_with_half_on_f32_inputs() {
    let check = |x: f32| {
        let (a, b) = (<f16 as Element>::from_f64(x as f64), f16::from_f32(x));
        assert!(
            a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
            "f16: {x:e} ({:#010x}): {a} vs {b}",
            x.to_bits()
        );
        let (a, b) = (<bf16 as Element>::from_f64(x as f64), bf16::from_f32(x));
        assert!(
            a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
            "bf16: {x:e} ({:#010x}): {a} vs {b}",
            x.to_bits()
        );
    };
    // Every 1021st f32 bit pattern: all exponents, signs, NaNs and infinities.
    (0..=u32::MAX).step_by(1021).for_each(|b| check(f32::from_bits(b)));
    // f32 neighbours of every f16 and bf16 midpoint (ties and the values either side of them).
    for decode in [f16_value as fn(u16) -> f64, bf16_value] {
        for pair in positive_finite_16(decode).windows(2) {
            let mid = ((pair[0].1 + pair[1].1) / 2.0) as f32; // exact in f32
            for d in -2i32..=2 {
                let x = f32::from_bits((mid.to_bits() as i32 + d) as u32);
                check(x);
                check(-x);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn half_agrees_on_random_f32(bits in any::<u32>()) {
        let x = f32::from_bits(bits);
        let (a, b) = (<f16 as Element>::from_f64(x as f64), f16::from_f32(x));
        prop_assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()));
        let (a, b) = (<bf16 as Element>::from_f64(x as f64), bf16::from_f32(x));
        prop_assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()));
    }

    /// The generic rounding, applied to the f32 format, is what the hardware does for f64 → f32
    /// (normal, subnormal, overflowing and underflowing values alike).
    #[test]
    fn generic_rounding_matches_the_hardware_for_f32(bits in any::<u64>()) {
        let x = f64::from_bits(bits);
        prop_assert!(same(round_to_format(x, &FLOAT32), x as f32 as f64), "{:e}", x);
        // And near f32's range, where the interesting cases are.
        let y = x.abs().clamp(1e-50, 1e50).copysign(x) * 1e-30;
        if y.is_finite() {
            prop_assert!(same(round_to_format(y, &FLOAT32), y as f32 as f64), "{:e}", y);
        }
    }
}

/// An fp8 code decoded from the definition: sign, exponent field, mantissa field; biased
/// exponent with bias 2^(E−1) − 1; exponent field 0 means subnormal. E5M2 is IEEE-like (all-ones
/// exponent: infinity or NaN); E4M3 ("fn") has no infinities and only S.1111.111 is NaN.
fn decode_fp8(code: u8, e_bits: u32, m_bits: u32) -> f64 {
    let sign = if code & 0x80 != 0 { -1.0 } else { 1.0 };
    let e = ((code as u32) >> m_bits) & ((1 << e_bits) - 1);
    let m = (code as u32) & ((1 << m_bits) - 1);
    let bias = (1i32 << (e_bits - 1)) - 1;
    let all_ones = (1 << e_bits) - 1;
    let ieee = e_bits == 5;
    if ieee && e == all_ones {
        return if m == 0 { sign * f64::INFINITY } else { f64::NAN };
    }
    if !ieee && e == all_ones && m == (1 << m_bits) - 1 {
        return f64::NAN;
    }
    let frac = m as f64 / (1 << m_bits) as f64;
    sign * if e == 0 {
        frac * 2f64.powi(1 - bias)
    } else {
        (1.0 + frac) * 2f64.powi(e as i32 - bias)
    }
}

#[test]
fn every_fp8_code_round_trips_and_ties_go_to_even() {
    for (fmt, e_bits, m_bits) in [(&FP8_E4M3, 4, 3), (&FP8_E5M2, 5, 2)] {
        let mut positive: Vec<(u8, f64)> = Vec::new();
        for code in 0..=255u8 {
            let v = decode_fp8(code, e_bits, m_bits);
            if v.is_nan() {
                assert!(round_to_format(v, fmt).is_nan());
                continue;
            }
            assert!(same(round_to_format(v, fmt), v), "{}: code {code:#04x} = {v}", fmt.name);
            if code < 0x80 && v.is_finite() {
                positive.push((code, v));
            }
        }
        // E4M3: 127 finite non-negative codes (0x00..=0x7e); E5M2: 124 (0x00..=0x7b).
        assert_eq!(positive.len(), if e_bits == 4 { 127 } else { 124 });
        for pair in positive.windows(2) {
            let ((ca, a), (_, b)) = (pair[0], pair[1]);
            assert!(a < b);
            let mid = (a + b) / 2.0;
            let even = if ca % 2 == 0 { a } else { b };
            assert!(same(round_to_format(mid, fmt), even), "{}: tie {mid}", fmt.name);
            assert!(same(round_to_format(-mid, fmt), -even), "{}: tie {}", fmt.name, -mid);
            assert_eq!(round_to_format(mid - (b - a) / 64.0, fmt), a);
            assert_eq!(
                round_to_format(mid + (b - a) / 64.0, fmt),
                b,
                "{}: above {mid}",
                fmt.name
            );
        }

        // The table, from the decoded codes.
        let info = fmt.info();
        let max = positive.last().unwrap().1;
        let one = positive.iter().position(|&(_, v)| v == 1.0).unwrap();
        let normal = positive.iter().find(|&&(c, _)| (c as u32 >> m_bits) != 0).unwrap().1;
        assert_eq!(info.bits, 8);
        assert_eq!(info.max, max, "{}", fmt.name);
        assert_eq!(info.min, -max);
        assert_eq!(info.eps, positive[one + 1].1 - 1.0);
        assert_eq!(info.smallest_subnormal, positive[1].1);
        assert_eq!(info.smallest_normal, normal);
        assert_eq!(info.resolution, numpy_resolution(info.eps));
    }
    // The lecture's numbers.
    assert_eq!(FP8_E4M3.info().max, 448.0);
    assert_eq!(FP8_E5M2.info().max, 57344.0);
}

/// numpy's definition: precision = floor(−log10(eps)) decimal digits, resolution = 10^−precision.
fn numpy_resolution(eps: f64) -> f64 {
    10f64.powi(-((-eps.log10()).floor() as i32))
}

#[test]
fn overflow_gives_infinity_or_nan_by_format() {
    // IEEE formats: past max + half an ulp is infinity (sign kept); NaN stays NaN.
    for fmt in [&FLOAT32, &FLOAT16, &BFLOAT16, &FP8_E5M2] {
        let max = fmt.info().max;
        let half_ulp = 2f64.powi(fmt.max_exponent() - fmt.mantissa_bits as i32 - 1);
        assert_eq!(round_to_format(max + half_ulp * 0.999, fmt), max, "{}", fmt.name);
        assert_eq!(round_to_format(max + half_ulp, fmt), f64::INFINITY, "{}", fmt.name);
        assert_eq!(round_to_format(-1e300, fmt), f64::NEG_INFINITY, "{}", fmt.name);
        assert_eq!(round_to_format(f64::INFINITY, fmt), f64::INFINITY);
        assert!(round_to_format(f64::NAN, fmt).is_nan());
    }
    // E4M3 has no infinity: overflow and infinities become NaN (PyTorch's unsaturated cast).
    assert_eq!(round_to_format(464.0, &FP8_E4M3), 448.0); // tie, 448 has the even mantissa
    assert_eq!(round_to_format(-463.9, &FP8_E4M3), -448.0);
    for x in [464.01, 480.0, 1e6, f64::INFINITY, f64::NEG_INFINITY, -1e300] {
        assert!(round_to_format(x, &FP8_E4M3).is_nan(), "{x}");
    }
    // Through the element types too.
    assert_eq!(<f16 as Element>::from_f64(65520.0), f16::INFINITY);
    assert_eq!(<f16 as Element>::from_f64(65519.99), f16::MAX);
    assert_eq!(<bf16 as Element>::from_f64(-1e39), bf16::NEG_INFINITY);
    assert_eq!(<f32 as Element>::from_f64(1e39), f32::INFINITY);
    // Underflow keeps the sign: -tiny rounds to -0.
    assert!(same(round_to_format(-1e-30, &FLOAT16), -0.0));
    assert_eq!(<f16 as Element>::from_f64(-1e-30).to_bits(), 0x8000);
}

#[test]
fn tables_match_independent_constants() {
    let f32i = FLOAT32.info();
    assert_eq!(f32i.eps, f32::EPSILON as f64);
    assert_eq!(f32i.max, f32::MAX as f64);
    assert_eq!(f32i.min, f32::MIN as f64);
    assert_eq!(f32i.smallest_normal, f32::MIN_POSITIVE as f64);
    assert_eq!(f32i.smallest_subnormal, f32::from_bits(1) as f64);
    assert_eq!(f32i.bits, 32);
    for (fmt, eps, max, min, normal, sub) in [
        (
            &FLOAT16,
            f16::EPSILON.to_f64(),
            f16::MAX.to_f64(),
            f16::MIN.to_f64(),
            f16::MIN_POSITIVE.to_f64(),
            f16::MIN_POSITIVE_SUBNORMAL.to_f64(),
        ),
        (
            &BFLOAT16,
            bf16::EPSILON.to_f64(),
            bf16::MAX.to_f64(),
            bf16::MIN.to_f64(),
            bf16::MIN_POSITIVE.to_f64(),
            bf16::MIN_POSITIVE_SUBNORMAL.to_f64(),
        ),
    ] {
        let i = fmt.info();
        assert_eq!(
            (i.eps, i.max, i.min, i.smallest_normal, i.smallest_subnormal),
            (eps, max, min, normal, sub),
            "{}",
            fmt.name
        );
        assert_eq!(i.bits, 16);
    }
    // Also from the exhaustive decoding: the largest finite pattern, the step after 1.0.
    for (fmt, decode) in [(&FLOAT16, f16_value as fn(u16) -> f64), (&BFLOAT16, bf16_value)] {
        let values = positive_finite_16(decode);
        assert_eq!(fmt.info().max, values.last().unwrap().1);
        assert_eq!(fmt.info().smallest_subnormal, values[1].1);
        let one = values.iter().position(|&(_, v)| v == 1.0).unwrap();
        assert_eq!(fmt.info().eps, values[one + 1].1 - 1.0);
    }
    // Resolution (torch.finfo / numpy): 1e-6, 1e-3, 1e-2, and 1 for both fp8 formats and fp4.
    for fmt in ALL_FORMATS {
        assert_eq!(fmt.info().resolution, numpy_resolution(fmt.info().eps), "{}", fmt.name);
    }
    let res: Vec<f64> = ALL_FORMATS.iter().map(|f| f.info().resolution).collect();
    assert_eq!(res, vec![1e-6, 1e-3, 1e-2, 1.0, 1.0, 1.0]);
    // The lecture's two underflow examples.
    assert_eq!(round_to_format(1e-8, &FLOAT16), 0.0);
    assert_eq!(round_to_format(1e-8, &BFLOAT16), 1.0011717677116394e-08);
}

/// A GPU check's table (`trace/bench/<gpu>-gpu-check.txt`, written by `.ci/gpu-check`): named
/// after a committed GPU trace, whose device it names on its first line, with ours against
/// PyTorch per dtype and its verdicts.
fn assert_gpu_check_table(path: &std::path::Path, text: &str) {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let gpu = stem.strip_suffix("-gpu-check").unwrap_or_else(|| {
        panic!(
            "{}: a text table is a GPU check's, `<gpu>-gpu-check.txt`",
            path.display()
        )
    });
    let trace = path
        .with_file_name("")
        .join("../lecture_02")
        .join(format!("{gpu}.json"));
    let trace: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&trace)
            .unwrap_or_else(|e| panic!("{}: no committed trace {gpu}.json beside it: {e}", path.display())),
    )
    .unwrap_or_else(|e| panic!("{gpu}.json: {e}"));
    let device = trace["provenance"]["device"]["name"]
        .as_str()
        .expect("the trace names its device");
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!("{device}:")),
        "{}: first line {first:?}",
        path.display()
    );
    for needed in ["ours/torch", "bf16 ", "fp32 ", "device copy", "bf16 >= 740 TFLOP/s"] {
        assert!(text.contains(needed), "{}: no {needed:?}", path.display());
    }
    let verdicts = text
        .lines()
        .filter(|l| l.starts_with("PASS  ") || l.starts_with("MISS  "));
    assert!(verdicts.count() >= 4, "{}: a verdict per target", path.display());
}

/// The benchmark tables kept beside the traces (`trace/bench/<trace name>.json`, written by
/// `bench cpu-matmul --json`, and `<trace name>-elementwise.json`, by `bench elementwise --json`):
/// each names a CPU whose trace is committed; a matmul table holds every shape the bench times
/// with our speed and the references' as GFLOP/s from their own medians, an elementwise one its
/// GB/s as bytes over medians. A GPU check's text table is held to its GPU trace
/// (`assert_gpu_check_table`).
#[test]
fn committed_bench_tables_name_their_cpu_and_hold_every_shape() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("trace/bench");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("trace/bench is committed").flatten() {
        let path = entry.path();
        let text = std::fs::read_to_string(&path).expect("readable");
        if path.extension().is_some_and(|e| e == "txt") {
            assert_gpu_check_table(&path, &text);
            seen += 1;
            continue;
        }
        let table: serde_json::Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = table["trace_name"]
            .as_str()
            .unwrap_or_else(|| panic!("{}: no trace_name", path.display()));
        let elementwise = table["kind"] == "elementwise";
        let stem = if elementwise {
            format!("{name}-elementwise")
        } else {
            name.to_string()
        };
        assert_eq!(
            path.file_stem().and_then(|s| s.to_str()),
            Some(stem.as_str()),
            "{}: named after its CPU",
            path.display()
        );
        let trace = path
            .with_file_name("")
            .join("../lecture_02")
            .join(format!("{name}.json"));
        assert!(
            trace.is_file(),
            "{}: no committed trace {name}.json beside it",
            path.display()
        );
        let rows = table["rows"].as_array().expect("rows");
        if elementwise {
            assert_elementwise_rates(&path, rows);
            seen += 1;
            continue;
        }
        assert_eq!(rows.len(), 5, "{}: every shape the bench times", path.display());
        for row in rows {
            let flop =
                2.0 * row["m"].as_f64().expect("m") * row["k"].as_f64().expect("k") * row["n"].as_f64().expect("n");
            for column in ["our f32", "our bf16"] {
                let entry = &row[column];
                let median = entry["timing"]["median_s"].as_f64().expect("a median");
                let rate = entry["gflop_per_sec"].as_f64().expect("a rate");
                assert!(
                    (rate - flop / median / 1e9).abs() <= 1e-9 * rate,
                    "{}: {column} rate = FLOP / median",
                    path.display()
                );
            }
        }
        seen += 1;
    }
    assert!(seen >= 1, "no benchmark table in {}", dir.display());
}

/// Every contender's GB/s in an elementwise table is its bytes over its median.
fn assert_elementwise_rates(path: &std::path::Path, rows: &[serde_json::Value]) {
    assert!(!rows.is_empty(), "{}: no rows", path.display());
    for row in rows {
        for column in ["ours", "baseline", "torch", "numpy"] {
            let entry = &row[column];
            if entry.is_null() {
                continue;
            }
            let bytes = entry["bytes"]
                .as_f64()
                .or_else(|| row["bytes"].as_f64())
                .expect("bytes");
            let median = entry["timing"]["median_s"].as_f64().expect("a median");
            let rate = entry["gb_per_sec"].as_f64().expect("a rate");
            assert!(
                (rate - bytes / median / 1e9).abs() <= 1e-9 * rate,
                "{}: {} {column} GB/s = bytes / median",
                path.display(),
                row["op"]
            );
        }
    }
}

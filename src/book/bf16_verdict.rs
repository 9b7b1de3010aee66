//! The Devices chapter's sentence on bfloat16, decided from every device's trace: where it paid,
//! and for each device where it did not, the cause that device's own peaks and route name.

use super::format::{Format, format_value};
use super::html::escape;
use crate::trace::Unit;

/// bfloat16 "pays" where it ran more than a quarter faster than float32 (the FLOPs chapter's
/// band for "about the same rate").
const PAYS: f64 = 1.25;

/// One device's bfloat16 product against its float32 one, and what its own trace says of why.
pub(crate) struct Speedup {
    pub(crate) name: String,
    /// bfloat16's rate over float32's, at the lecture's shape.
    pub(crate) ratio: f64,
    /// The peaks its MFUs divide by, bfloat16's and float32's (measured on a CPU, a datasheet's on
    /// a GPU), where the trace has them.
    pub(crate) peaks: Option<(f64, f64)>,
    /// Whether its bfloat16 products were widened to float32 (no bfloat16 unit, or a slower one).
    pub(crate) widened: bool,
    /// Whether it has a bfloat16 instruction at all.
    pub(crate) has_unit: bool,
    /// Whether its CPU's benchmark table ran the float32 product faster beyond both spreads:
    /// the ratio's denominator was slowed.
    pub(crate) busy: bool,
}

/// The lesson, decided from the traces: on which devices bfloat16 paid, and for each device where
/// it did not, the cause its own trace names, so that no device is a counter-example to the
/// sentence that lists it.
pub(crate) fn verdict(speedups: &[Speedup]) -> String {
    let list = |pays: bool| -> Vec<String> {
        speedups
            .iter()
            .filter(|s| (s.ratio > PAYS) == pays)
            .map(|s| {
                // A ratio whose float32 product ran slowed says so where it is quoted.
                let busy = if s.busy {
                    ", from a float32 product timed on a busy machine"
                } else {
                    ""
                };
                format!("the {} ({:.2}×{busy})", escape(&s.name), s.ratio)
            })
            .collect()
    };
    let (paid, not) = (list(true), list(false));
    let rate = |x: f64| format_value(&serde_json::json!(x), Unit::FlopPerSec, Format::Auto).unwrap_or_default();
    let why_not: Vec<String> = speedups
        .iter()
        .filter(|s| s.ratio <= PAYS)
        .map(|s| {
            let name = escape(&s.name);
            match s.peaks {
                Some((bf16, fp32)) if s.widened && s.has_unit && bf16 < fp32 => format!(
                    "on the {name}, the bfloat16 unit peaks at {}, below the float32 units' {}, so bfloat16 products \
                     were widened to float32 and ran on the float32 units",
                    rate(bf16),
                    rate(fp32)
                ),
                _ if s.widened => {
                    format!("the {name} multiplies bfloat16 by widening it to float32, on the float32 units")
                }
                Some((bf16, fp32)) if bf16 < fp32 / PAYS => format!(
                    "on the {name}, the bfloat16 unit peaks at {}, below the float32 units' {}",
                    rate(bf16),
                    rate(fp32)
                ),
                Some((bf16, fp32)) if bf16 > fp32 * PAYS => format!(
                    "on the {name}, the bfloat16 peak ({}) is above the float32 one ({}), but the product at this \
                     shape did not come near it",
                    rate(bf16),
                    rate(fp32)
                ),
                Some(_) => format!("on the {name}, the bfloat16 and float32 peaks are about the same"),
                None => format!("the trace of the {name} records no peaks to say why"),
            }
        })
        .collect();
    let causes = match why_not.as_slice() {
        [] => String::new(),
        [one] => format!(" Where it did not, the device's own peaks say why: {one}."),
        many => format!(
            " Where it did not, each device's own peaks say why: {}.",
            many.join("; ")
        ),
    };
    let text = match (paid.is_empty(), not.is_empty()) {
        (true, true) => "No trace here timed both products, so there is nothing to compare.".to_string(),
        (false, false) => format!(
            "bfloat16 ran more than a quarter faster than float32 on {}, and did not on {}. So whether bfloat16 pays \
             depends on the hardware: it halves the bytes everywhere, but it multiplies the rate only where a unit \
             multiplies bfloat16 faster than the float32 units multiply float32.{causes}",
            paid.join(", "),
            not.join(", ")
        ),
        (false, true) => format!(
            "bfloat16 ran more than a quarter faster than float32 on every device here ({}): each has a unit that \
             multiplies bfloat16 faster than its float32 units multiply float32.",
            paid.join(", ")
        ),
        (true, false) => format!(
            "bfloat16 ran no more than a quarter faster than float32 on any device here ({}), so its only gain was its \
             smaller size.{causes}",
            not.join(", ")
        ),
    };
    format!("<p class=\"lecture-verdict\">{text}</p>")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(name: &str, ratio: f64, peaks: Option<(f64, f64)>, widened: bool, has_unit: bool) -> Speedup {
        Speedup {
            name: name.into(),
            ratio,
            peaks,
            widened,
            has_unit,
            busy: false,
        }
    }

    #[test]
    fn each_device_where_bfloat16_did_not_pay_gets_its_own_cause() {
        let text = verdict(&[
            device("GPU", 3.0, Some((989e12, 67e12)), false, true),
            device("slow unit", 0.73, Some((172e9, 352e9)), true, true),
            device("no unit", 0.8, Some((205e9, 205e9)), true, false),
            device("kept slow unit", 0.44, Some((172e9, 352e9)), false, true),
            device("short of a fast unit", 1.1, Some((467e9, 234e9)), false, true),
        ]);
        assert!(
            text.contains("faster than float32 on the GPU (3.00×), and did not on the slow unit (0.73×)"),
            "{text}"
        );
        assert!(
            text.contains("on the slow unit, the bfloat16 unit peaks at 172 GFLOP/s, below the float32 units’ 352 GFLOP/s, so bfloat16 products were widened")
                || text.contains("on the slow unit, the bfloat16 unit peaks at 172 GFLOP/s, below the float32 units' 352 GFLOP/s, so bfloat16 products were widened"),
            "{text}"
        );
        assert!(
            text.contains("the no unit multiplies bfloat16 by widening it to float32"),
            "{text}"
        );
        assert!(
            text.contains("on the kept slow unit, the bfloat16 unit peaks at 172 GFLOP/s, below the float32 units"),
            "{text}"
        );
        assert!(
            text.contains("on the short of a fast unit, the bfloat16 peak (467 GFLOP/s) is above"),
            "{text}"
        );
    }

    #[test]
    fn a_ratio_from_a_busy_run_says_so() {
        let busy = Speedup {
            busy: true,
            ..device("EPYC", 1.56, Some((467e9, 234e9)), false, true)
        };
        let text = verdict(&[busy, device("GPU", 3.0, None, false, true)]);
        assert!(
            text.contains("the EPYC (1.56×, from a float32 product timed on a busy machine)"),
            "{text}"
        );
        assert!(text.contains("the GPU (3.00×)"), "{text}");
    }

    #[test]
    fn where_it_paid_everywhere_no_cause_is_listed() {
        let text = verdict(&[device("GPU", 3.0, Some((989e12, 67e12)), false, true)]);
        assert!(text.contains("on every device here (the GPU (3.00×))"), "{text}");
        assert!(!text.contains("say why"), "{text}");
    }
}

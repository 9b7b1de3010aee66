//! The roofline's compute side, measured on the run's device: one ceiling per precision route, and
//! what bounds an operation given both sides (the memory side is `device::cpu::hierarchy`).
//! `sections/arithmetic_intensity.rs` sets each operation against both, and names what bounds it.

use serde_json::{Map, Value, json};

use crate::device::Device;
use crate::device::cpu::fma_loops::PeakLoop;
pub use crate::device::cpu::hierarchy::{Hierarchy, level_json, levels_json};
use crate::device::cpu::{isa, measured_peak};
use crate::device::peaks::{self, MathMode};
use crate::error::{Error, Result};

/// An operation whose fastest call took more than this many times the longer of its two
/// predictions is **overhead-bound**: neither rate explains its time. Twice, because a kernel
/// that runs at half a roof's speed still waits on that roof (a level between two sizes, a
/// prefetcher that starts late), and the fastest call, not the median, is compared, so the
/// spread of the timings cannot push an operation over it.
pub const OVERHEAD_FACTOR: f64 = 2.0;

/// A compute ceiling: the peak of one precision route.
#[derive(Debug)]
pub struct Ceiling {
    /// The peak loop's name on a CPU (`avx512_fma`), the math mode's on a GPU (`bf16`).
    pub name: &'static str,
    /// "float32" or "bfloat16": the numbers it multiplies.
    pub dtype: &'static str,
    pub flop_per_sec: f64,
    pub how: String,
}

/// This device's ceilings: on a CPU each peak loop it can run (the float32 FMA of our elementwise
/// code, bf16 dot products and AMX tiles where it has them), measured; on a GPU the datasheet's
/// float32, TF32 and bfloat16 figures.
pub fn ceilings(device: &Device) -> Result<Vec<Ceiling>> {
    let bad = |why: String| Error::invalid("compute ceilings", why);
    if let Some(gpu) = device.cuda() {
        return gpu_ceilings(&gpu.props().name).map_err(bad);
    }
    let fp32 = isa::current().map_err(|e| bad(e.to_string()))?.fp32_loop();
    let loops = [fp32, PeakLoop::Avx512Bf16, PeakLoop::AmxBf16];
    (loops.into_iter().enumerate())
        .filter(|&(i, l)| i == 0 || l.is_available())
        .map(|(i, l)| {
            let m = measured_peak::measure(l).map_err(bad)?;
            let dtype = if i == 0 { "float32" } else { "bfloat16" };
            Ok(Ceiling {
                name: l.name(),
                dtype,
                flop_per_sec: m.flop_per_sec,
                how: m.method,
            })
        })
        .collect()
}

/// A GPU's datasheet ceilings: float32, TF32 and bfloat16, and float8 where the chip has it.
fn gpu_ceilings(name: &str) -> std::result::Result<Vec<Ceiling>, String> {
    let modes = [
        (MathMode::Fp32, "fp32", "float32"),
        (MathMode::Tf32, "tf32", "float32"),
        (MathMode::Bf16, "bf16", "bfloat16"),
    ];
    let mut ceilings = Vec::with_capacity(modes.len() + 1);
    for (mode, short, dtype) in modes {
        let p = peaks::datasheet_peak(name, mode)?;
        ceilings.push(Ceiling {
            name: short,
            dtype,
            flop_per_sec: p.flop_per_sec,
            how: p.how,
        });
    }
    if let Some(entry) = peaks::datasheet_for(name)
        && let Some(fp8) = entry.fp8
    {
        ceilings.push(Ceiling {
            name: "fp8",
            dtype: "float8",
            flop_per_sec: fp8,
            how: format!("{} dense fp8 peak, {}", entry.device, entry.source),
        });
    }
    Ok(ceilings)
}

/// The ceiling an operation's arithmetic runs under: a bf16 matrix product on the bf16 route
/// this device takes for it; everything else (elementwise work, dot and matrix-vector products)
/// widens bf16 to float32 and runs on the float32 units.
pub fn route(device: &Device, matmul: bool) -> Result<&'static str> {
    if device.is_cuda() {
        return Ok(if matmul { "bf16" } else { "fp32" });
    }
    let bad = |why: String| Error::invalid("compute ceilings", why);
    Ok(if matmul {
        measured_peak::matmul_loop(MathMode::Bf16).map_err(bad)?.name()
    } else {
        isa::current().map_err(|e| bad(e.to_string()))?.fp32_loop().name()
    })
}

pub fn ceilings_json(ceilings: &[Ceiling]) -> Value {
    let rows = ceilings.iter().map(|c| {
        let row = json!({"dtype": c.dtype, "flop_per_sec": c.flop_per_sec, "how": c.how});
        (c.name.to_string(), row)
    });
    Value::Object(rows.collect::<Map<_, _>>())
}

/// What bounds an operation, from its two predictions and its fastest call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    pub memory_time_s: f64,
    pub compute_time_s: f64,
    pub regime: &'static str,
}

impl Verdict {
    pub fn of(bytes: f64, flops: f64, best_time_s: f64, roof_bytes_per_sec: f64, ceiling_flop_per_sec: f64) -> Verdict {
        let (memory_time_s, compute_time_s) = (bytes / roof_bytes_per_sec, flops / ceiling_flop_per_sec);
        let regime = if best_time_s > OVERHEAD_FACTOR * memory_time_s.max(compute_time_s) {
            "overhead"
        } else if memory_time_s >= compute_time_s {
            "memory"
        } else {
            "compute"
        };
        Verdict {
            memory_time_s,
            compute_time_s,
            regime,
        }
    }

    /// Writes the regime's fields (`flags`) into the object `row`.
    pub fn add_to(&self, row: &mut Value) {
        if let (Value::Object(row), Value::Object(flags)) = (row, self.flags()) {
            row.extend(flags);
        }
    }

    /// The three regimes as booleans, for the book's claims.
    pub fn flags(&self) -> Value {
        json!({
            "regime": self.regime,
            "memory_bound": self.regime == "memory",
            "compute_bound": self.regime == "compute",
            "overhead_bound": self.regime == "overhead",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_regime_is_the_longer_prediction_unless_the_time_is_far_above_both() {
        // 1 MB at 1 GB/s is 1 ms; 1 MFLOP at 1 GFLOP/s is 1 ms: the longer one decides.
        assert_eq!(Verdict::of(1e6, 1e5, 1e-3, 1e9, 1e9).regime, "memory");
        assert_eq!(Verdict::of(1e5, 1e6, 1.5e-3, 1e9, 1e9).regime, "compute");
        // Just at the factor, still bound by a rate; beyond it, overhead.
        assert_eq!(Verdict::of(1e6, 1e5, OVERHEAD_FACTOR * 1e-3, 1e9, 1e9).regime, "memory");
        assert_eq!(Verdict::of(1e6, 1e5, 2.1e-3, 1e9, 1e9).regime, "overhead");
        let flags = Verdict::of(1e6, 1e5, 5e-3, 1e9, 1e9).flags();
        assert_eq!(flags["overhead_bound"], true);
        assert_eq!(flags["memory_bound"], false);
    }

    #[test]
    fn a_hopper_has_four_ceilings_and_an_ampere_three() {
        let h200 = gpu_ceilings("NVIDIA H200").unwrap();
        let names: Vec<_> = h200.iter().map(|c| c.name).collect();
        assert_eq!(names, ["fp32", "tf32", "bf16", "fp8"]);
        // Each precision halves the bytes and doubles the tensor cores' rate.
        assert_eq!(h200[3].flop_per_sec, 2.0 * h200[2].flop_per_sec);
        assert_eq!(h200[3].dtype, "float8");
        let a100 = gpu_ceilings("NVIDIA A100-SXM4-80GB").unwrap();
        assert_eq!(
            a100.iter().map(|c| c.name).collect::<Vec<_>>(),
            ["fp32", "tf32", "bf16"]
        );
        assert!(
            gpu_ceilings("a GPU nobody listed")
                .unwrap_err()
                .contains("datasheet table")
        );
    }
}

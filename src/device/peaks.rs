//! Peak throughput, the rate an MFU divides by: on a GPU its datasheet's figure for dense (not
//! 2:4-sparse) math, by device and dtype, a fact from the vendor and not a measurement; on a CPU,
//! which has no datasheet we can trust, a measured loop (`cpu::measured_peak`). A GPU missing from
//! the table gets no MFU (and the reason), never a made-up peak.

pub use super::math_mode::MathMode;

/// H100 SXM, bf16 dense tensor-core peak: the number the lecture's napkin math uses.
pub const H100_SXM_BF16_DENSE: f64 = 989.5e12;
/// H100 SXM, HBM3 bandwidth (datasheet: 3.35 TB/s).
pub const H100_SXM_HBM_BYTES_PER_SEC: f64 = 3.35e12;

pub struct DatasheetPeak {
    /// Matched against the device name, case-insensitively, most specific first.
    pub name_contains: &'static [&'static str],
    pub device: &'static str,
    /// FLOP/s for fp32, tf32, bf16, fp16.
    pub fp32: f64,
    pub tf32: f64,
    pub bf16: f64,
    pub fp16: f64,
    /// Dense float8 (e4m3/e5m2) tensor-core FLOP/s, on the chips that have them (Ada, Hopper and
    /// later): the 2026 lecture's point that the accelerator intensity depends on the precision
    /// goes one step further there. The roofline draws it as its own ceiling.
    pub fp8: Option<f64>,
    /// Memory (HBM or GDDR) bandwidth, bytes/s.
    pub memory_bytes_per_sec: f64,
    pub source: &'static str,
}

pub const DATASHEET: &[DatasheetPeak] = &[
    DatasheetPeak {
        name_contains: &["h100", "pcie"],
        device: "H100 PCIe",
        fp32: 51e12,
        tf32: 378e12,
        bf16: 756.5e12,
        fp16: 756.5e12,
        // The datasheet's figure with sparsity, halved.
        fp8: Some(3026e12 / 2.0),
        memory_bytes_per_sec: 2.0e12,
        source: "NVIDIA H100 datasheet (PCIe)",
    },
    DatasheetPeak {
        name_contains: &["h100"],
        device: "H100 SXM",
        fp32: 67e12,
        tf32: 494.7e12,
        bf16: H100_SXM_BF16_DENSE,
        fp16: H100_SXM_BF16_DENSE,
        // The datasheet's figure with sparsity, halved.
        fp8: Some(3958e12 / 2.0),
        memory_bytes_per_sec: H100_SXM_HBM_BYTES_PER_SEC,
        source: "NVIDIA H100 datasheet (SXM)",
    },
    DatasheetPeak {
        name_contains: &["h200"],
        device: "H200",
        fp32: 67e12,
        tf32: 494.7e12,
        bf16: H100_SXM_BF16_DENSE,
        fp16: H100_SXM_BF16_DENSE,
        // The datasheet's figure with sparsity, halved.
        fp8: Some(3958e12 / 2.0),
        memory_bytes_per_sec: 4.8e12,
        source: "NVIDIA H200 datasheet (SXM)",
    },
    DatasheetPeak {
        // The figures the 2026 lecture quotes (fp32 75e12, bf16 4.5e15 with sparsity, so half
        // of it dense). tf32 is the datasheet's 2.2e15 with sparsity, halved; the memory is HBM3e.
        // Checked against published tables of the HGX B200 at 1000 W: TF32 1.1/2.2 PFLOP/s and
        // BF16 2.25/4.5 PFLOP/s (dense/sparse), 8 TB/s; its float32 is quoted as 75 to 80 TFLOP/s
        // depending on the clock, and we keep the lecture's 75.
        name_contains: &["b200"],
        device: "B200",
        fp32: 75e12,
        tf32: 2.2e15 / 2.0,
        bf16: 4.5e15 / 2.0,
        fp16: 4.5e15 / 2.0,
        // The datasheet's figure with sparsity, halved.
        fp8: Some(9e15 / 2.0),
        memory_bytes_per_sec: 8e12,
        source: "NVIDIA Blackwell B200 datasheet",
    },
    DatasheetPeak {
        name_contains: &["a100"],
        device: "A100",
        fp32: 19.5e12,
        tf32: 156e12,
        bf16: 312e12,
        fp16: 312e12,
        // The 80 GB SXM part (the 40 GB one has 1.555 TB/s).
        fp8: None,
        memory_bytes_per_sec: 2.039e12,
        source: "NVIDIA A100 datasheet",
    },
    DatasheetPeak {
        name_contains: &["l40s"],
        device: "L40S",
        fp32: 91.6e12,
        tf32: 183e12,
        bf16: 362.05e12,
        fp16: 362.05e12,
        // The datasheet's figure with sparsity, halved.
        fp8: Some(1466e12 / 2.0),
        memory_bytes_per_sec: 864e9,
        source: "NVIDIA L40S datasheet",
    },
    DatasheetPeak {
        name_contains: &["a10g"],
        device: "A10G",
        fp32: 31.2e12,
        tf32: 62.5e12,
        bf16: 125e12,
        fp16: 125e12,
        fp8: None,
        memory_bytes_per_sec: 600e9,
        source: "NVIDIA A10G (AWS) specifications",
    },
    DatasheetPeak {
        name_contains: &["l40"],
        device: "L40",
        fp32: 90.5e12,
        tf32: 90.5e12,
        bf16: 181e12,
        fp16: 181e12,
        // The datasheet's figure with sparsity, halved.
        fp8: Some(724e12 / 2.0),
        memory_bytes_per_sec: 864e9,
        source: "NVIDIA L40 datasheet",
    },
    DatasheetPeak {
        name_contains: &["a40"],
        device: "A40",
        fp32: 37.4e12,
        tf32: 74.8e12,
        bf16: 149.7e12,
        fp16: 149.7e12,
        fp8: None,
        memory_bytes_per_sec: 696e9,
        source: "NVIDIA A40 datasheet",
    },
    DatasheetPeak {
        name_contains: &["l4"],
        device: "L4",
        fp32: 30.3e12,
        tf32: 60e12,
        bf16: 121e12,
        fp16: 121e12,
        // The datasheet's figure with sparsity, halved.
        fp8: Some(485e12 / 2.0),
        memory_bytes_per_sec: 300e9,
        source: "NVIDIA L4 datasheet",
    },
];

impl DatasheetPeak {
    pub fn flop_per_sec(&self, mode: MathMode) -> f64 {
        match mode {
            MathMode::Fp32 => self.fp32,
            MathMode::Tf32 => self.tf32,
            MathMode::Bf16 => self.bf16,
            MathMode::Fp16 => self.fp16,
        }
    }
}

/// The datasheet entry for a device name such as "NVIDIA H100 80GB HBM3".
pub fn datasheet_for(device_name: &str) -> Option<&'static DatasheetPeak> {
    let name = device_name.to_lowercase();
    DATASHEET
        .iter()
        .find(|p| p.name_contains.iter().all(|part| name.contains(part)))
}

/// Where a peak comes from; the trace writes it as "datasheet" or "measured".
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PeakKind {
    /// A GPU's figure from its vendor's datasheet (`DATASHEET`).
    Datasheet,
    /// Timed on this host (`cpu::measured_peak`).
    Measured,
}

/// The peak an MFU is computed against, and where it came from.
#[derive(Debug, Clone)]
pub struct Peak {
    pub flop_per_sec: f64,
    pub kind: PeakKind,
    /// One sentence: which datasheet, or how the measurement was made.
    pub how: String,
    /// For a measured peak: the loop that was timed (`cpu::fma_loops::PeakLoop::name`).
    pub peak_loop: Option<&'static str>,
}

impl Peak {
    /// A datasheet's figure is given; a measured peak is a clock's.
    pub fn value_kind(&self) -> crate::trace::Kind {
        match self.kind {
            PeakKind::Measured => crate::trace::Kind::Clock,
            PeakKind::Datasheet => crate::trace::Kind::Given,
        }
    }

    /// Model FLOP utilisation: achieved over the peak.
    pub fn mfu(&self, actual_flop_per_sec: f64) -> f64 {
        actual_flop_per_sec / self.flop_per_sec
    }
}

/// The peak of `device` for `mode`, or why there is none. GPUs are looked up in the
/// datasheet table by name (an unknown name gets no peak); the CPU's is measured on this host.
pub fn peak(device: &crate::device::Device, mode: MathMode) -> std::result::Result<Peak, String> {
    match device {
        crate::device::Device::Cpu => {
            let m = crate::device::cpu::measured_peak::measured(mode)?;
            Ok(Peak {
                flop_per_sec: m.flop_per_sec,
                kind: PeakKind::Measured,
                how: m.method,
                peak_loop: Some(m.peak_loop.name()),
            })
        }
        crate::device::Device::Cuda(c) => datasheet_peak(&c.props().name, mode),
    }
}

/// The datasheet peak for a GPU called `device_name`, or why there is none.
pub fn datasheet_peak(device_name: &str, mode: MathMode) -> std::result::Result<Peak, String> {
    let entry = datasheet_for(device_name).ok_or_else(|| {
        format!("\"{device_name}\" is not in the datasheet table (src/device/peaks.rs), so no MFU is computed")
    })?;
    Ok(Peak {
        flop_per_sec: entry.flop_per_sec(mode),
        kind: PeakKind::Datasheet,
        how: format!("{} dense {} peak, {}", entry.device, mode.name(), entry.source),
        peak_loop: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_the_most_specific_entry() {
        assert_eq!(datasheet_for("NVIDIA H100 PCIe").map(|p| p.device), Some("H100 PCIe"));
        assert_eq!(
            datasheet_for("NVIDIA H100 80GB HBM3").map(|p| p.device),
            Some("H100 SXM")
        );
        assert_eq!(datasheet_for("NVIDIA H200").map(|p| p.bf16), Some(989.5e12));
        assert!(datasheet_for("AMD EPYC 9R14").is_none());
        assert_eq!(datasheet_for("NVIDIA L40S").map(|p| p.device), Some("L40S"));
        assert_eq!(
            datasheet_for("NVIDIA B200").map(|p| (p.fp32, p.bf16)),
            Some((75e12, 2.25e15))
        );
        assert_eq!(datasheet_for("NVIDIA L40").map(|p| p.device), Some("L40"));
        assert_eq!(datasheet_for("NVIDIA L4").map(|p| p.device), Some("L4"));
        assert!(datasheet_peak("Mystery Accelerator 9000", MathMode::Bf16).is_err());
    }
}

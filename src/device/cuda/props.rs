//! What the device is: read once from the driver when the backend opens, and written into the
//! trace's provenance.

use cudarc::driver::{CudaContext, sys as drv};
use indexmap::IndexMap;
use serde_json::{Value, json};

use crate::error::Result;

#[derive(Debug, Clone, PartialEq)]
pub struct DeviceProps {
    pub ordinal: usize,
    pub name: String,
    pub total_memory: usize,
    pub compute_capability: (i32, i32),
    pub sm_count: u32,
    pub l2_cache_bytes: u64,
    pub memory_bus_width_bits: Option<i32>,
    /// The CUDA version the driver supports (cuDriverGetVersion), e.g. "13.0".
    pub cuda_driver_api: String,
    /// The kernel-mode driver's version as nvidia-smi shows it, when the OS exposes it.
    pub driver_version: Option<String>,
    pub nvrtc_version: String,
    pub cublas_version: Option<String>,
    /// The architecture the kernels were compiled for, e.g. "sm_90".
    pub arch: String,
}

impl DeviceProps {
    pub fn read(ctx: &CudaContext, arch: &str, cublas_version: Option<String>) -> Result<DeviceProps> {
        let attr = |a| {
            ctx.attribute(a)
                .map_err(|e| super::driver_error("reading a device attribute", e))
        };
        let mut version = 0;
        // SAFETY: one out-parameter; the driver is initialised (the context exists).
        unsafe { drv::cuDriverGetVersion(&mut version) }
            .result()
            .map_err(|e| super::driver_error("cuDriverGetVersion", e))?;
        let (nv_major, nv_minor) = super::kernels::nvrtc_version()?;
        Ok(DeviceProps {
            ordinal: ctx.ordinal(),
            name: ctx
                .name()
                .map_err(|e| super::driver_error("reading the device name", e))?,
            total_memory: ctx
                .total_mem()
                .map_err(|e| super::driver_error("reading the device memory size", e))?,
            compute_capability: ctx
                .compute_capability()
                .map_err(|e| super::driver_error("reading the compute capability", e))?,
            sm_count: attr(drv::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?.max(1) as u32,
            l2_cache_bytes: attr(drv::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?.max(0) as u64,
            memory_bus_width_bits: attr(drv::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH).ok(),
            cuda_driver_api: format!("{}.{}", version / 1000, (version % 1000) / 10),
            driver_version: kernel_driver_version(),
            nvrtc_version: format!("{nv_major}.{nv_minor}"),
            cublas_version,
            arch: arch.to_string(),
        })
    }

    /// File-name form of the device name: "NVIDIA H200" -> "nvidia-h200".
    pub fn slug(&self) -> String {
        slug(&self.name)
    }

    /// The trace's `provenance.device.details`.
    pub fn details(&self) -> IndexMap<String, Value> {
        let mut d = IndexMap::new();
        d.insert("ordinal".into(), json!(self.ordinal));
        d.insert(
            "compute_capability".into(),
            json!(format!("{}.{}", self.compute_capability.0, self.compute_capability.1)),
        );
        d.insert("sm_count".into(), json!(self.sm_count));
        d.insert("l2_cache_bytes".into(), json!(self.l2_cache_bytes));
        if let Some(w) = self.memory_bus_width_bits {
            d.insert("memory_bus_width_bits".into(), json!(w));
        }
        d.insert("driver_version".into(), json!(self.driver_version));
        d.insert("cuda_driver_api_version".into(), json!(self.cuda_driver_api));
        d.insert("nvrtc_version".into(), json!(self.nvrtc_version));
        d.insert("cublas_version".into(), json!(self.cublas_version));
        d.insert("kernel_arch".into(), json!(self.arch));
        d
    }
}
/// The device's name in file-name form (the one rule: `trace::name`).
pub fn slug(name: &str) -> String {
    crate::trace::name::gpu_trace_name(name)
}

/// "580.159.03" from /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX x86_64 Kernel Module
/// 580.159.03  ...").
fn kernel_driver_version() -> Option<String> {
    let text = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    parse_nvrm_version(&text)
}

fn parse_nvrm_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.starts_with("NVRM version"))?;
    line.split_whitespace()
        .find(|w| {
            w.split('.').count() >= 2
                && w.split('.')
                    .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        })
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_from_device_names() {
        assert_eq!(slug("NVIDIA H200"), "nvidia-h200");
        assert_eq!(slug("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
        assert_eq!(slug("  NVIDIA  A100-SXM4-40GB "), "nvidia-a100-sxm4-40gb");
        assert_eq!(slug("***"), "cuda");
    }

    #[test]
    fn driver_version_from_proc() {
        let text = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.03  Release Build  (dvs-builder@U16-I3-B05-2-1)  Thu Sep 18 2025\nGCC version:  gcc version 12.2.0\n";
        assert_eq!(parse_nvrm_version(text).as_deref(), Some("580.159.03"));
        assert_eq!(parse_nvrm_version("nothing"), None);
    }
}

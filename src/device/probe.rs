//! Deciding whether CUDA can be used, without panicking. cudarc's dynamic loader panics when a
//! library is missing, so each library is probed first; the answer (and why) goes into the trace.

/// Why the run is (or is not) on a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CudaStatus {
    /// Every library was found; the driver still has to report a device.
    LibrariesPresent,
    Unavailable(String),
}

/// Probes the driver, cuBLAS and NVRTC libraries, in that order.
pub fn probe_libraries() -> CudaStatus {
    // SAFETY: these only try to open a shared library by name and close it again.
    let checks: [(&str, bool); 3] = unsafe {
        [
            (
                "the CUDA driver library (libcuda.so; is an NVIDIA driver installed?)",
                cudarc::driver::sys::is_culib_present(),
            ),
            ("cuBLAS (libcublas.so.13)", cudarc::cublas::sys::is_culib_present()),
            ("NVRTC (libnvrtc.so.13)", cudarc::nvrtc::sys::is_culib_present()),
        ]
    };
    match checks.iter().find(|(_, present)| !present) {
        Some((what, _)) => CudaStatus::Unavailable(format!("{what} was not found")),
        None => CudaStatus::LibrariesPresent,
    }
}

/// Whether the NVRTC compiler alone is available (it needs no GPU: kernels can be compiled to PTX
/// on any machine that has the library).
pub fn nvrtc_present() -> bool {
    // SAFETY: as above.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

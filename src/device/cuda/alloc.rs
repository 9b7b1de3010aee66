//! Device memory: every allocation of the CUDA backend goes through [`Allocator::alloc`], which
//! counts the bytes asked for while the allocation lives. That count is what the lecture reads as
//! "memory allocated" (PyTorch's `torch.cuda.memory_allocated`); the driver's own free/total
//! figures sit beside it in [`super::CudaBackend::driver_memory`] and differ by allocation
//! granularity and by what the driver and libraries keep for themselves.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DevicePtr, DeviceRepr, sys as drv};
use half::{bf16, f16};

use crate::base::DType;
use crate::error::{Error, Result};

/// The attribute set on the device's stream-ordered memory pool, and its value: keep freed memory
/// in the pool instead of returning it to the driver at every synchronisation (cuMemAllocAsync's
/// pool has a release threshold of 0 by default). Without it a timed loop that allocates an
/// output per repetition and synchronises in between maps the output's pages again inside each
/// timed region: a 512 MiB output costs milliseconds, which the lecture would charge to the matmul.
pub fn pool_settings() -> (drv::CUmemPool_attribute, u64) {
    (drv::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, u64::MAX)
}

/// The device's current stream-ordered pool, or None when the context allocates synchronously
/// (cudarc then uses cuMemAlloc, which has no pool).
fn current_pool(ctx: &CudaContext) -> Result<Option<drv::CUmemoryPool>> {
    if !ctx.has_async_alloc() {
        return Ok(None);
    }
    let mut pool: drv::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: one out-parameter; the device handle comes from a live context.
    unsafe { drv::cuDeviceGetMemPool(&mut pool, ctx.cu_device()) }
        .result()
        .map_err(|e| super::driver_error("cuDeviceGetMemPool", e))?;
    Ok(Some(pool))
}

/// Applies [`pool_settings`] to the device's pool.
pub fn keep_freed_memory(ctx: &CudaContext) -> Result<()> {
    let Some(pool) = current_pool(ctx)? else { return Ok(()) };
    let (attribute, mut value) = pool_settings();
    // SAFETY: a live pool and a u64 value, the type this attribute takes.
    unsafe { drv::cuMemPoolSetAttribute(pool, attribute, (&mut value as *mut u64).cast()) }
        .result()
        .map_err(|e| super::driver_error("cuMemPoolSetAttribute", e))
}

/// Returns the pool's unused memory to the driver, so that the driver's free-memory figure counts
/// only what live allocations hold (call after a synchronise: frees are stream-ordered).
pub fn release_unused(ctx: &CudaContext) -> Result<()> {
    let Some(pool) = current_pool(ctx)? else { return Ok(()) };
    // SAFETY: a live pool.
    unsafe { drv::cuMemPoolTrimTo(pool, 0) }
        .result()
        .map_err(|e| super::driver_error("cuMemPoolTrimTo", e))
}

/// Live bytes, shared by every allocation of one backend, and their high-water mark.
#[derive(Debug, Default)]
pub struct Allocator {
    live: AtomicUsize,
    /// The most `live` has been since the last [`Allocator::reset_peak`]
    /// (`torch.cuda.max_memory_allocated`).
    peak: AtomicUsize,
}

/// A snapshot of the counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryStats {
    /// Bytes held by live allocations (exactly what was asked for; no rounding).
    pub allocated: usize,
    /// The most `allocated` has been since the last reset (or the backend's start).
    pub peak: usize,
}

impl Allocator {
    pub fn stats(&self) -> MemoryStats {
        MemoryStats {
            allocated: self.live.load(Ordering::SeqCst),
            peak: self.peak.load(Ordering::SeqCst),
        }
    }

    /// Starts a new high-water mark at what is live now (`torch.cuda.reset_peak_memory_stats`).
    pub fn reset_peak(&self) {
        self.peak.store(self.live.load(Ordering::SeqCst), Ordering::SeqCst);
    }

    fn add(&self, bytes: usize) {
        let now = self.live.fetch_add(bytes, Ordering::SeqCst) + bytes;
        self.peak.fetch_max(now, Ordering::SeqCst);
    }

    fn sub(&self, bytes: usize) {
        self.live.fetch_sub(bytes, Ordering::SeqCst);
    }

    /// `len` elements of `T`, uninitialised (every caller writes them all before reading).
    /// Out of memory is [`Error::CudaOutOfMemory`], naming the bytes asked for and the bytes free.
    pub fn alloc<T: DeviceRepr>(self: &Arc<Self>, stream: &Arc<CudaStream>, len: usize) -> Result<DeviceMem<T>> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .ok_or_else(|| Error::invalid("cuda alloc", format!("{len} elements overflow a byte count")))?;
        // The driver refuses zero-byte allocations; an empty tensor still gets a real (1-element)
        // allocation so that every buffer has a valid address, but counts 0 bytes.
        // SAFETY: uninitialised device memory; see the contract above.
        let slice = match unsafe { stream.alloc::<T>(len.max(1)) } {
            Ok(s) => s,
            Err(e) if e.0 == drv::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY => {
                let (free, total) = stream.context().mem_get_info().unwrap_or((0, 0));
                return Err(Error::CudaOutOfMemory {
                    requested: bytes,
                    free,
                    total,
                });
            }
            Err(e) => return Err(super::driver_error(&format!("allocating {bytes} bytes"), e)),
        };
        self.add(bytes);
        Ok(DeviceMem {
            slice,
            len,
            bytes,
            allocator: Arc::clone(self),
        })
    }
}

/// One counted device allocation of `len` elements of `T`. Dropping it frees the memory (on the
/// stream, after the work queued before) and takes its bytes off the count.
pub struct DeviceMem<T> {
    slice: CudaSlice<T>,
    len: usize,
    bytes: usize,
    allocator: Arc<Allocator>,
}

impl<T> DeviceMem<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The device address of element 0.
    pub fn device_ptr(&self) -> u64 {
        // Event tracking is off (one stream), so the guard records nothing.
        let (ptr, _guard) = self.slice.device_ptr(self.slice.stream());
        ptr
    }

    pub fn slice(&self) -> &CudaSlice<T> {
        &self.slice
    }

    pub fn slice_mut(&mut self) -> &mut CudaSlice<T> {
        &mut self.slice
    }
}

impl<T> Drop for DeviceMem<T> {
    fn drop(&mut self) {
        self.allocator.sub(self.bytes);
    }
}

impl<T> std::fmt::Debug for DeviceMem<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "DeviceMem({} elements, {} bytes at {:#x})",
            self.len,
            self.bytes,
            self.device_ptr()
        )
    }
}

/// Device memory for each dtype (the counterpart of `CpuBuffer`).
#[derive(Debug)]
pub enum CudaData {
    F32(DeviceMem<f32>),
    F16(DeviceMem<f16>),
    BF16(DeviceMem<bf16>),
    I32(DeviceMem<i32>),
    I64(DeviceMem<i64>),
}

/// Runs `$body` with `$m` bound to the typed `DeviceMem` inside a `CudaData`, whatever its dtype.
macro_rules! with_cuda_data {
    ($data:expr, $m:ident => $body:expr) => {
        match $data {
            $crate::device::cuda::CudaData::F32($m) => $body,
            $crate::device::cuda::CudaData::F16($m) => $body,
            $crate::device::cuda::CudaData::BF16($m) => $body,
            $crate::device::cuda::CudaData::I32($m) => $body,
            $crate::device::cuda::CudaData::I64($m) => $body,
        }
    };
}
pub(crate) use with_cuda_data;

/// A tensor's storage on the GPU: typed device memory and the backend that owns it.
pub struct CudaBuffer {
    pub(crate) data: CudaData,
    pub(crate) backend: Arc<super::CudaBackend>,
}

impl std::fmt::Debug for CudaBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaBuffer({}, {:?})", self.dtype(), self.data)
    }
}

impl CudaBuffer {
    pub fn dtype(&self) -> DType {
        match &self.data {
            CudaData::F32(_) => DType::F32,
            CudaData::F16(_) => DType::F16,
            CudaData::BF16(_) => DType::BF16,
            CudaData::I32(_) => DType::I32,
            CudaData::I64(_) => DType::I64,
        }
    }

    pub fn len(&self) -> usize {
        with_cuda_data!(&self.data, m => m.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn nbytes(&self) -> usize {
        with_cuda_data!(&self.data, m => m.bytes())
    }

    /// The device address of element 0.
    pub fn device_ptr(&self) -> u64 {
        with_cuda_data!(&self.data, m => m.device_ptr())
    }

    /// The address of element `index` (no bounds check: callers check layouts first).
    pub fn element_ptr(&self, index: usize) -> u64 {
        self.device_ptr() + (index * self.dtype().size_in_bytes()) as u64
    }

    pub fn backend(&self) -> &Arc<super::CudaBackend> {
        &self.backend
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mark follows the most ever live, and a reset starts it again at what is live now
    /// (counted without a GPU: the count is plain bookkeeping).
    #[test]
    fn the_high_water_mark_keeps_the_most_live() {
        let a = Allocator::default();
        a.add(100);
        a.add(50);
        a.sub(100);
        assert_eq!(
            a.stats(),
            MemoryStats {
                allocated: 50,
                peak: 150
            }
        );
        a.reset_peak();
        assert_eq!(a.stats().peak, 50);
        a.add(30);
        a.sub(30);
        assert_eq!(
            a.stats(),
            MemoryStats {
                allocated: 50,
                peak: 80
            }
        );
    }

    #[test]
    fn the_pool_keeps_every_freed_byte() {
        let (attribute, value) = pool_settings();
        assert_eq!(attribute, drv::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD);
        // A threshold above any device's memory: nothing goes back to the driver by itself.
        assert!(value >= 1 << 48, "{value}");
    }
}

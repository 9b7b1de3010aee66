//! Copies between host and device memory: whole views (`to_device`, pinned or not) and single
//! elements (`get`, `set`).

use std::sync::Arc;

use super::alloc::with_cuda_data;
use super::{CudaBackend, CudaBuffer, CudaData, DeviceMem, driver_error};
use crate::base::Element;
use crate::device::cpu::{BufferElement, CpuBuffer};
use crate::error::{Error, Result};

fn upload_typed<T: cudarc::driver::DeviceRepr>(b: &Arc<CudaBackend>, host: &[T]) -> Result<DeviceMem<T>> {
    let mut mem = b.alloc_raw::<T>(host.len())?;
    if !host.is_empty() {
        b.stream()
            .memcpy_htod(host, mem.slice_mut())
            .map_err(|e| driver_error("copying host to device", e))?;
    }
    Ok(mem)
}

/// Copies `host[range]` to a new device buffer.
pub fn upload(backend: &Arc<CudaBackend>, host: &CpuBuffer, range: std::ops::Range<usize>) -> Result<CudaBuffer> {
    let data = match host {
        CpuBuffer::F32(v) => CudaData::F32(upload_typed(backend, &v[range])?),
        CpuBuffer::F16(v) => CudaData::F16(upload_typed(backend, &v[range])?),
        CpuBuffer::BF16(v) => CudaData::BF16(upload_typed(backend, &v[range])?),
        CpuBuffer::I32(v) => CudaData::I32(upload_typed(backend, &v[range])?),
        CpuBuffer::I64(v) => CudaData::I64(upload_typed(backend, &v[range])?),
    };
    Ok(CudaBuffer {
        data,
        backend: Arc::clone(backend),
    })
}

fn download_typed<T: cudarc::driver::DeviceRepr + BufferElement>(
    b: &CudaBackend,
    mem: &DeviceMem<T>,
    range: std::ops::Range<usize>,
) -> Result<CpuBuffer> {
    let mut host = vec![T::zero(); range.len()];
    if !range.is_empty() {
        let view = mem.slice().slice(range);
        b.stream()
            .memcpy_dtoh(&view, &mut host)
            .map_err(|e| driver_error("copying device to host", e))?;
        // A copy into pageable memory may return before it lands; wait before the host reads.
        b.synchronize()?;
    }
    Ok(T::wrap(host))
}

/// Copies elements `range` of a device buffer to the host.
pub fn download(x: &CudaBuffer, range: std::ops::Range<usize>) -> Result<CpuBuffer> {
    if range.end > x.len() {
        return Err(Error::invalid(
            "to_device",
            format!("elements {range:?} of a {}-element buffer", x.len()),
        ));
    }
    let b = x.backend();
    with_cuda_data!(&x.data, m => download_typed(b, m, range))
}

/// One element, as f64.
pub fn get_f64(x: &CudaBuffer, index: usize) -> Result<f64> {
    let one = download(x, index..index + 1)?;
    one.get_f64(0)
        .ok_or_else(|| Error::invalid("get", format!("storage position {index} out of range")))
}

/// Writes one element (rounded into the buffer's dtype on the host, as the CPU backend does).
pub fn set_f64(x: &mut CudaBuffer, index: usize, value: f64) -> Result<()> {
    if index >= x.len() {
        return Err(Error::invalid("set", format!("storage position {index} out of range")));
    }
    fn put<T: cudarc::driver::DeviceRepr + Element>(
        b: &CudaBackend,
        mem: &mut DeviceMem<T>,
        index: usize,
        value: f64,
    ) -> Result<()> {
        let host = [T::from_f64(value)];
        let stream = std::sync::Arc::clone(b.stream());
        let mut view = mem.slice_mut().slice_mut(index..index + 1);
        stream
            .memcpy_htod(&host, &mut view)
            .map_err(|e| driver_error("copying host to device", e))?;
        // `host` lives on this stack frame: wait until the copy has read it.
        b.synchronize()
    }
    let b = Arc::clone(x.backend());
    with_cuda_data!(&mut x.data, m => put(&b, m, index, value))
}

/// Copies a contiguous host range to the device through a pinned (page-locked) staging buffer,
/// with an asynchronous copy: the path `DataLoader(pin_memory=True)` takes.
pub fn upload_pinned(
    backend: &Arc<CudaBackend>,
    host: &CpuBuffer,
    range: std::ops::Range<usize>,
) -> Result<CudaBuffer> {
    fn go<T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + Copy>(
        b: &Arc<CudaBackend>,
        host: &[T],
    ) -> Result<DeviceMem<T>> {
        let mut mem = b.alloc_raw::<T>(host.len())?;
        if host.is_empty() {
            return Ok(mem);
        }
        // SAFETY: filled completely below before any read.
        let mut pinned = unsafe { b.context().alloc_pinned_with_flags::<T>(host.len(), 0) }
            .map_err(|e| driver_error("allocating pinned host memory", e))?;
        pinned
            .as_mut_slice()
            .map_err(|e| driver_error("mapping pinned memory", e))?
            .copy_from_slice(host);
        b.stream()
            .memcpy_htod(&pinned, mem.slice_mut())
            .map_err(|e| driver_error("copying pinned host memory to the device", e))?;
        // The copy is asynchronous; the staging buffer is freed when this function returns, so
        // wait for the copy first (with event tracking off, cudarc's drop would not wait).
        b.synchronize()?;
        Ok(mem)
    }
    let data = match host {
        CpuBuffer::F32(v) => CudaData::F32(go(backend, &v[range])?),
        CpuBuffer::F16(v) => CudaData::F16(go(backend, &v[range])?),
        CpuBuffer::BF16(v) => CudaData::BF16(go(backend, &v[range])?),
        CpuBuffer::I32(v) => CudaData::I32(go(backend, &v[range])?),
        CpuBuffer::I64(v) => CudaData::I64(go(backend, &v[range])?),
    };
    Ok(CudaBuffer {
        data,
        backend: Arc::clone(backend),
    })
}

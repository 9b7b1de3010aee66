//! Storage: the flat buffer that views share, on the device that holds it. A `Tensor` is a
//! `Layout` over an `Arc<Storage>`; `same_storage` compares the `Arc`s, which is what "do these
//! share memory?" really means. Ops on a storage are routed to its backend in `backend.rs`.

use std::sync::Arc;

use parking_lot::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::base::DType;
use crate::device::Device;
use crate::device::cpu::CpuBuffer;
use crate::device::cpu::live::{self, Counted};
use crate::device::cuda::CudaBuffer;

/// Where a storage's bytes live.
#[derive(Debug)]
pub enum Buffer {
    Cpu(CpuBuffer),
    /// GPU memory, counted by the CUDA backend's allocator.
    Cuda(CudaBuffer),
}

impl Buffer {
    pub fn len(&self) -> usize {
        match self {
            Buffer::Cpu(b) => b.len(),
            Buffer::Cuda(b) => b.len(),
        }
    }

    pub fn dtype(&self) -> DType {
        match self {
            Buffer::Cpu(b) => b.dtype(),
            Buffer::Cuda(b) => b.dtype(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A shared, mutable buffer. Tensors that are views of each other hold the same `Arc<Storage>`,
/// so a write through one is visible through all of them.
#[derive(Debug)]
pub struct Storage {
    dtype: DType,
    device: Device,
    data: RwLock<Buffer>,
    /// A CPU buffer's bytes on the host's count of live tensor bytes, until this storage is
    /// dropped (a GPU buffer is counted by the CUDA allocator instead). Buffers never change size
    /// in place, so the bytes counted at the start stay right.
    _counted: Option<Counted>,
}

impl Storage {
    pub fn new(buffer: Buffer, device: Device) -> Arc<Storage> {
        let dtype = buffer.dtype();
        let counted = match &buffer {
            Buffer::Cpu(b) => Some(live::count(b.len() * dtype.size_in_bytes())),
            Buffer::Cuda(_) => None,
        };
        Arc::new(Storage {
            dtype,
            device,
            data: RwLock::new(buffer),
            _counted: counted,
        })
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Recursive reads: an op may read the same storage twice (`x + x`).
    pub fn read(&self) -> RwLockReadGuard<'_, Buffer> {
        self.data.read_recursive()
    }

    pub fn write(&self) -> RwLockWriteGuard<'_, Buffer> {
        self.data.write()
    }

    pub fn len(&self) -> usize {
        self.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn nbytes(&self) -> usize {
        self.len() * self.dtype.size_in_bytes()
    }
}

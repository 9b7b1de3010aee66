//! Tensors: a shared storage plus a layout (shape, strides, offset). Everything the first half of
//! the lecture says about memory follows from this split: views are free, copies are not.
//!
//! Dtypes, layouts and the ops themselves are declared below this layer (`base`); every op that
//! touches data is routed from here to the backend that holds it (`backend.rs`).

mod backend;
mod create;
pub mod einops;
mod grad_ops;
mod inplace;
mod matmul;
pub mod named;
mod ops;
mod reduce;
pub mod storage;
mod view;

use std::sync::Arc;

// What a tensor user needs from the layers below, under the names the lecture uses.
pub use crate::base::dtype::{DType, Element};
pub use crate::base::formats;
pub use crate::base::nvfp4;
pub use crate::base::{BinaryOp, Layout, ReduceOp, UnaryOp};
pub use crate::device::cpu::{BufferElement, CpuBuffer};
pub use inplace::{ADAGRAD_FLOPS_PER_ELEMENT, SGD_FLOPS_PER_ELEMENT};
pub use storage::{Buffer, Storage};

use crate::base::dtype::convert;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::with_cpu_buffer;

#[derive(Clone)]
pub struct Tensor {
    storage: Arc<Storage>,
    layout: Layout,
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Tensor(shape={:?}, dtype={}, device={}",
            self.shape(),
            self.dtype(),
            self.device()
        )?;
        if self.numel() <= 16
            && self.device().is_cpu()
            && let Ok(v) = self.to_vec_f64()
        {
            write!(f, ", data={v:?}")?;
        }
        f.write_str(")")
    }
}

impl Tensor {
    /// Wraps a buffer laid out contiguously in `shape`.
    pub(crate) fn from_buffer(buffer: Buffer, shape: &[usize], device: Device) -> Result<Tensor> {
        let numel: usize = shape.iter().product();
        if buffer.len() != numel {
            return Err(Error::invalid(
                "tensor",
                format!("{} elements given for shape {shape:?} ({numel} needed)", buffer.len()),
            ));
        }
        Ok(Tensor {
            storage: Storage::new(buffer, device),
            layout: Layout::contiguous(shape),
        })
    }

    pub(crate) fn from_cpu(buffer: CpuBuffer, shape: &[usize]) -> Result<Tensor> {
        Tensor::from_buffer(Buffer::Cpu(buffer), shape, Device::Cpu)
    }

    /// A fresh result of an op on this tensor: on its device, contiguous in `shape`.
    pub(crate) fn fresh(&self, buffer: Buffer, shape: &[usize]) -> Result<Tensor> {
        Tensor::from_buffer(buffer, shape, self.device().clone())
    }

    /// A view: same storage, new layout.
    pub(crate) fn with_layout(&self, layout: Layout) -> Tensor {
        Tensor {
            storage: Arc::clone(&self.storage),
            layout,
        }
    }

    pub fn storage(&self) -> &Arc<Storage> {
        &self.storage
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn shape(&self) -> &[usize] {
        &self.layout.shape
    }

    pub fn strides(&self) -> &[usize] {
        &self.layout.strides
    }

    /// Position of the first element in storage.
    pub fn storage_offset(&self) -> usize {
        self.layout.offset
    }

    pub fn dim(&self, d: usize) -> Result<usize> {
        self.shape().get(d).copied().ok_or_else(|| {
            Error::invalid(
                "dim",
                format!("dimension {d} out of range for shape {:?}", self.shape()),
            )
        })
    }

    pub fn ndim(&self) -> usize {
        self.layout.ndim()
    }

    pub fn numel(&self) -> usize {
        self.layout.numel()
    }

    pub fn dtype(&self) -> DType {
        self.storage.dtype()
    }

    pub fn device(&self) -> &Device {
        self.storage.device()
    }

    /// Bytes per element.
    pub fn element_size(&self) -> usize {
        self.dtype().size_in_bytes()
    }

    /// Bytes of the elements this tensor shows (numel × element size).
    pub fn nbytes(&self) -> usize {
        self.numel() * self.element_size()
    }

    pub fn is_contiguous(&self) -> bool {
        self.layout.is_contiguous()
    }

    /// Do two tensors share one storage? Compared by identity, not by contents.
    pub fn same_storage(a: &Tensor, b: &Tensor) -> bool {
        Arc::ptr_eq(&a.storage, &b.storage)
    }

    /// Names the storage: equal for two tensors exactly when `same_storage` holds, so a set of
    /// them finds a storage seen before in constant time (a graph lists thousands of tensors).
    pub(crate) fn storage_id(&self) -> usize {
        Arc::as_ptr(&self.storage).cast::<()>() as usize
    }

    /// All elements in row-major order, converted to `T` (rounding where `T` is narrower;
    /// integer to integer exactly, wrapping when narrowing, as `to_dtype` does).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        // Generic over the stored type, not through f64: f64 rounds i64 values above 2^53.
        fn go<S: Element, T: Element>(v: &[S], layout: &Layout) -> Vec<T> {
            match layout.contiguous_range() {
                Some(range) => v[range].iter().map(|&x| convert(x)).collect(),
                None => layout.storage_indices().map(|i| convert(v[i])).collect(),
            }
        }
        let cpu = self.to_device(&Device::Cpu)?;
        let guard = cpu.storage.read();
        let Buffer::Cpu(buf) = &*guard else {
            return Err(Error::invalid(
                "to_vec",
                "the copy to the CPU did not land in host memory",
            ));
        };
        Ok(with_cpu_buffer!(buf, v => go(v, &cpu.layout)))
    }

    pub fn to_vec_f64(&self) -> Result<Vec<f64>> {
        self.map_elements(|x| x)
    }

    fn map_elements<R>(&self, f: impl Fn(f64) -> R) -> Result<Vec<R>> {
        let cpu = self.to_device(&Device::Cpu)?;
        let guard = cpu.storage.read();
        let Buffer::Cpu(buf) = &*guard else {
            return Err(Error::invalid(
                "to_vec",
                "the copy to the CPU did not land in host memory",
            ));
        };
        Ok(with_cpu_buffer!(buf, v => {
            if let Some(range) = cpu.layout.contiguous_range() {
                v[range].iter().map(|x| f(x.to_f64())).collect()
            } else {
                cpu.layout.storage_indices().map(|i| f(v[i].to_f64())).collect()
            }
        }))
    }

    /// The single value of a one-element tensor.
    pub fn item(&self) -> Result<f64> {
        if self.numel() != 1 {
            return Err(Error::invalid(
                "item",
                format!(
                    "tensor with shape {:?} has {} elements, not 1",
                    self.shape(),
                    self.numel()
                ),
            ));
        }
        Ok(self.to_vec_f64()?[0])
    }

    /// One element by its index.
    pub fn get(&self, index: &[usize]) -> Result<f64> {
        self.storage.get_f64(self.layout.storage_index(index)?)
    }

    /// Writes one element in place; every view of the same storage sees it.
    pub fn set(&self, index: &[usize], value: f64) -> Result<()> {
        self.storage.set_f64(self.layout.storage_index(index)?, value)
    }

    /// One element as the trace keeps it: an integer dtype's as an integer.
    fn json_leaf(&self) -> impl Fn(f64) -> serde_json::Value {
        let is_int = !self.dtype().is_float();
        move |x: f64| {
            if is_int {
                serde_json::Value::from(x as i64)
            } else {
                crate::json::json_number(x)
            }
        }
    }

    /// The first and last few elements along each dimension, and statistics over all of them
    /// (`crate::trace::summary`): how the trace keeps a tensor too large to list.
    pub fn to_json_summary(&self) -> Result<serde_json::Value> {
        let flat = self.to_vec_f64()?;
        Ok(crate::trace::summary::summarise(self.shape(), &flat, &self.json_leaf()))
    }

    /// The values as nested JSON arrays (row-major), for recording small tensors in the trace.
    pub fn to_json(&self) -> Result<serde_json::Value> {
        let flat = self.to_vec_f64()?;
        let leaf = self.json_leaf();
        fn nest(shape: &[usize], flat: &[f64], leaf: &dyn Fn(f64) -> serde_json::Value) -> serde_json::Value {
            match shape.split_first() {
                None => leaf(flat[0]),
                Some((&n, rest)) => {
                    let chunk: usize = rest.iter().product();
                    serde_json::Value::Array(
                        (0..n)
                            .map(|i| nest(rest, &flat[i * chunk..(i + 1) * chunk], leaf))
                            .collect(),
                    )
                }
            }
        }
        Ok(nest(self.shape(), &flat, &leaf))
    }
}

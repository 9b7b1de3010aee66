//! Host memory: the CPU backend's buffer, one typed vector per dtype.

use half::{bf16, f16};

use crate::base::{DType, Element};
use crate::error::{Error, Result};
use crate::host;

/// Allocations from this size on are checked against the memory the OS has left: below it the
/// check would cost more than the allocation (reading `/proc/meminfo` takes microseconds, and small
/// tensors are made in loops), and a failure is not plausible.
const CHECKED_FROM_BYTES: u128 = 64 << 20;

/// Refuses, before anything is allocated, `len` elements of `dtype` that host memory cannot hold.
/// Rust aborts the process when an allocation fails, and Linux may grant a too-large one and kill
/// the process later when its pages are touched; sizes come from the user (`bench train-step
/// --dim 1000000`, a broadcast of two long vectors), so they are checked here instead.
pub fn check_room(op: &'static str, dtype: DType, len: usize) -> Result<()> {
    check_bytes(op, len as u128 * dtype.size_in_bytes() as u128)
}

/// [`check_room`] for a total estimated in bytes (what a whole run will hold at once).
pub fn check_bytes(op: &'static str, bytes: u128) -> Result<()> {
    if bytes < CHECKED_FROM_BYTES {
        return Ok(());
    }
    let available = host::available_memory_bytes();
    let limit = available.map_or(isize::MAX as u128, u128::from);
    if bytes > limit {
        return Err(Error::host_memory(op, bytes, available));
    }
    if let Some(left) = host::address_space_left_bytes()
        && bytes > u128::from(left)
    {
        return Err(Error::invalid(
            op,
            format!(
                "needs {bytes} bytes ({:.3} GiB) of host memory, but this process's address-space limit (`ulimit -v`, \
                 RLIMIT_AS) leaves it only {left} bytes ({:.3} GiB): use smaller sizes, or raise the limit",
                bytes as f64 / f64::from(1u32 << 30),
                left as f64 / f64::from(1u32 << 30)
            ),
        ));
    }
    Ok(())
}

/// Host memory for each dtype.
#[derive(Debug, Clone)]
pub enum CpuBuffer {
    F32(Vec<f32>),
    F16(Vec<f16>),
    BF16(Vec<bf16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
}

/// Runs `$body` with `$v` bound to the typed vector inside a `CpuBuffer`, whatever its dtype.
#[macro_export]
#[doc(hidden)]
macro_rules! with_cpu_buffer {
    ($buf:expr, $v:ident => $body:expr) => {
        match $buf {
            $crate::device::cpu::CpuBuffer::F32($v) => $body,
            $crate::device::cpu::CpuBuffer::F16($v) => $body,
            $crate::device::cpu::CpuBuffer::BF16($v) => $body,
            $crate::device::cpu::CpuBuffer::I32($v) => $body,
            $crate::device::cpu::CpuBuffer::I64($v) => $body,
        }
    };
}

impl CpuBuffer {
    pub fn dtype(&self) -> DType {
        match self {
            CpuBuffer::F32(_) => DType::F32,
            CpuBuffer::F16(_) => DType::F16,
            CpuBuffer::BF16(_) => DType::BF16,
            CpuBuffer::I32(_) => DType::I32,
            CpuBuffer::I64(_) => DType::I64,
        }
    }

    pub fn len(&self) -> usize {
        with_cpu_buffer!(self, v => v.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A zero-filled buffer. Rust never hands out uninitialised memory, so this is also what
    /// `empty` gets (large zeroed allocations come from the OS as untouched pages, so the cost is
    /// paid lazily, much like an uninitialised allocation). Refused, with nothing allocated, when
    /// host memory cannot hold it ([`check_room`]).
    pub fn zeros(dtype: DType, len: usize) -> Result<CpuBuffer> {
        check_room("zeros", dtype, len)?;
        Ok(match dtype {
            DType::F32 => CpuBuffer::F32(vec![0.0; len]),
            DType::F16 => CpuBuffer::F16(vec![f16::ZERO; len]),
            DType::BF16 => CpuBuffer::BF16(vec![bf16::ZERO; len]),
            DType::I32 => CpuBuffer::I32(vec![0; len]),
            DType::I64 => CpuBuffer::I64(vec![0; len]),
        })
    }

    /// `len` copies of `value`, rounded into `dtype` once: a fill, where [`CpuBuffer::from_f64`]
    /// would convert every element (22 ns each for bf16, 1.5 s for a 64M-element input).
    pub fn full(dtype: DType, len: usize, value: f64) -> Result<CpuBuffer> {
        fn fill<T: Element>(len: usize, value: f64) -> Result<Vec<T>> {
            let mut out = Vec::new();
            out.try_reserve_exact(len).map_err(|_| {
                Error::host_memory(
                    "tensor",
                    len as u128 * std::mem::size_of::<T>() as u128,
                    host::available_memory_bytes(),
                )
            })?;
            out.resize(len, T::from_f64(value));
            Ok(out)
        }
        check_room("tensor", dtype, len)?;
        Ok(match dtype {
            DType::F32 => CpuBuffer::F32(fill(len, value)?),
            DType::F16 => CpuBuffer::F16(fill(len, value)?),
            DType::BF16 => CpuBuffer::BF16(fill(len, value)?),
            DType::I32 => CpuBuffer::I32(fill(len, value)?),
            DType::I64 => CpuBuffer::I64(fill(len, value)?),
        })
    }

    /// Converts f64 values into a buffer of `dtype`, rounding to nearest even. Refused, with
    /// nothing allocated, when host memory cannot hold them; the allocation itself is fallible too.
    pub fn from_f64(dtype: DType, values: impl ExactSizeIterator<Item = f64>) -> Result<CpuBuffer> {
        fn conv<T: Element>(values: impl ExactSizeIterator<Item = f64>) -> Result<Vec<T>> {
            let mut out = Vec::new();
            out.try_reserve_exact(values.len()).map_err(|_| {
                Error::host_memory(
                    "tensor",
                    values.len() as u128 * std::mem::size_of::<T>() as u128,
                    host::available_memory_bytes(),
                )
            })?;
            out.extend(values.map(T::from_f64));
            Ok(out)
        }
        check_room("tensor", dtype, values.len())?;
        Ok(match dtype {
            DType::F32 => CpuBuffer::F32(conv(values)?),
            DType::F16 => CpuBuffer::F16(conv(values)?),
            DType::BF16 => CpuBuffer::BF16(conv(values)?),
            DType::I32 => CpuBuffer::I32(conv(values)?),
            DType::I64 => CpuBuffer::I64(conv(values)?),
        })
    }

    pub fn get_f64(&self, index: usize) -> Option<f64> {
        with_cpu_buffer!(self, v => v.get(index).map(|x| x.to_f64()))
    }

    /// Writes one element, rounding `value` into the buffer's dtype.
    pub fn set_f64(&mut self, index: usize, value: f64) -> bool {
        with_cpu_buffer!(self, v => match v.get_mut(index) {
            Some(slot) => {
                *slot = Element::from_f64(value);
                true
            }
            None => false,
        })
    }
}

/// Lets generic code get at the typed vector of a buffer.
pub trait BufferElement: Element {
    fn wrap(v: Vec<Self>) -> CpuBuffer;
    fn slice(buf: &CpuBuffer) -> Option<&[Self]>;
    fn slice_mut(buf: &mut CpuBuffer) -> Option<&mut [Self]>;
}

macro_rules! buffer_element {
    ($t:ty, $variant:ident) => {
        impl BufferElement for $t {
            fn wrap(v: Vec<Self>) -> CpuBuffer {
                CpuBuffer::$variant(v)
            }
            fn slice(buf: &CpuBuffer) -> Option<&[Self]> {
                match buf {
                    CpuBuffer::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn slice_mut(buf: &mut CpuBuffer) -> Option<&mut [Self]> {
                match buf {
                    CpuBuffer::$variant(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}
buffer_element!(f32, F32);
buffer_element!(f16, F16);
buffer_element!(bf16, BF16);
buffer_element!(i32, I32);
buffer_element!(i64, I64);

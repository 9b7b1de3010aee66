//! Creating tensors: from nested data, filled (`zeros`, `ones`, `full`, `arange`, `empty`), and
//! random (`randn`, `rand`, `trunc_normal`), always from an explicit seeded `Rng`.

use super::{CpuBuffer, DType, Tensor, backend};
use crate::device::Device;
use crate::device::cuda::CudaDevice;
use crate::device::cuda::ops::Distribution;
use crate::error::{Error, Result};
use crate::rng::Rng;

/// Nested Rust data that can become a tensor: numbers, arrays, slices and vectors of them.
pub trait NestedData {
    fn nested_shape(&self) -> Result<Vec<usize>>;
    fn flatten_into(&self, out: &mut Vec<f64>);
}

macro_rules! scalar_data {
    ($($t:ty),*) => {$(
        impl NestedData for $t {
            fn nested_shape(&self) -> Result<Vec<usize>> {
                Ok(Vec::new())
            }
            fn flatten_into(&self, out: &mut Vec<f64>) {
                out.push(*self as f64);
            }
        }
    )*};
}
scalar_data!(f64, f32, i32, i64, u32, usize);

/// The number of elements of `shape`, refused when it does not fit a `usize` (a plain product
/// would wrap around in a release build and allocate a tensor of the wrong size).
pub(crate) fn numel(op: &'static str, shape: &[usize]) -> Result<usize> {
    shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| Error::invalid(op, format!("shape {shape:?} has more elements than memory can address")))
}

fn sequence_shape<T: NestedData>(items: &[T]) -> Result<Vec<usize>> {
    let mut shape = vec![items.len()];
    if let Some(first) = items.first() {
        let inner = first.nested_shape()?;
        for (i, item) in items.iter().enumerate().skip(1) {
            let s = item.nested_shape()?;
            if s != inner {
                return Err(Error::invalid(
                    "tensor",
                    format!("ragged data: element 0 has shape {inner:?} but element {i} has shape {s:?}"),
                ));
            }
        }
        shape.extend(inner);
    }
    Ok(shape)
}

impl<T: NestedData> NestedData for [T] {
    fn nested_shape(&self) -> Result<Vec<usize>> {
        sequence_shape(self)
    }
    fn flatten_into(&self, out: &mut Vec<f64>) {
        self.iter().for_each(|x| x.flatten_into(out));
    }
}

impl<T: NestedData, const N: usize> NestedData for [T; N] {
    fn nested_shape(&self) -> Result<Vec<usize>> {
        sequence_shape(self.as_slice())
    }
    fn flatten_into(&self, out: &mut Vec<f64>) {
        self.as_slice().flatten_into(out)
    }
}

impl<T: NestedData> NestedData for Vec<T> {
    fn nested_shape(&self) -> Result<Vec<usize>> {
        sequence_shape(self.as_slice())
    }
    fn flatten_into(&self, out: &mut Vec<f64>) {
        self.as_slice().flatten_into(out)
    }
}

impl Tensor {
    /// `torch.tensor(data, dtype=…)`: values are rounded into `dtype` (nearest even).
    pub fn from_data<D: NestedData + ?Sized>(data: &D, dtype: DType) -> Result<Tensor> {
        let shape = data.nested_shape()?;
        let mut flat = Vec::with_capacity(shape.iter().product());
        data.flatten_into(&mut flat);
        Tensor::from_f64_vec(&flat, &shape, dtype)
    }

    pub fn from_f64_vec(values: &[f64], shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::from_cpu(CpuBuffer::from_f64(dtype, values.iter().copied())?, shape)
    }

    /// Takes ownership of a typed vector without conversion.
    pub fn from_vec<T: super::BufferElement>(values: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        Tensor::from_cpu(T::wrap(values), shape)
    }

    /// Made directly on `device` (on a GPU by a fill kernel: nothing is copied from the host).
    pub fn full_on(shape: &[usize], value: f64, dtype: DType, device: &Device) -> Result<Tensor> {
        let n = numel("full", shape)?;
        Tensor::from_buffer(backend::full(device, dtype, n, value)?, shape, device.clone())
    }

    pub fn full(shape: &[usize], value: f64, dtype: DType) -> Result<Tensor> {
        Tensor::full_on(shape, value, dtype, &Device::Cpu)
    }

    pub fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::full(shape, 0.0, dtype)
    }

    pub fn zeros_on(shape: &[usize], dtype: DType, device: &Device) -> Result<Tensor> {
        Tensor::full_on(shape, 0.0, dtype, device)
    }

    pub fn ones(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::full(shape, 1.0, dtype)
    }

    /// `torch.empty`: memory is allocated but its contents are not meant to be read. Rust does
    /// not hand out uninitialised memory, so here the contents are zeros.
    pub fn empty(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::zeros(shape, dtype)
    }

    /// 0, 1, …, n−1.
    pub fn arange(n: usize, dtype: DType) -> Result<Tensor> {
        Tensor::from_cpu(CpuBuffer::from_f64(dtype, (0..n).map(|i| i as f64))?, &[n])
    }

    /// Samples from N(0, 1), rounded into `dtype`.
    pub fn randn(shape: &[usize], dtype: DType, rng: &mut Rng) -> Result<Tensor> {
        let n = numel("randn", shape)?;
        Tensor::from_cpu(CpuBuffer::from_f64(dtype, (0..n).map(|_| rng.normal()))?, shape)
    }

    /// `randn` made on `device`. On the CPU it is `randn`; on a GPU the samples are drawn on the
    /// device from a seed taken from `rng` (large GPU tensors would take seconds to draw on the
    /// host), so they differ from the CPU's samples but follow the same distribution and are
    /// reproducible from the same `rng` state.
    pub fn randn_on(shape: &[usize], dtype: DType, device: &Device, rng: &mut Rng) -> Result<Tensor> {
        match device {
            Device::Cpu => Tensor::randn(shape, dtype, rng),
            Device::Cuda(gpu) => Tensor::drawn_on(gpu, Distribution::Normal, shape, dtype, rng.next_u64()),
        }
    }

    /// `rand` made on `device` (see `randn_on`).
    pub fn rand_on(shape: &[usize], dtype: DType, device: &Device, rng: &mut Rng) -> Result<Tensor> {
        match device {
            Device::Cpu => Tensor::rand(shape, dtype, rng),
            Device::Cuda(gpu) => Tensor::drawn_on(gpu, Distribution::Uniform, shape, dtype, rng.next_u64()),
        }
    }

    fn drawn_on(gpu: &CudaDevice, dist: Distribution, shape: &[usize], dtype: DType, seed: u64) -> Result<Tensor> {
        let n = numel("random", shape)?;
        let buffer = backend::random_on_gpu(gpu, dist, dtype, n, seed)?;
        Tensor::from_buffer(buffer, shape, Device::Cuda(gpu.clone()))
    }

    /// Samples uniformly from [0, 1).
    pub fn rand(shape: &[usize], dtype: DType, rng: &mut Rng) -> Result<Tensor> {
        let n = numel("rand", shape)?;
        Tensor::from_cpu(CpuBuffer::from_f64(dtype, (0..n).map(|_| rng.uniform()))?, shape)
    }

    /// N(mean, std²) restricted to [a, b] by redrawing samples that fall outside, like
    /// `torch.nn.init.trunc_normal_`. `a` and `b` are absolute bounds, not multiples of `std`.
    pub fn trunc_normal(
        shape: &[usize],
        mean: f64,
        std: f64,
        a: f64,
        b: f64,
        dtype: DType,
        rng: &mut Rng,
    ) -> Result<Tensor> {
        // A NaN or infinite mean or std passed the old checks and then never produced a sample
        // inside [a, b]: the loop below spun forever. They are refused here.
        let finite = mean.is_finite() && std.is_finite();
        let ordered = a < b; // false for NaN bounds too
        if !finite || std <= 0.0 || !ordered || mean + 8.0 * std < a || mean - 8.0 * std > b {
            return Err(Error::invalid(
                "trunc_normal",
                format!(
                    "need finite mean, finite std > 0 and a < b with [a, b] overlapping the distribution; got mean {mean}, std {std}, a {a}, b {b}"
                ),
            ));
        }
        let n = numel("trunc_normal", shape)?;
        // The samples are drawn as f64 first.
        crate::device::cpu::check_room("trunc_normal", DType::I64, n)?;
        let mut values = Vec::with_capacity(n);
        let mut draws: u64 = 0;
        // A sample is kept when the value the tensor will store lies in [a, b]: rounded to a
        // float32 (or narrower) a sample just inside a bound can land just outside it (at 24
        // million inputs, 3σ rounded up by half a float32 step, and the section's check that no
        // weight passes 3σ failed).
        let stored = |x: f64| {
            dtype
                .float_format()
                .map_or(x, |f| crate::base::formats::round_to_format(x, f))
        };
        while values.len() < n {
            let x = mean + std * rng.normal();
            draws += 1;
            if (a..=b).contains(&stored(x)) {
                values.push(x);
            } else if draws >= 100_000 && (values.len() as u64) * 1000 < draws {
                // An interval far in one tail (say [7σ, 8σ], probability ~1e-12) passes the check
                // above but would take forever to fill: give up once under 0.1% of draws land.
                return Err(Error::invalid(
                    "trunc_normal",
                    format!(
                        "[{a}, {b}] holds less than 0.1% of N({mean}, {std}²): {} of {draws} draws fell inside",
                        values.len()
                    ),
                ));
            }
        }
        Tensor::from_f64_vec(&values, shape, dtype)
    }
}

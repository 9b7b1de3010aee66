//! Kernel launches as plain data. Every op first builds a [`Launch`] (kernel name, arguments, grid)
//! from layouts and device addresses; only then is it run. Planning needs no GPU, so tests on a
//! CPU-only machine check every plan against the parameter lists NVRTC compiled
//! (`tests/tensor/kernels_compile.rs`), and [`super::CudaBackend::launch`] checks each launch against
//! them again before it reaches the driver: a kernel that is missing or called with the wrong
//! arguments is an error, never garbage.

use cudarc::driver::DeviceRepr;

use super::kernels::ParamSpec;
use crate::base::layout::collapse;
use crate::base::{DType, Layout};
use crate::error::{Error, Result};

/// Dimensions a kernel's strided view can have (MAX_DIMS in kernels/common.cuh).
pub const MAX_DIMS: usize = 8;

/// kernels/common.cuh's `Strided`, passed by value.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StridedArg {
    pub shape: [i64; MAX_DIMS],
    pub strides: [i64; MAX_DIMS],
    pub offset: i64,
    pub ndim: i32,
    pub contiguous: i32,
}

// SAFETY: a plain #[repr(C)] struct of integers with the same layout as the C struct.
unsafe impl DeviceRepr for StridedArg {}

/// One kernel argument.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arg {
    /// A device address.
    Ptr(u64),
    I64(i64),
    U64(u64),
    U32(u32),
    F32(f32),
    Strided(StridedArg),
}

impl Arg {
    /// Size and alignment as the kernel's parameter list must declare them.
    pub fn spec(&self) -> ParamSpec {
        match self {
            Arg::Ptr(_) | Arg::I64(_) | Arg::U64(_) => ParamSpec {
                size: 8,
                align: 8,
                float: false,
            },
            Arg::U32(_) => ParamSpec {
                size: 4,
                align: 4,
                float: false,
            },
            Arg::F32(_) => ParamSpec {
                size: 4,
                align: 4,
                float: true,
            },
            Arg::Strided(_) => ParamSpec {
                size: std::mem::size_of::<StridedArg>(),
                align: std::mem::align_of::<StridedArg>(),
                float: false,
            },
        }
    }
}

/// A kernel launch, ready to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    pub kernel: String,
    pub args: Vec<Arg>,
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
}

impl Launch {
    /// Compares the arguments with the kernel's parameter list (from its PTX).
    pub fn check_against(&self, params: &[ParamSpec]) -> Result<()> {
        let given: Vec<ParamSpec> = self.args.iter().map(Arg::spec).collect();
        if given != params {
            return Err(Error::Cuda(format!(
                "kernel {}: called with arguments {given:?}, but it takes {params:?}",
                self.kernel
            )));
        }
        if self.grid.0 == 0 || self.grid.1 == 0 || self.grid.2 == 0 || self.block.0 == 0 {
            return Err(Error::Cuda(format!(
                "kernel {}: empty launch {:?} x {:?}",
                self.kernel, self.grid, self.block
            )));
        }
        Ok(())
    }
}

/// The suffix kernels use for a dtype (`add_f32`, `add_bf16`, …).
pub fn dtype_suffix(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "f32",
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        DType::I32 => "i32",
        DType::I64 => "i64",
    }
}

/// Threads per block for the elementwise kernels.
pub const THREADS: u32 = 256;

/// A 1-D grid for `work` independent items with grid-stride loops: enough blocks to fill every
/// multiprocessor several times over, never more than there is work for.
pub fn grid_for(work: usize, sm_count: u32) -> (u32, u32, u32) {
    let wanted = work.div_ceil(THREADS as usize).max(1);
    let cap = (sm_count.max(1) as usize) * 32;
    (wanted.min(cap) as u32, 1, 1)
}

fn to_i64(op: &'static str, v: usize) -> Result<i64> {
    i64::try_from(v).map_err(|_| Error::invalid(op, format!("{v} does not fit a 64-bit signed index")))
}

/// The `Strided` argument for a (collapsed) view.
fn strided(op: &'static str, shape: &[usize], strides: &[usize], offset: usize) -> Result<StridedArg> {
    if shape.len() > MAX_DIMS {
        return Err(Error::invalid(
            op,
            format!(
                "the CUDA kernels take views of at most {MAX_DIMS} dimensions that cannot be merged; this one has shape {shape:?} and strides {strides:?} (make it contiguous on the CPU first)"
            ),
        ));
    }
    let mut arg = StridedArg {
        shape: [1; MAX_DIMS],
        strides: [0; MAX_DIMS],
        offset: to_i64(op, offset)?,
        ndim: shape.len() as i32,
        contiguous: 0,
    };
    for (d, (&n, &s)) in shape.iter().zip(strides).enumerate() {
        arg.shape[d] = to_i64(op, n)?;
        arg.strides[d] = to_i64(op, s)?;
    }
    arg.contiguous = i32::from(
        Layout {
            shape: shape.to_vec(),
            strides: strides.to_vec(),
            offset,
        }
        .is_contiguous(),
    );
    Ok(arg)
}

/// The `Strided` arguments of several views of one shape, collapsed together.
pub fn strided_many(op: &'static str, layouts: &[&Layout]) -> Result<Vec<StridedArg>> {
    let shape = &layouts[0].shape;
    if layouts.iter().any(|l| &l.shape != shape) {
        return Err(Error::invalid(
            op,
            "views of different shapes cannot share one index walk",
        ));
    }
    let strides: Vec<&[usize]> = layouts.iter().map(|l| l.strides.as_slice()).collect();
    let (cshape, cstrides) = collapse(shape, &strides);
    layouts
        .iter()
        .zip(&cstrides)
        .map(|(l, s)| strided(op, &cshape, s, l.offset))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_args_mark_contiguity_and_refuse_too_many_dimensions() {
        let a = strided("t", &[6], &[1], 3).expect("fits");
        assert_eq!(
            (a.ndim, a.contiguous, a.offset, a.shape[0], a.shape[1]),
            (1, 1, 3, 6, 1)
        );
        let b = strided("t", &[3, 2], &[1, 3], 0).expect("fits");
        assert_eq!(b.contiguous, 0);
        let scalar = strided("t", &[], &[], 7).expect("fits");
        assert_eq!((scalar.ndim, scalar.contiguous), (0, 1));
        assert!(strided("t", &[2; 9], &[1; 9], 0).is_err());
        assert_eq!(std::mem::size_of::<StridedArg>(), 144);
    }

    #[test]
    fn grids_fill_the_chip_without_exceeding_the_work() {
        assert_eq!(grid_for(10, 132), (1, 1, 1));
        assert_eq!(grid_for(0, 132), (1, 1, 1));
        assert_eq!(grid_for(1 << 30, 132), (132 * 32, 1, 1));
    }

    #[test]
    fn launches_are_checked_against_parameter_lists() {
        let l = Launch {
            kernel: "k".into(),
            args: vec![Arg::Ptr(0), Arg::F32(1.0)],
            grid: (1, 1, 1),
            block: (256, 1, 1),
        };
        let (ptr, f32, u32) = (
            ParamSpec {
                size: 8,
                align: 8,
                float: false,
            },
            ParamSpec {
                size: 4,
                align: 4,
                float: true,
            },
            ParamSpec {
                size: 4,
                align: 4,
                float: false,
            },
        );
        assert!(l.check_against(&[ptr, f32]).is_ok());
        let err = l.check_against(&[ptr]).expect_err("one parameter too many");
        assert!(err.to_string().contains("kernel k"), "{err}");
        assert!(
            l.check_against(&[ptr, u32]).is_err(),
            "a float passed where the kernel takes an integer"
        );
    }
}

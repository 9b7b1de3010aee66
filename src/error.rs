//! One error type for the library. Every variant names the operation and the data involved, so a
//! reader who feeds a bad shape, pattern, file or key learns exactly what was wrong.

use std::path::PathBuf;

pub type Result<T, E = Error> = std::result::Result<T, E>;

const GIB: f64 = (1u64 << 30) as f64;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{op}: shapes {lhs:?} and {rhs:?} are incompatible: {why}")]
    ShapeMismatch {
        op: &'static str,
        lhs: Vec<usize>,
        rhs: Vec<usize>,
        why: String,
    },

    #[error("{op}: dtypes {lhs} and {rhs} differ (convert one with `to_dtype` first)")]
    DTypeMismatch {
        op: &'static str,
        lhs: &'static str,
        rhs: &'static str,
    },

    #[error("{op}: dtype {dtype} is not supported here ({why})")]
    UnsupportedDType {
        op: &'static str,
        dtype: &'static str,
        why: &'static str,
    },

    #[error(
        "{op}: tensor with shape {shape:?} and strides {strides:?} is not contiguous; \
         call `.contiguous()` first (it copies)"
    )]
    NotContiguous {
        op: &'static str,
        shape: Vec<usize>,
        strides: Vec<usize>,
    },

    #[error("{op}: {msg}")]
    InvalidArgument { op: &'static str, msg: String },

    #[error("{op}: tensors live on different devices ({lhs} and {rhs})")]
    DeviceMismatch { op: &'static str, lhs: String, rhs: String },

    #[error("pattern \"{pattern}\": {msg}")]
    Pattern { pattern: String, msg: String },

    #[error("dimension names: {msg}")]
    DimNames { msg: String },

    /// A named dimension whose size disagrees with the size the name is bound to.
    #[error(
        "dimension `{name}`: expected size {expected} ({bound_by}) but the tensor with shape {shape:?} \
         checked as \"{names}\" has size {actual}"
    )]
    DimSize {
        name: String,
        expected: usize,
        actual: usize,
        shape: Vec<usize>,
        names: String,
        bound_by: String,
    },

    #[error("{path}: {msg}")]
    File { path: PathBuf, msg: String },

    /// A section's `check!` that did not hold: the run stops here, naming the claim, where it is
    /// written and what each side was.
    #[error("check `{name}` at {file}:{line} failed: `{claim}` does not hold ({values})")]
    CheckFailed {
        name: String,
        claim: String,
        file: String,
        line: u32,
        values: String,
    },

    /// The OS error is part of the message, not a `source`: with a source, `anyhow`'s `{:#}`
    /// would print it twice.
    #[error("{path}: {err}")]
    Io { path: PathBuf, err: std::io::Error },

    /// A trace refused, or a file the trace crate could not write (`cs336::trace::Error`).
    #[error(transparent)]
    Trace(#[from] cs336_trace::Error),

    #[error("CUDA: {0}")]
    Cuda(String),

    /// `CS336_CPU_ISA` names no level, or one this CPU lacks: the message of the device layer's
    /// `IsaError` (held as text, so that this module imports no layer above it).
    #[error("{0}")]
    CpuIsa(String),

    #[error(
        "CUDA out of memory: asked for {requested} bytes ({:.3} GiB) with {free} bytes ({:.3} GiB) free of {total}",
        *requested as f64 / GIB, *free as f64 / GIB
    )]
    CudaOutOfMemory {
        requested: usize,
        free: usize,
        total: usize,
    },
}

impl Error {
    /// Host memory too small for what an op asked: `available` is what the OS could hand out
    /// (`None` where it does not say), `requested` saturates where the byte count overflows.
    pub(crate) fn host_memory(op: &'static str, requested: u128, available: Option<u64>) -> Self {
        let gib = |b: f64| b / GIB;
        let asked = format!("{requested} bytes ({:.3} GiB)", gib(requested as f64));
        let msg = match available {
            Some(free) => format!(
                "needs {asked} of host memory, but only {free} bytes ({:.3} GiB) are available: \
                 use smaller sizes",
                gib(free as f64)
            ),
            None => format!("needs {asked} of host memory, more than this machine could allocate: use smaller sizes"),
        };
        Error::InvalidArgument { op, msg }
    }

    pub(crate) fn invalid(op: &'static str, msg: impl Into<String>) -> Self {
        Error::InvalidArgument { op, msg: msg.into() }
    }

    pub(crate) fn shape(op: &'static str, lhs: &[usize], rhs: &[usize], why: impl Into<String>) -> Self {
        Error::ShapeMismatch {
            op,
            lhs: lhs.to_vec(),
            rhs: rhs.to_vec(),
            why: why.into(),
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, err: std::io::Error) -> Self {
        Error::Io { path: path.into(), err }
    }
}

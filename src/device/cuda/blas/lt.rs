//! The cuBLASLt route: how PyTorch multiplies 16-bit matrices on Hopper, and so how ours do.
//!
//! cuBLAS's `cublasGemmEx` picks a kernel by itself. cuBLASLt instead hands back candidates from a
//! heuristic search, ordered by its estimate of their speed, given what the call allows: a
//! workspace (split-K products and the Hopper kernels that use the Tensor Memory Accelerator
//! need one) and the alignment of each operand's address. PyTorch asks for one candidate with a
//! workspace of 32 MiB on Hopper, the size NVIDIA recommends there (4 MiB before it), and the
//! alignments of its pointers. We ask for a few, take the first that succeeded and fits our
//! workspace ([`choose`]: the same one PyTorch would get), and keep the output in the input's
//! dtype, as PyTorch does. Unlike PyTorch, which searches at every call, the search's answer is
//! kept per question ([`Question`]): the same question gets the same answer, and the lecture
//! times each product many times. (On an H200, 2026-12-04, a 256×256 bf16 product took 155 µs
//! and a 1024×1024 matrix-vector product 143 µs with a search at every call, against 9 µs for an
//! elementwise op on 4 MB; whether the search is what costs that was not yet measured.)
//!
//! cuBLASLt is column-major, as cuBLAS is: C = A·B (row-major) is computed as Cᵀ = Bᵀ·Aᵀ, so its
//! first operand is our B ([`layouts`]). Everything that can be decided without a GPU (the route,
//! the workspace, the alignments, the layouts, the choice among candidates) is a plain function,
//! tested on any machine; `tests` below multiplies through the layouts on the CPU.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::Arc;

use cudarc::cublaslt::{result as lt, sys as lt_sys};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};

use super::{GemmMode, GemmPlan, GemmPtrs};
use crate::base::DType;
use crate::error::{Error, Result};
use search::{Answer, Descs};

/// The workspace NVIDIA recommends for Hopper (compute capability 9) and later.
pub const HOPPER_WORKSPACE_BYTES: usize = 32 << 20;
/// The workspace it recommends for earlier GPUs.
pub const OTHER_WORKSPACE_BYTES: usize = 4 << 20;
/// How many candidates the heuristic search is asked for.
pub const REQUESTED_CANDIDATES: usize = 8;

/// Which library multiplies: cuBLAS (`cublasGemmEx`) or cuBLASLt with its heuristic search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GemmRoute {
    #[default]
    CublasLt,
    Cublas,
}

impl GemmRoute {
    pub fn name(self) -> &'static str {
        match self {
            GemmRoute::CublasLt => "cublaslt",
            GemmRoute::Cublas => "cublas",
        }
    }

    pub(crate) fn to_u8(self) -> u8 {
        self as u8
    }

    pub(crate) fn from_u8(v: u8) -> GemmRoute {
        if v == GemmRoute::Cublas as u8 {
            GemmRoute::Cublas
        } else {
            GemmRoute::CublasLt
        }
    }
}

/// The route a product in `mode` takes when `preferred` is asked for: cuBLASLt for 16-bit inputs
/// where the library was found (PyTorch's route for them); float32 always through cuBLAS, whose
/// pedantic and default modes are the lecture's float32 rows and PyTorch's float32 matmul.
pub fn route_for(mode: GemmMode, preferred: GemmRoute, lt_available: bool) -> GemmRoute {
    let sixteen_bit = mode.input_dtype().size_in_bytes() == 2;
    if preferred == GemmRoute::CublasLt && sixteen_bit && lt_available {
        GemmRoute::CublasLt
    } else {
        GemmRoute::Cublas
    }
}

/// The workspace for a GPU of compute capability `major`.x.
pub fn workspace_bytes(major: i32) -> usize {
    if major >= 9 {
        HOPPER_WORKSPACE_BYTES
    } else {
        OTHER_WORKSPACE_BYTES
    }
}

/// The alignment cuBLASLt is told an address has: its largest power-of-two divisor, up to 256
/// bytes (a kernel needs no more).
pub fn alignment(address: u64) -> u32 {
    1 << address.trailing_zeros().min(8)
}

/// One stored matrix as cuBLASLt reads it: rows × cols, column-major with leading dimension `ld`,
/// transposed by the operation or not, and `batch_stride` elements to the next matrix of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LtMatrix {
    pub rows: u64,
    pub cols: u64,
    pub ld: i64,
    pub transpose: bool,
    pub batch_stride: i64,
}

/// The three layouts of a planned product: cuBLASLt's A (our B), its B (our A) and its D (our
/// output, also its C, which beta = 0 leaves unread), and the batch count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LtLayouts {
    pub a: LtMatrix,
    pub b: LtMatrix,
    pub d: LtMatrix,
    pub batch: i32,
}

/// The layouts of `plan` (row-major C = A·B as column-major Cᵀ = Bᵀ·Aᵀ). A row-major operand is
/// its transpose stored column-major with the same leading dimension, so it goes in untransposed;
/// a column-major one (a transposed view) goes in transposed.
pub fn layouts(plan: &GemmPlan) -> Result<LtLayouts> {
    let (m, n, k) = (plan.m as u64, plan.n as u64, plan.k as u64);
    let stored = |rows: u64, cols: u64, col_major: bool, ld: usize, batch_stride: usize| -> Result<LtMatrix> {
        let (rows, cols) = if col_major { (cols, rows) } else { (rows, cols) };
        Ok(LtMatrix {
            rows,
            cols,
            ld: i64::try_from(ld).map_err(|_| too_large("a leading dimension", ld))?,
            transpose: col_major,
            batch_stride: i64::try_from(batch_stride).map_err(|_| too_large("a batch stride", batch_stride))?,
        })
    };
    Ok(LtLayouts {
        a: stored(n, k, plan.b.col_major, plan.b.ld, plan.b.batch_stride)?,
        b: stored(k, m, plan.a.col_major, plan.a.ld, plan.a.batch_stride)?,
        d: stored(n, m, false, plan.n, plan.m * plan.n)?,
        batch: i32::try_from(plan.batch).map_err(|_| too_large("the batch", plan.batch))?,
    })
}

fn too_large(what: &str, v: usize) -> Error {
    Error::invalid("matmul", format!("{what} ({v}) exceeds what cuBLASLt takes"))
}

/// What the heuristic search said of one candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    pub succeeded: bool,
    pub workspace_bytes: usize,
}

/// The first candidate that succeeded and needs no more than `workspace` bytes: the search orders
/// them fastest first. None fits: the reason, for the error.
pub fn choose(candidates: &[Candidate], workspace: usize) -> std::result::Result<usize, String> {
    if let Some(i) = candidates
        .iter()
        .position(|c| c.succeeded && c.workspace_bytes <= workspace)
    {
        return Ok(i);
    }
    Err(if candidates.is_empty() {
        "the heuristic search found no algorithm for this product".into()
    } else {
        let failed = candidates.iter().filter(|c| !c.succeeded).count();
        format!(
            "of {} candidates, {failed} failed and the rest need more than the {workspace}-byte workspace",
            candidates.len()
        )
    })
}

/// What one call ran: which candidate of how many, and the workspace it asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LtChoice {
    pub candidate: usize,
    pub candidates: usize,
    pub workspace_bytes: usize,
}

/// Everything the heuristic search is told about one product under a handle's fixed workspace:
/// the arithmetic, the layouts and each operand's alignment (an algorithm chosen for aligned
/// addresses may not run on others). Equal questions get the same answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Question {
    pub mode: GemmMode,
    pub layouts: LtLayouts,
    /// A, B, C and D (cuBLASLt's names), in bytes.
    pub alignments: [u32; 4],
}

impl Question {
    /// The question a product of `plan` at `ptrs` asks.
    pub fn of(mode: GemmMode, plan: &GemmPlan, ptrs: GemmPtrs) -> Result<Question> {
        let (a, b) = operand_addresses(mode, plan, ptrs);
        Ok(Question {
            mode,
            layouts: layouts(plan)?,
            alignments: [alignment(a), alignment(b), alignment(ptrs.c), alignment(ptrs.c)],
        })
    }
}

/// cuBLASLt's A and B addresses: our B and A, at their views' offsets.
fn operand_addresses(mode: GemmMode, plan: &GemmPlan, ptrs: GemmPtrs) -> (u64, u64) {
    let in_size = mode.input_dtype().size_in_bytes() as u64;
    (
        ptrs.b + plan.b.offset as u64 * in_size,
        ptrs.a + plan.a.offset as u64 * in_size,
    )
}

fn lt_error(what: &str, e: lt::CublasError) -> Error {
    Error::Cuda(format!("cuBLASLt {what}: {e:?}"))
}

/// A cuBLASLt handle and its workspace, made once per device (the workspace stays allocated, as
/// PyTorch's does: it is outside the lecture's allocator, like cuBLAS's own).
pub struct LtHandle {
    handle: lt_sys::cublasLtHandle_t,
    workspace: CudaSlice<u8>,
    stream: Arc<CudaStream>,
    /// The searches' answers, by question (a handful of shapes in a run): one search each.
    answers: HashMap<Question, Answer>,
}

// SAFETY: the handle is used under the backend's lock, one thread at a time.
unsafe impl Send for LtHandle {}
// SAFETY: as `Send`: the backend's lock admits one thread at a time.
unsafe impl Sync for LtHandle {}

impl LtHandle {
    /// Where cuBLASLt is missing (it ships with cuBLAS, so rarely) the reason, for the caller to
    /// fall back to cuBLAS with.
    pub fn new(stream: &Arc<CudaStream>, major: i32) -> std::result::Result<LtHandle, String> {
        // SAFETY: only opens the library by name and closes it again.
        if !unsafe { lt_sys::is_culib_present() } {
            return Err("cuBLASLt (libcublasLt.so.13) was not found".into());
        }
        let handle = lt::create_handle().map_err(|e| format!("creating the cuBLASLt handle: {e:?}"))?;
        // SAFETY: bytes, written only by cuBLASLt.
        let workspace = match unsafe { stream.alloc::<u8>(workspace_bytes(major)) } {
            Ok(w) => w,
            Err(e) => {
                // SAFETY: the handle was just made and is not used elsewhere.
                let _ = unsafe { lt::destroy_handle(handle) };
                return Err(format!("allocating the cuBLASLt workspace: {e:?}"));
            }
        };
        Ok(LtHandle {
            handle,
            workspace,
            stream: Arc::clone(stream),
            answers: HashMap::new(),
        })
    }

    pub fn workspace_bytes(&self) -> usize {
        self.workspace.len()
    }

    /// How many heuristic searches this handle ran: one per distinct [`Question`].
    pub fn searches(&self) -> usize {
        self.answers.len()
    }
}

impl Drop for LtHandle {
    fn drop(&mut self) {
        // SAFETY: made by `new` and destroyed only here. A failure cannot be reported from a drop
        // and leaks one handle at exit at worst.
        let _ = unsafe { lt::destroy_handle(self.handle) };
    }
}

/// A descriptor destroyed when dropped (a failure to destroy is ignored: there is nothing to do).
struct Owned<T: Copy>(T, unsafe fn(T) -> std::result::Result<(), lt::CublasError>);

impl<T: Copy> Drop for Owned<T> {
    fn drop(&mut self) {
        // SAFETY: each descriptor is made once and destroyed here once.
        let _ = unsafe { (self.1)(self.0) };
    }
}

/// cuBLASLt's name for an element type: the one `mode::data_type` gives cuBLAS, in cuBLASLt's own
/// (identical, separately generated) enum.
fn data_type(dtype: DType) -> lt_sys::cudaDataType {
    use cudarc::cublas::sys::cudaDataType as B;
    use lt_sys::cudaDataType as L;
    match super::mode::data_type(dtype) {
        B::CUDA_R_16BF => L::CUDA_R_16BF,
        B::CUDA_R_16F => L::CUDA_R_16F,
        _ => L::CUDA_R_32F,
    }
}

/// The compute type `GemmMode::compute_type` chooses for cuBLAS, as cuBLASLt spells it: which
/// arithmetic a mode means is decided once, in `mode.rs`.
fn compute_type(mode: GemmMode) -> lt_sys::cublasComputeType_t {
    use cudarc::cublas::sys::cublasComputeType_t as B;
    use lt_sys::cublasComputeType_t as L;
    match mode.compute_type() {
        B::CUBLAS_COMPUTE_32F_PEDANTIC => L::CUBLAS_COMPUTE_32F_PEDANTIC,
        B::CUBLAS_COMPUTE_32F_FAST_TF32 => L::CUBLAS_COMPUTE_32F_FAST_TF32,
        _ => L::CUBLAS_COMPUTE_32F,
    }
}

/// Makes one matrix layout, with its batch attributes when there is more than one matrix.
fn layout(dtype: DType, m: LtMatrix, batch: i32) -> Result<Owned<lt_sys::cublasLtMatrixLayout_t>> {
    let handle = lt::create_matrix_layout(data_type(dtype), m.rows, m.cols, m.ld).map_err(|e| lt_error("layout", e))?;
    let owned = Owned(handle, lt::destroy_matrix_layout);
    if batch > 1 {
        use lt_sys::cublasLtMatrixLayoutAttribute_t::*;
        // SAFETY: a live layout; each value is the attribute's type (int32, int64).
        unsafe {
            lt::set_matrix_layout_attribute(
                handle,
                CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                ptr(&batch),
                size_of::<i32>(),
            )
            .map_err(|e| lt_error("batch count", e))?;
            lt::set_matrix_layout_attribute(
                handle,
                CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                ptr(&m.batch_stride),
                size_of::<i64>(),
            )
            .map_err(|e| lt_error("batch stride", e))?;
        }
    }
    Ok(owned)
}

fn ptr<T>(v: &T) -> *const c_void {
    v as *const T as *const c_void
}

/// Runs a planned product through cuBLASLt: the heuristic search under our workspace and the
/// operands' alignments, the first fitting candidate, then the product. Same contract as
/// [`super::run`] (non-empty sizes, addresses covering the plan).
///
/// # Safety
/// The pointers are valid device memory of the mode's dtypes, covering the plan.
pub unsafe fn run(h: &mut LtHandle, mode: GemmMode, plan: &GemmPlan, ptrs: GemmPtrs) -> Result<LtChoice> {
    use lt_sys::cublasLtMatmulDescAttributes_t::*;
    let question = Question::of(mode, plan, ptrs)?;
    let l = question.layouts;
    let (a_addr, b_addr) = operand_addresses(mode, plan, ptrs);
    let (a_desc, b_desc, d_desc) = (
        layout(mode.input_dtype(), l.a, l.batch)?,
        layout(mode.input_dtype(), l.b, l.batch)?,
        layout(mode.output_dtype(), l.d, l.batch)?,
    );
    let desc = lt::create_matmul_desc(compute_type(mode), lt_sys::cudaDataType::CUDA_R_32F)
        .map_err(|e| lt_error("matmul descriptor", e))?;
    let desc = Owned(desc, lt::destroy_matmul_desc);
    let (trans_a, trans_b) = (l.a.transpose as i32, l.b.transpose as i32);
    // SAFETY: a live descriptor; every value has the attribute's type (int32).
    unsafe {
        lt::set_matmul_desc_attribute(desc.0, CUBLASLT_MATMUL_DESC_TRANSA, ptr(&trans_a), size_of::<i32>())
            .map_err(|e| lt_error("TRANSA", e))?;
        lt::set_matmul_desc_attribute(desc.0, CUBLASLT_MATMUL_DESC_TRANSB, ptr(&trans_b), size_of::<i32>())
            .map_err(|e| lt_error("TRANSB", e))?;
    }
    let answer = match h.answers.get(&question) {
        Some(&answer) => answer,
        None => {
            let descs = Descs {
                matmul: desc.0,
                a: a_desc.0,
                b: b_desc.0,
                d: d_desc.0,
            };
            // SAFETY: live descriptors of this question's product.
            let answer = unsafe { search::search(h, &question, plan, descs) }?;
            h.answers.insert(question, answer);
            answer
        }
    };
    let (alpha, beta) = (1.0f32, 0.0f32);
    let (w, _sync) = h.workspace.device_ptr(&h.stream);
    // SAFETY: the caller's pointers cover the plan; D is also C (beta = 0: never read).
    unsafe {
        lt::matmul(
            h.handle,
            desc.0,
            ptr(&alpha),
            ptr(&beta),
            a_addr as *const c_void,
            a_desc.0,
            b_addr as *const c_void,
            b_desc.0,
            ptrs.c as *const c_void,
            d_desc.0,
            ptrs.c as *mut c_void,
            d_desc.0,
            &answer.algo,
            w as *mut c_void,
            h.workspace_bytes(),
            h.stream.cu_stream() as lt_sys::cudaStream_t,
        )
    }
    .map_err(|e| {
        Error::Cuda(format!(
            "cuBLASLt {} matmul ({}×{}×{}, batch {}) failed: {e:?}",
            mode.name(),
            plan.m,
            plan.n,
            plan.k,
            plan.batch
        ))
    })?;
    Ok(answer.choice)
}

mod search;
#[cfg(test)]
mod tests;

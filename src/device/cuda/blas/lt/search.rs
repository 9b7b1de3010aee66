//! The heuristic search: asked once per [`Question`] under a handle's workspace, its answer kept
//! by the handle (`run`).

use super::{
    Candidate, GemmPlan, LtChoice, LtHandle, Owned, Question, REQUESTED_CANDIDATES, choose, lt, lt_error, lt_sys, ptr,
};
use crate::error::{Error, Result};

/// The search's answer to a question: the algorithm it ran, and the choice for the caller.
#[derive(Debug, Clone, Copy)]
pub(super) struct Answer {
    pub(super) algo: lt_sys::cublasLtMatmulAlgo_t,
    pub(super) choice: LtChoice,
}

/// A product's matmul descriptor and its A, B and D layouts (D is also C).
pub(super) struct Descs {
    pub(super) matmul: lt_sys::cublasLtMatmulDesc_t,
    pub(super) a: lt_sys::cublasLtMatrixLayout_t,
    pub(super) b: lt_sys::cublasLtMatrixLayout_t,
    pub(super) d: lt_sys::cublasLtMatrixLayout_t,
}

/// The heuristic search for `question` under `h`'s workspace: the first candidate that succeeded
/// and fits.
///
/// # Safety
/// The descriptors are live and describe the question's product.
pub(super) unsafe fn search(h: &LtHandle, question: &Question, plan: &GemmPlan, descs: Descs) -> Result<Answer> {
    use lt_sys::cublasLtMatmulPreferenceAttributes_t::*;
    let pref = lt::create_matmul_pref().map_err(|e| lt_error("preference", e))?;
    let pref = Owned(pref, lt::destroy_matmul_pref);
    let workspace = h.workspace_bytes() as u64;
    // SAFETY: a live preference; every value has the attribute's type (uint64, uint32).
    unsafe {
        lt::set_matmul_pref_attribute(pref.0, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, ptr(&workspace), 8)
            .map_err(|e| lt_error("workspace preference", e))?;
        for (attr, bytes) in [
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
        ]
        .into_iter()
        .zip(&question.alignments)
        {
            lt::set_matmul_pref_attribute(pref.0, attr, ptr(bytes), size_of::<u32>())
                .map_err(|e| lt_error("alignment preference", e))?;
        }
    }
    let mut results: [std::mem::MaybeUninit<lt_sys::cublasLtMatmulHeuristicResult_t>; REQUESTED_CANDIDATES] =
        [const { std::mem::MaybeUninit::uninit() }; REQUESTED_CANDIDATES];
    let mut returned = 0i32;
    // SAFETY: live descriptors (the caller's), room for REQUESTED_CANDIDATES results, of which
    // `returned` are written.
    unsafe {
        lt_sys::cublasLtMatmulAlgoGetHeuristic(
            h.handle,
            descs.matmul,
            descs.a,
            descs.b,
            descs.d,
            descs.d,
            pref.0,
            REQUESTED_CANDIDATES as i32,
            results.as_mut_ptr().cast(),
            &mut returned,
        )
    }
    .result()
    .map_err(|e| lt_error("heuristic search", e))?;
    let returned = (returned.max(0) as usize).min(REQUESTED_CANDIDATES);
    // SAFETY: the search wrote the first `returned` results.
    let found: Vec<lt_sys::cublasLtMatmulHeuristicResult_t> =
        results[..returned].iter().map(|r| unsafe { r.assume_init() }).collect();
    let candidates: Vec<Candidate> = found
        .iter()
        .map(|r| Candidate {
            succeeded: r.state == lt_sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS,
            workspace_bytes: r.workspaceSize,
        })
        .collect();
    let chosen = choose(&candidates, h.workspace_bytes()).map_err(|why| {
        Error::Cuda(format!(
            "cuBLASLt {} matmul ({}×{}×{}): {why}",
            question.mode.name(),
            plan.m,
            plan.n,
            plan.k
        ))
    })?;
    Ok(Answer {
        algo: found[chosen].algo,
        choice: LtChoice {
            candidate: chosen,
            candidates: candidates.len(),
            workspace_bytes: candidates[chosen].workspace_bytes,
        },
    })
}

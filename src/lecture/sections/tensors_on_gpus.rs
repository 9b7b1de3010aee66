//! Section `tensors_on_gpus`: Tensors on GPUs.

use serde_json::json;

use crate::device::cuda;
use crate::error::Result;
use crate::lecture::{SectionCtx, check, record};
use crate::tensor::{DType, Tensor};

/// Tensors start in CPU memory; using a GPU means copying them into its memory, and the
/// allocator's count is how we see what that cost.
pub fn tensors_on_gpus(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::zeros(&[32, 32], DType::F32)?; // on the CPU, like every new tensor
    record!(cx, computed x_device = x.device().to_string())?;
    record!(cx, given x_shape = x.shape())?;
    record!(cx, computed elements = x.numel())?;
    record!(cx, computed bytes_per_float = x.element_size(), bytes)?;
    // What the allocator should count for x's copy and a second tensor like it.
    let expected_bytes = 2 * x.numel() * x.element_size();
    record!(cx, computed expected_bytes, bytes)?;
    let Some(gpu) = cx.device.cuda().cloned() else {
        record!(cx, device cuda_available = false)?;
        let cuda_unavailable_reason = cx
            .cuda_unavailable_reason
            .clone()
            .unwrap_or_else(|| "not recorded".into());
        record!(cx, device cuda_unavailable_reason)?;
        return Ok(());
    };
    record!(cx, device cuda_available = true)?;
    record!(cx, device num_gpus = cuda::device_count()?)?;
    let p = gpu.props();
    let properties = json!({
        "name": p.name, "total_memory": p.total_memory, "multi_processor_count": p.sm_count,
        "compute_capability": format!("{}.{}", p.compute_capability.0, p.compute_capability.1),
        "l2_cache_size": p.l2_cache_bytes,
    });
    record!(cx, device properties)?;

    // What the allocator counts (bytes held by live tensors), and what the driver reports free.
    let memory_allocated = gpu.memory_stats().allocated;
    record!(cx, computed memory_allocated, bytes)?;
    let (driver_free_before, _) = gpu.driver_memory()?;

    let y = x.to_device(&cx.device)?; // move the CPU tensor to the GPU (a copy)
    let z = Tensor::zeros_on(&[32, 32], DType::F32, &cx.device)?; // create one directly there
    record!(cx, computed y_device = y.device().to_string())?;
    record!(cx, computed z_device = z.device().to_string())?;
    let new_memory_allocated = gpu.memory_stats().allocated;
    record!(cx, computed new_memory_allocated, bytes)?;
    let memory_used = new_memory_allocated - memory_allocated;
    record!(cx, computed memory_used, bytes)?; // 2 x (32 x 32 x 4 bytes)
    check!(cx, allocator_counts_the_shapes: memory_used == expected_bytes)?;

    // The driver hands out memory in pages (2 MiB), and the stream-ordered pool behind each
    // allocation keeps what it reserved for reuse: its free-memory drop is a different number.
    let (driver_free_after, total) = gpu.driver_memory()?;
    let driver_used = driver_free_before as i64 - driver_free_after as i64;
    record!(cx, device driver_total_memory = total, bytes)?;
    record!(cx, device driver_memory_used = driver_used, bytes)?;
    record!(cx, device driver_over_allocator = driver_used as f64 / memory_used as f64, ratio)?;
    record!(cx, device stream_ordered_pool = gpu.context().has_async_alloc())?;
    drop((y, z));
    record!(cx, computed memory_allocated_after_free = gpu.memory_stats().allocated, bytes)?;
    Ok(())
}

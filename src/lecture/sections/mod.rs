//! The lecture's sections, one file each (`<id>.rs`, beside `../pytorch/<id>.py` and the book's
//! `book/src/<id>.md`), and their registry: the one table that says, for every section, in lecture
//! order, what is about it. Nothing else in the crate names a section by its id.
//!
//! Each entry gives:
//! - `title`: its chapter's title;
//! - `cost` and `overhead`: what a what-if of it needs (`lecture --set`), from functions in its
//!   file; a section with givens must have a cost (a test holds every section to it);
//! - `charts`: the charts its chapter draws from its values (`cs336_book::chart::CHARTS` draws them;
//!   the run records the list in the trace, so the book knows whose values each chart reads);
//! - `devices`: the rows it adds to the Devices chapter (recorded in the trace in the same way);
//! - `narrowers` (if any): what it asks of its givens beyond their types (`givens::Narrower`).
//!
//! Adding a section: write `<id>.rs` with `pub fn <id>(cx: &mut SectionCtx) -> Result<()>`, its
//! PyTorch panel `../pytorch/<id>.py` (included at compile time: without it the crate does not
//! build) and its chapter `book/src/<id>.md`, add its entry here (the entry declares the module
//! too) and its line to `SUMMARY.md`.

use super::DevicesRow;

sections! {
    motivating_questions {
        title: "Motivating questions",
        cost: Some(motivating_questions::cost),
        overhead: None,
        charts: [],
        devices: [],
        narrowers: motivating_questions::NARROWERS,
    },
    tensors_basics {
        title: "Tensors: the basics",
        cost: None,
        overhead: None,
        charts: [],
        devices: [],
    },
    tensors_memory {
        title: "Tensors: memory",
        cost: None,
        overhead: None,
        charts: [float_bit_layouts, float_ranges],
        devices: [],
    },
    tensors_on_gpus {
        title: "Tensors on GPUs",
        cost: None,
        overhead: None,
        charts: [],
        devices: [
            DevicesRow::value("GPU allocator's count for the two 32×32 float32 tensors", "memory_used", "int").on_gpu_only(),
        ],
    },
    tensor_storage {
        title: "Tensor storage",
        cost: None,
        overhead: None,
        charts: [tensor_strides],
        devices: [],
    },
    tensor_slicing {
        title: "Slicing and views",
        cost: None,
        overhead: None,
        charts: [],
        devices: [],
    },
    tensor_elementwise {
        title: "Elementwise operations",
        cost: None,
        overhead: None,
        charts: [],
        devices: [],
    },
    tensor_matmul {
        title: "Matrix multiplication",
        cost: None,
        overhead: None,
        charts: [batch_sequence],
        devices: [],
    },
    einops_motivation {
        title: "einops: why name dimensions",
        cost: None,
        overhead: None,
        charts: [],
        devices: [],
    },
    jaxtyping_basics {
        title: "Named dimensions, checked",
        cost: None,
        overhead: None,
        charts: [],
        devices: [],
    },
    einops_einsum {
        title: "einops: einsum",
        cost: None,
        overhead: None,
        charts: [],
        devices: [],
    },
    einops_reduce {
        title: "einops: reduce",
        cost: None,
        overhead: None,
        charts: [],
        devices: [],
    },
    einops_rearrange {
        title: "einops: rearrange",
        cost: None,
        overhead: None,
        charts: [],
        devices: [],
    },
    tensor_operations_flops {
        title: "Counting FLOPs",
        cost: Some(tensor_operations_flops::cost),
        overhead: None,
        charts: [matmul_throughput],
        devices: [
            DevicesRow::value("float32 matmul at the lecture's shape", "actual_flop_per_sec", "si"),
            DevicesRow::value("its MFU", "mfu", "auto"),
            DevicesRow::value("its peak (float32): measured on a CPU, its datasheet's on a GPU", "peak_flop_per_sec", "si"),
            DevicesRow::value("bfloat16 matmul at the same shape", "bf16_actual_flop_per_sec", "si"),
            DevicesRow::value("its MFU", "bf16_mfu", "auto"),
            DevicesRow::value("its peak (bfloat16): that of the unit it ran on, measured on a CPU, its datasheet's on a GPU", "bf16_peak_flop_per_sec", "si"),
            DevicesRow::value("the unit bfloat16 ran on", "bf16_matmul_route", "auto"),
            DevicesRow::value("the bfloat16 instruction's own peak", "bf16_unit_flop_per_sec", "si"),
            DevicesRow::ratio("bfloat16's speed over float32", "bf16_actual_flop_per_sec", "actual_flop_per_sec").charted(),
        ],
    },
    arithmetic_intensity {
        title: "Arithmetic intensity and the roofline",
        cost: Some(arithmetic_intensity::cost),
        overhead: None,
        charts: [memory_hierarchy, op_sweeps, roofline],
        devices: [
            DevicesRow::value("main memory's bandwidth (measured copy)", "memory_bytes_per_sec", "si"),
            DevicesRow::value("accelerator intensity (bfloat16 peak over memory bandwidth)", "accelerator_intensity", "auto"),
        ],
    },
    deep_network {
        title: "A deep network",
        cost: Some(deep_network::cost),
        overhead: Some(deep_network::overhead),
        charts: [],
        devices: [],
    },
    gradients_basics {
        title: "Gradients: the basics",
        cost: None,
        overhead: None,
        charts: [autograd_graph],
        devices: [],
    },
    gradients_flops {
        title: "Gradients: FLOPs",
        cost: None,
        overhead: None,
        charts: [],
        devices: [
            // The Gradients chapter's lesson, in its words: time measured, FLOPs counted by the autograd.
            DevicesRow::value("backward over forward: time (measured)", "measured_backward_to_forward_ratio", "fixed2"),
            DevicesRow::ratio("backward over forward: FLOPs its autograd ran (counted)", "counted_backward_flops", "counted_forward_flops"),
        ],
    },
    module_parameters {
        title: "Parameters and initialisation",
        cost: Some(module_parameters::cost),
        overhead: None,
        charts: [init_std],
        devices: [],
    },
    custom_model {
        title: "A custom model",
        cost: Some(custom_model::cost),
        overhead: Some(custom_model::overhead),
        charts: [],
        devices: [],
    },
    note_about_randomness {
        title: "Randomness",
        cost: None,
        overhead: None,
        charts: [],
        devices: [],
    },
    data_loading {
        title: "Data loading",
        cost: None,
        overhead: None,
        charts: [cpu_gpu],
        devices: [
            DevicesRow::ratio("pinned over pageable host-to-device copies", "h2d_pinned_bytes_per_sec", "h2d_pageable_bytes_per_sec").on_gpu_only(),
        ],
    },
    optimizer {
        title: "Optimizer",
        cost: Some(optimizer::cost),
        overhead: Some(optimizer::overhead),
        charts: [],
        devices: [],
    },
    gradient_accumulation {
        title: "Gradient accumulation",
        cost: Some(gradient_accumulation::cost),
        overhead: Some(gradient_accumulation::overhead),
        charts: [],
        devices: [],
        narrowers: gradient_accumulation::NARROWERS,
    },
    activation_memory {
        title: "Activations and checkpointing",
        cost: Some(activation_memory::cost),
        overhead: Some(activation_memory::overhead),
        charts: [],
        devices: [],
    },
    checkpoint_schedule {
        title: "The checkpointing schedule",
        cost: Some(checkpoint_schedule::cost),
        overhead: Some(checkpoint_schedule::overhead),
        charts: [checkpoint_graph, checkpoint_peaks, checkpoint_recomputed],
        devices: [],
        narrowers: checkpoint_schedule::NARROWERS,
    },
    train_loop {
        title: "Training loop",
        cost: None,
        overhead: None,
        charts: [train_losses],
        devices: [],
    },
    checkpointing {
        title: "Checkpointing",
        cost: None,
        overhead: None,
        charts: [],
        devices: [],
    },
    mixed_precision_training {
        title: "Mixed precision training",
        cost: Some(mixed_precision_training::cost),
        overhead: None,
        charts: [mixed_precision_losses],
        devices: [],
    },
}

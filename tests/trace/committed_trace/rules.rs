//! Which values may differ between a committed trace and a fresh run on the same CPU, and why.

use super::*;

/// Why a value may differ between a committed trace and a fresh run on the same CPU.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Why {
    /// The machine decides it (a clock, the host's size, its drivers): never compared. Its unit,
    /// timing mark and place in the trace still are.
    Machine(&'static str),
    /// It follows the bf16 matmul kernel: exact when the trace's kernel is this run's, else
    /// compared as `Other` says.
    Bf16Kernel(Other, &'static str),
}

/// How a value that follows the bf16 kernel is compared with a run on another kernel.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Other {
    /// Within this relative difference.
    Within(f64),
    /// Not compared; the test prints the value and the reason.
    Skip,
    /// The kernel's name: it must be the kernel the trace's provenance names.
    Recorded,
}

/// A value (or part of one) and why it may differ. `value` and each `path` segment may list
/// alternatives separated by `|`; a path segment `*` matches any field or index. The first rule
/// that matches a location decides it (specific ones come first).
pub(crate) struct Rule {
    pub(crate) section: &'static str,
    pub(crate) value: &'static str,
    pub(crate) path: &'static [&'static str],
    pub(crate) why: Why,
}

pub(crate) const CLOCK: Why = Why::Machine("a clock measured it on this machine");
pub(crate) const SPREAD_WHY: Why =
    Why::Machine("a clock measured it, and repeated it as often as a time budget allowed");
pub(crate) const RATE: Why = Why::Machine("FLOPs over a measured time");
pub(crate) const PEAK: Why =
    Why::Machine("the CPU's peak is measured (a timed FMA loop), so it and every MFU against it vary");
/// A timing's spread: its statistics, and how many warm-up calls and repetitions fit its time
/// budget (both are decided by time: src/timing/).
pub(crate) const SPREAD: &str = "median_s|min_s|q1_s|q3_s|max_s|reps|warmup";
/// bf16 has 8 significant bits: a few roundings apart on a loss computed from the same weights
/// and batch.
pub(crate) const BF16_FIRST_STEP: f64 = 4.0 / 256.0;
pub(crate) const TRAJECTORY: &str = "a rounding that differs in one step changes every later step of the training run";

pub(crate) const RULES: &[Rule] = &[
    Rule {
        section: "motivating_questions",
        value: "this_device_bytes|this_device_num_parameters",
        path: &[],
        why: Why::Machine("the host's memory size"),
    },
    Rule {
        section: "tensors_on_gpus",
        value: "cuda_unavailable_reason",
        path: &[],
        why: Why::Machine("what this machine lacks for CUDA (driver, device) as its loader reports it"),
    },
    Rule {
        section: "tensor_operations_flops",
        value: "actual_time|bf16_actual_time",
        path: &[],
        why: CLOCK,
    },
    Rule {
        section: "tensor_operations_flops",
        value: "actual_time_spread|bf16_actual_time_spread",
        path: &[SPREAD],
        why: SPREAD_WHY,
    },
    Rule {
        section: "tensor_operations_flops",
        value: "actual_flop_per_sec|bf16_actual_flop_per_sec",
        path: &[],
        why: RATE,
    },
    Rule {
        section: "tensor_operations_flops",
        value: "promised_flop_per_sec|bf16_promised_flop_per_sec|mfu|bf16_mfu",
        path: &[],
        why: PEAK,
    },
    Rule {
        section: "tensor_operations_flops",
        value: "promised_peak_source|bf16_promised_peak_source",
        path: &[],
        why: Why::Machine("how the peak was measured: rounds calibrated by a clock, and the thread count"),
    },
    Rule {
        section: "tensor_operations_flops",
        value: "cpu_isa|cpu_isa_set_by",
        path: &[],
        why: Why::Machine("the instruction-set level: CS336_CPU_ISA's, else the best this CPU has"),
    },
    Rule {
        section: "tensor_operations_flops",
        value: "cpu_isa_peaks",
        path: &["*", "loop"],
        why: Why::Machine("the loops of the instruction-set level (CS336_CPU_ISA's, else the best this CPU has)"),
    },
    Rule {
        section: "tensor_operations_flops",
        value: "cpu_isa_peaks",
        path: &["*", "flop_per_sec|how"],
        why: PEAK,
    },
    Rule {
        section: "tensor_operations_flops",
        value: "bf16_promised_peak_loop",
        path: &[],
        why: Why::Bf16Kernel(Other::Skip, "the loop of the instruction the bf16 kernel uses"),
    },
    Rule {
        section: "tensor_operations_flops",
        value: "sweep_peaks",
        path: &["bf16", "loop"],
        why: Why::Bf16Kernel(Other::Skip, "the loop of the instruction the bf16 kernel uses"),
    },
    Rule {
        section: "tensor_operations_flops",
        value: "cpu_peak_formula",
        path: &["bf16", "flop_per_instruction|instructions_per_cycle"],
        why: Why::Bf16Kernel(
            Other::Skip,
            "the textbook figures of the instruction the bf16 kernel uses",
        ),
    },
    Rule {
        section: "tensor_operations_flops",
        value: "cpu_peak_formula",
        path: &["*", "flop_per_sec|physical_cores|clock_hz|assumptions"],
        why: Why::Machine("the textbook peak uses the core count and the clock read from /proc/cpuinfo"),
    },
    Rule {
        section: "tensor_operations_flops",
        value: "throughput_sweep",
        path: &["*", "median_s|min_s|q1_s|q3_s|max_s|reps|flop_per_sec|mfu"],
        why: Why::Machine("the sweep's times, and the rates and MFUs from them"),
    },
    Rule {
        section: "tensor_operations_flops",
        value: "sweep_peaks",
        path: &["*", "flop_per_sec|how"],
        why: PEAK,
    },
    Rule {
        section: "gradients_flops",
        value: "forward_time|backward_time|measured_backward_to_forward_ratio",
        path: &[],
        why: CLOCK,
    },
    Rule {
        section: "gradients_flops",
        value: "forward_time_spread|backward_time_spread",
        path: &[SPREAD],
        why: SPREAD_WHY,
    },
    Rule {
        section: "tensor_operations_flops",
        value: "bf16_matmul_isa",
        path: &[],
        why: Why::Bf16Kernel(Other::Recorded, "the kernel's name"),
    },
    Rule {
        section: "mixed_precision_training",
        value: "losses_bf16|losses_mixed",
        path: &["0"],
        why: Why::Bf16Kernel(
            Other::Within(BF16_FIRST_STEP),
            "the first step's loss: the same weights and batch, only the rounding of the bf16 products differs",
        ),
    },
    Rule {
        section: "mixed_precision_training",
        value: "losses_bf16|losses_mixed",
        path: &["*"],
        why: Why::Bf16Kernel(Other::Skip, TRAJECTORY),
    },
    Rule {
        section: "mixed_precision_training",
        value: "final_loss_bf16|final_loss_mixed|updates_lost_bf16|updates_lost_mixed",
        path: &[],
        why: Why::Bf16Kernel(Other::Skip, TRAJECTORY),
    },
    Rule {
        section: "mixed_precision_training",
        value: "high_lr_results",
        path: &["bf16|mixed"],
        why: Why::Bf16Kernel(Other::Skip, TRAJECTORY),
    },
];

pub(crate) fn matches(pattern: &str, text: &str) -> bool {
    pattern == "*" || pattern.split('|').any(|p| p == text)
}

/// The index in [`RULES`] of the first rule matching `loc`.
pub(crate) fn rule_for(loc: &Loc) -> Option<usize> {
    RULES.iter().position(|r| {
        r.section == loc.section
            && matches(r.value, &loc.value)
            && r.path.len() == loc.path.len()
            && r.path.iter().zip(&loc.path).all(|(p, seg)| match seg {
                Seg::Key(k) => matches(p, k),
                Seg::Index(i) => matches(p, &i.to_string()),
            })
    })
}

//! `CS336_CPU_ISA`: the lecture's compute section under every instruction-set level this CPU
//! has records which paths ran and keeps its invariants (rate = FLOPs / time, MFU = rate / the
//! peak of the loop the matmul ran with); a level the CPU lacks, or a value that names none, is a
//! typed error, and `lecture` refuses it before running any section.
//!
//! The expected paths are worked out here from the CPU's features, independently of the code
//! under test: `gemm` runs AVX-512F where the CPU has it, else AVX2+FMA, else portable code; our
//! bf16 kernel goes as high as the level allows.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::process::{assert_clean_failure, assert_success, lecture_cmd};
use cs336::device::cpu::isa::{self, CpuIsa, IsaError};
use cs336::device::{self, DeviceRequest};
use cs336::lecture::provenance;
use cs336::lecture::run::run_section;
use cs336::trace::SectionRecord;
use serde_json::Value;

const SECTION: &str = "tensor_operations_flops";

#[cfg(target_arch = "x86_64")]
fn has(feature: &str) -> bool {
    match feature {
        "avx2" => is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"),
        "avx512f" => is_x86_feature_detected!("avx512f"),
        "avx512bf16" => is_x86_feature_detected!("avx512bf16") && is_x86_feature_detected!("avx512bw"),
        // AMX needs the OS's permission too, and its detection macro is unstable: the
        // kernel's own check (CPUID and the arch_prctl request).
        "amx" => cs336::device::cpu::bf16_gemm::Bf16Kernel::Amx.is_available(),
        _ => false,
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn has(_feature: &str) -> bool {
    false
}

/// The loop named after `gemm`'s float32 kernel on this CPU.
fn expected_f32_loop() -> &'static str {
    if has("avx512f") {
        "avx512_fma"
    } else if has("avx2") {
        "avx2_fma"
    } else {
        "portable_fma"
    }
}

/// The bf16 kernel at `level`.
fn expected_bf16_kernel(level: CpuIsa) -> &'static str {
    match level {
        CpuIsa::Amx => "amx_bf16",
        CpuIsa::Avx512 if has("avx512bf16") => "avx512_bf16",
        _ => "portable-f32",
    }
}

/// The loops our own code runs at `level`: (float32, bf16).
fn expected_level_loops(level: CpuIsa) -> (&'static str, &'static str) {
    match level {
        CpuIsa::Portable => ("portable_fma", "portable_fma"),
        CpuIsa::Avx2 => ("avx2_fma", "avx2_fma"),
        CpuIsa::Avx512 if has("avx512bf16") => ("avx512_fma", "avx512_bf16"),
        CpuIsa::Avx512 => ("avx512_fma", "avx512_fma"),
        CpuIsa::Amx => ("avx512_fma", "amx_bf16"),
    }
}

fn expected_supported(level: CpuIsa) -> bool {
    match level {
        CpuIsa::Portable => true,
        CpuIsa::Avx2 => has("avx2"),
        CpuIsa::Avx512 => has("avx512f"),
        CpuIsa::Amx => has("amx"),
    }
}

fn value<'a>(s: &'a SectionRecord, name: &str) -> &'a Value {
    &s.values
        .get(name)
        .unwrap_or_else(|| panic!("{SECTION} records no `{name}`"))
        .value
}

fn num(v: &Value, what: &str) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("{what} is not a number: {v}"))
}

fn assert_ratio(got: f64, num: f64, den: f64, what: &str) {
    let want = num / den;
    assert!(
        got.is_finite() && got > 0.0 && ((got - want) / want).abs() < 1e-12,
        "{what}: {got}, but {num} / {den} = {want}"
    );
}

/// The compute section, run on the CPU in this process under `level`.
fn run_under(level: CpuIsa) -> Result<SectionRecord, IsaError> {
    common::test_budget();
    let def = cs336::lecture::find(SECTION).expect("the section exists");
    let choice = device::choose(DeviceRequest::Cpu).expect("the CPU is always available");
    let run = provenance::run(common::SEED, Path::new(common::ROOT));
    isa::with_isa(level, || {
        run_section(def, &choice, &run).unwrap_or_else(|e| panic!("{SECTION} under {level}: {e}"))
    })
}

/// The invariants of one run under `level`.
fn check(level: CpuIsa, s: &SectionRecord) {
    let at = |what: &str| format!("{level}: {what}");
    let text = |name: &str| {
        value(s, name)
            .as_str()
            .unwrap_or_else(|| panic!("{name} is not text"))
            .to_string()
    };
    // The paths.
    assert_eq!(text("cpu_isa"), level.name(), "{}", at("cpu_isa"));
    assert_eq!(text("f32_matmul_isa"), expected_f32_loop(), "{}", at("f32_matmul_isa"));
    let kernel = expected_bf16_kernel(level);
    assert_eq!(text("bf16_matmul_isa"), kernel, "{}", at("bf16_matmul_isa"));
    // MFU is against the loop of the instruction set the matmul ran with: gemm's for float32 and
    // for bf16 widened to float32, the kernel's own otherwise.
    assert_eq!(text("peak_loop"), expected_f32_loop(), "{}", at("peak_loop"));
    // The route is the level's kernel, or the widening where timing found the float32 unit
    // faster (`bf16_gemm::route`); the bf16 MFU is against the loop of the unit that ran.
    let route = text("bf16_matmul_route");
    assert!(
        route == kernel || route == "portable-f32",
        "{}: {route}",
        at("bf16_matmul_route")
    );
    assert_eq!(
        value(s, "bf16_widened").as_bool(),
        Some(route == "portable-f32"),
        "{}",
        at("bf16_widened")
    );
    assert_eq!(
        value(s, "bf16_has_instruction").as_bool(),
        Some(kernel != "portable-f32"),
        "{}",
        at("bf16_has_instruction")
    );
    let reason = text("bf16_matmul_route_reason");
    assert!(
        !reason.is_empty() && reason.contains("float32"),
        "{}: {reason}",
        at("reason")
    );
    let bf16_loop = match route.as_str() {
        "portable-f32" => expected_f32_loop(),
        k => k,
    };
    assert_eq!(text("bf16_peak_loop"), bf16_loop, "{}", at("bf16_peak_loop"));

    // Rate = FLOPs / time, MFU = rate / peak.
    let flops = num(value(s, "actual_num_flops"), "actual_num_flops");
    for prefix in ["", "bf16_"] {
        let time = num(value(s, &format!("{prefix}actual_time")), "time");
        let rate = num(value(s, &format!("{prefix}actual_flop_per_sec")), "rate");
        let peak = num(value(s, &format!("{prefix}peak_flop_per_sec")), "peak");
        let mfu = num(value(s, &format!("{prefix}mfu")), "mfu");
        assert_ratio(rate, flops, time, &at(&format!("{prefix}actual_flop_per_sec")));
        assert_ratio(mfu, rate, peak, &at(&format!("{prefix}mfu")));
        let source = text(&format!("{prefix}peak_source"));
        let named = text(&format!("{prefix}peak_loop"));
        assert!(
            source.contains(&format!("({named} loop)")),
            "{}: {source}",
            at("source")
        );
    }

    // The sweep's peaks are the same loops, and each point's MFU is its rate over them.
    let peaks = value(s, "sweep_peaks");
    for (dtype, named) in [("fp32", "peak_loop"), ("bf16", "bf16_peak_loop")] {
        assert_eq!(
            peaks[dtype]["loop"].as_str(),
            Some(text(named).as_str()),
            "{}",
            at("sweep_peaks loop")
        );
        let prefix = if dtype == "fp32" { "" } else { "bf16_" };
        assert_eq!(
            num(&peaks[dtype]["flop_per_sec"], "sweep peak"),
            num(value(s, &format!("{prefix}peak_flop_per_sec")), "peak"),
            "{}",
            at("one measurement per loop")
        );
    }
    let points = value(s, "throughput_sweep").as_array().expect("a list");
    assert!(!points.is_empty());
    for p in points {
        let dtype = p["dtype"].as_str().expect("dtype");
        let rate = num(&p["flop_per_sec"], "sweep rate");
        assert_ratio(
            rate,
            num(&p["flops"], "flops"),
            num(&p["median_s"], "median"),
            &at("sweep rate"),
        );
        let peak = num(&peaks[dtype]["flop_per_sec"], "sweep peak");
        assert_ratio(num(&p["mfu"], "sweep mfu"), rate, peak, &at("sweep mfu"));
    }

    // The level's own peaks, named, beside them.
    let own = value(s, "cpu_isa_peaks");
    let (fp32_loop, bf16_own) = expected_level_loops(level);
    for (mode, want) in [("fp32", fp32_loop), ("bf16", bf16_own)] {
        assert_eq!(own[mode]["loop"].as_str(), Some(want), "{}", at("cpu_isa_peaks loop"));
        let peak = num(&own[mode]["flop_per_sec"], "own peak");
        assert!(peak.is_finite() && peak > 0.0, "{}", at("own peak"));
        // A loop measured once per process: the same figure wherever it is quoted.
        if Some(want) == peaks["fp32"]["loop"].as_str() {
            assert_eq!(
                Some(peak),
                peaks["fp32"]["flop_per_sec"].as_f64(),
                "{}",
                at("same loop, same peak")
            );
        }
    }
}

#[test]
fn the_compute_section_keeps_its_invariants_under_every_level_this_cpu_has() {
    let mut ran = Vec::new();
    for level in CpuIsa::ALL {
        assert_eq!(level.is_supported(), expected_supported(level), "{level}: supported?");
        match run_under(level) {
            Ok(section) => {
                check(level, &section);
                ran.push(level.name());
            }
            Err(IsaError::Unsupported {
                isa,
                missing,
                supported,
            }) => {
                assert!(
                    !expected_supported(level),
                    "{level} refused on a CPU that has it: {missing}"
                );
                assert_eq!(isa, level);
                let err = IsaError::Unsupported {
                    isa,
                    missing,
                    supported,
                };
                let msg = err.to_string();
                assert!(
                    msg.contains(&format!("CS336_CPU_ISA={level}"))
                        && msg.contains("lacks")
                        && msg.contains("portable"),
                    "{msg}"
                );
                common::note_once(&format!("note: {level} not run: {msg}"));
            }
            Err(other) => panic!("{level}: {other}"),
        }
    }
    assert!(ran.contains(&"portable"), "portable runs everywhere");
    common::terminal_note(&format!("note: the compute section ran under {}", ran.join(", ")));
}

#[test]
fn a_value_that_names_no_level_is_a_typed_error() {
    for bad in ["", "sse2", "avx-512", "neon"] {
        let err = CpuIsa::parse(bad).expect_err(bad);
        assert_eq!(err, IsaError::Invalid { value: bad.into() });
        assert!(
            err.to_string().contains("use one of portable, avx2, avx512, amx"),
            "{err}"
        );
    }
    assert_eq!(CpuIsa::parse("AVX512"), Ok(CpuIsa::Avx512));
}

/// `lecture` refuses a bad `CS336_CPU_ISA` before running anything: no trace is written.
#[test]
fn lecture_refuses_a_bad_level_before_running_any_section() {
    let unsupported = CpuIsa::ALL.into_iter().find(|l| !expected_supported(*l));
    let cases: Vec<(String, Vec<&str>)> = [("avx9000".to_string(), vec!["names no instruction-set level"])]
        .into_iter()
        .chain(unsupported.map(|l| {
            (
                l.name().to_string(),
                vec!["lacks", "the levels it supports are portable"],
            )
        }))
        .collect();
    for (value, expect) in cases {
        let dir = tempfile::tempdir().expect("temp dir");
        let trace_dir = dir.path().to_string_lossy().into_owned();
        let mut cmd = lecture_cmd(&["--no-book", "--trace-dir", &trace_dir], None);
        cmd.env("CS336_CPU_ISA", &value);
        let out = common::process::finish(cmd.spawn().expect("spawn"), Duration::from_secs(60), &value);
        let err = assert_clean_failure(&out, &expect);
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("Running"),
            "{value}: it ran: {err}"
        );
        let written: Vec<_> = walk(dir.path());
        assert!(written.is_empty(), "{value}: wrote {written:?}");
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// `CS336_CPU_ISA=portable` through the environment: the run records the level, who set it, and
/// the paths, in the section and in the trace's provenance.
#[test]
fn lecture_records_the_level_set_in_the_environment() {
    let dir = tempfile::tempdir().expect("temp dir");
    let trace_dir = dir.path().to_string_lossy().into_owned();
    let args = [
        "--no-book",
        "--trace-dir",
        &trace_dir,
        "--device",
        "cpu",
        "--section",
        SECTION,
    ];
    let mut cmd = lecture_cmd(&args, None);
    cmd.env("CS336_CPU_ISA", "portable");
    let out = common::process::finish(cmd.spawn().expect("spawn"), Duration::from_secs(600), "portable run");
    assert_success(&out);
    let files: Vec<_> = walk(dir.path())
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    let [file] = files.as_slice() else {
        panic!("one trace expected: {files:?}")
    };
    let trace = cs336::trace::load(file).expect("the trace loads");
    let details = &trace.provenance.device.details;
    assert_eq!(details["cpu_isa"], "portable");
    assert_eq!(details["bf16_matmul_isa"], "portable-f32");
    assert_eq!(details["f32_matmul_isa"], expected_f32_loop());
    let s = trace.section(SECTION).expect("the section");
    assert_eq!(value(s, "cpu_isa_set_by"), "CS336_CPU_ISA");
    check(CpuIsa::Portable, s);
}

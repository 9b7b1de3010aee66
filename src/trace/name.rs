//! What a trace file is called: the one rule, asked by `lecture` (which file to write), by
//! `lecture trace-name` (for `.ci/run`), by the tests (which committed trace is this machine's)
//! and by every reader of a trace folder (a file whose provenance names another device is refused).
//!
//! Two machines whose deterministic values differ must never share a file, and one machine must
//! always find its own. On a GPU the device's name decides (`nvidia-h200`). On a CPU the model
//! alone does not: two AMD EPYCs with other instruction sets round their matmuls differently. So a
//! CPU trace is named `cpu-<model>-<kernels>`, where `<kernels>` names what multiplied:
//!
//! | bf16 matmul kernel | float32 kernel (`gemm`'s pick) | `<kernels>` |
//! |---|---|---|
//! | `amx_bf16` (AMX tiles) | AVX-512F, always with AMX | `amx` |
//! | `avx512_bf16` (`vdpbf16ps`) | AVX-512F, always with AVX512_BF16 | `avx512-bf16` |
//! | `portable-f32` (widened, through the float32 kernel) | `avx512_fma` | `avx512` |
//! | `portable-f32` | `avx2_fma` | `avx2` |
//! | `portable-f32` | `portable_fma` (scalar x86-64, NEON) | `portable` |
//!
//! The bf16 kernel is the one that ran, after `CS336_CPU_ISA` lowered it: `CS336_CPU_ISA=avx2` on a
//! CPU with AVX512_BF16 writes `cpu-<model>-avx512` (bf16 widened, float32 still AVX-512 since the
//! `gemm` crate cannot be limited). Traces older than the `f32_matmul_isa` detail are named from
//! the SIMD extensions the host reported, which is how `gemm` picks.

use super::schema::Provenance;

/// A text in file-name form: lowercased, every run of characters other than a–z and 0–9 turned
/// into one `-`, none at either end (empty when nothing is left).
pub fn words(text: &str) -> String {
    text.to_lowercase()
        .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// A GPU trace's name: the device's name in file-name form (`NVIDIA H200` → `nvidia-h200`).
pub fn gpu_trace_name(device_name: &str) -> String {
    let name = words(device_name);
    if name.is_empty() { "cuda".into() } else { name }
}

/// What decides a CPU trace's numbers besides its model, in file-name form (the table above).
/// `bf16_kernel` and `f32_kernel` are the names the trace records.
pub fn cpu_kernels_tag(bf16_kernel: &str, f32_kernel: &str) -> Result<&'static str, String> {
    match (bf16_kernel, f32_kernel) {
        ("amx_bf16", _) => Ok("amx"),
        ("avx512_bf16", _) => Ok("avx512-bf16"),
        ("portable-f32", "avx512_fma") => Ok("avx512"),
        ("portable-f32", "avx2_fma") => Ok("avx2"),
        ("portable-f32", "portable_fma") => Ok("portable"),
        ("portable-f32", other) => Err(format!("`{other}` names no float32 kernel this build knows")),
        (other, _) => Err(format!("`{other}` names no bf16 kernel this build knows")),
    }
}

/// A CPU trace's name: `cpu-`, the model in file-name form (the architecture where the OS names
/// no model), and the kernels' tag.
pub fn cpu_trace_name(model: &str, arch: &str, tag: &str) -> String {
    let model = Some(words(model))
        .filter(|w| !w.is_empty())
        .unwrap_or_else(|| words(arch));
    format!("cpu-{model}-{tag}")
}

/// The float32 kernel `gemm` picks from the SIMD extensions a host reported (for traces recorded
/// before `f32_matmul_isa` was kept).
fn f32_kernel_from_simd(simd: &[String]) -> &'static str {
    let has = |f: &str| simd.iter().any(|s| s == f);
    if has("avx512f") {
        "avx512_fma"
    } else if has("avx2") && has("fma") {
        "avx2_fma"
    } else {
        "portable_fma"
    }
}

/// The name the rule gives the device a trace's provenance describes, or why it cannot say.
pub fn expected_name(p: &Provenance) -> Result<String, String> {
    let device = &p.device;
    match device.kind.as_str() {
        "cuda" => Ok(gpu_trace_name(&device.name)),
        "cpu" => {
            let detail = |key: &str| device.details.get(key).and_then(|v| v.as_str());
            let bf16 = detail("bf16_matmul_isa")
                .ok_or("its provenance has no `device.details.bf16_matmul_isa` (which bf16 kernel ran)")?;
            let f32 = detail("f32_matmul_isa").unwrap_or_else(|| f32_kernel_from_simd(&p.host.simd));
            let tag = cpu_kernels_tag(bf16, f32)?;
            let arch = p.os.rsplit(", ").next().unwrap_or_default();
            Ok(cpu_trace_name(&device.name, arch, tag))
        }
        other => Err(format!("`device.kind` is `{other}`, neither `cpu` nor `cuda`")),
    }
}

/// Refuses a trace whose provenance names another device than its recorded name or its file
/// (`stem`, the file name without `.json`) says: a trace copied or renamed by hand would otherwise
/// be merged into, compared with or shown as another machine's. The names held to this are those
/// of the rule's shape: a file named as a CPU trace (`cpu-…`), and any file holding a GPU trace. A
/// scratch copy under another name (`cpu.json`, `t.json`) claims no device and is read as it is.
pub fn check(p: &Provenance, stem: &str) -> Result<(), String> {
    if !(stem.starts_with("cpu-") || p.device.kind == "cuda") {
        return Ok(());
    }
    let expected = expected_name(p)?;
    let recorded = &p.device.slug;
    if recorded != &expected {
        return Err(format!(
            "its provenance describes `{expected}` ({}), but it records the device's name as `{recorded}`",
            describe(p)
        ));
    }
    if stem != expected {
        return Err(format!(
            "its provenance says it was recorded on `{expected}` ({}), but the file is named `{stem}.json`; \
             name it `{expected}.json`, or record this device's trace with `cargo run --release --bin lecture`",
            describe(p)
        ));
    }
    Ok(())
}

/// The device as the provenance has it, for messages.
fn describe(p: &Provenance) -> String {
    let d = &p.device;
    let detail = |key: &str| d.details.get(key).and_then(|v| v.as_str()).unwrap_or("not recorded");
    match d.kind.as_str() {
        "cpu" => format!(
            "{}, bf16 kernel {}, float32 kernel {}",
            d.name,
            detail("bf16_matmul_isa"),
            detail("f32_matmul_isa")
        ),
        _ => d.name.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_lowercase_runs_joined_by_dashes() {
        assert_eq!(words("Intel(R) Xeon(R) Processor"), "intel-r-xeon-r-processor");
        assert_eq!(
            words("AMD EPYC 7B13 64-Core Processor"),
            "amd-epyc-7b13-64-core-processor"
        );
        assert_eq!(words("  --Ünïcode ©  "), "n-code");
        assert_eq!(words("©"), "");
        assert_eq!(gpu_trace_name("NVIDIA H200"), "nvidia-h200");
        assert_eq!(gpu_trace_name("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
        assert_eq!(gpu_trace_name("?"), "cuda");
    }

    #[test]
    fn every_kernel_pair_has_one_tag_and_unknown_names_are_refused() {
        assert_eq!(cpu_kernels_tag("amx_bf16", "avx512_fma"), Ok("amx"));
        assert_eq!(cpu_kernels_tag("avx512_bf16", "avx512_fma"), Ok("avx512-bf16"));
        assert_eq!(cpu_kernels_tag("portable-f32", "avx512_fma"), Ok("avx512"));
        assert_eq!(cpu_kernels_tag("portable-f32", "avx2_fma"), Ok("avx2"));
        assert_eq!(cpu_kernels_tag("portable-f32", "portable_fma"), Ok("portable"));
        assert!(cpu_kernels_tag("portable-f32", "sse9").unwrap_err().contains("sse9"));
        assert!(cpu_kernels_tag("tpu", "avx2_fma").unwrap_err().contains("tpu"));
        assert_eq!(cpu_trace_name("AMD EPYC", "x86_64", "avx2"), "cpu-amd-epyc-avx2");
        assert_eq!(cpu_trace_name("", "aarch64", "portable"), "cpu-aarch64-portable");
        assert_eq!(f32_kernel_from_simd(&["avx2".into(), "fma".into()]), "avx2_fma");
        assert_eq!(f32_kernel_from_simd(&["avx2".into(), "avx512f".into()]), "avx512_fma");
        assert_eq!(f32_kernel_from_simd(&["neon".into()]), "portable_fma");
    }

    #[test]
    fn only_names_of_the_rules_shape_are_held_to_it() {
        let p: Provenance = serde_json::from_value(serde_json::json!({
            "device": {"kind": "cpu", "name": "AMD EPYC", "slug": "cpu-amd-epyc-avx2", "memory_bytes": null,
                       "cuda_unavailable_reason": null,
                       "details": {"bf16_matmul_isa": "portable-f32", "f32_matmul_isa": "avx2_fma"}},
            "host": {"cpu_model": "AMD EPYC", "logical_cores": 2, "simd": ["avx2", "fma"]},
            "os": "Debian, kernel 6, x86_64"
        }))
        .expect("provenance");
        assert_eq!(check(&p, "cpu-amd-epyc-avx2"), Ok(()));
        assert_eq!(check(&p, "cpu"), Ok(()), "a scratch name claims no device");
        let other = check(&p, "cpu-amd-epyc-avx512-bf16").expect_err("another CPU's name");
        assert!(
            other.contains("cpu-amd-epyc-avx2") && other.contains("cpu-amd-epyc-avx512-bf16.json"),
            "{other}"
        );
        let mut renamed = p.clone();
        renamed.device.slug = "cpu-amd-epyc".into();
        let slug = check(&renamed, "cpu-amd-epyc").expect_err("the recorded name disagrees");
        assert!(
            slug.contains("`cpu-amd-epyc`") && slug.contains("cpu-amd-epyc-avx2"),
            "{slug}"
        );
        let mut gpu = p.clone();
        gpu.device.kind = "cuda".into();
        gpu.device.name = "NVIDIA H200".into();
        gpu.device.slug = "nvidia-h200".into();
        assert_eq!(check(&gpu, "nvidia-h200"), Ok(()));
        assert!(
            check(&gpu, "gpu")
                .expect_err("a GPU trace is always named")
                .contains("nvidia-h200")
        );
    }
}

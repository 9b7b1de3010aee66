//! A device as a reader says it ("the Intel Xeon with AMX", "the NVIDIA H200"). A trace's slug
//! (`cpu-intel-r-xeon-r-processor-amx`) is a file name: exact, but no one says it aloud, so prose
//! names devices this way and leaves slugs to tables and hover text.

use crate::trace::DeviceInfo;

/// The model without the marks and filler a CPU's brand string carries ("(R)", "Processor"), with
/// the clock it names ("at 2.80GHz"), then, for a CPU, the instructions its slug names: two
/// machines with one model differ there, and the slug's suffix is what decided their numbers.
pub fn spoken(device: &DeviceInfo) -> String {
    let (model, clock) = match device.name.split_once(" @ ") {
        Some((model, clock)) => (model, Some(clock.trim())),
        None => (device.name.as_str(), None),
    };
    let words: Vec<&str> = model
        .split_whitespace()
        .map(|w| w.trim_end_matches("(R)").trim_end_matches("(TM)"))
        .filter(|w| !w.is_empty() && !matches!(*w, "Processor" | "CPU"))
        .collect();
    let model = match (words.is_empty(), clock) {
        (true, _) => device.slug.clone(),
        // The clock the brand string names tells two CPUs of one model apart.
        (false, Some(clock)) if !clock.is_empty() && device.kind == "cpu" => format!("{} at {clock}", words.join(" ")),
        (false, _) => words.join(" "),
    };
    if device.kind != "cpu" {
        return model;
    }
    match kernels(&device.slug) {
        Some(k) => format!("{model} with {k}"),
        None => model,
    }
}

/// The slug's suffix in words, longest first (`-avx512-bf16` before `-avx512`).
fn kernels(slug: &str) -> Option<&'static str> {
    const SUFFIXES: &[(&str, &str)] = &[
        ("-amx", "AMX"),
        ("-avx512-bf16", "AVX-512 and bfloat16 dot products"),
        ("-avx512", "AVX-512"),
        ("-avx2", "AVX2"),
        ("-portable", "no vector kernels"),
    ];
    SUFFIXES.iter().find(|(s, _)| slug.ends_with(s)).map(|(_, w)| *w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(kind: &str, name: &str, slug: &str) -> DeviceInfo {
        DeviceInfo {
            kind: kind.into(),
            name: name.into(),
            slug: slug.into(),
            memory_bytes: None,
            cuda_unavailable_reason: None,
            details: Default::default(),
        }
    }

    #[test]
    fn devices_are_named_as_a_reader_says_them() {
        let said = |kind, name, slug| spoken(&device(kind, name, slug));
        assert_eq!(
            said("cpu", "AMD EPYC", "cpu-amd-epyc-avx512-bf16"),
            "AMD EPYC with AVX-512 and bfloat16 dot products"
        );
        assert_eq!(said("cpu", "AMD EPYC", "cpu-amd-epyc-avx2"), "AMD EPYC with AVX2");
        assert_eq!(
            said(
                "cpu",
                "Intel(R) Xeon(R) Processor @ 2.80GHz",
                "cpu-intel-r-xeon-r-processor-2-80ghz-avx512"
            ),
            "Intel Xeon at 2.80GHz with AVX-512"
        );
        // One model, two instruction sets: two names.
        assert_eq!(
            said(
                "cpu",
                "Intel(R) Xeon(R) Processor",
                "cpu-intel-r-xeon-r-processor-avx512-bf16"
            ),
            "Intel Xeon with AVX-512 and bfloat16 dot products"
        );
        assert_eq!(
            said("cpu", "Intel(R) Xeon(R) Processor", "cpu-intel-r-xeon-r-processor-amx"),
            "Intel Xeon with AMX"
        );
        assert_eq!(said("cuda", "NVIDIA H200", "nvidia-h200"), "NVIDIA H200");
        assert_eq!(said("cpu", "(R)", "cpu-x"), "cpu-x");
    }
}

//! Facts about the host machine, read from the OS: CPU model, cores, SIMD extensions, memory and
//! operating system. The trace's provenance records them, and the CPU device reports its memory.

/// First value of `key` in a file of `key<sep>value` lines (/proc/cpuinfo uses ':', os-release
/// '=' with optional quotes).
fn file_field(path: &str, sep: char, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(sep)?;
        (k.trim() == key).then(|| v.trim().trim_matches('"').to_string())
    })
}

/// The CPU's model name, or the architecture where the OS does not say.
pub fn cpu_model() -> String {
    cpu_model_name().unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// The CPU's model as the OS names it: Linux's `model name` (x86), else the board's device-tree
/// model or the ARM part number (aarch64 Linux has no `model name`); macOS's brand string.
fn cpu_model_name() -> Option<String> {
    let named = |s: String| Some(s.trim().trim_end_matches('\0').to_string()).filter(|s| !s.is_empty());
    if cfg!(target_os = "macos") {
        let out = std::process::Command::new("sysctl")
            .args(["-n", "machdep.cpu.brand_string"])
            .output()
            .ok()?;
        return named(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let field = |key| file_field("/proc/cpuinfo", ':', key).and_then(named);
    field("model name")
        .or_else(|| std::fs::read_to_string("/proc/device-tree/model").ok().and_then(named))
        .or_else(|| {
            let (implementer, part) = (field("CPU implementer")?, field("CPU part")?);
            Some(format!(
                "{} implementer {implementer} part {part}",
                std::env::consts::ARCH
            ))
        })
}

pub fn logical_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Total host memory in bytes (from /proc/meminfo).
pub fn memory_bytes() -> Option<u64> {
    meminfo_bytes("MemTotal")
}

/// Memory the kernel could hand out now without swapping, in bytes (`MemAvailable`): what a new
/// allocation can use before the machine starts to thrash or the OOM killer steps in.
pub fn available_memory_bytes() -> Option<u64> {
    meminfo_bytes("MemAvailable")
}

fn meminfo_bytes(key: &str) -> Option<u64> {
    let kib: u64 = file_field("/proc/meminfo", ':', key)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

/// SIMD extensions the CPU reports and that matter for the kernels here.
#[cfg(target_arch = "x86_64")]
pub fn simd_features() -> Vec<String> {
    let mut out = Vec::new();
    macro_rules! probe {
        ($($f:tt),*) => {$(
            if std::arch::is_x86_feature_detected!($f) {
                out.push($f.to_string());
            }
        )*};
    }
    probe!(
        "sse4.2",
        "avx",
        "avx2",
        "fma",
        "f16c",
        "avx512f",
        "avx512bw",
        "avx512vl",
        "avx512bf16",
        "avx512fp16"
    );
    out
}

/// SIMD extensions the CPU reports and that matter for the kernels here.
#[cfg(target_arch = "aarch64")]
pub fn simd_features() -> Vec<String> {
    let mut out = Vec::new();
    if std::arch::is_aarch64_feature_detected!("neon") {
        out.push("neon".into());
    }
    if std::arch::is_aarch64_feature_detected!("bf16") {
        out.push("bf16".into());
    }
    out
}

/// SIMD extensions the CPU reports and that matter for the kernels here.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn simd_features() -> Vec<String> {
    Vec::new()
}

/// The OS's name, its kernel version and the architecture, e.g. "Ubuntu 24.04, kernel 6.8.0, x86_64".
pub fn os() -> String {
    let pretty = file_field("/etc/os-release", '=', "PRETTY_NAME");
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .map(|s| s.trim().to_string());
    let mut parts = vec![pretty.unwrap_or_else(|| std::env::consts::OS.to_string())];
    if let Some(k) = kernel {
        parts.push(format!("kernel {k}"));
    }
    parts.push(std::env::consts::ARCH.to_string());
    parts.join(", ")
}

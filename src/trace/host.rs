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

/// Bytes this process may still map under its address-space limit (`ulimit -v`, `RLIMIT_AS`),
/// or None when there is no limit or it cannot be read. `MemAvailable` says what the machine has;
/// under such a limit an allocation fails long before that (a 3.6 GB operand under
/// `ulimit -v 3G` passed the memory check and then failed).
pub fn address_space_left_bytes() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit only writes the struct it is given, which lives on this stack.
        if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } != 0 || limit.rlim_cur == libc::RLIM_INFINITY {
            return None;
        }
        // What the process has mapped already counts against the limit.
        let mapped_kib: u64 = file_field("/proc/self/status", ':', "VmSize")?
            .split_whitespace()
            .next()?
            .parse()
            .ok()?;
        Some(limit.rlim_cur.saturating_sub(mapped_kib.saturating_mul(1024)))
    }
    #[cfg(not(unix))]
    None
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

/// The data caches of the first CPU that matter for bandwidth: its L2 and its last level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caches {
    /// Bytes of one core's level-1 data cache, where the OS says.
    pub l1_bytes: Option<u64>,
    /// Bytes of one core's level-2 cache.
    pub l2_bytes: u64,
    /// Bytes of the last-level cache (shared by several cores on most CPUs).
    pub llc_bytes: u64,
    /// Its level (3 on most x86 CPUs; 2 where there is no L3).
    pub llc_level: u8,
}

/// A cache size as Linux's sysfs writes it: `48K`, `1280K`, `32M`, or plain bytes.
pub fn parse_cache_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, scale) = match text.char_indices().last()? {
        (i, 'K') => (&text[..i], 1 << 10),
        (i, 'M') => (&text[..i], 1 << 20),
        (i, 'G') => (&text[..i], 1 << 30),
        _ => (text, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(scale).filter(|&b| b > 0)
}

/// The L2 and last-level cache of CPU 0 from Linux's sysfs (instruction caches left out), or
/// `None` where the OS does not say (another OS, a container that hides sysfs).
pub fn caches() -> Option<Caches> {
    let dir = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
    let mut found: Vec<(u8, u64)> = Vec::new();
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let read = |name: &str| std::fs::read_to_string(entry.path().join(name)).ok();
        if read("type").is_some_and(|t| t.trim() == "Instruction") {
            continue;
        }
        let level = read("level").and_then(|l| l.trim().parse::<u8>().ok());
        let size = read("size").as_deref().and_then(parse_cache_size);
        if let (Some(level), Some(size)) = (level, size) {
            found.push((level, size));
        }
    }
    let l2_bytes = found.iter().find(|(l, _)| *l == 2)?.1;
    let &(llc_level, llc_bytes) = found.iter().max_by_key(|(l, _)| *l)?;
    Some(Caches {
        l1_bytes: found.iter().find(|(l, _)| *l == 1).map(|&(_, b)| b),
        l2_bytes,
        llc_bytes,
        llc_level,
    })
}

#[cfg(test)]
mod cache_tests {
    use super::parse_cache_size;

    #[test]
    fn sysfs_cache_sizes_parse_and_nonsense_does_not() {
        assert_eq!(parse_cache_size("48K\n"), Some(48 << 10));
        assert_eq!(parse_cache_size("49152K"), Some(48 << 20));
        assert_eq!(parse_cache_size("2M"), Some(2 << 20));
        assert_eq!(parse_cache_size("4096"), Some(4096));
        for bad in ["", "K", "0K", "twoM", "-1K"] {
            assert_eq!(parse_cache_size(bad), None, "{bad:?}");
        }
    }
}

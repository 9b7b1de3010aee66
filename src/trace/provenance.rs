//! Where a trace came from: device, host, OS, commit, compiler, time, seed and command line.

use std::path::Path;
use std::process::Command;

use super::schema::{GitInfo, HostInfo};

/// First value of `key` in a file of `key<sep>value` lines (/proc/cpuinfo uses ':', os-release
/// '=' with optional quotes).
fn file_field(path: &str, sep: char, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(sep)?;
        (k.trim() == key).then(|| v.trim().trim_matches('"').to_string())
    })
}

fn proc_field(path: &str, key: &str) -> Option<String> {
    file_field(path, ':', key)
}

pub fn host() -> HostInfo {
    HostInfo {
        cpu_model: proc_field("/proc/cpuinfo", "model name").unwrap_or_else(|| std::env::consts::ARCH.to_string()),
        logical_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        simd: simd_features(),
    }
}

/// Total host memory in bytes (from /proc/meminfo).
pub fn host_memory_bytes() -> Option<u64> {
    let kib: u64 = proc_field("/proc/meminfo", "MemTotal")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kib * 1024)
}

#[cfg(target_arch = "x86_64")]
fn simd_features() -> Vec<String> {
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

#[cfg(target_arch = "aarch64")]
fn simd_features() -> Vec<String> {
    let mut out = Vec::new();
    if std::arch::is_aarch64_feature_detected!("neon") {
        out.push("neon".into());
    }
    if std::arch::is_aarch64_feature_detected!("bf16") {
        out.push("bf16".into());
    }
    out
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn simd_features() -> Vec<String> {
    Vec::new()
}

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

/// Commit and dirty flag of the tree at `root`, asked of git at run time; falls back to the
/// commit embedded at build time when there is no git or no repository (e.g. a copied tree).
pub fn git(root: &Path) -> GitInfo {
    let run = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").arg("-C").arg(root).args(args).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    if let Some(commit) = run(&["rev-parse", "HEAD"]) {
        // Ignore the trace folder itself: writing a trace should not make the next run "dirty".
        let dirty = run(&["status", "--porcelain", "--", ".", ":(exclude)trace"]).map(|s| !s.is_empty());
        return GitInfo {
            commit: Some(commit),
            dirty,
            source: "git".into(),
        };
    }
    let built = env!("LECTURE_BUILD_COMMIT");
    GitInfo {
        commit: (!built.is_empty()).then(|| built.to_string()),
        dirty: None,
        source: "build".into(),
    }
}

pub fn rustc() -> String {
    env!("LECTURE_RUSTC_VERSION").to_string()
}

pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

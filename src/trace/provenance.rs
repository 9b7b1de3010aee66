//! Where a trace came from: host, commit, compiler and time (the host's own facts are read by
//! `crate::host`; the device's by the lecture's runner).

use std::path::Path;
use std::process::Command;

use super::schema::{GitInfo, HostInfo};
use crate::host;

pub fn host() -> HostInfo {
    HostInfo {
        cpu_model: host::cpu_model(),
        logical_cores: host::logical_cores(),
        simd: host::simd_features(),
    }
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

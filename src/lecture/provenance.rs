//! Where a trace came from: the host (its facts are read by `crate::host`; the device's by the
//! lecture's runner), and what a run decides: time, seed, commit, compiler, build and command line.
//! Here, not in the trace crate: how this binary was built is known to this crate's build script.

use std::path::Path;
use std::process::Command;

use crate::host;
use crate::timing::budget;
use crate::trace::{BuildInfo, GitInfo, HostInfo, RunInfo};

pub fn host() -> HostInfo {
    HostInfo {
        cpu_model: host::cpu_model(),
        logical_cores: host::logical_cores(),
        simd: host::simd_features(),
    }
}

/// The provenance a run gives each section it records.
pub fn run(seed: u64, root: &Path) -> RunInfo {
    RunInfo {
        recorded_at: now(),
        seed,
        git: git(root),
        rustc: rustc(),
        build: build(),
        // As the OS gave it, lossily: an argument that is not UTF-8 (a folder's name) is kept
        // readable rather than stopping the run after its sections ran.
        command_line: std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect(),
        budget: budget::is_test().then(|| budget::Scale::Test.name().to_string()),
    }
}

/// The commit the code that ran came from, and whether the tree had uncommitted changes.
pub fn git(root: &Path) -> GitInfo {
    let ask = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").arg("-C").arg(root).args(args).output().ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let built = env!("LECTURE_BUILD_COMMIT");
    let built = (!built.is_empty()).then_some(built);
    // Ignore the trace folder itself: writing a trace should not make the next run "dirty".
    let dirty = || ask(&["status", "--porcelain", "--", ".", ":(exclude)trace"]).map(|s| !s.is_empty());
    decide_git(ask(&["rev-parse", "HEAD"]), built, dirty)
}

/// The commit embedded at build time wins whenever the tree at run time has no git or another
/// HEAD: a binary carried to another machine runs inside a copy whose `.git` may say anything.
/// Uncommitted changes are only asserted when the tree's HEAD is the commit that was built.
fn decide_git(at_run: Option<String>, built: Option<&str>, dirty: impl FnOnce() -> Option<bool>) -> GitInfo {
    match (at_run, built) {
        (Some(head), Some(built)) if head != built => GitInfo {
            commit: Some(built.to_string()),
            dirty: None,
            source: "build".into(),
        },
        (Some(head), Some(_)) => GitInfo {
            commit: Some(head),
            dirty: dirty(),
            source: "git".into(),
        },
        // Built without git (a source archive), run in a repository: its HEAD is the best guess,
        // but whether it is what was built is unknown, and so is cleanliness.
        (Some(head), None) => GitInfo {
            commit: Some(head),
            dirty: None,
            source: "git".into(),
        },
        (None, built) => GitInfo {
            commit: built.map(str::to_string),
            dirty: None,
            source: "build".into(),
        },
    }
}

/// How this binary was compiled (Cargo's facts, captured by build.rs).
pub fn build() -> BuildInfo {
    BuildInfo {
        profile: env!("LECTURE_BUILD_PROFILE").to_string(),
        opt_level: env!("LECTURE_BUILD_OPT_LEVEL").to_string(),
        debug_assertions: cfg!(debug_assertions),
        target_arch: env!("LECTURE_BUILD_TARGET_ARCH").to_string(),
        target_features: env!("LECTURE_BUILD_TARGET_FEATURES")
            .split(',')
            .filter(|f| !f.is_empty())
            .map(str::to_string)
            .collect(),
    }
}

pub fn rustc() -> String {
    env!("LECTURE_RUSTC_VERSION").to_string()
}

pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_commit_wins_when_the_tree_says_otherwise() {
        let dirty = || Some(true);
        let git = |at_run: Option<&str>, built| decide_git(at_run.map(str::to_string), built, dirty);
        let same = git(Some("aaa"), Some("aaa"));
        assert_eq!(
            (same.commit.as_deref(), same.dirty, same.source.as_str()),
            (Some("aaa"), Some(true), "git")
        );
        // A copied tree whose .git holds another commit: the build's, cleanliness unknown.
        let other = git(Some("bbb"), Some("aaa"));
        assert_eq!(
            (other.commit.as_deref(), other.dirty, other.source.as_str()),
            (Some("aaa"), None, "build")
        );
        let no_git = git(None, Some("aaa"));
        assert_eq!((no_git.commit.as_deref(), no_git.dirty), (Some("aaa"), None));
        // Built outside git (a source archive) but run in a repository.
        let unbuilt = git(Some("ccc"), None);
        assert_eq!((unbuilt.commit.as_deref(), unbuilt.dirty), (Some("ccc"), None));
        assert_eq!(git(None, None).commit, None);
    }

    #[test]
    fn the_build_facts_are_cargos() {
        let b = build();
        assert_eq!(b.target_arch, std::env::consts::ARCH);
        assert!(["0", "1", "2", "3", "s", "z"].contains(&b.opt_level.as_str()), "{b:?}");
        assert_eq!(b.debug_assertions, cfg!(debug_assertions));
        #[cfg(target_arch = "x86_64")]
        assert!(b.target_features.iter().any(|f| f == "sse2"), "{b:?}");
    }
}

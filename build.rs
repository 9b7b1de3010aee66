//! Captures facts for the trace's provenance that are only known at build time: the compiler's
//! version (the machine running the lecture may have no toolchain), the commit being built (a copy
//! of the tree without `.git` can still say what it was built from) and how the code was compiled
//! (profile, optimisation level, target architecture and features: an unoptimised build measures
//! a slower machine than the one it runs on).

use std::path::PathBuf;
use std::process::Command;

fn output(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn env(key: &str) -> String {
    std::env::var(key).unwrap_or_default()
}

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = output(&rustc, &["--version"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=LECTURE_RUSTC_VERSION={version}");
    let commit = output("git", &["rev-parse", "HEAD"]).unwrap_or_default();
    println!("cargo:rustc-env=LECTURE_BUILD_COMMIT={commit}");
    for (name, key) in [
        ("PROFILE", "PROFILE"),
        ("OPT_LEVEL", "OPT_LEVEL"),
        ("TARGET_ARCH", "CARGO_CFG_TARGET_ARCH"),
        ("TARGET_FEATURES", "CARGO_CFG_TARGET_FEATURE"),
    ] {
        println!("cargo:rustc-env=LECTURE_BUILD_{name}={}", env(key));
    }
    // Rebuild when HEAD moves so the embedded commit stays right: watch HEAD and the branch it
    // names (in a worktree `.git` is a file, so ask git where they are). A branch packed away has
    // no file of its own until its next commit: then watch the folder it will appear in.
    let git_path = |what: &str| output("git", &["rev-parse", "--git-path", what]).map(PathBuf::from);
    let mut watched = vec![git_path("HEAD"), git_path("packed-refs")];
    if let Some(branch) = output("git", &["symbolic-ref", "-q", "HEAD"]) {
        let file = git_path(&branch).filter(|p| p.exists());
        watched.push(file.or_else(|| git_path("refs/heads")));
    }
    for path in watched.into_iter().flatten().filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    println!("cargo:rerun-if-changed=build.rs");
}

//! Captures facts for the trace's provenance that are only known at build time: the compiler's
//! version (the machine running the lecture may have no toolchain) and the commit being built
//! (a copy of the tree without `.git` can still say what it was built from).

use std::process::Command;

fn output(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = output(&rustc, &["--version"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=LECTURE_RUSTC_VERSION={version}");
    let commit = output("git", &["rev-parse", "HEAD"]).unwrap_or_default();
    println!("cargo:rustc-env=LECTURE_BUILD_COMMIT={commit}");
    // Rebuild when HEAD moves so the embedded commit stays right.
    for path in [".git/HEAD", ".git/refs/heads"] {
        if std::path::Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}

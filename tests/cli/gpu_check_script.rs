//! The GPU check's scripts, rehearsed without a GPU: `.ci/gpu-check` run against stand-in
//! binaries and a stand-in `python3` that record the environment they were started with, and
//! `.ci/gpu-prepare` refusing machines it cannot build for. What is checked: our binaries get the
//! CUDA libraries' folders (PyTorch's wheels first) on their loader path while PyTorch keeps the
//! environment it came with; the steps' time limits fit the documented device call with 30 s to
//! spare; the log ends with the final status line.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn write_exe(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn script(name: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(".ci").join(name)).expect("read the script")
}

/// The documented device call's timeout, wherever the call is written.
fn documented_timeouts(text: &str) -> Vec<u64> {
    text.match_indices("timeout_s=")
        .map(|(i, m)| {
            let digits: String = text[i + m.len()..].chars().take_while(char::is_ascii_digit).collect();
            digits.parse().expect("a number after timeout_s=")
        })
        .collect()
}

#[test]
fn step_limits_fit_the_documented_call() {
    let check = script("gpu-check");
    let limits: Vec<u64> = check
        .lines()
        .filter_map(|l| l.strip_prefix("LIMIT_"))
        .map(|l| {
            l.split('=')
                .nth(1)
                .expect("NAME=SECONDS")
                .trim()
                .parse()
                .expect("seconds")
        })
        .collect();
    assert_eq!(limits.len(), 6, "one limit per timed step");
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).expect("README");
    let documented: Vec<u64> = [check.as_str(), script("gpu-prepare").as_str(), readme.as_str()]
        .iter()
        .flat_map(|t| documented_timeouts(t))
        .collect();
    assert!(
        documented.len() >= 3,
        "the call is documented in the script, gpu-prepare and the README"
    );
    assert!(
        documented.iter().all(|&t| t == documented[0]),
        "one documented timeout: {documented:?}"
    );
    let timeout = documented[0];
    assert!(
        timeout <= 300,
        "the device call leaves room for a rerun within 15 minutes: {timeout}"
    );
    let sum: u64 = limits.iter().sum();
    assert!(
        sum + 30 <= timeout,
        "steps {limits:?} add up to {sum} s, not 30 s under {timeout}"
    );
    // Every timed step uses its limit.
    for name in ["LECTURE", "PANELS", "INVARIANTS", "AGREEMENT", "BENCH", "TORCH"] {
        assert!(
            check.contains(&format!("timeout \"$LIMIT_{name}\"")) || check.contains(&format!("SECONDS + LIMIT_{name}")),
            "LIMIT_{name} is not used"
        );
    }
}

/// What `.ci/gpu-check` did with stand-ins: its log, the lines the stand-ins wrote when started
/// (each its name and loader path, the lecture also its arguments), and whether it passed.
struct Rehearsal {
    log: String,
    calls: String,
    passed: bool,
    /// The files left under `$OUT`, which the device tool brings back (8 at most).
    files_back: Vec<PathBuf>,
}

/// Every file under `dir`, however deep, hidden ones too.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten() {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// Runs `.ci/gpu-check` against stand-in binaries and a stand-in `python3`; `lecture` is the
/// stand-in lecture's shell body after it notes its start (its arguments are `$@`).
fn rehearse(lecture: &str) -> Rehearsal {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = dir.path();
    let calls = t.join("calls.log");
    std::fs::create_dir_all(t.join(".ci")).expect("mkdir");
    std::fs::write(t.join(".ci/gpu-check"), script("gpu-check")).expect("copy");
    // Stand-in binaries: each notes its loader path; the lecture also writes a trace.
    let note = format!(
        "echo \"$(basename \"$0\") LD=${{LD_LIBRARY_PATH:-}}\" >> {}\n",
        calls.display()
    );
    for b in [
        "cuda_bench",
        "cuda_agreement",
        "invariants_foundation",
        "training_invariants",
        "einops",
    ] {
        write_exe(&t.join(".gpu").join(b), &format!("#!/bin/sh\n{note}"));
    }
    let args = format!("echo \"lecture args: $*\" >> {}\n", calls.display());
    write_exe(&t.join(".gpu/lecture"), &format!("#!/bin/sh\n{note}{args}{lecture}"));
    // PyTorch's wheel folder, as `import nvidia` would report it.
    let wheel = t.join("site-packages/nvidia/cu13/lib");
    for lib in ["libcublas.so.13", "libcublasLt.so.13", "libnvrtc.so.13", "libcuda.so.1"] {
        write_exe(&wheel.join(lib), "");
    }
    let fake = t.join("fakebin");
    write_exe(
        &fake.join("python3"),
        &format!(
            "#!/bin/sh\nif [ \"$1\" = - ]; then echo {}; exit 0; fi\necho \"python3 $(basename \"$1\") LD=${{LD_LIBRARY_PATH:-}}\" >> {}\n",
            wheel.display(),
            calls.display()
        ),
    );
    write_exe(&fake.join("nvidia-smi"), "#!/bin/sh\necho 'NVIDIA Stand-in, 0 MiB'\n");
    write_exe(&fake.join("ldd"), "#!/bin/sh\necho 'linux-vdso.so.1'\n");
    let out = t.join("out");
    let status = Command::new("bash")
        .arg(t.join(".ci/gpu-check"))
        .env(
            "PATH",
            format!("{}:{}", fake.display(), std::env::var("PATH").unwrap_or_default()),
        )
        .env("OUT", &out)
        .env("LD_LIBRARY_PATH", "/as/started")
        .env("TMPDIR", t)
        .output()
        .expect("bash runs");
    Rehearsal {
        log: std::fs::read_to_string(out.join("gpu-check.log")).expect("the log"),
        calls: std::fs::read_to_string(&calls).expect("the binaries ran"),
        passed: status.status.success(),
        files_back: files_under(&out),
    }
}

/// The stand-in lecture's body that writes a trace into its `--trace-dir` (its fourth argument),
/// leaving the trace's lock file beside it as the lecture does.
const WRITES_A_TRACE: &str = "mkdir -p \"$4/lecture_02\" && echo '{}' > \"$4/lecture_02/fake-gpu.json\" \\
    && echo 1 > \"$4/lecture_02/.fake-gpu.json.lock\"\n";

#[test]
fn our_binaries_get_the_library_path_and_pytorch_keeps_its_own() {
    let Rehearsal {
        log,
        calls,
        passed,
        files_back,
    } = rehearse(WRITES_A_TRACE);
    // The device tool brings back 8 files at most: the trace must be one of them, its lock not.
    let names: Vec<String> = files_back
        .iter()
        .map(|p| p.file_name().expect("a name").to_string_lossy().into_owned())
        .collect();
    assert!(names.len() <= 8, "{names:?}");
    assert!(names.iter().any(|n| n == "fake-gpu.json"), "{names:?}");
    assert!(!names.iter().any(|n| n.ends_with(".lock")), "{names:?}");
    let ld_of = |who: &str| -> String {
        let line = calls
            .lines()
            .find(|l| l.starts_with(who))
            .unwrap_or_else(|| panic!("{who} never ran:\n{log}"));
        line.split_once("LD=").expect("LD=").1.to_string()
    };
    let wheel = calls
        .lines()
        .find_map(|l| l.strip_prefix("lecture LD="))
        .and_then(|ld| ld.strip_suffix(":/as/started"))
        .expect("the lecture ran with a folder in front of the path it was started with");
    assert!(wheel.ends_with("site-packages/nvidia/cu13/lib"), "{wheel}");
    for ours in [
        "lecture",
        "cuda_bench",
        "cuda_agreement",
        "invariants_foundation",
        "training_invariants",
        "einops",
    ] {
        assert_eq!(ld_of(ours), format!("{wheel}:/as/started"), "{ours}");
    }
    for theirs in ["torch_matmul_gpu.py", "run_panels.py", "gpu_summary.py"] {
        assert_eq!(
            ld_of(&format!("python3 {theirs}")),
            "/as/started",
            "PyTorch must keep its own loader path ({theirs})"
        );
    }
    // The log is complete: its last line is the verdict, written right before the script exits.
    let last = log
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .expect("a non-empty log");
    assert!(last.starts_with("gpu-check: "), "last line: {last}");
    assert!(passed, "every stand-in step succeeded, so the check passes:\n{log}");
}

/// A section that fails on the GPU costs only itself: the lecture is run again without it, the
/// trace holds the others, and the check fails naming it.
#[test]
fn a_failing_section_is_left_out_and_the_others_are_recorded() {
    let lecture = format!(
        "if [ \"$1\" = --list ]; then printf ' 1. alpha  A\\n 2. beta   B\\n 3. gamma  C\\n'; exit 0; fi\n\
         case \"$*\" in *--section*) ;; *) echo 'error: section `beta` failed: out of luck' >&2; exit 1 ;; esac\n\
         {WRITES_A_TRACE}"
    );
    let Rehearsal { log, calls, passed, .. } = rehearse(&lecture);
    let runs: Vec<&str> = calls.lines().filter_map(|l| l.strip_prefix("lecture args: ")).collect();
    assert_eq!(runs.len(), 3, "a run, the list, a run without beta: {runs:?}\n{log}");
    assert!(!runs[0].contains("--section"), "{runs:?}");
    assert_eq!(runs[1], "--list");
    assert!(
        runs[2].ends_with("--no-book --section alpha --section gamma"),
        "{runs:?}"
    );
    assert!(log.contains("without: beta"), "{log}");
    assert!(
        log.contains("these sections failed and are not in the trace: beta"),
        "{log}"
    );
    // The later steps ran on the trace of the sections that passed.
    assert!(calls.contains("python3 run_panels.py"), "{calls}");
    assert!(calls.contains("cuda_bench LD="), "{calls}");
    assert!(!passed, "a left-out section fails the check:\n{log}");
}

/// A lecture that fails without naming a section is not run again.
#[test]
fn a_lecture_failing_outside_a_section_is_not_run_again() {
    let Rehearsal { log, calls, passed, .. } = rehearse("echo 'error: no CUDA driver' >&2; exit 1\n");
    let runs = calls.lines().filter(|l| l.starts_with("lecture args: ")).count();
    assert_eq!(runs, 1, "{calls}");
    assert!(log.contains("FAILED: the lecture on CUDA (exit 1)"), "{log}");
    assert!(log.contains("the PyTorch panels (no trace was written)"), "{log}");
    assert!(!passed);
}

#[test]
fn gpu_prepare_refuses_what_it_cannot_carry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = dir.path().join("fakebin");
    // A PATH with the shell tools the script needs up to its checks, but no `strip`.
    std::fs::create_dir_all(&fake).expect("mkdir");
    for tool in ["dirname", "uname"] {
        let real = Command::new("sh")
            .arg("-c")
            .arg(format!("command -v {tool}"))
            .output()
            .expect("sh");
        let real = String::from_utf8_lossy(&real.stdout).trim().to_string();
        std::os::unix::fs::symlink(&real, fake.join(tool)).expect("link");
    }
    // The shell itself by its full path: the PATH given to the script holds only the stand-ins.
    let bash = Command::new("sh")
        .arg("-c")
        .arg("command -v bash")
        .output()
        .expect("sh");
    let bash = String::from_utf8_lossy(&bash.stdout).trim().to_string();
    let run = |path: &Path| {
        Command::new(&bash)
            .arg(Path::new(ROOT).join(".ci/gpu-prepare"))
            .env("PATH", path)
            .output()
            .expect("bash runs")
    };
    let out = run(&fake);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("`strip`"), "{err}");
    // On another architecture it refuses before anything else.
    std::fs::remove_file(fake.join("uname")).expect("rm");
    write_exe(&fake.join("uname"), "#!/bin/sh\necho aarch64\n");
    let out = run(&fake);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("aarch64") && err.contains("x86_64"),
        "{err}"
    );
}

/// Every test binary that checks trace invariants (calls `for_each_trace` or `checkable_traces`)
/// is carried to the GPU machine and run there on the trace just written.
#[test]
fn every_trace_invariant_binary_runs_on_the_gpu_trace() {
    // Every `.rs` file under `dir`, however deep (a binary's modules may be folders).
    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("a test folder") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    // Spelled in parts, so that this file, itself in a test binary, does not match them.
    let calls = [concat!("for_each", "_trace("), concat!("checkable", "_traces(")];
    let mut binaries = Vec::new();
    for entry in std::fs::read_dir(Path::new(ROOT).join("tests")).expect("tests/") {
        let path = entry.expect("an entry").path();
        // A test binary is a file `tests/NAME.rs` or a folder `tests/NAME/` with a `main.rs`.
        let mut files = Vec::new();
        if path.extension().is_some_and(|e| e == "rs") {
            files.push(path.clone());
        } else if path.join("main.rs").is_file() {
            rust_files(&path, &mut files);
        }
        if !files.is_empty() {
            let read = |p: &PathBuf| std::fs::read_to_string(p).expect("readable");
            let text: String = files.iter().map(read).collect::<Vec<_>>().join("\n");
            // A test binary of the crate's (it declares the shared test module) that reads traces.
            let reads_traces = calls.iter().any(|call| text.contains(call));
            if text.contains("\nmod common;") && reads_traces {
                binaries.push(path.file_stem().expect("a name").to_string_lossy().into_owned());
            }
        }
    }
    binaries.sort();
    assert!(binaries.len() >= 3, "found {binaries:?}");
    let check = script("gpu-check");
    let list = check
        .lines()
        .find_map(|l| l.strip_prefix("TRACE_TESTS=("))
        .and_then(|l| l.strip_suffix(')'))
        .expect("gpu-check has a TRACE_TESTS=(…) line");
    let mut run: Vec<String> = list
        .split('"')
        .enumerate()
        .flat_map(|(i, part)| {
            // Quoted parts are "binary filter"; the rest is binaries separated by spaces.
            if i % 2 == 1 {
                vec![part.split_whitespace().next().unwrap_or("").to_string()]
            } else {
                part.split_whitespace().map(String::from).collect()
            }
        })
        .collect();
    run.sort();
    assert_eq!(run, binaries, "gpu-check's TRACE_TESTS and the tests of traces");
    let prepare = script("gpu-prepare");
    let copied = prepare
        .lines()
        .find_map(|l| l.trim().strip_prefix("for t in "))
        .and_then(|l| l.strip_suffix("; do"))
        .expect("gpu-prepare's loop over the test binaries");
    for b in &binaries {
        assert!(
            copied.split_whitespace().any(|c| c == b),
            "gpu-prepare does not carry {b}"
        );
    }
}

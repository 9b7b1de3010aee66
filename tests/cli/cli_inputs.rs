//! `lecture` meets clumsy inputs: files that are not traces (devices, pipes, huge files), trace
//! folders it cannot write, a corrupt neighbour trace, `get --record` with a path. Every case
//! ends quickly with one clear message; a run that cannot write fails before any section runs.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::process::{assert_clean_failure, assert_success, run_lecture, text};

const QUICK: Duration = Duration::from_secs(20);
const RUN: Duration = Duration::from_secs(120);

fn slug() -> String {
    cs336::device::choose(cs336::device::DeviceRequest::Cpu)
        .expect("cpu")
        .device
        .slug()
        .expect("this CPU has a trace name")
}

fn trace_file(dir: &Path) -> PathBuf {
    dir.join("lecture_02").join(format!("{}.json", slug()))
}

/// No section's line (`  id   time`) in the run's output.
fn assert_no_section_ran(stdout: &str) {
    for s in cs336::lecture::SECTIONS {
        assert!(
            !stdout
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{} ", s.id))),
            "section {} ran: {stdout}",
            s.id
        );
    }
}

#[test]
fn get_record_with_a_path_walks_into_the_value() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8");
    assert_success(&run_lecture(
        &["--trace-dir", d, "--no-book", "--section", "tensors_memory"],
        None,
        RUN,
    ));
    let out = assert_success(&run_lecture(
        &["--trace-dir", d, "get", "tensors_memory.fp8_e5m2_info.max", "--record"],
        None,
        QUICK,
    ));
    let rec: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    let whole = cs336::trace::load(&trace_file(dir.path())).expect("trace");
    let recorded = whole.value("tensors_memory", "fp8_e5m2_info").expect("value");
    assert_eq!(rec["value"], serde_json::json!(57344.0), "{out}");
    assert_eq!(rec["unit"], serde_json::to_value(recorded.unit).expect("unit"), "{out}");
    assert_eq!(rec["line"], serde_json::json!(recorded.line), "{out}");
    assert_eq!(rec["path"], serde_json::json!("max"), "{out}");
}

#[test]
fn an_os_error_is_printed_once() {
    let o = run_lecture(&["get", "a.b", "--trace", "/nonexistent/cpu.json"], None, QUICK);
    let err = assert_clean_failure(&o, &["/nonexistent/cpu.json", "No such file or directory"]);
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
}

#[test]
fn files_that_are_not_traces_are_refused_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let big = dir.path().join("big.json");
    // Sparse: 300 MiB that take no disk space.
    std::fs::File::create(&big)
        .and_then(|f| f.set_len(300 << 20))
        .expect("sparse file");
    let fifo = dir.path().join("pipe.json");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status();
    let mut cases = vec![
        ("/dev/zero".to_string(), "not a regular file"),
        ("/dev/urandom".to_string(), "not a regular file"),
        (dir.path().display().to_string(), "not a regular file"),
        (big.display().to_string(), "larger than"),
    ];
    if status.is_ok_and(|s| s.success()) {
        cases.push((fifo.display().to_string(), "not a regular file"));
    } else {
        eprintln!("note: no `mkfifo`; the named-pipe case is skipped");
    }
    for (file, expected) in cases {
        let start = std::time::Instant::now();
        let o = run_lecture(&["get", "a.b", "--trace", &file], None, QUICK);
        assert_clean_failure(&o, &[&file, expected]);
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{file} took {:?}",
            start.elapsed()
        );
    }
}

#[test]
fn a_run_that_cannot_write_its_trace_fails_before_any_section() {
    // A folder that cannot be created (even by root).
    let o = run_lecture(&["--trace-dir", "/proc/self/cs336-nope", "--no-book"], None, RUN);
    let err = assert_clean_failure(&o, &["/proc/self/cs336-nope"]);
    assert_no_section_ran(&text(&o).0);
    assert!(err.matches("os error").count() <= 1, "{err}");

    // `lecture_02` is a file, not a folder.
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("lecture_02"), "x").expect("write");
    let d = dir.path().to_str().expect("utf-8");
    let o = run_lecture(
        &["--trace-dir", d, "--no-book", "--section", "tensors_memory"],
        None,
        RUN,
    );
    assert_clean_failure(&o, &["lecture_02", "is not a folder"]);
    assert_no_section_ran(&text(&o).0);

    // The trace's own name is taken by a folder.
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(trace_file(dir.path()).join("inside")).expect("mkdir");
    let d = dir.path().to_str().expect("utf-8");
    let o = run_lecture(&["--trace-dir", d, "--no-book"], None, RUN);
    assert_clean_failure(&o, &[&format!("{}.json", slug()), "is a folder"]);
    assert_no_section_ran(&text(&o).0);

    // A read-only trace folder (root may write anyway: then there is nothing to check).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let folder = dir.path().join("lecture_02");
        std::fs::create_dir_all(&folder).expect("mkdir");
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o555)).expect("chmod");
        let writable = std::fs::write(folder.join("probe"), "x").is_ok();
        std::fs::remove_file(folder.join("probe")).ok();
        // Root writes into read-only folders; an immutable one (`chattr +i`, where the file system
        // has it) stops root too.
        let immutable = if writable { Immutable::set(&folder) } else { None };
        if writable && immutable.is_none() {
            eprintln!("note: this user writes into read-only folders and `chattr +i` is not available; skipped");
        } else {
            let d = dir.path().to_str().expect("utf-8");
            let o = run_lecture(&["--trace-dir", d, "--no-book"], None, RUN);
            assert_clean_failure(&o, &["lecture_02", "cannot be written"]);
            assert_no_section_ran(&text(&o).0);
        }
        drop(immutable);
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).expect("chmod back");
    }
}

/// A folder made immutable with `chattr +i` for as long as this lives.
#[cfg(unix)]
struct Immutable(PathBuf);

#[cfg(unix)]
impl Immutable {
    /// Whether the folder could be made immutable (then it is until the guard drops).
    fn set(folder: &Path) -> Option<Immutable> {
        let ok = std::process::Command::new("chattr")
            .arg("+i")
            .arg(folder)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Immutable(folder.to_path_buf()))
    }
}

#[cfg(unix)]
impl Drop for Immutable {
    fn drop(&mut self) {
        std::process::Command::new("chattr")
            .arg("-i")
            .arg(&self.0)
            .status()
            .ok();
    }
}

#[test]
fn a_full_run_replaces_an_unreadable_trace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = trace_file(dir.path());
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, "{\"schema_version\": 0}").expect("write");
    let d = dir.path().to_str().expect("utf-8");
    assert_success(&run_lecture(&["--trace-dir", d, "--no-book"], None, RUN));
    assert!(cs336::trace::load(&path).is_ok());
}

#[test]
fn a_corrupt_neighbour_trace_stops_a_run_that_builds_the_book_before_it_starts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8");
    let html = dir.path().join("html");
    // A complete trace to start from: the binary's one fresh run.
    let path = common::put_fresh_trace(dir.path());
    assert_eq!(path, trace_file(dir.path()));
    let neighbour = path.with_file_name("zz-other-device.json");
    std::fs::write(&neighbour, "{ not json").expect("write");
    let before = std::fs::read(&path).expect("read");

    let o = run_lecture(&["--trace-dir", d, "--section", "tensors_memory"], Some(&html), RUN);
    assert_clean_failure(&o, &["zz-other-device.json", "not valid JSON"]);
    assert_no_section_ran(&text(&o).0);
    assert_eq!(std::fs::read(&path).expect("read"), before, "the trace is untouched");

    // Without the book the run goes ahead and warns.
    let o = run_lecture(
        &["--trace-dir", d, "--no-book", "--section", "tensors_memory"],
        None,
        RUN,
    );
    assert_success(&o);
    let err = text(&o).1;
    assert!(err.contains("warning") && err.contains("zz-other-device.json"), "{err}");
}

/// A write that fails for want of space (here: a file size limit, as a full disk would) stops the
/// run with one clear message, the OS error said once, and no trace written.
#[cfg(unix)]
#[test]
fn a_write_that_fails_for_space_says_so_once() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8");
    // Most of the lecture (a trace far past the limit), without the sections that take seconds.
    let mut args = vec!["--trace-dir", d, "--no-book"];
    args.extend(common::process::quick_section_args());
    let mut cmd = common::process::lecture_cmd(&args, None);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit {
                rlim_cur: 20_000,
                rlim_max: 20_000,
            };
            libc::setrlimit(libc::RLIMIT_FSIZE, &limit);
            Ok(())
        });
    }
    let o = common::process::finish(cmd.spawn().expect("spawn"), RUN, "lecture with a file size limit");
    let err = assert_clean_failure(&o, &["File too large"]);
    assert_eq!(err.matches("os error").count(), 1, "{err}");
    assert!(!trace_file(dir.path()).exists(), "no trace written");
}

/// `bench` with `args`, at most `limit`.
fn run_bench(args: &[&str], stdout: Option<std::fs::File>, limit: Duration) -> std::process::Output {
    let mut cmd = crate::common::process::at_test_budget(env!("CARGO_BIN_EXE_bench"));
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    match stdout {
        Some(file) => cmd.stdout(file),
        None => cmd.stdout(std::process::Stdio::piped()),
    };
    common::process::finish(cmd.spawn().expect("spawn bench"), limit, &args.join(" "))
}

/// Sizes a benchmark cannot run are refused with a message before anything is allocated: no abort
/// on a failed 4 TB allocation, no panic on a time `Duration` cannot hold, no nonsense from 0.
#[test]
fn bench_refuses_what_it_cannot_run_before_it_allocates() {
    let cases: [(&[&str], &[&str]); 6] = [
        (
            &["train-step", "--dim", "1000000", "--layers", "1", "--batch", "1"],
            &["host memory", "GiB", "smaller sizes"],
        ),
        (&["train-step", "--layers", "0"], &["--layers must be at least 1"]),
        (&["train-step", "--batch", "0"], &["--batch must be at least 1"]),
        (&["cpu-matmul", "--min-time", "1e300"], &["--min-time 1e300", "a day"]),
        (&["matmul-overhead", "--min-time=-1"], &["--min-time -1.0"]),
        (
            &["matmul-overhead", "--threads", "100000"],
            &["--threads 100000", "cores"],
        ),
    ];
    for (args, expect) in cases {
        let o = run_bench(args, None, QUICK);
        assert_clean_failure(&o, expect);
    }
    // clap's own refusal of a value not in the list: exit 2 with the choices, not a panic.
    let o = run_bench(&["train-step", "--optimizer", "adam"], None, QUICK);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("possible values: adagrad, sgd"), "{err}");
}

/// A bench whose reader closed the pipe ends quietly; one whose stdout is full says so.
#[cfg(unix)]
#[test]
fn bench_output_into_a_closed_pipe_or_a_full_device() {
    let args = ["matmul-overhead", "--min-time", "0", "--min-samples", "1"];
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut cmd = crate::common::process::at_test_budget(env!("CARGO_BIN_EXE_bench"));
    cmd.args(args).stdout(writer).stderr(std::process::Stdio::piped());
    let o = common::process::finish(cmd.spawn().expect("spawn"), QUICK, "bench | (closed)");
    let (_, err) = text(&o);
    assert!(o.status.success() && err.is_empty(), "quiet: {err}");
    if let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") {
        let o = run_bench(&args, Some(full), QUICK);
        assert_clean_failure(&o, &["could not write to standard output", "No space left"]);
    }
}

/// A run never writes through a link that leaves the trace folder for a file that is not a trace,
/// full or partial; a link to a trace elsewhere (a shared folder) is followed.
#[cfg(unix)]
#[test]
fn a_link_out_of_the_trace_folder_is_followed_only_to_a_trace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8");
    let path = trace_file(dir.path());
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "my notes").expect("write");
    std::os::unix::fs::symlink(&notes, &path).expect("link");
    for args in [
        vec!["--trace-dir", d, "--no-book"],
        vec!["--trace-dir", d, "--no-book", "--section", "motivating_questions"],
    ] {
        let o = run_lecture(&args, None, RUN);
        assert_clean_failure(&o, &["symbolic link to", "notes.txt", "not a trace", "Nothing was run"]);
        assert_no_section_ran(&text(&o).0);
        assert_eq!(std::fs::read_to_string(&notes).expect("read"), "my notes");
    }
    // A dangling link out of the folder would create a file there: refused too.
    std::fs::remove_file(&path).expect("rm");
    std::os::unix::fs::symlink(dir.path().join("nowhere.json"), &path).expect("link");
    let o = run_lecture(&["--trace-dir", d, "--no-book"], None, RUN);
    assert_clean_failure(&o, &["does not exist"]);
    // A link to a trace in another folder is written through.
    std::fs::remove_file(&path).expect("rm");
    let shared = dir.path().join("shared.json");
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let e = elsewhere.path().to_str().expect("utf-8");
    assert_success(&run_lecture(
        &["--trace-dir", e, "--no-book", "--section", "motivating_questions"],
        None,
        RUN,
    ));
    std::fs::rename(trace_file(elsewhere.path()), &shared).expect("move");
    std::os::unix::fs::symlink(&shared, &path).expect("link");
    let o = run_lecture(
        &["--trace-dir", d, "--no-book", "--section", "motivating_questions"],
        None,
        RUN,
    );
    assert_success(&o);
    assert!(std::fs::symlink_metadata(&path).expect("meta").file_type().is_symlink());
    assert!(cs336::trace::load(&shared).is_ok());
}

/// A run waiting for the trace's lock says so, and names the process that holds it.
#[test]
fn a_run_that_waits_for_a_lock_says_for_whom() {
    use std::io::{BufRead, Write};
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8");
    let path = trace_file(dir.path());
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    let lock_path = path.with_file_name(format!(".{}.lock", path.file_name().expect("name").to_string_lossy()));
    let mut lock = std::fs::File::create(&lock_path).expect("lock file");
    lock.lock().expect("lock");
    writeln!(lock, "{}", std::process::id()).expect("write pid");

    let mut cmd = common::process::lecture_cmd(
        &["--trace-dir", d, "--no-book", "--section", "motivating_questions"],
        None,
    );
    let mut child = cmd.spawn().expect("spawn");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let said = rx.recv_timeout(RUN).expect("the run says it waits");
    assert!(said.starts_with("waiting for ") && said.contains(".lock"), "{said}");
    assert!(said.contains(&format!("process {} (", std::process::id())), "{said}");
    drop(lock);
    let o = common::process::finish(child, RUN, "lecture after the lock is released");
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(cs336::trace::load(&path).is_ok());
}

/// JSON beside a trace that is no trace at all (a `package.json`) is passed over by the book and
/// by a run's check of the folder; a broken trace still is not.
#[test]
fn json_that_is_no_trace_is_passed_over_beside_the_traces() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path().to_str().expect("utf-8");
    let html = dir.path().join("html");
    let path = common::put_fresh_trace(dir.path());
    std::fs::write(
        path.with_file_name("package.json"),
        r#"{"name": "x", "version": "1.0.0"}"#,
    )
    .expect("write");
    std::fs::write(path.with_file_name("results.json"), "[1, 2, 3]").expect("write");
    let file = path.to_str().expect("utf-8");
    assert_success(&run_lecture(&["book", "--trace", file], Some(&html), RUN));
    assert_success(&run_lecture(
        &["--trace-dir", d, "--section", "motivating_questions"],
        Some(&html),
        RUN,
    ));
    std::fs::write(path.with_file_name("cut.json"), "{\"schema_version\": 2, \"lect").expect("write");
    let o = run_lecture(&["book", "--trace", file], Some(&html), RUN);
    assert_clean_failure(&o, &["cut.json"]);
}

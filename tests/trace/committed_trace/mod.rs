//! The committed CPU traces are what the code records: each equals a fresh in-process run (seed 0)
//! on every value its kind says a rerun reproduces (`trace::Kind`, declared at each record call
//! and stored in the trace): given and computed values always, a kernel's rounding when the run
//! used the same bf16 kernel. What a clock or the device decided is not compared, and the test
//! prints which it left out. CPU traces are named after their CPU (`cpu-<model>.json`); every one
//! committed is checked.
//!
//! First the sections' code: the book refuses stale sections, so a section changed without
//! re-running the lecture would break `mdbook serve book` on a fresh clone. Then every value, bit
//! for bit, with everything around it (`cs336::trace::compare`).
//!
//! Which traces can be compared value by value: floating-point results depend on the CPU's
//! instruction-set path (gemm picks its float32 kernels and their cache blocking by CPU, and the
//! bf16 matmul kernel by instruction set). A trace recorded on another CPU model or with other
//! SIMD extensions is therefore not compared value by value here, and the test prints why (its
//! invariants still run, in the invariant tests). On the same CPU, a trace recorded with another
//! bf16 kernel (`provenance.device.details.bf16_matmul_isa`) is compared exactly except the values
//! declared `rounding`. `every_value_a_bf16_kernel_changes_is_declared_rounding` proves those
//! declarations against a real run on each other kernel this CPU has; `mutation` proves that a
//! change to any value a rerun reproduces is caught.
//!
//! With `CS336_REQUIRE_REPRODUCIBLE_TRACE=1` (CI), a machine that can reproduce none of the
//! committed CPU traces fails instead of saying so; `CS336_REQUIRE_AVX512_BF16=1` makes a CPU with
//! a single bf16 kernel fail the kernel test instead of saying so.

mod mutation;

use crate::common;

use std::path::Path;

use cs336::book::sections::resolve_source;
use cs336::device::cpu::bf16_gemm::{self, Bf16Kernel};
use cs336::trace::Trace;
use cs336::trace::compare::{Loc, Report, by_kind};
use cs336::trace::source::function_source;

/// The first training step of a bf16 run on another kernel: the same weights and batch, only the
/// rounding of the bf16 products differs, and bf16 has 8 significant bits: a few roundings apart.
const BF16_FIRST_STEP: f64 = 4.0 / 256.0;

/// What a CPU trace's floating-point results depend on.
#[derive(Debug, PartialEq)]
struct IsaPath {
    cpu: String,
    simd: Vec<String>,
    bf16_kernel: Option<String>,
}

fn path_of(t: &Trace) -> IsaPath {
    IsaPath {
        // The model: a run on another bf16 kernel of the same CPU gets another trace name, and is
        // still compared, except the values its kernel's rounding decided.
        cpu: t.provenance.device.name.clone(),
        simd: t.provenance.host.simd.clone(),
        bf16_kernel: t.provenance.device.details["bf16_matmul_isa"]
            .as_str()
            .map(String::from),
    }
}

/// Why `committed` cannot be compared value by value with a run on this machine, if so.
fn not_reproducible(committed: &Trace, fresh: &Trace) -> Option<String> {
    let (was, now) = (path_of(committed), path_of(fresh));
    ((&was.cpu, &was.simd) != (&now.cpu, &now.simd)).then(|| {
        format!(
            "recorded on {} with SIMD {:?}; this machine is {} with {:?}: its float32 kernels and their cache \
             blocking may differ, so its values cannot be reproduced bit for bit here",
            was.cpu, was.simd, now.cpu, now.simd
        )
    })
}

/// Compares `committed` with `fresh` (of the same CPU) value by value, as the kinds say, and the
/// trace-wide provenance: the device's identity and what it reports; the host's memory, core
/// count, operating system and CUDA reason are the machine's. A value that names the bf16 kernel
/// must name the one its trace's provenance names.
pub(crate) fn compare(committed: &Trace, fresh: &Trace) -> Report {
    let same_kernel = path_of(committed).bf16_kernel == path_of(fresh).bf16_kernel;
    let mut report = by_kind(committed, fresh, ["committed", "fresh"], same_kernel);
    let (a, b) = (&committed.provenance, &fresh.provenance);
    for (what, same) in [
        ("schema_version", committed.schema_version == fresh.schema_version),
        ("lecture", committed.lecture == fresh.lecture),
        ("provenance.device.kind", a.device.kind == b.device.kind),
        ("provenance.device.name", a.device.name == b.device.name),
        ("provenance.host.cpu_model", a.host.cpu_model == b.host.cpu_model),
        (
            "provenance.device.details (its fields)",
            a.device.details.keys().eq(b.device.details.keys()),
        ),
    ] {
        if !same {
            report.differences.push(format!("{what} differs"));
        }
    }
    for t in [committed, fresh] {
        let kernel = path_of(t).bf16_kernel;
        if let Some(v) = t.value("tensor_operations_flops", "bf16_matmul_isa")
            && v.value.as_str() != kernel.as_deref()
        {
            report.differences.push(format!(
                "tensor_operations_flops.bf16_matmul_isa: {}, but the trace's provenance names the kernel {kernel:?}",
                v.value
            ));
        }
    }
    report
}

/// One line per value left out of a comparison, with its kind: a list's elements share theirs.
fn left_out(t: &Trace, locs: &[Loc]) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for loc in locs {
        let kind = t.value(&loc.section, &loc.value).and_then(|v| v.kind());
        let line = format!(
            "{}.{}: {}",
            loc.section,
            loc.value,
            kind.map_or("no kind (older code)", |k| k.word())
        );
        if lines.last() != Some(&line) {
            lines.push(line);
        }
    }
    lines
}

/// The sections of a CPU trace whose code is not the code that recorded them, or that moved:
/// (section, why).
fn stale_sections(path: &Path, trace: &Trace) -> Vec<(String, &'static str)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let name = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    assert_eq!(
        name.as_deref(),
        Some(trace.provenance.device.slug.as_str()),
        "named by its CPU"
    );
    assert!(trace.provenance.device.slug.starts_with("cpu-"), "{}", path.display());
    assert_eq!(
        cs336::trace::name::expected_name(&trace.provenance).as_deref(),
        Ok(trace.provenance.device.slug.as_str()),
        "{}: the naming rule gives its provenance another name",
        path.display()
    );
    let mut stale = Vec::new();
    for def in cs336::lecture::SECTIONS {
        let code = function_source(def.source, def.id).unwrap_or_else(|e| panic!("{}: {e}", def.file));
        let Some(s) = trace.section(def.id) else {
            stale.push((def.id.to_string(), "missing"));
            continue;
        };
        if s.source_hash != code.hash() {
            stale.push((def.id.to_string(), "code changed"));
            continue;
        }
        // The book reads the section from the file the trace names, as it is on disk.
        if s.source_file != def.file {
            stale.push((def.id.to_string(), "moved to another file"));
            continue;
        }
        let file = resolve_source(root, &s.source_file).unwrap_or_else(|e| panic!("{}: {e}", s.source_file));
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let on_disk = function_source(&text, def.id).unwrap_or_else(|e| panic!("{}: {e}", s.source_file));
        assert_eq!(
            on_disk.hash(),
            code.hash(),
            "{}: the file differs from the compiled section",
            s.source_file
        );
        // Same tokens: every value's token still starts the line it was recorded on. Lines added
        // above the function move it without changing its code: the section is then as stale as
        // a changed one for the trace that must be current (the book's default), and set aside in
        // another machine's trace.
        let placed_as_recorded = s.values.values().all(|v| {
            let mut states = v.history.iter().map(|h| (h.line, h.token)).chain([(v.line, v.token)]);
            states.all(|(line, token)| token.and_then(|t| code.line_of_token(t)) == Some(line).filter(|&l| l != 0))
        });
        if !placed_as_recorded {
            stale.push((def.id.to_string(), "moved within its file"));
        }
    }
    stale
}

fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1")
}

#[test]
fn committed_cpu_traces_equal_a_fresh_run() {
    let cpu: Vec<_> = common::committed_traces()
        .into_iter()
        .filter(|(_, t)| t.provenance.device.kind == "cpu")
        .collect();
    assert!(!cpu.is_empty(), "no CPU trace is committed under trace/");
    let fresh = common::fresh_trace();
    let mut compared = 0;
    // This CPU's own trace, by the one naming rule: with CS336_REQUIRE_REPRODUCIBLE_TRACE=1 it must
    // be there and equal the fresh run.
    let own = format!(
        "{}.json",
        cs336::device::cpu::trace_name().expect("this CPU has a trace name")
    );
    let mut own_compared = false;
    let default = common::default_trace_path();
    for (path, trace) in &cpu {
        let stale = stale_sections(path, trace);
        let listed = stale
            .iter()
            .map(|(id, why)| format!("{id} ({why})"))
            .collect::<Vec<_>>()
            .join(", ");
        // The book's default trace must be current; another CPU's trace keeps what its CPU
        // recorded, and the book marks the sections older code recorded (as for a GPU trace).
        assert!(
            stale.is_empty() || *path != default,
            "{} is the book's default trace and out of date for: {listed}; run `cargo run --release --bin lecture` \
             and commit the trace",
            path.display(),
        );
        let (mut trace, mut fresh) = (trace.clone(), fresh.clone());
        if !stale.is_empty() {
            common::terminal_note(&format!(
                "note: {}: {} section(s) recorded by older code set aside (not the book's default trace; only its \
                 CPU can record them again): {listed}",
                path.display(),
                stale.len()
            ));
            trace.sections.retain(|s| !stale.iter().any(|(id, _)| *id == s.id));
            fresh.sections.retain(|s| trace.section(&s.id).is_some());
        }
        if let Some(why) = not_reproducible(&trace, &fresh) {
            common::terminal_note(&format!("note: {} not compared value by value: {why}", path.display()));
            continue;
        }
        let report = compare(&trace, &fresh);
        compared += 1;
        own_compared |= path.file_name().is_some_and(|n| n.to_string_lossy() == own);
        // Captured, and shown beside any failure: what was left out, and why.
        for line in left_out(&trace, &report.ignored) {
            eprintln!("not compared (the machine's): {line}");
        }
        let d = &report.differences;
        assert!(
            d.is_empty(),
            "{} differs from a fresh run (seed 0) in {} place(s):\n  {}\nIf the code changed what it records, run \
             `cargo run --release --bin lecture -- --no-book` and commit the trace; if the machine decides a value, \
             declare its kind at its record call (`record!(cx, clock …)`, `device`, `rounding`).",
            path.display(),
            d.len(),
            d.join("\n  ")
        );
        let skipped = left_out(&trace, &report.skipped);
        if !skipped.is_empty() {
            common::terminal_note(&format!(
                "note: {}: recorded with the bf16 kernel {:?}, compared with a run on {:?}: left out what the \
                 kernel's rounding decides:\n  {}",
                path.display(),
                path_of(&trace).bf16_kernel,
                path_of(&fresh).bf16_kernel,
                skipped.join("\n  ")
            ));
        }
    }
    if !own_compared {
        let msg = format!(
            "no committed CPU trace is this CPU's (trace/lecture_02/{own}, SIMD {:?}); {compared} other(s) were \
             compared value by value",
            fresh.provenance.host.simd
        );
        assert!(
            !required("CS336_REQUIRE_REPRODUCIBLE_TRACE"),
            "{msg}; CS336_REQUIRE_REPRODUCIBLE_TRACE=1 makes that a failure (record this CPU's trace with \
             `cargo run --release --bin lecture` and commit it)"
        );
        common::terminal_note(&format!("note: {msg}"));
    }
}

/// On each bf16 kernel this CPU has besides the one it uses by default, a full run differs from
/// the default run only in values declared `rounding` (or a clock's or the device's), and each
/// value declared `rounding` does differ on some kernel (a declaration that never matters would
/// hide a value from the committed-trace test; only a CPU with every kernel can show that). Where
/// such a value is a list of losses, its first step is within a few bf16 roundings.
#[test]
fn every_value_a_bf16_kernel_changes_is_declared_rounding() {
    let fresh = common::fresh_trace();
    // The kernel a run takes unforced: the route measured for this CPU (`bf16_gemm::route`).
    let default = bf16_gemm::current_kernel().expect("CS336_CPU_ISA names a level this CPU has");
    let others: Vec<Bf16Kernel> = Bf16Kernel::ALL
        .into_iter()
        .filter(|k| k.is_available() && *k != default)
        .collect();
    if others.is_empty() {
        let msg = format!(
            "this CPU has only the {} bf16 kernel, so no run on another kernel proves which values follow it",
            default.name()
        );
        assert!(
            !required("CS336_REQUIRE_AVX512_BF16"),
            "{msg}; CS336_REQUIRE_AVX512_BF16=1 makes that a failure"
        );
        common::note_once(&format!("skipped: {msg}"));
        return;
    }
    let rounding: Vec<(String, String)> = fresh
        .sections
        .iter()
        .flat_map(|s| {
            s.values
                .iter()
                .filter(|(_, v)| v.kind() == Some(cs336::trace::Kind::Rounding))
                .map(|(n, _)| (s.id.clone(), n.clone()))
        })
        .collect();
    assert!(!rounding.is_empty(), "the bf16 training runs are declared `rounding`");
    let mut changed = std::collections::BTreeSet::new();
    common::test_budget();
    for kernel in others {
        let choice = cs336::device::choose(cs336::device::DeviceRequest::Cpu).expect("the CPU is always available");
        let root = Path::new(common::ROOT);
        let other = bf16_gemm::with_kernel(kernel, || {
            cs336::lecture::run::run_lecture(&[], &choice, common::SEED, root, None, |_| {})
        })
        .expect("the kernel is available")
        .unwrap_or_else(|e| panic!("a run on {} failed: {e}", kernel.name()));
        assert_eq!(path_of(&other).bf16_kernel.as_deref(), Some(kernel.name()));
        assert!(not_reproducible(fresh, &other).is_none(), "the same CPU");
        let report = compare(fresh, &other);
        let d = &report.differences;
        assert!(
            d.is_empty(),
            "a run on the {} kernel differs from one on {} in values not declared `rounding`:\n  {}",
            kernel.name(),
            default.name(),
            d.join("\n  ")
        );
        for (section, name) in &rounding {
            let (a, b) = (
                fresh.value(section, name).expect("recorded"),
                other.value(section, name).expect("recorded"),
            );
            if a.value != b.value {
                changed.insert((section.clone(), name.clone()));
            }
            if let (Some(x), Some(y)) = (
                a.value.get(0).and_then(|v| v.as_f64()),
                b.value.get(0).and_then(|v| v.as_f64()),
            ) {
                assert!(
                    (x - y).abs() <= BF16_FIRST_STEP * x.abs().max(y.abs()),
                    "{section}.{name}[0]: {x} on {}, {y} on {}: more than {BF16_FIRST_STEP} apart",
                    default.name(),
                    kernel.name()
                );
            }
        }
    }
    let never: Vec<String> = rounding
        .iter()
        .filter(|v| !changed.contains(*v))
        .map(|(s, n)| format!("{s}.{n}"))
        .collect();
    // A value may follow only a kernel this CPU lacks (pure bf16 differs between AMX tiles and
    // `vdpbf16ps`, not between `vdpbf16ps` and the portable route): only a CPU with every kernel
    // can prove that a declaration never matters.
    let lacking: Vec<&str> = Bf16Kernel::ALL
        .into_iter()
        .filter(|k| !k.is_available())
        .map(Bf16Kernel::name)
        .collect();
    if !lacking.is_empty() {
        if !never.is_empty() {
            common::note_once(&format!(
                "declared `rounding` and the same on this CPU's bf16 kernels (it lacks {lacking:?}, where they may differ): {never:?}"
            ));
        }
        return;
    }
    assert!(
        never.is_empty(),
        "declared `rounding` but the same on every bf16 kernel: {never:?}; declare them `computed` so the \
         committed-trace test holds them"
    );
}

/// The naming rule (`cs336::trace::name`), pinned on the provenance of the three kinds of CPU
/// our machines have had: two AMD EPYCs that differ only in their instruction sets get two names,
/// each committed trace's file is the name its provenance gives, and a trace whose provenance
/// contradicts its file name is refused with both named.
#[test]
fn each_committed_cpu_trace_is_named_by_its_model_and_kernels() {
    use cs336::trace::name::{check, expected_name};
    let cpu: Vec<_> = common::committed_traces()
        .into_iter()
        .filter(|(_, t)| t.provenance.device.kind == "cpu")
        .collect();
    let mut names = Vec::new();
    for (path, t) in &cpu {
        let name = expected_name(&t.provenance).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        assert_eq!(stem.as_deref(), Some(name.as_str()), "{}", path.display());
        names.push(name);
    }
    for want in [
        "cpu-amd-epyc-avx2",
        "cpu-amd-epyc-avx512-bf16",
        "cpu-intel-r-xeon-r-processor-amx",
    ] {
        assert!(
            names.iter().any(|n| n == want),
            "no committed trace is named {want}: {names:?}"
        );
    }
    // The AVX2 machine's provenance with the AVX-512 machine's kernels is the other name.
    let (_, avx2) = cpu
        .iter()
        .find(|(p, _)| p.ends_with("cpu-amd-epyc-avx2.json"))
        .expect("the AVX2 trace");
    let mut p = avx2.provenance.clone();
    p.device.details.insert("bf16_matmul_isa".into(), "avx512_bf16".into());
    p.device.details.insert("f32_matmul_isa".into(), "avx512_fma".into());
    assert_eq!(expected_name(&p).as_deref(), Ok("cpu-amd-epyc-avx512-bf16"));
    let refused = check(&p, "cpu-amd-epyc-avx2").expect_err("its provenance names another device");
    assert!(
        refused.contains("cpu-amd-epyc-avx512-bf16") && refused.contains("cpu-amd-epyc-avx2"),
        "{refused}"
    );
    // Without the float32 kernel (older traces), the host's SIMD extensions decide it, as gemm does.
    p.device.details.shift_remove("f32_matmul_isa");
    p.device.details.insert("bf16_matmul_isa".into(), "portable-f32".into());
    assert_eq!(expected_name(&p).as_deref(), Ok("cpu-amd-epyc-avx2"));
}

/// A trace of another device may lack a section newer than itself: it is set aside as not
/// recorded on that device. The default trace (the most complete) never has a section set aside.
#[test]
fn a_section_newer_than_another_devices_trace_is_set_aside() {
    let dir = tempfile::tempdir().expect("tempdir");
    let folder = dir.path().join("lecture_02");
    std::fs::create_dir_all(&folder).expect("mkdir");
    for (path, _) in common::committed_traces() {
        std::fs::copy(&path, folder.join(path.file_name().expect("name"))).expect("copy");
    }
    let default = common::default_trace_under(dir.path());
    let other = common::traces_under(dir.path())
        .into_iter()
        .map(|(p, _)| p)
        .find(|p| *p != default)
        .expect("a trace besides the default");
    // The other trace, on its own device, with the default's current sections but the last: only
    // the missing section can be set aside.
    let last = cs336::lecture::SECTIONS.last().expect("sections").id;
    let current = cs336::trace::load(&default).expect("load");
    let mut t = cs336::trace::load(&other).expect("load");
    t.sections = current.sections.into_iter().filter(|s| s.id != last).collect();
    cs336::trace::save(&other, &t).expect("save");
    let checkable = common::checkable_traces_under(dir.path(), |_| {});
    let c = checkable.iter().find(|c| c.path == other).expect("the other trace");
    assert!(c.set_aside.iter().any(|s| s == last), "{:?}", c.set_aside);
    assert!(common::section_to_check(c, last).is_none());

    // The default trace itself is never set aside.
    let d = checkable.iter().find(|c| c.path == default).expect("the default trace");
    assert!(d.set_aside.is_empty(), "{:?}", d.set_aside);
}

/// A committed trace is a quiet run's: the book quotes it to every reader, and timings measured
/// while the machine was busy (`SectionRecord::disturbed`, set after `lecture`'s retries) would
/// show low speeds as this machine's. Run the sections named again on a quiet machine.
#[test]
fn no_committed_trace_was_measured_on_a_busy_machine() {
    let busy: Vec<String> = common::committed_traces()
        .iter()
        .flat_map(|(path, t)| {
            t.sections.iter().filter_map(move |s| {
                let d = s.disturbed.as_ref()?;
                Some(format!("{}: section `{}`: {}", path.display(), s.id, d.why))
            })
        })
        .collect();
    assert!(
        busy.is_empty(),
        "committed traces measured while the machine was busy (run them again on a quiet machine: \
         `cargo run --release --bin lecture -- --section ID`):\n{}",
        busy.join("\n")
    );
}

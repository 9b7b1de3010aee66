//! The committed CPU traces are what the code records: each equals a fresh in-process run (seed 0)
//! on every value except those this file names as decided by the machine, each with its reason.
//! CPU traces are named after their CPU (`cpu-<model>.json`); every one committed is checked.
//!
//! First the sections' code: the book refuses stale sections, so a section changed without
//! re-running the lecture would break `mdbook serve book` on a fresh clone. Then every value, bit
//! for bit, with everything around it (see `common::compare`).
//!
//! Which traces can be compared value by value: floating-point results depend on the CPU's
//! instruction-set path (gemm picks its float32 kernels and their cache blocking by CPU, and the
//! bf16 matmul kernel by instruction set). A trace recorded on another CPU model or with other
//! SIMD extensions is therefore not compared value by value here, and the test prints why (its
//! invariants still run, in the invariant tests). On the same CPU, a trace recorded with another
//! bf16 kernel (`provenance.device.details.bf16_matmul_isa`) is compared exactly except the values
//! [`RULES`] marks as following the bf16 kernel: those are compared within their stated tolerance,
//! or skipped with the reason printed. `every_value_a_bf16_kernel_changes_is_listed` proves that
//! list against a real run on each other kernel this CPU has.
//!
//! With `CS336_REQUIRE_REPRODUCIBLE_TRACE=1` (CI), a machine that can reproduce none of the
//! committed CPU traces fails instead of saying so; `CS336_REQUIRE_AVX512_BF16=1` makes a CPU with
//! a single bf16 kernel fail the kernel test instead of saying so.

mod rules;

use crate::common;

use std::cell::RefCell;
use std::path::Path;

use common::compare::{Loc, Report, Seg, Treatment, compare_sections};
use cs336::book::sections::resolve_source;
use cs336::device::cpu::bf16_gemm::{self, Bf16Kernel};
use cs336::trace::Trace;
use cs336::trace::source::function_source;

use rules::*;

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
        // still compared, with the values RULES says follow the kernel.
        cpu: t.provenance.device.name.clone(),
        simd: t.provenance.host.simd.clone(),
        bf16_kernel: t.provenance.device.details["bf16_matmul_isa"]
            .as_str()
            .map(String::from),
    }
}

/// A committed trace against a fresh run on this machine.
struct Outcome {
    report: Report,
    /// Why the values were not compared at all (another CPU), if so.
    not_reproducible: Option<String>,
    /// Locations compared against another bf16 kernel (skipped or by tolerance), with the rule.
    other_kernel: Vec<(Loc, usize)>,
    /// Locations the machine decides, with the rule, as compared.
    ignored: Vec<(Loc, usize)>,
    /// How often each rule matched.
    hits: Vec<usize>,
}

/// Compares `committed` with `fresh` value by value (see the file's comment).
fn compare(committed: &Trace, fresh: &Trace) -> Outcome {
    let (was, now) = (path_of(committed), path_of(fresh));
    let mut report = Report::default();
    if (&was.cpu, &was.simd) != (&now.cpu, &now.simd) {
        return Outcome {
            report,
            not_reproducible: Some(format!(
                "recorded on {} with SIMD {:?}; this machine is {} with {:?}: its float32 kernels and their \
                 cache blocking may differ, so its values cannot be reproduced bit for bit here",
                was.cpu, was.simd, now.cpu, now.simd
            )),
            other_kernel: Vec::new(),
            ignored: Vec::new(),
            hits: vec![0; RULES.len()],
        };
    }
    let same_kernel = was.bf16_kernel == now.bf16_kernel;
    // The trace-wide provenance: the device's identity and what it reports; the host's memory,
    // core count, operating system and CUDA reason are the machine's.
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
    let hits = RefCell::new(vec![0; RULES.len()]);
    let other_kernel = RefCell::new(Vec::new());
    let ignored = RefCell::new(Vec::new());
    let recorded = was.bf16_kernel.clone();
    let mut recorded_mismatch = Vec::new();
    let treat = |loc: &Loc| -> Treatment {
        let Some(i) = rule_for(loc) else {
            return Treatment::Exact;
        };
        hits.borrow_mut()[i] += 1;
        match RULES[i].why {
            Why::Machine(_) => {
                ignored.borrow_mut().push((loc.clone(), i));
                Treatment::Ignore
            }
            Why::Bf16Kernel(..) if same_kernel => Treatment::Exact,
            Why::Bf16Kernel(other, _) => {
                other_kernel.borrow_mut().push((loc.clone(), i));
                match other {
                    Other::Within(rel) => Treatment::Within(rel),
                    Other::Skip => Treatment::Skip,
                    // Checked below against the trace's provenance.
                    Other::Recorded => Treatment::Ignore,
                }
            }
        }
    };
    let sections = compare_sections(committed, fresh, &treat);
    report.differences.extend(sections.differences);
    report.skipped = sections.skipped;
    report.within = sections.within;
    let other_kernel = other_kernel.into_inner();
    for (loc, i) in &other_kernel {
        if matches!(RULES[*i].why, Why::Bf16Kernel(Other::Recorded, _)) {
            for (t, kernel) in [(committed, &recorded), (fresh, &now.bf16_kernel)] {
                let v = t.value(&loc.section, &loc.value).map(|v| v.value.as_str());
                if v != Some(kernel.as_deref()) {
                    recorded_mismatch.push(format!(
                        "{loc}: {v:?}, but the trace's provenance names the kernel {kernel:?}"
                    ));
                }
            }
        }
    }
    report.differences.extend(recorded_mismatch);
    Outcome {
        report,
        not_reproducible: None,
        other_kernel,
        ignored: ignored.into_inner(),
        hits: hits.into_inner(),
    }
}

/// What a comparison against another bf16 kernel left out or compared loosely, for the terminal.
fn other_kernel_note(what: &str, was: &IsaPath, now: &IsaPath, outcome: &Outcome) -> Option<String> {
    if outcome.other_kernel.is_empty() {
        return None;
    }
    let mut lines = vec![format!(
        "note: {what}: recorded with the bf16 kernel {}, compared with a run on {}: the values that follow the \
         kernel are compared loosely or not at all:",
        was.bf16_kernel.as_deref().unwrap_or("(none named)"),
        now.bf16_kernel.as_deref().unwrap_or("(none named)")
    )];
    // One line per value and rule: a list's elements share theirs.
    let mut groups: Vec<(String, usize, Vec<String>)> = Vec::new();
    for (loc, i) in &outcome.other_kernel {
        let value = format!("{}.{}", loc.section, loc.value);
        let inner = loc.path.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(".");
        match groups.last_mut() {
            Some((v, j, places)) if *v == value && j == i => places.push(inner),
            _ => groups.push((value, *i, vec![inner])),
        }
    }
    for (value, i, places) in groups {
        let Why::Bf16Kernel(other, why) = RULES[i].why else {
            continue;
        };
        let how = match other {
            Other::Within(rel) => format!("within {rel:e} (relative)"),
            Other::Skip => "skipped".to_string(),
            Other::Recorded => "checked against the trace's provenance".to_string(),
        };
        let at = match places.as_slice() {
            [one] if one.is_empty() => String::new(),
            [one] => format!(".{one}"),
            [first, .., last] => format!(" [{first}..{last}, {} places]", places.len()),
            [] => String::new(),
        };
        lines.push(format!("  {value}{at}: {how}: {why}"));
    }
    Some(lines.join("\n"))
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
    let mut hits = vec![0; RULES.len()];
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
        let outcome = compare(&trace, &fresh);
        if let Some(why) = &outcome.not_reproducible {
            common::terminal_note(&format!("note: {} not compared value by value: {why}", path.display()));
            continue;
        }
        compared += 1;
        own_compared |= path.file_name().is_some_and(|n| n.to_string_lossy() == own);
        // Captured, and shown beside any failure: what was left out, and why.
        for (loc, i) in &outcome.ignored {
            if let Why::Machine(why) = RULES[*i].why {
                eprintln!("not compared: {loc}: {why}");
            }
        }
        let d = &outcome.report.differences;
        assert!(
            d.is_empty(),
            "{} differs from a fresh run (seed 0) in {} place(s):\n  {}\nIf the code changed what it records, run \
             `cargo run --release --bin lecture -- --no-book` and commit the trace; if the machine decides a value, \
             name it in RULES in tests/trace/committed_trace/rules.rs with the reason.",
            path.display(),
            d.len(),
            d.join("\n  ")
        );
        if let Some(note) = other_kernel_note(
            &path.display().to_string(),
            &path_of(&trace),
            &path_of(&fresh),
            &outcome,
        ) {
            common::terminal_note(&note);
        }
        for (h, n) in hits.iter_mut().zip(&outcome.hits) {
            *h += n;
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
    if compared == 0 {
        return;
    }
    // Every rule speaks for something the lecture records; one that matches nothing is stale.
    let unused: Vec<String> = RULES
        .iter()
        .zip(&hits)
        .filter(|(_, n)| **n == 0)
        .map(|(r, _)| format!("{}.{} {:?} ({:?})", r.section, r.value, r.path, r.why))
        .collect();
    assert!(
        unused.is_empty(),
        "RULES in tests/trace/committed_trace/rules.rs name values no trace records: {unused:?}"
    );
}

/// On each bf16 kernel this CPU has besides the one it uses by default, a full run differs from
/// the default run only where RULES says a value follows the kernel (or the machine decides it),
/// and by no more than the tolerances stated there.
#[test]
fn every_value_a_bf16_kernel_changes_is_listed() {
    let fresh = common::fresh_trace();
    let default = Bf16Kernel::detect();
    let others: Vec<Bf16Kernel> = Bf16Kernel::ALL
        .into_iter()
        .filter(|k| k.is_available() && *k != default)
        .collect();
    if others.is_empty() {
        let msg = format!(
            "this CPU has only the {} bf16 kernel, so no run on another kernel proves the list of values that \
             follow it",
            default.name()
        );
        assert!(
            !required("CS336_REQUIRE_AVX512_BF16"),
            "{msg}; CS336_REQUIRE_AVX512_BF16=1 makes that a failure"
        );
        common::note_once(&format!("skipped: {msg}"));
        return;
    }
    for kernel in others {
        let choice = cs336::device::choose(cs336::device::DeviceRequest::Cpu).expect("the CPU is always available");
        let root = Path::new(common::ROOT);
        let other = bf16_gemm::with_kernel(kernel, || {
            cs336::lecture::run::run_lecture(&[], &choice, common::SEED, root, None, |_| {})
        })
        .expect("the kernel is available")
        .unwrap_or_else(|e| panic!("a run on {} failed: {e}", kernel.name()));
        assert_eq!(path_of(&other).bf16_kernel.as_deref(), Some(kernel.name()));
        let outcome = compare(fresh, &other);
        assert!(outcome.not_reproducible.is_none(), "the same CPU");
        let d = &outcome.report.differences;
        assert!(
            d.is_empty(),
            "a run on the {} kernel differs from one on {} where RULES says nothing follows the kernel, or by \
             more than its tolerance:\n  {}",
            kernel.name(),
            default.name(),
            d.join("\n  ")
        );
        assert!(
            !outcome.other_kernel.is_empty(),
            "the kernel's name at least follows the kernel"
        );
        if let Some(note) = other_kernel_note(
            &format!("a run on {}", default.name()),
            &path_of(fresh),
            &path_of(&other),
            &outcome,
        ) {
            common::terminal_note(&note);
        }
    }
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

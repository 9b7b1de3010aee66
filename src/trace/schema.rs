//! The trace document: what a run measured, with units and provenance. Serialized as JSON, one
//! file per lecture and device. Field names are part of the format; changing them means a new
//! `SCHEMA_VERSION`.
//!
//! What the device decides is trace-wide (`provenance`: device, host, OS). What a run decides is
//! per section (`SectionRecord::run`: time, seed, commit, compiler, build, command line): a run of
//! one section (`lecture --section ID`) rewrites its own section's and no other.
//!
//! Every `record` call of a section is kept in order (`SectionRecord::steps`), and a value the
//! section records as a history keeps its earlier states (`ValueRecord::history`): enough to step
//! through the section as it ran.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// Bump when the format changes incompatibly; loading refuses other versions.
/// 2: provenance split into trace-wide (device) and per-section run facts (`run`, with the build);
/// values carry `token`, `timed` and `history`; sections carry `steps`. Since then values carry
/// their `kind`, which replaces `timed`: an addition version 2 readers of this code accept from
/// older traces (without it), so the version stayed.
pub const SCHEMA_VERSION: u32 = 2;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Trace {
    pub schema_version: u32,
    /// e.g. "lecture_02".
    pub lecture: String,
    pub provenance: Provenance,
    /// In lecture order.
    pub sections: Vec<SectionRecord>,
}

/// What the device decides: rewritten by every run, whole or partial.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    pub device: DeviceInfo,
    pub host: HostInfo,
    pub os: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeviceInfo {
    /// "cpu" or "cuda".
    pub kind: String,
    pub name: String,
    /// The trace's name (`trace::name`), e.g. "cpu-intel-r-xeon-r-processor-amx", "nvidia-h200".
    pub slug: String,
    pub memory_bytes: Option<u64>,
    /// Why the run is not on a GPU, when it is not.
    pub cuda_unavailable_reason: Option<String>,
    /// Anything else the backend knows (driver version, compute capability, SM count…).
    #[serde(default)]
    pub details: IndexMap<String, serde_json::Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HostInfo {
    pub cpu_model: String,
    pub logical_cores: usize,
    /// SIMD extensions the CPU reports and that matter for the kernels here.
    pub simd: Vec<String>,
}

/// What a run decides, kept with each section it recorded. Every section of one run carries the
/// same `RunInfo`, so equal values mean one run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(deny_unknown_fields)]
pub struct RunInfo {
    /// When the run started, RFC 3339, UTC.
    pub recorded_at: String,
    pub seed: u64,
    pub git: GitInfo,
    /// The compiler that built the binary.
    pub rustc: String,
    pub build: BuildInfo,
    pub command_line: Vec<String>,
    /// The timing budget where it was not the lecture's own: `"test"` (`CS336_BUDGET=test`, one
    /// timed call each with no warm-up, for the tests). Such timings describe no machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<String>,
}

impl RunInfo {
    /// Whether this run timed at the tests' budget, not the lecture's.
    pub fn at_test_budget(&self) -> bool {
        self.budget.as_deref().is_some_and(|b| b != "lecture")
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(deny_unknown_fields)]
pub struct GitInfo {
    pub commit: Option<String>,
    /// Uncommitted changes in the tree at run time; null when unknown (no git, or the tree is not
    /// the one the binary was built from).
    pub dirty: Option<bool>,
    /// "git" (asked at run time) or "build" (embedded when the binary was built).
    pub source: String,
}

/// How the binary that ran was compiled (from Cargo, at build time).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Hash)]
#[serde(deny_unknown_fields)]
pub struct BuildInfo {
    /// Cargo's `PROFILE`: "release" or "debug" (profiles inheriting from `dev`).
    pub profile: String,
    /// "0" to "3", "s" or "z".
    pub opt_level: String,
    pub debug_assertions: bool,
    pub target_arch: String,
    /// Target features the code was compiled for (not what the CPU has: see `HostInfo::simd`).
    pub target_features: Vec<String>,
}

impl BuildInfo {
    /// Whether the build was optimised enough for its timings to describe the machine: not at
    /// `opt-level` 0, nor a `debug` profile at level 1.
    pub fn is_optimised(&self) -> bool {
        !(self.opt_level == "0" || (self.profile == "debug" && self.opt_level == "1"))
    }

    /// "release, opt-level 3" and, where they are on, "with debug assertions".
    pub fn describe(&self) -> String {
        let assertions = if self.debug_assertions {
            ", with debug assertions"
        } else {
            ""
        };
        format!("{} profile, opt-level {}{assertions}", self.profile, self.opt_level)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SectionRecord {
    pub id: String,
    pub title: String,
    /// Path of the file holding the section's function, relative to the crate root.
    pub source_file: String,
    /// Line of that file where the function starts.
    pub source_line: u32,
    /// SHA-256 of the function's tokens: the book refuses to show values whose code changed.
    pub source_hash: String,
    pub wall_time_s: f64,
    /// The run that recorded this section.
    pub run: RunInfo,
    pub values: IndexMap<String, ValueRecord>,
    /// Every record call, in order: the value's name and which of its states it recorded (an
    /// index into `history` followed by the final state). Each state of each value appears once.
    pub steps: Vec<Step>,
    /// Set when the machine was busy while the section timed, and stayed busy through the run's
    /// retries: its timings may be low. Absent from a quiet run's sections and from traces older
    /// than the mark (an addition schema version 2 readers accept, as `kind` was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbed: Option<Disturbance>,
    /// The charts the section's registry entry declares: drawn from its values, so the book knows
    /// whose values each chart reads. Absent from traces older than the registry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub charts: Vec<String>,
    /// The rows the section adds to the Devices chapter, as its registry entry declares them.
    /// Absent from traces older than the registry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<super::declared::DeviceRow>,
}

/// What disturbed a section's timings (see the lecture's `timing::disturbance`). The readings are
/// shares of all cores' time, from 0 to 1, each null when the machine did not say.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Disturbance {
    /// In words: "other processes used 48 % of the CPU time".
    pub why: String,
    /// One-minute load average at the end (it counts the run's own threads too).
    #[serde(default)]
    pub load: Option<f64>,
    /// Share of the CPU time that other processes used.
    #[serde(default)]
    pub others: Option<f64>,
    /// Share the hypervisor stole for other virtual machines.
    #[serde(default)]
    pub steal: Option<f64>,
    /// The largest q3/q1 of the section's timings.
    #[serde(default)]
    pub spread: Option<f64>,
    /// How many times the section was measured, the last of which is recorded.
    #[serde(default)]
    pub tries: u32,
}

/// One record call: `[name, state]`, state indexing the value's `history ++ [final]`.
pub type Step = (String, usize);

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ValueRecord {
    /// The final state (what `{{value}}` and `lecture get` show).
    pub value: serde_json::Value,
    pub unit: Unit,
    /// Line in `source_file` that recorded the value; 0 when a helper outside the section's
    /// function recorded it.
    pub line: u32,
    /// Index, in the function's token stream (`trace::source`), of the first token on `line`:
    /// places the value again after the code is reformatted. Absent when `line` is 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<usize>,
    /// What decided the value, as the record call declared it (`Kind`). Absent in traces that
    /// code older than the kinds recorded: see `kind()`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<Kind>,
    /// Older traces' mark for a value a clock decided, read so that `kind()` can say `Clock`
    /// for them; never written (`kind` says it now).
    #[serde(default, rename = "timed", skip_serializing)]
    pub legacy_timed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<usize>>,
    /// A tensor's strides and offset in its storage (its final state's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<Layout>,
    /// Earlier states, oldest first, for a value recorded as a history (at most
    /// `trace::history::MAX_HISTORY` − 1 of them survive).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<State>,
    /// For a given a reader may change (`lecture --set`): its default, its range and its help.
    /// The value differs from `default` exactly when a what-if changed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub given: Option<GivenInfo>,
}

/// What `lecture givens` says of a given, kept with its value in the trace.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GivenInfo {
    /// The value the lecture chose (on this device).
    pub default: serde_json::Value,
    /// The values that make sense, in words: "a whole number ≥ 1", "a fraction from 0.001 to 1".
    pub range: String,
    pub help: String,
}

/// An earlier state of a value recorded as a history.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct State {
    pub value: serde_json::Value,
    pub line: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<usize>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<Layout>,
}

/// Where a recorded tensor's elements sit in its storage: element (i, j, …) is at position
/// `offset + i·strides[0] + j·strides[1] + …` of the flat run. Absent from values that are not
/// tensors, and from traces older than it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Layout {
    pub strides: Vec<usize>,
    pub offset: usize,
}

/// What decided a value. Declared at the call that records it (`record!(cx, given batch_size)`)
/// and stored with it, so that everything downstream reads it from the trace: which values a
/// rerun must reproduce, what a comparison of two traces ignores, how the book shows a value, and
/// which values a what-if may change.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The lecture chose it: a size, an assumption (the MFU), a datasheet's figure.
    #[serde(rename = "given")]
    Given,
    /// It follows from the givens by the code alone: the same on every rerun of this code.
    #[serde(rename = "computed")]
    Computed,
    /// Measured: a clock decided it (a time, a rate, anything computed from one).
    #[serde(rename = "measured: clock")]
    Clock,
    /// Measured: the device decided it (its memory, its instruction sets, its drivers' words).
    #[serde(rename = "measured: device")]
    Device,
    /// Measured: the rounding of the kernel that ran decided it. The bf16 matmul kernels round
    /// differently, so a rerun on the same kernel reproduces it and one on another does not.
    #[serde(rename = "measured: rounding")]
    Rounding,
    /// A fact the section's code checked where it computed it (`check!`): the value is the
    /// claim's text, recorded only because it held (a failing check stops the run).
    #[serde(rename = "checked")]
    Checked,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Given,
        Kind::Computed,
        Kind::Clock,
        Kind::Device,
        Kind::Rounding,
        Kind::Checked,
    ];

    /// Whether a rerun of the same code on the same machine reproduces it bit for bit (a rounding
    /// does, on the same kernel).
    pub fn is_reproducible(self) -> bool {
        !matches!(self, Kind::Clock | Kind::Device)
    }

    /// The word the trace stores, e.g. "measured: clock".
    pub fn word(self) -> &'static str {
        match self {
            Kind::Given => "given",
            Kind::Computed => "computed",
            Kind::Clock => "measured: clock",
            Kind::Device => "measured: device",
            Kind::Rounding => "measured: rounding",
            Kind::Checked => "checked",
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash)]
pub enum Unit {
    #[serde(rename = "bytes")]
    Bytes,
    #[serde(rename = "FLOP")]
    Flop,
    #[serde(rename = "FLOP/s")]
    FlopPerSec,
    #[serde(rename = "s")]
    Seconds,
    #[serde(rename = "ratio")]
    Ratio,
    #[serde(rename = "count")]
    Count,
    #[serde(rename = "bytes/s")]
    BytesPerSec,
    /// Arithmetic intensity: FLOPs per byte moved.
    #[serde(rename = "FLOP/byte")]
    FlopPerByte,
    #[serde(rename = "none")]
    None,
}

impl Trace {
    pub fn section(&self, id: &str) -> Option<&SectionRecord> {
        self.sections.iter().find(|s| s.id == id)
    }

    /// The givens a what-if changed, in lecture order: each with its section, name and record
    /// (whose `given` holds the default). Empty for a device's own run.
    pub fn changed_givens(&self) -> Vec<(&SectionRecord, &str, &ValueRecord, &GivenInfo)> {
        let mut out = Vec::new();
        for section in &self.sections {
            for (name, v) in &section.values {
                if let Some(given) = v.given.as_ref().filter(|_| v.changed_given()) {
                    out.push((section, name.as_str(), v, given));
                }
            }
        }
        out
    }

    /// A value addressed as `section.name`.
    pub fn value(&self, section: &str, name: &str) -> Option<&ValueRecord> {
        self.section(section)?.values.get(name)
    }

    /// When the newest of its sections was recorded (RFC 3339); `None` for a trace without
    /// sections.
    pub fn created_at(&self) -> Option<&str> {
        let parsed = |s: &str| chrono::DateTime::parse_from_rfc3339(s).ok();
        self.sections
            .iter()
            .map(|s| s.run.recorded_at.as_str())
            .max_by(|a, b| parsed(a).cmp(&parsed(b)).then_with(|| a.cmp(b)))
    }
}

impl ValueRecord {
    /// Whether a what-if changed this given from its default.
    pub fn changed_given(&self) -> bool {
        self.given.as_ref().is_some_and(|g| g.default != self.value)
    }

    /// What decided the value: its declared kind, else (a trace older code recorded) `Clock` for a
    /// value it marked timed, else `None` (not known).
    pub fn kind(&self) -> Option<Kind> {
        self.kind.or(self.legacy_timed.then_some(Kind::Clock))
    }

    /// Whether a clock decided the value (a page quoting it from an unoptimised build says so).
    pub fn timed(&self) -> bool {
        self.kind() == Some(Kind::Clock)
    }

    /// How many states the value has: its history and the final one.
    pub fn num_states(&self) -> usize {
        self.history.len() + 1
    }

    /// State `k` of `history ++ [final]`, as a `State`.
    pub fn state(&self, k: usize) -> Option<State> {
        match k.cmp(&self.history.len()) {
            std::cmp::Ordering::Less => Some(self.history[k].clone()),
            std::cmp::Ordering::Equal => Some(State {
                value: self.value.clone(),
                line: self.line,
                token: self.token,
                dtype: self.dtype.clone(),
                shape: self.shape.clone(),
                layout: self.layout.clone(),
            }),
            std::cmp::Ordering::Greater => None,
        }
    }
}

impl SectionRecord {
    /// Checks that `steps` lists every state of every value exactly once, each value's states in
    /// order; says what is wrong otherwise.
    pub fn check_steps(&self) -> Result<(), String> {
        let mut next: IndexMap<&str, usize> = self.values.keys().map(|k| (k.as_str(), 0)).collect();
        for (i, (name, state)) in self.steps.iter().enumerate() {
            let Some(expected) = next.get_mut(name.as_str()) else {
                return Err(format!("steps[{i}] names `{name}`, which the section does not record"));
            };
            let count = self.values[name.as_str()].num_states();
            if *state != *expected || *state >= count {
                return Err(format!(
                    "steps[{i}] is state {state} of `{name}`, expected state {expected} of its {count}"
                ));
            }
            *expected += 1;
        }
        match next
            .iter()
            .find(|(name, seen)| **seen != self.values[**name].num_states())
        {
            Some((name, seen)) => Err(format!(
                "steps list {seen} of the {} state(s) of `{name}`",
                self.values[*name].num_states()
            )),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kinds_word_is_the_one_the_trace_stores() {
        for kind in Kind::ALL {
            assert_eq!(serde_json::to_value(kind).ok(), Some(serde_json::json!(kind.word())));
        }
    }

    #[test]
    fn a_build_is_optimised_from_opt_level_2_or_a_release_profile_at_1() {
        let build = |profile: &str, opt_level: &str| BuildInfo {
            profile: profile.into(),
            opt_level: opt_level.into(),
            debug_assertions: profile == "debug",
            target_arch: "x86_64".into(),
            target_features: vec![],
        };
        for (profile, level) in [("debug", "0"), ("release", "0"), ("debug", "1")] {
            assert!(!build(profile, level).is_optimised(), "{profile} {level}");
        }
        for (profile, level) in [
            ("release", "3"),
            ("debug", "3"),
            ("release", "1"),
            ("debug", "2"),
            ("release", "s"),
        ] {
            assert!(build(profile, level).is_optimised(), "{profile} {level}");
        }
        assert_eq!(
            build("debug", "0").describe(),
            "debug profile, opt-level 0, with debug assertions"
        );
    }
}

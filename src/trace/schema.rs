//! The trace document: what a run measured, with units and provenance. Serialized as JSON, one
//! file per lecture and device. Field names are part of the format; changing them means a new
//! `SCHEMA_VERSION`.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// Bump when the format changes incompatibly; loading refuses other versions.
pub const SCHEMA_VERSION: u32 = 1;

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

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    pub device: DeviceInfo,
    pub host: HostInfo,
    pub os: String,
    pub git: GitInfo,
    pub rustc: String,
    /// RFC 3339, UTC.
    pub created_at: String,
    pub seed: u64,
    pub command_line: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeviceInfo {
    /// "cpu" or "cuda".
    pub kind: String,
    pub name: String,
    /// File-name form of the device, e.g. "cpu", "nvidia-h200".
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

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GitInfo {
    pub commit: Option<String>,
    /// Uncommitted changes in the tree at run time (unknown without git).
    pub dirty: Option<bool>,
    /// "git" (asked at run time) or "build" (embedded when the binary was built).
    pub source: String,
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
    /// SHA-256 of the function's source text: the book refuses to show values whose code changed.
    pub source_hash: String,
    pub wall_time_s: f64,
    pub recorded_at: String,
    pub git_commit: Option<String>,
    pub values: IndexMap<String, ValueRecord>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ValueRecord {
    pub value: serde_json::Value,
    pub unit: Unit,
    /// Line in `source_file` that recorded the value.
    pub line: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Vec<usize>>,
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
    #[serde(rename = "none")]
    None,
}

impl Trace {
    pub fn section(&self, id: &str) -> Option<&SectionRecord> {
        self.sections.iter().find(|s| s.id == id)
    }

    /// A value addressed as `section.name`.
    pub fn value(&self, section: &str, name: &str) -> Option<&ValueRecord> {
        self.section(section)?.values.get(name)
    }
}

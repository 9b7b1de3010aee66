//! What a section's registry entry declares about it beyond its values, as the trace keeps it
//! (the book cannot see the lecture's registry; it reads these from the trace).

use serde::{Deserialize, Serialize};

/// A row of the Devices chapter, declared by the section whose values it shows: one cell per
/// device, the value (or the ratio of two values) of that device's trace.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeviceRow {
    /// What the row shows, in the reader's words.
    pub label: String,
    /// The value's name in the section (with `.path` into it, if any).
    pub value: String,
    /// When set, the cell is `value / over`, as a factor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over: Option<String>,
    /// How the book formats the value (a form of the value directive: `auto`, `int`, `si`,
    /// `fixed2`, …); a ratio is always a factor.
    #[serde(default = "auto", skip_serializing_if = "is_auto")]
    pub format: String,
    /// The value means something only on a GPU: other devices' cells say "no GPU".
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gpu_only: bool,
    /// The ratio the chapter charts across devices (bfloat16's speed over float32's), with the
    /// verdict under it: at most one row in a lecture.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub charted: bool,
}

fn auto() -> String {
    "auto".to_string()
}

fn is_auto(s: &String) -> bool {
    s == "auto"
}

//! What-ifs: the lecture run on the reader's own givens (`lecture --set SECTION.NAME=VALUE`).
//! Every value is read and checked before anything runs: the section and the given must exist,
//! the value must be in the given's range, and the run must fit this machine's memory and finish
//! in a few minutes (estimated from the sizes and the device's peak; `--yes` insists). Only the
//! sections whose givens changed run again; the others come from the device's own trace, which a
//! what-if never touches: it writes its own trace under `what-if/`, named after its changes.

use serde_json::Value;

use super::givens::{self, GivenDef};
use super::run::Overrides;
pub use super::what_if_overhead::{Overhead, Rates, overhead};
use super::{SECTIONS, SectionDef};
use crate::device::Device;
use crate::trace::Trace;

/// The folder of what-if traces, beside the device traces (git-ignored).
pub const WHAT_IF_DIR: &str = "what-if";

/// A run past this many seconds (estimated) needs `--yes`.
pub const MAX_SECONDS: f64 = 180.0;

/// Of the machine's memory, the share a what-if's tensors may take (the rest is the system's).
pub const MEMORY_SHARE: f64 = 0.8;

mod files;

pub use files::{
    MAX_FOLDER_NAME, all, check_inside, folder, folder_name, in_lecture_order, lecture_dir_of, trace_path,
};

/// One `--set`: a given and its new value.
#[derive(Clone)]
pub struct Change {
    pub section: &'static SectionDef,
    pub given: &'static GivenDef,
    /// In the trace's form.
    pub value: Value,
}

/// Why a what-if was refused before anything ran.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum Refused {
    #[error("`--set {0}`: expected SECTION.NAME=VALUE, e.g. `--set tensor_operations_flops.B=4096`")]
    Form(String),
    #[error("`--set {arg}`: no section `{section}` has givens; these do: {known}")]
    UnknownSection {
        arg: String,
        section: String,
        known: String,
    },
    #[error("`--set {arg}`: section `{section}` has no given `{name}`; its givens: {known}")]
    UnknownGiven {
        arg: String,
        section: String,
        name: String,
        known: String,
    },
    #[error("`--set {arg}`: {why}; `{section}.{name}` takes {range}")]
    OutOfRange {
        arg: String,
        section: String,
        name: String,
        range: String,
        why: String,
    },
    #[error(
        "section `{section}` would record about {size} in its trace with these givens, more than the {limit} a \
         trace may have (its reader refuses a larger one); nothing was run"
    )]
    TraceTooLarge {
        section: String,
        size: String,
        limit: String,
    },
    #[error("`--set {start}…` is {chars} characters long, more than the {max} a `--set` argument may have")]
    LongArgument { start: String, chars: usize, max: usize },
    #[error("`{0}` is set twice")]
    Twice(String),
    #[error(
        "`--set {key}={value}` is the lecture's own value on this device: the device's own trace has it already, \
         and a what-if changes a given from it. Drop it, or choose another value; nothing was run"
    )]
    Default { key: String, value: String },
    #[error(
        "section `{section}` would need about {needed} of memory with these givens (and {how}), more than the \
         {limit} this machine can give it ({share}% of its {total}); nothing was run"
    )]
    Memory {
        section: String,
        needed: String,
        how: String,
        limit: String,
        share: u32,
        total: String,
    },
    #[error(
        "section `{section}` would take about {seconds:.0} s with these givens ({how}), past the {max:.0} s a \
         what-if runs without asking; add `--yes` to run it anyway"
    )]
    TooLong {
        section: String,
        seconds: f64,
        how: String,
        max: f64,
    },
}

/// The longest `--set` argument read: the longest section and given name with a value typed in
/// full (`1_000_000_000_000`) is far shorter.
pub const MAX_SET_CHARS: usize = 200;

/// How much of a longer one its refusal shows.
const SHOWN_CHARS: usize = 40;

/// Reads every `--set` argument, refusing the first that is wrong.
pub fn parse(args: &[String]) -> Result<Vec<Change>, Refused> {
    let mut changes: Vec<Change> = Vec::new();
    for arg in args {
        // Refused before it is echoed in any message: a 200,000-digit value filled the screen.
        let chars = arg.chars().count();
        if chars > MAX_SET_CHARS {
            let start: String = arg.chars().take(SHOWN_CHARS).collect();
            return Err(Refused::LongArgument {
                start,
                chars,
                max: MAX_SET_CHARS,
            });
        }
        let (key, text) = arg.split_once('=').ok_or_else(|| Refused::Form(arg.clone()))?;
        let (section, name) = key.trim().split_once('.').ok_or_else(|| Refused::Form(arg.clone()))?;
        let all = givens::all();
        if !all.iter().any(|(s, _)| s.id == section) {
            let mut known: Vec<&str> = all.iter().map(|(s, _)| s.id).collect();
            known.dedup();
            return Err(Refused::UnknownSection {
                arg: arg.clone(),
                section: section.to_string(),
                known: known.join(", "),
            });
        }
        let Some((def, given)) = givens::find(section, name) else {
            let known: Vec<&str> = all
                .iter()
                .filter(|(s, _)| s.id == section)
                .map(|(_, g)| g.name)
                .collect();
            return Err(Refused::UnknownGiven {
                arg: arg.clone(),
                section: section.to_string(),
                name: name.to_string(),
                known: known.join(", "),
            });
        };
        let value = given.read(text).map_err(|why| Refused::OutOfRange {
            arg: arg.clone(),
            section: section.to_string(),
            name: name.to_string(),
            range: given.range_words().to_string(),
            why,
        })?;
        if changes
            .iter()
            .any(|c| c.section.id == def.id && c.given.name == given.name)
        {
            return Err(Refused::Twice(format!("{section}.{name}")));
        }
        changes.push(Change {
            section: def,
            given,
            value,
        });
    }
    Ok(changes)
}

/// Refuses a change to the value the given has anyway on `device`: its run would be the device's
/// own, and its trace no what-if's.
pub fn check_not_default(changes: &[Change], device: &Device) -> Result<(), Refused> {
    for c in changes {
        let default = (c.given.default)(device);
        if c.value == default || c.value.as_f64().is_some_and(|x| Some(x) == default.as_f64()) {
            return Err(Refused::Default {
                key: format!("{}.{}", c.section.id, c.given.name),
                value: typed(&c.value),
            });
        }
    }
    Ok(())
}

/// The changes as the run takes them, by section.
pub fn overrides(changes: &[Change]) -> Overrides {
    let mut out = Overrides::new();
    for c in changes {
        out.entry(c.section.id)
            .or_default()
            .insert(c.given.name.to_string(), c.value.clone());
    }
    out
}

/// The sections a what-if runs again, in lecture order.
pub fn sections(changes: &[Change]) -> Vec<&'static SectionDef> {
    SECTIONS
        .iter()
        .filter(|s| changes.iter().any(|c| c.section.id == s.id))
        .collect()
}

/// What a section would need with its givens: bytes alive at once, FLOPs in all, and the bytes
/// its values take in the trace where they grow with the givens (else zero: a tensor of more than
/// `recorder::MAX_RECORDED_ELEMENTS` is kept as a summary of bounded size).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cost {
    pub bytes: f64,
    pub flops: f64,
    pub trace_bytes: f64,
}

/// Bytes a number recorded in a list takes in a trace (pretty JSON: indentation, digits, comma),
/// as measured on the optimizer's parameters: about 39.
pub const TRACE_BYTES_PER_NUMBER: f64 = 40.0;

/// Section `id`'s cost with each given as `get` reads it (a what-if's value, else the default),
/// from the `cost` its registry entry names (`sections/mod.rs`), or None for a section without a
/// cost model: a section with givens must have one (a test holds every section to it), or a size a
/// reader types could ask for more memory than there is.
pub fn cost(id: &str, get: &dyn Fn(&str) -> f64) -> Option<Cost> {
    super::find(id)?.cost.map(|cost| cost(get))
}

/// Refuses a what-if that would not fit in `memory` bytes, or (without `yes`) would run past
/// [`MAX_SECONDS`] at `peak` FLOP/s and `rates` per op and comparison. Returns what it estimated, one line per section, to print.
pub fn check_cost(
    changes: &[Change],
    device: &Device,
    memory: Option<u64>,
    peak: f64,
    rates: &Rates,
    yes: bool,
) -> Result<Vec<String>, Refused> {
    let shown = |bytes: f64| {
        cs336_book::format::format_value(
            &crate::trace::json_number(bytes),
            crate::trace::Unit::Bytes,
            cs336_book::format::Format::Auto,
        )
        .unwrap_or_default()
    };
    let mut said = Vec::new();
    for def in sections(changes) {
        let get = |name: &str| -> f64 {
            let changed = changes.iter().find(|c| c.section.id == def.id && c.given.name == name);
            let value = match changed {
                Some(c) => c.value.clone(),
                None => givens::find(def.id, name).map_or(Value::Null, |(_, g)| (g.default)(device)),
            };
            value.as_f64().unwrap_or(f64::NAN)
        };
        let Some(cost) = cost(def.id, &get) else { continue };
        let fixed = overhead(def.id, &get);
        let how = format!(
            "{:.3e} FLOP, {:.2e} tensor ops and {:.2e} comparisons",
            cost.flops, fixed.ops, fixed.comparisons
        );
        if let Some(total) = memory {
            let limit = total as f64 * MEMORY_SHARE;
            if cost.bytes > limit {
                return Err(Refused::Memory {
                    section: def.id.to_string(),
                    needed: shown(cost.bytes),
                    how,
                    limit: shown(limit),
                    share: (MEMORY_SHARE * 100.0) as u32,
                    total: shown(total as f64),
                });
            }
        }
        let limit = crate::trace::io::MAX_TRACE_BYTES as f64;
        if cost.trace_bytes > limit {
            return Err(Refused::TraceTooLarge {
                section: def.id.to_string(),
                size: shown(cost.trace_bytes),
                limit: shown(limit),
            });
        }
        // Arithmetic at the peak, and each op's and comparison's fixed cost as measured here.
        let arithmetic = cost.flops / peak;
        let seconds = arithmetic + rates.seconds(&fixed);
        if seconds > MAX_SECONDS && !yes {
            return Err(Refused::TooLong {
                section: def.id.to_string(),
                seconds,
                how,
                max: MAX_SECONDS,
            });
        }
        said.push(format!(
            "{}: about {} of tensors and {how}: {seconds:.1} s ({arithmetic:.1} s of arithmetic at this device's peak, \
             {peak:.3e} FLOP/s, and the rest at {:.2} µs an op and {:.2} ns a comparison)",
            def.id,
            shown(cost.bytes),
            rates.op_seconds * 1e6,
            rates.comparison_seconds * 1e9
        ));
    }
    Ok(said)
}

/// A value as a person would type it: `4096`, `4.05e11`, `0.05`, `1e-300`.
pub fn typed(value: &Value) -> String {
    match (value.as_u64(), value.as_f64()) {
        (Some(n), _) => n.to_string(),
        (None, Some(x)) if x.abs() >= 1e6 || (x != 0.0 && x.abs() < 1e-4) => format!("{x:e}"),
        (None, Some(x)) => x.to_string(),
        _ => value.to_string(),
    }
}

/// What a trace's givens were changed to: `section.name = value (default D)`, one per change.
pub fn changed_givens(trace: &Trace) -> Vec<String> {
    trace
        .changed_givens()
        .into_iter()
        .map(|(s, name, v, g)| format!("{}.{name} = {} (default {})", s.id, typed(&v.value), typed(&g.default)))
        .collect()
}

//! The lecture's machinery, and its sections. Each section is one function in a file of its own
//! (`sections/<id>.rs`) that runs the step it teaches and records what it observed through its
//! `SectionCtx` (the recorder); the registry (`sections/mod.rs`) lists them in lecture order with
//! all that is about each; `run` turns a run into a trace.

// Before the modules: `sections/mod.rs` invokes it (a macro is in scope after its definition).
/// The registry (`sections/mod.rs`): every section, in lecture order, each entry declaring all that
/// is about it. A section's code is `sections/<id>.rs`, its panel `pytorch/<id>.py`.
macro_rules! sections {
    // An entry without `narrowers` has none.
    (@narrowers) => { &[] };
    (@narrowers $narrowers:expr) => { $narrowers };
    ($($id:ident {
        title: $title:expr,
        cost: $cost:expr,
        overhead: $overhead:expr,
        charts: [$($chart:ident),* $(,)?],
        devices: [$($row:expr),* $(,)?]
        $(, narrowers: $narrowers:expr)? $(,)?
    }),* $(,)?) => {
        // Each entry's file, `<id>.rs` beside the registry.
        $(mod $id;)*

        /// Every section, in the order the lecture presents them.
        pub const SECTIONS: &[$crate::lecture::SectionDef] = &[$(
            $crate::lecture::SectionDef {
                id: stringify!($id),
                title: $title,
                file: concat!("src/lecture/sections/", stringify!($id), ".rs"),
                source: include_str!(concat!(stringify!($id), ".rs")),
                run: $id::$id,
                pytorch: include_str!(concat!("../pytorch/", stringify!($id), ".py")),
                cost: $cost,
                overhead: $overhead,
                charts: &[$(stringify!($chart)),*],
                devices: &[$($row),*],
                narrowers: sections!(@narrowers $($narrowers)?),
            },
        )*];
    };
}

mod caught;
mod fusion;
pub mod givens;
mod graph;
mod op_sweeps;
pub mod provenance;
pub mod recorder;
pub mod roofline;
pub mod run;
pub mod section_run;
pub mod sections;
mod trainer;
pub mod watch;
pub mod what_if;
mod what_if_overhead;

pub use recorder::{Recordable, SectionCtx};
pub(crate) use recorder::{check, record};

use crate::error::Result;

pub const LECTURE: &str = "lecture_02";

#[derive(Clone, Copy)]
pub struct SectionDef {
    pub id: &'static str,
    pub title: &'static str,
    /// Path of the file holding the function, relative to the crate root.
    pub file: &'static str,
    /// That file's text as compiled into this binary (for the staleness hash and the book).
    pub source: &'static str,
    pub run: fn(&mut SectionCtx) -> Result<()>,
    /// The PyTorch that does the same steps (`src/lecture/pytorch/<id>.py`), shown beside the
    /// code in the book. Included at compile time, so a section without one does not build.
    pub pytorch: &'static str,
    /// What a what-if of it needs with its givens (`what_if::cost`); None without givens.
    pub cost: Option<for<'a> fn(&GivenValue<'a>) -> what_if::Cost>,
    /// Its fixed-cost steps (`what_if::overhead`); None for a small fixed count.
    pub overhead: Option<for<'a> fn(&GivenValue<'a>) -> what_if::Overhead>,
    /// The charts its chapter draws from its values (ids of the book's `chart::CHARTS`).
    pub charts: &'static [&'static str],
    /// The rows it adds to the Devices chapter.
    pub devices: &'static [DevicesRow],
    /// What it asks of its givens beyond their types, if anything.
    pub narrowers: &'static [givens::Narrower],
}

/// A section's given by name, as a what-if would run it (its value, else its default).
pub type GivenValue<'a> = dyn Fn(&str) -> f64 + 'a;

/// A row a section adds to the Devices chapter: one cell per device, a value of the section (or
/// the ratio of two), as that device's trace recorded it. The run records the section's rows in
/// the trace (`trace::DeviceRow`), where the book reads them.
#[derive(Clone, Copy, Debug)]
pub struct DevicesRow {
    pub label: &'static str,
    pub value: &'static str,
    pub over: Option<&'static str>,
    /// A form of the book's value directive (`auto`, `int`, `si`, `fixed2`, …).
    pub format: &'static str,
    pub gpu_only: bool,
    pub charted: bool,
}

impl DevicesRow {
    /// The value `value` of the section, formatted as `format`.
    pub const fn value(label: &'static str, value: &'static str, format: &'static str) -> DevicesRow {
        DevicesRow {
            label,
            value,
            over: None,
            format,
            gpu_only: false,
            charted: false,
        }
    }

    /// `value / over`, as a factor.
    pub const fn ratio(label: &'static str, value: &'static str, over: &'static str) -> DevicesRow {
        DevicesRow {
            over: Some(over),
            ..DevicesRow::value(label, value, "auto")
        }
    }

    /// Meaningful only on a GPU: other devices' cells say so.
    pub const fn on_gpu_only(self) -> DevicesRow {
        DevicesRow { gpu_only: true, ..self }
    }

    /// The ratio the Devices chapter charts across devices, with its verdict.
    pub const fn charted(self) -> DevicesRow {
        DevicesRow { charted: true, ..self }
    }

    /// As the trace records it.
    pub fn to_trace(&self) -> crate::trace::DeviceRow {
        crate::trace::DeviceRow {
            label: self.label.to_string(),
            value: self.value.to_string(),
            over: self.over.map(String::from),
            format: self.format.to_string(),
            gpu_only: self.gpu_only,
            charted: self.charted,
        }
    }
}

pub use sections::SECTIONS;

pub fn find(id: &str) -> Option<&'static SectionDef> {
    SECTIONS.iter().find(|s| s.id == id)
}

//! Charts drawn from trace data while the book builds, as inline SVG (plotters' SVG backend: no
//! fonts needed, text is drawn by the browser). Text, axes and grid use `currentColor`, so a chart
//! takes the page's text colour in every mdbook theme; series use mid-tone colours that read on
//! light and dark backgrounds; the background is transparent.
//!
//! # Adding a chart
//!
//! 1. Write `fn my_chart(data: &ChartData) -> Result<String, Cause>` in a file of this folder.
//!    Read values with `data.number("name")`, `data.numbers("name")` (a list) or
//!    `data.value("name.path")`: a missing value fails the build with the value's name.
//!    For x–y data (throughput against size, loss against step, std against dimension), fill a
//!    [`plot::LineChart`] (linear or log axes, several series, horizontal reference lines such as a peak
//!    FLOP/s) and return `plot::line_chart(&chart)`; for anything else draw with plotters inside
//!    [`plot::svg`].
//! 2. Add a [`ChartDef`] to [`CHARTS`]: an id and a caption; and name the id in the `charts` of
//!    the section whose values it reads, in the lecture's registry (`src/lecture/sections/mod.rs`).
//!    The run records that list in the trace, which is how the book knows whose values to pass.
//! 3. Write `{{chart my_chart}}` on a line of its own in the section's chapter.
//!
//! The end-to-end test checks that every chart on every page parses as SVG.

mod curves;
pub mod fit;
mod float_formats;
mod graph;
mod hierarchy;
pub mod hover;
mod layouts;
pub mod plot;
mod roofline;
mod schedule;

use std::cell::Cell;
use std::path::Path;

use serde_json::Value;

use super::address::{Address, StateChoice};
use super::html::escape;
use super::problem::Cause;
use super::sections::Section;
use super::traces::Traces;
use crate::trace::{Kind, Trace, number_from_json};

/// A chart the book can draw.
pub struct ChartDef {
    pub id: &'static str,
    pub caption: &'static str,
    pub draw: fn(&ChartData) -> Result<String, Cause>,
}

/// Every chart, by id.
pub const CHARTS: &[ChartDef] = &[
    ChartDef {
        id: "float_bit_layouts",
        caption: "How each floating-point format spends its bits: one sign bit, exponent bits (range), mantissa bits (precision).",
        draw: float_formats::bit_layouts,
    },
    ChartDef {
        id: "float_ranges",
        caption: "Magnitudes each format can hold, on a log scale: solid from the smallest normal number to the largest, \
                  faded where only subnormal numbers (with fewer significant bits) remain.",
        draw: float_formats::dynamic_ranges,
    },
    ChartDef {
        id: "matmul_throughput",
        caption: "Throughput of square matrix multiplications by size, in float32 and bfloat16, with the peaks \
                  (measured on a CPU, the datasheet's promise on a GPU) as horizontal lines.",
        draw: curves::matmul_throughput,
    },
    ChartDef {
        id: "roofline",
        caption: "The roofline, measured: each memory level's bandwidth caps FLOP/s at bandwidth × intensity (a slope), \
                  each precision's peak caps it flat; the points are the five operations and bfloat16 matrix products of \
                  growing size, as timed.",
        draw: roofline::roofline,
    },
    ChartDef {
        id: "memory_hierarchy",
        caption: "The memory hierarchy, measured: bytes per second against working-set size for STREAM's copy, \
                  scale, add and triad and a read, on all the run's threads (solid) and on one (dashed); the \
                  vertical lines are the caches as the operating system reports them.",
        draw: hierarchy::memory_hierarchy,
    },
    ChartDef {
        id: "op_sweeps",
        caption: "The operations from a thousand elements to beyond the last cache, in bytes per second, over the \
                  fastest the memory moved bytes at each working set (dashed); the single points are the \
                  lecture's sizes.",
        draw: hierarchy::op_sweeps,
    },
    ChartDef {
        id: "init_std",
        caption: "Spread of a linear layer's outputs as its input dimension grows, for unit-variance weights and for \
                  weights scaled by 1/√input_dim, with √input_dim for reference.",
        draw: curves::init_std,
    },
    ChartDef {
        id: "train_losses",
        caption: "Loss at every step of the longer runs, for each optimizer and learning rate (same initial weights, same batches).",
        draw: curves::train_losses,
    },
    ChartDef {
        id: "mixed_precision_losses",
        caption: "The same regression trained in float32, entirely in bfloat16, and in mixed precision (same initial weights, same batches).",
        draw: curves::mixed_precision_losses,
    },
    ChartDef {
        id: "autograd_graph",
        caption: "The graph the backward pass walks, as the run recorded it just before backward: each box an op or a \
                  parameter, with its shape and what it saved for backward; the arrows run from inputs to the ops that \
                  read them. Point at a box for its bytes and FLOPs.",
        draw: graph::autograd_graph,
    },
    ChartDef {
        id: "checkpoint_graph",
        caption: "The graphs one checkpointed step rebuilt, segment by segment, as the run recorded them: the input \
                  each segment starts from was kept by the forward pass (dashed arrow), and every op outside the last \
                  segment ran a second time. Point at a box for its shape, bytes, FLOPs and what it saved.",
        draw: graph::checkpoint_graph,
    },
    ChartDef {
        id: "checkpoint_peaks",
        caption: "The high-water mark of one training step against the network's depth, for each schedule, on log–log \
                  axes: a cost that grows like L^p is a line of slope p.",
        draw: schedule::peaks,
    },
    ChartDef {
        id: "checkpoint_recomputed",
        caption: "The forward matmul FLOPs each schedule spends again, against the network's depth, on log–log axes \
                  (keeping every layer recomputes nothing and has no line).",
        draw: schedule::recomputed,
    },
    ChartDef {
        id: "tensor_strides",
        caption: "The matrix as indexed (top) and the flat storage it lives in (bottom). From the highlighted element, \
                  one step right along a row and one step down a column land where the strides say.",
        draw: layouts::tensor_strides,
    },
    ChartDef {
        id: "batch_sequence",
        caption: "A batch of sequences times one weight matrix: the same product at every batch element and sequence \
                  position (top), one of them drawn to scale (bottom). The shapes are y's as recorded; the inner size is \
                  the value of every entry of y, a sum of that many products of ones.",
        draw: layouts::batch_sequence,
    },
    ChartDef {
        id: "cpu_gpu",
        caption: "The host and the GPU each have their own memory; data crosses between them over the bus, at the rates \
                  measured for a copy from pinned and from ordinary (pageable) host memory.",
        draw: layouts::cpu_gpu,
    },
];

/// The most a chart draws. Chart data is input like any trace value: a list of a billion points
/// or a bit width of four billion fails the build with the value's name instead of drawing
/// without bound.
pub const MAX_POINTS: usize = 20_000;
/// Lines in one line chart.
pub const MAX_SERIES: usize = 16;
/// Rows in one row chart (one per float format).
pub const MAX_ROWS: usize = 32;

/// One section's values, for a chart to read.
pub struct ChartData<'t> {
    pub path: &'t Path,
    pub section: &'t Section<'t>,
    /// The trace's facts about its device and host.
    pub provenance: &'t crate::trace::Provenance,
    /// Set when the chart read a value a clock decided (the page's provenance box needs to know).
    pub timed: Cell<bool>,
    /// Set when the chart read a value a machine decided: only then does its caption name one.
    pub measured: Cell<bool>,
}

impl ChartData<'_> {
    /// The value at `name[.path]` in this chart's section.
    pub fn value(&self, name_path: &str) -> Result<&Value, Cause> {
        let mut parts = name_path.split('.');
        let name = parts.next().unwrap_or_default().to_string();
        let address = Address {
            section: self.section.record.id.clone(),
            name,
            path: parts.map(String::from).collect(),
            state: StateChoice::Last,
        };
        let found = self.section.resolve(self.path, &address)?;
        if found.record.timed() {
            self.timed.set(true);
        }
        // A value of unknown kind (older code) may have been measured: say where, to be safe.
        if !matches!(found.record.kind(), Some(Kind::Given | Kind::Computed)) {
            self.measured.set(true);
        }
        Ok(found.value)
    }

    /// A number (non-finite ones included).
    pub fn number(&self, name_path: &str) -> Result<f64, Cause> {
        let value = self.value(name_path)?;
        number_from_json(value).ok_or_else(|| self.bad(name_path, format!("expected a number, found `{value}`")))
    }

    /// A list of numbers, at most [`MAX_POINTS`].
    pub fn numbers(&self, name_path: &str) -> Result<Vec<f64>, Cause> {
        let items = self.list(name_path, MAX_POINTS)?;
        items
            .iter()
            .map(|v| number_from_json(v).ok_or_else(|| self.bad(name_path, format!("`{v}` is not a number"))))
            .collect()
    }

    /// A list of at most `max` items.
    pub fn list(&self, name_path: &str, max: usize) -> Result<&Vec<Value>, Cause> {
        let items = self
            .value(name_path)?
            .as_array()
            .ok_or_else(|| self.bad(name_path, "expected a list".into()))?;
        if items.len() > max {
            return Err(self.bad(
                name_path,
                format!(
                    "a list of {} items, more than the {max} points or rows a chart draws",
                    items.len()
                ),
            ));
        }
        Ok(items)
    }

    /// What decided `name[.path]` of this section, as its hover text says it: the kind of the
    /// value in words (given, computed, measured by a clock or by this machine) and the section
    /// that recorded it, by its title. A reader learns whether to trust the number, not where the
    /// trace keeps it.
    pub fn decided(&self, name_path: &str) -> String {
        format!("{} ({})", self.decided_alone(name_path), self.section.record.title)
    }

    /// [`ChartData::decided`] without the section's title, for a hover that names two values.
    pub fn decided_alone(&self, name_path: &str) -> &'static str {
        let name = name_path.split('.').next().unwrap_or(name_path);
        self.section
            .record
            .values
            .get(name)
            .map_or("not recorded by this run", crate::kinds::words)
    }

    /// Names of this section's values, in recording order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.section.record.values.keys().map(String::as_str)
    }

    pub fn bad(&self, name_path: &str, msg: String) -> Cause {
        Cause::BadValue {
            trace: self.path.to_path_buf(),
            address: format!("{}.{name_path}", self.section.record.id),
            msg,
        }
    }
}

pub fn find(id: &str) -> Option<&'static ChartDef> {
    CHARTS.iter().find(|c| c.id == id)
}

/// The section whose values chart `id` draws: the one whose registry entry declares it, as this
/// trace recorded it or, in a trace older than the registry, as another trace of the folder did
/// (which section a chart belongs to is the code's, not the device's).
fn declaring_section(id: &str, trace: &Trace, traces: &mut Traces) -> Result<String, Cause> {
    let declares = |t: &Trace| {
        t.sections
            .iter()
            .find(|s| s.charts.iter().any(|c| c == id))
            .map(|s| s.id.clone())
    };
    if let Some(owner) = declares(trace) {
        return Ok(owner);
    }
    traces
        .all()?
        .iter()
        .find_map(|(_, t)| declares(t))
        .ok_or_else(|| Cause::Chart {
            id: id.to_string(),
            msg: "no section of the traces here declares it: they are older than the sections' registry; record \
                  one with the current lecture (`cargo run --release --bin lecture`)"
                .to_string(),
        })
}

/// The chart as a captioned figure.
pub fn render(id: &str, path: &Path, trace: &Trace, traces: &mut Traces) -> Result<String, Cause> {
    let def = find(id).ok_or_else(|| Cause::UnknownChart {
        id: id.to_string(),
        known: CHARTS.iter().map(|c| c.id).collect::<Vec<_>>().join(", "),
    })?;
    let owner = declaring_section(id, trace, traces)?;
    let section = traces.section(path, trace, &owner)?;
    let data = ChartData {
        path,
        section: &section,
        provenance: &trace.provenance,
        timed: Cell::new(false),
        measured: Cell::new(false),
    };
    let svg = (def.draw)(&data).map_err(|cause| match cause {
        Cause::Chart { msg, .. } => Cause::Chart {
            id: id.to_string(),
            msg,
        },
        other => other,
    })?;
    traces.quote(path, &owner, data.timed.get());
    let device = &trace.provenance.device;
    // The full mark once per page and section, the dagger after it, as beside values.
    let mark = match &section.older_code {
        Some(older) => traces.older_mark(path, &owner, older),
        None => String::new(),
    };
    // The reader's words: the device and the day; the trace file and the section id are on hover.
    let day = trace
        .section(&owner)
        .and_then(|s| s.run.recorded_at.get(..10))
        .unwrap_or("");
    let on_day = if day.is_empty() {
        String::new()
    } else {
        format!(", {day}")
    };
    // A chart drawn from the lecture's choices alone (a format's bits) is the same on every machine,
    // so naming one would suggest it decided the picture.
    let recorded = if data.measured.get() {
        format!(
            " <span class=\"lecture-muted\" title=\"section {} of the {} trace\">Recorded on the {}{}.</span>",
            escape(&owner),
            escape(&device.slug),
            escape(&super::device_names::spoken(device)),
            escape(&on_day),
        )
    } else {
        String::new()
    };
    Ok(format!(
        "<figure class=\"lecture-chart\" id=\"chart-{id}\">{}<figcaption>{}{recorded}{mark}</figcaption></figure>",
        plot::scroll_box(&svg),
        escape(def.caption),
    ))
}

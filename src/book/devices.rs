//! `{{devices}}`: every trace in the folder side by side on the lecture's headline numbers, one
//! column per device, and a chart of what bfloat16 bought on each. Each column names its device,
//! the day its newest section was recorded, and how current it is; a value a device's older run
//! never recorded shows as such, and one that has no meaning there (an allocator's count on a CPU)
//! says why. Which devices there are is whatever the folder holds: the table is rebuilt from the
//! traces at every build.

use std::path::PathBuf;
use std::sync::Arc;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::bench_tables::TraceTiming;
use super::bf16_verdict::{Speedup, verdict};
use super::chart::hover::{Hover, Shape};
use super::chart::plot::{FG, PALETTE, drawing, scroll_box, svg, text_style};
use super::directive::{Address, StateChoice};
use super::format::{Format, format_value};
use super::html::escape;
use super::problem::Cause;
use super::provenance::short_commit;
use super::traces::Traces;
use super::unrecorded;
use crate::trace::{Trace, Unit, number_from_json};

/// A row: its label, and what each device's cell shows.
struct Row {
    label: String,
    cell: Cell,
}

enum Cell {
    /// A recorded value, formatted by its unit (or `format`); "no GPU" off a GPU when `gpu_only`.
    Value {
        key: String,
        format: Format,
        gpu_only: bool,
    },
    /// One recorded value over another, as a factor.
    Ratio {
        top: String,
        bottom: String,
        gpu_only: bool,
    },
    /// The wall time of every section, added up.
    LectureTime,
}

/// The ratio charted across devices (its two keys), from the row a section declared `charted`.
struct Charted {
    section: String,
    top: String,
    bottom: String,
}

/// A Devices row's identity: its section, its value and what it is divided by.
type RowId = (String, String, Option<String>);

/// The rows the sections declare (`devices` in their registry entries, as the traces recorded
/// them), in lecture order, each once, then the lecture's time. A trace older than the registry
/// declares none; its cells still fill the rows a current trace declares (which rows there are is
/// the code's choice, not the device's).
fn rows(columns: &[Column]) -> Result<(Vec<Row>, Option<Charted>), Cause> {
    let mut rows: Vec<Row> = Vec::new();
    // A row is its value (and what it is divided by); its label is the newest run's, so that an
    // older trace's wording of the same row does not add a second row.
    let mut seen: Vec<(RowId, String)> = Vec::new();
    let mut charted = None;
    // The newest trace declares first, so its rows stand in its order: a row it added since the
    // older traces were recorded sits beside its section's others, not at the table's end.
    let mut by_age: Vec<&Column> = columns.iter().collect();
    by_age.sort_by(|a, b| b.trace.created_at().cmp(&a.trace.created_at()));
    for c in by_age {
        for s in &c.trace.sections {
            for r in &s.devices {
                let id = (s.id.clone(), r.value.clone(), r.over.clone());
                if let Some(i) = seen.iter().position(|(k, _)| *k == id) {
                    if s.run.recorded_at > seen[i].1 {
                        seen[i].1 = s.run.recorded_at.clone();
                        rows[i].label = r.label.clone();
                    }
                    continue;
                }
                seen.push((id, s.run.recorded_at.clone()));
                let key = format!("{}.{}", s.id, r.value);
                let cell = match &r.over {
                    Some(over) => {
                        let bottom = format!("{}.{over}", s.id);
                        if r.charted && charted.is_none() {
                            charted = Some(Charted {
                                section: s.id.clone(),
                                top: key.clone(),
                                bottom: bottom.clone(),
                            });
                        }
                        Cell::Ratio {
                            top: key,
                            bottom,
                            gpu_only: r.gpu_only,
                        }
                    }
                    None => Cell::Value {
                        format: r.format.parse().map_err(|msg: String| Cause::BadValue {
                            trace: c.path.clone(),
                            address: format!("{key} (its Devices row's format)"),
                            msg,
                        })?,
                        key,
                        gpu_only: r.gpu_only,
                    },
                };
                rows.push(Row {
                    label: r.label.clone(),
                    cell,
                });
            }
        }
    }
    // In lecture order, as the newest trace has its sections; a row only older traces declare
    // follows its section's rows.
    let newest = columns
        .iter()
        .max_by(|a, b| a.trace.created_at().cmp(&b.trace.created_at()));
    let rank = |id: &RowId| {
        newest
            .and_then(|c| c.trace.sections.iter().position(|s| s.id == id.0))
            .unwrap_or(usize::MAX)
    };
    let mut ranked: Vec<(usize, Row)> = seen.iter().map(|(id, _)| rank(id)).zip(rows).collect();
    ranked.sort_by_key(|(r, _)| *r);
    let mut rows: Vec<Row> = ranked.into_iter().map(|(_, row)| row).collect();
    rows.push(Row {
        label: "the whole lecture, every section".to_string(),
        cell: Cell::LectureTime,
    });
    Ok((rows, charted))
}

fn address(key: &str) -> Address {
    let mut parts = key.split('.');
    Address {
        section: parts.next().unwrap_or_default().to_string(),
        name: parts.next().unwrap_or_default().to_string(),
        path: parts.map(String::from).collect(),
        state: StateChoice::Last,
    }
}

/// One device's trace, loaded.
struct Column {
    path: PathBuf,
    trace: Arc<Trace>,
}

/// The table and the chart.
pub fn render(traces: &mut Traces) -> Result<String, Cause> {
    let mut columns: Vec<Column> = traces
        .all()?
        .into_iter()
        .map(|(path, trace)| Column { path, trace })
        .collect();
    // The trace `lecture` has just written is the reader's own machine: its column comes first,
    // where a narrow screen shows it, and says so.
    let own = traces.given_strict();
    columns.sort_by_key(|c| Some(&c.path) != own.as_ref());
    let (rows, charted) = rows(&columns)?;
    // What each column's trace timed at the lecture's shape, for its CPU's benchmark table: a
    // column whose product a table of the same CPU beat beyond both spreads was timed on a busy
    // machine, and says so in its header.
    let mut timings: Vec<TraceTiming> = Vec::new();
    if let Some(charted) = &charted {
        for c in &columns {
            timings.extend(trace_timing(traces, c, &charted.section));
        }
    }
    let tables = super::bench_tables::Tables::load(&traces.dir())?;
    let beaten = super::bench_tables::beaten_by_a_table(&tables, &timings);
    let mut head = String::from("<th></th>");
    for c in &columns {
        let mine = if Some(&c.path) == own.as_ref() {
            "<strong>this machine</strong><br>"
        } else {
            ""
        };
        let busy = if beaten.contains(&c.trace.provenance.device.slug) {
            "<br><span class=\"lecture-muted\">⚠ timed on a busy machine: its CPU's benchmark table ran the same \
             product faster, beyond both spreads (below)</span>"
        } else {
            ""
        };
        head.push_str(&format!("<th>{mine}{}{busy}</th>", header(traces, c)?));
    }
    let mut body = String::new();
    for row in &rows {
        body.push_str(&format!("<tr><th>{}</th>", escape(&row.label)));
        for c in &columns {
            let shown = cell(traces, c, &row.cell);
            body.push_str(&format!("<td>{}</td>", unrecorded::or_placeholder(traces, shown)?));
        }
        body.push_str("</tr>");
    }
    let mut speedups = Vec::new();
    if let Some(charted) = &charted {
        for c in &columns {
            let (bf16, fp32) = (number(traces, c, &charted.top), number(traces, c, &charted.bottom));
            if let (Ok(bf16), Ok(fp32)) = (bf16, fp32) {
                let section = &charted.section;
                let peak = |traces: &mut Traces, name: &str| number(traces, c, &format!("{section}.{name}")).ok();
                // The bfloat16 unit's own peak where the run recorded it (it may not be the unit
                // the products took), else the one its MFU divides by.
                let unit = peak(traces, "bf16_unit_flop_per_sec").or_else(|| peak(traces, "bf16_peak_flop_per_sec"));
                let peaks = unit.zip(peak(traces, "peak_flop_per_sec"));
                let mut recorded = |name: &str| {
                    traces
                        .resolve(&c.path, &c.trace, &address(&format!("{section}.{name}")))
                        .ok()
                        .map(|f| f.value)
                };
                let isa_widens = recorded("bf16_matmul_isa").is_some_and(|v| v.as_str() == Some("portable-f32"));
                let widened = recorded("bf16_widened").and_then(|v| v.as_bool()).unwrap_or(isa_widens);
                let has_unit = recorded("bf16_has_instruction")
                    .and_then(|v| v.as_bool())
                    .unwrap_or(!isa_widens);
                speedups.push(Speedup {
                    name: super::device_names::spoken(&c.trace.provenance.device),
                    ratio: bf16 / fp32,
                    peaks,
                    widened,
                    has_unit,
                    busy: beaten.contains(&c.trace.provenance.device.slug),
                });
            }
        }
    }
    Ok(format!(
        "<div class=\"lecture-devices\"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>\n\n{}\n\n{}{}",
        speedup_chart(&speedups, charted.as_ref())?,
        verdict(&speedups),
        super::bench_tables::render(&tables, &timings)?
    ))
}

/// What the column's trace timed at the lecture's shape, for its CPU's benchmark table; `None`
/// when it did not (an older run, no spread recorded). `section` is the charted row's, the one that
/// times the matrix products (their shape `B`, `D`, `K` and `actual_time_spread`).
fn trace_timing(traces: &mut Traces, c: &Column, section: &str) -> Option<TraceTiming> {
    let mut size = |n: &str| number(traces, c, &format!("{section}.{n}")).ok();
    let shape = (size("B")?, size("D")?, size("K")?);
    let spread = traces
        .resolve(&c.path, &c.trace, &address(&format!("{section}.actual_time_spread")))
        .ok()?;
    let at = |k: &str| spread.value[k].as_f64();
    let quartiles = (at("q1_s")?, at("median_s")?, at("q3_s")?);
    Some(TraceTiming {
        slug: c.trace.provenance.device.slug.clone(),
        shape,
        quartiles,
        disturbed: c.trace.section(section).is_some_and(|s| s.disturbed.is_some()),
    })
}

/// The device, the day of its newest section, and how current the trace is.
fn header(traces: &mut Traces, c: &Column) -> Result<String, Cause> {
    let device = &c.trace.provenance.device;
    let mut older: Vec<String> = Vec::new();
    let mut stale = 0;
    for s in &c.trace.sections {
        if let Some(old) = traces.section(&c.path, &c.trace, &s.id)?.older_code {
            // The header says it in full, so the column's cells carry the dagger alone.
            traces.older_mark(&c.path, &s.id, &old);
            stale += 1;
            if !older.contains(&old.commit) {
                older.push(old.commit);
            }
        }
    }
    let day = c
        .trace
        .created_at()
        .and_then(|t| t.split('T').next())
        .unwrap_or("undated");
    let current = match older.as_slice() {
        [] => "current code".to_string(),
        _ => format!(
            "† {stale} of {} sections recorded by older code (commit {})",
            c.trace.sections.len(),
            older.join(", ")
        ),
    };
    let commit = c
        .trace
        .sections
        .iter()
        .max_by_key(|s| s.run.recorded_at.clone())
        .map(|s| short_commit(&s.run.git, false))
        .unwrap_or_default();
    Ok(format!(
        "{}<br><code>{}</code><br><span class=\"lecture-muted\">{}, commit {}; {}</span>",
        escape(&super::device_names::spoken(device)),
        escape(&device.slug),
        escape(day),
        escape(&commit),
        escape(&current)
    ))
}

/// A recorded number of the column's trace (quoted, so staleness is checked and shown).
fn number(traces: &mut Traces, c: &Column, key: &str) -> Result<f64, Cause> {
    let found = traces.resolve(&c.path, &c.trace, &address(key))?;
    number_from_json(found.value).ok_or_else(|| Cause::BadValue {
        trace: c.path.clone(),
        address: key.to_string(),
        msg: format!("expected a number, found `{}`", found.value),
    })
}

/// Whether the trace was recorded on a GPU.
fn on_gpu(c: &Column) -> bool {
    c.trace.provenance.device.kind == "cuda"
}

fn cell(traces: &mut Traces, c: &Column, what: &Cell) -> Result<String, Cause> {
    let no_gpu = "<span class=\"lecture-muted\">no GPU</span>".to_string();
    let mark = |traces: &mut Traces, key: &str| -> String {
        let older = traces
            .resolve(&c.path, &c.trace, &address(key))
            .ok()
            .and_then(|f| f.older_code);
        match older {
            Some(o) => traces.older_mark(&c.path, &address(key).section, &o),
            None => String::new(),
        }
    };
    match what {
        Cell::Value { gpu_only: true, .. } | Cell::Ratio { gpu_only: true, .. } if !on_gpu(c) => Ok(no_gpu),
        Cell::Value { key, format, .. } => {
            super::render::value(traces, &c.path, &c.trace, &address(key), *format, None)
        }
        Cell::Ratio { top, bottom, .. } => {
            let ratio = number(traces, c, top)? / number(traces, c, bottom)?;
            let text = format_value(&serde_json::json!(ratio), Unit::Ratio, Format::Fixed(2)).map_err(|msg| {
                Cause::BadValue {
                    trace: c.path.clone(),
                    address: format!("{top} / {bottom}"),
                    msg,
                }
            })?;
            Ok(format!(
                "<span class=\"lecture-value\" title=\"{top} / {bottom} · {} trace\">{}×</span>{}",
                escape(&c.trace.provenance.device.slug),
                escape(&text),
                mark(traces, top)
            ))
        }
        Cell::LectureTime => {
            let total: f64 = c.trace.sections.iter().map(|s| s.wall_time_s).sum();
            let text = format_value(&serde_json::json!(total), Unit::Seconds, Format::Auto).map_err(|msg| {
                Cause::BadValue {
                    trace: c.path.clone(),
                    address: "sections.wall_time_s".into(),
                    msg,
                }
            })?;
            Ok(format!("<span class=\"lecture-value\">{}</span>", escape(&text)))
        }
    }
}

/// One bar per device: bfloat16's FLOP/s over float32's at the lecture's shape, with the line
/// where the two are equal.
fn speedup_chart(speedups: &[Speedup], charted: Option<&Charted>) -> Result<String, Cause> {
    let finite: Vec<&Speedup> = speedups
        .iter()
        .filter(|s| s.ratio.is_finite() && s.ratio > 0.0)
        .collect();
    if charted.is_none() || finite.is_empty() {
        return Ok(String::new());
    }
    let n = finite.len();
    let top = finite.iter().map(|s| s.ratio).fold(1.0, f64::max) * 1.15;
    let names: Vec<String> = finite.iter().map(|s| s.name.clone()).collect();
    let y_name = |y: &f64| {
        let row = n as f64 - 1.0 - y.round();
        if (y - y.round()).abs() < 1e-6 && row >= 0.0 {
            names.get(row as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let label = "bfloat16's speed over float32 at the lecture's shape, per device.";
    // Wide: names left of the bars. Narrow (a phone's column, `chart::fit`): each name above its bar.
    let draw = |narrow: bool| {
        let (width, row) = if narrow {
            (crate::chart::fit::NARROW_WIDTH, 64)
        } else {
            (760, 48)
        };
        let px = |wide: u32| crate::chart::fit::text_px(narrow, wide);
        svg(width, 80 + row * n as u32, label, |root, hovers| {
            let mut chart = drawing(
                ChartBuilder::on(root)
                    .margin(14)
                    .x_label_area_size(50)
                    // Room for the longest name at the labels' size (about 7.5 px a character).
                    .y_label_area_size(match narrow {
                        true => 10,
                        false => names
                            .iter()
                            .map(|n| n.chars().count())
                            .max()
                            .map_or(260, |c| (c as u32 * 15 / 2 + 12).clamp(200, 420)),
                    })
                    .build_cartesian_2d(0.0..top, -0.5..n as f64 - 0.5),
            )?;
            drawing(
                chart
                    .configure_mesh()
                    .disable_y_mesh()
                    .x_desc("bfloat16 FLOP/s over float32 FLOP/s (×)")
                    .y_labels(if narrow { 0 } else { n })
                    .x_labels(if narrow { 5 } else { 10 })
                    .y_label_formatter(&y_name)
                    .label_style(text_style(px(14)))
                    .axis_desc_style(text_style(px(15)))
                    .axis_style(FG.mix(0.6))
                    .bold_line_style(FG.mix(0.12))
                    .light_line_style(FG.mix(0.0))
                    .draw(),
            )?;
            for (i, Speedup { name, ratio, .. }) in finite.iter().copied().enumerate() {
                let y = (n - 1 - i) as f64;
                let color = if *ratio >= 1.0 { PALETTE[2] } else { PALETTE[1] };
                let (lo, hi) = if narrow { (y - 0.4, y + 0.1) } else { (y - 0.3, y + 0.3) };
                if narrow {
                    let above = text_style(px(14)).pos(Pos::new(HPos::Left, VPos::Top));
                    drawing(chart.draw_series(std::iter::once(Text::new(name.clone(), (0.0, y + 0.44), above))))?;
                }
                drawing(chart.draw_series(std::iter::once(Rectangle::new(
                    [(0.0, lo), (*ratio, hi)],
                    color.filled(),
                ))))?;
                hovers.push(Hover {
                    shape: Shape::Bar {
                        from: chart.backend_coord(&(0.0, lo)),
                        to: chart.backend_coord(&(*ratio, hi)),
                    },
                    title: format!(
                        "the {name}: bfloat16 ran at {ratio:.2}× float32's FLOP/s, both timed at the lecture's shape\n\
                     {}: its run timed both products",
                        crate::kinds::kind_words(crate::trace::Kind::Clock)
                    ),
                });
                drawing(chart.draw_series(std::iter::once(Text::new(
                    format!("{ratio:.2}×"),
                    (*ratio, (lo + hi) / 2.0),
                    text_style(px(14)),
                ))))?;
            }
            drawing(chart.draw_series(std::iter::once(PathElement::new(
                vec![(1.0, -0.5), (1.0, n as f64 - 0.5)],
                FG.mix(0.7).stroke_width(2),
            ))))?;
            Ok(())
        })
    };
    let chart = crate::chart::fit::pair(&draw(false)?, &draw(true)?, &[]);
    Ok(format!(
        "<figure class=\"lecture-chart\" id=\"chart-bf16-speedup-by-device\">{}<figcaption>{} The line marks 1×, where \
         bfloat16 runs no faster than float32; green bars are the devices where it ran faster.</figcaption></figure>",
        scroll_box(&chart),
        escape(label)
    ))
}

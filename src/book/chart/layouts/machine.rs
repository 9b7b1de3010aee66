//! `data_loading`'s figure on a GPU: the host with its memory, the bus with the copy rates the run
//! measured, and the GPU with its own memory. Every figure in it is read from the trace: the
//! device and host facts from its provenance, the rates from the section.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::{ELEMENT, ROW_STEP, boxed, head, text};
use crate::chart::ChartData;
use crate::chart::hover::{self, Hover, Shape};
use crate::chart::plot::{FG, drawing, svg};
use crate::format::{Format, format_value};
use crate::problem::Cause;
use crate::trace::{Unit, json_number};

/// A number in its unit, as the book writes it everywhere.
fn shown(x: f64, unit: Unit) -> String {
    format_value(&json_number(x), unit, Format::Auto).unwrap_or_else(|_| x.to_string())
}

/// The CPU–GPU picture: host memory, the PCIe copy (pageable and pinned), device memory.
pub fn cpu_gpu(data: &ChartData) -> Result<String, Cause> {
    let pageable = data.number("h2d_pageable_bytes_per_sec")?;
    let pinned = data.number("h2d_pinned_bytes_per_sec")?;
    let provenance = data.provenance;
    let device = &provenance.device;
    // The size is the device's, in the trace's provenance, not a value of the section: the message
    // names where it is missing.
    let gpu_memory = device.memory_bytes.ok_or_else(|| Cause::Chart {
        id: "cpu_gpu".into(),
        msg: format!(
            "trace {} records no GPU memory size (`provenance.device.memory_bytes` is missing or null), and the \
             picture draws the device's memory: record the trace again on the GPU, whose run reads the size",
            data.path.display()
        ),
    })?;
    // Runs before the host's memory was recorded say so instead of guessing it.
    let host_memory = match data.names().any(|n| n == "host_memory_bytes") {
        true => format!("memory: {}", shown(data.number("host_memory_bytes")?, Unit::Bytes)),
        false => "memory: not recorded by this run".to_string(),
    };
    let host = &provenance.host;
    let detail = |key: &str| device.details.get(key).and_then(crate::trace::number_from_json);
    let gpu_line = match (detail("sm_count"), detail("l2_cache_bytes")) {
        (Some(sms), Some(l2)) => format!("{sms} SMs, L2 cache {}", shown(l2, Unit::Bytes)),
        _ => String::new(),
    };
    // Wide: host left, GPU right, the copies across. Narrow (a phone's column, `chart::fit`):
    // host above, GPU below, the copies down between them, each rate beside its arrow.
    let draw = |narrow: bool| {
        let (width, height) = if narrow {
            (crate::chart::fit::NARROW_WIDTH, 390)
        } else {
            (720, 230)
        };
        let (host_box, gpu_box) = match narrow {
            true => (((10, 30), (330, 150)), ((10, 256), (330, 376))),
            false => (((10, 40), (250, 190)), ((470, 40), (710, 190))),
        };
        // Each copy: where its arrow starts and ends, and where its words sit (and how anchored).
        type Copy = ((i32, i32), (i32, i32), (i32, i32), HPos);
        let copies: [Copy; 2] = match narrow {
            true => [
                ((30, 154), (30, 252), (40, 203), HPos::Left),
                ((180, 154), (180, 252), (190, 203), HPos::Left),
            ],
            false => [
                ((255, 90), (468, 90), (360, 78), HPos::Center),
                ((255, 150), (468, 150), (360, 138), HPos::Center),
            ],
        };
        svg(
            width,
            height,
            "The host, the bus and the GPU, with the measured copy rates",
            |area, hovers| {
                let fg = FG.to_rgba();
                boxed(area, host_box.0, host_box.1, ELEMENT.mix(0.18))?;
                boxed(area, gpu_box.0, gpu_box.1, ROW_STEP.mix(0.18))?;
                // Lines of a box's text, centred, at these depths below its top.
                let lines = |corner: ((i32, i32), (i32, i32)), said: &[(&str, u32, i32)]| -> Result<(), Cause> {
                    let x = (corner.0.0 + corner.1.0) / 2;
                    for (words, size, depth) in said {
                        let at = (x, corner.0.1 + depth);
                        text(area, words, at, *size, (HPos::Center, VPos::Center), fg)?;
                    }
                    Ok(())
                };
                let cores = format!("{} logical cores", host.logical_cores);
                lines(
                    host_box,
                    &[
                        ("Host (CPU)", 17, 28),
                        (&host.cpu_model, 13, 60),
                        (&cores, 13, 82),
                        (&host_memory, 13, 110),
                    ],
                )?;
                let memory = format!("memory: {}", shown(gpu_memory as f64, Unit::Bytes));
                lines(
                    gpu_box,
                    &[(&device.name, 17, 28), (&memory, 13, 60), (&gpu_line, 13, 82)],
                )?;
                // The two copies, host to device: pinned first, pageable second.
                let rates = [
                    ("pinned", pinned, "h2d_pinned_bytes_per_sec"),
                    ("pageable", pageable, "h2d_pageable_bytes_per_sec"),
                ];
                for ((label, rate, name), (from, to, words_at, anchor)) in rates.into_iter().zip(copies) {
                    hovers.push(Hover {
                        shape: Shape::Line { from, to },
                        title: hover::title(
                            &format!("copy to the GPU from {label} host memory"),
                            rate,
                            Unit::BytesPerSec,
                            &data.decided(name),
                        ),
                    });
                    // The shaft stops short of the head, which ends at `to`.
                    let back = |by: i32| {
                        (
                            to.0 - (to.0 - from.0).signum() * by,
                            to.1 - (to.1 - from.1).signum() * by,
                        )
                    };
                    let points = vec![from, back(6)];
                    drawing(area.draw(&PathElement::new(points, FG.mix(0.8).stroke_width(2))))?;
                    head(area, back(28), to, FG)?;
                    let words = format!("{label}: {}", shown(rate, Unit::BytesPerSec));
                    text(area, &words, words_at, 13, (anchor, VPos::Center), fg)?;
                }
                let title_at = (width as i32 / 2, if narrow { 14 } else { 20 });
                text(
                    area,
                    "copy to the GPU, as measured",
                    title_at,
                    13,
                    (HPos::Center, VPos::Center),
                    fg,
                )
            },
        )
    };
    Ok(crate::chart::fit::pair(&draw(false)?, &draw(true)?, &[]))
}

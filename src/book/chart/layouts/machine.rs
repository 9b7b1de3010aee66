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
    let (width, height) = (720, 230);
    svg(
        width,
        height,
        "The host, the bus and the GPU, with the measured copy rates",
        |area, hovers| {
            let fg = FG.to_rgba();
            let (top, bottom) = (40, 190);
            boxed(area, (10, top), (250, bottom), ELEMENT.mix(0.18))?;
            boxed(area, (470, top), (710, bottom), ROW_STEP.mix(0.18))?;
            let left = (130, top + 28);
            text(area, "Host (CPU)", left, 17, (HPos::Center, VPos::Center), fg)?;
            text(
                area,
                &host.cpu_model,
                (130, top + 60),
                13,
                (HPos::Center, VPos::Center),
                fg,
            )?;
            let cores = format!("{} logical cores", host.logical_cores);
            text(area, &cores, (130, top + 82), 13, (HPos::Center, VPos::Center), fg)?;
            text(
                area,
                &host_memory,
                (130, top + 110),
                13,
                (HPos::Center, VPos::Center),
                fg,
            )?;
            text(
                area,
                &device.name,
                (590, top + 28),
                17,
                (HPos::Center, VPos::Center),
                fg,
            )?;
            let memory = format!("memory: {}", shown(gpu_memory as f64, Unit::Bytes));
            text(area, &memory, (590, top + 60), 13, (HPos::Center, VPos::Center), fg)?;
            text(area, &gpu_line, (590, top + 82), 13, (HPos::Center, VPos::Center), fg)?;
            // The two copies, host to device: pinned above, pageable below.
            let rates = [
                (90, "pinned", pinned, "h2d_pinned_bytes_per_sec"),
                (150, "pageable", pageable, "h2d_pageable_bytes_per_sec"),
            ];
            for (y, label, rate, name) in rates {
                hovers.push(Hover {
                    shape: Shape::Line {
                        from: (255, y),
                        to: (468, y),
                    },
                    title: hover::title(
                        &format!("copy to the GPU from {label} host memory"),
                        rate,
                        Unit::BytesPerSec,
                        &data.decided(name),
                    ),
                });
                let points = vec![(255, y), (462, y)];
                drawing(area.draw(&PathElement::new(points, FG.mix(0.8).stroke_width(2))))?;
                head(area, (440, y), (468, y), FG)?;
                let words = format!("{label}: {}", shown(rate, Unit::BytesPerSec));
                text(area, &words, (360, y - 12), 13, (HPos::Center, VPos::Center), fg)?;
            }
            text(
                area,
                "copy to the GPU, as measured",
                (360, 20),
                13,
                (HPos::Center, VPos::Center),
                fg,
            )
        },
    )
}

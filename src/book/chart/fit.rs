//! A chart drawn twice: once for a desktop's column and once for a phone's (390 px, a column of
//! about 350), and the style sheet shows the one that fits. Scaling the wide drawing down to a
//! phone would draw its text at 6 px, so it used to stop shrinking at a readable size and scroll
//! sideways, hiding half a roofline. The narrow drawing keeps its text at a size a phone reads
//! (`NARROW_TEXT_PX`) with fewer ticks, tighter margins and its legend below the plot as page
//! text, where it covers no point.

use crate::html::escape;

/// The size every text of a narrow drawing is given: plotters writes a font of `n` px as about
/// 0.8·n, so 13 keeps the text above 10 px down to a column of 330.
pub const NARROW_TEXT_PX: u32 = 13;

/// The width every narrow drawing is made at: a phone's column (350 px at a 390 px window), less
/// a little.
pub const NARROW_WIDTH: u32 = 340;

/// The size of a text the wide drawing gives `wide` px, in the drawing `narrow` says.
pub fn text_px(narrow: bool, wide: u32) -> u32 {
    if narrow { NARROW_TEXT_PX } else { wide }
}

/// The sizes one drawing of a line chart takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frame {
    pub width: u32,
    pub height: u32,
    pub margin: u32,
    /// Room right of the plot for the last x label.
    pub margin_right: u32,
    pub x_label_area: u32,
    pub y_label_area: u32,
    /// Tick labels, axis descriptions and reference lines' labels, in px.
    pub label_px: u32,
    pub desc_px: u32,
    pub reference_px: u32,
    /// Ticks along a linear axis, and the most along a log axis.
    pub linear_ticks: usize,
    pub log_ticks: usize,
    /// The legend drawn inside the plot (the wide drawing), or left to the page (the narrow one).
    pub legend_inside: bool,
}

impl Frame {
    /// A desktop's column (mdBook's content is at most 750 px wide).
    pub fn wide(width: u32, height: u32) -> Frame {
        Frame {
            width,
            height,
            margin: 12,
            margin_right: 36,
            x_label_area: 44,
            y_label_area: 76,
            label_px: 15,
            desc_px: 16,
            reference_px: 14,
            linear_ticks: 8,
            log_ticks: 12,
            legend_inside: true,
        }
    }

    /// A phone's column: drawn at about the size it is shown at.
    pub const NARROW: Frame = Frame {
        width: NARROW_WIDTH,
        height: 280,
        margin: 6,
        margin_right: 18,
        x_label_area: 38,
        y_label_area: 58,
        label_px: NARROW_TEXT_PX,
        desc_px: NARROW_TEXT_PX,
        reference_px: NARROW_TEXT_PX,
        linear_ticks: 4,
        log_ticks: 6,
        legend_inside: false,
    };
}

/// How the page draws a line in the legend: its colour (red, green, blue) and whether it is
/// dashed.
pub struct Key {
    pub name: String,
    pub colour: (u8, u8, u8),
    pub dashed: bool,
}

/// The wide and the narrow drawing of one chart, each marked for the style sheet, and the narrow
/// one's legend under it.
pub fn pair(wide: &str, narrow: &str, keys: &[Key]) -> String {
    let mark = |svg: &str, class: &str| {
        svg.replacen(
            "class=\"lecture-chart-svg\"",
            &format!("class=\"lecture-chart-svg {class}\""),
            1,
        )
    };
    let legend: String = keys
        .iter()
        .map(|k| {
            let c = k.colour;
            format!(
                "<li><span class=\"lecture-chart-key\" style=\"border-top: 3px {} #{:02x}{:02x}{:02x}\"></span>{}</li>",
                if k.dashed { "dashed" } else { "solid" },
                c.0,
                c.1,
                c.2,
                escape(&k.name)
            )
        })
        .collect();
    let legend = if legend.is_empty() {
        String::new()
    } else {
        format!("<ul class=\"lecture-chart-legend lecture-chart-narrow\">{legend}</ul>")
    };
    format!(
        "{}{}{legend}",
        mark(wide, "lecture-chart-wide"),
        mark(narrow, "lecture-chart-narrow")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_drawing_is_marked_and_the_narrow_one_has_its_legend_as_text() {
        let svg = "<svg class=\"lecture-chart-svg\" style=\"min-width: 10px\"></svg>";
        let keys = [
            Key {
                name: "float32 <measured>".into(),
                colour: (0x3d, 0x8f, 0xd1),
                dashed: false,
            },
            Key {
                name: "roof".into(),
                colour: (0xe0, 0x7b, 0x39),
                dashed: true,
            },
        ];
        let html = pair(svg, svg, &keys);
        assert!(
            html.starts_with("<svg class=\"lecture-chart-svg lecture-chart-wide\""),
            "{html}"
        );
        assert!(
            html.contains("<svg class=\"lecture-chart-svg lecture-chart-narrow\""),
            "{html}"
        );
        assert!(
            html.contains("solid #3d8fd1\"></span>float32 &lt;measured&gt;</li>"),
            "{html}"
        );
        assert!(html.contains("dashed #e07b39\"></span>roof</li>"), "{html}");
        assert!(!pair(svg, svg, &[]).contains("<ul"));
    }
}

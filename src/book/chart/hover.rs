//! What a chart says when the reader points at it: every point and bar carries its value, unit
//! and what decided it as an SVG `<title>` (the browser shows it as hover text, a screen reader reads
//! it). plotters' SVG backend cannot attach a title to what it draws, so the charts list their
//! points and bars here, in the pixels plotters drew them at, and [`append`] writes them as
//! elements of their own after plotters' drawing: a dot is drawn by us (with its colour) or over
//! plotters' line as a transparent target; a bar or a line is a transparent target over plotters'
//! shape. Nothing is found again in plotters' output, so nothing is guessed.

use plotters::style::RGBColor;

use crate::format::{Format, format_value};
use crate::html::escape;
use crate::trace::{Unit, json_number};

/// Where a target lies, in the SVG's pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// A point: a dot of radius `r`, filled with `fill` when it is the chart's marker, else a
    /// transparent target over a line plotters drew.
    Dot {
        at: (i32, i32),
        r: u32,
        fill: Option<RGBColor>,
    },
    /// A bar or a cell: a transparent target over the rectangle plotters drew.
    Bar { from: (i32, i32), to: (i32, i32) },
    /// A line (a reference, an arrow): a transparent target a few pixels wide along it.
    Line { from: (i32, i32), to: (i32, i32) },
}

/// One target and its hover text.
#[derive(Debug, Clone, PartialEq)]
pub struct Hover {
    pub shape: Shape,
    pub title: String,
}

/// A value with its unit, as the book writes it everywhere (`5.12e10 FLOP/s`, `2.00 GiB`).
pub fn shown(x: f64, unit: Unit) -> String {
    format_value(&json_number(x), unit, Format::Auto).unwrap_or_else(|_| x.to_string())
}

/// The hover text of a value: what it is, the value in its unit, and what decided it
/// ([`super::ChartData::decided`]), on a line of its own.
pub fn title(what: &str, value: f64, unit: Unit, decided: &str) -> String {
    format!("{what}: {}\n{decided}", shown(value, unit))
}

/// The targets as one SVG group, for the end of the chart's SVG (drawn last, so on top).
pub fn group(hovers: &[Hover]) -> String {
    let mut out = String::from("<g class=\"lecture-chart-hover\" fill=\"transparent\">");
    for hover in hovers {
        let title = format!("<title>{}</title>", escape(&hover.title));
        let element = match hover.shape {
            Shape::Dot { at, r, fill } => {
                let fill = fill.map_or(String::new(), |c| format!(" fill=\"{}\"", hex(c)));
                format!(
                    "<circle cx=\"{}\" cy=\"{}\" r=\"{r}\"{fill}>{title}</circle>",
                    at.0, at.1
                )
            }
            Shape::Bar { from, to } => format!(
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\">{title}</rect>",
                from.0.min(to.0),
                from.1.min(to.1),
                (to.0 - from.0).abs().max(1),
                (to.1 - from.1).abs().max(1)
            ),
            Shape::Line { from, to } => format!(
                "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"transparent\" stroke-width=\"9\">{title}</line>",
                from.0, from.1, to.0, to.1
            ),
        };
        out.push_str(&element);
    }
    out.push_str("</g>");
    out
}

fn hex(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// `svg` with the targets added as its last child, or None when it has no closing tag.
pub fn append(svg: &str, hovers: &[Hover]) -> Option<String> {
    let end = svg.rfind("</svg>")?;
    Some(format!("{}{}{}", &svg[..end], group(hovers), &svg[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_carry_escaped_titles_after_the_drawing() {
        let hovers = vec![
            Hover {
                shape: Shape::Dot {
                    at: (10, 20),
                    r: 3,
                    fill: Some(RGBColor(0x3d, 0x8f, 0xd1)),
                },
                title: title("a <b> & c", 2.5e10, Unit::FlopPerSec, "measured: a clock decided it"),
            },
            Hover {
                shape: Shape::Bar {
                    from: (30, 40),
                    to: (10, 50),
                },
                title: "bar".into(),
            },
        ];
        let svg = append("<svg><path/></svg>", &hovers).expect("closing tag");
        assert!(svg.starts_with("<svg><path/><g class=\"lecture-chart-hover\""), "{svg}");
        assert!(svg.ends_with("</g></svg>"), "{svg}");
        assert!(svg.contains("<circle cx=\"10\" cy=\"20\" r=\"3\" fill=\"#3d8fd1\"><title>a &lt;b&gt; &amp; c: "));
        assert!(svg.contains("FLOP/s&#10;measured: a clock decided it</title>"), "{svg}");
        assert!(svg.contains("<rect x=\"10\" y=\"40\" width=\"20\" height=\"10\"><title>bar</title></rect>"));
        assert!(!svg.contains('\n'));
        assert_eq!(append("<svg>", &hovers), None);
    }
}

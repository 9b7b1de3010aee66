//! The autograd graph a section's backward walks, drawn from the trace: each op, parameter and
//! kept input is a box (its name, shape and what it saved for backward), and an arrow runs from
//! each input to the op that read it. layout-rs places the boxes (a layered layout, as Graphviz's
//! `dot` does); plotters draws them like every other chart, with a hover text per box.
//!
//! The trace value is a list of nodes, producers first: `{"op", "name"?, "shape", "bytes",
//! "flops", "inputs": [indices of earlier nodes], "saved": [{"of", "shape", "bytes"}],
//! "segment"?, "recomputed"?}`. A leaf (`op` "parameter" or "kept input") has no inputs, but a
//! kept input may name the node whose output the forward pass kept (`inputs`), drawn dashed.

use layout::core::base::Orientation;
use layout::core::format::{ClipHandle, RenderBackend};
use layout::core::geometry::Point;
use layout::core::style::StyleAttr;
use layout::std_shapes::shapes::{Arrow, Element, ShapeKind};
use layout::topo::layout::VisualGraph;
use plotters::prelude::*;
use serde_json::Value;

use super::ChartData;
use super::hover::{Hover, Shape};
use super::plot::{FG, PALETTE, drawing, svg, text_style};
use crate::problem::Cause;
use crate::trace::Unit;

/// The most boxes a graph draws: a section records a small model's graph, not a large one's.
pub const MAX_NODES: usize = 120;
const FONT_PX: u32 = 13;
const LINE_PX: f64 = 17.0;
const MARGIN: f64 = 12.0;
/// Points sampled along each Bézier piece of an edge (every other step is left out of a dashed one).
const STEPS: u32 = 16;

/// One box to draw, read from the trace.
struct Node {
    lines: Vec<String>,
    title: String,
    inputs: Vec<usize>,
    kind: Kind,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Op,
    Recomputed,
    Parameter,
    KeptInput,
}

impl Kind {
    fn colour(self) -> Option<RGBColor> {
        match self {
            Kind::Op => None,
            Kind::Recomputed => Some(PALETTE[3]),
            Kind::Parameter => Some(PALETTE[1]),
            Kind::KeptInput => Some(PALETTE[2]),
        }
    }

    fn legend(self) -> &'static str {
        match self {
            Kind::Op => "op, run once",
            Kind::Recomputed => "op run again in backward",
            Kind::Parameter => "parameter",
            Kind::KeptInput => "input kept by the forward pass",
        }
    }
}

fn shape_text(v: &Value) -> String {
    let dims: Vec<String> = v
        .as_array()
        .map(|a| a.iter().map(ToString::to_string).collect())
        .unwrap_or_default();
    if dims.is_empty() {
        return "scalar".into();
    }
    format!("[{}]", dims.join(", "))
}

fn shown(v: &Value, unit: Unit) -> String {
    crate::format::format_value(v, unit, crate::format::Format::Auto).unwrap_or_else(|_| v.to_string())
}

/// The graph at `name` as boxes, checked: every input an earlier node.
fn read(data: &ChartData, name: &str) -> Result<Vec<Node>, Cause> {
    let items = data.list(name, MAX_NODES)?;
    if items.is_empty() {
        return Err(data.bad(name, "a graph with no nodes".into()));
    }
    let mut nodes = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = |field: &str| format!("{name}.{i}.{field}");
        let op = data
            .value(&at("op"))?
            .as_str()
            .ok_or_else(|| data.bad(&at("op"), "expected an op's name".into()))?;
        let label = item.get("name").and_then(Value::as_str).unwrap_or(op);
        let shape = shape_text(data.value(&at("shape"))?);
        let bytes = shown(data.value(&at("bytes"))?, Unit::Bytes);
        let flops = data.number(&at("flops"))?;
        let inputs = data
            .list(&at("inputs"), MAX_NODES)?
            .iter()
            .map(|v| v.as_u64().map(|j| j as usize).filter(|&j| j < i))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| data.bad(&at("inputs"), "expected indices of earlier nodes".into()))?;
        let recomputed = item.get("recomputed").and_then(Value::as_bool) == Some(true);
        let kind = match op {
            "parameter" => Kind::Parameter,
            "kept input" => Kind::KeptInput,
            _ if recomputed => Kind::Recomputed,
            _ => Kind::Op,
        };
        let saved: Vec<String> = item
            .get("saved")
            .and_then(Value::as_array)
            .map(|s| {
                s.iter()
                    .map(|t| {
                        format!(
                            "{} {} ({})",
                            t.get("of").and_then(Value::as_str).unwrap_or("?"),
                            shape_text(t.get("shape").unwrap_or(&Value::Null)),
                            shown(t.get("bytes").unwrap_or(&Value::Null), Unit::Bytes)
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut lines = vec![label.to_string(), shape];
        if !saved.is_empty() {
            let of: Vec<&str> = item["saved"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t.get("of").and_then(Value::as_str))
                .collect();
            lines.push(format!("saves {}", of.join(", ")));
        }
        let mut title = format!("{label}: {op}, shape {}, {bytes}", lines[1]);
        if flops > 0.0 {
            title.push_str(&format!(", {} forward", shown(&serde_json::json!(flops), Unit::Flop)));
        }
        if let Some(s) = item.get("segment").and_then(Value::as_u64) {
            title.push_str(&format!(", segment {s}"));
        }
        if kind == Kind::Recomputed {
            title.push_str(", run again during backward");
        }
        if !saved.is_empty() {
            title.push_str(&format!("\nsaved for backward: {}", saved.join("; ")));
        }
        title.push_str(&format!("\n{}", data.decided(&format!("{name}.{i}"))));
        nodes.push(Node {
            lines,
            title,
            inputs,
            kind,
        });
    }
    Ok(nodes)
}

/// What layout-rs decided: each box's corner and size (by node index) and each edge's path.
#[derive(Default)]
struct Placed {
    boxes: Vec<(usize, Point, Point)>,
    edges: Vec<(Vec<(Point, Point)>, bool)>,
}

impl RenderBackend for Placed {
    fn draw_rect(&mut self, xy: Point, size: Point, _: &StyleAttr, properties: Option<String>, _: Option<ClipHandle>) {
        if let Some(i) = properties.and_then(|p| p.strip_prefix("node ")?.parse().ok()) {
            self.boxes.push((i, xy, size));
        }
    }
    fn draw_line(&mut self, _: Point, _: Point, _: &StyleAttr, _: Option<String>) {}
    fn draw_circle(&mut self, _: Point, _: Point, _: &StyleAttr, _: Option<String>) {}
    fn draw_text(&mut self, _: Point, _: &str, _: &StyleAttr) {}
    fn draw_arrow(
        &mut self,
        path: &[(Point, Point)],
        dashed: bool,
        _: (bool, bool),
        _: &StyleAttr,
        properties: Option<String>,
        _: &str,
    ) {
        if properties.as_deref() == Some("edge") && path.len() >= 2 {
            self.edges.push((path.to_vec(), dashed));
        }
    }
    fn create_clip(&mut self, _: Point, _: Point, _: usize) -> ClipHandle {
        0
    }
}

/// The points of the cubic Bézier path layout-rs describes (as its SVG backend writes it: a
/// start and its control point, then for each further point its entry control and the point,
/// the exit control mirrored).
fn curve(path: &[(Point, Point)]) -> Vec<(f64, f64)> {
    let mut out = vec![(path[0].0.x, path[0].0.y)];
    let (mut from, mut exit) = (path[0].0, path[0].1);
    for &(entry, to) in &path[1..] {
        for step in 1..=STEPS {
            let t = f64::from(step) / f64::from(STEPS);
            let u = 1.0 - t;
            let x = u * u * u * from.x + 3.0 * u * u * t * exit.x + 3.0 * u * t * t * entry.x + t * t * t * to.x;
            let y = u * u * u * from.y + 3.0 * u * u * t * exit.y + 3.0 * u * t * t * entry.y + t * t * t * to.y;
            out.push((x, y));
        }
        exit = Point::new(2.0 * to.x - entry.x, 2.0 * to.y - entry.y);
        from = to;
    }
    out
}

/// Places `nodes` top to bottom. A parameter is tied, by an invisible edge, to the node before
/// the op's other input, so that it sits beside that input instead of in the first row.
fn place(nodes: &[Node]) -> Result<Placed, Cause> {
    let mut graph = VisualGraph::new(Orientation::TopToBottom);
    let mut look = StyleAttr::simple();
    look.font_size = FONT_PX as usize;
    let handles: Vec<_> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let chars = n.lines.iter().map(|l| l.chars().count()).max().unwrap_or(1);
            let size = Point::new(chars as f64 * 7.4 + 16.0, n.lines.len() as f64 * LINE_PX + 8.0);
            let element = Element::create_with_properties(
                ShapeKind::new_box(""),
                look.clone(),
                Orientation::LeftToRight,
                size,
                format!("node {i}"),
            );
            graph.add_node(element)
        })
        .collect();
    for (i, n) in nodes.iter().enumerate() {
        for &j in &n.inputs {
            let arrow = Arrow::simple_with_properties("", "edge");
            let dashed = n.kind == Kind::KeptInput;
            let arrow = if dashed {
                Arrow {
                    line_style: layout::core::style::LineStyleKind::Dashed,
                    ..arrow
                }
            } else {
                arrow
            };
            graph.add_edge(arrow, handles[j], handles[i]);
        }
        let other = n.inputs.iter().find(|&&j| nodes[j].kind != Kind::Parameter);
        for &p in n.inputs.iter().filter(|&&j| nodes[j].kind == Kind::Parameter) {
            if let Some(&before) = other.and_then(|&o| nodes[o].inputs.first()) {
                graph.add_edge(Arrow::invisible(), handles[before], handles[p]);
            }
        }
    }
    let mut placed = Placed::default();
    // layout-rs is a young crate: a panic inside it must fail this chart, not the book.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        graph.do_it(false, false, false, &mut placed);
    }))
    .map_err(|_| Cause::Chart {
        id: String::new(),
        msg: "layout-rs could not lay the graph out".into(),
    })?;
    if placed.boxes.len() != nodes.len() {
        return Err(Cause::Chart {
            id: String::new(),
            msg: format!("layout-rs placed {} of {} boxes", placed.boxes.len(), nodes.len()),
        });
    }
    Ok(placed)
}

/// Draws the graph at `name` of the chart's section.
fn draw(data: &ChartData, name: &str, label: &str) -> Result<String, Cause> {
    let nodes = read(data, name)?;
    let placed = place(&nodes)?;
    // The drawing's extent, and the legend's rows below it.
    let (mut x0, mut y0, mut x1, mut y1) = (f64::MAX, f64::MAX, f64::MIN, f64::MIN);
    for (_, at, size) in &placed.boxes {
        x0 = x0.min(at.x);
        y0 = y0.min(at.y);
        x1 = x1.max(at.x + size.x);
        y1 = y1.max(at.y + size.y);
    }
    let mut kinds: Vec<Kind> = Vec::new();
    for n in &nodes {
        if !kinds.contains(&n.kind) {
            kinds.push(n.kind);
        }
    }
    let legend_top = y1 - y0 + 2.0 * MARGIN;
    let width = (x1 - x0 + 2.0 * MARGIN).max(260.0);
    let height = legend_top + kinds.len() as f64 * LINE_PX + MARGIN;
    let at = |x: f64, y: f64| ((x - x0 + MARGIN).round() as i32, (y - y0 + MARGIN).round() as i32);
    let drawn = svg(width.ceil() as u32, height.ceil() as u32, label, |root, hovers| {
        for (path, dashed) in &placed.edges {
            let points: Vec<(i32, i32)> = curve(path).into_iter().map(|(x, y)| at(x, y)).collect();
            let style = FG.mix(0.8).stroke_width(1);
            if *dashed {
                // Every other step of the sampled curve: a dashed line.
                for pair in points.chunks(2).filter(|p| p.len() == 2) {
                    drawing(root.draw(&PathElement::new(pair.to_vec(), style)))?;
                }
            } else {
                drawing(root.draw(&PathElement::new(points.clone(), style)))?;
            }
            // The arrowhead, along the curve's last step.
            if let [.., (ax, ay), (bx, by)] = points[..] {
                let (dx, dy) = (f64::from(bx - ax), f64::from(by - ay));
                let len = dx.hypot(dy).max(1e-9);
                let (ux, uy) = (dx / len, dy / len);
                let back = |s: f64| {
                    (
                        f64::from(bx) - 8.0 * ux + s * 4.0 * uy,
                        f64::from(by) - 8.0 * uy - s * 4.0 * ux,
                    )
                };
                let (l, r) = (back(1.0), back(-1.0));
                let head = vec![
                    (bx, by),
                    (l.0.round() as i32, l.1.round() as i32),
                    (r.0.round() as i32, r.1.round() as i32),
                ];
                drawing(root.draw(&Polygon::new(head, FG.mix(0.8).filled())))?;
            }
        }
        for &(i, corner, size) in &placed.boxes {
            let n = &nodes[i];
            let (from, to) = (at(corner.x, corner.y), at(corner.x + size.x, corner.y + size.y));
            if let Some(c) = n.kind.colour() {
                drawing(root.draw(&Rectangle::new([from, to], c.mix(0.25).filled())))?;
            }
            let stroke = n.kind.colour().unwrap_or(FG);
            drawing(root.draw(&Rectangle::new([from, to], stroke.stroke_width(1))))?;
            let centre = (from.0 + to.0) / 2;
            for (k, line) in n.lines.iter().enumerate() {
                let y = from.1 + 4 + (k as f64 * LINE_PX) as i32;
                let style = text_style(FONT_PX).pos(plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Center,
                    plotters::style::text_anchor::VPos::Top,
                ));
                drawing(root.draw(&Text::new(line.clone(), (centre, y), style)))?;
            }
            hovers.push(Hover {
                shape: Shape::Bar { from, to },
                title: n.title.clone(),
            });
        }
        for (k, kind) in kinds.iter().enumerate() {
            let y = (legend_top + k as f64 * LINE_PX) as i32;
            let swatch = [(MARGIN as i32, y), (MARGIN as i32 + 22, y + 12)];
            if let Some(c) = kind.colour() {
                drawing(root.draw(&Rectangle::new(swatch, c.mix(0.25).filled())))?;
            }
            drawing(root.draw(&Rectangle::new(swatch, kind.colour().unwrap_or(FG).stroke_width(1))))?;
            let style = text_style(FONT_PX).pos(plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Left,
                plotters::style::text_anchor::VPos::Top,
            ));
            drawing(root.draw(&Text::new(kind.legend(), (MARGIN as i32 + 30, y), style)))?;
        }
        Ok(())
    })?;
    // A small graph is drawn at its own size, not stretched to the page's width.
    Ok(drawn.replacen(
        "style=\"min-width:",
        &format!("style=\"max-width: {}px; min-width:", width.ceil()),
        1,
    ))
}

/// `gradients_basics.graph`: the graph behind the loss, as backward walks it.
pub fn autograd_graph(data: &ChartData) -> Result<String, Cause> {
    draw(data, "graph", "the autograd graph of the loss, from the run")
}

/// `checkpoint_schedule.checkpoint_graph`: the graphs a checkpointed step rebuilt, segment by
/// segment, with the inputs the forward pass kept between them.
pub fn checkpoint_graph(data: &ChartData) -> Result<String, Cause> {
    draw(
        data,
        "checkpoint_graph",
        "the graphs a checkpointed step rebuilt, segment by segment, from the run",
    )
}

//! A section's code with each recorded value beside the line that recorded it (each state of a
//! history beside its own line): the static form of the original lecture's trace viewer. One grid row per source line (line number, code, values);
//! each code line is its own `<code class="lang-rust">`, which highlight.js colours (not
//! `language-rust`: mdbook would take that for a runnable block inside a `<pre>`).

use std::collections::HashMap;

use super::format::{Format, compact_with, format_value, plain};
use super::html::{escape, escape_script_json};
use super::render::older_code_mark;
use super::sections::Section;
use crate::trace::{SectionRecord, Trace, Unit, json_number, number_from_json};

/// Longest value text shown beside code; the full text is in the tooltip.
const MAX_SHOWN_CHARS: usize = 44;

pub fn render(trace: &Trace, section: &Section) -> String {
    let record = section.record;
    let (lines, start_line) = match &section.code {
        Some(code) => (code.text.lines().collect(), code.start_line),
        None => (Vec::new(), 0),
    };

    // Each state of each value goes beside the line that recorded it; a line that recorded several
    // (a loop) shows the last. Where the code is the code that ran (the hashes match), a state's
    // token finds its line even after reformatting; otherwise its line, relative to where the
    // function started when it ran, is the best guess.
    let by_token = section.older_code.is_none();
    let row = |line: u32, token: Option<usize>| -> Option<usize> {
        if line == 0 {
            return None;
        }
        let placed = match (by_token, token, &section.code) {
            (true, Some(t), Some(code)) => code.line_of_token(t)?.checked_sub(start_line)?,
            _ => line.checked_sub(record.source_line)?,
        };
        Some(placed as usize).filter(|&i| i < lines.len())
    };
    let placed = place(record, row);
    let mut beside: Vec<Vec<usize>> = vec![Vec::new(); lines.len()];
    let mut elsewhere = Vec::new();
    for (id, slot) in placed.slots.iter().enumerate() {
        match slot.row {
            Some(i) => beside[i].push(id),
            None => elsewhere.push(id),
        }
    }
    let device = &trace.provenance.device;
    let mut html = format!(
        "<div class=\"lecture-code\"><div class=\"lecture-code-head\"><span>{} · <code>{}</code></span><span data-trace=\"{}\" title=\"{}\">values measured on the {}</span></div>",
        escape(&record.source_file),
        escape(&record.id),
        escape(&device.slug),
        escape(&format!("{}: the {}.json trace", device.name, device.slug)),
        escape(&super::device_names::spoken(device)),
    );
    if let Some(older) = &section.older_code {
        // Another device's trace from before the code changed: today's code is shown, and a value
        // may sit beside a line that is not the one that recorded it.
        let code = match section.code {
            Some(_) => "the code below is today's, the values come from the code of that commit".to_string(),
            None => format!("`{}` no longer holds this function", escape(&record.source_file)),
        };
        html.push_str(&format!(
            "<div class=\"lecture-code-head\">{} <span>{code}</span></div>",
            older_code_mark(older)
        ));
    }
    if super::what_if::is_what_if(trace) {
        html.push_str(match super::what_if::rerun(record) {
            true => "<div class=\"lecture-code-head\">Ran again with the what-if's givens.</div>",
            false => "<div class=\"lecture-code-head\">Not run again: no given of this section changed, so these are the device's own values.</div>",
        });
    }
    html.push_str("<div class=\"lecture-code-grid\">");
    for (i, line) in lines.iter().enumerate() {
        let number = start_line as usize + i;
        html.push_str(&format!("<span class=\"lecture-ln\">{number}</span>"));
        if beside[i].is_empty() {
            html.push_str(&format!(
                "<code class=\"lang-rust lecture-wide\">{}</code>",
                escape(line)
            ));
        } else {
            html.push_str(&format!("<code class=\"lang-rust\">{}</code>", escape(line)));
            html.push_str(&values_cell(&placed.slots, &beside[i], true));
        }
    }
    html.push_str("</div>");
    if !elsewhere.is_empty() {
        html.push_str(match section.code {
            Some(_) => "<div class=\"lecture-code-foot\">Recorded by helpers outside this function: ",
            None => "<div class=\"lecture-code-foot\">Recorded values: ",
        });
        // The separators are drawn by CSS between the values shown, so stepping can hide some.
        for &id in &elsewhere {
            let slot = &placed.slots[id];
            html.push_str(&format!(
                "<span class=\"lecture-foot-value\" data-slot=\"{id}\"><span class=\"lecture-lv-name\">{}</span> = {}</span>",
                escape(&slot.name),
                escape(&slot.text)
            ));
        }
        html.push_str("</div>");
    }
    if let Some(pytorch) = &section.pytorch {
        html.push_str(&pytorch_panel(pytorch, &placed.slots, device.kind == "cuda"));
    }
    html.push_str(&super::what_if::what_if_box(record));
    // What stepping needs (`book/theme/lecture-steps.js`), as the `html` module's notes say a
    // script is given data; the script sets text only.
    if !placed.steps.is_empty() {
        html.push_str(&format!(
            "<script type=\"application/json\" class=\"lecture-steps-data\">{}</script>",
            escape_script_json(&steps_json(&placed.slots, &placed.steps))
        ));
    }
    html.push_str("</div>");
    html
}

/// Where a value is shown: beside a row of the code (`None`: below it), under its name. Several
/// states recorded at one row share a slot, which shows the last of them.
struct Slot {
    row: Option<usize>,
    name: String,
    text: String,
    /// What decided the value: its class and its words (`kinds`).
    kind: (&'static str, &'static str),
    /// The last state as a grid, where it is a tensor of one to three dimensions.
    grid: Option<String>,
}

/// The slots of a section's values, and for each record call (`steps`) the slot it fills and the
/// text of the state it recorded.
struct Placed {
    slots: Vec<Slot>,
    steps: Vec<(usize, String)>,
}

fn place(record: &SectionRecord, row: impl Fn(u32, Option<usize>) -> Option<usize>) -> Placed {
    let mut slots: Vec<Slot> = Vec::new();
    let mut states: HashMap<(&str, usize), (usize, String)> = HashMap::new();
    for (name, value) in &record.values {
        let first = slots.len();
        let finals = [(
            &value.value,
            value.line,
            value.token,
            &value.dtype,
            &value.shape,
            &value.layout,
        )];
        let all = value
            .history
            .iter()
            .map(|s| (&s.value, s.line, s.token, &s.dtype, &s.shape, &s.layout))
            .chain(finals);
        for (k, (v, line, token, dtype, shape, layout)) in all.enumerate() {
            let at = row(line, token);
            // A check's claim is the code on its own line; beside it, only that it held.
            let text = match value.kind() {
                Some(crate::trace::Kind::Checked) => "✓".to_string(),
                _ => shown_value(v, value.unit),
            };
            let grid = match (dtype, shape) {
                (Some(dtype), Some(shape)) => super::tensor_grid::grid(v, dtype, shape, layout.as_ref(), &short_number),
                _ => None,
            };
            let id = match slots[first..].iter().position(|s| s.row == at) {
                Some(i) => first + i,
                None => {
                    slots.push(Slot {
                        row: at,
                        name: name.clone(),
                        text: String::new(),
                        kind: (super::kinds::class(value), super::kinds::words(value)),
                        grid: None,
                    });
                    slots.len() - 1
                }
            };
            slots[id].text.clone_from(&text);
            slots[id].grid = grid;
            states.insert((name.as_str(), k), (id, text));
        }
    }
    // A loaded trace's steps name every state once (`SectionRecord::check_steps`); anything else
    // is left out rather than shown at the wrong place.
    let steps = record
        .steps
        .iter()
        .filter_map(|(name, k)| states.get(&(name.as_str(), *k)).cloned());
    Placed {
        slots,
        steps: steps.collect(),
    }
}

/// `[[slot, text], …]`, one per step, with the full text third where the shown one is shortened
/// (beside code; below it values are shown whole, as on the static page).
fn steps_json(slots: &[Slot], steps: &[(usize, String)]) -> String {
    let entries = steps.iter().map(|(slot, text)| {
        let short = if slots[*slot].row.is_some() {
            shorten(text)
        } else {
            text.clone()
        };
        if short == *text {
            serde_json::json!([slot, short])
        } else {
            serde_json::json!([slot, short, text])
        }
    });
    serde_json::Value::Array(entries.collect()).to_string()
}

/// The values `ids` as one cell. `steppable`: stepping finds them by `data-slot` (only the Rust
/// code's cells are; a slot shown twice would confuse it).
fn values_cell(slots: &[Slot], ids: &[usize], steppable: bool) -> String {
    let mut cell = String::from("<span class=\"lecture-lv\">");
    for &id in ids {
        let Slot {
            name,
            text,
            kind: (class, words),
            grid,
            ..
        } = &slots[id];
        let short = shorten(text);
        // What decided it, and the whole value where the cell shows it shortened.
        let title = if short == *text {
            words.to_string()
        } else {
            format!("{words}: {text}")
        };
        let slot_attribute = if steppable {
            format!(" data-slot=\"{id}\"")
        } else {
            String::new()
        };
        // A grid: stepping shows it again (from the static page) when it reaches the state whose
        // text this is, and text for the other states.
        let (shown, grid_text) = match grid {
            Some(grid) => (grid.clone(), format!(" data-grid-text=\"{}\"", escape(&short))),
            None => (escape(&short), String::new()),
        };
        cell.push_str(&format!(
            "<span{slot_attribute}{grid_text} class=\"{class}\" data-kind=\"{}\" title=\"{}\"><span class=\"lecture-lv-name\">{}</span> = {}</span>",
            escape(words),
            escape(&title),
            escape(name),
            shown
        ));
    }
    cell.push_str("</span>");
    cell
}

/// The line a panel is shown with first, so that what a reader copies runs as it is: `record` is
/// what `run_panels.py` swaps for one that also compares the value with the trace.
pub const PANEL_PRELUDE: &str =
    "def record(name, value): return value  # run_panels.py's record also checks value against this run";

/// The PyTorch that does the same steps, folded under the code: each line that names a recorded
/// value (`record("name", …)` or a trailing `# -> name`) shows this run's value beside it, unless
/// the name is marked for the other kind of device (`panel_names_on`).
fn pytorch_panel(source: &str, slots: &[Slot], gpu: bool) -> String {
    let mut html = String::from(
        "<details class=\"lecture-pytorch\"><summary>PyTorch: the same steps</summary><div class=\"lecture-code-grid\">",
    );
    html.push_str(&format!(
        "<span class=\"lecture-ln lecture-prelude\"></span><code class=\"lang-python lecture-wide\">{}</code>",
        escape(PANEL_PRELUDE)
    ));
    for (i, line) in source.lines().enumerate() {
        html.push_str(&format!("<span class=\"lecture-ln\">{}</span>", i + 1));
        let ids: Vec<usize> = panel_names_on(line, gpu)
            .iter()
            .filter_map(|name| slots.iter().rposition(|s| s.name == *name))
            .collect();
        if ids.is_empty() {
            html.push_str(&format!(
                "<code class=\"lang-python lecture-wide\">{}</code>",
                escape(line)
            ));
        } else {
            html.push_str(&format!("<code class=\"lang-python\">{}</code>", escape(line)));
            html.push_str(&values_cell(slots, &ids, false));
        }
    }
    html.push_str("</div></details>");
    html
}

/// The value names a panel line produces: `record("name", …)` calls and a `# -> name, name` comment.
pub fn panel_names(line: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("record(\"") {
        let after = &rest[at + "record(\"".len()..];
        let Some(end) = after.find('"') else { break };
        names.push(&after[..end]);
        rest = &after[end..];
    }
    if let Some(at) = line.find("# -> ") {
        names.extend(
            line[at + "# -> ".len()..]
                .split(',')
                .map(|n| {
                    let n = n.trim_start();
                    &n[..n
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .unwrap_or(n.len())]
                })
                .filter(|n| !n.is_empty()),
        );
    }
    names
}

/// The names of `panel_names` that this run's value may stand beside: a comment's name followed by
/// `(on a GPU)` or `(on a CPU)` is what the line makes on that kind of device only (on the other,
/// the Python makes something else, or nothing, and the run's value would not be its value).
pub fn panel_names_on(line: &str, gpu: bool) -> Vec<&str> {
    let other = if gpu { "(on a CPU)" } else { "(on a GPU)" };
    let comment = line.find("# -> ").map(|at| &line[at + "# -> ".len()..]);
    panel_names(line)
        .into_iter()
        .filter(|name| {
            let marked = comment.is_some_and(|c| {
                c.split(',').any(|item| {
                    let item = item.trim();
                    item.strip_prefix(name)
                        .is_some_and(|rest| rest.trim_start().starts_with(other))
                })
            });
            !marked
        })
        .collect()
}

/// A value as it reads beside code: scalars formatted by unit, tensors and lists with short
/// numbers.
fn shown_value(value: &serde_json::Value, unit: Unit) -> String {
    match value {
        serde_json::Value::Array(_) | serde_json::Value::Object(_) => compact_with(value, &|v| {
            number_from_json(v).map(short_number).unwrap_or_else(|| v.to_string())
        }),
        v => format_value(v, unit, Format::Auto).unwrap_or_else(|_| v.to_string()),
    }
}

fn short_number(x: f64) -> String {
    if x.fract() == 0.0 || !x.is_finite() {
        plain(x)
    } else {
        format_value(&json_number(x), Unit::None, Format::Auto).unwrap_or_else(|_| plain(x))
    }
}

fn shorten(text: &str) -> String {
    if text.chars().count() <= MAX_SHOWN_CHARS {
        return text.to_string();
    }
    let mut short: String = text.chars().take(MAX_SHOWN_CHARS - 1).collect();
    short.push('…');
    short
}

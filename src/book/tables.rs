//! The `table` directive: an object, or a list of objects, from the trace as an HTML table (never
//! raw JSON in prose), each cell formatted by the value's unit.

use serde_json::Value;

use super::directive::Address;
use super::format::{Format, format_value};
use super::html::escape;
use super::problem::Cause;
use super::traces::Traces;
use crate::trace::Unit;

/// A column's field name as a reader says it (its cells carry the unit): `seconds_per_sample` is
/// "time per sample", `memory_share` "share of the memory roof". A name the list does not know
/// reads with spaces for its underscores.
fn label(field: &str) -> String {
    let known = match field {
        "mfu" => "MFU",
        "fp32" => "float32",
        "bf16" => "bfloat16",
        "roofline_mfu" => "MFU the roofline allows",
        "regime" => "bound by",
        "level" => "memory level",
        "time_s" => "time",
        "best_time_s" => "fastest",
        "predicted_time_s" => "predicted",
        "bytes_per_sec" => "bytes/s",
        "flop_per_sec" => "FLOP/s",
        "memory_share" => "share of the memory roof",
        "roof_bytes_per_sec" => "memory roof",
        "micro_batches" => "micro-batches",
        "micro_batch_size" => "micro-batch size",
        "peak_bytes" => "peak",
        "activation_bytes" => "activations",
        "matmul_flops" => "matrix FLOPs",
        "other_flops" => "other FLOPs",
        "seconds_per_sample" => "time per sample",
        "largest_gradient_difference" => "largest gradient difference",
        other => return other.replace('_', " "),
    };
    known.to_string()
}

/// An object as an HTML table: one row per field; when every field is itself an object, one
/// column per inner field as well (`{"fp32": {"final_loss": …}, "bf16": {…}}`).
pub fn table(
    traces: &mut Traces,
    address: &Address,
    format: Format,
    unit: Option<Unit>,
    slug: Option<&str>,
    chosen: Option<&[String]>,
) -> Result<String, Cause> {
    let path = traces.path(slug)?;
    let trace = traces.load(&path)?;
    let found = traces.resolve(&path, &trace, address)?;
    let lenient = traces.is_lenient(&path);
    let unit = unit.unwrap_or(found.record.unit);
    // A list of rows recorded without a unit names its columns' units instead: `peak_bytes`,
    // `matmul_flops`, `seconds_per_sample`.
    let column_unit = |column: &str| match unit {
        Unit::None if column.ends_with("_bytes") => Unit::Bytes,
        Unit::None if column.ends_with("_flops") => Unit::Flop,
        Unit::None if column.starts_with("seconds_per_") || column.ends_with("_time_s") || column == "time_s" => {
            Unit::Seconds
        }
        Unit::None if column.ends_with("bytes_per_sec") => Unit::BytesPerSec,
        Unit::None if column.ends_with("flop_per_sec") => Unit::FlopPerSec,
        Unit::None if column.ends_with("_share") || column.ends_with("mfu") => Unit::Ratio,
        _ => unit,
    };
    let bad = |msg: String| Cause::BadValue {
        trace: path.clone(),
        address: address.to_string(),
        msg,
    };
    let cell = |v: &Value, column: &str| -> Result<String, Cause> {
        if v.is_object() {
            return Err(bad("a field is an object inside an object: table a part of it".into()));
        }
        format_value(v, column_unit(column), format)
            .map(|t| escape(&t))
            .map_err(bad)
    };
    // Rows: (header, fields).
    let rows: Vec<(Option<&String>, &serde_json::Map<String, Value>)> = match found.value {
        Value::Object(fields) if !fields.is_empty() && fields.values().all(Value::is_object) => fields
            .iter()
            .filter_map(|(name, inner)| inner.as_object().map(|o| (Some(name), o)))
            .collect(),
        Value::Object(fields) => vec![(None, fields)],
        Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_object) => {
            items.iter().filter_map(|i| i.as_object().map(|o| (None, o))).collect()
        }
        _ => {
            return Err(bad(
                "`table` shows an object, or a list of objects; quote this value with `{{value}}`".into(),
            ));
        }
    };
    // One field per row when there is one row (a flat object); else one column per field.
    let mut head = String::new();
    let mut body = String::new();
    if let [(None, fields)] = rows.as_slice()
        && found.value.is_object()
    {
        // Fields are named in words, as columns are; the key stays in the table's hover.
        head.push_str("<th></th><th>Value</th>");
        for (name, v) in fields.iter() {
            body.push_str(&format!(
                "<tr><th>{}</th><td>{}</td></tr>",
                escape(&label(name)),
                cell(v, name)?
            ));
        }
    } else {
        let mut columns: Vec<&String> = Vec::new();
        for (_, fields) in &rows {
            for k in fields.keys() {
                if !columns.contains(&k) {
                    columns.push(k);
                }
            }
        }
        if let Some(chosen) = chosen {
            let all: Vec<&str> = columns.iter().map(|c| c.as_str()).collect();
            // Another device's older run may not have recorded a column: it shows the rest.
            if let Some(missing) = chosen.iter().find(|c| !all.contains(&c.as_str()))
                && !lenient
            {
                return Err(bad(format!(
                    "`columns=` names `{missing}`, which no row has (fields: {})",
                    all.join(", ")
                )));
            }
            columns = chosen
                .iter()
                .filter_map(|c| columns.iter().copied().find(|k| *k == c))
                .collect();
        }
        let headed = rows.iter().any(|(h, _)| h.is_some());
        if headed {
            head.push_str("<th></th>");
        }
        for c in &columns {
            head.push_str(&format!("<th>{}</th>", escape(&label(c))));
        }
        for (header, fields) in &rows {
            body.push_str("<tr>");
            if let Some(h) = header {
                body.push_str(&format!("<th>{}</th>", escape(&label(h))));
            }
            for c in &columns {
                let text = match fields.get(c.as_str()) {
                    Some(v) => cell(v, c)?,
                    None => String::new(),
                };
                body.push_str(&format!("<td>{text}</td>"));
            }
            body.push_str("</tr>");
        }
    }
    let title = format!("{address} · {} trace", trace.provenance.device.slug);
    Ok(format!(
        "<div class=\"lecture-table\" title=\"{}\"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>",
        escape(&title)
    ))
}

use super::*;
use crate::device::{self, DeviceRequest};
use crate::tensor::{DType, Tensor};
use crate::trace::Unit;

fn ctx() -> Result<SectionCtx> {
    ctx_in(file!())
}

/// A section context on the CPU whose code is `file` (the lines recorded are those of calls made
/// in it), for the recorder's tests and `check!`'s.
pub(super) fn ctx_in(file: &'static str) -> Result<SectionCtx> {
    let choice = device::choose(DeviceRequest::Cpu)?;
    Ok(SectionCtx::new("test", file, &choice, 0))
}

#[test]
fn record_names_the_variable_and_keeps_the_line_of_the_call() -> Result<()> {
    let mut cx = ctx()?;
    let num_parameters = 12usize;
    let line = line!() + 1;
    record!(cx, given num_parameters)?;
    let zeros = Tensor::zeros(&[2], DType::F32)?;
    // A call that rustfmt might spread over lines is placed at its first line.
    let tensor_line = line!() + 1;
    record!(cx, computed zeros)?;
    let shape_line = line!() + 1;
    record!(cx, computed zeros_shape = zeros.shape())?;
    record!(cx, computed num_bytes = zeros.nbytes(), bytes)?;
    // Recording the same name twice is refused, and so is mixing in a history.
    assert!(record!(cx, given num_parameters).is_err());
    let err = record!(cx, given history num_parameters).expect_err("mixed");
    assert!(err.to_string().contains("section `test`: `num_parameters`"), "{err}");
    let (values, steps) = cx.into_parts();
    let v = &values["num_parameters"];
    assert_eq!((&v.value, v.unit, v.line), (&serde_json::json!(12), Unit::Count, line));
    assert_eq!(v.kind(), Some(Kind::Given));
    let z = &values["zeros"];
    assert_eq!(
        (&z.shape, z.dtype.as_deref(), z.unit),
        (&Some(vec![2]), Some("float32"), Unit::None)
    );
    assert_eq!((z.line, z.kind()), (tensor_line, Some(Kind::Computed)));
    // The unit follows the type: a shape is a list of counts; a named unit wins.
    let s = &values["zeros_shape"];
    assert_eq!(
        (&s.value, s.unit, s.line),
        (&serde_json::json!([2]), Unit::Count, shape_line)
    );
    assert_eq!(values["num_bytes"].unit, Unit::Bytes);
    let names: Vec<&str> = steps.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["num_parameters", "zeros", "zeros_shape", "num_bytes"]);
    assert!(values.values().all(|v| v.history.is_empty() && !v.timed()));
    Ok(())
}

#[test]
fn a_history_keeps_every_state_with_its_line_in_record_order() -> Result<()> {
    let mut cx = ctx()?;
    let mut flops = 0u64;
    let first = line!() + 1;
    record!(cx, computed history flops, flop)?;
    let x = 1.5;
    record!(cx, given x)?;
    let mut lines = vec![first];
    for term in [10, 20] {
        flops += term;
        lines.push(line!() + 1);
        record!(cx, computed history flops, flop)?;
    }
    let err = record!(cx, given x).expect_err("twice");
    assert!(err.to_string().contains("as a history"), "{err}");
    let err = record!(cx, computed history flops, count).expect_err("one unit");
    assert!(err.to_string().contains("changes unit"), "{err}");
    let err = record!(cx, clock history flops, flop).expect_err("one kind");
    assert!(err.to_string().contains("changes kind"), "{err}");
    let (values, steps) = cx.into_parts();
    let f = &values["flops"];
    assert_eq!(f.value, serde_json::json!(30));
    let earlier: Vec<(&serde_json::Value, u32)> = f.history.iter().map(|s| (&s.value, s.line)).collect();
    assert_eq!(
        earlier,
        [(&serde_json::json!(0), lines[0]), (&serde_json::json!(10), lines[1])]
    );
    assert_eq!(f.line, lines[2]);
    let order: Vec<(&str, usize)> = steps.iter().map(|(n, k)| (n.as_str(), *k)).collect();
    assert_eq!(order, [("flops", 0), ("x", 0), ("flops", 1), ("flops", 2)]);
    Ok(())
}

#[test]
fn long_histories_are_bounded_evenly_and_steps_follow() -> Result<()> {
    let mut cx = ctx()?;
    let n = 300;
    for step in 0..n {
        record!(cx, computed history loss = step as f64)?;
        if step == 150 {
            record!(cx, computed midway = true)?;
        }
    }
    let (values, steps) = cx.into_parts();
    let loss = &values["loss"];
    let kept = history::surviving(n);
    assert_eq!(loss.num_states(), history::MAX_HISTORY);
    let states: Vec<f64> = (0..loss.num_states())
        .map(|k| loss.state(k).and_then(|s| s.value.as_f64()).expect("a number"))
        .collect();
    assert_eq!(states, kept.iter().map(|&i| i as f64).collect::<Vec<_>>());
    assert_eq!((states[0], *states.last().expect("last")), (0.0, (n - 1) as f64));
    // Steps list the surviving states only, in order, with `midway` where it was recorded.
    let losses: Vec<usize> = steps.iter().filter(|(s, _)| s == "loss").map(|(_, k)| *k).collect();
    assert_eq!(losses, (0..history::MAX_HISTORY).collect::<Vec<_>>());
    let midway = steps.iter().position(|(s, _)| s == "midway").expect("midway");
    let before = kept.iter().filter(|&&i| i <= 150).count();
    assert_eq!(midway, before);
    Ok(())
}

#[test]
fn the_kind_is_what_the_call_declares_whatever_the_unit() -> Result<()> {
    let mut cx = ctx()?;
    record!(cx, clock time = 0.5, seconds)?;
    record!(cx, clock mfu = 0.4, ratio)?;
    record!(cx, given datasheet = 1e15, flop_per_sec)?;
    record!(cx, computed one_week = 604800.0, seconds)?;
    record!(cx, device memory = 1u64 << 30, bytes)?;
    record!(cx, rounding loss = 2.5)?;
    let (values, _) = cx.into_parts();
    let kinds: Vec<(&str, Kind)> = values
        .iter()
        .filter_map(|(n, v)| Some((n.as_str(), v.kind()?)))
        .collect();
    assert_eq!(
        kinds,
        [
            ("time", Kind::Clock),
            ("mfu", Kind::Clock),
            ("datasheet", Kind::Given),
            ("one_week", Kind::Computed),
            ("memory", Kind::Device),
            ("loss", Kind::Rounding)
        ]
    );
    let timed: Vec<&str> = values
        .iter()
        .filter(|(_, v)| v.timed())
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(timed, ["time", "mfu"]);
    Ok(())
}

#[test]
fn a_tensor_too_large_to_list_is_kept_as_its_summary() -> Result<()> {
    let mut cx = ctx()?;
    let big = Tensor::arange(MAX_RECORDED_ELEMENTS + 1, DType::F32)?;
    record!(cx, computed big)?;
    let (values, _) = cx.into_parts();
    let value = &values["big"];
    // Its dtype and whole shape, its corners under their indices, and the statistics of all.
    assert_eq!(value.shape.as_deref(), Some(&[MAX_RECORDED_ELEMENTS + 1][..]));
    assert_eq!(value.dtype.as_deref(), Some("float32"));
    assert_eq!(value.value["4096"], serde_json::json!(4096.0));
    assert!(value.value.get("3").is_none());
    let stats = crate::trace::summary::statistics_of(&value.value).expect("a summary");
    assert_eq!(stats["elements"], MAX_RECORDED_ELEMENTS + 1);
    assert_eq!(stats["mean"], serde_json::json!(2048.0));
    Ok(())
}

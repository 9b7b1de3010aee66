//! What a section gets to work with: the device, a seeded random stream of its own, and `record`,
//! which files a named value with its unit and the source line that recorded it. Every record call
//! is kept in order (the trace's `steps`), so a reader can step through the section as it ran; a
//! value recorded as a history (`record_history`) keeps every state, up to the trace's bound.

use std::panic::Location;

use indexmap::IndexMap;
use sha2::{Digest, Sha256};

use crate::device::{Device, DeviceChoice};
use crate::error::{Error, Result};
use crate::json::json_number;
use crate::rng::Rng;
use crate::tensor::Tensor;
use crate::trace::history;
use crate::trace::{State, Step, Unit, ValueRecord};

/// The largest tensor recorded element by element; bigger ones are summarised by the section.
pub const MAX_RECORDED_ELEMENTS: usize = 4096;

pub struct SectionCtx {
    pub id: &'static str,
    pub device: Device,
    /// Why this run is not on a GPU, when it is not.
    pub cuda_unavailable_reason: Option<String>,
    pub seed: u64,
    /// Seeded from the run's seed and the section id, so a section gives the same values whether
    /// it runs alone (`--section`) or as part of the whole lecture.
    pub rng: Rng,
    file: &'static str,
    values: IndexMap<String, Recorded>,
    /// Every record call: which value, which of its states.
    steps: Vec<(usize, usize)>,
}

/// A value as the section recorded it: every state, before the trace's bound is applied.
struct Recorded {
    unit: Unit,
    timed: bool,
    history: bool,
    states: Vec<State>,
}

/// How a record call files its value.
#[derive(Clone, Copy, PartialEq, Eq)]
enum How {
    /// One state; timed by its unit.
    Once,
    /// One state a clock decided, whatever its unit.
    Timed,
    /// One state no clock decided, whatever its unit.
    Untimed,
    /// Every call adds a state; timed by its unit.
    History,
}

impl How {
    fn timed(self, unit: Unit) -> bool {
        match self {
            How::Timed => true,
            How::Untimed => false,
            How::Once | How::History => unit.is_timed(),
        }
    }
}

/// Records a variable under its own name, the original lecture's `# @inspect x`:
/// `record!(cx, num_parameters, Unit::Count)` is `cx.record("num_parameters", num_parameters,
/// Unit::Count)`, and `record!(cx, x)` records tensor `x` element by element (`record_tensor`).
/// `record!(cx, history loss, Unit::None)` adds a state to the history of `loss` (every call
/// keeps one: a value that changes as the section runs), `record!(cx, timed ratio, Unit::Ratio)`
/// marks a value a clock decided although its unit is not a time or rate, and
/// `record!(cx, untimed peak, Unit::FlopPerSec)` one that no clock decided although its unit is.
/// The recorded line is the line of the `record!` call (`#[track_caller]` sees through macros).
macro_rules! record {
    ($cx:expr, history $name:ident, $unit:expr) => {
        $cx.record_history(stringify!($name), $name, $unit)
    };
    ($cx:expr, history $name:ident) => {
        $cx.record_tensor_history(stringify!($name), &$name)
    };
    ($cx:expr, timed $name:ident, $unit:expr) => {
        $cx.record_timed(stringify!($name), $name, $unit)
    };
    ($cx:expr, untimed $name:ident, $unit:expr) => {
        $cx.record_untimed(stringify!($name), $name, $unit)
    };
    ($cx:expr, $name:ident, $unit:expr) => {
        $cx.record(stringify!($name), $name, $unit)
    };
    ($cx:expr, $name:ident) => {
        $cx.record_tensor(stringify!($name), &$name)
    };
}
pub(crate) use record;

/// Something that can be recorded: numbers, strings, lists, JSON.
pub trait IntoValue {
    fn into_value(self) -> serde_json::Value;
}

macro_rules! into_value_int {
    ($($t:ty),*) => {$(
        impl IntoValue for $t {
            fn into_value(self) -> serde_json::Value {
                serde_json::Value::from(self)
            }
        }
    )*};
}
into_value_int!(u64, i64, u32, i32, usize, bool, String, &str);

impl IntoValue for f64 {
    fn into_value(self) -> serde_json::Value {
        json_number(self)
    }
}

impl IntoValue for f32 {
    fn into_value(self) -> serde_json::Value {
        json_number(self as f64)
    }
}

impl IntoValue for serde_json::Value {
    fn into_value(self) -> serde_json::Value {
        self
    }
}

impl<T: IntoValue + Clone> IntoValue for &[T] {
    fn into_value(self) -> serde_json::Value {
        serde_json::Value::Array(self.iter().cloned().map(IntoValue::into_value).collect())
    }
}

impl<T: IntoValue> IntoValue for Vec<T> {
    fn into_value(self) -> serde_json::Value {
        serde_json::Value::Array(self.into_iter().map(IntoValue::into_value).collect())
    }
}

impl SectionCtx {
    pub fn new(id: &'static str, file: &'static str, choice: &DeviceChoice, seed: u64) -> SectionCtx {
        SectionCtx {
            id,
            device: choice.device.clone(),
            cuda_unavailable_reason: choice.cuda_unavailable_reason.clone(),
            seed,
            rng: Rng::seed(section_seed(seed, id)),
            file,
            values: IndexMap::new(),
            steps: Vec::new(),
        }
    }

    /// Records `value` under `name` with its unit. A value with unit s, FLOP/s or bytes/s counts
    /// as measured with a clock (`timed` in the trace).
    #[track_caller]
    pub fn record(&mut self, name: &str, value: impl IntoValue, unit: Unit) -> Result<()> {
        self.record_as(name, value, unit, How::Once, Location::caller())
    }

    /// Records a value a clock decided although its unit is not a time or rate (an MFU, a ratio
    /// of two timings, a list of measured speeds): a page quoting it from an unoptimised build
    /// says so.
    #[track_caller]
    pub fn record_timed(&mut self, name: &str, value: impl IntoValue, unit: Unit) -> Result<()> {
        self.record_as(name, value, unit, How::Timed, Location::caller())
    }

    /// Records a value with a time or rate unit that no clock decided (a datasheet's peak, the
    /// seconds in a week).
    #[track_caller]
    pub fn record_untimed(&mut self, name: &str, value: impl IntoValue, unit: Unit) -> Result<()> {
        self.record_as(name, value, unit, How::Untimed, Location::caller())
    }

    /// Adds a state to the history of `name`: every call keeps one (the trace keeps at most
    /// `trace::history::MAX_HISTORY`, evenly spaced), the last is the value's final state. Every
    /// call for one name must be a history call, with one unit.
    #[track_caller]
    pub fn record_history(&mut self, name: &str, value: impl IntoValue, unit: Unit) -> Result<()> {
        self.record_as(name, value, unit, How::History, Location::caller())
    }

    /// Records a tensor's values (nested lists) with its dtype and shape.
    #[track_caller]
    pub fn record_tensor(&mut self, name: &str, t: &Tensor) -> Result<()> {
        let state = self.tensor_state(name, t, Location::caller())?;
        self.insert(name, state, Unit::None, How::Once)
    }

    /// Adds a tensor's values to the history of `name` (see `record_history`).
    #[track_caller]
    pub fn record_tensor_history(&mut self, name: &str, t: &Tensor) -> Result<()> {
        let state = self.tensor_state(name, t, Location::caller())?;
        self.insert(name, state, Unit::None, How::History)
    }

    fn record_as(&mut self, name: &str, value: impl IntoValue, unit: Unit, how: How, at: &Location<'_>) -> Result<()> {
        let state = State {
            value: value.into_value(),
            line: self.caller_line(at),
            token: None,
            dtype: None,
            shape: None,
        };
        self.insert(name, state, unit, how)
    }

    fn tensor_state(&self, name: &str, t: &Tensor, at: &Location<'_>) -> Result<State> {
        if t.numel() > MAX_RECORDED_ELEMENTS {
            return Err(Error::invalid(
                "record_tensor",
                format!(
                    "`{name}` has {} elements (more than {MAX_RECORDED_ELEMENTS}); record a summary instead",
                    t.numel()
                ),
            ));
        }
        Ok(State {
            value: t.to_json()?,
            line: self.caller_line(at),
            token: None,
            dtype: Some(t.dtype().name().into()),
            shape: Some(t.shape().to_vec()),
        })
    }

    fn caller_line(&self, at: &Location<'_>) -> u32 {
        // A value recorded from a helper in another file has no line in this section's code.
        if at.file().replace('\\', "/").ends_with(self.file) {
            at.line()
        } else {
            0
        }
    }

    fn insert(&mut self, name: &str, state: State, unit: Unit, how: How) -> Result<()> {
        let (timed, history) = (how.timed(unit), how == How::History);
        let refuse = |why: String| {
            Err(Error::invalid(
                "record",
                format!("section `{}`: `{name}` {why}", self.id),
            ))
        };
        let index = match self.values.get_full_mut(name) {
            None => {
                let recorded = Recorded {
                    unit,
                    timed,
                    history,
                    states: vec![state],
                };
                self.values.insert_full(name.to_string(), recorded).0
            }
            Some((index, _, recorded)) => {
                match (recorded.history, history) {
                    (false, false) => {
                        return refuse("is recorded twice (record it as a history to keep every state)".into());
                    }
                    (true, false) | (false, true) => {
                        return refuse("is recorded both as a history and as a single value".into());
                    }
                    (true, true) => {}
                }
                if recorded.unit != unit {
                    return refuse(format!(
                        "changes unit in its history ({:?}, then {unit:?})",
                        recorded.unit
                    ));
                }
                recorded.timed |= timed;
                recorded.states.push(state);
                index
            }
        };
        let state = self.values[index].states.len() - 1;
        self.steps.push((index, state));
        Ok(())
    }

    /// The values as the trace keeps them (histories bounded), and the record calls in order.
    pub fn into_parts(self) -> (IndexMap<String, ValueRecord>, Vec<Step>) {
        // For each value, where each of its states went: its index among the survivors, if any.
        let mut placed: Vec<(String, Vec<Option<usize>>)> = Vec::with_capacity(self.values.len());
        let mut values = IndexMap::with_capacity(self.values.len());
        for (name, recorded) in self.values {
            let mut place = vec![None; recorded.states.len()];
            for (j, i) in history::surviving(recorded.states.len()).into_iter().enumerate() {
                place[i] = Some(j);
            }
            let mut states: Vec<State> = recorded
                .states
                .into_iter()
                .zip(&place)
                .filter_map(|(s, p)| p.map(|_| s))
                .collect();
            placed.push((name.clone(), place));
            // Never empty: a value exists from its first state on.
            let Some(last) = states.pop() else { continue };
            let record = ValueRecord {
                value: last.value,
                unit: recorded.unit,
                line: last.line,
                token: last.token,
                timed: recorded.timed,
                dtype: last.dtype,
                shape: last.shape,
                history: states,
            };
            values.insert(name, record);
        }
        let steps = self
            .steps
            .into_iter()
            .filter_map(|(v, i)| placed[v].1[i].map(|j| (placed[v].0.clone(), j)))
            .collect();
        (values, steps)
    }
}

fn section_seed(seed: u64, id: &str) -> u64 {
    let digest = Sha256::digest(id.as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    seed ^ u64::from_le_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{self, DeviceRequest};
    use crate::tensor::DType;
    use crate::trace::Unit;

    fn ctx() -> Result<SectionCtx> {
        let choice = device::choose(DeviceRequest::Cpu)?;
        Ok(SectionCtx::new("test", "src/lecture/recorder.rs", &choice, 0))
    }

    #[test]
    fn record_names_the_variable_and_keeps_the_line_of_the_call() -> Result<()> {
        let mut cx = ctx()?;
        let num_parameters = 12usize;
        let line = line!() + 1;
        record!(cx, num_parameters, Unit::Count)?;
        let zeros = Tensor::zeros(&[2], DType::F32)?;
        // A call that rustfmt might spread over lines is placed at its first line.
        let tensor_line = line!() + 1;
        record!(cx, zeros)?;
        // Recording the same name twice is refused, and so is mixing in a history.
        assert!(record!(cx, num_parameters, Unit::Count).is_err());
        let err = record!(cx, history num_parameters, Unit::Count).expect_err("mixed");
        assert!(err.to_string().contains("section `test`: `num_parameters`"), "{err}");
        let (values, steps) = cx.into_parts();
        assert_eq!(values["num_parameters"].value, serde_json::json!(12));
        assert_eq!(values["num_parameters"].unit, Unit::Count);
        assert_eq!(values["num_parameters"].line, line);
        assert_eq!(values["zeros"].shape, Some(vec![2]));
        assert_eq!(values["zeros"].line, tensor_line);
        assert_eq!(steps, [("num_parameters".into(), 0), ("zeros".into(), 0)]);
        assert!(values.values().all(|v| v.history.is_empty() && !v.timed));
        Ok(())
    }

    #[test]
    fn a_history_keeps_every_state_with_its_line_in_record_order() -> Result<()> {
        let mut cx = ctx()?;
        let mut flops = 0u64;
        let first = line!() + 1;
        record!(cx, history flops, Unit::Flop)?;
        let x = 1.5;
        record!(cx, x, Unit::None)?;
        let mut lines = vec![first];
        for term in [10, 20] {
            flops += term;
            lines.push(line!() + 1);
            record!(cx, history flops, Unit::Flop)?;
        }
        let err = record!(cx, x, Unit::None).expect_err("twice");
        assert!(err.to_string().contains("as a history"), "{err}");
        assert!(cx.record_history("flops", 1, Unit::Count).is_err(), "one unit");
        assert!(cx.record("x", 2, Unit::None).is_err());
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
            cx.record_history("loss", step as f64, Unit::None)?;
            if step == 150 {
                cx.record("midway", true, Unit::None)?;
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
    fn time_and_rate_units_are_timed_unless_said_otherwise() -> Result<()> {
        let mut cx = ctx()?;
        cx.record("time", 0.5, Unit::Seconds)?;
        cx.record("speed", 1e9, Unit::FlopPerSec)?;
        cx.record("copy", 1e9, Unit::BytesPerSec)?;
        cx.record("count", 3, Unit::Count)?;
        cx.record_timed("mfu", 0.4, Unit::Ratio)?;
        cx.record_untimed("datasheet", 1e15, Unit::FlopPerSec)?;
        let (values, _) = cx.into_parts();
        let timed: Vec<&str> = values
            .iter()
            .filter(|(_, v)| v.timed)
            .map(|(n, _)| n.as_str())
            .collect();
        assert_eq!(timed, ["time", "speed", "copy", "mfu"]);
        Ok(())
    }
}

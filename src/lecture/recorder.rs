//! What a section gets to work with: the device, a seeded random stream of its own, and
//! `record!`, which files a named value with its kind, its unit and the source line that recorded
//! it. Every record call is kept in order (the trace's `steps`), so a reader can step through the
//! section as it ran; a value recorded as a history keeps every state, up to the trace's bound.

use std::panic::Location;

use indexmap::IndexMap;
use sha2::{Digest, Sha256};

use crate::device::{Device, DeviceChoice};
use crate::error::{Error, Result};
use crate::json::json_number;
use crate::rng::Rng;
use crate::tensor::Tensor;
use crate::trace::history;
use crate::trace::{Kind, State, Step, Unit, ValueRecord};

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
    /// Givens a what-if changed (`lecture --set`), by name, in the trace's form.
    pub(crate) overrides: IndexMap<String, serde_json::Value>,
}

/// A value as the section recorded it: every state, before the trace's bound is applied.
struct Recorded {
    unit: Unit,
    kind: Kind,
    history: bool,
    states: Vec<State>,
    given: Option<crate::trace::GivenInfo>,
}

/// The one way a section records: the original lecture's `# @inspect x`, with what decided the
/// value in front of its name.
///
/// ```text
/// record!(cx, given batch_size)                        // the variable, under its own name
/// record!(cx, computed num_bytes, bytes)               // with a unit its type does not say
/// record!(cx, clock actual_time = timing.median_s, seconds)   // a name for an expression
/// record!(cx, computed history loss)                   // one more state of a history
/// ```
///
/// The kind is one of `given` (the lecture chose it), `computed` (it follows from the givens),
/// or, for what the machine decided, `clock`, `device` or `rounding` (a kernel's rounding): see
/// `trace::Kind`; `(expr)` where the run decides which. The unit follows the type (an integer or a shape is a count, a tensor keeps
/// its dtype and shape, anything else has none) unless the call names one: `bytes`, `flop`,
/// `flop_per_sec`, `seconds`, `bytes_per_sec`, `flop_per_byte`, `ratio`, `count` or `none`. The name is always
/// written in the call, so the name the book quotes is in the section's source. The recorded line
/// is the line of the call (`#[track_caller]` sees through macros). A history's every call must
/// be a history call of one kind and unit; any other name is recorded once.
macro_rules! record {
    ($cx:expr, $kind:tt history $name:ident = $value:expr, $unit:ident) => {
        $cx.record_value(
            stringify!($name),
            $value,
            $crate::lecture::recorder::unit!($unit),
            $crate::lecture::recorder::kind!($kind),
            true,
        )
    };
    ($cx:expr, $kind:tt history $name:ident = $value:expr) => {
        $cx.record_value(
            stringify!($name),
            $value,
            None,
            $crate::lecture::recorder::kind!($kind),
            true,
        )
    };
    ($cx:expr, $kind:tt history $name:ident, $unit:ident) => {
        $cx.record_value(
            stringify!($name),
            &$name,
            $crate::lecture::recorder::unit!($unit),
            $crate::lecture::recorder::kind!($kind),
            true,
        )
    };
    ($cx:expr, $kind:tt history $name:ident) => {
        $cx.record_value(
            stringify!($name),
            &$name,
            None,
            $crate::lecture::recorder::kind!($kind),
            true,
        )
    };
    ($cx:expr, $kind:tt $name:ident = $value:expr, $unit:ident) => {
        $cx.record_value(
            stringify!($name),
            $value,
            $crate::lecture::recorder::unit!($unit),
            $crate::lecture::recorder::kind!($kind),
            false,
        )
    };
    ($cx:expr, $kind:tt $name:ident = $value:expr) => {
        $cx.record_value(
            stringify!($name),
            $value,
            None,
            $crate::lecture::recorder::kind!($kind),
            false,
        )
    };
    ($cx:expr, $kind:tt $name:ident, $unit:ident) => {
        $cx.record_value(
            stringify!($name),
            &$name,
            $crate::lecture::recorder::unit!($unit),
            $crate::lecture::recorder::kind!($kind),
            false,
        )
    };
    ($cx:expr, $kind:tt $name:ident) => {
        $cx.record_value(
            stringify!($name),
            &$name,
            None,
            $crate::lecture::recorder::kind!($kind),
            false,
        )
    };
}
pub(crate) use record;

/// `record!`'s kind words; any other word does not compile. A kind the run decides (a peak that is
/// a datasheet's figure on a GPU and measured on a CPU) is given in parentheses: `(peak.kind())`.
macro_rules! kind {
    (($kind:expr)) => {
        $kind
    };
    (given) => {
        $crate::trace::Kind::Given
    };
    (computed) => {
        $crate::trace::Kind::Computed
    };
    (clock) => {
        $crate::trace::Kind::Clock
    };
    (device) => {
        $crate::trace::Kind::Device
    };
    (rounding) => {
        $crate::trace::Kind::Rounding
    };
}
pub(crate) use kind;

/// `record!`'s unit words; any other word does not compile.
macro_rules! unit {
    (bytes) => {
        Some($crate::trace::Unit::Bytes)
    };
    (flop) => {
        Some($crate::trace::Unit::Flop)
    };
    (flop_per_sec) => {
        Some($crate::trace::Unit::FlopPerSec)
    };
    (seconds) => {
        Some($crate::trace::Unit::Seconds)
    };
    (bytes_per_sec) => {
        Some($crate::trace::Unit::BytesPerSec)
    };
    (ratio) => {
        Some($crate::trace::Unit::Ratio)
    };
    (flop_per_byte) => {
        Some($crate::trace::Unit::FlopPerByte)
    };
    (count) => {
        Some($crate::trace::Unit::Count)
    };
    (none) => {
        Some($crate::trace::Unit::None)
    };
}
pub(crate) use unit;

/// What one state of a recorded value holds besides its line.
pub struct Observed {
    pub value: serde_json::Value,
    pub dtype: Option<String>,
    pub shape: Option<Vec<usize>>,
}

impl Observed {
    fn plain(value: serde_json::Value) -> Result<Observed> {
        Ok(Observed {
            value,
            dtype: None,
            shape: None,
        })
    }
}

/// Something a section can record: numbers, strings, shapes and lists, JSON, tensors.
pub trait Recordable {
    /// The unit a value of this type has when the record call names none.
    const UNIT: Unit;
    fn observe(self) -> Result<Observed>;
}

macro_rules! recordable {
    ($unit:ident: $($t:ty),*) => {$(
        impl Recordable for $t {
            const UNIT: Unit = Unit::$unit;
            fn observe(self) -> Result<Observed> {
                Observed::plain(serde_json::Value::from(self))
            }
        }
    )*};
}
// Whole numbers in a lecture count something (a size, a shape's extent, a step); a call names
// `bytes` or `flop` where they are those.
recordable!(Count: u64, i64, u32, i32, usize);
recordable!(None: bool, String, &str);

impl Recordable for f64 {
    const UNIT: Unit = Unit::None;
    fn observe(self) -> Result<Observed> {
        Observed::plain(json_number(self))
    }
}

impl Recordable for f32 {
    const UNIT: Unit = Unit::None;
    fn observe(self) -> Result<Observed> {
        Observed::plain(json_number(self as f64))
    }
}

impl Recordable for serde_json::Value {
    const UNIT: Unit = Unit::None;
    fn observe(self) -> Result<Observed> {
        Observed::plain(self)
    }
}

/// A variable recorded by name is borrowed, so the section can go on using it.
impl<T: Recordable + Clone> Recordable for &T {
    const UNIT: Unit = T::UNIT;
    fn observe(self) -> Result<Observed> {
        self.clone().observe()
    }
}

/// A list of numbers (a shape is a list of counts).
impl<T: Recordable + Clone> Recordable for &[T] {
    const UNIT: Unit = T::UNIT;
    fn observe(self) -> Result<Observed> {
        self.to_vec().observe()
    }
}

impl<T: Recordable> Recordable for Vec<T> {
    const UNIT: Unit = T::UNIT;
    fn observe(self) -> Result<Observed> {
        let items = self
            .into_iter()
            .map(|x| x.observe().map(|o| o.value))
            .collect::<Result<Vec<_>>>()?;
        Observed::plain(serde_json::Value::Array(items))
    }
}

/// A tensor's values (nested lists) with its dtype and shape; a large one is refused (record a
/// summary instead).
impl Recordable for Tensor {
    const UNIT: Unit = Unit::None;
    fn observe(self) -> Result<Observed> {
        if self.numel() > MAX_RECORDED_ELEMENTS {
            return Err(Error::invalid(
                "record",
                format!(
                    "a tensor of {} elements (more than {MAX_RECORDED_ELEMENTS}); record a summary instead",
                    self.numel()
                ),
            ));
        }
        Ok(Observed {
            value: self.to_json()?,
            dtype: Some(self.dtype().name().into()),
            shape: Some(self.shape().to_vec()),
        })
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
            overrides: IndexMap::new(),
        }
    }

    /// The value of a given (`given!` is the way to call it): the what-if's where it changed the
    /// given, else the lecture's default; recorded as a `given`, with its default, range and help.
    #[track_caller]
    pub fn given<R: super::givens::Range>(&mut self, def: &'static super::givens::GivenDef) -> Result<R::Value> {
        let default = (def.default)(&self.device);
        let chosen = self.overrides.get(def.name).unwrap_or(&default);
        let value = R::from_json(chosen).ok_or_else(|| {
            Error::invalid(
                "given",
                format!(
                    "section `{}`: `{}` = {chosen} is not {}",
                    self.id,
                    def.name,
                    def.range_words()
                ),
            )
        })?;
        self.record_value(def.name, value.clone(), def.unit, Kind::Given, false)?;
        if let Some(recorded) = self.values.get_mut(def.name) {
            recorded.given = Some(crate::trace::GivenInfo {
                default,
                range: def.range_words().to_string(),
                help: def.help.to_string(),
            });
        }
        Ok(value)
    }

    /// Records `value` under `name`: `record!` is the way to call it (see there).
    #[track_caller]
    pub fn record_value<T: Recordable>(
        &mut self,
        name: &str,
        value: T,
        unit: Option<Unit>,
        kind: Kind,
        history: bool,
    ) -> Result<()> {
        let line = self.caller_line(Location::caller());
        let observed = value
            .observe()
            .map_err(|e| Error::invalid("record", format!("section `{}`: `{name}`: {e}", self.id)))?;
        let state = State {
            value: observed.value,
            line,
            token: None,
            dtype: observed.dtype,
            shape: observed.shape,
        };
        self.insert(name, state, unit.unwrap_or(T::UNIT), kind, history)
    }

    fn caller_line(&self, at: &Location<'_>) -> u32 {
        // A value recorded from a helper in another file has no line in this section's code.
        if at.file().replace('\\', "/").ends_with(self.file) {
            at.line()
        } else {
            0
        }
    }

    fn insert(&mut self, name: &str, state: State, unit: Unit, kind: Kind, history: bool) -> Result<()> {
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
                    kind,
                    history,
                    states: vec![state],
                    given: None,
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
                if recorded.kind != kind {
                    return refuse(format!(
                        "changes kind in its history ({}, then {})",
                        recorded.kind.word(),
                        kind.word()
                    ));
                }
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
                kind: Some(recorded.kind),
                legacy_timed: false,
                dtype: last.dtype,
                shape: last.shape,
                history: states,
                given: recorded.given,
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
    fn a_tensor_too_large_to_list_is_refused_with_its_name() -> Result<()> {
        let mut cx = ctx()?;
        let big = Tensor::zeros(&[MAX_RECORDED_ELEMENTS + 1], DType::F32)?;
        let err = record!(cx, computed big).expect_err("too large");
        assert!(
            err.to_string().contains("`big`") && err.to_string().contains("summary"),
            "{err}"
        );
        Ok(())
    }
}

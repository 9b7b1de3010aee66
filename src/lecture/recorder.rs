//! What a section gets to work with: the device, a seeded random stream of its own, and `record`,
//! which files a named value with its unit and the source line that recorded it.

use std::panic::Location;

use indexmap::IndexMap;
use sha2::{Digest, Sha256};

use crate::device::{Device, DeviceChoice};
use crate::error::{Error, Result};
use crate::json::json_number;
use crate::rng::Rng;
use crate::tensor::Tensor;
use crate::trace::{Unit, ValueRecord};

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
    values: IndexMap<String, ValueRecord>,
}

/// Records a variable under its own name, the original lecture's `# @inspect x`:
/// `record!(cx, num_parameters, Unit::Count)` is `cx.record("num_parameters", num_parameters,
/// Unit::Count)`, and `record!(cx, x)` records tensor `x` element by element (`record_tensor`).
/// The recorded line is the line of the `record!` call (`#[track_caller]` sees through macros).
macro_rules! record {
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
        }
    }

    /// Records `value` under `name` with its unit.
    #[track_caller]
    pub fn record(&mut self, name: &str, value: impl IntoValue, unit: Unit) -> Result<()> {
        let line = self.caller_line(Location::caller());
        self.insert(
            name,
            ValueRecord {
                value: value.into_value(),
                unit,
                line,
                dtype: None,
                shape: None,
            },
        )
    }

    /// Records a tensor's values (nested lists) with its dtype and shape.
    #[track_caller]
    pub fn record_tensor(&mut self, name: &str, t: &Tensor) -> Result<()> {
        let line = self.caller_line(Location::caller());
        if t.numel() > MAX_RECORDED_ELEMENTS {
            return Err(Error::invalid(
                "record_tensor",
                format!(
                    "`{name}` has {} elements (more than {MAX_RECORDED_ELEMENTS}); record a summary instead",
                    t.numel()
                ),
            ));
        }
        let record = ValueRecord {
            value: t.to_json()?,
            unit: Unit::None,
            line,
            dtype: Some(t.dtype().name().into()),
            shape: Some(t.shape().to_vec()),
        };
        self.insert(name, record)
    }

    fn caller_line(&self, at: &Location<'_>) -> u32 {
        // A value recorded from a helper in another file has no line in this section's code.
        if at.file().replace('\\', "/").ends_with(self.file) {
            at.line()
        } else {
            0
        }
    }

    fn insert(&mut self, name: &str, record: ValueRecord) -> Result<()> {
        if self.values.contains_key(name) {
            return Err(Error::invalid(
                "record",
                format!("section `{}` records `{name}` twice", self.id),
            ));
        }
        self.values.insert(name.to_string(), record);
        Ok(())
    }

    pub fn values(&self) -> &IndexMap<String, ValueRecord> {
        &self.values
    }

    pub fn into_values(self) -> IndexMap<String, ValueRecord> {
        self.values
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

    #[test]
    fn record_names_the_variable_and_keeps_the_line_of_the_call() -> Result<()> {
        let choice = device::choose(DeviceRequest::Cpu)?;
        let mut cx = SectionCtx::new("test", "src/lecture/recorder.rs", &choice, 0);
        let num_parameters = 12usize;
        let line = line!() + 1;
        record!(cx, num_parameters, Unit::Count)?;
        let zeros = Tensor::zeros(&[2], DType::F32)?;
        // A call that rustfmt might spread over lines is placed at its first line.
        let tensor_line = line!() + 1;
        record!(cx, zeros)?;
        let values = cx.values();
        assert_eq!(values["num_parameters"].value, serde_json::json!(12));
        assert_eq!(values["num_parameters"].unit, Unit::Count);
        assert_eq!(values["num_parameters"].line, line);
        assert_eq!(values["zeros"].shape, Some(vec![2]));
        assert_eq!(values["zeros"].line, tensor_line);
        // Recording the same name twice is refused.
        assert!(record!(cx, num_parameters, Unit::Count).is_err());
        Ok(())
    }
}

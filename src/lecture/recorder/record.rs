//! `record!`, the one way a section records, and what it records: the macro's kind and unit
//! words, and how a value of each recordable type becomes the JSON a trace holds. Apart from the
//! recorder's state (`recorder.rs`) because a section author reads this part to learn what a call
//! may say, and never needs how the states are kept.

use crate::error::Result;
use crate::json::json_number;
use crate::tensor::Tensor;
use crate::trace::Unit;

/// The largest tensor recorded element by element; a larger one is recorded as a summary.
pub use crate::trace::summary::MAX_RECORDED_ELEMENTS;

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
    pub layout: Option<crate::trace::Layout>,
}

impl Observed {
    fn plain(value: serde_json::Value) -> Result<Observed> {
        Ok(Observed {
            value,
            dtype: None,
            shape: None,
            layout: None,
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

/// A tensor's values (nested lists) with its dtype and shape; one of more than
/// `MAX_RECORDED_ELEMENTS` as a summary (its corners and statistics), so that givens that make
/// it large still record, and the book still draws it.
impl Recordable for Tensor {
    const UNIT: Unit = Unit::None;
    fn observe(self) -> Result<Observed> {
        let value = if self.numel() > MAX_RECORDED_ELEMENTS {
            self.to_json_summary()?
        } else {
            self.to_json()?
        };
        Ok(Observed {
            value,
            dtype: Some(self.dtype().name().into()),
            shape: Some(self.shape().to_vec()),
            // Where each element sits in storage: the grid's hover says it, for the lessons on
            // strides and views.
            layout: Some(crate::trace::Layout {
                strides: self.strides().to_vec(),
                offset: self.storage_offset(),
            }),
        })
    }
}

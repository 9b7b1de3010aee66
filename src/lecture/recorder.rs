//! What a section gets to work with: the device, a seeded random stream of its own, and
//! `record!`, which files a named value with its kind, its unit and the source line that recorded
//! it. Every record call is kept in order (the trace's `steps`), so a reader can step through the
//! section as it ran; a value recorded as a history keeps every state, up to the trace's bound.

use std::panic::Location;

use indexmap::IndexMap;
use sha2::{Digest, Sha256};

use crate::device::{Device, DeviceChoice};
use crate::error::{Error, Result};
use crate::rng::Rng;
use crate::trace::history;
use crate::trace::{Kind, State, Step, Unit, ValueRecord};

// What a call may say and how its value becomes JSON live in `recorder/record.rs`; they keep their
// paths here (`recorder::unit!` is spelled out in `record!` and `given!`).
mod check;
mod record;
pub(crate) use check::check;
pub use record::{MAX_RECORDED_ELEMENTS, Observed, Recordable};
pub(crate) use record::{kind, record, unit};

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
            layout: observed.layout,
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
                layout: last.layout,
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
mod tests;

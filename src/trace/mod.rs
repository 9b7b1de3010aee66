//! The trace recorder: sections record named values with units; a run becomes one JSON document
//! per lecture and device, with provenance. The book reads these files and nothing else.

pub mod io;
pub mod provenance;
pub mod recorder;
pub mod schema;
pub mod source;

pub use io::{load, parse, save};
pub use recorder::{IntoValue, SectionCtx};
pub use schema::{
    DeviceInfo, GitInfo, HostInfo, Provenance, SCHEMA_VERSION, SectionRecord, Trace, Unit, ValueRecord, json_number,
    number_from_json,
};

//! The trace: plain data. The schema (sections, named values with units, source lines and
//! histories, provenance), reading and writing trace files, where a trace came from, how long a
//! history may be, the hash of a section's source, and the walk into a recorded value that
//! `lecture get` and the book share. It knows nothing of tensors, devices, the lecture's sections
//! or the book: the lecture writes traces (its recorder is `crate::lecture::SectionCtx`) and the
//! book reads them.

pub mod history;
pub mod io;
pub mod name;
pub mod provenance;
pub mod schema;
pub mod source;
pub mod strict;
pub mod validate;
pub mod walk;

pub use crate::json::{json_number, number_from_json};
pub use io::{load, load_named, save};
pub use schema::{
    BuildInfo, DeviceInfo, GitInfo, HostInfo, Provenance, RunInfo, SCHEMA_VERSION, SectionRecord, State, Step, Trace,
    Unit, ValueRecord,
};
pub use walk::walk;

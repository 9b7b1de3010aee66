//! The trace as plain data, its own crate (`cs336-trace`): the schema (sections, named values with
//! units, source lines and histories, provenance), reading and writing trace files (atomic,
//! bounded, strict), their names, how long a history may be, the hash of a section's source, and
//! the walk into a recorded value that `lecture get` and the book share. Beside it, what every
//! reader and writer of those files needs: atomic writes and locks (`atomic_file`), the host's
//! facts (`host`), floats as JSON (`json`) and the terminal as an output (`console`). It knows
//! nothing of tensors, devices, the lecture's sections or the book: the lecture writes traces (its
//! recorder is `cs336::lecture::SectionCtx`) and the book (`cs336-book`) reads them.

pub mod atomic_file;
pub mod compare;
pub mod console;
pub mod declared;
pub mod error;
pub mod history;
pub mod host;
pub mod io;
pub mod json;
pub mod name;
pub mod renamed;
pub mod schema;
pub mod source;
pub mod stream;
pub mod strict;
pub mod summary;
pub mod validate;
pub mod walk;

pub use declared::DeviceRow;
pub use error::{Error, Result};
pub use io::{load, load_named, save, save_named};
pub use json::{json_number, number_from_json};
pub use schema::{
    BuildInfo, DeviceInfo, Disturbance, GitInfo, GivenInfo, HostInfo, Kind, Layout, Provenance, RunInfo,
    SCHEMA_VERSION, SectionRecord, State, Step, Trace, Unit, ValueRecord,
};
pub use walk::walk;

//! The GPU's own clock: a pair of CUDA events recorded on the stream around the work, read once
//! the end event has passed. Kernel launches return before the work is done, so a host clock would
//! need a synchronise and would count launch latency and host scheduling; events time the work
//! alone. Events are created with timing enabled (cudarc's default disables it).

use cudarc::driver::{CudaEvent, sys as drv};

use super::{CudaBackend, driver_error};
use crate::error::Result;

fn timing_event(b: &CudaBackend) -> Result<CudaEvent> {
    b.context()
        .new_event(Some(drv::CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(|e| driver_error("creating a timing event", e))
}

fn record(b: &CudaBackend, event: &CudaEvent) -> Result<()> {
    event
        .record(b.stream())
        .map_err(|e| driver_error("recording an event", e))
}

/// Two events around the work queued between `begin` and `end`.
pub struct Span {
    start: CudaEvent,
    end: CudaEvent,
}

impl Span {
    /// Records the start on the stream: everything queued before it is not counted.
    pub fn begin(b: &CudaBackend) -> Result<Span> {
        let span = Span {
            start: timing_event(b)?,
            end: timing_event(b)?,
        };
        record(b, &span.start)?;
        Ok(span)
    }

    /// Records the end on the stream, after the work queued since `begin`.
    pub fn end(&self, b: &CudaBackend) -> Result<()> {
        record(b, &self.end)
    }

    /// Seconds between the two events; waits until the end event has passed.
    pub fn seconds(&self) -> Result<f64> {
        let ms = self
            .start
            .elapsed_ms(&self.end)
            .map_err(|e| driver_error("reading an event time", e))?;
        Ok(f64::from(ms) / 1e3)
    }
}

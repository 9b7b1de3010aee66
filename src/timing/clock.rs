//! Which clock times a call: the host's on the CPU (its work is done when the call returns), CUDA
//! events on a GPU (see `device::cuda::events`: the work is queued, and the events time it on the
//! device without host latency in the number).

use std::sync::Arc;
use std::time::Instant;

use crate::device::Device;
use crate::device::cuda::CudaBackend;
use crate::device::cuda::events::Span;
use crate::error::Error;

#[derive(Debug, Clone)]
pub enum Clock {
    /// `Instant`: for work that is finished when the call returns.
    Host,
    /// Events on this backend's stream around each call.
    Cuda(Arc<CudaBackend>),
}

impl Clock {
    /// The clock for work on `device`.
    pub fn for_device(device: &Device) -> Clock {
        match device.cuda() {
            Some(gpu) => Clock::Cuda(Arc::clone(&gpu.0)),
            None => Clock::Host,
        }
    }

    /// Times `count` calls of `f`, each after an untimed `setup` whose result it consumes;
    /// returns the seconds of each call. On a GPU the calls are queued back to back with their
    /// events and read after one synchronise at the end of the block.
    pub fn time_calls<S, E: From<Error>>(
        &self,
        count: usize,
        setup: &mut dyn FnMut() -> std::result::Result<S, E>,
        f: &mut dyn FnMut(S) -> std::result::Result<(), E>,
    ) -> std::result::Result<Vec<f64>, E> {
        match self {
            Clock::Host => (0..count)
                .map(|_| {
                    let s = setup()?;
                    let start = Instant::now();
                    f(s)?;
                    Ok(start.elapsed().as_secs_f64())
                })
                .collect(),
            Clock::Cuda(b) => {
                let mut spans = Vec::with_capacity(count);
                for _ in 0..count {
                    let s = setup()?;
                    let span = Span::begin(b)?;
                    f(s)?;
                    span.end(b)?;
                    spans.push(span);
                }
                b.synchronize()?;
                Ok(spans.iter().map(Span::seconds).collect::<Result<_, Error>>()?)
            }
        }
    }
}

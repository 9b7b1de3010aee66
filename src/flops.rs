//! The FLOP counter. Every tensor op reports the floating-point operations it performs as it
//! executes; a caller opens a `FlopCounter` around a region and reads what ran inside it. This is
//! how the lecture's formulas (2·m·n·k per matmul, 6·N·D per training step) are checked against
//! what the code actually did rather than asserted.
//!
//! Conventions: a matmul of (m×k)·(k×n) counts 2·m·n·k (one multiply and one add per term); an
//! elementwise op counts one FLOP per output element; a reduction one per input element. Copies,
//! views and casts count nothing.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Forward,
    Backward,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FlopCount {
    pub forward: u64,
    pub backward: u64,
    /// Per op name, both phases together.
    pub by_op: BTreeMap<&'static str, u64>,
}

impl FlopCount {
    pub fn total(&self) -> u64 {
        self.forward + self.backward
    }
}

thread_local! {
    static FRAMES: RefCell<Vec<(u64, FlopCount)>> = const { RefCell::new(Vec::new()) };
    static NEXT_ID: Cell<u64> = const { Cell::new(0) };
    static PHASE: Cell<Phase> = const { Cell::new(Phase::Forward) };
}

/// Reports `flops` performed by `op` to every counter open on this thread.
pub fn record(op: &'static str, flops: u64) {
    if flops == 0 {
        return;
    }
    let phase = PHASE.with(Cell::get);
    FRAMES.with(|frames| {
        for (_, count) in frames.borrow_mut().iter_mut() {
            match phase {
                Phase::Forward => count.forward += flops,
                Phase::Backward => count.backward += flops,
            }
            *count.by_op.entry(op).or_default() += flops;
        }
    });
}

pub fn current_phase() -> Phase {
    PHASE.with(Cell::get)
}

/// Counts everything recorded on this thread between `start` and `finish` (counters may nest).
#[must_use = "a counter counts until it is finished or dropped"]
pub struct FlopCounter {
    id: u64,
    // Thread-local state: the counter must not move to another thread.
    _not_send: std::marker::PhantomData<*const ()>,
}

impl FlopCounter {
    pub fn start() -> FlopCounter {
        let id = NEXT_ID.with(|n| {
            let id = n.get();
            n.set(id + 1);
            id
        });
        FRAMES.with(|f| f.borrow_mut().push((id, FlopCount::default())));
        FlopCounter {
            id,
            _not_send: std::marker::PhantomData,
        }
    }

    /// What has been counted so far, without closing the counter.
    pub fn peek(&self) -> FlopCount {
        FRAMES.with(|f| {
            f.borrow()
                .iter()
                .find(|(id, _)| *id == self.id)
                .map(|(_, c)| c.clone())
                .unwrap_or_default()
        })
    }

    pub fn finish(self) -> FlopCount {
        self.peek()
        // Drop removes the frame.
    }
}

impl Drop for FlopCounter {
    fn drop(&mut self) {
        FRAMES.with(|f| f.borrow_mut().retain(|(id, _)| *id != self.id));
    }
}

/// While alive, FLOPs are attributed to the backward pass (the autograd engine holds one).
pub struct PhaseGuard {
    previous: Phase,
    _not_send: std::marker::PhantomData<*const ()>,
}

pub fn enter_phase(phase: Phase) -> PhaseGuard {
    let previous = PHASE.with(|p| p.replace(phase));
    PhaseGuard {
        previous,
        _not_send: std::marker::PhantomData,
    }
}

impl Drop for PhaseGuard {
    fn drop(&mut self) {
        PHASE.with(|p| p.set(self.previous));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_counters_and_phases() {
        let outer = FlopCounter::start();
        record("matmul", 10);
        let inner = FlopCounter::start();
        {
            let _g = enter_phase(Phase::Backward);
            record("add", 5);
        }
        record("add", 1);
        let i = inner.finish();
        assert_eq!((i.forward, i.backward), (1, 5));
        let o = outer.finish();
        assert_eq!((o.forward, o.backward), (11, 5));
        assert_eq!(o.by_op["add"], 6);
        assert_eq!(current_phase(), Phase::Forward);
        record("after", 3); // no counter open: nothing to report to, nothing breaks
    }
}

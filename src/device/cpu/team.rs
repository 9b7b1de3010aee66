//! A small team of persistent helper threads for one product at a time, in the style of an
//! OpenMP parallel region: the calling thread works too, helpers spin briefly after a job before
//! they park, and work is claimed from shared counters, so nobody waits for a thread that has not
//! started yet.
//!
//! Why not rayon (which `gemm` uses when asked to): a rayon call parks the caller, wakes a pool
//! thread, and wakes the caller again at the end. On this machine those hand-offs cost tens of
//! microseconds, which ate the whole gain of a second thread below ~512³, while numpy's and
//! PyTorch's OpenMP threads, spinning between calls, did not pay it. The bf16 kernels and the f32
//! matmul (`matmul.rs`, which hands each thread a single-threaded `gemm` call) use this team.

use std::cell::UnsafeCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// A raw pointer that the team's threads share; each part reads its operands and writes a
/// disjoint block of the output.
#[derive(Clone, Copy)]
pub(super) struct Shared<P>(pub(super) P);
// SAFETY: see above; each user (the f32 `product`, the portable bf16 kernel, the elementwise
// kernels) states which block each part writes.
unsafe impl<P> Send for Shared<P> {}
// SAFETY: as `Send`: the parts that share it write disjoint blocks.
unsafe impl<P> Sync for Shared<P> {}

impl<P: Copy> Shared<P> {
    /// The pointer (a method, so closures capture the `Sync` wrapper, not the raw field).
    pub(super) fn get(self) -> P {
        self.0
    }
}

/// How long a helper keeps polling for the next job before it parks.
const SPIN: Duration = Duration::from_micros(300);

const IDLE: u8 = 0;
const POSTED: u8 = 1;
const RUNNING: u8 = 2;
const DONE: u8 = 3;

/// The job: called once per participating thread with its index (the caller is 0).
type Work<'a> = dyn Fn(usize) + Sync + 'a;

/// One helper's mailbox. The `state` protocol orders every access to `job`: the caller writes it
/// only while the slot is IDLE and then publishes POSTED (release); the helper reads it only after
/// moving POSTED to RUNNING (acquire), and stops touching it before it publishes DONE.
struct Slot {
    state: AtomicU8,
    panicked: AtomicBool,
    job: UnsafeCell<Option<&'static Work<'static>>>,
    thread: OnceLock<Thread>,
}

// SAFETY: `job` is only accessed under the state protocol above.
unsafe impl Sync for Slot {}
// SAFETY: as `Sync`: `job` is only reached under the state protocol above.
unsafe impl Send for Slot {}

pub(crate) struct Team {
    slots: Vec<Arc<Slot>>,
    /// One job at a time; a second caller meanwhile runs its product on its own thread.
    busy: Mutex<()>,
}

impl Team {
    /// The process-wide team: one helper per extra core.
    pub(crate) fn global() -> &'static Team {
        static TEAM: OnceLock<Team> = OnceLock::new();
        TEAM.get_or_init(|| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            Team::new(cores.saturating_sub(1))
        })
    }

    fn new(helpers: usize) -> Team {
        let mut slots = Vec::new();
        for id in 1..=helpers {
            let slot = Arc::new(Slot {
                state: AtomicU8::new(IDLE),
                panicked: AtomicBool::new(false),
                job: UnsafeCell::new(None),
                thread: OnceLock::new(),
            });
            let mine = Arc::clone(&slot);
            let spawned = std::thread::Builder::new()
                .name(format!("bf16-gemm-{id}"))
                .spawn(move || helper(&mine, id));
            // A helper that cannot be started just means fewer threads.
            if let Ok(handle) = spawned {
                let _ = slot.thread.set(handle.thread().clone());
                slots.push(slot);
            }
        }
        Team {
            slots,
            busy: Mutex::new(()),
        }
    }

    /// Runs `work` on up to `threads` threads (the caller included) and returns when every
    /// thread that started it has finished. `work` must share its items out itself (claiming
    /// them from counters), so that any number of participants, even one, completes them.
    pub(crate) fn run(&self, threads: usize, work: &Work<'_>) {
        let guard = self.busy.try_lock();
        let helpers = if guard.is_ok() {
            threads.saturating_sub(1).min(self.slots.len())
        } else {
            0
        };
        // SAFETY: only the lifetime is erased; `Join` below waits (also when `work` panics
        // here) until no helper can touch `work` any more, before this frame ends.
        let job: &'static Work<'static> = unsafe { std::mem::transmute::<&Work<'_>, &'static Work<'static>>(work) };
        let posted = &self.slots[..helpers];
        for slot in posted {
            // SAFETY: the slot is IDLE (every run leaves its slots IDLE), so no helper reads it.
            unsafe { *slot.job.get() = Some(job) };
            slot.state.store(POSTED, Release);
            if let Some(t) = slot.thread.get() {
                t.unpark();
            }
        }
        let join = Join(posted);
        work(0);
        drop(join);
    }
}

/// Waits for the posted helpers when dropped: a helper that has not picked its job up yet is
/// told not to; one that has is waited for.
struct Join<'a>(&'a [Arc<Slot>]);

impl Drop for Join<'_> {
    fn drop(&mut self) {
        let mut panicked = false;
        for slot in self.0 {
            if slot.state.compare_exchange(POSTED, IDLE, AcqRel, Acquire).is_err() {
                let start = Instant::now();
                while slot.state.load(Acquire) != DONE {
                    if start.elapsed() < SPIN {
                        std::hint::spin_loop()
                    } else {
                        std::thread::yield_now()
                    }
                }
                panicked |= slot.panicked.swap(false, Relaxed);
                slot.state.store(IDLE, Release);
            }
        }
        if panicked && !std::thread::panicking() {
            panic!("a bf16 matmul helper thread panicked");
        }
    }
}

/// Claims the next item below `count` from `next`: how a job's threads share its items out.
pub(crate) fn claim(next: &AtomicUsize, count: usize) -> Option<usize> {
    let i = next.fetch_add(1, Relaxed);
    (i < count).then_some(i)
}

/// How [`in_chunks`] cuts `0..len`: ranges of `chunk` items, shared out over the team from
/// `parallel_min` items on (below it, handing work out costs more than a second thread gains).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Split {
    pub(crate) parallel_min: usize,
    pub(crate) chunk: usize,
}

/// Runs `chunk(range)` over `0..len` cut into ranges of `split.chunk`, on the team's threads when
/// `len` reaches `split.parallel_min` (one range at a time on this thread otherwise). Every range
/// is handed out exactly once and together they cover `0..len`. Not rayon: its pool is a second set
/// of threads, which woke while the team's helper still spun after the last matmul, and whose
/// hand-offs cost tens of microseconds per call.
pub(crate) fn in_chunks(len: usize, split: Split, chunk: &(dyn Fn(std::ops::Range<usize>) + Sync)) {
    let threads = rayon::current_num_threads();
    if len < split.parallel_min || threads <= 1 {
        chunk(0..len);
        return;
    }
    let size = split.chunk.max(1);
    let count = len.div_ceil(size);
    let workers = threads.min(count);
    // One contiguous share of the chunks per thread, each walked from its start, so that every
    // thread streams through memory in order (the prefetchers follow one stream per thread; chunks
    // claimed alternately from one counter make each thread's reads jump). A thread done with its
    // share helps with the others' from where they are: no thread waits for a slow one, and a run
    // the team cannot staff (busy, `Team::run` gives no helpers) is done by the caller alone.
    let shares: Vec<(AtomicUsize, usize)> = (0..workers)
        .map(|s| (AtomicUsize::new(count * s / workers), count * (s + 1) / workers))
        .collect();
    Team::global().run(workers, &|id| {
        for s in (0..workers).map(|k| (id + k) % workers) {
            let (next, end) = &shares[s];
            while let Some(i) = claim(next, *end) {
                chunk(i * size..((i + 1) * size).min(len));
            }
        }
    });
}

fn helper(slot: &Slot, id: usize) {
    loop {
        let start = Instant::now();
        while slot.state.load(Acquire) != POSTED {
            if start.elapsed() < SPIN {
                std::hint::spin_loop();
            } else {
                // Spurious wake-ups are fine: the loop checks the state again.
                std::thread::park();
            }
        }
        if slot.state.compare_exchange(POSTED, RUNNING, AcqRel, Acquire).is_ok() {
            // SAFETY: RUNNING was reached from POSTED, so `job` holds the caller's live job
            // until this thread publishes DONE.
            let job = unsafe { *slot.job.get() };
            if catch_unwind(AssertUnwindSafe(|| job.map(|f| f(id)))).is_err() {
                slot.panicked.store(true, Relaxed);
            }
            slot.state.store(DONE, Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_is_done_exactly_once_whoever_takes_part() {
        let team = Team::new(2);
        for threads in [1, 2, 3, 8] {
            for _ in 0..200 {
                let next = AtomicUsize::new(0);
                let done: Vec<AtomicUsize> = (0..50).map(|_| AtomicUsize::new(0)).collect();
                team.run(threads, &|_id| {
                    loop {
                        let i = next.fetch_add(1, Relaxed);
                        if i >= done.len() {
                            break;
                        }
                        done[i].fetch_add(1, Relaxed);
                    }
                });
                assert!(done.iter().all(|d| d.load(Relaxed) == 1));
            }
        }
    }

    /// `in_chunks` hands every range out exactly once and covers `0..len`, with the team free and
    /// with the team busy (a call from inside another: the caller then walks every share alone).
    #[test]
    fn in_chunks_covers_every_item_once_whoever_takes_part() {
        let cover = |len: usize, chunk: usize| {
            let done: Vec<AtomicUsize> = (0..len).map(|_| AtomicUsize::new(0)).collect();
            let split = Split { parallel_min: 0, chunk };
            in_chunks(len, split, &|r| {
                assert!(r.end <= len && r.start < r.end, "{r:?} of {len}");
                for d in &done[r] {
                    d.fetch_add(1, Relaxed);
                }
            });
            assert!(done.iter().all(|d| d.load(Relaxed) == 1), "len {len}, chunk {chunk}");
        };
        for (len, chunk) in [
            (1, 1),
            (7, 3),
            (100, 7),
            (1000, 1),
            (1000, 999),
            (1000, 2000),
            (4096, 512),
        ] {
            cover(len, chunk);
            // The team is busy inside: the nested call runs on its caller alone.
            in_chunks(
                2,
                Split {
                    parallel_min: 0,
                    chunk: 1,
                },
                &|_| cover(len, chunk),
            );
        }
    }

    #[test]
    fn a_panicking_helper_is_reported_to_the_caller() {
        let team = Team::new(1);
        let started = AtomicBool::new(false);
        let result = catch_unwind(AssertUnwindSafe(|| {
            team.run(2, &|id| {
                if id == 1 {
                    started.store(true, Relaxed);
                    panic!("helper fails");
                }
                // The caller waits for the helper to pick the job up.
                let t = Instant::now();
                while !started.load(Relaxed) && t.elapsed() < Duration::from_secs(30) {
                    std::thread::yield_now();
                }
            })
        }));
        assert!(result.is_err());
        // The team still works afterwards.
        let count = AtomicUsize::new(0);
        team.run(2, &|_| {
            count.fetch_add(1, Relaxed);
        });
        assert!((1..=2).contains(&count.load(Relaxed)));
    }
}

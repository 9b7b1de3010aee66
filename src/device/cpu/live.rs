//! Host tensor bytes, counted: the CPU's counterpart of the CUDA allocator's count
//! (`cuda::Allocator`). Every tensor storage on the CPU holds a [`Counted`] for its bytes, taken
//! when the storage is made and given back when it is dropped, so the count is the bytes live
//! tensors hold (scratch inside a kernel, such as a matmul's packed panels, is not a tensor and is
//! not counted), and its high-water mark is the most they held at once since the last reset.
//!
//! The count is kept per thread, by the thread that made each tensor. Tests run in parallel
//! threads of one process, and so would the lecture's sections if it ran them so: a process-wide
//! count would mix their tensors into one another's peaks, and a peak measured in one test would
//! move with whatever its neighbours were doing. A tensor dropped on another thread gives its
//! bytes back to the account of the thread that made it (the token holds that account), so no
//! account goes below zero. The cost is one relaxed atomic add and one `Arc` per storage.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One thread's live tensor bytes and their high-water mark.
#[derive(Debug, Default)]
pub struct Account {
    live: AtomicUsize,
    peak: AtomicUsize,
}

/// A snapshot of this thread's account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostMemoryStats {
    /// Bytes held by live tensors made on this thread.
    pub allocated: usize,
    /// The most `allocated` has been since the last [`reset_peak`] (or the thread's start).
    pub peak: usize,
}

// Relaxed throughout: each counter is one atomic whose read-modify-writes are totally ordered
// whatever the ordering, so `live` never loses an add or a sub, and `peak` only ever takes a
// value `live` really had. No other memory is published through them: a reader on another
// thread learns of a drop by joining or locking, which orders it anyway.
impl Account {
    fn add(&self, bytes: usize) {
        let now = self.live.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    fn sub(&self, bytes: usize) {
        self.live.fetch_sub(bytes, Ordering::Relaxed);
    }

    fn stats(&self) -> HostMemoryStats {
        HostMemoryStats {
            allocated: self.live.load(Ordering::Relaxed),
            peak: self.peak.load(Ordering::Relaxed),
        }
    }
}

thread_local! {
    static ACCOUNT: Arc<Account> = Arc::new(Account::default());
}

/// `bytes` of a tensor storage, counted on this thread's account while the token lives.
#[derive(Debug)]
pub struct Counted {
    bytes: usize,
    account: Arc<Account>,
}

impl Counted {
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.account.sub(self.bytes);
    }
}

/// Counts `bytes` on this thread's account until the returned token is dropped.
pub fn count(bytes: usize) -> Counted {
    let account = ACCOUNT.with(Arc::clone);
    account.add(bytes);
    Counted { bytes, account }
}

/// This thread's live tensor bytes and their high-water mark.
pub fn stats() -> HostMemoryStats {
    ACCOUNT.with(|a| a.stats())
}

/// Starts a new high-water mark at what is live now (`torch.cuda.reset_peak_memory_stats`).
pub fn reset_peak() {
    ACCOUNT.with(|a| a.peak.store(a.live.load(Ordering::Relaxed), Ordering::Relaxed));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counted on the thread that made the bytes, given back there from any thread.
    #[test]
    fn a_token_dropped_elsewhere_gives_back_to_its_own_account() {
        reset_peak();
        let base = stats().allocated;
        let token = count(1000);
        assert_eq!(stats().allocated, base + 1000);
        let other = std::thread::spawn(move || {
            let before = stats();
            drop(token);
            // The other thread's account is untouched.
            assert_eq!(stats(), before);
        });
        assert!(other.join().is_ok());
        assert_eq!(stats().allocated, base);
        assert_eq!(stats().peak, base + 1000);
        reset_peak();
        assert_eq!(stats().peak, base);
    }
}

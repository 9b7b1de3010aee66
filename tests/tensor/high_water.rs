//! The CPU's high-water mark of live tensor bytes, held to exact counts for known allocation
//! patterns. The count is per thread (`cpu::live`): each test runs on its own thread of the test
//! harness, so the tests running beside it cannot move its numbers, and one test below checks
//! exactly that with a thread that allocates in the middle of a measurement.

use std::sync::{Arc, Barrier};

use cs336::autograd::Var;
use cs336::device::{self, Device, max_memory, memory_use};
use cs336::error::Result;
use cs336::tensor::{DType, Tensor};

const CPU: Device = Device::Cpu;

#[test]
fn a_tensor_counts_its_bytes_and_a_view_counts_none() -> Result<()> {
    let before = memory_use(&CPU).allocated;
    let x = Tensor::zeros(&[32, 32], DType::F32)?;
    let y = Tensor::ones(&[100, 3], DType::BF16)?;
    assert_eq!(memory_use(&CPU).allocated - before, 32 * 32 * 4 + 100 * 3 * 2);
    let view = x.t()?;
    assert_eq!(
        memory_use(&CPU).allocated - before,
        4096 + 600,
        "a view allocates nothing"
    );
    drop((x, y));
    assert_eq!(
        memory_use(&CPU).allocated - before,
        4096,
        "the view keeps its storage alive"
    );
    drop(view);
    assert_eq!(memory_use(&CPU).allocated, before);
    Ok(())
}

/// Made and freed one after the other, two tensors never live together: the peak is the larger.
/// Made together, it is their sum.
#[test]
fn the_peak_is_the_most_live_at_once() -> Result<()> {
    let ((), apart) = max_memory(&CPU, || {
        drop(Tensor::zeros(&[1000], DType::F32)?);
        drop(Tensor::zeros(&[500], DType::F32)?);
        Ok(())
    })?;
    assert_eq!(apart.added(), 4000);
    let ((), together) = max_memory(&CPU, || {
        let a = Tensor::zeros(&[1000], DType::F32)?;
        let b = Tensor::zeros(&[500], DType::F32)?;
        drop((a, b));
        Ok(())
    })?;
    assert_eq!(together.added(), 6000);
    // What the closure returns stays live after it; the peak still counts the freed one.
    let (kept, peak) = max_memory(&CPU, || {
        drop(Tensor::zeros(&[1000], DType::F32)?);
        Tensor::zeros(&[10], DType::F32)
    })?;
    assert_eq!(peak.added(), 4000);
    assert_eq!(memory_use(&CPU).allocated - peak.before, 40);
    drop(kept);
    Ok(())
}

/// An op's output is one new tensor; a product in autograd keeps its inputs (not copies of them)
/// for backward, and backward's gradients come on top.
#[test]
fn an_op_adds_its_output_and_backward_its_gradients() -> Result<()> {
    let (b, d) = (8, 16);
    let x = Var::constant(Tensor::ones(&[b, d], DType::F32)?);
    let w = Var::parameter(Tensor::ones(&[d, d], DType::F32)?);
    let (y, forward) = max_memory(&CPU, || x.matmul(&w))?;
    assert_eq!(
        forward.added(),
        b * d * 4,
        "the output only: the graph keeps x and w themselves"
    );
    let ((), backward) = max_memory(&CPU, || y.sum_all()?.backward())?;
    // The sum's scalar, backward's seed 1, and w's gradient: the sum's gradient is the seed
    // broadcast to y's shape, a view that allocates nothing, and x needs no gradient.
    assert_eq!(backward.added(), 4 + 4 + d * d * 4, "{backward:?}");
    assert_eq!(w.grad().map(|g| g.nbytes()), Some(d * d * 4));
    Ok(())
}

/// Another thread allocating a megabyte while this one is being measured does not move this
/// thread's peak: each thread has its own count.
#[test]
fn another_thread_does_not_move_this_threads_peak() -> Result<()> {
    let (start, done) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
    let (s, d) = (Arc::clone(&start), Arc::clone(&done));
    let other = std::thread::spawn(move || -> Result<()> {
        s.wait();
        let big = Tensor::zeros(&[256 * 1024], DType::F32)?;
        d.wait();
        drop(big);
        Ok(())
    });
    let ((), peak) = max_memory(&CPU, || {
        start.wait();
        let mine = Tensor::zeros(&[1024], DType::F32)?;
        done.wait();
        drop(mine);
        Ok(())
    })?;
    assert!(other.join().is_ok_and(|r| r.is_ok()));
    assert_eq!(peak.added(), 4096);
    Ok(())
}

/// A tensor made here and dropped on another thread gives its bytes back to this thread's count.
#[test]
fn a_tensor_freed_elsewhere_is_taken_off_its_makers_count() -> Result<()> {
    let before = memory_use(&CPU).allocated;
    let t = Tensor::zeros(&[100], DType::F32)?;
    assert_eq!(memory_use(&CPU).allocated, before + 400);
    assert!(std::thread::spawn(move || drop(t)).join().is_ok());
    assert_eq!(memory_use(&CPU).allocated, before);
    device::reset_peak_memory(&CPU);
    assert_eq!(memory_use(&CPU).peak, before);
    Ok(())
}

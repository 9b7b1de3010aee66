//! The GPU allocator's exact byte count and its out-of-memory error.

use super::*;

#[test]
fn the_allocator_counts_exactly_and_out_of_memory_is_a_clear_error() {
    let Some((dev, _g)) = gpu() else { return };
    let before = device::memory_allocated(&dev).expect("a GPU count");
    let x = Tensor::zeros_on(&[32, 32], DType::F32, &dev).unwrap();
    let y = Tensor::ones(&[100, 3], DType::BF16).unwrap().to_device(&dev).unwrap();
    assert_eq!(
        device::memory_allocated(&dev).unwrap() - before,
        32 * 32 * 4 + 100 * 3 * 2
    );
    let view = x.t().unwrap();
    assert_eq!(
        device::memory_allocated(&dev).unwrap() - before,
        32 * 32 * 4 + 600,
        "a view allocates nothing"
    );
    drop((x, y));
    assert_eq!(
        device::memory_allocated(&dev).unwrap() - before,
        32 * 32 * 4,
        "the view keeps its storage alive"
    );
    drop(view);
    assert_eq!(device::memory_allocated(&dev).unwrap(), before);
    // More than this GPU has: the error names what was asked for and what was free.
    let total = dev.memory_bytes().expect("a GPU knows its memory") as usize;
    let huge = (total + (1 << 30)) / 4 * 4;
    match Tensor::zeros_on(&[huge / 4], DType::F32, &dev) {
        Err(Error::CudaOutOfMemory { requested, free, total }) => {
            assert_eq!(requested, huge);
            assert!(free <= total && total > 0, "free {free}, total {total}");
            let msg = Error::CudaOutOfMemory { requested, free, total }.to_string();
            assert!(msg.contains(&huge.to_string()) && msg.contains("free"), "{msg}");
        }
        other => panic!(
            "expected an out-of-memory error, got {:?}",
            other.map(|t| t.shape().to_vec())
        ),
    }
    assert_eq!(
        device::memory_allocated(&dev).unwrap(),
        before,
        "a failed allocation counts nothing"
    );
}

/// The pool's high-water mark, to exact counts: two tensors made one after the other peak at the
/// larger, made together at their sum, and `max_memory` reads a closure's own mark.
#[test]
fn the_allocator_keeps_its_high_water_mark() {
    let Some((dev, _g)) = gpu() else { return };
    let ((), apart) = device::max_memory(&dev, || {
        drop(Tensor::zeros_on(&[1000], DType::F32, &dev)?);
        drop(Tensor::zeros_on(&[500], DType::F32, &dev)?);
        Ok(())
    })
    .unwrap();
    assert_eq!(apart.added(), 4000);
    let (kept, together) = device::max_memory(&dev, || {
        let a = Tensor::zeros_on(&[1000], DType::F32, &dev)?;
        let b = Tensor::zeros_on(&[500], DType::BF16, &dev)?;
        drop(a);
        Ok(b)
    })
    .unwrap();
    assert_eq!(together.added(), 4000 + 1000);
    assert_eq!(device::memory_use(&dev).allocated - together.before, 1000);
    drop(kept);
    device::reset_peak_memory(&dev);
    let now = device::memory_use(&dev);
    assert_eq!(now.peak, now.allocated, "a reset starts the mark at what is live");
}

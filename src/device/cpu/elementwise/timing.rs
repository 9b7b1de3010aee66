//! Timings, not tests (`cargo test --release --lib elementwise::timing -- --ignored --nocapture`):
//! GB/s of the old scalar loops and the new ones against a copy of the same bytes on one and two
//! threads, and one thread against two around `PARALLEL_MIN`. Nothing here asserts a time.

use std::hint::black_box;
use std::time::Instant;

use half::bf16;

use super::kernels::{self, PARALLEL_MIN, fill_fresh};
use super::*;
use crate::base::{DType, Layout, ReduceOp};
use crate::device::cpu::team::Split;
use crate::device::cpu::{BufferElement, reduce_in_order};
use crate::tensor::Tensor;

fn median_secs(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut t: Vec<f64> = (0..reps)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[reps / 2]
}

fn one_thread<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a pool")
        .install(f)
}

fn copy2<T: Copy + Send + Sync>(x: &[T]) -> Vec<T> {
    let split = Split {
        parallel_min: 1 << 16,
        chunk: 1 << 14,
    };
    fill_fresh(x.len(), split, &|r, part| {
        for (d, s) in part.iter_mut().zip(&x[r]) {
            d.write(*s);
        }
    })
}

fn row<T: BufferElement + Lane>(n: usize) {
    let level = Level::current().expect("a level");
    let reps = if n > 1 << 22 { 5 } else { 40 };
    let a: Vec<T> = (0..n).map(|i| T::from_f32((i % 1000) as f32 * 0.001 - 0.3)).collect();
    let b: Vec<T> = (0..n).map(|i| T::from_f32((i % 777) as f32 * 0.002 + 0.1)).collect();
    let s = std::mem::size_of::<T>() as f64 * n as f64;
    let gbs = |bytes: f64, secs: f64| format!("{:6.2}", bytes / secs / 1e9);
    let copy1 = median_secs(reps, || drop(black_box(a.to_vec())));
    let copy2 = median_secs(reps, || drop(black_box(copy2(&a))));
    let sq = UnaryOp::Square;
    let ms = UnaryOp::MulScalar(0.5);
    let old_sq = median_secs(reps, || {
        drop(black_box(
            a.iter()
                .map(|&x| T::from_f32(sq.apply_f32(x.to_f32())))
                .collect::<Vec<T>>(),
        ))
    });
    let new_sq = median_secs(reps, || drop(black_box(unary(sq, level, &a))));
    let old_ms = median_secs(reps, || {
        drop(black_box(
            a.iter()
                .map(|&x| T::from_f32(ms.apply_f32(x.to_f32())))
                .collect::<Vec<T>>(),
        ))
    });
    let new_ms = median_secs(reps, || drop(black_box(unary(ms, level, &a))));
    let old_add = median_secs(reps, || {
        drop(black_box(
            a.iter()
                .zip(&b)
                .map(|(&x, &y)| T::from_f32(BinaryOp::Add.apply_f32(x.to_f32(), y.to_f32())))
                .collect::<Vec<T>>(),
        ))
    });
    let new_add = median_secs(reps, || drop(black_box(binary(BinaryOp::Add, level, &a, &b))));
    let buf = T::wrap(a.clone());
    let walk = Layout::contiguous(&[n]);
    let old_sum = median_secs(reps, || {
        drop(black_box(reduce_in_order(ReduceOp::Sum, &buf, &walk, n, 1)))
    });
    let new_sum = median_secs(reps, || drop(black_box(reduce_runs(ReduceOp::Sum, level, &a, n))));
    let new_max = median_secs(reps, || drop(black_box(reduce_runs(ReduceOp::Max, level, &a, n))));
    println!(
        "{:?} n={n:>9}: copy 1t {} 2t {} | square {} -> {} | mul_scalar {} -> {} | add {} -> {} | sum {} -> {} | max {}",
        T::DTYPE,
        gbs(2.0 * s, copy1),
        gbs(2.0 * s, copy2),
        gbs(2.0 * s, old_sq),
        gbs(2.0 * s, new_sq),
        gbs(2.0 * s, old_ms),
        gbs(2.0 * s, new_ms),
        gbs(3.0 * s, old_add),
        gbs(3.0 * s, new_add),
        gbs(s, old_sum),
        gbs(s, new_sum),
        gbs(s, new_max),
    );
}

#[test]
#[ignore = "a timing, run by hand"]
fn elementwise_speed() {
    for n in [1 << 20, 1 << 26] {
        row::<f32>(n);
        row::<bf16>(n);
    }
}

/// One thread against two for sizes around the threshold.
#[test]
#[ignore = "a timing, run by hand"]
fn elementwise_threshold() {
    let level = Level::current().expect("a level");
    println!("PARALLEL_MIN = {PARALLEL_MIN}");
    for shift in 12..=20 {
        let n = 1usize << shift;
        let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let h: Vec<bf16> = a.iter().map(|&x| bf16::from_f32(x)).collect();
        let reps = 400;
        // The real loops with a threshold of 0 (always split) against one thread.
        let split = Split {
            parallel_min: 0,
            chunk: kernels::SPLIT.chunk,
        };
        let add2 = median_secs(reps, || {
            drop(black_box(binary_split(BinaryOp::Add, level, split, &a, &a)))
        });
        let add1 = one_thread(|| median_secs(reps, || drop(black_box(binary(BinaryOp::Add, level, &a, &a)))));
        let sq2 = median_secs(reps, || drop(black_box(unary_split(UnaryOp::Square, level, split, &h))));
        let sq1 = one_thread(|| median_secs(reps, || drop(black_box(unary(UnaryOp::Square, level, &h)))));
        println!(
            "n=2^{shift}: add f32 1t {:7.1} µs 2t {:7.1} µs | square bf16 1t {:7.1} µs 2t {:7.1} µs",
            add1 * 1e6,
            add2 * 1e6,
            sq1 * 1e6,
            sq2 * 1e6
        );
    }
}

/// Dot products and matrix-vector products through `Tensor::matmul`.
#[test]
#[ignore = "a timing, run by hand"]
fn dot_and_matvec_speed() {
    for dtype in [DType::F32, DType::BF16] {
        let s = dtype.size_in_bytes() as f64;
        let n = 1 << 20;
        let x = Tensor::full(&[n], 0.5, dtype).expect("x");
        let y = Tensor::full(&[n], 0.25, dtype).expect("y");
        let t = median_secs(40, || drop(black_box(x.matmul(&y).expect("dot"))));
        println!(
            "{dtype:?} dot 1M: {:8.1} µs {:6.2} GB/s",
            t * 1e6,
            2.0 * n as f64 * s / t / 1e9
        );
        for m in [1024, 4096] {
            let a = Tensor::full(&[m, m], 0.5, dtype).expect("a");
            let v = Tensor::full(&[m], 0.25, dtype).expect("v");
            let t = median_secs(20, || drop(black_box(a.matmul(&v).expect("matvec"))));
            println!(
                "{dtype:?} matvec {m}x{m}: {:8.1} µs {:6.2} GB/s",
                t * 1e6,
                (m * m) as f64 * s / t / 1e9
            );
        }
    }
}

/// `matvec` and `dot` straight, against a read of as many bytes (one thread).
#[test]
#[ignore]
fn matvec_speed() {
    let level = Level::current().expect("a level");
    one_thread(|| {
        for n in [64usize, 403, 448, 2048] {
            let a: Vec<f32> = (0..n * n).map(|i| (i % 97) as f32 * 0.01).collect();
            let x: Vec<f32> = (0..n).map(|i| (i % 13) as f32 * 0.1).collect();
            let mv = median_secs(200, || drop(black_box(super::dot::matvec(level, &a, &x, n, |v| v))));
            let rd = median_secs(200, || drop(black_box(reduce_runs(ReduceOp::Sum, level, &a, a.len()))));
            let rows = median_secs(200, || drop(black_box(reduce_runs(ReduceOp::Sum, level, &a, n))));
            println!(
                "n={n}: matvec {:.1} µs, sum_all {:.1} µs, row sums {:.1} µs",
                mv * 1e6,
                rd * 1e6,
                rows * 1e6
            );
        }
    });
}

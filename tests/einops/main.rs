//! einsum / reduce / rearrange and run-time dimension names: results against brute-force
//! references on seeded random tensors, FLOP counts, views vs copies, every error case, and the
//! lecture's einops sections (fresh run and committed traces).

mod dims;
mod einsum;
mod rearrange;
mod reduce;
mod sections;

#[path = "../common/mod.rs"]
mod common;

use std::collections::BTreeMap;

use common::{flat, for_each_trace, num, val};
use cs336::einops::{ReduceOp, einsum, rearrange, reduce, reduce_with};
use cs336::flops::FlopCounter;
use cs336::rng::Rng;
use cs336::tensor::DType;
use cs336::tensor::named::{Dims, NamedTensor};
use cs336::{Error, Result, Tensor};
use proptest::prelude::*;

fn randn(shape: &[usize], seed: u64) -> Tensor {
    Tensor::randn(shape, DType::F32, &mut Rng::seed(seed)).unwrap()
}

fn arange(shape: &[usize]) -> Tensor {
    Tensor::arange(shape.iter().product(), DType::F32)
        .unwrap()
        .view(shape)
        .unwrap()
}

fn values(t: &Tensor) -> Vec<f64> {
    t.to_vec_f64().unwrap()
}

fn assert_close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "lengths differ");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-4 * (1.0 + w.abs()),
            "element {i}: got {g}, want {w}"
        );
    }
}

/// Brute-force einsum: loops over every combination of every axis. Patterns here use plain
/// names (no `...`), split on whitespace, so the reference shares no code with the parser.
fn naive_einsum(pattern: &str, xs: &[&Tensor]) -> (Vec<f64>, Vec<usize>) {
    let (lhs, rhs) = pattern.split_once("->").unwrap();
    let inputs: Vec<Vec<&str>> = lhs.split(',').map(|s| s.split_whitespace().collect()).collect();
    let out: Vec<&str> = rhs.split_whitespace().collect();
    let mut sizes = BTreeMap::new();
    for (names, x) in inputs.iter().zip(xs) {
        for (d, name) in names.iter().enumerate() {
            sizes.insert(*name, x.shape()[d]);
        }
    }
    let axes: Vec<&str> = sizes.keys().copied().collect();
    let data: Vec<Vec<f64>> = xs.iter().map(|x| values(x)).collect();
    let flat = |names: &[&str], at: &BTreeMap<&str, usize>| names.iter().fold(0, |acc, n| acc * sizes[n] + at[n]);
    let out_shape: Vec<usize> = out.iter().map(|n| sizes[n]).collect();
    let mut result = vec![0.0; out_shape.iter().product()];
    let total: usize = axes.iter().map(|a| sizes[a]).product();
    for mut k in 0..total {
        let mut at = BTreeMap::new();
        for a in axes.iter().rev() {
            at.insert(*a, k % sizes[a]);
            k /= sizes[a];
        }
        let product: f64 = inputs.iter().zip(&data).map(|(names, d)| d[flat(names, &at)]).product();
        result[flat(&out, &at)] += product;
    }
    (result, out_shape)
}

/// Asserts a pattern error whose message contains every word of `words`.
#[track_caller]
fn assert_pattern_error<T: std::fmt::Debug>(r: Result<T>, pattern: &str, words: &[&str]) {
    match r {
        Err(Error::Pattern { pattern: p, msg }) => {
            assert_eq!(p, pattern);
            for w in words {
                assert!(msg.contains(w), "message {msg:?} lacks {w:?}");
            }
        }
        other => panic!("expected a pattern error for {pattern:?}, got {other:?}"),
    }
}

/// Every index (i, j, k) of an n0 × n1 × n2 grid, last axis fastest.
fn itertools(n0: usize, n1: usize, n2: usize) -> impl Iterator<Item = (usize, usize, usize)> {
    (0..n0).flat_map(move |i| (0..n1).flat_map(move |j| (0..n2).map(move |k| (i, j, k))))
}

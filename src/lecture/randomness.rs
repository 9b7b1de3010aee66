//! Randomness: a seed per source of randomness, so each result can be reproduced on its own.

use super::SectionCtx;
use super::trainer::bits;
use crate::error::Result;
use crate::rng::Rng;
use crate::tensor::{DType, Tensor};
use crate::trace::Unit;

/// Every source of randomness gets its own seed, so results can be reproduced one by one.
pub fn note_about_randomness(cx: &mut SectionCtx) -> Result<()> {
    let seed = 0;
    let x = Tensor::randn(&[4, 4], DType::F32, &mut Rng::seed(seed))?;
    let x_again = Tensor::randn(&[4, 4], DType::F32, &mut Rng::seed(seed))?;
    let x_other = Tensor::randn(&[4, 4], DType::F32, &mut Rng::seed(seed + 1))?;
    cx.record_tensor("x_seed_0", &x)?;
    cx.record_tensor("x_seed_1", &x_other)?;
    cx.record("same_seed_bit_identical", bits(&x)? == bits(&x_again)?, Unit::None)?;
    cx.record("different_seed_identical", bits(&x)? == bits(&x_other)?, Unit::None)?;

    // One stream shared by initialisation and data: drawing one more batch first changes the
    // initial weights. Separate streams (forked from one seed) keep them apart.
    let mut shared = Rng::seed(seed);
    let w = Tensor::randn(&[4], DType::F32, &mut shared)?;
    let mut shared = Rng::seed(seed);
    let _batch = Tensor::randn(&[4], DType::F32, &mut shared)?;
    let w_after_batch = Tensor::randn(&[4], DType::F32, &mut shared)?;
    cx.record(
        "shared_stream_init_unchanged",
        bits(&w)? == bits(&w_after_batch)?,
        Unit::None,
    )?;
    let streams = |seed: u64| {
        let mut root = Rng::seed(seed);
        (root.fork(), root.fork()) // (initialisation, data)
    };
    let (mut init_rng, _) = streams(seed);
    let w = Tensor::randn(&[4], DType::F32, &mut init_rng)?;
    let (mut init_rng, mut data_rng) = streams(seed);
    let _batch = Tensor::randn(&[4], DType::F32, &mut data_rng)?;
    let w_after_batch = Tensor::randn(&[4], DType::F32, &mut init_rng)?;
    cx.record(
        "separate_streams_init_unchanged",
        bits(&w)? == bits(&w_after_batch)?,
        Unit::None,
    )?;
    Ok(())
}

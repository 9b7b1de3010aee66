//! Randomness: a seed per source of randomness, so each result can be reproduced on its own.

use crate::error::Result;
use crate::lecture::trainer::bits;
use crate::lecture::{SectionCtx, check, record};
use crate::rng::Rng;
use crate::tensor::{DType, Tensor};

/// Every source of randomness gets its own seed, so results can be reproduced one by one.
pub fn note_about_randomness(cx: &mut SectionCtx) -> Result<()> {
    let seed = 0;
    let x = Tensor::randn(&[4, 4], DType::F32, &mut Rng::seed(seed))?;
    let x_again = Tensor::randn(&[4, 4], DType::F32, &mut Rng::seed(seed))?;
    let x_other = Tensor::randn(&[4, 4], DType::F32, &mut Rng::seed(seed + 1))?;
    record!(cx, computed x_seed_0 = &x)?;
    record!(cx, computed x_seed_1 = &x_other)?;
    let same_seed_bit_identical = bits(&x)? == bits(&x_again)?;
    record!(cx, computed same_seed_bit_identical)?;
    check!(cx, same_seed_same_draw: same_seed_bit_identical)?;
    let different_seed_identical = bits(&x)? == bits(&x_other)?;
    record!(cx, computed different_seed_identical)?;
    check!(cx, other_seed_other_draw: !different_seed_identical)?;

    // One stream shared by initialisation and data: drawing one more batch first changes the
    // initial weights. Separate streams (forked from one seed) keep them apart.
    let mut shared = Rng::seed(seed);
    let w = Tensor::randn(&[4], DType::F32, &mut shared)?;
    let mut shared = Rng::seed(seed);
    let _batch = Tensor::randn(&[4], DType::F32, &mut shared)?;
    let w_after_batch = Tensor::randn(&[4], DType::F32, &mut shared)?;
    let shared_stream_init_unchanged = bits(&w)? == bits(&w_after_batch)?;
    record!(cx, computed shared_stream_init_unchanged)?;
    check!(cx, shared_stream_moves_init: !shared_stream_init_unchanged)?;
    let streams = |seed: u64| {
        let mut root = Rng::seed(seed);
        (root.fork(), root.fork()) // (initialisation, data)
    };
    let (mut init_rng, _) = streams(seed);
    let w = Tensor::randn(&[4], DType::F32, &mut init_rng)?;
    let (mut init_rng, mut data_rng) = streams(seed);
    let _batch = Tensor::randn(&[4], DType::F32, &mut data_rng)?;
    let w_after_batch = Tensor::randn(&[4], DType::F32, &mut init_rng)?;
    let separate_streams_init_unchanged = bits(&w)? == bits(&w_after_batch)?;
    record!(cx, computed separate_streams_init_unchanged)?;
    check!(cx, own_stream_keeps_init: separate_streams_init_unchanged)?;
    Ok(())
}

//! Seeded randomness. Every random tensor in the lecture comes from an `Rng` built from an explicit
//! seed, so the same seed gives bit-identical values on every machine (ChaCha8 is a portable,
//! specified generator; the normal sampler is `rand_distr`'s, pinned by Cargo.lock).

use rand::{Rng as _, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

#[derive(Debug, Clone)]
pub struct Rng {
    inner: ChaCha8Rng,
}

impl Rng {
    pub fn seed(seed: u64) -> Rng {
        Rng {
            inner: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// A standard normal sample.
    pub fn normal(&mut self) -> f64 {
        StandardNormal.sample(&mut self.inner)
    }

    /// Uniform on [0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.inner.random::<f64>()
    }

    /// Uniform integer in [0, n).
    pub fn below(&mut self, n: usize) -> usize {
        self.inner.random_range(0..n.max(1))
    }

    /// 64 uniformly random bits (a seed for a generator elsewhere, such as on a GPU).
    pub fn next_u64(&mut self) -> u64 {
        self.inner.random::<u64>()
    }

    /// A new independent stream derived from this one (one per source of randomness).
    pub fn fork(&mut self) -> Rng {
        Rng {
            inner: ChaCha8Rng::seed_from_u64(self.inner.random::<u64>()),
        }
    }
}

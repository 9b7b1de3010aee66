//! Benchmarks that print ratios against a reference measured in the same run (never absolute
//! thresholds: machines differ); none of this is a test. Driven by `src/bin/bench.rs`:
//! `matmul-overhead`, `cpu-matmul`, `elementwise` and `train-step`; and `src/bin/cuda_bench.rs`'s GPU measurements.
//! All of them time through `crate::timing`.

pub mod cpu_matmul;
pub mod cuda;
pub mod elementwise;
pub mod elementwise_report;
pub mod overhead;
pub mod reference;
pub mod train_step;
pub mod train_step_cost;

/// A matrix product m×k · k×n.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub m: usize,
    pub k: usize,
    pub n: usize,
}

impl Shape {
    pub const fn new(m: usize, k: usize, n: usize) -> Shape {
        Shape { m, k, n }
    }

    /// 2·m·n·k: one multiply and one add per term.
    pub fn flop(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// "M×K×N" (or with `x`): the product of an M×K matrix by a K×N one, every size at least 1.
    pub fn parse(text: &str) -> Result<Shape, String> {
        let sizes: Vec<&str> = text.split(['x', '×']).collect();
        // Each size read on its own, so the message names the one that is wrong.
        let size = |name: &str, s: &str| {
            s.trim().parse::<usize>().ok().filter(|&v| v > 0).ok_or_else(|| {
                format!(
                    "{text:?}: {name} is {:?}, but each size must be a whole number of at least 1",
                    s.trim()
                )
            })
        };
        match sizes.as_slice() {
            [m, k, n] => Ok(Shape {
                m: size("M (the first size)", m)?,
                k: size("K (the second size)", k)?,
                n: size("N (the third size)", n)?,
            }),
            _ => Err(format!("{text:?}: give three sizes, M×K×N (or MxKxN)")),
        }
    }

    /// Bytes a timing of this product holds at once: both operands in float32 and in bfloat16, and
    /// a product of each.
    pub fn bytes_held(&self) -> u128 {
        let (m, k, n) = (self.m as u128, self.k as u128, self.n as u128);
        (4 + 2) * (m * k + k * n) + (4 + 2) * m * n
    }

    pub fn label(&self) -> String {
        if self.m == self.k && self.k == self.n {
            format!("{}³", self.m)
        } else {
            format!("{}×{}·{}×{}", self.m, self.k, self.k, self.n)
        }
    }
}

/// The sizes both benchmarks use: square products up to 2048 and the lecture's 1024×256·256×64.
pub const SHAPES: [Shape; 5] = [
    Shape::new(256, 256, 256),
    Shape::new(512, 512, 512),
    Shape::new(1024, 1024, 1024),
    Shape::new(2048, 2048, 2048),
    Shape::new(1024, 256, 64),
];

/// Makes rayon's global pool (used by `gemm` and the bf16 kernel) exactly `threads` wide, so every
/// library in a comparison runs on the same number of threads.
pub fn set_threads(threads: usize) -> anyhow::Result<()> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build_global()
        .map_err(|e| anyhow::anyhow!("cannot size rayon's thread pool to {threads}: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Shape;

    #[test]
    fn shapes_parse_and_bad_ones_say_why() {
        assert_eq!(Shape::parse("2048x1024x64"), Ok(Shape::new(2048, 1024, 64)));
        assert_eq!(Shape::parse("256×256×256"), Ok(Shape::new(256, 256, 256)));
        for (bad, why) in [
            ("0x2x2", "M (the first size) is \"0\""),
            ("2x2", "three sizes"),
            (
                "2xtwox2",
                "K (the second size) is \"two\", but each size must be a whole number",
            ),
            ("1x1x-1", "N (the third size) is \"-1\""),
            ("", "three sizes"),
        ] {
            let err = Shape::parse(bad).expect_err(bad);
            assert!(err.contains(why), "{bad}: {err}");
        }
    }
}

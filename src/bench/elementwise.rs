//! `bench elementwise`: the memory-bound half of arithmetic intensity. Our elementwise ops,
//! reductions, dot and matrix-vector products (through the public `Tensor` API, so the bench
//! measures whatever the library does) at sizes that fit in L2, in the last-level cache and far
//! beyond it, in GB/s; beside a bandwidth reference measured the same way (a copy into a fresh
//! tensor, or a read), and against PyTorch and numpy timed in the same run, taking turns.
//! The table and its JSON are in `elementwise_report.rs`.

use std::cell::RefCell;

use super::reference::Server;
use crate::flops::FlopCounter;
use crate::host::Caches;
use crate::rng::Rng;
use crate::tensor::{DType, Tensor};
use crate::timing::{Budget, Clock, Contender, RatioInterval, Timing, contender, in_turns_sampled};

/// The ops timed, in table order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Op {
    Relu,
    Gelu,
    Add,
    Mul,
    Sum,
    Dot,
    Matvec,
}

pub const OPS: [Op; 7] = [Op::Relu, Op::Gelu, Op::Add, Op::Mul, Op::Sum, Op::Dot, Op::Matvec];

/// The dtypes timed, in table order.
pub const DTYPES: [DType; 2] = [DType::F32, DType::BF16];

/// What an op's GB/s is compared with: our own plainest memory traffic at the same size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Baseline {
    /// `deep_clone` of this many elements: a read and a write into a fresh tensor, as an op that
    /// makes a fresh output of that size does (its page faults, where there are any, count on
    /// both sides).
    Copy(usize),
    /// `sum_all` of this many elements: a read and nothing written, as a reduction, a dot or a
    /// matrix-vector product (whose output is a vector beside a matrix) does.
    Read(usize),
}

impl Baseline {
    pub fn kind(self) -> &'static str {
        match self {
            Baseline::Copy(_) => "copy",
            Baseline::Read(_) => "read",
        }
    }

    pub fn elements(self) -> usize {
        match self {
            Baseline::Copy(n) | Baseline::Read(n) => n,
        }
    }

    /// Elements read and written.
    pub fn traffic(self) -> usize {
        match self {
            Baseline::Copy(n) => 2 * n,
            Baseline::Read(n) => n + 1,
        }
    }
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Relu => "relu",
            Op::Gelu => "gelu",
            Op::Add => "add",
            Op::Mul => "mul",
            Op::Sum => "sum",
            Op::Dot => "dot",
            Op::Matvec => "matvec",
        }
    }

    /// Elements read and written at size `n` (a matvec's `n` is the side of its square matrix).
    pub fn inputs_outputs(self, n: usize) -> (usize, usize) {
        match self {
            Op::Relu | Op::Gelu => (n, n),
            Op::Add | Op::Mul => (2 * n, n),
            Op::Sum => (n, 1),
            Op::Dot => (2 * n, 1),
            // Saturating: a bisection over huge sizes must not overflow before it rejects them.
            Op::Matvec => (n.saturating_mul(n).saturating_add(n), n),
        }
    }

    /// Elements the op moves: inputs read plus output written.
    pub fn traffic(self, n: usize) -> usize {
        let (i, o) = self.inputs_outputs(n);
        i.saturating_add(o)
    }

    /// The largest size whose traffic fits in `bytes` (at least 1): traffic grows with the size,
    /// so a bisection finds it for the linear ops and the quadratic matvec alike.
    pub fn size_for(self, bytes: u64, dtype: DType) -> usize {
        let fits = |n: usize| (self.traffic(n) as u64).saturating_mul(dtype.size_in_bytes() as u64) <= bytes;
        let (mut lo, mut hi) = (1usize, (bytes as usize).max(2));
        while lo + 1 < hi {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) { lo = mid } else { hi = mid }
        }
        lo
    }

    pub fn baseline(self, n: usize) -> Baseline {
        let (inputs, outputs) = self.inputs_outputs(n);
        match self {
            Op::Relu | Op::Gelu | Op::Add | Op::Mul => Baseline::Copy(outputs),
            Op::Sum | Op::Dot | Op::Matvec => Baseline::Read(inputs),
        }
    }

    /// The tensors the op takes at size `n`, from fixed random values.
    fn inputs(self, n: usize, dtype: DType) -> crate::Result<Vec<Tensor>> {
        let mut rng = Rng::seed(0);
        let mut random = |shape: &[usize]| Tensor::randn(shape, DType::F32, &mut rng)?.to_dtype(dtype);
        Ok(match self {
            Op::Relu | Op::Gelu | Op::Sum => vec![random(&[n])?],
            Op::Add | Op::Mul | Op::Dot => vec![random(&[n])?, random(&[n])?],
            Op::Matvec => vec![random(&[n, n])?, random(&[n])?],
        })
    }

    /// One call, as a reader would write it: a dot is `matmul` of two vectors, a matvec `matmul`
    /// of a matrix and a vector (PyTorch's rules, which `Tensor::matmul` follows).
    fn apply(self, x: &[Tensor]) -> crate::Result<Tensor> {
        let arg = |i: usize| {
            x.get(i)
                .ok_or_else(|| crate::Error::invalid(self.name(), format!("needs {} inputs", i + 1)))
        };
        match self {
            Op::Relu => arg(0)?.relu(),
            Op::Gelu => arg(0)?.gelu(),
            Op::Add => arg(0)?.add(arg(1)?),
            Op::Mul => arg(0)?.mul(arg(1)?),
            Op::Sum => arg(0)?.sum_all(),
            Op::Dot | Op::Matvec => arg(0)?.matmul(arg(1)?),
        }
    }

    /// Whether `library` (`torch` or `numpy`) has this op at `dtype`: numpy has no bfloat16 and
    /// no GeLU.
    pub fn in_library(self, library: &str, dtype: DType) -> bool {
        match library {
            "torch" => true,
            "numpy" => dtype == DType::F32 && self != Op::Gelu,
            _ => false,
        }
    }
}

/// The two references, in table order: (library, column label).
pub const LIBRARIES: [(&str, &str); 2] = [("torch", "PyTorch"), ("numpy", "numpy")];

/// The levels a working set can land in: each cache, with the largest working set it holds, in
/// order, then main memory ("DRAM").
#[derive(Debug, Clone, PartialEq)]
pub struct Levels {
    pub caches: Vec<(&'static str, u64)>,
    /// Whether they were found on a measured curve (else taken from the OS's sizes).
    pub measured: bool,
}

/// The names a level can have (`Case` is `Copy`, so its level is one of these).
const LEVEL_NAMES: [&str; 10] = [
    "L1d", "L2", "L3", "L4", "cache 1", "cache 2", "cache 3", "cache 4", "cache 5", "DRAM",
];

impl Levels {
    /// Found on this CPU's memory hierarchy, measured on `threads` threads (a few seconds): the
    /// caches as the curve shows them, not as the OS reports them (a VM reports its host's).
    pub fn measure(threads: usize) -> crate::Result<Levels> {
        let hierarchy = crate::device::cpu::hierarchy::Hierarchy::measure_on(threads)?;
        let caches = (hierarchy.levels(true).iter())
            .filter_map(|l| Some((intern(&l.name), l.found.up_to_bytes? as u64)))
            .collect();
        Ok(Levels { caches, measured: true })
    }

    /// From the OS's sizes: half of L2 per core and half of the last level (room for the rest of
    /// the process).
    pub fn from_caches(caches: &Caches) -> Levels {
        Levels {
            caches: vec![("L2", caches.l2_bytes / 2), ("LLC", caches.llc_bytes / 2)],
            measured: false,
        }
    }

    /// Where `bytes` land: the first level that holds them.
    pub fn of(&self, bytes: u64) -> &'static str {
        self.caches
            .iter()
            .find(|(_, holds)| bytes <= *holds)
            .map_or("DRAM", |(name, _)| name)
    }

    /// The standard sizes, as bytes an op moves: one inside each level (half of what it holds),
    /// and main memory at four times the last level (at most
    /// 1 GiB: nothing stays cached, and the run stays short).
    pub fn standard_bytes(&self) -> Vec<u64> {
        let mut sizes: Vec<u64> = self.caches.iter().map(|&(_, holds)| (holds / 2).max(4 << 10)).collect();
        let last = self.caches.last().map_or(64 << 20, |&(_, holds)| holds);
        sizes.push((4 * last).clamp(64 << 20, 1 << 30));
        sizes
    }
}

fn intern(name: &str) -> &'static str {
    LEVEL_NAMES.iter().find(|n| **n == name).copied().unwrap_or("cache")
}

/// One op at one dtype and size.
#[derive(Debug, Clone, Copy)]
pub struct Case {
    pub op: Op,
    pub dtype: DType,
    /// The size: elements of each vector, or the side of a matvec's matrix.
    pub n: usize,
    pub level: &'static str,
}

impl Case {
    pub fn new(op: Op, dtype: DType, target_bytes: u64, levels: &Levels) -> Case {
        let n = op.size_for(target_bytes, dtype);
        let mut case = Case {
            op,
            dtype,
            n,
            level: "",
        };
        case.level = levels.of(case.bytes());
        case
    }

    pub fn bytes(&self) -> u64 {
        (self.op.traffic(self.n) * self.dtype.size_in_bytes()) as u64
    }

    pub fn baseline_bytes(&self) -> u64 {
        (self.op.baseline(self.n).traffic() * self.dtype.size_in_bytes()) as u64
    }
}

pub struct Row {
    pub case: Case,
    /// As the library's FLOP counter counted one call.
    pub flops: u64,
    pub ours: Timing,
    pub baseline: Timing,
    /// PyTorch, numpy (`LIBRARIES`), where measured.
    pub references: [Option<Timing>; 2],
    /// Our speed over PyTorch's and numpy's with its 95 % interval (`timing::RatioInterval`).
    pub intervals: [Option<RatioInterval>; 2],
}

/// A reference library timed by the script: count → seconds of each call.
type Remote<'a> = Box<dyn FnMut(usize) -> anyhow::Result<Vec<f64>> + 'a>;

/// One of ours, timed here by the host clock.
fn ours<'a>(mut f: impl FnMut() -> crate::Result<()> + 'a) -> impl FnMut(usize) -> anyhow::Result<Vec<f64>> + 'a {
    contender(Clock::Host, move || f().map_err(anyhow::Error::from))
}

/// One case: our op, our baseline and each available reference, in turns.
pub fn measure(
    case: Case,
    budget: Budget,
    server: Option<&RefCell<Server>>,
    available: &[bool; 2],
) -> anyhow::Result<Row> {
    let Case { op, dtype, n, .. } = case;
    let inputs = op.inputs(n, dtype)?;
    // One call under the counter: the FLOPs are the library's own count, not a formula retyped.
    let counter = FlopCounter::start();
    op.apply(&inputs)?;
    let flops = counter.finish().total();
    let baseline = op.baseline(n);
    let source = Tensor::randn(&[baseline.elements()], DType::F32, &mut Rng::seed(1))?.to_dtype(dtype)?;
    let mut our_op = ours(|| op.apply(&inputs).map(drop));
    let mut our_baseline = ours(|| {
        match baseline {
            Baseline::Copy(_) => source.deep_clone(),
            Baseline::Read(_) => source.sum_all(),
        }
        .map(drop)
    });
    let mut remote: Vec<Remote<'_>> = Vec::new();
    let mut slots = [None; 2];
    if let Some(server) = server {
        for (i, &(library, _)) in LIBRARIES.iter().enumerate() {
            if available[i] && op.in_library(library, dtype) {
                slots[i] = Some(remote.len() + 2);
                remote.push(Box::new(move |count| {
                    server
                        .borrow_mut()
                        .elementwise(library, dtype.name(), op.name(), n, count)
                }));
            }
        }
    }
    let mut contenders: Vec<Contender<'_, anyhow::Error>> = vec![&mut our_op, &mut our_baseline];
    contenders.extend(remote.iter_mut().map(|f| f.as_mut() as Contender<'_, anyhow::Error>));
    let s = in_turns_sampled(budget, &mut contenders)?;
    Ok(Row {
        case,
        flops,
        ours: s[0].timing,
        baseline: s[1].timing,
        references: slots.map(|slot| slot.map(|i| s[i].timing)),
        intervals: slots.map(|slot| slot.and_then(|i| RatioInterval::of(&s[0].samples, &s[i].samples))),
    })
}

/// Every case in table order: by op, then dtype, then size.
pub fn cases(ops: &[Op], sizes: &[u64], levels: &Levels) -> Vec<Case> {
    let mut out = Vec::new();
    for &op in ops {
        for dtype in DTYPES {
            for &bytes in sizes {
                out.push(Case::new(op, dtype, bytes, levels));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const CACHES: Caches = Caches {
        l1_bytes: None,
        l2_bytes: 1 << 20,
        llc_bytes: 32 << 20,
        llc_level: 3,
    };

    #[test]
    fn sizes_fill_the_target_bytes_without_passing_them() {
        for op in OPS {
            for dtype in DTYPES {
                for bytes in Levels::from_caches(&CACHES).standard_bytes() {
                    let case = Case::new(op, dtype, bytes, &Levels::from_caches(&CACHES));
                    let next = Case { n: case.n + 1, ..case };
                    assert!(
                        case.bytes() <= bytes && next.bytes() > bytes,
                        "{op:?} {dtype:?} {bytes}"
                    );
                }
            }
        }
        // Half of L2 in float32: relu reads and writes 64 Ki elements of 4 bytes each.
        assert_eq!(Op::Relu.size_for(512 << 10, DType::F32), 64 << 10);
        assert_eq!(Op::Add.size_for(3 * 4 * 1000, DType::F32), 1000);
        // A matvec of side 1000 moves 1000² + 2·1000 elements.
        assert_eq!(Op::Matvec.size_for(1_002_000 * 2, DType::BF16), 1000);
        assert_eq!(Op::Sum.size_for(1, DType::F32), 1, "never below one element");
    }

    #[test]
    fn levels_and_baselines() {
        let levels = Levels::from_caches(&CACHES);
        let names: Vec<&str> = levels.standard_bytes().iter().map(|&b| levels.of(b)).collect();
        assert_eq!(names, ["L2", "LLC", "DRAM"]);
        // As a curve found them: one size in each level, memory at four times the last.
        let found = Levels {
            caches: vec![("L1d", 64 << 10), ("L2", 2 << 20), ("cache 3", 64 << 20)],
            measured: true,
        };
        assert_eq!(found.standard_bytes(), [32 << 10, 1 << 20, 32 << 20, 256 << 20]);
        let names: Vec<&str> = found.standard_bytes().iter().map(|&b| found.of(b)).collect();
        assert_eq!(names, ["L1d", "L2", "cache 3", "DRAM"]);
        assert_eq!(intern("cache 9"), "cache");
        assert_eq!(Op::Add.baseline(10), Baseline::Copy(10));
        assert_eq!(Op::Dot.baseline(10), Baseline::Read(20));
        assert_eq!(Op::Matvec.baseline(10), Baseline::Read(110));
        assert_eq!(Baseline::Copy(10).traffic(), 20);
        assert!(!Op::Gelu.in_library("numpy", DType::F32));
        assert!(!Op::Relu.in_library("numpy", DType::BF16));
        assert!(Op::Gelu.in_library("torch", DType::BF16));
    }

    #[test]
    fn each_op_runs_and_the_counter_counts_the_lecture_flops() {
        for (op, n, flops) in [
            (Op::Relu, 8, 8),
            (Op::Gelu, 8, 160),
            (Op::Add, 8, 8),
            (Op::Mul, 8, 8),
            (Op::Sum, 8, 8),
            (Op::Dot, 8, 16),
            (Op::Matvec, 8, 128),
        ] {
            let x = op.inputs(n, DType::BF16).expect("inputs");
            let counter = FlopCounter::start();
            let out = op.apply(&x).expect("runs");
            assert_eq!(counter.finish().total(), flops, "{op:?}");
            let (_, outputs) = op.inputs_outputs(n);
            assert_eq!(out.numel(), outputs, "{op:?}");
        }
    }
}

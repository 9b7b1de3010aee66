//! Which kernel a bf16 matmul takes on this CPU, decided by measurement.
//!
//! A bf16 dot-product unit is not always the faster one. On some CPUs (an Intel Xeon with
//! AVX512_BF16 but no AMX, measured) `vdpbf16ps` issues at a quarter of the float32 FMA's rate,
//! so its 32 multiply-adds per instruction come to half the float32 rate: widening bf16 to
//! float32 (exact) inside the packing and running the float32 kernel is faster, and computes the
//! same products. So the fastest kernel the instruction-set level allows is only a candidate: its
//! peak loop and the float32 kernel's are each timed briefly on one core, once per process, and
//! the faster unit does the work.

use std::sync::Mutex;
use std::time::Instant;

use super::Bf16Kernel;
use crate::device::cpu::fma_loops::{PeakLoop, thread_cpu_time};
use crate::device::cpu::isa::{self, CpuIsa};

/// The kernel bf16 matmuls take, and the sentence that says why.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub kernel: Bf16Kernel,
    pub reason: String,
}

/// Where the dot-product unit's per-core rate must reach the float32 FMA's for the unit to be
/// taken: at the same peak, widening costs a few percent and the unit saves them, so a tie goes
/// to the unit.
const UNIT_WINS_AT: f64 = 1.0;

/// The route at `level`, decided once per process and level.
pub fn at(level: CpuIsa) -> Route {
    with_route(level, Route::clone)
}

/// The kernel of the route at `level`, without copying its reason (every bf16 product asks).
pub fn kernel_at(level: CpuIsa) -> Bf16Kernel {
    with_route(level, |r| r.kernel)
}

fn with_route<R>(level: CpuIsa, f: impl FnOnce(&Route) -> R) -> R {
    static ROUTES: Mutex<Vec<(CpuIsa, Route)>> = Mutex::new(Vec::new());
    let mut routes = ROUTES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, route)) = routes.iter().find(|(l, _)| *l == level) {
        return f(route);
    }
    let route = choose(level);
    let out = f(&route);
    routes.push((level, route));
    out
}

/// The route for the fastest kernel `level` allows on this CPU.
fn choose(level: CpuIsa) -> Route {
    let candidate = Bf16Kernel::best_within(level);
    let unit = match candidate {
        Bf16Kernel::PortableF32 => {
            return Route {
                kernel: candidate,
                reason: format!(
                    "no bfloat16 dot-product instruction at the {level} level, so bfloat16 is widened to float32 and multiplied on the float32 units"
                ),
            };
        }
        Bf16Kernel::Avx512Bf16 => PeakLoop::Avx512Bf16,
        Bf16Kernel::Amx => PeakLoop::AmxBf16,
    };
    let fma = isa::f32_matmul_isa();
    decide(candidate, (unit, per_core_rate(unit)), (fma, per_core_rate(fma)))
}

/// The route, given the candidate kernel, its unit's loop and the float32 kernel's loop with the
/// rates each ran at on one core (None: not timed).
fn decide(candidate: Bf16Kernel, unit: (PeakLoop, Option<f64>), fma: (PeakLoop, Option<f64>)) -> Route {
    let ((unit, unit_rate), (fma, fma_rate)) = (unit, fma);
    let (Some(unit_rate), Some(fma_rate)) = (unit_rate, fma_rate) else {
        return Route {
            kernel: candidate,
            reason: format!(
                "the {} loop or the {} loop could not be timed, so the {} kernel, the fastest this CPU offers, is kept",
                unit.name(),
                fma.name(),
                candidate.name()
            ),
        };
    };
    let (kernel, compared, so) = if unit_rate >= UNIT_WINS_AT * fma_rate {
        (candidate, "no slower than", "bfloat16 multiplies on its own unit")
    } else {
        (
            Bf16Kernel::PortableF32,
            "below",
            "bfloat16 is widened to float32 and multiplied on the float32 units",
        )
    };
    Route {
        kernel,
        reason: format!(
            "on one core the {} loop ran at {:.1} GFLOP/s, {compared} the float32 {} loop's {:.1}, so {so}",
            unit.name(),
            unit_rate / 1e9,
            fma.name(),
            fma_rate / 1e9
        ),
    }
}

/// FLOP/s of `peak_loop` on one core: the best of a few short trials, each about a millisecond,
/// timed once per process (a route must not change between two products of one run). None
/// where this CPU cannot run the loop.
fn per_core_rate(peak_loop: PeakLoop) -> Option<f64> {
    static RATES: Mutex<Vec<(PeakLoop, Option<f64>)>> = Mutex::new(Vec::new());
    let mut rates = RATES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, rate)) = rates.iter().find(|(l, _)| *l == peak_loop) {
        return *rate;
    }
    let rate = time_one_core(peak_loop);
    rates.push((peak_loop, rate));
    rate
}

fn time_one_core(peak_loop: PeakLoop) -> Option<f64> {
    let kernel = peak_loop.kernel()?;
    let flop_per_round = peak_loop.flop_per_round() as f64;
    // Each trial by this thread's CPU time where the OS reports it: in a busy process (tests run
    // side by side) time sliced away does not count against the loop.
    let trial = |iters: u64| {
        let (wall, cpu) = (Instant::now(), thread_cpu_time());
        std::hint::black_box(kernel(std::hint::black_box(iters)));
        let took = match (cpu, thread_cpu_time()) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => wall.elapsed(),
        };
        took.as_secs_f64().max(1e-9)
    };
    // Size a trial to about a millisecond, then keep the best of several: a short calibration
    // is enough to tell units apart that differ by a factor, and its cost is paid per process.
    let probe = 2_000;
    let iters = ((1e-3 / trial(probe)) * probe as f64).clamp(100.0, 1e7) as u64;
    let best = (0..7).map(|_| trial(iters)).fold(f64::INFINITY, f64::min);
    let rate = iters as f64 * flop_per_round / best;
    (rate.is_finite() && rate > 0.0).then_some(rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNIT: PeakLoop = PeakLoop::Avx512Bf16;
    const FMA: PeakLoop = PeakLoop::Avx512Fma;

    #[test]
    fn the_faster_unit_does_the_work() {
        // Measured on an Intel Xeon without AMX: the dot-product unit at half the FMA's rate.
        let slow = decide(Bf16Kernel::Avx512Bf16, (UNIT, Some(89e9)), (FMA, Some(178e9)));
        assert_eq!(slow.kernel, Bf16Kernel::PortableF32);
        assert!(
            slow.reason
                .contains("89.0 GFLOP/s, below the float32 avx512_fma loop's 178.0"),
            "{}",
            slow.reason
        );
        assert!(slow.reason.contains("widened to float32"), "{}", slow.reason);
        // An AMD EPYC's: twice the FMA's rate.
        let fast = decide(Bf16Kernel::Avx512Bf16, (UNIT, Some(234e9)), (FMA, Some(117e9)));
        assert_eq!(fast.kernel, Bf16Kernel::Avx512Bf16);
        assert!(fast.reason.contains("its own unit"), "{}", fast.reason);
        // A tie goes to the unit, which saves the widening.
        let tie = decide(Bf16Kernel::Amx, (PeakLoop::AmxBf16, Some(1e11)), (FMA, Some(1e11)));
        assert_eq!(tie.kernel, Bf16Kernel::Amx);
    }

    #[test]
    fn an_untimed_loop_keeps_the_fastest_kernel_offered() {
        for rates in [(None, Some(1e11)), (Some(1e11), None)] {
            let r = decide(Bf16Kernel::Avx512Bf16, (UNIT, rates.0), (FMA, rates.1));
            assert_eq!(r.kernel, Bf16Kernel::Avx512Bf16);
            assert!(r.reason.contains("could not be timed"), "{}", r.reason);
        }
    }

    #[test]
    fn a_level_without_a_bf16_instruction_widens_and_says_so() {
        let r = choose(CpuIsa::Portable);
        assert_eq!(r.kernel, Bf16Kernel::PortableF32);
        assert!(
            r.reason
                .contains("no bfloat16 dot-product instruction at the portable level"),
            "{}",
            r.reason
        );
    }

    #[test]
    fn a_route_is_decided_once_per_process() {
        let level = isa::current().expect("a level this CPU has");
        let first = at(level);
        assert_eq!(at(level), first, "the reason's rates are the first timing's");
        assert_eq!(kernel_at(level), first.kernel);
        let offered = Bf16Kernel::best_within(level);
        assert!(
            first.kernel == offered || first.kernel == Bf16Kernel::PortableF32,
            "{first:?}"
        );
    }
}

//! Fusion, measured: GeLU as one op, against the same GeLU composed from the primitive ops that
//! PyTorch's naive form writes, `0.5 * x * (1 + erf(x / sqrt(2)))`. Each of the five is a full
//! read and write of the tensor, so the composed form moves 11 tensors' worth of bytes where the
//! fused one moves 2. At a size beyond the last cache, that is what its time should follow.

use serde_json::{Value, json};

use crate::base::math;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::rng::Rng;
use crate::tensor::{DType, Tensor};
use crate::timing::{self, Budget, Clock, Contender, Timing};

/// Tensors read or written per element: the fused op reads `x` and writes `y`; the composed form
/// reads and writes one tensor for each of `0.5 * x`, `x / √2`, `erf`, `1 + …`, and reads two for
/// the last product.
pub const FUSED_TENSORS: usize = 2;
pub const COMPOSED_TENSORS: usize = 2 + 2 + 2 + 2 + 3;
/// Elements of the small sample the two results are compared on (the rounding, not the speed).
const SAMPLE: usize = 1 << 16;

/// PyTorch's naive GeLU in the order Python evaluates it, one op per step, each temporary freed
/// once used; with each step's name and the bytes it read and wrote.
pub fn composed_gelu(x: &Tensor) -> Result<(Tensor, Vec<(&'static str, usize)>)> {
    let mut steps = Vec::with_capacity(5);
    let mut step = |name: &'static str, inputs: &[&Tensor], out: Tensor| {
        steps.push((name, inputs.iter().map(|t| t.nbytes()).sum::<usize>() + out.nbytes()));
        out
    };
    let half_x = step("0.5 * x", &[x], x.mul_scalar(0.5)?);
    let scaled = step("x / sqrt(2)", &[x], x.div_scalar(std::f64::consts::SQRT_2)?);
    let erf = step("erf", &[&scaled], scaled.erf()?);
    drop(scaled);
    let one_plus = step("1 + erf", &[&erf], erf.add_scalar(1.0)?);
    drop(erf);
    let y = step("half_x * (1 + erf)", &[&half_x, &one_plus], half_x.mul(&one_plus)?);
    Ok((y, steps))
}

/// The fused and the composed GeLU on `elements` bf16 values: the bytes each moves (by formula and
/// counted from its tensors), the time each takes, timed in turns, the share each reached of
/// `memory_bytes_per_sec` (the memory's bandwidth at that working set), and how far apart their
/// results are (the composed form rounds to bf16 after each of its steps).
pub fn measure(device: &Device, rng: &mut Rng, elements: usize, memory_bytes_per_sec: f64) -> Result<Value> {
    let dtype = DType::BF16;
    let x = Tensor::randn_on(&[elements], DType::F32, device, rng)?.to_dtype(dtype)?;
    let fused_bytes = x.nbytes() + x.gelu()?.nbytes();
    let (_, steps) = composed_gelu(&x)?;
    let composed_bytes: usize = steps.iter().map(|s| s.1).sum();
    let element_bytes = dtype.size_in_bytes();
    let formula = |tensors: usize| tensors * elements * element_bytes;
    if (fused_bytes, composed_bytes) != (formula(FUSED_TENSORS), formula(COMPOSED_TENSORS)) {
        return Err(Error::invalid(
            "fusion",
            format!(
                "counted {fused_bytes} and {composed_bytes} bytes, the formula {} and {}",
                formula(FUSED_TENSORS),
                formula(COMPOSED_TENSORS)
            ),
        ));
    }
    let [fused, composed] = time_both(device, &x)?;
    let sample = Tensor::randn_on(&[SAMPLE], DType::F32, device, rng)?.to_dtype(dtype)?;
    let (a, b) = (sample.gelu()?.to_vec_f64()?, composed_gelu(&sample)?.0.to_vec_f64()?);
    let max_abs_difference = a.iter().zip(&b).map(|(p, q)| (p - q).abs()).fold(0.0, f64::max);
    // Each against GeLU computed exactly (in f64) from the same bf16 inputs.
    let exact: Vec<f64> = sample.to_vec_f64()?.into_iter().map(math::exact::gelu).collect();
    let worst = |got: &[f64]| got.iter().zip(&exact).map(|(g, e)| (g - e).abs()).fold(0.0, f64::max);
    let step_times = time_steps(device, &x)?;
    let time_ratio = composed.median_s / fused.median_s;
    // The ratio counts only beyond both timings' spreads.
    let allowance = fused.spread() * composed.spread();
    let side = |bytes: usize, t: &Timing| {
        json!({
            "bytes": bytes, "time_s": t.median_s, "best_time_s": t.min_s,
            "bytes_per_sec": bytes as f64 / t.median_s, "spread": t.to_json(),
            "memory_share": bytes as f64 / t.median_s / memory_bytes_per_sec,
        })
    };
    Ok(json!({
        "dtype": dtype.name(), "elements": elements, "element_bytes": element_bytes,
        "memory_bytes_per_sec": memory_bytes_per_sec,
        "fused": side(fused_bytes, &fused),
        "composed": side(composed_bytes, &composed),
        "steps": steps.iter().zip(&step_times).map(|(&(name, bytes), t)| {
            let mut row = side(bytes, t);
            row["op"] = name.into();
            row
        }).collect::<Vec<_>>(),
        // The one step with GeLU's arithmetic: its share of the composed form's time (each step
        // timed alone) against its share of the bytes. Both forms do that arithmetic once.
        "erf_time_share": step_times[ERF_STEP].median_s / step_times.iter().map(|t| t.median_s).sum::<f64>(),
        "erf_bytes_share": steps[ERF_STEP].1 as f64 / composed_bytes as f64,
        // The fused op against that one step: close to 1 where what fusing removed is the other
        // four steps whole.
        "fused_over_erf_step": fused.median_s / step_times[ERF_STEP].median_s,
        "fused_tensors": FUSED_TENSORS, "composed_tensors": COMPOSED_TENSORS,
        "bytes_ratio": composed_bytes as f64 / fused_bytes as f64,
        "time_ratio": time_ratio, "allowance": allowance,
        "fusing_saved_time": time_ratio > allowance,
        "sample_elements": SAMPLE, "max_abs_difference": max_abs_difference,
        "fused_max_error": worst(&a), "composed_max_error": worst(&b),
    }))
}

/// Where `erf` comes in `composed_gelu`'s steps.
const ERF_STEP: usize = 2;

/// The five steps of `composed_gelu`, each timed alone on inputs made beforehand, in turns.
fn time_steps(device: &Device, x: &Tensor) -> Result<Vec<Timing>> {
    let half_x = x.mul_scalar(0.5)?;
    let scaled = x.div_scalar(std::f64::consts::SQRT_2)?;
    let erf = scaled.erf()?;
    let one_plus = erf.add_scalar(1.0)?;
    let clock = Clock::for_device(device);
    let mut steps: Vec<_> = [
        Box::new(|| x.mul_scalar(0.5)) as Box<dyn Fn() -> Result<Tensor>>,
        Box::new(|| x.div_scalar(std::f64::consts::SQRT_2)),
        Box::new(|| scaled.erf()),
        Box::new(|| erf.add_scalar(1.0)),
        Box::new(|| half_x.mul(&one_plus)),
    ]
    .into_iter()
    .map(|run| timing::contender(clock.clone(), move || run().map(drop)))
    .collect();
    let mut turns: Vec<Contender<'_>> = steps.iter_mut().map(|c| c as Contender<'_>).collect();
    timing::in_turns(Budget::lecture(), &mut turns)
}

/// Both forms in turns, so that a busy moment slows both.
fn time_both(device: &Device, x: &Tensor) -> Result<[Timing; 2]> {
    let clock = Clock::for_device(device);
    let mut fused = timing::contender(clock.clone(), || x.gelu().map(drop));
    let mut composed = timing::contender(clock, || composed_gelu(x).map(drop));
    let mut turns: [Contender<'_>; 2] = [&mut fused, &mut composed];
    let times = timing::in_turns(Budget::lecture(), &mut turns)?;
    <[Timing; 2]>::try_from(times).map_err(|_| Error::invalid("fusion", "timing returned the wrong number of results"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_composed_form_moves_eleven_tensors_and_agrees_with_the_fused_one() {
        let mut rng = Rng::seed(3);
        let x = Tensor::randn_on(&[1000], DType::F32, &Device::Cpu, &mut rng).unwrap();
        let (y, steps) = composed_gelu(&x).unwrap();
        let total: usize = steps.iter().map(|s| s.1).sum();
        assert_eq!(total, COMPOSED_TENSORS * 1000 * 4);
        assert_eq!(steps.len(), 5);
        // In float32 the five roundings stay within a few units of the fused op's.
        let (fused, composed) = (x.gelu().unwrap().to_vec_f64().unwrap(), y.to_vec_f64().unwrap());
        let worst = fused
            .iter()
            .zip(&composed)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(worst < 1e-5, "{worst}");
        assert!(worst > 0.0, "the composed form rounds on its own");
    }

    #[test]
    fn the_record_holds_both_sides_and_their_ratio() {
        let mut rng = Rng::seed(4);
        let v = measure(&Device::Cpu, &mut rng, 4096, 1e10).unwrap();
        assert_eq!(v["fused"]["bytes"], 2 * 4096 * 2);
        assert_eq!(v["composed"]["bytes"], 11 * 4096 * 2);
        assert_eq!(v["bytes_ratio"], 5.5);
        assert_eq!(v["steps"][ERF_STEP]["op"], "erf");
        assert_eq!(v["erf_bytes_share"], 2.0 / 11.0);
        let share = v["erf_time_share"].as_f64().unwrap();
        assert!(share > 0.0 && share < 1.0, "{share}");
        let ratio = v["time_ratio"].as_f64().unwrap();
        let want = v["composed"]["time_s"].as_f64().unwrap() / v["fused"]["time_s"].as_f64().unwrap();
        assert_eq!(ratio, want);
        assert_eq!(v["fusing_saved_time"], ratio > v["allowance"].as_f64().unwrap());
        let share = v["fused"]["bytes_per_sec"].as_f64().unwrap() / 1e10;
        assert_eq!(v["fused"]["memory_share"].as_f64().unwrap(), share);
        // bf16 rounds each step to 8 bits: the two forms differ, by at most a few bf16 steps.
        let diff = v["max_abs_difference"].as_f64().unwrap();
        assert!(diff > 0.0 && diff < 0.1, "{diff}");
        // Rounded once, the fused op is within half a bf16 step of the exact value (2⁻⁸ relative).
        let (fused, composed) = (
            v["fused_max_error"].as_f64().unwrap(),
            v["composed_max_error"].as_f64().unwrap(),
        );
        assert!(fused <= composed, "{fused} {composed}");
    }
}

//! `bench cpu-matmul`: our f32 and bf16 matmul (through `Tensor::matmul`) against numpy f32 and
//! PyTorch f32/bf16, at the same shapes and thread count, in one run, taking turns so every
//! contender sees the same machine; a table of GFLOP/s and our ratio to each.

use crate::outln;
use std::cell::RefCell;

use super::Shape;
use super::reference::{self, Server};
use crate::device::cpu::bf16_matmul_isa;
use crate::rng::Rng;
use crate::tensor::{DType, Tensor};
use crate::timing::{Budget, Clock, Contender, RatioInterval, Timing, contender, geometric_mean, in_turns_sampled};

/// The contenders, in table order: (label, library, dtype); ours first.
const REFERENCES: [(&str, &str, &str); 3] = [
    ("np f32", "numpy", "float32"),
    ("pt f32", "torch", "float32"),
    ("pt bf16", "torch", "bfloat16"),
];

/// A reference library timed by the script: count → seconds of each call.
type Remote<'a> = Box<dyn FnMut(usize) -> anyhow::Result<Vec<f64>> + 'a>;

/// One of ours, timed here by the host clock.
fn ours<'a>(mut f: impl FnMut() -> crate::Result<()> + 'a) -> impl FnMut(usize) -> anyhow::Result<Vec<f64>> + 'a {
    contender(Clock::Host, move || f().map_err(anyhow::Error::from))
}

pub struct Row {
    pub shape: Shape,
    pub ours_f32: Timing,
    pub ours_bf16: Timing,
    /// numpy f32, PyTorch f32, PyTorch bf16, where measured.
    pub references: [Option<Timing>; 3],
    /// f32 over numpy, f32 over PyTorch, bf16 over PyTorch's bf16 and our bf16 over our f32, each
    /// with its 95 % interval (`timing::RatioInterval`), where both were timed.
    pub intervals: [Option<RatioInterval>; 4],
}

/// The ratio columns: label, our contender (0: f32, 1: bf16) and theirs (an index into the
/// samples: 0–1 ours, 2… the references in `REFERENCES` order).
const RATIOS: [(&str, usize, Theirs); 4] = [
    ("f32/np", 0, Theirs::Reference(0)),
    ("f32/pt", 0, Theirs::Reference(1)),
    ("bf16/pt", 1, Theirs::Reference(2)),
    ("bf16/f32", 1, Theirs::Ours(0)),
];

/// What a ratio column divides by.
#[derive(Clone, Copy)]
enum Theirs {
    Reference(usize),
    Ours(usize),
}

/// One shape: our two products of the same random values and each available reference.
pub fn measure(
    shape: Shape,
    budget: Budget,
    server: Option<&RefCell<Server>>,
    available: &[bool; 3],
) -> anyhow::Result<Row> {
    let mut rng = Rng::seed(0);
    let a = Tensor::randn(&[shape.m, shape.k], DType::F32, &mut rng)?;
    let b = Tensor::randn(&[shape.k, shape.n], DType::F32, &mut rng)?;
    let (ha, hb) = (a.to_dtype(DType::BF16)?, b.to_dtype(DType::BF16)?);
    let mut f32_mm = ours(|| a.matmul(&b).map(drop));
    let mut bf16_mm = ours(|| ha.matmul(&hb).map(drop));
    let mut remote: Vec<Remote<'_>> = Vec::new();
    let mut slots = [None; 3];
    if let Some(server) = server {
        for (i, &(_, library, dtype)) in REFERENCES.iter().enumerate() {
            if available[i] {
                slots[i] = Some(remote.len() + 2);
                remote.push(Box::new(move |count| {
                    server.borrow_mut().time(library, dtype, shape, count)
                }));
            }
        }
    }
    let mut contenders: Vec<Contender<'_, anyhow::Error>> = vec![&mut f32_mm, &mut bf16_mm];
    contenders.extend(remote.iter_mut().map(|f| f.as_mut() as Contender<'_, anyhow::Error>));
    let s = in_turns_sampled(budget, &mut contenders)?;
    let intervals = RATIOS.map(|(_, ours, theirs)| {
        let theirs = match theirs {
            Theirs::Reference(r) => slots[r]?,
            Theirs::Ours(i) => i,
        };
        RatioInterval::of(&s[ours].samples, &s[theirs].samples)
    });
    Ok(Row {
        shape,
        ours_f32: s[0].timing,
        ours_bf16: s[1].timing,
        references: slots.map(|slot| slot.map(|i| s[i].timing)),
        intervals,
    })
}

fn cell(x: Option<f64>, precision: usize, suffix: &str) -> String {
    match x {
        Some(v) => format!("{:>9}", format!("{v:.precision$}{suffix}")),
        None => format!("{:>9}", "—"),
    }
}

pub fn print_table(rows: &[Row]) -> anyhow::Result<()> {
    outln!(
        "{:<15} {:>9} {:>9} {:>9} {:>9} {:>9} │ {:>22} {:>22} {:>22} {:>22}",
        "GFLOP/s",
        "our f32",
        "our bf16",
        REFERENCES[0].0,
        REFERENCES[1].0,
        REFERENCES[2].0,
        RATIOS[0].0,
        RATIOS[1].0,
        RATIOS[2].0,
        RATIOS[3].0,
    )?;
    for r in rows {
        let gf = |s: Option<Timing>| s.map(|s| r.shape.flop() / s.median_s / 1e9);
        let [np32, pt32, pt16] = r.references;
        // Ours against ours (bf16/f32): a ratio below one there is the units', not a miss.
        let ratio = |i: usize| match r.intervals[i] {
            Some(x) if matches!(RATIOS[i].2, Theirs::Ours(_)) => {
                format!("{:.2}× [{:.2}–{:.2}]", x.ratio, x.low, x.high)
            }
            Some(x) => x.label(),
            None => "—".to_string(),
        };
        outln!(
            "{:<15} {} {} {} {} {} │ {:>22} {:>22} {:>22} {:>22}",
            r.shape.label(),
            cell(gf(Some(r.ours_f32)), 1, ""),
            cell(gf(Some(r.ours_bf16)), 1, ""),
            cell(gf(np32), 1, ""),
            cell(gf(pt32), 1, ""),
            cell(gf(pt16), 1, ""),
            ratio(0),
            ratio(1),
            ratio(2),
            ratio(3),
        )?;
    }
    // Against each reference (not ours against ours), how the shapes fare together.
    for (i, (label, ..)) in RATIOS
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r.2, Theirs::Reference(_)))
    {
        let ratios: Vec<RatioInterval> = rows.iter().filter_map(|r| r.intervals[i]).collect();
        if let Some(mean) = geometric_mean(ratios.iter().map(|x| x.ratio)) {
            let misses: Vec<String> = rows
                .iter()
                .filter(|r| r.intervals[i].is_some_and(|x| x.misses()))
                .map(|r| r.shape.label())
                .collect();
            outln!(
                "{label}: geometric mean {mean:.2}× over {} shapes; {}",
                ratios.len(),
                super::elementwise_report::misses_line(&misses)
            )?;
        }
    }
    let counts: Vec<usize> = rows
        .iter()
        .flat_map(|r| {
            [Some(r.ours_f32), Some(r.ours_bf16)]
                .into_iter()
                .chain(r.references)
                .flatten()
                .map(|s| s.reps)
        })
        .collect();
    outln!(
        "\nnp = numpy, pt = PyTorch. A ratio is our speed over theirs (> 1: we are faster), from medians, with its 95 % interval \
         (a bootstrap of the medians' ratio); a shape misses (marked !) only when its whole interval lies below 1. bf16/f32 is our bf16 \
         over our f32.\nsamples per entry: {}–{}",
        counts.iter().min().unwrap_or(&0),
        counts.iter().max().unwrap_or(&0)
    )?;
    Ok(())
}

/// The table as JSON: per shape, each contender's timing (seconds) and GFLOP/s.
pub fn rows_json(rows: &[Row], threads: usize) -> serde_json::Value {
    let entry = |shape: Shape, t: Option<Timing>| {
        t.map(|t| serde_json::json!({"timing": t, "gflop_per_sec": shape.flop() / t.median_s / 1e9}))
    };
    let rows: Vec<_> = rows
        .iter()
        .map(|r| {
            let mut o = serde_json::json!({
                "shape": r.shape.label(), "m": r.shape.m, "k": r.shape.k, "n": r.shape.n,
                "our f32": entry(r.shape, Some(r.ours_f32)), "our bf16": entry(r.shape, Some(r.ours_bf16)),
            });
            for ((label, _, _), t) in REFERENCES.iter().zip(r.references) {
                o[*label] = entry(r.shape, t).unwrap_or(serde_json::Value::Null);
            }
            o["ratios"] = RATIOS
                .iter()
                .zip(r.intervals)
                .map(|((label, ..), x)| (label.to_string(), serde_json::json!(x)))
                .collect::<serde_json::Map<_, _>>()
                .into();
            o
        })
        .collect();
    let route = crate::device::cpu::bf16_matmul_route().ok();
    serde_json::json!({"kind": "cpu-matmul", "threads": threads, "bf16_isa": bf16_matmul_isa(),
        "bf16_route": route.as_ref().map(|r| r.kernel.name()), "bf16_route_reason": route.map(|r| r.reason), "rows": rows})
}

/// `skip`: references not to time, by column name with a dash (`pt-bf16`).
/// Times every shape of `shapes` (the standard five, `SHAPES`, unless `--shape` chose others).
pub fn run(
    budget: Budget,
    threads: usize,
    (with_reference, skip): (bool, &[String]),
    shapes: &[Shape],
) -> anyhow::Result<Vec<Row>> {
    // Every shape's operands are checked before any is made: one at a time, a product too large
    // for memory filled gigabytes for a minute before its last operand was refused.
    for shape in shapes {
        crate::device::cpu::check_bytes("bench cpu-matmul", shape.bytes_held())
            .map_err(|e| anyhow::anyhow!("{}: {e}", shape.label()))?;
    }
    let label = |name: &str| name.replace(' ', "-");
    if let Some(unknown) = skip
        .iter()
        .find(|s| !REFERENCES.iter().any(|(name, _, _)| label(name) == **s))
    {
        anyhow::bail!(
            "--skip {unknown}: not a reference; the references are {}",
            REFERENCES.map(|(name, _, _)| label(name)).join(", ")
        );
    }
    let (server, info) = if with_reference {
        let python = reference::ensure_venv(&reference::venv_dir())?;
        let mut server = Server::start(&python, threads)?;
        let info = server.info()?;
        (Some(RefCell::new(server)), Some(info))
    } else {
        (None, None)
    };
    let available = REFERENCES.map(|(name, library, _)| {
        info.as_ref().is_some_and(|i| i.libraries.contains_key(library)) && !skip.contains(&label(name))
    });
    if !skip.is_empty() {
        outln!("not timed (--skip): {}", skip.join(", "))?;
    }
    outln!(
        "CPU matmul, {threads} threads; medians of samples taken in turns (≥{} samples and ≥{:.1} s per entry)",
        budget.min_samples,
        budget.min_time.as_secs_f64()
    )?;
    // The bf16 kernel this CPU offers, and the route its products take (`bf16_gemm::route`).
    let route = crate::device::cpu::bf16_matmul_route()?;
    outln!(
        "our f32: gemm crate, one single-threaded call per part on our thread team; our bf16: {} offered, {} taken: {}",
        bf16_matmul_isa(),
        route.kernel.name(),
        route.reason
    )?;
    match &info {
        Some(info) => info.describe()?,
        None => outln!(
            "references: not run (pass --with-reference to install numpy and PyTorch into {} and time them)",
            reference::venv_dir().display()
        )?,
    }
    let mut rows = Vec::new();
    for &shape in shapes {
        crate::console::warn(format_args!("timing {}", shape.label()));
        rows.push(measure(shape, budget, server.as_ref(), &available)?);
    }
    outln!()?;
    print_table(&rows)?;
    Ok(rows)
}

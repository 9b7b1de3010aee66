//! Every `kernels/*.cu` compiles with NVRTC for Hopper (sm_90), with no compiler error and no
//! warning; and every launch the CUDA backend can plan names a kernel that exists and passes the
//! arguments its compiled parameter list declares (so a kernel/host mismatch is caught here, on a
//! machine without a GPU, not on the GPU). The ops planned are every op declared in `base::op`
//! (`UnaryOp::ALL`, …): a new op without its kernel fails here. Needs only libnvrtc, no GPU: CI provides it (`.ci/fetch-nvrtc`, called by `.ci/run`,
//! which also sets CS336_REQUIRE_NVRTC so that a missing library fails instead of skipping).
//! Without the library (and without that variable) the test says that it skipped and why, and passes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::OnceLock;

use cs336::base::{BinaryOp, Layout, ReduceOp, UnaryOp};
use cs336::device::cpu::{self, CpuBuffer};
use cs336::device::cuda::kernels::{self, ParamSpec, SOURCES};
use cs336::device::cuda::launch::Launch;
use cs336::device::cuda::ops::{self, Distribution, UpdateKernel};
use cs336::device::probe;
use cs336::tensor::DType;

const ARCH: &str = "sm_90";

fn kernels_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels")
}

/// The `.cu` files on disk, sorted.
fn cu_files() -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(kernels_dir())
        .expect("kernels/ exists")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cu"))
        .collect();
    files.sort();
    files
}

#[test]
fn the_binary_embeds_every_kernel_file() {
    let embedded: Vec<&str> = SOURCES.iter().map(|s| s.file).collect();
    assert_eq!(
        embedded,
        cu_files(),
        "kernels/*.cu and kernels::SOURCES must list the same files (sorted)"
    );
    for s in SOURCES {
        let on_disk = std::fs::read_to_string(kernels_dir().join(s.file)).expect("readable");
        assert_eq!(s.text, on_disk, "{}: the embedded text is stale", s.file);
    }
}

/// Whether NVRTC is here; when it is not, says why the caller skips.
fn nvrtc_or_skip() -> bool {
    if !probe::nvrtc_present() {
        // CI must not pass by skipping: it provides the library and sets this.
        assert!(
            std::env::var_os("CS336_REQUIRE_NVRTC").is_none(),
            "CS336_REQUIRE_NVRTC is set but libnvrtc.so.13 was not found (LD_LIBRARY_PATH = {:?})",
            std::env::var("LD_LIBRARY_PATH").unwrap_or_default()
        );
        // On the terminal past the harness's capture (it takes `eprintln!`), once per binary, so
        // that a passing run shows the skip.
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| {
            let _ = std::io::Write::write_all(
                &mut std::io::stderr().lock(),
                b"kernels_compile: skipped: libnvrtc (NVRTC, libnvrtc.so.13) was not found, so the kernels cannot \
                  be compiled here. `.ci/run` downloads it; locally put the folder holding libnvrtc.so.13 on \
                  LD_LIBRARY_PATH.\n",
            );
        });
        return false;
    }
    true
}

/// Every kernel by name with its parameter list, or what went wrong.
type Compiled = Result<BTreeMap<String, Vec<ParamSpec>>, Vec<String>>;

/// Every kernel of every file on disk with its parameter list, or the list of failures. Compiled
/// once per test binary (the files are compiled in parallel, as the backend does).
fn compiled() -> &'static Compiled {
    static COMPILED: OnceLock<Compiled> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let (major, minor) = kernels::nvrtc_version().expect("nvrtcVersion");
        eprintln!("NVRTC {major}.{minor}, compiling {} files for {ARCH}", cu_files().len());
        let results: Vec<(String, Result<kernels::Compiled, String>)> = std::thread::scope(|s| {
            let handles: Vec<_> = cu_files()
                .into_iter()
                .map(|file| {
                    s.spawn(move || {
                        let text = std::fs::read_to_string(kernels_dir().join(&file)).expect("readable");
                        let c = kernels::compile(&file, &text, ARCH).map_err(|e| e.to_string());
                        (file, c)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("compile thread")).collect()
        });
        let mut failures = Vec::new();
        let mut all = BTreeMap::new();
        for (file, result) in results {
            match result {
                Err(e) => failures.push(format!("{file}: {e}")),
                Ok(c) => {
                    let entries = kernels::parse_entries(&c.ptx).expect("the PTX parses");
                    eprintln!(
                        "  {file}: {} kernels, {} bytes of {ARCH} machine code",
                        entries.len(),
                        c.cubin.as_ref().map_or(0, Vec::len)
                    );
                    if entries.is_empty() {
                        failures.push(format!("{file}: no kernels in the PTX"));
                    }
                    if c.cubin.as_ref().is_none_or(Vec::is_empty) {
                        failures.push(format!("{file}: no machine code for {ARCH}"));
                    }
                    if !c.log.is_empty() {
                        failures.push(format!("{file}: compiler warnings:\n{}", c.log));
                    }
                    for (name, params) in entries {
                        if all.insert(name.clone(), params).is_some() {
                            failures.push(format!("{file}: kernel {name} is defined in two files"));
                        }
                    }
                }
            }
        }
        if failures.is_empty() { Ok(all) } else { Err(failures) }
    })
}

#[test]
fn every_kernel_file_compiles_for_sm_90() {
    if !nvrtc_or_skip() {
        return;
    }
    if let Err(failures) = compiled() {
        panic!("{} kernel file(s) failed:\n{}", failures.len(), failures.join("\n\n"));
    }
}

const ALL: [DType; 5] = DType::ALL;

/// Every declared unary op; scalar ops with scalars that reach every kernel (integral and not,
/// and the values `pow` runs as `square` and `sqrt`).
fn unary_ops() -> Vec<UnaryOp> {
    let mut ops: Vec<UnaryOp> = Vec::new();
    for op in UnaryOp::ALL {
        for s in [2.0, 0.5, 3.0, -1.5] {
            let op = op.with_scalar(s);
            if !ops.contains(&op) {
                ops.push(op);
            }
        }
    }
    ops
}

/// Every launch the backend can plan, over all ops and dtypes, with made-up addresses and a
/// strided (transposed, offset) view so the non-contiguous paths are planned too.
fn every_plan() -> Vec<Launch> {
    let sm = 132;
    let view = Layout {
        shape: vec![3, 4],
        strides: vec![1, 3],
        offset: 2,
    };
    let row = Layout {
        shape: vec![3, 4],
        strides: vec![0, 1],
        offset: 0,
    };
    let mut plans = Vec::new();
    for dtype in ALL {
        for op in unary_ops() {
            plans.extend(ops::unary(op, dtype, 256, 512, &view, sm).ok());
        }
        for &op in BinaryOp::ALL {
            plans.extend(ops::binary(op, dtype, 256, (512, &view), (768, &row), sm).ok());
        }
        for &op in ReduceOp::ALL {
            let walk = op.walk(&view, &[0], 14).expect("walk");
            if let Ok(p) = ops::reduce(op, dtype, 256, 512, 768, &walk, sm) {
                plans.push(p.first);
                plans.push(p.finish);
            }
        }
        plans.extend(ops::gather(dtype, 256, 512, &view, sm).ok());
        plans.extend(ops::triu(dtype, 256, 512, &view, 1, sm).ok());
        plans.extend(ops::fill(dtype, 256, 12, 1.5, sm).ok());
        for to in ALL.into_iter().filter(|&t| t != dtype) {
            plans.extend(ops::cast(dtype, to, 256, 512, &view, sm).ok());
        }
        for dist in [Distribution::Normal, Distribution::Uniform] {
            plans.extend(ops::random(dist, dtype, 256, 1001, 7, sm).ok());
        }
        for which in [UpdateKernel::Fast, UpdateKernel::Reference] {
            for base in [256u64, 258] {
                plans.extend(ops::sgd(dtype, base, 512, 1000, 0.1, which, sm).ok());
                plans.extend(ops::adagrad(dtype, base, 512, 768, 1000, 0.1, 1e-5, which, sm).ok());
            }
        }
    }
    plans
}

#[test]
fn every_planned_launch_matches_a_compiled_kernel() {
    if !nvrtc_or_skip() {
        return;
    }
    let Ok(kernels) = compiled() else {
        panic!("the kernels do not compile (see every_kernel_file_compiles_for_sm_90)")
    };
    let plans = every_plan();
    let mut problems = Vec::new();
    let mut used = BTreeSet::new();
    for plan in &plans {
        match kernels.get(&plan.kernel) {
            None => problems.push(format!("{}: no such kernel", plan.kernel)),
            Some(params) => {
                if let Err(e) = plan.check_against(params) {
                    problems.push(e.to_string());
                }
                used.insert(plan.kernel.clone());
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} mismatched launches:\n{}",
        problems.len(),
        problems.join("\n")
    );
    // Every kernel is reachable from some plan, except the identity casts (never launched: a cast
    // to the same dtype is a copy).
    let unused: Vec<&String> = kernels
        .keys()
        .filter(|k| !used.contains(*k))
        .filter(|k| !is_identity_cast(k))
        .collect();
    assert!(unused.is_empty(), "kernels no plan ever launches: {unused:?}");
    eprintln!(
        "{} planned launches checked against {} kernels",
        plans.len(),
        kernels.len()
    );
}

fn is_identity_cast(name: &str) -> bool {
    name.strip_prefix("cast_")
        .and_then(|rest| rest.split_once('_'))
        .is_some_and(|(a, b)| a == b)
}

/// The CUDA backend refuses exactly the (op, dtype) pairs the CPU backend refuses, so a program
/// that runs on one runs on the other.
#[test]
fn cuda_plans_accept_exactly_what_the_cpu_accepts() {
    let sm = 132;
    let l = Layout::contiguous(&[2]);
    for dtype in ALL {
        let buf = CpuBuffer::from_f64(dtype, [1.0, 2.0].into_iter()).expect("two elements fit");
        for op in unary_ops() {
            let cpu_ok = cpu::unary(op, &buf, &l).is_ok();
            let cuda_ok = ops::unary(op, dtype, 0, 0, &l, sm).is_ok();
            assert_eq!(cpu_ok, cuda_ok, "{op:?} on {dtype}");
        }
        for &op in BinaryOp::ALL {
            let cpu_ok = cpu::binary(op, &buf, &l, &buf, &l).is_ok();
            let cuda_ok = ops::binary(op, dtype, 0, (0, &l), (0, &l), sm).is_ok();
            assert_eq!(cpu_ok, cuda_ok, "{op:?} on {dtype}");
        }
        for &op in ReduceOp::ALL {
            let cpu_ok = cpu::reduce(op, &buf, &l, &[0]).is_ok();
            let walk = op.walk(&l, &[0], 2).expect("walk");
            let cuda_ok = ops::reduce(op, dtype, 0, 0, 0, &walk, sm).is_ok();
            assert_eq!(cpu_ok, cuda_ok, "{op:?} on {dtype}");
        }
    }
}

#[test]
fn the_kernel_cache_returns_what_was_compiled() {
    if !nvrtc_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let src = SOURCES.iter().find(|s| s.file == "random.cu").expect("random.cu");
    let first = kernels::compile_cached(dir.path(), src.file, src.text, ARCH).expect("compiles");
    let files: Vec<_> = std::fs::read_dir(dir.path())
        .expect("cache folder")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files.len(), 2, "a PTX and a CUBIN file: {files:?}");
    let second = kernels::compile_cached(dir.path(), src.file, src.text, ARCH).expect("from the cache");
    assert_eq!((first.ptx, first.cubin), (second.ptx, second.cubin));
    // A changed source is a different key, not a stale hit.
    let changed = format!("{}\n// changed\n", src.text);
    kernels::compile_cached(dir.path(), src.file, &changed, ARCH).expect("compiles");
    assert_eq!(std::fs::read_dir(dir.path()).expect("cache folder").count(), 4);
}

//! Files others can read: a checkpoint written here is loaded by Python's `safetensors` (with
//! numpy) and checked against what this test knows it wrote; token files written by `np.save` are
//! read by our loader. Needs a python3 with numpy and safetensors: `CS336_PYTHON` names it (CI's
//! `.ci/run` makes a virtual environment), else `python3`. Without them the tests say they
//! skipped and why; with `CS336_REQUIRE_PYTHON=1` (CI) a skip is a failure.

use std::path::{Path, PathBuf};
use std::process::Command;

use cs336::Tensor;
use cs336::autograd::{Var, mse_loss};
use cs336::checkpoint;
use cs336::data::{TokenFile, TokenFormat, npy::Elements};
use cs336::nn::{Cruncher, Module};
use cs336::optim::{AdaGrad, Optimizer};
use cs336::rng::Rng;
use cs336::tensor::DType;
use serde_json::json;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/reference/interop.py");

/// The Python to use, or None (after saying why) when it lacks the packages.
fn python() -> Option<PathBuf> {
    crate::common::python_with("numpy, safetensors", "python interop check")
}

fn run(python: &Path, args: &[&str]) -> String {
    let out = Command::new(python)
        .arg(SCRIPT)
        .args(args)
        .output()
        .expect("python runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "interop.py {args:?} failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

fn entry(t: &Tensor) -> serde_json::Value {
    let dtype = match t.dtype() {
        DType::F32 => "F32",
        other => panic!("the test writes float32 tensors, not {other}"),
    };
    json!({"dtype": dtype, "shape": t.shape(), "values": t.to_vec::<f32>().expect("f32")})
}

#[test]
fn a_checkpoint_loads_in_python_safetensors() {
    let Some(python) = python() else { return };
    // A model after one AdaGrad step, so that parameters and optimizer state are not their
    // initial values.
    let model = Cruncher::new(8, 2, &mut Rng::seed(3)).unwrap();
    let mut optimizer = AdaGrad::new(&model, 0.01).unwrap();
    let x = Var::constant(Tensor::randn(&[4, 8], DType::F32, &mut Rng::seed(4)).unwrap());
    let y = Var::constant(Tensor::randn(&[4], DType::F32, &mut Rng::seed(5)).unwrap());
    mse_loss(&model.forward(&x).unwrap(), &y).unwrap().backward().unwrap();
    optimizer.step().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.safetensors");
    checkpoint::save(&path, &model, &optimizer, 7).unwrap();

    // What the test knows it wrote, by name: the model's parameters and the optimizer's state.
    let mut tensors = serde_json::Map::new();
    for (name, t) in model.state_dict() {
        tensors.insert(format!("model.{name}"), entry(&t));
    }
    for (name, t) in optimizer.state() {
        tensors.insert(format!("optimizer.{name}"), entry(&t));
    }
    assert!(tensors.len() >= 6, "parameters and state: {:?}", tensors.keys());
    let expected = json!({
        "tensors": tensors,
        "metadata": {"format": checkpoint::FORMAT, "step": "7", "optimizer": optimizer.name()},
    });
    let expected_path = dir.path().join("expected.json");
    std::fs::write(&expected_path, expected.to_string()).unwrap();
    let out = run(
        &python,
        &[
            "check-checkpoint",
            path.to_str().unwrap(),
            expected_path.to_str().unwrap(),
        ],
    );
    assert!(
        out.lines().last()
            == Some(&format!(
                "ok: {} tensors, metadata ['format', 'optimizer', 'step']",
                tensors.len()
            )),
        "{out}"
    );
}

#[test]
fn token_files_written_by_numpy_load() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    run(&python, &["write-npy", dir.path().to_str().unwrap()]);
    let open = |name: &str| TokenFile::open(&dir.path().join(name));
    let ten: Vec<i32> = (1..=10).collect();

    let int32 = open("int32.npy").unwrap();
    assert_eq!(
        (int32.to_vec(), int32.format()),
        (ten.clone(), TokenFormat::Npy(Elements::Int32))
    );
    assert!(!int32.format().converted(), "int32 is read in place");
    let raw = open("raw.npy").unwrap();
    assert_eq!((raw.to_vec(), raw.format()), (ten.clone(), TokenFormat::RawInt32));
    let int64 = open("int64.npy").unwrap();
    assert_eq!(int64.to_vec(), ten);
    assert!(int64.format().converted());
    assert_eq!(open("uint16.npy").unwrap().to_vec(), [0, 1, 50256, 65535]);
    assert_eq!(int32.window(3, 4).unwrap(), [4, 5, 6, 7]);

    let refused = |name: &str| {
        open(name)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_else(|| panic!("{name} loaded"))
    };
    assert!(
        refused("float32.npy").contains("<f4 (floating-point numbers)"),
        "{}",
        refused("float32.npy")
    );
    assert!(refused("fortran.npy").contains("Fortran order"));
    assert!(refused("matrix.npy").contains("[2, 5]") && refused("matrix.npy").contains("1-D"));
    assert!(refused("int64_too_big.npy").contains("token 1 is 1099511627776, outside int32"));
    assert!(
        refused("float32.npy").contains("float32.npy"),
        "the message names the file"
    );
}

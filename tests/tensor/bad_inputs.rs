//! Bad inputs to the training library give clear errors: damaged or mismatched checkpoints, token
//! files of the wrong length, batches longer than the data. And the good paths they guard:
//! checkpoints round-trip bit for bit and are plain safetensors files; batches are consecutive
//! tokens.

use std::path::Path;

use cs336::Tensor;
use cs336::checkpoint;
use cs336::data::{self, TokenFile};
use cs336::device::Device;
use cs336::nn::{Cruncher, Module};
use cs336::optim::{AdaGrad, Optimizer, Sgd};
use cs336::rng::Rng;
use cs336::tensor::DType;

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_vec::<f32>().unwrap().iter().map(|x| x.to_bits()).collect()
}

/// A model and an AdaGrad that has taken one step (so its state is not all zeros).
fn trained(dim: usize, layers: usize, seed: u64) -> (Cruncher, AdaGrad) {
    let mut rng = Rng::seed(seed);
    let model = Cruncher::new(dim, layers, &mut rng).unwrap();
    let mut opt = AdaGrad::new(&model, 0.01).unwrap();
    let x = cs336::autograd::Var::constant(Tensor::randn(&[3, dim], DType::F32, &mut rng).unwrap());
    let y = cs336::autograd::Var::constant(Tensor::randn(&[3], DType::F32, &mut rng).unwrap());
    cs336::autograd::mse_loss(&model.forward(&x).unwrap(), &y)
        .unwrap()
        .backward()
        .unwrap();
    opt.step().unwrap();
    opt.zero_grad();
    (model, opt)
}

fn saved(dir: &Path) -> (std::path::PathBuf, Cruncher, AdaGrad) {
    let (model, opt) = trained(8, 2, 1);
    let path = dir.join("ckpt.safetensors");
    checkpoint::save(&path, &model, &opt, 7).unwrap();
    (path, model, opt)
}

fn all_bits(model: &dyn Module, opt: &dyn Optimizer) -> Vec<Vec<u32>> {
    model
        .state_dict()
        .iter()
        .chain(opt.state().iter())
        .map(|(_, t)| bits(t))
        .collect()
}

#[test]
fn checkpoint_round_trip_is_bit_identical() {
    let dir = tempfile::tempdir().unwrap();
    let (path, model, opt) = saved(dir.path());
    let (fresh_model, mut fresh_opt) = trained(8, 2, 99);
    assert_ne!(all_bits(&model, &opt), all_bits(&fresh_model, &fresh_opt));
    let step = checkpoint::load(&path, &fresh_model, &mut fresh_opt).unwrap();
    assert_eq!(step, 7);
    assert_eq!(fresh_opt.steps_taken(), 7);
    assert_eq!(all_bits(&model, &opt), all_bits(&fresh_model, &fresh_opt));
}

#[test]
fn checkpoint_is_a_plain_safetensors_file() {
    let dir = tempfile::tempdir().unwrap();
    let (path, model, _) = saved(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut names = st.names();
    names.sort();
    assert_eq!(
        names,
        vec![
            "model.final.weight",
            "model.layers.0.weight",
            "model.layers.1.weight",
            "optimizer.final.weight.g2",
            "optimizer.layers.0.weight.g2",
            "optimizer.layers.1.weight.g2"
        ]
    );
    let w = st.tensor("model.layers.1.weight").unwrap();
    assert_eq!((w.dtype(), w.shape()), (safetensors::Dtype::F32, &[8usize, 8][..]));
    let expected: Vec<u8> = model.layers[1]
        .weight
        .value()
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    assert_eq!(
        w.data(),
        &expected[..],
        "little-endian f32, row-major, as any reader expects"
    );
    let (_, meta) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
    let meta = meta.metadata().clone().unwrap();
    assert_eq!(meta["step"], "7");
    assert_eq!(meta["optimizer"], "adagrad");
}

fn load_err(path: &Path, model: &dyn Module, opt: &mut dyn Optimizer) -> String {
    checkpoint::load(path, model, opt)
        .expect_err("loading must fail")
        .to_string()
}

#[test]
fn truncated_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _, _) = saved(dir.path());
    let bytes = std::fs::read(&path).unwrap();
    let (model, mut opt) = trained(8, 2, 5);
    let before = all_bits(&model, &opt);
    for cut in [0, 4, 8, 100, bytes.len() / 2, bytes.len() - 1] {
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let e = load_err(&path, &model, &mut opt);
        assert!(
            e.contains("ckpt.safetensors") && e.contains("truncated or corrupt"),
            "cut at {cut}: {e}"
        );
    }
    assert_eq!(before, all_bits(&model, &opt), "a failed load changes nothing");
}

#[test]
fn corrupt_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _, _) = saved(dir.path());
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - 3] ^= 0x01; // one bit of one weight
    std::fs::write(&path, &bytes).unwrap();
    let (model, mut opt) = trained(8, 2, 5);
    let e = load_err(&path, &model, &mut opt);
    assert!(e.contains("corrupt") && e.contains("checksum"), "{e}");
    // A header that is not JSON.
    bytes[10] = b'#';
    std::fs::write(&path, &bytes).unwrap();
    assert!(load_err(&path, &model, &mut opt).contains("truncated or corrupt"));
}

#[test]
fn checkpoint_for_another_shape() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _, _) = saved(dir.path());
    let (wide, mut wide_opt) = trained(16, 2, 5);
    let e = load_err(&path, &wide, &mut wide_opt);
    assert!(
        e.contains("model.layers.0.weight") && e.contains("[8, 8]") && e.contains("[16, 16]"),
        "{e}"
    );
    let (deeper, mut deeper_opt) = trained(8, 3, 5);
    let e = load_err(&path, &deeper, &mut deeper_opt);
    assert!(e.contains("model.layers.2.weight"), "{e}");
    let (shallow, mut shallow_opt) = trained(8, 1, 5);
    let e = load_err(&path, &shallow, &mut shallow_opt);
    assert!(
        e.contains("model.layers.1.weight") && e.contains("different model"),
        "{e}"
    );
}

#[test]
fn checkpoint_for_another_optimizer_or_dtype() {
    let dir = tempfile::tempdir().unwrap();
    let (path, model, _) = saved(dir.path());
    let mut sgd = Sgd::new(&model, 0.1).unwrap();
    assert!(load_err(&path, &model, &mut sgd).contains("adagrad state, but the optimizer to restore is sgd"));
    let options = cs336::nn::ParamOptions {
        dtype: DType::BF16,
        ..Default::default()
    };
    let bf16 = Cruncher::with_options(8, 2, &options, &mut Rng::seed(3)).unwrap();
    let mut bf16_opt = AdaGrad::new(&bf16, 0.01).unwrap();
    assert!(load_err(&path, &bf16, &mut bf16_opt).contains("is float32, but the model's is bfloat16"));
}

#[test]
fn missing_checkpoint_names_the_file() {
    let (model, mut opt) = trained(8, 2, 5);
    let e = load_err(Path::new("/nonexistent/ckpt.safetensors"), &model, &mut opt);
    assert!(e.contains("/nonexistent/ckpt.safetensors"), "{e}");
}

#[test]
fn saving_replaces_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let (path, model, opt) = saved(dir.path());
    checkpoint::save(&path, &model, &opt, 8).unwrap();
    assert_eq!(checkpoint::inspect(&path).unwrap().step, 8);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "no temporary files remain");
}

#[test]
fn token_file_of_odd_length() {
    let dir = tempfile::tempdir().unwrap();
    for len in [1, 2, 3, 5, 41] {
        let path = dir.path().join(format!("odd{len}.bin"));
        std::fs::write(&path, vec![7u8; len]).unwrap();
        let e = TokenFile::open(&path).err().expect("odd length must fail").to_string();
        assert!(
            e.contains(&format!("odd{len}.bin")) && e.contains(&format!("{len} bytes")) && e.contains("int32"),
            "{e}"
        );
    }
    let empty = dir.path().join("empty.bin");
    std::fs::write(&empty, []).unwrap();
    assert_eq!(TokenFile::open(&empty).unwrap().len(), 0);
}

#[test]
fn batch_longer_than_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokens.bin");
    data::write_tokens(&path, &[1, 2, 3, 4, 5]).unwrap();
    let file = TokenFile::open(&path).unwrap();
    let mut rng = Rng::seed(0);
    // 5 tokens hold a window of 4 plus its next token, not a window of 5.
    assert!(data::get_batch(&file, 3, 4, &mut rng, &Device::Cpu).is_ok());
    let e = data::get_batch(&file, 3, 5, &mut rng, &Device::Cpu)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("tokens.bin") && e.contains("has 5 tokens") && e.contains("at least 6"),
        "{e}"
    );
    assert!(data::get_batch(&file, 0, 2, &mut rng, &Device::Cpu).is_err());
}

#[test]
fn get_batch_rows_are_consecutive_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokens.bin");
    let tokens: Vec<i32> = (0..1000).map(|i| i * 3 - 500).collect();
    data::write_tokens(&path, &tokens).unwrap();
    let file = TokenFile::open(&path).unwrap();
    assert_eq!(file.to_vec(), tokens);
    let (b, l) = (16, 32);
    let batch = data::get_batch(&file, b, l, &mut Rng::seed(4), &Device::Cpu).unwrap();
    assert_eq!(batch.inputs.shape(), &[b, l]);
    assert_eq!(batch.inputs.dtype(), DType::I32);
    let rows = batch.inputs.to_vec::<i64>().unwrap();
    for (row, &start) in rows.chunks(l).zip(&batch.starts) {
        assert!(start + l < tokens.len(), "the next-token target exists");
        let expected: Vec<i64> = tokens[start..start + l].iter().map(|&t| t as i64).collect();
        assert_eq!(row, &expected[..]);
    }
    let distinct: std::collections::BTreeSet<_> = batch.starts.iter().collect();
    assert!(distinct.len() > b / 2, "starts are random: {:?}", batch.starts);
    let again = data::get_batch(&file, b, l, &mut Rng::seed(4), &Device::Cpu).unwrap();
    assert_eq!(again.starts, batch.starts, "same seed, same batch");
}

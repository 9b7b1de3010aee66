//! Checkpoints: model parameters, optimizer state and the step number in one safetensors file,
//! so any safetensors reader (Python's `safetensors`, `huggingface_hub`…) can open it.
//!
//! Layout: tensors `model.<parameter>` and `optimizer.<state>` (e.g. `optimizer.final.weight.g2`);
//! string metadata `format`, `version`, `step`, `optimizer`, its hyperparameters, and `sha256`,
//! a digest of every tensor's name, dtype, shape and bytes. safetensors itself catches a
//! truncated file (its header records every tensor's extent); the digest catches flipped bytes.
//! Writes are atomic (temporary file, fsync, rename): a crash mid-save leaves the previous
//! checkpoint intact. Loading checks everything before writing anything, so a bad file never
//! leaves a half-loaded model.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use half::{bf16, f16};
use safetensors::tensor::{Dtype, SafeTensors, View};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::nn::Module;
use crate::optim::Optimizer;
use crate::tensor::{DType, Tensor};

pub const FORMAT: &str = "cs336-lecture-checkpoint";
pub const VERSION: &str = "1";

/// A tensor's bytes in safetensors form (little-endian).
struct Raw {
    dtype: Dtype,
    shape: Vec<usize>,
    data: Vec<u8>,
}

impl View for &Raw {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.data)
    }
    fn data_len(&self) -> usize {
        self.data.len()
    }
}

fn file_err(path: &Path, msg: impl Into<String>) -> Error {
    Error::File {
        path: path.to_path_buf(),
        msg: msg.into(),
    }
}

fn to_raw(t: &Tensor) -> Result<Raw> {
    let data: Vec<u8> = match t.dtype() {
        DType::F32 => t.to_vec::<f32>()?.iter().flat_map(|x| x.to_le_bytes()).collect(),
        DType::BF16 => t
            .to_vec::<bf16>()?
            .iter()
            .flat_map(|x| x.to_bits().to_le_bytes())
            .collect(),
        DType::F16 => t
            .to_vec::<f16>()?
            .iter()
            .flat_map(|x| x.to_bits().to_le_bytes())
            .collect(),
        DType::I32 => t.to_vec::<i32>()?.iter().flat_map(|x| x.to_le_bytes()).collect(),
        DType::I64 => t.to_vec::<i64>()?.iter().flat_map(|x| x.to_le_bytes()).collect(),
    };
    Ok(Raw {
        dtype: st_dtype(t.dtype()),
        shape: t.shape().to_vec(),
        data,
    })
}

fn st_dtype(d: DType) -> Dtype {
    match d {
        DType::F32 => Dtype::F32,
        DType::BF16 => Dtype::BF16,
        DType::F16 => Dtype::F16,
        DType::I32 => Dtype::I32,
        DType::I64 => Dtype::I64,
    }
}

fn from_raw(path: &Path, name: &str, dtype: Dtype, shape: &[usize], data: &[u8]) -> Result<Tensor> {
    fn words<const N: usize>(data: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
        data.chunks_exact(N).map(|c| {
            let mut w = [0u8; N];
            w.copy_from_slice(c);
            w
        })
    }
    match dtype {
        Dtype::F32 => Tensor::from_vec(words::<4>(data).map(f32::from_le_bytes).collect::<Vec<_>>(), shape),
        Dtype::BF16 => Tensor::from_vec(
            words::<2>(data)
                .map(|w| bf16::from_bits(u16::from_le_bytes(w)))
                .collect::<Vec<_>>(),
            shape,
        ),
        Dtype::F16 => Tensor::from_vec(
            words::<2>(data)
                .map(|w| f16::from_bits(u16::from_le_bytes(w)))
                .collect::<Vec<_>>(),
            shape,
        ),
        Dtype::I32 => Tensor::from_vec(words::<4>(data).map(i32::from_le_bytes).collect::<Vec<_>>(), shape),
        Dtype::I64 => Tensor::from_vec(words::<8>(data).map(i64::from_le_bytes).collect::<Vec<_>>(), shape),
        other => Err(file_err(
            path,
            format!("tensor `{name}` has dtype {other:?}, which this library does not use"),
        )),
    }
}

/// Digest of the tensors in name order: name, dtype, shape and bytes of each.
fn digest<'a>(tensors: impl Iterator<Item = (&'a str, Dtype, &'a [usize], &'a [u8])>) -> String {
    let mut sorted: Vec<_> = tensors.collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    let mut h = Sha256::new();
    for (name, dtype, shape, data) in sorted {
        h.update((name.len() as u64).to_le_bytes());
        h.update(name.as_bytes());
        h.update(format!("{dtype:?}{shape:?}").as_bytes());
        h.update((data.len() as u64).to_le_bytes());
        h.update(data);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Every tensor a checkpoint of this model and optimizer holds, by file name.
fn named_tensors(model: &dyn Module, optimizer: &dyn Optimizer) -> Vec<(String, Tensor)> {
    let params = model.state_dict().into_iter().map(|(n, t)| (format!("model.{n}"), t));
    let state = optimizer
        .state()
        .into_iter()
        .map(|(n, t)| (format!("optimizer.{n}"), t));
    params.chain(state).collect()
}

/// The checkpoint as bytes (what `save` writes).
pub fn to_bytes(model: &dyn Module, optimizer: &dyn Optimizer, step: u64) -> Result<Vec<u8>> {
    let raws: Vec<(String, Raw)> = named_tensors(model, optimizer)
        .into_iter()
        .map(|(n, t)| Ok((n, to_raw(&t)?)))
        .collect::<Result<_>>()?;
    let mut meta = HashMap::new();
    meta.insert("format".to_string(), FORMAT.to_string());
    meta.insert("version".to_string(), VERSION.to_string());
    meta.insert("step".to_string(), step.to_string());
    meta.insert("optimizer".to_string(), optimizer.name().to_string());
    for (k, v) in optimizer.hyperparameters() {
        // `{:?}` prints the shortest string that reads back as the same f64.
        meta.insert(format!("optimizer.{k}"), format!("{v:?}"));
    }
    meta.insert(
        "sha256".to_string(),
        digest(
            raws.iter()
                .map(|(n, r)| (n.as_str(), r.dtype, r.shape.as_slice(), r.data.as_slice())),
        ),
    );
    safetensors::tensor::serialize(raws.iter().map(|(n, r)| (n.as_str(), r)), Some(meta))
        .map_err(|e| Error::invalid("checkpoint", format!("cannot serialise: {e}")))
}

/// Saves model, optimizer state and `step` to `path`, atomically.
pub fn save(path: &Path, model: &dyn Module, optimizer: &dyn Optimizer, step: u64) -> Result<()> {
    Ok(crate::atomic_file::write(path, &to_bytes(model, optimizer, step)?)?)
}

/// What a checkpoint file says about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointInfo {
    pub step: u64,
    pub optimizer: String,
    pub metadata: BTreeMap<String, String>,
    /// Name, shape and dtype name of each tensor, sorted by name.
    pub tensors: Vec<(String, Vec<usize>, String)>,
}

/// A parsed, verified checkpoint: its metadata and its tensors.
struct Parsed {
    info: CheckpointInfo,
    tensors: BTreeMap<String, Tensor>,
}

fn parse(path: &Path, bytes: &[u8]) -> Result<Parsed> {
    let bad = |e: safetensors::SafeTensorError| {
        file_err(
            path,
            format!("not a readable safetensors checkpoint (truncated or corrupt?): {e}"),
        )
    };
    let (_, header) = SafeTensors::read_metadata(bytes).map_err(bad)?;
    let st = SafeTensors::deserialize(bytes).map_err(bad)?;
    let metadata: BTreeMap<String, String> = header.metadata().clone().unwrap_or_default().into_iter().collect();
    let get = |key: &str| {
        metadata.get(key).ok_or_else(|| {
            file_err(
                path,
                format!("metadata has no `{key}`: not a checkpoint written by this library"),
            )
        })
    };
    if get("format")? != FORMAT {
        return Err(file_err(
            path,
            format!("metadata `format` is {:?}, expected {FORMAT:?}", metadata["format"]),
        ));
    }
    if get("version")? != VERSION {
        return Err(file_err(
            path,
            format!(
                "checkpoint version {} is not supported (this build reads version {VERSION})",
                metadata["version"]
            ),
        ));
    }
    let step: u64 = get("step")?.parse().map_err(|_| {
        file_err(
            path,
            format!("metadata `step` is {:?}, not a step number", metadata["step"]),
        )
    })?;
    let expected_digest = get("sha256")?.clone();
    let views = st.tensors();
    let actual = digest(views.iter().map(|(n, v)| (n.as_str(), v.dtype(), v.shape(), v.data())));
    if actual != expected_digest {
        return Err(file_err(
            path,
            "corrupt: the tensors' bytes do not match the checksum stored in the file",
        ));
    }
    let mut tensors = BTreeMap::new();
    let mut listing = Vec::new();
    for (name, view) in &views {
        let t = from_raw(path, name, view.dtype(), view.shape(), view.data())?;
        listing.push((name.clone(), view.shape().to_vec(), t.dtype().name().to_string()));
        tensors.insert(name.clone(), t);
    }
    listing.sort();
    let info = CheckpointInfo {
        step,
        optimizer: get("optimizer")?.clone(),
        metadata,
        tensors: listing,
    };
    Ok(Parsed { info, tensors })
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| Error::io(path, e))
}

/// Reads and verifies a checkpoint's header and checksum without a model.
pub fn inspect(path: &Path) -> Result<CheckpointInfo> {
    Ok(parse(path, &read(path)?)?.info)
}

/// Loads a checkpoint into `model` and `optimizer` (in place: the optimizer keeps pointing at
/// the model's parameters) and returns the step it was saved at. Every tensor must be present
/// with the right shape and dtype, and nothing else may be in the file; otherwise nothing is
/// changed and the error names the tensor.
pub fn load(path: &Path, model: &dyn Module, optimizer: &mut dyn Optimizer) -> Result<u64> {
    let parsed = parse(path, &read(path)?)?;
    if parsed.info.optimizer != optimizer.name() {
        return Err(file_err(
            path,
            format!(
                "holds {} state, but the optimizer to restore is {}",
                parsed.info.optimizer,
                optimizer.name()
            ),
        ));
    }
    let targets = named_tensors(model, optimizer);
    for (name, target) in &targets {
        let found = parsed.tensors.get(name).ok_or_else(|| {
            file_err(
                path,
                format!("has no tensor `{name}`: it was saved from a different model or optimizer"),
            )
        })?;
        if found.shape() != target.shape() {
            return Err(file_err(
                path,
                format!(
                    "tensor `{name}` has shape {:?}, but the model expects {:?}: it was saved from a model of another shape",
                    found.shape(),
                    target.shape()
                ),
            ));
        }
        if found.dtype() != target.dtype() {
            return Err(file_err(
                path,
                format!(
                    "tensor `{name}` is {}, but the model's is {}",
                    found.dtype(),
                    target.dtype()
                ),
            ));
        }
    }
    if let Some(extra) = parsed.tensors.keys().find(|k| !targets.iter().any(|(n, _)| n == *k)) {
        return Err(file_err(
            path,
            format!(
                "has a tensor `{extra}` that this model and optimizer do not have: it was saved from a different model"
            ),
        ));
    }
    for (name, target) in &targets {
        target.copy_from(&parsed.tensors[name].to_device(target.device())?)?;
    }
    if let Some(lr) = parsed
        .info
        .metadata
        .get("optimizer.lr")
        .and_then(|v| v.parse::<f64>().ok())
    {
        optimizer.set_lr(lr);
    }
    optimizer.set_steps_taken(parsed.info.step);
    Ok(parsed.info.step)
}

//! numpy and PyTorch as references: a virtual environment under the target folder (made and filled
//! from PyPI on request), and the script `tests/reference/matmul_reference.py` that times them
//! (matrix products for `cpu-matmul`, elementwise ops for `elementwise`), answering JSON requests
//! so the bench can take turns between its kernels and these.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use anyhow::{Context, bail};
use serde::Deserialize;

use super::Shape;
use crate::outln;

/// The script, found through the crate's own folder (the bench is run with `cargo run`).
pub fn script_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference/matmul_reference.py")
}

/// The folder cargo builds into: the bench binary lives in `<target>/release/`.
pub fn target_dir() -> PathBuf {
    let from_exe = std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.to_path_buf()));
    from_exe.unwrap_or_else(|| {
        std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("target"))
    })
}

pub fn venv_dir() -> PathBuf {
    target_dir().join("bench-reference-venv")
}

fn python_in(venv: &Path) -> PathBuf {
    venv.join("bin").join("python")
}

fn run_checked(cmd: &mut Command, what: &str) -> anyhow::Result<()> {
    let status = cmd.status().with_context(|| format!("cannot start {what} ({cmd:?})"))?;
    if !status.success() {
        bail!("{what} failed ({status}): {cmd:?}");
    }
    Ok(())
}

/// PyPI's Linux x86-64 torch wheel is the CUDA build: its libraries are linked against the CUDA
/// runtime, cuBLAS, cuDNN and the rest, so `import torch` fails without them even on a machine
/// with no GPU, and pip pulls them in as dependencies. They are installed and never used (the
/// references run on the CPU). `threadpoolctl` reports which OpenBLAS kernel numpy picked.
const PACKAGES: [&str; 3] = ["numpy", "torch", "threadpoolctl"];

/// Whether the environment's Python can import everything the script needs.
fn has_packages(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import numpy, torch, threadpoolctl"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Makes the virtual environment if missing and installs numpy and torch into it if they do not
/// import; returns its Python.
pub fn ensure_venv(venv: &Path) -> anyhow::Result<PathBuf> {
    let python = python_in(venv);
    if !python.exists() {
        crate::console::warn(format_args!("creating a virtual environment in {}", venv.display()));
        run_checked(
            Command::new("python3").args(["-m", "venv"]).arg(venv),
            "python3 -m venv",
        )?;
    }
    if !has_packages(&python) {
        crate::console::warn(format_args!(
            "installing {} from PyPI into {} (torch brings its CUDA libraries: a few GB, once)",
            PACKAGES.join(", "),
            venv.display()
        ));
        run_checked(
            Command::new(&python)
                .args(["-m", "pip", "install", "--quiet"])
                .args(PACKAGES),
            "pip install",
        )?;
        if !has_packages(&python) {
            bail!(
                "installed {} into {}, but `import numpy, torch, threadpoolctl` still fails there",
                PACKAGES.join(", "),
                venv.display()
            );
        }
    }
    Ok(python)
}

/// What the script reports about its libraries.
#[derive(Debug, Deserialize)]
pub struct Info {
    pub python: String,
    pub threads: usize,
    pub libraries: BTreeMap<String, String>,
    pub errors: Vec<String>,
    #[serde(default)]
    pub torch_threads: Option<usize>,
    #[serde(default)]
    pub torch_cpu_capability: Option<String>,
    #[serde(default)]
    pub blas: Option<Vec<serde_json::Value>>,
}

impl Info {
    /// What the references ran on, printed above the tables: their Python and libraries, and
    /// PyTorch's threads and CPU capability.
    pub fn describe(&self) -> anyhow::Result<()> {
        let libs: Vec<String> = self.libraries.iter().map(|(k, v)| format!("{k} {v}")).collect();
        outln!(
            "references: Python {}, {}, {} threads",
            self.python,
            libs.join(", "),
            self.threads
        )?;
        if let Some(cap) = &self.torch_cpu_capability {
            outln!(
                "  PyTorch: CPU capability {cap}, {} threads",
                self.torch_threads.map_or("?".to_string(), |t| t.to_string())
            )?;
        }
        for lib in self.blas.iter().flatten() {
            outln!("  BLAS loaded by numpy: {lib}")?;
        }
        for e in &self.errors {
            outln!("  not measured: {e}")?;
        }
        Ok(())
    }
}

/// The script running in `--serve` mode: the bench asks it for timings in turns with its own.
pub struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Server {
    pub fn start(python: &Path, threads: usize) -> anyhow::Result<Server> {
        let script = script_path();
        let mut child = Command::new(python)
            .arg(&script)
            .args(["--serve", "--threads", &threads.to_string()])
            // Some machines set these to work around old OpenBLAS bugs; they pin a slower
            // kernel, so the reference runs without them (`blas` in the info shows the kernel
            // OpenBLAS picked instead).
            .env_remove("OPENBLAS_CORETYPE")
            .env_remove("OPENBLAS_L2_SIZE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("cannot start {} with {}", script.display(), python.display()))?;
        let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
        let stdout = BufReader::new(stdout.context("no stdout pipe to the reference script")?);
        Ok(Server { child, stdin, stdout })
    }

    fn request(&mut self, request: serde_json::Value) -> anyhow::Result<serde_json::Value> {
        let stdin = self.stdin.as_mut().context("the reference script's stdin is closed")?;
        writeln!(stdin, "{request}")
            .and_then(|()| stdin.flush())
            .context("cannot write to the reference script (did it exit?)")?;
        let mut line = String::new();
        if self
            .stdout
            .read_line(&mut line)
            .context("cannot read the reference script's reply")?
            == 0
        {
            bail!("the reference script exited while answering {request}");
        }
        let reply: serde_json::Value =
            serde_json::from_str(&line).with_context(|| format!("the reference script's reply is not JSON: {line}"))?;
        if let Some(err) = reply.get("error") {
            bail!("the reference script could not answer {request}: {err}");
        }
        Ok(reply)
    }

    pub fn info(&mut self) -> anyhow::Result<Info> {
        let reply = self.request(serde_json::json!({"cmd": "info"}))?;
        serde_json::from_value(reply).context("the reference script's info has an unexpected form")
    }

    /// Seconds of each of `count` products by `library` at `dtype` ("float32", "bfloat16").
    pub fn time(&mut self, library: &str, dtype: &str, shape: Shape, count: usize) -> anyhow::Result<Vec<f64>> {
        let request = serde_json::json!({"cmd": "time", "library": library, "dtype": dtype, "m": shape.m, "k": shape.k, "n": shape.n, "count": count});
        let reply = self.request(request)?;
        serde_json::from_value(reply["times"].clone()).context("the reference script's timings have an unexpected form")
    }

    /// Seconds of each of `count` calls of `op` (`relu`, `gelu`, `add`, `mul`, `sum`, `dot`,
    /// `matvec`) by `library` at `dtype`, at size `n` (a matvec's matrix is n×n).
    pub fn elementwise(
        &mut self,
        library: &str,
        dtype: &str,
        op: &str,
        n: usize,
        count: usize,
    ) -> anyhow::Result<Vec<f64>> {
        let request = serde_json::json!({"cmd": "elementwise", "library": library, "dtype": dtype, "op": op, "n": n, "count": count});
        let reply = self.request(request)?;
        serde_json::from_value(reply["times"].clone()).context("the reference script's timings have an unexpected form")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Closing stdin ends the script's request loop.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

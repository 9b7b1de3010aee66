//! The CUDA C sources in `kernels/`, compiled at run time by NVRTC.
//!
//! Compilation needs only `libnvrtc` (no GPU, no driver, no CUDA include folder), so it is also
//! what proves on a CPU-only machine that every kernel compiles (`tests/tensor/kernels_compile.rs`). The
//! sources are embedded in the binary, so a copied binary carries its kernels with it.
//!
//! Each file is compiled into one module for a real architecture (`sm_90` on Hopper), giving both
//! PTX (read here for the kernels' parameter lists, see [`parse_entries`]) and a CUBIN (what the
//! driver loads: machine code, so no PTX-version check against the driver and no JIT at load).

use std::collections::BTreeMap;
use std::ffi::{CString, c_char};

use cudarc::nvrtc::{result as nvrtc, sys as nvrtc_sys};

use crate::error::{Error, Result};

/// One kernel source file.
#[derive(Debug, Clone, Copy)]
pub struct KernelSource {
    pub file: &'static str,
    pub text: &'static str,
}

/// The header every `.cu` file includes, substituted textually (NVRTC gets no include paths).
pub const COMMON_HEADER: KernelSource = KernelSource {
    file: "common.cuh",
    text: include_str!("../../../kernels/common.cuh"),
};

/// Every kernel file, as compiled into this binary. `tests/tensor/kernels_compile.rs` checks that this
/// list and the `kernels/` folder name the same files.
pub const SOURCES: &[KernelSource] = &[
    KernelSource {
        file: "copy.cu",
        text: include_str!("../../../kernels/copy.cu"),
    },
    KernelSource {
        file: "elementwise.cu",
        text: include_str!("../../../kernels/elementwise.cu"),
    },
    KernelSource {
        file: "optim.cu",
        text: include_str!("../../../kernels/optim.cu"),
    },
    KernelSource {
        file: "random.cu",
        text: include_str!("../../../kernels/random.cu"),
    },
    KernelSource {
        file: "reduce.cu",
        text: include_str!("../../../kernels/reduce.cu"),
    },
];

/// Replaces each `#include "common.cuh"` line with the header's text, framed by `#line`
/// directives so that compiler messages name the original file and line.
pub fn expand_includes(file: &str, text: &str, header: &KernelSource) -> String {
    let mut out = String::with_capacity(text.len() + header.text.len() + 128);
    out.push_str(&format!("#line 1 \"{file}\"\n"));
    for (i, line) in text.lines().enumerate() {
        if line.trim() == format!("#include \"{}\"", header.file) {
            out.push_str(&format!(
                "#line 1 \"{}\"\n{}\n#line {} \"{file}\"\n",
                header.file,
                header.text,
                i + 2
            ));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// NVRTC options. `--fmad=false` keeps `a*b + c` as two roundings, as the CPU backend computes it,
/// so the backends agree bit for bit (the kernels are memory bound; fused multiply-adds would not
/// make them faster). Division and square root stay IEEE-exact (NVRTC's defaults).
pub fn compile_options(arch: &str) -> Vec<String> {
    vec![
        format!("--gpu-architecture={arch}"),
        "--fmad=false".into(),
        "--std=c++17".into(),
    ]
}

/// The result of compiling one file.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub file: String,
    pub arch: String,
    pub ptx: String,
    /// Machine code for `arch` (present when `arch` is a real architecture such as `sm_90`).
    pub cubin: Option<Vec<u8>>,
    /// Compiler warnings (empty when there were none).
    pub log: String,
}

fn c_chars_to_string(v: &[c_char]) -> String {
    // `to_ne_bytes` rather than `as u8`: `c_char` is `i8` on x86-64 and `u8` on aarch64.
    let bytes: Vec<u8> = v.iter().take_while(|&&c| c != 0).map(|&c| c.to_ne_bytes()[0]).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Owns an NVRTC program and destroys it on every path out.
struct Program(nvrtc_sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: created by create_program and destroyed only here. A failure to free a program
        // leaks a little host memory; there is nothing better to do with it in a destructor.
        let _ = unsafe { nvrtc::destroy_program(self.0) };
    }
}

fn nvrtc_error(file: &str, what: &str, e: impl std::fmt::Debug) -> Error {
    Error::Cuda(format!("NVRTC, {file}: {what} failed: {e:?}"))
}

/// Compiles one source file for `arch` (e.g. "sm_90"). Requires libnvrtc to be loadable: call
/// [`crate::device::probe::nvrtc_present`] first (cudarc panics when the library is missing).
pub fn compile(file: &str, text: &str, arch: &str) -> Result<Compiled> {
    let source = expand_includes(file, text, &COMMON_HEADER);
    let src = CString::new(source).map_err(|_| Error::Cuda(format!("{file}: the source contains a NUL byte")))?;
    let name = CString::new(file).map_err(|_| Error::Cuda(format!("{file}: the file name contains a NUL byte")))?;
    let prog =
        Program(nvrtc::create_program(&src, Some(&name)).map_err(|e| nvrtc_error(file, "creating the program", e))?);
    let options = compile_options(arch);
    // SAFETY: `prog` is a live program; `src` and `name` outlive it (dropped after `prog`).
    let compiled = unsafe { nvrtc::compile_program(prog.0, &options) };
    // SAFETY: `prog` is live, compiled or not (a failed compile still has a log).
    let log = unsafe { nvrtc::get_program_log(prog.0) }
        .map(|l| c_chars_to_string(&l))
        .unwrap_or_default();
    if let Err(e) = compiled {
        return Err(Error::Cuda(format!(
            "NVRTC could not compile kernels/{file} for {arch} ({e:?}), options {options:?}:\n{log}"
        )));
    }
    // SAFETY: `prog` is live and compiled (a failed compile returned above).
    let ptx = unsafe { nvrtc::get_ptx(prog.0) }.map_err(|e| nvrtc_error(file, "reading the PTX", e))?;
    let cubin = if arch.starts_with("sm_") {
        Some(get_cubin(&prog).map_err(|e| nvrtc_error(file, "reading the CUBIN", e))?)
    } else {
        None
    };
    Ok(Compiled {
        file: file.to_string(),
        arch: arch.to_string(),
        ptx: c_chars_to_string(&ptx),
        cubin,
        log: log.trim().to_string(),
    })
}

/// [`compile`] through a folder of compiled files: a hit reads the PTX and CUBIN back, a miss
/// compiles and stores them (atomically; a cache that cannot be written only costs the reuse).
pub fn compile_cached(dir: &std::path::Path, file: &str, text: &str, arch: &str) -> Result<Compiled> {
    use sha2::{Digest, Sha256};
    let (major, minor) = nvrtc_version()?;
    let mut h = Sha256::new();
    h.update(expand_includes(file, text, &COMMON_HEADER));
    h.update(compile_options(arch).join(" "));
    h.update(format!("nvrtc {major}.{minor}"));
    let key: String = h.finalize().iter().take(12).map(|b| format!("{b:02x}")).collect();
    let (ptx_path, cubin_path) = (
        dir.join(format!("{file}.{arch}.{key}.ptx")),
        dir.join(format!("{file}.{arch}.{key}.cubin")),
    );
    if let (Ok(ptx), Ok(cubin)) = (std::fs::read_to_string(&ptx_path), std::fs::read(&cubin_path)) {
        return Ok(Compiled {
            file: file.to_string(),
            arch: arch.to_string(),
            ptx,
            cubin: Some(cubin),
            log: String::new(),
        });
    }
    let c = compile(file, text, arch)?;
    if let Some(cubin) = &c.cubin {
        let _ = std::fs::create_dir_all(dir);
        let _ = crate::atomic_file::write(&cubin_path, cubin);
        let _ = crate::atomic_file::write(&ptx_path, c.ptx.as_bytes());
    }
    Ok(c)
}

fn get_cubin(prog: &Program) -> std::result::Result<Vec<u8>, nvrtc::NvrtcError> {
    let mut size = 0usize;
    // SAFETY: a live, compiled program; the buffer has the size NVRTC reported.
    unsafe { nvrtc_sys::nvrtcGetCUBINSize(prog.0, &mut size).result()? };
    let mut buf = vec![0 as c_char; size];
    // SAFETY: as above; `buf` has the size NVRTC reported.
    unsafe { nvrtc_sys::nvrtcGetCUBIN(prog.0, buf.as_mut_ptr()).result()? };
    Ok(buf.into_iter().map(|c| c.to_ne_bytes()[0]).collect())
}

/// NVRTC's version, e.g. (13, 0).
pub fn nvrtc_version() -> Result<(i32, i32)> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: two out-parameters.
    unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| Error::Cuda(format!("nvrtcVersion failed: {e:?}")))?;
    Ok((major, minor))
}

/// One kernel parameter as PTX declares it: its size and alignment in bytes, and whether it is a
/// floating-point scalar (`.f32`/`.f64`; PTX types integers and pointers `.u`/`.s`/`.b`), which
/// tells a float argument from an integer of the same size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamSpec {
    pub size: usize,
    pub align: usize,
    pub float: bool,
}

/// The kernels (`.entry` functions) of a PTX module and their parameter lists, in order.
pub fn parse_entries(ptx: &str) -> Result<BTreeMap<String, Vec<ParamSpec>>> {
    let mut out = BTreeMap::new();
    let mut rest = ptx;
    while let Some(at) = rest.find(".entry ") {
        rest = &rest[at + ".entry ".len()..];
        let open = rest
            .find('(')
            .ok_or_else(|| Error::Cuda("PTX: `.entry` without a parameter list".into()))?;
        let name = rest[..open].trim().to_string();
        let close = rest
            .find(')')
            .ok_or_else(|| Error::Cuda(format!("PTX: unterminated parameter list of {name}")))?;
        let params = rest[open + 1..close]
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| parse_param(&name, p))
            .collect::<Result<Vec<_>>>()?;
        out.insert(name, params);
        rest = &rest[close..];
    }
    Ok(out)
}

/// `.param .u64 name`, `.param .f32 name`, `.param .align 8 .b8 name[144]`.
fn parse_param(kernel: &str, text: &str) -> Result<ParamSpec> {
    let bad = || Error::Cuda(format!("PTX: cannot read parameter `{text}` of {kernel}"));
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.first() != Some(&".param") {
        return Err(bad());
    }
    if words.get(1) == Some(&".align") {
        let align: usize = words.get(2).and_then(|a| a.parse().ok()).ok_or_else(bad)?;
        let elem = words.get(3).and_then(|t| scalar_size(t)).ok_or_else(bad)?;
        let name = words.get(4).ok_or_else(bad)?;
        let count: usize = name
            .split_once('[')
            .and_then(|(_, n)| n.trim_end_matches(']').parse().ok())
            .ok_or_else(bad)?;
        return Ok(ParamSpec {
            size: elem * count,
            align,
            float: false,
        });
    }
    let ty = words.get(1).ok_or_else(bad)?;
    let size = scalar_size(ty).ok_or_else(bad)?;
    Ok(ParamSpec {
        size,
        align: size,
        float: ty.starts_with(".f"),
    })
}

fn scalar_size(ty: &str) -> Option<usize> {
    let bits: usize = ty.strip_prefix('.')?.get(1..)?.parse().ok()?;
    matches!(bits, 8 | 16 | 32 | 64).then_some(bits / 8)
}

/// The architecture name NVRTC takes for a compute capability, e.g. (9, 0) -> "sm_90".
pub fn arch_for(major: i32, minor: i32) -> String {
    format!("sm_{major}{minor}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_are_replaced_with_line_directives() {
        let header = KernelSource {
            file: "common.cuh",
            text: "int shared_thing;",
        };
        let out = expand_includes("a.cu", "// top\n#include \"common.cuh\"\nint x;\n", &header);
        assert_eq!(
            out,
            "#line 1 \"a.cu\"\n// top\n#line 1 \"common.cuh\"\nint shared_thing;\n#line 3 \"a.cu\"\nint x;\n"
        );
    }

    #[test]
    fn ptx_entries_and_parameters_are_read() {
        let ptx = "
.visible .entry add_f32(
\t.param .u64 add_f32_param_0,
\t.param .align 8 .b8 add_f32_param_1[144],
\t.param .f32 add_f32_param_2,
\t.param .u32 add_f32_param_3
)
{ ret; }
.visible .entry nothing()
{ ret; }";
        let entries = parse_entries(ptx).expect("parses");
        let p = |size, align, float| ParamSpec { size, align, float };
        assert_eq!(
            entries["add_f32"],
            vec![p(8, 8, false), p(144, 8, false), p(4, 4, true), p(4, 4, false)]
        );
        assert_eq!(entries["nothing"], vec![]);
        assert!(parse_entries(".entry broken(.param .u64 x").is_err());
    }

    #[test]
    fn architecture_names() {
        assert_eq!(arch_for(9, 0), "sm_90");
        assert_eq!(arch_for(8, 6), "sm_86");
    }
}

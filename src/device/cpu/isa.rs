//! `CS336_CPU_ISA`: how far up the instruction sets our own CPU code may go.
//!
//! Our own code is the peak loops (the measured CPU peak) and the bf16 matmul kernels. Setting
//! `CS336_CPU_ISA=portable|avx2|avx512|amx` limits them to at most that level, to see the
//! difference an instruction set makes, or to exercise the fallbacks on a CPU that has more.
//! `portable` is plain Rust that LLVM vectorises for whatever the build target is (SSE2 on
//! baseline x86-64, NEON on aarch64), so every architecture has a measured peak. The `gemm` crate
//! picks its own float32 kernel at run time and cannot be limited: the trace records which one
//! it ran ([`f32_matmul_isa`]), and MFU is computed against that kernel's loop.

use std::cell::Cell;
use std::sync::OnceLock;

use super::fma_loops::PeakLoop;

/// The environment variable that sets the level.
pub const ENV: &str = "CS336_CPU_ISA";

/// An instruction-set level, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CpuIsa {
    /// Plain Rust, vectorised by the compiler for the build target.
    Portable,
    /// x86-64 AVX2 with FMA: 8 float32 lanes.
    Avx2,
    /// x86-64 AVX-512F (16 float32 lanes), with AVX512_BF16 dot products where the CPU has them.
    Avx512,
    /// x86-64 AMX tiles for bf16 (AVX-512 for float32).
    Amx,
}

/// Why a level cannot be used: a value that names no level, or a level this CPU lacks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IsaError {
    #[error("{ENV}={value:?} names no instruction-set level; use one of portable, avx2, avx512, amx")]
    Invalid { value: String },
    #[error(
        "{ENV}={isa}: this CPU ({arch}) lacks {missing}; the levels it supports are {supported}",
        isa = .isa.name(), arch = std::env::consts::ARCH
    )]
    Unsupported {
        isa: CpuIsa,
        missing: &'static str,
        supported: String,
    },
}

impl From<IsaError> for crate::error::Error {
    fn from(e: IsaError) -> Self {
        crate::error::Error::CpuIsa(e.to_string())
    }
}

impl CpuIsa {
    pub const ALL: [CpuIsa; 4] = [CpuIsa::Portable, CpuIsa::Avx2, CpuIsa::Avx512, CpuIsa::Amx];

    /// The name `CS336_CPU_ISA` takes and the trace records.
    pub fn name(self) -> &'static str {
        match self {
            CpuIsa::Portable => "portable",
            CpuIsa::Avx2 => "avx2",
            CpuIsa::Avx512 => "avx512",
            CpuIsa::Amx => "amx",
        }
    }

    /// Parses a level by name (surrounding spaces and case ignored); whether this CPU has it is
    /// [`CpuIsa::check`]'s question.
    pub fn parse(value: &str) -> Result<CpuIsa, IsaError> {
        let wanted = value.trim().to_ascii_lowercase();
        CpuIsa::ALL
            .into_iter()
            .find(|isa| isa.name() == wanted)
            .ok_or_else(|| IsaError::Invalid { value: value.into() })
    }

    /// What this CPU (and OS) lacks for the level, or None when it can run it.
    fn missing(self) -> Option<&'static str> {
        match self {
            CpuIsa::Portable => None,
            CpuIsa::Avx2 => (!PeakLoop::Avx2Fma.is_available()).then_some("AVX2 with FMA"),
            CpuIsa::Avx512 => (!PeakLoop::Avx512Fma.is_available()).then_some("AVX-512F"),
            CpuIsa::Amx => (!PeakLoop::AmxBf16.is_available())
                .then_some("AMX-BF16 granted by the OS, with AVX512_BF16 (Intel Sapphire Rapids or later)"),
        }
    }

    pub fn is_supported(self) -> bool {
        self.missing().is_none()
    }

    /// The level, if this CPU can run it.
    pub fn check(self) -> Result<CpuIsa, IsaError> {
        match self.missing() {
            None => Ok(self),
            Some(missing) => Err(IsaError::Unsupported {
                isa: self,
                missing,
                supported: CpuIsa::supported()
                    .iter()
                    .map(|i| i.name())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// Every level this CPU can run, lowest first (`portable` always).
    pub fn supported() -> Vec<CpuIsa> {
        CpuIsa::ALL.into_iter().filter(|i| i.is_supported()).collect()
    }

    /// The highest level this CPU can run: what is used when nothing limits it.
    pub fn best_supported() -> CpuIsa {
        // Asked by every op through `current` (the feature checks are cached by std): no
        // `supported()` list is built for it.
        CpuIsa::ALL
            .into_iter()
            .filter(|i| i.is_supported())
            .max()
            .unwrap_or(CpuIsa::Portable)
    }

    /// The float32 loop our own code runs at this level: its peak is the level's own.
    pub fn fp32_loop(self) -> PeakLoop {
        match self {
            CpuIsa::Portable => PeakLoop::PortableFma,
            CpuIsa::Avx2 => PeakLoop::Avx2Fma,
            CpuIsa::Avx512 | CpuIsa::Amx => PeakLoop::Avx512Fma,
        }
    }
}

impl std::fmt::Display for CpuIsa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The level `CS336_CPU_ISA` asks for, checked against this CPU (None when it is unset), read
/// once per process.
pub fn from_env() -> Result<Option<CpuIsa>, IsaError> {
    static ENV_ISA: OnceLock<Result<Option<CpuIsa>, IsaError>> = OnceLock::new();
    ENV_ISA
        .get_or_init(|| match std::env::var(ENV) {
            Ok(value) => CpuIsa::parse(&value).and_then(CpuIsa::check).map(Some),
            // Unset; a value that is not Unicode names no level either.
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(v)) => Err(IsaError::Invalid {
                value: v.to_string_lossy().into_owned(),
            }),
        })
        .clone()
}

thread_local! {
    static OVERRIDE: Cell<Option<CpuIsa>> = const { Cell::new(None) };
}

/// Where the level in effect came from, for the trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The best this CPU has: nothing limited it.
    Detected,
    /// `CS336_CPU_ISA`.
    Env,
    /// [`with_isa`] on this thread (tests).
    Override,
}

/// The level in effect on this thread and where it came from: [`with_isa`]'s, else
/// `CS336_CPU_ISA`'s, else the best this CPU has.
pub fn current_with_source() -> Result<(CpuIsa, Source), IsaError> {
    if let Some(isa) = OVERRIDE.with(Cell::get) {
        return Ok((isa, Source::Override));
    }
    Ok(match from_env()? {
        Some(isa) => (isa, Source::Env),
        None => (CpuIsa::best_supported(), Source::Detected),
    })
}

/// The level in effect on this thread (see [`current_with_source`]).
pub fn current() -> Result<CpuIsa, IsaError> {
    current_with_source().map(|(isa, _)| isa)
}

/// Runs `f` with our own CPU code on this thread limited to `isa` (what `CS336_CPU_ISA` does for
/// the whole process; tests use it to run a section under every level). Fails if the CPU lacks it.
pub fn with_isa<R>(isa: CpuIsa, f: impl FnOnce() -> R) -> Result<R, IsaError> {
    isa.check()?;
    struct Restore(Option<CpuIsa>);
    impl Drop for Restore {
        fn drop(&mut self) {
            OVERRIDE.with(|o| o.set(self.0));
        }
    }
    let _restore = Restore(OVERRIDE.with(|o| o.replace(Some(isa))));
    Ok(f())
}

/// The instruction set of the float32 kernel `gemm` runs on this CPU, named by the peak loop
/// that matches it. `gemm` (built with its `x86-v4` feature) picks AVX-512F where the CPU has it,
/// else AVX2+FMA, else scalar code on x86-64; NEON on aarch64 (which our portable loop, built for
/// aarch64, also uses). It cannot be limited, so the MFU of a float32 matmul is computed against
/// this loop whatever `CS336_CPU_ISA` says.
pub fn f32_matmul_isa() -> PeakLoop {
    if PeakLoop::Avx512Fma.is_available() {
        PeakLoop::Avx512Fma
    } else if PeakLoop::Avx2Fma.is_available() {
        PeakLoop::Avx2Fma
    } else {
        PeakLoop::PortableFma
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_other_values_are_refused() {
        for isa in CpuIsa::ALL {
            assert_eq!(CpuIsa::parse(isa.name()), Ok(isa));
        }
        assert_eq!(CpuIsa::parse(" AVX2 "), Ok(CpuIsa::Avx2));
        let err = CpuIsa::parse("sse9").unwrap_err();
        assert_eq!(err, IsaError::Invalid { value: "sse9".into() });
        assert!(err.to_string().contains("portable, avx2, avx512, amx"), "{err}");
    }

    #[test]
    fn levels_are_ordered_and_portable_is_always_there() {
        assert!(CpuIsa::Portable < CpuIsa::Avx2 && CpuIsa::Avx2 < CpuIsa::Avx512 && CpuIsa::Avx512 < CpuIsa::Amx);
        assert_eq!(CpuIsa::Portable.check(), Ok(CpuIsa::Portable));
        let supported = CpuIsa::supported();
        assert_eq!(supported.first(), Some(&CpuIsa::Portable));
        assert_eq!(supported.last(), Some(&CpuIsa::best_supported()));
        // A level implies the ones below it.
        let top = CpuIsa::ALL
            .iter()
            .position(|&i| i == CpuIsa::best_supported())
            .unwrap_or(0);
        assert_eq!(supported, CpuIsa::ALL[..=top]);
    }

    #[test]
    fn with_isa_limits_this_thread_and_restores() {
        let before = current();
        let inside = with_isa(CpuIsa::Portable, current_with_source).expect("portable is always there");
        assert_eq!(inside, Ok((CpuIsa::Portable, Source::Override)));
        assert_eq!(current(), before);
    }
}

//! Section `jaxtyping_basics`: Named dimensions, checked.

use crate::error::Result;
use crate::lecture::caught::expect_error;
use crate::lecture::{SectionCtx, record};
use crate::tensor::named::{Dims, NamedTensor};
use crate::tensor::{DType, Tensor};

/// jaxtyping writes the names into the type annotation; here a `Dims` context checks them: the
/// first tensor binds each name to a size, every later one must agree.
pub fn jaxtyping_basics(cx: &mut SectionCtx) -> Result<()> {
    let x = Tensor::ones(&[2, 2, 1, 3], DType::F32)?; // old way: batch seq heads hidden, in a comment
    let mut dims = Dims::new();
    dims.check(&x, "batch seq heads hidden")?; // new way: the names are checked
    let bound: serde_json::Map<String, serde_json::Value> =
        dims.iter().map(|(n, s)| (n.to_string(), s.into())).collect();
    record!(cx, computed dims = serde_json::Value::Object(bound))?;

    // A tensor whose hidden size disagrees is caught where it appears, not three ops later.
    let y = Tensor::ones(&[2, 2, 1, 4], DType::F32)?;
    record!(cx, computed mismatch_error = expect_error(dims.check(&y, "batch seq heads hidden"))?)?;
    let y = Tensor::ones(&[2, 2, 3], DType::F32)?;
    record!(cx, computed ndim_error = expect_error(dims.check(&y, "batch seq heads hidden"))?)?;

    // A tensor can carry its names: size by name instead of by position.
    let x = NamedTensor::new(x, "batch seq heads hidden")?;
    record!(cx, computed hidden = x.size("hidden")?)?;
    Ok(())
}

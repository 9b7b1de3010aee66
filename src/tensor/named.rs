//! Dimension names checked at run time. The lecture annotates tensors with jaxtyping
//! (`x: Float[Tensor, "batch seq hidden"]`), which documents the dimensions but checks nothing
//! unless a separate checker runs. Here the names are enforced: a `Dims` context binds each name
//! to the size it first meets, and every later tensor must agree, or the check fails saying which
//! dimension, which sizes and which tensor.
//!
//! Names use the einops pattern syntax: space-separated names, `...` for any number of
//! dimensions that are not checked.

use super::Tensor;
use super::einops::pattern::{Item, Side, parse_names};
use crate::error::{Error, Result};

/// Sizes bound to dimension names, e.g. `batch = 2, seq = 3`.
#[derive(Debug, Clone, Default)]
pub struct Dims {
    /// Name, size, and what bound it (for error messages).
    bound: Vec<(String, usize, String)>,
}

impl Dims {
    pub fn new() -> Dims {
        Dims::default()
    }

    /// Binds `name` to `size` (or checks it, if already bound).
    pub fn bind(&mut self, name: &str, size: usize) -> Result<()> {
        if let Some((_, expected, bound_by)) = self.bound.iter().find(|(n, _, _)| n == name) {
            if *expected != size {
                return Err(Error::DimNames {
                    msg: format!("cannot bind `{name}` to {size}: it is already {expected} ({bound_by})"),
                });
            }
            return Ok(());
        }
        self.bound
            .push((name.to_string(), size, format!("bound by bind({name}={size})")));
        Ok(())
    }

    /// Checks that `x`'s dimensions fit `names` (e.g. `"batch seq hidden"` or `"... hidden"`) and
    /// binds the names not bound yet. On error nothing new is bound.
    pub fn check(&mut self, x: &Tensor, names: &str) -> Result<()> {
        let side = parse_names(names)?;
        let dims = name_dims(&side, x, names)?;
        let bound_by = format!("bound by a tensor with shape {:?} checked as \"{names}\"", x.shape());
        let mut fresh: Vec<(String, usize, String)> = Vec::new();
        for (name, d) in dims {
            let actual = x.shape()[d];
            match self.bound.iter().find(|(n, _, _)| *n == name) {
                Some((_, expected, by)) if *expected != actual => {
                    return Err(Error::DimSize {
                        name,
                        expected: *expected,
                        actual,
                        shape: x.shape().to_vec(),
                        names: names.to_string(),
                        bound_by: by.clone(),
                    });
                }
                Some(_) => {}
                None => fresh.push((name, actual, bound_by.clone())),
            }
        }
        self.bound.extend(fresh);
        Ok(())
    }

    /// The size bound to `name`, if any.
    pub fn get(&self, name: &str) -> Option<usize> {
        self.bound.iter().find(|(n, _, _)| n == name).map(|(_, s, _)| *s)
    }

    /// The size bound to `name`; an error if the name was never bound.
    pub fn size(&self, name: &str) -> Result<usize> {
        self.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.bound.iter().map(|(n, _, _)| n.as_str()).collect();
            Error::DimNames {
                msg: format!("no size is bound to `{name}` (bound: {known:?})"),
            }
        })
    }

    /// Every binding, in the order the names were first seen.
    pub fn iter(&self) -> impl Iterator<Item = (&str, usize)> {
        self.bound.iter().map(|(n, s, _)| (n.as_str(), *s))
    }

    /// The bindings as sizes for `rearrange` (`&dims.axes()` fills in known sizes).
    pub fn axes(&self) -> Vec<(&str, usize)> {
        self.iter().collect()
    }
}

/// A tensor that carries its dimension names: `x.size("hidden")` instead of `x.shape()[2]`.
#[derive(Debug, Clone)]
pub struct NamedTensor {
    tensor: Tensor,
    names: String,
    /// For each dimension, its name (`None` under `...`).
    dims: Vec<Option<String>>,
}

impl NamedTensor {
    /// Names `tensor`'s dimensions; fails if the names do not fit its number of dimensions.
    pub fn new(tensor: Tensor, names: &str) -> Result<NamedTensor> {
        let side = parse_names(names)?;
        let mut dims = vec![None; tensor.ndim()];
        for (name, d) in name_dims(&side, &tensor, names)? {
            dims[d] = Some(name);
        }
        Ok(NamedTensor {
            tensor,
            names: names.to_string(),
            dims,
        })
    }

    pub fn tensor(&self) -> &Tensor {
        &self.tensor
    }

    pub fn into_tensor(self) -> Tensor {
        self.tensor
    }

    /// The names as given, e.g. `"batch seq hidden"`.
    pub fn names(&self) -> &str {
        &self.names
    }

    /// The position of the dimension called `name`.
    pub fn dim(&self, name: &str) -> Result<usize> {
        self.dims
            .iter()
            .position(|n| n.as_deref() == Some(name))
            .ok_or_else(|| Error::DimNames {
                msg: format!(
                    "no dimension named `{name}` in \"{}\" (shape {:?})",
                    self.names,
                    self.tensor.shape()
                ),
            })
    }

    pub fn size(&self, name: &str) -> Result<usize> {
        Ok(self.tensor.shape()[self.dim(name)?])
    }

    /// Checks this tensor's names against (and binds them in) `dims`.
    pub fn check(&self, dims: &mut Dims) -> Result<()> {
        dims.check(&self.tensor, &self.names)
    }
}

/// Each name with the dimension it labels in `x`; an error when the number of dimensions is wrong.
fn name_dims(side: &Side, x: &Tensor, names: &str) -> Result<Vec<(String, usize)>> {
    if let Some(Item::Group(g)) = side.items.iter().find(|i| matches!(i, Item::Group(_))) {
        return Err(Error::DimNames {
            msg: format!(
                "\"{names}\": groups like ({}) are for rearrange, not for naming dimensions",
                g.join(" ")
            ),
        });
    }
    let (fixed, ndim) = (side.fixed_dims(), x.ndim());
    let under_ellipsis = if side.has_ellipsis() {
        ndim.checked_sub(fixed)
    } else {
        (ndim == fixed).then_some(0)
    };
    let Some(under_ellipsis) = under_ellipsis else {
        let need = if side.has_ellipsis() { "at least " } else { "" };
        return Err(Error::DimNames {
            msg: format!(
                "\"{names}\" names {need}{fixed} dimension(s), but the tensor has shape {:?} ({ndim} dimension(s))",
                x.shape()
            ),
        });
    };
    let mut out = Vec::new();
    let mut d = 0;
    for item in &side.items {
        match item {
            Item::Axis(name) => {
                out.push((name.clone(), d));
                d += 1;
            }
            _ => d += under_ellipsis,
        }
    }
    Ok(out)
}

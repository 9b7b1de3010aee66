//! `rearrange` and `reduce`: one engine. The input side of the pattern is expanded into
//! elementary axes (groups split, `...` into its dimensions), axes missing from the output are
//! reduced (`reduce` only), the rest are permuted into output order and grouped again. Splitting
//! and permuting are views; the final grouping is a view when the strides allow (see `strided`).

use super::pattern::{Item, Pattern, Side};
use super::strided;
use crate::error::Result;
use crate::tensor::{ReduceOp, Tensor};

/// Splits, merges and reorders dimensions by name, e.g.
/// `rearrange(&x, "... (heads hidden1) -> ... heads hidden1", &[("heads", 2)])`.
/// `axes` gives sizes the tensor's shape cannot tell (one per group may be left out and is
/// inferred). Every axis on the left must appear on the right: nothing is dropped.
pub fn rearrange(x: &Tensor, pattern: &str, axes: &[(&str, usize)]) -> Result<Tensor> {
    transform(x, pattern, None, axes)
}

/// Aggregates (sum, mean, max, min) over the axes that do not appear in the output, e.g.
/// `reduce(&x, "... hidden -> ...", ReduceOp::Sum)`.
pub fn reduce(x: &Tensor, pattern: &str, op: ReduceOp) -> Result<Tensor> {
    transform(x, pattern, Some(op), &[])
}

/// `reduce` with sizes for axes inside groups, e.g. `"b (t t2) -> b t"` with `t2=2`.
pub fn reduce_with(x: &Tensor, pattern: &str, op: ReduceOp, axes: &[(&str, usize)]) -> Result<Tensor> {
    transform(x, pattern, Some(op), axes)
}

/// An elementary axis after expansion: a name from the pattern, or one dimension of `...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Label {
    Name(String),
    /// The i-th dimension covered by `...`, counted from the left of the `...` dimensions.
    Ellipsis(usize),
}

fn transform(x: &Tensor, text: &str, op: Option<ReduceOp>, axes: &[(&str, usize)]) -> Result<Tensor> {
    let p = Pattern::parse(text)?;
    let what = op.map_or("rearrange", ReduceOp::name);
    if p.inputs.len() != 1 {
        return Err(p.error(format!(
            "{what} takes one tensor, but the pattern has {} inputs",
            p.inputs.len()
        )));
    }
    let (lhs, rhs) = (&p.inputs[0], &p.output);
    check_sides(&p, lhs, rhs, op)?;
    check_given_sizes(&p, lhs, axes)?;

    // Left side: one (label, size) per elementary axis, in input order.
    let elementary = bind_input(&p, lhs, x, axes)?;
    let sizes: Vec<usize> = elementary.iter().map(|(_, n)| *n).collect();
    let mut labels: Vec<Label> = elementary.into_iter().map(|(l, _)| l).collect();
    let mut y = strided::reshape(x, &sizes)?;

    // Reduce what the output does not name (for rearrange, `check_sides` made this empty).
    let out_labels = output_labels(rhs, &labels);
    let gone: Vec<usize> = (0..labels.len())
        .filter(|&i| !out_labels.contains(&labels[i]))
        .collect();
    if let (Some(op), false) = (op, gone.is_empty()) {
        let dims: Vec<isize> = gone.iter().map(|&d| d as isize).collect();
        y = y.reduce(op, &dims, false)?;
        labels = labels
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !gone.contains(i))
            .map(|(_, l)| l)
            .collect();
    }

    // Permute into output order, then group.
    let order = out_labels
        .iter()
        .map(|l| {
            labels.iter().position(|m| m == l).ok_or_else(|| {
                p.error(format!(
                    "internal error: output axis {l:?} was not found among the input's axes"
                ))
            })
        })
        .collect::<Result<Vec<usize>>>()?;
    let y = y.permute(&order)?;
    let shape = output_shape(rhs, &out_labels, y.shape());
    strided::reshape(&y, &shape)
}

/// Which axes may appear where: the output names only input axes; rearrange keeps every axis and
/// `...`; `...` on the right needs `...` on the left.
fn check_sides(p: &Pattern, lhs: &Side, rhs: &Side, op: Option<ReduceOp>) -> Result<()> {
    if let Some(name) = rhs.names().find(|n| !lhs.contains(n)) {
        return Err(p.error(format!(
            "axis `{name}` in the output does not appear in the input `{lhs}`"
        )));
    }
    if rhs.has_ellipsis() && !lhs.has_ellipsis() {
        return Err(p.error("`...` appears in the output but not in the input"));
    }
    if op.is_none() {
        if let Some(name) = lhs.names().find(|n| !rhs.contains(n)) {
            return Err(p.error(format!(
                "axis `{name}` is missing from the output; rearrange keeps every axis (use reduce to aggregate over it)"
            )));
        }
        if lhs.has_ellipsis() && !rhs.has_ellipsis() {
            return Err(p.error(
                "`...` is missing from the output; rearrange keeps every dimension (use reduce to aggregate over them)",
            ));
        }
    }
    Ok(())
}

/// Sizes given by the caller must belong to axes of the pattern, once each.
fn check_given_sizes(p: &Pattern, lhs: &Side, axes: &[(&str, usize)]) -> Result<()> {
    for (i, (name, _)) in axes.iter().enumerate() {
        if !lhs.contains(name) {
            return Err(p.error(format!(
                "a size is given for axis `{name}`, which is not in the pattern"
            )));
        }
        if axes[..i].iter().any(|(n, _)| n == name) {
            return Err(p.error(format!("the size of axis `{name}` is given twice")));
        }
    }
    Ok(())
}

/// Matches the left side against `x`'s shape and returns the elementary axes with their sizes.
fn bind_input(p: &Pattern, lhs: &Side, x: &Tensor, axes: &[(&str, usize)]) -> Result<Vec<(Label, usize)>> {
    let shape = x.shape();
    let fixed = lhs.fixed_dims();
    let ellipsis_dims = if lhs.has_ellipsis() {
        shape.len().checked_sub(fixed)
    } else {
        (shape.len() == fixed).then_some(0)
    };
    let Some(ellipsis_dims) = ellipsis_dims else {
        let need = if lhs.has_ellipsis() { "at least " } else { "" };
        return Err(p.error(format!(
            "the input `{lhs}` needs {need}{fixed} dimension(s), but the tensor has shape {shape:?} ({} dimension(s))",
            shape.len()
        )));
    };
    let given = |name: &str| axes.iter().find(|(n, _)| *n == name).map(|(_, s)| *s);
    let mut out = Vec::new();
    let mut dim = 0;
    for item in &lhs.items {
        match item {
            Item::Ellipsis => {
                out.extend((0..ellipsis_dims).map(|i| (Label::Ellipsis(i), shape[dim + i])));
                dim += ellipsis_dims;
                continue;
            }
            Item::Axis(name) => {
                if let Some(s) = given(name).filter(|&s| s != shape[dim]) {
                    return Err(p.error(format!("axis `{name}` is given size {s}, but dimension {dim} of the tensor (shape {shape:?}) has size {}", shape[dim])));
                }
                out.push((Label::Name(name.clone()), shape[dim]));
            }
            Item::Group(names) => {
                let sizes = split_group(p, names, shape, dim, &given)?;
                out.extend(names.iter().cloned().map(Label::Name).zip(sizes));
            }
        }
        dim += 1;
    }
    Ok(out)
}

/// The sizes of the axes of one group covering dimension `dim`: the given ones, and at most one
/// inferred so that their product is the dimension's size.
fn split_group(
    p: &Pattern,
    names: &[String],
    shape: &[usize],
    dim: usize,
    given: &dyn Fn(&str) -> Option<usize>,
) -> Result<Vec<usize>> {
    let size = shape[dim];
    let group = format!("({})", names.join(" "));
    let known = names
        .iter()
        .filter_map(|n| given(n))
        .try_fold(1usize, usize::checked_mul);
    let known = known.ok_or_else(|| {
        p.error(format!(
            "the sizes given for {group} multiply to more than {}",
            usize::MAX
        ))
    })?;
    let unknown: Vec<&String> = names.iter().filter(|n| given(n).is_none()).collect();
    let givens = || {
        names
            .iter()
            .filter_map(|n| given(n).map(|s| format!("{n}={s}")))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let inferred = match unknown.as_slice() {
        [] if known == size => None,
        [] => {
            return Err(p.error(format!(
                "wrong split: {group} with {} has size {known}, but dimension {dim} of the tensor (shape {shape:?}) has size {size}",
                givens()
            )));
        }
        [one] if known > 0 && size.is_multiple_of(known) => Some((one.as_str(), size / known)),
        [one] if known == 0 => {
            return Err(p.error(format!(
                "cannot infer `{one}` in {group}: the other sizes multiply to 0 ({})",
                givens()
            )));
        }
        [one] => {
            return Err(p.error(format!(
                "wrong split: dimension {dim} of the tensor (shape {shape:?}) has size {size}, which is not divisible by {known} ({}), so `{one}` in {group} has no integer size",
                givens()
            )));
        }
        many => {
            let list: Vec<String> = many.iter().map(|n| format!("`{n}`")).collect();
            return Err(p.error(format!(
                "cannot infer the sizes of {} in {group} from dimension {dim} of size {size}: give all but one of them (e.g. `{}=…`)",
                list.join(" and "),
                many[0]
            )));
        }
    };
    Ok(names
        .iter()
        .map(|n| {
            given(n)
                .or(inferred.filter(|(m, _)| m == n).map(|(_, s)| s))
                .unwrap_or(0)
        })
        .collect())
}

/// The output's elementary axes in order (`...` expands to the input's `...` dimensions).
fn output_labels(rhs: &Side, input: &[Label]) -> Vec<Label> {
    let ellipsis: Vec<Label> = input
        .iter()
        .filter(|l| matches!(l, Label::Ellipsis(_)))
        .cloned()
        .collect();
    let mut out = Vec::new();
    for item in &rhs.items {
        match item {
            Item::Axis(name) => out.push(Label::Name(name.clone())),
            Item::Group(names) => out.extend(names.iter().cloned().map(Label::Name)),
            Item::Ellipsis => out.extend(ellipsis.iter().cloned()),
        }
    }
    out
}

/// The output shape: one dimension per axis or `...` dimension, one per group (product of its
/// axes). `sizes` are the sizes of `labels`, the output's elementary axes.
fn output_shape(rhs: &Side, labels: &[Label], sizes: &[usize]) -> Vec<usize> {
    let size_of = |name: &String| {
        labels
            .iter()
            .position(|l| *l == Label::Name(name.clone()))
            .map_or(1, |i| sizes[i])
    };
    let mut shape = Vec::new();
    for item in &rhs.items {
        match item {
            Item::Axis(name) => shape.push(size_of(name)),
            Item::Group(names) => shape.push(names.iter().map(size_of).product()),
            Item::Ellipsis => shape.extend(
                labels
                    .iter()
                    .zip(sizes)
                    .filter(|(l, _)| matches!(l, Label::Ellipsis(_)))
                    .map(|(_, &s)| s),
            ),
        }
    }
    shape
}

//! `einsum` with named axes: `"batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2"`.
//!
//! Axes named in the output are iterated over; every other axis is summed. Two operands are
//! contracted by one batched `matmul`: the axes fall into four classes, batch (in both operands
//! and kept), contracted (in both, not kept), free on the left and free on the right, and the
//! operands are permuted and reshaped to `[batch…, M, K]·[batch…, K, N]`. The matmul therefore
//! counts the contraction's FLOPs: 2 × the product of the sizes of all axes involved. Axes that
//! only one operand has and nobody needs are summed away first; more than two operands are
//! contracted pairwise, left to right.
//!
//! `...` stands for the same dimensions in every operand that has it, aligned from the right and
//! broadcast like numpy (a size 1 stretches to match); named axes must agree exactly.

use super::pattern::{Item, Pattern, Side};
use super::rearrange::Label;
use super::strided;
use crate::error::{Error, Result};
use crate::tensor::Tensor;

/// Contracts `operands` as `pattern` says (see the module documentation).
pub fn einsum(pattern: &str, operands: &[&Tensor]) -> Result<Tensor> {
    let p = Pattern::parse(pattern)?;
    p.reject_groups("einsum")?;
    if p.inputs.len() != operands.len() {
        return Err(p.error(format!(
            "the pattern has {} input(s) but {} tensor(s) were given",
            p.inputs.len(),
            operands.len()
        )));
    }
    if let Some(other) = operands.iter().find(|t| t.dtype() != operands[0].dtype()) {
        return Err(Error::DTypeMismatch {
            op: "einsum",
            lhs: operands[0].dtype().name(),
            rhs: other.dtype().name(),
        });
    }
    check_ellipsis(&p)?;
    check_output(&p)?;

    let terms = bind_operands(&p, operands)?;
    let ellipsis_rank = terms.iter().map(Term::ellipsis_rank).max().unwrap_or(0);
    let output = output_labels(&p.output, ellipsis_rank);

    let mut terms = terms.into_iter();
    let mut acc = terms
        .next()
        .ok_or_else(|| p.error("einsum needs at least one operand"))?;
    let rest: Vec<Term> = terms.collect();
    for (i, next) in rest.iter().enumerate() {
        // An axis survives this step if the output or a later operand still needs it.
        let mut keep = output.clone();
        keep.extend(rest[i + 1..].iter().flat_map(|t| t.labels.iter().cloned()));
        acc = contract(acc, next.clone(), &keep)?;
    }
    let acc = acc.sum_out(|l| !output.contains(l))?;
    let order = output
        .iter()
        .map(|l| {
            acc.position(l).ok_or_else(|| {
                p.error(format!(
                    "internal error: output axis {l:?} was lost during the contraction"
                ))
            })
        })
        .collect::<Result<Vec<usize>>>()?;
    acc.t.permute(&order)
}

/// A tensor with one label per dimension.
#[derive(Clone, Debug)]
struct Term {
    t: Tensor,
    labels: Vec<Label>,
}

impl Term {
    fn position(&self, l: &Label) -> Option<usize> {
        self.labels.iter().position(|m| m == l)
    }

    fn has(&self, l: &Label) -> bool {
        self.labels.contains(l)
    }

    fn size(&self, l: &Label) -> usize {
        self.position(l).map_or(1, |d| self.t.shape()[d])
    }

    fn ellipsis_rank(&self) -> usize {
        self.labels.iter().filter(|l| matches!(l, Label::Ellipsis(_))).count()
    }

    /// Sums over the dimensions whose labels satisfy `drop`.
    fn sum_out(self, drop: impl Fn(&Label) -> bool) -> Result<Term> {
        let dims: Vec<isize> = (0..self.labels.len())
            .filter(|&d| drop(&self.labels[d]))
            .map(|d| d as isize)
            .collect();
        if dims.is_empty() {
            return Ok(self);
        }
        let t = self.t.sum(&dims, false)?;
        let labels = self.labels.into_iter().filter(|l| !drop(l)).collect();
        Ok(Term { t, labels })
    }

    /// Permutes to `groups` concatenated and reshapes each group into one dimension, except the
    /// first (batch) group, whose dimensions stay.
    fn to_matrix(&self, batch: &[Label], rows: &[Label], cols: &[Label]) -> Result<Tensor> {
        let order: Vec<usize> = batch
            .iter()
            .chain(rows)
            .chain(cols)
            .filter_map(|l| self.position(l))
            .collect();
        let t = self.t.permute(&order)?;
        let mut shape: Vec<usize> = batch.iter().map(|l| self.size(l)).collect();
        shape.push(rows.iter().map(|l| self.size(l)).product());
        shape.push(cols.iter().map(|l| self.size(l)).product());
        strided::reshape(&t, &shape)
    }
}

/// Contracts two terms with one batched matmul; axes in `keep` survive.
fn contract(a: Term, b: Term, keep: &[Label]) -> Result<Term> {
    let a = a.sum_out(|l| !b.has(l) && !keep.contains(l))?;
    let b = b.sum_out(|l| !a.has(l) && !keep.contains(l))?;
    let classify = |from: &Term, pred: &dyn Fn(&Label) -> bool| -> Vec<Label> {
        from.labels.iter().filter(|l| pred(l)).cloned().collect()
    };
    let batch = classify(&a, &|l| b.has(l) && keep.contains(l));
    let contracted = classify(&a, &|l| b.has(l) && !keep.contains(l));
    let left = classify(&a, &|l| !b.has(l));
    let right = classify(&b, &|l| !a.has(l));

    let c = a
        .to_matrix(&batch, &left, &contracted)?
        .matmul(&b.to_matrix(&batch, &contracted, &right)?)?;
    let shape: Vec<usize> = batch
        .iter()
        .chain(&left)
        .map(|l| a.size(l))
        .chain(right.iter().map(|l| b.size(l)))
        .collect();
    let t = strided::reshape(&c, &shape)?;
    Ok(Term {
        t,
        labels: batch.into_iter().chain(left).chain(right).collect(),
    })
}

/// `...` in the output means "keep the broadcast dimensions"; it makes sense only when some input
/// has them, and an input's `...` must be kept (einsum does not sum over `...`).
fn check_ellipsis(p: &Pattern) -> Result<()> {
    let any_input = p.inputs.iter().any(Side::has_ellipsis);
    match (any_input, p.output.has_ellipsis()) {
        (false, true) => Err(p.error("`...` appears in the output but in no input")),
        (true, false) => Err(p.error("`...` appears in an input but not in the output; einsum keeps the `...` dimensions (name them to sum over them)")),
        _ => Ok(()),
    }
}

fn check_output(p: &Pattern) -> Result<()> {
    for name in p.output.names() {
        if !p.inputs.iter().any(|s| s.contains(name)) {
            return Err(p.error(format!("axis `{name}` in the output does not appear in any input")));
        }
    }
    Ok(())
}

/// Labels every operand's dimensions, checks each against its part of the pattern, checks that
/// an axis has one size everywhere, and broadcasts the `...` dimensions to a common shape.
fn bind_operands(p: &Pattern, operands: &[&Tensor]) -> Result<Vec<Term>> {
    let mut ranks = Vec::with_capacity(operands.len());
    for (i, (side, t)) in p.inputs.iter().zip(operands).enumerate() {
        let (fixed, ndim) = (side.fixed_dims(), t.ndim());
        let rank = if side.has_ellipsis() {
            ndim.checked_sub(fixed)
        } else {
            (ndim == fixed).then_some(0)
        };
        let rank = rank.ok_or_else(|| {
            let need = if side.has_ellipsis() { "at least " } else { "" };
            p.error(format!("input {} `{side}` needs {need}{fixed} dimension(s), but the tensor has shape {:?} ({ndim} dimension(s))", i + 1, t.shape()))
        })?;
        ranks.push(rank);
    }
    let e = ranks.iter().copied().max().unwrap_or(0);
    let mut terms: Vec<Term> = p
        .inputs
        .iter()
        .zip(operands)
        .zip(&ranks)
        .map(|((side, t), &rank)| {
            let labels = side
                .items
                .iter()
                .flat_map(|item| match item {
                    Item::Axis(name) => vec![Label::Name(name.clone())],
                    Item::Ellipsis => (e - rank..e).map(Label::Ellipsis).collect(),
                    Item::Group(_) => Vec::new(), // rejected before
                })
                .collect();
            Term {
                t: (*t).clone(),
                labels,
            }
        })
        .collect();

    let sizes = common_sizes(p, &terms)?;
    for term in &mut terms {
        let target: Vec<usize> = term
            .labels
            .iter()
            .map(|l| sizes.iter().find(|(m, _)| m == l).map_or(1, |(_, n)| *n))
            .collect();
        if target != term.t.shape() {
            term.t = term.t.broadcast_to(&target)?;
        }
    }
    Ok(terms)
}

/// One size per label: named axes must agree exactly, `...` dimensions broadcast.
fn common_sizes(p: &Pattern, terms: &[Term]) -> Result<Vec<(Label, usize)>> {
    let mut sizes: Vec<(Label, usize, usize)> = Vec::new(); // label, size, first input that set it
    for (i, term) in terms.iter().enumerate() {
        for (label, &n) in term.labels.iter().zip(term.t.shape()) {
            let Some(slot) = sizes.iter_mut().find(|(l, _, _)| l == label) else {
                sizes.push((label.clone(), n, i));
                continue;
            };
            match label {
                Label::Name(name) if slot.1 != n => {
                    return Err(p.error(format!(
                        "axis `{name}` has size {} in input {} (shape {:?}) but size {n} in input {} (shape {:?})",
                        slot.1,
                        slot.2 + 1,
                        terms[slot.2].t.shape(),
                        i + 1,
                        term.t.shape()
                    )));
                }
                Label::Ellipsis(_) if slot.1 != n && slot.1 != 1 && n != 1 => {
                    let dots = |t: &Term| -> Vec<usize> {
                        t.labels
                            .iter()
                            .zip(t.t.shape())
                            .filter(|(l, _)| matches!(l, Label::Ellipsis(_)))
                            .map(|(_, &s)| s)
                            .collect()
                    };
                    return Err(p.error(format!(
                        "the `...` dimensions do not broadcast: {:?} in input {} (shape {:?}) and {:?} in input {} (shape {:?})",
                        dots(&terms[slot.2]),
                        slot.2 + 1,
                        terms[slot.2].t.shape(),
                        dots(term),
                        i + 1,
                        term.t.shape()
                    )));
                }
                Label::Ellipsis(_) if slot.1 == 1 => *slot = (label.clone(), n, i),
                _ => {}
            }
        }
    }
    Ok(sizes.into_iter().map(|(l, n, _)| (l, n)).collect())
}

fn output_labels(out: &Side, ellipsis_rank: usize) -> Vec<Label> {
    out.items
        .iter()
        .flat_map(|item| match item {
            Item::Axis(name) => vec![Label::Name(name.clone())],
            Item::Ellipsis => (0..ellipsis_rank).map(Label::Ellipsis).collect(),
            Item::Group(_) => Vec::new(),
        })
        .collect()
}

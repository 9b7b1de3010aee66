//! Strided views against the reference model: random chains of select / narrow / transpose /
//! permute / broadcast_to / unsqueeze / squeeze / view / reshape / contiguous on random shapes
//! (size-1 and size-0 dimensions included), checking values, storage positions, storage sharing
//! and writes through aliases after every step.

use cs336::tensor::DType;
use cs336::{Error, Tensor};
use proptest::prelude::*;

use super::reference::{RefView, flat, indices, naive_positions};

/// Shapes of up to `max_dims` dimensions; sizes mostly 1..=4, sometimes 0.
pub fn shape_strategy(max_dims: usize) -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(
        prop_oneof![1 => Just(0usize), 4 => Just(1usize), 12 => 2..=4usize],
        0..=max_dims,
    )
}

fn dtype_strategy() -> impl Strategy<Value = DType> {
    prop::sample::select(DType::ALL.to_vec())
}

/// The state of one chain: the tensor, its model, and whether it still shares the base's storage.
struct Chain {
    t: Tensor,
    model: RefView,
    shares: bool,
}

/// Does the layout read offset, offset+1, … in row-major order? (Decided from the positions,
/// not from the strides, so it checks `is_contiguous` independently; empty tensors count as
/// contiguous, as in PyTorch.)
fn reads_consecutively(t: &Tensor) -> bool {
    naive_positions(t)
        .iter()
        .enumerate()
        .all(|(k, &p)| p == t.storage_offset() + k)
}

/// A shape with the same number of elements as `shape`, chosen by `r`.
fn other_shape(shape: &[usize], r: u32) -> Vec<usize> {
    let numel: usize = shape.iter().product();
    if numel == 0 {
        return match r % 3 {
            0 => vec![0],
            1 => vec![2, 0, 3],
            _ => vec![0, 5],
        };
    }
    // Split numel into factors, then sprinkle size-1 dimensions.
    let mut rest = numel;
    let mut out = Vec::new();
    let mut bits = r;
    let mut f = 2;
    while rest > 1 {
        if rest.is_multiple_of(f) {
            if bits & 1 == 1 && !out.is_empty() {
                *out.last_mut().unwrap() *= f;
            } else {
                out.push(f);
            }
            bits >>= 1;
            rest /= f;
        } else {
            f += 1;
        }
    }
    if bits & 1 == 1 {
        out.insert(0, 1);
    }
    if bits & 2 == 2 {
        out.push(1);
    }
    out
}

/// Applies the step encoded in `r` to the chain, asserting what each operation must do.
fn step(c: Chain, r: u32) -> Result<Chain, TestCaseError> {
    let shape = c.t.shape().to_vec();
    let n = shape.len();
    let pick = |x: u32, m: usize| (x as usize) % m.max(1);
    let (a, b) = (r >> 4, r >> 12);
    let ok = |t: cs336::Result<Tensor>| t.map_err(|e| TestCaseError::fail(format!("unexpected error: {e}")));
    Ok(match r % 10 {
        0 if n > 0 => {
            let dim = pick(a, n);
            if shape[dim] == 0 {
                prop_assert!(c.t.select(dim, 0).is_err());
                return Ok(c);
            }
            let i = pick(b, shape[dim]);
            Chain {
                t: ok(c.t.select(dim, i))?,
                model: c.model.select(dim, i),
                shares: c.shares,
            }
        }
        1 if n > 0 => {
            let dim = pick(a, n);
            let start = pick(b, shape[dim] + 1);
            let len = pick(r >> 20, shape[dim] - start + 1);
            Chain {
                t: ok(c.t.narrow(dim, start, len))?,
                model: c.model.narrow(dim, start, len),
                shares: c.shares,
            }
        }
        2 if n > 0 => {
            let (d0, d1) = (pick(a, n), pick(b, n));
            // Negative dimension numbers count from the end.
            let neg = |d: usize, bit: u32| {
                if r >> bit & 1 == 1 {
                    d as isize - n as isize
                } else {
                    d as isize
                }
            };
            Chain {
                t: ok(c.t.transpose(neg(d0, 28), neg(d1, 29)))?,
                model: c.model.transpose(d0, d1),
                shares: c.shares,
            }
        }
        3 => {
            let mut perm: Vec<usize> = (0..n).collect();
            let mut x = a as usize;
            for i in (1..n).rev() {
                perm.swap(i, x % (i + 1));
                x /= i + 1;
            }
            Chain {
                t: ok(c.t.permute(&perm))?,
                model: c.model.permute(&perm),
                shares: c.shares,
            }
        }
        4 => {
            let mut target: Vec<usize> = shape
                .iter()
                .enumerate()
                .map(|(d, &s)| if s == 1 { pick(a >> (2 * d), 4) } else { s })
                .collect();
            for k in 0..pick(b, 3) {
                target.insert(0, 1 + pick(r >> (20 + 2 * k), 3));
            }
            Chain {
                t: ok(c.t.broadcast_to(&target))?,
                model: c.model.broadcast_to(&target),
                shares: c.shares,
            }
        }
        5 => {
            let dim = pick(a, n + 1);
            Chain {
                t: ok(c.t.unsqueeze(dim))?,
                model: c.model.unsqueeze(dim),
                shares: c.shares,
            }
        }
        6 => match (0..n).filter(|&d| shape[d] == 1).nth(pick(a, n)) {
            Some(dim) => Chain {
                t: ok(c.t.squeeze(dim))?,
                model: c.model.squeeze(dim),
                shares: c.shares,
            },
            None => {
                if let Some(dim) = (0..n).find(|&d| shape[d] != 1) {
                    prop_assert!(
                        c.t.squeeze(dim).is_err(),
                        "squeeze of a size-{} dimension must fail",
                        shape[dim]
                    );
                }
                c
            }
        },
        7 => {
            let target = other_shape(&shape, a);
            match c.t.view(&target) {
                Ok(v) => {
                    prop_assert!(
                        reads_consecutively(&c.t),
                        "view succeeded on a non-contiguous layout {:?}",
                        c.t.layout()
                    );
                    prop_assert!(Tensor::same_storage(&v, &c.t));
                    Chain {
                        t: v,
                        model: c.model.reshape(&target),
                        shares: c.shares,
                    }
                }
                Err(Error::NotContiguous { op, shape: s, strides }) => {
                    prop_assert!(
                        !reads_consecutively(&c.t),
                        "view refused a contiguous layout {:?}",
                        c.t.layout()
                    );
                    prop_assert_eq!(
                        (op, s.as_slice(), strides.as_slice()),
                        ("view", c.t.shape(), c.t.strides())
                    );
                    c
                }
                Err(e) => return Err(TestCaseError::fail(format!("view: unexpected error {e}"))),
            }
        }
        8 => {
            let target = other_shape(&shape, a);
            let contiguous = reads_consecutively(&c.t);
            let t = ok(c.t.reshape(&target))?;
            prop_assert_eq!(
                Tensor::same_storage(&t, &c.t),
                contiguous,
                "reshape copies exactly when the input is not contiguous"
            );
            Chain {
                t,
                model: c.model.reshape(&target),
                shares: c.shares && contiguous,
            }
        }
        _ => {
            let contiguous = reads_consecutively(&c.t);
            let t = ok(c.t.contiguous())?;
            prop_assert!(t.is_contiguous() && reads_consecutively(&t));
            prop_assert_eq!(
                Tensor::same_storage(&t, &c.t),
                contiguous,
                "contiguous() copies exactly when needed"
            );
            Chain {
                t,
                model: c.model,
                shares: c.shares && contiguous,
            }
        }
    })
}

/// Everything the model says about a view must hold for the tensor.
fn check(c: &Chain, base: &Tensor, base_values: &[f64]) -> Result<(), TestCaseError> {
    let t = &c.t;
    prop_assert_eq!(t.shape(), c.model.shape.as_slice());
    prop_assert_eq!(t.numel(), c.model.numel());
    prop_assert_eq!(t.strides().len(), t.shape().len());
    prop_assert_eq!(Tensor::same_storage(t, base), c.shares);
    prop_assert_eq!(
        t.is_contiguous(),
        reads_consecutively(t),
        "is_contiguous disagrees for {:?}",
        t.layout()
    );

    let idx = indices(t.shape());
    let expected: Vec<f64> = idx
        .iter()
        .map(|i| base_values[flat(base.shape(), &c.model.base_index(i))])
        .collect();
    prop_assert_eq!(&t.to_vec_f64().unwrap(), &expected);

    let positions = naive_positions(t);
    prop_assert_eq!(&t.layout().storage_indices().collect::<Vec<_>>(), &positions);
    prop_assert_eq!(t.layout().max_storage_index(), positions.iter().copied().max());
    for (i, (index, &pos)) in idx.iter().zip(&positions).enumerate() {
        prop_assert_eq!(t.layout().storage_index(index).unwrap(), pos);
        prop_assert_eq!(t.get(index).unwrap(), expected[i]);
        if c.shares {
            // The base is contiguous from offset 0, so its storage position is the row-major one.
            prop_assert_eq!(pos, flat(base.shape(), &c.model.base_index(index)));
        }
    }
    Ok(())
}

/// A write through the view is seen by the base and every alias in the view; a write through the
/// base is seen by the view. Restores the old value afterwards.
fn check_writes(c: &Chain, base: &Tensor, pick: usize) -> Result<(), TestCaseError> {
    if !c.shares || c.t.numel() == 0 {
        return Ok(());
    }
    let idx = indices(c.t.shape());
    let target = &idx[pick % idx.len()];
    let base_index = c.model.base_index(target);
    let old = base.get(&base_index).unwrap();
    c.t.set(target, -7.0).unwrap();
    prop_assert_eq!(base.get(&base_index).unwrap(), -7.0);
    let flat_view = base.view(&[base.numel()]).unwrap();
    prop_assert_eq!(flat_view.get(&[flat(base.shape(), &base_index)]).unwrap(), -7.0);
    for i in &idx {
        let aliased = c.model.base_index(i) == base_index;
        prop_assert_eq!(c.t.get(i).unwrap() == -7.0, aliased, "index {:?} of the view", i);
    }
    base.set(&base_index, 5.0).unwrap();
    prop_assert_eq!(c.t.get(target).unwrap(), 5.0);
    base.set(&base_index, old).unwrap();
    Ok(())
}

proptest! {
    #![proptest_config(crate::tensor_props::config(256))]

    #[test]
    fn random_view_chains_match_the_model(
        shape in shape_strategy(4),
        dtype in dtype_strategy(),
        steps in prop::collection::vec(any::<u32>(), 0..8),
        pick in any::<usize>(),
    ) {
        let numel: usize = shape.iter().product();
        // Small integers: exact in every dtype, so values identify base positions.
        let values: Vec<f64> = (0..numel).map(|i| i as f64).collect();
        let base = Tensor::from_f64_vec(&values, &shape, dtype).unwrap();
        let mut chain = Chain { t: base.clone(), model: RefView::base(&shape), shares: true };
        check(&chain, &base, &values)?;
        for r in steps {
            chain = step(chain, r)?;
            check(&chain, &base, &values)?;
        }
        check_writes(&chain, &base, pick)?;
    }

    #[test]
    fn transpose_contiguous_round_trip(
        shape in prop::collection::vec(1..=5usize, 2..=4),
        d in (any::<usize>(), any::<usize>()),
    ) {
        let n = shape.len();
        let (d0, d1) = (d.0 % n, (d.0 % n + 1 + d.1 % (n - 1)) % n);
        let numel: usize = shape.iter().product();
        let values: Vec<f64> = (0..numel).map(|i| i as f64 * 0.5 - 3.0).collect();
        let x = Tensor::from_f64_vec(&values, &shape, DType::F32).unwrap();
        let y = x.transpose(d0 as isize, d1 as isize).unwrap();
        let model = RefView::base(&shape).transpose(d0, d1);
        prop_assert!(Tensor::same_storage(&x, &y));
        let expected: Vec<f64> = indices(y.shape()).iter().map(|i| values[flat(&shape, &model.base_index(i))]).collect();
        prop_assert_eq!(&y.to_vec_f64().unwrap(), &expected);

        let z = y.contiguous().unwrap();
        prop_assert!(z.is_contiguous());
        prop_assert_eq!(Tensor::same_storage(&z, &x), y.is_contiguous());
        prop_assert_eq!(&z.to_vec_f64().unwrap(), &expected);
        prop_assert_eq!(z.transpose(d0 as isize, d1 as isize).unwrap().to_vec_f64().unwrap(), values.clone());
        // deep_clone never shares, even when nothing needed copying.
        prop_assert!(!Tensor::same_storage(&x.deep_clone().unwrap(), &x));

        if !y.is_contiguous() {
            match y.view(&[numel]) {
                Err(Error::NotContiguous { op, shape: s, strides }) => {
                    prop_assert_eq!(op, "view");
                    prop_assert_eq!(s.as_slice(), y.shape());
                    prop_assert_eq!(strides.as_slice(), y.strides());
                }
                other => return Err(TestCaseError::fail(format!("view of a transpose: expected NotContiguous, got {other:?}"))),
            }
            let r = y.reshape(&[numel]).unwrap();
            prop_assert!(!Tensor::same_storage(&r, &x));
            prop_assert_eq!(&r.to_vec_f64().unwrap(), &expected);
            // The copy is independent: writing to it leaves x alone.
            r.set(&[0], 100.0).unwrap();
            prop_assert_eq!(x.to_vec_f64().unwrap(), values.clone());
        }
    }
}

/// The lecture's own example: a row is a view, a column is a view, and a write through the row
/// shows up in the column and in the original.
#[test]
fn lecture_slicing_example_shares_storage() {
    let x = Tensor::from_data(&[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], DType::F32).unwrap();
    let row = x.select(0, 0).unwrap();
    let col = x.select(1, 1).unwrap();
    assert!(Tensor::same_storage(&x, &row) && Tensor::same_storage(&x, &col));
    assert_eq!(col.to_vec_f64().unwrap(), vec![2.0, 5.0]);
    row.set(&[1], 42.0).unwrap();
    assert_eq!(col.get(&[0]).unwrap(), 42.0);
    assert_eq!(x.get(&[0, 1]).unwrap(), 42.0);
    assert_eq!(x.layout().storage_index(&[1, 2]).unwrap(), 5);
    assert_eq!(x.t().unwrap().layout().storage_index(&[2, 1]).unwrap(), 5);
}

/// Bug found by the chains above: a size-0 dimension made `is_contiguous` false for most empty
/// views, so `view` of an empty slice failed (PyTorch calls every empty tensor contiguous). An
/// empty slice's offset can lie past the end of its storage; reading it must not panic.
#[test]
fn empty_slices_are_contiguous_and_readable() {
    let x = Tensor::arange(6, DType::F32).unwrap().view(&[2, 3]).unwrap();
    let columns = x.narrow(1, 3, 0).unwrap(); // x[:, 3:]
    assert_eq!(columns.shape(), [2, 0]);
    assert!(columns.is_contiguous());
    assert_eq!(columns.view(&[0]).unwrap().shape(), [0]);
    let past_end = x.narrow(0, 2, 0).unwrap().narrow(1, 3, 0).unwrap();
    assert_eq!(past_end.storage_offset(), 9); // beyond the 6 elements of storage
    assert!(past_end.is_contiguous());
    assert_eq!(past_end.to_vec_f64().unwrap(), Vec::<f64>::new());
    assert_eq!(past_end.contiguous().unwrap().shape(), [0, 0]);
    assert_eq!(past_end.add(&past_end).unwrap().shape(), [0, 0]);
    assert_eq!(past_end.sum(&[0], false).unwrap().shape(), [0]);
    // Sums over an empty dimension are 0; k = 0 matmuls are all zeros.
    assert_eq!(columns.sum(&[1], false).unwrap().to_vec_f64().unwrap(), vec![0.0, 0.0]);
    let w = Tensor::zeros(&[0, 4], DType::F32).unwrap();
    assert_eq!(columns.matmul(&w).unwrap().to_vec_f64().unwrap(), vec![0.0; 8]);
}

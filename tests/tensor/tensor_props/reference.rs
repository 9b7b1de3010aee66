//! A naive reference model of strided views, written without strides: a view is its shape plus a
//! function from its logical index to the logical index of the base tensor it was cut from. Each
//! view operation composes one more index map. Nothing here shares code with the library.

use std::rc::Rc;

use cs336::Tensor;
use cs336::tensor::{BufferElement, Element};

/// Every index of `shape` in row-major order (one empty index for a 0-d shape).
pub fn indices(shape: &[usize]) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new()];
    for &n in shape {
        out = out
            .into_iter()
            .flat_map(|prefix| (0..n).map(move |i| [prefix.clone(), vec![i]].concat()))
            .collect();
    }
    out
}

/// Row-major position of `index` in `shape`.
pub fn flat(shape: &[usize], index: &[usize]) -> usize {
    index.iter().zip(shape).fold(0, |acc, (&i, &n)| acc * n + i)
}

/// The index at row-major position `pos` of `shape`.
pub fn unflat(shape: &[usize], mut pos: usize) -> Vec<usize> {
    let mut out = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        out[d] = pos % shape[d];
        pos /= shape[d];
    }
    out
}

type IndexMap = Rc<dyn Fn(&[usize]) -> Vec<usize>>;

/// A view in the model: its shape and where each of its indices lands in the base.
#[derive(Clone)]
pub struct RefView {
    pub shape: Vec<usize>,
    map: IndexMap,
}

impl RefView {
    pub fn base(shape: &[usize]) -> RefView {
        RefView {
            shape: shape.to_vec(),
            map: Rc::new(|i: &[usize]| i.to_vec()),
        }
    }

    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// The base index that view index `i` reads.
    pub fn base_index(&self, i: &[usize]) -> Vec<usize> {
        (self.map)(i)
    }

    fn then(&self, shape: Vec<usize>, f: impl Fn(&[usize]) -> Vec<usize> + 'static) -> RefView {
        let parent = Rc::clone(&self.map);
        RefView {
            shape,
            map: Rc::new(move |i: &[usize]| parent(&f(i))),
        }
    }

    pub fn select(&self, dim: usize, index: usize) -> RefView {
        let mut shape = self.shape.clone();
        shape.remove(dim);
        self.then(shape, move |i| {
            let mut j = i.to_vec();
            j.insert(dim, index);
            j
        })
    }

    pub fn narrow(&self, dim: usize, start: usize, len: usize) -> RefView {
        let mut shape = self.shape.clone();
        shape[dim] = len;
        self.then(shape, move |i| {
            let mut j = i.to_vec();
            j[dim] += start;
            j
        })
    }

    pub fn transpose(&self, a: usize, b: usize) -> RefView {
        let mut shape = self.shape.clone();
        shape.swap(a, b);
        self.then(shape, move |i| {
            let mut j = i.to_vec();
            j.swap(a, b);
            j
        })
    }

    /// Output dimension `j` is input dimension `perm[j]`.
    pub fn permute(&self, perm: &[usize]) -> RefView {
        let shape = perm.iter().map(|&p| self.shape[p]).collect();
        let perm = perm.to_vec();
        self.then(shape, move |i| {
            let mut j = vec![0; i.len()];
            for (out_d, &in_d) in perm.iter().enumerate() {
                j[in_d] = i[out_d];
            }
            j
        })
    }

    pub fn broadcast_to(&self, shape: &[usize]) -> RefView {
        let old = self.shape.clone();
        let lead = shape.len() - old.len();
        self.then(shape.to_vec(), move |i| {
            old.iter()
                .enumerate()
                .map(|(d, &n)| if n == 1 { 0 } else { i[lead + d] })
                .collect()
        })
    }

    pub fn unsqueeze(&self, dim: usize) -> RefView {
        let mut shape = self.shape.clone();
        shape.insert(dim, 1);
        self.then(shape, move |i| {
            let mut j = i.to_vec();
            j.remove(dim);
            j
        })
    }

    pub fn squeeze(&self, dim: usize) -> RefView {
        let mut shape = self.shape.clone();
        shape.remove(dim);
        self.then(shape, move |i| {
            let mut j = i.to_vec();
            j.insert(dim, 0);
            j
        })
    }

    /// A reshape read in row-major order (the same for `view` and a copying `reshape`).
    pub fn reshape(&self, shape: &[usize]) -> RefView {
        let old = self.shape.clone();
        let new = shape.to_vec();
        self.then(shape.to_vec(), move |i| unflat(&old, flat(&new, i)))
    }
}

/// Storage positions of a layout computed the obvious way: offset + Σ index·stride.
pub fn naive_positions(t: &Tensor) -> Vec<usize> {
    indices(t.shape())
        .iter()
        .map(|i| t.storage_offset() + i.iter().zip(t.strides()).map(|(a, b)| a * b).sum::<usize>())
        .collect()
}

/// Builds a tensor whose logical values (row-major) are `values`, stored in one of several
/// layouts, so every op is exercised on contiguous and strided operands alike:
/// 0 contiguous; 1 all dimensions reversed in storage (then permuted back); 2 the last dimension
/// padded in storage (then narrowed); 3 the last two dimensions swapped in storage (then
/// transposed back); 4 padded in every dimension, with a storage offset.
pub fn stored_as<T: BufferElement>(values: &[T], shape: &[usize], kind: u8, filler: T) -> Tensor {
    let n = shape.len();
    let kind = if n == 0 {
        0
    } else if n < 2 && kind == 3 {
        1
    } else {
        kind % 5
    };
    let logical = |i: &[usize]| values[flat(shape, i)];
    let t = match kind {
        0 => Tensor::from_vec(values.to_vec(), shape).unwrap(),
        1 => {
            let rev: Vec<usize> = shape.iter().rev().copied().collect();
            let data = indices(&rev)
                .iter()
                .map(|j| logical(&j.iter().rev().copied().collect::<Vec<_>>()))
                .collect();
            let perm: Vec<usize> = (0..n).rev().collect();
            Tensor::from_vec(data, &rev).unwrap().permute(&perm).unwrap()
        }
        2 => {
            let mut padded = shape.to_vec();
            padded[n - 1] += 3;
            let data = indices(&padded)
                .iter()
                .map(|j| {
                    if j[n - 1] >= 1 && j[n - 1] <= shape[n - 1] {
                        logical(&[&j[..n - 1], &[j[n - 1] - 1]].concat())
                    } else {
                        filler
                    }
                })
                .collect();
            Tensor::from_vec(data, &padded)
                .unwrap()
                .narrow(n - 1, 1, shape[n - 1])
                .unwrap()
        }
        3 => {
            let mut swapped = shape.to_vec();
            swapped.swap(n - 2, n - 1);
            let data = indices(&swapped)
                .iter()
                .map(|j| {
                    let mut i = j.clone();
                    i.swap(n - 2, n - 1);
                    logical(&i)
                })
                .collect();
            Tensor::from_vec(data, &swapped).unwrap().transpose(-2, -1).unwrap()
        }
        _ => {
            let padded: Vec<usize> = shape.iter().map(|&s| s + 2).collect();
            let data = indices(&padded)
                .iter()
                .map(|j| {
                    let inside = j.iter().zip(shape).all(|(&a, &s)| a >= 1 && a <= s);
                    if inside {
                        logical(&j.iter().map(|a| a - 1).collect::<Vec<_>>())
                    } else {
                        filler
                    }
                })
                .collect();
            let mut t = Tensor::from_vec(data, &padded).unwrap();
            for (d, &s) in shape.iter().enumerate() {
                t = t.narrow(d, 1, s).unwrap();
            }
            t
        }
    };
    assert_eq!(t.shape(), shape);
    t
}

/// Values of a dtype drawn from N(0, scale²), already rounded into the dtype, so the references
/// below start from exactly the numbers the library sees.
pub fn random_values<T: Element>(n: usize, scale: f64, rng: &mut cs336::rng::Rng) -> Vec<T> {
    (0..n).map(|_| T::from_f64(scale * rng.normal())).collect()
}

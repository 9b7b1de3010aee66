use super::*;
use crate::base::Layout;
use crate::device::cuda::blas::plan;

#[test]
fn sixteen_bit_products_take_cublaslt_where_it_was_found() {
    for mode in [GemmMode::Bf16, GemmMode::Bf16F32Out, GemmMode::Fp16] {
        assert_eq!(
            route_for(mode, GemmRoute::CublasLt, true),
            GemmRoute::CublasLt,
            "{}",
            mode.name()
        );
        assert_eq!(
            route_for(mode, GemmRoute::CublasLt, false),
            GemmRoute::Cublas,
            "{}",
            mode.name()
        );
        assert_eq!(
            route_for(mode, GemmRoute::Cublas, true),
            GemmRoute::Cublas,
            "{}",
            mode.name()
        );
    }
    for mode in [GemmMode::Fp32, GemmMode::Fp32Default, GemmMode::Tf32] {
        assert_eq!(
            route_for(mode, GemmRoute::CublasLt, true),
            GemmRoute::Cublas,
            "{}",
            mode.name()
        );
    }
    for route in [GemmRoute::CublasLt, GemmRoute::Cublas] {
        assert_eq!(GemmRoute::from_u8(route.to_u8()), route);
    }
}

#[test]
fn hopper_gets_the_larger_workspace() {
    assert_eq!(workspace_bytes(9), 32 * 1024 * 1024);
    assert_eq!(workspace_bytes(10), 32 * 1024 * 1024);
    assert_eq!(workspace_bytes(8), 4 * 1024 * 1024);
}

#[test]
fn alignments_are_the_largest_power_of_two_up_to_256() {
    for (address, want) in [
        (0, 256),
        (0x7f00_0000_0000, 256),
        (0x1100, 256),
        (0x1080, 128),
        (0x1010, 16),
        (0x1002, 2),
        (0x1001, 1),
    ] {
        assert_eq!(alignment(address), want, "{address:#x}");
    }
}

#[test]
fn the_first_candidate_that_succeeded_and_fits_is_chosen() {
    let c = |succeeded, workspace_bytes| Candidate {
        succeeded,
        workspace_bytes,
    };
    let w = HOPPER_WORKSPACE_BYTES;
    assert_eq!(choose(&[c(true, 0), c(true, 1024)], w), Ok(0));
    assert_eq!(choose(&[c(false, 0), c(true, w + 1), c(true, w), c(true, 0)], w), Ok(2));
    let none = choose(&[], w).expect_err("no candidates");
    assert!(none.contains("no algorithm"), "{none}");
    let none = choose(&[c(false, 0), c(true, w + 1)], w).expect_err("none fits");
    assert!(
        none.contains("of 2 candidates, 1 failed") && none.contains(&w.to_string()),
        "{none}"
    );
}

/// Multiplies through the layouts as cuBLASLt reads them (column-major, each operand from its
/// own address, transposed where the layout says), batch by batch: D = op(A)·op(B).
fn multiply_as_cublaslt(l: &LtLayouts, a: &[f64], b: &[f64], d: &mut [f64]) {
    let at = |m: &LtMatrix, data: &[f64], batch: usize, i: u64, j: u64| {
        // Element (i, j) of op(M): stored (j, i) when transposed.
        let (r, c) = if m.transpose { (j, i) } else { (i, j) };
        data[batch * m.batch_stride as usize + r as usize + c as usize * m.ld as usize]
    };
    let (rows, cols) = (l.d.rows, l.d.cols);
    let inner = if l.a.transpose { l.a.rows } else { l.a.cols };
    for batch in 0..l.batch as usize {
        for i in 0..rows {
            for j in 0..cols {
                let sum: f64 = (0..inner)
                    .map(|p| at(&l.a, a, batch, i, p) * at(&l.b, b, batch, p, j))
                    .sum();
                d[batch * l.d.batch_stride as usize + i as usize + j as usize * l.d.ld as usize] = sum;
            }
        }
    }
}

/// Row-major C = A·B read through the layouts directly, element by element.
fn multiply_rows(la: &Layout, a: &[f64], lb: &Layout, b: &[f64]) -> Vec<f64> {
    let nd = la.ndim();
    let (m, k, n) = (la.shape[nd - 2], la.shape[nd - 1], lb.shape[nd - 1]);
    let batch: usize = la.shape[..nd - 2].iter().product();
    let index = |l: &Layout, flat_batch: usize, i: usize, j: usize| {
        let mut rest = flat_batch;
        let mut pos = l.offset;
        for d in (0..nd - 2).rev() {
            pos += (rest % l.shape[d]) * l.strides[d];
            rest /= l.shape[d];
        }
        pos + i * l.strides[nd - 2] + j * l.strides[nd - 1]
    };
    let mut out = vec![0.0; batch * m * n];
    for t in 0..batch {
        for i in 0..m {
            for j in 0..n {
                out[(t * m + i) * n + j] = (0..k).map(|p| a[index(la, t, i, p)] * b[index(lb, t, p, j)]).sum();
            }
        }
    }
    out
}

fn strided(shape: &[usize], strides: &[usize], offset: usize) -> Layout {
    Layout {
        shape: shape.to_vec(),
        strides: strides.to_vec(),
        offset,
    }
}

/// The layouts compute the row-major product for every kind of plan: contiguous operands,
/// transposed views on either side, an offset slice, a batch folded into rows and a strided batch.
#[test]
fn the_layouts_multiply_like_the_row_major_product() {
    let cases = [
        (Layout::contiguous(&[5, 3]), Layout::contiguous(&[3, 4])),
        (Layout::contiguous(&[5, 3]), strided(&[3, 4], &[1, 3], 0)),
        (strided(&[5, 3], &[1, 5], 0), Layout::contiguous(&[3, 4])),
        (strided(&[5, 3], &[1, 5], 0), strided(&[3, 4], &[1, 3], 0)),
        (strided(&[5, 3], &[7, 1], 2), Layout::contiguous(&[3, 4])),
        (
            Layout::contiguous(&[2, 3, 5, 3]),
            strided(&[2, 3, 3, 4], &[0, 0, 4, 1], 0),
        ),
        (Layout::contiguous(&[3, 5, 3]), Layout::contiguous(&[3, 3, 4])),
        (Layout::contiguous(&[1, 3]), Layout::contiguous(&[3, 1])),
    ];
    for (la, lb) in cases {
        let size = |l: &Layout| l.offset + l.shape.iter().zip(&l.strides).map(|(s, t)| (s - 1) * t).sum::<usize>() + 1;
        let a: Vec<f64> = (0..size(&la)).map(|i| (i as f64 * 0.37).sin()).collect();
        let b: Vec<f64> = (0..size(&lb)).map(|i| (i as f64 * 0.53).cos()).collect();
        let p = plan(&la, &lb).expect("no copy needed");
        let l = layouts(&p).expect("small sizes");
        // cuBLASLt's A is our B from its offset, its B our A from its offset.
        let mut d = vec![f64::NAN; p.batch * p.m * p.n];
        multiply_as_cublaslt(&l, &b[p.b.offset..], &a[p.a.offset..], &mut d);
        let want = multiply_rows(&la, &a, &lb, &b);
        assert_eq!(d.len(), want.len(), "{la:?} · {lb:?}");
        for (x, y) in d.iter().zip(&want) {
            assert!((x - y).abs() < 1e-12, "{la:?} · {lb:?}: {d:?} against {want:?}");
        }
    }
}

#[test]
fn sizes_beyond_cublaslts_integers_are_refused() {
    let mut p = plan(&Layout::contiguous(&[2, 3]), &Layout::contiguous(&[3, 4])).expect("plan");
    p.batch = i32::MAX as usize + 1;
    let err = layouts(&p).expect_err("too many").to_string();
    assert!(err.contains("batch") && err.contains("cuBLASLt"), "{err}");
}

/// cuBLASLt gets the very compute and data types `mode.rs` chooses for cuBLAS (the two enums are
/// generated separately from one header, so their values must match one for one).
#[test]
fn cublaslt_types_are_the_cublas_choices() {
    for mode in [
        GemmMode::Fp32,
        GemmMode::Fp32Default,
        GemmMode::Tf32,
        GemmMode::Bf16,
        GemmMode::Bf16F32Out,
        GemmMode::Fp16,
    ] {
        assert_eq!(compute_type(mode) as u32, mode.compute_type() as u32, "{}", mode.name());
        for dtype in [mode.input_dtype(), mode.output_dtype()] {
            assert_eq!(
                data_type(dtype) as u32,
                crate::device::cuda::blas::mode::data_type(dtype) as u32,
                "{}",
                mode.name()
            );
        }
    }
}

/// The kept answer is reused only for the same question: the same product at other addresses of
/// the same alignment asks it again; another alignment, a view's offset that changes one, another
/// layout or another arithmetic asks a new one.
#[test]
fn a_question_is_the_product_its_layouts_and_its_alignments() {
    let (la, lb) = (Layout::contiguous(&[64, 32]), Layout::contiguous(&[32, 16]));
    let p = plan(&la, &lb).expect("no copy needed");
    let at = |a: u64, b: u64, c: u64| GemmPtrs { a, b, c };
    let ask = |mode, p: &GemmPlan, ptrs| Question::of(mode, p, ptrs).expect("small sizes");
    let q = ask(GemmMode::Bf16, &p, at(1 << 20, 2 << 20, 3 << 20));
    assert_eq!(q.alignments, [256; 4]);
    assert_eq!(q, ask(GemmMode::Bf16, &p, at(5 << 20, 6 << 20, 7 << 20)));
    assert_ne!(q, ask(GemmMode::Bf16, &p, at(1 << 20, 2 << 20, (3 << 20) + 16)));
    assert_ne!(q, ask(GemmMode::Bf16F32Out, &p, at(1 << 20, 2 << 20, 3 << 20)));
    // Our B starting one bf16 element in: cuBLASLt's A is then 2-byte aligned.
    let offset = plan(&la, &strided(&[32, 16], &[16, 1], 1)).expect("no copy needed");
    let q_offset = ask(GemmMode::Bf16, &offset, at(1 << 20, 2 << 20, 3 << 20));
    assert_eq!(q_offset.alignments[0], 2);
    assert_ne!(q, q_offset);
    let wider = plan(&la, &Layout::contiguous(&[32, 17])).expect("no copy needed");
    assert_ne!(q, ask(GemmMode::Bf16, &wider, at(1 << 20, 2 << 20, 3 << 20)));
}

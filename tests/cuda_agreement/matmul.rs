//! Matrix products in every layout and precision, GPU against an f64 product.

use super::*;

#[test]
fn matmul_agrees_in_every_layout_and_precision() {
    let Some((dev, _g)) = gpu() else { return };
    let was = dev.set_f32_matmul(F32Matmul::Default);
    for dtype in FLOATS {
        let a = random(70, 50, dtype, 8);
        let b = random(50, 30, dtype, 9);
        let (ga, gb) = (on(&a, &dev), on(&b, &dev));
        // fp32 lands far under 1e-5; bf16/f16 outputs are rounded to 8/11 significant bits.
        let tol = match dtype {
            DType::F32 => 1e-5,
            DType::BF16 => 1e-2,
            _ => 2e-3,
        };
        let cases: Vec<(&str, Tensor, Tensor, Tensor, Tensor)> = vec![
            ("plain", a.clone(), b.clone(), ga.clone(), gb.clone()),
            (
                "transposed left",
                a.t().unwrap().contiguous().unwrap().t().unwrap(),
                b.clone(),
                ga.t().unwrap().contiguous().unwrap().t().unwrap(),
                gb.clone(),
            ),
            (
                "transposed right",
                a.clone(),
                b.t().unwrap().contiguous().unwrap().t().unwrap(),
                ga.clone(),
                gb.t().unwrap().contiguous().unwrap().t().unwrap(),
            ),
            (
                "sliced",
                a.narrow(1, 5, 40).unwrap(),
                b.narrow(0, 5, 40).unwrap(),
                ga.narrow(1, 5, 40).unwrap(),
                gb.narrow(0, 5, 40).unwrap(),
            ),
        ];
        for (name, ca, cb, xa, xb) in cases {
            let got = xa.matmul(&xb).unwrap();
            let want = ca.matmul(&cb).unwrap();
            assert_eq!(got.shape(), want.shape(), "{dtype} {name}");
            let e = rel_error(&ca.contiguous().unwrap(), &cb.contiguous().unwrap(), &got);
            assert!(e < tol, "{dtype} {name}: relative error {e:e} (tolerance {tol:e})");
        }
        // Batched: independent batches, a shared right operand (folded), broadcast batch dims.
        let x = Tensor::from_f64_vec(
            &random(1, 4 * 3 * 7 * 5, dtype, 10).to_vec_f64().unwrap(),
            &[4, 3, 7, 5],
            dtype,
        )
        .unwrap();
        let w = Tensor::from_f64_vec(
            &random(1, 4 * 3 * 5 * 6, dtype, 11).to_vec_f64().unwrap(),
            &[4, 3, 5, 6],
            dtype,
        )
        .unwrap();
        let shared = random(5, 6, dtype, 12);
        let bcast = Tensor::from_f64_vec(
            &random(1, 3 * 5 * 6, dtype, 13).to_vec_f64().unwrap(),
            &[3, 5, 6],
            dtype,
        )
        .unwrap();
        for (name, rhs) in [("batched", &w), ("shared", &shared), ("broadcast batch", &bcast)] {
            let want = x.matmul(rhs).unwrap();
            let got = on(&x, &dev).matmul(&on(rhs, &dev)).unwrap();
            assert_frobenius(&format!("{dtype} {name} matmul"), &want, &got, tol);
        }
        // Vectors: matrix-vector, vector-matrix, dot.
        let v = random(1, 50, dtype, 14).squeeze(0).unwrap();
        let u = random(1, 70, dtype, 18).squeeze(0).unwrap();
        let (gv, gu) = (on(&v, &dev), on(&u, &dev));
        assert_frobenius(
            &format!("{dtype} matrix @ vector"),
            &a.matmul(&v).unwrap(),
            &ga.matmul(&gv).unwrap(),
            tol,
        );
        assert_frobenius(
            &format!("{dtype} vector @ matrix"),
            &u.matmul(&a).unwrap(),
            &gu.matmul(&ga).unwrap(),
            tol,
        );
        assert_frobenius(
            &format!("{dtype} vector @ vector"),
            &v.matmul(&v).unwrap(),
            &gv.matmul(&gv).unwrap(),
            tol,
        );
    }
    // TF32: the same f32 inputs give a less precise product (10-bit mantissas in), still close.
    // Large enough that cuBLAS uses tensor cores when it may.
    let a = random(512, 1024, DType::F32, 15);
    let b = random(1024, 256, DType::F32, 16);
    let (ga, gb) = (on(&a, &dev), on(&b, &dev));
    let fp32 = ga.matmul(&gb).unwrap();
    dev.set_f32_matmul(F32Matmul::Pedantic);
    let pedantic = ga.matmul(&gb).unwrap();
    dev.set_f32_matmul(F32Matmul::Tf32);
    let tf32 = ga.matmul(&gb).unwrap();
    dev.set_f32_matmul(was);
    let (e32, epd, etf) = (
        rel_error(&a, &b, &fp32),
        rel_error(&a, &b, &pedantic),
        rel_error(&a, &b, &tf32),
    );
    assert!(
        e32 < 1e-5 && epd < 1e-5 && etf > 10.0 * e32 && etf < 5e-3,
        "fp32 error {e32:e}, pedantic fp32 error {epd:e}, tf32 error {etf:e}"
    );
    // bf16 inputs with an f32 output.
    let (a16, b16) = (ga.to_dtype(DType::BF16).unwrap(), gb.to_dtype(DType::BF16).unwrap());
    let out = {
        let (x, y) = (a16.storage().read(), b16.storage().read());
        let (Buffer::Cuda(x), Buffer::Cuda(y)) = (&*x, &*y) else {
            panic!("on the GPU")
        };
        cuda::matmul_with(GemmMode::Bf16F32Out, x, a16.layout(), y, b16.layout()).unwrap()
    };
    assert_eq!(out.dtype(), DType::F32);
    let host = cuda::download(&out, 0..out.len()).unwrap();
    let got = Tensor::from_f64_vec(
        &(0..host.len()).map(|i| host.get_f64(i).unwrap()).collect::<Vec<_>>(),
        &[512, 256],
        DType::F32,
    )
    .unwrap();
    // Against the exact (f64) product of the same bf16 values. Tensor cores multiply bf16
    // exactly but add into their f32 accumulators with truncation (seen on an H200: elementwise
    // up to 6e-4 of max(|want|, 1) at k = 1024), so the test is norm-wise: far under the error of
    // rounding the output to bf16, which the bf16-output product shows beside it.
    let (a16h, b16h) = (a.to_dtype(DType::BF16).unwrap(), b.to_dtype(DType::BF16).unwrap());
    let f32_out = rel_error(&a16h, &b16h, &got);
    let bf16_out = rel_error(
        &a16h,
        &b16h,
        &a16.matmul(&b16).unwrap().to_device(&Device::Cpu).unwrap(),
    );
    assert!(
        f32_out < 1e-4 && bf16_out > 3.0 * f32_out,
        "bf16 inputs: relative error {f32_out:e} with an f32 output, {bf16_out:e} with a bf16 output"
    );
}

/// cuBLASLt's heuristic search runs once per distinct product: the same product again reuses its
/// answer (and gets the same bits); another shape searches anew.
#[test]
fn cublaslt_searches_once_per_product() {
    let Some((dev, _g)) = gpu() else { return };
    let backend = &dev.cuda().expect("a GPU").0;
    let Some(before) = backend.lt_searches() else {
        eprintln!("skipped: no cuBLASLt ({:?})", backend.lt_unavailable());
        return;
    };
    let (a, b) = (random(48, 40, DType::BF16, 21), random(40, 24, DType::BF16, 22));
    let (ga, gb) = (on(&a, &dev), on(&b, &dev));
    let first = ga.matmul(&gb).expect("product");
    let searched = backend.lt_searches().expect("cuBLASLt");
    assert_eq!(searched, before + 1, "a new product searches once");
    let again = ga.matmul(&gb).expect("product");
    assert_eq!(
        backend.lt_searches(),
        Some(searched),
        "the same product asks nothing new"
    );
    assert_agree("the same product again", &first, &again, 0.0);
    let other = random(40, 25, DType::BF16, 23);
    ga.matmul(&on(&other, &dev)).expect("product");
    assert_eq!(backend.lt_searches(), Some(searched + 1), "another shape searches anew");
}

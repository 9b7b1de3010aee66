//! Copies, casts, triu and fills; element access and device rules; random fills.

use super::*;

#[test]
fn copies_casts_triu_and_fills_agree() {
    let Some((dev, _g)) = gpu() else { return };
    let specials = [
        0.0,
        -0.0,
        1.5,
        -2.5,
        3.7,
        1e10,
        -1e10,
        65504.0,
        70000.0,
        3.0e38,
        f64::NAN,
        f64::INFINITY,
        -f64::INFINITY,
        1e-40,
        2147483647.0,
        -9.3e18,
    ];
    for from in DType::ALL {
        let x = random(23, 31, from, 17);
        let s = Tensor::from_data(&specials, from).unwrap();
        let (gx, gs) = (on(&x, &dev), on(&s, &dev));
        assert_agree(
            &format!("contiguous {from}"),
            &x.t().unwrap().contiguous().unwrap(),
            &gx.t().unwrap().contiguous().unwrap(),
            0.0,
        );
        assert_agree(
            &format!("round trip {from}"),
            &x,
            &gx.to_device(&Device::Cpu).unwrap().to_device(&dev).unwrap(),
            0.0,
        );
        for to in DType::ALL {
            assert_agree(
                &format!("cast {from} -> {to}"),
                &x.t().unwrap().to_dtype(to).unwrap(),
                &gx.t().unwrap().to_dtype(to).unwrap(),
                0.0,
            );
            assert_agree(
                &format!("cast {from} -> {to} specials"),
                &s.to_dtype(to).unwrap(),
                &gs.to_dtype(to).unwrap(),
                0.0,
            );
        }
        for diagonal in [-2, 0, 1, 5] {
            assert_agree(
                &format!("triu({diagonal}) {from}"),
                &x.triu(diagonal).unwrap(),
                &gx.triu(diagonal).unwrap(),
                0.0,
            );
            assert_agree(
                &format!("triu({diagonal}) {from} transposed"),
                &x.t().unwrap().triu(diagonal).unwrap(),
                &gx.t().unwrap().triu(diagonal).unwrap(),
                0.0,
            );
        }
        for value in [0.0, 1.0, -2.75, 0.1, 1e20] {
            let want = Tensor::full(&[7, 9], value, from).unwrap();
            assert_agree(
                &format!("full({value}) {from}"),
                &want,
                &Tensor::full_on(&[7, 9], value, from, &dev).unwrap(),
                0.0,
            );
        }
    }
}

#[test]
fn element_access_and_device_rules() {
    let Some((dev, _g)) = gpu() else { return };
    let x = on(&Tensor::arange(12, DType::F32).unwrap().view(&[3, 4]).unwrap(), &dev);
    assert_eq!(x.get(&[2, 1]).unwrap(), 9.0);
    let t = x.t().unwrap();
    x.set(&[0, 3], 100.0).unwrap();
    assert_eq!(
        t.get(&[3, 0]).unwrap(),
        100.0,
        "a write is seen through a view of the same GPU storage"
    );
    assert_eq!(x.to_vec::<f32>().unwrap()[3], 100.0);
    assert_eq!(x.device().to_string(), "cuda:0");
    let cpu = Tensor::ones(&[3, 4], DType::F32).unwrap();
    assert!(
        matches!(x.add(&cpu), Err(Error::DeviceMismatch { .. })),
        "CPU and GPU tensors do not mix"
    );
    let pinned = Tensor::arange(1000, DType::I32)
        .unwrap()
        .to_device_pinned(&dev)
        .unwrap();
    assert_agree(
        "pinned upload",
        &Tensor::arange(1000, DType::I32).unwrap(),
        &pinned,
        0.0,
    );
}

#[test]
fn random_fills_have_the_right_distribution_and_repeat_from_a_seed() {
    let Some((dev, _g)) = gpu() else { return };
    for dtype in FLOATS {
        let n = 1 << 20;
        let x = Tensor::randn_on(&[n], dtype, &dev, &mut Rng::seed(3)).unwrap();
        let v = x.to_vec_f64().unwrap();
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(
            mean.abs() < 5e-3 && (var - 1.0).abs() < 1e-2,
            "{dtype}: mean {mean}, variance {var}"
        );
        let again = Tensor::randn_on(&[n], dtype, &dev, &mut Rng::seed(3))
            .unwrap()
            .to_vec_f64()
            .unwrap();
        assert_eq!(v, again, "{dtype}: the same seed gives the same samples");
        let u = Tensor::rand_on(&[n], dtype, &dev, &mut Rng::seed(4))
            .unwrap()
            .to_vec_f64()
            .unwrap();
        let umean = u.iter().sum::<f64>() / n as f64;
        assert!(
            u.iter().all(|&x| (0.0..=1.0).contains(&x)) && (umean - 0.5).abs() < 5e-3,
            "{dtype}: uniform mean {umean}"
        );
    }
}

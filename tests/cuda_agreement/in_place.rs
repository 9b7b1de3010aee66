//! In-place updates through the tensor API.

use super::*;

#[test]
fn in_place_updates_through_the_tensor_api_agree() {
    let Some((dev, _g)) = gpu() else { return };
    for dtype in FLOATS {
        let p0 = random(17, 29, dtype, 40);
        let g = random(17, 29, dtype, 41);
        let (cp, cs) = (p0.deep_clone().unwrap(), Tensor::zeros(&[17, 29], dtype).unwrap());
        let (gp, gs, gg) = (
            on(&p0, &dev),
            Tensor::zeros_on(&[17, 29], dtype, &dev).unwrap(),
            on(&g, &dev),
        );
        for _ in 0..3 {
            cp.adagrad_update_(&cs, &g, 0.05, 1e-5).unwrap();
            gp.adagrad_update_(&gs, &gg, 0.05, 1e-5).unwrap();
        }
        assert_agree(&format!("adagrad_update_ {dtype}"), &cp, &gp, 0.0);
        assert_agree(&format!("adagrad state {dtype}"), &cs, &gs, 0.0);
        cp.sgd_update_(&g, 0.3).unwrap();
        gp.sgd_update_(&gg, 0.3).unwrap();
        assert_agree(&format!("sgd_update_ {dtype}"), &cp, &gp, 0.0);
        // copy_from converts and copies in place, from any layout.
        cp.copy_from(&g.t().unwrap().contiguous().unwrap().t().unwrap())
            .unwrap();
        gp.copy_from(&gg.t().unwrap().contiguous().unwrap().t().unwrap())
            .unwrap();
        assert_agree(&format!("copy_from {dtype}"), &cp, &gp, 0.0);
        assert!(
            matches!(gp.sgd_update_(&g, 0.1), Err(Error::DeviceMismatch { .. })),
            "a CPU gradient for a GPU parameter"
        );
    }
}

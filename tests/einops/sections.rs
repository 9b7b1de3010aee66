//! The lecture's einops sections, in a fresh run and in every committed trace.

use super::*;

fn text<'a>(s: &'a cs336::trace::SectionRecord, name: &str) -> &'a str {
    val(s, name)
        .as_str()
        .unwrap_or_else(|| panic!("`{}.{name}` is not a string", s.id))
}

fn shape(s: &cs336::trace::SectionRecord, name: &str) -> Vec<usize> {
    flat(val(s, name)).into_iter().map(|v| v as usize).collect()
}

#[test]
fn section_einops_motivation() {
    for_each_trace("einops_motivation", |from, _, s| {
        let z = &s.values["z"];
        assert_eq!(z.shape.as_deref(), Some(&[2, 2, 2][..]), "{from}");
        assert!(flat(&z.value).iter().all(|&v| v == 3.0), "{from}");
    });
}

#[test]
fn section_jaxtyping_basics() {
    for_each_trace("jaxtyping_basics", |from, _, s| {
        assert_eq!(
            val(s, "dims"),
            &serde_json::json!({"batch": 2, "seq": 2, "heads": 1, "hidden": 3}),
            "{from}"
        );
        let m = text(s, "mismatch_error");
        assert!(
            m.contains("`hidden`")
                && m.contains("expected size 3")
                && m.contains("has size 4")
                && m.contains("[2, 2, 1, 4]"),
            "{from}: {m}"
        );
        assert!(text(s, "ndim_error").contains("[2, 2, 3]"), "{from}");
        assert_eq!(num(s, "hidden"), 3.0, "{from}");
    });
}

#[test]
fn section_einops_einsum() {
    for_each_trace("einops_einsum", |from, _, s| {
        for name in ["z", "z_ellipsis"] {
            let z = &s.values[name];
            assert_eq!(z.shape.as_deref(), Some(&[2, 3, 3][..]), "{from}: {name}");
            assert!(flat(&z.value).iter().all(|&v| v == 4.0), "{from}: {name}");
        }
        assert_eq!(val(s, "z_equals_matmul"), &serde_json::json!(true), "{from}");
        assert_eq!(num(s, "z_flops"), 2.0 * 2.0 * 3.0 * 3.0 * 4.0, "{from}");
        assert_eq!(num(s, "z_flops"), num(s, "z_flops_formula"), "{from}");
        assert_eq!(shape(s, "z_ellipsis_broadcast_shape"), vec![5, 2, 3, 3], "{from}");
        assert!(text(s, "unknown_axis_error").contains("`seq3`"), "{from}");
        assert!(text(s, "axis_size_error").contains("`hidden` has size 4"), "{from}");
    });
}

#[test]
fn section_einops_reduce() {
    for_each_trace("einops_reduce", |from, _, s| {
        for (name, want) in [("y_mean", 1.0), ("y_sum", 4.0)] {
            let y = &s.values[name];
            assert_eq!(y.shape.as_deref(), Some(&[2, 3][..]), "{from}: {name}");
            assert!(flat(&y.value).iter().all(|&v| v == want), "{from}: {name}");
        }
        assert_eq!(val(s, "y_mean_equals_old_way"), &serde_json::json!(true), "{from}");
    });
}

#[test]
fn section_einops_rearrange() {
    for_each_trace("einops_rearrange", |from, _, s| {
        assert_eq!(shape(s, "x_split_shape"), vec![2, 3, 2, 4], "{from}");
        assert_eq!(val(s, "x_split_same_storage"), &serde_json::json!(true), "{from}");
        let t = &s.values["x_transformed"];
        assert_eq!(t.shape.as_deref(), Some(&[2, 3, 2, 4][..]), "{from}");
        assert!(flat(&t.value).iter().all(|&v| v == 4.0), "{from}");
        assert_eq!(shape(s, "x_merged_shape"), vec![2, 3, 8], "{from}");
        assert!(flat(val(s, "x_merged")).iter().all(|&v| v == 4.0), "{from}");
        assert!(text(s, "wrong_split_error").contains("not divisible by 3"), "{from}");
        assert!(
            text(s, "shape_mismatch_error").contains("needs 2 dimension(s)"),
            "{from}"
        );
        assert!(text(s, "unknown_axis_error").contains("`hidden2`"), "{from}");
    });
}

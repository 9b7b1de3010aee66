//! Run-time dimension names: binding on first sight, checking afterwards, sizes by name.

use super::*;

#[test]
fn dims_bind_on_first_sight_and_check_afterwards() {
    let mut dims = Dims::new();
    let x = randn(&[2, 3, 4], 1);
    dims.check(&x, "batch seq hidden").unwrap();
    assert_eq!(
        dims.iter().collect::<Vec<_>>(),
        vec![("batch", 2), ("seq", 3), ("hidden", 4)]
    );
    dims.check(&randn(&[2, 5, 4], 2), "batch seq2 hidden").unwrap(); // a new name binds
    assert_eq!(dims.size("seq2").unwrap(), 5);
    dims.check(&randn(&[7, 4], 3), "... hidden").unwrap(); // `...` is not checked
    assert_eq!(dims.get("nothing"), None);

    match dims.check(&randn(&[2, 9, 5], 4), "batch extra hidden") {
        Err(Error::DimSize {
            name,
            expected,
            actual,
            shape,
            names,
            bound_by,
        }) => {
            assert_eq!((name.as_str(), expected, actual), ("hidden", 4, 5));
            assert_eq!(shape, vec![2, 9, 5]);
            assert_eq!(names, "batch extra hidden");
            assert!(
                bound_by.contains("[2, 3, 4]") && bound_by.contains("batch seq hidden"),
                "{bound_by}"
            );
        }
        other => panic!("expected a size error, got {other:?}"),
    }
    // A failed check binds nothing, not even the names before the bad one.
    assert_eq!(dims.get("extra"), None);

    let err = dims.check(&randn(&[2, 3], 5), "batch seq hidden").unwrap_err();
    match &err {
        Error::DimNames { msg } => assert!(msg.contains("names 3 dimension(s)") && msg.contains("[2, 3]"), "{msg}"),
        other => panic!("expected a dimension-count error, got {other:?}"),
    }
    let err = dims.check(&randn(&[3], 5), "... seq hidden").unwrap_err();
    assert!(
        matches!(&err, Error::DimNames { msg } if msg.contains("at least 2")),
        "{err}"
    );
    let err = dims.size("heads").unwrap_err();
    assert!(
        matches!(&err, Error::DimNames { msg } if msg.contains("`heads`")),
        "{err}"
    );
    assert!(matches!(
        dims.check(&x, "batch (seq hidden)"),
        Err(Error::DimNames { .. })
    ));
    assert!(matches!(
        dims.check(&x, "batch batch hidden"),
        Err(Error::Pattern { .. })
    ));
    assert!(matches!(
        dims.check(&x, "batch seq -> hidden"),
        Err(Error::Pattern { .. })
    ));
}

#[test]
fn dims_bind_and_feed_rearrange() {
    let mut dims = Dims::new();
    dims.bind("heads", 2).unwrap();
    dims.bind("heads", 2).unwrap();
    let err = dims.bind("heads", 3).unwrap_err();
    assert!(
        matches!(&err, Error::DimNames { msg } if msg.contains("already 2")),
        "{err}"
    );
    let x = randn(&[3, 8], 1);
    let y = rearrange(&x, "s (heads d) -> heads s d", &dims.axes()).unwrap();
    assert_eq!(y.shape(), &[2, 3, 4]);
}

#[test]
fn named_tensor_sizes_by_name() {
    let x = NamedTensor::new(randn(&[2, 2, 1, 3], 1), "batch seq heads hidden").unwrap();
    assert_eq!(x.size("hidden").unwrap(), 3);
    assert_eq!(x.dim("heads").unwrap(), 2);
    assert_eq!(x.names(), "batch seq heads hidden");
    let err = x.size("tokens").unwrap_err();
    assert!(
        matches!(&err, Error::DimNames { msg } if msg.contains("`tokens`") && msg.contains("[2, 2, 1, 3]")),
        "{err}"
    );
    let mut dims = Dims::new();
    x.check(&mut dims).unwrap();
    assert_eq!(dims.size("seq").unwrap(), 2);

    let y = NamedTensor::new(randn(&[5, 6, 7], 2), "... hidden").unwrap();
    assert_eq!(y.size("hidden").unwrap(), 7);
    assert!(matches!(
        y.check(&mut dims),
        Err(Error::DimSize {
            expected: 3,
            actual: 7,
            ..
        })
    ));
    assert!(matches!(
        NamedTensor::new(randn(&[5, 6], 2), "a b c"),
        Err(Error::DimNames { .. })
    ));
    assert_eq!(y.into_tensor().shape(), &[5, 6, 7]);
}

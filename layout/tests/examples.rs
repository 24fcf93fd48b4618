//! The worked values of thesis chapter 6 and CuTe's documentation, each a test: the
//! interpretation of layouts, coalesce, compose, complement, divide and product, the
//! loop conditions of §6.5, and the refusals of compose and complement (with the
//! wrong answers a definition without them would give).

use atl_layout::conditions::{self, Verdict};
use atl_layout::{
    IntTuple, Layout, LayoutError, coalesce, complement, compose, concat, crd_idx, idx_crd,
    logical_divide, logical_product, parse_layout, parse_tuple, zipped_divide,
};

fn l(text: &str) -> Layout {
    parse_layout(text).unwrap_or_else(|e| panic!("`{text}`: {e}"))
}

fn t(text: &str) -> IntTuple {
    parse_tuple(text).unwrap_or_else(|e| panic!("`{text}`: {e}"))
}

fn all_values(layout: &Layout) -> Vec<i64> {
    layout.values(usize::MAX)
}

#[test]
fn row_major_3_by_4() {
    let a = l("(3,4):(4,1)");
    assert_eq!(a.at(&t("(2,1)")), Ok(9));
    assert_eq!(all_values(&a), [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]);
    assert_eq!(a.size(), 12);
    assert_eq!(a.cosize(), 12);
    // The index form and the coordinate form agree.
    for i in 0..12 {
        assert_eq!(a.apply(i), a.at(&idx_crd(a.shape(), i).unwrap()));
    }
}

#[test]
fn hierarchical_layout() {
    let a = l("((2,3),4):((1,2),6)");
    assert_eq!(idx_crd(a.shape(), 7), Ok(t("((1,0),1)")));
    assert_eq!(a.apply(7), Ok(7));
    // `(1,3)` is compatible, not congruent: 1 is an index into the sub-shape (2,3).
    assert_eq!(a.at(&t("(1,3)")), Ok(19));
    assert_eq!(a.at(&t("((1,0),3)")), Ok(19));
    assert_eq!(crd_idx(a.shape(), &t("((1,0),1)")), Ok(7));
    assert_eq!(a.to_string(), "((2,3),4):((1,2),6)");
}

#[test]
fn lift_crd_uses_the_whole_sub_shape() {
    // The integer 5 stands for a coordinate of the whole sub-shape `(3,4)`: (2,1).
    // The thesis's `lift_crd` would lift it into `3`, the sub-shape's first half.
    let a = l("(2,(3,4)):(1,(2,6))");
    // 5 in (3,4) is (2,1): 2*2 + 1*6 = 10.
    assert_eq!(a.at(&t("(1,5)")), Ok(1 + 10));
    assert!(matches!(
        a.at(&t("((1,2),1)")),
        Err(LayoutError::Coordinate(_))
    ));
    assert!(matches!(
        a.at(&t("(1,2,3)")),
        Err(LayoutError::Coordinate(_))
    ));
    assert!(matches!(a.apply(-1), Err(LayoutError::Coordinate(_))));
}

#[test]
fn coalesce_examples() {
    assert_eq!(coalesce(&l("(2,(1,6)):(1,(6,2))")), Ok(l("12:1")));
    assert_eq!(coalesce(&l("(2,4):(1,2)")), Ok(l("8:1")));
    assert_eq!(coalesce(&l("((2,3),4):((1,2),6)")), Ok(l("24:1")));
    assert_eq!(coalesce(&l("(3,4):(4,1)")), Ok(l("(3,4):(4,1)")));
    assert_eq!(coalesce(&l("(1,1):(5,7)")), Ok(l("1:0")));
    assert_eq!(coalesce(&l("(3,0):(1,1)")), Ok(l("0:0")));
}

#[test]
fn coalesce_agrees_only_on_the_domain() {
    let a = l("(3,1):(1,100)");
    let c = coalesce(&a).unwrap();
    assert_eq!(c, l("3:1"));
    for i in 0..3 {
        assert_eq!(a.apply(i), c.apply(i));
    }
    // Outside [0, 3) the last mode absorbs the overflow, and it is another mode.
    assert_eq!(a.apply(5), Ok(102));
    assert_eq!(c.apply(5), Ok(5));
}

#[test]
fn compose_examples() {
    let cases = [
        ("(6,2):(8,2)", "(4,3):(3,1)", "((2,2),3):((24,2),8)"),
        ("20:2", "(5,4):(4,1)", "(5,4):(8,2)"),
        ("(10,2):(16,4)", "(5,4):(1,5)", "(5,(2,2)):(16,(80,4))"),
        (
            "(4,2,3):(2,1,8)",
            "(4,(2,3)):(2,(1,8))",
            "((2,2),(2,3)):((4,1),(2,8))",
        ),
    ];
    for (a, b, expected) in cases {
        let (a, b) = (l(a), l(b));
        let r = compose(&a, &b).unwrap_or_else(|e| panic!("{a} o {b}: {e}"));
        assert_eq!(r, l(expected), "{a} o {b}");
        for i in 0..b.size() {
            assert_eq!(r.apply(i), a.apply(b.apply(i).unwrap()), "{a} o {b} at {i}");
        }
    }
}

#[test]
fn compose_with_a_non_injective_right_operand_can_be_right() {
    // The thesis asks for an injective B; on a one-mode A there are no carries.
    assert_eq!(compose(&l("20:2"), &l("(2,2):(1,1)")), Ok(l("(2,2):(2,2)")));
    // Extent-1 modes compose to 1:0 whatever their stride.
    assert_eq!(
        compose(&l("(4,3):(1,4)"), &l("(2,1):(1,3)")),
        Ok(l("(2,1):(1,0)"))
    );
}

fn compose_error(a: &str, b: &str) -> String {
    match compose(&l(a), &l(b)) {
        Err(LayoutError::Compose(m)) => m,
        other => panic!("{a} o {b}: expected a compose error, got {other:?}"),
    }
}

#[test]
fn compose_refuses_a_stride_0_mode() {
    let m = compose_error("8:1", "4:0");
    assert!(m.contains("stride 0"), "{m}");
}

#[test]
fn compose_refuses_an_image_outside_the_domain() {
    let m = compose_error("4:1", "2:8");
    assert!(m.contains("outside the domain [0, 4)"), "{m}");
    compose_error("(4,2):(1,10)", "(3,3):(1,3)");
    // And a size-0 A, whose domain is empty.
    compose_error("0:1", "1:1");
}

#[test]
fn compose_refuses_a_stride_that_does_not_divide() {
    let m = compose_error("(4,3):(1,4)", "2:3");
    assert!(m.contains("neither divides"), "{m}");
    // The extent step: 3 elements of (2,3):(1,10) are 0, 1, 10: not a layout.
    let m = compose_error("(2,3):(1,10)", "3:1");
    assert!(m.contains("not a multiple"), "{m}");
}

#[test]
fn compose_refuses_when_modes_do_not_distribute() {
    // Injective B, every mode composes, image inside [0, 12): the thesis's
    // definition composes mode by mode and gets it wrong.
    let (a, b) = (l("(6,2):(1,10)"), l("(2,3):(3,2)"));
    let m = compose_error("(6,2):(1,10)", "(2,3):(3,2)");
    assert!(m.contains("do not compose separately"), "{m}");
    let modes: Vec<Layout> = b
        .top_modes()
        .iter()
        .map(|mode| compose(&a, mode).unwrap())
        .collect();
    let per_mode = concat(&modes).unwrap();
    assert_eq!(per_mode, l("(2,3):(3,2)"));
    assert_eq!(per_mode.apply(5), Ok(7));
    assert_eq!(a.apply(b.apply(5).unwrap()), Ok(11));
}

#[test]
fn compose_law_fails_outside_the_domain() {
    let (a, b) = (l("(4,2):(1,10)"), l("4:1"));
    let r = compose(&a, &b).unwrap();
    assert_eq!(r, l("4:1"));
    assert_eq!(r.apply(5), Ok(5));
    assert_eq!(a.apply(b.apply(5).unwrap()), Ok(11));
}

#[test]
fn compose_with_an_empty_right_operand() {
    assert_eq!(compose(&l("4:1"), &l("(0,3):(1,7)")), Ok(l("(0,3):(0,0)")));
}

#[test]
fn complement_examples() {
    assert_eq!(complement(&l("4:1"), 24), Ok(l("6:4")));
    assert_eq!(complement(&l("6:4"), 24), Ok(l("4:1")));
    assert_eq!(complement(&l("4:2"), 24), Ok(l("(2,3):(1,8)")));
    assert_eq!(complement(&l("(2,2):(1,6)"), 24), Ok(l("(3,2):(2,12)")));
}

#[test]
fn complement_refusals() {
    for (a, m) in [
        ("(2,2):(1,1)", 8),
        ("4:0", 8),
        ("4:-1", 8),
        ("4:1", 0),
        ("0:1", 4),
        ("(2,2):(3,2)", 12),
    ] {
        assert!(
            matches!(complement(&l(a), m), Err(LayoutError::Complement(_))),
            "complement({a}, {m})"
        );
    }
}

#[test]
fn complement_image_is_larger_than_m_when_m_is_not_a_multiple() {
    let a = l("4:1");
    let c = complement(&a, 6).unwrap();
    assert_eq!(c, l("2:4"));
    let mut image = all_values(&concat(&[a, c]).unwrap());
    image.sort_unstable();
    assert_eq!(image, (0..8).collect::<Vec<_>>());
}

#[test]
fn logical_divide_example() {
    // CuTe's example: the composition above is this divide.
    let r = logical_divide(&l("(4,2,3):(2,1,8)"), &l("4:2")).unwrap();
    assert_eq!(r, l("((2,2),(2,3)):((4,1),(2,8))"));
    assert_eq!(logical_divide(&l("24:1"), &l("4:1")), Ok(l("(4,6):(1,4)")));
}

#[test]
fn logical_product_example() {
    let r = logical_product(&l("(2,2):(4,1)"), &l("6:1")).unwrap();
    assert_eq!(r, l("((2,2),(2,3)):((4,1),(2,8))"));
}

#[test]
fn zipped_divide_examples() {
    // By mode: tile (2,3) of a column-major 4x6.
    let r = zipped_divide(&l("(4,6):(1,4)"), &l("(2,3):(1,1)")).unwrap();
    assert_eq!(r, l("((2,3),(2,2)):((1,4),(2,12))"));
    // A one-mode tiler is the logical divide.
    assert_eq!(
        zipped_divide(&l("24:1"), &l("4:1")),
        logical_divide(&l("24:1"), &l("4:1"))
    );
    assert!(zipped_divide(&l("8:1"), &l("(2,2):(1,1)")).is_err());
}

#[test]
fn loop_permutation_conditions() {
    let p = l("(2,4):(4,1)");
    assert_eq!(p.values(8), [0, 4, 1, 5, 2, 6, 3, 7]);
    assert_eq!(conditions::range(&p, 8), Ok(Verdict::Holds));
    assert_eq!(conditions::injectivity(&p, 8), Ok(Verdict::Holds));
    assert_eq!(conditions::surjectivity(&p, 8), Ok(Verdict::Holds));

    let q = l("(2,4):(4,2)");
    assert_eq!(q.apply(7), Ok(10));
    assert_eq!(
        conditions::range(&q, 8),
        Ok(Verdict::OutOfRange { index: 5, value: 8 })
    );
    assert!(matches!(
        conditions::injectivity(&q, 8),
        Ok(Verdict::Collision { .. })
    ));
    assert_eq!(
        conditions::surjectivity(&q, 8),
        Ok(Verdict::Missed { value: 1 })
    );
    assert!(matches!(
        conditions::range(&p, i64::MAX),
        Err(LayoutError::TooLarge(_))
    ));
}

#[test]
fn sizes_and_cosizes_of_degenerate_layouts() {
    assert_eq!((l("0:5").size(), l("0:5").cosize()), (0, 0));
    assert_eq!((l("(3,0):(1,1)").size(), l("(3,0):(1,1)").cosize()), (0, 0));
    assert_eq!((l("1:9").size(), l("1:9").cosize()), (1, 1));
    assert_eq!((l("4:0").size(), l("4:0").cosize()), (4, 1));
    // A negative stride never raises the cosize.
    assert_eq!(l("(4,2):(-1,3)").cosize(), 4);
    assert_eq!(l("(4,2):(-1,3)").values(8), [0, -1, -2, -3, 3, 2, 1, 0]);
    assert!(l("0:5").values(10).is_empty());
}

#[test]
fn huge_values_are_errors_not_overflows() {
    let max = i64::MAX;
    assert!(matches!(
        parse_layout(&format!("(2,2):({max},1)")).map_err(|e| e.kind),
        Err(atl_layout::TextErrorKind::Layout(LayoutError::Overflow(_)))
    ));
    assert!(parse_layout(&format!("({max},2):(1,1)")).is_err());
    let big = l(&format!("2:{}", max / 2));
    assert_eq!(big.cosize(), max / 2 + 1);
    assert!(matches!(big.apply(3), Err(LayoutError::Overflow(_))));
    assert_eq!(
        compose(
            &l(&format!("{}:1", 1i64 << 62)),
            &l(&format!("2:{}", 1i64 << 61))
        ),
        Ok(l(&format!("2:{}", 1i64 << 61)))
    );
    assert!(matches!(
        logical_product(
            &l(&format!("{}:1", 1i64 << 40)),
            &l(&format!("2:{}", 1i64 << 40))
        ),
        Err(LayoutError::Overflow(_))
    ));
}

#[test]
fn idx_crd_outside_the_domain_leaves_the_shape() {
    // Inside [0, 6) every digit is below its extent; at 7 the last mode absorbs the
    // overflow, so the coordinate is outside the shape, though it still round-trips.
    let shape = t("(2,3)");
    assert_eq!(idx_crd(&shape, 5), Ok(t("(1,2)")));
    assert_eq!(idx_crd(&shape, 7), Ok(t("(1,3)")));
    assert_eq!(crd_idx(&shape, &t("(1,3)")), Ok(7));
    assert!(matches!(
        idx_crd(&t("(0,3)"), 0),
        Err(LayoutError::Coordinate(_))
    ));
    assert!(matches!(
        idx_crd(&shape, -1),
        Err(LayoutError::Coordinate(_))
    ));
}

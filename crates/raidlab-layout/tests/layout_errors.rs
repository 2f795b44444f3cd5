//! Bad geometries are refused with the field named, following md's minimums.

use crate::common::spec;
use raidlab_layout::{ArraySpec, Geometry, Layout, Level};

fn field(spec: ArraySpec) -> &'static str {
    Geometry::new(&spec).unwrap_err().field
}

#[test]
fn minimum_drive_counts_follow_md() {
    for (level, min) in [
        (Level::Raid0, 1),
        (Level::Concat, 1),
        (Level::Raid1, 2),
        (Level::Raid4, 3),
        (Level::Raid5, 3),
        (Level::Raid6, 4),
        (Level::Raid10, 2),
    ] {
        assert_eq!(
            field(spec(level, min - 1)),
            "drive_count",
            "{level} below {min}"
        );
        assert!(Geometry::new(&spec(level, min)).is_ok(), "{level} at {min}");
    }
    let err = Geometry::new(&spec(Level::Raid5, 2)).unwrap_err();
    assert!(err.message.contains("at least 3"), "{err}");
}

#[test]
fn more_than_256_members_is_refused() {
    assert_eq!(field(spec(Level::Raid0, 257)), "drive_count");
    assert!(Geometry::new(&spec(Level::Raid6, 256)).is_ok());
}

#[test]
fn nested_levels_need_spans_that_divide_the_drives_into_wide_enough_sub_arrays() {
    assert_eq!(field(spec(Level::Raid50, 6)), "spans");
    // The drive count is what does not divide: the same error as too few per span.
    assert_eq!(field(spec(Level::Raid50, 7).with_spans(2)), "drive_count");
    assert_eq!(field(spec(Level::Raid50, 4).with_spans(2)), "drive_count");
    assert!(Geometry::new(&spec(Level::Raid50, 6).with_spans(2)).is_ok());
    assert_eq!(field(spec(Level::Raid60, 6).with_spans(2)), "drive_count");
    assert!(Geometry::new(&spec(Level::Raid60, 8).with_spans(2)).is_ok());
    assert_eq!(field(spec(Level::Raid5, 6).with_spans(2)), "spans");
}

#[test]
fn raid10_copies_must_be_between_two_and_the_drive_count() {
    assert_eq!(field(spec(Level::Raid10, 3).with_copies(4)), "copies");
    assert_eq!(field(spec(Level::Raid10, 3).with_copies(1)), "copies");
    assert!(Geometry::new(&spec(Level::Raid10, 3).with_copies(3)).is_ok());
    assert_eq!(field(spec(Level::Raid1, 3).with_copies(3)), "copies");
}

#[test]
fn layouts_must_belong_to_the_level() {
    assert_eq!(
        field(spec(Level::Raid5, 4).with_layout(Layout::Near)),
        "layout"
    );
    assert_eq!(
        field(spec(Level::Raid10, 4).with_layout(Layout::LeftSymmetric)),
        "layout"
    );
    assert_eq!(
        field(spec(Level::Raid4, 4).with_layout(Layout::LeftSymmetric)),
        "layout"
    );
    assert_eq!(
        field(spec(Level::Raid0, 4).with_layout(Layout::Far)),
        "layout"
    );
    assert_eq!(
        Geometry::new(&spec(Level::Raid6, 4)).unwrap().layout(),
        Some(Layout::LeftSymmetric)
    );
    assert_eq!(
        Geometry::new(&spec(Level::Raid10, 4)).unwrap().layout(),
        Some(Layout::Near)
    );
}

#[test]
fn stripe_unit_and_capacity_are_checked() {
    let mut s = spec(Level::Raid5, 4);
    s.stripe_unit_bytes = 3000;
    assert_eq!(field(s), "stripe_unit_bytes");
    s.stripe_unit_bytes = 65536;
    s.member_capacity_bytes = 65535;
    assert_eq!(field(s), "capacity_bytes");
}

#[test]
fn names_parse_like_mdadm() {
    assert_eq!("raid5".parse::<Level>().unwrap(), Level::Raid5);
    assert_eq!("RAID 60".parse::<Level>().unwrap(), Level::Raid60);
    assert_eq!("linear".parse::<Level>().unwrap(), Level::Concat);
    assert_eq!("raid7".parse::<Level>().unwrap_err().field, "level");
    assert_eq!("ls".parse::<Layout>().unwrap(), Layout::LeftSymmetric);
    assert_eq!(
        "right-asymmetric".parse::<Layout>().unwrap(),
        Layout::RightAsymmetric
    );
    assert_eq!("offset".parse::<Layout>().unwrap(), Layout::Offset);
    assert_eq!("diagonal".parse::<Layout>().unwrap_err().field, "layout");
}

#[test]
fn capacity_counts_whole_chunks_of_the_smallest_member() {
    let g = Geometry::new(&ArraySpec::new(Level::Raid6, 6, 65536, 10 * 65536 + 4096)).unwrap();
    assert_eq!(g.capacity_bytes(), 4 * 10 * 65536);
    let g = Geometry::new(&ArraySpec::new(Level::Raid1, 3, 65536, 10 * 65536 + 4096)).unwrap();
    assert_eq!(g.capacity_bytes(), 10 * 65536);
    let g = Geometry::new(&ArraySpec::new(Level::Concat, 3, 65536, 10 * 65536 + 4096)).unwrap();
    assert_eq!(g.capacity_bytes(), 30 * 65536);
}

#[test]
fn an_array_too_large_for_64_bits_is_refused_not_wrapped() {
    let huge = ArraySpec::new(Level::Raid0, 4, 65536, u64::MAX / 2);
    assert_eq!(field(huge), "member_capacity_bytes");
    assert!(Geometry::new(&ArraySpec::new(Level::Raid0, 256, 65536, 1 << 50)).is_ok());
}

//! Parity placement of RAID 4, 5 and 6, as md's `raid5_compute_sector` (drivers/md/raid5.c)
//! computes it. Indices here are *local* to one array (or one span of RAID 50/60).

use crate::Layout;

/// Where the blocks of one stripe live, in local member indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Placement {
    /// Member holding P (md's `pd_idx`).
    pub pd: u32,
    /// Member holding Q (md's `qd_idx`), RAID 6 only.
    pub qd: Option<u32>,
}

/// P (and Q) of `stripe` for an array of `width` members with `parity` parity blocks per
/// stripe (1: RAID 4/5, 2: RAID 6). `layout` is `None` for RAID 4 (parity on the last
/// member, md's `case 4: pd_idx = data_disks`).
pub(crate) fn placement(layout: Option<Layout>, width: u32, parity: u32, stripe: u64) -> Placement {
    debug_assert!(parity == 1 || parity == 2);
    let n = u64::from(width);
    // Widths are often powers of two: a mask then, not a 64-bit division.
    let r = if n.is_power_of_two() {
        stripe & (n - 1)
    } else {
        stripe % n
    } as u32;
    let Some(layout) = layout else {
        debug_assert_eq!(parity, 1);
        return Placement {
            pd: width - 1,
            qd: None,
        };
    };
    if parity == 1 {
        // md level 5: data_disks = raid_disks - 1.
        let pd = match layout {
            Layout::LeftAsymmetric | Layout::LeftSymmetric => width - 1 - r,
            Layout::RightAsymmetric | Layout::RightSymmetric => r,
            Layout::Near | Layout::Far | Layout::Offset => unreachable!("validated"),
        };
        Placement { pd, qd: None }
    } else {
        // md level 6: pd_idx = raid_disks - 1 - stripe % raid_disks (left) or
        // stripe % raid_disks (right); Q follows P, wrapping to member 0.
        let pd = match layout {
            Layout::LeftAsymmetric | Layout::LeftSymmetric => width - 1 - r,
            Layout::RightAsymmetric | Layout::RightSymmetric => r,
            Layout::Near | Layout::Far | Layout::Offset => unreachable!("validated"),
        };
        Placement {
            pd,
            qd: Some(wrap(pd + 1, width)),
        }
    }
}

/// `sum % width`, without a division when `sum` is below twice `width` (every index
/// sum here is, for indices inside the stripe).
#[inline]
fn wrap(sum: u32, width: u32) -> u32 {
    if sum < width {
        sum
    } else if sum - width < width {
        sum - width
    } else {
        sum % width
    }
}

/// Local member of data block `k` (md's `dd_idx`) in a stripe placed as `p`.
pub(crate) fn data_member(layout: Option<Layout>, width: u32, p: Placement, k: u32) -> u32 {
    let m = match (layout, p.qd) {
        // RAID 4: data in member order before the parity member.
        (None, _) => k,
        (Some(Layout::LeftAsymmetric | Layout::RightAsymmetric), None) => {
            // `if (*dd_idx >= pd_idx) (*dd_idx)++;`
            if k >= p.pd {
                k + 1
            } else {
                k
            }
        }
        (Some(Layout::LeftSymmetric | Layout::RightSymmetric), None) => {
            // `*dd_idx = (pd_idx + 1 + *dd_idx) % raid_disks;`
            wrap(p.pd + 1 + k, width)
        }
        (Some(Layout::LeftAsymmetric | Layout::RightAsymmetric), Some(_)) => {
            // `Q D D D P` when P is last, else `D D P Q D`.
            if p.pd == width - 1 {
                k + 1
            } else if k >= p.pd {
                k + 2
            } else {
                k
            }
        }
        (Some(Layout::LeftSymmetric | Layout::RightSymmetric), Some(_)) => {
            // `*dd_idx = (pd_idx + 2 + *dd_idx) % raid_disks;`
            wrap(p.pd + 2 + k, width)
        }
        (Some(Layout::Near | Layout::Far | Layout::Offset), _) => unreachable!("validated"),
    };
    debug_assert!(m < width && m != p.pd && Some(m) != p.qd);
    m
}

/// md's syndrome slot of the data block on local member `member` (raid5.c
/// `set_syndrome_sources`, `raid6_d0`, `raid6_idx_to_slot`): slots count data members
/// cyclically from the one after Q, so Q's coefficient for it is g^slot. For the
/// symmetric layouts this equals the data index; for the asymmetric ones it is a
/// rotation of it.
pub(crate) fn syndrome_slot(width: u32, p: Placement, member: u32) -> u32 {
    let qd = p.qd.expect("a syndrome slot exists only in RAID 6");
    // raid6_d0: 0 when Q is the last member, else qd + 1; both are (qd + 1) % width.
    // P and Q sit just before d0 cyclically (qd = pd + 1), so every member from d0 up
    // to P is a data member.
    let d0 = (qd + 1) % width;
    let slot = (member + width - d0) % width;
    debug_assert!(slot < width - 2);
    slot
}

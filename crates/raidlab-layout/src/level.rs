//! RAID levels and md's layouts, with mdadm's names for both.

use crate::LayoutError;

/// RAID level (and the non-RAID concatenation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Level {
    /// Striping without redundancy.
    Raid0,
    /// Members back to back (md "linear").
    Concat,
    /// n-way mirror: every member holds everything.
    Raid1,
    /// Striping with dedicated parity on the last member.
    Raid4,
    /// Striping with rotating parity (md's four layouts).
    Raid5,
    /// Striping with rotating P and Q (md's four layouts).
    Raid6,
    /// md RAID 10: near, far or offset copies.
    Raid10,
    /// RAID 0 over `spans` RAID 5 sub-arrays.
    Raid50,
    /// RAID 0 over `spans` RAID 6 sub-arrays.
    Raid60,
}

impl Level {
    /// Every level, in declaration order.
    pub const ALL: [Level; 9] = [
        Level::Raid0,
        Level::Concat,
        Level::Raid1,
        Level::Raid4,
        Level::Raid5,
        Level::Raid6,
        Level::Raid10,
        Level::Raid50,
        Level::Raid60,
    ];

    /// Human name, as used in messages ("RAID 5", "concat").
    pub fn name(self) -> &'static str {
        match self {
            Self::Raid0 => "RAID 0",
            Self::Concat => "concat",
            Self::Raid1 => "RAID 1",
            Self::Raid4 => "RAID 4",
            Self::Raid5 => "RAID 5",
            Self::Raid6 => "RAID 6",
            Self::Raid10 => "RAID 10",
            Self::Raid50 => "RAID 50",
            Self::Raid60 => "RAID 60",
        }
    }

    /// Fewest members of one span (of the whole array for levels without spans), as
    /// mdadm requires: RAID 1 and 10 two, RAID 4/5/50 three, RAID 6/60 four.
    pub fn span_members_min(self) -> u32 {
        match self {
            Self::Raid0 | Self::Concat => 1,
            Self::Raid1 | Self::Raid10 => 2,
            Self::Raid4 | Self::Raid5 | Self::Raid50 => 3,
            Self::Raid6 | Self::Raid60 => 4,
        }
    }

    /// The layouts the level takes (empty: it has a single arrangement); the first is
    /// md's default.
    pub fn layouts(self) -> &'static [Layout] {
        if self.rotates_parity() {
            &Layout::PARITY_MD_ORDER
        } else if self == Self::Raid10 {
            &Layout::RAID10
        } else {
            &[]
        }
    }

    /// md's default layout: left-symmetric for RAID 5/6/50/60, near for RAID 10.
    pub fn default_layout(self) -> Option<Layout> {
        self.layouts().first().copied()
    }

    /// Whether `copies` applies (RAID 10; RAID 1 mirrors every member).
    pub fn takes_copies(self) -> bool {
        self == Self::Raid10
    }

    /// Whether `spans` applies (RAID 50/60: RAID 0 over RAID 5/6 sub-arrays).
    pub fn takes_spans(self) -> bool {
        matches!(self, Self::Raid50 | Self::Raid60)
    }

    /// The level of each span of RAID 50/60 (RAID 5, RAID 6); `None` elsewhere.
    pub fn span_level(self) -> Option<Level> {
        match self {
            Self::Raid50 => Some(Self::Raid5),
            Self::Raid60 => Some(Self::Raid6),
            _ => None,
        }
    }

    /// Parity blocks per stripe (of a span, for RAID 50/60).
    pub fn parity_per_stripe(self) -> u32 {
        match self {
            Self::Raid4 | Self::Raid5 | Self::Raid50 => 1,
            Self::Raid6 | Self::Raid60 => 2,
            _ => 0,
        }
    }

    /// Whether the level uses a RAID 5/6 parity layout.
    pub(crate) fn rotates_parity(self) -> bool {
        matches!(
            self,
            Self::Raid5 | Self::Raid6 | Self::Raid50 | Self::Raid60
        )
    }
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Level {
    type Err = LayoutError;

    /// `raid0`/`0`, `concat`/`linear`, `raid1`, `raid4`, `raid5`, `raid6`, `raid10`,
    /// `raid50`, `raid60` (case-insensitive, `raid` prefix optional).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase();
        let digits = lower
            .strip_prefix("raid")
            .unwrap_or(&lower)
            .trim_start_matches([' ', '-', '_']);
        Ok(match digits {
            "0" => Self::Raid0,
            "concat" | "linear" | "jbod" => Self::Concat,
            "1" => Self::Raid1,
            "4" => Self::Raid4,
            "5" => Self::Raid5,
            "6" => Self::Raid6,
            "10" => Self::Raid10,
            "50" => Self::Raid50,
            "60" => Self::Raid60,
            _ => {
                return Err(LayoutError {
                    field: "level",
                    message: format!(
                        "unknown level {s:?}; allowed: raid0, concat, raid1, raid4, raid5, raid6, raid10, raid50, raid60"
                    ),
                })
            }
        })
    }
}

/// Layout of a level: md's four parity rotations (RAID 5/6/50/60) or md's RAID 10 copy
/// placements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// md ALGORITHM_LEFT_ASYMMETRIC: parity walks from the last member down; data in
    /// member order, skipping parity.
    LeftAsymmetric,
    /// md ALGORITHM_RIGHT_ASYMMETRIC: parity walks from member 0 up; data in member
    /// order, skipping parity.
    RightAsymmetric,
    /// md ALGORITHM_LEFT_SYMMETRIC (md's default): parity walks down, data starts just
    /// after parity and wraps.
    LeftSymmetric,
    /// md ALGORITHM_RIGHT_SYMMETRIC: parity walks up, data starts after parity and wraps.
    RightSymmetric,
    /// RAID 10 near copies (md `n2`): copies of a chunk on adjacent members (default).
    Near,
    /// RAID 10 far copies (md `f2`): copies in later regions of the members, shifted by
    /// one member.
    Far,
    /// RAID 10 offset copies (md `o2`): copies in the following rows, shifted by one
    /// member.
    Offset,
}

impl Layout {
    /// md's four parity layouts (RAID 5/6/50/60).
    pub const PARITY: [Layout; 4] = [
        Layout::LeftAsymmetric,
        Layout::RightAsymmetric,
        Layout::LeftSymmetric,
        Layout::RightSymmetric,
    ];

    /// md's four parity layouts, md's default (left-symmetric) first.
    pub const PARITY_MD_ORDER: [Layout; 4] = [
        Layout::LeftSymmetric,
        Layout::LeftAsymmetric,
        Layout::RightSymmetric,
        Layout::RightAsymmetric,
    ];

    /// md's RAID 10 copy layouts, md's default (near) first.
    pub const RAID10: [Layout; 3] = [Layout::Near, Layout::Far, Layout::Offset];

    /// md's name (`left-symmetric`, `near`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::LeftAsymmetric => "left-asymmetric",
            Self::RightAsymmetric => "right-asymmetric",
            Self::LeftSymmetric => "left-symmetric",
            Self::RightSymmetric => "right-symmetric",
            Self::Near => "near",
            Self::Far => "far",
            Self::Offset => "offset",
        }
    }
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Layout {
    type Err = LayoutError;

    /// mdadm's names: `left-asymmetric`/`la`, `right-asymmetric`/`ra`,
    /// `left-symmetric`/`ls`, `right-symmetric`/`rs`, `near`/`n`, `far`/`f`, `offset`/`o`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "left-asymmetric" | "la" => Self::LeftAsymmetric,
            "right-asymmetric" | "ra" => Self::RightAsymmetric,
            "left-symmetric" | "ls" => Self::LeftSymmetric,
            "right-symmetric" | "rs" => Self::RightSymmetric,
            "near" | "n" => Self::Near,
            "far" | "f" => Self::Far,
            "offset" | "o" => Self::Offset,
            _ => {
                return Err(LayoutError {
                    field: "layout",
                    message: format!(
                        "unknown layout {s:?}; allowed: left-asymmetric, right-asymmetric, left-symmetric, right-symmetric (RAID 5/6/50/60), near, far, offset (RAID 10)"
                    ),
                })
            }
        })
    }
}

//! The array as a whole: level, geometry, members and a rebuild.

use super::{ControllerSpec, DriveSpec, HostSpec};
use serde::{Deserialize, Serialize};

/// The array: level, geometry, members, controller and host.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArraySpec {
    /// RAID level: 0, 1, 4, 5, 6, 10, 50, 60 or "concat".
    pub level: Level,
    /// RAID 5/6/50/60 parity layout or RAID 10 copy layout (md's names).
    #[serde(default)]
    pub layout: Option<String>,
    /// RAID 10 copies of each chunk.
    #[serde(default)]
    pub copies: Option<u32>,
    /// RAID 50/60 sub-arrays.
    #[serde(default)]
    pub spans: Option<u32>,
    /// Failed member indices.
    #[serde(default)]
    pub failed: Vec<u32>,
    /// A failed member being rebuilt onto a replacement.
    #[serde(default)]
    pub rebuild: Option<RebuildSpec>,
    /// Chunk size on one member.
    pub stripe_unit_bytes: u64,
    /// Number of members.
    pub drive_count: u32,
    /// The drive every member is.
    pub drive: DriveSpec,
    /// The controller in front of them.
    pub controller: ControllerSpec,
    /// The host's I/O stack.
    #[serde(default)]
    pub host: HostSpec,
    /// Share of the array's address space, at its end, the host has deleted (and
    /// discarded) after the drives were preconditioned, percent. The discard goes
    /// through the controller as a runtime TRIM does: with `trim_passthrough` the
    /// members' FTLs unmap it before the run starts; without, they never learn of it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub deleted_percent: f64,
    /// Hot spares standing by: with one, a member that fails during the run
    /// (`rebuild.failed_at_ns`) is rebuilt onto a spare at once, with no replacement
    /// delay. Absent (0) in scenarios without spares, so they read as before.
    #[serde(default, skip_serializing_if = "is_zero_count")]
    pub spares: u32,
    /// An SSD cache tier in front of this array (`docs/cache-tier.md`); checked by
    /// [`super::cache::check_cache`], run by [`crate::tier`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<Box<super::cache::CacheSpec>>,
}

fn is_zero(value: &f64) -> bool {
    *value == 0.0
}

fn is_zero_count(value: &u32) -> bool {
    *value == 0
}

/// A RAID level as the scenario names it: a number, or `"concat"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Level {
    /// 0, 1, 4, 5, 6, 10, 50 or 60.
    Number(u32),
    /// `"concat"`.
    Name(String),
}

/// A background rebuild of one failed member onto a replacement.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RebuildSpec {
    /// The member being rebuilt (one of `failed`).
    pub member: u32,
    /// Rate limit of the rebuild stream.
    pub rate_bytes_per_s: f64,
    /// When the member fails, ns into the run; a hot spare (`array.spares`) takes its
    /// role and the rebuild starts at that instant. Absent: the member has failed
    /// before the run and its replacement is in place when it starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_at_ns: Option<u64>,
    /// The rate the rebuild is kept at under load, overriding the controller's
    /// (`rebuild_rate_min_bytes_per_s`, `rebuild_share_percent`). Absent: the
    /// controller's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_min_bytes_per_s: Option<f64>,
}

impl RebuildSpec {
    /// The rate the rebuild is kept at under load (bytes of the rebuilt member per
    /// second), at most its rate limit; None: no minimum, the rebuild takes what its
    /// one unit at a time gets. The controller's minimum is the larger of its own rate
    /// and its share of what the rebuild could do alone: its rate limit, or an HDD's
    /// media rate (outer zone, where the rebuild starts) if that is lower.
    pub fn rate_min(&self, c: &ControllerSpec, drive: &DriveSpec) -> Option<f64> {
        let alone = match drive {
            DriveSpec::Hdd(h) => self.rate_bytes_per_s.min(h.media_rate_bytes_per_s_outer),
            DriveSpec::Ssd(_) | DriveSpec::Nvme(_) => self.rate_bytes_per_s,
        };
        let share = c.rebuild_share_percent.map(|p| p / 100.0 * alone);
        let min = match self.rate_min_bytes_per_s {
            Some(r) => r,
            None => c
                .rebuild_rate_min_bytes_per_s
                .unwrap_or(0.0)
                .max(share.unwrap_or(0.0)),
        };
        (min > 0.0).then_some(min.min(self.rate_bytes_per_s))
    }
}

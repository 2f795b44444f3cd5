//! The superblock: 4 KiB at offset 0 of every member, describing the array and this
//! member's place in it. Data starts at [`DATA_OFFSET_BYTES`] (1 MiB, as md's v1.2
//! metadata leaves room at the start), so member offset `x` of the layout is byte
//! `DATA_OFFSET_BYTES + x` of the file or device.
//!
//! ```text
//! offset size field                 meaning
//!      0    8 magic                 b"RAIDLAB\x01"
//!      8    4 version               FORMAT_VERSION (1)
//!     12    4 header_bytes          SUPERBLOCK_BYTES (4096)
//!     16   16 array_uuid            random u128, the same on every member
//!     32    1 level                 0 raid0, 1 concat, 2 raid1, 3 raid4, 4 raid5, 5 raid6,
//!                                   6 raid10, 7 raid50, 8 raid60
//!     33    1 layout                0 none, 1 la, 2 ra, 3 ls, 4 rs, 5 near, 6 far, 7 offset
//!     34    1 consistency_policy    0 default (bitmap, or journal with flag bit 1: what
//!                                   superblocks written before the policy meant), 1 resync,
//!                                   2 bitmap, 3 journal, 4 ppl
//!     35    1 integrity             0 none, 1 crc32c: one CRC32C per 4 KiB block of the
//!                                   data area, kept in the checksum area (see
//!                                   [`checksum_area_bytes`]) right after the member's
//!                                   member_capacity_bytes of data
//!     36    4 copies                RAID 10 copies, 0 = none
//!     40    4 spans                 RAID 50/60 spans, 0 = none
//!     44    4 member_count          members in the array
//!     48    8 stripe_unit_bytes     chunk size
//!     56    8 member_capacity_bytes data bytes per member the geometry was built with
//!     64    8 data_offset_bytes     DATA_OFFSET_BYTES
//!     72    4 role                  this member's index, below member_count, or
//!                                   ROLE_SPARE (0xffffffff): a hot spare, no role yet
//!     76    4 flags                 bit 0: dirty (writes may be in flight);
//!                                   bit 1: journaled (needs its write journal to assemble);
//!                                   bit 2: recovering (a rebuild of this member stopped);
//!                                   bit 3: cached (an SSD cache fronts the array and may
//!                                   hold its newest data: it must be given to use it)
//!     80    8 events                event counter, +1 on every state change
//!     88   32 failed                bitmap of failed member indices (256 bits)
//!    120    8 recovery_offset_bytes recovering: member data below it is rebuilt
//!    128    8 recovery_rate         recovering: the rebuild's rate limit in B/s, 0 = none
//!    136   16 cache_uuid            cached: the UUID of the cache mirror (the array the
//!                                   cache members form), non-zero; else 0
//!    152    4 bad_block_count       entries in the bad-block list, at most BAD_BLOCKS_MAX
//!    156    4 reserved              0
//!    160 16*n bad_blocks            this member's unreadable sectors (md's badblocks): per
//!                                   range its first sector and its length in sectors
//!                                   (u64 each, 512 B sectors of the data area), sorted,
//!                                   disjoint, not touching, inside member_capacity_bytes
//!   2208 1884 zero
//!   4092    4 crc32c                CRC32C of bytes 0..4092
//! ```
//! All integers little-endian. Bytes [`BITMAP_OFFSET_BYTES`]..[`DATA_OFFSET_BYTES`] hold
//! the write-intent bitmap (see the constants below and the crate README), or, under the
//! `ppl` policy, which keeps no bitmap (as md: the two exclude each other), the member's
//! partial parity log (see [`crate::format::ppl`]).

use crc32c::crc32c;
use raidlab_layout::{ArraySpec, FailedSet, Layout, Level, MEMBERS_MAX};

/// Bytes of the superblock at the start of every member.
pub const SUPERBLOCK_BYTES: usize = 4096;
/// Where array data starts on every member.
pub const DATA_OFFSET_BYTES: u64 = 1 << 20;
/// Where the write-intent bitmap starts on every member: right after the superblock.
/// Bit `r` (byte `r / 8`, bit `r % 8`) set means member bytes
/// `[r * BITMAP_REGION_BYTES, (r + 1) * BITMAP_REGION_BYTES)` of the data area may have
/// writes in flight on some member, so their stripes need a resync after an unclean stop.
pub const BITMAP_OFFSET_BYTES: u64 = SUPERBLOCK_BYTES as u64;
/// Member data bytes one bitmap bit covers (64 MiB, md's usual bitmap chunk order of
/// magnitude: a set bit costs one fsync'd bitmap write per region first touched).
pub const BITMAP_REGION_BYTES: u64 = 64 << 20;
/// Room for the bitmap between the superblock and the data: 8 bits per byte, so about
/// 8 million regions, 512 TiB per member.
pub const BITMAP_BYTES_MAX: u64 = DATA_OFFSET_BYTES - BITMAP_OFFSET_BYTES;
/// `b"RAIDLAB\x01"`.
pub const MAGIC: [u8; 8] = *b"RAIDLAB\x01";
/// On-disk format version this code writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Flag bit: the array was open for writing and not closed cleanly.
pub const FLAG_DIRTY: u32 = 1;
/// Flag bit: every write goes through a write journal (see `crate::format::journal`), which
/// must be given to assemble the array.
pub const FLAG_JOURNAL: u32 = 2;
/// Flag bit: this member is being rebuilt; its data below `recovery_offset_bytes` is
/// current, so a rebuild stopped cleanly resumes there (md's `recovery_offset`).
pub const FLAG_RECOVERING: u32 = 4;
/// Flag bit: an SSD cache tier fronts the array (see `crate::cache`); its dirty lines
/// are newer than the members, so the array is used only through that cache (the one
/// whose UUID `cache_uuid` records) until `detach-cache` hands them back.
pub const FLAG_CACHED: u32 = 8;

/// Most ranges a member's bad-block list holds (md's table holds 512 of 8 bytes; a
/// member with more unreadable ranges than this is failed instead).
pub const BAD_BLOCKS_MAX: usize = 128;
/// Where the bad-block list starts: its count, then the entries at `+ 8`.
const BAD_BLOCKS_AT: usize = 152;

/// The role of a hot spare: a member of the array that holds no data and has no role
/// until a member fails and it takes that member's place. md's v1 superblock says the
/// same with role 0xffff (`MD_DISK_ROLE_SPARE` in `dev_roles[]`, md_p.h).
pub const ROLE_SPARE: u32 = u32::MAX;

/// What makes parity agree with data again after an unclean stop (mdadm's
/// `--consistency-policy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ConsistencyPolicy {
    /// No bitmap on disk: after an unclean stop every stripe is resynced.
    Resync,
    /// The write-intent bitmap: only the regions it marks are resynced (the default).
    #[default]
    Bitmap,
    /// A write journal (`--journal`, with the bitmap too): half-done writes are replayed
    /// whole (see [`crate::format::journal`]).
    Journal,
    /// md's partial parity log (the parity levels): no bitmap; the log on each stripe's
    /// parity members makes parity consistent again, degraded too (see
    /// [`crate::format::ppl`]).
    Ppl,
}

impl ConsistencyPolicy {
    /// Every policy, in on-disk code order (code = index + 1).
    pub const ALL: [Self; 4] = [Self::Resync, Self::Bitmap, Self::Journal, Self::Ppl];

    /// The name mdadm gives it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Resync => "resync",
            Self::Bitmap => "bitmap",
            Self::Journal => "journal",
            Self::Ppl => "ppl",
        }
    }

    /// Whether the write-intent bitmap is kept on disk.
    pub fn keeps_bitmap(self) -> bool {
        matches!(self, Self::Bitmap | Self::Journal)
    }
}

impl std::fmt::Display for ConsistencyPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ConsistencyPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("one of resync, bitmap, journal, ppl, got {s:?}"))
    }
}

/// Bytes of the data area one checksum covers (dm-integrity's usual block size).
pub const INTEGRITY_BLOCK_BYTES: u64 = 4096;
/// Bytes of one stored checksum (a CRC32C, little-endian).
pub const CHECKSUM_BYTES: u64 = 4;

/// Per-block checksums of the data area (dm-integrity's `--integrity`, ZFS's block
/// checksums): what lets a read or a repair tell a good copy from a bad one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Integrity {
    /// No checksums (the default, and what superblocks from before the field mean).
    #[default]
    None,
    /// One CRC32C per [`INTEGRITY_BLOCK_BYTES`] block of every member's data.
    Crc32c,
}

impl Integrity {
    /// Every choice, in on-disk code order (code = index).
    pub const ALL: [Self; 2] = [Self::None, Self::Crc32c];

    /// The name dm-integrity's `--integrity` takes.
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Crc32c => "crc32c",
        }
    }
}

impl std::fmt::Display for Integrity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Integrity {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("one of none, crc32c, got {s:?}"))
    }
}

/// Bytes of the checksum area of a member with `capacity_bytes` of data: a checksum
/// per started block, rounded up to whole 4 KiB. It starts at member byte
/// `DATA_OFFSET_BYTES + capacity_bytes`.
pub fn checksum_area_bytes(capacity_bytes: u64) -> u64 {
    (capacity_bytes.div_ceil(INTEGRITY_BLOCK_BYTES) * CHECKSUM_BYTES)
        .next_multiple_of(INTEGRITY_BLOCK_BYTES)
}

/// A decoded superblock: plain data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Superblock {
    /// Identity of the array, equal on all its members.
    pub array_uuid: u128,
    /// Geometry the array was created with (member capacity included).
    pub spec: ArraySpec,
    /// This member's index in the array.
    pub role: u32,
    /// Event counter: a member with a lower one missed a state change (stale).
    pub events: u64,
    /// Writes may have been in flight when the array stopped (parity may be stale).
    pub dirty: bool,
    /// Members known failed when this superblock was written.
    pub failed: FailedSet,
    /// The array writes through a write journal.
    pub journaled: bool,
    /// The consistency policy (`Journal` exactly when `journaled`).
    pub policy: ConsistencyPolicy,
    /// A rebuild of this member stopped with member data below this offset rebuilt.
    pub recovery_offset_bytes: Option<u64>,
    /// The rate limit of that rebuild (`replace --rate`), which its resumption keeps.
    pub recovery_rate_bytes_per_s: Option<u64>,
    /// The UUID of the cache in front of the array (its mirror's array UUID), when one
    /// is attached (flag bit 3): the array is then used only through that cache.
    pub cache_uuid: Option<u128>,
    /// Per-block checksums of the data (byte 35).
    pub integrity: Integrity,
}

/// Why 4 KiB are not a valid superblock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SuperblockError {
    /// No raidlab magic: not a member (or wiped).
    NoMagic,
    /// A format version this code does not read.
    Version(u32),
    /// The checksum does not match: torn write or corruption.
    Checksum {
        /// Stored CRC32C.
        stored: u32,
        /// Computed CRC32C.
        computed: u32,
    },
    /// A field out of range.
    Field(&'static str, u64),
}

impl std::fmt::Display for SuperblockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoMagic => write!(f, "no raidlab superblock (magic missing)"),
            Self::Version(v) => write!(
                f,
                "superblock format version {v}, this build reads {FORMAT_VERSION}"
            ),
            Self::Checksum { stored, computed } => write!(
                f,
                "superblock checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
            ),
            Self::Field(name, v) => write!(f, "superblock field {name} out of range: {v}"),
        }
    }
}

impl std::error::Error for SuperblockError {}

// The on-disk level codes (byte 32): the format, spelled out here on purpose rather
// than taken from `Level::ALL`, whose order is not part of any format.
const LEVELS: [Level; 9] = [
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

const LAYOUTS: [Layout; 7] = [
    Layout::LeftAsymmetric,
    Layout::RightAsymmetric,
    Layout::LeftSymmetric,
    Layout::RightSymmetric,
    Layout::Near,
    Layout::Far,
    Layout::Offset,
];

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl Superblock {
    /// Whether this is a hot spare's superblock (role [`ROLE_SPARE`]).
    pub fn is_spare(&self) -> bool {
        self.role == ROLE_SPARE
    }

    /// The 4 KiB on-disk image, checksum included.
    pub fn encode(&self) -> [u8; SUPERBLOCK_BYTES] {
        let mut b = [0u8; SUPERBLOCK_BYTES];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&(SUPERBLOCK_BYTES as u32).to_le_bytes());
        b[16..32].copy_from_slice(&self.array_uuid.to_le_bytes());
        b[32] = LEVELS
            .iter()
            .position(|&l| l == self.spec.level)
            .expect("every level has a code") as u8;
        b[33] = self.spec.layout.map_or(0, |l| {
            LAYOUTS.iter().position(|&x| x == l).expect("code") as u8 + 1
        });
        b[34] = ConsistencyPolicy::ALL
            .iter()
            .position(|&p| p == self.policy)
            .expect("every policy has a code") as u8
            + 1;
        b[35] = Integrity::ALL
            .iter()
            .position(|&i| i == self.integrity)
            .expect("every integrity has a code") as u8;
        b[36..40].copy_from_slice(&self.spec.copies.unwrap_or(0).to_le_bytes());
        b[40..44].copy_from_slice(&self.spec.spans.unwrap_or(0).to_le_bytes());
        b[44..48].copy_from_slice(&self.spec.drive_count.to_le_bytes());
        b[48..56].copy_from_slice(&self.spec.stripe_unit_bytes.to_le_bytes());
        b[56..64].copy_from_slice(&self.spec.member_capacity_bytes.to_le_bytes());
        b[64..72].copy_from_slice(&DATA_OFFSET_BYTES.to_le_bytes());
        b[72..76].copy_from_slice(&self.role.to_le_bytes());
        let flags = if self.dirty { FLAG_DIRTY } else { 0 }
            | if self.journaled { FLAG_JOURNAL } else { 0 }
            | if self.recovery_offset_bytes.is_some() {
                FLAG_RECOVERING
            } else {
                0
            }
            | if self.cache_uuid.is_some() {
                FLAG_CACHED
            } else {
                0
            };
        b[76..80].copy_from_slice(&flags.to_le_bytes());
        b[80..88].copy_from_slice(&self.events.to_le_bytes());
        for m in self.failed.iter() {
            b[88 + m as usize / 8] |= 1 << (m % 8);
        }
        b[120..128].copy_from_slice(&self.recovery_offset_bytes.unwrap_or(0).to_le_bytes());
        b[128..136].copy_from_slice(&self.recovery_rate_bytes_per_s.unwrap_or(0).to_le_bytes());
        debug_assert_ne!(self.cache_uuid, Some(0), "a cache UUID is never 0");
        b[136..152].copy_from_slice(&self.cache_uuid.unwrap_or(0).to_le_bytes());
        let crc = crc32c(&b[..SUPERBLOCK_BYTES - 4]);
        b[SUPERBLOCK_BYTES - 4..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes and validates an on-disk image (magic, version, checksum, field ranges).
    /// Geometry validity is checked later by `Geometry::new`.
    pub fn decode(b: &[u8; SUPERBLOCK_BYTES]) -> Result<Self, SuperblockError> {
        check_header(b)?;
        let level = *LEVELS
            .get(b[32] as usize)
            .ok_or(SuperblockError::Field("level", u64::from(b[32])))?;
        let layout = match b[33] {
            0 => None,
            c => Some(
                *LAYOUTS
                    .get(c as usize - 1)
                    .ok_or(SuperblockError::Field("layout", u64::from(c)))?,
            ),
        };
        let nonzero = |v: u32| (v != 0).then_some(v);
        let drive_count = u32_at(b, 44);
        if drive_count == 0 || drive_count > MEMBERS_MAX {
            return Err(SuperblockError::Field("member_count", drive_count.into()));
        }
        let role = u32_at(b, 72);
        if role >= drive_count && role != ROLE_SPARE {
            return Err(SuperblockError::Field("role", role.into()));
        }
        let data_offset = u64_at(b, 64);
        if data_offset != DATA_OFFSET_BYTES {
            return Err(SuperblockError::Field("data_offset_bytes", data_offset));
        }
        let (journaled, policy) = decode_policy(b)?;
        let cache_uuid = decode_cache_uuid(b)?;
        decode_bad_blocks(b)?;
        let failed = decode_failed(b, drive_count)?;
        Ok(Self {
            array_uuid: u128::from_le_bytes(b[16..32].try_into().expect("16 bytes")),
            spec: ArraySpec {
                level,
                drive_count,
                stripe_unit_bytes: u64_at(b, 48),
                member_capacity_bytes: u64_at(b, 56),
                layout,
                copies: nonzero(u32_at(b, 36)),
                spans: nonzero(u32_at(b, 40)),
            },
            role,
            events: u64_at(b, 80),
            dirty: u32_at(b, 76) & FLAG_DIRTY != 0,
            failed,
            journaled,
            policy,
            recovery_offset_bytes: decode_recovery_offset(b)?,
            recovery_rate_bytes_per_s: match (u32_at(b, 76) & FLAG_RECOVERING, u64_at(b, 128)) {
                (0, _) | (_, 0) => None,
                (_, rate) => Some(rate),
            },
            cache_uuid,
            integrity: *Integrity::ALL
                .get(b[35] as usize)
                .ok_or(SuperblockError::Field("integrity", u64::from(b[35])))?,
        })
    }
}

/// Refuses bytes that are no superblock of this format: magic, version, checksum.
/// Writes a member's bad-block list (`(first sector, sectors)` per range, sorted and
/// disjoint, at most [`BAD_BLOCKS_MAX`]) into its encoded superblock `b` and checksums
/// it again. Superblocks written before the list existed have zeros there: no bad blocks.
pub fn encode_bad_blocks(b: &mut [u8; SUPERBLOCK_BYTES], ranges: &[(u64, u64)]) {
    assert!(
        ranges.len() <= BAD_BLOCKS_MAX,
        "{} bad ranges",
        ranges.len()
    );
    b[BAD_BLOCKS_AT..BAD_BLOCKS_AT + 8 + 16 * BAD_BLOCKS_MAX].fill(0);
    b[BAD_BLOCKS_AT..BAD_BLOCKS_AT + 4].copy_from_slice(&(ranges.len() as u32).to_le_bytes());
    for (i, &(first, sectors)) in ranges.iter().enumerate() {
        let at = BAD_BLOCKS_AT + 8 + 16 * i;
        b[at..at + 8].copy_from_slice(&first.to_le_bytes());
        b[at + 8..at + 16].copy_from_slice(&sectors.to_le_bytes());
    }
    let crc = crc32c(&b[..SUPERBLOCK_BYTES - 4]);
    b[SUPERBLOCK_BYTES - 4..].copy_from_slice(&crc.to_le_bytes());
}

/// The bad-block list of an encoded superblock (see [`encode_bad_blocks`]), checked: a
/// count above [`BAD_BLOCKS_MAX`], an empty, unsorted or overlapping range, or one past
/// the member's data is a corrupt superblock.
pub fn decode_bad_blocks(b: &[u8; SUPERBLOCK_BYTES]) -> Result<Vec<(u64, u64)>, SuperblockError> {
    let count = u32_at(b, BAD_BLOCKS_AT) as usize;
    if count > BAD_BLOCKS_MAX || u32_at(b, BAD_BLOCKS_AT + 4) != 0 {
        return Err(SuperblockError::Field("bad_block_count", count as u64));
    }
    let capacity_sectors = u64_at(b, 56) / raidlab_layout::SECTOR_BYTES;
    let mut ranges = Vec::with_capacity(count);
    let mut prev_end = None;
    for i in 0..count {
        let at = BAD_BLOCKS_AT + 8 + 16 * i;
        let (first, sectors) = (u64_at(b, at), u64_at(b, at + 8));
        let end = first.checked_add(sectors);
        let ordered = prev_end.is_none_or(|e| first > e);
        if sectors == 0 || !ordered || end.is_none_or(|e| e > capacity_sectors) {
            return Err(SuperblockError::Field("bad_blocks", i as u64));
        }
        prev_end = end;
        ranges.push((first, sectors));
    }
    Ok(ranges)
}

fn check_header(b: &[u8; SUPERBLOCK_BYTES]) -> Result<(), SuperblockError> {
    if b[0..8] != MAGIC {
        return Err(SuperblockError::NoMagic);
    }
    let version = u32_at(b, 8);
    if version != FORMAT_VERSION {
        return Err(SuperblockError::Version(version));
    }
    let stored = u32_at(b, SUPERBLOCK_BYTES - 4);
    let computed = crc32c(&b[..SUPERBLOCK_BYTES - 4]);
    if stored != computed {
        return Err(SuperblockError::Checksum { stored, computed });
    }
    Ok(())
}

/// Whether the array writes through a journal, and its consistency policy; the two
/// must agree.
fn decode_policy(b: &[u8; SUPERBLOCK_BYTES]) -> Result<(bool, ConsistencyPolicy), SuperblockError> {
    let journaled = u32_at(b, 76) & FLAG_JOURNAL != 0;
    let policy = match b[34] {
        // Written before the policy existed: the bitmap, and the journal if flagged.
        0 if journaled => ConsistencyPolicy::Journal,
        0 => ConsistencyPolicy::Bitmap,
        c => *ConsistencyPolicy::ALL
            .get(c as usize - 1)
            .ok_or(SuperblockError::Field("consistency_policy", u64::from(c)))?,
    };
    if journaled != (policy == ConsistencyPolicy::Journal) {
        return Err(SuperblockError::Field(
            "consistency_policy",
            u64::from(b[34]),
        ));
    }
    Ok((journaled, policy))
}

/// The UUID of the cache tier the array is behind, if flagged (and only then).
fn decode_cache_uuid(b: &[u8; SUPERBLOCK_BYTES]) -> Result<Option<u128>, SuperblockError> {
    let cache_uuid = u128::from_le_bytes(b[136..152].try_into().expect("16 bytes"));
    let cache_uuid = match (u32_at(b, 76) & FLAG_CACHED != 0, cache_uuid) {
        (true, 0) => return Err(SuperblockError::Field("cache_uuid", 0)),
        (true, u) => Some(u),
        (false, 0) => None,
        // A UUID without the flag: not something this code writes.
        (false, u) => return Err(SuperblockError::Field("cache_uuid", u as u64)),
    };
    Ok(cache_uuid)
}

/// The failed members' bitmap, every one below `drive_count`.
fn decode_failed(
    b: &[u8; SUPERBLOCK_BYTES],
    drive_count: u32,
) -> Result<FailedSet, SuperblockError> {
    let mut failed = FailedSet::new();
    for m in 0..MEMBERS_MAX {
        if b[88 + m as usize / 8] & (1 << (m % 8)) != 0 {
            if m >= drive_count {
                return Err(SuperblockError::Field("failed", m.into()));
            }
            failed.insert(m);
        }
    }
    Ok(failed)
}

/// Where a stopped rebuild onto this member stands, if one was recorded.
fn decode_recovery_offset(b: &[u8; SUPERBLOCK_BYTES]) -> Result<Option<u64>, SuperblockError> {
    Ok(match u32_at(b, 76) & FLAG_RECOVERING {
        0 => None,
        _ => {
            let at = u64_at(b, 120);
            if at > u64_at(b, 56) {
                return Err(SuperblockError::Field("recovery_offset_bytes", at));
            }
            Some(at)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Superblock {
        Superblock {
            array_uuid: 0x0123_4567_89ab_cdef_0011_2233_4455_6677,
            spec: ArraySpec::new(Level::Raid6, 6, 65536, 1 << 30)
                .with_layout(Layout::RightAsymmetric),
            role: 5,
            events: 42,
            dirty: true,
            journaled: true,
            policy: ConsistencyPolicy::Journal,
            failed: FailedSet::from_members(&[1, 4]),
            recovery_offset_bytes: None,
            recovery_rate_bytes_per_s: None,
            cache_uuid: None,
            integrity: Integrity::None,
        }
    }

    #[test]
    fn integrity_round_trips_and_old_superblocks_have_none() {
        let sb = Superblock {
            integrity: Integrity::Crc32c,
            ..sample()
        };
        let b = sb.encode();
        assert_eq!(b[35], 1);
        assert_eq!(Superblock::decode(&b), Ok(sb));
        // Superblocks from before the field hold 0 there (it was reserved): none.
        assert_eq!(sample().encode()[35], 0);
        let unknown = with_bytes(&sample(), |b| b[35] = 7);
        assert_eq!(
            Superblock::decode(&unknown),
            Err(SuperblockError::Field("integrity", 7))
        );
        assert_eq!("crc32c".parse(), Ok(Integrity::Crc32c));
        assert!("md5"
            .parse::<Integrity>()
            .unwrap_err()
            .contains("none, crc32c"));
        // 1 GiB of data: 262144 checksums of 4 B, 1 MiB.
        assert_eq!(checksum_area_bytes(1 << 30), 1 << 20);
        assert_eq!(checksum_area_bytes(4097), 4096);
    }

    /// `sb` re-encoded after `edit` changed its bytes (the checksum made right again).
    fn with_bytes(
        sb: &Superblock,
        edit: impl FnOnce(&mut [u8; SUPERBLOCK_BYTES]),
    ) -> [u8; SUPERBLOCK_BYTES] {
        let mut b = sb.encode();
        edit(&mut b);
        let crc = crc32c(&b[..SUPERBLOCK_BYTES - 4]);
        b[SUPERBLOCK_BYTES - 4..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    #[test]
    fn the_cached_flag_and_cache_uuid_round_trip_and_must_agree() {
        let cached = Superblock {
            cache_uuid: Some(0xcafe_f00d_0000_0000_0000_0000_1234_5678),
            ..sample()
        };
        let b = cached.encode();
        assert_eq!(u32_at(&b, 76) & FLAG_CACHED, FLAG_CACHED);
        assert_eq!(
            u128::from_le_bytes(b[136..152].try_into().unwrap()),
            0xcafe_f00d_0000_0000_0000_0000_1234_5678
        );
        assert_eq!(Superblock::decode(&b), Ok(cached));
        // A spare and a rebuild's replacement carry it as every member does.
        for sb in [
            Superblock {
                role: ROLE_SPARE,
                ..cached
            },
            Superblock {
                recovery_offset_bytes: Some(1 << 20),
                ..cached
            },
        ] {
            assert_eq!(Superblock::decode(&sb.encode()), Ok(sb));
        }
        // An uncached superblock (what every superblock before the flag was): bit 3
        // clear, zeros at 136.
        let plain = sample().encode();
        assert_eq!(u32_at(&plain, 76) & FLAG_CACHED, 0);
        assert!(plain[136..152].iter().all(|&x| x == 0));
        assert_eq!(Superblock::decode(&plain).unwrap().cache_uuid, None);
        // The flag without a UUID, or a UUID without the flag, is refused.
        let flag_only = with_bytes(&sample(), |b| b[76] |= FLAG_CACHED as u8);
        assert_eq!(
            Superblock::decode(&flag_only),
            Err(SuperblockError::Field("cache_uuid", 0))
        );
        let uuid_only = with_bytes(&sample(), |b| b[140] = 1);
        assert!(matches!(
            Superblock::decode(&uuid_only),
            Err(SuperblockError::Field("cache_uuid", _))
        ));
    }

    #[test]
    fn the_bad_block_list_round_trips_and_a_corrupt_one_is_refused() {
        let sb = sample();
        // Superblocks written before the list existed hold zeros there: no bad blocks.
        assert_eq!(decode_bad_blocks(&sb.encode()), Ok(vec![]));
        let list = vec![(8, 1), (16, 8), (2_097_151, 1)];
        let mut b = sb.encode();
        encode_bad_blocks(&mut b, &list);
        assert_eq!(Superblock::decode(&b), Ok(sb), "the rest is unchanged");
        assert_eq!(decode_bad_blocks(&b), Ok(list.clone()));
        encode_bad_blocks(&mut b, &[]);
        assert_eq!(b, sb.encode(), "an empty list writes the old image");
        let corrupt = |bad: &[(u64, u64)]| {
            let mut b = sb.encode();
            encode_bad_blocks(&mut b, bad);
            Superblock::decode(&b)
        };
        // Overlapping, touching, empty, past the member's 1 GiB (2^21 sectors).
        for bad in [
            &[(8, 8), (12, 1)][..],
            &[(8, 8), (16, 1)],
            &[(8, 0)],
            &[(2_097_151, 2)],
            &[(u64::MAX, 1)],
        ] {
            assert!(
                matches!(corrupt(bad), Err(SuperblockError::Field("bad_blocks", _))),
                "{bad:?}"
            );
        }
        let too_many = with_bytes(&sb, |b| b[BAD_BLOCKS_AT] = BAD_BLOCKS_MAX as u8 + 1);
        assert_eq!(
            Superblock::decode(&too_many),
            Err(SuperblockError::Field("bad_block_count", 129))
        );
    }

    #[test]
    fn encode_then_decode_is_the_identity() {
        let sb = sample();
        assert_eq!(Superblock::decode(&sb.encode()), Ok(sb));
        let r10 = Superblock {
            spec: ArraySpec::new(Level::Raid10, 4, 4096, 1 << 20)
                .with_layout(Layout::Far)
                .with_copies(3),
            failed: FailedSet::new(),
            role: 3,
            ..sb
        };
        assert_eq!(Superblock::decode(&r10.encode()), Ok(r10));
        let recovering = Superblock {
            recovery_offset_bytes: Some(3 << 20),
            recovery_rate_bytes_per_s: Some(50 << 20),
            ..sb
        };
        assert_eq!(Superblock::decode(&recovering.encode()), Ok(recovering));
        let beyond = Superblock {
            recovery_offset_bytes: Some(2 << 30),
            ..sb
        };
        assert!(matches!(
            Superblock::decode(&beyond.encode()),
            Err(SuperblockError::Field("recovery_offset_bytes", _))
        ));
    }

    #[test]
    fn the_policy_round_trips_and_old_superblocks_keep_their_meaning() {
        for policy in ConsistencyPolicy::ALL {
            let sb = Superblock {
                policy,
                journaled: policy == ConsistencyPolicy::Journal,
                ..sample()
            };
            assert_eq!(Superblock::decode(&sb.encode()), Ok(sb));
        }
        // A superblock from before the policy byte: 0 there.
        let reencode = |sb: Superblock| {
            let mut b = sb.encode();
            b[34] = 0;
            let crc = crc32c(&b[..SUPERBLOCK_BYTES - 4]);
            b[SUPERBLOCK_BYTES - 4..].copy_from_slice(&crc.to_le_bytes());
            Superblock::decode(&b).unwrap().policy
        };
        assert_eq!(reencode(sample()), ConsistencyPolicy::Journal);
        let plain = Superblock {
            journaled: false,
            policy: ConsistencyPolicy::Bitmap,
            ..sample()
        };
        assert_eq!(reencode(plain), ConsistencyPolicy::Bitmap);
        assert_eq!("ppl".parse(), Ok(ConsistencyPolicy::Ppl));
        assert!("raid".parse::<ConsistencyPolicy>().is_err());
    }

    #[test]
    fn a_flipped_bit_fails_the_checksum() {
        let mut b = sample().encode();
        b[81] ^= 0x10;
        assert!(matches!(
            Superblock::decode(&b),
            Err(SuperblockError::Checksum { .. })
        ));
    }

    #[test]
    fn zeroes_are_not_a_superblock() {
        assert_eq!(
            Superblock::decode(&[0u8; SUPERBLOCK_BYTES]),
            Err(SuperblockError::NoMagic)
        );
    }

    #[test]
    fn a_spare_has_role_spare_and_no_other_role_past_the_members_decodes() {
        let spare = Superblock {
            role: ROLE_SPARE,
            ..sample()
        };
        let back = Superblock::decode(&spare.encode()).unwrap();
        assert!(back.is_spare());
        assert_eq!(back, spare);
        assert!(!sample().is_spare());
        let past = Superblock {
            role: 6,
            ..sample()
        };
        assert_eq!(
            Superblock::decode(&past.encode()),
            Err(SuperblockError::Field("role", 6))
        );
    }
}

//! Array geometry of every level, built and validated from an [`ArraySpec`].

use crate::raid10::Raid10Geom;
use crate::raid5::{self, Placement};
use crate::{Layout, LayoutError, Level, MemberSet, COPIES_DEFAULT, MEMBERS_MAX, SECTOR_BYTES};

/// What an array is made of: plain data, validated by [`Geometry::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArraySpec {
    /// RAID level.
    pub level: Level,
    /// Members in the array, 1..=[`MEMBERS_MAX`], at least the level's minimum.
    pub drive_count: u32,
    /// Chunk size on one member: a power of two of at least [`SECTOR_BYTES`].
    pub stripe_unit_bytes: u64,
    /// Capacity of one member in bytes (the smallest, for mixed sizes); only whole
    /// chunks of it are used.
    pub member_capacity_bytes: u64,
    /// Layout; `None` takes md's default (left-symmetric, or near for RAID 10).
    pub layout: Option<Layout>,
    /// RAID 10 copies of each chunk, 2..=`drive_count`; `None` takes md's default,
    /// [`COPIES_DEFAULT`].
    pub copies: Option<u32>,
    /// RAID 50/60 sub-arrays; required there, refused elsewhere.
    pub spans: Option<u32>,
}

impl ArraySpec {
    /// A spec with md's defaults for layout and copies and no spans.
    pub fn new(
        level: Level,
        drive_count: u32,
        stripe_unit_bytes: u64,
        member_capacity_bytes: u64,
    ) -> Self {
        Self {
            level,
            drive_count,
            stripe_unit_bytes,
            member_capacity_bytes,
            layout: None,
            copies: None,
            spans: None,
        }
    }

    /// The same spec with `layout`.
    pub fn with_layout(mut self, layout: Layout) -> Self {
        self.layout = Some(layout);
        self
    }

    /// The same spec with `copies` (RAID 10).
    pub fn with_copies(mut self, copies: u32) -> Self {
        self.copies = Some(copies);
        self
    }

    /// The same spec with `spans` (RAID 50/60).
    pub fn with_spans(mut self, spans: u32) -> Self {
        self.spans = Some(spans);
        self
    }
}

/// A location on a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location {
    /// Member index, below the member count.
    pub member: u32,
    /// Byte offset on the member.
    pub offset_bytes: u64,
}

/// A stripe of a striped level (RAID 0/4/5/6/50/60): one row of chunks of one span.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StripeId {
    /// Sub-array (RAID 50/60), 0 otherwise.
    pub span: u32,
    /// Row of chunks within the span; its chunks start at `stripe * stripe_unit_bytes`
    /// on every member of the span.
    pub stripe: u64,
}

/// Where a logical byte sits in its stripe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StripeAddress {
    /// The stripe.
    pub id: StripeId,
    /// Data index within the stripe (md's logical `dd_idx` before placement).
    pub data_index: u32,
    /// Byte offset within the chunk.
    pub column_bytes: u64,
}

/// The parity blocks protecting a logical byte: same column, same stripe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StripeParity {
    /// P (XOR) block, for RAID 4/5/6/50/60.
    pub p: Option<Location>,
    /// Q (Reed-Solomon) block, for RAID 6/60.
    pub q: Option<Location>,
}

/// How a level arranges chunks; decides which planner path runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    /// RAID 0/4/5/6/50/60: rows of chunks, 0..=2 parity blocks per row and span.
    Striped,
    /// Members back to back.
    Concat,
    /// Every member a full copy.
    Mirror1,
    /// md RAID 10.
    Mirror10(Raid10Geom),
}

/// A validated array geometry: maps logical bytes to members for every level.
///
/// ```
/// use raidlab_layout::{ArraySpec, Geometry, Level, Location};
/// let g = Geometry::new(&ArraySpec::new(Level::Raid5, 4, 65536, 1 << 30)).unwrap();
/// // md left-symmetric, 4 drives: stripe 0 is D0 D1 D2 P.
/// assert_eq!(g.locate(65536), Location { member: 1, offset_bytes: 0 });
/// assert_eq!(g.parity_of(0).p, Some(Location { member: 3, offset_bytes: 0 }));
/// assert_eq!(g.capacity_bytes(), 3 << 30);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    level: Level,
    layout: Option<Layout>,
    drive_count: u32,
    stripe_unit_bytes: u64,
    spans: u32,
    /// Members per span (all members when there are no spans).
    span_width: u32,
    parity_per_stripe: u32,
    /// Chunk rows used on every member.
    rows: u64,
    family: Family,
    capacity_bytes: u64,
}

/// The layout of `spec`: its own if the level has it, else the level's default
/// (parity rotations for 5/6/50/60, copy placement for 10, none elsewhere); refuses
/// `copies` outside RAID 10.
fn layout_of(spec: &ArraySpec) -> Result<Option<Layout>, LayoutError> {
    let level = spec.level;
    let layout = match (level, spec.layout) {
        (l, None) => l.default_layout(),
        (l, Some(x)) if l.layouts().contains(&x) => Some(x),
        (l, Some(x)) => return Err(err("layout", layout_refused(l, x))),
    };
    if spec.copies.is_some() && level != Level::Raid10 {
        return Err(err(
            "copies",
            format!("copies is only for RAID 10 ({level} given; RAID 1 keeps drive_count copies)"),
        ));
    }
    Ok(layout)
}

/// The spans of `spec` and the members of each: RAID 50/60 need spans, the other
/// levels take none; every span has the level's minimum of members.
fn spans_of(spec: &ArraySpec) -> Result<(u32, u32), LayoutError> {
    let (level, n) = (spec.level, spec.drive_count);
    let spans = match (level, spec.spans) {
        (Level::Raid50 | Level::Raid60, Some(s)) => s,
        (Level::Raid50 | Level::Raid60, None) => {
            return Err(err(
                "spans",
                format!("{level} needs spans (the number of sub-arrays it stripes over)"),
            ))
        }
        (_, None) => 1,
        (_, Some(s)) => {
            return Err(err(
                "spans",
                format!("spans is only for RAID 50 and RAID 60 ({level} given, spans {s})"),
            ))
        }
    };
    if spans == 0 {
        return Err(err("spans", "must be at least 1".into()));
    }
    if !n.is_multiple_of(spans) {
        return Err(err(
            "drive_count",
            format!("{level} with {spans} spans needs a multiple of {spans} drives, got {n}"),
        ));
    }
    let span_width = n / spans;
    let min_width = level.span_members_min();
    if span_width < min_width {
        let message = if spans > 1 {
            format!(
                "{level} needs at least {min_width} drives per span; {n} drives in {spans} spans give {span_width}"
            )
        } else {
            format!("{level} needs at least {min_width} drives, got {n}")
        };
        return Err(err("drive_count", message));
    }
    Ok((spans, span_width))
}

/// The error of a member too small for one whole chunk (per far copy on RAID 10).
fn no_whole_chunk(spec: &ArraySpec) -> LayoutError {
    err(
        "capacity_bytes",
        format!(
            "a member of {} B holds no whole {} B chunk{}",
            spec.member_capacity_bytes,
            spec.stripe_unit_bytes,
            if spec.level == Level::Raid10 {
                " per far copy"
            } else {
                ""
            }
        ),
    )
}

/// The family of `spec`'s level, the rows of chunks it uses on each member and the
/// array's capacity in chunks; RAID 10's copies are checked here.
fn family_of(
    spec: &ArraySpec,
    layout: Option<Layout>,
    chunks_per_member: u64,
) -> Result<(Family, u64, u64), LayoutError> {
    let (level, n) = (spec.level, spec.drive_count);
    let spans = spec.spans.unwrap_or(1);
    Ok(match level {
        Level::Raid0
        | Level::Raid4
        | Level::Raid5
        | Level::Raid6
        | Level::Raid50
        | Level::Raid60 => (
            Family::Striped,
            chunks_per_member,
            chunks_per_member * u64::from(n - spans * level.parity_per_stripe()),
        ),
        Level::Concat => (
            Family::Concat,
            chunks_per_member,
            chunks_per_member * u64::from(n),
        ),
        Level::Raid1 => (Family::Mirror1, chunks_per_member, chunks_per_member),
        Level::Raid10 => {
            let copies = spec.copies.unwrap_or(COPIES_DEFAULT);
            if copies < 2 || copies > n {
                return Err(err(
                    "copies",
                    format!("RAID 10 needs 2..={n} copies on {n} drives, got {copies}"),
                ));
            }
            let (nc, fc, fo) = match layout {
                Some(Layout::Near) => (copies, 1, false),
                Some(Layout::Far) => (1, copies, false),
                Some(Layout::Offset) => (1, copies, true),
                _ => unreachable!("validated above"),
            };
            let g = Raid10Geom::new(n, nc, fc, fo, chunks_per_member);
            if g.array_chunks == 0 {
                return Err(no_whole_chunk(spec));
            }
            (Family::Mirror10(g), g.dev_rows, g.array_chunks)
        }
    })
}

/// Why `level` does not take `layout`: the level's own layouts, or, for a level with a
/// single arrangement, the levels that have layouts and theirs.
fn layout_refused(level: Level, layout: Layout) -> String {
    let names = |layouts: &[Layout]| {
        layouts
            .iter()
            .map(|l| l.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !level.layouts().is_empty() {
        return format!(
            "{level} does not take layout {layout}; {level} layouts: {}",
            names(level.layouts())
        );
    }
    let parity: Vec<&str> = Level::ALL
        .iter()
        .filter(|l| l.rotates_parity())
        .map(|l| &l.name()["RAID ".len()..])
        .collect();
    format!(
        "{level} has no layout; only RAID {} ({}) and RAID 10 ({}) take one",
        parity.join(", "),
        names(Level::Raid5.layouts()),
        names(Level::Raid10.layouts())
    )
}

fn err(field: &'static str, message: String) -> LayoutError {
    LayoutError { field, message }
}

impl Geometry {
    /// Validates `spec` and builds the geometry. Errors name the field (`level`,
    /// `drive_count`, `stripe_unit_bytes`, `capacity_bytes`, `layout`, `copies`,
    /// `spans`) and say what is allowed. Minimums follow md: RAID 1 >= 2 drives,
    /// RAID 4/5 >= 3, RAID 6 >= 4, RAID 10 >= 2 with 2 <= copies <= drives,
    /// RAID 50 = spans x (>= 3), RAID 60 = spans x (>= 4).
    pub fn new(spec: &ArraySpec) -> Result<Self, LayoutError> {
        let level = spec.level;
        let n = spec.drive_count;
        if n == 0 || n > MEMBERS_MAX {
            return Err(err(
                "drive_count",
                format!("{level} needs 1..={MEMBERS_MAX} drives, got {n}"),
            ));
        }
        let su = spec.stripe_unit_bytes;
        if su < SECTOR_BYTES || !su.is_power_of_two() {
            return Err(err(
                "stripe_unit_bytes",
                format!("must be a power of two >= {SECTOR_BYTES} B, got {su}"),
            ));
        }
        let layout = layout_of(spec)?;
        let (spans, span_width) = spans_of(spec)?;
        let chunks_per_member = spec.member_capacity_bytes / su;
        if chunks_per_member == 0 {
            return Err(no_whole_chunk(spec));
        }
        let parity_per_stripe = level.parity_per_stripe();
        let (family, rows, capacity_chunks) = family_of(spec, layout, chunks_per_member)?;
        let capacity_bytes = capacity_chunks.checked_mul(su).ok_or_else(|| {
            err(
                "member_capacity_bytes",
                format!(
                    "{} B per member on {n} drives is more than 2^64 B of array",
                    spec.member_capacity_bytes
                ),
            )
        })?;
        let geometry = Self {
            level,
            layout,
            drive_count: n,
            stripe_unit_bytes: su,
            spans,
            span_width,
            parity_per_stripe,
            rows,
            family,
            capacity_bytes,
        };
        debug_assert!(geometry.rows <= chunks_per_member);
        Ok(geometry)
    }

    /// The level.
    pub fn level(&self) -> Level {
        self.level
    }

    /// The layout in force (md's default when the spec gave none); `None` for levels
    /// with a single layout.
    pub fn layout(&self) -> Option<Layout> {
        self.layout
    }

    /// Number of members.
    pub fn members(&self) -> u32 {
        self.drive_count
    }

    /// Chunk size on one member, in bytes.
    pub fn stripe_unit_bytes(&self) -> u64 {
        self.stripe_unit_bytes
    }

    /// Sub-arrays (RAID 50/60), 1 otherwise.
    pub fn spans(&self) -> u32 {
        self.spans
    }

    /// Members per span (all members when there are no spans).
    pub fn span_width(&self) -> u32 {
        self.span_width
    }

    /// Parity blocks per stripe of a span: 0, 1 or 2.
    pub fn parity_per_stripe(&self) -> u32 {
        self.parity_per_stripe
    }

    /// Copies of every byte: members for RAID 1, `copies` for RAID 10, 1 otherwise.
    pub fn copies(&self) -> u32 {
        match self.family {
            Family::Mirror1 => self.drive_count,
            Family::Mirror10(g) => g.copies(),
            _ => 1,
        }
    }

    /// The RAID 0 view of a RAID 0 geometry (same members, stripe unit and rows).
    pub(crate) fn raid0(&self) -> crate::Raid0 {
        debug_assert_eq!(self.level, Level::Raid0);
        crate::Raid0::from_parts(self.drive_count, self.stripe_unit_bytes, self.rows)
    }

    /// Usable capacity: whole chunks (whole stripes for striped levels) of the smallest
    /// member; RAID 10 as md's `raid10_size` computes it.
    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    /// Bytes used at the start of every member (the region a rebuild must cover).
    pub fn member_used_bytes(&self) -> u64 {
        self.rows * self.stripe_unit_bytes
    }

    /// Data chunks in one row across the whole array: the number of members a large
    /// sequential transfer moves data through at once. RAID 0: members; RAID 4/5:
    /// members - 1; RAID 6: members - 2; RAID 50/60: spans x (span data members);
    /// concat and RAID 1: 1; RAID 10: members / copies, rounded down, at least 1.
    pub fn data_members_per_stripe(&self) -> u32 {
        match self.family {
            Family::Striped => self.drive_count - self.spans * self.parity_per_stripe,
            Family::Concat | Family::Mirror1 => 1,
            Family::Mirror10(g) => (self.drive_count / g.copies()).max(1),
        }
    }

    /// Logical bytes of a full stripe: a write of this size at a multiple of it reads
    /// nothing (striped levels); one chunk otherwise.
    pub fn full_stripe_bytes(&self) -> u64 {
        match self.family {
            Family::Striped => u64::from(self.data_members_per_stripe()) * self.stripe_unit_bytes,
            _ => self.stripe_unit_bytes,
        }
    }

    /// Failures every choice of failed members survives: 0 for RAID 0 and concat,
    /// members - 1 for RAID 1, 1 for RAID 4/5/50, 2 for RAID 6/60, copies - 1 for
    /// RAID 10. [`Geometry::tolerates`] is exact for a given set.
    pub fn tolerated_failures(&self) -> u32 {
        match self.family {
            Family::Striped => self.parity_per_stripe,
            Family::Concat => 0,
            Family::Mirror1 => self.drive_count - 1,
            Family::Mirror10(g) => g.copies() - 1,
        }
    }

    /// Whether the array keeps all data with `failed` members gone. Exact: for RAID 10
    /// no chunk may lose all its copies, for RAID 50/60 no span may lose more than its
    /// parity count. Members at or beyond the member count make it false.
    pub fn tolerates(&self, failed: &MemberSet) -> bool {
        if failed.max_member().is_some_and(|m| m >= self.drive_count) {
            return false;
        }
        match self.family {
            Family::Striped => (0..self.spans).all(|s| {
                failed.count_in(s * self.span_width, self.span_width) <= self.parity_per_stripe
            }),
            Family::Concat => failed.is_empty(),
            Family::Mirror1 => failed.len() < self.drive_count,
            Family::Mirror10(g) => g.survives(failed),
        }
    }

    pub(crate) fn family(&self) -> Family {
        self.family
    }

    /// Data blocks per stripe of one span (striped levels).
    pub(crate) fn data_per_span_stripe(&self) -> u32 {
        self.span_width - self.parity_per_stripe
    }

    /// Stripes (chunk rows) per span.
    pub fn stripes_per_span(&self) -> u64 {
        self.rows
    }

    fn placement(&self, stripe: u64) -> Placement {
        raid5::placement(self.layout, self.span_width, self.parity_per_stripe, stripe)
    }

    /// Stripe `id`'s P and Q members and its data members' placement, looked up once
    /// for a planner that asks for several (levels with parity only).
    pub(crate) fn parity_members(&self, id: StripeId) -> (u32, Option<u32>, Placement) {
        debug_assert!(self.family == Family::Striped && self.parity_per_stripe > 0);
        let p = self.placement(id.stripe);
        let base = id.span * self.span_width;
        (base + p.pd, p.qd.map(|q| base + q), p)
    }

    /// [`Geometry::data_member`] of a stripe whose placement `p` is known.
    #[inline]
    pub(crate) fn placed_data_member(&self, id: StripeId, p: Placement, data_index: u32) -> u32 {
        debug_assert!(self.parity_per_stripe > 0 && data_index < self.data_per_span_stripe());
        id.span * self.span_width + raid5::data_member(self.layout, self.span_width, p, data_index)
    }

    /// Where `logical_bytes` sits in its stripe; `None` for levels without stripes
    /// (concat, RAID 1, RAID 10).
    pub fn stripe_address(&self, logical_bytes: u64) -> Option<StripeAddress> {
        if self.family != Family::Striped {
            return None;
        }
        debug_assert!(logical_bytes < self.capacity_bytes);
        // The stripe unit is a power of two: shifts and masks, not divisions.
        let su = self.stripe_unit_bytes;
        let chunk = logical_bytes >> su.trailing_zeros();
        let spans = u64::from(self.spans);
        let d = u64::from(self.data_per_span_stripe());
        // RAID 0 over spans first: chunk c goes to span c % spans as its chunk c / spans.
        let (span, span_chunk) = if spans == 1 {
            (0, chunk)
        } else {
            ((chunk % spans) as u32, chunk / spans)
        };
        Some(StripeAddress {
            id: StripeId {
                span,
                stripe: span_chunk / d,
            },
            data_index: (span_chunk % d) as u32,
            column_bytes: logical_bytes & (su - 1),
        })
    }

    /// Member of data block `data_index` of stripe `id` (striped levels).
    pub fn data_member(&self, id: StripeId, data_index: u32) -> u32 {
        debug_assert!(self.family == Family::Striped);
        debug_assert!(id.span < self.spans && data_index < self.data_per_span_stripe());
        let local = if self.parity_per_stripe == 0 {
            data_index
        } else {
            raid5::data_member(
                self.layout,
                self.span_width,
                self.placement(id.stripe),
                data_index,
            )
        };
        id.span * self.span_width + local
    }

    /// Member holding P of stripe `id`, if the level has parity.
    pub fn p_member(&self, id: StripeId) -> Option<u32> {
        (self.family == Family::Striped && self.parity_per_stripe > 0)
            .then(|| id.span * self.span_width + self.placement(id.stripe).pd)
    }

    /// Member holding Q of stripe `id`, for RAID 6/60.
    pub fn q_member(&self, id: StripeId) -> Option<u32> {
        if self.family != Family::Striped || self.parity_per_stripe < 2 {
            return None;
        }
        self.placement(id.stripe)
            .qd
            .map(|q| id.span * self.span_width + q)
    }

    /// md's syndrome slot of data block `data_index` in stripe `id` (RAID 6/60): Q
    /// weighs the block by g^slot, and [`crate::parity`] wants blocks in slot order.
    /// Equal to `data_index` for the symmetric layouts.
    pub fn syndrome_slot(&self, id: StripeId, data_index: u32) -> u32 {
        assert!(
            self.parity_per_stripe == 2,
            "only RAID 6/60 has a Q syndrome"
        );
        let p = self.placement(id.stripe);
        let local = raid5::data_member(self.layout, self.span_width, p, data_index);
        raid5::syndrome_slot(self.span_width, p, local)
    }

    /// The logical byte held by data block `data_index` of stripe `id` at
    /// `column_bytes` into its chunk: the inverse of [`Geometry::stripe_address`]
    /// (RAID 0 over the spans first, then md's data order within a span's stripe).
    /// Striped levels only; the stripe, data index and column must lie inside the
    /// geometry, and the result is below [`Geometry::capacity_bytes`].
    pub fn logical_of(&self, id: StripeId, data_index: u32, column_bytes: u64) -> u64 {
        assert!(
            self.family == Family::Striped,
            "{} has no stripes",
            self.level
        );
        let d = self.data_per_span_stripe();
        assert!(
            id.span < self.spans && id.stripe < self.rows && data_index < d,
            "{id:?} data block {data_index} outside the geometry"
        );
        assert!(column_bytes < self.stripe_unit_bytes);
        let span_chunk = id.stripe * u64::from(d) + u64::from(data_index);
        let chunk = span_chunk * u64::from(self.spans) + u64::from(id.span);
        let logical_bytes = chunk * self.stripe_unit_bytes + column_bytes;
        debug_assert!(logical_bytes < self.capacity_bytes);
        logical_bytes
    }

    /// The members of parity stripe `id` in reconstruct order: its data members in
    /// syndrome slot order, then P, then Q where the level has one; and the data index
    /// of each slot ([`Geometry::slot_order`]). The order [`crate::parity`] takes the
    /// stripe's blocks in.
    pub fn stripe_members(&self, id: StripeId) -> (Vec<u32>, Vec<u32>) {
        let order = self.slot_order(id);
        let mut members: Vec<u32> = order.iter().map(|&k| self.data_member(id, k)).collect();
        members.extend(self.p_member(id));
        members.extend(self.q_member(id));
        (members, order)
    }

    /// The data indices of stripe `id` in syndrome slot order: entry `slot` is the data
    /// index whose block [`crate::parity`] takes at position `slot`. A permutation of
    /// `0..data blocks per stripe`; the identity except for RAID 6/60's asymmetric
    /// layouts, where md's Q order differs from the data order (see
    /// [`Geometry::syndrome_slot`]). Striped levels only.
    pub fn slot_order(&self, id: StripeId) -> Vec<u32> {
        assert!(
            self.family == Family::Striped,
            "{} has no stripes",
            self.level
        );
        let d = self.data_per_span_stripe();
        let mut order = vec![u32::MAX; d as usize];
        for data_index in 0..d {
            let slot = if self.parity_per_stripe == 2 {
                self.syndrome_slot(id, data_index)
            } else {
                data_index
            };
            assert_eq!(
                order[slot as usize],
                u32::MAX,
                "syndrome slots are a permutation"
            );
            order[slot as usize] = data_index;
        }
        order
    }

    /// Byte offset on its members where stripe `id`'s chunks start.
    pub fn stripe_offset_bytes(&self, id: StripeId) -> u64 {
        id.stripe * self.stripe_unit_bytes
    }

    /// Members of `span`: `first..first + span_width`.
    pub fn span_members(&self, span: u32) -> std::ops::Range<u32> {
        span * self.span_width..(span + 1) * self.span_width
    }

    /// Where the primary copy of logical byte `logical_bytes` lives (the copy md reads
    /// by default: member 0 for RAID 1, md's first copy for RAID 10).
    pub fn locate(&self, logical_bytes: u64) -> Location {
        assert!(
            logical_bytes < self.capacity_bytes,
            "logical byte {logical_bytes} beyond capacity {}",
            self.capacity_bytes
        );
        let su = self.stripe_unit_bytes;
        let loc = match self.family {
            Family::Striped => {
                let a = self.stripe_address(logical_bytes).expect("striped");
                Location {
                    member: self.data_member(a.id, a.data_index),
                    offset_bytes: self.stripe_offset_bytes(a.id) + a.column_bytes,
                }
            }
            Family::Concat => {
                let per_member = self.rows * su;
                Location {
                    member: (logical_bytes / per_member) as u32,
                    offset_bytes: logical_bytes % per_member,
                }
            }
            Family::Mirror1 => Location {
                member: 0,
                offset_bytes: logical_bytes,
            },
            Family::Mirror10(g) => self.raid10_copy(g, logical_bytes, 0),
        };
        debug_assert!(loc.member < self.drive_count && loc.offset_bytes < self.member_used_bytes());
        loc
    }

    fn raid10_copy(&self, g: Raid10Geom, logical_bytes: u64, i: u32) -> Location {
        let su = self.stripe_unit_bytes;
        let (dev, row) = g.copy(logical_bytes / su, i);
        Location {
            member: dev,
            offset_bytes: row * su + logical_bytes % su,
        }
    }

    /// Copy `i` (0-based, below [`Geometry::copies`]) of logical byte `logical_bytes`.
    /// Copy 0 is [`Geometry::locate`].
    pub fn copy(&self, logical_bytes: u64, i: u32) -> Location {
        assert!(i < self.copies(), "copy {i} of {}", self.copies());
        match self.family {
            Family::Mirror1 => Location {
                member: i,
                offset_bytes: logical_bytes,
            },
            Family::Mirror10(g) => self.raid10_copy(g, logical_bytes, i),
            _ => self.locate(logical_bytes),
        }
    }

    /// Every copy of logical byte `logical_bytes`, primary first (one for levels
    /// without mirroring). Allocation-free.
    pub fn copies_of(&self, logical_bytes: u64) -> impl Iterator<Item = Location> + '_ {
        (0..self.copies()).map(move |i| self.copy(logical_bytes, i))
    }

    /// The P and Q blocks of the stripe holding `logical_bytes`, at the same column.
    pub fn parity_of(&self, logical_bytes: u64) -> StripeParity {
        let Some(a) = self.stripe_address(logical_bytes) else {
            return StripeParity::default();
        };
        let at = |member: u32| Location {
            member,
            offset_bytes: self.stripe_offset_bytes(a.id) + a.column_bytes,
        };
        StripeParity {
            p: self.p_member(a.id).map(at),
            q: self.q_member(a.id).map(at),
        }
    }

    /// For RAID 10: the logical byte stored at `offset_bytes` of `member` and which copy
    /// it is, or `None` for an unused area. Used to rebuild a member.
    pub(crate) fn raid10_logical_at(
        &self,
        g: Raid10Geom,
        member: u32,
        offset_bytes: u64,
    ) -> Option<(u64, u32)> {
        let su = self.stripe_unit_bytes;
        g.chunk_at(member, offset_bytes / su)
            .map(|(chunk, copy)| (chunk * su + offset_bytes % su, copy))
    }
}

//! Turning a host request into member operations.
//!
//! A [`Plan`] has two phases: every extent in `reads` completes first, then the parity
//! listed per stripe in `stripes` is computed, then every extent in `writes` is issued.
//! Extents are merged per member within a phase (contiguous or overlapping ranges become
//! one) and sorted by (member, offset).
//!
//! Write rules are md's (drivers/md/raid5.c `handle_stripe_dirtying`), decided for each
//! *segment* of a stripe: a column range in which every data chunk is either entirely
//! written or untouched (md decides per 4 KiB page; with 4 KiB-aligned requests the two
//! agree, and for smaller requests a segment is exact to the sector):
//!
//! - read-modify-write reads the old data of the written chunks and the old P (and Q):
//!   `rmw = written + parity` reads;
//! - reconstruct-write reads the data chunks not written: `rcw = data - written` reads;
//! - md takes RMW only when `rmw < rcw` (its default `rmw_level`,
//!   PARITY_ENABLE_RMW), so a tie is a reconstruct-write; a full stripe reads nothing.
//! - A method that would read a failed member is impossible (md counts it `2 * disks`).
//!   When neither is possible (RAID 6 with two failures, say), every survivor of the
//!   segment is read, the missing old data rebuilt, and new parity computed
//!   ([`StripeKind::DegradedWrite`]). When every parity block of the stripe is lost,
//!   only the data is written ([`StripeKind::WriteWithoutParity`]); md would still read
//!   for a reconstruct-write it cannot store.
//!
//! A read of a lost chunk reads every survivor of its stripe in the same columns (data
//! and parity, as md's `fetch_block` does) and rebuilds it. Mirrors read one surviving
//! copy, chosen by a [`CopyChooser`], and write every surviving copy. A plan never
//! touches a failed member, except the replacement a rebuild writes.

use crate::geometry::Family;
use crate::{Geometry, Level, MemberExtent, MemberSet, StripeId, MEMBERS_MAX, SECTOR_BYTES};

/// A host request on the array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Logical byte offset, a multiple of [`SECTOR_BYTES`].
    pub offset_bytes: u64,
    /// Length in bytes, a nonzero multiple of [`SECTOR_BYTES`].
    pub len_bytes: u64,
    /// A write (else a read).
    pub write: bool,
}

/// What one stripe segment of a plan does between the read and the write phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StripeKind {
    /// Healthy read of data chunks.
    Read,
    /// Read of a lost chunk: every survivor read, the lost data rebuilt.
    DegradedRead,
    /// Write without redundancy (RAID 0, concat).
    Write,
    /// Read-modify-write: old data and old parity read, parity updated.
    Rmw,
    /// Reconstruct-write: unwritten data read, parity computed from all data.
    Rcw,
    /// Every data chunk written: parity computed from new data, nothing read.
    FullStripe,
    /// Degraded write no cheaper method can do: every survivor read, lost old data
    /// rebuilt, parity recomputed.
    DegradedWrite,
    /// Every parity block of the stripe is lost: surviving data written, nothing else.
    WriteWithoutParity,
    /// RAID 1/10: one copy read, or every surviving copy written.
    Mirror,
    /// Rebuild of a replacement member: survivors read, the lost block recomputed
    /// (parity levels) or copied (mirrors), the replacement written.
    Rebuild,
}

/// One stripe segment of a plan: what a real engine computes between the phases.
///
/// For striped levels (RAID 0/4/5/6/50/60) it covers columns
/// `[column_offset_bytes, +column_len_bytes)` of every chunk of stripe (`span`,
/// `stripe`), i.e. bytes `stripe * stripe_unit_bytes + column_offset_bytes ..` on each
/// member in `read`/`written`. For concat, RAID 1 and RAID 10 it covers the logical
/// range starting `column_offset_bytes` into logical chunk `stripe`, of
/// `column_len_bytes` bytes, and `span` is 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StripePlan {
    /// Sub-array (RAID 50/60), 0 otherwise.
    pub span: u32,
    /// Stripe within the span (striped levels) or logical chunk (others).
    pub stripe: u64,
    /// What is done.
    pub kind: StripeKind,
    /// Byte offset of the segment within each chunk.
    pub column_offset_bytes: u64,
    /// Length of the segment in bytes, the same in each chunk it touches.
    pub column_len_bytes: u64,
    /// Members read in the segment (old data, old parity, survivors).
    pub read: MemberSet,
    /// Members written in the segment (new data, new parity, replacement).
    pub written: MemberSet,
    /// Failed members of the stripe (for a rebuild, including the replacement).
    pub lost: MemberSet,
    /// Bytes of blocks computed: parity blocks (P and Q each count) and rebuilt data.
    pub parity_bytes: u64,
    /// Bytes of the input blocks those computations consume (a simulator's XOR/GF cost).
    pub parity_source_bytes: u64,
}

/// The member operations of one request, in two phases, plus what is computed per stripe.
/// Reuse one `Plan` across requests: planning only clears it, so it stops allocating
/// once its vectors have grown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Phase 1: member reads, all complete before any computation.
    pub reads: Vec<MemberExtent>,
    /// Phase 2: member writes, issued after the computation.
    pub writes: Vec<MemberExtent>,
    /// Per stripe segment: what is read, computed and written.
    pub stripes: Vec<StripePlan>,
    /// Sum of the stripes' `parity_bytes`.
    pub parity_bytes: u64,
    /// Sum of the stripes' `parity_source_bytes`.
    pub parity_source_bytes: u64,
}

impl Plan {
    /// An empty plan.
    pub fn new() -> Self {
        Self::default()
    }

    /// Empties the plan, keeping its capacity.
    pub fn clear(&mut self) {
        self.reads.clear();
        self.writes.clear();
        self.stripes.clear();
        self.parity_bytes = 0;
        self.parity_source_bytes = 0;
    }

    /// Bytes read in phase 1.
    pub fn read_bytes(&self) -> u64 {
        self.reads.iter().map(|e| e.len_bytes).sum()
    }

    /// Bytes written in phase 2.
    pub fn write_bytes(&self) -> u64 {
        self.writes.iter().map(|e| e.len_bytes).sum()
    }

    fn push_stripe(&mut self, s: StripePlan) {
        self.parity_bytes += s.parity_bytes;
        self.parity_source_bytes += s.parity_source_bytes;
        self.stripes.push(s);
    }
}

/// Why a request could not be planned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanError {
    /// A request of zero bytes.
    EmptyRequest,
    /// Offset or length not a multiple of [`SECTOR_BYTES`].
    Unaligned {
        /// The request offset.
        offset_bytes: u64,
        /// The request length.
        len_bytes: u64,
    },
    /// The request ends beyond the array (or the member, for a rebuild).
    BeyondCapacity {
        /// Where the request ends.
        end_bytes: u64,
        /// The capacity it must stay within.
        capacity_bytes: u64,
    },
    /// The failed set names a member the array does not have.
    UnknownMember {
        /// The member.
        member: u32,
        /// Members in the array.
        drive_count: u32,
    },
    /// More failures than the level survives: data is lost.
    TooManyFailures {
        /// The level.
        level: Level,
        /// The failed members.
        failed: MemberSet,
        /// What the level survives in every case.
        tolerated_failures: u32,
    },
    /// A rebuild of a member that is not in the failed set.
    NotFailed {
        /// The member.
        member: u32,
    },
    /// A rebuild on a level without redundancy.
    NoRedundancy {
        /// The level.
        level: Level,
    },
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::EmptyRequest => write!(f, "a request of zero bytes"),
            Self::Unaligned {
                offset_bytes,
                len_bytes,
            } => write!(
                f,
                "request [{offset_bytes}, +{len_bytes}) is not aligned to {SECTOR_BYTES} B sectors"
            ),
            Self::BeyondCapacity {
                end_bytes,
                capacity_bytes,
            } => write!(f, "request ends at {end_bytes} B, beyond {capacity_bytes} B"),
            Self::UnknownMember {
                member,
                drive_count,
            } => write!(f, "failed member {member} does not exist ({drive_count} members)"),
            Self::TooManyFailures {
                level,
                failed,
                tolerated_failures,
            } => write!(
                f,
                "members {failed} failed: data lost ({level} survives {tolerated_failures} failure(s) in every case{})",
                if matches!(level, Level::Raid10 | Level::Raid50 | Level::Raid60) {
                    ", more depending on which"
                } else {
                    ""
                }
            ),
            Self::NotFailed { member } => {
                write!(f, "member {member} is rebuilt but is not in the failed set")
            }
            Self::NoRedundancy { level } => write!(f, "{level} has no redundancy to rebuild from"),
        }
    }
}

impl std::error::Error for PlanError {}

/// Chooses which copy of mirrored data a read goes to.
pub trait CopyChooser {
    /// Index into `candidates` (surviving members holding a copy, md's copy order; never
    /// empty) of the member to read.
    fn choose(&mut self, candidates: &[u32]) -> usize;
}

/// Cycles through the candidates: the k-th choice takes candidate `k % len`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RoundRobin {
    next: u64,
}

impl RoundRobin {
    /// Starts at the first candidate.
    pub fn new() -> Self {
        Self::default()
    }
}

impl CopyChooser for RoundRobin {
    fn choose(&mut self, candidates: &[u32]) -> usize {
        debug_assert!(!candidates.is_empty());
        let i = (self.next % candidates.len() as u64) as usize;
        self.next = self.next.wrapping_add(1);
        i
    }
}

/// Picks the candidate with the fewest outstanding operations (ties: the earliest
/// candidate, so md's first copy), from per-member counts the caller keeps.
#[derive(Debug, Clone, Copy)]
pub struct LeastOutstanding<'a> {
    outstanding: &'a [u32],
}

impl<'a> LeastOutstanding<'a> {
    /// `outstanding[m]` is the number of operations in flight on member `m`.
    pub fn new(outstanding: &'a [u32]) -> Self {
        Self { outstanding }
    }
}

impl CopyChooser for LeastOutstanding<'_> {
    fn choose(&mut self, candidates: &[u32]) -> usize {
        debug_assert!(!candidates.is_empty());
        let mut best = 0;
        for (i, &m) in candidates.iter().enumerate() {
            if self.outstanding[m as usize] < self.outstanding[candidates[best] as usize] {
                best = i;
            }
        }
        best
    }
}

/// Sorts by (member, offset) and merges contiguous or overlapping extents in place.
fn coalesce(extents: &mut Vec<MemberExtent>) {
    extents.sort_unstable_by_key(|e| (e.member, e.offset_bytes));
    let mut kept = 0;
    for i in 0..extents.len() {
        let e = extents[i];
        if kept > 0 {
            let last = &mut extents[kept - 1];
            let last_end = last.offset_bytes + last.len_bytes;
            if last.member == e.member && e.offset_bytes <= last_end {
                last.len_bytes = last_end.max(e.offset_bytes + e.len_bytes) - last.offset_bytes;
                continue;
            }
        }
        extents[kept] = e;
        kept += 1;
    }
    extents.truncate(kept);
}

/// One segment of a stripe: columns `[a, b)` in which data indices `w0..=w1` are touched.
#[derive(Debug, Clone, Copy)]
struct Segment {
    a: u64,
    b: u64,
    w0: u32,
    w1: u32,
}

impl Geometry {
    fn check_failed(&self, failed: &MemberSet) -> Result<(), PlanError> {
        if let Some(m) = failed.max_member().filter(|&m| m >= self.members()) {
            return Err(PlanError::UnknownMember {
                member: m,
                drive_count: self.members(),
            });
        }
        if !self.tolerates(failed) {
            return Err(PlanError::TooManyFailures {
                level: self.level(),
                failed: *failed,
                tolerated_failures: self.tolerated_failures(),
            });
        }
        Ok(())
    }

    /// Plans `req` with `failed` members gone into `out` (cleared first). Mirrored reads
    /// ask `chooser` which copy to read. Errors, never panics, on a bad request or on
    /// more failures than the array survives.
    pub fn plan(
        &self,
        req: Request,
        failed: &MemberSet,
        chooser: &mut impl CopyChooser,
        out: &mut Plan,
    ) -> Result<(), PlanError> {
        out.clear();
        if req.len_bytes == 0 {
            return Err(PlanError::EmptyRequest);
        }
        if !req.offset_bytes.is_multiple_of(SECTOR_BYTES)
            || !req.len_bytes.is_multiple_of(SECTOR_BYTES)
        {
            return Err(PlanError::Unaligned {
                offset_bytes: req.offset_bytes,
                len_bytes: req.len_bytes,
            });
        }
        let end_bytes = req.offset_bytes.saturating_add(req.len_bytes);
        if end_bytes > self.capacity_bytes() {
            return Err(PlanError::BeyondCapacity {
                end_bytes,
                capacity_bytes: self.capacity_bytes(),
            });
        }
        self.check_failed(failed)?;
        if self.level() == Level::Raid0 {
            // RAID 0 is the simulator's hot path: one merged extent per member, straight
            // from the RAID 0 mapping (property-tested to agree with the general one).
            let target = if req.write {
                &mut out.writes
            } else {
                &mut out.reads
            };
            self.raid0().plan(req.offset_bytes, req.len_bytes, target);
            return Ok(());
        }
        match self.family() {
            Family::Striped => self.plan_striped(req, failed, out),
            Family::Concat => self.plan_concat(req, out),
            Family::Mirror1 | Family::Mirror10(_) => self.plan_mirror(req, failed, chooser, out),
        }
        coalesce(&mut out.reads);
        coalesce(&mut out.writes);
        self.assert_plan(failed, None, out);
        if !req.write && failed.is_empty() {
            debug_assert_eq!(
                out.read_bytes(),
                req.len_bytes,
                "a healthy read reads the request once"
            );
        }
        Ok(())
    }

    /// Invariants of every plan: members exist, extents are nonempty and inside the
    /// used area, and no failed member is touched (but `replacement` may be written).
    fn assert_plan(&self, failed: &MemberSet, replacement: Option<u32>, out: &Plan) {
        let used = self.member_used_bytes();
        for e in out.reads.iter().chain(&out.writes) {
            debug_assert!(e.member < self.members() && e.len_bytes > 0);
            debug_assert!(e.offset_bytes + e.len_bytes <= used);
        }
        assert!(
            out.reads.iter().all(|e| !failed.contains(e.member)),
            "a plan reads a failed member"
        );
        assert!(
            out.writes
                .iter()
                .all(|e| !failed.contains(e.member) || Some(e.member) == replacement),
            "a plan writes a failed member"
        );
    }

    fn plan_concat(&self, req: Request, out: &mut Plan) {
        let su = self.stripe_unit_bytes();
        let per_member = self.member_used_bytes();
        let end = req.offset_bytes + req.len_bytes;
        let mut at = req.offset_bytes;
        while at < end {
            let piece_end = end.min((at / per_member + 1) * per_member);
            let loc = self.locate(at);
            let e = MemberExtent {
                member: loc.member,
                offset_bytes: loc.offset_bytes,
                len_bytes: piece_end - at,
            };
            let mut set = MemberSet::new();
            set.insert(loc.member);
            let (read, written) = if req.write {
                out.writes.push(e);
                (MemberSet::new(), set)
            } else {
                out.reads.push(e);
                (set, MemberSet::new())
            };
            out.push_stripe(StripePlan {
                span: 0,
                stripe: at / su,
                kind: if req.write {
                    StripeKind::Write
                } else {
                    StripeKind::Read
                },
                column_offset_bytes: at % su,
                column_len_bytes: piece_end - at,
                read,
                written,
                lost: MemberSet::new(),
                parity_bytes: 0,
                parity_source_bytes: 0,
            });
            at = piece_end;
        }
    }

    fn plan_mirror(
        &self,
        req: Request,
        failed: &MemberSet,
        chooser: &mut impl CopyChooser,
        out: &mut Plan,
    ) {
        let su = self.stripe_unit_bytes();
        let end = req.offset_bytes + req.len_bytes;
        let mut at = req.offset_bytes;
        let mut candidates = [0u32; MEMBERS_MAX as usize];
        while at < end {
            // md raid1 sends a whole read to one mirror; raid10 splits at chunks.
            let piece_end = match self.family() {
                Family::Mirror1 => end,
                _ => end.min((at / su + 1) * su),
            };
            let len_bytes = piece_end - at;
            let mut count = 0;
            let mut lost = MemberSet::new();
            for loc in self.copies_of(at) {
                if failed.contains(loc.member) {
                    lost.insert(loc.member);
                } else {
                    candidates[count] = loc.member;
                    count += 1;
                }
            }
            // check_failed guarantees a surviving copy of every chunk.
            assert!(count > 0, "every copy of logical byte {at} is lost");
            let mut read = MemberSet::new();
            let mut written = MemberSet::new();
            if req.write {
                for i in 0..self.copies() {
                    let loc = self.copy(at, i);
                    if !failed.contains(loc.member) {
                        written.insert(loc.member);
                        out.writes.push(MemberExtent {
                            member: loc.member,
                            offset_bytes: loc.offset_bytes,
                            len_bytes,
                        });
                    }
                }
            } else {
                let pick = chooser.choose(&candidates[..count]);
                assert!(pick < count, "chooser picked {pick} of {count} candidates");
                let member = candidates[pick];
                let loc = (0..self.copies())
                    .map(|i| self.copy(at, i))
                    .find(|l| l.member == member)
                    .expect("a candidate is a copy");
                read.insert(member);
                out.reads.push(MemberExtent {
                    member,
                    offset_bytes: loc.offset_bytes,
                    len_bytes,
                });
            }
            out.push_stripe(StripePlan {
                span: 0,
                stripe: at / su,
                kind: StripeKind::Mirror,
                column_offset_bytes: at % su,
                column_len_bytes: len_bytes,
                read,
                written,
                lost,
                parity_bytes: 0,
                parity_source_bytes: 0,
            });
            at = piece_end;
        }
    }

    fn plan_striped(&self, req: Request, failed: &MemberSet, out: &mut Plan) {
        let su = self.stripe_unit_bytes();
        let spans = u64::from(self.spans());
        let d = u64::from(self.data_per_span_stripe());
        let end = req.offset_bytes + req.len_bytes;
        let (c0, c1) = (req.offset_bytes / su, (end - 1) / su);
        for s in 0..spans {
            // The request's chunks in span s are logical chunks c = s mod spans, which are
            // consecutive chunks c / spans of the span.
            let cf = c0 + (s + spans - c0 % spans) % spans;
            if cf > c1 {
                continue;
            }
            let cl = c1 - (c1 % spans + spans - s) % spans;
            let lo = if cf == c0 { req.offset_bytes % su } else { 0 };
            let hi = if cl == c1 { (end - 1) % su + 1 } else { su };
            let (scf, scl) = (cf / spans, cl / spans);
            let (rf, rl) = (scf / d, scl / d);
            for r in rf..=rl {
                let (k0, lo_r) = if r == rf {
                    ((scf % d) as u32, lo)
                } else {
                    (0, 0)
                };
                let (k1, hi_r) = if r == rl {
                    ((scl % d) as u32, hi)
                } else {
                    (d as u32 - 1, su)
                };
                let id = StripeId {
                    span: s as u32,
                    stripe: r,
                };
                self.plan_stripe(id, k0, lo_r, k1, hi_r, req.write, failed, out);
            }
        }
    }

    /// One stripe touched from column `lo` of data chunk `k0` to column `hi` of chunk `k1`.
    #[allow(clippy::too_many_arguments)]
    fn plan_stripe(
        &self,
        id: StripeId,
        k0: u32,
        lo: u64,
        k1: u32,
        hi: u64,
        write: bool,
        failed: &MemberSet,
        out: &mut Plan,
    ) {
        let su = self.stripe_unit_bytes();
        debug_assert!(k0 <= k1 && lo < su && hi <= su && hi > 0);
        debug_assert!(k0 < k1 || lo < hi);
        // At most three segments: the columns before min(lo, hi), between, after.
        let mut points = [0, lo.min(hi), lo.max(hi), su];
        if k0 == k1 {
            points = [lo, lo, hi, hi];
        }
        for w in 0..3 {
            let (a, b) = (points[w], points[w + 1]);
            if a == b {
                continue;
            }
            let (w0, w1) = if k0 == k1 {
                (k0, k0)
            } else {
                // Chunk k0 is written from column lo on, chunk k1 up to column hi.
                (
                    if a >= lo { k0 } else { k0 + 1 },
                    if b <= hi { k1 } else { k1 - 1 },
                )
            };
            if w0 > w1 {
                continue;
            }
            let seg = Segment { a, b, w0, w1 };
            if write && self.parity_per_stripe() > 0 {
                self.plan_parity_write(id, seg, failed, out);
            } else {
                self.plan_segment_plain(id, seg, write, failed, out);
            }
        }
    }

    fn extent(&self, id: StripeId, member: u32, seg: Segment) -> MemberExtent {
        MemberExtent {
            member,
            offset_bytes: self.stripe_offset_bytes(id) + seg.a,
            len_bytes: seg.b - seg.a,
        }
    }

    fn lost_in_span(&self, span: u32, failed: &MemberSet) -> MemberSet {
        let mut lost = MemberSet::new();
        for m in self.span_members(span) {
            if failed.contains(m) {
                lost.insert(m);
            }
        }
        lost
    }

    /// Reads (healthy or degraded) and RAID 0 writes.
    fn plan_segment_plain(
        &self,
        id: StripeId,
        seg: Segment,
        write: bool,
        failed: &MemberSet,
        out: &mut Plan,
    ) {
        let lost = self.lost_in_span(id.span, failed);
        let col = seg.b - seg.a;
        let mut touched = MemberSet::new();
        let mut lost_touched = false;
        for k in seg.w0..=seg.w1 {
            let m = self.data_member(id, k);
            touched.insert(m);
            lost_touched |= lost.contains(m);
        }
        let mut sp = StripePlan {
            span: id.span,
            stripe: id.stripe,
            kind: StripeKind::Read,
            column_offset_bytes: seg.a,
            column_len_bytes: col,
            read: MemberSet::new(),
            written: MemberSet::new(),
            lost,
            parity_bytes: 0,
            parity_source_bytes: 0,
        };
        if write {
            debug_assert!(lost.is_empty() && self.parity_per_stripe() == 0);
            sp.kind = StripeKind::Write;
            sp.written = touched;
            for m in touched.iter() {
                out.writes.push(self.extent(id, m, seg));
            }
        } else if !lost_touched {
            sp.read = touched;
            for m in touched.iter() {
                out.reads.push(self.extent(id, m, seg));
            }
        } else {
            // md fetch_block: a lost block is computed from every other block of the
            // stripe, so every survivor is read, data and parity.
            sp.kind = StripeKind::DegradedRead;
            for m in self.span_members(id.span) {
                if !lost.contains(m) {
                    sp.read.insert(m);
                    out.reads.push(self.extent(id, m, seg));
                }
            }
            let lost_data = (0..self.data_per_span_stripe())
                .filter(|&k| lost.contains(self.data_member(id, k)))
                .count() as u64;
            sp.parity_bytes = col * lost_data;
            sp.parity_source_bytes = col * u64::from(sp.read.len());
        }
        out.push_stripe(sp);
    }

    /// A write to a parity level: md's RMW / RCW choice, full stripes, degraded cases.
    fn plan_parity_write(&self, id: StripeId, seg: Segment, failed: &MemberSet, out: &mut Plan) {
        let lost = self.lost_in_span(id.span, failed);
        let col = seg.b - seg.a;
        let d = self.data_per_span_stripe();
        let m = self.parity_per_stripe();
        let mut parity = MemberSet::new();
        for p in [self.p_member(id), self.q_member(id)].into_iter().flatten() {
            parity.insert(p);
        }
        let mut written_data = MemberSet::new();
        let mut unwritten_data = MemberSet::new();
        for k in 0..d {
            let member = self.data_member(id, k);
            if (seg.w0..=seg.w1).contains(&k) {
                written_data.insert(member);
            } else {
                unwritten_data.insert(member);
            }
        }
        let w = seg.w1 - seg.w0 + 1;
        let surviving_parity = parity.len() - parity.intersection(&lost).len();
        let mut sp = StripePlan {
            span: id.span,
            stripe: id.stripe,
            kind: StripeKind::Rcw,
            column_offset_bytes: seg.a,
            column_len_bytes: col,
            read: MemberSet::new(),
            written: MemberSet::new(),
            lost,
            parity_bytes: 0,
            parity_source_bytes: 0,
        };
        // Targets: the surviving written data, and the surviving parity unless all of it is lost.
        for member in written_data.iter().filter(|&x| !lost.contains(x)) {
            sp.written.insert(member);
        }
        if surviving_parity == 0 {
            sp.kind = StripeKind::WriteWithoutParity;
            debug_assert!(
                written_data.intersection(&lost).is_empty(),
                "checked by tolerates"
            );
        } else {
            for p in parity.iter().filter(|&p| !lost.contains(p)) {
                sp.written.insert(p);
            }
            let rmw_possible = written_data.union(&parity).intersection(&lost).is_empty();
            let rcw_possible = unwritten_data.intersection(&lost).is_empty();
            let (rmw, rcw) = (w + m, d - w);
            let out_blocks = u64::from(surviving_parity);
            if w == d {
                sp.kind = StripeKind::FullStripe;
                sp.parity_source_bytes = col * u64::from(d);
            } else if rmw_possible && (!rcw_possible || rmw < rcw) {
                sp.kind = StripeKind::Rmw;
                sp.read = written_data.union(&parity);
                // Each parity block folds in old and new data of the written chunks.
                sp.parity_source_bytes = col * u64::from(m) * (2 * u64::from(w) + 1);
            } else if rcw_possible {
                sp.kind = StripeKind::Rcw;
                sp.read = unwritten_data;
                sp.parity_source_bytes = col * u64::from(d) * out_blocks;
            } else {
                sp.kind = StripeKind::DegradedWrite;
                for member in self.span_members(id.span) {
                    if !lost.contains(member) {
                        sp.read.insert(member);
                    }
                }
                let rebuilt = u64::from(unwritten_data.intersection(&lost).len());
                sp.parity_bytes = col * rebuilt;
                sp.parity_source_bytes =
                    col * u64::from(sp.read.len()) + col * u64::from(d) * out_blocks;
            }
            sp.parity_bytes += col * out_blocks;
            if sp.kind == StripeKind::FullStripe {
                sp.parity_source_bytes *= out_blocks;
            }
        }
        debug_assert!(sp.read.intersection(&lost).is_empty());
        for member in sp.read.iter() {
            out.reads.push(self.extent(id, member, seg));
        }
        for member in sp.written.iter() {
            out.writes.push(self.extent(id, member, seg));
        }
        out.push_stripe(sp);
    }

    /// Plans a discard (TRIM, UNMAP) of the host range `req` into the member ranges a
    /// controller that passes discards on sends to its members, in `out.writes`
    /// (`out.reads` stays empty; cleared first). RAID 0, concat and the mirrors discard
    /// every member range that holds the host range (every copy). Parity levels discard
    /// only the whole stripes inside the range, data and parity chunks alike, as md's
    /// RAID 5 does (`raid5_make_discard_request`): a partial stripe keeps its data
    /// because the parity still depends on it. A range without a whole stripe plans
    /// nothing. Failed members are never touched.
    pub fn trim_plan(
        &self,
        req: Request,
        failed: &MemberSet,
        out: &mut Plan,
    ) -> Result<(), PlanError> {
        let (mut offset, mut end) = (
            req.offset_bytes,
            req.offset_bytes.saturating_add(req.len_bytes),
        );
        if end > self.capacity_bytes() {
            return Err(PlanError::BeyondCapacity {
                end_bytes: end,
                capacity_bytes: self.capacity_bytes(),
            });
        }
        if self.parity_per_stripe() > 0 {
            let stripe = self.full_stripe_bytes();
            offset = offset.div_ceil(stripe) * stripe;
            end = end / stripe * stripe;
        }
        if end <= offset {
            out.clear();
            return Ok(());
        }
        // The member ranges a write of the (whole-stripe) range writes are exactly those
        // holding it: data, parity and every copy.
        let write = Request {
            offset_bytes: offset,
            len_bytes: end - offset,
            write: true,
        };
        self.plan(write, failed, &mut RoundRobin::new(), out)?;
        debug_assert!(
            out.reads.is_empty(),
            "a whole-stripe or mirror write reads nothing"
        );
        out.reads.clear();
        out.stripes.clear();
        out.parity_bytes = 0;
        out.parity_source_bytes = 0;
        Ok(())
    }

    /// Plans the rebuild of `len_bytes` at `member_offset_bytes` of `replacement` (which
    /// must be in `failed`): reads of the survivors it is computed or copied from, and
    /// the write of the replacement, into `out` (cleared first). A background rebuild
    /// stream calls it one stripe (one chunk row) at a time; unused areas of a RAID 10
    /// member plan nothing.
    pub fn rebuild_plan(
        &self,
        replacement: u32,
        member_offset_bytes: u64,
        len_bytes: u64,
        failed: &MemberSet,
        chooser: &mut impl CopyChooser,
        out: &mut Plan,
    ) -> Result<(), PlanError> {
        out.clear();
        if len_bytes == 0 {
            return Err(PlanError::EmptyRequest);
        }
        if !member_offset_bytes.is_multiple_of(SECTOR_BYTES)
            || !len_bytes.is_multiple_of(SECTOR_BYTES)
        {
            return Err(PlanError::Unaligned {
                offset_bytes: member_offset_bytes,
                len_bytes,
            });
        }
        let end = member_offset_bytes.saturating_add(len_bytes);
        if end > self.member_used_bytes() {
            return Err(PlanError::BeyondCapacity {
                end_bytes: end,
                capacity_bytes: self.member_used_bytes(),
            });
        }
        if replacement >= self.members() {
            return Err(PlanError::UnknownMember {
                member: replacement,
                drive_count: self.members(),
            });
        }
        if !failed.contains(replacement) {
            return Err(PlanError::NotFailed {
                member: replacement,
            });
        }
        self.check_failed(failed)?;
        let su = self.stripe_unit_bytes();
        let mut at = member_offset_bytes;
        let mut candidates = [0u32; MEMBERS_MAX as usize];
        while at < end {
            let piece_end = end.min((at / su + 1) * su);
            let col = piece_end - at;
            let mut sp = StripePlan {
                span: 0,
                stripe: at / su,
                kind: StripeKind::Rebuild,
                column_offset_bytes: at % su,
                column_len_bytes: col,
                read: MemberSet::new(),
                written: MemberSet::from_members(&[replacement]),
                lost: MemberSet::new(),
                parity_bytes: 0,
                parity_source_bytes: 0,
            };
            let write = MemberExtent {
                member: replacement,
                offset_bytes: at,
                len_bytes: col,
            };
            match self.family() {
                Family::Striped => {
                    if self.parity_per_stripe() == 0 {
                        return Err(PlanError::NoRedundancy {
                            level: self.level(),
                        });
                    }
                    sp.span = replacement / self.span_width();
                    sp.lost = self.lost_in_span(sp.span, failed);
                    // md's resync reads every other member of the stripe.
                    for m in self.span_members(sp.span) {
                        if !sp.lost.contains(m) {
                            sp.read.insert(m);
                            out.reads.push(MemberExtent { member: m, ..write });
                        }
                    }
                    sp.parity_bytes = col;
                    sp.parity_source_bytes = col * u64::from(sp.read.len());
                    out.writes.push(write);
                }
                Family::Concat => {
                    return Err(PlanError::NoRedundancy {
                        level: self.level(),
                    })
                }
                Family::Mirror1 | Family::Mirror10(_) => {
                    let logical = match self.family() {
                        Family::Mirror10(g) => {
                            self.raid10_logical_at(g, replacement, at).map(|(l, _)| l)
                        }
                        _ => Some(at),
                    };
                    let Some(logical) = logical else {
                        at = piece_end;
                        continue;
                    };
                    let mut count = 0;
                    let mut source = None;
                    for loc in self.copies_of(logical) {
                        if failed.contains(loc.member) {
                            sp.lost.insert(loc.member);
                        } else {
                            candidates[count] = loc.member;
                            count += 1;
                        }
                    }
                    assert!(count > 0, "every copy of logical byte {logical} is lost");
                    let pick = chooser.choose(&candidates[..count]);
                    assert!(pick < count, "chooser picked {pick} of {count} candidates");
                    for loc in self.copies_of(logical) {
                        if loc.member == candidates[pick] {
                            source = Some(loc);
                        }
                    }
                    let source = source.expect("a candidate is a copy");
                    sp.read.insert(source.member);
                    sp.stripe = logical / su;
                    sp.column_offset_bytes = logical % su;
                    out.reads.push(MemberExtent {
                        member: source.member,
                        offset_bytes: source.offset_bytes,
                        len_bytes: col,
                    });
                    out.writes.push(write);
                }
            }
            out.push_stripe(sp);
            at = piece_end;
        }
        coalesce(&mut out.reads);
        coalesce(&mut out.writes);
        self.assert_plan(failed, Some(replacement), out);
        Ok(())
    }
}

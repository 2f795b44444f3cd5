//! A small in-memory engine that executes plans on real bytes, sector by sector, using
//! only what a plan read: the reference a real-data engine must agree with.

use super::generators::S;
use raidlab_layout::parity;
use raidlab_layout::{FailedSet, Geometry, Plan, Request, StripeId, StripeKind};

/// Members' bytes, plus which sectors the current plan made visible.
pub struct Mem {
    pub geo: Geometry,
    pub members: Vec<Vec<u8>>,
    visible: Vec<Vec<bool>>,
}

fn sector(buf: &[u8], off: u64) -> &[u8] {
    &buf[off as usize..(off + S) as usize]
}

impl Mem {
    /// An array holding `image` (capacity bytes), redundancy computed by reference
    /// code from the geometry alone, not by the planner.
    pub fn with_image(geo: Geometry, image: &[u8]) -> Self {
        assert_eq!(image.len() as u64, geo.capacity_bytes());
        let used = geo.member_used_bytes() as usize;
        let mut mem = Self {
            geo,
            members: vec![vec![0u8; used]; geo.members() as usize],
            visible: vec![vec![false; used / S as usize]; geo.members() as usize],
        };
        for l in (0..geo.capacity_bytes()).step_by(S as usize) {
            let src = sector(image, l);
            for loc in geo.copies_of(l) {
                let o = loc.offset_bytes as usize;
                mem.members[loc.member as usize][o..o + S as usize].copy_from_slice(src);
            }
        }
        if geo.parity_per_stripe() > 0 {
            for span in 0..geo.spans() {
                for stripe in 0..geo.stripes_per_span() {
                    for c in (0..geo.stripe_unit_bytes()).step_by(S as usize) {
                        let id = StripeId { span, stripe };
                        let data: Vec<Vec<u8>> = geo
                            .slot_order(id)
                            .iter()
                            .map(|&k| mem.raw(geo.data_member(id, k), id, c).to_vec())
                            .collect();
                        let (p, q) = parity_of_blocks(&data);
                        mem.put(geo.p_member(id).unwrap(), id, c, &p);
                        if let Some(qm) = geo.q_member(id) {
                            mem.put(qm, id, c, &q);
                        }
                    }
                }
            }
        }
        mem
    }

    fn raw(&self, member: u32, id: StripeId, c: u64) -> &[u8] {
        sector(
            &self.members[member as usize],
            self.geo.stripe_offset_bytes(id) + c,
        )
    }

    fn put(&mut self, member: u32, id: StripeId, c: u64, src: &[u8]) {
        let o = (self.geo.stripe_offset_bytes(id) + c) as usize;
        self.members[member as usize][o..o + S as usize].copy_from_slice(src);
    }

    /// Marks the plan's reads visible (and only those).
    fn expose(&mut self, plan: &Plan, failed: &FailedSet) {
        for v in &mut self.visible {
            v.fill(false);
        }
        for e in &plan.reads {
            assert!(
                !failed.contains(e.member),
                "plan reads failed member {}",
                e.member
            );
            for s in 0..e.len_bytes / S {
                self.visible[e.member as usize][(e.offset_bytes / S + s) as usize] = true;
            }
        }
    }

    /// A sector the plan read; panics if the plan did not read it.
    fn seen(&self, member: u32, offset_bytes: u64) -> &[u8] {
        assert!(
            self.visible[member as usize][(offset_bytes / S) as usize],
            "member {member} offset {offset_bytes} used but not read by the plan"
        );
        sector(&self.members[member as usize], offset_bytes)
    }

    /// The old blocks of stripe `id` at column `c` in syndrome order plus P, Q, with
    /// `lost` data indices and parity rebuilt from what the plan read.
    fn stripe_old(&self, id: StripeId, c: u64, failed: &FailedSet) -> (Vec<u32>, Vec<Vec<u8>>) {
        let geo = &self.geo;
        let order = geo.slot_order(id);
        let mut members: Vec<u32> = order.iter().map(|&k| geo.data_member(id, k)).collect();
        members.push(geo.p_member(id).unwrap());
        if let Some(q) = geo.q_member(id) {
            members.push(q);
        }
        let off = geo.stripe_offset_bytes(id) + c;
        let mut blocks: Vec<Vec<u8>> = members
            .iter()
            .map(|&m| {
                if failed.contains(m) {
                    vec![0xEE; S as usize]
                } else {
                    self.seen(m, off).to_vec()
                }
            })
            .collect();
        let missing: Vec<usize> = (0..members.len())
            .filter(|&i| failed.contains(members[i]))
            .collect();
        if !missing.is_empty() {
            let mut refs: Vec<&mut [u8]> = blocks.iter_mut().map(|b| b.as_mut_slice()).collect();
            parity::reconstruct(&mut refs, geo.parity_per_stripe() as usize, &missing).unwrap();
        }
        (members, blocks)
    }

    /// Executes a read plan; returns the bytes the host gets.
    pub fn read(&mut self, req: Request, failed: &FailedSet, plan: &Plan) -> Vec<u8> {
        self.expose(plan, failed);
        assert!(plan.writes.is_empty());
        let geo = self.geo;
        let mut out = Vec::with_capacity(req.len_bytes as usize);
        for l in (req.offset_bytes..req.offset_bytes + req.len_bytes).step_by(S as usize) {
            let loc = geo.locate(l);
            if !failed.contains(loc.member) {
                if geo.copies() > 1 {
                    // Any surviving copy the plan chose.
                    let c = geo
                        .copies_of(l)
                        .find(|c| {
                            !failed.contains(c.member)
                                && self.visible[c.member as usize][(c.offset_bytes / S) as usize]
                        })
                        .expect("the plan read a copy");
                    out.extend_from_slice(self.seen(c.member, c.offset_bytes));
                } else {
                    out.extend_from_slice(self.seen(loc.member, loc.offset_bytes));
                }
            } else if geo.copies() > 1 {
                let c = geo
                    .copies_of(l)
                    .find(|c| !failed.contains(c.member))
                    .expect("a surviving copy");
                let c = geo
                    .copies_of(l)
                    .find(|c| {
                        !failed.contains(c.member)
                            && self.visible[c.member as usize][(c.offset_bytes / S) as usize]
                    })
                    .unwrap_or(c);
                out.extend_from_slice(self.seen(c.member, c.offset_bytes));
            } else {
                let a = geo
                    .stripe_address(l)
                    .expect("only parity levels reconstruct");
                let (members, blocks) = self.stripe_old(a.id, a.column_bytes, failed);
                let i = members.iter().position(|&m| m == loc.member).unwrap();
                out.extend_from_slice(&blocks[i]);
            }
        }
        out
    }

    /// Executes a write plan of `data`; checks the written sectors are exactly the
    /// surviving copies and the surviving parity of the touched columns.
    pub fn write(&mut self, req: Request, data: &[u8], failed: &FailedSet, plan: &Plan) {
        self.expose(plan, failed);
        let geo = self.geo;
        let mut new = self.members.clone();
        let mut expected: std::collections::BTreeSet<(u32, u64)> = Default::default();
        let new_of = |l: u64| -> Option<&[u8]> {
            (l >= req.offset_bytes && l < req.offset_bytes + req.len_bytes)
                .then(|| sector(data, l - req.offset_bytes))
        };
        for l in (req.offset_bytes..req.offset_bytes + req.len_bytes).step_by(S as usize) {
            for c in geo.copies_of(l) {
                if !failed.contains(c.member) {
                    let o = c.offset_bytes as usize;
                    new[c.member as usize][o..o + S as usize].copy_from_slice(new_of(l).unwrap());
                    expected.insert((c.member, c.offset_bytes));
                }
            }
        }
        for sp in &plan.stripes {
            let kind = sp.kind;
            if matches!(
                kind,
                StripeKind::Write | StripeKind::Mirror | StripeKind::WriteWithoutParity
            ) {
                continue;
            }
            let id = StripeId {
                span: sp.span,
                stripe: sp.stripe,
            };
            let order = geo.slot_order(id);
            let parity_members: Vec<u32> = [geo.p_member(id), geo.q_member(id)]
                .into_iter()
                .flatten()
                .collect();
            for c in (sp.column_offset_bytes..sp.column_offset_bytes + sp.column_len_bytes)
                .step_by(S as usize)
            {
                let off = geo.stripe_offset_bytes(id) + c;
                let new_parity: Vec<Vec<u8>> = match kind {
                    StripeKind::Rmw => {
                        // Old data and old parity only, as RMW reads.
                        let mut p = self.seen(parity_members[0], off).to_vec();
                        let mut q = parity_members.get(1).map(|&m| self.seen(m, off).to_vec());
                        for (slot, &k) in order.iter().enumerate() {
                            let l = geo.logical_of(id, k, c);
                            if let Some(nd) = new_of(l) {
                                let od = self.seen(geo.data_member(id, k), off);
                                parity::update_p(&mut p, od, nd);
                                if let Some(q) = q.as_mut() {
                                    parity::update_q(q, slot as u32, od, nd);
                                }
                            }
                        }
                        std::iter::once(p).chain(q).collect()
                    }
                    StripeKind::Rcw | StripeKind::FullStripe | StripeKind::DegradedWrite => {
                        let old = if kind == StripeKind::DegradedWrite {
                            Some(self.stripe_old(id, c, failed).1)
                        } else {
                            None
                        };
                        let data: Vec<Vec<u8>> = order
                            .iter()
                            .enumerate()
                            .map(|(slot, &k)| match new_of(geo.logical_of(id, k, c)) {
                                Some(nd) => nd.to_vec(),
                                None => match &old {
                                    Some(o) => o[slot].clone(),
                                    None => self.seen(geo.data_member(id, k), off).to_vec(),
                                },
                            })
                            .collect();
                        let (p, q) = parity_of_blocks(&data);
                        [p, q].into_iter().take(parity_members.len()).collect()
                    }
                    other => panic!("unexpected kind {other:?} in a write"),
                };
                for (m, block) in parity_members.iter().zip(new_parity) {
                    if !failed.contains(*m) {
                        new[*m as usize][off as usize..(off + S) as usize].copy_from_slice(&block);
                        assert!(expected.insert((*m, off)), "parity sector written twice");
                    }
                }
            }
        }
        let mut planned = std::collections::BTreeSet::new();
        for e in &plan.writes {
            assert!(
                !failed.contains(e.member),
                "plan writes failed member {}",
                e.member
            );
            for s in 0..e.len_bytes / S {
                planned.insert((e.member, e.offset_bytes + s * S));
            }
        }
        assert_eq!(
            planned, expected,
            "writes cover exactly the copies and parity touched"
        );
        self.members = new;
    }

    /// Executes a rebuild plan of `replacement`.
    pub fn rebuild(&mut self, replacement: u32, failed: &FailedSet, plan: &Plan) {
        self.expose(plan, failed);
        let geo = self.geo;
        let mut written = std::collections::BTreeSet::new();
        for sp in &plan.stripes {
            assert_eq!(sp.kind, StripeKind::Rebuild);
            for i in 0..sp.column_len_bytes / S {
                if geo.copies() > 1 {
                    let l = sp.stripe * geo.stripe_unit_bytes() + sp.column_offset_bytes + i * S;
                    let src = geo
                        .copies_of(l)
                        .find(|c| sp.read.contains(c.member))
                        .expect("the plan read a copy");
                    let dst = geo
                        .copies_of(l)
                        .find(|c| c.member == replacement)
                        .expect("the replacement holds a copy");
                    let block = self.seen(src.member, src.offset_bytes).to_vec();
                    let o = dst.offset_bytes as usize;
                    self.members[replacement as usize][o..o + S as usize].copy_from_slice(&block);
                    written.insert((replacement, dst.offset_bytes));
                } else {
                    let id = StripeId {
                        span: sp.span,
                        stripe: sp.stripe,
                    };
                    let c = sp.column_offset_bytes + i * S;
                    let (members, blocks) = self.stripe_old(id, c, failed);
                    let j = members.iter().position(|&m| m == replacement).unwrap();
                    let block = blocks[j].clone();
                    self.put(replacement, id, c, &block);
                    written.insert((replacement, geo.stripe_offset_bytes(id) + c));
                }
            }
        }
        let mut planned = std::collections::BTreeSet::new();
        for e in &plan.writes {
            assert_eq!(e.member, replacement);
            for s in 0..e.len_bytes / S {
                planned.insert((e.member, e.offset_bytes + s * S));
            }
        }
        assert_eq!(planned, written);
    }

    /// Every surviving copy equal and every stripe's surviving parity equal to the
    /// parity of its data; the logical image if all data is readable directly.
    pub fn assert_consistent(&self) {
        let geo = &self.geo;
        for l in (0..geo.capacity_bytes()).step_by(S as usize) {
            let first = geo.locate(l);
            for c in geo.copies_of(l) {
                assert_eq!(
                    sector(&self.members[c.member as usize], c.offset_bytes),
                    sector(&self.members[first.member as usize], first.offset_bytes),
                    "copies of logical {l} differ"
                );
            }
        }
        if geo.parity_per_stripe() > 0 {
            for span in 0..geo.spans() {
                for stripe in 0..geo.stripes_per_span() {
                    let id = StripeId { span, stripe };
                    for c in (0..geo.stripe_unit_bytes()).step_by(S as usize) {
                        let data: Vec<Vec<u8>> = geo
                            .slot_order(id)
                            .iter()
                            .map(|&k| self.raw(geo.data_member(id, k), id, c).to_vec())
                            .collect();
                        let (p, q) = parity_of_blocks(&data);
                        assert_eq!(
                            self.raw(geo.p_member(id).unwrap(), id, c),
                            &p[..],
                            "P of {id:?} column {c}"
                        );
                        if let Some(qm) = geo.q_member(id) {
                            assert_eq!(self.raw(qm, id, c), &q[..], "Q of {id:?} column {c}");
                        }
                    }
                }
            }
        }
    }

    /// The logical image as the primary copies hold it (healthy array).
    pub fn image(&self) -> Vec<u8> {
        let geo = &self.geo;
        let mut out = Vec::new();
        for l in (0..geo.capacity_bytes()).step_by(S as usize) {
            let loc = geo.locate(l);
            out.extend_from_slice(sector(&self.members[loc.member as usize], loc.offset_bytes));
        }
        out
    }
}

/// P and Q of data blocks in syndrome order.
pub fn parity_of_blocks(data: &[Vec<u8>]) -> (Vec<u8>, Vec<u8>) {
    let refs: Vec<&[u8]> = data.iter().map(|d| d.as_slice()).collect();
    let mut p = vec![0u8; S as usize];
    let mut q = vec![0u8; S as usize];
    parity::compute_pq(&refs, &mut p, &mut q);
    (p, q)
}

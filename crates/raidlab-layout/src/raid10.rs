//! md RAID 10 geometry (drivers/md/raid10.c, far_set_size = raid_disks, the default
//! "layout version 0"): `near_copies` copies on adjacent devices, `far_copies` copies
//! in later regions ("far") or later rows ("offset") of the devices, each far copy
//! shifted by `near_copies` devices.

/// The numbers md's `struct geom` holds, in chunks rather than sectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Raid10Geom {
    pub disks: u32,
    pub near_copies: u32,
    pub far_copies: u32,
    pub far_offset: bool,
    /// Rows between far copies (md's `stride` in chunks): 1 for offset layouts.
    pub stride_rows: u64,
    /// Chunks of array capacity (md's `raid10_size`).
    pub array_chunks: u64,
    /// Chunk rows used on every device (md's `dev_sectors` in chunks).
    pub dev_rows: u64,
}

impl Raid10Geom {
    /// md's `calc_sectors` and `raid10_size` for devices of `chunks_per_member` chunks.
    pub fn new(
        disks: u32,
        near_copies: u32,
        far_copies: u32,
        far_offset: bool,
        chunks_per_member: u64,
    ) -> Self {
        let n = u64::from(disks);
        let (nc, fc) = (u64::from(near_copies), u64::from(far_copies));
        // size = chunks / far_copies * raid_disks / near_copies: the array's chunks.
        let array_chunks = chunks_per_member / fc * n / nc;
        // "used chunks per device", rounded up.
        let dev_rows = (array_chunks * nc * fc).div_ceil(n);
        let stride_rows = if far_offset { 1 } else { dev_rows / fc };
        Self {
            disks,
            near_copies,
            far_copies,
            far_offset,
            stride_rows,
            array_chunks,
            dev_rows,
        }
    }

    /// Number of copies of each chunk.
    pub fn copies(&self) -> u32 {
        self.near_copies * self.far_copies
    }

    /// Copy `i` (md's slot order: each near copy followed by its far copies) of `chunk`:
    /// (device, row). Copy 0 is the one md reads by default.
    pub fn copy(&self, chunk: u64, i: u32) -> (u32, u64) {
        debug_assert!(chunk < self.array_chunks && i < self.copies());
        let n = u64::from(self.disks);
        let nc = u64::from(self.near_copies);
        let (j, f) = (
            u64::from(i / self.far_copies),
            u64::from(i % self.far_copies),
        );
        // __raid10_find_phys: chunk *= near_copies; dev = chunk % disks; stripe = chunk / disks.
        let first = chunk * nc;
        let mut row = first / n;
        if self.far_offset {
            row *= u64::from(self.far_copies);
        }
        // Near copies walk to the next device, wrapping into the next row.
        let x = first + j;
        row += x / n - first / n;
        // Far copies shift by near_copies devices (mod disks) and by one stride.
        let dev = ((x % n + nc * f) % n) as u32;
        row += f * self.stride_rows;
        debug_assert!(row < self.dev_rows);
        (dev, row)
    }

    /// The chunk and copy index stored at (device, row), or `None` for an unused row.
    pub fn chunk_at(&self, dev: u32, row: u64) -> Option<(u64, u32)> {
        let n = u64::from(self.disks);
        let nc = u64::from(self.near_copies);
        let fc = u64::from(self.far_copies);
        let d = u64::from(dev);
        // Only pure near (fc = 1) or pure far/offset (nc = 1) geometries are built.
        let (chunk, copy) = if fc == 1 {
            let x = row * n + d;
            (x / nc, (x % nc) as u32)
        } else {
            debug_assert_eq!(nc, 1);
            let (f, base_row) = if self.far_offset {
                (row % fc, row / fc)
            } else {
                (row / self.stride_rows, row % self.stride_rows)
            };
            if f >= fc {
                return None;
            }
            let dev0 = (d + n - f % n) % n;
            (base_row * n + dev0, f as u32)
        };
        if chunk >= self.array_chunks {
            return None;
        }
        debug_assert_eq!(self.copy(chunk, copy), (dev, row));
        Some((chunk, copy))
    }

    /// Whether losing `failed` loses data: every chunk's copies sit on `copies`
    /// cyclically consecutive devices starting at `chunk * near_copies % disks`, whose
    /// values are the multiples of gcd(near_copies, disks).
    pub fn survives(&self, failed: &crate::MemberSet) -> bool {
        let step = gcd(self.near_copies, self.disks);
        let copies = self.copies();
        (0..self.disks)
            .step_by(step as usize)
            .all(|start| (0..copies).any(|t| !failed.contains((start + t) % self.disks)))
    }
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

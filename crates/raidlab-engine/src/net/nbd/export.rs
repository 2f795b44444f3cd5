//! What the NBD server exports: a byte range it reads, writes, flushes and asks the
//! allocation of. [`Array`] implements it here, the cache tier in [`crate::cache`].

use crate::Array;
use std::io;

/// What an NBD export needs. [`Array`] implements it.
pub trait Export: Send + Sync {
    /// Bytes of the export.
    fn size_bytes(&self) -> u64;
    /// Reads `buf.len()` bytes at `offset_bytes` (aligned, in bounds: checked before).
    fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<()>;
    /// Writes; `fua`: durable on return.
    fn write_at(&self, offset_bytes: u64, data: &[u8], fua: bool) -> io::Result<()>;
    /// Makes every completed write durable.
    fn flush(&self) -> io::Result<()>;
    /// Allocation of `len_bytes` at `offset_bytes` (in bounds: checked before): runs of
    /// `(bytes, hole)` from the range's start, at most `max_runs`, covering the range
    /// or a prefix of it. `hole`: unallocated, reads as zeros. Without a way to tell,
    /// everything is data.
    fn allocation(
        &self,
        offset_bytes: u64,
        len_bytes: u64,
        max_runs: usize,
    ) -> io::Result<Vec<(u64, bool)>> {
        let _ = (offset_bytes, max_runs);
        Ok(vec![(len_bytes, false)])
    }
}

fn to_io(e: crate::Error) -> io::Error {
    if e.is_no_space() {
        // Kept as the OS error, so that the reply is ENOSPC (see `write_errno`).
        return io::Error::from_raw_os_error(libc::ENOSPC);
    }
    io::Error::other(e.to_string())
}

impl Export for Array {
    fn size_bytes(&self) -> u64 {
        self.capacity_bytes()
    }
    fn read_at(&self, offset_bytes: u64, buf: &mut [u8]) -> io::Result<()> {
        self.read(offset_bytes, buf).map_err(to_io)
    }
    fn write_at(&self, offset_bytes: u64, data: &[u8], fua: bool) -> io::Result<()> {
        self.write(offset_bytes, data, fua).map_err(to_io)
    }
    fn flush(&self) -> io::Result<()> {
        Array::flush(self).map_err(to_io)
    }
    fn allocation(&self, offset: u64, len: u64, max_runs: usize) -> io::Result<Vec<(u64, bool)>> {
        Array::allocation(self, offset, len, max_runs).map_err(to_io)
    }
}

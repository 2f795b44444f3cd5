//! A host request as the cache sees it: stream, direction and extent.

/// Read or write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Host read.
    Read,
    /// Host write.
    Write,
}

/// One host request as the cache sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Who issued it (a job, a worker, a client): the sequential detector tracks runs
    /// per stream.
    pub stream: u32,
    /// Read or write.
    pub op: Op,
    /// Byte offset on the cached (array) volume.
    pub offset_bytes: u64,
    /// Length in bytes (> 0).
    pub len_bytes: u64,
}

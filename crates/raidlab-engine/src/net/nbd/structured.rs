//! Structured replies and block status for the NBD server ([`super::server`]).
//!
//! ```text
//! handshake: NBD_OPT_STRUCTURED_REPLY ─► ACK
//!            NBD_OPT_LIST/SET_META_CONTEXT ["base:allocation"] ─► META_CONTEXT(id 1, name)… ACK
//! READ          ─► chunk OFFSET_DATA(offset, bytes) flags DONE   | chunk ERROR(errno, message)
//! BLOCK_STATUS  ─► chunk BLOCK_STATUS(id 1, [length, HOLE|ZERO or 0]…) flags DONE
//! ```
//!
//! Once structured replies are negotiated, READ and BLOCK_STATUS are answered with one
//! structured chunk each (the data in one piece, errors as `NBD_REPLY_TYPE_ERROR`); the
//! other commands keep simple replies, as the protocol allows. `base:allocation` reports
//! the holes of sparse members as [`Export::allocation`] finds them: `NBD_STATE_HOLE |
//! NBD_STATE_ZERO` for a hole, 0 for data.

use super::export::Export;
use super::protocol::{opt_reply, REP_ACK, REP_ERR_INVALID};
use std::io::{self, Write};

/// Option `NBD_OPT_STARTTLS`: the rest of the connection runs over TLS.
pub const OPT_STARTTLS: u32 = 5;
/// Option `NBD_OPT_STRUCTURED_REPLY`: replies to READ and BLOCK_STATUS come in chunks.
pub const OPT_STRUCTURED_REPLY: u32 = 8;
/// Option `NBD_OPT_LIST_META_CONTEXT`: which metadata contexts match the queries.
pub const OPT_LIST_META_CONTEXT: u32 = 9;
/// Option `NBD_OPT_SET_META_CONTEXT`: select the contexts BLOCK_STATUS reports.
pub const OPT_SET_META_CONTEXT: u32 = 10;

/// Option reply `NBD_REP_META_CONTEXT`: one context, its id and name.
pub const REP_META_CONTEXT: u32 = 4;
/// Option reply `NBD_REP_ERR_TLS_REQD`: this option needs TLS first.
pub const REP_ERR_TLS_REQD: u32 = 0x8000_0005;

/// Magic that opens every structured reply chunk.
pub const STRUCTURED_REPLY_MAGIC: u32 = 0x668e_33ef;
/// Chunk flag `NBD_REPLY_FLAG_DONE`: the last chunk of its request.
pub const REPLY_FLAG_DONE: u16 = 1;
/// Chunk type `NBD_REPLY_TYPE_OFFSET_DATA`: offset, then the bytes read there.
pub const REPLY_TYPE_OFFSET_DATA: u16 = 1;
/// Chunk type `NBD_REPLY_TYPE_BLOCK_STATUS`: context id, then (length, flags) pairs.
pub const REPLY_TYPE_BLOCK_STATUS: u16 = 5;
/// Chunk type `NBD_REPLY_TYPE_ERROR`: errno, message length, message.
pub const REPLY_TYPE_ERROR: u16 = (1 << 15) | 1;

/// Command `NBD_CMD_BLOCK_STATUS`: the allocation of a range, in the selected context.
pub const CMD_BLOCK_STATUS: u16 = 7;
/// Command flag `NBD_CMD_FLAG_REQ_ONE`: BLOCK_STATUS answers one extent only.
pub const CMD_FLAG_REQ_ONE: u16 = 1 << 3;

/// `base:allocation` flag `NBD_STATE_HOLE`: the range is not allocated.
pub const STATE_HOLE: u32 = 1;
/// `base:allocation` flag `NBD_STATE_ZERO`: the range reads as zeros.
pub const STATE_ZERO: u32 = 2;
/// The one metadata context this server offers.
pub const BASE_ALLOCATION: &str = "base:allocation";
/// Its context id in `NBD_REP_META_CONTEXT` and BLOCK_STATUS chunks.
pub const BASE_ALLOCATION_ID: u32 = 1;
/// Most extents in one BLOCK_STATUS chunk (8 B each); the chunk then covers a prefix
/// of the range, which the protocol allows. The server lowers it so that the chunk
/// fits its max payload.
pub const EXTENTS_MAX: usize = 4096;
/// Bytes of one extent in a BLOCK_STATUS chunk.
pub const EXTENT_BYTES: usize = 8;
/// Bytes of a BLOCK_STATUS chunk before its extents: the chunk head and context id.
pub const BLOCK_STATUS_HEAD_BYTES: usize = 24;

/// Bytes of a BLOCK_STATUS chunk of at most `extents` extents.
pub fn block_status_bytes(extents: usize) -> usize {
    BLOCK_STATUS_HEAD_BYTES + EXTENT_BYTES * extents
}
/// Most bytes one BLOCK_STATUS looks at (a few `lseek`s per chunk of every copy); a
/// longer request is answered for its first this many bytes, as the protocol allows,
/// so one request costs a bounded walk (a few milliseconds).
pub const BLOCK_STATUS_SCAN_MAX: u32 = 128 << 20;
/// Bytes looked at between two checks that the client still waits for the answer.
const BLOCK_STATUS_SLICE_BYTES: u64 = 8 << 20;

/// What the handshake negotiated about replies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Negotiated {
    /// `NBD_OPT_STRUCTURED_REPLY` was acknowledged.
    pub structured: bool,
    /// `base:allocation` is selected (`NBD_OPT_SET_META_CONTEXT`).
    pub base_allocation: bool,
}

/// Answers `NBD_OPT_STRUCTURED_REPLY` (no payload allowed).
pub fn structured_reply_option(
    w: &mut impl Write,
    opt: u32,
    data: &[u8],
    neg: &mut Negotiated,
) -> io::Result<()> {
    if !data.is_empty() {
        return opt_reply(
            w,
            opt,
            REP_ERR_INVALID,
            b"NBD_OPT_STRUCTURED_REPLY takes no data",
        );
    }
    neg.structured = true;
    opt_reply(w, opt, REP_ACK, &[])
}

/// The queries of a META_CONTEXT option: `u32 name length, name, u32 count, count x
/// (u32 length, query)`, exactly filling the option. `None` when malformed.
fn meta_queries(data: &[u8]) -> Option<Vec<&[u8]>> {
    let mut at = 0usize;
    let mut take = |n: usize| -> Option<&[u8]> {
        let s = data.get(at..at.checked_add(n)?)?;
        at += n;
        Some(s)
    };
    let u32_of = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
    let name_len = u32_of(take(4)?);
    take(name_len)?;
    let count = u32_of(take(4)?);
    let mut queries = Vec::new();
    for _ in 0..count {
        let len = u32_of(take(4)?);
        queries.push(take(len)?);
    }
    (at == data.len()).then_some(queries)
}

/// The export name of a META_CONTEXT option (`u32 name length, name, ...`); `None`
/// when the option is malformed (then [`meta_context_option`] answers it).
pub fn meta_export_name(data: &[u8]) -> Option<&[u8]> {
    meta_queries(data)?;
    let name_len = u32::from_be_bytes(data.get(..4)?.try_into().ok()?) as usize;
    data.get(4..4 + name_len)
}

/// Answers `NBD_OPT_LIST_META_CONTEXT` and `NBD_OPT_SET_META_CONTEXT`: both need
/// structured replies first. A query matches `base:allocation` when it names it or its
/// namespace (`base:`, listing only); LIST with no query lists every context, SET with
/// none selects none.
pub fn meta_context_option(
    w: &mut impl Write,
    opt: u32,
    data: &[u8],
    neg: &mut Negotiated,
) -> io::Result<()> {
    if !neg.structured {
        return opt_reply(
            w,
            opt,
            REP_ERR_INVALID,
            b"metadata contexts need NBD_OPT_STRUCTURED_REPLY first",
        );
    }
    let Some(queries) = meta_queries(data) else {
        return opt_reply(w, opt, REP_ERR_INVALID, b"malformed META_CONTEXT option");
    };
    let list = opt == OPT_LIST_META_CONTEXT;
    let matches = if list && queries.is_empty() {
        true
    } else {
        queries
            .iter()
            .any(|q| *q == BASE_ALLOCATION.as_bytes() || (list && *q == b"base:"))
    };
    if !list {
        neg.base_allocation = matches;
    }
    if matches {
        let mut b = BASE_ALLOCATION_ID.to_be_bytes().to_vec();
        b.extend_from_slice(BASE_ALLOCATION.as_bytes());
        opt_reply(w, opt, REP_META_CONTEXT, &b)?;
    }
    opt_reply(w, opt, REP_ACK, &[])
}

fn chunk_head(flags: u16, kind: u16, cookie: u64, len: usize) -> [u8; 20] {
    let mut h = [0u8; 20];
    h[0..4].copy_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
    h[4..6].copy_from_slice(&flags.to_be_bytes());
    h[6..8].copy_from_slice(&kind.to_be_bytes());
    h[8..16].copy_from_slice(&cookie.to_be_bytes());
    h[16..20].copy_from_slice(&(len as u32).to_be_bytes());
    h
}

/// A READ's reply: one `OFFSET_DATA` chunk with every byte, the last chunk.
pub fn write_offset_data(
    w: &mut impl Write,
    cookie: u64,
    offset: u64,
    data: &[u8],
) -> io::Result<()> {
    let mut head = [0u8; 28];
    head[..20].copy_from_slice(&chunk_head(
        REPLY_FLAG_DONE,
        REPLY_TYPE_OFFSET_DATA,
        cookie,
        8 + data.len(),
    ));
    head[20..].copy_from_slice(&offset.to_be_bytes());
    w.write_all(&head)?;
    w.write_all(data)?;
    w.flush()
}

/// An error reply chunk (`NBD_REPLY_TYPE_ERROR`), the last chunk.
pub fn write_error(w: &mut impl Write, cookie: u64, error: u32, message: &str) -> io::Result<()> {
    let message = &message.as_bytes()[..message.len().min(4096)];
    let mut b = chunk_head(REPLY_FLAG_DONE, REPLY_TYPE_ERROR, cookie, 6 + message.len()).to_vec();
    b.extend_from_slice(&error.to_be_bytes());
    b.extend_from_slice(&(message.len() as u16).to_be_bytes());
    b.extend_from_slice(message);
    w.write_all(&b)?;
    w.flush()
}

/// What an errno means, for the message of an error chunk.
pub fn error_message(error: u32) -> &'static str {
    match error {
        5 => "I/O error on the array",
        22 => "invalid request",
        28 => "past the end of the export",
        _ => "request failed",
    }
}

/// The `base:allocation` extents of `len` bytes at `offset`: `(length, flags)` pairs
/// covering the range from its start (a prefix of it when there are more than
/// `max` (1 for `NBD_CMD_FLAG_REQ_ONE`) or it is longer than [`BLOCK_STATUS_SCAN_MAX`]).
/// Looked at in slices; an `Interrupted` error once `give_up` says no one waits.
pub fn extents(
    export: &dyn Export,
    offset: u64,
    len: u32,
    max: usize,
    give_up: &dyn Fn() -> bool,
) -> io::Result<Vec<(u32, u32)>> {
    let max = max.clamp(1, EXTENTS_MAX);
    let len = u64::from(len.min(BLOCK_STATUS_SCAN_MAX));
    let mut out: Vec<(u32, u32)> = Vec::new();
    let mut covered = 0u64;
    // In slices: a client that leaves stops the walk within one.
    'walk: while covered < len {
        if give_up() {
            return Err(io::Error::new(
                io::ErrorKind::Interrupted,
                "block status given up: the client left",
            ));
        }
        let slice = (len - covered).min(BLOCK_STATUS_SLICE_BYTES);
        let runs = export.allocation(offset + covered, slice, max)?;
        let mut seen = 0u64;
        for (n, hole) in runs {
            // Never past the slice, never an empty extent.
            let n = n.min(slice - seen);
            if n == 0 {
                break;
            }
            let flags = if hole { STATE_HOLE | STATE_ZERO } else { 0 };
            let full = out.len() == max;
            match out.last_mut() {
                Some((l, f)) if *f == flags => *l += n as u32,
                _ if full => break 'walk,
                _ => out.push((n as u32, flags)),
            }
            seen += n;
            covered += n;
        }
        if seen < slice {
            // The export answered a prefix (its run limit): what follows is unknown.
            break;
        }
    }
    if out.is_empty() {
        out.push((len as u32, 0));
    }
    Ok(out)
}

/// A BLOCK_STATUS reply (one chunk for `base:allocation`, the last chunk) encoded
/// into `buf`, at least [`block_status_bytes`]`(extents.len())` long; returns its bytes.
pub fn encode_block_status(buf: &mut [u8], cookie: u64, extents: &[(u32, u32)]) -> usize {
    let n = block_status_bytes(extents.len());
    let head = chunk_head(REPLY_FLAG_DONE, REPLY_TYPE_BLOCK_STATUS, cookie, n - 20);
    buf[..20].copy_from_slice(&head);
    buf[20..24].copy_from_slice(&BASE_ALLOCATION_ID.to_be_bytes());
    for (i, (len, flags)) in extents.iter().enumerate() {
        let at = BLOCK_STATUS_HEAD_BYTES + EXTENT_BYTES * i;
        buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
        buf[at + 4..at + 8].copy_from_slice(&flags.to_be_bytes());
    }
    n
}

/// A BLOCK_STATUS reply written to `w` (see [`encode_block_status`]).
pub fn write_block_status(
    w: &mut impl Write,
    cookie: u64,
    extents: &[(u32, u32)],
) -> io::Result<()> {
    let mut b = vec![0u8; block_status_bytes(extents.len())];
    encode_block_status(&mut b, cookie, extents);
    w.write_all(&b)?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(name: &[u8], qs: &[&[u8]]) -> Vec<u8> {
        let mut b = (name.len() as u32).to_be_bytes().to_vec();
        b.extend_from_slice(name);
        b.extend_from_slice(&(qs.len() as u32).to_be_bytes());
        for q in qs {
            b.extend_from_slice(&(q.len() as u32).to_be_bytes());
            b.extend_from_slice(q);
        }
        b
    }

    #[test]
    fn meta_queries_parse_exactly() {
        let b = query(b"raidlab", &[b"base:allocation", b"qemu:dirty-bitmap:x"]);
        assert_eq!(
            meta_queries(&b).unwrap(),
            vec![&b"base:allocation"[..], &b"qemu:dirty-bitmap:x"[..]]
        );
        assert!(meta_queries(&b[..b.len() - 1]).is_none());
        let mut long = b.clone();
        long.push(0);
        assert!(meta_queries(&long).is_none());
        assert!(meta_queries(&[0, 0, 0, 9]).is_none());
        assert!(meta_queries(&[0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]).is_none());
    }

    fn replies(mut b: &[u8]) -> Vec<(u32, Vec<u8>)> {
        let mut out = Vec::new();
        while !b.is_empty() {
            let kind = u32::from_be_bytes(b[12..16].try_into().unwrap());
            let len = u32::from_be_bytes(b[16..20].try_into().unwrap()) as usize;
            out.push((kind, b[20..20 + len].to_vec()));
            b = &b[20 + len..];
        }
        out
    }

    #[test]
    fn set_needs_structured_and_selects_base_allocation() {
        let mut neg = Negotiated::default();
        let mut w = Vec::new();
        let q = query(b"", &[b"base:allocation"]);
        meta_context_option(&mut w, OPT_SET_META_CONTEXT, &q, &mut neg).unwrap();
        assert_eq!(replies(&w)[0].0, REP_ERR_INVALID);
        assert!(!neg.base_allocation);
        w.clear();
        structured_reply_option(&mut w, OPT_STRUCTURED_REPLY, &[], &mut neg).unwrap();
        w.clear();
        meta_context_option(&mut w, OPT_SET_META_CONTEXT, &q, &mut neg).unwrap();
        let r = replies(&w);
        assert_eq!(r[0].0, REP_META_CONTEXT);
        assert_eq!(&r[0].1[..4], &BASE_ALLOCATION_ID.to_be_bytes());
        assert_eq!(&r[0].1[4..], BASE_ALLOCATION.as_bytes());
        assert_eq!(r[1].0, REP_ACK);
        assert!(neg.base_allocation);
        // LIST does not change the selection; "base:" lists the namespace.
        w.clear();
        let q = query(b"", &[b"base:"]);
        meta_context_option(&mut w, OPT_LIST_META_CONTEXT, &q, &mut neg).unwrap();
        assert_eq!(replies(&w)[0].0, REP_META_CONTEXT);
        // SET with an unknown context deselects.
        w.clear();
        let q = query(b"", &[b"qemu:dirty-bitmap:x"]);
        meta_context_option(&mut w, OPT_SET_META_CONTEXT, &q, &mut neg).unwrap();
        assert_eq!(replies(&w).len(), 1);
        assert!(!neg.base_allocation);
    }
}

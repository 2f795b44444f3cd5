//! The NBD protocol's vocabulary (magics, options, replies, commands, flags, error
//! numbers), as the protocol document (`doc/proto.md` of the NBD project) names them,
//! and the option reply every handshake step sends. The server's own limits and
//! defaults live in [`super::server`]; the structured-reply extension's in
//! [`super::structured`].

use std::io::{self, Write};

/// `NBDMAGIC`: the first 8 bytes the server sends, opening the newstyle handshake.
pub const NBD_MAGIC: u64 = 0x4e42_444d_4147_4943;
/// `IHAVEOPT`: opens the option haggling and prefixes every option.
pub const IHAVEOPT: u64 = 0x4948_4156_454F_5054;
/// Magic that opens every option reply (server to client, during the handshake).
pub const OPT_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
/// Magic that opens every transmission request (`NBD_REQUEST_MAGIC`).
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
/// Magic that opens every simple reply to a request (`NBD_SIMPLE_REPLY_MAGIC`).
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;

/// Handshake flag `NBD_FLAG_FIXED_NEWSTYLE`: unknown options get an error reply
/// instead of ending the connection.
pub const FLAG_FIXED_NEWSTYLE: u16 = 1;
/// Handshake flag: no 124 zero bytes after NBD_OPT_EXPORT_NAME.
pub const FLAG_NO_ZEROES: u16 = 2;

/// Option `NBD_OPT_EXPORT_NAME`: names the export and enters transmission at once
/// (no reply on success, as the protocol's oldest way to end the handshake).
pub const OPT_EXPORT_NAME: u32 = 1;
/// Option `NBD_OPT_ABORT`: ends the handshake without transmission.
pub const OPT_ABORT: u32 = 2;
/// Option `NBD_OPT_LIST`: lists the exports (this server has one, [`EXPORT_NAME`]).
pub const OPT_LIST: u32 = 3;
/// Option `NBD_OPT_INFO`: export size, flags and block sizes, without transmission.
pub const OPT_INFO: u32 = 6;
/// Option `NBD_OPT_GO`: what `NBD_OPT_INFO` answers, then transmission.
pub const OPT_GO: u32 = 7;

/// Option reply `NBD_REP_ACK`: the option succeeded; its last reply.
pub const REP_ACK: u32 = 1;
/// Option reply `NBD_REP_SERVER`: one export name (to `NBD_OPT_LIST`).
pub const REP_SERVER: u32 = 2;
/// Option reply `NBD_REP_INFO`: one information item (to `NBD_OPT_INFO` and `GO`).
pub const REP_INFO: u32 = 3;
/// Option reply `NBD_REP_ERR_UNSUP`: the option is not supported.
pub const REP_ERR_UNSUP: u32 = 0x8000_0001;
/// Option reply `NBD_REP_ERR_POLICY`: refused by the server's policy (here: every
/// transmission slot is taken).
pub const REP_ERR_POLICY: u32 = 0x8000_0002;
/// Option reply `NBD_REP_ERR_INVALID`: the option's payload is malformed.
pub const REP_ERR_INVALID: u32 = 0x8000_0003;
/// Option reply `NBD_REP_ERR_UNKNOWN`: no export of that name.
pub const REP_ERR_UNKNOWN: u32 = 0x8000_0006;

/// Information item `NBD_INFO_EXPORT`: export size in bytes and transmission flags.
pub const INFO_EXPORT: u16 = 0;
/// Information item `NBD_INFO_BLOCK_SIZE`: minimum, preferred and maximum block bytes.
pub const INFO_BLOCK_SIZE: u16 = 3;

/// Transmission flag `NBD_FLAG_HAS_FLAGS`: always set; the other flags are meaningful.
pub const TF_HAS_FLAGS: u16 = 1;
/// Transmission flag: `NBD_CMD_FLUSH` is supported.
pub const TF_SEND_FLUSH: u16 = 1 << 2;
/// Transmission flag: the FUA flag on writes is supported.
pub const TF_SEND_FUA: u16 = 1 << 3;
/// Transmission flag: `NBD_CMD_TRIM` is supported.
pub const TF_SEND_TRIM: u16 = 1 << 5;
/// Transmission flag: `NBD_CMD_WRITE_ZEROES` is supported.
pub const TF_SEND_WRITE_ZEROES: u16 = 1 << 6;
/// Transmission flag `NBD_FLAG_CAN_MULTI_CONN`: several connections see each other's
/// writes and one FLUSH covers them all (they share the member files).
pub const TF_CAN_MULTI_CONN: u16 = 1 << 8;

/// Command `NBD_CMD_READ`: the reply carries the bytes read.
pub const CMD_READ: u16 = 0;
/// Command `NBD_CMD_WRITE`: the payload follows the request header.
pub const CMD_WRITE: u16 = 1;
/// Command `NBD_CMD_DISC`: the client disconnects; no reply.
pub const CMD_DISC: u16 = 2;
/// Command `NBD_CMD_FLUSH`: every completed write made durable ([`Export::flush`]).
pub const CMD_FLUSH: u16 = 3;
/// Command `NBD_CMD_TRIM`: a hint that the range may be discarded; this server keeps
/// the bytes (trim is advisory) and only checks the range.
pub const CMD_TRIM: u16 = 4;
/// Command `NBD_CMD_WRITE_ZEROES`: the range reads back as zeros.
pub const CMD_WRITE_ZEROES: u16 = 6;
/// Command flag `NBD_CMD_FLAG_FUA`: the write is durable before its reply (accepted on
/// every command, as the protocol asks once SEND_FUA is advertised).
pub const CMD_FLAG_FUA: u16 = 1;
/// Command flag `NBD_CMD_FLAG_NO_HOLE`: WRITE_ZEROES must allocate (it always does here).
pub const CMD_FLAG_NO_HOLE: u16 = 1 << 1;

/// Error reply `EIO`: the export's read, write or flush failed (for the array, more
/// member failures than its level tolerates).
pub const EIO: u32 = 5;
/// Error reply `EINVAL`: an empty, misaligned (not whole 512 B sectors) or oversized
/// request.
pub const EINVAL: u32 = 22;
/// Error reply `ENOSPC`: a write past the end of the export.
pub const ENOSPC: u32 = 28;

/// Sends one option reply (`NBD_REP_*`) with its data.
pub(crate) fn opt_reply(w: &mut impl Write, opt: u32, reply: u32, data: &[u8]) -> io::Result<()> {
    let mut b = Vec::with_capacity(20 + data.len());
    b.extend_from_slice(&OPT_REPLY_MAGIC.to_be_bytes());
    b.extend_from_slice(&opt.to_be_bytes());
    b.extend_from_slice(&reply.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    w.write_all(&b)
}

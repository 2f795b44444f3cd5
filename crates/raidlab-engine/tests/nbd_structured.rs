//! Structured replies and `NBD_CMD_BLOCK_STATUS` (`base:allocation`): a raw client
//! checks the bytes on the wire; nbdinfo --map, qemu-img map and nbdcopy (each skipped,
//! saying why, when missing) check that real clients see the holes of sparse members
//! and skip them.

use crate::common::{engine, engine_output, output_text, run, serve, tool, Server};
use crate::nbd_wire::*;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

const MIB: u64 = 1 << 20;
const HOLE: u32 = 3; // NBD_STATE_HOLE | NBD_STATE_ZERO

/// `create` with sparse members (`--sparse` where `create` preallocates by default).
fn create_sparse(d: &Path, args: &[&str]) {
    let help = engine_output(d, &["create", "--help"]);
    let mut all = vec!["create"];
    if String::from_utf8_lossy(&help.stdout).contains("--sparse") {
        all.push("--sparse");
    }
    all.extend_from_slice(args);
    engine(d, &all);
}

/// Serves a new sparse array of `level` on `members` (16 MiB each, 64 KiB chunks).
fn sparse_array(d: &Path, level: &str, members: &[&str]) -> Server {
    let mut args = vec!["--level", level, "--chunk", "64K", "--size", "16M"];
    args.extend_from_slice(members);
    create_sparse(d, &args);
    serve(d, members)
}

fn structured_client(port: u16) -> Client<std::net::TcpStream> {
    let mut c = Client::greet(connect(port));
    c.structured_with_base_allocation();
    c.go();
    c
}

#[test]
fn block_status_reports_holes_where_nothing_was_written_on_every_level() {
    for (level, members) in [
        ("0", &["a", "b"][..]),
        ("1", &["a", "b"][..]),
        ("5", &["a", "b", "c"][..]),
        ("6", &["a", "b", "c", "d"][..]),
        ("10", &["a", "b", "c", "d"][..]),
        ("concat", &["a", "b"][..]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let s = sparse_array(dir.path(), level, members);
        let mut c = structured_client(s.1);
        let eight = 8 * MIB as u32;
        assert_eq!(
            c.block_status(0, eight, 0),
            vec![(eight, HOLE)],
            "RAID {level}: a new sparse array is one hole"
        );
        let data = pattern(64 << 10, 1);
        c.write(MIB, &data);
        c.write(3 * MIB + 4096, &data[..4096]);
        assert_eq!(
            c.block_status(0, eight, 0),
            vec![
                (MIB as u32, HOLE),
                (64 << 10, 0),
                (2 * MIB as u32 - (64 << 10) + 4096, HOLE),
                (4096, 0),
                (5 * MIB as u32 - 8192, HOLE),
            ],
            "RAID {level}: data exactly where written"
        );
        // REQ_ONE: the first extent only; a range inside data is data.
        assert_eq!(
            c.block_status(0, eight, CMD_FLAG_REQ_ONE),
            vec![(MIB as u32, HOLE)]
        );
        assert_eq!(c.block_status(MIB + 4096, 8192, 0), vec![(8192, 0)]);
        // Structured reads: the data written, and zeros from a hole.
        assert_eq!(c.read(MIB, 64 << 10), data, "RAID {level}");
        assert_eq!(c.read(5 * MIB, 4096), vec![0u8; 4096]);
        c.disconnect();
        s.stop();
    }
}

#[test]
fn structured_errors_and_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let s = sparse_array(dir.path(), "1", &["a", "b"]);
    let size = 15 * MIB; // 16 MiB members less the 1 MiB superblock area

    // Metadata contexts need structured replies first.
    let mut c = Client::greet(connect(s.1));
    let r = c.option(OPT_SET_META_CONTEXT, &meta_query(&["base:allocation"]));
    assert_eq!(r.last().unwrap().0, REP_ERR_INVALID, "{r:?}");
    let r = c.option(OPT_STRUCTURED_REPLY, &[1]);
    assert_eq!(r.last().unwrap().0, REP_ERR_INVALID, "payload refused");
    let r = c.option(OPT_STRUCTURED_REPLY, &[]);
    assert_eq!(r, vec![(REP_ACK, vec![])]);
    // Listing with no query lists base:allocation; an unknown context is not listed.
    let r = c.option(OPT_LIST_META_CONTEXT, &meta_query(&[]));
    assert_eq!(r[0].0, REP_META_CONTEXT);
    assert_eq!(&r[0].1[4..], b"base:allocation");
    let r = c.option(OPT_LIST_META_CONTEXT, &meta_query(&["qemu:dirty-bitmap:x"]));
    assert_eq!(r, vec![(REP_ACK, vec![])]);
    let r = c.option(OPT_SET_META_CONTEXT, &[0, 0, 0, 9]);
    assert_eq!(r.last().unwrap().0, REP_ERR_INVALID, "malformed query");
    // STARTTLS on a server without TLS: refused by policy.
    let r = c.option(OPT_STARTTLS, &[]);
    assert_eq!(r, vec![(REP_ERR_POLICY, b"TLS is not configured".to_vec())]);
    c.go();
    // No context selected: BLOCK_STATUS is invalid, answered with an error chunk.
    c.request(CMD_BLOCK_STATUS, 0, 11, 0, 4096, &[]);
    let r = c.reply(0);
    assert_eq!(
        (r.chunk, r.error, r.cookie),
        (Some((REPLY_FLAG_DONE, REPLY_TYPE_ERROR)), EINVAL, 11)
    );
    // A READ past the end: an error chunk with a message.
    c.request(CMD_READ, 0, 12, size, 4096, &[]);
    let r = c.reply(4096);
    assert_eq!(
        (r.chunk, r.error, r.cookie),
        (Some((REPLY_FLAG_DONE, REPLY_TYPE_ERROR)), EINVAL, 12)
    );
    let msg_len = u16::from_be_bytes([r.payload[4], r.payload[5]]) as usize;
    assert_eq!(r.payload.len(), 6 + msg_len);
    assert!(msg_len > 0);
    // Other commands keep simple replies.
    c.write(0, &pattern(4096, 2));
    c.disconnect();

    // With the context selected, a range past the end is refused too.
    let mut c = structured_client(s.1);
    c.request(CMD_BLOCK_STATUS, 0, 13, size - 4096, 8192, &[]);
    let r = c.reply(0);
    assert_eq!(
        (r.chunk.map(|x| x.1), r.error),
        (Some(REPLY_TYPE_ERROR), EINVAL)
    );
    // The last byte of the export is fine, and unaligned ranges are answered.
    assert_eq!(c.block_status(size - 4096, 4096, 0), vec![(4096, HOLE)]);
    assert_eq!(c.block_status(100, 1000, 0), vec![(1000, 0)]);
    c.disconnect();

    // Without structured replies, READ gets a simple reply with the data.
    let mut c = Client::greet(connect(s.1));
    c.go();
    assert_eq!(c.read(0, 4096), pattern(4096, 2));
    c.disconnect();
    s.stop();
}

/// Runs `cmd`, asserting success; its stdout as JSON.
fn json_stdout(cmd: &mut Command) -> serde_json::Value {
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{cmd:?}: {}", output_text(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// `nbdinfo --map --json`: (offset, length, type) of every extent.
fn nbdinfo_map(uri: &str) -> Vec<(u64, u64, u64)> {
    let v = json_stdout(Command::new("nbdinfo").args(["--map", "--json", uri]));
    v.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["offset"].as_u64().unwrap(),
                e["length"].as_u64().unwrap(),
                e["type"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn nbdinfo_qemu_img_and_nbdcopy_see_and_skip_the_holes() {
    if !tool("nbdinfo") || !tool("nbdcopy") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = sparse_array(d, "0", &["a", "b"]);
    let size = 30 * MIB; // 2 x (16 MiB less the 1 MiB superblock area)
    assert_eq!(nbdinfo_map(&s.uri()), vec![(0, size, 3)]);
    // Two MiB of data at 4 MiB, copied in by nbdcopy.
    let data = pattern(2 * MIB as usize, 3);
    std::fs::write(d.join("in"), &data).unwrap();
    run(Command::new("nbdcopy").args([
        "--destination-is-zero",
        d.join("in").to_str().unwrap(),
        &s.uri(),
    ]));
    // nbdcopy wrote at offset 0; write the same bytes at 4 MiB through the raw client.
    let mut c = structured_client(s.1);
    for (i, piece) in data.chunks(MIB as usize).enumerate() {
        c.write(4 * MIB + i as u64 * MIB, piece);
    }
    c.disconnect();
    assert_eq!(
        nbdinfo_map(&s.uri()),
        vec![
            (0, 2 * MIB, 0),
            (2 * MIB, 2 * MIB, 3),
            (4 * MIB, 2 * MIB, 0),
            (6 * MIB, size - 6 * MIB, 3)
        ]
    );
    if tool("qemu-img") {
        let v = json_stdout(Command::new("qemu-img").args([
            "map",
            "--output=json",
            "-f",
            "raw",
            &s.uri(),
        ]));
        let data_ranges: Vec<(u64, u64)> = v
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["data"].as_bool().unwrap())
            .map(|e| (e["start"].as_u64().unwrap(), e["length"].as_u64().unwrap()))
            .collect();
        assert_eq!(data_ranges, vec![(0, 2 * MIB), (4 * MIB, 2 * MIB)], "{v}");
    }
    // A sparse copy out: the holes are not written, the data is.
    let out = d.join("out.img");
    run(Command::new("nbdcopy").args([&s.uri(), out.to_str().unwrap()]));
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(bytes.len() as u64, size);
    assert_eq!(&bytes[..2 * MIB as usize], &data[..]);
    assert_eq!(&bytes[4 * MIB as usize..6 * MIB as usize], &data[..]);
    assert!(bytes[2 * MIB as usize..4 * MIB as usize]
        .iter()
        .all(|&b| b == 0));
    let allocated = std::fs::metadata(&out).unwrap().blocks() * 512;
    assert!(
        allocated <= 6 * MIB,
        "nbdcopy wrote {allocated} B of a {size} B export holding 4 MiB of data"
    );
    s.stop();
}

#[test]
fn block_status_of_a_long_range_answers_its_first_128_mib() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    create_sparse(d, &["--level", "0", "--size", "1G", "a", "b"]);
    let s = serve(d, &["a", "b"]);
    let size = 2046 * MIB; // 2 x (1 GiB less the 1 MiB superblock area)
    let mut c = structured_client(s.1);
    c.write(1536 * MIB, &pattern(4096, 9));
    // One answer covers at most 128 MiB (a bounded walk); the client asks again from
    // where it ended, as the protocol expects.
    let cap = 128 * MIB as u32;
    assert_eq!(c.block_status(0, size as u32, 0), vec![(cap, HOLE)]);
    let at = 1472 * MIB;
    assert_eq!(
        c.block_status(at, (size - at) as u32, 0),
        vec![
            (64 * MIB as u32, HOLE),
            (4096, 0),
            (64 * MIB as u32 - 4096, HOLE)
        ]
    );
    c.disconnect();
    s.stop();
}

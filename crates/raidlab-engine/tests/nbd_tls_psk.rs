//! NBD over TLS with pre-shared keys (`serve --tls-psk`, qemu-nbd's tls-creds-psk):
//! a raw OpenSSL client pinned to TLS 1.3 and to TLS 1.2 (the PSK suites), and the
//! real GnuTLS clients: nbdinfo and nbdcopy (`nbds://USER@...?tls-psk-file=`) and
//! qemu-io (`tls-creds-psk`), each skipped, saying why, when missing. A wrong key or
//! an unknown identity is refused, `--tls required` refuses plain clients, and a bad
//! keys file is one line and exit 2.
#![cfg(feature = "psk")]

use crate::common;

use crate::common::{engine, output_text, refused, run, spawn_server_with, tool, Server};
use crate::nbd_wire::*;
use openssl::ssl::{SslConnector, SslMethod, SslStream, SslVerifyMode, SslVersion};
use std::io::Read;
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const MIB: usize = 1 << 20;
const KEY: &str = "9ab43c0a1b8e62f7d7d54c3e8a0f11223344556677889900aabbccddeeff0011";
const OTHER_KEY: &str = "1ab43c0a1b8e62f7d7d54c3e8a0f11223344556677889900aabbccddeeff0011";

/// `dir/NAME/keys.psk` (the name qemu's tls-creds-psk reads from its `dir`) holding
/// `identity:key`, mode 600; returns the directory.
fn keys_dir(d: &Path, name: &str, identity: &str, key: &str) -> PathBuf {
    let dir = d.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("keys.psk");
    std::fs::write(&file, format!("{identity}:{key}\n")).unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    dir
}

/// `serve --tls MODE --tls-psk DIR/keys.psk` on a new RAID 1 of two 16 MiB members.
fn psk_server(d: &Path, keys: &Path, mode: &str) -> Server {
    if !d.join("a").exists() {
        engine(d, &["create", "--level", "1", "--size", "16M", "a", "b"]);
    }
    let file = keys.join("keys.psk");
    spawn_server_with(
        d,
        &["--tls", mode, "--tls-psk", file.to_str().unwrap()],
        &["a", "b"],
        false,
    )
}

/// A client program bounded to 60 s (`timeout`), so a hung peer fails the test.
fn bounded(program: &str) -> Command {
    let mut c = Command::new("timeout");
    c.args(["60", program]).stdin(Stdio::null());
    c
}

/// A raw client: STARTTLS in the clear, then an OpenSSL PSK handshake as `identity`
/// with `key` (hex), at TLS `version` only.
fn psk_client(
    port: u16,
    identity: &str,
    key: &str,
    version: SslVersion,
) -> Result<Client<SslStream<TcpStream>>, String> {
    let mut plain = Client::greet(connect(port));
    assert_eq!(plain.option(OPT_STARTTLS, &[]), vec![(REP_ACK, vec![])]);
    let mut b = SslConnector::builder(SslMethod::tls_client()).unwrap();
    b.set_min_proto_version(Some(version)).unwrap();
    b.set_max_proto_version(Some(version)).unwrap();
    b.set_cipher_list("PSK:ECDHEPSK").unwrap();
    b.set_verify(SslVerifyMode::NONE);
    let (identity, key) = (identity.to_string(), hex(key));
    b.set_psk_client_callback(move |_ssl, _hint, id_out, key_out| {
        id_out[..identity.len()].copy_from_slice(identity.as_bytes());
        id_out[identity.len()] = 0;
        key_out[..key.len()].copy_from_slice(&key);
        Ok(key.len())
    });
    let mut config = b.build().configure().unwrap();
    config.set_verify_hostname(false);
    config.set_use_server_name_indication(false);
    config
        .connect("127.0.0.1", plain.s)
        .map(|s| Client { s })
        .map_err(|e| e.to_string())
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn raw_clients_round_trip_over_tls13_and_tls12_psk_and_wrong_keys_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let keys = keys_dir(d, "psk", "alice", KEY);
    let s = psk_server(d, &keys, "required");

    // In the clear, every option but STARTTLS is refused with NBD_REP_ERR_TLS_REQD.
    let mut plain = Client::greet(connect(s.1));
    for opt in [OPT_LIST, OPT_STRUCTURED_REPLY] {
        let r = plain.option(opt, &[]);
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(r[0].0, REP_ERR_TLS_REQD, "option {opt}");
    }
    let r = plain.option(OPT_GO, &[0, 0, 0, 0, 0, 0]);
    assert_eq!(r[0].0, REP_ERR_TLS_REQD);
    plain.send_option(OPT_EXPORT_NAME, b"");
    let mut rest = Vec::new();
    let _ = plain.s.read_to_end(&mut rest);
    assert!(rest.is_empty(), "no export data before TLS: {rest:?}");

    for (seed, version) in [(1, SslVersion::TLS1_3), (2, SslVersion::TLS1_2)] {
        let mut c = psk_client(s.1, "alice", KEY, version).unwrap();
        assert_eq!(c.s.ssl().version2(), Some(version));
        c.structured_with_base_allocation();
        c.go();
        let data = pattern(3 * MIB, seed);
        for (i, piece) in data.chunks(MIB).enumerate() {
            c.write((i * MIB) as u64, piece);
        }
        assert!(c.read(0, 3 * MIB as u32) == data, "{version:?}: read back");
        c.disconnect();
    }
    // The right identity with another key, and an identity the server does not know.
    for version in [SslVersion::TLS1_3, SslVersion::TLS1_2] {
        let e = psk_client(s.1, "alice", OTHER_KEY, version).err();
        assert!(e.is_some(), "{version:?}: a wrong key was accepted");
        let e = psk_client(s.1, "mallory", KEY, version).err();
        assert!(e.is_some(), "{version:?}: an unknown identity was accepted");
    }
    // Still serving.
    let mut c = psk_client(s.1, "alice", KEY, SslVersion::TLS1_3).unwrap();
    c.go();
    assert!(c.read(0, MIB as u32) == pattern(3 * MIB, 2)[..MIB]);
    c.disconnect();
    s.stop();
}

/// libnbd's URI for the export with the keys of `keys` as `user`.
fn nbds_uri(port: u16, user: &str, keys: &Path) -> String {
    format!(
        "nbds://{user}@127.0.0.1:{port}/?tls-psk-file={}",
        keys.join("keys.psk").display()
    )
}

#[test]
fn nbdinfo_and_nbdcopy_over_psk() {
    if !tool("nbdinfo") || !tool("nbdcopy") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let keys = keys_dir(d, "psk", "alice", KEY);
    let s = psk_server(d, &keys, "required");
    let uri = nbds_uri(s.1, "alice", &keys);
    let info = run(bounded("nbdinfo").arg(&uri));
    assert!(info.contains("with TLS"), "{info}");
    // 15 MiB in and out again over TLS: identical.
    let data = pattern(15 * MIB, 7);
    std::fs::write(d.join("in"), &data).unwrap();
    run(bounded("nbdcopy").args([d.join("in").to_str().unwrap(), &uri]));
    let out = d.join("out");
    run(bounded("nbdcopy").args([&uri, out.to_str().unwrap()]));
    assert!(
        std::fs::read(&out).unwrap() == data,
        "nbdcopy read back other bytes"
    );
    // A wrong key, an unknown identity and a plain client are refused.
    let wrong = keys_dir(d, "wrong", "alice", OTHER_KEY);
    let stranger = keys_dir(d, "stranger", "mallory", KEY);
    for uri in [
        nbds_uri(s.1, "alice", &wrong),
        nbds_uri(s.1, "mallory", &stranger),
        s.uri(),
    ] {
        let o = bounded("nbdinfo").arg(&uri).output().unwrap();
        assert!(!o.status.success(), "{uri}: {}", output_text(&o));
    }
    s.stop();
}

/// qemu-io on the PSK export as `user` with the keys in `keys`: whether it exited 0
/// with no failed command, and its output.
fn qemu_io_psk(port: u16, user: &str, keys: &Path, cmds: &[&str]) -> (bool, String) {
    let mut c = bounded("qemu-io");
    c.args([
        "--object",
        &format!(
            "tls-creds-psk,id=tls0,endpoint=client,dir={},username={user}",
            keys.display()
        ),
        "--image-opts",
        &format!(
            "driver=nbd,server.type=inet,server.host=127.0.0.1,server.port={port},tls-creds=tls0"
        ),
    ]);
    for x in cmds {
        c.args(["-c", x]);
    }
    let o = c.output().unwrap();
    let t = output_text(&o);
    (o.status.success() && !t.contains("failed"), t)
}

#[test]
fn qemu_io_over_psk_writes_what_a_plain_server_reads_back() {
    if !tool("qemu-io") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let keys = keys_dir(d, "psk", "alice", KEY);
    let s = psk_server(d, &keys, "on");
    let (ok, t) = qemu_io_psk(
        s.1,
        "alice",
        &keys,
        &[
            "write -P 0x5a 0 2M",
            "write -P 0xc3 3584 8704",
            "read -P 0x5a 12288 1M",
            "read -P 0xc3 3584 8704",
        ],
    );
    assert!(ok, "{t}");
    // A wrong key is refused; pattern checks fail on bytes that are not there.
    let wrong = keys_dir(d, "wrong", "alice", OTHER_KEY);
    let (ok, t) = qemu_io_psk(s.1, "alice", &wrong, &["read 0 4k"]);
    assert!(!ok, "{t}");
    s.stop();
    // The same bytes, served without TLS.
    let s = common::serve(d, &["a", "b"]);
    let t = common::qemu_io(
        &s.uri(),
        &[
            "read -P 0x5a 0 3584",
            "read -P 0xc3 3584 8704",
            "read -P 0x5a 12288 1M",
        ],
    );
    assert!(!t.contains("Pattern verification failed"), "{t}");
    s.stop();
}

#[test]
fn bad_keys_files_are_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    engine(d, &["create", "--level", "1", "--size", "16M", "a", "b"]);
    let keys = keys_dir(d, "psk", "alice", KEY).join("keys.psk");
    let k = keys.to_str().unwrap();
    let serve = |extra: &[&str]| {
        let mut args = vec!["serve", "--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["a", "b"]);
        refused(d, &args)
    };
    for mode in [0o640, 0o604, 0o660] {
        std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(mode)).unwrap();
        let e = serve(&["--tls-psk", k]);
        assert!(
            e.starts_with("error: --tls-psk:") && e.contains("chmod 600"),
            "{mode:o}: {e}"
        );
    }
    std::fs::set_permissions(&keys, std::fs::Permissions::from_mode(0o600)).unwrap();
    for (text, line) in [
        ("alice:00ff\nbob\n", "line 2:"),
        ("alice:0x11\n", "line 1:"),
        ("\n\nalice:abc\n", "line 3:"),
    ] {
        std::fs::write(&keys, text).unwrap();
        let e = serve(&["--tls-psk", k]);
        assert!(
            e.starts_with("error: --tls-psk:") && e.contains(line),
            "{text:?}: {e}"
        );
    }
    std::fs::write(&keys, "").unwrap();
    let e = serve(&["--tls-psk", k]);
    assert!(e.contains("no IDENTITY:HEXKEY"), "{e}");
    let e = serve(&["--tls-psk", "nowhere.psk"]);
    assert!(e.starts_with("error: --tls-psk: cannot read"), "{e}");
    let e = serve(&["--tls", "off", "--tls-psk", k]);
    assert!(e.starts_with("error: --tls:"), "{e}");
    let e = serve(&["--tls-psk", k, "--tls-cert", "c.pem", "--tls-key", "k.pem"]);
    assert!(e.starts_with("error: --tls-psk:"), "{e}");
}

//! NBD over TLS (`NBD_OPT_STARTTLS`): certificates made in the test (rcgen), a raw
//! client over rustls checking the protocol, and the real clients: nbdinfo and nbdcopy
//! (`nbds://` URIs with `tls-certificates=DIR`) and qemu-io (`tls-creds-x509`), each
//! skipped, saying why, when missing. `--tls required` refuses plain clients.

use crate::common;

use crate::common::{
    engine, engine_command, free_listen_address, output_text, refused, run, spawn_server_with,
    tool, wait_listening, Server,
};
use crate::nbd_wire::*;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, ServerName};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

const MIB: u64 = 1 << 20;

/// A CA and a server certificate for 127.0.0.1 and localhost signed by it, in
/// `dir/pki`: ca-cert.pem (what libnbd's tls-certificates and qemu's tls-creds-x509
/// read), server-cert.pem and server-key.pem (what `serve` reads).
fn make_pki(dir: &Path) -> PathBuf {
    let pki = dir.join("pki");
    std::fs::create_dir_all(&pki).unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, "raidlab test CA");
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let mut server = CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
    server
        .distinguished_name
        .push(DnType::CommonName, "127.0.0.1");
    let server_key = KeyPair::generate().unwrap();
    let server_cert = server.signed_by(&server_key, &ca_cert, &ca_key).unwrap();
    std::fs::write(pki.join("ca-cert.pem"), ca_cert.pem()).unwrap();
    std::fs::write(pki.join("server-cert.pem"), server_cert.pem()).unwrap();
    std::fs::write(pki.join("server-key.pem"), server_key.serialize_pem()).unwrap();
    pki
}

/// `serve --tls MODE` with the certificate of `pki` on a new RAID 1 of two 16 MiB
/// members `a`, `b` (created unless there).
fn tls_server(d: &Path, pki: &Path, mode: &str) -> Server {
    if !d.join("a").exists() {
        engine(d, &["create", "--level", "1", "--size", "16M", "a", "b"]);
    }
    let cert = pki.join("server-cert.pem");
    let key = pki.join("server-key.pem");
    spawn_server_with(
        d,
        &[
            "--tls",
            mode,
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
        &["a", "b"],
        false,
    )
}

type TlsStream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// A raw client: greeting and STARTTLS in the clear, then the TLS handshake (trusting
/// the CA of `pki` only, checking the name 127.0.0.1).
fn tls_client(port: u16, pki: &Path) -> Client<TlsStream> {
    let mut plain = Client::greet(connect(port));
    let r = plain.option(OPT_STARTTLS, &[]);
    assert_eq!(r, vec![(REP_ACK, vec![])]);
    let ca = std::fs::read(pki.join("ca-cert.pem")).unwrap();
    let ca: CertificateDer = rustls::pki_types::pem::PemObject::from_pem_slice(&ca).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    Client {
        s: rustls::StreamOwned::new(conn, plain.s),
    }
}

#[test]
fn raw_client_over_tls_round_trips_and_plain_is_refused_when_required() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pki = make_pki(d);
    let s = tls_server(d, &pki, "required");

    // In the clear, every option but STARTTLS is refused with NBD_REP_ERR_TLS_REQD.
    let mut plain = Client::greet(connect(s.1));
    for opt in [OPT_GO, OPT_INFO, OPT_LIST, OPT_STRUCTURED_REPLY] {
        let data: &[u8] = if opt == OPT_GO || opt == OPT_INFO {
            &[0, 0, 0, 0, 0, 0]
        } else {
            &[]
        };
        let r = plain.option(opt, data);
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(r[0].0, REP_ERR_TLS_REQD, "option {opt}");
    }
    // NBD_OPT_EXPORT_NAME cannot be refused with a reply: the server hangs up.
    plain.send_option(OPT_EXPORT_NAME, b"");
    let mut rest = Vec::new();
    let _ = plain.s.read_to_end(&mut rest);
    assert!(rest.is_empty(), "no export data before TLS: {rest:?}");

    // Over TLS: options, then data in and out, pipelined.
    let mut c = tls_client(s.1, &pki);
    let r = c.option(OPT_STARTTLS, &[]);
    assert_eq!(r[0].0, REP_ERR_INVALID, "TLS is already running");
    c.structured_with_base_allocation();
    c.go();
    let data = pattern(4 * MIB as usize, 5);
    for (i, piece) in data.chunks(MIB as usize).enumerate() {
        c.write(i as u64 * MIB, piece);
    }
    // 16 reads of 256 KiB sent at once: replies come as the server's threads finish.
    let piece = 256 << 10;
    for i in 0..16u64 {
        c.request(CMD_READ, 0, 100 + i, i * piece, piece as u32, &[]);
    }
    let mut seen = [false; 16];
    for _ in 0..16 {
        let r = c.reply(0);
        let i = (r.cookie - 100) as usize;
        assert_eq!(r.chunk, Some((REPLY_FLAG_DONE, REPLY_TYPE_OFFSET_DATA)));
        assert_eq!(r.error, 0);
        let at = u64::from_be_bytes(r.payload[..8].try_into().unwrap());
        assert_eq!(at, i as u64 * piece);
        let want = &data[i * piece as usize..(i + 1) * piece as usize];
        assert!(&r.payload[8..] == want, "read {i} differs");
        seen[i] = true;
    }
    assert!(seen.iter().all(|&x| x));
    assert_eq!(
        c.block_status(0, 8 * MIB as u32, 0),
        vec![(4 * MIB as u32, 0), (4 * MIB as u32, 3)]
    );
    c.disconnect();
    s.stop();
}

#[test]
fn garbage_after_starttls_ends_that_connection_only() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pki = make_pki(d);
    let s = tls_server(d, &pki, "required");
    let mut bad = Client::greet(connect(s.1));
    assert_eq!(bad.option(OPT_STARTTLS, &[]), vec![(REP_ACK, vec![])]);
    // Plain NBD where a ClientHello belongs: the server answers at most an alert.
    bad.s.write_all(&[0x49; 64]).unwrap();
    let mut rest = Vec::new();
    let _ = bad.s.read_to_end(&mut rest);
    assert!(rest.len() < 64, "{rest:?}");
    assert!(
        rest.is_empty() || rest[0] == 0x15,
        "a TLS alert record: {rest:?}"
    );
    // A client that leaves in the middle of the TLS handshake.
    let mut gone = Client::greet(connect(s.1));
    assert_eq!(gone.option(OPT_STARTTLS, &[]), vec![(REP_ACK, vec![])]);
    drop(gone);
    // Others are still served.
    let mut c = tls_client(s.1, &pki);
    c.go();
    c.write(0, &pattern(4096, 8));
    assert_eq!(c.read(0, 4096), pattern(4096, 8));
    c.disconnect();
    s.stop();
}

#[test]
fn tls_on_serves_plain_and_tls_clients() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pki = make_pki(d);
    let s = tls_server(d, &pki, "on");
    let mut plain = Client::greet(connect(s.1));
    plain.go();
    plain.write(0, &pattern(8192, 6));
    plain.disconnect();
    let mut c = tls_client(s.1, &pki);
    c.go();
    assert_eq!(c.read(0, 8192), pattern(8192, 6));
    c.disconnect();
    s.stop();
}

/// An `nbds://` URI for libnbd's tools, trusting the CA in `pki`.
fn nbds_uri(port: u16, pki: &Path) -> String {
    format!(
        "nbds://127.0.0.1:{port}/?tls-certificates={}",
        pki.display()
    )
}

#[test]
fn nbdinfo_and_nbdcopy_over_tls() {
    if !tool("nbdinfo") || !tool("nbdcopy") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pki = make_pki(d);
    let s = tls_server(d, &pki, "required");
    let uri = nbds_uri(s.1, &pki);
    let info = run(Command::new("nbdinfo").arg(&uri));
    assert!(info.contains("with TLS"), "{info}");
    assert!(info.contains("base:allocation"), "{info}");
    // A plain client is refused.
    let o = Command::new("nbdinfo").arg(s.uri()).output().unwrap();
    assert!(!o.status.success(), "{}", output_text(&o));
    // 15 MiB in and out again over TLS: identical.
    let data = pattern(15 * MIB as usize, 7);
    std::fs::write(d.join("in"), &data).unwrap();
    run(Command::new("nbdcopy").args([d.join("in").to_str().unwrap(), &uri]));
    let out = d.join("out");
    run(Command::new("nbdcopy").args([&uri, out.to_str().unwrap()]));
    assert!(
        std::fs::read(&out).unwrap() == data,
        "nbdcopy read back other bytes"
    );
    s.stop();
}

/// qemu-io on the TLS export, trusting the CA in `pki`: whether it exited 0 with no
/// failed command, and its output.
fn qemu_io_tls(port: u16, pki: &Path, cmds: &[&str]) -> (bool, String) {
    let mut c = Command::new("qemu-io");
    c.args([
        "--object",
        &format!(
            "tls-creds-x509,id=tls0,endpoint=client,dir={}",
            pki.display()
        ),
        "--image-opts",
        &format!(
            "driver=nbd,server.type=inet,server.host=127.0.0.1,server.port={port},tls-creds=tls0"
        ),
    ]);
    for x in cmds {
        c.args(["-c", x]);
    }
    let o = c.stdin(Stdio::null()).output().unwrap();
    let t = output_text(&o);
    (o.status.success() && !t.contains("failed"), t)
}

#[test]
fn qemu_io_over_tls_writes_what_a_plain_server_reads_back() {
    if !tool("qemu-io") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pki = make_pki(d);
    let s = tls_server(d, &pki, "required");
    let (ok, t) = qemu_io_tls(
        s.1,
        &pki,
        &[
            "write -P 0x5a 0 2M",
            "write -P 0xc3 3584 8704",
            "read -P 0x5a 12288 1M",
            "read -P 0xc3 3584 8704",
        ],
    );
    assert!(ok, "{t}");
    // Plain qemu-io is refused.
    let (ok, t) = common::qemu_io_outcome(&s.uri(), &["read 0 4k"]);
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
fn tls_flags_are_checked_before_anything_is_opened() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pki = make_pki(d);
    let cert = pki.join("server-cert.pem");
    let key = pki.join("server-key.pem");
    let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let e = refused(d, &["serve", "--tls", "required", "a", "b"]);
    assert!(e.starts_with("error: --tls-cert:"), "{e}");
    let e = refused(d, &["serve", "--tls", "maybe", "a", "b"]);
    assert!(e.starts_with("error: --tls:"), "{e}");
    let e = refused(d, &["serve", "--tls-cert", cert, "a", "b"]);
    assert!(e.starts_with("error: --tls-key:"), "{e}");
    let e = refused(
        d,
        &[
            "serve",
            "--tls",
            "off",
            "--tls-cert",
            cert,
            "--tls-key",
            key,
            "a",
        ],
    );
    assert!(e.starts_with("error: --tls:"), "{e}");
    let e = refused(
        d,
        &["serve", "--tls-cert", "nowhere.pem", "--tls-key", key, "a"],
    );
    assert!(e.starts_with("error: --tls-cert: cannot read"), "{e}");
    // TLS is for the TCP export: without --listen (the private Unix socket) it is
    // refused, naming the flag, not silently unused.
    let e = refused(d, &["serve", "--tls-cert", cert, "--tls-key", key, "a"]);
    assert!(
        e.starts_with("error: --tls-cert: TLS is for the TCP export, which needs --listen"),
        "{e}"
    );
    // A key that is not the certificate's.
    let other = make_pki(&d.join("other"));
    let other_key = other.join("server-key.pem");
    let e = refused(
        d,
        &[
            "serve",
            "--tls-cert",
            cert,
            "--tls-key",
            other_key.to_str().unwrap(),
            "a",
        ],
    );
    assert!(e.starts_with("error: --tls-key:"), "{e}");
}

/// `serve` on `listen` (port from `free_listen_address`) with `options`; stopped with
/// SIGINT, returns what it printed.
fn serve_stderr_on(d: &Path, listen: &str, options: &[&str]) -> String {
    let (_, port) = free_listen_address();
    let listen = listen.replace("PORT", &port.to_string());
    let child = engine_command(d)
        .args(["serve", "--listen", &listen])
        .args(options)
        .args(["a", "b"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let server = Server(child, port, None);
    wait_listening(&format!("127.0.0.1:{port}"));
    server.stop_with_stderr()
}

#[test]
fn plain_service_on_a_network_address_warns() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pki = make_pki(d);
    engine(d, &["create", "--level", "1", "--size", "16M", "a", "b"]);
    // Binding 0.0.0.0 only; the test connects through loopback.
    let err = serve_stderr_on(d, "0.0.0.0:PORT", &[]);
    assert!(err.contains("warning") && err.contains("TLS"), "{err}");
    let err = serve_stderr_on(d, "127.0.0.1:PORT", &[]);
    assert!(!err.contains("warning"), "{err}");
    let cert = pki.join("server-cert.pem");
    let key = pki.join("server-key.pem");
    let tls = [
        "--tls",
        "required",
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ];
    let err = serve_stderr_on(d, "0.0.0.0:PORT", &tls);
    assert!(!err.contains("warning"), "{err}");
}

/// The defences against hostile clients hold over TLS too: a client that stalls in the
/// TLS handshake, or trickles a TLS record byte by byte, is cut at the handshake
/// deadline. Over TLS, NBD_INFO_BLOCK_SIZE advertises the budget's max payload, a
/// meta-context query names the export as INFO/GO do (else NBD_REP_ERR_UNKNOWN), and
/// BLOCK_STATUS takes NBD_CMD_FLAG_REQ_ONE but no unknown flag.
#[test]
fn tls_keeps_the_handshake_deadline_the_max_payload_names_and_flags() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pki = make_pki(d);
    engine(d, &["create", "--level", "1", "--size", "16M", "a", "b"]);
    let cert = pki.join("server-cert.pem");
    let key = pki.join("server-key.pem");
    let s = spawn_server_with(
        d,
        &[
            "--tls",
            "required",
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
            "--handshake-timeout",
            "3",
            // 2 x 512 KiB reserves, 1 MiB shared: the max payload is 1 MiB.
            "--memory-limit",
            "2M",
            "--connections-max",
            "2",
        ],
        &["a", "b"],
        false,
    );

    // STARTTLS acknowledged, then silence: closed at the deadline.
    let start = std::time::Instant::now();
    let mut stalled = Client::greet(connect(s.1));
    assert_eq!(stalled.option(OPT_STARTTLS, &[]), vec![(REP_ACK, vec![])]);
    stalled
        .s
        .set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    let mut rest = Vec::new();
    let _ = stalled.s.read_to_end(&mut rest);
    let took = start.elapsed().as_secs_f64();
    assert!((2.5..12.0).contains(&took), "closed after {took:.1} s");

    // A TLS record header announcing 16 KiB, then a byte every 200 ms: closed at the
    // deadline too, long before the record is complete.
    let start = std::time::Instant::now();
    let mut trickle = Client::greet(connect(s.1));
    assert_eq!(trickle.option(OPT_STARTTLS, &[]), vec![(REP_ACK, vec![])]);
    let mut sent = trickle.s.write_all(&[0x16, 0x03, 0x01, 0x40, 0x00]).is_ok();
    while sent && start.elapsed().as_secs() < 15 {
        std::thread::sleep(std::time::Duration::from_millis(200));
        sent = trickle.s.write_all(&[0x01]).is_ok();
    }
    let took = start.elapsed().as_secs_f64();
    assert!(!sent, "still open after {took:.1} s");
    assert!((2.5..12.0).contains(&took), "closed after {took:.1} s");

    // Over TLS: the block sizes, the export name of meta-context queries, the flags.
    let mut c = tls_client(s.1, &pki);
    let info = c.option(OPT_INFO, &[0, 0, 0, 0, 0, 0]);
    let sizes = info
        .iter()
        .find(|(kind, data)| *kind == REP_INFO && data[..2] == [0, 3])
        .unwrap_or_else(|| panic!("no NBD_INFO_BLOCK_SIZE: {info:?}"));
    let word = |i: usize| u32::from_be_bytes(sizes.1[2 + 4 * i..6 + 4 * i].try_into().unwrap());
    assert_eq!((word(0), word(1), word(2)), (512, 4096, MIB as u32));
    assert_eq!(c.option(OPT_STRUCTURED_REPLY, &[]), vec![(REP_ACK, vec![])]);
    let mut named = 4u32.to_be_bytes().to_vec();
    named.extend_from_slice(b"nope");
    named.extend_from_slice(&meta_query(&["base:allocation"])[4..]);
    let r = c.option(OPT_SET_META_CONTEXT, &named);
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0].0, 0x8000_0006, "NBD_REP_ERR_UNKNOWN");
    c.structured_with_base_allocation();
    c.go();
    assert_eq!(c.block_status(0, 8 * MIB as u32, CMD_FLAG_REQ_ONE).len(), 1);
    c.request(CMD_BLOCK_STATUS, 1 << 4, 7, 0, MIB as u32, &[]);
    let r = c.reply(0);
    assert_eq!((r.cookie, r.error), (7, EINVAL));
    c.request(CMD_READ, 0, 8, 0, MIB as u32 + 512, &[]);
    let r = c.reply(0);
    assert_eq!((r.cookie, r.error), (8, EINVAL), "past the max payload");
    assert_eq!(c.read(0, MIB as u32).len(), MIB as usize);
    c.disconnect();
    s.stop();
}

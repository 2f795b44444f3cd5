//! A full filesystem under the members (issue 16): sparse members on a small tmpfs are
//! written through NBD until the filesystem is full. The client gets ENOSPC, no member
//! fails, and once space is freed the array assembles, `check` is clean and every block
//! acknowledged before ENOSPC reads back intact, even degraded. Also: `create` without
//! `--sparse` on a too-small filesystem fails in one line and leaves nothing behind; a
//! stop while still full marks the array clean, or says it left it dirty (exit 1);
//! `assemble --force` puts the freshest stale member back in, and refuses when members
//! are missing entirely.
//!
//! The tmpfs tests need root (to mount); they skip with a message otherwise.

use crate::common::{
    engine, engine_command, engine_json, engine_output, free_listen_address, refused, retry_in_use,
    status, wait_listening, Server, Tmpfs,
};
use raidlab_engine::net::nbd::{protocol, server};
use raidlab_engine::{Array, CreateOptions};
use raidlab_layout::Level;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A minimal NBD client (fixed newstyle, NBD_OPT_EXPORT_NAME, simple replies).
struct Client(TcpStream);

impl Client {
    fn connect(port: u16) -> Client {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        // Generous: a loaded 2-core machine; a hang fails instead of stalling the run.
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut hello = [0u8; 18];
        s.read_exact(&mut hello).unwrap();
        assert_eq!(&hello[..16], b"NBDMAGICIHAVEOPT");
        s.write_all(&3u32.to_be_bytes()).unwrap(); // FIXED_NEWSTYLE | NO_ZEROES
        let name = server::EXPORT_NAME.as_bytes();
        let mut b = protocol::IHAVEOPT.to_be_bytes().to_vec();
        b.extend_from_slice(&protocol::OPT_EXPORT_NAME.to_be_bytes());
        b.extend_from_slice(&(name.len() as u32).to_be_bytes());
        b.extend_from_slice(name);
        s.write_all(&b).unwrap();
        let mut info = [0u8; 10];
        s.read_exact(&mut info).unwrap();
        Client(s)
    }

    /// Sends one request; returns the reply's error and, for a READ, the data.
    fn request(&mut self, cmd: u16, offset: u64, len: u32, payload: &[u8]) -> (u32, Vec<u8>) {
        let mut b = protocol::REQUEST_MAGIC.to_be_bytes().to_vec();
        b.extend_from_slice(&0u16.to_be_bytes());
        b.extend_from_slice(&cmd.to_be_bytes());
        b.extend_from_slice(&offset.to_be_bytes()); // the cookie
        b.extend_from_slice(&offset.to_be_bytes());
        b.extend_from_slice(&len.to_be_bytes());
        b.extend_from_slice(payload);
        self.0.write_all(&b).unwrap();
        let mut h = [0u8; 16];
        self.0.read_exact(&mut h).unwrap();
        assert_eq!(
            u32::from_be_bytes(h[..4].try_into().unwrap()),
            protocol::SIMPLE_REPLY_MAGIC
        );
        assert_eq!(u64::from_be_bytes(h[8..].try_into().unwrap()), offset);
        let err = u32::from_be_bytes(h[4..8].try_into().unwrap());
        let mut data = Vec::new();
        if err == 0 && cmd == protocol::CMD_READ {
            data = vec![0u8; len as usize];
            self.0.read_exact(&mut data).unwrap();
        }
        (err, data)
    }

    fn write(&mut self, offset: u64, data: &[u8]) -> u32 {
        self.request(protocol::CMD_WRITE, offset, data.len() as u32, data)
            .0
    }
}

/// Block `i`'s content: distinct per block and never zero (a hole reads zero).
fn block(i: u64, len: usize) -> Vec<u8> {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x as u8) | 1
        })
        .collect()
}

/// FNV-1a: the checksum recorded for every acknowledged block.
fn checksum(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &x| {
        (h ^ u64::from(x)).wrapping_mul(0x0100_0000_01b3)
    })
}

const BLOCK: usize = 64 << 10;

/// How a run of [`fill_and_recover`] goes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// As shipped: writes to sparse members allocate their blocks first, so a full
    /// filesystem refuses a write before any member is written.
    Reserve,
    /// `RAIDLAB_ENGINE_NO_RESERVE=1`: writes go straight to the members (as on a
    /// filesystem without fallocate), so the refused write lands in part and its
    /// regions must be resynced.
    NoReserve,
    /// As `Reserve`, on an array degraded from the start: a torn stripe would make the
    /// missing member's chunks come back wrong.
    Degraded,
}

/// Starts `serve` on `members` with `env` set, its stderr kept.
fn serve_with_env(dir: &Path, members: &[&str], env: &[(&str, &str)]) -> Server {
    let (listen, port) = free_listen_address();
    let mut command = engine_command(dir);
    command
        .args(["serve", "--listen", &listen, "--bitmap-delay", "1"])
        .args(members)
        .envs(env.iter().copied())
        .stderr(std::process::Stdio::piped());
    let server = Server(command.spawn().unwrap(), port, None);
    wait_listening(&listen);
    server
}

/// Fills sparse members of `level` on a 6 MiB tmpfs (their full size is several times
/// that) through NBD until ENOSPC, frees space, and checks the recovery.
fn fill_and_recover(level: &str, members: usize, mode: Mode) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let Some(fs) = Tmpfs::mount(&dir.join("fs"), "6m") else {
        return;
    };
    // Space to give back later: a filler file written first.
    let filler = fs.0.join("filler");
    std::fs::write(&filler, vec![0xA5u8; 1 << 20]).unwrap();
    let paths: Vec<String> = (0..members)
        .map(|i| fs.0.join(format!("m{i}")).display().to_string())
        .collect();
    let m: Vec<&str> = paths.iter().map(String::as_str).collect();
    let mut create = vec!["create", "--level", level, "--chunk", "64K", "--size", "9M"];
    create.push("--sparse");
    create.extend(&m);
    engine(dir, &create);
    let capacity = status(dir, &m)["capacity_bytes"].as_u64().unwrap();
    assert!(
        capacity * (members as u64) / 2 > 6 << 20,
        "members larger than the filesystem"
    );
    if mode == Mode::Degraded {
        let mut fail = vec!["fail", "0"];
        fail.extend(&m);
        engine(dir, &fail);
    }
    let env: &[(&str, &str)] = match mode {
        Mode::NoReserve => &[("RAIDLAB_ENGINE_NO_RESERVE", "1")],
        _ => &[],
    };

    let server = serve_with_env(dir, &m, env);
    let mut c = Client::connect(server.1);
    let mut acked: Vec<(u64, u64)> = Vec::new(); // (block index, checksum)
    let mut enospc = None;
    for i in 0..capacity / BLOCK as u64 {
        let data = block(i, BLOCK);
        match c.write(i * BLOCK as u64, &data) {
            0 => acked.push((i, checksum(&data))),
            err => {
                enospc = Some((i, err));
                break;
            }
        }
    }
    let (stopped_at, err) = enospc.expect("the tmpfs filled before the array did");
    assert_eq!(err, 28, "a full filesystem is answered NBD_ENOSPC (28)");
    assert!(
        acked.len() >= 16,
        "only {} blocks acknowledged before ENOSPC",
        acked.len()
    );
    // Still full: another new block is refused the same way, and no member failed.
    assert_eq!(
        c.write((stopped_at + 1) * BLOCK as u64, &block(9, BLOCK)),
        28
    );
    let s = status(dir, &m);
    let failed_before = if mode == Mode::Degraded {
        serde_json::json!([0])
    } else {
        serde_json::json!([])
    };
    assert_eq!(s["failed"], failed_before, "{s}");
    // Acknowledged blocks still read back while full (reconstructed where degraded),
    // overwriting one works (its blocks are allocated), and a FLUSH succeeds.
    for &(i, sum) in &acked {
        let (e, back) = c.request(protocol::CMD_READ, i * BLOCK as u64, BLOCK as u32, &[]);
        assert_eq!((e, checksum(&back)), (0, sum), "block {i} while full");
    }
    assert_eq!(c.write(0, &block(0, BLOCK)), 0);
    assert_eq!(c.request(protocol::CMD_FLUSH, 0, 0, &[]).0, 0);

    // Free space, then stop cleanly.
    std::fs::remove_file(&filler).unwrap();
    drop(c);
    let stderr = server.stop_with_stderr();
    if mode == Mode::NoReserve {
        assert!(
            stderr.contains("resynced"),
            "the half-done write was not resynced: {stderr}"
        );
    } else {
        assert!(
            !stderr.contains("resynced"),
            "a refused write landed in part: {stderr}"
        );
    }

    // The array assembles (no --force needed: no member failed for lack of space).
    let s = status(dir, &m);
    assert_eq!(s["failed"], failed_before, "{s}");
    assert_eq!(s["dirty"], false, "{s}");
    let mut member_paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    let verify = |array: &Array, what: &str| {
        let mut buf = vec![0u8; BLOCK];
        for &(i, sum) in &acked {
            array.read(i * BLOCK as u64, &mut buf).unwrap();
            assert_eq!(checksum(&buf), sum, "{what}: block {i} changed");
        }
    };
    if mode == Mode::Degraded {
        // Every acknowledged block as the degraded array serves it, then a rebuild
        // (onto a file off the full filesystem) and the same with member 0 back.
        verify(&retry_in_use(|| Array::assemble(&member_paths)), "degraded");
        let new = dir.join("new0").display().to_string();
        let mut replace = vec!["replace", "0", &new];
        replace.extend(&m);
        engine(dir, &replace);
        member_paths[0] = PathBuf::from(&new);
    }
    let now: Vec<String> = member_paths
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let mut check = vec!["check"];
    check.extend(now.iter().map(String::as_str));
    let r = engine_json(dir, &check);
    assert_eq!(r["mismatched_stripes"], 0, "{r}");

    // Every acknowledged block reads back intact; again with member 1 failed, so that
    // parity (or the other copy) is shown to agree with the data.
    let array = retry_in_use(|| Array::assemble(&member_paths));
    verify(&array, "all members");
    array.fail_member(1).unwrap();
    verify(&array, "member 1 failed");
    eprintln!(
        "{level} {mode:?}: {} blocks of {BLOCK} B acknowledged before ENOSPC, all read back",
        acked.len()
    );
}

#[test]
fn raid5_on_a_full_filesystem_answers_enospc_and_recovers_every_acknowledged_block() {
    fill_and_recover("5", 3, Mode::Reserve);
}

#[test]
fn raid1_on_a_full_filesystem_answers_enospc_and_recovers_every_acknowledged_block() {
    fill_and_recover("1", 2, Mode::Reserve);
}

#[test]
fn a_degraded_raid5_on_a_full_filesystem_keeps_the_missing_members_data() {
    fill_and_recover("5", 3, Mode::Degraded);
}

#[test]
fn a_write_that_lands_in_part_for_lack_of_space_is_resynced_raid5() {
    fill_and_recover("5", 3, Mode::NoReserve);
}

#[test]
fn a_write_that_lands_in_part_for_lack_of_space_is_resynced_raid1() {
    fill_and_recover("1", 2, Mode::NoReserve);
}

/// Without --sparse, members are preallocated: a filesystem too small refuses `create`
/// (exit code 2, one line naming a member and the bytes needed) and nothing is left.
#[test]
fn create_preallocates_and_refuses_a_too_small_filesystem_leaving_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let Some(fs) = Tmpfs::mount(&dir.join("fs"), "8m") else {
        return;
    };
    let paths: Vec<String> = (0..3)
        .map(|i| fs.0.join(format!("m{i}")).display().to_string())
        .collect();
    let m: Vec<&str> = paths.iter().map(String::as_str).collect();
    let mut create = vec!["create", "--level", "5", "--size", "4M"];
    create.extend(&m);
    let err = refused(dir, &create);
    assert!(
        err.contains(paths[2].as_str()) && err.contains("preallocate"),
        "{err}"
    );
    assert!(err.contains("12582912 B"), "the bytes needed: {err}");
    assert!(err.contains("--sparse"), "{err}");
    let left: Vec<_> = std::fs::read_dir(&fs.0).unwrap().collect();
    assert!(left.is_empty(), "create left {left:?}");
    assert_eq!(fs.used_bytes(), 0);

    // Where they fit, the members are allocated in full at create.
    let mut create = vec!["create", "--level", "5", "--size", "2M"];
    create.extend(&m);
    engine(dir, &create);
    for p in &paths {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(p).unwrap();
        assert!(meta.blocks() * 512 >= 2 << 20, "{p} not preallocated");
    }
}

/// Two members stale (restored from an older copy): assembly is refused and points to
/// --force; `assemble --force` puts the freshest back in, says so, records it in sync
/// (later assemblies need no --force), and what was written before reads back. With
/// two members missing entirely, --force cannot help and says so.
#[test]
fn assemble_force_takes_the_freshest_stale_member_and_refuses_when_members_are_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let paths: Vec<PathBuf> = (0..3).map(|i| dir.join(format!("m{i}"))).collect();
    let mut opts = CreateOptions::new(Level::Raid5, 64 << 10, Some(4 << 20));
    opts.sparse = true;
    let (early, later) = (block(1, BLOCK), block(2, BLOCK));
    // Member 0 as it is after the first write, member 1 after the second; a third
    // session moves the array on two events without writing (one event behind is a
    // member that missed only the last superblock write, and current). Restored, both
    // are stale, member 1 the fresher.
    {
        let a = retry_in_use(|| Array::create(&paths, &opts));
        a.write(0, &early, false).unwrap();
        a.close().unwrap();
    }
    let saved0 = std::fs::read(&paths[0]).unwrap();
    {
        let a = retry_in_use(|| Array::assemble(&paths));
        a.write(BLOCK as u64 * 4, &later, false).unwrap();
        a.close().unwrap();
    }
    let saved1 = std::fs::read(&paths[1]).unwrap();
    {
        let a = retry_in_use(|| Array::assemble(&paths));
        a.open_for_writes().unwrap();
        a.close().unwrap();
    }
    std::fs::write(&paths[0], &saved0).unwrap();
    std::fs::write(&paths[1], &saved1).unwrap();

    let m: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let m: Vec<&str> = m.iter().map(String::as_str).collect();
    let mut st = vec!["status"];
    st.extend(&m);
    let err = refused(dir, &st);
    assert!(
        err.contains("cannot assemble") && err.contains("--force"),
        "{err}"
    );

    let mut forced = vec!["assemble", "--force", "--json"];
    forced.extend(&m);
    let o = engine(dir, &forced);
    let said = String::from_utf8_lossy(&o.stderr).to_string();
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        said.contains("member 1") && said.contains("forced in") && said.contains("check"),
        "{said}"
    );
    assert!(
        !said.contains("member 0"),
        "only the freshest is needed: {said}"
    );
    assert_eq!(s["failed"], serde_json::json!([0]), "{s}");
    assert_eq!(s["forced"].as_array().map(Vec::len), Some(1), "{s}");
    assert_eq!(s["forced"][0]["role"], 1, "{s}");
    assert!(
        s["forced"][0]["events"].as_u64() < s["forced"][0]["array_events"].as_u64(),
        "{s}"
    );
    // Recorded: no --force needed any more.
    assert_eq!(status(dir, &m)["failed"], serde_json::json!([0]));
    let a = retry_in_use(|| Array::assemble(&paths));
    let mut buf = vec![0u8; BLOCK];
    a.read(0, &mut buf).unwrap();
    assert!(buf == early, "the first write, before both went stale");
    a.read(BLOCK as u64 * 4, &mut buf).unwrap();
    assert!(buf == later, "the second write, on the member forced in");
    drop(a);

    // Members missing entirely cannot be forced in.
    let err = refused(dir, &["assemble", "--force", m[2]]);
    assert!(err.contains("even with --force"), "{err}");
    let o = engine_output(dir, &["assemble", m[2]]);
    assert_eq!(o.status.code(), Some(2));
}

/// Reads the dirty bit (flags bit 0, at byte 76) of member `path`'s superblock on disk.
fn dirty_on_disk(path: &str) -> bool {
    let mut sb = [0u8; 80];
    std::fs::File::open(path)
        .unwrap()
        .read_exact(&mut sb)
        .unwrap();
    u32::from_le_bytes(sb[76..80].try_into().unwrap()) & 1 != 0
}

/// A clean stop while the filesystem under the members is still completely full: the
/// superblocks, dirty on disk while served, are marked clean (they are rewritten in
/// place, no new block needed), the stop says so and exits 0, and the next assembly
/// needs no resync. Were the clean marker not written, the on-disk dirty bit would stay.
#[test]
fn a_clean_stop_on_a_full_filesystem_marks_the_array_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let Some(fs) = Tmpfs::mount(&dir.join("fs"), "6m") else {
        return;
    };
    let paths: Vec<String> = (0..3)
        .map(|i| fs.0.join(format!("m{i}")).display().to_string())
        .collect();
    let m: Vec<&str> = paths.iter().map(String::as_str).collect();
    let mut create = vec!["create", "--level", "5", "--size", "9M", "--sparse"];
    create.extend(&m);
    engine(dir, &create);
    let server = serve_with_env(dir, &m, &[]);
    assert!(
        dirty_on_disk(&paths[0]),
        "served: the superblock says dirty"
    );
    let mut c = Client::connect(server.1);
    let mut i = 0;
    while c.write(i * BLOCK as u64, &block(i, BLOCK)) == 0 {
        i += 1;
    }
    assert!(i >= 4, "only {i} blocks written before ENOSPC");
    fs.fill();
    assert_eq!(
        c.write(i * BLOCK as u64, &block(i, BLOCK)),
        28,
        "still full"
    );
    assert_eq!(c.request(protocol::CMD_FLUSH, 0, 0, &[]).0, 0);
    drop(c);
    let o = Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(&fs.0)
        .output()
        .unwrap();
    let avail = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(avail.lines().nth(1).map(str::trim), Some("0"), "{avail}");
    let stderr = server.stop_with_stderr();
    assert!(stderr.contains("stopped, array clean"), "{stderr}");
    for p in &paths {
        assert!(
            !dirty_on_disk(p),
            "{p}: still dirty after a clean stop: {stderr}"
        );
    }
    let s = status(dir, &m);
    assert_eq!(
        (&s["dirty"], &s["state"]),
        (&serde_json::json!(false), &serde_json::json!("clean")),
        "{s}"
    );
}

/// A stop that cannot resync what a write left half done (the filesystem still full)
/// leaves the array dirty, and says so: exit 1 and "left dirty", not "array clean"
/// with exit 0 while `status` then reports an unclean stop (what it did before).
#[test]
fn a_stop_that_leaves_the_array_dirty_on_a_full_filesystem_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let Some(fs) = Tmpfs::mount(&dir.join("fs"), "6m") else {
        return;
    };
    let paths: Vec<String> = (0..2)
        .map(|i| fs.0.join(format!("m{i}")).display().to_string())
        .collect();
    let m: Vec<&str> = paths.iter().map(String::as_str).collect();
    let mut create = vec!["create", "--level", "1", "--size", "9M", "--sparse"];
    create.extend(&m);
    engine(dir, &create);
    // Writes land in part (no allocation first), as on a filesystem without fallocate.
    let mut server = serve_with_env(dir, &m, &[("RAIDLAB_ENGINE_NO_RESERVE", "1")]);
    let mut c = Client::connect(server.1);
    let mut i = 0;
    while c.write(i * BLOCK as u64, &block(i, BLOCK)) == 0 {
        i += 1;
    }
    fs.fill();
    assert_eq!(c.write((i + 1) * BLOCK as u64, &block(i, BLOCK)), 28);
    drop(c);
    assert!(Command::new("kill")
        .args(["-INT", &server.0.id().to_string()])
        .status()
        .unwrap()
        .success());
    let t0 = std::time::Instant::now();
    let code = loop {
        if let Some(s) = server.0.try_wait().unwrap() {
            break s.code();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no stop within 60 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    let mut pipe = server.0.stderr.take().unwrap();
    pipe.read_to_string(&mut stderr).unwrap();
    let s = status(dir, &m);
    assert_eq!(s["dirty"], true, "{s}");
    assert!(stderr.contains("left dirty"), "{stderr}");
    assert!(!stderr.contains("stopped, array clean\n"), "{stderr}");
    assert_eq!(code, Some(1), "{stderr}");
}

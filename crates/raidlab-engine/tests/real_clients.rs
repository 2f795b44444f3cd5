//! Real NBD clients against `raidlab-engine serve`: qemu-io (Debian package
//! `qemu-utils`) and fio's nbd engine (package `fio`, built with libnbd). Each test
//! skips, saying why, when its tool is missing. The story: write a pattern, stop,
//! pull a member out, serve degraded and read the pattern back, put a new member in,
//! check.

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn engine(dir: &Path, args: &[&str]) -> Output {
    let o = Command::new(env!("CARGO_BIN_EXE_raidlab-engine"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

struct Server(Child, u16);

fn serve(dir: &Path, members: &[&str]) -> Server {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let child = Command::new(env!("CARGO_BIN_EXE_raidlab-engine"))
        .current_dir(dir)
        .args(["serve", "--listen", &listen])
        .args(members)
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while TcpStream::connect(&listen).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "server did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Server(child, port)
}

impl Server {
    fn uri(&self) -> String {
        format!("nbd://127.0.0.1:{}", self.1)
    }
    /// SIGINT: the server flushes and marks the array clean.
    fn stop(mut self) {
        let pid = self.0.id().to_string();
        assert!(Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success());
        assert!(self.0.wait().unwrap().success());
    }
}

fn run(cmd: &mut Command) -> String {
    let o = cmd.output().unwrap();
    let t = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{cmd:?}: {t}");
    t
}

#[test]
fn qemu_io_pattern_survives_a_pulled_member_and_a_replacement() {
    if !have("qemu-io") {
        eprintln!("skipped: qemu-io not installed (apt-get install qemu-utils)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    engine(
        d,
        &[
            "create", "--level", "6", "--chunk", "64K", "--size", "16M", "a", "b", "c", "d", "e",
        ],
    );
    let s = serve(d, &["a", "b", "c", "d", "e"]);
    let t = run(Command::new("qemu-io").args(["-f", "raw", &s.uri()]).args([
        "-c",
        "write -P 0xab 0 1M",
        "-c",
        "write -P 0xcd 3584 8704",
        "-c",
        "read -P 0xab 0 3584",
        "-c",
        "read -P 0xcd 3584 8704",
    ]));
    assert!(!t.contains("Pattern verification failed"), "{t}");
    s.stop();
    engine(d, &["fail", "b", "a", "b", "c", "d", "e"]);
    engine(d, &["fail", "d", "a", "c", "d", "e"]);
    let s = serve(d, &["a", "c", "e"]);
    let t = run(Command::new("qemu-io").args(["-f", "raw", &s.uri()]).args([
        "-c",
        "read -P 0xab 0 3584",
        "-c",
        "read -P 0xcd 3584 8704",
        "-c",
        "read -P 0xab 12288 1036288",
        "-c",
        "write -P 0xef 2M 256K",
    ]));
    assert!(!t.contains("Pattern verification failed"), "{t}");
    s.stop();
    engine(d, &["replace", "b", "f", "a", "c", "e"]);
    engine(d, &["replace", "d", "g", "a", "c", "e", "f"]);
    let t =
        String::from_utf8_lossy(&engine(d, &["check", "a", "f", "c", "g", "e"]).stdout).to_string();
    assert!(t.contains("mismatched 0"), "{t}");
    let s = serve(d, &["a", "f", "c", "g", "e"]);
    let t = run(Command::new("qemu-io").args(["-f", "raw", &s.uri()]).args([
        "-c",
        "read -P 0xab 0 3584",
        "-c",
        "read -P 0xcd 3584 8704",
        "-c",
        "read -P 0xef 2M 256K",
    ]));
    assert!(!t.contains("Pattern verification failed"), "{t}");
    s.stop();
}

#[test]
fn fio_randwrite_verifies_crc32c_on_a_degraded_raid5() {
    let has_nbd = Command::new("fio")
        .arg("--enghelp")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("nbd"));
    if !has_nbd {
        eprintln!("skipped: fio with the nbd engine not installed (apt-get install fio)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    engine(
        d,
        &[
            "create", "--level", "5", "--chunk", "16K", "--size", "24M", "a", "b", "c", "d",
        ],
    );
    engine(d, &["fail", "c", "a", "b", "c", "d"]);
    let s = serve(d, &["a", "b", "d"]);
    // fio leaves its verify state file in its working directory: keep it in the tempdir.
    let t = run(Command::new("fio").current_dir(d).args([
        "--name=verify",
        "--ioengine=nbd",
        &format!("--uri={}", s.uri()),
        "--rw=randwrite",
        "--bssplit=4k/50:16k/30:64k/20",
        "--size=32M",
        "--iodepth=16",
        "--verify=crc32c",
        "--do_verify=1",
        "--verify_fatal=1",
    ]));
    assert!(t.contains("err= 0"), "{t}");
    s.stop();
    engine(d, &["replace", "c", "e", "a", "b", "d"]);
    let t = String::from_utf8_lossy(&engine(d, &["check", "a", "b", "e", "d"]).stdout).to_string();
    assert!(t.contains("mismatched 0"), "{t}");
}

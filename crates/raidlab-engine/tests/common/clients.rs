//! Real NBD clients (qemu-io, fio) against a served array; whether one is installed is
//! [`super::tools::tool`]'s to say.

use super::binary::{output_text, run};
use std::path::Path;
use std::process::{Child, Command};

/// qemu-io on the raw export `uri` running `cmds` (each one `-c`).
fn qemu_io_command(uri: &str, cmds: &[&str]) -> Command {
    let mut c = Command::new("qemu-io");
    c.args(["-f", "raw", uri]);
    for x in cmds {
        c.args(["-c", x]);
    }
    c
}

/// qemu-io commands against a served array, asserting qemu-io exits 0; returns its
/// output (which says `Pattern verification failed` or `failed` when a command did).
pub fn qemu_io(uri: &str, cmds: &[&str]) -> String {
    run(&mut qemu_io_command(uri, cmds))
}

/// qemu-io commands that may fail: whether qemu-io exited 0 and no command reported
/// `failed`, and its output.
pub fn qemu_io_outcome(uri: &str, cmds: &[&str]) -> (bool, String) {
    let o = qemu_io_command(uri, cmds).output().unwrap();
    let t = output_text(&o);
    (o.status.success() && !t.contains("failed"), t)
}

/// qemu-io running `cmds` against `uri` in the background, its output discarded: a
/// stream of writes in flight while a test stops or kills the server.
pub fn qemu_io_in_background(uri: &str, cmds: &[String]) -> Child {
    Command::new("qemu-io")
        .args(["-f", "raw", uri])
        .args(cmds.iter().flat_map(|c| ["-c", c.as_str()]))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// fio's nbd engine in `dir` (where fio keeps its verify state) writing `size` bytes
/// (fio's syntax: `24M`) of the export at `uri` at random, in 4k/16k/64k blocks with
/// `iodepth` in flight, then verifying every block's crc32c; asserts fio exits 0 and
/// returns its output (`err= 0` when no job failed).
pub fn fio_randwrite_verify(dir: &Path, uri: &str, name: &str, size: &str, iodepth: u32) -> String {
    run(Command::new("fio").current_dir(dir).args([
        &format!("--name={name}"),
        "--ioengine=nbd",
        &format!("--uri={uri}"),
        "--rw=randwrite",
        "--bssplit=4k/50:16k/30:64k/20",
        &format!("--size={size}"),
        &format!("--iodepth={iodepth}"),
        "--verify=crc32c",
        "--do_verify=1",
        "--verify_fatal=1",
    ]))
}

//! Members on block devices (loop devices over sparse files): create without `--size`
//! (the device's size counts), serve, write and read back through qemu-io, fail a
//! member, rebuild online onto another device, scrub. Skips, saying why, where loop
//! devices cannot be set up (needs root and /dev/loop-control) or qemu-io is missing.

use crate::common::{engine, engine_stdout, qemu_io, serve, tool};
use std::path::Path;
use std::process::Command;

/// A loop device over a sparse file, detached on drop.
struct Loop(String);

impl Loop {
    fn new(dir: &Path, name: &str, bytes: u64) -> Option<Self> {
        let file = dir.join(name);
        std::fs::File::create(&file).ok()?.set_len(bytes).ok()?;
        let o = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&file)
            .output()
            .ok()?;
        o.status
            .success()
            .then(|| Loop(String::from_utf8_lossy(&o.stdout).trim().to_string()))
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

#[test]
fn raid5_on_loop_devices_serves_fails_and_rebuilds_online() {
    if !tool("qemu-io") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let devices: Option<Vec<Loop>> = (0..5)
        .map(|i| Loop::new(d, &format!("backing{i}"), 17 << 20))
        .collect();
    let Some(devices) = devices else {
        eprintln!("skipped: cannot set up loop devices here (needs root and /dev/loop-control)");
        return;
    };
    let names: Vec<&str> = devices.iter().map(|l| l.0.as_str()).collect();
    let mut create = vec!["create", "--level", "5", "--chunk", "64K"];
    for name in &names[..4] {
        create.extend(["--force-overwrite", name]);
    }
    create.extend(&names[..4]);
    let t = engine_stdout(d, &create);
    // 16 MiB of data per 17 MiB device (1 MiB of metadata): 3 × 16 MiB exported.
    assert!(t.contains(&format!("capacity {} B", 48u64 << 20)), "{t}");
    let s = serve(d, &names[..4]);
    let t = qemu_io(&s.uri(), &["write -P 0x5c 0 40M", "flush"]);
    assert!(!t.contains("failed"), "{t}");
    let mut fail = vec!["fail", names[2]];
    fail.extend(&names[..4]);
    engine(d, &fail);
    let t = qemu_io(&s.uri(), &["read -P 0x5c 0 40M"]);
    assert!(!t.contains("Pattern verification failed"), "degraded: {t}");
    let mut replace = vec!["replace", names[2], names[4]];
    replace.extend(&names[..4]);
    let o = engine(d, &replace);
    assert!(String::from_utf8_lossy(&o.stderr).contains("100%"));
    let mut check = vec!["check", names[0], names[1], names[4], names[3]];
    let t = engine_stdout(d, &check);
    assert!(t.contains("mismatched 0"), "{t}");
    s.stop();
    // Reassembled from the devices alone, the rebuilt one included.
    check[0] = "status";
    let t = engine_stdout(d, &check);
    assert!(t.contains("state clean"), "{t}");
}

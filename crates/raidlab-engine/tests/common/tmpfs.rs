//! A tmpfs mounted on a directory for one test (a small or a full filesystem on
//! demand); unmounted (lazily, so a leftover open file cannot keep it) when dropped,
//! even when the test fails.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Tmpfs(pub PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (mount's syntax, `6m`) on `dir`; `None` (with a message
    /// saying why the test is skipped) when not root or the mount is refused.
    pub fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: mounting a tmpfs needs root");
            return None;
        }
        std::fs::create_dir_all(dir).unwrap();
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .unwrap();
        if !o.status.success() {
            eprintln!(
                "skipped: mount -t tmpfs refused: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            return None;
        }
        Some(Tmpfs(dir.to_path_buf()))
    }

    /// Bytes used on the filesystem.
    pub fn used_bytes(&self) -> u64 {
        let o = Command::new("df")
            .args(["--output=used", "-B1"])
            .arg(&self.0)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&o.stdout).to_string();
        text.lines().nth(1).unwrap().trim().parse().unwrap()
    }

    /// Writes a file until the filesystem is full.
    pub fn fill(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.0.join("filler")).unwrap();
        let chunk = vec![0x5au8; 1 << 20];
        while f.write_all(&chunk).is_ok() {}
        let _ = f.sync_all();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

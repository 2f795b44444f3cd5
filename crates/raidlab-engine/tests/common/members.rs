//! Member files of arrays that tests build through the library.

use std::path::{Path, PathBuf};

/// `n` member paths in `dir`: `{prefix}0`, `{prefix}1`, ...
pub fn member_paths(dir: &Path, prefix: &str, n: usize) -> Vec<PathBuf> {
    (0..n).map(|i| dir.join(format!("{prefix}{i}"))).collect()
}

/// `open` again while it fails only because a member is "in use": a process another
/// test of the same binary spawns (fork, then exec) holds this process's open member
/// files, and their locks, for that moment.
pub fn retry_in_use<T>(mut open: impl FnMut() -> raidlab_engine::Result<T>) -> T {
    for _ in 0..100 {
        match open() {
            Err(e) if e.to_string().contains("in use by") => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            r => return r.unwrap(),
        }
    }
    open().unwrap()
}

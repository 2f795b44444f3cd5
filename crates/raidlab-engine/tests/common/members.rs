//! Member files of arrays that tests build through the library.

use std::path::{Path, PathBuf};

/// `n` member paths in `dir`: `{prefix}0`, `{prefix}1`, ...
pub fn member_paths(dir: &Path, prefix: &str, n: usize) -> Vec<PathBuf> {
    (0..n).map(|i| dir.join(format!("{prefix}{i}"))).collect()
}

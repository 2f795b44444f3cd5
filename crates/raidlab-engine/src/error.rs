//! The engine's error: one line naming what is wrong (and the member file when one is).

use raidlab_layout::{LayoutError, PlanError};
use std::path::{Path, PathBuf};

/// Why an engine operation failed.
#[derive(Debug)]
pub enum Error {
    /// Bad input: an option, a size, a geometry (`field: message`).
    Input(String),
    /// A member was refused (foreign, stale, duplicate, too small, unreadable superblock).
    Member {
        /// The member file or device.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// An I/O error on a member or file that the engine could not absorb.
    Io {
        /// The file or device.
        path: PathBuf,
        /// What was being done.
        op: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// A request the planner refused: bounds, alignment, too many failures.
    Plan(PlanError),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Input(m) => f.write_str(m),
            Self::Member { path, message } => write!(f, "{}: {message}", path.display()),
            Self::Io { path, op, source } => write!(f, "{}: {op}: {source}", path.display()),
            Self::Plan(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {}

impl Error {
    /// Whether this is a member's (or the journal's) filesystem out of space or quota
    /// (`ENOSPC`, `EDQUOT`): not a dead disk, so no member is failed for it, and NBD
    /// answers the client `ENOSPC`.
    pub fn is_no_space(&self) -> bool {
        matches!(self, Self::Io { source, .. } if is_no_space(source))
    }
}

/// The error of I/O operation `op` on the file at `path`, for `map_err`.
pub(crate) fn io_err<'a>(
    path: &'a Path,
    op: &'static str,
) -> impl FnOnce(std::io::Error) -> Error + 'a {
    move |source| Error::Io {
        path: path.to_path_buf(),
        op,
        source,
    }
}

/// A member file at `path` that cannot serve as one, and why.
pub(crate) fn member_err(path: &Path, message: impl Into<String>) -> Error {
    Error::Member {
        path: path.to_path_buf(),
        message: message.into(),
    }
}

/// Whether `e` says the filesystem is full or the quota exhausted (`ENOSPC`, `EDQUOT`).
pub fn is_no_space(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSPC) | Some(libc::EDQUOT))
}

impl From<LayoutError> for Error {
    /// The layout names fields as a scenario does (`copies`, `stripe_unit_bytes`); the
    /// engine's user gave them as `create`'s flags, so the error names the flag.
    fn from(e: LayoutError) -> Self {
        let flag = match e.field {
            "level" => "--level",
            "copies" => "--copies",
            "spans" => "--spans",
            "layout" => "--layout",
            "stripe_unit_bytes" => "--stripe-unit",
            "drive_count" => "MEMBER",
            other => other,
        };
        Self::Input(format!("{flag}: {}", e.message))
    }
}

impl From<PlanError> for Error {
    fn from(e: PlanError) -> Self {
        Self::Plan(e)
    }
}

/// Result of the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

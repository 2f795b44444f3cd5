//! What raidlab metadata a file or device already carries, before anything writes to
//! it: `create`, `replace`, `add-spare` and `attach-cache` refuse a target that holds
//! another array's member, spare, journal, partial parity log or cache unless the
//! command names that very file in `--force-overwrite FILE` ([`Overwrite`]), as mdadm
//! refuses a device with an md superblock. A flag that overwrote every file at once
//! would also overwrite the ones the user did not think of.
//!
//! ```text
//!  offset 0        b"RAIDLAB\x01"  superblock: member (role r) or hot spare of array U
//!                  b"RLJRNL01"     write journal of array U (uuid at 8..24)
//!  offset 4 KiB    b"RLPPL00n"     partial parity log of array U (uuid at 8..24)
//!  offset 1 MiB    b"RLCACHE1"     a cache header: the member is a cache member
//! ```
//!
//! Magic alone is enough to refuse: a torn or half-wiped header is still somebody's.

use super::journal::is_journal_header;
use super::ppl::{is_record_header, PPL_OFFSET_BYTES};
use super::superblock::{Superblock, DATA_OFFSET_BYTES, MAGIC, ROLE_SPARE, SUPERBLOCK_BYTES};
use std::fs::File;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

const CACHE_MAGIC: &[u8; 8] = b"RLCACHE1";

/// Raidlab metadata found on a file or device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// A member superblock.
    Member {
        /// The array it belongs to.
        uuid: u128,
        /// Its role there.
        role: u32,
        /// Whether the array is a cache mirror (its data starts with a cache header).
        cache: bool,
    },
    /// A hot spare's superblock.
    Spare {
        /// The array it belongs to.
        uuid: u128,
    },
    /// The superblock magic, but no valid superblock (torn or damaged).
    DamagedSuperblock,
    /// A write journal header.
    Journal {
        /// The array it belongs to.
        uuid: u128,
    },
    /// A partial parity log without a superblock before it.
    Ppl {
        /// The array it belongs to.
        uuid: u128,
    },
}

impl Found {
    /// The array this metadata belongs to, when it names one.
    pub fn uuid(&self) -> Option<u128> {
        match *self {
            Self::Member { uuid, .. }
            | Self::Spare { uuid }
            | Self::Journal { uuid }
            | Self::Ppl { uuid } => Some(uuid),
            Self::DamagedSuperblock => None,
        }
    }
}

impl std::fmt::Display for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Self::Member {
                uuid,
                role,
                cache: true,
            } => write!(f, "cache member {role} of cache array {uuid:032x}"),
            Self::Member { uuid, role, .. } => write!(f, "member {role} of array {uuid:032x}"),
            Self::Spare { uuid } => write!(f, "a hot spare of array {uuid:032x}"),
            Self::DamagedSuperblock => f.write_str("a damaged raidlab superblock"),
            Self::Journal { uuid } => write!(f, "the write journal of array {uuid:032x}"),
            Self::Ppl { uuid } => write!(f, "a partial parity log of array {uuid:032x}"),
        }
    }
}

/// Bytes of `file` at `offset`, as many of `len` as it holds (a short file, or an
/// unreadable one, gives fewer).
fn bytes_at(file: &File, offset: u64, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    let mut got = 0;
    while got < len {
        match file.read_at(&mut b[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    b.truncate(got);
    b
}

fn uuid_at_8(b: &[u8]) -> u128 {
    u128::from_le_bytes(b[8..24].try_into().expect("16 bytes"))
}

/// What raidlab metadata `file` carries, if any.
pub fn probe(file: &File) -> Option<Found> {
    let head = bytes_at(file, 0, SUPERBLOCK_BYTES);
    if head.len() >= 24 && is_journal_header(&head) {
        return Some(Found::Journal {
            uuid: uuid_at_8(&head),
        });
    }
    if head.len() >= 8 && head[..8] == MAGIC {
        let Ok(image) = <&[u8; SUPERBLOCK_BYTES]>::try_from(head.as_slice()) else {
            return Some(Found::DamagedSuperblock);
        };
        return Some(match Superblock::decode(image) {
            Err(_) => Found::DamagedSuperblock,
            Ok(sb) if sb.role == ROLE_SPARE => Found::Spare {
                uuid: sb.array_uuid,
            },
            Ok(sb) => Found::Member {
                uuid: sb.array_uuid,
                role: sb.role,
                cache: bytes_at(file, DATA_OFFSET_BYTES, 8) == CACHE_MAGIC,
            },
        });
    }
    let ppl = bytes_at(file, PPL_OFFSET_BYTES, 24);
    if ppl.len() == 24 && is_record_header(&ppl) {
        return Some(Found::Ppl {
            uuid: uuid_at_8(&ppl),
        });
    }
    None
}

/// Which files that carry raidlab metadata a command may overwrite all the same.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Overwrite {
    /// None: each is refused, naming it (the default).
    #[default]
    Nothing,
    /// Every file: the library's `force`; the command line always names the files.
    Everything,
    /// These files alone (`--force-overwrite FILE`, repeatable), as given and by
    /// identity, so another path to the same file or device counts as naming it.
    Named(Vec<(PathBuf, Option<FileId>)>),
}

/// A file's identity: its device and inode, and for a block device the device it is
/// (two nodes of one disk are one disk).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    dev: u64,
    ino: u64,
    rdev: Option<u64>,
}

impl FileId {
    fn of(meta: &std::fs::Metadata) -> Self {
        let block = meta.file_type().is_block_device();
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            rdev: block.then(|| meta.rdev()),
        }
    }

    fn same(&self, other: &Self) -> bool {
        (self.dev, self.ino) == (other.dev, other.ino)
            || (self.rdev.is_some() && self.rdev == other.rdev)
    }
}

/// Whether two (path, identity) pairs are one file: the same path, or the same file
/// or device reached by two paths.
fn one_file(a: (&Path, &Option<FileId>), b: (&Path, &Option<FileId>)) -> bool {
    a.0 == b.0 || matches!((a.1, b.1), (Some(x), Some(y)) if x.same(y))
}

impl From<bool> for Overwrite {
    fn from(force: bool) -> Self {
        if force {
            Self::Everything
        } else {
            Self::Nothing
        }
    }
}

impl Overwrite {
    /// `--force-overwrite`'s files (`named`, absolute), each of which must be one of
    /// `files`, the files the command writes (`what`: which ones, for the error): a
    /// name that is none of them would overwrite nothing and hide a typo.
    pub fn named(named: &[PathBuf], files: &[PathBuf], what: &str) -> crate::Result<Self> {
        if named.is_empty() {
            return Ok(Self::Nothing);
        }
        let id = |p: &Path| std::fs::metadata(p).ok().map(|m| FileId::of(&m));
        let ids: Vec<Option<FileId>> = files.iter().map(|p| id(p)).collect();
        let mut out = Vec::new();
        for p in named {
            let mine = id(p);
            let listed = files
                .iter()
                .zip(&ids)
                .any(|(f, fid)| one_file((f, fid), (p, &mine)));
            if !listed {
                return Err(crate::Error::Input(format!(
                    "--force-overwrite: {} is not one of this command's files; name {what} \
                     it would overwrite",
                    p.display()
                )));
            }
            out.push((p.clone(), mine));
        }
        Ok(Self::Named(out))
    }

    /// Whether `file`, opened from `path`, may be overwritten though it carries
    /// raidlab metadata.
    pub fn allows(&self, file: &File, path: &Path) -> bool {
        match self {
            Self::Nothing => false,
            Self::Everything => true,
            Self::Named(named) => {
                let mine = file.metadata().ok().map(|m| FileId::of(&m));
                named.iter().any(|(p, id)| one_file((p, id), (path, &mine)))
            }
        }
    }
}

/// The refusal of `path` that carries `found` as the `what` about to be written: names
/// the file, whose it is, and the exact flag that would overwrite it.
pub fn refusal(path: &Path, found: &Found, what: &str) -> crate::Error {
    crate::Error::Member {
        path: path.to_path_buf(),
        message: format!(
            "carries {found}; refusing to overwrite it as {what} (give --force-overwrite {} \
             to overwrite it)",
            path.display()
        ),
    }
}

/// Refuses `file` (opened from `path`) as the `what` about to be written (a member,
/// the journal, a spare, a replacement) when it carries raidlab metadata and
/// `overwrite` does not name it; the error names the file, whose it is, and the flag.
pub fn refuse_foreign(
    file: &File,
    path: &Path,
    what: &str,
    overwrite: &Overwrite,
) -> crate::Result<()> {
    match probe(file) {
        Some(found) if !overwrite.allows(file, path) => Err(refusal(path, &found, what)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn finds_each_kind_of_header_and_nothing_on_a_plain_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let mut f = File::create(&path).unwrap();
        f.write_all(&[7u8; 8192]).unwrap();
        let f = File::open(&path).unwrap();
        assert_eq!(probe(&f), None);
        let mut j = vec![0u8; 64];
        j[..8].copy_from_slice(b"RLJRNL01");
        j[8..24].copy_from_slice(&5u128.to_le_bytes());
        std::fs::write(&path, &j).unwrap();
        let f = File::open(&path).unwrap();
        assert_eq!(probe(&f), Some(Found::Journal { uuid: 5 }));
        let e = refuse_foreign(&f, &path, "the journal", &Overwrite::Nothing)
            .unwrap_err()
            .to_string();
        let flag = format!("--force-overwrite {}", path.display());
        assert!(
            e.contains("write journal of array") && e.contains(&flag),
            "{e}"
        );
        refuse_foreign(&f, &path, "the journal", &Overwrite::Everything).unwrap();
        // Named: this file by another path counts; another file does not.
        let other = dir.path().join("g");
        std::fs::write(&other, b"x").unwrap();
        let files = [path.clone(), other.clone()];
        let alias = dir.path().join(".").join("f");
        let this = Overwrite::named(std::slice::from_ref(&alias), &files, "a file").unwrap();
        refuse_foreign(&f, &path, "the journal", &this).unwrap();
        let that = Overwrite::named(std::slice::from_ref(&other), &files, "a file").unwrap();
        refuse_foreign(&f, &path, "the journal", &that).unwrap_err();
        let e = Overwrite::named(&[dir.path().join("h")], &files, "a file").unwrap_err();
        assert!(e.to_string().starts_with("--force-overwrite: "), "{e}");
        // Either record format of the log (the first, and the compact one written now).
        for magic in [b"RLPPL001", b"RLPPL002"] {
            let mut p = vec![0u8; 4096 + 24];
            p[4096..4104].copy_from_slice(magic);
            std::fs::write(&path, &p).unwrap();
            let f = File::open(&path).unwrap();
            assert_eq!(probe(&f), Some(Found::Ppl { uuid: 0 }));
        }
        std::fs::write(&path, MAGIC).unwrap();
        let f = File::open(&path).unwrap();
        assert_eq!(probe(&f), Some(Found::DamagedSuperblock));
    }
}

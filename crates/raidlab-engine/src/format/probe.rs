//! What raidlab metadata a file or device already carries, before anything writes to
//! it: `create`, `replace`, `add-spare` and `attach-cache` refuse a target that holds
//! another array's member, spare, journal, partial parity log or cache (unless told
//! `--force`), as mdadm refuses a device with an md superblock.
//!
//! ```text
//!  offset 0        b"RAIDLAB\x01"  superblock: member (role r) or hot spare of array U
//!                  b"RLJRNL01"     write journal of array U (uuid at 8..24)
//!  offset 4 KiB    b"RLPPL001"     partial parity log of array U (uuid at 8..24)
//!  offset 1 MiB    b"RLCACHE1"     a cache header: the member is a cache member
//! ```
//!
//! Magic alone is enough to refuse: a torn or half-wiped header is still somebody's.

use super::superblock::{Superblock, DATA_OFFSET_BYTES, MAGIC, ROLE_SPARE, SUPERBLOCK_BYTES};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

const JOURNAL_MAGIC: &[u8; 8] = b"RLJRNL01";
const PPL_MAGIC: &[u8; 8] = b"RLPPL001";
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
    if head.len() >= 24 && head[..8] == *JOURNAL_MAGIC {
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
    let ppl = bytes_at(file, SUPERBLOCK_BYTES as u64, 24);
    if ppl.len() == 24 && ppl[..8] == *PPL_MAGIC {
        return Some(Found::Ppl {
            uuid: uuid_at_8(&ppl),
        });
    }
    None
}

/// Refuses `file` (opened from `path`) as the `what` about to be written (a member,
/// the journal, a spare, a replacement) when it carries raidlab metadata and `force`
/// is not given; the error names the file, whose it is, and the flag.
pub fn refuse_foreign(file: &File, path: &Path, what: &str, force: bool) -> crate::Result<()> {
    match probe(file) {
        Some(found) if !force => Err(crate::Error::Member {
            path: path.to_path_buf(),
            message: format!(
                "carries {found}; refusing to overwrite it as {what} (give --force to \
                 overwrite it)"
            ),
        }),
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
        j[..8].copy_from_slice(JOURNAL_MAGIC);
        j[8..24].copy_from_slice(&5u128.to_le_bytes());
        std::fs::write(&path, &j).unwrap();
        let f = File::open(&path).unwrap();
        assert_eq!(probe(&f), Some(Found::Journal { uuid: 5 }));
        let e = refuse_foreign(&f, &path, "the journal", false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("write journal of array") && e.contains("--force"),
            "{e}"
        );
        refuse_foreign(&f, &path, "the journal", true).unwrap();
        let mut p = vec![0u8; 4096 + 24];
        p[4096..4104].copy_from_slice(PPL_MAGIC);
        std::fs::write(&path, &p).unwrap();
        let f = File::open(&path).unwrap();
        assert_eq!(probe(&f), Some(Found::Ppl { uuid: 0 }));
        std::fs::write(&path, MAGIC).unwrap();
        let f = File::open(&path).unwrap();
        assert_eq!(probe(&f), Some(Found::DamagedSuperblock));
    }
}

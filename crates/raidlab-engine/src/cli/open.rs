//! Opening the array a command names: member paths made absolute (a server keeps them
//! and clients name members to it), the members assembled with their journal and the
//! cache check, and what an unclean stop left put right. Shared by the one-shot
//! commands and `serve`.

use super::flags::Members;
use crate::{Array, Error, Result};
use std::path::PathBuf;

/// The array of `members` (already absolute), with its journal if given, refused
/// unless `--cache-members` names the cache its superblocks record, or none when they
/// record none (see [`crate::cache::check_members`]): the members of a cached array
/// alone may miss its newest data.
pub(super) fn assemble(members: &[PathBuf], given: &Members) -> Result<Array> {
    let array = Array::assemble_with(members, given.journal.as_deref())?;
    let cache = given.cache_members.as_deref().map(absolute).transpose()?;
    crate::cache::check_members(&array, cache.as_deref())?;
    Ok(array)
}

/// Absolute member paths: a server keeps them, and clients name members to it.
pub(super) fn absolute(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    paths
        .iter()
        .map(|p| std::path::absolute(p).map_err(|e| Error::Input(format!("{}: {e}", p.display()))))
        .collect()
}

/// Replays the write journal and resyncs the dirty bitmap regions an unclean stop left.
pub(super) fn recover_unclean_stop(array: &Array) -> Result<()> {
    let replayed = array.status().journal_replayed;
    if replayed > 0 {
        eprintln!("raidlab-engine: unclean stop: replayed {replayed} journal records");
    }
    let recomputed = array.status().ppl_recovered;
    if recomputed > 0 {
        eprintln!(
            "raidlab-engine: unclean stop: recomputed {recomputed} stripe parities from the \
             partial parity log"
        );
    }
    if let Some((regions, r)) = array.resync_dirty_regions()? {
        eprintln!(
            "raidlab-engine: unclean stop: resynced {regions} dirty bitmap regions \
             ({} stripes checked, {} rewritten)",
            r.stripes_checked, r.repaired_stripes
        );
    }
    Ok(())
}

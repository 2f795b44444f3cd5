//! One function per subcommand (but `serve`, in [`super::serve`]). Arguments arrive
//! parsed and checked; each body asks the array's server first when one runs (its
//! control socket), else assembles the members itself, which takes the exclusive claim
//! on each: while a server holds them (its socket in another directory, say) that is
//! refused naming its pid, never done behind its back. Each returns the exit code.

use super::flags::{
    AddSpareArgs, ArrayArgs, AttachCacheArgs, CreateArgs, DetachCacheArgs, FailArgs, InjectArgs,
    ReplaceArgs, ReplaceCacheArgs, StatusArgs,
};
use super::open::{absolute, assemble, recover_unclean_stop};
use super::parse::{self, Injection, ServedFault};
use super::render;
use crate::cache::CachedArray;
use crate::format::probe::Overwrite;
use crate::net::control;
use crate::{Array, Error, Result};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `create`: refused while the members are served.
pub fn create(a: &CreateArgs) -> Result<i32> {
    let mut opts = parse::create_options(a)?;
    opts.sparse = a.sparse;
    opts.spares = absolute(&a.spares)?;
    let members = absolute(&a.array.members)?;
    if ask_server(&members, json!({"cmd": "status"}), None, |_| {})?.is_some() {
        return Err(Error::Input(
            "MEMBER: these members are being served; stop the server first".into(),
        ));
    }
    let cache = cache_options(a)?;
    opts.force = overwrite_in_create(a, &members, &opts, &cache)?;
    // Every file this command is about to create: removed again if it fails, so a
    // refused `create` leaves nothing behind (files that existed are left as they are).
    let cache_paths = cache.as_ref().map_or(&[][..], |(p, _)| p.as_slice());
    let new_files: Vec<PathBuf> = members
        .iter()
        .chain(&opts.spares)
        .chain(opts.journal.as_ref())
        .chain(cache_paths)
        .filter(|p| std::fs::symlink_metadata(p).is_err())
        .cloned()
        .collect();
    let made = create_with_cache(a, &members, &opts, cache);
    if made.is_err() {
        for p in &new_files {
            let _ = std::fs::remove_file(p);
        }
    }
    render::report(a.json, &made?, render::status);
    Ok(0)
}

/// The array of `create`, and its cache when asked for; its status report.
fn create_with_cache(
    a: &CreateArgs,
    members: &[PathBuf],
    opts: &crate::CreateOptions,
    cache: Option<(Vec<PathBuf>, raidlab_cache::Policy)>,
) -> Result<Value> {
    let array = Array::create(members, opts)?;
    let mut s = control::status_json(&array.status());
    if let Some((paths, policy)) = cache {
        let tier = CachedArray::create_files(
            Arc::new(array),
            &paths,
            a.cache_size,
            policy,
            a.cache_region,
            opts.force.clone(),
            a.sparse,
        )?;
        s["cache"] = tier.stats_json();
        tier.close()?;
    }
    Ok(s)
}

/// `--force-overwrite` of `create`: each file it names must be one `create` writes (a
/// member, spare, journal or cache member).
fn overwrite_in_create(
    a: &CreateArgs,
    members: &[PathBuf],
    opts: &crate::CreateOptions,
    cache: &Option<(Vec<PathBuf>, raidlab_cache::Policy)>,
) -> Result<Overwrite> {
    let journal = absolute(opts.journal.as_slice())?;
    let cache_paths = cache.as_ref().map_or(&[][..], |(p, _)| p.as_slice());
    let files: Vec<PathBuf> = [members, &opts.spares, &journal, cache_paths].concat();
    Overwrite::named(
        &absolute(&a.force_overwrite)?,
        &files,
        "a member, spare, journal or cache member",
    )
}

/// `attach-cache`: an empty cache in front of an array no server holds.
pub fn attach_cache(a: &AttachCacheArgs) -> Result<i32> {
    let members = absolute(&a.array.members)?;
    let Some(paths) = &a.array.cache_members else {
        return Err(Error::Input(
            "--cache-members: needed: the new cache's members, SSD,SSD".into(),
        ));
    };
    let paths = absolute(paths)?;
    crate::cache::store::mirror_level(paths.len())?;
    let overwrite = Overwrite::named(
        &absolute(&a.force_overwrite)?,
        &paths,
        "a cache member (--cache-members)",
    )?;
    if let Some(p) = paths.iter().find(|p| members.contains(p)) {
        return Err(Error::Input(format!(
            "--cache-members: {} is a member of the array too",
            p.display()
        )));
    }
    if ask_server(&members, json!({"cmd": "status"}), None, |_| {})?.is_some() {
        return Err(Error::Input(
            "MEMBER: these members are being served; stop the server first".into(),
        ));
    }
    // Not `assemble`: these cache members are the new cache's, which the superblocks
    // do not record yet (`CachedArray::create` refuses an array that has a cache).
    let array = Array::assemble_with(&members, a.array.journal.as_deref())?;
    let tier = CachedArray::create(
        Arc::new(array),
        &paths,
        a.cache_size,
        a.cache_policy.unwrap_or(raidlab_cache::Policy::Raidix),
        a.cache_region,
        overwrite,
    )?;
    let mut s = control::status_json(&tier.backing().status());
    s["cache"] = tier.stats_json();
    tier.close()?;
    render::report(a.json, &s, render::status);
    Ok(0)
}

/// `detach-cache`: every dirty line of the array's cache (`--cache-members`) goes to
/// the array, then the superblocks forget the cache; the array is then used alone.
pub fn detach_cache(args: &DetachCacheArgs) -> Result<i32> {
    let a = &args.array_args;
    let members = absolute(&a.array.members)?;
    let Some(paths) = &a.array.cache_members else {
        return Err(Error::Input(
            "--cache-members: needed: the members of the array's cache, SSD,SSD".into(),
        ));
    };
    let paths = absolute(paths)?;
    if ask_server(&members, json!({"cmd": "status"}), None, |_| {})?.is_some() {
        return Err(Error::Input(
            "MEMBER: these members are being served; stop the server first".into(),
        ));
    }
    let array = Arc::new(if args.adopt {
        Array::assemble_with(&members, a.array.journal.as_deref())?
    } else {
        assemble(&members, &a.array)?
    });
    // Destages are writes: parity left stale by an unclean stop is made right first.
    recover_unclean_stop(&array)?;
    let tier = if args.adopt {
        CachedArray::adopt(array.clone(), &paths)?
    } else {
        CachedArray::open(array.clone(), &paths)?
    };
    let cache = tier.with_mirror(|m| m.status().uuid);
    let destaged = tier.detach()?;
    array.close()?;
    eprintln!(
        "raidlab-engine: detach-cache: {destaged} B destaged; cache {cache:032x} detached, \
         the array is used alone from now on"
    );
    let mut s = control::status_json(&array.status());
    s["detached_cache_uuid"] = json!(format!("{cache:032x}"));
    s["destaged_bytes"] = json!(destaged);
    render::report(a.json, &s, render::status);
    Ok(0)
}

/// `replace-cache`: the array assembled with its surviving cache members; the lost
/// member of the cache mirror rebuilt onto NEW. Refused while served (the server holds
/// the cache). A NEW this command created is removed again when it fails untouched.
pub fn replace_cache(args: &ReplaceCacheArgs) -> Result<i32> {
    let a = &args.array_args;
    let members = absolute(&a.array.members)?;
    let Some(paths) = &a.array.cache_members else {
        return Err(Error::Input(
            "--cache-members: needed: the surviving members of the array's cache".into(),
        ));
    };
    let paths = absolute(paths)?;
    let new = absolute(std::slice::from_ref(&args.new))?.remove(0);
    if ask_server(&members, json!({"cmd": "status"}), None, |_| {})?.is_some() {
        return Err(Error::Input(
            "MEMBER: these members are being served; stop the server first".into(),
        ));
    }
    let created = std::fs::symlink_metadata(&new).is_err();
    let done = (|| {
        // NEW is checked before the cache is opened: a refusal writes nothing anywhere.
        let file = crate::array::open_member_file(&new, true)?;
        crate::cache::refuse_carrying_raidlab_data(&file, &new)?;
        let array = Arc::new(assemble(&members, &a.array)?);
        let tier = CachedArray::open(array.clone(), &paths)?;
        let role = tier.replace_member(file, &new, render::progress_printer())?;
        let mut s = control::status_json(&array.status());
        s["cache"] = tier.stats_json();
        tier.close()?;
        array.close()?;
        eprintln!(
            "raidlab-engine: replace-cache: cache member {role} rebuilt onto {}",
            new.display()
        );
        Ok::<_, Error>(s)
    })();
    let untouched = || std::fs::metadata(&new).is_ok_and(|m| m.is_file() && m.len() == 0);
    if done.is_err() && created && untouched() {
        let _ = std::fs::remove_file(&new);
    }
    render::report(a.json, &done?, render::status);
    Ok(0)
}

/// The cache members and policy `create` was given, checked: the cache flags need
/// `--cache-members`, which must not name an array member.
fn cache_options(a: &CreateArgs) -> Result<Option<(Vec<PathBuf>, raidlab_cache::Policy)>> {
    let Some(paths) = &a.array.cache_members else {
        for (given, flag) in [
            (a.cache_policy.is_some(), "--cache-policy"),
            (a.cache_size.is_some(), "--cache-size"),
            (a.cache_region.is_some(), "--cache-region"),
        ] {
            if given {
                return Err(Error::Input(format!(
                    "{flag}: needs --cache-members SSD,SSD"
                )));
            }
        }
        return Ok(None);
    };
    let paths = absolute(paths)?;
    crate::cache::store::mirror_level(paths.len())?;
    let members = absolute(&a.array.members)?;
    if let Some(p) = paths.iter().find(|p| members.contains(p)) {
        return Err(Error::Input(format!(
            "--cache-members: {} is a member of the array too",
            p.display()
        )));
    }
    Ok(Some((
        paths,
        a.cache_policy.unwrap_or(raidlab_cache::Policy::Raidix),
    )))
}

/// `status` (alias `assemble`); with `--force`, stale members may be forced in (said
/// on stderr, member by member, with the advice to run `check`; listed under `forced`
/// in the report).
pub fn status(args: &StatusArgs) -> Result<i32> {
    let a = &args.array_args;
    let members = absolute(&a.array.members)?;
    let s = match ask_server(&members, json!({"cmd": "status"}), None, |_| {})? {
        Some(s) => s,
        None => {
            let array = Array::assemble_forced(&members, a.array.journal.as_deref(), args.force)?;
            for f in array.forced() {
                eprintln!(
                    "raidlab-engine: assemble --force: member {} ({}) forced in at event {} \
                     (the array was at {}): its data may miss writes made since",
                    f.role,
                    f.path.display(),
                    f.events,
                    f.array_events
                );
            }
            if !array.forced().is_empty() {
                eprintln!(
                    "raidlab-engine: assemble --force: recorded in sync; run `raidlab-engine check` \
                     on these members (then `repair` where it reports mismatches)"
                );
            }
            let mut report = control::status_json(&array.status());
            if args.force {
                report["forced"] = array
                    .forced()
                    .iter()
                    .map(|f| {
                        json!({
                            "role": f.role, "path": f.path.display().to_string(),
                            "events": f.events, "array_events": f.array_events,
                        })
                    })
                    .collect();
            }
            match &a.array.cache_members {
                Some(paths) => {
                    let tier = CachedArray::open(Arc::new(array), &absolute(paths)?)?;
                    report["cache"] = tier.stats_json();
                    tier.close()?;
                }
                // A cached array without its cache: its members alone may not hold
                // the newest data, so nothing is reported as if they did.
                None => crate::cache::check_members(&array, None)?,
            }
            report
        }
    };
    render::report(a.json, &s, render::status);
    Ok(0)
}

/// `fail TARGET`.
pub fn fail(a: &FailArgs) -> Result<i32> {
    let target = target_arg(&a.target);
    let members = absolute(&a.array.members)?;
    let req = json!({"cmd": "fail", "target": target});
    let s = match ask_server(&members, req, None, |_| {})? {
        Some(s) => s,
        None => {
            let array = assemble(&members, &a.array)?;
            array.fail_member(array.role_of(&target)?)?;
            control::status_json(&array.status())
        }
    };
    render::report(a.json, &s, render::status);
    Ok(0)
}

/// `replace OLD NEW`: online in the server when one runs, else offline here. NEW is
/// opened here, with this user's rights, and a server gets the open descriptor. A NEW
/// file this command created is removed again when it is refused before the rebuild
/// wrote to it (OLD no member, say): a refused command leaves nothing behind, while a
/// rebuild that stopped midway keeps its file to resume.
pub fn replace(a: &ReplaceArgs) -> Result<i32> {
    let old = target_arg(&a.old);
    let new = absolute(std::slice::from_ref(&a.new))?.remove(0);
    refuse_member_as_new(&old, &new, &absolute(&a.array.members)?)?;
    let created = std::fs::symlink_metadata(&new).is_err();
    let done = replace_onto(a, &old, &new);
    let untouched = || std::fs::metadata(&new).is_ok_and(|m| m.is_file() && m.len() == 0);
    if done.is_err() && created && untouched() {
        let _ = std::fs::remove_file(&new);
    }
    done
}

fn replace_onto(a: &ReplaceArgs, old: &str, new: &Path) -> Result<i32> {
    let new_file = crate::array::open_member_file(new, true)?;
    let members: Vec<PathBuf> = absolute(&a.array.members)?
        .into_iter()
        .filter(|p| p.as_os_str() != old)
        .collect();
    // NEW's space is allocated before OLD is failed, but after what can be checked
    // without touching it (offline: the role of OLD), so a refusal changes no file.
    let overwrite = Overwrite::named(
        &absolute(&a.force_overwrite)?,
        &[new.to_path_buf()],
        "NEW, the file",
    )?;
    let need = check_new(&new_file, new, &members, &overwrite)?;
    let allocate = || match need {
        Some(bytes) => crate::array::prepare_replacement(&new_file, new, bytes),
        None => Ok(()),
    };
    let mut print = render::progress_printer();
    let req = json!({
        "cmd": "replace", "old": old, "new": new.display().to_string(),
        "rate": a.rate, "wait": !a.no_wait,
    });
    if served(&members)? {
        allocate()?;
    }
    let remote = ask_server(&members, req, Some(&new_file), |p| {
        print(
            p["role"].as_u64().unwrap_or(0) as u32,
            p["done_bytes"].as_u64().unwrap_or(0),
            p["total_bytes"].as_u64().unwrap_or(0),
        )
    })?;
    let s = match remote {
        Some(s) => s,
        None if a.no_wait => {
            return Err(Error::Input(
                "--no-wait: only for an array being served (the rebuild runs in the server)".into(),
            ))
        }
        None => {
            let array = assemble(&members, &a.array)?;
            let role = array.role_of(old)?;
            allocate()?;
            if !array.failed().contains(role) {
                array.fail_member(role)?;
            }
            array.rebuild_onto(role, new_file, new, a.rate, |done, total| {
                print(role, done, total)
            })?;
            control::status_json(&array.status())
        }
    };
    render::report(a.json, &s, render::status);
    Ok(0)
}

/// Checks NEW (`file`, opened from `new`) before the array changes at all: claimed (a
/// file another array holds, its live journal included, is refused naming the holder),
/// refused when it carries raidlab metadata (another array's member, spare, journal or
/// cache: unless `overwrite` names it; this array's journal or cache: always). A member of this same
/// array that it no longer uses may come back (md's re-add). Returns the bytes a member
/// of the array needs, for [`crate::array::prepare_replacement`], when known.
fn check_new(
    file: &std::fs::File,
    new: &Path,
    members: &[PathBuf],
    overwrite: &Overwrite,
) -> Result<Option<u64>> {
    use crate::format::probe::{probe, Found};
    crate::array::claim(file, new)?;
    let Some(sb) = members
        .iter()
        .find_map(|m| crate::array::read_superblock(m).ok())
    else {
        return Ok(None); // no array to replace into: assembling says why
    };
    let own = match probe(file) {
        None => None,
        Some(Found::Journal { uuid }) if uuid == sb.array_uuid => Some("the array's write journal"),
        Some(Found::Member { uuid, .. }) if Some(uuid) == sb.cache_uuid => {
            Some("a member of the array's cache")
        }
        Some(Found::Member { uuid, .. } | Found::Spare { uuid }) if uuid == sb.array_uuid => None,
        Some(found) if !overwrite.allows(file, new) => {
            return Err(crate::format::probe::refusal(new, &found, "the new member"))
        }
        Some(_) => None,
    };
    if let Some(what) = own {
        return Err(Error::Input(format!(
            "NEW: {} is {what}; a member is rebuilt onto a file or device of its own, \
             nothing was changed",
            new.display()
        )));
    }
    Ok(Some(
        crate::format::superblock::DATA_OFFSET_BYTES + sb.spec.member_capacity_bytes,
    ))
}

/// Whether a server answers for the array of `members` (a status request, no change).
fn served(members: &[PathBuf]) -> Result<bool> {
    Ok(ask_server(members, json!({"cmd": "status"}), None, |_| {})?.is_some())
}

/// NEW must be another file or device than every member, OLD included: a rebuild reads
/// the members to write NEW, so onto a member's own file it would overwrite the data it
/// reads (a healthy member "rebuilt" onto itself, or a second member destroyed). Files
/// are compared by device and inode, so another path to the same file is caught too.
fn refuse_member_as_new(old: &str, new: &Path, members: &[PathBuf]) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let Ok(target) = std::fs::metadata(new) else {
        return Ok(()); // a file that does not exist yet is no member
    };
    let old_path = Path::new(old);
    let candidates = members.iter().map(PathBuf::as_path).chain(Some(old_path));
    for member in candidates {
        let same = std::fs::metadata(member)
            .is_ok_and(|m| m.dev() == target.dev() && m.ino() == target.ino());
        if same {
            return Err(Error::Input(format!(
                "NEW: {} is the array member {}; a member is rebuilt onto another file or \
                 device (the rebuild reads the members to write it), nothing was changed",
                new.display(),
                member.display()
            )));
        }
    }
    Ok(())
}

/// `add-spare SPARE`: online in the server when one runs (SPARE opened here, with this
/// user's rights; the server gets the open descriptor), else offline here.
pub fn add_spare(a: &AddSpareArgs) -> Result<i32> {
    let spare = absolute(std::slice::from_ref(&a.spare))?.remove(0);
    if !spare.exists() {
        return Err(Error::Input(format!(
            "SPARE: {} does not exist; a spare is a file or device that holds a whole member",
            spare.display()
        )));
    }
    let file = crate::array::open_member_file(&spare, false)?;
    let members = absolute(&a.array.members)?;
    let req = json!({"cmd": "add-spare", "spare": spare.display().to_string()});
    let s = match ask_server(&members, req, Some(&file), |_| {})? {
        Some(s) => s,
        None => {
            let array = assemble(&members, &a.array)?;
            array.add_spare(file, &spare)?;
            control::status_json(&array.status())
        }
    };
    render::report(a.json, &s, render::status);
    Ok(0)
}

/// `check` (`repair` false: exit code 1 when stripes mismatch) and `repair` (exit code
/// 1 when it left stripes unresolved).
pub fn scrub(a: &ArrayArgs, repair: bool) -> Result<i32> {
    let cmd = if repair { "repair" } else { "check" };
    let members = absolute(&a.array.members)?;
    let r = match ask_server(&members, json!({ "cmd": cmd }), None, |_| {})? {
        Some(r) => r,
        None => {
            let array = assemble(&members, &a.array)?;
            let r = array.scrub(repair)?;
            if repair {
                array.close()?;
            }
            control::scrub_json(&r)
        }
    };
    render::report(a.json, &r, render::scrub);
    let mismatched = r["mismatched_stripes"].as_u64() != Some(0);
    let unresolved = r["unresolved_stripes"].as_u64().unwrap_or(0) > 0;
    // Blocks that failed their checksum: corruption found, even if it was corrected.
    let corrupt = (r["checksum_mismatches"].as_array().into_iter().flatten())
        .any(|n| n.as_u64().unwrap_or(0) > 0);
    Ok(if (!repair && (mismatched || corrupt)) || unresolved {
        1
    } else {
        0
    })
}

/// `inject`: bits flipped on the member itself, or a fault sent to its server.
pub fn inject(a: &InjectArgs) -> Result<i32> {
    match parse::injection(a)? {
        Injection::Flip {
            member,
            offset_bytes,
            mask,
        } => {
            crate::array::inject(&member, offset_bytes, mask)?;
            Ok(0)
        }
        Injection::Served { member, fault } => {
            let member = absolute(&[member])?;
            let req = fault_request(&member[0], fault);
            let s = ask_server(&member, req, None, |_| {})?.ok_or_else(|| {
                Error::Input(format!(
                    "inject --{}: {} is not a member of a served array (these faults live in the server)",
                    fault.kind(),
                    member[0].display()
                ))
            })?;
            render::report(a.json, &s, render::status);
            Ok(0)
        }
    }
}

/// The control socket's request for `fault` on `member`.
fn fault_request(member: &Path, fault: ServedFault) -> Value {
    let mut req = json!({
        "cmd": "inject", "target": member.display().to_string(), "kind": fault.kind(),
    });
    match fault {
        ServedFault::ReadError(r) | ServedFault::BadSector(r) | ServedFault::WriteError(r) => {
            req["offset_bytes"] = json!(r.offset_bytes);
            req["len_bytes"] = json!(r.len_bytes);
        }
        ServedFault::Latency { delay_us } => req["delay_us"] = json!(delay_us),
        ServedFault::Clear => {}
    }
    req
}

/// A path argument made absolute (the server matches it against the absolute member
/// paths it was given), unless it is a role index naming no file.
fn target_arg(t: &str) -> String {
    let p = Path::new(t);
    if !p.exists() && t.parse::<u32>().is_ok() {
        return t.to_string();
    }
    std::path::absolute(p).map_or(t.to_string(), |a| a.display().to_string())
}

/// Asks the server of the array these members belong to, if one is running; `member`
/// goes with the request as an open descriptor (`replace`'s new member). A target named
/// by a path gets the role its superblock records, read here: the server opens no path
/// a client names.
fn ask_server(
    members: &[PathBuf],
    mut req: Value,
    member: Option<&std::fs::File>,
    progress: impl FnMut(&Value),
) -> Result<Option<Value>> {
    let Some(uuid) = members
        .iter()
        .find_map(|m| crate::array::read_superblock(m).ok())
        .map(|sb| sb.array_uuid)
    else {
        return Ok(None);
    };
    let named = ["target", "old"]
        .into_iter()
        .find_map(|f| req.get(f).and_then(Value::as_str).map(PathBuf::from));
    if let Some(sb) = named.and_then(|p| crate::array::read_superblock(&p).ok()) {
        if sb.array_uuid == uuid {
            req["role"] = json!(sb.role);
        }
    }
    control::request(uuid, &req, member, progress)
}

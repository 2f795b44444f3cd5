//! Definitions of every subcommand and flag: names, defaults, help and the parser of
//! each value (in [`super::values`]). Nothing here runs a command.
//!
//! A flag given twice keeps its last value (`args_override_self`), as the hand parser
//! this replaced did and as most Unix tools do.
//!
//! These definitions are the one declaration of the engine's flags: [`table_json`]
//! exports them (names, aliases, defaults, help) for the Python front end, which builds
//! its `raidlab create/serve/...` commands and its client from that table.

use super::values::{self, ByteRange};
use crate::format::superblock::{ConsistencyPolicy, Integrity};
use crate::net::nbd::server as nbd;
use clap::{ArgAction, Args, CommandFactory, Parser, Subcommand};
use raidlab_layout::{Layout, Level};
use std::path::PathBuf;

/// What `--help` prints after the list of commands.
const AFTER_HELP: &str = "\
While serve runs, status/fail/replace/add-spare/check/repair/inject on its members go to the
server (control socket $XDG_RUNTIME_DIR/raidlab/<uuid>.sock, else
$TMPDIR/raidlab-<uid>/<uuid>.sock; only its uid and root may use it): replace then
rebuilds online, onto NEW opened by the client. Each member has one owner: a command
on members another process holds is refused, naming its pid.
An array created with --journal needs --journal PATH wherever it is assembled, and
one with a cache (create --cache-members, attach-cache) needs its --cache-members
wherever it is assembled here, until detach-cache; commands refuse it otherwise.
Bad input: one line `error: FIELD: what is allowed` on stderr, exit code 2.";

/// The whole command line.
#[derive(Debug, Parser)]
#[command(
    name = "raidlab-engine",
    version,
    about = "Create, assemble, serve over NBD, fail, replace, scrub and fault-inject RAID \
             arrays on member files or block devices.",
    after_help = AFTER_HELP,
    subcommand_required = true
)]
pub struct Cli {
    /// The subcommand and its arguments.
    #[command(subcommand)]
    pub command: Command,
}

/// One subcommand each.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create an array on member files or devices.
    ///
    /// Writes a superblock on every member (files are created or extended to --size
    /// and preallocated unless --sparse) and resyncs parity unless every member is new.
    #[command(args_override_self = true)]
    Create(CreateArgs),
    /// Assemble the members (any order) and show the array's state.
    ///
    /// --force (mdadm's): when more members are stale or failed than the level
    /// tolerates, put the freshest back in, say which, and record them in sync; run
    /// check after it.
    #[command(alias = "assemble", args_override_self = true)]
    Status(StatusArgs),
    /// Export the array over NBD until SIGINT or SIGTERM, then flush and mark it clean.
    #[command(args_override_self = true)]
    Serve(ServeArgs),
    /// Mark a member failed; the array goes on degraded.
    #[command(args_override_self = true)]
    Fail(FailArgs),
    /// Rebuild a failed (or working) member onto a new file or device.
    #[command(args_override_self = true)]
    Replace(ReplaceArgs),
    /// Add a hot spare: a member with no role that takes a failed member's place.
    ///
    /// Online when the array is served (a degraded array starts rebuilding onto it at
    /// once), else written into the superblocks here. SPARE must hold a whole member and
    /// carry no raidlab superblock.
    #[command(args_override_self = true)]
    AddSpare(AddSpareArgs),
    /// Read every stripe and compare parity and copies; exit code 1 when any mismatch.
    #[command(args_override_self = true)]
    Check(ArrayArgs),
    /// Read every stripe and rewrite the block found bad where it can be told (RAID 6
    /// from P and Q, three or more copies by majority, any level by its checksums with
    /// --integrity); exit code 1 when stripes stay unresolved (RAID 4/5/50, two copies,
    /// without checksums), which are named.
    #[command(args_override_self = true)]
    Repair(ArrayArgs),
    /// Corrupt a member's data byte, or inject a fault into a served array.
    ///
    /// MEMBER OFFSET [--mask] flips bits on the member itself, served or not. MEMBER and
    /// one of --read-error, --bad-sector, --write-error, --latency or --clear go to the
    /// server of a served array. A bad sector reads EIO until written, and the array
    /// rewrites it from the others, as md does.
    #[command(args_override_self = true)]
    Inject(InjectArgs),
    /// Put a new SSD cache (--cache-members) in front of an existing array.
    ///
    /// The cache members become a mirror of their own (RAID 1 of 2, RAID 10 of 4 or
    /// more), empty; from then on the array is served with its --cache-members.
    #[command(args_override_self = true)]
    AttachCache(AttachCacheArgs),
    /// Hand every line of the array's SSD cache (--cache-members) back to the array
    /// and take the cache away.
    ///
    /// Every dirty line is destaged and synced before the superblocks stop recording
    /// the cache, so a crash leaves the array either still cached (its cache intact) or
    /// detached with all its data. The array is then used without --cache-members.
    #[command(args_override_self = true)]
    DetachCache(DetachCacheArgs),
    /// Rebuild a lost member of the array's SSD cache mirror onto a new file or device.
    ///
    /// After a cache SSD is lost the array is assembled with the surviving cache
    /// members alone in --cache-members (the mirror runs degraded: every dirty line is
    /// on the other copy); this copies them onto NEW, which takes the lost member's
    /// place. Refused while the array is served, and onto a file that carries a raidlab
    /// superblock or journal.
    #[command(args_override_self = true)]
    ReplaceCache(ReplaceCacheArgs),
}

/// Arguments of `replace-cache`.
#[derive(Debug, Args)]
pub struct ReplaceCacheArgs {
    /// The new cache member (created, or extended to a cache member's size).
    #[arg(value_name = "NEW")]
    pub new: PathBuf,
    /// The array, with its surviving cache members in --cache-members, and the
    /// report's form.
    #[command(flatten)]
    pub array_args: ArrayArgs,
}

/// Arguments of `detach-cache`.
#[derive(Debug, Args)]
pub struct DetachCacheArgs {
    /// The array, its cache members and the report's form.
    #[command(flatten)]
    pub array_args: ArrayArgs,
    /// The array's superblocks record no cache, but --cache-members hold one whose
    /// header names the array: a cache made by a build before superblocks recorded
    /// caches. Its lines are handed back all the same. Only right when the array was
    /// not written without that cache since.
    #[arg(long)]
    pub adopt: bool,
}

/// Arguments of `attach-cache`.
#[derive(Debug, Args)]
pub struct AttachCacheArgs {
    /// The cache tier's policy: raidix (the default), lru, smq or bcache.
    #[arg(long, value_name = "POLICY", value_parser = values::cache_policy)]
    pub cache_policy: Option<raidlab_cache::Policy>,
    /// Size of every cache member, its metadata included (files are created or
    /// extended); default: the cache members as they are.
    #[arg(long, value_name = "SIZE", value_parser = values::bytes)]
    pub cache_size: Option<u64>,
    /// The cache's log-structured region (raidix); default: a sixteenth of the cache,
    /// at most 1G.
    #[arg(long, value_name = "SIZE", value_parser = values::bytes)]
    pub cache_region: Option<u64>,
    /// Overwrite this cache member though it carries raidlab metadata (another
    /// array's superblock, journal, parity log or cache); repeat it for each
    /// (default: none; such a member is refused, naming it).
    #[arg(long, value_name = "FILE", action = ArgAction::Append)]
    pub force_overwrite: Vec<PathBuf>,
    /// Print the report as one JSON document.
    #[arg(long)]
    pub json: bool,
    /// The array and its new cache members.
    #[command(flatten)]
    pub array: Members,
}

/// The members of an array and how to assemble them.
#[derive(Debug, Args)]
pub struct Members {
    /// Member files or devices, at least one, in any order.
    #[arg(value_name = "MEMBER", required = true)]
    pub members: Vec<PathBuf>,
    /// The write journal of an array created with one (default: none).
    #[arg(long, value_name = "PATH")]
    pub journal: Option<PathBuf>,
    /// The SSD cache in front of the array: its members, comma-separated (2: RAID 1,
    /// 4 or more, even: RAID 10). An array with a cache needs them wherever it is
    /// assembled (the superblocks record which cache): it may hold its newest (dirty)
    /// data. Refused for an array without a cache (default: no cache).
    #[arg(long, value_name = "SSD,SSD[,...]", value_delimiter = ',')]
    pub cache_members: Option<Vec<PathBuf>>,
}

/// Arguments of `status`, `check` and `repair`.
#[derive(Debug, Args)]
pub struct ArrayArgs {
    /// The array.
    #[command(flatten)]
    pub array: Members,
    /// Print the report as one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `status` (`assemble`).
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The array and the report's form.
    #[command(flatten)]
    pub array_args: ArrayArgs,
    /// Assemble even when more members are stale or failed than the level tolerates:
    /// the freshest of them are put back in (their data may miss later writes: run
    /// check). Members missing entirely cannot be forced in.
    #[arg(long)]
    pub force: bool,
}

/// Arguments of `create`.
#[derive(Debug, Args)]
pub struct CreateArgs {
    /// The RAID level: 0, 1, 4, 5, 6, 10, 50, 60 or concat.
    #[arg(long, value_parser = values::level)]
    pub level: Level,
    /// Stripe unit: the bytes of one stripe on one member (the simulator's
    /// --stripe-unit; mdadm's --chunk, which is kept as an alias).
    #[arg(
        long,
        alias = "chunk",
        value_name = "SIZE",
        default_value = "64K",
        value_parser = values::bytes
    )]
    pub stripe_unit: u64,
    /// Size of every member, superblock area included (files are created or extended);
    /// default: the members as they are.
    #[arg(long, value_name = "SIZE", value_parser = values::bytes)]
    pub size: Option<u64>,
    /// Parity rotation (RAID 5/6/50/60) or copy placement (RAID 10); md's default
    /// without it.
    #[arg(long, value_parser = values::layout)]
    pub layout: Option<Layout>,
    /// Copies of every chunk (RAID 10); default: the level's (2).
    #[arg(long, value_name = "N", value_parser = values::number::<u32>)]
    pub copies: Option<u32>,
    /// Spans (RAID 50/60); default: the level's (2).
    #[arg(long, value_name = "N", value_parser = values::number::<u32>)]
    pub spans: Option<u32>,
    /// The array UUID (hex); default: drawn from /dev/urandom.
    #[arg(long, value_name = "HEX", value_parser = values::uuid)]
    pub uuid: Option<u128>,
    /// Overwrite this member, spare, journal or cache member though it carries
    /// raidlab metadata (another array's superblock, journal, parity log or cache);
    /// repeat it for each (default: none; such a file is refused, naming it).
    #[arg(long, value_name = "FILE", action = ArgAction::Append)]
    pub force_overwrite: Vec<PathBuf>,
    /// Skip the initial resync even when members held data.
    #[arg(long)]
    pub assume_clean: bool,
    /// Leave member files sparse instead of preallocating them: a write that finds
    /// their filesystem full is answered ENOSPC.
    #[arg(long)]
    pub sparse: bool,
    /// Size of the journal file (needs --journal); 256M or more by default.
    #[arg(long, value_name = "SIZE", value_parser = values::bytes)]
    pub journal_size: Option<u64>,
    /// What makes parity agree again after an unclean stop, as mdadm's: resync (every
    /// stripe), bitmap (the regions written lately), journal (with --journal, its
    /// default), ppl (md's partial parity log; RAID 4, 5, 6, 50, 60). Default: ppl on
    /// the parity levels (a crash then lost members lose no flushed block), bitmap
    /// elsewhere.
    #[arg(long, value_name = "POLICY", value_parser = |s: &str| s.parse::<ConsistencyPolicy>())]
    pub consistency_policy: Option<ConsistencyPolicy>,
    /// Per-block checksums of the data, as dm-integrity's: none (the default) or crc32c
    /// (one per 4 KiB block of every member, after its data: reads and repair then
    /// tell a good copy from a bad one). Needs the bitmap or resync policy.
    #[arg(
        long,
        value_name = "ALGORITHM",
        default_value = "none",
        value_parser = |s: &str| s.parse::<Integrity>()
    )]
    pub integrity: Integrity,
    /// The cache tier's policy (with --cache-members): raidix (RAIDIX's random read and
    /// write caches; the default), lru, smq (dm-cache-like) or bcache (writeback,
    /// sequential cutoff).
    #[arg(long, value_name = "POLICY", value_parser = values::cache_policy)]
    pub cache_policy: Option<raidlab_cache::Policy>,
    /// Size of every cache member, its metadata included (files are created or
    /// extended); default: the cache members as they are.
    #[arg(long, value_name = "SIZE", value_parser = values::bytes)]
    pub cache_size: Option<u64>,
    /// The cache's log-structured region (raidix); default: a sixteenth of the cache,
    /// at most 1G.
    #[arg(long, value_name = "SIZE", value_parser = values::bytes)]
    pub cache_region: Option<u64>,
    /// Hot spares, comma-separated (mdadm's --spare-devices): members with no role; when
    /// a member of the served array fails, the first spare takes its role and is
    /// rebuilt online. Created or extended to --size like the members (default: none).
    #[arg(long, value_name = "SPARE[,SPARE...]", value_delimiter = ',')]
    pub spares: Vec<PathBuf>,
    /// Print the report as one JSON document.
    #[arg(long)]
    pub json: bool,
    /// The members, and a write journal every write goes through first.
    #[command(flatten)]
    pub array: Members,
}

/// Arguments of `serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// TCP address of the NBD export (port 0: any free port, printed when ready), for
    /// remote clients: 127.0.0.1:10809 is NBD's usual port (default: none, the export
    /// is on the private Unix socket alone; see --unix).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// The export's Unix socket next to the control socket (private to your user and
    /// root, checked as the control socket is: no other local user can reach the
    /// data); its nbd+unix:// URI is printed when ready. The default without --listen;
    /// with --listen, on both.
    #[arg(long)]
    pub unix: bool,
    /// Connections served at once; more are closed at once.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = values::bounded(1..=1024usize))]
    pub connections_max: usize,
    /// Requests of one connection served at once.
    #[arg(
        long,
        value_name = "N",
        default_value_t = nbd::REQUESTS_IN_FLIGHT_DEFAULT,
        value_parser = values::bounded(1..=nbd::REQUESTS_IN_FLIGHT_LIMIT)
    )]
    pub requests_in_flight: usize,
    /// Seconds a bitmap region stays dirty after its last write (mdadm's --delay).
    #[arg(long, value_name = "SECONDS", default_value_t = 5, value_parser = values::bounded(1..=3600u64))]
    pub bitmap_delay: u64,
    /// The server's TLS certificate chain (PEM, its own certificate first); default:
    /// none.
    #[arg(long, value_name = "PATH")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1); default: none.
    #[arg(long, value_name = "PATH")]
    pub tls_key: Option<PathBuf>,
    /// Pre-shared keys instead of a certificate (qemu-nbd's tls-creds-psk keys.psk):
    /// one IDENTITY:HEXKEY per line, the file private (mode 600); default: none.
    #[arg(long, value_name = "PATH", conflicts_with_all = ["tls_cert", "tls_key"])]
    pub tls_psk: Option<PathBuf>,
    /// TLS through NBD_OPT_STARTTLS: off, on (for clients that ask) or required (every
    /// other option before TLS is refused). On when --tls-cert or --tls-psk is given, else off.
    #[arg(long, value_name = "MODE", value_parser = crate::net::tls::TlsMode::parse)]
    pub tls: Option<crate::net::tls::TlsMode>,
    /// Name of the export (NBD_OPT_LIST shows it); the empty name, the protocol's
    /// default export, is accepted too; other names get NBD_REP_ERR_UNKNOWN.
    #[arg(long, value_name = "NAME", default_value = nbd::EXPORT_NAME, value_parser = values::export_name)]
    pub name: String,
    /// Seconds a connection may take to finish its handshake before it is closed.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = nbd::HANDSHAKE_TIMEOUT_S_DEFAULT,
        value_parser = values::bounded(1..=3600u64)
    )]
    pub handshake_timeout: u64,
    /// Connections in their handshake at once, apart from --connections-max; a newcomer
    /// past it closes the oldest unfinished handshake.
    #[arg(
        long,
        value_name = "N",
        default_value_t = nbd::HANDSHAKES_MAX_DEFAULT,
        value_parser = values::bounded(1..=1024usize)
    )]
    pub handshakes_max: usize,
    /// Seconds a connection with no request in flight may send none before it is
    /// closed (default: no limit).
    #[arg(long, value_name = "SECONDS", value_parser = values::bounded(1..=86400u64))]
    pub idle_timeout: Option<u64>,
    /// Seconds a connection must have been idle (no request in flight) before a new
    /// client that finds all --connections-max taken may have it closed for its own;
    /// the longest-idle goes first.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = nbd::EVICT_IDLE_AFTER_S_DEFAULT,
        value_parser = values::bounded(1..=86400u64)
    )]
    pub evict_idle_after: u64,
    /// Seconds a reply may wait for a client that does not read it, or a started
    /// request for the rest of its bytes, before the connection is closed.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = nbd::IO_TIMEOUT_S_DEFAULT,
        value_parser = values::bounded(1..=3600u64)
    )]
    pub io_timeout: u64,
    /// One budget over every buffered request payload and reply of all connections; a
    /// request that does not fit waits. Each connection has a small reserve in it; a
    /// request larger than the rest (or than 32M) gets EINVAL (the maximum is advertised).
    #[arg(long, value_name = "SIZE", default_value = "256M", value_parser = values::memory_limit)]
    pub memory_limit: u64,
    /// Append every request the cache tier sees to PATH (MSR Cambridge CSV, in the
    /// order its policy decided them), to replay the same trace elsewhere (default: no
    /// trace).
    #[arg(long, value_name = "PATH")]
    pub cache_trace: Option<PathBuf>,
    /// The array.
    #[command(flatten)]
    pub array: Members,
}

/// Arguments of `fail`.
#[derive(Debug, Args)]
pub struct FailArgs {
    /// The member to fail: its path or its role index.
    #[arg(value_name = "TARGET")]
    pub target: String,
    /// The array.
    #[command(flatten)]
    pub array: Members,
    /// Print the report as one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `replace`.
#[derive(Debug, Args)]
pub struct ReplaceArgs {
    /// The member to replace: its path or its role index.
    #[arg(value_name = "OLD")]
    pub old: String,
    /// The file or device it is rebuilt onto.
    #[arg(value_name = "NEW")]
    pub new: PathBuf,
    /// The array (OLD among them or not).
    #[command(flatten)]
    pub array: Members,
    /// Rebuild rate limit in bytes per second (default: unlimited).
    #[arg(long, value_name = "SIZE", value_parser = values::bytes)]
    pub rate: Option<u64>,
    /// Return once a served array's rebuild has started, instead of at its end.
    #[arg(long)]
    pub no_wait: bool,
    /// Overwrite NEW (name it here) though it carries another array's raidlab
    /// metadata (its member, spare, journal or cache); this array's own journal and
    /// cache are refused all the same (default: none).
    #[arg(long, value_name = "NEW", action = ArgAction::Append)]
    pub force_overwrite: Vec<PathBuf>,
    /// Print the report as one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `add-spare`.
#[derive(Debug, Args)]
pub struct AddSpareArgs {
    /// The file or device to keep as a hot spare.
    #[arg(value_name = "SPARE")]
    pub spare: PathBuf,
    /// The array.
    #[command(flatten)]
    pub array: Members,
    /// Print the report as one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `inject`: which combination is valid is decided in
/// [`super::parse::injection`].
#[derive(Debug, Args)]
pub struct InjectArgs {
    /// The member file or device.
    #[arg(value_name = "MEMBER")]
    pub member: Option<PathBuf>,
    /// Offset of the byte to corrupt in the member's data area.
    #[arg(value_name = "OFFSET")]
    pub offset: Option<String>,
    /// The bits to flip (hex; default: ff, every bit).
    #[arg(long, value_name = "HEX", value_parser = values::mask)]
    pub mask: Option<u8>,
    /// Reads of these data bytes fail (EIO); LEN default: 4K.
    #[arg(long, value_name = "OFF[+LEN]", value_parser = values::byte_range)]
    pub read_error: Option<ByteRange>,
    /// These data bytes read EIO until written; LEN default: 4K.
    #[arg(long, value_name = "OFF[+LEN]", value_parser = values::byte_range)]
    pub bad_sector: Option<ByteRange>,
    /// Writes of these data bytes fail (EIO); LEN default: 4K.
    #[arg(long, value_name = "OFF[+LEN]", value_parser = values::byte_range)]
    pub write_error: Option<ByteRange>,
    /// Every I/O of the member is delayed (20ms, 500us; default: no delay).
    #[arg(long, value_name = "DELAY", value_parser = values::latency_us)]
    pub latency: Option<u64>,
    /// Remove the member's injected faults.
    #[arg(long)]
    pub clear: bool,
    /// Print the report as one JSON document.
    #[arg(long)]
    pub json: bool,
}

/// Every subcommand and its arguments as JSON, read from the clap definitions above:
/// `{"name", "about", "after_help", "commands": [...]}`; per command `name`, `aliases`,
/// `about`, `long_about` and `args`; per argument `id`, `long`, `short`, `aliases`,
/// `help`, `long_help`, `defaults`, `value_names`, `value_delimiter`, `required`,
/// `takes_value`, `repeated`, `positional`, `possible_values`, `hidden` and
/// `conflicts_with`. Clap's own `help` command and `--help` are left out: every front
/// end has its own.
pub fn table_json() -> String {
    let mut cli = Cli::command();
    cli.build();
    let commands: Vec<serde_json::Value> = cli
        .get_subcommands()
        .filter(|c| c.get_name() != "help")
        .map(command_table)
        .collect();
    serde_json::json!({
        "name": cli.get_name(),
        "about": cli.get_about().map(ToString::to_string),
        "after_help": cli.get_after_help().map(ToString::to_string),
        "commands": commands,
    })
    .to_string()
}

/// One subcommand's entry of [`table_json`].
fn command_table(command: &clap::Command) -> serde_json::Value {
    let args: Vec<serde_json::Value> = command
        .get_arguments()
        .filter(|a| a.get_id() != "help")
        .map(|a| arg_table(command, a))
        .collect();
    serde_json::json!({
        "name": command.get_name(),
        "aliases": command.get_all_aliases().collect::<Vec<_>>(),
        "about": command.get_about().map(ToString::to_string),
        "long_about": command.get_long_about().map(ToString::to_string),
        "args": args,
    })
}

/// One argument's entry of [`table_json`].
fn arg_table(command: &clap::Command, arg: &clap::Arg) -> serde_json::Value {
    let text = |s: &std::ffi::OsStr| s.to_string_lossy().into_owned();
    let conflicts: Vec<String> = command
        .get_arg_conflicts_with(arg)
        .iter()
        .map(|other| other.get_id().to_string())
        .collect();
    serde_json::json!({
        "id": arg.get_id().as_str(),
        "long": arg.get_long(),
        "short": arg.get_short().map(String::from),
        "aliases": arg.get_all_aliases().unwrap_or_default(),
        "help": arg.get_help().map(ToString::to_string),
        "long_help": arg.get_long_help().map(ToString::to_string),
        "defaults": arg.get_default_values().iter().map(|v| text(v)).collect::<Vec<_>>(),
        "value_names": arg
            .get_value_names()
            .unwrap_or_default()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        "value_delimiter": arg.get_value_delimiter().map(String::from),
        "required": arg.is_required_set(),
        "takes_value": arg.get_action().takes_values(),
        "repeated": matches!(arg.get_action(), ArgAction::Append | ArgAction::Count),
        "positional": arg.is_positional(),
        "possible_values": arg
            .get_possible_values()
            .iter()
            .map(|v| v.get_name().to_string())
            .collect::<Vec<_>>(),
        "hidden": arg.is_hide_set(),
        "conflicts_with": conflicts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> serde_json::Value {
        serde_json::from_str(&table_json()).expect("the flag table is JSON")
    }

    fn arg<'a>(table: &'a serde_json::Value, command: &str, id: &str) -> &'a serde_json::Value {
        let commands = table["commands"].as_array().expect("commands");
        let command = commands
            .iter()
            .find(|c| c["name"] == command)
            .expect("the command");
        let args = command["args"].as_array().expect("args");
        args.iter().find(|a| a["id"] == id).expect("the argument")
    }

    #[test]
    fn the_flag_table_lists_every_subcommand_with_its_aliases() {
        let table = table();
        let names: Vec<&str> = table["commands"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "create",
                "status",
                "serve",
                "fail",
                "replace",
                "add-spare",
                "check",
                "repair",
                "inject",
                "attach-cache",
                "detach-cache",
                "replace-cache"
            ]
        );
        let status = &table["commands"][1];
        assert_eq!(status["aliases"], serde_json::json!(["assemble"]));
        assert!(status["about"].as_str().unwrap().starts_with("Assemble"));
    }

    #[test]
    fn every_argument_has_the_same_keys() {
        let table = table();
        let keys = [
            "id",
            "long",
            "short",
            "aliases",
            "help",
            "long_help",
            "defaults",
            "value_names",
            "value_delimiter",
            "required",
            "takes_value",
            "repeated",
            "positional",
            "possible_values",
            "hidden",
            "conflicts_with",
        ];
        for command in table["commands"].as_array().unwrap() {
            for arg in command["args"].as_array().unwrap() {
                let object = arg.as_object().unwrap();
                let mut found: Vec<&str> = object.keys().map(String::as_str).collect();
                let mut expected = keys.to_vec();
                found.sort_unstable();
                expected.sort_unstable();
                assert_eq!(found, expected, "{}: {arg}", command["name"]);
                assert_ne!(arg["id"], "help", "clap's own --help is left out");
            }
        }
    }

    #[test]
    fn the_table_carries_defaults_aliases_and_kinds_of_arguments() {
        let table = table();
        let unit = arg(&table, "create", "stripe_unit");
        assert_eq!(unit["long"], "stripe-unit");
        assert_eq!(unit["aliases"], serde_json::json!(["chunk"]));
        assert_eq!(unit["defaults"], serde_json::json!(["64K"]));
        assert_eq!(unit["value_names"], serde_json::json!(["SIZE"]));
        assert_eq!(unit["takes_value"], true);
        let level = arg(&table, "create", "level");
        assert_eq!(
            (&level["required"], &level["defaults"]),
            (&serde_json::json!(true), &serde_json::json!([]))
        );
        let members = arg(&table, "create", "members");
        assert_eq!(
            (
                &members["positional"],
                &members["repeated"],
                &members["long"]
            ),
            (
                &serde_json::json!(true),
                &serde_json::json!(true),
                &serde_json::Value::Null
            )
        );
        let force = arg(&table, "create", "force_overwrite");
        assert_eq!(
            (&force["takes_value"], &force["repeated"]),
            (&serde_json::json!(true), &serde_json::json!(true))
        );
        let cache = arg(&table, "create", "cache_members");
        assert_eq!(cache["value_delimiter"], ",");
        let limit = arg(&table, "serve", "requests_in_flight");
        assert_eq!(
            limit["defaults"],
            serde_json::json!([nbd::REQUESTS_IN_FLIGHT_DEFAULT.to_string()])
        );
        let psk = arg(&table, "serve", "tls_psk");
        assert_eq!(
            psk["conflicts_with"],
            serde_json::json!(["tls_cert", "tls_key"])
        );
    }
}

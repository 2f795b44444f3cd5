//! Parse, then resolve: the command line becomes a [`Command`] (clap, with the value
//! parsers of [`super::values`]), its errors become one line `FIELD: what is allowed`,
//! and the combinations clap cannot express are checked into plain data
//! ([`create_options`], [`injection`]) before any command body runs.

use super::flags::{Cli, Command, CreateArgs, InjectArgs};
use super::values::{self, ByteRange};
use crate::{CreateOptions, Error, Result};
use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{CommandFactory, Parser};
use std::ffi::OsString;
use std::path::PathBuf;

/// What the command line asks for.
#[derive(Debug)]
// Parsed once per process: the size of the command's arguments does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Parsed {
    /// Run a subcommand.
    Run(Command),
    /// Print this (help or version) on stdout and exit 0.
    Print(String),
}

/// Parses `argv` (the program name first).
pub fn parse(argv: &[OsString]) -> Result<Parsed> {
    match Cli::try_parse_from(argv) {
        Ok(cli) => Ok(Parsed::Run(cli.command)),
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            Ok(Parsed::Print(e.render().to_string()))
        }
        Err(e) => Err(Error::Input(one_line(&e, subcommand_named(argv)))),
    }
}

/// The subcommand the first argument after the program names, if any.
fn subcommand_named(argv: &[OsString]) -> Option<clap::Command> {
    let name = argv.get(1)?.to_str()?;
    Cli::command()
        .get_subcommands()
        .find(|c| c.get_name() == name || c.get_all_aliases().any(|a| a == name))
        .cloned()
}

/// A clap error as `FIELD: message` on one line: the flag or argument first (what the
/// Python front end maps back to its own flag), then what is allowed.
fn one_line(e: &clap::Error, sub: Option<clap::Command>) -> String {
    let context = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(v)) => v.first().cloned(),
        _ => None,
    };
    let field = context(ContextKind::InvalidArg).map(|a| field_name(&a));
    match (e.kind(), field) {
        (
            ErrorKind::InvalidSubcommand
            | ErrorKind::MissingSubcommand
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand,
            _,
        ) => {
            let given = context(ContextKind::InvalidSubcommand);
            let allowed = subcommand_names().join(", ");
            match given {
                Some(g) => format!("unknown command {g:?}; allowed: {allowed}"),
                None => format!("a command is needed; allowed: {allowed}"),
            }
        }
        // The switch that overwrote every claimed file became a flag naming each one:
        // an old script's `--force` is told what to write instead.
        (ErrorKind::UnknownArgument, Some(arg))
            if arg == "--force" && long_flags(sub.as_ref()).contains("--force-overwrite") =>
        {
            "--force: replaced by --force-overwrite FILE (repeatable), which overwrites \
             only the files it names"
                .to_string()
        }
        (ErrorKind::UnknownArgument, Some(arg)) if arg.starts_with('-') => {
            format!(
                "{arg}: unknown option; allowed: {}",
                long_flags(sub.as_ref())
            )
        }
        (ErrorKind::UnknownArgument, Some(arg)) => {
            let name = sub.as_ref().map_or("raidlab-engine", |s| s.get_name());
            format!("{name}: unexpected argument {arg:?}; see {name} --help")
        }
        (ErrorKind::ValueValidation, Some(arg)) => match std::error::Error::source(e) {
            Some(why) => format!("{arg}: {why}"),
            None => format!("{arg}: {}", clap_message(e)),
        },
        (ErrorKind::MissingRequiredArgument, Some(arg)) => {
            let help = sub.as_ref().and_then(|s| help_of(s, &arg));
            match help {
                Some(h) => format!("{arg}: required ({h})"),
                None => format!("{arg}: required"),
            }
        }
        (ErrorKind::InvalidValue, Some(arg)) => format!("{arg}: needs a value"),
        (_, Some(arg)) => format!("{arg}: {}", clap_message(e)),
        (_, None) => clap_message(e),
    }
}

/// `--size <SIZE>` → `--size`; `<MEMBER>...` → `MEMBER`.
fn field_name(arg: &str) -> String {
    let first = arg.split_whitespace().next().unwrap_or(arg);
    let first = first.trim_end_matches("...").trim_end_matches('=');
    first
        .trim_matches(|c| matches!(c, '<' | '>' | '[' | ']'))
        .to_string()
}

/// Clap's own message, first line, without its `error: ` prefix.
fn clap_message(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let line = rendered.lines().next().unwrap_or("");
    line.strip_prefix("error: ").unwrap_or(line).to_string()
}

/// Every subcommand, aliases in parentheses.
fn subcommand_names() -> Vec<String> {
    Cli::command()
        .get_subcommands()
        .map(|c| {
            let aliases: Vec<&str> = c.get_all_aliases().collect();
            if aliases.is_empty() {
                c.get_name().to_string()
            } else {
                format!("{} (alias {})", c.get_name(), aliases.join(", "))
            }
        })
        .collect()
}

/// The long flags of a subcommand, sorted, or `none`.
fn long_flags(sub: Option<&clap::Command>) -> String {
    let mut flags: Vec<String> = sub
        .into_iter()
        .flat_map(|s| s.get_arguments())
        .filter_map(|a| a.get_long())
        .filter(|l| *l != "help")
        .map(|l| format!("--{l}"))
        .collect();
    flags.sort();
    if flags.is_empty() {
        "none".into()
    } else {
        flags.join(", ")
    }
}

/// The first line of an argument's help, first letter lowercase, no final period.
fn help_of(sub: &clap::Command, field: &str) -> Option<String> {
    let arg = sub.get_arguments().find(|a| {
        a.get_long().map(|l| format!("--{l}")).as_deref() == Some(field)
            || a.get_value_names()
                .is_some_and(|names| names.iter().any(|n| n.as_str() == field))
    })?;
    let help = arg.get_help()?.to_string();
    let line = help.lines().next()?.trim_end_matches('.');
    let mut chars = line.chars();
    let first = chars.next()?;
    Some(first.to_lowercase().chain(chars).collect())
}

/// `create`'s flags as [`CreateOptions`]; a journal size needs a journal.
pub fn create_options(a: &CreateArgs) -> Result<CreateOptions> {
    if a.journal_size.is_some() && a.array.journal.is_none() {
        return Err(Error::Input("--journal-size: needs --journal PATH".into()));
    }
    let mut opts = CreateOptions::new(a.level, a.stripe_unit, a.size);
    opts.layout = a.layout;
    opts.copies = a.copies;
    opts.spans = a.spans;
    opts.uuid = a.uuid;
    opts.assume_clean = a.assume_clean;
    opts.journal = a.array.journal.clone();
    opts.journal_bytes = a.journal_size;
    opts.policy = a.consistency_policy;
    opts.integrity = a.integrity;
    Ok(opts)
}

/// A fault the server of a served array injects into one member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServedFault {
    /// Reads of the range fail.
    ReadError(ByteRange),
    /// The range reads EIO until written.
    BadSector(ByteRange),
    /// Writes of the range fail.
    WriteError(ByteRange),
    /// Every I/O of the member waits this long.
    Latency {
        /// The delay.
        delay_us: u64,
    },
    /// The member's faults are removed.
    Clear,
}

impl ServedFault {
    /// The flag that asks for it, and the name the control socket knows it by.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::ReadError(_) => "read-error",
            Self::BadSector(_) => "bad-sector",
            Self::WriteError(_) => "write-error",
            Self::Latency { .. } => "latency",
            Self::Clear => "clear",
        }
    }
}

/// What `inject` does, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Injection {
    /// Flip `mask`'s bits of the data byte at `offset_bytes` on the member itself
    /// (served or not): silent corruption a scrub must find.
    Flip {
        /// The member.
        member: PathBuf,
        /// Offset in the member's data area.
        offset_bytes: u64,
        /// The bits flipped.
        mask: u8,
    },
    /// A fault in the server of the array `member` belongs to.
    Served {
        /// The member.
        member: PathBuf,
        /// The fault.
        fault: ServedFault,
    },
}

/// `inject`'s arguments as one [`Injection`]: exactly one kind of fault.
pub fn injection(a: &InjectArgs) -> Result<Injection> {
    let served: Vec<ServedFault> = [
        a.read_error.map(ServedFault::ReadError),
        a.bad_sector.map(ServedFault::BadSector),
        a.write_error.map(ServedFault::WriteError),
        a.latency.map(|delay_us| ServedFault::Latency { delay_us }),
        a.clear.then_some(ServedFault::Clear),
    ]
    .into_iter()
    .flatten()
    .collect();
    // OFFSET and --mask belong to the bit flip: with a served fault they are a second kind.
    let flip_given = a.mask.is_some() || a.offset.is_some();
    if served.len() > 1 || (!served.is_empty() && flip_given) {
        return Err(Error::Input(
            "inject: one of OFFSET [--mask], --read-error, --bad-sector, --write-error, --latency, --clear"
                .into(),
        ));
    }
    match (served.first(), &a.member, &a.offset) {
        (None, Some(member), Some(offset)) => Ok(Injection::Flip {
            member: member.clone(),
            offset_bytes: values::bytes(offset)
                .map_err(|e| Error::Input(format!("OFFSET: {e}")))?,
            mask: a.mask.unwrap_or(0xff),
        }),
        (None, _, _) => Err(Error::Input("inject: MEMBER OFFSET needed".into())),
        (Some(&fault), Some(member), None) => Ok(Injection::Served {
            member: member.clone(),
            fault,
        }),
        (Some(fault), _, _) => Err(Error::Input(format!(
            "inject --{}: MEMBER needed (one)",
            fault.kind()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(args: &[&str]) -> String {
        let argv: Vec<OsString> = std::iter::once("raidlab-engine")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect();
        match parse(&argv) {
            Err(e) => e.to_string(),
            Ok(p) => panic!("{args:?} parsed: {p:?}"),
        }
    }

    #[test]
    fn every_error_is_one_line_that_starts_with_its_field() {
        for (args, start) in [
            (
                &["create", "--size", "4M", "a"][..],
                "--level: required (the RAID level",
            ),
            (
                &["create", "--level", "7", "a"],
                "--level: unknown level \"7\"",
            ),
            (
                &["create", "--level", "5", "--size", "lots", "a"],
                "--size: expected a size",
            ),
            (
                &["create", "--level", "5", "--bogus", "a"],
                "--bogus: unknown option; allowed: --assume-clean",
            ),
            (
                &["replace", "--force", "b", "n", "a", "b"],
                "--force: replaced by --force-overwrite FILE (repeatable)",
            ),
            (
                &["create", "--level", "5"],
                "MEMBER: required (member files or devices",
            ),
            (&["create", "--level"], "--level: needs a value"),
            (&["status"], "MEMBER: required"),
            (&["create"], "--level: required"),
            (&["fail"], "TARGET: required"),
            (
                &["serve", "--requests-in-flight", "65", "x"],
                "--requests-in-flight: 1..=64, got 65",
            ),
            (
                &["serve", "--bitmap-delay", "soon", "x"],
                "--bitmap-delay: expected a number",
            ),
            (
                &["replace", "--rate", "fast", "1", "s", "a"],
                "--rate: expected a size",
            ),
            (
                &["inject", "--latency", "soon", "m"],
                "--latency: a delay like 20ms",
            ),
            (
                &["frobnicate"],
                "unknown command \"frobnicate\"; allowed: create, status (alias assemble)",
            ),
            (&[], "a command is needed; allowed: create"),
        ] {
            let e = error_of(args);
            assert!(e.starts_with(start), "{args:?}: {e}");
            assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        }
    }

    #[test]
    fn a_flag_given_twice_keeps_the_last_value() {
        let argv: Vec<OsString> = [
            "raidlab-engine",
            "create",
            "--level",
            "1",
            "--level",
            "5",
            "a",
        ]
        .map(OsString::from)
        .to_vec();
        let Ok(Parsed::Run(Command::Create(c))) = parse(&argv) else {
            panic!("not parsed")
        };
        assert_eq!(c.level, raidlab_layout::Level::Raid5);
    }

    #[test]
    fn help_is_printed_not_an_error() {
        for args in [
            &["raidlab-engine", "--help"][..],
            &["raidlab-engine", "help"],
            &["raidlab-engine", "serve", "-h"],
        ] {
            let argv: Vec<OsString> = args.iter().map(OsString::from).collect();
            assert!(matches!(parse(&argv), Ok(Parsed::Print(_))), "{args:?}");
        }
    }

    fn inject(args: &[&str]) -> Result<Injection> {
        let argv: Vec<OsString> = ["raidlab-engine", "inject"]
            .iter()
            .chain(args)
            .map(OsString::from)
            .collect();
        match parse(&argv)? {
            Parsed::Run(Command::Inject(a)) => injection(&a),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn inject_takes_exactly_one_kind_of_fault() {
        assert_eq!(
            inject(&["m", "4K", "--mask", "0x80"]).unwrap(),
            Injection::Flip {
                member: "m".into(),
                offset_bytes: 4096,
                mask: 0x80
            }
        );
        assert_eq!(
            inject(&["m", "--clear"]).unwrap(),
            Injection::Served {
                member: "m".into(),
                fault: ServedFault::Clear
            }
        );
        for (args, start) in [
            (&[][..], "inject: MEMBER OFFSET needed"),
            (&["m"], "inject: MEMBER OFFSET needed"),
            (&["m", "0", "--clear"], "inject: one of"),
            (&["--clear"], "inject --clear: MEMBER needed"),
            (&["m", "--clear", "--latency", "1ms"], "inject: one of"),
            (&["m", "--clear", "--mask", "1"], "inject: one of"),
            (&["m", "lots"], "OFFSET: expected a size"),
        ] {
            let e = inject(args).unwrap_err().to_string();
            assert!(e.starts_with(start), "{args:?}: {e}");
        }
    }
}

//! The `raidlab-engine` command line, as a library function so that the binary and the
//! Python module (`raidlab._native.engine_main`, the `raidlab-engine` console script of
//! the wheel) run the same code.
//!
//! ```text
//!  argv ─► parse (flags: clap definitions, values: value parsers)
//!            │ bad input: one line `error: FIELD: what is allowed`, exit code 2
//!            ▼
//!          Command ─► commands::{create, status, fail, replace, add_spare, scrub, inject,
//!                               attach_cache, detach_cache, replace_cache}
//!                     serve::serve (NBD + control socket until SIGINT/SIGTERM)
//!                       │
//!                       ▼
//!                     render: status and scrub reports (text or --json) on stdout,
//!                             rebuild progress on stderr
//! ```
//!
//! Exit codes: 0 done; 1 `check` found mismatched stripes; 2 bad input or a refused
//! operation (one `error:` line on stderr).
//!
//! ```
//! let code = raidlab_engine::cli::main_with_args(["raidlab-engine", "create", "--level", "9"]);
//! assert_eq!(code, 2);
//! ```

mod commands;
mod flags;
mod open;
mod parse;
mod render;
mod serve;
mod values;

pub use flags::table_json;
use flags::Command;
use parse::Parsed;
use std::ffi::OsString;
use std::io::Write;

/// Runs the command line `args` (the program name first, as `std::env::args_os`) and
/// returns the process exit code; errors are printed as one `error:` line on stderr.
pub fn main_with_args<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let argv: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let code = match parse::parse(&argv).and_then(run) {
        Ok(code) => code,
        Err(e) => {
            let msg = e.to_string();
            eprintln!("error: {}", msg.lines().next().unwrap_or(""));
            2
        }
    };
    // A host process (Python) keeps running after this returns: nothing stays buffered.
    let _ = std::io::stdout().flush();
    code
}

/// Runs what the command line asked for.
fn run(parsed: Parsed) -> crate::Result<i32> {
    let command = match parsed {
        Parsed::Print(text) => {
            render::stdout(&format!("{}\n", text.trim_end()));
            return Ok(0);
        }
        Parsed::Run(command) => command,
    };
    match command {
        Command::Create(a) => commands::create(&a),
        Command::Status(a) => commands::status(&a),
        Command::Serve(a) => serve::serve(&a),
        Command::Fail(a) => commands::fail(&a),
        Command::Replace(a) => commands::replace(&a),
        Command::AddSpare(a) => commands::add_spare(&a),
        Command::Check(a) => commands::scrub(&a, false),
        Command::Repair(a) => commands::scrub(&a, true),
        Command::Inject(a) => commands::inject(&a),
        Command::AttachCache(a) => commands::attach_cache(&a),
        Command::DetachCache(a) => commands::detach_cache(&a),
        Command::ReplaceCache(a) => commands::replace_cache(&a),
    }
}

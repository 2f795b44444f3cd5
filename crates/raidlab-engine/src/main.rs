//! `raidlab-engine`: create, assemble, serve over NBD, fail, replace, scrub and
//! fault-inject arrays on member files or block devices; the command line lives in
//! [`raidlab_engine::cli`]. Bad input: one line `error: ...` on stderr and exit code 2.
#![deny(missing_docs)]

use std::process::ExitCode;

fn main() -> ExitCode {
    let code = raidlab_engine::cli::main_with_args(std::env::args_os());
    ExitCode::from(u8::try_from(code).unwrap_or(2))
}

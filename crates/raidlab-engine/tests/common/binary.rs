//! The `raidlab-engine` binary, run in a test's own temporary directory.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

/// The binary run in `dir`, with `dir` as its TMPDIR and no XDG_RUNTIME_DIR: a test's
/// servers and clients meet on control sockets inside its own temporary directory
/// (`dir/raidlab-<uid>/`).
pub fn engine_command(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_raidlab-engine"));
    c.current_dir(dir)
        .env("TMPDIR", dir)
        .env_remove("XDG_RUNTIME_DIR");
    c
}

/// Runs the binary with `args` in `dir`; returns its output, whatever the exit code.
pub fn engine_output(dir: &Path, args: &[&str]) -> Output {
    engine_command(dir).args(args).output().unwrap()
}

/// Runs the binary with `args` in `dir`, asserting success; returns its output.
pub fn engine(dir: &Path, args: &[&str]) -> Output {
    let o = engine_output(dir, args);
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// [`engine`], returning what it printed on stdout (a `check` or `status` report).
pub fn engine_stdout(dir: &Path, args: &[&str]) -> String {
    String::from_utf8_lossy(&engine(dir, args).stdout).to_string()
}

/// The JSON report of a subcommand: `args` with `--json` after the subcommand.
pub fn engine_json(dir: &Path, args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.insert(1, "--json");
    serde_json::from_slice(&engine(dir, &a).stdout).unwrap()
}

/// `status --json` of the array of `members`, from its server if one runs.
pub fn status(dir: &Path, members: &[&str]) -> Value {
    let mut a = vec!["status"];
    a.extend(members);
    engine_json(dir, &a)
}

/// Runs `cmd` asserting success; returns its stdout followed by its stderr.
pub fn run(cmd: &mut Command) -> String {
    let o = cmd.output().unwrap();
    let t = output_text(&o);
    assert!(o.status.success(), "{cmd:?}: {t}");
    t
}

/// Stdout followed by stderr, as one text.
pub fn output_text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs the binary expecting bad input: exit code 2 and one `error:` line, returned.
pub fn refused(dir: &Path, args: &[&str]) -> String {
    let o = engine_output(dir, args);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(err.starts_with("error: "), "{args:?}: {err}");
    err
}

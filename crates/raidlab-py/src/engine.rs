//! The real-data engine's command line inside the module, so the wheel ships the
//! engine: the `raidlab-engine` console script (`raidlab._engine_main`) calls
//! [`engine_main`] with `sys.argv`; [`engine_flags`] exports the command line's flags,
//! from which the `raidlab create/serve/...` commands and the Python client are built.

use pyo3::prelude::*;

/// Runs the `raidlab-engine` command line `argv` (the program name first, as
/// `sys.argv`) and returns its exit code: 0 done, 1 `check` found mismatches, 2 bad
/// input (one `error:` line on stderr), 101 the engine panicked.
///
/// Releases the GIL for the whole run. `serve` installs its own SIGINT/SIGTERM
/// handlers while it runs (they stop it cleanly) and puts Python's back when it returns.
#[pyfunction]
pub fn engine_main(py: Python<'_>, argv: Vec<String>) -> i32 {
    py.allow_threads(move || {
        std::panic::catch_unwind(|| raidlab_engine::cli::main_with_args(argv)).unwrap_or(101)
    })
}

/// The engine's subcommands and flags as JSON, read from its clap definitions (the one
/// declaration): per command `name`, `aliases`, `about`, `long_about`, `args`; per
/// argument `id`, `long`, `short`, `aliases`, `help`, `long_help`, `defaults`,
/// `value_names`, `value_delimiter`, `required`, `takes_value`, `repeated`,
/// `positional`, `possible_values`, `hidden`, `conflicts_with`.
#[pyfunction]
pub fn engine_flags() -> String {
    raidlab_engine::cli::table_json()
}

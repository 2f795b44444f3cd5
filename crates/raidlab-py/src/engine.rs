//! The real-data engine's command line inside the module, so the wheel ships the
//! engine: the `raidlab-engine` console script (`raidlab._engine_main`) calls
//! [`engine_main`] with `sys.argv`.

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

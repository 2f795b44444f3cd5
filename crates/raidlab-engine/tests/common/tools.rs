//! The external tools some tests drive (fio, qemu-io, qemu-img, nbdinfo, nbdcopy), and
//! the one rule for when one is missing: the test is skipped, saying so on stderr, or,
//! with `RAIDLAB_REQUIRE_TOOLS=1` (CI sets it), it fails, so a machine that lost a
//! tool cannot pass by skipping.

use std::process::Command;

/// The environment variable that turns a missing tool from a skip into a failure.
pub const REQUIRE_TOOLS: &str = "RAIDLAB_REQUIRE_TOOLS";

/// The Debian package that brings `tool`, for the skip message.
fn package_of(tool: &str) -> &'static str {
    match tool {
        "fio" => "fio",
        "qemu-io" | "qemu-img" => "qemu-utils",
        "nbdinfo" | "nbdcopy" => "libnbd-bin",
        other => panic!("no package known for the test tool {other}"),
    }
}

/// Whether `tool` runs here; fio counts only with its nbd engine, the one the tests use.
fn installed(tool: &str) -> bool {
    if tool == "fio" {
        return Command::new("fio")
            .arg("--enghelp")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("nbd"));
    }
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether a test may use `tool`. When it is missing: panics if
/// `RAIDLAB_REQUIRE_TOOLS=1`, else prints why the test (or its part) is skipped and
/// returns false, and the caller returns.
pub fn tool(tool: &str) -> bool {
    if installed(tool) {
        return true;
    }
    if std::env::var(REQUIRE_TOOLS).as_deref() == Ok("1") {
        panic!("{tool} is required ({REQUIRE_TOOLS}=1) but not installed");
    }
    eprintln!(
        "skipped: {tool} not installed (apt-get install {})",
        package_of(tool)
    );
    false
}

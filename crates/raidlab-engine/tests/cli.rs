//! The binary: the story on files (create, fail, keep working, replace, check),
//! and bad input as one `error:` line with exit code 2.

use std::path::Path;
use std::process::{Command, Output};

fn engine(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_raidlab-engine"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn bad_input_is_one_error_line_and_exit_code_2() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["frobnicate"][..],
        &["create", "--level", "5", "--size", "4M", "a", "b"],
        &["create", "--level", "7", "--size", "4M", "a", "b", "c"],
        &[
            "create", "--level", "5", "--chunk", "3K", "--size", "4M", "a", "b", "c",
        ],
        &["create", "--level", "5", "--size", "lots", "a", "b", "c"],
        &["create", "--level", "5", "--bogus", "a"],
        &["status", "does-not-exist"],
        &["serve", "--listen", "not-an-address", "x"],
        &["serve", "--requests-in-flight", "0", "x"],
        &["serve", "--requests-in-flight", "65", "x"],
        &["serve", "--bitmap-delay", "0", "x"],
        &["serve", "--bitmap-delay", "soon", "x"],
        &["inject", "x"],
        &[],
    ] {
        let o = engine(dir.path(), args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
    }
}

#[test]
fn create_fail_replace_check_on_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = engine(
        d,
        &[
            "create", "--level", "5", "--chunk", "16K", "--size", "3M", "a", "b", "c", "d",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("state clean"));
    let o = engine(d, &["fail", "b", "a", "b", "c", "d"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = engine(d, &["status", "a", "b", "c", "d"]);
    let t = text(&o);
    assert!(t.contains("state degraded") && t.contains("b stale"), "{t}");
    let o = engine(d, &["fail", "c", "a", "c", "d"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "a second failure of RAID 5 is refused: {}",
        text(&o)
    );
    let o = engine(
        d,
        &["replace", "b", "e", "--rate", "100M", "a", "b", "c", "d"],
    );
    let t = text(&o);
    assert!(
        o.status.success() && t.contains("100%") && t.contains("state clean"),
        "{t}"
    );
    let o = engine(d, &["check", "a", "e", "c", "d"]);
    assert!(
        o.status.success() && text(&o).contains("mismatched 0"),
        "{}",
        text(&o)
    );
    assert!(engine(d, &["inject", "c", "0"]).status.success());
    let o = engine(d, &["check", "a", "e", "c", "d"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(engine(d, &["repair", "a", "e", "c", "d"]).status.success());
    assert!(engine(d, &["check", "a", "e", "c", "d"]).status.success());
}

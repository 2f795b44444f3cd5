//! The binary: the story on files (create, fail, keep working, replace, check),
//! and bad input as one `error:` line with exit code 2.

use crate::common::{engine_output, output_text, refused};

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
        refused(dir.path(), args);
    }
}

#[test]
fn create_fail_replace_check_on_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = engine_output(
        d,
        &[
            "create", "--level", "5", "--chunk", "16K", "--size", "3M", "a", "b", "c", "d",
        ],
    );
    assert!(o.status.success(), "{}", output_text(&o));
    assert!(output_text(&o).contains("state clean"));
    let o = engine_output(d, &["fail", "b", "a", "b", "c", "d"]);
    assert!(o.status.success(), "{}", output_text(&o));
    let o = engine_output(d, &["status", "a", "b", "c", "d"]);
    let t = output_text(&o);
    assert!(t.contains("state degraded") && t.contains("b stale"), "{t}");
    let o = engine_output(d, &["fail", "c", "a", "c", "d"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "a second failure of RAID 5 is refused: {}",
        output_text(&o)
    );
    let o = engine_output(
        d,
        &["replace", "b", "e", "--rate", "100M", "a", "b", "c", "d"],
    );
    let t = output_text(&o);
    assert!(
        o.status.success() && t.contains("100%") && t.contains("state clean"),
        "{t}"
    );
    let o = engine_output(d, &["check", "a", "e", "c", "d"]);
    assert!(
        o.status.success() && output_text(&o).contains("mismatched 0"),
        "{}",
        output_text(&o)
    );
    assert!(engine_output(d, &["inject", "c", "0"]).status.success());
    let o = engine_output(d, &["check", "a", "e", "c", "d"]);
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    // RAID 5 cannot tell the flipped data from its parity: repair names the stripe and
    // keeps it (exit 1); rebuilding the member known bad settles it.
    let o = engine_output(d, &["repair", "a", "e", "c", "d"]);
    let t = output_text(&o);
    assert!(
        o.status.code() == Some(1) && t.contains("unresolved 1") && t.contains("logical bytes 0+"),
        "{t}"
    );
    let o = engine_output(d, &["check", "a", "e", "c", "d"]);
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    assert!(engine_output(d, &["fail", "c", "a", "e", "c", "d"])
        .status
        .success());
    assert!(engine_output(d, &["replace", "c", "f", "a", "e", "c", "d"])
        .status
        .success());
    assert!(engine_output(d, &["check", "a", "e", "f", "d"])
        .status
        .success());
}

/// `raidlab-engine --help | head -1`: a reader that closed its end before the help was
/// written is no error (exit 0, no panic), whatever the timing; the pipe here has no
/// reader from the start, so the write always meets a closed pipe.
#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    for args in [&["--help"][..], &["create", "--help"], &["--version"]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = crate::common::engine_command(dir.path())
            .args(args)
            .stdout(writer)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?} {stderr}", out.status);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// `inject` flips bytes only in a file that carries a raidlab superblock, as `status`
/// and `check` read only such files: a mistyped path is refused and left as it was.
#[test]
fn inject_refuses_a_file_that_is_no_member_and_leaves_it_alone() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bytes: Vec<u8> = (0..(8u32 << 20)).map(|i| (i % 251) as u8).collect();
    std::fs::write(d.join("notes"), &bytes).unwrap();
    let message = refused(d, &["inject", "notes", "4096"]);
    assert!(message.contains("no raidlab superblock"), "{message}");
    assert_eq!(std::fs::read(d.join("notes")).unwrap(), bytes);
}

/// `replace` onto a member's own file would overwrite what the rebuild reads: a healthy
/// member "rebuilt" onto itself, or another member, is refused by name and every member
/// keeps its bytes.
#[test]
fn replace_refuses_a_member_as_the_new_file_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = engine_output(
        d,
        &[
            "create", "--level", "5", "--chunk", "16K", "--size", "3M", "a", "b", "c",
        ],
    );
    assert!(o.status.success(), "{}", output_text(&o));
    let read = |names: &[&str]| -> Vec<Vec<u8>> {
        names
            .iter()
            .map(|n| std::fs::read(d.join(n)).unwrap())
            .collect()
    };
    let before = read(&["a", "b", "c"]);
    for args in [
        &["replace", "b", "b", "a", "b", "c"][..],
        &["replace", "b", "b", "a", "c"],
        &["replace", "1", "c", "a", "b", "c"],
        &["replace", "b", "./a", "a", "b", "c"],
    ] {
        let message = refused(d, args);
        assert!(
            message.starts_with("error: NEW: ") && message.contains("is the array member"),
            "{args:?}: {message}"
        );
    }
    assert!(
        read(&["a", "b", "c"]) == before,
        "a refused replace changed a member"
    );
    let o = engine_output(d, &["status", "a", "b", "c"]);
    assert!(
        output_text(&o).contains("state clean"),
        "{}",
        output_text(&o)
    );
}

/// A refused `replace` onto a file that did not exist leaves no file behind.
#[test]
fn a_refused_replace_removes_the_new_file_it_created() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = engine_output(
        d,
        &[
            "create", "--level", "5", "--chunk", "16K", "--size", "3M", "a", "b", "c",
        ],
    );
    assert!(o.status.success(), "{}", output_text(&o));
    let message = refused(d, &["replace", "9", "new", "a", "b", "c"]);
    assert!(message.contains("not a member"), "{message}");
    assert!(
        !d.join("new").exists(),
        "the refused replace left 'new' behind"
    );
}

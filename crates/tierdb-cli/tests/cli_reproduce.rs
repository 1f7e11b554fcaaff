//! `tierdb reproduce` from the command line: its sections, a bad selection, and a
//! section whose experiment fails (the report says so and the command fails).

mod common;
use common::{stderr, tierdb};

#[test]
fn list_names_every_section() {
    let o = tierdb(&["reproduce", "--list"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    for name in ["three-tier-fig9", "nvcache", "engine"] {
        assert!(text.lines().any(|l| l.starts_with(name)), "{name} missing from:\n{text}");
    }
}

#[test]
fn a_selection_that_matches_nothing_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rep").display().to_string();
    let o = tierdb(&["reproduce", "--only", "no-such-section", "--out", &out, "--quiet"]);
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(e.contains("matches no section") && e.contains("three-tier-fig9"), "{e}");
}

#[test]
fn a_failing_experiment_fails_the_command_and_shows_no_figures() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("rep");
    // SSD files "in" a regular file: the child cannot create them and fails at once.
    let not_a_dir = dir.path().join("a-file");
    std::fs::write(&not_a_dir, b"not a directory").unwrap();
    let missing = not_a_dir.display().to_string();
    let o = tierdb(&[
        "reproduce",
        "--only",
        "three-tier-fig9",
        "--ssd-dir",
        &missing,
        "--out",
        &out.display().to_string(),
        "--quiet",
    ]);
    assert!(!o.status.success(), "a failed section must fail the command");
    assert!(stderr(&o).contains("1 section(s) failed"), "{}", stderr(&o));
    let md = std::fs::read_to_string(out.join("papers.md")).expect("the report is written even when a section fails");
    assert!(md.contains("**1 section(s) failed**"), "{md}");
    assert!(md.contains("**Failed**") && md.contains("exited with"), "{md}");
    assert!(!md.contains("| three-tier | Figure 9 |"), "a failed section has no rows in the summary:\n{md}");
    let log = out.join("papers/logs/three-tier-fig9.log");
    assert!(log.exists(), "the child's log is kept");
}

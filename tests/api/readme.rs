//! The README: one screen and a half for a newcomer, its curl tour run as
//! written against a live server (by the guide's example runner).

use crate::guide;
use crate::support;

use support::TestApp;

/// About one screen and a half: what eds is, two commands, the tour, the
/// comparison, the benchmark summary and the guide's links; the rest is in the guide.
const README_MAX_LINES: usize = 110;

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
}

#[tokio::test]
async fn readme_walkthrough_runs_verbatim() {
    let examples = guide::examples(&readme());
    assert_eq!(examples.len(), 1, "the README marks its walk-through");
    assert!(examples[0].expected.is_some(), "the walk-through shows what it prints");
    assert_eq!(examples[0].script, guide::tour(), "the README's tour is the guide's");
    let app = TestApp::start().await;
    assert_eq!(guide::run_examples(&app, None, &examples).await, Vec::<String>::new());
}

#[test]
fn readme_is_about_one_screen_and_a_half() {
    let lines = readme().lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines: move the rest into the guide"
    );
}

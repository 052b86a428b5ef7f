//! The README's curl walk-through, run as written against a live server.

mod common;

use common::TestApp;

#[tokio::test]
async fn readme_walkthrough_runs_verbatim() {
    let app = TestApp::start().await;
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let block = readme
        .split("<!-- walkthrough:start -->")
        .nth(1)
        .and_then(|rest| rest.split("<!-- walkthrough:end -->").next())
        .expect("the README marks its walk-through");
    let script = block
        .lines()
        .filter(|line| !line.starts_with("```"))
        .collect::<Vec<_>>()
        .join("\n");
    let output = tokio::process::Command::new("sh")
        .arg("-ec")
        .arg(&script)
        .env("EDS", &app.url)
        .env("KEY", &app.key)
        .output()
        .await
        .expect("run sh");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "walk-through failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines[0].contains(r#""string":"Dune""#), "{stdout}");
    assert_eq!(lines[1], r#"{"count":1,"titles":["Dune"]}"#);
}

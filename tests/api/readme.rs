//! The README's curl walk-through, run as written against a live server.

use crate::support;

use support::TestApp;

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

const CONFIG_START: &str = "<!-- config:start -->";
const CONFIG_END: &str = "<!-- config:end -->";

/// One row per key of `config/default.toml`: the dotted key, its default and
/// the comment lines right above it. Panics on a key without a comment.
fn config_table(toml: &str) -> String {
    let mut table = String::from("| key | default | meaning |\n|---|---|---|\n");
    let (mut section, mut comment) = (String::new(), Vec::new());
    for line in toml.lines().map(str::trim) {
        if line.is_empty() {
            comment.clear();
        } else if let Some(text) = line.strip_prefix('#') {
            comment.push(text.trim().to_owned());
        } else if let Some(name) = line.strip_prefix('[').and_then(|rest| rest.strip_suffix(']')) {
            section = name.to_owned();
            comment.clear();
        } else {
            let (key, value) = line.split_once('=').unwrap_or_else(|| panic!("not a key: {line}"));
            let key = format!("{section}.{}", key.trim());
            assert!(!comment.is_empty(), "config/default.toml: {key} has no comment");
            let value = value.trim();
            let default = match value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
                Some(text) if !text.is_empty() => text,
                _ => value,
            };
            let meaning = comment.join(" ").replace('|', "\\|");
            table.push_str(&format!("| `{key}` | `{default}` | {meaning} |\n"));
            comment.clear();
        }
    }
    table
}

/// The README's configuration table is `config_table` of `config/default.toml`.
/// `EDS_WRITE_README=1 cargo test --test api readme::readme_configuration` rewrites it.
#[test]
fn readme_configuration_table_is_generated_from_config_default_toml() {
    let root = env!("CARGO_MANIFEST_DIR");
    let toml = std::fs::read_to_string(format!("{root}/config/default.toml")).unwrap();
    let readme_path = format!("{root}/README.md");
    let readme = std::fs::read_to_string(&readme_path).unwrap();
    let (before, rest) = readme
        .split_once(CONFIG_START)
        .expect("the README marks its configuration table");
    let (current, after) = rest.split_once(CONFIG_END).expect("the configuration table ends");
    let expected = format!("\n{}", config_table(&toml));
    if current == expected {
        return;
    }
    if std::env::var_os("EDS_WRITE_README").is_some() {
        std::fs::write(
            &readme_path,
            format!("{before}{CONFIG_START}{expected}{CONFIG_END}{after}"),
        )
        .unwrap();
        return;
    }
    panic!(
        "README.md's configuration table differs from config/default.toml; expected:\n{expected}\n\
         (EDS_WRITE_README=1 cargo test --test api readme::readme_configuration writes it)"
    );
}

#[test]
fn every_key_in_config_default_toml_has_a_comment() {
    let toml = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config/default.toml")).unwrap();
    let table = config_table(&toml);
    assert!(table.contains("| `limits.enabled` | `true` |"), "{table}");
    assert!(table.contains("| `database.url` | `\"\"` |"), "{table}");
}

//! The guide (`docs/guide/src/`, built by mdBook) and the README, checked as
//! a reader meets them: every relative link and anchor resolves, every page
//! is in the table of contents and short enough to read, every marked curl
//! example runs against a live server with the output it shows, and the
//! configuration reference is `config/default.toml`'s.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use crate::support::TestApp;

mod serving;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const GUIDE: &str = "docs/guide/src";
/// A page longer than this is split: a reader should not scroll through a reference.
const MAX_PAGE_LINES: usize = 170;

pub const EXAMPLE_START: &str = "<!-- walkthrough:start -->";
pub const EXAMPLE_END: &str = "<!-- walkthrough:end -->";
const NOT_RUN: &str = "<!-- not-run:";

/// Every markdown file of the guide, and the README, as (path from the checkout, text).
fn documents() -> BTreeMap<PathBuf, String> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                found.push(path);
            }
        }
    }
    let mut paths = vec![Path::new(ROOT).join("README.md")];
    walk(&Path::new(ROOT).join(GUIDE), &mut paths);
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            (path.strip_prefix(ROOT).unwrap().to_owned(), text)
        })
        .collect()
}

/// The lines outside fenced code blocks.
fn prose_lines(text: &str) -> Vec<&str> {
    let mut fenced = false;
    text.lines()
        .filter(|line| {
            if line.trim_start().starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .collect()
}

fn without_code_spans(line: &str) -> String {
    line.split('`').step_by(2).collect::<Vec<_>>().join("")
}

/// Every link target of `text`: `[text](target)` and `![alt](target)`.
fn link_targets(text: &str) -> Vec<String> {
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    prose_lines(text)
        .into_iter()
        .flat_map(|line| {
            let line = without_code_spans(line);
            link.captures_iter(&line)
                .map(|found| found[1].to_owned())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A heading's id as mdBook makes it (and GitHub, for these headings): the
/// text without markup, lower-cased, spaces as `-`, other punctuation dropped;
/// a repeated id gets `-1`, `-2`, ...
fn heading_ids(text: &str) -> HashSet<String> {
    let link = regex::Regex::new(r"\[([^\]]*)\]\([^)]*\)").unwrap();
    let mut ids = HashSet::new();
    for line in prose_lines(text) {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let heading = link.replace_all(heading.trim_start_matches('#'), "$1");
        let id: String = heading
            .replace(['`', '*'], "")
            .trim()
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                c if c.is_alphanumeric() || c == '_' || c == '-' => Some(c),
                c if c.is_whitespace() => Some('-'),
                _ => None,
            })
            .collect();
        let mut unique = id.clone();
        let mut counter = 1;
        while !ids.insert(unique.clone()) {
            unique = format!("{id}-{counter}");
            counter += 1;
        }
    }
    ids
}

/// Where `target`, written in `document`, leads: a file and an anchor, or the
/// reason it leads nowhere. Outside links (a scheme) are not followed.
fn resolve(document: &Path, target: &str) -> Option<Result<(PathBuf, Option<String>), String>> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor.to_owned())),
        None => (target, None),
    };
    if path.starts_with('/') {
        return Some(Err(format!("{target}: a path from the server's root, not a file")));
    }
    let file = if path.is_empty() {
        document.to_owned()
    } else {
        normalize(&document.parent().unwrap().join(path))
    };
    if !Path::new(ROOT).join(&file).is_file() {
        return Some(Err(format!("{target}: no file {}", file.display())));
    }
    if document.starts_with(GUIDE) && !file.starts_with(GUIDE) {
        return Some(Err(format!("{target}: outside the book, which mdBook would not copy")));
    }
    Some(Ok((file, anchor)))
}

/// `a/b/../c` as `a/c`.
fn normalize(path: &Path) -> PathBuf {
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::CurDir => {}
            other => parts.push(other.as_os_str()),
        }
    }
    parts.iter().collect()
}

#[test]
fn every_relative_link_of_the_guide_and_readme_leads_to_a_file_and_heading() {
    let documents = documents();
    let mut broken = Vec::new();
    for (document, text) in &documents {
        for target in link_targets(text) {
            match resolve(document, &target) {
                None => {}
                Some(Err(reason)) => broken.push(format!("{}: {reason}", document.display())),
                Some(Ok((file, Some(anchor)))) => {
                    let ids = documents.get(&file).map(|text| heading_ids(text));
                    if !ids.is_some_and(|ids| ids.contains(&anchor)) {
                        broken.push(format!("{}: {target}: no heading #{anchor}", document.display()));
                    }
                }
                Some(Ok(_)) => {}
            }
        }
    }
    assert_eq!(broken, Vec::<String>::new());
}

#[test]
fn a_broken_link_or_anchor_is_found() {
    let page = Path::new(GUIDE).join("api/query.md");
    assert!(matches!(resolve(&page, "writing.md#safe-retries"), Some(Ok(_))));
    assert!(matches!(resolve(&page, "missing.md"), Some(Err(_))));
    assert!(matches!(resolve(&page, "../../../../Makefile"), Some(Err(_))));
    assert!(matches!(resolve(&page, "/guide/index.html"), Some(Err(_))));
    assert!(resolve(&page, "https://example.com/x.md").is_none());
    let ids = heading_ids("# Batches and restore\n## `Idempotency-Key` [retries](x.md)\n## Twice\n## Twice\n");
    let expected = ["batches-and-restore", "idempotency-key-retries", "twice", "twice-1"];
    assert_eq!(ids, expected.map(str::to_owned).into_iter().collect());
    assert_eq!(
        link_targets("see [a](a.md), `[b](b.md)`\n```\n[c](c.md)\n```\n"),
        ["a.md"]
    );
}

#[test]
fn every_page_of_the_guide_is_in_its_table_of_contents() {
    let documents = documents();
    let summary = Path::new(GUIDE).join("SUMMARY.md");
    let listed: BTreeSet<PathBuf> = link_targets(&documents[&summary])
        .iter()
        .filter_map(|target| resolve(&summary, target)?.ok())
        .map(|(file, _)| file)
        .collect();
    let pages: BTreeSet<PathBuf> = documents
        .keys()
        .filter(|path| path.starts_with(GUIDE) && **path != summary)
        .cloned()
        .collect();
    let missing: Vec<_> = pages.difference(&listed).collect();
    assert!(missing.is_empty(), "pages missing from SUMMARY.md: {missing:?}");
}

#[test]
fn every_fenced_block_of_the_guide_and_readme_is_closed() {
    let open: Vec<String> = documents()
        .iter()
        .filter(|(_, text)| text.lines().filter(|line| line.trim_start().starts_with("```")).count() % 2 == 1)
        .map(|(path, _)| path.display().to_string())
        .collect();
    assert_eq!(open, Vec::<String>::new());
}

#[test]
fn no_page_of_the_guide_is_longer_than_a_few_screens() {
    let long: Vec<String> = documents()
        .iter()
        .filter(|(path, text)| path.starts_with(GUIDE) && text.lines().count() > MAX_PAGE_LINES)
        .map(|(path, text)| format!("{}: {} lines", path.display(), text.lines().count()))
        .collect();
    assert_eq!(long, Vec::<String>::new());
}

/// One marked example: the commands, and the output they print when given.
#[derive(Debug, PartialEq)]
pub struct Example {
    pub script: String,
    pub expected: Option<Vec<String>>,
}

/// The fenced blocks of `text`, each as its body's lines.
fn fenced_blocks(text: &str) -> Vec<Vec<&str>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<&str>> = None;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            match current.take() {
                Some(block) => blocks.push(block),
                None => current = Some(Vec::new()),
            }
        } else if let Some(block) = current.as_mut() {
            block.push(line);
        }
    }
    blocks
}

/// `text` cut at its marker lines: the parts outside the examples, and the examples' regions.
fn regions(text: &str) -> (String, Vec<String>) {
    let (mut outside, mut inside) = (String::new(), Vec::new());
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (line.trim(), current.as_mut()) {
            (EXAMPLE_START, None) => current = Some(String::new()),
            (EXAMPLE_END, Some(_)) => inside.extend(current.take()),
            (_, Some(region)) => region.push_str(&format!("{line}\n")),
            (_, None) => outside.push_str(&format!("{line}\n")),
        }
    }
    (outside, inside)
}

/// The examples between lines [`EXAMPLE_START`] and [`EXAMPLE_END`]: the
/// first fenced block runs, a second one is its output (`...` stands for any text).
pub fn examples(text: &str) -> Vec<Example> {
    regions(text)
        .1
        .iter()
        .map(|region| {
            let mut blocks = fenced_blocks(region).into_iter();
            let script = blocks.next().expect("an example holds a fenced block").join("\n");
            let expected = blocks
                .next()
                .map(|lines| lines.into_iter().map(str::to_owned).collect());
            Example { script, expected }
        })
        .collect()
}

/// Every fenced shell block outside the examples that calls curl, with
/// the reason it is not run (`None` when it is not marked).
fn unrun_curl_blocks(text: &str) -> Vec<Option<String>> {
    let (outside, _) = regions(text);
    let mut found = Vec::new();
    let mut reason: Option<String> = None;
    let mut fenced = false;
    let mut block = String::new();
    for line in outside.lines() {
        if line.trim_start().starts_with("```") {
            if fenced && block.contains("curl ") {
                found.push(reason.take());
            }
            fenced = !fenced;
            block.clear();
        } else if fenced {
            block.push_str(line);
        } else if let Some(why) = line.trim().strip_prefix(NOT_RUN) {
            reason = Some(why.trim_end_matches("-->").trim().to_owned());
        } else if !line.trim().is_empty() {
            reason = None;
        }
    }
    found
}

#[test]
fn every_curl_example_runs_or_says_why_not() {
    let mut unmarked = Vec::new();
    for (path, text) in documents() {
        for reason in unrun_curl_blocks(&text) {
            match reason {
                Some(why) => println!("not run: {}: {why}", path.display()),
                None => unmarked.push(path.display().to_string()),
            }
        }
    }
    assert_eq!(
        unmarked,
        Vec::<String>::new(),
        "curl blocks neither run nor marked not-run"
    );
}

/// `line` matches `pattern` where each `...` stands for any text.
fn matches_pattern(pattern: &str, line: &str) -> bool {
    let mut pieces = pattern.split("...");
    let first = pieces.next().unwrap();
    let Some(mut rest) = line.strip_prefix(first) else {
        return false;
    };
    let pieces: Vec<&str> = pieces.collect();
    for (at, piece) in pieces.iter().enumerate() {
        if at == pieces.len() - 1 {
            return rest.ends_with(piece);
        }
        match rest.find(piece) {
            Some(found) => rest = &rest[found + piece.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

#[test]
fn expected_output_matches_with_dots_for_any_text() {
    assert!(matches_pattern(r#"{"_id":"...","n":1}"#, r#"{"_id":"6b09","n":1}"#));
    assert!(!matches_pattern(r#"{"_id":"...","n":1}"#, r#"{"_id":"6b09","n":2}"#));
    assert!(matches_pattern("id: ...", "id: 81"));
    assert!(!matches_pattern("same", "same and more"));
    assert!(matches_pattern(".../a?b=...&c", "http://x/a?b=1&c"));
}

const MARK: &str = "@@example ";

/// Runs `examples` in one shell, in order (so later ones use what earlier ones
/// set), after `prelude` (its output dropped), against `app`; the failures.
pub async fn run_examples(app: &TestApp, prelude: Option<&str>, examples: &[Example]) -> Vec<String> {
    let mut script = prelude
        .map(|prelude| format!("{{\n{prelude}\n}} > /dev/null\n"))
        .unwrap_or_default();
    for (at, example) in examples.iter().enumerate() {
        script.push_str(&format!("printf '\\n{MARK}{at}\\n'\n{}\n", example.script));
    }
    let output = tokio::process::Command::new("sh")
        .arg("-ec")
        .arg(&script)
        .env("EDS", &app.url)
        .env("KEY", &app.key)
        .output()
        .await
        .expect("run sh");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut printed: Vec<Vec<&str>> = Vec::new();
    for line in stdout.lines() {
        if line.starts_with(MARK) {
            printed.push(Vec::new());
        } else if let Some(lines) = printed.last_mut() {
            lines.push(line);
        }
    }
    let mut failures = Vec::new();
    if !output.status.success() {
        failures.push(format!(
            "example {} failed: {stdout}\n{}",
            printed.len().saturating_sub(1),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    for (at, (example, lines)) in examples.iter().zip(&printed).enumerate() {
        let lines: Vec<&str> = lines.iter().copied().skip_while(|l| l.is_empty()).collect();
        let lines = &lines[..lines.iter().rposition(|l| !l.is_empty()).map_or(0, |last| last + 1)];
        let Some(expected) = &example.expected else { continue };
        let same =
            expected.len() == lines.len() && expected.iter().zip(lines).all(|(want, got)| matches_pattern(want, got));
        if !same {
            failures.push(format!(
                "example {at} printed\n{}\nnot\n{}",
                lines.join("\n"),
                expected.join("\n")
            ));
        }
    }
    failures
}

/// The tour of the getting-started page: every other page's examples continue from it.
pub fn tour() -> String {
    let page = std::fs::read_to_string(Path::new(ROOT).join(GUIDE).join("getting-started.md")).unwrap();
    examples(&page).swap_remove(0).script
}

#[tokio::test]
async fn every_example_of_the_guide_runs_against_a_server_as_shown() {
    let tour = tour();
    let mut failures = Vec::new();
    let mut ran = 0;
    for (path, text) in documents() {
        let examples = examples(&text);
        if examples.is_empty() || !path.starts_with(GUIDE) {
            continue;
        }
        let prelude = (examples[0].script != tour).then_some(tour.as_str());
        let app = TestApp::start().await;
        for failure in run_examples(&app, prelude, &examples).await {
            failures.push(format!("{}: {failure}", path.display()));
        }
        ran += examples.len();
    }
    assert!(ran >= 15, "only {ran} examples found");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[tokio::test]
async fn an_example_printing_other_output_fails() {
    let app = TestApp::start().await;
    let example = |script: &str, expected: &str| Example {
        script: script.to_owned(),
        expected: Some(vec![expected.to_owned()]),
    };
    let passing = [example("echo \"$EDS\" | cut -c1-7", "http://")];
    assert_eq!(run_examples(&app, None, &passing).await, Vec::<String>::new());
    let wrong = [example("curl -s \"$EDS/health\"", r#"{"status":"down"}"#)];
    assert_eq!(run_examples(&app, None, &wrong).await.len(), 1);
    let failing = [example("curl -sf \"$EDS/api/demo/entity/missing\"", "...")];
    assert!(!run_examples(&app, None, &failing).await.is_empty());
}

#[test]
fn examples_and_their_output_are_read_from_the_markers() {
    let text = format!(
        "Marked `{EXAMPLE_START}`:\n{EXAMPLE_START}\n```sh\necho a\n```\n\n```text\na\n```\n{EXAMPLE_END}\n\
         <!-- not-run: needs a browser -->\n```sh\ncurl -s x\n```\n```sh\ncurl -s y\n```\n"
    );
    let found = examples(&text);
    assert_eq!(
        found,
        [Example {
            script: "echo a".to_owned(),
            expected: Some(vec!["a".to_owned()])
        }]
    );
    assert_eq!(unrun_curl_blocks(&text), [Some("needs a browser".to_owned()), None]);
}

const CONFIG_PAGE: &str = "docs/guide/src/operating/configuration.md";
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

/// The guide's configuration reference is `config_table` of `config/default.toml`.
/// `EDS_WRITE_GUIDE=1 cargo test --test api guide::configuration` rewrites it
/// (`EDS_WRITE_README=1` too, as before the reference moved into the guide).
#[test]
fn configuration_reference_is_generated_from_config_default_toml() {
    let toml = std::fs::read_to_string(format!("{ROOT}/config/default.toml")).unwrap();
    let page_path = format!("{ROOT}/{CONFIG_PAGE}");
    let page = std::fs::read_to_string(&page_path).unwrap();
    let (before, rest) = page.split_once(CONFIG_START).expect("the page marks its table");
    let (current, after) = rest.split_once(CONFIG_END).expect("the configuration table ends");
    let expected = format!("\n{}", config_table(&toml));
    if current == expected {
        return;
    }
    if ["EDS_WRITE_GUIDE", "EDS_WRITE_README"]
        .iter()
        .any(|var| std::env::var_os(var).is_some())
    {
        std::fs::write(
            &page_path,
            format!("{before}{CONFIG_START}{expected}{CONFIG_END}{after}"),
        )
        .unwrap();
        return;
    }
    panic!(
        "{CONFIG_PAGE} differs from config/default.toml; expected:\n{expected}\n\
         (EDS_WRITE_GUIDE=1 cargo test --test api guide::configuration writes it)"
    );
}

#[test]
fn every_key_in_config_default_toml_has_a_comment() {
    let toml = std::fs::read_to_string(format!("{ROOT}/config/default.toml")).unwrap();
    let table = config_table(&toml);
    assert!(table.contains("| `limits.enabled` | `true` |"), "{table}");
    assert!(table.contains("| `database.url` | `\"\"` |"), "{table}");
}

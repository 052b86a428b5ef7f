//! The guide as a running server serves it (`GET /guide/...` from
//! `docs.guide_dir`), and the docs page's links into it.

use crate::support;

use support::{Storage, TestApp, tempdir};

use super::ROOT;

/// A built guide of two pages, as mdBook lays one out.
fn built_guide() -> tempdir::Dir {
    let dir = tempdir::Dir::new();
    std::fs::create_dir_all(dir.0.join("api")).unwrap();
    std::fs::write(dir.0.join("index.html"), "<!DOCTYPE html><title>Introduction</title>").unwrap();
    std::fs::write(
        dir.0.join("api/query.html"),
        "<!DOCTYPE html><title>The query language</title>",
    )
    .unwrap();
    std::fs::write(dir.0.join("book.css"), "body { margin: 0 }").unwrap();
    dir
}

async fn app_serving(guide_dir: &std::path::Path) -> TestApp {
    let overrides = [("docs.guide_dir", guide_dir.to_string_lossy().into_owned())];
    TestApp::start_with(Storage::Local, &overrides).await
}

#[tokio::test]
async fn the_built_guide_is_served_at_guide_with_its_content_types() {
    let guide = built_guide();
    let app = app_serving(&guide.0).await;
    for (path, content_type, text) in [
        ("/guide/", "text/html", "Introduction"),
        ("/guide/api/query.html", "text/html", "The query language"),
        ("/guide/book.css", "text/css", "margin"),
    ] {
        let response = app.http.get(format!("{}{path}", app.url)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let header = response.headers()["content-type"].to_str().unwrap().to_owned();
        assert!(header.starts_with(content_type), "{path}: {header}");
        assert!(response.text().await.unwrap().contains(text), "{path}");
    }
}

#[tokio::test]
async fn a_path_outside_the_guide_or_missing_from_it_is_404() {
    let guide = built_guide();
    std::fs::write(guide.0.join(".secret"), "not for the web").unwrap();
    let app = app_serving(&guide.0).await;
    for path in [
        "/guide/missing.html",
        "/guide/.secret",
        "/guide/..%2f..%2fCargo.toml",
        "/guide/api/../../x",
    ] {
        let response = app.http.get(format!("{}{path}", app.url)).send().await.unwrap();
        assert_eq!(response.status(), 404, "{path}");
        let body = response.text().await.unwrap();
        assert!(!body.contains("not for the web"), "{path}: {body}");
    }
    let (status, body) = app.call("GET", "/guide/missing.html", None, None).await;
    assert_eq!((status, body["error"].as_str()), (404, Some("not_found")), "{body}");
}

#[tokio::test]
async fn without_a_built_guide_every_guide_path_answers_a_page_saying_run_make_docs() {
    let empty = tempdir::Dir::new();
    let app = app_serving(&empty.0.join("book")).await;
    for path in ["/guide/", "/guide/api/query.html"] {
        let response = app.http.get(format!("{}{path}", app.url)).send().await.unwrap();
        assert_eq!(response.status(), 404, "{path}");
        assert!(
            response.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/html")
        );
        assert!(response.text().await.unwrap().contains("make docs"), "{path}");
    }
}

#[tokio::test]
async fn every_tag_of_the_api_document_links_to_its_page_of_the_guide() {
    let app = TestApp::start().await;
    let (status, document) = app.call("GET", "/api/openapi.json", None, None).await;
    assert_eq!(status, 200);
    let tags = document["tags"].as_array().expect("tags");
    let used: std::collections::BTreeSet<&str> = document["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| item.as_object().unwrap().values())
        .filter_map(|operation| operation["tags"].as_array())
        .flatten()
        .filter_map(|tag| tag.as_str())
        .collect();
    for name in &used {
        let tag = tags
            .iter()
            .find(|tag| tag["name"] == *name)
            .unwrap_or_else(|| panic!("tag {name}"));
        let url = tag["externalDocs"]["url"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: {tag}"));
        let page = url.strip_prefix("/guide/").expect("a page of the guide");
        let source = page.replace(".html", ".md");
        let file = std::path::Path::new(ROOT).join("docs/guide/src").join(&source);
        assert!(file.is_file(), "{name}: {url} has no page {source}");
    }
}

//! The OpenAPI document (`GET /api/openapi.json`) and the docs page (`GET /docs`).

use crate::support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value as Json;
use support::{TestApp, tempdir};

async fn served_document(app: &TestApp) -> Json {
    let (status, document) = app.call("GET", "/api/openapi.json", None, None).await;
    assert_eq!(status, 200, "{document}");
    document
}

/// (method, path) of every operation in the document.
fn documented(document: &Json) -> BTreeSet<(String, String)> {
    let paths = document["paths"].as_object().expect("paths");
    paths
        .iter()
        .flat_map(|(path, item)| {
            let methods = item.as_object().expect("path item").keys();
            methods
                .filter(|method| {
                    ["get", "put", "post", "delete", "options", "head", "patch", "trace"].contains(&method.as_str())
                })
                .map(move |method| (method.to_uppercase(), path.clone()))
        })
        .collect()
}

/// The router's pattern as an OpenAPI path: `{key:.*}` is `{key}`.
fn openapi_path(pattern: &str) -> String {
    let segment = regex::Regex::new(r"\{([A-Za-z_]+):[^}]*\}").unwrap();
    segment.replace_all(pattern, "{$1}").into_owned()
}

#[tokio::test]
async fn every_route_is_documented_and_every_operation_served() {
    let app = TestApp::start().await;
    let document = served_document(&app).await;
    assert_eq!(
        document["openapi"].as_str().map(|v| &v[..4]),
        Some("3.1."),
        "{document}"
    );
    let served: BTreeSet<(String, String)> = eds::http::endpoints()
        .iter()
        .map(|endpoint| (endpoint.method.to_string(), openapi_path(endpoint.path)))
        .collect();
    let documented = documented(&document);
    let undocumented: Vec<_> = served.difference(&documented).collect();
    assert!(
        undocumented.is_empty(),
        "routes without an OpenAPI operation: {undocumented:?}"
    );
    let unserved: Vec<_> = documented.difference(&served).collect();
    assert!(
        unserved.is_empty(),
        "documented operations no route serves: {unserved:?}"
    );
}

#[tokio::test]
async fn every_operation_has_an_example_and_documents_its_errors() {
    let app = TestApp::start().await;
    let document = served_document(&app).await;
    for (method, path) in documented(&document) {
        let operation = &document["paths"][&path][method.to_lowercase()];
        let responses = operation["responses"].as_object().expect("responses");
        let has_example = responses
            .values()
            .flat_map(|response| response["content"].as_object().into_iter().flatten())
            .any(|(_, content)| content.get("example").is_some());
        // The storage routes answer file bytes; an example of those says nothing.
        assert!(
            has_example || path.starts_with("/storage/"),
            "{method} {path} has no example"
        );
        assert!(responses.contains_key("429"), "{method} {path} lacks 429");
        if path.starts_with("/api/{db}") {
            for status in ["401", "404"] {
                let error = &responses[status]["content"]["application/json"]["schema"]["$ref"];
                assert_eq!(
                    error, "#/components/schemas/ErrorBody",
                    "{method} {path} lacks its {status} error body"
                );
            }
        }
    }
    let schemes = &document["components"]["securitySchemes"];
    assert_eq!(schemes["jwt"]["scheme"], "bearer");
    assert_eq!(schemes["jwt"]["bearerFormat"], "JWT");
    assert_eq!(
        document["paths"]["/api/auth"]["get"]["security"][0]["apiKey"],
        Json::Array(vec![])
    );
    let list_parameters: BTreeSet<&str> = document["paths"]["/api/{db}/entity"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|parameter| parameter["name"].as_str())
        .collect();
    for name in ["db", "filters", "props", "sort", "limit", "skip", "q", "group"] {
        assert!(list_parameters.contains(name), "GET /api/{{db}}/entity lacks {name}");
    }
}

/// The Python of the virtualenv `scripts/install-deps.sh` puts the validator in.
fn validator_python() -> PathBuf {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join(".data/venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/install-deps.sh (it installs openapi-spec-validator)",
        python.display()
    );
    python
}

#[tokio::test]
async fn the_served_document_passes_openapi_spec_validator() {
    let app = TestApp::start().await;
    let text = app
        .http
        .get(format!("{}/api/openapi.json", app.url))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let dir = tempdir::Dir::new();
    let file = dir.0.join("openapi.json");
    std::fs::write(&file, &text).unwrap();
    let output = Command::new(validator_python())
        .args(["-m", "openapi_spec_validator", "--schema", "3.1"])
        .arg(&file)
        .output()
        .expect("run openapi_spec_validator");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "openapi-spec-validator: {report}");
    assert!(report.contains("OK"), "openapi-spec-validator said: {report}");
}

#[tokio::test]
async fn docs_page_and_its_files_are_served_with_their_content_types() {
    let app = TestApp::start().await;
    let get = |path: &str| app.http.get(format!("{}{path}", app.url)).send();
    let content_type = |response: &reqwest::Response| response.headers()["content-type"].to_str().unwrap().to_owned();
    let page = get("/docs").await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(content_type(&page).starts_with("text/html"));
    let html = page.text().await.unwrap();
    // Nothing outside: every reference is relative to the service.
    let absolute = regex::Regex::new(r#"(?i)(https?:)?//[a-z0-9]"#).unwrap();
    assert!(
        !absolute.is_match(&html),
        "the docs page references another origin: {html}"
    );
    let references = regex::Regex::new(r#"(?:src|href)="([^"]+)""#).unwrap();
    let mut files = 0;
    for reference in references.captures_iter(&html) {
        let response = get(&format!("/{}", &reference[1])).await.unwrap();
        assert_eq!(response.status(), 200, "{}", &reference[1]);
        let expected = if reference[1].ends_with(".css") {
            "text/css"
        } else {
            "text/javascript"
        };
        assert!(content_type(&response).starts_with(expected), "{}", &reference[1]);
        files += 1;
    }
    assert_eq!(files, 3, "{html}");
    let init = get("/docs/init.js").await.unwrap().text().await.unwrap();
    assert!(!absolute.is_match(&init), "init.js references another origin");
    let (status, body) = app.call("GET", "/docs/missing.js", None, None).await;
    assert_eq!((status, &body["error"]), (404, &Json::from("not_found")));
}

#[tokio::test]
async fn docs_page_renders_every_path_in_headless_chromium_offline() {
    let app = TestApp::start().await;
    let document = served_document(&app).await;
    let profile = tempdir::Dir::new();
    let output = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            // Every host name but the app's own address fails to resolve: offline.
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
            "--virtual-time-budget=10000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.0.display()))
        .arg(format!("{}/docs", app.url))
        .output()
        .unwrap_or_else(|e| panic!("run chromium (scripts/install-deps.sh installs it): {e}"));
    let dom = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let paths: Vec<&String> = document["paths"].as_object().unwrap().keys().collect();
    let missing: Vec<_> = paths
        .iter()
        .filter(|path| !dom.contains(&format!("data-path=\"{path}\"")))
        .collect();
    assert!(missing.is_empty(), "not rendered: {missing:?}\n{dom}");
}

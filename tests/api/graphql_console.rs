//! The GraphQL query console: the page `GET /api/{db}/graphql` serves to a
//! browser, its policy, and its files at `/graphql-console/{file}`. The
//! console running a query in a real browser is in `tests/browser.rs`.

use std::collections::HashMap;

use actix_web::body::MessageBody;
use eds::http::views::graphql_console;
use reqwest::header::ACCEPT;
use serde_json::Value as Json;

use crate::support::TestApp;

/// A name no database can have, each character one HTML or JS would take for markup.
const HOSTILE_NAME: &str = r#"x"><script>alert('db')</script>&amp;"#;

/// The page `page(db)` answers: its headers (by lower-case name) and its HTML.
async fn page_of(db: &str) -> (HashMap<String, String>, String) {
    let response = graphql_console::page(db);
    assert_eq!(response.status(), 200);
    let headers = response
        .headers()
        .iter()
        .map(|(name, value)| (name.as_str().to_owned(), value.to_str().unwrap().to_owned()))
        .collect();
    let body = response.into_body().try_into_bytes().expect("the page is one body");
    (headers, String::from_utf8(body.to_vec()).unwrap())
}

/// The policy's directives by name.
fn directives(policy: &str) -> Vec<(String, String)> {
    policy
        .split(';')
        .filter_map(|directive| {
            let directive = directive.trim();
            let (name, sources) = directive.split_once(' ').unwrap_or((directive, ""));
            (!name.is_empty()).then(|| (name.to_owned(), sources.trim().to_owned()))
        })
        .collect()
}

fn directive<'a>(directives: &'a [(String, String)], name: &str) -> &'a str {
    directives
        .iter()
        .find(|(found, _)| found == name)
        .map(|(_, sources)| sources.as_str())
        .unwrap_or_else(|| panic!("no {name} in {directives:?}"))
}

#[tokio::test]
async fn graphql_console_page_shows_the_database_name_escaped() {
    let (_, html) = page_of(HOSTILE_NAME).await;
    assert!(!html.contains("<script>alert"), "{html}");
    assert!(!html.contains(r#"x">"#), "{html}");
    let escaped = "x&quot;&gt;&lt;script&gt;alert(&#39;db&#39;)&lt;/script&gt;&amp;amp;";
    assert_eq!(html.matches(escaped).count(), 2, "in the title and the heading: {html}");
    // the only scripts are the four files of this server's
    let scripts = regex::Regex::new(r"<script\b[^>]*>").unwrap();
    let tags: Vec<&str> = scripts.find_iter(&html).map(|tag| tag.as_str()).collect();
    assert_eq!(tags.len(), 4, "{html}");
    assert!(
        tags.iter().all(|tag| tag.contains(r#"src="/graphql-console/"#)),
        "{tags:?}"
    );
}

#[tokio::test]
async fn graphql_console_page_has_its_own_content_security_policy() {
    let (headers, _) = page_of("demo").await;
    let policy = &headers["content-security-policy"];
    let directives = directives(policy);
    assert_eq!(directive(&directives, "default-src"), "'none'");
    // scripts from this server only: no inline script, no eval
    assert_eq!(directive(&directives, "script-src"), "'self'");
    assert_eq!(directive(&directives, "connect-src"), "'self'");
    assert_eq!(directive(&directives, "img-src"), "'self' data:");
    assert_eq!(directive(&directives, "font-src"), "'self' data:");
    assert_eq!(directive(&directives, "frame-ancestors"), "'none'");
    assert!(
        !directives.iter().any(|(name, _)| name == "worker-src"),
        "GraphiQL 3 runs no worker: {policy}"
    );
    assert_eq!(headers["x-frame-options"], "DENY");
    assert_eq!(headers["cache-control"], "no-store");
    assert!(headers["content-type"].starts_with("text/html"));
}

#[tokio::test]
async fn graphql_console_files_the_page_names_are_served_with_their_content_types() {
    let app = TestApp::start().await;
    let (_, html) = page_of("demo").await;
    // nothing from another origin: every reference is relative to the page
    let absolute = regex::Regex::new(r#"(?i)(https?:)?//[a-z0-9]"#).unwrap();
    assert!(
        !absolute.is_match(&html),
        "the console references another origin: {html}"
    );
    // the same from the page's URL with the trailing `/` the API ignores
    let page_urls = ["/api/demo/graphql", "/api/demo/graphql/"]
        .map(|path| reqwest::Url::parse(&format!("{}{path}", app.url)).unwrap());
    let references = regex::Regex::new(r#"(?:src|href)="([^"]+)""#).unwrap();
    let mut files = Vec::new();
    for (page_url, reference) in page_urls
        .iter()
        .flat_map(|url| references.captures_iter(&html).map(move |found| (url, found)))
    {
        let url = page_url.join(&reference[1]).unwrap();
        let response = app.http.get(url.clone()).send().await.unwrap();
        assert_eq!(response.status(), 200, "{url}");
        let expected = if url.path().ends_with(".css") {
            "text/css"
        } else {
            "text/javascript"
        };
        let content_type = response.headers()["content-type"].to_str().unwrap();
        assert!(content_type.starts_with(expected), "{url}: {content_type}");
        assert_eq!(response.headers()["x-content-type-options"], "nosniff", "{url}");
        files.push(url.path().to_owned());
    }
    let names = [
        "/graphql-console/graphiql.min.css",
        "/graphql-console/console.css",
        "/graphql-console/react.production.min.js",
        "/graphql-console/react-dom.production.min.js",
        "/graphql-console/graphiql.min.js",
        "/graphql-console/init.js",
    ];
    assert_eq!(files, [names, names].concat());
    let init = app
        .http
        .get(format!("{}/graphql-console/init.js", app.url))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!absolute.is_match(&init), "init.js references another origin");
}

#[tokio::test]
async fn graphql_console_file_that_does_not_exist_is_404() {
    let app = TestApp::start().await;
    for missing in ["missing.js", "graphiql.min.js.map", "..%2Fdocs%2Finit.js"] {
        let (status, body) = app
            .call("GET", &format!("/graphql-console/{missing}"), None, None)
            .await;
        assert_eq!(
            (status, &body["error"]),
            (404, &Json::from("not_found")),
            "{missing}: {body}"
        );
    }
}

/// Needs the endpoint's own route (`GET /api/{db}/graphql`), which hands a
/// request accepting HTML to `graphql_console::page`.
#[tokio::test]
async fn graphql_console_is_served_at_the_endpoint_to_a_browser_with_its_policy() {
    let app = TestApp::start().await;
    let response = app
        .http
        .get(format!("{}/api/demo/graphql", app.url))
        .header(
            ACCEPT,
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let (expected_headers, expected_html) = page_of("demo").await;
    assert_eq!(
        response.headers()["content-security-policy"].to_str().unwrap(),
        expected_headers["content-security-policy"]
    );
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert_eq!(response.text().await.unwrap(), expected_html);
}

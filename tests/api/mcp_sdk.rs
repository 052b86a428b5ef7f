//! AI clients as they are shipped, against a real server: the official MCP
//! TypeScript SDK, given only the MCP URL, discovers the authorization
//! server, registers or presents its client ID metadata document (served
//! over https from the test), sends the person through the sign-in (the method
//! chooser, the e-mail form, the mailed link, the consent page: the
//! browser's part, played here) and calls every tool; a strict OAuth client
//! (oauth4webapi) runs the code flow and checks `iss` as RFC 9207 says.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Value as Json, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

use support::TestApp;
use support::document_server::{Answer, DocumentServer};
use support::email_login::client_at;
use support::oauth::{app_with_bob, app_with_bob_and, consent_page_through_the_chooser, location, register_client};
use support::smtp::SmtpSink;

const MCP: &str = "/api/demo/mcp";
const REDIRECT: &str = "https://client.example/callback";

/// A script of tests/mcp/sdk, checked installed (`scripts/fetch-node-tools.sh`).
fn script(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/sdk");
    assert!(
        dir.join("node_modules/@modelcontextprotocol/sdk").exists(),
        "{} lacks its packages: run scripts/fetch-node-tools.sh",
        dir.display()
    );
    dir.join(name)
}

/// Runs `node script args`, playing the person's browser whenever it writes
/// `{"authorize": URL}` (Bob signs in by e-mail through the method chooser
/// and allows the consent page); answers its `result`.
async fn run_client(app: &TestApp, sink: &SmtpSink, script: PathBuf, args: &[&str]) -> Json {
    let mut node = Command::new("node")
        .arg(script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run node");
    let mut stdin = node.stdin.take().unwrap();
    let mut lines = BufReader::new(node.stdout.take().unwrap()).lines();
    let mut mails = sink.mails().len();
    while let Some(line) = lines.next_line().await.unwrap() {
        let message: Json = serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"));
        if let Some(authorize) = message["authorize"].as_str() {
            let back = sign_in_through_the_chooser(app, sink, authorize, mails).await;
            mails += 1;
            stdin.write_all(format!("{back}\n").as_bytes()).await.unwrap();
        } else {
            return message["result"].clone();
        }
    }
    let output = node.wait_with_output().await.unwrap();
    panic!(
        "the client ended without a result: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The browser's part of an authorization as Bob: the method chooser, the
/// e-mail form, the mailed link (the mail after `mails`), the consent page
/// naming the client, allowed; answers where the browser is sent back.
async fn sign_in_through_the_chooser(app: &TestApp, sink: &SmtpSink, authorize: &str, mails: usize) -> String {
    let browser = client_at("127.0.0.1");
    let page = consent_page_through_the_chooser(app, sink, &browser, authorize, "bob@example.com", mails).await;
    assert!(
        page.html.contains("MCP SDK test client") || page.html.contains("Strict client"),
        "{}",
        page.html
    );
    location(&page.allow(&browser).await)
}

/// A `book` type Bob may see, with a searchable `title`, and a book Bob owns;
/// answers the type and the book.
async fn bobs_library(app: &TestApp, bob: &str) -> (String, String) {
    let owner = app.owner_token().await;
    let book_type = app.create_type(&owner, "book").await;
    let viewer = json!({"type": "_viewer", "reference": bob});
    assert_eq!(
        app.post(&format!("/api/demo/entity/{book_type}"), &owner, viewer)
            .await
            .0,
        200
    );
    app.define(
        &owner,
        &book_type,
        "title",
        "string",
        json!([{"type": "search", "boolean": true}]),
    )
    .await;
    let book = app
        .create(
            &owner,
            &book_type,
            json!([{"type": "title", "string": "Dune"}, {"type": "_owner", "reference": bob}]),
        )
        .await;
    (book_type, book)
}

/// Every tool of the SDK run, with Bob's library: the calls, and what
/// their answers must show.
fn calls(book_type: &str, book: &str) -> Json {
    json!([
        ["get_entity_type", {"name": "book"}],
        ["search_entities", {"query": "_type.string=book&q=dune&props=title"}],
        ["get_entity", {"_id": book}],
        ["get_entity_history", {"_id": book}],
        ["create_entity", {"properties": [{"type": "_type", "reference": book_type}, {"type": "title", "string": "Emma"}]}],
        ["add_properties", {"_id": book, "properties": [{"type": "title", "string": "Dune Messiah"}]}],
    ])
}

async fn assert_every_call_answered(app: &TestApp, result: &Json, book_type: &str, book: &str) {
    assert_eq!(result["server"], "eds");
    assert_eq!(
        result["scope"], "read write",
        "the scopes the metadata offers: {result}"
    );
    let tools = result["tools"].as_array().unwrap();
    for name in [
        "get_entity_type",
        "search_entities",
        "get_entity",
        "get_file_url",
        "create_entity",
    ] {
        assert!(tools.contains(&json!(name)), "{name} listed: {result}");
    }
    let answers = result["calls"].as_array().unwrap();
    for answer in answers {
        assert_eq!(answer["isError"], false, "{answer}");
    }
    assert_eq!(answers[0]["answer"]["types"][0]["entity"]["_id"], book_type);
    assert_eq!(answers[1]["answer"]["count"], 1, "{}", answers[1]);
    assert_eq!(answers[2]["answer"]["entity"]["_id"], book);
    let created = &answers[4]["answer"];
    assert!(created["_id"].as_str().is_some(), "{created}");
    assert!(created.to_string().contains("Emma"), "{created}");
    let owner = app.owner_token().await;
    let (_, dune) = app.get(&format!("/api/demo/entity/{book}"), &owner).await;
    assert!(dune.to_string().contains("Dune Messiah"), "{dune}");
}

#[tokio::test]
async fn the_typescript_sdk_given_only_the_mcp_url_registers_signs_in_and_calls_every_tool() {
    let (app, sink, bob) = app_with_bob().await;
    let (book_type, book) = bobs_library(&app, &bob).await;
    let url = format!("{}{MCP}", app.url);
    let calls = calls(&book_type, &book).to_string();
    let result = run_client(&app, &sink, script("client.mjs"), &[&url, &calls]).await;
    assert!(
        result["client_id"]
            .as_str()
            .is_some_and(|id| !id.starts_with("https://")),
        "a registered client: {result}"
    );
    assert_every_call_answered(&app, &result, &book_type, &book).await;
}

#[tokio::test]
async fn the_typescript_sdk_given_the_mcp_url_and_its_metadata_document_signs_in_and_calls_every_tool() {
    let documents = DocumentServer::https().await;
    let client_id = documents.url("/sdk/client.json");
    let document = json!({"client_id": client_id, "client_name": "MCP SDK test client", "redirect_uris": [REDIRECT]});
    documents.set("/sdk/client.json", Answer::Document(document.to_string(), None));
    let trusting = [
        ("oauth.allow_private_client_metadata", "true".to_owned()),
        ("oauth.client_metadata_ca_file", documents.ca_file.display().to_string()),
    ];
    let (app, sink, bob) = app_with_bob_and(&trusting).await;
    let (book_type, book) = bobs_library(&app, &bob).await;
    let url = format!("{}{MCP}", app.url);
    let calls = calls(&book_type, &book).to_string();
    let result = run_client(&app, &sink, script("client.mjs"), &[&url, &calls, &client_id]).await;
    assert_eq!(result["client_id"], client_id.as_str(), "no registration: {result}");
    assert!(documents.requests("/sdk/client.json") >= 1, "eds read the document");
    assert_every_call_answered(&app, &result, &book_type, &book).await;
}

#[tokio::test]
async fn a_strict_oauth_client_finds_iss_on_the_authorization_response_and_refuses_one_without_it() {
    let (app, sink, _) = app_with_bob().await;
    let client_id = register_client(&app, "Strict client", &[REDIRECT]).await;
    let resource = format!("{}{MCP}", app.url);
    let result = run_client(
        &app,
        &sink,
        script("strict_oauth.mjs"),
        &[&app.url, &client_id, &resource, REDIRECT],
    )
    .await;
    assert_eq!(result["iss_supported"], true, "{result}");
    assert_eq!(result["refused_without_iss"], true, "{result}");
    assert_eq!(
        result["token_type"].as_str().map(str::to_lowercase).as_deref(),
        Some("bearer")
    );
    let token = result["access_token"].as_str().unwrap();
    let (status, _) = app.get("/api/demo/entity?_type.string=person", token).await;
    assert_eq!(status, 200);
}

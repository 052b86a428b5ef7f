//! Least-privilege OAuth scopes, end to end: a client asks `read`, `write`
//! or both; the person is told in words what the app may do; the token
//! carries the scope; a `read` token reads as its person does and is
//! refused every write on REST and MCP with 403 `insufficient_scope` and
//! the step-up challenge, before anything is looked up.

use crate::support;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value as Json, json};
use support::TestApp;
use support::email_login::client_at;
use support::oauth::{
    ConsentPage, REDIRECT, VERIFIER, app_with_bob, authorize_url, authorize_with, location, param, register,
    sign_in_through_authorize, token,
};
use support::smtp::SmtpSink;

const BOB: &str = "bob@example.com";
const CHALLENGE: &str = r#"Bearer error="insufficient_scope", scope="write""#;
const NO_ENTITY: &str = "0123456789abcdef01234567";

/// The whole flow for Bob (authorize asking `scope`, or none; sign-in;
/// consent; token), the `mails` already received: the token answer.
async fn token_answer(app: &TestApp, sink: &SmtpSink, client_id: &str, scope: Option<&str>, mails: usize) -> Json {
    let back = authorize_with(app, sink, client_id, &[("scope", scope)], BOB, mails).await;
    let code = param(&back, "code").unwrap_or_else(|| panic!("a code: {back}"));
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
    ];
    let (status, answer) = token(app, "127.0.0.9", &form).await;
    assert_eq!(status, 200, "{answer}");
    answer
}

/// The claims of a JWT, unverified.
fn claims_of(jwt: &str) -> Json {
    let payload = jwt.split('.').nth(1).unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}

/// Bob's two tokens of one client: granted `read`, and granted `read write`.
struct Tokens {
    read: String,
    full: String,
}

/// An app with Bob and his read and full tokens (4 mails sent).
async fn app_with_bobs_tokens() -> (TestApp, SmtpSink, String, Tokens) {
    let (app, sink, bob) = app_with_bob().await;
    let client_id = register(&app).await;
    let read = token_answer(&app, &sink, &client_id, Some("read"), 2).await;
    let full = token_answer(&app, &sink, &client_id, None, 3).await;
    let tokens = Tokens {
        read: read["access_token"].as_str().unwrap().to_owned(),
        full: full["access_token"].as_str().unwrap().to_owned(),
    };
    (app, sink, bob, tokens)
}

/// Sends `method path` with `token` and a JSON `body`; answers the status,
/// the body and `WWW-Authenticate`.
async fn send(
    app: &TestApp,
    method: &str,
    path: &str,
    token: &str,
    body: Option<&Json>,
) -> (u16, Json, Option<String>) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = app
        .http
        .request(method, format!("{}{path}", app.url))
        .bearer_auth(token);
    if let Some(body) = body {
        request = request.json(body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|value| value.to_str().unwrap().to_owned());
    (status, response.json().await.unwrap_or(Json::Null), challenge)
}

/// Asserts the refusal of a write for its scope: 403, the error body, the challenge.
fn assert_refused_for_scope(what: &str, (status, body, challenge): (u16, Json, Option<String>)) {
    assert_eq!(status, 403, "{what}: {body}");
    assert_eq!(body["status"], 403, "{what}: {body}");
    assert_eq!(body["error"], "insufficient_scope", "{what}: {body}");
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{what}: {body}"
    );
    assert_eq!(challenge.as_deref(), Some(CHALLENGE), "{what}");
}

/// A book Bob owns, with a `name` value: answers the book and that value.
async fn bobs_book(app: &TestApp, owner: &str, bob: &str) -> (String, String) {
    let book_type = app.create_type(owner, "book").await;
    app.define(owner, &book_type, "photo", "file", json!([])).await;
    let book = app
        .create(
            owner,
            &book_type,
            json!([{"type": "name", "string": "Emma"}, {"type": "_owner", "reference": bob}]),
        )
        .await;
    let (_, read) = app.get(&format!("/api/demo/entity/{book}"), owner).await;
    let value = read["entity"]["name"][0]["_id"].as_str().unwrap().to_owned();
    (book, value)
}

#[tokio::test]
async fn a_read_scoped_token_reads_as_its_person_does() {
    let (app, _sink, bob, tokens) = app_with_bobs_tokens().await;
    let owner = app.owner_token().await;
    let (book, value) = bobs_book(&app, &owner, &bob).await;
    let book_type = app.find(&owner, "entity", "book").await;
    let private = app
        .create(&owner, &book_type, json!([{"type": "name", "string": "Owner's"}]))
        .await;
    for path in [
        format!("/api/demo/entity/{book}"),
        format!("/api/demo/entity/{bob}"),
        "/api/demo/entity?_type.string=book".to_owned(),
        format!("/api/demo/property/{value}"),
        format!("/api/demo/entity/{book}/history"),
        format!("/api/demo/entity/{private}"),
    ] {
        let (read_status, read_body, _) = send(&app, "GET", &path, &tokens.read, None).await;
        let (full_status, full_body, _) = send(&app, "GET", &path, &tokens.full, None).await;
        assert_eq!((read_status, &read_body), (full_status, &full_body), "{path}");
    }
    let (status, _, _) = send(&app, "GET", &format!("/api/demo/entity/{book}"), &tokens.read, None).await;
    assert_eq!(status, 200);
    let (status, _, _) = send(&app, "GET", &format!("/api/demo/entity/{private}"), &tokens.read, None).await;
    assert_eq!(status, 404, "what Bob cannot see stays hidden");
}

#[tokio::test]
async fn a_read_scoped_token_is_refused_on_every_writing_rest_route_and_nothing_is_written() {
    let (app, _sink, bob, tokens) = app_with_bobs_tokens().await;
    let owner = app.owner_token().await;
    let (book, value) = bobs_book(&app, &owner, &bob).await;
    let book_type = app.find(&owner, "entity", "book").await;
    let (_, before) = app.get(&format!("/api/demo/entity/{book}"), &owner).await;
    let (_, books_before) = app.get("/api/demo/entity?_type.string=book", &owner).await;
    let name = json!([{"type": "name", "string": "Persuasion"}]);
    let upload = json!([{"type": "photo", "filename": "a.txt", "filesize": 3, "filetype": "text/plain"}]);
    let writes: Vec<(&str, String, Option<Json>)> = vec![
        (
            "POST",
            "/api/demo/entity".into(),
            Some(json!([{"type": "_type", "reference": book_type}, {"type": "name", "string": "x"}])),
        ),
        ("POST", format!("/api/demo/entity/{book}"), Some(name.clone())),
        ("POST", format!("/api/demo/entity/{book}"), Some(upload)),
        (
            "POST",
            format!("/api/demo/entity/{book}"),
            Some(json!([{"type": "service_api_key", "string": "generate"}])),
        ),
        (
            "POST",
            format!("/api/demo/entity/{bob}"),
            Some(json!([{"type": "service_user", "string": "invite"}])),
        ),
        ("DELETE", format!("/api/demo/entity/{book}"), None),
        ("DELETE", format!("/api/demo/property/{value}"), None),
        (
            "POST",
            format!("/api/demo/entity/{book}/restore"),
            Some(json!({"at": "2026-01-01T00:00:00Z"})),
        ),
        ("GET", format!("/api/demo/entity/{book}/aggregate"), None),
        (
            "POST",
            format!("/api/demo/entity/{book}/duplicate"),
            Some(json!({"count": 2})),
        ),
        ("POST", "/api/new".into(), Some(json!({"database": "scoped_new"}))),
        ("PUT", "/api/new".into(), Some(json!({"database": "scoped_new"}))),
        ("GET", "/api/demo/passkey".into(), None),
        ("POST", "/api/demo/passkey".into(), Some(json!({"challengeToken": "x"}))),
        ("POST", "/api/auth/passkey/register/options".into(), Some(json!({}))),
        (
            "POST",
            "/api/auth/passkey/register/finish".into(),
            Some(json!({"ceremony": "x", "credential": {}, "db": "demo"})),
        ),
    ];
    for (method, path, body) in &writes {
        let refused = send(&app, method, path, &tokens.read, body.as_ref()).await;
        assert_refused_for_scope(&format!("{method} {path}"), refused);
    }
    let (_, after) = app.get(&format!("/api/demo/entity/{book}"), &owner).await;
    assert_eq!(after, before, "the book is unchanged");
    let (_, books_after) = app.get("/api/demo/entity?_type.string=book", &owner).await;
    assert_eq!(books_after["count"], books_before["count"], "no book was made");
    let (status, available) = app.call("GET", "/api/new/scoped_new", None, None).await;
    assert_eq!(
        (status, &available["available"]),
        (200, &json!(true)),
        "no database was made"
    );
    // the same write with Bob's full token passes: the refusal was the scope's
    let (status, written, challenge) = send(
        &app,
        "POST",
        &format!("/api/demo/entity/{book}"),
        &tokens.full,
        Some(&name),
    )
    .await;
    assert_eq!((status, challenge), (200, None), "{written}");
}

#[tokio::test]
async fn a_read_scoped_token_is_refused_before_the_existence_check() {
    let (app, _sink, _bob, tokens) = app_with_bobs_tokens().await;
    let name = json!([{"type": "name", "string": "x"}]);
    let missing: Vec<(&str, String, Option<Json>)> = vec![
        ("POST", format!("/api/demo/entity/{NO_ENTITY}"), Some(name.clone())),
        ("DELETE", format!("/api/demo/entity/{NO_ENTITY}"), None),
        ("DELETE", format!("/api/demo/property/{NO_ENTITY}"), None),
        ("GET", format!("/api/demo/entity/{NO_ENTITY}/aggregate"), None),
        ("POST", format!("/api/demo/entity/{NO_ENTITY}/duplicate"), None),
        ("POST", format!("/api/demo/entity/{NO_ENTITY}/restore"), None),
        ("POST", "/api/nodb/entity".into(), Some(name.clone())),
    ];
    for (method, path, body) in &missing {
        let what = format!("{method} {path}");
        let (status, found, _) = send(&app, method, path, &tokens.full, body.as_ref()).await;
        assert!(matches!(status, 403 | 404), "{what} with the full token: {found}");
        assert_ne!(found["error"], "insufficient_scope", "{what}");
        assert_refused_for_scope(&what, send(&app, method, path, &tokens.read, body.as_ref()).await);
    }
}

/// Calls MCP tool `name` with `arguments`; answers its text, parsed, and `isError`.
async fn tool(app: &TestApp, token: &str, name: &str, arguments: Json) -> (Json, bool) {
    let message =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
    let (status, body) = app.call("POST", "/api/demo/mcp", Some(token), Some(message)).await;
    assert_eq!(status, 200, "{body}");
    let text = body["result"]["content"][0]["text"].as_str().unwrap();
    (
        serde_json::from_str(text).unwrap(),
        body["result"]["isError"].as_bool().unwrap(),
    )
}

/// The tools that only read: every other tool writes.
const READ_TOOLS: [&str; 5] = [
    "get_entity_type",
    "search_entities",
    "get_entity",
    "get_file_url",
    "get_entity_history",
];

#[tokio::test]
async fn a_read_scoped_token_is_refused_on_each_mcp_write_tool() {
    let (app, _sink, bob, tokens) = app_with_bobs_tokens().await;
    let owner = app.owner_token().await;
    let (book, value) = bobs_book(&app, &owner, &bob).await;
    let book_type = app.find(&owner, "entity", "book").await;
    let (_, before) = app.get(&format!("/api/demo/entity/{book}"), &owner).await;
    let name = json!([{"type": "name", "string": "Persuasion"}]);
    let write_calls = [
        (
            "create_entity",
            json!({"properties": [{"type": "_type", "reference": book_type}, {"type": "name", "string": "x"}]}),
        ),
        ("add_properties", json!({"_id": book, "properties": name})),
        ("add_properties", json!({"_id": NO_ENTITY, "properties": name})),
        ("delete_property", json!({"_id": value})),
        ("delete_property", json!({"_id": NO_ENTITY})),
        ("restore_entity", json!({"_id": book, "at": "2026-01-01T00:00:00Z"})),
        (
            "batch",
            json!({"operations": [{"op": "add", "entity": book, "properties": name}]}),
        ),
    ];
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let (_, listed) = app
        .call("POST", "/api/demo/mcp", Some(&tokens.read), Some(message))
        .await;
    for listed in listed["result"]["tools"].as_array().unwrap() {
        let name = listed["name"].as_str().unwrap();
        assert!(
            READ_TOOLS.contains(&name) || write_calls.iter().any(|(tool, _)| *tool == name),
            "tool {name} is neither a read tool nor checked here as a write tool"
        );
    }
    for (name, arguments) in write_calls {
        let (answer, is_error) = tool(&app, &tokens.read, name, arguments.clone()).await;
        assert!(is_error, "{name} {arguments}: {answer}");
        assert_eq!(
            (answer["status"].as_u64(), answer["error"].as_str()),
            (Some(403), Some("insufficient_scope")),
            "{name} {arguments}"
        );
    }
    let (_, after) = app.get(&format!("/api/demo/entity/{book}"), &owner).await;
    assert_eq!(after, before, "the book is unchanged");
    let (read, is_error) = tool(&app, &tokens.read, "get_entity", json!({"_id": book})).await;
    assert!(!is_error, "a read tool answers: {read}");
    let (added, is_error) = tool(
        &app,
        &tokens.full,
        "add_properties",
        json!({"_id": book, "properties": name}),
    )
    .await;
    assert!(!is_error, "the full token writes: {added}");
}

#[tokio::test]
async fn a_scope_of_neither_read_nor_write_is_an_invalid_scope_redirect_with_state_and_iss() {
    let app = TestApp::start().await;
    let client_id = register(&app).await;
    for scope in ["openid", "openid profile READ"] {
        let url = authorize_url(&app, &client_id, &[("scope", Some(scope))]);
        let back = location(&client_at("127.0.0.1").get(url).send().await.unwrap());
        assert!(back.starts_with(REDIRECT), "{back}");
        assert_eq!(param(&back, "error").as_deref(), Some("invalid_scope"), "{back}");
        assert_eq!(param(&back, "state").as_deref(), Some("st4te"));
        assert_eq!(param(&back, "iss"), Some(app.url.clone()));
    }
}

#[tokio::test]
async fn no_scope_asked_grants_read_write() {
    let (app, sink, _) = app_with_bob().await;
    let client_id = register(&app).await;
    let answer = token_answer(&app, &sink, &client_id, None, 2).await;
    assert_eq!(answer["scope"], "read write", "{answer}");
    let access = answer["access_token"].as_str().unwrap();
    assert_eq!(claims_of(access)["scope"], "read write");
}

#[tokio::test]
async fn the_token_answer_and_the_scope_claim_carry_the_scope_granted_without_unknown_values() {
    let (app, sink, _) = app_with_bob().await;
    let client_id = register(&app).await;
    let answer = token_answer(&app, &sink, &client_id, Some("openid read"), 2).await;
    assert_eq!(answer["scope"], "read", "{answer}");
    assert_eq!(claims_of(answer["access_token"].as_str().unwrap())["scope"], "read");
    let session = app.owner_token().await;
    assert_eq!(
        claims_of(&session).get("scope"),
        None,
        "a sign-in's token has no scope claim"
    );
}

#[tokio::test]
async fn a_wider_scope_asks_consent_again_and_a_remembered_one_does_not() {
    let (app, sink, _) = app_with_bob().await;
    let client_id = register(&app).await;
    let browser = client_at("127.0.0.1");
    let read = authorize_url(&app, &client_id, &[("scope", Some("read"))]);
    let page = ConsentPage::read(sign_in_through_authorize(&app, &sink, &browser, &read, BOB, 2).await).await;
    assert!(param(&location(&page.allow(&browser).await), "code").is_some());
    // the same scope again: remembered, a code at once
    let again = sign_in_through_authorize(&app, &sink, &browser, &read, BOB, 3).await;
    assert!(param(&location(&again), "code").is_some());
    // a wider scope: the page again
    let wider = authorize_url(&app, &client_id, &[("scope", Some("read write"))]);
    let asked = sign_in_through_authorize(&app, &sink, &browser, &wider, BOB, 4).await;
    assert_eq!(asked.status(), 200, "a consent page, not a code");
    let page = ConsentPage::read(asked).await;
    assert!(page.html.contains("read and write access"), "{}", page.html);
}

#[tokio::test]
async fn both_metadata_documents_list_scopes_supported() {
    let app = TestApp::start().await;
    for path in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/oauth-protected-resource/api/demo/mcp",
    ] {
        let (status, metadata) = app.call("GET", path, None, None).await;
        assert_eq!(status, 200, "{path}");
        assert_eq!(metadata["scopes_supported"], json!(["read", "write"]), "{path}");
    }
}

#[tokio::test]
async fn the_consent_page_says_what_the_app_may_do_and_names_the_scopes() {
    let (app, sink, _) = app_with_bob().await;
    let client_id = register(&app).await;
    let browser = client_at("127.0.0.1");
    let read = authorize_url(&app, &client_id, &[("scope", Some("read openid"))]);
    let page = ConsentPage::read(sign_in_through_authorize(&app, &sink, &browser, &read, BOB, 2).await).await;
    for shown in [
        "<strong>read-only access</strong>: it may read what you can read",
        "(scopes: <code>read</code>)",
        "it can read everything you can",
    ] {
        assert!(page.html.contains(shown), "{shown}: {}", page.html);
    }
    for hidden in ["<code>write</code>", "openid", "change"] {
        assert!(!page.html.contains(hidden), "{hidden}: {}", page.html);
    }
    let full = authorize_url(&app, &client_id, &[("lang", Some("et"))]);
    let page = ConsentPage::read(sign_in_through_authorize(&app, &sink, &browser, &full, BOB, 3).await).await;
    for shown in [
        "<strong>lugemis- ja kirjutusõigus</strong>: see võib lugeda ja muuta, mida sina saad muuta",
        "(õigused: <code>read</code> <code>write</code>)",
    ] {
        assert!(page.html.contains(shown), "{shown}: {}", page.html);
    }
}

/// Every REST route that writes, as the OpenAPI document names it.
const WRITE_ROUTES: [(&str, &str); 12] = [
    ("post", "/api/{db}/entity"),
    ("post", "/api/{db}/entity/{id}"),
    ("delete", "/api/{db}/entity/{id}"),
    ("get", "/api/{db}/entity/{id}/aggregate"),
    ("post", "/api/{db}/entity/{id}/duplicate"),
    ("delete", "/api/{db}/property/{id}"),
    ("post", "/api/new"),
    ("put", "/api/new"),
    ("get", "/api/{db}/passkey"),
    ("post", "/api/{db}/passkey"),
    ("post", "/api/auth/passkey/register/options"),
    ("post", "/api/auth/passkey/register/finish"),
];

#[tokio::test]
async fn the_api_document_names_the_scope_refusal_and_its_challenge_on_every_write_and_no_read() {
    let app = TestApp::start().await;
    let (status, document) = app.call("GET", "/api/openapi.json", None, None).await;
    assert_eq!(status, 200);
    for (method, path) in WRITE_ROUTES {
        let forbidden = &document["paths"][path][method]["responses"]["403"];
        let description = forbidden["description"].as_str().unwrap_or_default();
        assert!(
            description.contains("`insufficient_scope`"),
            "{method} {path}: {forbidden}"
        );
        let header = forbidden["headers"]["WWW-Authenticate"]["description"]
            .as_str()
            .unwrap_or_default();
        assert!(header.contains(CHALLENGE), "{method} {path}: {forbidden}");
    }
    for (method, path) in [("get", "/api/{db}/entity/{id}"), ("get", "/api/{db}/entity")] {
        let operation = document["paths"][path][method].to_string();
        assert!(
            !operation.contains("insufficient_scope"),
            "{method} {path}: {operation}"
        );
    }
}

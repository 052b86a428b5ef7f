//! Client ID metadata documents: a `client_id` that is an https URL names
//! a document eds fetches (served here over https on 127.0.0.1 with a
//! certificate made by the test, trusted through
//! `oauth.client_metadata_ca_file`), checks, keeps as its caching headers
//! say and, failing, treats as an unknown client.

use crate::support;

use std::time::Duration;

use serde_json::{Value as Json, json};
use support::document_server::{Answer, DocumentServer};
use support::email_login::{app_with_mail, client_at, exchange, invite_bob, session_key};
use support::oauth::{
    ConsentPage, REDIRECT, VERIFIER, authorize_url, location, param, sign_in_through_authorize, token,
};
use support::{Storage, TestApp};

const DOC: &str = "/oauth/client.json";

/// Settings for an eds that trusts `server`'s certificate; private
/// (loopback) documents allowed or not.
fn trusting(server: &DocumentServer, allow_private: bool) -> Vec<(&'static str, String)> {
    vec![
        ("oauth.allow_private_client_metadata", allow_private.to_string()),
        ("oauth.client_metadata_ca_file", server.ca_file.display().to_string()),
    ]
}

async fn app_trusting(server: &DocumentServer) -> TestApp {
    TestApp::start_with(Storage::Local, &trusting(server, true)).await
}

/// A document naming `client_id`, with `REDIRECT` as its one redirect URI.
fn document(client_id: &str) -> String {
    json!({"client_id": client_id, "client_name": "Doc client", "redirect_uris": [REDIRECT]}).to_string()
}

/// Serves a valid document at `path` with `cache_control`; answers its URL.
fn serve_document(server: &DocumentServer, path: &str, cache_control: Option<&'static str>) -> String {
    let url = server.url(path);
    server.set(path, Answer::Document(document(&url), cache_control))
}

/// Authorize for `client_id` from `address`, as a client asking for JSON:
/// the status, and the error body or the redirect's location.
async fn authorize_from(app: &TestApp, address: &str, client_id: &str) -> (u16, String) {
    let response = client_at(address)
        .get(authorize_url(app, client_id, &[]))
        .header("Accept", "application/json")
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    if status == 302 {
        return (status, location(&response));
    }
    (status, response.text().await.unwrap())
}

async fn authorize(app: &TestApp, client_id: &str) -> (u16, String) {
    authorize_from(app, "127.0.0.1", client_id).await
}

/// Asserts the unknown-client 400 (JSON `invalid_client`, no redirect)
/// whose message says `why`.
fn assert_unknown_client((status, body): &(u16, String), why: &str) {
    assert_eq!(*status, 400, "{why}: {body}");
    let body: Json = serde_json::from_str(body).unwrap_or_else(|_| panic!("{why}: {body}"));
    assert_eq!(
        (body["status"].as_u64(), body["error"].as_str()),
        (Some(400), Some("invalid_client")),
        "{why}"
    );
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains(why), "{why}: {body}");
}

#[tokio::test]
async fn a_metadata_document_client_runs_the_whole_code_flow_and_the_consent_page_names_its_host() {
    let server = DocumentServer::https().await;
    let (app, sink) = app_with_mail(&trusting(&server, true)).await;
    let owner = app.owner_token().await;
    let (_, invite) = invite_bob(&app, &sink, &owner, 0).await;
    let key = session_key(&app, &sink, "bob@example.com", &[], 1).await;
    assert_eq!(exchange(&app, &key, &format!("?invite={invite}")).await.0, 200);
    let client_id = server.url(DOC);
    let body = json!({"client_id": client_id, "client_name": "<b>Doc & App</b>", "redirect_uris": [REDIRECT]});
    server.set(DOC, Answer::Document(body.to_string(), None));

    let browser = client_at("127.0.0.1");
    let url = authorize_url(&app, &client_id, &[]);
    let completed = sign_in_through_authorize(&app, &sink, &browser, &url, "bob@example.com", 2).await;
    let page = ConsentPage::read(completed).await;
    assert!(
        page.html
            .contains("<q class=\"client-words\">&lt;b&gt;Doc &amp; App&lt;/b&gt;</q>"),
        "the name escaped, as the client's own words: {}",
        page.html
    );
    assert!(
        page.html.contains("<strong>127.0.0.1</strong>"),
        "the document's host: {}",
        page.html
    );
    let back = location(&page.allow(&browser).await);
    assert!(back.starts_with(REDIRECT), "{back}");
    assert_eq!(
        param(&back, "iss"),
        Some(app.url.clone()),
        "iss, byte for byte the issuer"
    );
    assert_eq!(param(&back, "state").as_deref(), Some("st4te"));
    let code = param(&back, "code").expect("a code");
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
        ("client_id", client_id.as_str()),
    ];
    let (status, answer) = token(&app, "127.0.0.2", &form).await;
    assert_eq!(status, 200, "{answer}");
    let access = answer["access_token"].as_str().unwrap();
    let (status, _) = app.get("/api/demo", access).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_document_that_does_not_name_its_own_url_byte_for_byte_is_an_unknown_client() {
    let server = DocumentServer::https().await;
    let app = app_trusting(&server).await;
    let client_id = server.url(DOC);
    for (path, named) in [
        ("/a", format!("{client_id}/")),
        ("/b", client_id.replace("127.0.0.1", "localhost")),
    ] {
        let url = server.set(path, Answer::Document(document(&named), None));
        assert_unknown_client(&authorize(&app, &url).await, "its client_id is not its URL");
    }
}

#[tokio::test]
async fn a_document_needs_one_to_ten_absolute_redirect_uris() {
    let server = DocumentServer::https().await;
    let app = app_trusting(&server).await;
    for (path, uris, why) in [
        ("/none", None, "not JSON with client_id and redirect_uris"),
        (
            "/empty",
            Some(json!([])),
            "redirect_uris must hold 1 to 10 absolute URIs",
        ),
        (
            "/eleven",
            Some(json!(vec![REDIRECT; 11])),
            "redirect_uris must hold 1 to 10 absolute URIs",
        ),
        ("/relative", Some(json!(["/callback"])), "Not an absolute URI"),
    ] {
        let url = server.url(path);
        let mut body = json!({"client_id": url});
        if let Some(uris) = uris {
            body["redirect_uris"] = uris;
        }
        server.set(path, Answer::Document(body.to_string(), None));
        assert_unknown_client(&authorize(&app, &url).await, why);
    }
    let ten = server.url("/ten");
    let body = json!({"client_id": ten, "redirect_uris": vec![REDIRECT; 10]});
    server.set("/ten", Answer::Document(body.to_string(), None));
    assert_eq!(authorize(&app, &ten).await.0, 302, "ten are taken");
}

#[tokio::test]
async fn a_redirect_uri_not_in_the_document_is_an_unknown_client() {
    let server = DocumentServer::https().await;
    let app = app_trusting(&server).await;
    let client_id = serve_document(&server, DOC, None);
    let response = client_at("127.0.0.1")
        .get(authorize_url(
            &app,
            &client_id,
            &[("redirect_uri", Some("https://evil.example/cb"))],
        ))
        .header("Accept", "application/json")
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    assert_unknown_client(
        &(status, response.text().await.unwrap()),
        "redirect_uri is not registered for this client",
    );
}

#[tokio::test]
async fn a_document_that_is_not_json_is_an_unknown_client() {
    let server = DocumentServer::https().await;
    let app = app_trusting(&server).await;
    let url = server.set(DOC, Answer::Document("<html>a client</html>".to_owned(), None));
    assert_unknown_client(&authorize(&app, &url).await, "not JSON");
}

#[tokio::test]
async fn a_redirect_is_not_followed_and_is_an_unknown_client() {
    let server = DocumentServer::https().await;
    let app = app_trusting(&server).await;
    let target = serve_document(&server, "/target", None);
    let url = server.set(DOC, Answer::Redirect(target));
    assert_unknown_client(&authorize(&app, &url).await, "a redirect, which is not followed");
    assert_eq!(server.requests("/target"), 0, "not followed");
}

#[tokio::test]
async fn a_document_over_64_kb_is_an_unknown_client() {
    let server = DocumentServer::https().await;
    let app = app_trusting(&server).await;
    let url = server.set(DOC, Answer::Unsized(64 * 1024));
    assert_unknown_client(&authorize(&app, &url).await, "too large");
    let sized = server.url("/sized");
    let padding = "x".repeat(64 * 1024);
    let body = json!({"client_id": sized, "redirect_uris": [REDIRECT], "padding": padding});
    server.set("/sized", Answer::Document(body.to_string(), None));
    assert_unknown_client(&authorize(&app, &sized).await, "too large");
}

#[tokio::test]
async fn a_server_slower_than_5_seconds_is_an_unknown_client() {
    let server = DocumentServer::https().await;
    let app = app_trusting(&server).await;
    let url = server.url(DOC);
    server.set(DOC, Answer::Slow(Duration::from_secs(8), document(&url)));
    let started = std::time::Instant::now();
    assert_unknown_client(&authorize(&app, &url).await, "no answer in time");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(5) && waited < Duration::from_secs(7),
        "{waited:?}"
    );
}

#[tokio::test]
async fn a_failure_is_remembered_and_not_fetched_again() {
    let server = DocumentServer::https().await;
    let app = app_trusting(&server).await;
    let url = server.set(
        DOC,
        Answer::Document(document("https://other.example/client.json"), None),
    );
    assert_unknown_client(&authorize(&app, &url).await, "its client_id is not its URL");
    serve_document(&server, DOC, Some("max-age=300"));
    // remembered, though fixed since
    assert_unknown_client(&authorize(&app, &url).await, "its client_id is not its URL");
    assert_eq!(server.requests(DOC), 1);
}

#[tokio::test]
async fn a_document_is_kept_for_its_max_age_and_fetched_again_without_caching_headers() {
    let server = DocumentServer::https().await;
    let app = app_trusting(&server).await;
    let cached = serve_document(&server, "/cached", Some("public, max-age=300"));
    let uncached = serve_document(&server, "/uncached", None);
    for _ in 0..2 {
        assert_eq!(authorize(&app, &cached).await.0, 302);
        assert_eq!(authorize(&app, &uncached).await.0, 302);
    }
    assert_eq!(server.requests("/cached"), 1, "kept");
    assert_eq!(server.requests("/uncached"), 2, "no caching headers: not kept");
}

#[tokio::test]
async fn authorizations_of_one_document_at_once_share_one_fetch() {
    let server = DocumentServer::https().await;
    let app = app_trusting(&server).await;
    let url = server.url(DOC);
    server.set(DOC, Answer::Slow(Duration::from_millis(500), document(&url)));
    let (first, second) = tokio::join!(authorize(&app, &url), authorize(&app, &url));
    assert_eq!((first.0, second.0), (302, 302), "{first:?} {second:?}");
    assert_eq!(server.requests(DOC), 1);
}

#[tokio::test]
async fn each_client_address_causes_at_most_10_fetches_a_minute() {
    let server = DocumentServer::https().await;
    let app = app_trusting(&server).await;
    for n in 0..10 {
        let url = serve_document(&server, &format!("/doc{n}"), None);
        assert_eq!(authorize(&app, &url).await.0, 302, "fetch {n}");
    }
    let url = serve_document(&server, "/eleventh", None);
    let refused = authorize(&app, &url).await;
    assert_unknown_client(&refused, "too many client metadata fetches from this address");
    assert_eq!(server.requests("/eleventh"), 0, "not fetched");
    assert_eq!(
        authorize_from(&app, "127.0.0.2", &url).await.0,
        302,
        "another address fetches"
    );
    assert_eq!(authorize_from(&app, "127.0.0.2", &url).await.0, 302);
    assert_eq!(server.requests("/eleventh"), 2);
}

#[tokio::test]
async fn a_loopback_document_is_refused_without_any_connection_unless_private_documents_are_allowed() {
    let server = DocumentServer::https().await;
    let app = TestApp::start_with(Storage::Local, &trusting(&server, false)).await;
    let url = serve_document(&server, DOC, Some("max-age=300"));
    assert_unknown_client(&authorize(&app, &url).await, "a private or local address");
    for other_form in [
        url.replace("127.0.0.1", "localhost"),
        url.replace("127.0.0.1", "[::ffff:127.0.0.1]"),
        url.replace("127.0.0.1", "[::1]"),
    ] {
        assert_unknown_client(&authorize(&app, &other_form).await, "a private or local address");
    }
    assert_eq!(server.connections(), 0);
}

#[tokio::test]
async fn a_plain_http_client_id_is_no_document_unless_private_documents_are_allowed_and_it_is_on_loopback() {
    let server = DocumentServer::plain_http().await;
    let app = TestApp::start().await;
    let url = serve_document(&server, DOC, None);
    assert_unknown_client(&authorize(&app, &url).await, "Unknown or expired client_id");
    assert_eq!(server.connections(), 0);
    let allowing = TestApp::start_with(
        Storage::Local,
        &[("oauth.allow_private_client_metadata", "true".to_owned())],
    )
    .await;
    assert_eq!(authorize(&allowing, &url).await.0, 302, "http on loopback, in tests");
    assert_eq!(server.connections(), 1);
}

#[tokio::test]
async fn the_metadata_says_client_id_metadata_documents_are_supported_and_iss_is_sent() {
    let app = TestApp::start().await;
    let (status, metadata) = app
        .call("GET", "/.well-known/oauth-authorization-server", None, None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(metadata["client_id_metadata_document_supported"], true);
    assert_eq!(metadata["authorization_response_iss_parameter_supported"], true);
    assert_eq!(metadata["issuer"], json!(app.url));
}

#[tokio::test]
async fn an_error_for_a_metadata_document_client_goes_back_with_iss() {
    let server = DocumentServer::https().await;
    let app = app_trusting(&server).await;
    let client_id = serve_document(&server, DOC, Some("max-age=300"));
    let response = client_at("127.0.0.1")
        .get(authorize_url(&app, &client_id, &[("response_type", Some("token"))]))
        .send()
        .await
        .unwrap();
    let back = location(&response);
    assert!(back.starts_with(REDIRECT), "{back}");
    assert_eq!(param(&back, "error").as_deref(), Some("unsupported_response_type"));
    assert_eq!(param(&back, "iss"), Some(app.url.clone()));
}

#[tokio::test]
async fn a_sign_in_that_did_not_complete_and_a_login_that_is_no_person_go_back_with_iss() {
    let server = DocumentServer::https().await;
    let (app, sink) = app_with_mail(&trusting(&server, true)).await;
    let client_id = serve_document(&server, DOC, Some("max-age=300"));
    let browser = client_at("127.0.0.1");
    let to_sign_in = location(&browser.get(authorize_url(&app, &client_id, &[])).send().await.unwrap());
    let next = param(&to_sign_in, "next").expect("the sign-in returns to the authorization");
    let not_completed = location(&browser.get(format!("{next}not-a-session")).send().await.unwrap());
    assert!(not_completed.starts_with(REDIRECT), "{not_completed}");
    assert_eq!(param(&not_completed, "error").as_deref(), Some("access_denied"));
    assert_eq!(param(&not_completed, "iss"), Some(app.url.clone()));

    let url = authorize_url(&app, &client_id, &[]);
    let completed = sign_in_through_authorize(&app, &sink, &browser, &url, "stranger@example.com", 0).await;
    let page = ConsentPage::read(completed).await;
    let no_person = location(&page.allow(&browser).await);
    assert!(no_person.starts_with(REDIRECT), "{no_person}");
    assert_eq!(param(&no_person, "error").as_deref(), Some("access_denied"));
    assert_eq!(param(&no_person, "iss"), Some(app.url.clone()));
}

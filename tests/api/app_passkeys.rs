//! Passkeys for apps, the original's JSON ceremony, end to end over HTTP
//! with a software authenticator (the webauthn-rs project's `SoftPasskey`):
//! an app asks for options with a `challengeToken`, and posts the device's
//! credential back with it beside its fields, as the original's web app does.

use crate::support;

use chrono::Duration;
use serde_json::{Value as Json, json};
use support::email_login::{app_with_mail, client_at, exchange, invite_bob, session_key};
use support::oauth::{REDIRECT, VERIFIER, code_for_bob, token};
use support::{Storage, TestApp};
use webauthn_authenticator_rs::prelude::{CreationChallengeResponse, RequestChallengeResponse, Url};
use webauthn_authenticator_rs::{WebauthnAuthenticator, softpasskey::SoftPasskey};

/// The service's own pages.
const PAGES: &str = "http://localhost:8080";
/// An app's origin, configured beside the pages'.
const APP: &str = "http://localhost:3000";

async fn app() -> TestApp {
    TestApp::start_with(Storage::Local, &[("auth.webauthn.origin", PAGES.to_owned())]).await
}

/// An answer: status, headers, and the JSON body (`null` when none).
struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Json,
}

/// Sends a request as an app's `fetch` does (`Accept: */*`, an `Origin`)
/// from `address`, with `body` as JSON and `bearer` if given.
async fn call(
    app: &TestApp,
    address: &str,
    method: &str,
    path: &str,
    bearer: Option<&str>,
    body: Option<Json>,
) -> Answer {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = client_at(address)
        .request(method, format!("{}{path}", app.url))
        .header("Accept", "*/*")
        .header("Origin", APP);
    if let Some(bearer) = bearer {
        request = request.bearer_auth(bearer);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.json().await.unwrap_or(Json::Null);
    Answer { status, headers, body }
}

/// `{...credential, ...beside}`, as the app spreads the credential.
fn spread(credential: impl serde::Serialize, beside: Json) -> Json {
    let mut body = serde_json::to_value(credential).unwrap();
    for (name, value) in beside.as_object().unwrap() {
        body[name] = value.clone();
    }
    body
}

/// The options an answer carries, as `navigator.credentials` takes them.
fn public_key(options: &Json) -> Json {
    let mut public_key = options.clone();
    public_key.as_object_mut().unwrap().remove("challengeToken");
    json!({ "publicKey": public_key })
}

/// A device holding passkeys, used by an app served at `origin`.
struct Device {
    key: SoftPasskey,
    origin: &'static str,
}

impl Device {
    fn at(origin: &'static str) -> Device {
        Device {
            key: SoftPasskey::new(true),
            origin,
        }
    }

    /// The app's registration for the holder of `token` in `demo`: the
    /// answer of `POST /api/demo/passkey`, and the new credential's id.
    async fn register(&mut self, app: &TestApp, token: &str, device_name: &str) -> (Answer, String) {
        let options = call(app, "127.0.0.1", "GET", "/api/demo/passkey", Some(token), None).await;
        assert_eq!(options.status, 200, "{}", options.body);
        let asked: CreationChallengeResponse = serde_json::from_value(public_key(&options.body)).unwrap();
        let credential = self
            .key
            .do_registration(Url::parse(self.origin).unwrap(), asked)
            .unwrap();
        let beside = json!({"challengeToken": options.body["challengeToken"], "deviceName": device_name});
        let id = credential.id.clone();
        let body = spread(credential, beside);
        (
            call(app, "127.0.0.1", "POST", "/api/demo/passkey", Some(token), Some(body)).await,
            id,
        )
    }

    /// The app's sign-in options and the device's answer to them, the
    /// `challengeToken` beside its fields. (`SoftPasskey` answers only for
    /// listed credentials: the device is told the one it holds.)
    async fn answer(&mut self, app: &TestApp, credential_id: &str) -> Json {
        let options = call(app, "127.0.0.1", "GET", "/api/auth/passkey", None, None).await;
        assert_eq!(options.status, 200, "{}", options.body);
        assert!(options.body["challenge"].is_string(), "{}", options.body);
        let mut asked = public_key(&options.body);
        asked["publicKey"]["allowCredentials"] = json!([{"type": "public-key", "id": credential_id}]);
        let asked: RequestChallengeResponse = serde_json::from_value(asked).unwrap();
        let credential = self
            .key
            .do_authentication(Url::parse(self.origin).unwrap(), asked)
            .unwrap();
        spread(credential, json!({"challengeToken": options.body["challengeToken"]}))
    }
}

/// The passkey logins of `person` in `demo`.
async fn passkeys(app: &TestApp, person: &str, token: &str) -> Vec<Json> {
    let (status, body) = app.get(&format!("/api/demo/entity/{person}"), token).await;
    assert_eq!(status, 200, "{body}");
    let logins = body["entity"]["service_user"].as_array().cloned().unwrap_or_default();
    logins
        .into_iter()
        .filter(|login| login["provider"] == "passkey")
        .collect()
}

/// The owner's passkey registered through the app; answers its credential id.
async fn owner_with_passkey(app: &TestApp, device: &mut Device, owner: &str) -> String {
    let (added, id) = device.register(app, owner, "iPhone").await;
    assert_eq!(added.status, 200, "{}", added.body);
    id
}

/// 400 `invalid_sign_in`, the JSON error body.
fn assert_refused_sign_in(answer: &Answer) {
    assert_eq!(
        (answer.status, answer.body["error"].as_str()),
        (400, Some("invalid_sign_in")),
        "{}",
        answer.body
    );
    assert!(answer.body["message"].is_string(), "{}", answer.body);
}

#[tokio::test]
async fn an_app_registers_a_passkey_as_a_login_of_the_callers_person() {
    let app = app().await;
    let owner = app.owner_token().await;
    let mut device = Device::at(PAGES);
    let (added, _) = device.register(&app, &owner, "  Pixel 8 ").await;
    assert_eq!(added.status, 200, "{}", added.body);
    assert_eq!(added.body, json!({"success": true, "_id": app.person}));
    let stored = passkeys(&app, &app.person, &owner).await;
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(stored[0]["string"], "Pixel 8", "the app's deviceName: {stored:?}");

    // without a deviceName, the default one
    let (added, _) = Device::at(PAGES).register(&app, &owner, "").await;
    assert_eq!(added.status, 200, "{}", added.body);
    let names: Vec<Json> = passkeys(&app, &app.person, &owner)
        .await
        .iter()
        .map(|login| login["string"].clone())
        .collect();
    assert!(names.contains(&json!("Passkey")), "{names:?}");
}

#[tokio::test]
async fn an_app_signs_in_with_a_passkey_and_gets_the_answer_of_get_api_auth() {
    let app = app().await;
    let owner = app.owner_token().await;
    let mut device = Device::at(PAGES);
    let id = owner_with_passkey(&app, &mut device, &owner).await;
    let answer = device.answer(&app, &id).await;
    let signed_in = call(&app, "127.0.0.1", "POST", "/api/auth/passkey", None, Some(answer)).await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.body);

    let (_, by_key) = exchange(&app, &app.key, "").await;
    let fields = |body: &Json| {
        let mut names: Vec<String> = body.as_object().unwrap().keys().cloned().collect();
        names.sort();
        names
    };
    assert_eq!(fields(&signed_in.body), fields(&by_key), "{}", signed_in.body);
    assert_eq!(signed_in.body["accounts"], by_key["accounts"], "{}", signed_in.body);
    assert_eq!(signed_in.body["accounts"][0]["user"]["_id"], app.person.as_str());
    assert!(signed_in.body["expires"].is_string(), "{}", signed_in.body);
    let token = signed_in.body["token"].as_str().unwrap();
    let (status, person) = app.get(&format!("/api/demo/entity/{}", app.person), token).await;
    assert_eq!(status, 200, "the token works: {person}");
}

#[tokio::test]
async fn a_challenge_token_works_once() {
    let app = app().await;
    let owner = app.owner_token().await;
    let mut device = Device::at(PAGES);
    let id = owner_with_passkey(&app, &mut device, &owner).await;
    let answer = device.answer(&app, &id).await;
    let first = call(
        &app,
        "127.0.0.1",
        "POST",
        "/api/auth/passkey",
        None,
        Some(answer.clone()),
    )
    .await;
    assert_eq!(first.status, 200, "{}", first.body);
    let again = call(&app, "127.0.0.1", "POST", "/api/auth/passkey", None, Some(answer)).await;
    assert_refused_sign_in(&again);

    // a registration's too
    let options = call(&app, "127.0.0.1", "GET", "/api/demo/passkey", Some(&owner), None).await;
    let asked: CreationChallengeResponse = serde_json::from_value(public_key(&options.body)).unwrap();
    let credential = SoftPasskey::new(true)
        .do_registration(Url::parse(PAGES).unwrap(), asked)
        .unwrap();
    let body = spread(credential, json!({"challengeToken": options.body["challengeToken"]}));
    let first = call(
        &app,
        "127.0.0.1",
        "POST",
        "/api/demo/passkey",
        Some(&owner),
        Some(body.clone()),
    )
    .await;
    assert_eq!(first.status, 200, "{}", first.body);
    let again = call(&app, "127.0.0.1", "POST", "/api/demo/passkey", Some(&owner), Some(body)).await;
    assert_refused_sign_in(&again);
    assert_eq!(
        passkeys(&app, &app.person, &owner).await.len(),
        2,
        "nothing stored twice"
    );
}

#[tokio::test]
async fn a_challenge_token_expires_after_five_minutes() {
    let app = app().await;
    let owner = app.owner_token().await;
    let mut device = Device::at(PAGES);
    let id = owner_with_passkey(&app, &mut device, &owner).await;
    let answer = device.answer(&app, &id).await;
    app.state.clock.advance(Duration::seconds(5 * 60 + 1));
    let late = call(&app, "127.0.0.1", "POST", "/api/auth/passkey", None, Some(answer)).await;
    assert_refused_sign_in(&late);
}

#[tokio::test]
async fn a_challenge_token_works_only_from_the_address_that_asked() {
    let app = app().await;
    let owner = app.owner_token().await;
    let mut device = Device::at(PAGES);
    let id = owner_with_passkey(&app, &mut device, &owner).await;
    let answer = device.answer(&app, &id).await;
    let elsewhere = call(
        &app,
        "127.0.0.2",
        "POST",
        "/api/auth/passkey",
        None,
        Some(answer.clone()),
    )
    .await;
    assert_refused_sign_in(&elsewhere);
    let here = call(&app, "127.0.0.1", "POST", "/api/auth/passkey", None, Some(answer)).await;
    assert_eq!(here.status, 200, "the refusal did not use it up: {}", here.body);
}

#[tokio::test]
async fn an_answer_without_its_challenge_token_is_refused() {
    let app = app().await;
    let owner = app.owner_token().await;
    let mut device = Device::at(PAGES);
    let id = owner_with_passkey(&app, &mut device, &owner).await;
    let mut answer = device.answer(&app, &id).await;
    answer.as_object_mut().unwrap().remove("challengeToken");
    let refused = call(&app, "127.0.0.1", "POST", "/api/auth/passkey", None, Some(answer)).await;
    assert_eq!(
        (refused.status, refused.body["error"].as_str()),
        (400, Some("bad_request")),
        "{}",
        refused.body
    );
    let named = json!({"challengeToken": "x", "deviceName": 7});
    let refused = call(
        &app,
        "127.0.0.1",
        "POST",
        "/api/demo/passkey",
        Some(&owner),
        Some(named),
    )
    .await;
    assert_eq!(
        (refused.status, refused.body["error"].as_str()),
        (400, Some("bad_request")),
        "{}",
        refused.body
    );
}

#[tokio::test]
async fn a_token_of_the_oauth_server_cannot_add_a_passkey() {
    let (app, sink) = app_with_mail(&[("auth.webauthn.origin", PAGES.to_owned())]).await;
    let owner = app.owner_token().await;
    let (bob, invite) = invite_bob(&app, &sink, &owner, 0).await;
    let key = session_key(&app, &sink, "bob@example.com", &[], 1).await;
    assert_eq!(exchange(&app, &key, &format!("?invite={invite}")).await.0, 200);
    let (client_id, code) = code_for_bob(&app, &sink, 2).await;
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
        ("client_id", client_id.as_str()),
    ];
    let (status, issued) = token(&app, "127.0.0.1", &form).await;
    assert_eq!(status, 200, "{issued}");
    let oauth = issued["access_token"].as_str().unwrap();

    let options = call(&app, "127.0.0.1", "GET", "/api/demo/passkey", Some(oauth), None).await;
    assert_eq!(
        (options.status, options.body["error"].as_str()),
        (403, Some("forbidden")),
        "{}",
        options.body
    );
    let body = json!({"challengeToken": "x", "id": "x"});
    let finish = call(&app, "127.0.0.1", "POST", "/api/demo/passkey", Some(oauth), Some(body)).await;
    assert_eq!(
        (finish.status, finish.body["error"].as_str()),
        (403, Some("forbidden")),
        "{}",
        finish.body
    );
    assert!(passkeys(&app, &bob, &owner).await.is_empty());
}

#[tokio::test]
async fn adding_a_passkey_needs_a_token_for_the_database() {
    let app = app().await;
    for method in ["GET", "POST"] {
        let body = (method == "POST").then(|| json!({"challengeToken": "x"}));
        let answer = call(&app, "127.0.0.1", method, "/api/demo/passkey", None, body).await;
        assert_eq!(answer.status, 401, "{method} {}", answer.body);
        assert!(answer.body["error"].is_string(), "{}", answer.body);
        assert!(
            answer.headers["www-authenticate"]
                .to_str()
                .unwrap()
                .starts_with("Bearer"),
            "{:?}",
            answer.headers
        );
    }
    let owner = app.owner_token().await;
    let other = call(&app, "127.0.0.1", "GET", "/api/other/passkey", Some(&owner), None).await;
    assert_eq!(other.status, 403, "a token for other databases only: {}", other.body);
}

#[tokio::test]
async fn a_browser_asking_for_html_still_gets_the_sign_in_page() {
    let app = app().await;
    let url = format!("{}/api/auth/passkey", app.url);
    let accept = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
    let page = app.http.get(&url).header("Accept", accept).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(!page.headers().contains_key("access-control-allow-origin"));
    assert!(page.text().await.unwrap().contains("Sign in with a passkey"));
    // with `next`, the page too: the browser goes on there
    let next = format!("{url}?next=https%3A%2F%2Fapp.example%2Fdone%3Fkey%3D");
    let page = app
        .http
        .get(next)
        .header("Accept", "application/json")
        .send()
        .await
        .unwrap();
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    // an app's JSON
    let options = app
        .http
        .get(&url)
        .header("Accept", "application/json")
        .send()
        .await
        .unwrap();
    assert!(
        options.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let options: Json = options.json().await.unwrap();
    assert_eq!(options["rpId"], "localhost", "{options}");
    assert!(options["challengeToken"].is_string(), "{options}");
}

#[tokio::test]
async fn the_json_answers_carry_cors() {
    let app = app().await;
    let owner = app.owner_token().await;
    let mut device = Device::at(PAGES);
    let (added, id) = device.register(&app, &owner, "Laptop").await;
    let options = call(&app, "127.0.0.1", "GET", "/api/auth/passkey", None, None).await;
    let answer = device.answer(&app, &id).await;
    let signed_in = call(
        &app,
        "127.0.0.1",
        "POST",
        "/api/auth/passkey",
        None,
        Some(answer.clone()),
    )
    .await;
    let refused = call(&app, "127.0.0.1", "POST", "/api/auth/passkey", None, Some(answer)).await;
    let register_options = call(&app, "127.0.0.1", "GET", "/api/demo/passkey", Some(&owner), None).await;
    for (what, answer, status) in [
        ("added", &added, 200),
        ("sign-in options", &options, 200),
        ("signed in", &signed_in, 200),
        ("refused", &refused, 400),
        ("registration options", &register_options, 200),
    ] {
        assert_eq!(answer.status, status, "{what}: {}", answer.body);
        assert_eq!(answer.headers["access-control-allow-origin"], "*", "{what}");
    }
}

#[tokio::test]
async fn a_second_configured_origin_is_accepted_and_an_unlisted_one_refused() {
    let origins = format!("{PAGES},{APP}");
    let app = TestApp::start_with(Storage::Local, &[("auth.webauthn.origin", origins)]).await;
    let owner = app.owner_token().await;
    let mut device = Device::at(APP);
    let id = owner_with_passkey(&app, &mut device, &owner).await;
    let answer = device.answer(&app, &id).await;
    let signed_in = call(&app, "127.0.0.1", "POST", "/api/auth/passkey", None, Some(answer)).await;
    assert_eq!(signed_in.status, 200, "{}", signed_in.body);
    // the pages' origin still works beside it
    let mut at_pages = Device::at(PAGES);
    owner_with_passkey(&app, &mut at_pages, &owner).await;

    let mut unlisted = Device::at("http://localhost:4000");
    let (refused, _) = unlisted.register(&app, &owner, "Laptop").await;
    assert_refused_sign_in(&refused);
    device.origin = "http://localhost:4000";
    let answer = device.answer(&app, &id).await;
    let refused = call(&app, "127.0.0.1", "POST", "/api/auth/passkey", None, Some(answer)).await;
    assert_refused_sign_in(&refused);
    assert_eq!(passkeys(&app, &app.person, &owner).await.len(), 2);
}

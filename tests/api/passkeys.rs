//! Passkeys, end to end over HTTP with a software authenticator (the
//! webauthn-rs project's `SoftPasskey`): creating one signs up, accepts an
//! invitation, or adds it to one's own person; the stored login method shows
//! the device and keeps the credential; a ceremony works once, from the
//! address that began it. (Discoverable sign-in as a browser does it is
//! tested in `tests/browser.rs`.)

use crate::support;

use serde_json::{Value as Json, json};
use support::email_login::{accept_invitation, app_with_mail, client_at, exchange, invite_bob};
use support::{Storage, TestApp};
use webauthn_authenticator_rs::prelude::{CreationChallengeResponse, RequestChallengeResponse, Url};
use webauthn_authenticator_rs::{WebauthnAuthenticator, softpasskey::SoftPasskey};

/// The origin the passkey pages are served at (WebAuthn takes no IP address).
const ORIGIN: &str = "http://localhost:8080";

fn settings() -> Vec<(&'static str, String)> {
    vec![("auth.webauthn.origin", ORIGIN.to_owned())]
}

async fn app() -> TestApp {
    TestApp::start_with(Storage::Local, &settings()).await
}

/// POSTs `body` as JSON from `client`; answers the status and the JSON body.
async fn post(app: &TestApp, client: &reqwest::Client, path: &str, body: Json, bearer: Option<&str>) -> (u16, Json) {
    let mut request = client.post(format!("{}{path}", app.url)).json(&body);
    if let Some(bearer) = bearer {
        request = request.bearer_auth(bearer);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Json::Null))
}

/// A device holding passkeys.
struct Device(SoftPasskey);

impl Device {
    fn new() -> Device {
        Device(SoftPasskey::new(true))
    }

    /// Begins a registration; answers the ceremony and the device's new credential.
    async fn create(&mut self, app: &TestApp, asked: Json) -> (String, Json) {
        let (status, begun) = post(
            app,
            &client_at("127.0.0.1"),
            "/api/auth/passkey/register/options",
            asked,
            None,
        )
        .await;
        assert_eq!(status, 200, "{begun}");
        let options: CreationChallengeResponse =
            serde_json::from_value(json!({"publicKey": begun["publicKey"]})).unwrap();
        let credential = self.0.do_registration(Url::parse(ORIGIN).unwrap(), options).unwrap();
        (
            begun["ceremony"].as_str().unwrap().to_owned(),
            serde_json::to_value(credential).unwrap(),
        )
    }

    /// Registers a passkey named `device` and answers the session token.
    async fn register(&mut self, app: &TestApp, device: &str, invite: Option<&str>) -> String {
        let (ceremony, credential) = self.create(app, json!({"device": device, "invite": invite})).await;
        let body = json!({"ceremony": ceremony, "credential": credential});
        let (status, signed_in) = post(
            app,
            &client_at("127.0.0.1"),
            "/api/auth/passkey/register/finish",
            body,
            None,
        )
        .await;
        assert_eq!(status, 200, "{signed_in}");
        let signed_in = match signed_in["location"].as_str() {
            // a sign-in carrying an invitation: the person accepts it first
            Some(page) => accept_invitation(client_at("127.0.0.1"), page)
                .await
                .json()
                .await
                .unwrap(),
            None => signed_in,
        };
        signed_in["key"].as_str().expect("a session token").to_owned()
    }

    /// Signs in with the passkey `credential_id` names; answers the status
    /// and body of the finish. (`SoftPasskey` answers only for listed
    /// credentials: the device is told the one it holds.)
    async fn sign_in(&mut self, app: &TestApp, credential_id: &str) -> (u16, Json) {
        let client = client_at("127.0.0.1");
        let (status, begun) = post(app, &client, "/api/auth/passkey/options", json!({}), None).await;
        assert_eq!(status, 200, "{begun}");
        let mut public_key = begun["publicKey"].clone();
        assert_eq!(public_key["allowCredentials"], json!([]), "the device offers its own");
        public_key["allowCredentials"] = json!([{"type": "public-key", "id": credential_id}]);
        let options: RequestChallengeResponse = serde_json::from_value(json!({"publicKey": public_key})).unwrap();
        let answer = self.0.do_authentication(Url::parse(ORIGIN).unwrap(), options).unwrap();
        let body = json!({"ceremony": begun["ceremony"], "credential": answer});
        post(app, &client, "/api/auth/passkey/finish", body, None).await
    }
}

/// The credential id of the passkey login a token's `sub` names (its login
/// id is the credential id and a digest of its key).
fn passkey_id(token: &str) -> String {
    use base64::Engine;
    let payload = token.split('.').nth(1).unwrap();
    let claims: Json = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap(),
    )
    .unwrap();
    let sub = claims["sub"].as_str().unwrap();
    let uid = sub.strip_prefix("login:passkey:").expect("a passkey login");
    uid.split_once('.').expect("credential id . key digest").0.to_owned()
}

/// The `service_user` values of `person` in `db`, as `token` reads them.
async fn logins(app: &TestApp, db: &str, person: &str, token: &str) -> Vec<Json> {
    let (status, body) = app.get(&format!("/api/{db}/entity/{person}"), token).await;
    assert_eq!(status, 200, "{body}");
    body["entity"]["service_user"].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn a_new_passkey_signs_up_and_is_stored_with_its_device_name_on_the_new_databases_owner() {
    let app = app().await;
    let mut device = Device::new();
    let key = device.register(&app, "  Work laptop ", None).await;
    let (status, first) = exchange(&app, &key, "").await;
    assert_eq!((status, &first["accounts"]), (200, &json!([])), "{first}");
    let token = first["token"].as_str().unwrap();
    assert_eq!(
        app.post("/api/new", token, json!({"database": "passkey_db"})).await.0,
        201
    );

    let (_, again) = exchange(&app, &device.register(&app, "Phone", None).await, "").await;
    assert_eq!(again["accounts"], json!([]), "another passkey is another login");

    let (status, signed_in) = device.sign_in(&app, &passkey_id(token)).await;
    assert_eq!(status, 200, "{signed_in}");
    let (status, body) = exchange(&app, signed_in["key"].as_str().unwrap(), "").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["accounts"][0]["_id"], "passkey_db", "{body}");
    let person = body["accounts"][0]["user"]["_id"].as_str().unwrap();
    let token = body["token"].as_str().unwrap();
    let stored = logins(&app, "passkey_db", person, token).await;
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(
        (stored[0]["string"].as_str(), stored[0]["provider"].as_str()),
        (Some("Work laptop"), Some("passkey"))
    );
    let (_, entity) = app.get(&format!("/api/passkey_db/entity/{person}"), token).await;
    assert!(
        entity["entity"].get("name").is_none(),
        "a passkey stores no name: {entity}"
    );
    assert!(
        !entity.to_string().contains("cred_id") && !entity.to_string().contains("counter"),
        "the credential is never shown: {entity}"
    );
}

#[tokio::test]
async fn a_passkey_no_person_holds_signs_in_nobody() {
    let app = app().await;
    let mut device = Device::new();
    let key = device.register(&app, "Laptop", None).await;
    let (_, first) = exchange(&app, &key, "").await;
    assert_eq!(first["accounts"], json!([]), "{first}");
    // made, but never linked to a person (no database, no invitation)
    let (status, body) = device
        .sign_in(&app, &passkey_id(first["token"].as_str().unwrap()))
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_sign_in")),
        "{body}"
    );
}

#[tokio::test]
async fn a_passkey_ceremony_works_once_and_only_from_the_address_that_began_it() {
    let app = app().await;
    let mut device = Device::new();
    let (ceremony, credential) = device.create(&app, json!({"device": "Laptop"})).await;
    let body = json!({"ceremony": ceremony, "credential": credential});
    let finish = "/api/auth/passkey/register/finish";
    let (status, refused) = post(&app, &client_at("127.0.0.2"), finish, body.clone(), None).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_sign_in")),
        "{refused}"
    );
    let (status, signed_in) = post(&app, &client_at("127.0.0.1"), finish, body.clone(), None).await;
    assert_eq!(status, 200, "from the address that began it: {signed_in}");
    let (status, again) = post(&app, &client_at("127.0.0.1"), finish, body, None).await;
    assert_eq!(
        (status, again["error"].as_str()),
        (400, Some("invalid_sign_in")),
        "{again}"
    );
}

#[tokio::test]
async fn a_credential_made_for_another_ceremony_or_malformed_is_refused() {
    let app = app().await;
    let mut device = Device::new();
    let (first, _) = device.create(&app, json!({"device": "Laptop"})).await;
    let (_, other_credential) = device.create(&app, json!({"device": "Laptop"})).await;
    let client = client_at("127.0.0.1");
    let finish = "/api/auth/passkey/register/finish";
    let body = json!({"ceremony": first, "credential": other_credential});
    let (status, refused) = post(&app, &client, finish, body, None).await;
    assert_eq!(
        (status, refused["error"].as_str()),
        (400, Some("invalid_sign_in")),
        "{refused}"
    );
    let (third, _) = device.create(&app, json!({})).await;
    let body = json!({"ceremony": third, "credential": {"id": "x"}});
    let (status, malformed) = post(&app, &client, finish, body, None).await;
    assert_eq!(
        (status, malformed["error"].as_str()),
        (400, Some("invalid_sign_in")),
        "{malformed}"
    );
}

#[tokio::test]
async fn a_passkey_accepts_an_invitation_and_is_stored_on_the_invited_person() {
    let (app, sink) = app_with_mail(&settings()).await;
    let owner = app.owner_token().await;
    let (bob, invite) = invite_bob(&app, &sink, &owner, 0).await;
    let link = &sink.wait_for(1).await[0].links()[0];
    assert!(
        link.contains("/api/auth/choose?invite="),
        "the link lets the person choose: {link}"
    );

    let key = Device::new().register(&app, "Bob's phone", Some(&invite)).await;
    let (status, body) = exchange(&app, &key, "").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["accounts"][0]["_id"], "demo");
    assert_eq!(body["accounts"][0]["user"]["_id"], bob.as_str());
    let stored = logins(&app, "demo", &bob, &owner).await;
    assert_eq!(stored.len(), 1, "the invitation gave way to the passkey: {stored:?}");
    assert_eq!(
        (stored[0]["string"].as_str(), stored[0]["provider"].as_str()),
        (Some("Bob's phone"), Some("passkey"))
    );
}

#[tokio::test]
async fn a_signed_in_person_adds_a_passkey_to_themselves_and_signs_in_with_it() {
    let app = app().await;
    let owner = app.owner_token().await;
    let mut device = Device::new();
    let (ceremony, credential) = device.create(&app, json!({"device": "Desk key"})).await;
    let body = json!({"ceremony": ceremony, "credential": credential, "db": "demo"});
    let finish = "/api/auth/passkey/register/finish";
    let client = client_at("127.0.0.1");
    let (status, refused) = post(&app, &client, finish, body.clone(), None).await;
    assert_eq!(status, 401, "`db` needs the person's token: {refused}");
    let (status, signed_in) = post(&app, &client, finish, body, Some(&owner)).await;
    assert_eq!(status, 200, "{signed_in}");
    let stored = logins(&app, "demo", &app.person, &owner).await;
    let passkey = stored
        .iter()
        .find(|login| login["provider"] == "passkey")
        .unwrap_or_else(|| panic!("{stored:?}"));
    assert_eq!(passkey["string"], "Desk key");
    let (status, body) = exchange(&app, signed_in["key"].as_str().unwrap(), "").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["accounts"][0]["user"]["_id"], app.person.as_str(), "{body}");
}

#[tokio::test]
async fn the_passkey_pages_are_in_english_and_estonian_and_run_only_their_own_script() {
    let app = app().await;
    for (path, en, et) in [
        ("/api/auth/passkey", "Sign in with a passkey", "Logi sisse pääsuvõtmega"),
        ("/api/auth/passkey/register", "Create a passkey", "Loo pääsuvõti"),
    ] {
        for (lang, words) in [("en", en), ("et", et)] {
            let url = format!(
                "{}{path}?lang={lang}&invite=%22%3E%3Cscript%3E&next=https%3A%2F%2Fapp.example%2Fdone%3Fkey%3D",
                app.url
            );
            let response = app.http.get(url).send().await.unwrap();
            assert_eq!(response.status(), 200);
            let policy = response.headers()["content-security-policy"]
                .to_str()
                .unwrap()
                .to_owned();
            assert!(
                policy.contains("script-src 'self'") && policy.contains("frame-ancestors 'none'"),
                "{policy}"
            );
            let html = response.text().await.unwrap();
            assert!(
                html.contains(&format!("<html lang=\"{lang}\"")) && html.contains(words),
                "{html}"
            );
            assert!(html.contains("passkey.js\"></script>"), "{html}");
            assert!(!html.contains("\"><script>"), "the invitation is escaped: {html}");
            assert!(html.contains("data-next=\"https://app.example/done?key=\""), "{html}");
        }
    }
    let script = app
        .http
        .get(format!("{}/api/auth/passkey/passkey.js", app.url))
        .send()
        .await
        .unwrap();
    assert_eq!(script.status(), 200);
    assert!(
        script.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/javascript")
    );
    assert!(script.text().await.unwrap().contains("navigator.credentials.create"));
}

#[tokio::test]
async fn passkeys_are_not_offered_without_a_relying_party_this_server_can_be() {
    // The default test app's origin is an IP address, which WebAuthn refuses.
    let app = TestApp::start().await;
    for path in ["/api/auth/passkey", "/api/auth/passkey/register"] {
        let (status, body) = app.call("GET", path, None, None).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (503, Some("provider_unavailable")),
            "{path} {body}"
        );
    }
    let (status, _) = post(&app, &app.http, "/api/auth/passkey/options", json!({}), None).await;
    assert_eq!(status, 503);
}

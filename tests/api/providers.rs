//! OpenID Connect sign-in, end to end, against a real provider (the npm
//! `oidc-provider` package under Node.js): Google's code flow, Apple's
//! form_post with its ES256-signed client secret, the eID broker's methods,
//! and what is refused (an unknown or used request, another address, the
//! provider's own refusal).

use crate::support;

use serde_json::{Value as Json, json};
use support::TestApp;
use support::email_login::client_at;
use support::oidc::{OidcProvider, app_with_provider, browser, form_action, hidden_inputs, log_in_at_provider};

/// Starts `provider`'s sign-in in `browser` and answers the provider's login page.
async fn provider_login_page(app: &TestApp, browser: &reqwest::Client, provider: &str) -> String {
    let page = browser
        .get(format!("{}/api/auth/{provider}", app.url))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200, "{}", page.url());
    page.text().await.unwrap()
}

/// The session token a completed sign-in answered.
async fn key_of(response: reqwest::Response) -> String {
    assert_eq!(response.status(), 200, "{}", response.url());
    let body: Json = response.json().await.unwrap();
    body["key"].as_str().expect("a session token").to_owned()
}

/// Signs `login` in with `provider` (a query-answering one) and exchanges the
/// session token; answers the exchange's body.
async fn sign_in(app: &TestApp, idp: &OidcProvider, provider: &str, login: &str) -> Json {
    let browser = browser();
    let page = provider_login_page(app, &browser, provider).await;
    let key = key_of(log_in_at_provider(&browser, &idp.issuer, page, login).await).await;
    let (status, body) = app.call("GET", "/api/auth", Some(&key), None).await;
    assert_eq!(status, 200, "{body}");
    body
}

#[tokio::test]
async fn google_signs_in_through_the_code_flow_and_the_login_is_matched_by_its_subject() {
    let (app, idp) = app_with_provider(&[]).await;
    let first = sign_in(&app, &idp, "google", "alice").await;
    assert_eq!(first["accounts"], json!([]), "a new login");
    let token = first["token"].as_str().unwrap();
    assert_eq!(
        app.post("/api/new", token, json!({"database": "alices_db"})).await.0,
        201
    );

    let again = sign_in(&app, &idp, "google", "alice").await;
    assert_eq!(again["accounts"][0]["_id"], "alices_db", "{again}");
    assert_eq!(
        again["user"]["name"], "Person alice",
        "the provider's name went to the person"
    );
    let person = again["accounts"][0]["user"]["_id"].as_str().unwrap();
    let (_, me) = app
        .get(
            &format!("/api/alices_db/entity/{person}"),
            again["token"].as_str().unwrap(),
        )
        .await;
    let login = &me["entity"]["service_user"][0];
    assert_eq!(
        (login["string"].as_str(), login["provider"].as_str()),
        (Some("alice@example.com"), Some("google"))
    );
    // another subject is another login
    let bob = sign_in(&app, &idp, "google", "bob").await;
    assert_eq!(bob["accounts"], json!([]));
}

#[tokio::test]
async fn apple_answers_by_form_post_and_takes_a_client_secret_signed_with_the_team_key() {
    let (app, idp) = app_with_provider(&[]).await;
    let browser = browser();
    let page = provider_login_page(&app, &browser, "apple").await;
    let answer = log_in_at_provider(&browser, &idp.issuer, page, "carol").await;
    assert_eq!(answer.status(), 200);
    let html = answer.text().await.unwrap();
    let action = form_action(&html, &idp.issuer);
    assert_eq!(action, format!("{}/api/auth/apple", app.url));
    let fields = hidden_inputs(&html);
    assert!(fields.iter().any(|(name, _)| name == "code"), "{html}");
    let key = key_of(browser.post(action).form(&fields).send().await.unwrap()).await;
    let (status, body) = app.call("GET", "/api/auth", Some(&key), None).await;
    assert_eq!((status, &body["accounts"]), (200, &json!([])), "{body}");
}

#[tokio::test]
async fn an_apple_key_the_provider_does_not_know_is_refused() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let idp = OidcProvider::start(&url).await;
    // a key of another provider's making: the same shape, not the team's key
    let stranger = OidcProvider::start(&url).await;
    let mut settings = idp.settings();
    settings.push(("auth.apple.private_key", stranger.apple_key.clone()));
    let app = TestApp::start_on(listener, support::Storage::Local, &settings).await;
    let browser = browser();
    let page = provider_login_page(&app, &browser, "apple").await;
    let html = log_in_at_provider(&browser, &idp.issuer, page, "carol")
        .await
        .text()
        .await
        .unwrap();
    let refused = browser
        .post(form_action(&html, &idp.issuer))
        .form(&hidden_inputs(&html))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    let body: Json = refused.json().await.unwrap();
    assert_eq!(body["error"], "invalid_sign_in");
}

#[tokio::test]
async fn the_eid_broker_signs_in_with_smart_id_mobile_id_and_id_card() {
    let (app, idp) = app_with_provider(&[]).await;
    for method in ["smart-id", "mobile-id", "id-card"] {
        let start = client_at("127.0.0.1")
            .get(format!("{}/api/auth/{method}", app.url))
            .send()
            .await
            .unwrap();
        assert_eq!(start.status(), 302);
        let location = start.headers()["location"].to_str().unwrap();
        assert!(
            location.starts_with(&format!("{}/auth?login_hint={method}&", idp.issuer)),
            "{location}"
        );
        for required in ["code_challenge_method=S256", "code_challenge=", "nonce=", "state="] {
            assert!(location.contains(required), "{required}: {location}");
        }
    }
    let body = sign_in(&app, &idp, "mobile-id", "dave").await;
    assert_eq!(body["accounts"], json!([]));
}

/// Runs `provider`'s flow in a browser that stops where the provider sends
/// it back to the app; answers that callback URL.
async fn callback_url(app: &TestApp, idp: &OidcProvider, login: &str) -> String {
    let app_url = app.url.clone();
    let stops_at_app = reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.url().as_str().starts_with(&app_url) {
            attempt.stop()
        } else {
            attempt.follow()
        }
    });
    let browser = reqwest::Client::builder()
        .cookie_store(true)
        .redirect(stops_at_app)
        .build()
        .unwrap();
    let start = browser
        .get(format!("{}/api/auth/google", app.url))
        .send()
        .await
        .unwrap();
    let page = start.text().await.unwrap();
    let back = log_in_at_provider(&browser, &idp.issuer, page, login).await;
    assert_eq!(back.status(), 303);
    back.headers()["location"].to_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_provider_answer_works_once_and_only_where_the_sign_in_began() {
    let (app, idp) = app_with_provider(&[]).await;
    let callback = callback_url(&app, &idp, "erin").await;
    assert!(callback.contains("code=") && callback.contains("state="), "{callback}");
    let refused = client_at("127.0.0.2").get(&callback).send().await.unwrap();
    assert_eq!(refused.status(), 400, "from another address");
    let key = key_of(client_at("127.0.0.1").get(&callback).send().await.unwrap()).await;
    assert!(!key.is_empty());
    let replayed = client_at("127.0.0.1").get(&callback).send().await.unwrap();
    assert_eq!(replayed.status(), 400, "a second use");
    let body: Json = replayed.json().await.unwrap();
    assert_eq!(body["error"], "invalid_sign_in");
}

#[tokio::test]
async fn an_unknown_state_or_the_providers_refusal_signs_in_nobody() {
    let (app, _idp) = app_with_provider(&[]).await;
    let local = client_at("127.0.0.1");
    let (status, body) = app
        .call("GET", "/api/auth/google?code=forged&state=forged", None, None)
        .await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_sign_in")));
    // a real request, which the provider refused
    let start = local.get(format!("{}/api/auth/google", app.url)).send().await.unwrap();
    let location = start.headers()["location"].to_str().unwrap().to_owned();
    let state = location
        .split(['?', '&'])
        .find_map(|pair| pair.strip_prefix("state="))
        .unwrap();
    let refused = local
        .get(format!("{}/api/auth/google?error=access_denied&state={state}", app.url))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    let body: Json = refused.json().await.unwrap();
    assert!(body["message"].as_str().unwrap().contains("access_denied"), "{body}");
}

/// The providers the chooser at `url` links to, in order.
async fn chooser_links(url: &str) -> (String, Vec<String>) {
    let response = reqwest::get(url).await.unwrap();
    assert_eq!(response.status(), 200);
    let policy = response.headers()["content-security-policy"].to_str().unwrap();
    assert!(
        policy.contains("frame-ancestors 'none'") && !policy.contains("script-src"),
        "{policy}"
    );
    let html = response.text().await.unwrap();
    let links = html
        .split("<a href=\"")
        .skip(1)
        .map(|link| link.split('"').next().unwrap().to_owned())
        .collect();
    (html, links)
}

#[tokio::test]
async fn the_chooser_links_every_offered_method_in_english_and_estonian_carrying_next_and_invite() {
    let passkeys = [("auth.webauthn.origin", "http://localhost:8080".to_owned())];
    let (app, _idp) = app_with_provider(&passkeys).await;
    let query = "next=https%3A%2F%2Fapp.example%2Fdone%3Fkey%3D&invite=abc";
    for (lang, title, passkey) in [
        ("en", "Choose how to sign in.", "Passkey"),
        ("et", "Vali, kuidas sisse logida.", "Pääsuvõti"),
    ] {
        let (html, links) = chooser_links(&format!("{}/api/auth/choose?lang={lang}&{query}", app.url)).await;
        assert!(
            html.contains(&format!("<html lang=\"{lang}\"")) && html.contains(title),
            "{html}"
        );
        assert!(html.contains(&format!(">{passkey}</a>")), "{html}");
        let providers: Vec<&str> = links.iter().map(|link| link.split('?').next().unwrap()).collect();
        assert_eq!(
            providers,
            [
                "passkey",
                "smart-id",
                "mobile-id",
                "id-card",
                "google",
                "apple",
                "e-mail"
            ]
        );
        for link in &links {
            assert!(
                link.ends_with(&format!("?lang={lang}&amp;{}", query.replace('&', "&amp;"))),
                "carries lang, next and invite: {link}"
            );
        }
    }
    // unconfigured providers are not offered: the plain test app has e-mail only
    let plain = TestApp::start().await;
    let (_, links) = chooser_links(&format!("{}/api/auth/choose", plain.url)).await;
    assert_eq!(links, ["e-mail?lang=en"]);
    let (status, body) = plain
        .call("GET", "/api/auth/choose?next=http%3A%2F%2Fx", None, None)
        .await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_next")), "{body}");
}

#[tokio::test]
async fn an_id_tokens_email_is_kept_only_when_email_verified_is_true() {
    let (app, idp) = app_with_provider(&[]).await;
    for (login, kept) in [
        ("verified-ann", true),
        ("unverified-bob", false),
        ("unstated-cy", false),
    ] {
        let first = sign_in(&app, &idp, "google", login).await;
        let database = format!("db_{}", login.replace('-', "_"));
        let token = first["token"].as_str().unwrap();
        assert_eq!(app.post("/api/new", token, json!({"database": database})).await.0, 201);
        let again = sign_in(&app, &idp, "google", login).await;
        let person = again["accounts"][0]["user"]["_id"].as_str().unwrap();
        let (_, me) = app
            .get(
                &format!("/api/{database}/entity/{person}"),
                again["token"].as_str().unwrap(),
            )
            .await;
        let address = format!("{login}@example.com");
        let emails: Vec<&str> = me["entity"]["email"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|value| value["string"].as_str())
            .collect();
        assert_eq!(emails == [address.as_str()], kept, "{login}: {me}");
        // the login shows the address only when it is kept, else the provider's id
        let shown = me["entity"]["service_user"][0]["string"].as_str().unwrap();
        assert_eq!(shown == address, kept, "{login}: {shown}");
        assert!(kept || shown == login, "{login}: {shown}");
    }
}

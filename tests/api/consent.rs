//! The OAuth consent page and the caps of an authorization request, end to
//! end: a client that sends a person through authorize gets no code and
//! makes no person before the person allows it on a page that names the
//! client, where it sends them, the database and the access; consent is
//! remembered 30 days per client, redirect URI and database; pending
//! authorizations stay small; script redirect URIs cannot be registered.

use crate::support;

use chrono::Duration;
use diesel::QueryableByName;
use diesel::sql_types::Text;
use diesel_async::RunQueryDsl;
use serde_json::{Value as Json, json};
use support::TestApp;
use support::email_login::{app_with_mail, client_at};
use support::oauth::{
    ConsentPage, REDIRECT, VERIFIER, app_with_bob, authorize_url, consent_page_through_the_chooser, location, param,
    register, register_client, sign_in_through_authorize, token,
};
use support::smtp::SmtpSink;

const OTHER_REDIRECT: &str = "https://client.example/other-callback";

/// Runs authorize (with `params` over the usual ones) → the e-mail sign-in
/// as `email` from `browser`; answers the consent page, asserting there was one.
async fn consent_page(
    app: &TestApp,
    sink: &SmtpSink,
    browser: &reqwest::Client,
    client_id: &str,
    params: &[(&str, Option<&str>)],
    email: &str,
    mails: usize,
) -> ConsentPage {
    let url = authorize_url(app, client_id, params);
    let completed = sign_in_through_authorize(app, sink, browser, &url, email, mails).await;
    assert_eq!(completed.status(), 200, "a consent page, not a redirect with a code");
    ConsentPage::read(completed).await
}

/// How many entities of demo hold `email`, as the owner sees them.
async fn persons_with_email(app: &TestApp, owner: &str, email: &str) -> i64 {
    let (status, found) = app.get(&format!("/api/demo/entity?email.string={email}"), owner).await;
    assert_eq!(status, 200, "{found}");
    found["count"].as_i64().unwrap()
}

/// Points demo's `add_user` at a new folder: new logins become persons there.
async fn open_demo_to_new_logins(app: &TestApp, owner: &str) {
    let folder_type = app.create_type(owner, "folder").await;
    let folder = app
        .create(owner, &folder_type, json!([{"type": "name", "string": "New users"}]))
        .await;
    let database = app.find(owner, "database", "demo").await;
    let value = json!({"type": "add_user", "reference": folder});
    let (status, body) = app.post(&format!("/api/demo/entity/{database}"), owner, value).await;
    assert_eq!(status, 200, "{body}");
}

/// Redeems `code` for an access token; answers it.
async fn redeem(app: &TestApp, code: &str) -> String {
    let form = [
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
    ];
    let (status, answer) = token(app, "127.0.0.9", &form).await;
    assert_eq!(status, 200, "{answer}");
    answer["access_token"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn consent_a_client_gets_no_code_and_makes_no_person_before_the_person_allows() {
    let (app, sink) = app_with_mail(&[]).await;
    let owner = app.owner_token().await;
    open_demo_to_new_logins(&app, &owner).await;
    // the attacker's client sends the victim straight to the e-mail sign-in
    let client_id = register_client(&app, "Totally the official app", &[REDIRECT]).await;
    let browser = client_at("127.0.0.1");
    let victim = "victim@example.com";
    let page = consent_page(&app, &sink, &browser, &client_id, &[], victim, 0).await;
    assert_eq!(
        persons_with_email(&app, &owner, victim).await,
        0,
        "no person before Allow"
    );
    // Deny: back to the client with access_denied, its state and the issuer; no code
    let denied = location(&browser.get(&page.deny).send().await.unwrap());
    assert!(denied.starts_with(REDIRECT), "{denied}");
    assert_eq!(param(&denied, "error").as_deref(), Some("access_denied"));
    assert_eq!(param(&denied, "state").as_deref(), Some("st4te"));
    assert_eq!(param(&denied, "iss"), Some(app.url.clone()));
    assert_eq!(param(&denied, "code"), None);
    assert_eq!(page.allow(&browser).await.status(), 400, "denied: the form is used up");
    assert_eq!(persons_with_email(&app, &owner, victim).await, 0);
    // the legitimate use: the person allows; then the person is made and the code works
    let page = consent_page(&app, &sink, &browser, &client_id, &[], victim, 1).await;
    assert_eq!(persons_with_email(&app, &owner, victim).await, 0);
    let back = location(&page.allow(&browser).await);
    assert!(back.starts_with(REDIRECT), "{back}");
    assert_eq!(param(&back, "state").as_deref(), Some("st4te"));
    assert_eq!(param(&back, "iss"), Some(app.url.clone()));
    let access = redeem(&app, &param(&back, "code").expect("a code")).await;
    assert_eq!(persons_with_email(&app, &owner, victim).await, 1);
    assert_eq!(app.get("/api/demo", &access).await.0, 200);
}

#[tokio::test]
async fn consent_the_page_names_the_client_in_its_own_words_escaped_where_it_sends_the_database_and_the_access() {
    let (app, sink, _) = app_with_bob().await;
    let name = "<script>alert(1)</script><b>Official</b> \"app\"";
    let client_id = register_client(&app, name, &[REDIRECT]).await;
    let browser = client_at("127.0.0.1");
    let page = consent_page(&app, &sink, &browser, &client_id, &[], "bob@example.com", 2).await;
    let html = &page.html;
    assert!(!html.contains("<script"), "{html}");
    assert!(!html.contains("<b>"), "{html}");
    assert!(
        html.contains(
            "<q class=\"client-words\">&lt;script&gt;alert(1)&lt;/script&gt;&lt;b&gt;Official&lt;/b&gt; &quot;app&quot;</q> \
             <small>(the app's own words, not checked by this service)</small>"
        ),
        "{html}"
    );
    for shown in [
        "<strong>client.example</strong>",
        "<strong>demo</strong>",
        "read and write access",
    ] {
        assert!(html.contains(shown), "{shown}: {html}");
    }
    assert_eq!(
        page.action,
        format!("{}/auth/authorize/consent", app.url),
        "posts to this service"
    );
    assert!(
        page.csp.contains("form-action 'self' https://client.example;"),
        "{}",
        page.csp
    );
    assert!(page.csp.contains("frame-ancestors 'none'"), "{}", page.csp);
    // in Estonian
    let et = [("lang", Some("et"))];
    let page = consent_page(&app, &sink, &browser, &client_id, &et, "bob@example.com", 3).await;
    for shown in [
        "Kas lubada juurdepääs?",
        "lugemis- ja kirjutusõigus",
        ">Luba</button>",
        ">Keela</a>",
    ] {
        assert!(page.html.contains(shown), "{shown}: {}", page.html);
    }
}

#[tokio::test]
async fn consent_the_token_is_single_use_and_bound_to_the_address_it_was_shown_to() {
    let (app, sink, _) = app_with_bob().await;
    let client_id = register(&app).await;
    let browser = client_at("127.0.0.1");
    let page = consent_page(&app, &sink, &browser, &client_id, &[], "bob@example.com", 2).await;
    // from another address: refused, and the consent stays usable by its own
    let elsewhere = client_at("127.0.0.2");
    assert_eq!(page.allow(&elsewhere).await.status(), 400);
    assert_eq!(elsewhere.get(&page.deny).send().await.unwrap().status(), 400);
    let back = location(&page.allow(&browser).await);
    assert!(param(&back, "code").is_some(), "{back}");
    // used: neither the form nor the deny link works again
    let again = page.allow(&browser).await;
    assert_eq!(again.status(), 400);
    assert!(again.text().await.unwrap().contains("unknown, used or expired"));
    assert_eq!(browser.get(&page.deny).send().await.unwrap().status(), 400);
    // a forged form with a made-up token
    let forged = [("consent", "0".repeat(64)), ("lang", "en".to_owned())];
    let response = browser.post(&page.action).form(&forged).send().await.unwrap();
    assert_eq!(response.status(), 400);
}

#[tokio::test]
async fn consent_is_remembered_30_days_per_client_redirect_uri_and_database() {
    let (app, sink, _) = app_with_bob().await;
    let client_id = register_client(&app, "Remembered", &[REDIRECT, OTHER_REDIRECT]).await;
    let browser = client_at("127.0.0.1");
    let bob = "bob@example.com";
    let page = consent_page(&app, &sink, &browser, &client_id, &[], bob, 2).await;
    assert!(param(&location(&page.allow(&browser).await), "code").is_some());
    // the same client and redirect URI within 30 days: no page, a code
    let url = authorize_url(&app, &client_id, &[]);
    let completed = sign_in_through_authorize(&app, &sink, &browser, &url, bob, 3).await;
    let back = location(&completed);
    assert!(back.starts_with(REDIRECT), "{back}");
    assert_eq!(param(&back, "iss"), Some(app.url.clone()));
    redeem(&app, &param(&back, "code").expect("a code")).await;
    // another redirect URI of the same client asks again
    let other = [("redirect_uri", Some(OTHER_REDIRECT))];
    consent_page(&app, &sink, &browser, &client_id, &other, bob, 4).await;
    // another client with the same redirect URI asks again
    let another = register_client(&app, "Another", &[REDIRECT]).await;
    consent_page(&app, &sink, &browser, &another, &[], bob, 5).await;
    // after 30 days the first asks again
    app.state.clock.advance(Duration::days(30));
    consent_page(&app, &sink, &browser, &client_id, &[], bob, 6).await;
}

#[tokio::test]
async fn consent_the_method_chooser_flow_reaches_the_same_page() {
    let (app, sink, _) = app_with_bob().await;
    let client_id = register(&app).await;
    let browser = client_at("127.0.0.1");
    let url = authorize_url(&app, &client_id, &[("provider", None)]);
    let page = consent_page_through_the_chooser(&app, &sink, &browser, &url, "bob@example.com", 2).await;
    let back = location(&page.allow(&browser).await);
    assert!(param(&back, "code").is_some(), "{back}");
}

#[tokio::test]
async fn authorize_caps_the_code_challenge_at_43_base64url_characters_and_the_state_at_1024_bytes() {
    let app = TestApp::start().await;
    let client_id = register(&app).await;
    let browser = client_at("127.0.0.1");
    let huge = "A".repeat(10_000);
    let plus = format!("{}+", "A".repeat(42));
    for challenge in ["A".repeat(42), "A".repeat(44), plus, huge] {
        let params = [("code_challenge", Some(challenge.as_str()))];
        let back = location(
            &browser
                .get(authorize_url(&app, &client_id, &params))
                .send()
                .await
                .unwrap(),
        );
        assert!(back.starts_with(REDIRECT), "{back}");
        assert_eq!(param(&back, "error").as_deref(), Some("invalid_request"));
        assert_eq!(param(&back, "state").as_deref(), Some("st4te"));
    }
    let over = "s".repeat(1025);
    let back = location(
        &browser
            .get(authorize_url(&app, &client_id, &[("state", Some(&over))]))
            .send()
            .await
            .unwrap(),
    );
    assert_eq!(param(&back, "error").as_deref(), Some("invalid_request"), "{back}");
    assert_eq!(param(&back, "state"), None, "a state over the limit is not echoed");
    // within the limits: on to the sign-in, and what waits holds no client id
    let longest = "s".repeat(1024);
    let to_sign_in = location(
        &browser
            .get(authorize_url(&app, &client_id, &[("state", Some(&longest))]))
            .send()
            .await
            .unwrap(),
    );
    assert!(
        to_sign_in.starts_with(&format!("{}/api/auth/e-mail?", app.url)),
        "{to_sign_in}"
    );
    #[derive(QueryableByName)]
    struct Pending {
        #[diesel(sql_type = Text)]
        data: String,
    }
    let mut conn = app.pool.get().await.unwrap();
    let pending: Vec<Pending> =
        diesel::sql_query("SELECT data::text AS data FROM sign_in_states WHERE kind = 'oauth_request'")
            .load(&mut conn)
            .await
            .unwrap();
    assert_eq!(pending.len(), 1);
    let data: Json = serde_json::from_str(&pending[0].data).unwrap();
    assert!(!pending[0].data.contains(&client_id), "{data}");
    assert_eq!(data["client_digest"].as_str().map(str::len), Some(64), "{data}");
}

#[tokio::test]
async fn registration_refuses_javascript_data_and_vbscript_redirect_uris_in_any_case() {
    let app = TestApp::start().await;
    let post = |uri: &str| {
        let body = json!({"client_name": "x", "redirect_uris": [uri]});
        let request = app.http.post(format!("{}/auth/register", app.url)).json(&body);
        async move {
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            (status, response.json::<Json>().await.unwrap())
        }
    };
    for uri in [
        "javascript:alert(document.cookie)",
        "JaVaScRiPt:alert(1)",
        "javascript://client.example/%0aalert(1)",
        "data:text/html,<script>alert(1)</script>",
        "DATA:text/html;base64,PHNjcmlwdD4=",
        "vbscript:msgbox(1)",
        "VBScript://x/msgbox",
    ] {
        let (status, refused) = post(uri).await;
        assert_eq!(
            (status, refused["error"].as_str()),
            (400, Some("invalid_redirect_uri")),
            "{uri}: {refused}"
        );
    }
    for uri in [REDIRECT, "myapp:callback", "http://127.0.0.1:33418/callback"] {
        assert_eq!(post(uri).await.0, 201, "{uri}");
    }
}

#[tokio::test]
async fn consent_the_form_posted_from_another_site_is_403_cross_site_form_and_issues_nothing() {
    let (app, sink, _) = app_with_bob().await;
    let client_id = register(&app).await;
    let browser = client_at("127.0.0.1");
    let page = consent_page(&app, &sink, &browser, &client_id, &[], "bob@example.com", 2).await;
    for (name, value) in [("Origin", "https://client.example"), ("Sec-Fetch-Site", "cross-site")] {
        let forged = browser
            .post(&page.action)
            .header(name, value)
            .form(&page.fields)
            .send()
            .await
            .unwrap();
        assert_eq!(forged.status(), 403, "{name}");
        assert_eq!(forged.json::<Json>().await.unwrap()["error"], "cross_site_form");
    }
    // the consent is still the person's to give, from the page itself
    let allowed = browser
        .post(&page.action)
        .header("Origin", &app.url)
        .header("Sec-Fetch-Site", "same-origin")
        .form(&page.fields)
        .send()
        .await
        .unwrap();
    assert!(param(&location(&allowed), "code").is_some());
}

//! Sign-in with the e-mail provider, end to end: the form, one mail with one
//! link (a real SMTP server), the session token and its exchange, and what
//! is refused (another address, a second use, too late, too many mails).

use crate::support;

use chrono::Duration;
use serde_json::Value as Json;
use support::email_login::{app_with_mail, ask_for_link, client_at, session_key};
use support::smtp::SmtpSink;
use support::{Storage, TestApp};

/// The one link of the one mail received (asserting there is exactly one of each).
async fn the_link(sink: &SmtpSink, mails: usize) -> String {
    let mails = sink.wait_for(mails).await;
    let mail = mails.last().unwrap();
    let links = mail.links();
    assert_eq!(links.len(), 1, "exactly one link: {}", mail.body);
    links[0].clone()
}

/// Opens a link; answers the status and the JSON body (or `null`).
async fn open(client: &reqwest::Client, link: &str) -> (u16, Json, reqwest::header::HeaderMap) {
    let response = client.get(link).send().await.unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.json().await.unwrap_or(Json::Null);
    (status, body, headers)
}

/// Exchanges a session token at `GET /api/auth{query}` from `client`.
async fn exchange_from(app: &TestApp, client: &reqwest::Client, key: &str, query: &str) -> (u16, Json) {
    let response = client
        .get(format!("{}/api/auth{query}", app.url))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn the_e_mail_page_is_a_form_with_an_email_input_in_english_and_estonian() {
    let app = TestApp::start().await;
    for (lang, words) in [("en", "Sign in with e-mail"), ("et", "Logi sisse e-postiga")] {
        let response = app
            .http
            .get(format!(
                "{}/api/auth/e-mail?lang={lang}&next=https%3A%2F%2Fapp.example%2F%22%3E%3Cscript%3E",
                app.url
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let headers = response.headers().clone();
        assert!(headers["content-type"].to_str().unwrap().starts_with("text/html"));
        let policy = headers["content-security-policy"].to_str().unwrap();
        assert!(
            policy.contains("frame-ancestors 'none'") && policy.contains("default-src 'none'"),
            "{policy}"
        );
        let html = response.text().await.unwrap();
        assert_eq!(html.matches("<form").count(), 1, "{html}");
        assert!(
            html.contains(r#"name="email""#) && html.contains(&format!(r#"lang="{lang}""#)),
            "{html}"
        );
        assert!(html.contains(words), "{html}");
        // the given `next` is escaped, never markup
        assert!(
            !html.contains("<script>") && html.contains("&quot;&gt;&lt;script&gt;"),
            "{html}"
        );
    }
}

#[tokio::test]
async fn an_e_mail_link_signs_in_once_from_the_same_address_and_a_new_login_has_no_accounts() {
    let (app, sink) = app_with_mail(&[]).await;
    let local = client_at("127.0.0.1");
    assert_eq!(ask_for_link(&app, &local, "Newcomer@Example.com", &[]).await, 200);
    let mails = sink.wait_for(1).await;
    assert_eq!(mails.len(), 1);
    assert_eq!(mails[0].header("To"), Some("Newcomer@Example.com"));
    let link = the_link(&sink, 1).await;
    assert!(
        link.starts_with(&format!("{}/api/auth/e-mail?token=", app.url)),
        "{link}"
    );

    let (status, body, _) = open(&local, &link).await;
    assert_eq!(status, 200, "{body}");
    let key = body["key"].as_str().unwrap().to_owned();
    // the link works once
    let (status, again, _) = open(&local, &link).await;
    assert_eq!(
        (status, again["error"].as_str()),
        (400, Some("invalid_sign_in")),
        "{again}"
    );

    let (status, token) = exchange_from(&app, &local, &key, "").await;
    assert_eq!(status, 200, "{token}");
    assert_eq!(token["accounts"], serde_json::json!([]));
    assert!(token["token"].as_str().is_some_and(|t| !t.is_empty()));
    // the session token works once
    let (status, refused) = exchange_from(&app, &local, &key, "").await;
    assert_eq!((status, refused["message"].as_str()), (401, Some("Invalid token")));
    // and is never an access token
    let (status, _) = app.get("/api/demo/entity", &key).await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn a_session_token_is_refused_from_another_address_and_after_five_minutes() {
    let (app, sink) = app_with_mail(&[]).await;
    let key = session_key(&app, &sink, "ann@example.com", &[], 0).await;
    let (status, body) = exchange_from(&app, &client_at("127.0.0.2"), &key, "").await;
    assert_eq!((status, body["message"].as_str()), (401, Some("Invalid token")));
    // a use from elsewhere does not use it up
    assert_eq!(exchange_from(&app, &client_at("127.0.0.1"), &key, "").await.0, 200);

    let late = session_key(&app, &sink, "ann@example.com", &[], 1).await;
    app.state.clock.advance(Duration::seconds(5 * 60));
    let (status, body) = exchange_from(&app, &client_at("127.0.0.1"), &late, "").await;
    assert_eq!((status, body["message"].as_str()), (401, Some("Invalid token")));
}

#[tokio::test]
async fn a_session_token_cannot_be_used_twice_even_across_two_processes() {
    let (app, sink) = app_with_mail(&[]).await;
    let key = session_key(&app, &sink, "ann@example.com", &[], 0).await;
    let data = support::tempdir::Dir::new();
    let (mut other, other_url) = support::processes::serve(&app.database_url, &data.0).await;
    let local = client_at("127.0.0.1");
    let at_other = local
        .get(format!("{other_url}/api/auth"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(at_other.status(), 200);
    let (status, body) = exchange_from(&app, &local, &key, "").await;
    assert_eq!((status, body["message"].as_str()), (401, Some("Invalid token")));
    other.kill().await.unwrap();
}

#[tokio::test]
async fn with_next_the_link_redirects_to_next_with_the_session_token_appended() {
    let (app, sink) = app_with_mail(&[]).await;
    let local = client_at("127.0.0.1");
    let next = "https://app.example.com/signed-in?key=";
    assert_eq!(
        ask_for_link(&app, &local, "ann@example.com", &[("next", next)]).await,
        200
    );
    let link = the_link(&sink, 1).await;
    let (status, _, headers) = open(&local, &link).await;
    assert_eq!(status, 302);
    let location = headers["location"].to_str().unwrap();
    let key = location.strip_prefix(next).expect("the token is appended to next");
    assert_eq!(exchange_from(&app, &local, key, "").await.0, 200);
}

#[tokio::test]
async fn next_must_be_an_https_url() {
    let (app, sink) = app_with_mail(&[]).await;
    let local = client_at("127.0.0.1");
    for next in ["http://app.example.com/", "javascript:alert(1)", "//evil.example"] {
        let page = local
            .get(format!("{}/api/auth/e-mail", app.url))
            .query(&[("next", next)])
            .send()
            .await
            .unwrap();
        assert_eq!(page.status(), 400, "{next}");
        let body: Json = page.json().await.unwrap();
        assert_eq!(body["error"], "invalid_next");
        assert_eq!(
            ask_for_link(&app, &local, "ann@example.com", &[("next", next)]).await,
            400
        );
    }
    assert!(sink.mails().is_empty(), "no mail for a refused form");
}

#[tokio::test]
async fn a_link_opened_from_another_address_or_after_15_minutes_signs_in_nobody() {
    let (app, sink) = app_with_mail(&[]).await;
    let local = client_at("127.0.0.1");
    assert_eq!(ask_for_link(&app, &local, "ann@example.com", &[]).await, 200);
    let link = the_link(&sink, 1).await;
    let (status, body, _) = open(&client_at("127.0.0.2"), &link).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_sign_in")));
    // still good where it was asked for
    assert_eq!(open(&local, &link).await.0, 200);

    assert_eq!(ask_for_link(&app, &local, "ann@example.com", &[]).await, 200);
    let late = the_link(&sink, 2).await;
    app.state.clock.advance(Duration::minutes(15));
    let (status, body, _) = open(&local, &late).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_sign_in")));
}

#[tokio::test]
async fn an_address_that_is_no_e_mail_address_is_refused_and_nothing_is_mailed() {
    let (app, sink) = app_with_mail(&[]).await;
    let local = client_at("127.0.0.1");
    for bad in ["", "not-an-address", "a@b@c"] {
        assert_eq!(ask_for_link(&app, &local, bad, &[]).await, 400, "{bad:?}");
    }
    assert!(sink.mails().is_empty());
}

#[tokio::test]
async fn mails_to_one_recipient_are_limited_per_hour() {
    let (app, sink) = app_with_mail(&[("limits.mails_per_hour_per_recipient", "2".to_owned())]).await;
    let local = client_at("127.0.0.1");
    for _ in 0..2 {
        assert_eq!(ask_for_link(&app, &local, "ann@example.com", &[]).await, 200);
    }
    let refused = local
        .post(format!("{}/api/auth/e-mail", app.url))
        .form(&[("email", "ANN@example.com")])
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 429);
    assert!(refused.headers().contains_key("retry-after"));
    let body: Json = refused.json().await.unwrap();
    assert_eq!(body["error"], "rate_limited");
    // another recipient is not held back
    assert_eq!(ask_for_link(&app, &local, "bob@example.com", &[]).await, 200);
    assert_eq!(sink.wait_for(3).await.len(), 3);
}

/// Asks for a sign-in link with `mail.smtp_url` at `port` and
/// `mail.timeout_ms` 500: the answer must be 503 `mail_unavailable` with
/// Retry-After, with no sign-in state left behind.
async fn asking_for_a_link_answers_503_and_leaves_no_state(port: u16) {
    let settings = [
        ("mail.smtp_url", format!("smtp://127.0.0.1:{port}")),
        ("mail.timeout_ms", "500".to_owned()),
    ];
    let app = TestApp::start_with(Storage::Local, &settings).await;
    let asked = std::time::Instant::now();
    let response = client_at("127.0.0.1")
        .post(format!("{}/api/auth/e-mail", app.url))
        .form(&[("email", "ann@example.com")])
        .timeout(std::time::Duration::from_secs(10))
        .send()
        .await
        .expect("an answer within 10 s");
    assert!(
        asked.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        asked.elapsed()
    );
    let body = support::assert_retry_later(response).await;
    assert_eq!(body["error"], "mail_unavailable");
    let mut conn = app.pool.get().await.unwrap();
    let states: i64 = diesel_async::RunQueryDsl::get_result(
        diesel::dsl::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(
            "(SELECT count(*) FROM sign_in_states)",
        )),
        &mut conn,
    )
    .await
    .unwrap();
    assert_eq!(states, 0);
}

#[tokio::test]
async fn a_mail_the_server_does_not_take_answers_503_and_leaves_no_link() {
    // nothing listens on this port
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    asking_for_a_link_answers_503_and_leaves_no_state(port).await;
}

#[tokio::test]
async fn a_mail_server_that_never_answers_is_left_after_mail_timeout_ms_with_503_and_no_link() {
    // accepts connections and never says a word (an SMTP server greets first)
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = silent.local_addr().unwrap().port();
    let held = tokio::spawn(async move {
        let mut connections = Vec::new();
        while let Ok((connection, _)) = silent.accept().await {
            connections.push(connection);
        }
    });
    asking_for_a_link_answers_503_and_leaves_no_state(port).await;
    held.abort();
}

#[tokio::test]
async fn unknown_providers_are_404_and_unconfigured_ones_503() {
    let app = TestApp::start().await;
    let (status, body) = app.call("GET", "/api/auth/myspace", None, None).await;
    assert_eq!((status, body["error"].as_str()), (404, Some("not_found")));
    let (status, body) = app.call("GET", "/api/auth/google", None, None).await;
    assert_eq!((status, body["error"].as_str()), (503, Some("provider_unavailable")));
}

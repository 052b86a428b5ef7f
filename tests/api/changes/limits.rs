//! What a stream refuses and when it ends: bad queries, `Accept`, the
//! stream limits, tickets, token expiry and revocation.

use std::time::Duration;

use base64::Engine;
use serde_json::{Value as Json, json};

use super::sse::{must_open, open};
use super::{book, book_type, feed};
use crate::support::{self, TestApp};

/// The error body of a refused stream.
async fn refused(app: &TestApp, query: &str, token: Option<&str>, headers: &[(&str, &str)]) -> (u16, Json) {
    let response = open(&feed(app, query), token, headers).await.err().expect("a refusal");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

#[tokio::test]
async fn sort_limit_skip_group_and_a_non_numeric_id_are_400_and_a_foreign_accept_406() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    for query in [
        "sort=name.string",
        "limit=5",
        "skip=1",
        "group=name.string",
        "since=yesterday",
    ] {
        let (status, body) = refused(&app, query, Some(&owner), &[]).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (400, Some("invalid_query")),
            "{query}: {body}"
        );
    }
    let (status, body) = refused(&app, "", Some(&owner), &[("Last-Event-ID", "abc")]).await;
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_query")), "{body}");
    let (status, body) = refused(&app, "", Some(&owner), &[("Accept", "application/json")]).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (406, Some("not_acceptable")),
        "{body}"
    );
    let any = must_open(&feed(&app, ""), Some(&owner), &[("Accept", "*/*")]).await;
    drop(any);
}

#[tokio::test]
async fn streams_past_the_process_limit_are_503_and_past_the_callers_429() {
    let overrides = [
        ("changes.max_streams", "2".to_owned()),
        ("changes.max_streams_per_caller", "1".to_owned()),
    ];
    let app = TestApp::start_with(support::Storage::Local, &overrides).await;
    let owner = app.owner_token().await;
    let held = must_open(&feed(&app, ""), Some(&owner), &[]).await;
    let (status, body) = refused(&app, "", Some(&owner), &[]).await;
    assert_eq!((status, body["error"].as_str()), (429, Some("rate_limited")), "{body}");
    let anonymous = must_open(&feed(&app, ""), None, &[]).await;
    let response = open(&feed(&app, ""), None, &[]).await.err().expect("a refusal");
    let body = support::assert_retry_later(response).await;
    assert_eq!(body["error"], "streams_busy");
    drop((held, anonymous));
}

/// A ticket asked for from `address` (through a trusted proxy) with a
/// token bound to it.
async fn ticket_from(app: &TestApp, address: &str) -> String {
    let login = app
        .http
        .get(format!("{}/api/auth?db=demo", app.url))
        .bearer_auth(&app.key)
        .header("X-Forwarded-For", address)
        .send()
        .await
        .unwrap();
    let token = login.json::<Json>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer = app
        .http
        .post(format!("{}/api/demo/changes/ticket", app.url))
        .bearer_auth(&token)
        .header("X-Forwarded-For", address)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    answer.json::<Json>().await.unwrap()["ticket"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_ticket_is_single_use_bound_to_its_address_and_expires() {
    let proxy = [("http.trusted_proxies", "127.0.0.1".to_owned())];
    let app = TestApp::start_with(support::Storage::Local, &proxy).await;
    let ticket = ticket_from(&app, "198.51.100.7").await;
    let with = |ticket: &str| feed(&app, &format!("ticket={ticket}"));

    let (status, _) = refused_at(&with(&ticket), "198.51.100.8").await;
    assert_eq!(status, 401, "from another address");
    let stream = must_open(&with(&ticket), None, &[("X-Forwarded-For", "198.51.100.7")]).await;
    drop(stream);
    let (status, body) = refused_at(&with(&ticket), "198.51.100.7").await;
    assert_eq!(status, 401, "used once: {body}");

    let late = ticket_from(&app, "198.51.100.7").await;
    {
        use diesel_async::RunQueryDsl;
        let mut conn = app.pool.get().await.unwrap();
        diesel::sql_query(
            "UPDATE sign_in_states SET expires_at = now() - interval '1 second' WHERE kind = 'change_ticket'",
        )
        .execute(&mut conn)
        .await
        .unwrap();
    }
    let (status, _) = refused_at(&with(&late), "198.51.100.7").await;
    assert_eq!(status, 401, "expired");

    let anonymous = app
        .http
        .post(format!("{}/api/demo/changes/ticket", app.url))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 401, "a ticket stands for a token");
}

async fn refused_at(url: &str, address: &str) -> (u16, Json) {
    let response = open(url, None, &[("X-Forwarded-For", address)])
        .await
        .err()
        .expect("a refusal");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or_default())
}

/// The claims of token `token`, as signed.
fn claims_of(token: &str) -> eds::auth::jwt::Claims {
    let payload = token.split('.').nth(1).unwrap();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

#[tokio::test]
async fn a_stream_ends_when_its_token_expires() {
    let app = TestApp::start().await;
    let mut claims = claims_of(&app.owner_token().await);
    claims.exp = chrono::Utc::now().timestamp() + 2;
    let short = app.state.jwt.sign(&claims).unwrap();
    let mut stream = must_open(&feed(&app, ""), Some(&short), &[]).await;
    assert!(
        stream.ends_within(Duration::from_secs(6)).await,
        "the stream outlived its token"
    );
}

#[tokio::test]
async fn a_read_scoped_oauth_token_may_read_the_feed() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let mut claims = claims_of(&owner);
    claims.scope = Some("read".to_owned());
    claims.oauth_client = Some("0".repeat(64));
    claims.ip = None;
    let read_only = app.state.jwt.sign(&claims).unwrap();
    let (status, _) = app.get("/api/demo/entity?limit=1", &read_only).await;
    assert_eq!(status, 200, "the token is accepted");
    let books = book_type(&app, &owner).await;
    let (status, body) = app
        .post(
            "/api/demo/entity",
            &read_only,
            json!([{"type": "_type", "reference": books}]),
        )
        .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (403, Some("insufficient_scope")),
        "and reads only"
    );
    let mut stream = must_open(&feed(&app, ""), Some(&read_only), &[]).await;
    let id = book(&app, &owner, &books, json!([{"type": "name", "string": "read"}])).await;
    assert_eq!(stream.expect().await.data["_id"], id.as_str());
}

#[tokio::test]
async fn a_stream_ends_when_its_key_is_revoked() {
    let revocation = [("auth.revocation_check_seconds", "1".to_owned())];
    let app = TestApp::start_with(support::Storage::Local, &revocation).await;
    let owner = app.owner_token().await;
    let (reader, key) = app.add_person(&owner, "Reader").await;
    let token = app.token_for(&key).await;
    let books = book_type(&app, &owner).await;
    let mut stream = must_open(&feed(&app, ""), Some(&token), &[]).await;
    let (status, body) = app.delete(&format!("/api/demo/entity/{reader}"), &owner).await;
    assert_eq!(status, 200, "{body}");
    book(&app, &owner, &books, json!([{"type": "name", "string": "after"}])).await;
    assert!(
        stream.ends_within(Duration::from_secs(8)).await,
        "the stream outlived its person"
    );
}

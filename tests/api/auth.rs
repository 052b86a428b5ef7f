//! Tokens: API-key login, refresh limits, address binding, token kinds,
//! revocation, secret rotation, and the usage endpoint.

use crate::support;

use std::collections::BTreeMap;

use chrono::Duration;
use eds::auth::jwt::{Claims, JwtKeys, key_id};
use serde_json::{Value as Json, json};
use support::{JWT_SECRET, TestApp};

fn keys() -> JwtKeys {
    JwtKeys::new(
        JWT_SECRET.as_bytes(),
        chrono::NaiveDate::from_ymd_opt(2026, 11, 6).unwrap(),
    )
}

async fn refresh(app: &TestApp, token: &str) -> (u16, Json) {
    app.get("/api/auth/refresh", token).await
}

/// A second database `other` beside `demo`, on the same PostgreSQL.
async fn other_database(app: &TestApp) -> eds::db::databases::CreatedDatabase {
    eds::db::databases::create(&app.pool, "other", "other@example.com", "Other Owner")
        .await
        .expect("create the other database")
}

/// A new API key on `person`: its value id and the plain key.
async fn add_key(app: &TestApp, owner: &str, person: &str) -> (String, String) {
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{person}"),
            owner,
            json!({"type": "service_api_key", "string": "generate"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let key = &body["properties"][0];
    (
        key["_id"].as_str().unwrap().to_owned(),
        key["string"].as_str().unwrap().to_owned(),
    )
}

/// Lets the default revocation check interval (60 seconds) pass.
fn wait_out_the_check_interval(app: &TestApp) {
    app.state.clock.advance(Duration::seconds(61));
}

/// `GET /api/demo` (a route that needs a person in `demo`) with `token`.
async fn usage_status(app: &TestApp, token: &str) -> (u16, Json) {
    app.get("/api/demo", token).await
}

fn assert_invalid_token((status, body): (u16, Json)) {
    assert_eq!(
        (status, body),
        (
            401,
            json!({"status": 401, "error": "unauthorized", "message": "Invalid token"})
        )
    );
}

#[tokio::test]
async fn refresh_returns_a_new_token_of_the_same_shape() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let (status, body) = refresh(&app, &token).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["accounts"][0]["_id"], "demo");
    assert_eq!(body["user"]["name"], "Demo Owner");
    assert!(body["expires"].is_string());
    let fresh = body["token"].as_str().unwrap();
    assert_eq!(app.get("/api/demo/entity", fresh).await.0, 200);
}

#[tokio::test]
async fn an_expired_token_refreshes_within_the_idle_limit() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    app.state.clock.advance(Duration::hours(13));
    assert_eq!(app.get("/api/demo/entity", &token).await.0, 401, "expired for the API");
    let (status, body) = refresh(&app, &token).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn refresh_beyond_14_days_is_token_too_old() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    app.state.clock.advance(Duration::days(15));
    let (status, body) = refresh(&app, &token).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (401, Some("Token too old, re-authenticate"))
    );
}

#[tokio::test]
async fn refresh_beyond_30_days_from_login_is_session_expired() {
    let app = TestApp::start().await;
    let mut token = app.owner_token().await;
    for _ in 0..2 {
        app.state.clock.advance(Duration::days(13));
        let (status, body) = refresh(&app, &token).await;
        assert_eq!(status, 200, "{body}");
        token = body["token"].as_str().unwrap().to_owned();
    }
    app.state.clock.advance(Duration::days(5));
    let (status, body) = refresh(&app, &token).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (401, Some("Session expired, re-authenticate"))
    );
}

#[tokio::test]
async fn refresh_after_the_key_is_deleted_is_no_accessible_accounts() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (person, key) = app.add_person(&owner, "Temp").await;
    let token = app.token_for(&key).await;
    let (_, body) = app.get(&format!("/api/demo/entity/{person}"), &owner).await;
    let key_value = body["entity"]["service_api_key"][0]["_id"].as_str().unwrap().to_owned();
    assert_eq!(
        app.delete(&format!("/api/demo/property/{key_value}"), &owner).await.0,
        200
    );
    let (status, body) = refresh(&app, &token).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (401, Some("No accessible accounts"))
    );
    // and the deleted key no longer logs in
    assert_eq!(app.call("GET", "/api/auth", Some(&key), None).await.0, 401);
}

#[tokio::test]
async fn refresh_of_an_unbound_token_is_invalid_token() {
    let app = TestApp::start().await;
    let accounts = BTreeMap::from([("demo".to_owned(), app.person.clone())]);
    let unbound = keys()
        .sign(&Claims::access("oauth".into(), accounts, None, chrono::Utc::now()))
        .unwrap();
    assert_eq!(
        app.get("/api/demo/entity", &unbound).await.0,
        200,
        "unbound tokens work anywhere"
    );
    let (status, body) = refresh(&app, &unbound).await;
    assert_eq!((status, body["message"].as_str()), (401, Some("Invalid token")));
}

#[tokio::test]
async fn a_token_from_another_address_is_invalid_token() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let elsewhere = reqwest::Client::builder()
        .local_address("127.0.0.2".parse::<std::net::IpAddr>().unwrap())
        .build()
        .unwrap();
    for path in ["/api/demo/entity", "/api/auth/refresh"] {
        let response = elsewhere
            .get(format!("{}{path}", app.url))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401, "{path}");
        let body: Json = response.json().await.unwrap();
        assert_eq!(body["message"], "Invalid token");
    }
}

#[tokio::test]
async fn behind_a_trusted_proxy_the_last_forwarded_address_binds() {
    let app = TestApp::start_with(
        support::Storage::Local,
        &[("http.trusted_proxies", "127.0.0.1".to_owned())],
    )
    .await;
    let login = app
        .http
        .get(format!("{}/api/auth?db=demo", app.url))
        .bearer_auth(&app.key)
        .header("X-Forwarded-For", "198.51.100.1, 10.0.0.5")
        .send()
        .await
        .unwrap();
    let token = login.json::<Json>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let from = |address: &'static str| {
        app.http
            .get(format!("{}/api/demo/entity", app.url))
            .bearer_auth(&token)
            .header("X-Forwarded-For", address)
            .send()
    };
    assert_eq!(from("10.0.0.5").await.unwrap().status(), 200);
    assert_eq!(from("10.0.0.6").await.unwrap().status(), 401);
}

#[tokio::test]
async fn a_forged_first_forwarded_line_does_not_pass_for_the_address_a_token_is_bound_to() {
    let app = TestApp::start_with(
        support::Storage::Local,
        &[("http.trusted_proxies", "127.0.0.1".to_owned())],
    )
    .await;
    // The victim at 10.0.0.5 signs in through the proxy.
    let login = app
        .http
        .get(format!("{}/api/auth?db=demo", app.url))
        .bearer_auth(&app.key)
        .header("X-Forwarded-For", "10.0.0.5")
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 200);
    let token = login.json::<Json>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    // The proxy appends its own line, naming the real client, after the client's.
    let from = |client_line: &'static str, proxy_line: &'static str| {
        app.http
            .get(format!("{}/api/demo/entity", app.url))
            .bearer_auth(&token)
            .header("X-Forwarded-For", client_line)
            .header("X-Forwarded-For", proxy_line)
            .send()
    };
    // The thief at 198.51.100.7 forges a first line with the victim's address.
    let refused = from("10.0.0.5", "198.51.100.7").await.unwrap();
    assert_eq!(refused.status(), 401);
    let body: Json = refused.json().await.unwrap();
    assert_eq!(body["status"], 401);
    assert_eq!(body["message"], "Invalid token");
    // The victim, whatever its own line says, still gets through.
    assert_eq!(from("192.0.2.1", "10.0.0.5").await.unwrap().status(), 200);
}

#[tokio::test]
async fn only_access_tokens_are_accepted_and_untyped_ones_are_past_their_cutoff() {
    let app = TestApp::start().await;
    let accounts = BTreeMap::from([("demo".to_owned(), app.person.clone())]);
    let now = chrono::Utc::now();
    for kind in [Some("session"), Some("invite"), None] {
        let mut claims = Claims::access("x".into(), accounts.clone(), None, now);
        claims.token_use = kind.map(str::to_owned);
        let token = keys().sign(&claims).unwrap();
        let (status, body) = app.get("/api/demo/entity", &token).await;
        assert_eq!(status, 401, "{kind:?}: {body}");
    }
    let forged = JwtKeys::new(b"another secret", chrono::NaiveDate::from_ymd_opt(2026, 11, 6).unwrap())
        .sign(&Claims::access("x".into(), accounts, None, now))
        .unwrap();
    assert_eq!(app.get("/api/demo/entity", &forged).await.0, 401);
}

#[tokio::test]
async fn request_counts_a_failed_flush_could_not_write_arrive_with_the_next_flush() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    for _ in 0..3 {
        assert_eq!(app.get("/api/demo/entity", &owner).await.0, 200);
    }
    // A flush to a database that does not answer fails; it had counts to write.
    let nowhere = "postgres://postgres@127.0.0.1:1/none";
    let unreachable = eds::db::placement::Clusters::new(nowhere, eds::db::pool(nowhere, 1, 2000).unwrap(), 1, 2000);
    let failed = app.state.usage.flush(&unreachable).await;
    assert!(failed.is_err());
    // The next flush (this read makes one) writes them: 3 + the read itself.
    let (status, usage) = app.get("/api/demo", &owner).await;
    assert_eq!(status, 200, "{usage}");
    assert_eq!(usage["requests"]["usage"], 4, "{usage}");
}

#[tokio::test]
async fn usage_object_reports_entities_values_requests_and_limits() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    let id = app
        .create(
            &owner,
            &book,
            json!([{"type": "cover", "filename": "a.png", "filesize": 300, "filetype": "image/png"}]),
        )
        .await;
    app.delete(&format!("/api/demo/entity/{id}"), &owner).await;
    let (status, usage) = app.get("/api/demo", &owner).await;
    assert_eq!(status, 200, "{usage}");
    assert!(usage["entities"]["usage"].as_i64().unwrap() > 10);
    assert_eq!(usage["entities"]["deleted"], 1);
    assert_eq!(usage["entities"]["limit"], 0);
    assert!(usage["properties"]["deleted"].as_i64().unwrap() >= 4);
    assert_eq!(usage["files"], json!({"usage": 0, "deleted": 300, "limit": 0}));
    assert_eq!(usage["tokens"], json!({"usage": 0, "limit": 100000}));
    // every request before it is counted (the auth call is not a database route)
    let requests = usage["requests"]["usage"].as_i64().unwrap();
    assert!(requests >= 5, "{requests}");
    assert!(usage["requests"]["limit"].as_i64().unwrap() >= requests);
    assert!(usage["dbSize"].as_i64().unwrap() > 0);
    assert_eq!(usage["organization"], json!([]));
    // cached: the same object for five minutes
    let (_, again) = app.get("/api/demo", &owner).await;
    assert_eq!(again, usage);
}

#[tokio::test]
async fn usage_needs_a_token_for_that_database() {
    let app = TestApp::start().await;
    assert_eq!(app.call("GET", "/api/demo", None, None).await.0, 401);
    let other = other_database(&app).await;
    let accounts = BTreeMap::from([("other".to_owned(), other.person_id)]);
    let other = keys()
        .sign(&Claims::access("x".into(), accounts, None, chrono::Utc::now()))
        .unwrap();
    assert_eq!(app.get("/api/demo", &other).await.0, 403);
}

#[tokio::test]
async fn a_plain_key_appears_only_in_its_creation_response() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (person, key) = app.add_person(&owner, "Keyholder").await;
    let (_, entity) = app.get(&format!("/api/demo/entity/{person}"), &owner).await;
    let value = entity["entity"]["service_api_key"][0]["_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut seen = vec![entity.clone()];
    for path in [
        format!("/api/demo/property/{value}"),
        "/api/demo/entity?props=service_api_key&name.string=Keyholder".to_owned(),
        "/api/demo/entity?sort=service_api_key.string".to_owned(),
        format!("/api/demo/entity/{person}/history"),
        "/api/demo/entity?q=***".to_owned(),
    ] {
        let (status, body) = app.get(&path, &owner).await;
        assert_eq!(status, 200, "{path}: {body}");
        seen.push(body);
    }
    for body in &seen {
        assert!(!body.to_string().contains(&key), "{body}");
    }
    assert_eq!(entity["entity"]["service_api_key"][0]["string"], "***");
    assert_eq!(seen[1]["string"], "***");
    assert_eq!(seen[2]["entities"][0]["service_api_key"][0]["string"], "***");
    // filters on the plain key, its hash form or the mask match nothing
    for filter in [
        format!("service_api_key.string={key}"),
        "service_api_key.string=***".to_owned(),
        "service_api_key.string.exists=true".to_owned(),
    ] {
        let (_, body) = app.get(&format!("/api/demo/entity?{filter}"), &owner).await;
        assert_eq!(body["count"], 0, "{filter}");
    }
}

#[tokio::test]
async fn login_fields_cannot_be_written_through_the_api_and_nothing_is_written() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    for body in [
        json!([{"type": "note", "string": "kept?"}, {"type": "service_user", "string": "me@example.com", "provider": "google", "uid": "123"}]),
        json!({"type": "service_user", "string": "me@example.com", "uid": "123"}),
        json!({"type": "service_user", "number": 1}),
    ] {
        let (status, error) = app
            .post(&format!("/api/demo/entity/{}", app.person), &owner, body)
            .await;
        assert_eq!(status, 400, "{error}");
    }
    let (_, me) = app.get(&format!("/api/demo/entity/{}", app.person), &owner).await;
    assert!(
        me["entity"].get("service_user").is_none() && me["entity"].get("note").is_none(),
        "{me}"
    );
}

#[tokio::test]
async fn a_token_stops_working_once_its_api_key_is_deleted_and_other_keys_keep_working() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (person, _) = app.add_person(&owner, "Robot").await;
    let (exposed_id, exposed) = add_key(&app, &owner, &person).await;
    let (_, kept) = add_key(&app, &owner, &person).await;
    let stolen = app.token_for(&exposed).await;
    let kept_token = app.token_for(&kept).await;
    assert_eq!(usage_status(&app, &stolen).await.0, 200);

    let (status, body) = app.delete(&format!("/api/demo/property/{exposed_id}"), &owner).await;
    assert_eq!(status, 200, "{body}");
    wait_out_the_check_interval(&app);
    assert_invalid_token(usage_status(&app, &stolen).await);
    assert_invalid_token(app.get(&format!("/api/demo/entity/{person}"), &stolen).await);
    let (status, body) = refresh(&app, &stolen).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (401, Some("No accessible accounts"))
    );
    // the person's other key, and its tokens, are untouched
    assert_eq!(usage_status(&app, &kept_token).await.0, 200);
    let (status, body) = refresh(&app, &kept_token).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(usage_status(&app, &app.token_for(&kept).await).await.0, 200);
}

#[tokio::test]
async fn a_token_stops_working_once_its_key_is_revoked_from_the_command_line() {
    let app = TestApp::start_with(
        support::Storage::Local,
        &[("auth.revocation_check_seconds", "0".to_owned())],
    )
    .await;
    let owner = app.owner_token().await;
    let (person, _) = app.add_person(&owner, "Robot").await;
    let (value_id, key) = add_key(&app, &owner, &person).await;
    let token = app.token_for(&key).await;
    assert_eq!(usage_status(&app, &token).await.0, 200);

    // `eds key revoke demo VALUE_ID`, as another process runs it
    eds::cli::admin::revoke_key(&app.pool, "demo", &value_id).await.unwrap();
    // 0 seconds: looked up on every request
    assert_invalid_token(usage_status(&app, &token).await);
    assert_eq!(usage_status(&app, &owner).await.0, 200);
}

#[tokio::test]
async fn a_token_stops_working_once_its_person_is_deleted() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (person, key) = app.add_person(&owner, "Leaver").await;
    let token = app.token_for(&key).await;
    assert_eq!(usage_status(&app, &token).await.0, 200);

    let (status, body) = app.delete(&format!("/api/demo/entity/{person}"), &owner).await;
    assert_eq!(status, 200, "{body}");
    wait_out_the_check_interval(&app);
    assert_invalid_token(usage_status(&app, &token).await);
    assert_invalid_token(app.get("/api/demo/entity", &token).await);
    let (status, body) = refresh(&app, &token).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (401, Some("No accessible accounts"))
    );
    assert_eq!(usage_status(&app, &owner).await.0, 200);
}

#[tokio::test]
async fn a_token_for_several_databases_loses_only_the_one_whose_person_is_deleted() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (person, _) = app.add_person(&owner, "Traveller").await;
    let other = other_database(&app).await;
    let accounts = BTreeMap::from([
        ("demo".to_owned(), person.clone()),
        ("other".to_owned(), other.person_id),
    ]);
    let token = keys()
        .sign(&Claims::access("x".into(), accounts, None, chrono::Utc::now()))
        .unwrap();
    assert_eq!(usage_status(&app, &token).await.0, 200);

    let (status, body) = app.delete(&format!("/api/demo/entity/{person}"), &owner).await;
    assert_eq!(status, 200, "{body}");
    wait_out_the_check_interval(&app);
    let (status, body) = usage_status(&app, &token).await;
    assert_eq!(
        (status, body["message"].as_str()),
        (403, Some("The token gives no access to this database")),
        "{body}"
    );
    let (status, body) = app.get("/api/other", &token).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn a_token_signed_with_a_previous_secret_is_accepted_while_that_secret_is_listed() {
    let app = TestApp::start_with(
        support::Storage::Local,
        &[("auth.previous_jwt_secrets", "an old secret".to_owned())],
    )
    .await;
    let accounts = BTreeMap::from([("demo".to_owned(), app.person.clone())]);
    let claims = Claims::access("x".into(), accounts, None, chrono::Utc::now());
    let old = JwtKeys::new(b"an old secret", chrono::NaiveDate::from_ymd_opt(2026, 11, 6).unwrap())
        .sign(&claims)
        .unwrap();
    let (status, body) = usage_status(&app, &old).await;
    assert_eq!(status, 200, "{body}");
    // a secret never configured still signs nothing acceptable
    let forged = JwtKeys::new(
        b"a guessed secret",
        chrono::NaiveDate::from_ymd_opt(2026, 11, 6).unwrap(),
    )
    .sign(&claims)
    .unwrap();
    assert_invalid_token(usage_status(&app, &forged).await);
    // new tokens are signed with the current secret, and say so
    let fresh = app.owner_token().await;
    let header = jsonwebtoken::decode_header(&fresh).unwrap();
    assert_eq!(header.kid, Some(key_id(JWT_SECRET.as_bytes())));
    assert_eq!(usage_status(&app, &fresh).await.0, 200);
}

#[tokio::test]
async fn a_token_signed_with_a_secret_no_longer_listed_is_invalid_token() {
    let app = TestApp::start().await;
    let accounts = BTreeMap::from([("demo".to_owned(), app.person.clone())]);
    let old = JwtKeys::new(b"an old secret", chrono::NaiveDate::from_ymd_opt(2026, 11, 6).unwrap())
        .sign(&Claims::access("x".into(), accounts, None, chrono::Utc::now()))
        .unwrap();
    assert_invalid_token(usage_status(&app, &old).await);
    assert_eq!(usage_status(&app, &app.owner_token().await).await.0, 200);
}

#[tokio::test]
async fn usage_reads_the_organization_of_the_databases_own_entity_only() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let own = app.find(&owner, "database", "demo").await;
    let organization = json!([{"type": "organization", "string": "Demo Society", "language": "en"}]);
    assert_eq!(
        app.post(&format!("/api/demo/entity/{own}"), &owner, organization)
            .await
            .0,
        200
    );
    // another entity of the `database` type is no database's own
    let database_type = app.find(&owner, "entity", "database").await;
    app.create(
        &owner,
        &database_type,
        json!([{"type": "name", "string": "impostor"}, {"type": "organization", "string": "Impostor"}]),
    )
    .await;
    let (status, usage) = app.get("/api/demo", &owner).await;
    assert_eq!(status, 200, "{usage}");
    assert_eq!(
        usage["organization"],
        json!([{"language": "en", "string": "Demo Society"}])
    );
}

//! Operability: Prometheus metrics at `/metrics`, rate limits per client
//! address, and request body limits per route.

use crate::support;

use std::io::Cursor;

use image::{DynamicImage, ImageFormat, RgbImage};
use serde_json::{Value as Json, json};
use support::{Storage, TestApp};

/// The `/metrics` text, after checking it is the Prometheus text format.
async fn metrics(app: &TestApp) -> String {
    let response = app.http.get(format!("{}/metrics", app.url)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(content_type.starts_with("text/plain; version=0.0.4"), "{content_type}");
    response.text().await.unwrap()
}

/// The value of one series (`name{labels}` exactly as exposed), if present.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map(|value| value.trim().parse().unwrap())
}

fn assert_sample_at_least(text: &str, series: &str, least: f64) {
    let value = sample(text, series).unwrap_or_else(|| panic!("no {series} in:\n{text}"));
    assert!(value >= least, "{series} = {value}, expected at least {least}");
}

/// Creates an entity with a small PNG in `photo`, uploaded; answers the entity id.
async fn entity_with_photo(app: &TestApp, token: &str) -> String {
    let item = app.create_type(token, "item").await;
    let entity = app.create(token, &item, json!([{"type": "name", "string": "x"}])).await;
    let mut png = Cursor::new(Vec::new());
    DynamicImage::ImageRgb8(RgbImage::from_pixel(64, 48, image::Rgb([0, 0, 255])))
        .write_to(&mut png, ImageFormat::Png)
        .unwrap();
    let png = png.into_inner();
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{entity}"),
            token,
            json!([{"type": "photo", "filename": "p.png", "filesize": png.len(), "filetype": "image/png"}]),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = put_upload(app, &body["properties"][0]["upload"], png).await;
    assert_eq!(status, 200);
    entity
}

/// PUTs `bytes` to a signed upload with exactly its headers; answers status and body.
async fn put_upload(app: &TestApp, upload: &Json, bytes: Vec<u8>) -> (u16, String) {
    let mut request = app.http.put(upload["url"].as_str().unwrap()).body(bytes);
    for (name, value) in upload["headers"].as_object().unwrap() {
        let value = value.as_str().map_or_else(|| value.to_string(), str::to_owned);
        request = request.header(name.as_str(), value);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test]
async fn metrics_expose_each_family_in_prometheus_text_after_its_activity() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let (status, _) = app.get("/api/auth/refresh", &token).await;
    assert_eq!(status, 200);
    // refused: a wrong API key, a malformed token on a read and on refresh
    assert_eq!(
        app.call("GET", "/api/auth", Some("x".repeat(32).as_str()), None)
            .await
            .0,
        401
    );
    assert_eq!(app.get("/api/demo/entity", "bad.token.here").await.0, 401);
    assert_eq!(app.get("/api/auth/refresh", "bad.token.here").await.0, 401);
    let entity = entity_with_photo(&app, &token).await;
    let (status, body) = app
        .get(&format!("/api/demo/entity/{entity}/thumbnail/50"), &token)
        .await;
    assert_eq!(status, 200, "{body}");
    for _ in 0..2 {
        assert_eq!(app.get("/api/demo/entity?name.string=metrics", &token).await.0, 200);
    }

    let text = metrics(&app).await;
    assert_sample_at_least(&text, r#"eds_answer_cache_total{outcome="miss"}"#, 1.0);
    assert_sample_at_least(&text, r#"eds_answer_cache_total{outcome="hit"}"#, 1.0);
    assert_sample_at_least(
        &text,
        r#"eds_http_requests_total{method="GET",route="/api/{db}/entity/{id}/thumbnail/{size}",status="200"}"#,
        1.0,
    );
    assert_sample_at_least(
        &text,
        r#"eds_http_request_duration_seconds_count{method="POST",route="/api/{db}/entity"}"#,
        1.0,
    );
    for state in ["max", "size", "available", "waiting"] {
        assert!(sample(&text, &format!(r#"eds_db_pool_connections{{state="{state}"}}"#)).is_some());
    }
    assert_eq!(sample(&text, r#"eds_db_pool_connections{state="max"}"#), Some(8.0));
    assert!(sample(&text, "eds_writer_mailbox_depth").is_some(), "{text}");
    assert_sample_at_least(&text, r#"eds_writer_commit_batch_size_bucket{le="1"}"#, 3.0);
    assert!(
        sample(&text, r#"eds_thumbnail_queue_depth{queue="image"}"#).is_some(),
        "{text}"
    );
    assert_sample_at_least(&text, r#"eds_thumbnail_render_seconds_count{source="image"}"#, 1.0);
    assert_sample_at_least(&text, r#"eds_tokens_issued_total{flow="login"}"#, 1.0);
    assert_sample_at_least(&text, r#"eds_tokens_issued_total{flow="refresh"}"#, 1.0);
    assert_sample_at_least(
        &text,
        r#"eds_tokens_refused_total{flow="login",reason="invalid_key"}"#,
        1.0,
    );
    assert_sample_at_least(
        &text,
        r#"eds_tokens_refused_total{flow="request",reason="invalid"}"#,
        1.0,
    );
    assert_sample_at_least(
        &text,
        r#"eds_tokens_refused_total{flow="refresh",reason="invalid"}"#,
        1.0,
    );
    // every family announces its type
    for family in [
        "eds_http_requests_total counter",
        "eds_http_request_duration_seconds histogram",
        "eds_writer_commit_batch_size histogram",
        "eds_thumbnail_render_seconds histogram",
    ] {
        assert!(text.contains(&format!("# TYPE {family}")), "{family}");
    }
}

#[tokio::test]
async fn metrics_label_requests_by_route_pattern_never_by_raw_path() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let person = app.person.clone();
    assert_eq!(app.get(&format!("/api/demo/entity/{person}"), &token).await.0, 200);
    assert_eq!(app.get("/no/such/route/4242", &token).await.0, 404);
    let text = metrics(&app).await;
    assert_sample_at_least(
        &text,
        r#"eds_http_requests_total{method="GET",route="/api/{db}/entity/{id}",status="200"}"#,
        1.0,
    );
    assert_sample_at_least(
        &text,
        r#"eds_http_requests_total{method="GET",route="unmatched",status="404"}"#,
        1.0,
    );
    assert!(!text.contains(&person), "an entity id became a label");
    assert!(!text.contains("/api/demo"), "a database name became a label");
    // (not its number alone: a duration's digits may hold it)
    assert!(!text.contains("/no/such/route"), "an unmatched path became a label");
}

#[tokio::test]
async fn with_metrics_token_set_metrics_need_it_as_a_bearer_token() {
    let app = TestApp::start_with(Storage::Local, &[("metrics.token", "scrape-secret-1".to_owned())]).await;
    let owner = app.owner_token().await;
    let scrape = |token: Option<String>| {
        let mut request = app.http.get(format!("{}/metrics", app.url));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send()
    };
    // No token, a near miss, and the API's own credentials all get 401.
    for wrong in [
        None,
        Some("scrape-secret-2".to_owned()),
        Some("scrape-secret-1x".to_owned()),
        Some(owner),
        Some(app.key.clone()),
    ] {
        let response = scrape(wrong.clone()).await.unwrap();
        assert_eq!(response.status(), 401, "{wrong:?}");
        let body: Json = response.json().await.unwrap();
        assert_eq!(
            body,
            json!({"status": 401, "error": "unauthorized", "message": "Metrics need the metrics token"})
        );
    }
    let response = scrape(Some("scrape-secret-1".to_owned())).await.unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    assert!(text.contains("eds_http_requests_total"), "{text}");
}

#[tokio::test]
async fn without_metrics_token_metrics_stay_open() {
    let app = TestApp::start().await;
    let text = metrics(&app).await;
    assert!(text.contains("eds_http_requests_total"), "{text}");
}

/// An app whose limits are `overrides`, addresses given by `X-Forwarded-For`
/// (the test client is the trusted proxy).
async fn limited_app(overrides: &[(&str, &str)]) -> TestApp {
    let mut all = vec![("http.trusted_proxies", "127.0.0.1".to_owned())];
    all.extend(overrides.iter().map(|(key, value)| (*key, (*value).to_owned())));
    TestApp::start_with(Storage::Local, &all).await
}

async fn get_from(app: &TestApp, address: &str, path: &str, key: Option<&str>) -> reqwest::Response {
    let mut request = app
        .http
        .get(format!("{}{path}", app.url))
        .header("X-Forwarded-For", address);
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    request.send().await.unwrap()
}

async fn assert_throttled(response: reqwest::Response) {
    assert_eq!(response.status(), 429);
    let retry_after: u64 = response.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry_after), "Retry-After {retry_after}");
    let body: Json = response.json().await.unwrap();
    assert_eq!(body["status"], 429);
    assert_eq!(body["error"], "rate_limited");
    assert!(body["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
}

#[tokio::test]
async fn the_request_over_the_per_address_limit_gets_429_with_retry_after_and_a_json_body() {
    let app = limited_app(&[("limits.requests_per_minute", "5")]).await;
    for _ in 0..5 {
        assert_eq!(get_from(&app, "10.0.0.1", "/health", None).await.status(), 200);
    }
    assert_throttled(get_from(&app, "10.0.0.1", "/api/demo/entity", None).await).await;
    // another address is not affected
    assert_eq!(get_from(&app, "10.0.0.2", "/health", None).await.status(), 200);
    let text = metrics(&app).await;
    assert_sample_at_least(&text, r#"eds_rate_limited_total{bucket="requests"}"#, 1.0);
}

#[tokio::test]
async fn a_client_cannot_escape_the_rate_limit_with_its_own_forwarded_line() {
    let app = limited_app(&[("limits.requests_per_minute", "3")]).await;
    // The proxy appends a line naming the real client after the client's forged one.
    let send = |forged: String| {
        app.http
            .get(format!("{}/health", app.url))
            .header("X-Forwarded-For", forged)
            .header("X-Forwarded-For", "10.0.0.9")
            .send()
    };
    for attempt in 0..3 {
        assert_eq!(send(format!("192.0.2.{attempt}")).await.unwrap().status(), 200);
    }
    assert_throttled(send("192.0.2.200".to_owned()).await.unwrap()).await;
    // The counted address is the proxy's entry, and another client is not affected.
    assert_throttled(get_from(&app, "10.0.0.9", "/health", None).await).await;
    assert_eq!(get_from(&app, "192.0.2.1", "/health", None).await.status(), 200);
}

#[tokio::test]
async fn key_exchange_has_its_own_stricter_per_address_limit() {
    let app = limited_app(&[("limits.auth_per_minute", "2")]).await;
    let key = app.key.clone();
    for _ in 0..2 {
        let response = get_from(&app, "10.0.0.1", "/api/auth?db=demo", Some(&key)).await;
        assert_eq!(response.status(), 200);
    }
    assert_throttled(get_from(&app, "10.0.0.1", "/api/auth?db=demo", Some(&key)).await).await;
    // the address may still use every other route, and another address may log in
    assert_eq!(get_from(&app, "10.0.0.1", "/health", None).await.status(), 200);
    let response = get_from(&app, "10.0.0.2", "/api/auth?db=demo", Some(&key)).await;
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn limits_enabled_false_lets_every_request_through() {
    let app = limited_app(&[
        ("limits.enabled", "false"),
        ("limits.requests_per_minute", "1"),
        ("limits.auth_per_minute", "1"),
    ])
    .await;
    let key = app.key.clone();
    for _ in 0..3 {
        assert_eq!(get_from(&app, "10.0.0.1", "/health", None).await.status(), 200);
        let response = get_from(&app, "10.0.0.1", "/api/auth?db=demo", Some(&key)).await;
        assert_eq!(response.status(), 200);
    }
}

#[tokio::test]
async fn a_json_write_body_over_http_json_body_limit_bytes_is_413_with_a_json_body() {
    let app = TestApp::start_with(Storage::Local, &[("http.json_body_limit_bytes", "2000".to_owned())]).await;
    let token = app.owner_token().await;
    let person = app.person.clone();
    let small = json!([{"type": "nickname", "string": "x".repeat(100)}]);
    let (status, body) = app.post(&format!("/api/demo/entity/{person}"), &token, small).await;
    assert_eq!(status, 200, "{body}");
    let large = json!([{"type": "nickname", "string": "x".repeat(3000)}]);
    for path in ["/api/demo/entity".to_owned(), format!("/api/demo/entity/{person}")] {
        let (status, body) = app.post(&path, &token, large.clone()).await;
        assert_eq!(status, 413, "{body}");
        assert_eq!(body["status"], 413);
        assert_eq!(body["error"], "payload_too_large");
    }
}

#[tokio::test]
async fn an_upload_over_storage_local_upload_limit_bytes_is_413_with_a_json_body() {
    let app = TestApp::start_with(
        Storage::Local,
        &[("storage.local.upload_limit_bytes", "1000".to_owned())],
    )
    .await;
    let token = app.owner_token().await;
    let person = app.person.clone();
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{person}"),
            &token,
            json!([
                {"type": "file", "filename": "small.bin", "filesize": 1000, "filetype": "application/octet-stream"},
                {"type": "file", "filename": "large.bin", "filesize": 1001, "filetype": "application/octet-stream"},
            ]),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, text) = put_upload(&app, &body["properties"][0]["upload"], vec![1; 1000]).await;
    assert_eq!(status, 200, "{text}");
    let (status, text) = put_upload(&app, &body["properties"][1]["upload"], vec![1; 1001]).await;
    assert_eq!(status, 413, "{text}");
    let body: Json = serde_json::from_str(&text).unwrap();
    assert_eq!(body["error"], "payload_too_large");
}

#[tokio::test]
async fn a_request_that_waits_out_the_statement_timeout_for_a_connection_is_503_database_busy() {
    let app = TestApp::start_with(
        Storage::Local,
        &[
            ("database.pool_size", "1".to_owned()),
            ("database.statement_timeout_ms", "300".to_owned()),
        ],
    )
    .await;
    // the server's one connection, held as a long query would hold it
    let held = app.state.pool.get().await.unwrap();
    let started = std::time::Instant::now();
    let response = app
        .http
        .get(format!("{}/api/demo/entity?limit=1", app.url))
        .send()
        .await
        .unwrap();
    let body = support::assert_retry_later(response).await;
    assert_eq!(
        body,
        json!({"status": 503, "error": "database_busy", "message": "Every database connection is busy; retry later"})
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "answered at the limit"
    );
    // once the connection is free again, requests are served
    drop(held);
    let (status, body) = app.call("GET", "/api/demo/entity?limit=1", None, None).await;
    assert_eq!(status, 200, "{body}");
}

/// `postgres://user:password@host...` without its password, and with another one.
fn without_and_with_a_wrong_password(url: &str) -> [String; 2] {
    let (credentials, host) = url.split_once('@').unwrap();
    let user = &credentials[..credentials.rfind(':').unwrap()];
    [format!("{user}@{host}"), format!("{user}:{}@{host}", "0".repeat(64))]
}

#[test]
fn the_private_cluster_refuses_connections_without_its_password_and_secures_a_trusting_one_on_start() {
    use diesel::{Connection, PgConnection};
    use eds::db::local_cluster::LocalCluster;
    let dir = support::tempdir::Dir::new();
    let cluster = LocalCluster::new(&dir.0.join("postgres")).unwrap();
    let refused = |url: &str| {
        let error = PgConnection::establish(url)
            .err()
            .expect("connected without the password");
        assert!(error.to_string().contains("password"), "{error}");
    };
    assert!(cluster.ensure_running(true).unwrap());
    let url = cluster.url("postgres").unwrap();
    for other in without_and_with_a_wrong_password(&url) {
        refused(&other);
    }
    PgConnection::establish(&url).expect("the password lets the service in");
    let password_file = cluster.data_dir().join("eds_password");
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&password_file).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600, "mode {mode:o}");

    // A cluster of an earlier version: every loopback connection trusted, no password kept.
    cluster.stop().unwrap();
    let hba_path = cluster.data_dir().join("pg_hba.conf");
    let hba = std::fs::read_to_string(&hba_path).unwrap();
    std::fs::write(&hba_path, hba.replace("scram-sha-256", "trust")).unwrap();
    std::fs::remove_file(&password_file).unwrap();
    assert!(cluster.ensure_running(true).unwrap());
    let upgraded = cluster.url("postgres").unwrap();
    assert_ne!(upgraded, url, "a new password");
    for other in without_and_with_a_wrong_password(&upgraded) {
        refused(&other);
    }
    refused(&url);
    PgConnection::establish(&upgraded).expect("the new password lets the service in");
    // Starting again changes nothing.
    assert!(!cluster.ensure_running(true).unwrap());
    assert_eq!(cluster.url("postgres").unwrap(), upgraded);
    cluster.stop().unwrap();
}

/// A private cluster whose port another server took while it was stopped
/// (another checkout's cluster, say) starts on a free port instead.
#[test]
fn the_private_cluster_moves_to_a_free_port_when_its_own_was_taken_while_it_was_stopped() {
    use diesel::{Connection, PgConnection};
    use eds::db::local_cluster::LocalCluster;
    let dir = support::tempdir::Dir::new();
    let cluster = LocalCluster::new(&dir.0.join("postgres")).unwrap();
    assert!(cluster.ensure_running(true).unwrap());
    let url = cluster.url("postgres").unwrap();
    cluster.stop().unwrap();
    let port = url.rsplit_once(':').unwrap().1.split('/').next().unwrap().to_owned();
    let taken = std::net::TcpListener::bind(format!("127.0.0.1:{port}")).expect("the stopped cluster's port");
    assert!(cluster.ensure_running(true).unwrap());
    let moved = cluster.url("postgres").unwrap();
    assert_ne!(moved, url, "a new port");
    PgConnection::establish(&moved).expect("the cluster answers on its new port");
    drop(taken);
    cluster.stop().unwrap();
}

/// Ends every connection to the app's database but this one, as
/// `pg_terminate_backend` (an operator, or a failover) does.
fn terminate_connections(app: &TestApp) -> i64 {
    use diesel::{Connection, PgConnection, RunQueryDsl, sql_types::BigInt};
    #[derive(diesel::QueryableByName)]
    struct Ended {
        #[diesel(sql_type = BigInt)]
        ended: i64,
    }
    let mut admin = PgConnection::establish(&app.database_url).unwrap();
    let ended: Ended = diesel::sql_query(
        "SELECT count(pg_terminate_backend(pid)) AS ended FROM pg_stat_activity \
         WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    .get_result(&mut admin)
    .unwrap();
    ended.ended
}

#[tokio::test]
async fn requests_on_connections_postgresql_ended_answer_503_with_retry_after_never_500_and_the_pool_recovers() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    for _ in 0..4 {
        assert_eq!(app.get("/api/demo/entity", &token).await.0, 200);
    }
    assert!(terminate_connections(&app) > 0, "the app held connections");
    let mut statuses = Vec::new();
    for _ in 0..20 {
        let response = app
            .http
            .get(format!("{}/api/demo/entity", app.url))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let retry_after = response.headers().get("retry-after").cloned();
        let body: Json = response.json().await.unwrap();
        assert!([200, 503].contains(&status), "{status} {body}");
        if status == 503 {
            assert_eq!(retry_after.unwrap(), "5");
            assert_eq!(body["error"], "database_unavailable", "{body}");
        }
        statuses.push(status);
    }
    assert!(
        statuses.iter().all(|status| [200, 503].contains(status)),
        "{statuses:?}"
    );
    assert_eq!(
        statuses.last(),
        Some(&200),
        "the pool reconnected by itself: {statuses:?}"
    );
    // writes caught by it answer 503 too, and work again after
    let person = app.find(&token, "entity", "person").await;
    let write = |name: &str| json!([{"type": "_type", "reference": person}, {"type": "name", "string": name}]);
    assert!(terminate_connections(&app) > 0);
    let mut statuses = Vec::new();
    for attempt in 0..10 {
        let (status, body) = app
            .post("/api/demo/entity", &token, write(&format!("Try {attempt}")))
            .await;
        assert!([201, 503].contains(&status), "{status} {body}");
        statuses.push(status);
    }
    assert_eq!(statuses.last(), Some(&201), "writes work again: {statuses:?}");
}

/// Settings a pooled connection starts with, as its sessions see them.
#[derive(diesel::QueryableByName)]
struct SessionSettings {
    #[diesel(sql_type = diesel::sql_types::Text)]
    parallel_workers: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    jit: String,
}

/// Starting parallel workers costs milliseconds a statement, and the plans
/// kept for any value estimate a third of a table for every range: past a
/// million value rows, 20-row pages were planned parallel.
#[tokio::test]
async fn pooled_connections_plan_without_parallel_workers_or_jit() {
    let pool = eds::db::pool(&support::fresh_database(), 1, 0).unwrap();
    let mut conn = pool.get().await.unwrap();
    let settings: SessionSettings = diesel_async::RunQueryDsl::get_result(
        diesel::sql_query(
            "SELECT current_setting('max_parallel_workers_per_gather') AS parallel_workers, \
             current_setting('jit') AS jit",
        ),
        &mut conn,
    )
    .await
    .unwrap();
    assert_eq!(
        (settings.parallel_workers.as_str(), settings.jit.as_str()),
        ("0", "off")
    );
}

//! Read replicas with read-your-writes, against a real primary and a
//! streaming standby made by `pg_basebackup -R` (`support::standby`): reads
//! after a write see it with replay paused, reads go to the standby when it
//! has caught up, a stopped standby is skipped, a forged header is ignored,
//! and a narrowing or a revoked key holds at once.

use std::time::{Duration, Instant};

use reqwest::header::HeaderMap;
use serde_json::{Value as Json, json};

use crate::support::standby::{Replication, Server, replication};
use crate::support::{JWT_SECRET, TestApp};

/// The tests pause and stop the one standby: they take turns.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Two processes (`a`, `b`) serving one fresh database on the primary, with the standby as replica.
struct Setup {
    replication: &'static Replication,
    a: TestApp,
    b: TestApp,
    /// The standby's label in the metrics.
    standby: String,
}

impl Setup {
    async fn start() -> Setup {
        let replication = tokio::task::spawn_blocking(|| replication(1)).await.unwrap();
        let name = tokio::task::spawn_blocking(|| replication.fresh_database())
            .await
            .unwrap();
        let standby = &replication.standbys[0];
        let overrides = [
            ("database.replica_urls", standby.url(&name)),
            ("auth.revocation_check_seconds", "0".to_owned()),
        ];
        let a = TestApp::start_at(replication.primary.url(&name), &overrides).await;
        let b = a.serve_again(&overrides).await;
        Setup {
            replication,
            a,
            b,
            standby: format!("127.0.0.1:{}/{name}", standby.port),
        }
    }

    fn standby(&self) -> &'static Server {
        &self.replication.standbys[0]
    }

    async fn pause(&self) {
        let standby = self.standby();
        tokio::task::spawn_blocking(|| standby.pause_replay()).await.unwrap();
    }

    async fn resume(&self) {
        let standby = self.standby();
        tokio::task::spawn_blocking(|| standby.resume_replay()).await.unwrap();
    }

    /// Reads `app`'s standby serves so far.
    async fn standby_reads(&self, app: &TestApp) -> u64 {
        metric(app, &format!("eds_replica_reads_total{{server=\"{}\"}}", self.standby)).await
    }

    /// Waits until `app` uses the standby again (it has caught up).
    async fn until_usable(&self, app: &TestApp, within: Duration) {
        let started = Instant::now();
        let usable = format!("eds_replica_usable{{replica=\"{}\"}}", self.standby);
        while metric(app, &usable).await != 1 {
            assert!(
                started.elapsed() < within,
                "the standby was not used again within {within:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The value of metric line `series` in `app`'s `/metrics` (0 when absent).
async fn metric(app: &TestApp, series: &str) -> u64 {
    metric_text(app, series).await.map_or(0, |value| value as u64)
}

/// Sends a request with an optional `Eds-Consistency`; its status, headers and body.
async fn send(
    app: &TestApp,
    method: &str,
    path: &str,
    token: Option<&str>,
    consistency: Option<&str>,
    body: Option<Json>,
) -> (u16, HeaderMap, Json) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = app.http.request(method, format!("{}{path}", app.url));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(consistency) = consistency {
        request = request.header("Eds-Consistency", consistency);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    let text = response.text().await.unwrap();
    (status, headers, serde_json::from_str(&text).unwrap_or(Json::Null))
}

fn consistency_of(headers: &HeaderMap) -> String {
    headers
        .get("Eds-Consistency")
        .expect("a write answer carries Eds-Consistency")
        .to_str()
        .unwrap()
        .to_owned()
}

/// An entity of a new type `thing`, and the owner's token.
async fn thing(app: &TestApp) -> (String, String, String) {
    let token = app.owner_token().await;
    let thing = app.create_type(&token, "thing").await;
    let id = app
        .create(&token, &thing, json!([{"type": "name", "string": "first"}]))
        .await;
    (token, thing, id)
}

#[tokio::test]
async fn read_your_writes_holds_a_thousand_times_with_replay_paused() {
    let _turn = SERIAL.lock().await;
    let setup = Setup::start().await;
    let (token, _, id) = thing(&setup.a).await;
    setup.until_usable(&setup.b, Duration::from_secs(30)).await;
    setup.pause().await;
    let standby_before = setup.standby_reads(&setup.b).await;
    for n in 0..1000 {
        let name = format!("name {n}");
        let (status, headers, body) = send(
            &setup.a,
            "POST",
            &format!("/api/demo/entity/{id}"),
            Some(&token),
            None,
            Some(json!([{"type": "note", "string": name}])),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let consistency = consistency_of(&headers);
        // the other process knows of the write only through the header
        let (status, _, read) = send(
            &setup.b,
            "GET",
            &format!("/api/demo/entity/{id}"),
            Some(&token),
            Some(&consistency),
            None,
        )
        .await;
        assert_eq!(status, 200, "{read}");
        let notes = read["entity"]["note"].as_array().cloned().unwrap_or_default();
        assert!(
            notes.iter().any(|note| note["string"] == name.as_str()),
            "read {n} missed its write: {read}"
        );
    }
    assert_eq!(
        setup.standby_reads(&setup.b).await,
        standby_before,
        "a paused standby served a read"
    );
    setup.resume().await;
}

#[tokio::test]
async fn reads_go_to_the_standby_once_it_has_caught_up() {
    let _turn = SERIAL.lock().await;
    let setup = Setup::start().await;
    let (token, _, id) = thing(&setup.a).await;
    setup.until_usable(&setup.a, Duration::from_secs(30)).await;
    let before = setup.standby_reads(&setup.a).await;
    let started = Instant::now();
    // the person's own write is read from the standby once its check found it replayed
    while setup.standby_reads(&setup.a).await < before + 20 {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the standby served no reads"
        );
        let (status, body) = setup.a.get(&format!("/api/demo/entity/{id}"), &token).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["entity"]["name"][0]["string"], "first");
        let (status, list) = setup.a.get("/api/demo/entity?name.string=first", &token).await;
        assert_eq!(status, 200, "{list}");
        assert_eq!(list["count"], 1);
    }
    let share = format!("eds_replica_read_share{{server=\"{}\"}}", setup.standby);
    let started = Instant::now();
    // the share is computed at each check
    while metric_text(&setup.a, &share).await.is_none_or(|share| share <= 0.0) {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "no share of reads for the standby"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The value of metric line `series` in `app`'s `/metrics`, when present.
async fn metric_text(app: &TestApp, series: &str) -> Option<f64> {
    (app.metrics_text().await.lines()).find_map(|line| line.strip_prefix(series)?.trim().parse::<f64>().ok())
}

#[tokio::test]
async fn a_stopped_standby_is_skipped_without_error() {
    let _turn = SERIAL.lock().await;
    let setup = Setup::start().await;
    let (token, _, id) = thing(&setup.a).await;
    setup.until_usable(&setup.a, Duration::from_secs(30)).await;
    let standby = setup.standby();
    tokio::task::spawn_blocking(|| standby.stop()).await.unwrap();
    let started = Instant::now();
    // through the first failures (the pooled connections die) and the check that follows
    while started.elapsed() < Duration::from_secs(3) {
        let (status, body) = setup.a.get(&format!("/api/demo/entity/{id}"), &token).await;
        assert_eq!(status, 200, "{body}");
        let (status, list) = setup.a.get("/api/demo/entity?name.string=first", &token).await;
        assert_eq!(status, 200, "{list}");
    }
    let usable = format!("eds_replica_usable{{replica=\"{}\"}}", setup.standby);
    assert_eq!(metric(&setup.a, &usable).await, 0);
    tokio::task::spawn_blocking(|| standby.start()).await.unwrap();
    // a standby that recovers is used again within 30 s
    setup.until_usable(&setup.a, Duration::from_secs(30)).await;
}

#[tokio::test]
async fn a_forged_or_foreign_consistency_header_is_ignored() {
    let _turn = SERIAL.lock().await;
    let setup = Setup::start().await;
    let (token, _, id) = thing(&setup.a).await;
    let (_, headers, _) = send(
        &setup.a,
        "POST",
        &format!("/api/demo/entity/{id}"),
        Some(&token),
        None,
        Some(json!([{"type": "note", "string": "seen"}])),
    )
    .await;
    let genuine = consistency_of(&headers);
    setup.until_usable(&setup.b, Duration::from_secs(30)).await;
    // far ahead of any position: honoured, it would send every read to the primary
    let far = u64::MAX / 2;
    let forged = {
        let signature = genuine.rsplit(':').next().unwrap();
        format!("home:{far:x}:{signature}")
    };
    let foreign = eds::service::consistency::Signer::new(b"another deployment").sign("home", far);
    let other_cluster = eds::service::consistency::Signer::new(JWT_SECRET.as_bytes()).sign("elsewhere", far);
    let path = format!("/api/demo/entity/{id}");
    for header in [forged.as_str(), &foreign, &other_cluster, "malformed", "home:zz:00"] {
        let before = setup.standby_reads(&setup.b).await;
        let started = Instant::now();
        // the standby answers once it has replayed what the person's process wrote
        loop {
            let (status, _, body) = send(&setup.b, "GET", &path, Some(&token), Some(header), None).await;
            assert_eq!(status, 200, "{header}: {body}");
            if setup.standby_reads(&setup.b).await > before {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{header} kept reads on the primary"
            );
        }
    }
}

#[tokio::test]
async fn a_narrowing_holds_at_once_with_replay_paused() {
    let _turn = SERIAL.lock().await;
    let setup = Setup::start().await;
    let (owner, _, id) = thing(&setup.a).await;
    let (viewer, key) = setup.a.add_person(&owner, "Viewer").await;
    let (status, body) = setup
        .a
        .post(
            &format!("/api/demo/entity/{id}"),
            &owner,
            json!([{"type": "_viewer", "reference": viewer}]),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let right = body["properties"][0]["_id"].as_str().unwrap().to_owned();
    let viewer_token = setup.a.token_for(&key).await;
    let path = format!("/api/demo/entity/{id}");
    setup.until_usable(&setup.b, Duration::from_secs(30)).await;
    // the standby holds the right, and serves the viewer's reads in process b
    let before = setup.standby_reads(&setup.b).await;
    let started = Instant::now();
    while setup.standby_reads(&setup.b).await == before {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the standby served no reads"
        );
        assert_eq!(setup.b.get(&path, &viewer_token).await.0, 200);
    }
    setup.pause().await;
    let (status, body) = setup.a.delete(&format!("/api/demo/property/{right}"), &owner).await;
    assert_eq!(status, 200, "{body}");
    // the writing process at once
    assert_eq!(setup.a.get(&path, &viewer_token).await.0, 404);
    let list = setup.a.get("/api/demo/entity?name.string=first", &viewer_token).await.1;
    assert_eq!(list["count"], 0, "{list}");
    // the other process as soon as the notification reached it
    let started = Instant::now();
    while setup.b.get(&path, &viewer_token).await.0 != 404 {
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "process b still shows the entity"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(setup.b.get(&path, &viewer_token).await.0, 404);
    setup.resume().await;
}

#[tokio::test]
async fn a_revoked_key_is_refused_with_replay_paused() {
    let _turn = SERIAL.lock().await;
    let setup = Setup::start().await;
    let (owner, _, id) = thing(&setup.a).await;
    let (person, key) = setup.a.add_person(&owner, "Holder").await;
    let token = setup.a.token_for(&key).await;
    let path = format!("/api/demo/entity/{id}");
    assert_eq!(setup.b.get(&path, &token).await.0, 404);
    setup.until_usable(&setup.b, Duration::from_secs(30)).await;
    setup.pause().await;
    let (_, holder) = setup.a.get(&format!("/api/demo/entity/{person}"), &owner).await;
    let key_value = holder["entity"]["service_api_key"][0]["_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, body) = setup.a.delete(&format!("/api/demo/property/{key_value}"), &owner).await;
    assert_eq!(status, 200, "{body}");
    for app in [&setup.a, &setup.b] {
        let (status, body) = app.get(&path, &token).await;
        assert_eq!(status, 401, "{body}");
        let (status, body) = app.call("GET", "/api/auth?db=demo", Some(&key), None).await;
        assert_eq!(status, 401, "{body}");
    }
    setup.resume().await;
}

/// The position a header value carries, after checking it is signed for the home cluster.
fn position_of(value: &str) -> u64 {
    let signer = eds::service::consistency::Signer::new(JWT_SECRET.as_bytes());
    signer
        .verify("home", value)
        .unwrap_or_else(|| panic!("not a signed position: {value}"))
}

#[tokio::test]
async fn every_write_answer_carries_a_signed_consistency_header_and_reads_none() {
    // a replica that never answers: every read goes to the primary
    let unreachable = [("database.replica_urls", "postgres://eds@127.0.0.1:1/none".to_owned())];
    let app = TestApp::start_with(crate::support::Storage::Local, &unreachable).await;
    let (token, thing, id) = thing(&app).await;
    let mut positions = Vec::new();
    let mut write = async |method: &str, path: String, body: Option<Json>| {
        let (status, headers, answer) = send(&app, method, &path, Some(&token), None, body).await;
        assert!(status < 300, "{method} {path}: {answer}");
        positions.push(position_of(&consistency_of(&headers)));
        answer
    };
    let added = write(
        "POST",
        format!("/api/demo/entity/{id}"),
        Some(json!([{"type": "note", "string": "x"}])),
    )
    .await;
    let value = added["properties"][0]["_id"].as_str().unwrap().to_owned();
    write("DELETE", format!("/api/demo/property/{value}"), None).await;
    let created = write(
        "POST",
        "/api/demo/entity".to_owned(),
        Some(json!([{"type": "_type", "reference": thing}])),
    )
    .await;
    let operations = json!({"operations": [{"op": "create", "properties": [{"type": "_type", "reference": thing}]}]});
    write("POST", "/api/demo/batch".to_owned(), Some(operations)).await;
    let mutation = json!({"query": "mutation($p: JSON!) { create(properties: $p) }",
        "variables": {"p": [{"type": "_type", "reference": thing}]}});
    write("POST", "/api/demo/graphql".to_owned(), Some(mutation)).await;
    write(
        "DELETE",
        format!("/api/demo/entity/{}", created["_id"].as_str().unwrap()),
        None,
    )
    .await;
    // each write commits after the one before
    assert!(positions.windows(2).all(|pair| pair[0] < pair[1]), "{positions:?}");
    let (status, headers, _) = send(&app, "GET", &format!("/api/demo/entity/{id}"), Some(&token), None, None).await;
    assert_eq!(status, 200);
    assert!(
        headers.get("Eds-Consistency").is_none(),
        "a read answer carries no position"
    );
    // a refused write wrote nothing: no position either
    let (status, headers, _) = send(
        &app,
        "DELETE",
        "/api/demo/entity/000000000000000000000000",
        Some(&token),
        None,
        None,
    )
    .await;
    assert_eq!(status, 404);
    assert!(headers.get("Eds-Consistency").is_none());
}

#[tokio::test]
async fn without_replicas_write_answers_carry_no_consistency_header() {
    let app = TestApp::start().await;
    let (token, thing, _) = thing(&app).await;
    let (status, headers, body) = send(
        &app,
        "POST",
        "/api/demo/entity",
        Some(&token),
        None,
        Some(json!([{"type": "_type", "reference": thing}])),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert!(
        headers.get("Eds-Consistency").is_none(),
        "no replica reads a position: none is read after the commit"
    );
}

#[tokio::test]
async fn cors_allows_and_exposes_the_consistency_header() {
    let app = TestApp::start().await;
    let preflight = app
        .http
        .request(reqwest::Method::OPTIONS, format!("{}/api/demo/entity", app.url))
        .header("Origin", "https://app.example")
        .header("Access-Control-Request-Method", "GET")
        .header("Access-Control-Request-Headers", "authorization, eds-consistency")
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.status().as_u16(), 204);
    let allowed = preflight.headers()["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .to_lowercase();
    assert!(allowed.contains("eds-consistency"), "{allowed}");
    let token = app.owner_token().await;
    let (_, headers, _) = send(&app, "GET", "/api/demo/entity?limit=1", Some(&token), None, None).await;
    let exposed = headers["access-control-expose-headers"].to_str().unwrap();
    assert!(exposed.split(", ").any(|name| name == "Eds-Consistency"), "{exposed}");
}

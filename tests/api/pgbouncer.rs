//! `eds serve` behind Debian's PgBouncer in transaction pooling mode:
//! `database.url` is PgBouncer, `database.direct_url` the cluster itself.

use std::time::Duration;

use futures_util::StreamExt;
use serde_json::{Value as Json, json};
use tokio::process::Child;

use crate::support::pgbouncer::{self, PgBouncer, database_name, pgbouncer};
use crate::support::{self, processes, tempdir};

/// `eds serve` through PgBouncer on test database `name`, with further settings.
struct Served {
    url: String,
    http: reqwest::Client,
    _child: Child,
    _data_dir: tempdir::Dir,
}

impl Served {
    async fn start(bouncer: &PgBouncer, name: &str, env: &[(&str, &str)]) -> Served {
        let data_dir = tempdir::Dir::new();
        let direct = bouncer.direct_url(name);
        let mut all = vec![
            ("EDS__DATABASE__DIRECT_URL", direct.as_str()),
            ("EDS__LIMITS__ENABLED", "false"),
        ];
        all.extend_from_slice(env);
        let (child, url, _) = processes::serve_logged(&bouncer.url(name), &data_dir.0, &all).await;
        Served {
            url,
            http: reqwest::Client::new(),
            _child: child,
            _data_dir: data_dir,
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, token: &str, body: Option<Json>) -> (u16, Json) {
        let mut request = self.http.request(method, format!("{}{path}", self.url));
        if !token.is_empty() {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Json::String(text)))
    }

    async fn get(&self, path: &str, token: &str) -> (u16, Json) {
        self.call(reqwest::Method::GET, path, token, None).await
    }

    async fn post(&self, path: &str, token: &str, body: Json) -> (u16, Json) {
        self.call(reqwest::Method::POST, path, token, Some(body)).await
    }

    /// Signs in with an API key (the scrypt check and the token written through PgBouncer).
    async fn sign_in(&self, key: &str) -> String {
        let (status, body) = self.get("/api/auth?db=demo", key).await;
        assert_eq!(status, 200, "{body}");
        body["token"].as_str().unwrap().to_owned()
    }

    /// The id of the seeded type `name`, found by a filtered list.
    async fn seeded_type(&self, token: &str, name: &str) -> String {
        let (status, body) = self
            .get(
                &format!("/api/demo/entity?_type.string=entity&name.string={name}"),
                token,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body["entities"][0]["_id"].as_str().unwrap().to_owned()
    }
}

/// A fresh test database holding `demo`; answers its name, the owner's API key and id.
async fn demo_database() -> (String, String, String) {
    let url = support::fresh_database();
    let pool = eds::db::pool(&url, 1, 5000).unwrap();
    let created = eds::db::databases::create(&pool, "demo", "owner@example.com", "Demo Owner")
        .await
        .unwrap();
    (database_name(&url), created.api_key, created.person_id)
}

async fn applied_migrations(direct_url: &str) -> i64 {
    let Ok((client, connection)) = tokio_postgres::connect(direct_url, tokio_postgres::NoTls).await else {
        return 0;
    };
    tokio::spawn(connection);
    match client
        .query_one("SELECT count(*) FROM __diesel_schema_migrations", &[])
        .await
    {
        Ok(row) => row.get(0),
        Err(_) => 0, // not created yet
    }
}

#[tokio::test]
async fn migrations_run_on_the_direct_url_while_pgbouncer_holds_every_query() {
    let bouncer = pgbouncer();
    let name = format!("t_{}_{}", std::process::id(), eds::model::ids::new_id());
    eds::db::create_database_if_missing(&bouncer.direct_url("postgres"), &name, None).unwrap();
    // PgBouncer knows a database once a client used it; then it may pause it
    let (client, connection) = tokio_postgres::connect(&bouncer.url(&name), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client.simple_query("SELECT 1").await.unwrap();
    drop(client);
    bouncer.admin(&format!("PAUSE {name}")).await;

    let served = {
        let name = name.clone();
        tokio::spawn(async move { Served::start(pgbouncer(), &name, &[]).await })
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while applied_migrations(&bouncer.direct_url(&name)).await == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no migration ran while PgBouncer was paused"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!served.is_finished(), "eds listened with PgBouncer paused");
    bouncer.admin(&format!("RESUME {name}")).await;
    let served = served.await.unwrap();
    let (status, body) = served.get("/api/new/somename", "").await;
    assert_eq!((status, &body["available"]), (200, &json!(true)), "{body}");
}

#[tokio::test]
async fn entities_sign_in_lists_batches_history_and_the_change_feed_work_through_pgbouncer() {
    let bouncer = pgbouncer();
    let (name, key, _) = demo_database().await;
    let served = Served::start(bouncer, &name, &[]).await;
    let token = served.sign_in(&key).await;
    let entity_type = served.seeded_type(&token, "entity").await;

    let (status, body) = served
        .post(
            "/api/demo/entity",
            &token,
            json!([{"type": "_type", "reference": entity_type}, {"type": "name", "string": "book"}]),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let book_type = body["_id"].as_str().unwrap().to_owned();

    let mut feed = served
        .http
        .get(format!("{}/api/demo/changes", served.url))
        .header("Accept", "text/event-stream")
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(feed.status(), 200);

    let (status, body) = served
        .post(
            "/api/demo/entity",
            &token,
            json!([{"type": "_type", "reference": book_type}, {"type": "name", "string": "Dune"}]),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let dune = body["_id"].as_str().unwrap().to_owned();

    let (status, body) = served.get(&format!("/api/demo/entity/{dune}"), &token).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["entity"]["name"][0]["string"], "Dune");

    let operations = json!([
        {"op": "create", "ref": "$a", "properties": [{"type": "_type", "reference": book_type}, {"type": "name", "string": "Emma"}]},
        {"op": "add", "entity": dune, "properties": [{"type": "name", "string": "Dune Messiah"}]},
    ]);
    let (status, body) = served
        .post("/api/demo/batch", &token, json!({"operations": operations}))
        .await;
    assert_eq!(status, 200, "{body}");

    let (status, body) = served
        .get("/api/demo/entity?_type.string=book&name.string=Emma&props=name", &token)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["count"], 1, "{body}");

    let (status, body) = served.get(&format!("/api/demo/entity/{dune}/history"), &token).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["count"].as_u64().unwrap() >= 3, "{body}");

    // the stream (woken by LISTEN on the direct URL) carries the creation of Dune
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let mut seen = String::new();
    while !seen.contains(&dune) {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let Ok(Some(part)) = tokio::time::timeout(left, feed.chunk()).await.map(Result::unwrap) else {
            panic!("the change feed did not carry {dune}: {seen}");
        };
        seen.push_str(&String::from_utf8_lossy(&part));
    }
}

#[tokio::test]
async fn the_statement_timeout_answers_503_query_timeout_through_pgbouncer() {
    let bouncer = pgbouncer();
    let (name, key, owner) = demo_database().await;
    let served = Served::start(bouncer, &name, &[("EDS__DATABASE__STATEMENT_TIMEOUT_MS", "100")]).await;
    let token = served.sign_in(&key).await;
    let (client, connection) = tokio_postgres::connect(&bouncer.direct_url(&name), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    // on the test's own session, without the role's limit: 100,000 entities
    // whose sort by their largest value takes far longer than 100 ms
    client
        .batch_execute(&format!(
            "SET statement_timeout = 0; \
             WITH n AS (SELECT i, 'bulk' || lpad(i::text, 20, '0') AS id FROM generate_series(1, 100000) i), \
             e AS (INSERT INTO entities (db, id, created_at, viewers) \
                   SELECT 'demo', id, now(), ARRAY['{owner}'] \
                   FROM n RETURNING id) \
             INSERT INTO property_values (db, id, entity_id, prop, number, created_at) \
             SELECT 'demo', v.id || e.id, e.id, 'n', n.i + v.shift, now() \
             FROM e JOIN n ON n.id = e.id CROSS JOIN (VALUES ('v', 0), ('w', 0.5)) AS v(id, shift); \
             ANALYZE entities, property_values"
        ))
        .await
        .unwrap();
    support::assert_slow_list_times_out(&served.http, &served.url, &token).await;
    let (status, body) = served.get("/api/demo/entity?limit=1", &token).await;
    assert_eq!(status, 200, "{body}");
}

/// The pool's settings reach PgBouncer's server connections through the
/// role, as the `options` startup parameter does not pass it.
#[tokio::test]
async fn server_connections_through_pgbouncer_plan_without_parallel_workers_or_jit() {
    let bouncer = pgbouncer();
    let (name, ..) = demo_database().await;
    let _served = Served::start(bouncer, &name, &[]).await;
    let (client, connection) = tokio_postgres::connect(&bouncer.url(&name), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let row = client
        .query_one(
            "SELECT current_setting('max_parallel_workers_per_gather'), current_setting('jit')",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        (row.get::<_, String>(0), row.get::<_, String>(1)),
        ("0".to_owned(), "off".to_owned())
    );
}

#[tokio::test]
async fn sixteen_concurrent_requests_share_two_server_connections_without_a_failure() {
    let bouncer = pgbouncer();
    let (name, key, _) = demo_database().await;
    let served = Served::start(bouncer, &name, &[("EDS__DATABASE__POOL_SIZE", "16")]).await;
    let token = served.sign_in(&key).await;
    let entity_type = served.seeded_type(&token, "entity").await;
    let requests = (0..16).map(|i| {
        let (served, token, entity_type) = (&served, &token, &entity_type);
        async move {
            if i % 2 == 0 {
                served
                    .post(
                        "/api/demo/entity",
                        token,
                        json!([{"type": "_type", "reference": entity_type}, {"type": "name", "string": format!("t{i}")}]),
                    )
                    .await
            } else {
                served.get("/api/demo/entity?_type.string=entity&limit=20", token).await
            }
        }
    });
    let answers: Vec<(u16, Json)> = futures_util::stream::iter(requests)
        .buffer_unordered(16)
        .collect()
        .await;
    assert_eq!(answers.len(), 16);
    for (status, body) in &answers {
        assert!(*status == 200 || *status == 201, "{status} {body}");
    }
    // PgBouncer served them on at most its pool's server connections
    let (client, connection) = tokio_postgres::connect(&bouncer.direct_url("postgres"), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let row = client
        .query_one(
            // eds's own direct connections (the change feed's and the placement's `LISTEN`) aside
            "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND application_name = '' AND query NOT LIKE 'LISTEN %'",
            &[&name],
        )
        .await
        .unwrap();
    let servers = row.get::<_, i64>(0);
    assert!(servers <= pgbouncer::POOL_SIZE as i64, "{servers} server connections");
}

//! Real `eds serve` processes: two on one PostgreSQL keep writes correct and
//! cached answers current, and their logs never hold a secret.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use eds::db::schema::property_values::dsl;
use serde_json::{Value as Json, json};
use tokio::process::Child;

use support::processes::{Demo, call_json, create_demo, entity_type, log_once, login, serve, serve_logged};

/// Two `eds serve` processes on one fresh database `demo`: their URLs, an
/// owner token valid on both, and the id of the `entity` meta type.
struct Pair {
    database_url: String,
    urls: [String; 2],
    token: String,
    entity_type: String,
    http: reqwest::Client,
    _servers: [Child; 2],
    _data_dir: support::tempdir::Dir,
}

async fn pair() -> Pair {
    let database_url = support::fresh_database();
    let data_dir = support::tempdir::Dir::new();
    let key = create_demo(&database_url, &data_dir.0, "race@example.com").await.key;
    let (a, url_a) = serve(&database_url, &data_dir.0).await;
    let (b, url_b) = serve(&database_url, &data_dir.0).await;
    let http = reqwest::Client::new();
    let token = login(&http, &url_a, &key).await;
    // the same secret signs for both processes
    let entity_type = entity_type(&http, &url_b, &token).await;
    Pair {
        database_url,
        urls: [url_a, url_b],
        token,
        entity_type,
        http,
        _servers: [a, b],
        _data_dir: data_dir,
    }
}

#[tokio::test]
async fn counter_writes_from_32_clients_over_two_processes_are_distinct_and_consecutive() {
    let pair = pair().await;
    let mut clients = Vec::new();
    for client in 0..32 {
        let (http, token, entity_type) = (pair.http.clone(), pair.token.clone(), pair.entity_type.clone());
        let url = pair.urls[client % 2].clone();
        clients.push(tokio::spawn(async move {
            let mut numbers = Vec::new();
            for _ in 0..12 + usize::from(client < 16) {
                let response = call_json(
                    &http,
                    &format!("{url}/api/demo/entity"),
                    &token,
                    Some(&json!([{"type": "_type", "reference": entity_type}, {"type": "ticket", "counter": true}])),
                )
                .await;
                numbers.push(
                    response["properties"][1]["number"]
                        .as_i64()
                        .unwrap_or_else(|| panic!("{response}")),
                );
            }
            numbers
        }));
    }
    let mut numbers = Vec::new();
    for client in clients {
        numbers.extend(client.await.unwrap());
    }
    assert_eq!(numbers.len(), 400);
    numbers.sort_unstable();
    assert_eq!(
        numbers,
        (1..=400).collect::<Vec<i64>>(),
        "400 distinct consecutive numbers"
    );
}

#[tokio::test]
async fn two_processes_overwriting_one_value_leave_exactly_one_live_value() {
    let pair = pair().await;
    let (http, token, entity_type, database_url) = (&pair.http, &pair.token, &pair.entity_type, &pair.database_url);
    let [url_a, url_b] = &pair.urls;
    let created = call_json(
        http,
        &format!("{url_a}/api/demo/entity"),
        token,
        Some(&json!([{"type": "_type", "reference": entity_type}, {"type": "name", "string": "counter"}])),
    )
    .await;
    let entity = created["_id"].as_str().unwrap().to_owned();

    let mut clients = Vec::new();
    for client in 0..8 {
        let (http, token, entity) = (http.clone(), token.clone(), entity.clone());
        let url = pair.urls[client % 2].clone();
        clients.push(tokio::spawn(async move {
            let mut acknowledged = Vec::new();
            for round in 0..100 {
                let current = call_json(&http, &format!("{url}/api/demo/entity/{entity}"), &token, None).await;
                let live = current["entity"]["name"][0]["_id"].as_str().unwrap().to_owned();
                let response = http
                    .post(format!("{url}/api/demo/entity/{entity}"))
                    .bearer_auth(&token)
                    .json(&json!({"type": "name", "string": format!("{client}-{round}"), "_id": live}))
                    .send()
                    .await
                    .unwrap();
                let status = response.status().as_u16();
                let body: Json = response.json().await.unwrap();
                match status {
                    200 => acknowledged.push(body["properties"][0]["_id"].as_str().unwrap().to_owned()),
                    400 => assert_eq!(body["error"], "invalid_value_id", "{body}"),
                    other => panic!("unexpected {other}: {body}"),
                }
            }
            acknowledged
        }));
    }
    let mut acknowledged = Vec::new();
    for client in clients {
        acknowledged.extend(client.await.unwrap());
    }
    assert!(!acknowledged.is_empty());

    let pool = eds::db::pool(database_url, 1, 5000).unwrap();
    let mut conn = pool.get().await.unwrap();
    let rows: Vec<(String, Option<chrono::DateTime<chrono::Utc>>)> = dsl::property_values
        .filter(dsl::entity_id.eq(&entity))
        .filter(dsl::prop.eq("name"))
        .select((dsl::id, dsl::deleted_at))
        .load(&mut conn)
        .await
        .unwrap();
    let live: Vec<&String> = rows
        .iter()
        .filter(|(_, deleted)| deleted.is_none())
        .map(|(id, _)| id)
        .collect();
    assert_eq!(live.len(), 1, "exactly one live value");
    for id in &acknowledged {
        assert!(rows.iter().any(|(row, _)| row == id), "acknowledged {id} is stored");
    }
    // the first value plus one row per acknowledged write: nothing unacknowledged landed
    assert_eq!(rows.len(), acknowledged.len() + 1);
    // and the projection agrees with the live row
    let entity_json = call_json(http, &format!("{url_b}/api/demo/entity/{entity}"), token, None).await;
    assert_eq!(entity_json["entity"]["name"][0]["_id"], live[0].as_str());
    assert_eq!(entity_json["entity"]["name"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn an_answer_cached_by_one_process_changes_when_the_other_process_writes() {
    let pair = pair().await;
    let (http, token) = (&pair.http, &pair.token);
    let [url_a, url_b] = &pair.urls;
    let list = format!("{url_b}/api/demo/entity?name.string=fresh");
    for _ in 0..2 {
        assert_eq!(call_json(http, &list, token, None).await["count"], 0);
    }
    let metrics = http.get(format!("{url_b}/metrics")).send().await.unwrap();
    let metrics = metrics.text().await.unwrap();
    assert!(
        metrics.contains(r#"eds_answer_cache_total{outcome="hit"} 1"#),
        "the second answer came from the cache: {metrics}"
    );
    call_json(
        http,
        &format!("{url_a}/api/demo/entity"),
        token,
        Some(&json!([{"type": "_type", "reference": pair.entity_type}, {"type": "name", "string": "fresh"}])),
    )
    .await;
    assert_eq!(call_json(http, &list, token, None).await["count"], 1);
}

#[tokio::test]
async fn server_logs_never_contain_keys_or_tokens() {
    let database_url = support::fresh_database();
    let data_dir = support::tempdir::Dir::new();
    let Demo { key, person } = create_demo(&database_url, &data_dir.0, "logs@example.com").await;
    let (_server, url, log) = serve_logged(&database_url, &data_dir.0, &[]).await;
    let http = reqwest::Client::new();
    let token = login(&http, &url, &key).await;
    let added = call_json(
        &http,
        &format!("{url}/api/demo/entity/{person}"),
        &token,
        Some(&json!({"type": "service_api_key", "string": "generate"})),
    )
    .await;
    let second_key = added["properties"][0]["string"].as_str().unwrap().to_owned();
    for path in [
        "/api/demo/entity",
        "/api/auth/refresh",
        "/api/demo",
        "/api/demo/entity/000000000000000000000000",
    ] {
        http.get(format!("{url}{path}"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
    }
    http.get(format!("{url}/api/demo/entity"))
        .bearer_auth("bad.token.here")
        .send()
        .await
        .unwrap();
    http.get(format!("{url}/api/demo/entity"))
        .header("X-Request-Id", "trace-7")
        .send()
        .await
        .unwrap();
    let log = log_once(&log, |line| line.contains("trace-7")).await.join("\n");
    assert!(log.contains("/api/demo/entity"), "requests are logged: {log}");
    assert!(log.contains("trace-7"), "log lines carry the request id: {log}");
    for secret in [&key, &second_key, &token, &support::JWT_SECRET.to_owned()] {
        assert!(!log.contains(secret.as_str()), "a secret reached the log");
    }
}

#[tokio::test]
async fn json_log_lines_of_a_request_all_carry_its_request_id() {
    let database_url = support::fresh_database();
    let data_dir = support::tempdir::Dir::new();
    let Demo { key, person } = create_demo(&database_url, &data_dir.0, "json@example.com").await;
    let files = data_dir.0.join("files");
    // Without PDFium: said once at start; a PDF thumbnail then answers 503.
    let env = [
        ("EDS__LOG__FORMAT", "json"),
        ("EDS__STORAGE__LOCAL__PATH", files.to_str().unwrap()),
        ("EDS__THUMBNAILS__PDFIUM_LIBRARY", "/nonexistent/libpdfium.so"),
    ];
    let (_server, url, log) = serve_logged(&database_url, &data_dir.0, &env).await;
    let http = reqwest::Client::new();
    let token = login(&http, &url, &key).await;
    let pdf = b"%PDF-1.4\n%%EOF\n".to_vec();
    let added = call_json(
        &http,
        &format!("{url}/api/demo/entity/{person}"),
        &token,
        Some(&json!([{"type": "photo", "filename": "a.pdf", "filesize": pdf.len(), "filetype": "application/pdf"}])),
    )
    .await;
    let value = &added["properties"][0];
    // signed for http.public_url; this process listens on another port
    let signed = value["upload"]["url"].as_str().unwrap();
    let path = &signed[signed.find("/storage/").unwrap()..];
    let mut upload = http.put(format!("{url}{path}")).body(pdf);
    for (name, header) in value["upload"]["headers"].as_object().unwrap() {
        upload = upload.header(
            name.as_str(),
            header.as_str().map_or_else(|| header.to_string(), str::to_owned),
        );
    }
    assert_eq!(upload.send().await.unwrap().status(), 200);
    let before = log_once(&log, |line| line.contains("/storage/") && line.contains("served"))
        .await
        .len();
    let response = http
        .get(format!(
            "{url}/api/demo/property/{}/thumbnail/50",
            value["_id"].as_str().unwrap()
        ))
        .bearer_auth(&token)
        .header("X-Request-Id", "abc-123")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-request-id"], "abc-123");
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["retry-after"], "5");
    let refused: Json = response.json().await.unwrap();
    assert_eq!(refused["error"], "pdf_unavailable", "{refused}");
    let log = log_once(&log, |line| line.contains("abc-123") && line.contains("\"served\"")).await;
    let parsed: Vec<Json> = log
        .iter()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not a JSON line: {line}")))
        .collect();
    let messages = |lines: &[Json]| -> Vec<String> {
        lines
            .iter()
            .filter_map(|line| line["message"].as_str().map(str::to_owned))
            .collect()
    };
    assert!(
        messages(&parsed[..before])
            .iter()
            .any(|message| message.starts_with("libpdfium not found")),
        "the missing library is said at start: {:?}",
        &parsed[..before]
    );
    let during = &parsed[before..];
    assert!(messages(during).contains(&"served".to_owned()), "{during:?}");
    assert!(
        !messages(during).iter().any(|message| message.contains("libpdfium")),
        "and not again on each request: {during:?}"
    );
    for line in during {
        let spans = line["spans"].as_array().unwrap_or_else(|| panic!("no spans: {line}"));
        assert!(
            spans.iter().any(|span| span["request_id"] == "abc-123"),
            "a line without the request id: {line}"
        );
    }
}

#[tokio::test]
async fn sigterm_lets_writes_in_flight_finish_and_every_acknowledged_write_is_stored() {
    let database_url = support::fresh_database();
    let data_dir = support::tempdir::Dir::new();
    let Demo { key, person } = create_demo(&database_url, &data_dir.0, "stop@example.com").await;
    let (mut server, url, log) = serve_logged(&database_url, &data_dir.0, &[]).await;
    let http = reqwest::Client::new();
    let token = login(&http, &url, &key).await;
    let person_type = call_json(&http, &format!("{url}/api/demo/entity/{person}"), &token, None).await["entity"]
        ["_type"][0]["reference"]
        .as_str()
        .unwrap()
        .to_owned();
    // 8 clients create entities until the server goes away
    let answered = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..8)
        .map(|client| {
            let (http, url, token, person_type) = (http.clone(), url.clone(), token.clone(), person_type.clone());
            let answered = answered.clone();
            tokio::spawn(async move {
                let (mut acknowledged, mut unexpected) = (Vec::new(), Vec::new());
                for n in 0.. {
                    let body = json!([{"type": "_type", "reference": person_type}, {"type": "name", "string": format!("c{client}-{n}")}]);
                    let Ok(response) = http.post(format!("{url}/api/demo/entity")).bearer_auth(&token).json(&body).send().await else {
                        break;
                    };
                    let status = response.status().as_u16();
                    if status == 201 {
                        let created: Json = response.json().await.expect("an acknowledged write's whole answer");
                        acknowledged.push(created["_id"].as_str().unwrap().to_owned());
                        answered.fetch_add(1, Ordering::Relaxed);
                    } else if status != 503 {
                        unexpected.push(format!("{status}: {}", response.text().await.unwrap_or_default()));
                    }
                }
                (acknowledged, unexpected)
            })
        })
        .collect();
    // stop while writes are under way, however slowly a busy machine answers the first ones
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    while AtomicUsize::load(&answered, Ordering::Relaxed) < 16 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no writes were answered before the stop"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let pid = server.id().unwrap().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let exit = tokio::time::timeout(std::time::Duration::from_secs(20), server.wait())
        .await
        .expect("the server stops within its grace period")
        .unwrap();
    assert!(exit.success(), "{exit:?}");
    let (mut acknowledged, mut unexpected) = (Vec::new(), Vec::new());
    for client in clients {
        let (stored, refused) = client.await.unwrap();
        acknowledged.extend(stored);
        unexpected.extend(refused);
    }
    let log = log_once(&log, |line| line.contains("stopped")).await.join("\n");
    assert!(
        unexpected.is_empty(),
        "answers other than 201 or 503: {unexpected:?}\n{log}"
    );
    assert!(!acknowledged.is_empty(), "writes were answered before the stop");
    let mut conn = eds::db::pool(&database_url, 1, 0).unwrap().get().await.unwrap();
    #[derive(diesel::QueryableByName)]
    struct Stored {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        stored: i64,
    }
    let stored: Stored = diesel::sql_query(
        "SELECT count(*) AS stored FROM entities WHERE db = 'demo' AND id = ANY($1) AND deleted_at IS NULL",
    )
    .bind::<diesel::sql_types::Array<diesel::sql_types::Text>, _>(&acknowledged)
    .get_result(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        stored.stored as usize,
        acknowledged.len(),
        "every acknowledged write is stored"
    );
}

#[tokio::test]
async fn writes_of_two_processes_locking_the_same_rows_keys_and_counter_in_any_order_all_succeed() {
    let pair = pair().await;
    let (http, token, entity_type) = (&pair.http, &pair.token, &pair.entity_type);
    let mut shared = Vec::new();
    for name in ["a", "b", "c"] {
        let created = call_json(
            http,
            &format!("{}/api/demo/entity", pair.urls[0]),
            token,
            Some(&json!([{"type": "_type", "reference": entity_type}, {"type": "name", "string": name}])),
        )
        .await;
        shared.push(created["_id"].as_str().unwrap().to_owned());
    }
    // Every write goes to both processes at once under one Idempotency-Key,
    // as from a client retrying on the other while its first try still runs:
    // the batches of the two lock the shared rows, the keys and the counter
    // in every order.
    let mut clients = Vec::new();
    for client in 0..16 {
        let (http, token, entity_type, shared, urls) = (
            http.clone(),
            token.clone(),
            entity_type.clone(),
            shared.clone(),
            pair.urls.clone(),
        );
        clients.push(tokio::spawn(async move {
            let mut wrong = Vec::new();
            for round in 0..25 {
                let (path, body) = match (client + round) % 4 {
                    3 => (
                        "entity".to_owned(),
                        json!([{"type": "_type", "reference": entity_type}, {"type": "ticket", "counter": true}]),
                    ),
                    pick => (
                        format!("entity/{}", shared[pick]),
                        json!([{"type": "note", "string": format!("{client}-{round}")}]),
                    ),
                };
                let send = |url: &String| {
                    http.post(format!("{url}/api/demo/{path}"))
                        .bearer_auth(&token)
                        .header("Idempotency-Key", format!("c{client}r{round}"))
                        .json(&body)
                        .send()
                };
                let (first, second) = tokio::join!(send(&urls[0]), send(&urls[1]));
                let (first, second) = (first.unwrap(), second.unwrap());
                let statuses = (first.status(), second.status());
                let (first, second): (Json, Json) = (first.json().await.unwrap(), second.json().await.unwrap());
                if !statuses.0.is_success() || statuses.0 != statuses.1 || first["_id"] != second["_id"] {
                    wrong.push(format!("{statuses:?}: {first} / {second}"));
                }
            }
            wrong
        }));
    }
    let mut wrong = Vec::new();
    for client in clients {
        wrong.extend(client.await.unwrap());
    }
    assert_eq!(wrong, Vec::<String>::new());
}

#[tokio::test]
async fn batches_of_two_processes_touching_the_same_entities_in_opposite_orders_all_pass() {
    let pair = pair().await;
    let entity_url = format!("{}/api/demo/entity", pair.urls[0]);
    let mut ids = Vec::new();
    for name in ["first", "second"] {
        let values = json!([{"type": "_type", "reference": pair.entity_type}, {"type": "name", "string": name}]);
        let created = call_json(&pair.http, &entity_url, &pair.token, Some(&values)).await;
        ids.push(
            created["_id"]
                .as_str()
                .unwrap_or_else(|| panic!("{created}"))
                .to_owned(),
        );
    }
    let add = |id: &str, run: usize| json!({"op": "add", "entity": id, "properties": [{"type": "name", "string": format!("run {run}")}]});
    // each process runs batches in both orders, all at once
    let runs = (0..12).map(|run| {
        let operations = if run % 2 == 0 {
            json!([add(&ids[0], run), add(&ids[1], run)])
        } else {
            json!([add(&ids[1], run), add(&ids[0], run)])
        };
        let url = format!("{}/api/demo/batch", pair.urls[run / 2 % 2]);
        let (http, token) = (pair.http.clone(), pair.token.clone());
        async move {
            let response = http
                .post(url)
                .bearer_auth(token)
                .json(&json!({"operations": operations}))
                .send()
                .await
                .unwrap();
            (response.status().as_u16(), response.text().await.unwrap())
        }
    });
    for (status, body) in futures_util::future::join_all(runs).await {
        assert_eq!(status, 200, "{body}");
    }
    for id in &ids {
        let read = call_json(&pair.http, &format!("{}/{id}", entity_url), &pair.token, None).await;
        let names = read["entity"]["name"].as_array().unwrap_or_else(|| panic!("{read}"));
        assert_eq!(names.len(), 13, "{read}");
    }
}

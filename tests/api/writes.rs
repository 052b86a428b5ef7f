//! Group commit: writes that arrive together share one transaction, each in
//! its own savepoint.

use crate::support;

use eds::auth::api_key::GeneratedKey;
use eds::model::value::parse_body;
use eds::write::{WriteOp, WriteOutcome, WriteRequest, WriterCache, apply_batch};
use serde_json::{Value as Json, json};
use support::TestApp;

fn create(app: &TestApp, values: Json) -> (WriteRequest, Vec<GeneratedKey>, tracing::Span) {
    let request = WriteRequest {
        db: "demo".into(),
        actor: app.person.clone(),
        op: WriteOp::CreateEntity {
            values: parse_body(values.to_string().as_bytes()).unwrap(),
        },
        idempotency: None,
    };
    (request, Vec::new(), tracing::Span::none())
}

fn created_id(outcome: &WriteOutcome) -> String {
    match outcome {
        WriteOutcome::Written { entity_id, .. } => entity_id.clone(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_refused_write_in_a_batch_leaves_no_trace_and_the_others_commit() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let book = app.create_type(&token, "book").await;
    let outcomes = apply_batch(
        &app.pool,
        vec![
            create(
                &app,
                json!([{"type": "_type", "reference": book}, {"type": "name", "string": "first"}]),
            ),
            // refused halfway: its name is valid, its title references no entity
            create(
                &app,
                json!([{"type": "_type", "reference": book}, {"type": "name", "string": "refused"},
                       {"type": "title", "reference": "000000000000000000000000"}]),
            ),
            create(
                &app,
                json!([{"type": "_type", "reference": book}, {"type": "name", "string": "third"}]),
            ),
        ],
        &mut WriterCache::default(),
    )
    .await;
    assert_eq!(outcomes.len(), 3);
    let first = created_id(outcomes[0].as_ref().unwrap());
    let error = outcomes[1].as_ref().unwrap_err();
    assert_eq!(error.code, "invalid_reference");
    let third = created_id(outcomes[2].as_ref().unwrap());

    let (status, body) = app.get("/api/demo/entity?_type.string=book&sort=_id", &token).await;
    assert_eq!(status, 200, "{body}");
    let ids: Vec<&str> = body["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entity| entity["_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [first.as_str(), third.as_str()]);
    let (_, refused) = app.get("/api/demo/entity?name.string=refused", &token).await;
    assert_eq!(refused["count"], 0, "{refused}");
}

#[tokio::test]
async fn a_definition_written_earlier_in_a_batch_governs_the_later_writes() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let book = app.create_type(&token, "book").await;
    let property_type = app.find(&token, "entity", "property").await;
    let outcomes = apply_batch(
        &app.pool,
        vec![
            // loads what the batch knows about `book` before `pages` exists
            create(&app, json!([{"type": "_type", "reference": book}])),
            create(
                &app,
                json!([{"type": "_type", "reference": property_type}, {"type": "_parent", "reference": book},
                       {"type": "name", "string": "pages"}, {"type": "type", "string": "number"}]),
            ),
            create(
                &app,
                json!([{"type": "_type", "reference": book}, {"type": "pages", "string": "many"}]),
            ),
        ],
        &mut WriterCache::default(),
    )
    .await;
    assert!(outcomes[0].is_ok() && outcomes[1].is_ok(), "{outcomes:?}");
    let error = outcomes[2].as_ref().unwrap_err();
    assert_eq!(
        (error.code.as_str(), error.message.as_ref()),
        ("invalid_value", "pages takes a `number` value")
    );
}

#[tokio::test]
async fn counters_in_one_batch_continue_the_sequence_and_follow_a_number_written_by_hand() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let ticket = app.create_type(&token, "ticket").await;
    let counter = || {
        create(
            &app,
            json!([{"type": "_type", "reference": ticket}, {"type": "no", "counter": true}]),
        )
    };
    let outcomes = apply_batch(
        &app.pool,
        vec![
            counter(),
            counter(),
            create(
                &app,
                json!([{"type": "_type", "reference": ticket}, {"type": "no", "number": 10}]),
            ),
            counter(),
        ],
        &mut WriterCache::default(),
    )
    .await;
    let numbers: Vec<f64> = outcomes
        .iter()
        .map(|outcome| match outcome.as_ref().unwrap() {
            WriteOutcome::Written { values, .. } => values[1].row.number.unwrap(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(numbers, [1.0, 2.0, 10.0, 11.0]);
}

#[tokio::test]
async fn writes_over_the_writer_queue_are_503_writes_busy_with_retry_after_and_leave_nothing() {
    let app = TestApp::start_with(
        support::Storage::Local,
        &[
            ("actors.writer_mailbox", "1".to_owned()),
            ("actors.writer_batch", "1".to_owned()),
        ],
    )
    .await;
    let token = app.owner_token().await;
    let item = app.create_type(&token, "item").await;
    let mut requests = Vec::new();
    for _ in 0..50 {
        let (http, url, token, item) = (app.http.clone(), app.url.clone(), token.clone(), item.clone());
        requests.push(tokio::spawn(async move {
            let response = http
                .post(format!("{url}/api/demo/entity"))
                .bearer_auth(&token)
                .json(&json!([{"type": "_type", "reference": item}]))
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let retry_after = response.headers().get("retry-after").cloned();
            let body: Json = response.json().await.unwrap();
            (status, retry_after, body)
        }));
    }
    let mut created = 0;
    let mut busy = 0;
    for request in requests {
        let (status, retry_after, body) = request.await.unwrap();
        match status {
            201 => created += 1,
            503 => {
                assert_eq!(body["error"], "writes_busy", "{body}");
                assert!(retry_after.is_some());
                busy += 1;
            }
            other => panic!("{other}: {body}"),
        }
    }
    assert!(busy > 0, "50 writes at once overflow a queue of one");
    let (_, body) = app.get("/api/demo/entity?_type.string=item", &token).await;
    assert_eq!(body["count"], created, "{body}");
}

/// `count` plain values.
fn notes(count: usize) -> Json {
    Json::Array(
        (0..count)
            .map(|index| json!({"type": "note", "string": format!("note {index}")}))
            .collect(),
    )
}

/// `count` API keys asked for.
fn api_keys(count: usize) -> Json {
    Json::Array(vec![json!({"type": "service_api_key", "string": "generate"}); count])
}

fn too_many_values(message: &str) -> (u16, Json) {
    (
        413,
        json!({"status": 413, "error": "too_many_values", "message": message}),
    )
}

#[tokio::test]
async fn a_write_of_more_than_max_values_per_write_values_is_413_too_many_values_and_writes_nothing() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let item = app.create_type(&token, "item").await;
    let id = app
        .create(&token, &item, json!([{"type": "name", "string": "kept"}]))
        .await;
    let path = format!("/api/demo/entity/{id}");
    let (_, before) = app.get(&path, &token).await;
    let (_, history_before) = app.get(&format!("{path}/history"), &token).await;

    assert_eq!(
        app.post(&path, &token, notes(1001)).await,
        too_many_values("A write holds at most 1000 values")
    );
    let mut create = vec![json!({"type": "_type", "reference": item})];
    create.extend(notes(1000).as_array().unwrap().iter().cloned());
    assert_eq!(
        app.post("/api/demo/entity", &token, Json::Array(create)).await,
        too_many_values("A write holds at most 1000 values")
    );
    assert_eq!(app.get(&path, &token).await.1, before);
    assert_eq!(app.get(&format!("{path}/history"), &token).await.1, history_before);
    let (_, items) = app.get("/api/demo/entity?_type.string=item", &token).await;
    assert_eq!(items["count"], 1, "{items}");

    // the limit itself is written whole
    let (status, body) = app.post(&path, &token, notes(1000)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["properties"].as_array().unwrap().len(), 1000);
}

#[tokio::test]
async fn a_write_asks_for_at_most_10_api_keys_and_the_owner_gets_all_10() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let (person, _) = app.add_person(&token, "Keyholder").await;
    let path = format!("/api/demo/entity/{person}");
    let (_, before) = app.get(&path, &token).await;
    let (_, history_before) = app.get(&format!("{path}/history"), &token).await;

    assert_eq!(
        app.post(&path, &token, api_keys(11)).await,
        too_many_values("A write holds at most 10 service_api_key values")
    );
    assert_eq!(app.get(&path, &token).await.1, before);
    assert_eq!(app.get(&format!("{path}/history"), &token).await.1, history_before);

    let (status, body) = app.post(&path, &token, api_keys(10)).await;
    assert_eq!(status, 200, "{body}");
    let mut keys: Vec<&str> = body["properties"]
        .as_array()
        .unwrap()
        .iter()
        .map(|value| value["string"].as_str().unwrap())
        .collect();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), 10);
    assert!(keys.iter().all(|key| key.len() == 32));
    let (_, after) = app.get(&path, &token).await;
    assert_eq!(after["entity"]["service_api_key"].as_array().unwrap().len(), 11);
    // each of them signs in
    app.token_for(keys[0]).await;
}

#[tokio::test]
async fn the_write_caps_hold_with_rate_limits_turned_off() {
    let app = TestApp::start_with(
        support::Storage::Local,
        &[
            ("limits.enabled", "false".to_owned()),
            ("limits.max_values_per_write", "20".to_owned()),
        ],
    )
    .await;
    let token = app.owner_token().await;
    let item = app.create_type(&token, "item").await;
    let id = app.create(&token, &item, json!([])).await;
    let path = format!("/api/demo/entity/{id}");
    assert_eq!(
        app.post(&path, &token, notes(21)).await,
        too_many_values("A write holds at most 20 values")
    );
    assert_eq!(
        app.post(&path, &token, api_keys(11)).await,
        too_many_values("A write holds at most 10 service_api_key values")
    );
    let (_, entity) = app.get(&path, &token).await;
    assert!(entity["entity"].get("note").is_none(), "{entity}");
    assert!(entity["entity"].get("service_api_key").is_none(), "{entity}");
    let (status, body) = app.post(&path, &token, notes(20)).await;
    assert_eq!(status, 200, "{body}");
}

/// The backends of the app's database waiting for a lock.
async fn lock_waiters(conn: &mut diesel_async::AsyncPgConnection) -> Vec<i32> {
    use diesel::sql_types::Integer;
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Backend {
        #[diesel(sql_type = Integer)]
        pid: i32,
    }
    let waiting: Vec<Backend> = diesel::sql_query(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() \
         AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
    )
    .load(conn)
    .await
    .unwrap();
    waiting.into_iter().map(|backend| backend.pid).collect()
}

#[tokio::test]
async fn a_write_whose_connection_breaks_before_commit_runs_again_on_a_new_connection_and_is_stored_once() {
    use diesel::sql_types::{Integer, Text};
    use diesel_async::RunQueryDsl;
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let book = app.create_type(&token, "book").await;
    let id = app
        .create(&token, &book, json!([{"type": "title", "string": "Dune"}]))
        .await;

    // hold the book's row, so the write waits inside its transaction
    let mut holder = app.pool.get().await.unwrap();
    diesel::sql_query("BEGIN").execute(&mut holder).await.unwrap();
    diesel::sql_query("SELECT 1 FROM entities WHERE db = 'demo' AND id = $1 FOR UPDATE")
        .bind::<Text, _>(&id)
        .execute(&mut holder)
        .await
        .unwrap();
    let write = {
        let (url, http, token, id) = (app.url.clone(), app.http.clone(), token.clone(), id.clone());
        tokio::spawn(async move {
            let response = http
                .post(format!("{url}/api/demo/entity/{id}"))
                .bearer_auth(token)
                .json(&json!([{"type": "title", "string": "Emma"}]))
                .send()
                .await
                .unwrap();
            (response.status().as_u16(), response.json::<Json>().await.unwrap())
        })
    };
    // PostgreSQL ends the waiting write's connection (a restart, an operator)
    let mut waiter = Vec::new();
    for _ in 0..200 {
        waiter = lock_waiters(&mut holder).await;
        if !waiter.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(waiter.len(), 1, "the write waits for the row");
    diesel::sql_query("SELECT pg_terminate_backend($1)")
        .bind::<Integer, _>(waiter[0])
        .execute(&mut holder)
        .await
        .unwrap();
    diesel::sql_query("ROLLBACK").execute(&mut holder).await.unwrap();

    let (status, body) = write.await.unwrap();
    assert_eq!(status, 200, "{body}");
    let (_, entity) = app.get(&format!("/api/demo/entity/{id}"), &token).await;
    let titles: Vec<&str> = entity["entity"]["title"]
        .as_array()
        .unwrap()
        .iter()
        .map(|title| title["string"].as_str().unwrap())
        .collect();
    assert_eq!(titles.iter().filter(|title| **title == "Emma").count(), 1, "{entity}");
}

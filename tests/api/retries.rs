//! Safe retries: `POST` and `DELETE` under `/api/{db}/...` with an
//! `Idempotency-Key` write once; a repeat by the same caller within 24 hours
//! answers the first answer (CONTRACT.md, "Retries").

use crate::support;
mod uploads;

use eds::write::{IdempotencyKey, WriteOp, WriteRequest};
use serde_json::{Value as Json, json};
use sha2::{Digest, Sha256};
use support::TestApp;

/// Sends a write with `Idempotency-Key: key`; answers the status and the body.
async fn send(app: &TestApp, method: &str, path: &str, token: &str, key: &str, body: Option<&Json>) -> (u16, Json) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = app
        .http
        .request(method, format!("{}{path}", app.url))
        .bearer_auth(token)
        .header("Idempotency-Key", key);
    if let Some(body) = body {
        request = request
            .body(body.to_string())
            .header("Content-Type", "application/json");
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

async fn book_count(app: &TestApp, token: &str) -> u64 {
    let (status, body) = app.get("/api/demo/entity?_type.string=book&limit=1", token).await;
    assert_eq!(status, 200, "{body}");
    body["count"].as_u64().unwrap()
}

fn book(book_type: &str, title: &str) -> Json {
    json!([{"type": "_type", "reference": book_type}, {"type": "title", "string": title}])
}

#[tokio::test]
async fn a_create_repeated_with_its_idempotency_key_answers_the_first_answer_and_writes_once() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let book_type = app.create_type(&token, "book").await;
    let body = book(&book_type, "Dune");

    let first = send(&app, "POST", "/api/demo/entity", &token, "create-dune-1", Some(&body)).await;
    assert_eq!(first.0, 201, "{}", first.1);
    for _ in 0..2 {
        let repeat = send(&app, "POST", "/api/demo/entity", &token, "create-dune-1", Some(&body)).await;
        assert_eq!(repeat, first);
    }
    assert_eq!(book_count(&app, &token).await, 1);

    // another key is another write
    let other = send(&app, "POST", "/api/demo/entity", &token, "create-dune-2", Some(&body)).await;
    assert_eq!(other.0, 201, "{}", other.1);
    assert_ne!(other.1["_id"], first.1["_id"]);
    assert_eq!(book_count(&app, &token).await, 2);
}

#[tokio::test]
async fn the_same_idempotency_key_on_another_request_is_422_idempotency_key_reused_and_writes_nothing() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let book_type = app.create_type(&token, "book").await;
    let (status, first) = send(
        &app,
        "POST",
        "/api/demo/entity",
        &token,
        "k1",
        Some(&book(&book_type, "Dune")),
    )
    .await;
    assert_eq!(status, 201, "{first}");
    let id = first["_id"].as_str().unwrap();

    let other_body = book(&book_type, "Emma");
    let other_path = format!("/api/demo/entity/{id}");
    let title = json!([{"type": "title", "string": "Dune"}]);
    for (method, path, body) in [
        ("POST", "/api/demo/entity", Some(&other_body)),
        ("POST", other_path.as_str(), Some(&title)),
        ("DELETE", other_path.as_str(), None),
    ] {
        let (status, refused) = send(&app, method, path, &token, "k1", body).await;
        assert_eq!(status, 422, "{method} {path}: {refused}");
        assert_eq!(refused["error"], "idempotency_key_reused");
        assert_eq!(refused["status"], 422);
        assert_eq!(refused["message"], "This Idempotency-Key was used with another request");
    }
    assert_eq!(book_count(&app, &token).await, 1);
    let (_, entity) = app.get(&other_path, &token).await;
    assert_eq!(entity["entity"]["title"].as_array().unwrap().len(), 1, "{entity}");
}

#[tokio::test]
async fn deletes_repeated_with_their_idempotency_key_answer_deleted_again() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let book_type = app.create_type(&token, "book").await;
    let id = app
        .create(&token, &book_type, json!([{"type": "title", "string": "Dune"}]))
        .await;
    let (_, entity) = app.get(&format!("/api/demo/entity/{id}"), &token).await;
    let title_id = entity["entity"]["title"][0]["_id"].as_str().unwrap().to_owned();

    let value_path = format!("/api/demo/property/{title_id}");
    let entity_path = format!("/api/demo/entity/{id}");
    for path in [&value_path, &entity_path] {
        for _ in 0..2 {
            let (status, body) = send(&app, "DELETE", path, &token, &format!("delete:{path}"), None).await;
            assert_eq!((status, body), (200, json!({"deleted": true})), "{path}");
        }
        // without the key a repeat is a new request: the thing is gone
        let (status, body) = app.delete(path, &token).await;
        assert_eq!(status, 404, "{path}: {body}");
    }
}

#[tokio::test]
async fn an_idempotency_key_that_is_empty_too_long_or_not_visible_ascii_is_400_and_writes_nothing() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let book_type = app.create_type(&token, "book").await;
    for key in ["", "two words", &"k".repeat(256)] {
        let (status, body) = send(
            &app,
            "POST",
            "/api/demo/entity",
            &token,
            key,
            Some(&book(&book_type, "Dune")),
        )
        .await;
        assert_eq!(status, 400, "{key:?}: {body}");
        assert_eq!(body["error"], "invalid_idempotency_key");
        assert_eq!(
            body["message"],
            "Idempotency-Key must be 1 to 255 visible ASCII characters"
        );
    }
    assert_eq!(book_count(&app, &token).await, 0);
    let longest = "k".repeat(255);
    let (status, body) = send(
        &app,
        "POST",
        "/api/demo/entity",
        &token,
        &longest,
        Some(&book(&book_type, "Dune")),
    )
    .await;
    assert_eq!(status, 201, "{body}");
}

#[tokio::test]
async fn idempotency_keys_are_per_caller() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book_type = app.create_type(&owner, "book").await;
    let (_, other_key) = app.add_person(&owner, "Other").await;
    let other = app.token_for(&other_key).await;
    // a shared type: every person of the database may create books
    app.post(
        &format!("/api/demo/entity/{book_type}"),
        &owner,
        json!([{"type": "_sharing", "string": "domain"}]),
    )
    .await;
    let body = book(&book_type, "Dune");
    let (status, mine) = send(&app, "POST", "/api/demo/entity", &owner, "same", Some(&body)).await;
    assert_eq!(status, 201, "{mine}");
    let (status, theirs) = send(&app, "POST", "/api/demo/entity", &other, "same", Some(&body)).await;
    assert_eq!(status, 201, "{theirs}");
    assert_ne!(mine["_id"], theirs["_id"]);
}

#[tokio::test]
async fn an_api_key_written_with_an_idempotency_key_is_shown_once_and_masked_on_a_repeat() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let path = format!("/api/demo/entity/{}", app.person);
    let body = json!([{"type": "service_api_key", "string": "generate"}]);
    let (status, first) = send(&app, "POST", &path, &token, "new-key", Some(&body)).await;
    assert_eq!(status, 200, "{first}");
    let plain = first["properties"][0]["string"].as_str().unwrap();
    assert_ne!(plain, "***");
    let (status, repeat) = send(&app, "POST", &path, &token, "new-key", Some(&body)).await;
    assert_eq!(status, 200, "{repeat}");
    assert_eq!(repeat["properties"][0]["_id"], first["properties"][0]["_id"]);
    assert_eq!(repeat["properties"][0]["string"], "***");
    let stored: Vec<String> = {
        use diesel::prelude::*;
        use diesel_async::RunQueryDsl;
        use eds::db::schema::idempotent_writes::dsl::*;
        let mut conn = app.pool.get().await.unwrap();
        idempotent_writes
            .select(diesel::dsl::sql::<diesel::sql_types::Text>("outcome::text"))
            .load(&mut conn)
            .await
            .unwrap()
    };
    assert_eq!(stored.len(), 1);
    assert!(!stored[0].contains(plain), "the plain key was recorded: {}", stored[0]);
    // the key works, once
    assert_eq!(app.call("GET", "/api/auth?db=demo", Some(plain), None).await.0, 200);
}

#[tokio::test]
async fn a_record_older_than_24_hours_no_longer_answers_for_its_key() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let book_type = app.create_type(&token, "book").await;
    let body = book(&book_type, "Dune");
    let (status, first) = send(&app, "POST", "/api/demo/entity", &token, "old", Some(&body)).await;
    assert_eq!(status, 201, "{first}");
    {
        use diesel_async::RunQueryDsl;
        let mut conn = app.pool.get().await.unwrap();
        diesel::sql_query("UPDATE idempotent_writes SET created_at = now() - interval '24 hours 1 minute'")
            .execute(&mut conn)
            .await
            .unwrap();
    }
    let (status, again) = send(&app, "POST", "/api/demo/entity", &token, "old", Some(&body)).await;
    assert_eq!(status, 201, "{again}");
    assert_ne!(again["_id"], first["_id"]);
    assert_eq!(book_count(&app, &token).await, 2);
}

/// The fingerprint the HTTP layer gives a create of `body` on `demo`.
fn create_key(key: &str, body: &Json) -> IdempotencyKey {
    let mut digest = Sha256::new();
    digest.update(format!("POST /api/demo/entity\n{body}").as_bytes());
    IdempotencyKey {
        key: key.to_owned(),
        fingerprint: hex::encode(digest.finalize()),
    }
}

#[tokio::test]
async fn repeats_arriving_together_on_separate_connections_write_once() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let book_type = app.create_type(&token, "book").await;
    let body = book(&book_type, "Dune");
    // through the server's writer, and straight through other connections
    // (as another process would), all at once
    let direct = (0..4).map(|_| {
        let request = WriteRequest {
            db: "demo".into(),
            actor: app.person.clone(),
            op: WriteOp::CreateEntity {
                values: eds::model::value::parse_body(body.to_string().as_bytes()).unwrap(),
            },
            idempotency: Some(create_key("together", &body)),
        };
        eds::write::apply(&app.pool, request)
    });
    let http = (0..4).map(|_| send(&app, "POST", "/api/demo/entity", &token, "together", Some(&body)));
    let (direct, http) = futures_util::future::join(
        futures_util::future::join_all(direct),
        futures_util::future::join_all(http),
    )
    .await;
    let mut ids: Vec<String> = http
        .iter()
        .map(|(status, answer)| {
            assert_eq!(*status, 201, "{answer}");
            answer["_id"].as_str().unwrap().to_owned()
        })
        .collect();
    ids.extend(direct.into_iter().map(|outcome| match outcome.unwrap().first() {
        eds::write::WriteOutcome::Written { entity_id, .. } => entity_id,
        other => panic!("{other:?}"),
    }));
    ids.dedup();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(book_count(&app, &token).await, 1);
}

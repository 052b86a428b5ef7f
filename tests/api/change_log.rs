//! The change log the change feed and webhooks read: one row per entity per
//! committed write, kept by the write's own transaction, in commit order.

use crate::support;

use eds::write::{WriteOp, WriterCache, apply_batch};
use serde_json::json;
use support::{TestApp, change_log};

/// The rows written since the app's setup (its seeded entities).
async fn new_rows(app: &TestApp, before: usize) -> Vec<String> {
    change_log(&app.database_url, "demo").await.split_off(before)
}

#[tokio::test]
async fn each_write_logs_one_row_per_entity_naming_its_action_author_and_properties() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let book = app.create_type(&token, "book").await;
    let before = change_log(&app.database_url, "demo").await.len();

    let id = app
        .create(&token, &book, json!([{"type": "name", "string": "Dune"}]))
        .await;
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{id}"),
            &token,
            json!([{"type": "title", "string": "Dune"}]),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, read) = app.get(&format!("/api/demo/entity/{id}"), &token).await;
    let title_value = read["entity"]["title"][0]["_id"].as_str().unwrap().to_owned();
    let (status, body) = app.delete(&format!("/api/demo/property/{title_value}"), &token).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = app.delete(&format!("/api/demo/entity/{id}"), &token).await;
    assert_eq!(status, 200, "{body}");

    let person = &app.person;
    assert_eq!(
        new_rows(&app, before).await,
        [
            format!("{id} {person} create _created,_owner,_type,name"),
            format!("{id} {person} update title"),
            format!("{id} {person} update title"),
            format!("{id} {person} delete _created,_owner,_type,name"),
        ]
    );
}

#[tokio::test]
async fn writes_sharing_a_transaction_log_their_entities_once_each_in_commit_order() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let book = app.create_type(&token, "book").await;
    let id = app
        .create(&token, &book, json!([{"type": "name", "string": "one"}]))
        .await;
    let before = change_log(&app.database_url, "demo").await.len();
    let add = |name: &str| {
        let request = eds::write::WriteRequest {
            db: "demo".into(),
            actor: app.person.clone(),
            op: WriteOp::AddValues {
                entity_id: id.clone(),
                values: eds::model::value::parse_body(json!([{"type": "note", "string": name}]).to_string().as_bytes())
                    .unwrap(),
            },
            idempotency: None,
        };
        (request, Vec::new(), tracing::Span::none())
    };
    let outcomes = apply_batch(&app.pool, vec![add("a"), add("b")], &mut WriterCache::default()).await;
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    let later = app
        .create(&token, &book, json!([{"type": "name", "string": "two"}]))
        .await;

    let person = &app.person;
    assert_eq!(
        new_rows(&app, before).await,
        [
            format!("{id} {person} update note"),
            format!("{later} {person} create _created,_owner,_type,name")
        ]
    );
}

#[tokio::test]
async fn a_refused_write_logs_nothing() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let book = app.create_type(&token, "book").await;
    let before = change_log(&app.database_url, "demo").await.len();
    let (status, body) = app
        .post(
            "/api/demo/entity",
            &token,
            json!([{"type": "_type", "reference": book}, {"type": "title", "reference": "000000000000000000000000"}]),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(new_rows(&app, before).await, Vec::<String>::new());
}

/// A batch's new entities are logged once, with every property they were
/// created with (their values' own statement logs nothing more), and the
/// values added after them in the same transaction, to them or to others,
/// are logged as ever (the setting that says so does not outlive its statement).
#[tokio::test]
async fn a_batch_logs_its_new_entities_with_their_properties_and_the_values_added_after_them() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let book = app.create_type(&token, "book").await;
    let older = app
        .create(&token, &book, json!([{"type": "name", "string": "older"}]))
        .await;
    let before = change_log(&app.database_url, "demo").await.len();
    let (status, body) = app
        .post(
            "/api/demo/batch",
            &token,
            json!({"operations": [
                {"op": "create", "ref": "$new", "properties": [{"type": "_type", "reference": book}, {"type": "name", "string": "new"}]},
                {"op": "add", "entity": "$new", "properties": [{"type": "title", "string": "added"}]},
                {"op": "add", "entity": older, "properties": [{"type": "note", "string": "added"}]},
            ]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let new = body["refs"]["$new"].as_str().unwrap();
    let person = &app.person;
    let mut rows = new_rows(&app, before).await;
    rows.sort();
    let mut expected = [
        format!("{new} {person} create _created,_owner,_type,name,title"),
        format!("{older} {person} update note"),
    ];
    expected.sort();
    assert_eq!(rows, expected);
}

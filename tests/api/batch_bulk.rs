//! Batches of many operations (runs of plain `add`s applied together) and
//! the rules a batch or a restore once let through: a webhook's settings
//! added through a `$name`, and an undeleted entity's `_created`.

use serde_json::{Value as Json, json};

use crate::support::TestApp;

/// Sends a batch of `operations` as `token`.
async fn batch(app: &TestApp, token: &str, operations: Json) -> (u16, Json) {
    app.post("/api/demo/batch", token, json!({"operations": operations}))
        .await
}

async fn read(app: &TestApp, token: &str, id: &str) -> Json {
    let (status, body) = app.get(&format!("/api/demo/entity/{id}"), token).await;
    assert_eq!(status, 200, "{body}");
    body["entity"].clone()
}

#[tokio::test]
async fn batch_add_to_a_named_webhook_passes_the_webhook_rules() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let webhook_type = app.find(&owner, "entity", "webhook").await;
    let create = json!({"op": "create", "ref": "$hook", "properties": [
        {"type": "_type", "reference": webhook_type},
        {"type": "url", "string": "https://hooks.example.com/eds"},
        {"type": "events", "string": "create"},
    ]});
    for (bad, message) in [
        (json!({"type": "url", "string": "ftp://example.com/hook"}), "http"),
        (json!({"type": "events", "string": "someday"}), "events"),
    ] {
        let operations = json!([create, {"op": "add", "entity": "$hook", "properties": [bad]}]);
        let (status, body) = batch(&app, &owner, operations).await;
        assert_eq!((status, &body["error"]), (400, &json!("invalid_body")), "{body}");
        assert_eq!(
            (&body["status"], &body["operation"]),
            (&json!(400), &json!(1)),
            "{body}"
        );
        assert!(body["message"].as_str().unwrap().contains(message), "{body}");
        let (_, hooks) = app.get("/api/demo/entity?_type.string=webhook", &owner).await;
        assert_eq!(hooks["count"], 0, "nothing written: {hooks}");
    }
    // the single route refuses the same value on the same webhook
    let (status, body) = batch(&app, &owner, json!([create])).await;
    assert_eq!(status, 200, "{body}");
    let hook = body["refs"]["$hook"].as_str().unwrap().to_owned();
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{hook}"),
            &owner,
            json!([{"type": "url", "string": "ftp://example.com/hook"}]),
        )
        .await;
    assert_eq!((status, &body["error"]), (400, &json!("invalid_body")), "{body}");
    // a good url through a `$name` passes
    let good = json!([create, {"op": "add", "entity": "$hook", "properties": [
        {"type": "events", "string": "delete"},
    ]}]);
    let (status, body) = batch(&app, &owner, good).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn undelete_brings_back_created_as_it_was() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book_type = app.create_type(&owner, "book").await;
    let book = app
        .create(&owner, &book_type, json!([{"type": "title", "string": "Emma"}]))
        .await;
    let (editor, key) = app.add_person(&owner, "Editor").await;
    let editor_token = app.token_for(&key).await;
    let path = format!("/api/demo/entity/{book}");
    app.post(&path, &owner, json!({"type": "_owner", "reference": editor}))
        .await;
    let created = read(&app, &owner, &book).await["_created"].clone();
    assert_eq!(created.as_array().map(Vec::len), Some(1), "{created}");
    let (status, _) = app.delete(&path, &owner).await;
    assert_eq!(status, 200);
    // undeleted later, by another of its owners: `_created` still names the creation
    tokio::time::sleep(std::time::Duration::from_millis(30)).await;
    let (status, body) = app
        .call("POST", &format!("{path}/restore"), Some(&editor_token), None)
        .await;
    assert_eq!(status, 200, "{body}");
    let again = read(&app, &owner, &book).await["_created"].clone();
    assert_eq!(again.as_array().map(Vec::len), Some(1), "{again}");
    assert_eq!(again[0]["reference"], app.person, "{again}");
    assert_eq!(again[0]["reference"], created[0]["reference"], "{again}");
    assert_eq!(again[0]["datetime"], created[0]["datetime"], "{again}");
    assert_ne!(again[0]["_id"], created[0]["_id"], "history only grows");
    let (_, listed) = app
        .get(
            &format!("/api/demo/entity?_type.string=book&_created.reference={}", app.person),
            &owner,
        )
        .await;
    assert_eq!(listed["count"], 1, "{listed}");
}

//! Batches of many operations (runs of plain `add`s applied together) and
//! the rules a batch or a restore once let through: a webhook's settings
//! added through a `$name`, and an undeleted entity's `_created`.

use eds::db::projection::{TypeCache, rebuild};
use eds::db::values;
use serde_json::{Value as Json, json};

use crate::support::TestApp;

const NO_ENTITY: &str = "0123456789abcdef01234567";
/// Entities a run is tried on: more than the shortest run applied together.
const EXHIBITS: usize = 12;

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

/// A museum: a `collection` with `EXHIBITS` exhibits under it inheriting its
/// rights (owned by `co_owner` as well as the owner), a `label` referring
/// to the first one through a searchable reference, and a person `visitor`.
struct Museum {
    app: TestApp,
    owner: String,
    exhibit_type: String,
    collection: String,
    exhibits: Vec<String>,
    label: String,
    co_owner: (String, String),
    visitor: (String, String),
}

async fn museum() -> Museum {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (co_owner, co_key) = app.add_person(&owner, "Co-owner").await;
    let (visitor, visitor_key) = app.add_person(&owner, "Visitor").await;
    let collection_type = app.create_type(&owner, "collection").await;
    let exhibit_type = app.create_type(&owner, "exhibit").await;
    let label_type = app.create_type(&owner, "label").await;
    app.define(
        &owner,
        &exhibit_type,
        "name",
        "string",
        json!([{"type": "search", "boolean": true}]),
    )
    .await;
    app.define(
        &owner,
        &label_type,
        "about",
        "reference",
        json!([{"type": "search", "boolean": true}]),
    )
    .await;
    let collection = app
        .create(
            &owner,
            &collection_type,
            json!([{"type": "name", "string": "Paintings"}, {"type": "_owner", "reference": co_owner}]),
        )
        .await;
    let mut exhibits = Vec::new();
    for i in 0..EXHIBITS {
        let values = json!([
            {"type": "name", "string": format!("Exhibit {i}")},
            {"type": "_parent", "reference": collection},
            {"type": "_inheritrights", "boolean": true},
            {"type": "_owner", "reference": co_owner},
        ]);
        exhibits.push(app.create(&owner, &exhibit_type, values).await);
    }
    let label = app
        .create(
            &owner,
            &label_type,
            json!([{"type": "about", "reference": exhibits[0]}]),
        )
        .await;
    let co_token = app.token_for(&co_key).await;
    let visitor_token = app.token_for(&visitor_key).await;
    Museum {
        app,
        owner,
        exhibit_type,
        collection,
        exhibits,
        label,
        co_owner: (co_owner, co_token),
        visitor: (visitor, visitor_token),
    }
}

/// `_viewer` for `person` on each of `entities`, with a note.
fn grants(entities: &[String], person: &str) -> Vec<Json> {
    entities
        .iter()
        .map(|id| {
            json!({"op": "add", "entity": id, "properties": [
                {"type": "_viewer", "reference": person},
                {"type": "note", "string": "granted"},
            ]})
        })
        .collect()
}

/// How many exhibits `token`'s person sees.
async fn exhibits_seen(app: &TestApp, token: &str) -> u64 {
    let (status, body) = app.get("/api/demo/entity?_type.string=exhibit&limit=1", token).await;
    assert_eq!(status, 200, "{body}");
    body["count"].as_u64().unwrap()
}

/// Asserts every live entity's stored projection is the one its values build.
async fn projections_are_rebuilds(app: &TestApp, ids: &[String]) {
    let mut conn = app.pool.get().await.unwrap();
    for id in ids {
        let stored = values::live_entity(&mut conn, "demo", id, false)
            .await
            .unwrap()
            .unwrap();
        let rows = values::live_values(&mut conn, "demo", id).await.unwrap();
        let (rebuilt, lists) = rebuild(&mut conn, &mut TypeCache::default(), "demo", id, &rows)
            .await
            .unwrap();
        assert_eq!(stored.doc, rebuilt.doc, "{id}");
        assert_eq!(stored.lists(), lists, "{id}: effective rights");
    }
}

#[tokio::test]
async fn batch_run_of_adds_writes_each_as_its_single_route_would() {
    let m = museum().await;
    let (visitor, visitor_token) = &m.visitor;
    // the collection first, then its exhibits: they inherit what it gets
    let mut entities = vec![m.collection.clone()];
    entities.extend(m.exhibits.iter().cloned());
    let operations = grants(&entities, visitor);
    let (status, body) = batch(&m.app, &m.owner, Json::Array(operations)).await;
    assert_eq!(status, 200, "{body}");
    let results = body["results"].as_array().unwrap();
    assert_eq!(results.len(), EXHIBITS + 1);
    for (result, id) in results.iter().zip(&entities) {
        assert_eq!(result["_id"], json!(id), "{result}");
        let types: Vec<&str> = result["properties"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["_viewer", "note"], "{result}");
    }
    assert_eq!(exhibits_seen(&m.app, visitor_token).await, EXHIBITS as u64);
    let exhibit = read(&m.app, visitor_token, &m.exhibits[3]).await;
    assert_eq!(exhibit["note"][0]["string"], "granted", "{exhibit}");
    // the label's search text still holds the exhibit's name
    let (_, found) = m
        .app
        .get("/api/demo/entity?_type.string=label&q=exhibit", &m.owner)
        .await;
    assert_eq!(found["count"], 1, "{found}");
    let mut all = entities.clone();
    all.push(m.label.clone());
    projections_are_rebuilds(&m.app, &all).await;
}

#[tokio::test]
async fn batch_run_failure_answers_its_own_operation_and_writes_nothing() {
    let m = museum().await;
    let (visitor, visitor_token) = &m.visitor;
    let mut operations = grants(&m.exhibits, visitor);
    operations[7]["entity"] = json!(NO_ENTITY);
    let (status, body) = batch(&m.app, &m.owner, Json::Array(operations.clone())).await;
    assert_eq!((status, &body["error"]), (404, &json!("not_found")), "{body}");
    assert_eq!(
        (&body["status"], &body["operation"]),
        (&json!(404), &json!(7)),
        "{body}"
    );
    assert_eq!(exhibits_seen(&m.app, visitor_token).await, 0, "nothing written");

    // a right the writer lacks: the co-owner gives the owner only `_editor` on one
    let (_, co_token) = &m.co_owner;
    let stranger = m
        .app
        .create(
            co_token,
            &m.exhibit_type,
            json!([{"type": "_editor", "reference": m.app.person}]),
        )
        .await;
    let mut operations = grants(&m.exhibits, visitor);
    operations[10]["entity"] = json!(stranger);
    let (status, body) = batch(&m.app, &m.owner, Json::Array(operations)).await;
    assert_eq!((status, &body["error"]), (403, &json!("forbidden")), "{body}");
    assert_eq!(body["operation"], 10, "{body}");
    assert_eq!(exhibits_seen(&m.app, visitor_token).await, 0, "nothing written");
    let note = read(&m.app, &m.owner, &m.exhibits[0]).await;
    assert!(note.get("note").is_none(), "{note}");
}

#[tokio::test]
async fn batch_run_judges_rights_on_the_state_earlier_operations_left() {
    let m = museum().await;
    let (visitor, visitor_token) = &m.visitor;
    // the owner keeps the exhibits only through the collection
    for exhibit in &m.exhibits {
        let entity = read(&m.app, &m.owner, exhibit).await;
        let own = entity["_owner"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["reference"] == json!(m.app.person))
            .unwrap()["_id"]
            .as_str()
            .unwrap()
            .to_owned();
        let (status, body) = m.app.delete(&format!("/api/demo/property/{own}"), &m.owner).await;
        assert_eq!(status, 200, "{body}");
    }
    let mut operations = grants(&m.exhibits[..9], visitor);
    // the owner steps down to `_viewer` of the collection, so of its exhibits
    operations.push(json!({"op": "add", "entity": m.collection, "properties": [
        {"type": "_viewer", "reference": m.app.person},
    ]}));
    operations.extend(grants(&m.exhibits, visitor));
    let (status, body) = batch(&m.app, &m.owner, Json::Array(operations)).await;
    assert_eq!((status, &body["error"]), (403, &json!("forbidden")), "{body}");
    assert_eq!(body["operation"], 10, "{body}");
    assert_eq!(exhibits_seen(&m.app, visitor_token).await, 0, "nothing written");
    let collection = read(&m.app, &m.owner, &m.collection).await;
    let owners: Vec<&Json> = collection["_owner"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| &v["reference"])
        .collect();
    assert!(owners.contains(&&json!(m.app.person)), "{collection}");
}

#[tokio::test]
async fn batch_run_second_add_to_an_entity_sees_the_first() {
    let m = museum().await;
    let (visitor, visitor_token) = &m.visitor;
    let mut operations = grants(&m.exhibits, visitor);
    operations[9] = json!({"op": "add", "entity": m.exhibits[2], "properties": [
        {"type": "_editor", "reference": visitor},
    ]});
    let (status, body) = batch(&m.app, &m.owner, Json::Array(operations)).await;
    assert_eq!(status, 200, "{body}");
    let exhibit = read(&m.app, visitor_token, &m.exhibits[2]).await;
    assert!(
        exhibit.get("_viewer").is_none(),
        "the `_editor` replaced the `_viewer`: {exhibit}"
    );
    assert_eq!(exhibit["_editor"][0]["reference"], json!(visitor), "{exhibit}");
    assert_eq!(exhibits_seen(&m.app, visitor_token).await, (EXHIBITS - 1) as u64);
    projections_are_rebuilds(&m.app, &m.exhibits).await;
}

#[tokio::test]
async fn batch_run_longer_than_one_part_is_written_whole() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (visitor, key) = app.add_person(&owner, "Visitor").await;
    let visitor_token = app.token_for(&key).await;
    let item = app.create_type(&owner, "item").await;
    // more than one part of a run, and a refusal in the last one
    let count = 600;
    let creates: Vec<Json> = (0..count)
        .map(|i| json!({"op": "create", "properties": [{"type": "_type", "reference": item}, {"type": "name", "string": format!("item {i}")}]}))
        .collect();
    let (status, body) = batch(&app, &owner, Json::Array(creates)).await;
    assert_eq!(status, 200, "{body}");
    let items: Vec<String> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|result| result["_id"].as_str().unwrap().to_owned())
        .collect();
    let mut operations = grants(&items, &visitor);
    let seen = || async {
        app.get("/api/demo/entity?_type.string=item&limit=1", &visitor_token)
            .await
            .1["count"]
            .clone()
    };
    operations[550]["entity"] = json!(NO_ENTITY);
    let (status, body) = batch(&app, &owner, Json::Array(operations.clone())).await;
    assert_eq!((status, &body["operation"]), (404, &json!(550)), "{body}");
    assert_eq!(seen().await, 0, "nothing written");
    operations[550]["entity"] = json!(items[550]);
    let (status, body) = batch(&app, &owner, Json::Array(operations)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"].as_array().unwrap().len(), count);
    assert_eq!(seen().await, count);
}

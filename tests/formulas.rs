//! Formula values in the projection, their dependents, and the aggregate call.

mod common;

use common::TestApp;
use serde_json::{Value as Json, json};

async fn read(app: &TestApp, token: &str, id: &str) -> Json {
    let (status, body) = app.get(&format!("/api/demo/entity/{id}"), token).await;
    assert_eq!(status, 200, "{body}");
    body["entity"].clone()
}

#[tokio::test]
async fn formula_values_are_computed_and_follow_their_inputs() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let order = app.create_type(&owner, "order").await;
    app.define(
        &owner,
        &order,
        "total",
        "number",
        json!([{"type": "formula", "string": "price qty MULTIPLY"}]),
    )
    .await;
    app.define(
        &owner,
        &order,
        "label",
        "string",
        json!([{"type": "formula", "string": "'Order ' _id"}]),
    )
    .await;
    let id = app
        .create(
            &owner,
            &order,
            json!([{"type": "price", "number": 3}, {"type": "qty", "number": 4}]),
        )
        .await;
    let entity = read(&app, &owner, &id).await;
    assert_eq!(entity["total"][0]["number"], 12);
    assert_eq!(entity["label"][0]["string"], format!("Order {id}"));
    let qty = entity["qty"][0]["_id"].clone();
    app.post(
        &format!("/api/demo/entity/{id}"),
        &owner,
        json!({"type": "qty", "number": 5, "_id": qty}),
    )
    .await;
    assert_eq!(read(&app, &owner, &id).await["total"][0]["number"], 15);
    // a formula that cannot be evaluated gives no value, never an error
    app.post(
        &format!("/api/demo/entity/{id}"),
        &owner,
        json!({"type": "price", "string": "x"}),
    )
    .await;
    let entity = read(&app, &owner, &id).await;
    assert!(entity.get("total").is_none(), "{entity}");
    // results live in the projection only: no value row, no history
    let (_, history) = app.get(&format!("/api/demo/entity/{id}/history"), &owner).await;
    assert!(!history.to_string().contains("\"total\""));
}

#[tokio::test]
async fn a_parent_sums_its_children_and_follows_their_changes() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let cart = app.create_type(&owner, "cart").await;
    let item = app.create_type(&owner, "item").await;
    app.define(
        &owner,
        &cart,
        "sum",
        "number",
        json!([{"type": "formula", "string": "_child.item.price SUM"}]),
    )
    .await;
    app.define(
        &owner,
        &cart,
        "items",
        "number",
        json!([{"type": "formula", "string": "_child.*._id COUNT"}]),
    )
    .await;
    let parent = app.create(&owner, &cart, json!([])).await;
    let first = app
        .create(
            &owner,
            &item,
            json!([{"type": "_parent", "reference": parent}, {"type": "price", "number": 2}]),
        )
        .await;
    app.create(
        &owner,
        &item,
        json!([{"type": "_parent", "reference": parent}, {"type": "price", "number": 5}]),
    )
    .await;
    let entity = read(&app, &owner, &parent).await;
    assert_eq!(
        (
            entity["sum"][0]["number"].as_i64(),
            entity["items"][0]["number"].as_i64()
        ),
        (Some(7), Some(2))
    );
    let price = read(&app, &owner, &first).await["price"][0]["_id"].clone();
    app.post(
        &format!("/api/demo/entity/{first}"),
        &owner,
        json!({"type": "price", "number": 10, "_id": price}),
    )
    .await;
    assert_eq!(read(&app, &owner, &parent).await["sum"][0]["number"], 15);
}

#[tokio::test]
async fn formulas_reading_each_other_in_a_cycle_settle() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let node = app.create_type(&owner, "node").await;
    app.define(
        &owner,
        &node,
        "peer_name",
        "string",
        json!([{"type": "formula", "string": "next.*.name"}]),
    )
    .await;
    let a = app
        .create(&owner, &node, json!([{"type": "name", "string": "a"}]))
        .await;
    let b = app
        .create(
            &owner,
            &node,
            json!([{"type": "name", "string": "b"}, {"type": "next", "reference": a}]),
        )
        .await;
    let c = app
        .create(
            &owner,
            &node,
            json!([{"type": "name", "string": "c"}, {"type": "next", "reference": b}]),
        )
        .await;
    let (status, _) = app
        .post(
            &format!("/api/demo/entity/{a}"),
            &owner,
            json!({"type": "next", "reference": c}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(read(&app, &owner, &a).await["peer_name"][0]["string"], "c");
    assert_eq!(read(&app, &owner, &b).await["peer_name"][0]["string"], "a");
    assert_eq!(read(&app, &owner, &c).await["peer_name"][0]["string"], "b");
}

#[tokio::test]
async fn aggregate_recomputes_for_editors_only() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let order = app.create_type(&owner, "order").await;
    app.define(
        &owner,
        &order,
        "double",
        "number",
        json!([{"type": "formula", "string": "n 2 MULTIPLY"}]),
    )
    .await;
    let id = app.create(&owner, &order, json!([{"type": "n", "number": 4}])).await;
    let (status, body) = app.get(&format!("/api/demo/entity/{id}/aggregate"), &owner).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["_id"], id.as_str());
    assert!(body["queued"].is_u64());
    let (person, key) = app.add_person(&owner, "Viewer").await;
    let viewer = app.token_for(&key).await;
    assert_eq!(
        app.get(&format!("/api/demo/entity/{id}/aggregate"), &viewer).await.0,
        404
    );
    app.post(
        &format!("/api/demo/entity/{id}"),
        &owner,
        json!({"type": "_viewer", "reference": person}),
    )
    .await;
    assert_eq!(
        app.get(&format!("/api/demo/entity/{id}/aggregate"), &viewer).await.0,
        403
    );
    assert_eq!(
        app.call("GET", &format!("/api/demo/entity/{id}/aggregate"), None, None)
            .await
            .0,
        401
    );
}

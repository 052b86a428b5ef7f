//! Formula values in the projection, their dependents, and the aggregate call.

mod common;

use common::TestApp;
use serde_json::{Value as Json, json};

/// Defines property `name` of `value_type` on a type, computed by `formula`.
async fn define_formula(app: &TestApp, token: &str, type_id: &str, name: &str, value_type: &str, formula: &str) {
    app.define(
        token,
        type_id,
        name,
        value_type,
        json!([{"type": "formula", "string": formula}]),
    )
    .await;
}

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
    define_formula(&app, &owner, &order, "total", "number", "price qty MULTIPLY").await;
    define_formula(&app, &owner, &order, "label", "string", "'Order ' _id").await;
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
    define_formula(&app, &owner, &cart, "sum", "number", "_child.item.price SUM").await;
    define_formula(&app, &owner, &cart, "items", "number", "_child.*._id COUNT").await;
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
    app.settle().await;
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
    app.settle().await;
    assert_eq!(read(&app, &owner, &parent).await["sum"][0]["number"], 15);
}

/// A ring of `size` nodes, each naming the next; every node shows the next
/// one's `label` (itself a formula) as `peer_label`. Answers the node ids.
async fn ring(app: &TestApp, owner: &str, size: usize) -> Vec<String> {
    let node = app.create_type(owner, "node").await;
    define_formula(app, owner, &node, "label", "string", "'node ' name CONCAT").await;
    define_formula(app, owner, &node, "peer_label", "string", "next.*.label").await;
    let mut ids = Vec::new();
    for i in 0..size {
        let mut values = vec![json!({"type": "name", "string": format!("n{i}")})];
        if let Some(previous) = ids.last() {
            values.push(json!({"type": "next", "reference": previous}));
        }
        ids.push(app.create(owner, &node, Json::Array(values)).await);
    }
    let (status, _) = app
        .post(
            &format!("/api/demo/entity/{}", ids[0]),
            owner,
            json!({"type": "next", "reference": ids[size - 1]}),
        )
        .await;
    assert_eq!(status, 200);
    ids
}

async fn formula_cycle_settles_and_the_queue_drains(size: usize) {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let ids = ring(&app, &owner, size).await;
    // renaming one node changes its label, which its neighbour reads
    let first = read(&app, &owner, &ids[0]).await;
    app.post(
        &format!("/api/demo/entity/{}", ids[0]),
        &owner,
        json!({"type": "name", "string": "renamed", "_id": first["name"][0]["_id"]}),
    )
    .await;
    app.settle().await;
    let mut conn = app.pool.get().await.unwrap();
    assert_eq!(eds::db::formula_queue::pending(&mut conn).await.unwrap(), 0);
    for (i, id) in ids.iter().enumerate() {
        // node i names node i-1; node 0 names the last one
        let next = if i == 0 { size - 1 } else { i - 1 };
        let expected = if next == 0 {
            "node renamed".to_owned()
        } else {
            format!("node n{next}")
        };
        assert_eq!(
            read(&app, &owner, id).await["peer_label"][0]["string"],
            expected.as_str(),
            "node {i}"
        );
    }
}

#[tokio::test]
async fn a_2_cycle_of_formulas_settles_and_the_queue_drains_to_0() {
    formula_cycle_settles_and_the_queue_drains(2).await;
}

#[tokio::test]
async fn a_3_cycle_of_formulas_settles_and_the_queue_drains_to_0() {
    formula_cycle_settles_and_the_queue_drains(3).await;
}

#[tokio::test]
async fn a_cycle_of_formulas_that_never_settles_is_cut_and_the_queue_drains() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let node = app.create_type(&owner, "node").await;
    // each node counts one more than the next: around a ring it never settles
    define_formula(&app, &owner, &node, "depth", "number", "next.*.depth 1 SUM").await;
    let a = app.create(&owner, &node, json!([])).await;
    let b = app
        .create(&owner, &node, json!([{"type": "next", "reference": a}]))
        .await;
    app.post(
        &format!("/api/demo/entity/{a}"),
        &owner,
        json!({"type": "next", "reference": b}),
    )
    .await;
    app.settle().await;
    let depth = |entity: Json| entity["depth"][0]["number"].as_f64().unwrap();
    let (a_depth, b_depth) = (depth(read(&app, &owner, &a).await), depth(read(&app, &owner, &b).await));
    // cut after MAX_HOPS passes, each raising one of the two by at least one
    assert!(
        a_depth + b_depth >= f64::from(eds::db::formula_queue::MAX_HOPS),
        "{a_depth} {b_depth}"
    );
    assert!(a_depth + b_depth < 100.0, "{a_depth} {b_depth}");
}

#[tokio::test]
async fn aggregate_recomputes_for_editors_only() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let order = app.create_type(&owner, "order").await;
    define_formula(&app, &owner, &order, "double", "number", "n 2 MULTIPLY").await;
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

#[tokio::test]
async fn a_list_answer_shows_a_formula_result_computed_after_the_answer_was_cached() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let cart = app.create_type(&owner, "cart").await;
    let item = app.create_type(&owner, "item").await;
    define_formula(&app, &owner, &cart, "sum", "number", "_child.item.price SUM").await;
    let parent = app.create(&owner, &cart, json!([])).await;
    let sums = || async {
        let (status, body) = app.get("/api/demo/entity?_type.string=cart&props=sum", &owner).await;
        assert_eq!(status, 200, "{body}");
        body["entities"][0]["sum"][0]["number"].clone()
    };
    assert_eq!(sums().await, Json::Null);
    app.create(
        &owner,
        &item,
        json!([{"type": "_parent", "reference": parent}, {"type": "price", "number": 7}]),
    )
    .await;
    // the formula worker computes the sum after the write was answered
    app.settle().await;
    assert_eq!(sums().await, 7);
}

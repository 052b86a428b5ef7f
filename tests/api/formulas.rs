//! Formula values in the projection, their dependents, and the aggregate call.

use crate::support;

use diesel_async::RunQueryDsl;
use serde_json::{Value as Json, json};
use support::TestApp;

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
    // cut after MAX_FORMULA_PASSES passes, each raising one of the two by at least one
    assert!(
        a_depth + b_depth >= f64::from(eds::db::formula_queue::MAX_FORMULA_PASSES),
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

/// Waits until no formula queue entry is waiting any more (parked ones do
/// not wait); a large fan-out takes longer than [`TestApp::settle`] allows.
async fn drain(app: &TestApp, minutes: u64) {
    let mut conn = app.pool.get().await.unwrap();
    for _ in 0..minutes * 600 {
        if eds::db::formula_queue::pending(&mut conn).await.unwrap() == 0 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the formula queue did not drain within {minutes} min");
}

/// Entities of `type_id` written straight into the store, each owned by
/// `owner` and referencing `target` through `prop`: a fan-out too large to
/// create request by request. Their projections are left for the worker.
async fn create_referrers(app: &TestApp, count: usize, type_id: &str, prop: &str, target: &str, owner: &str) {
    use diesel::sql_types::{Array, Text};
    let ids: Vec<String> = (0..count).map(|_| eds::model::ids::new_id()).collect();
    let value_ids = || -> Vec<String> { (0..count).map(|_| eds::model::ids::new_id()).collect() };
    let mut conn = app.pool.get().await.unwrap();
    diesel::sql_query(
        "INSERT INTO entities (db, id, created_at, created_by, type_id, owners, editors, expanders, viewers) \
         SELECT 'demo', id, now(), $2, $3, ARRAY[$2], ARRAY[$2], ARRAY[$2], ARRAY[$2] FROM unnest($1::text[]) id",
    )
    .bind::<Array<Text>, _>(&ids)
    .bind::<Text, _>(owner)
    .bind::<Text, _>(type_id)
    .execute(&mut conn)
    .await
    .unwrap();
    for (prop, reference) in [("_type", type_id), ("_owner", owner), (prop, target)] {
        diesel::sql_query(
            "INSERT INTO property_values (db, id, entity_id, prop, reference, created_at, created_by) \
             SELECT 'demo', v.id, v.entity_id, $3, $4, now(), $5 FROM unnest($1::text[], $2::text[]) v(id, entity_id)",
        )
        .bind::<Array<Text>, _>(value_ids())
        .bind::<Array<Text>, _>(&ids)
        .bind::<Text, _>(prop)
        .bind::<Text, _>(reference)
        .bind::<Text, _>(owner)
        .execute(&mut conn)
        .await
        .unwrap();
    }
    // as autovacuum would after so many rows: planned as the few rows the
    // statistics still count, the dependents lookup would compare every
    // referrer with every entity of the type
    diesel::sql_query("ANALYZE entities, property_values")
        .execute(&mut conn)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_write_read_by_more_formulas_than_postgresql_has_bind_parameters_is_answered_and_all_are_computed() {
    // three bind parameters a queued row would have overflowed 65,535 at 21,846
    const FAN_OUT: usize = 22_000;
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let cart = app.create_type(&owner, "cart").await;
    let line = app.create_type(&owner, "line").await;
    define_formula(&app, &owner, &line, "cart_code", "string", "cart.*.code").await;
    let target = app
        .create(&owner, &cart, json!([{"type": "code", "string": "A"}]))
        .await;
    create_referrers(&app, FAN_OUT, &line, "cart", &target, &app.person).await;
    let code = read(&app, &owner, &target).await["code"][0]["_id"].clone();
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{target}"),
            &owner,
            json!({"type": "code", "string": "B", "_id": code}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["properties"][0]["string"], "B");
    // every process drains the queue: three more drainers beside the worker
    let drainers: Vec<_> = (0..3)
        .map(|_| {
            let pool = app.pool.clone();
            tokio::spawn(async move {
                let mut conn = pool.get().await.unwrap();
                let retry = eds::db::formula_queue::Retry::default();
                while eds::jobs::formulas::compute_next(&mut conn, retry).await.unwrap() {}
            })
        })
        .collect();
    for drainer in drainers {
        drainer.await.unwrap();
    }
    drain(&app, 30).await;
    let mut conn = app.pool.get().await.unwrap();
    assert_eq!(eds::db::formula_queue::parked(&mut conn).await.unwrap(), 0);
    let computed: Count = diesel::sql_query(
        "SELECT count(*) AS count FROM entities WHERE db = 'demo' AND type_id = $1 \
         AND doc -> 'cart_code' = '[{\"string\": \"B\"}]'",
    )
    .bind::<diesel::sql_types::Text, _>(&line)
    .get_result(&mut conn)
    .await
    .unwrap();
    assert_eq!(computed.count, FAN_OUT as i64);
    let (status, body) = app.get("/api/demo/entity?_type.string=line&limit=1", &owner).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["count"], FAN_OUT);
    assert_eq!(body["entities"][0]["cart_code"], json!([{"string": "B"}]));
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    count: i64,
}

/// The value of an unlabelled series in the `/metrics` text.
async fn metric(app: &TestApp, name: &str) -> String {
    let response = app.http.get(format!("{}/metrics", app.url)).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no {name} in {text}"))
        .to_owned()
}

#[tokio::test]
async fn a_queued_entity_that_always_fails_is_parked_and_never_holds_up_another_database() {
    let app = TestApp::start_with(
        support::Storage::Local,
        &[
            ("actors.formula_attempts", "3".to_owned()),
            ("actors.formula_retry_ms", "100".to_owned()),
            ("actors.formula_poll_ms", "10".to_owned()),
        ],
    )
    .await;
    let owner = app.owner_token().await;
    let thing = app.create_type(&owner, "thing").await;
    let broken = app
        .create(&owner, &thing, json!([{"type": "due", "date": "2026-01-02"}]))
        .await;
    // a stored date no entity can be read with (beyond chrono's range), then
    // the entity queued as a write would queue it
    let mut conn = app.pool.get().await.unwrap();
    diesel::sql_query("UPDATE property_values SET date = 'infinity' WHERE entity_id = $1 AND prop = 'due'")
        .bind::<diesel::sql_types::Text, _>(&broken)
        .execute(&mut conn)
        .await
        .unwrap();
    eds::db::formula_queue::enqueue(&mut conn, "demo", std::slice::from_ref(&broken), 1)
        .await
        .unwrap();
    // queued after it, in another database: a cart summing its items
    let other = eds::db::databases::create(&app.pool, "other", "other@example.com", "Other Owner")
        .await
        .unwrap();
    let (status, body) = app.call("GET", "/api/auth?db=other", Some(&other.api_key), None).await;
    assert_eq!(status, 200, "{body}");
    let other_token = body["token"].as_str().unwrap().to_owned();
    let entity_type = {
        let (status, body) = app
            .get("/api/other/entity?_type.string=entity&name.string=entity", &other_token)
            .await;
        assert_eq!(status, 200, "{body}");
        body["entities"][0]["_id"].as_str().unwrap().to_owned()
    };
    let property_type = {
        let (status, body) = app
            .get(
                "/api/other/entity?_type.string=entity&name.string=property",
                &other_token,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body["entities"][0]["_id"].as_str().unwrap().to_owned()
    };
    let create = |values: Json| {
        let app = &app;
        let token = other_token.clone();
        async move {
            let (status, body) = app.post("/api/other/entity", &token, values).await;
            assert_eq!(status, 201, "{body}");
            body["_id"].as_str().unwrap().to_owned()
        }
    };
    let cart = create(json!([{"type": "_type", "reference": entity_type}, {"type": "name", "string": "cart"}])).await;
    create(json!([
        {"type": "_type", "reference": property_type}, {"type": "_parent", "reference": cart},
        {"type": "name", "string": "sum"}, {"type": "type", "string": "number"},
        {"type": "formula", "string": "_child.*.price SUM"},
    ]))
    .await;
    let parent = create(json!([{"type": "_type", "reference": cart}])).await;
    let item = create(json!([{"type": "_type", "reference": entity_type}, {"type": "name", "string": "item"}])).await;
    create(json!([
        {"type": "_type", "reference": item}, {"type": "_parent", "reference": parent},
        {"type": "price", "number": 7},
    ]))
    .await;
    // waits for the healthy entry and for the broken one's last attempt
    app.settle().await;
    let (status, body) = app.get(&format!("/api/other/entity/{parent}"), &other_token).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["entity"]["sum"][0]["number"], 7);
    let (attempts, parked): (i32, bool) = diesel::sql_query(
        "SELECT attempts, parked_at IS NOT NULL AS parked FROM formula_queue WHERE db = 'demo' AND entity_id = $1",
    )
    .bind::<diesel::sql_types::Text, _>(&broken)
    .get_result::<Entry>(&mut conn)
    .await
    .map(|entry| (entry.attempts, entry.parked))
    .unwrap();
    assert_eq!((attempts, parked), (3, true));
    assert_eq!(metric(&app, "eds_formula_queue_parked").await, "1");
    assert_eq!(metric(&app, "eds_formula_queue_pending").await, "0");
    // aggregate computes it directly: still broken, it fails and stays parked
    let (status, body) = app.get(&format!("/api/demo/entity/{broken}/aggregate"), &owner).await;
    assert_eq!((status, body["error"].as_str()), (500, Some("internal")), "{body}");
    assert_eq!(metric(&app, "eds_formula_queue_parked").await, "1");
    // repaired, aggregate computes it and its parked entry is gone
    diesel::sql_query("UPDATE property_values SET date = '2026-01-03' WHERE entity_id = $1 AND prop = 'due'")
        .bind::<diesel::sql_types::Text, _>(&broken)
        .execute(&mut conn)
        .await
        .unwrap();
    let (status, body) = app.get(&format!("/api/demo/entity/{broken}/aggregate"), &owner).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["_id"], broken.as_str());
    assert_eq!(metric(&app, "eds_formula_queue_parked").await, "0");
    let entity = read(&app, &owner, &broken).await;
    assert_eq!(entity["due"][0]["date"], "2026-01-03T00:00:00.000Z", "{entity}");
}

#[derive(diesel::QueryableByName)]
struct Entry {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    attempts: i32,
    #[diesel(sql_type = diesel::sql_types::Bool)]
    parked: bool,
}

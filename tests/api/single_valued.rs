//! Sorts and groups keyed by a property's values take each value as its
//! entity's key only while no entity holds several values of it: adding a
//! second value, deleting it, and deleting the entity keep every answer
//! exact (migration `property_multiplicity`).

use crate::support;

use serde_json::{Value as Json, json};
use support::TestApp;

async fn ids(app: &TestApp, token: &str, query: &str) -> Vec<String> {
    let (status, body) = app
        .get(&format!("/api/demo/entity?_type.string=gadget&{query}"), token)
        .await;
    assert_eq!(status, 200, "{body}");
    body["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entity| entity["_id"].as_str().unwrap().to_owned())
        .collect()
}

async fn group_sizes(app: &TestApp, token: &str) -> Vec<(Json, Json)> {
    let (status, body) = app
        .get(
            "/api/demo/entity?_type.string=gadget&group=price.number&props=price",
            token,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            // the group's key: the smallest price of its first entity
            let prices = row["price"].as_array().unwrap().iter();
            let key = prices
                .map(|value| value["number"].as_f64().unwrap())
                .fold(f64::INFINITY, f64::min);
            (json!(key as i64), row["_count"].clone())
        })
        .collect()
}

/// Gadgets priced 5 to 9 are in it, sorted by their largest price.
const RANGE: &str = "price.number.gte=5&price.number.lt=10&sort=-price.number";

/// A `gadget` type and one gadget per price, their ids in that order.
async fn gadgets_priced(app: &TestApp, token: &str, prices: &[i64]) -> Vec<String> {
    let gadget = app.create_type(token, "gadget").await;
    let mut gadgets = Vec::new();
    for price in prices {
        gadgets.push(
            app.create(token, &gadget, json!([{"type": "price", "number": price}]))
                .await,
        );
    }
    gadgets
}

/// Adds a second price to `gadget`; the new value's id.
async fn add_price(app: &TestApp, token: &str, gadget: &str, price: i64) -> String {
    let (status, body) = app
        .post(
            &format!("/api/demo/entity/{gadget}"),
            token,
            json!({"type": "price", "number": price}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["properties"][0]["_id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_second_value_makes_the_entity_keyed_by_all_its_values_until_it_is_deleted() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let gadgets = gadgets_priced(&app, &token, &[5, 6, 7]).await;
    assert_eq!(
        ids(&app, &token, RANGE).await,
        [gadgets[2].clone(), gadgets[1].clone(), gadgets[0].clone()]
    );

    // gadget 0 also costs 50: sorted by its largest price, outside the range
    let added = add_price(&app, &token, &gadgets[0], 50).await;
    assert_eq!(
        ids(&app, &token, RANGE).await,
        [gadgets[0].clone(), gadgets[2].clone(), gadgets[1].clone()]
    );
    // and grouped by its smallest, 5
    assert_eq!(
        group_sizes(&app, &token).await,
        [(json!(5), json!(1)), (json!(6), json!(1)), (json!(7), json!(1))]
    );

    // the second value deleted: keyed by 5 again
    let (status, body) = app.delete(&format!("/api/demo/property/{added}"), &token).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        ids(&app, &token, RANGE).await,
        [gadgets[2].clone(), gadgets[1].clone(), gadgets[0].clone()]
    );

    // two values again, then the whole entity deleted: no entity holds two
    app.post(
        &format!("/api/demo/entity/{}", gadgets[1]),
        &token,
        json!({"type": "price", "number": 1}),
    )
    .await;
    assert_eq!(
        group_sizes(&app, &token).await,
        [(json!(1), json!(1)), (json!(5), json!(1)), (json!(7), json!(1))]
    );
    let (status, body) = app.delete(&format!("/api/demo/entity/{}", gadgets[1]), &token).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        group_sizes(&app, &token).await,
        [(json!(5), json!(1)), (json!(7), json!(1))]
    );
    assert_eq!(ids(&app, &token, RANGE).await, [gadgets[2].clone(), gadgets[0].clone()]);
    let several = multiplicity(&app).await;
    assert_eq!(several, 0, "no entity holds two prices");
}

/// How many entities of `demo` hold several live prices, as tallied.
async fn multiplicity(app: &TestApp) -> i64 {
    several(
        app,
        "SELECT coalesce(sum(several), 0)::bigint AS several FROM property_multiplicity \
         WHERE db = 'demo' AND prop = 'price'",
    )
    .await
}

/// How many entities of `demo` hold several live prices, counted from the
/// value rows themselves.
async fn counted_multiplicity(app: &TestApp) -> i64 {
    several(
        app,
        "SELECT count(*) AS several FROM (SELECT entity_id FROM property_values \
         WHERE db = 'demo' AND prop = 'price' AND deleted_at IS NULL \
         GROUP BY entity_id HAVING count(*) > 1) held",
    )
    .await
}

/// The `several` column of the one row `sql` answers.
async fn several(app: &TestApp, sql: &str) -> i64 {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        several: i64,
    }
    let mut conn = app.pool.get().await.unwrap();
    diesel::sql_query(sql)
        .get_result::<Row>(&mut conn)
        .await
        .unwrap()
        .several
}

#[tokio::test]
async fn entities_created_with_several_values_and_values_added_after_them_in_one_batch_are_tallied_exactly() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let gadget = app.create_type(&token, "gadget").await;
    let price = |number: i64| json!({"type": "price", "number": number});

    // created with two prices: stored with the transaction's other new entities
    let pair = app.create(&token, &gadget, json!([price(1), price(2)])).await;
    assert_eq!((multiplicity(&app).await, counted_multiplicity(&app).await), (1, 1));

    // created under a parent (stored on its own, at once) with two prices
    let (status, body) = app
        .post(
            "/api/demo/entity",
            &token,
            json!([{"type": "_type", "reference": gadget}, {"type": "_parent", "reference": pair}, price(3), price(4)]),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!((multiplicity(&app).await, counted_multiplicity(&app).await), (2, 2));

    // one transaction: a new gadget with one price, then a second price for
    // it and for an older gadget: the adds are counted against what each holds
    let older = app.create(&token, &gadget, json!([price(5)])).await;
    let (status, body) = app
        .post(
            "/api/demo/batch",
            &token,
            json!({"operations": [
                {"op": "create", "ref": "$new", "properties": [{"type": "_type", "reference": gadget}, price(6)]},
                {"op": "add", "entity": "$new", "properties": [price(7)]},
                {"op": "add", "entity": older, "properties": [price(8)]},
            ]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!((multiplicity(&app).await, counted_multiplicity(&app).await), (4, 4));

    // a gadget created with a single price stays single
    app.create(&token, &gadget, json!([price(9)])).await;
    assert_eq!((multiplicity(&app).await, counted_multiplicity(&app).await), (4, 4));
}

/// A page built on facts last found at the database's current generation
/// skips finding them again; a write changes the generation, so the next
/// page finds a property no longer single-valued all the same.
#[tokio::test]
async fn facts_found_to_hold_at_a_generation_are_found_again_after_a_write() {
    let app = TestApp::start().await;
    let token = app.owner_token().await;
    let gadgets = gadgets_priced(&app, &token, &[5, 6]).await;
    let in_order = [gadgets[1].clone(), gadgets[0].clone()];
    // read, checked (and found held at this generation), then checked at
    // once; each page its own answer, none taken from the answer cache
    for limit in 10..13 {
        assert_eq!(ids(&app, &token, &format!("{RANGE}&limit={limit}")).await, in_order);
    }
    add_price(&app, &token, &gadgets[0], 50).await;
    assert_eq!(ids(&app, &token, RANGE).await, [gadgets[0].clone(), gadgets[1].clone()]);
}

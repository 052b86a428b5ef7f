//! Groups of a whole type (rule 14) read from the value rows: each entity
//! in the group of its smallest value, the entities without a value the
//! caller may see in the last group, every caller seeing only what their
//! view shows, and formula values grouped as the documents hold them.

use crate::support;

use serde_json::{Value as Json, json};
use support::TestApp;

type Row = (i64, Vec<Json>);

struct Shop {
    app: TestApp,
    owner: String,
    reader: String,
    reader_id: String,
    makers: [String; 2],
    gadgets: Vec<String>,
}

/// Gadgets of a public type, with a public `instock`, a `price` shown to
/// the domain, a public `maker` reference and a formula `total`:
/// 1 public, in stock, price 5, qty 2, maker 0;
/// 2 public, in stock false and true, prices 7 and 3, qty 1, maker 1;
/// 3 shared with the domain, not in stock, price 5;
/// 4 private, viewed by the reader, in stock, price 1;
/// 5 private, not in stock;
/// 6 public, with none of them.
async fn shop() -> Shop {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let (reader, reader_key) = app.add_person(&owner, "Reader").await;
    let reader_token = app.token_for(&reader_key).await;
    let maker_type = app.create_type(&owner, "maker").await;
    let mut makers = Vec::new();
    for name in ["Acme", "Bolt"] {
        makers.push(
            app.create(&owner, &maker_type, json!([{"type": "name", "string": name}]))
                .await,
        );
    }
    let gadget = app.create_type(&owner, "gadget").await;
    let public = json!({"type": "_sharing", "string": "public"});
    app.post(&format!("/api/demo/entity/{gadget}"), &owner, public.clone())
        .await;
    app.define(&owner, &gadget, "instock", "boolean", json!([public])).await;
    app.define(&owner, &gadget, "maker", "reference", json!([public])).await;
    let domain = json!({"type": "_sharing", "string": "domain"});
    app.define(&owner, &gadget, "price", "number", json!([domain])).await;
    app.define(&owner, &gadget, "qty", "number", json!([domain])).await;
    app.define(
        &owner,
        &gadget,
        "total",
        "number",
        json!([domain, {"type": "formula", "string": "price qty MULTIPLY"}]),
    )
    .await;
    let gadgets = [
        json!([public, {"type": "instock", "boolean": true}, {"type": "price", "number": 5},
               {"type": "qty", "number": 2}, {"type": "maker", "reference": makers[0]}]),
        json!([public, {"type": "instock", "boolean": true}, {"type": "instock", "boolean": false},
               {"type": "price", "number": 7}, {"type": "price", "number": 3},
               {"type": "qty", "number": 1}, {"type": "maker", "reference": makers[1]}]),
        json!([domain, {"type": "instock", "boolean": false}, {"type": "price", "number": 5}]),
        json!([{"type": "_viewer", "reference": reader}, {"type": "instock", "boolean": true},
               {"type": "price", "number": 1}]),
        json!([{"type": "instock", "boolean": false}]),
        json!([public]),
    ];
    let mut ids = Vec::new();
    for values in gadgets {
        ids.push(app.create(&owner, &gadget, values).await);
    }
    app.settle().await;
    Shop {
        app,
        owner,
        reader: reader_token,
        reader_id: reader,
        makers: [makers[0].clone(), makers[1].clone()],
        gadgets: ids,
    }
}

impl Shop {
    /// The groups of gadgets by `prop`'s `field` as `token` sees them: each
    /// row's size and its first entity's values of `prop`.
    async fn groups(&self, token: Option<&str>, prop: &str, field: &str) -> Vec<Row> {
        let path = format!("/api/demo/entity?_type.string=gadget&group={prop}.{field}&props={prop}");
        let (status, body) = self.app.call("GET", &path, token, None).await;
        assert_eq!(status, 200, "{body}");
        let rows = body["entities"].as_array().unwrap();
        assert_eq!(body["count"], rows.len(), "{body}");
        rows.iter()
            .map(|row| {
                let values = row[prop].as_array().cloned().unwrap_or_default();
                let shown = values.iter().map(|value| value[field].clone()).collect();
                (row["_count"].as_i64().unwrap(), shown)
            })
            .collect()
    }
}

fn row(count: i64, values: Json) -> Row {
    (count, values.as_array().unwrap().clone())
}

#[tokio::test]
async fn a_group_puts_each_entity_in_the_group_of_its_smallest_value_and_those_without_last() {
    let shop = shop().await;
    let owner = Some(shop.owner.as_str());
    // gadget 2 (false and true) is the first of the `false` group
    assert_eq!(
        shop.groups(owner, "instock", "boolean").await,
        [row(3, json!([true, false])), row(2, json!([true])), row(1, json!([]))]
    );
    assert_eq!(
        shop.groups(owner, "price", "number").await,
        [
            row(1, json!([1])),
            row(1, json!([7, 3])),
            row(2, json!([5])),
            row(2, json!([]))
        ]
    );
    let [first, second] = &shop.makers;
    assert_eq!(
        shop.groups(owner, "maker", "reference").await,
        [row(1, json!([first])), row(1, json!([second])), row(4, json!([]))]
    );
}

#[tokio::test]
async fn a_group_counts_only_what_the_callers_view_shows() {
    let shop = shop().await;
    let reader = Some(shop.reader.as_str());
    // the reader sees 1, 2, 3 (domain), 4 (viewer) and 6, not 5
    assert_eq!(
        shop.groups(reader, "instock", "boolean").await,
        [row(2, json!([true, false])), row(2, json!([true])), row(1, json!([]))]
    );
    assert_eq!(
        shop.groups(reader, "price", "number").await,
        [
            row(1, json!([1])),
            row(1, json!([7, 3])),
            row(2, json!([5])),
            row(1, json!([]))
        ]
    );
    // anonymous: the public gadgets 1, 2 and 6; `price` is not public, so
    // all three are without one
    assert_eq!(
        shop.groups(None, "instock", "boolean").await,
        [row(1, json!([true, false])), row(1, json!([true])), row(1, json!([]))]
    );
    assert_eq!(shop.groups(None, "price", "number").await, [row(3, json!([]))]);
}

#[tokio::test]
async fn a_group_by_a_formula_groups_its_computed_values() {
    let shop = shop().await;
    let owner = Some(shop.owner.as_str());
    // price × qty: 10 for gadget 1 alone (formula values are in no value row)
    let groups = shop.groups(owner, "total", "number").await;
    assert!(groups.contains(&row(1, json!([10]))), "{groups:?}");
    assert_eq!(groups.iter().map(|(count, _)| count).sum::<i64>(), 6, "{groups:?}");
}

#[tokio::test]
async fn a_whole_type_group_reads_the_grouped_values_not_every_document() {
    let shop = shop().await;
    let params = [
        ("_type.string".to_owned(), "gadget".to_owned()),
        ("group".to_owned(), "instock.boolean".to_owned()),
    ];
    let query = eds::query::ListQuery::parse(&params).unwrap();
    let mut conn = shop.app.pool.get().await.unwrap();
    let plans = eds::query::sql::explain(&mut conn, "demo", None, &query).await.unwrap();
    let plan = plans.join("\n");
    assert!(plan.contains("property_values_boolean"), "{plan}");
    assert!(!plan.contains("jsonb_array_length"), "no document is read: {plan}");
}

#[tokio::test]
async fn a_group_by_a_boolean_no_entity_holds_twice_adds_up_tallies_that_follow_deletes_and_rights() {
    let shop = shop().await;
    let (app, owner) = (&shop.app, shop.owner.as_str());
    // gadget 2 keeps `true` alone: no gadget holds two `instock` values now
    let (_, second) = app.get(&format!("/api/demo/entity/{}", shop.gadgets[1]), owner).await;
    let not_in_stock = second["entity"]["instock"]
        .as_array()
        .unwrap()
        .iter()
        .find(|value| value["boolean"] == false)
        .unwrap()["_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, _) = app
        .call(
            "DELETE",
            &format!("/api/demo/property/{not_in_stock}"),
            Some(owner),
            None,
        )
        .await;
    assert_eq!(status, 200);
    let params = [
        ("_type.string".to_owned(), "gadget".to_owned()),
        ("group".to_owned(), "instock.boolean".to_owned()),
    ];
    let query = eds::query::ListQuery::parse(&params).unwrap();
    let mut conn = app.pool.get().await.unwrap();
    let plan = eds::query::sql::explain(&mut conn, "demo", None, &query)
        .await
        .unwrap()
        .join("\n");
    assert!(plan.contains("boolean_tallies"), "{plan}");

    let (reader, owner) = (Some(shop.reader.as_str()), Some(owner));
    // owner: 3 and 5 not in stock, 1, 2 and 4 in stock, 6 without
    assert_eq!(
        shop.groups(owner, "instock", "boolean").await,
        [row(2, json!([false])), row(3, json!([true])), row(1, json!([]))]
    );
    // the reader: not 5
    assert_eq!(
        shop.groups(reader, "instock", "boolean").await,
        [row(1, json!([false])), row(3, json!([true])), row(1, json!([]))]
    );
    // anonymous: the public 1, 2 and 6
    assert_eq!(
        shop.groups(None, "instock", "boolean").await,
        [row(2, json!([true])), row(1, json!([]))]
    );

    // the reader now views 5: its value moves to the reader's tallies
    let viewer = json!({"type": "_viewer", "reference": shop.reader_id});
    let (status, _) = app
        .post(&format!("/api/demo/entity/{}", shop.gadgets[4]), owner.unwrap(), viewer)
        .await;
    assert_eq!(status, 200);
    // gadget 1 is deleted: its value leaves every tally
    let (status, _) = app
        .call("DELETE", &format!("/api/demo/entity/{}", shop.gadgets[0]), owner, None)
        .await;
    assert_eq!(status, 200);
    app.settle().await;
    assert_eq!(
        shop.groups(reader, "instock", "boolean").await,
        [row(2, json!([false])), row(2, json!([true])), row(1, json!([]))]
    );
    assert_eq!(
        shop.groups(None, "instock", "boolean").await,
        [row(1, json!([true])), row(1, json!([]))]
    );
}

//! GraphQL lists against REST lists over generated filters, sorts, searches
//! and pages: the same ids in the same order, whatever the combination.

use crate::graphql::{gql, ids};
use crate::support;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::json;
use support::TestApp;

const TITLES: [&str; 3] = ["dune", "emma", "ulysses"];

/// One condition of a list query string.
fn condition() -> impl Strategy<Value = String> {
    let number_op = prop::sample::select(vec!["", ".gt", ".gte", ".lt", ".lte", ".ne"]);
    let string_op = prop::sample::select(vec!["", ".gt", ".lte", ".ne"]);
    let title = (prop::sample::select(TITLES.to_vec()), 0..5u8).prop_map(|(word, n)| format!("{word} volume {n}"));
    prop_oneof![
        (number_op, 0..19u8).prop_map(|(op, n)| format!("price.number{op}={n}")),
        prop::collection::vec(0..19u8, 1..4).prop_map(|ns| {
            let listed: Vec<String> = ns.iter().map(u8::to_string).collect();
            format!("price.number.in={}", listed.join(","))
        }),
        (string_op, title).prop_map(|(op, title)| format!("title.string{op}={title}")),
        prop::sample::select(vec!["^(dune|emma)", "volume [0-2]$", "^u"])
            .prop_map(|r| format!("title.string.regex={r}")),
        any::<bool>().prop_map(|b| format!("price.number.exists={b}")),
    ]
}

/// A whole list request: the filter, then sort, q, limit and skip.
#[derive(Debug, Clone)]
struct Listing {
    filter: String,
    sort: Option<String>,
    q: Option<String>,
    limit: Option<u8>,
    skip: Option<u8>,
}

fn listing() -> impl Strategy<Value = Listing> {
    let key = prop::sample::select(vec!["price.number", "title.string", "_id"]);
    let sort = prop::option::of(prop::collection::vec((any::<bool>(), key), 1..3).prop_map(|keys| {
        let keys: Vec<String> = keys
            .into_iter()
            .map(|(down, key)| format!("{}{key}", if down { "-" } else { "" }))
            .collect();
        keys.join(",")
    }));
    let q = prop::option::of(prop::sample::select(vec!["dun", "dun vol", "emma 3", "volume"]).prop_map(str::to_owned));
    (
        prop::collection::vec(condition(), 0..3),
        sort,
        q,
        prop::option::of(1..8u8),
        prop::option::of(0..6u8),
    )
        .prop_map(|(conditions, sort, q, limit, skip)| Listing {
            filter: conditions.join("&"),
            sort,
            q,
            limit,
            skip,
        })
}

/// The REST path of `listing` over the books of type `book`.
fn rest_path(book: &str, listing: &Listing) -> String {
    let mut pairs = vec![("_type.reference".to_owned(), book.to_owned())];
    pairs.extend(serde_urlencoded::from_str::<Vec<(String, String)>>(&listing.filter).unwrap());
    let optional = [
        ("sort", listing.sort.clone()),
        ("q", listing.q.clone()),
        ("limit", listing.limit.map(|n| n.to_string())),
        ("skip", listing.skip.map(|n| n.to_string())),
    ];
    for (name, value) in optional {
        if let Some(value) = value {
            pairs.push((name.to_owned(), value));
        }
    }
    format!("/api/demo/entity?{}", serde_urlencoded::to_string(&pairs).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graphql_and_rest_answer_same_ids_in_same_order_for_generated_lists() {
    let app = TestApp::start().await;
    let owner = app.owner_token().await;
    let book = app.create_type(&owner, "book").await;
    let search = json!([{"type": "search", "boolean": true}]);
    app.define(&owner, &book, "title", "string", search).await;
    app.define(&owner, &book, "price", "number", json!([])).await;
    app.settle().await;
    for n in 0..18 {
        let title = format!("{} volume {}", TITLES[n % 3], n % 5);
        // every fourth book has no price, so `exists` splits the set
        let mut values = vec![json!({"type": "title", "string": title})];
        if n % 4 != 3 {
            values.push(json!({"type": "price", "number": (n * 7) % 19}));
        }
        app.create(&owner, &book, json!(values)).await;
    }
    let runtime = tokio::runtime::Handle::current();
    let mut runner = TestRunner::new(Config {
        cases: 64,
        failure_persistence: None,
        ..Config::default()
    });
    let outcome = tokio::task::block_in_place(|| {
        runner.run(&listing(), |listing| {
            let path = rest_path(&book, &listing);
            let (rest, graphql) = runtime.block_on(async {
                let (status, rest) = app.get(&path, &owner).await;
                assert_eq!(status, 200, "{path}: {rest}");
                let query = "query($filter: String, $sort: String, $q: String, $limit: Int, $skip: Int) {
                    book(filter: $filter, sort: $sort, q: $q, limit: $limit, skip: $skip) { _id } }";
                let variables = json!({"filter": listing.filter, "sort": listing.sort, "q": listing.q,
                    "limit": listing.limit, "skip": listing.skip});
                let (status, answer) = gql(&app, Some(&owner), query, variables).await;
                assert_eq!(status, 200, "{answer}");
                (ids(&rest["entities"]), ids(&answer["data"]["book"]))
            });
            prop_assert_eq!(graphql, rest, "{}", path);
            Ok(())
        })
    });
    if let Err(failure) = outcome {
        panic!("{failure}");
    }
}
